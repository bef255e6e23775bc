package engine

import (
	"bytes"
	"context"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/clock"
	"github.com/lethedb/lethe/engine/update"
	"github.com/lethedb/lethe/engine/validation"
	"github.com/lethedb/lethe/mongoerr"
)

// Regression tests for defects the model test found on its own, each
// reduced from the shrunk operation log.

func regressCreateIndex(t *testing.T, e *Engine, spec bson.D) {
	t.Helper()
	if _, err := e.CreateIndexes(context.Background(), "db", "c", []bson.Raw{modelRaw(spec)}); err != nil {
		t.Fatal(err)
	}
}

func regressCount(t *testing.T, e *Engine) int64 {
	t.Helper()
	n, err := e.Count(context.Background(), "db", "c", nil, 0, 0, bson.RawValue{})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// Dropping the _ts index purges what TTL had already hidden (rule 9), and
// nothing else: a document whose date TTL index says it is due stays
// visible until the reaper deletes it (rule 20), and once that index is
// dropped too, never goes.
func TestModelRegressDropTSKeepsDateDueDocuments(t *testing.T) {
	e, clock := openTestEngineClock(t)
	regressCreateIndex(t, e, bson.D{{Key: "key", Value: bson.D{{Key: "_ts", Value: 1}}}, {Key: "name", Value: "_ts_1"}, {Key: "expireAfterSeconds", Value: 60}})
	due := bson.NewDateTimeFromTime(clock.Now().Add(-time.Hour))
	if _, err := e.Insert(context.Background(), "db", "c", []bson.Raw{modelRaw(bson.D{{Key: "_id", Value: 1}, {Key: "d", Value: due}})}, true); err != nil {
		t.Fatal(err)
	}
	regressCreateIndex(t, e, bson.D{{Key: "key", Value: bson.D{{Key: "d", Value: 1}}}, {Key: "name", Value: "d_1"}, {Key: "expireAfterSeconds", Value: 0}})
	if _, err := e.DropIndexes(context.Background(), "db", "c", rawValue("*")); err != nil {
		t.Fatal(err)
	}
	if n := regressCount(t, e); n != 1 {
		t.Fatalf("after dropping every index (no TTL left), %d documents, want 1", n)
	}
}

// Expired documents are absent for unique checks (rule 15), also when a
// unique index is built: two expired documents without the field must not
// make the build fail with a duplicate null key.
func TestModelRegressUniqueBuildIgnoresExpired(t *testing.T) {
	e, clock := openTestEngineClock(t)
	regressCreateIndex(t, e, bson.D{{Key: "key", Value: bson.D{{Key: "_ts", Value: 1}}}, {Key: "name", Value: "_ts_1"}, {Key: "expireAfterSeconds", Value: 10}})
	if _, err := e.Insert(context.Background(), "db", "c", []bson.Raw{modelRaw(bson.D{{Key: "_id", Value: 1}}), modelRaw(bson.D{{Key: "_id", Value: 2}})}, true); err != nil {
		t.Fatal(err)
	}
	clock.Advance(11 * time.Second)
	if _, err := e.CreateIndexes(context.Background(), "db", "c", []bson.Raw{modelRaw(bson.D{{Key: "key", Value: bson.D{{Key: "u", Value: 1}}}, {Key: "name", Value: "u_1"}, {Key: "unique", Value: true}})}); err != nil {
		t.Fatalf("unique index over two expired documents: %v", err)
	}
	if _, err := e.Insert(context.Background(), "db", "c", []bson.Raw{modelRaw(bson.D{{Key: "_id", Value: 3}})}, true); err != nil {
		t.Fatal(err)
	}
	if n := regressCount(t, e); n != 1 {
		t.Fatalf("%d documents visible, want 1", n)
	}
}

// A batch that ends on the last point of an _id $in plan must not hand out
// that document again in the next batch.
func TestModelRegressIDPointsBatchEnd(t *testing.T) {
	e, _ := openTestEngineClock(t)
	ctx := context.Background()
	var docs []bson.Raw
	for _, id := range []int{1, 3, 4} {
		docs = append(docs, modelRaw(bson.D{{Key: "_id", Value: id}}))
	}
	if _, err := e.Insert(context.Background(), "db", "c", docs, true); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []int{1, -1} {
		filter := modelRaw(bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: bson.A{1, 4}}}}})
		cur, err := e.Find(ctx, "db", "c", FindSpec{Filter: filter, Sort: modelRaw(bson.D{{Key: "_id", Value: dir}})})
		if err != nil {
			t.Fatal(err)
		}
		first, err := cur.NextBatch(ctx, 2, 1<<30)
		if err != nil || len(first) != 2 {
			t.Fatalf("sort %d: first batch %v, %v", dir, first, err)
		}
		rest, err := cur.All(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(rest) != 0 {
			t.Fatalf("sort %d: after both matches, the cursor returned %v again", dir, rest)
		}
	}
}

