package changestream

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/mongoerr"
	"github.com/lethedb/lethe/oplog"
)

var (
	uiA = bytes.Repeat([]byte{0xaa}, 16)
	uiB = bytes.Repeat([]byte{0xbb}, 16)
)

// txnSource is an oplog of three entries: an insert of d.a {_id: 0}; a
// committed transaction (txnNumber 7) of an insert of d.a {_id: 1}, an
// update of d.b {_id: 2} and a delete of d.a {_id: 3}, logged as one
// applyOps entry as oplog.ApplyOps builds it; an insert of d.a {_id: 4}.
// It returns the transaction's lsid.
func txnSource(t *testing.T) (*memSource, bson.Raw) {
	t.Helper()
	src := &memSource{pre: map[oplog.Timestamp]bson.Raw{}}
	id := func(i int) []byte { return doc(t, bson.D{{Key: "_id", Value: i}}) }
	src.add(oplog.Entry{Op: oplog.Insert, NS: "d.a", UI: uiA, O: id(0)})
	v1 := doc(t, bson.D{{Key: "_id", Value: 2}, {Key: "x", Value: 1}})
	v2 := doc(t, bson.D{{Key: "_id", Value: 2}, {Key: "x", Value: 2}})
	ent := oplog.ApplyOps([]oplog.Entry{
		{Op: oplog.Insert, NS: "d.a", UI: uiA, O: id(1)},
		{Op: oplog.Update, NS: "d.b", UI: uiB, O: oplog.UpdateDiff(v1, v2), O2: id(2)},
		{Op: oplog.Delete, NS: "d.a", UI: uiA, O: id(3)},
	})
	lsid := doc(t, bson.D{
		{Key: "id", Value: bson.Binary{Subtype: bson.TypeBinaryUUID, Data: bytes.Repeat([]byte{1}, 16)}},
		{Key: "uid", Value: bson.Binary{Data: bytes.Repeat([]byte{2}, 32)}},
	})
	ent.LSID, ent.TxnNumber = lsid, 7
	src.add(ent)
	src.add(oplog.Entry{Op: oplog.Insert, NS: "d.a", UI: uiA, O: id(4)})
	return src, lsid
}

var fromStart = bson.E{Key: "startAtOperationTime", Value: bson.Timestamp{T: 100, I: 1}}

// readAll reads s in batches of at most n events and maxBytes until a
// batch comes back empty.
func readAll(t *testing.T, s *Stream, n, maxBytes int) []bson.Raw {
	t.Helper()
	var all []bson.Raw
	for {
		evs, err := s.Next(context.Background(), n, maxBytes, false)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) == 0 {
			return all
		}
		all = append(all, evs...)
	}
}

// names names each event by kind, collection and _id.
func names(evs []bson.Raw) string {
	var out []string
	for _, ev := range evs {
		out = append(out, fmt.Sprintf("%s %s %d", ev.Lookup("operationType").StringValue(), ev.Lookup("ns", "coll").StringValue(), ev.Lookup("documentKey", "_id").Int32()))
	}
	return strings.Join(out, ", ")
}

