package engine

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/keycodec"
	"github.com/lethedb/lethe/engine/record"
	"github.com/lethedb/lethe/oplog"
)

// oplogReplica is the store rebuilt from the oplog alone, as a secondary
// or a change stream consumer would see it. After every step it must hold
// exactly the stored documents: an entry missing, extra, out of order or
// wrong in content makes it differ. An entry that changes nothing (an
// insert of a present _id, a delete of an absent one, an update that
// leaves the document as it was) fails at once, so that refused writes and
// no-op rewrites are seen to log nothing.
//
// It also checks the pre-images stored with update and delete entries:
// while the collection's changeStreamPreAndPostImages is on (as its create
// and collMod entries tell), each must be the replica's document before
// the entry, and there must be none while it is off.
type oplogReplica struct {
	last  oplog.Timestamp
	colls map[string]map[string]bson.Raw // by ns, then keycodec of _id
	// preImages holds the namespaces that keep pre-images.
	preImages map[string]bool
	// before is the document an update or delete entry changed, as the
	// replica had it; nil after other entries.
	before bson.Raw
}

func newOplogReplica() *oplogReplica {
	return &oplogReplica{colls: map[string]map[string]bson.Raw{}, preImages: map[string]bool{}}
}

// checkPreImage compares the pre-image stored at ts with the document the
// entry raw changed.
func (rep *oplogReplica) checkPreImage(e *Engine, ts oplog.Timestamp, raw bson.Raw) error {
	f, err := oplog.Parse(raw)
	if err != nil || (f.Op != oplog.Update && f.Op != oplog.Delete) {
		return err
	}
	got, err := e.PreImage(context.Background(), ts)
	if err != nil {
		return err
	}
	switch {
	case !rep.preImages[f.NS] && got != nil:
		return fmt.Errorf("pre-image %s stored for %s without changeStreamPreAndPostImages", got, f.NS)
	case rep.preImages[f.NS] && !bytes.Equal(got, rep.before):
		return fmt.Errorf("pre-image of %s is %s, want %s", f.NS, got, rep.before)
	}
	return nil
}

// catchUp applies the entries after the last one applied, read through
// e; others are the other servers on e's store, whose entries it waits for
// too.
func (rep *oplogReplica) catchUp(ctx context.Context, e *Engine, others ...*Engine) error {
	if log := e.Oplog(); log != nil && log.Shared() {
		// On a shared store (TiKV) entries become visible when the
		// floor loop next moves the visible point past them
		// (oplog.Log.Share), a few milliseconds after their commit.
		target := log.Last()
		for _, o := range others {
			if last := o.Oplog().Last(); target.Less(last) {
				target = last
			}
		}
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		_, err := log.Wait(wctx, target.Prev())
		cancel()
		if err != nil {
			return fmt.Errorf("oplog: visible point %v never reached the last entry %v: %w", log.Visible(), log.Last(), err)
		}
	}
	last, err := e.ReadOplog(ctx, rep.last, func(ts oplog.Timestamp, raw bson.Raw) (bool, error) {
		if !rep.last.Less(ts) {
			return false, fmt.Errorf("oplog: entry %v after %v", ts, rep.last)
		}
		rep.last = ts
		if err := rep.apply(raw); err != nil {
			return false, fmt.Errorf("oplog %v: %v", ts, err)
		}
		if err := rep.checkPreImage(e, ts, raw); err != nil {
			return false, fmt.Errorf("oplog %v: %v", ts, err)
		}
		return true, nil
	})
	rep.last = last
	return err
}