// hidden is not part of an index's options for createIndexes (MongoDB leaves
// it out of the equality check): asking again for a hidden index's exact
// spec is a no-op, not an IndexOptionsConflict.
func TestModelRegressRecreateHiddenIndex(t *testing.T) {
	e, _ := openTestEngineClock(t)
	spec := bson.D{{Key: "key", Value: bson.D{{Key: "a", Value: 1}}}, {Key: "name", Value: "a_1"}}
	regressCreateIndex(t, e, spec)
	hide := true
	if _, err := e.CollModIndex(context.Background(), "db", "c", IndexChange{Name: "a_1", Hidden: &hide}); err != nil {
		t.Fatal(err)
	}
	res, err := e.CreateIndexes(context.Background(), "db", "c", []bson.Raw{modelRaw(spec)})
	if err != nil {
		t.Fatalf("createIndexes of a hidden index's own spec: %v", err)
	}
	if res.Before != 2 || res.After != 2 {
		t.Fatalf("before %d after %d, want 2 and 2", res.Before, res.After)
	}
}

// returnKey gives the key by which the index reached a document: for an
// index on a positional path whose element is an array, that key is the
// whole array, as the index holds it, not one of its elements.
func TestModelRegressReturnKeyPositionalArray(t *testing.T) {
	e, _ := openTestEngineClock(t)
	ctx := context.Background()
	if _, err := e.Insert(context.Background(), "db", "c", []bson.Raw{modelRaw(bson.D{{Key: "_id", Value: 1}, {Key: "arr", Value: bson.A{bson.A{1, 2}, 3}}})}, true); err != nil {
		t.Fatal(err)
	}
	regressCreateIndex(t, e, bson.D{{Key: "key", Value: bson.D{{Key: "arr.0", Value: 1}}}, {Key: "name", Value: "arr.0_1"}})
	cur, err := e.Find(ctx, "db", "c", FindSpec{Hint: rawValue("arr.0_1"), ReturnKey: true})
	if err != nil {
		t.Fatal(err)
	}
	docs, err := cur.All(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := modelRaw(bson.D{{Key: "arr.0", Value: bson.A{1, 2}}})
	if len(docs) != 1 || !bytes.Equal(docs[0], want) {
		t.Fatalf("returnKey gave %v, want [%v]", docs, want)
	}
}

// An update that changes nothing writes nothing as far as the validator is
// concerned: MongoDB validates only a modified document, so a no-op update
// of a document that fails a validator added later succeeds (matched 1,
// modified 0) under strict, while one that changes it is refused.
func TestModelRegressNoOpUpdateSkipsValidation(t *testing.T) {
	e, clock := openTestEngineClock(t)
	ctx := context.Background()
	if _, err := e.Insert(context.Background(), "db", "c", []bson.Raw{modelRaw(bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: "x"}})}, true); err != nil {
		t.Fatal(err)
	}
	if err := e.SetValidation(ctx, "db", "c", CollectionValidation{Validator: modelRaw(bson.D{{Key: "a", Value: bson.D{{Key: "$type", Value: "number"}}}})}); err != nil {
		t.Fatal(err)
	}
	set := func(fields bson.D) (UpdateResult, error) {
		u, err := update.Compile(modelRaw(bson.D{{Key: "$set", Value: fields}}), update.Options{Now: clock.Now()})
		if err != nil {
			t.Fatal(err)
		}
		return e.Update(ctx, "db", "c", UpdateSpec{Filter: modelRaw(bson.D{{Key: "_id", Value: 1}}), Update: u})
	}
	res, err := set(bson.D{{Key: "a", Value: "x"}})
	if err != nil || res.Matched != 1 || res.Modified != 0 {
		t.Fatalf("no-op update of a failing document: %+v, %v; want matched 1, modified 0, no error", res, err)
	}
	if _, err := set(bson.D{{Key: "b", Value: 1}}); codeOf(err) != int(mongoerr.DocumentValidationFailure) {
		t.Fatalf("update that leaves a failing document failing: %v, want DocumentValidationFailure", err)
	}
}