func tokenOf(t *testing.T, ev bson.Raw) Token {
	t.Helper()
	tok, err := ParseToken(ev.Lookup("_id"))
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// TestTxnEventsByScope: a transaction's operations come out as events
// together, in the order of its applyOps, each filtered by namespace on
// its own. Facts from MongoDB:
//   - every event of a transaction has the commit's clusterTime ("events
//     that happened as part of a multi-document transaction ... will have
//     the same clusterTime value, namely the time when the transaction was
//     committed", https://www.mongodb.com/docs/manual/reference/change-events/);
//   - lsid and txnNumber are "only present if the operation is part of a
//     multi-document transaction" (same page), copied from the applyOps
//     entry, and come before _id (change_stream_event_transform.cpp adds
//     them, addTransactionIdFieldsIfPresent, before setResumeTokenForEvent);
//   - the resume token's txnOpIndex counts every operation of the array,
//     relevant to the stream or not (change_stream_unwind_transaction.cpp,
//     TransactionOpIterator::getNextTransactionOp increments _txnOpIndex
//     before it tests the namespace).
func TestTxnEventsByScope(t *testing.T) {
	src, lsid := txnSource(t)
	commit := src.ts[1]
	wall := bsoncore.Document(src.ents[1]).Lookup("wall").DateTime()
	all := "insert a 0, insert a 1, update b 2, delete a 3, insert a 4"
	for _, c := range []struct {
		name, db, coll string
		opts           bson.D
		want           string
		txnOps         []uint32 // the txnOpIndex of each transaction event
	}{
		{"collection d.a", "d", "a", nil, "insert a 0, insert a 1, delete a 3, insert a 4", []uint32{0, 2}},
		{"collection d.b", "d", "b", nil, "update b 2", []uint32{1}},
		{"database d", "d", "", nil, all, []uint32{0, 1, 2}},
		{"cluster", "admin", "", bson.D{{Key: "allChangesForCluster", Value: true}}, all, []uint32{0, 1, 2}},
		{"database e", "e", "", nil, "", nil},
	} {
		s, err := Open(spec(t, append(bson.D{fromStart}, c.opts...), c.db, c.coll), src)
		if err != nil {
			t.Fatal(err)
		}
		evs := readAll(t, s, 0, 1<<20)
		if got := names(evs); got != c.want {
			t.Fatalf("%s: events %q, want %q", c.name, got, c.want)
		}
		var txnOps []uint32
		for _, ev := range evs {
			tok := tokenOf(t, ev)
			_, lerr := ev.LookupErr("lsid")
			_, terr := ev.LookupErr("txnNumber")
			if tok.TS != commit {
				if lerr == nil || terr == nil {
					t.Errorf("%s: ordinary event with lsid or txnNumber: %s", c.name, ev)
				}
				continue
			}
			txnOps = append(txnOps, tok.Index)
			if ts, i := ev.Lookup("clusterTime").Timestamp(); (oplog.Timestamp{T: ts, I: i}) != commit || ev.Lookup("wallTime").DateTime() != wall {
				t.Errorf("%s: transaction event not at the commit's times: %s", c.name, ev)
			}
			if n, ok := ev.Lookup("txnNumber").Int64OK(); !ok || n != 7 {
				t.Errorf("%s: txnNumber %s, want NumberLong(7)", c.name, ev.Lookup("txnNumber"))
			}
			if !bytes.Equal(ev.Lookup("lsid").Value, lsid) {
				t.Errorf("%s: lsid %s, want %s", c.name, ev.Lookup("lsid"), lsid)
			}
			if els, _ := ev.Elements(); len(els) < 3 || els[0].Key() != "txnNumber" || els[1].Key() != "lsid" || els[2].Key() != "_id" {
				t.Errorf("%s: fields out of MongoDB's order: %s", c.name, ev)
			}
			wantUI := uiA
			if ev.Lookup("ns", "coll").StringValue() == "b" {
				wantUI = uiB
			}
			if !bytes.Equal(tok.UUID[:], wantUI) {
				t.Errorf("%s: token of %s names collection %x", c.name, ev, tok.UUID)
			}
		}
		if fmt.Sprint(txnOps) != fmt.Sprint(c.txnOps) {
			t.Errorf("%s: txnOpIndexes %v, want %v", c.name, txnOps, c.txnOps)
		}
	}
}

// TestTxnTokenBytes: an ordinary event's token is byte for byte what it
// was before transactions (version 1, ts, index 0, flags, uuid), so
// tokens clients kept still resume; a transaction's event differs only by
// its txnOpIndex in the index field.
func TestTxnTokenBytes(t *testing.T) {
	src, _ := txnSource(t)
	s, err := Open(spec(t, bson.D{fromStart}, "d", ""), src)
	if err != nil {
		t.Fatal(err)
	}
	evs := readAll(t, s, 0, 1<<20)
	if len(evs) != 5 {
		t.Fatalf("events %s", names(evs))
	}
	want := []string{
		"01" + "0000006400000001" + "00000000" + "00" + strings.Repeat("AA", 16),
		"01" + "0000006400000002" + "00000000" + "00" + strings.Repeat("AA", 16),
		"01" + "0000006400000002" + "00000001" + "00" + strings.Repeat("BB", 16),
		"01" + "0000006400000002" + "00000002" + "00" + strings.Repeat("AA", 16),
	}
	for i, w := range want {
		if got := evs[i].Lookup("_id", "_data").StringValue(); got != w {
			t.Errorf("event %d token %s, want %s", i, got, w)
		}
	}
}

// TestTxnResume: resuming after the k-th event of a transaction gives the
// events that followed it, starting with the (k+1)-th operation the
// stream watches of that same transaction: the events of a transaction
// share clusterTime and their tokens differ by txnOpIndex (MongoDB's
// ResumeTokenData::txnOpIndex, src/mongo/db/pipeline/resume_token.h). A
// token of an operation the stream does not watch is refused, as any
// other stream's token is.
func TestTxnResume(t *testing.T) {
	src, _ := txnSource(t)
	for _, extra := range []bson.D{nil, {{Key: "showExpireEvents", Value: true}}} {
		s, err := Open(spec(t, append(bson.D{fromStart}, extra...), "d", ""), src)
		if err != nil {
			t.Fatal(err)
		}
		all := readAll(t, s, 0, 1<<20)
		if len(all) != 5 {
			t.Fatalf("%v: events %s", extra, names(all))
		}
		for k := 1; k <= 3; k++ { // after the 1st, 2nd and 3rd event of the transaction
			for _, how := range []string{"resumeAfter", "startAfter"} {
				opts := append(bson.D{{Key: how, Value: all[k].Lookup("_id").Document()}}, extra...)
				r, err := Open(spec(t, opts, "d", ""), src)
				if err != nil {
					t.Fatal(err)
				}
				if got, want := names(readAll(t, r, 0, 1<<20)), names(all[k+1:]); got != want {
					t.Errorf("%v %s the transaction's event %d: %q, want %q", extra, how, k, got, want)
				}
			}
		}
	}

	coll, err := Open(spec(t, bson.D{fromStart}, "d", "a"), src)
	if err != nil {
		t.Fatal(err)
	}
	evs := readAll(t, coll, 0, 1<<20)
	r, err := Open(spec(t, bson.D{{Key: "resumeAfter", Value: evs[1].Lookup("_id").Document()}}, "d", "a"), src)
	if err != nil {
		t.Fatal(err)
	}
	if got := names(readAll(t, r, 0, 1<<20)); got != "delete a 3, insert a 4" {
		t.Errorf("collection stream resumed after txnOpIndex 0: %q", got)
	}
	db, err := Open(spec(t, bson.D{fromStart}, "d", ""), src)
	if err != nil {
		t.Fatal(err)
	}
	onB := readAll(t, db, 0, 1<<20)[2] // the update of d.b, txnOpIndex 1
	r, err = Open(spec(t, bson.D{{Key: "resumeAfter", Value: onB.Lookup("_id").Document()}}, "d", "a"), src)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Next(context.Background(), 0, 1<<20, false); mongoerr.CodeOf(err) != mongoerr.ChangeStreamFatalError {
		t.Fatalf("d.a resumed from the token of an operation on d.b: %v", err)
	}
}

// TestTxnBatchSplit: a batch limit, in events or in bytes, may end a
// batch among a transaction's events; the next batch goes on with the
// next operation, and the batch's postBatchResumeToken is its last
// event's, so a stream resumed from it goes on there too.
func TestTxnBatchSplit(t *testing.T) {
	src, _ := txnSource(t)
	s, err := Open(spec(t, bson.D{fromStart}, "d", ""), src)
	if err != nil {
		t.Fatal(err)
	}
	var batches []string
	for {
		evs, err := s.Next(context.Background(), 2, 1<<20, false)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) == 0 {
			break
		}
		batches = append(batches, names(evs))
		if len(batches) == 1 {
			if pbrt := s.PostBatchResumeToken(); !bytes.Equal(pbrt, evs[1].Lookup("_id").Value) {
				t.Errorf("postBatchResumeToken %s, want the last event's %s", pbrt, evs[1].Lookup("_id"))
			}
			r, err := Open(spec(t, bson.D{{Key: "resumeAfter", Value: s.PostBatchResumeToken()}}, "d", ""), src)
			if err != nil {
				t.Fatal(err)
			}
			if got := names(readAll(t, r, 0, 1<<20)); got != "update b 2, delete a 3, insert a 4" {
				t.Errorf("resumed from the split batch's token: %q", got)
			}
		}
	}
	want := []string{"insert a 0, insert a 1", "update b 2, delete a 3", "insert a 4"}
	if fmt.Sprint(batches) != fmt.Sprint(want) {
		t.Errorf("batches of 2: %q, want %q", batches, want)
	}

	// maxBytes 1: every batch holds its first event only.
	s, err = Open(spec(t, bson.D{fromStart}, "d", ""), src)
	if err != nil {
		t.Fatal(err)
	}
	batches = nil
	for {
		evs, err := s.Next(context.Background(), 0, 1, false)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) == 0 {
			break
		}
		batches = append(batches, names(evs))
	}
	want = []string{"insert a 0", "insert a 1", "update b 2", "delete a 3", "insert a 4"}
	if fmt.Sprint(batches) != fmt.Sprint(want) {
		t.Errorf("batches of one byte: %q, want %q", batches, want)
	}
}