func (rep *oplogReplica) apply(raw bson.Raw) error {
	f, err := oplog.Parse(raw)
	if err != nil {
		return err
	}
	o := raw.Lookup("o").Document()
	if f.Op == oplog.Command {
		db := f.NS[:len(f.NS)-len(".$cmd")]
		el, err := o.IndexErr(0)
		if err != nil {
			return err
		}
		if el.Key() == "applyOps" {
			// A committed transaction: its operations, in order, with
			// neither ts nor pre-images of their own.
			ops, _ := el.Value().Array().Values()
			for _, v := range ops {
				op := v.Document()
				code := op.Lookup("op").StringValue()
				if err := rep.applyOp(oplog.Fields{Op: oplog.Op(code[0]), NS: op.Lookup("ns").StringValue()}, op); err != nil {
					return fmt.Errorf("applyOps: %v", err)
				}
			}
			rep.before = nil
			return nil
		}
		ns := db + "." + el.Value().StringValue()
		switch el.Key() {
		case "create", "collMod":
			if on, ok := o.Lookup(PreImagesOption, "enabled").BooleanOK(); ok {
				rep.preImages[ns] = on
			} else if el.Key() == "create" {
				rep.preImages[ns] = false
			}
		case "drop":
			delete(rep.colls, ns)
			delete(rep.preImages, ns)
		case "renameCollection":
			to := o.Lookup("to").StringValue()
			from := el.Value().StringValue()
			rep.colls[to] = rep.colls[from]
			rep.preImages[to] = rep.preImages[from]
			delete(rep.colls, from)
			delete(rep.preImages, from)
		}
		return nil
	}
	return rep.applyOp(f, raw)
}

// applyOp applies one CRUD entry (or operation of an applyOps).
func (rep *oplogReplica) applyOp(f oplog.Fields, raw bson.Raw) error {
	o := raw.Lookup("o").Document()
	docs := rep.colls[f.NS]
	if docs == nil {
		docs = map[string]bson.Raw{}
		rep.colls[f.NS] = docs
	}
	var id bsoncore.Value
	if f.Op == oplog.Update {
		id = record.IDOf(raw.Lookup("o2").Document())
	} else {
		id = record.IDOf(o)
	}
	key := string(keycodec.Append(nil, id))
	old, present := docs[key]
	rep.before = old
	switch f.Op {
	case oplog.Insert:
		if present {
			return fmt.Errorf("insert of present _id %v in %s", id, f.NS)
		}
		docs[key] = bytes.Clone(o)
	case oplog.Delete:
		if !present {
			return fmt.Errorf("delete of absent _id %v in %s", id, f.NS)
		}
		delete(docs, key)
	case oplog.Update:
		if !present {
			return fmt.Errorf("update of absent _id %v in %s", id, f.NS)
		}
		nw, err := oplog.ApplyUpdate(old, o)
		if err != nil {
			return err
		}
		if bytes.Equal(nw, old) {
			return fmt.Errorf("update of %v in %s changes nothing: %s", id, f.NS, o)
		}
		docs[key] = bytes.Clone(nw) // a replacement is o itself, valid only during the read
	default:
		return fmt.Errorf("unexpected op %c on %s", f.Op, f.NS)
	}
	return nil
}

// check compares the replica of db.coll with the documents stored, expired
// or not.
func (rep *oplogReplica) check(e *Engine, db, coll string) error {
	var stored []bson.Raw
	if c := e.collection(db, coll); c != nil {
		lo, hi := record.DocRange(c.st().meta.ID)
		it, err := rawIter(e, lo, hi)
		if err != nil {
			return err
		}
		for ok := it.First(); ok; ok = it.Next() {
			_, doc, err := record.SplitValue(it.Value())
			if err != nil {
				it.Close()
				return err
			}
			stored = append(stored, bytes.Clone(doc))
		}
		if err := it.Close(); err != nil {
			return err
		}
	}
	var got []bson.Raw
	for _, d := range rep.colls[db+"."+coll] {
		got = append(got, d)
	}
	sort.Slice(got, func(i, j int) bool { return keycodec.Compare(record.IDOf(got[i]), record.IDOf(got[j])) < 0 })
	same := len(got) == len(stored)
	for i := 0; same && i < len(got); i++ {
		same = bytes.Equal(got[i], stored[i])
	}
	if !same {
		return fmt.Errorf("%s.%s: oplog replay differs from the store:\nreplay %s\nstore  %s", db, coll, rawList(got), rawList(stored))
	}
	return nil
}

func (r *modelRun) checkOplog(ctx context.Context) error {
	if r.replica == nil {
		r.replica = newOplogReplica()
	}
	if err := r.replica.catchUp(ctx, r.e); err != nil {
		return err
	}
	return r.replica.check(r.e, modelDB, modelColl)
}