// validate counts the documents the validator would refuse; under
// validationLevel off it refuses none, so validate counts none (MongoDB's
// validate asks the collection's own check, which passes everything then).
func TestModelRegressValidateLevelOffCountsNoneNonCompliant(t *testing.T) {
	e, _ := openTestEngineClock(t)
	ctx := context.Background()
	if _, err := e.Insert(context.Background(), "db", "c", []bson.Raw{modelRaw(bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: "x"}})}, true); err != nil {
		t.Fatal(err)
	}
	validator := modelRaw(bson.D{{Key: "a", Value: bson.D{{Key: "$type", Value: "number"}}}})
	for _, c := range []struct {
		level string
		want  int64
	}{{validation.LevelStrict, 1}, {validation.LevelOff, 0}, {validation.LevelModerate, 1}} {
		level := c.level
		if err := e.SetValidation(ctx, "db", "c", CollectionValidation{Validator: validator, Level: &level}); err != nil {
			t.Fatal(err)
		}
		res, err := e.Validate(ctx, "db", "c", true)
		if err != nil {
			t.Fatal(err)
		}
		if res.NNonCompliantDocuments != c.want {
			t.Errorf("validationLevel %s: nNonCompliantDocuments %d, want %d", c.level, res.NNonCompliantDocuments, c.want)
		}
	}
}