// TestTxnImages: updateLookup finds an operation's document as for any
// update; pre-images are not stored for a transaction's operations, so
// fullDocumentBeforeChange and the post-image of fullDocument are missing:
// null with whenAvailable, NoMatchingDocument with required (MongoDB's
// behaviour for a missing pre-image, which TestImages pins). A pre-image
// stored under the commit's timestamp is not the operation's.
func TestTxnImages(t *testing.T) {
	src, _ := txnSource(t)
	current := doc(t, bson.D{{Key: "_id", Value: 2}, {Key: "x", Value: "now"}})
	src.find = func(db, coll string, id bsoncore.Value) bson.Raw {
		if db == "d" && coll == "b" && id.Int32() == 2 {
			return current
		}
		return nil
	}
	src.pre[src.ts[1]] = doc(t, bson.D{{Key: "_id", Value: 2}, {Key: "x", Value: 1}})
	open := func(opts ...bson.E) *Stream {
		s, err := Open(spec(t, append(bson.D{fromStart}, opts...), "d", ""), src)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}

	evs := readAll(t, open(bson.E{Key: "fullDocument", Value: "updateLookup"}), 0, 1<<20)
	if len(evs) != 5 || !bytes.Equal(evs[2].Lookup("fullDocument").Value, current) {
		t.Fatalf("updateLookup: %v", evs)
	}

	evs = readAll(t, open(bson.E{Key: "fullDocument", Value: "whenAvailable"}, bson.E{Key: "fullDocumentBeforeChange", Value: "whenAvailable"}), 0, 1<<20)
	if len(evs) != 5 {
		t.Fatalf("whenAvailable: %s", names(evs))
	}
	for _, c := range []struct {
		i     int
		field string
	}{{2, "fullDocumentBeforeChange"}, {2, "fullDocument"}, {3, "fullDocumentBeforeChange"}} {
		if v, err := evs[c.i].LookupErr(c.field); err != nil || v.Type != bson.TypeNull {
			t.Errorf("whenAvailable: event %d's %s is %v, want null: %s", c.i, c.field, v, evs[c.i])
		}
	}

	for _, opt := range []string{"fullDocument", "fullDocumentBeforeChange"} {
		s := open(bson.E{Key: opt, Value: "required"})
		if evs, err := s.Next(context.Background(), 2, 1<<20, false); err != nil || len(evs) != 2 {
			t.Fatalf("%s required: the inserts: %v %v", opt, evs, err)
		}
		if _, err := s.Next(context.Background(), 0, 1<<20, false); mongoerr.CodeOf(err) != mongoerr.NoMatchingDocument {
			t.Fatalf("%s required on a transaction's update: %v", opt, err)
		}
	}
}

