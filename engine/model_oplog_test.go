package engine

import (
	"bytes"
	"context"
	"fmt"
	"sort"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/keycodec"
	"github.com/lethedb/lethe/oplog"
)

// oplogReplica is the model collection rebuilt from the oplog alone, as a
// secondary or a change stream consumer would see it. After every step it
// must hold exactly the stored documents: an entry missing, extra, out of
// order or wrong in content makes it differ. An entry that changes
// nothing (an insert of a present _id, a delete of an absent one, an
// update that leaves the document as it was) fails at once, so that
// refused writes and no-op rewrites are seen to log nothing.
type oplogReplica struct {
	last oplog.Timestamp
	docs map[string]bson.Raw // by keycodec of _id
}

func (r *modelRun) checkOplog(ctx context.Context) error {
	if r.replica == nil {
		r.replica = &oplogReplica{docs: map[string]bson.Raw{}}
	}
	rep := r.replica
	ns := modelDB + "." + modelColl
	last, err := r.e.ReadOplog(ctx, rep.last, func(ts oplog.Timestamp, raw bson.Raw) (bool, error) {
		if !rep.last.Less(ts) {
			return false, fmt.Errorf("oplog: entry %v after %v", ts, rep.last)
		}
		rep.last = ts
		f, err := oplog.Parse(raw)
		if err != nil {
			return false, err
		}
		o := raw.Lookup("o").Document()
		switch {
		case f.Op == oplog.Command && f.NS == modelDB+".$cmd":
			if name, ok := o.Lookup("drop").StringValueOK(); ok && name == modelColl {
				clear(rep.docs)
			}
			return true, nil
		case f.NS != ns:
			return true, nil
		}
		var id bsoncore.Value
		if f.Op == oplog.Update {
			id = idOf(raw.Lookup("o2").Document())
		} else {
			id = idOf(o)
		}
		key := string(keycodec.Append(nil, id))
		old, present := rep.docs[key]
		switch f.Op {
		case oplog.Insert:
			if present {
				return false, fmt.Errorf("oplog %v: insert of present _id %v", ts, id)
			}
			rep.docs[key] = bytes.Clone(o)
		case oplog.Delete:
			if !present {
				return false, fmt.Errorf("oplog %v: delete of absent _id %v", ts, id)
			}
			delete(rep.docs, key)
		case oplog.Update:
			if !present {
				return false, fmt.Errorf("oplog %v: update of absent _id %v", ts, id)
			}
			nw, err := applyTopDiff(old, o)
			if err != nil {
				return false, fmt.Errorf("oplog %v: %v", ts, err)
			}
			if bytes.Equal(nw, old) {
				return false, fmt.Errorf("oplog %v: update of %v changes nothing: %s", ts, id, o)
			}
			rep.docs[key] = nw
		default:
			return false, fmt.Errorf("oplog %v: unexpected op %c on %s", ts, f.Op, f.NS)
		}
		return true, nil
	})
	if err != nil {
		return err
	}
	rep.last = last
	stored, err := r.engineDocs(true)
	if err != nil {
		return err
	}
	var got []bson.Raw
	for _, d := range rep.docs {
		got = append(got, d)
	}
	sort.Slice(got, func(i, j int) bool { return keycodec.Compare(idOf(got[i]), idOf(got[j])) < 0 })
	same := len(got) == len(stored)
	for i := 0; same && i < len(got); i++ {
		same = bytes.Equal(got[i], stored[i].doc)
	}
	if !same {
		var want []bson.Raw
		for _, d := range stored {
			want = append(want, d.doc)
		}
		return fmt.Errorf("oplog replay differs from the store:\nreplay %s\nstore  %s", rawList(got), rawList(want))
	}
	return nil
}

// applyTopDiff applies an update entry's o: a replacement document, or a
// $v:2 diff of top-level d/u/i sections, which is what the engine writes.
func applyTopDiff(doc bson.Raw, o bson.Raw) (bson.Raw, error) {
	v, err := o.LookupErr("$v")
	if err != nil {
		return bytes.Clone(o), nil
	}
	if v.AsInt64() != 2 {
		return nil, fmt.Errorf("update entry $v %v", v)
	}
	diff := o.Lookup("diff").Document()
	removed := func(k string) bool { _, err := diff.LookupErr("d", k); return err == nil }
	elems, _ := doc.Elements()
	idx, out := bsoncore.AppendDocumentStart(nil)
	for _, el := range elems {
		k := el.Key()
		if removed(k) {
			continue
		}
		if nv, err := diff.LookupErr("u", k); err == nil {
			out = bsoncore.AppendValueElement(out, k, bsoncore.Value{Type: bsoncore.Type(nv.Type), Data: nv.Value})
			continue
		}
		out = append(out, el...)
	}
	if ins, ok := diff.Lookup("i").DocumentOK(); ok {
		iels, _ := ins.Elements()
		for _, el := range iels {
			out = append(out, el...)
		}
	}
	dels, _ := diff.Elements()
	for _, el := range dels {
		switch el.Key() {
		case "d", "u", "i":
		default:
			return nil, fmt.Errorf("diff section %q", el.Key())
		}
	}
	out, _ = bsoncore.AppendDocumentEnd(out, idx)
	return out, nil
}