// A statement of a transaction whose filter names _ids (an _id point
// plan) locks each named document before it checks the rest of the filter
// against it, and keeps the lock when it does not match: the statement
// writes nothing, yet it fails with WriteConflict when the document
// changed after the snapshot, and a plain write of that document waits
// until the transaction ends. In MongoDB a statement that matches nothing
// in its snapshot writes nothing, so neither happens
// (jstests/core/txns/write_conflicts_with_non_txns.js conflicts only on
// documents written). Found by the transactions' model (a plain update
// hung behind a transaction's findAndModify {_id: 3, a: 2} that matched
// nothing).
func TestModelRegressTxnUnmatchedIDPointLocks(t *testing.T) {
	e := openTxnEngine(t)
	bg := context.Background()
	if err := insertIDs(t, bg, e, "c", 1, 2); err != nil {
		t.Fatal(err)
	}
	unmatched := func(id int32) bson.Raw { return txnDoc(t, bson.D{{Key: "_id", Value: id}, {Key: "n", Value: 5}}) }
	set := func(v int32) *update.Update {
		return txnUpdate(t, bson.D{{Key: "$set", Value: bson.D{{Key: "m", Value: v}}}})
	}

	// Document 1 changes after the snapshot; the transaction's update
	// does not match it there.
	tx, _ := e.BeginTransaction(bg, TransactionOptions{})
	if _, err := e.Update(bg, "db", "c", UpdateSpec{Filter: txnDoc(t, bson.D{{Key: "_id", Value: int32(1)}}), Update: set(1)}); err != nil {
		t.Fatal(err)
	}
	res, err := e.Update(WithTransaction(bg, tx), "db", "c", UpdateSpec{Filter: unmatched(1), Update: set(2)})
	if err != nil || res.Matched != 0 {
		t.Errorf("an update matching nothing in the snapshot: matched %d, %v; want 0 and no error", res.Matched, err)
	}
	tx.Abort()

	// The transaction matched nothing: a plain write of the document
	// must not wait for it.
	tx, _ = e.BeginTransaction(bg, TransactionOptions{})
	if _, err := e.Update(WithTransaction(bg, tx), "db", "c", UpdateSpec{Filter: unmatched(2), Update: set(3)}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(bg, time.Second)
	defer cancel()
	if _, err := e.Update(ctx, "db", "c", UpdateSpec{Filter: txnDoc(t, bson.D{{Key: "_id", Value: int32(2)}}), Update: set(4)}); err != nil {
		t.Errorf("a plain update of a document an open transaction did not write: %v (it waited for the transaction)", err)
	}
	tx.Abort()
}

// In a transaction, a document one of its statements inserted, and which
// has expired since by its _ts, is hidden from the transaction's reads
// (as TTL hides it at each statement's clock), yet an insert of its _id
// by a later statement fails with DuplicateKey: the writer takes any
// document the transaction buffered as "written by this command a moment
// ago", live whatever its TTL (writer.pendingDoc), while in a transaction
// the buffer holds every earlier statement too. Expired documents are
// absent for unique checks (TTL rule 15), so the insert should replace
// it. Found by the transactions' model.
func TestModelRegressTxnExpiredOwnInsertIsDuplicate(t *testing.T) {
	clk := clock.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	e := openOplogEngine(t, t.TempDir(), clk, Options{})
	defer e.Close()
	bg := context.Background()
	regressCreateIndex(t, e, bson.D{{Key: "key", Value: bson.D{{Key: "_ts", Value: 1}}}, {Key: "name", Value: "_ts_1"}, {Key: "expireAfterSeconds", Value: int32(4)}})
	tx, err := e.BeginTransaction(bg, TransactionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Abort()
	in := WithTransaction(bg, tx)
	if err := insertIDs(t, in, e, "c", 5); err != nil {
		t.Fatal(err)
	}
	clk.Advance(5 * time.Second)
	if got := idsOf(t, in, e, "c"); len(got) != 0 {
		t.Fatalf("the transaction still sees %v after its document expired", got)
	}
	if err := insertIDs(t, in, e, "c", 5); err != nil {
		t.Errorf("insert of the _id of the transaction's own expired document: %v, want it to replace it", err)
	}
}

// TestModelRegressLeftAloneDocumentIsNoConflict: a document a plain write
// locked and then left alone (an insert that found its _id taken) is no
// change to a transaction that started before, which then gets
// DuplicateKey for it, not WriteConflict. On TiKV the first key a
// transaction locks is its primary, committed as a lock record even if
// unwritten once the transaction writes another document, and a lock
// record is a write conflict there; the writer releases such locks before
// it goes on. Found by the sequential model on client-go's mock.
func TestModelRegressLeftAloneDocumentIsNoConflict(t *testing.T) {
	for _, backend := range []string{"pebble", "tikv-mock"} {
		t.Run(backend, func(t *testing.T) {
			clk := clock.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			e, err := openModelEngine(backend, t.TempDir(), Options{Clock: clk, NoReaper: true, Oplog: true})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			bg := context.Background()
			if err := insertIDs(t, bg, e, "c", 1); err != nil {
				t.Fatal(err)
			}
			tx, err := e.BeginTransaction(bg, TransactionOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Abort()
			in := WithTransaction(bg, tx)
			if got := idsOf(t, in, e, "c"); len(got) != 1 {
				t.Fatalf("the transaction sees %v, want [1]", got)
			}
			docs := []bson.Raw{txnDoc(t, bson.D{{Key: "_id", Value: int32(1)}}), txnDoc(t, bson.D{{Key: "_id", Value: int32(2)}})}
			res, err := e.Insert(bg, "db", "c", docs, false)
			if err != nil || res.N != 1 || len(res.Errors) != 1 {
				t.Fatalf("insert of [1, 2] over [1]: %+v, %v; want one inserted, one duplicate", res, err)
			}
			wantTxnCode(t, insertIDs(t, in, e, "c", 1), mongoerr.DuplicateKey, "")
		})
	}
}