// TestTxnMatchOnTxnNumber: the stages after $changeStream run on the
// events as encoded, lsid and txnNumber included. The server runs them
// with the engine (engine.AggregateDocs), which this package may not
// import; Post here does what {$match: {txnNumber: 7}} and {$match:
// {lsid: {$exists: false}}} do.
func TestTxnMatchOnTxnNumber(t *testing.T) {
	src, _ := txnSource(t)
	for _, c := range []struct {
		name string
		keep func(ev bson.Raw) bool
		want string
	}{
		{"txnNumber: 7", func(ev bson.Raw) bool { n, ok := ev.Lookup("txnNumber").Int64OK(); return ok && n == 7 }, "insert a 1, update b 2, delete a 3"},
		{"lsid missing", func(ev bson.Raw) bool { _, err := ev.LookupErr("lsid"); return err != nil }, "insert a 0, insert a 4"},
	} {
		s, err := Open(spec(t, bson.D{fromStart}, "d", ""), src)
		if err != nil {
			t.Fatal(err)
		}
		s.Post = func(_ context.Context, evs []bson.Raw) ([]bson.Raw, error) {
			var out []bson.Raw
			for _, ev := range evs {
				if c.keep(ev) {
					out = append(out, ev)
				}
			}
			return out, nil
		}
		if got := names(readAll(t, s, 0, 1<<20)); got != c.want {
			t.Errorf("$match %s: %q, want %q", c.name, got, c.want)
		}
	}
}
