package engine

import (
	"context"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/mongoerr"
)

// The parts of $out and $merge the conformance files cannot show: other
// databases, the target's indexes and options, validators, and what a
// failure leaves behind.

func aggregateD(t *testing.T, e *Engine, db, coll string, opts AggregateOptions, stages ...bson.D) ([]bson.Raw, error) {
	t.Helper()
	raw := make([]bson.Raw, len(stages))
	for i, st := range stages {
		raw[i] = mustMarshal(t, st)
	}
	return e.Aggregate(context.Background(), db, coll, raw, opts)
}

func collDocs(t *testing.T, e *Engine, db, coll string) []bson.Raw {
	t.Helper()
	cur, err := e.Find(context.Background(), db, coll, FindSpec{})
	if err != nil {
		t.Fatal(err)
	}
	docs, err := cur.All(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return docs
}

func insertD(t *testing.T, e *Engine, db, coll string, docs ...bson.D) {
	t.Helper()
	raw := make([]bson.Raw, len(docs))
	for i, d := range docs {
		raw[i] = mustMarshal(t, d)
	}
	if res, err := e.Insert(context.Background(), db, coll, raw, true); err != nil || len(res.Errors) > 0 {
		t.Fatalf("insert: %v %v", err, res.Errors)
	}
}

func TestOutToAnotherDatabase(t *testing.T) {
	e := openTestEngine(t)
	insertD(t, e, "src", "c", bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "_id", Value: 2}})
	if _, err := aggregateD(t, e, "src", "c", AggregateOptions{}, bson.D{{Key: "$out", Value: bson.D{{Key: "db", Value: "reporting"}, {Key: "coll", Value: "out"}}}}); err != nil {
		t.Fatal(err)
	}
	if got := collDocs(t, e, "reporting", "out"); len(got) != 2 {
		t.Fatalf("reporting.out holds %v", got)
	}
}

func TestOutEmptyResultCreatesCollection(t *testing.T) {
	e := openTestEngine(t)
	insertD(t, e, "db", "c", bson.D{{Key: "_id", Value: 1}})
	if _, err := aggregateD(t, e, "db", "c", AggregateOptions{}, bson.D{{Key: "$match", Value: bson.D{{Key: "_id", Value: 5}}}}, bson.D{{Key: "$out", Value: "dest"}}); err != nil {
		t.Fatal(err)
	}
	if !e.CollectionExists(context.Background(), "db", "dest") {
		t.Fatal("$out of no documents made no collection")
	}
}

func TestOutGeneratesIDs(t *testing.T) {
	e := openTestEngine(t)
	insertD(t, e, "db", "c", bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: 1}}, bson.D{{Key: "_id", Value: 2}, {Key: "a", Value: 1}})
	if _, err := aggregateD(t, e, "db", "c", AggregateOptions{}, bson.D{{Key: "$project", Value: bson.D{{Key: "_id", Value: 0}}}}, bson.D{{Key: "$out", Value: "dest"}}); err != nil {
		t.Fatal(err)
	}
	got := collDocs(t, e, "db", "dest")
	if len(got) != 2 || got[0].Lookup("_id").Type != bson.TypeObjectID {
		t.Fatalf("dest holds %v, want two documents with ObjectId _ids", got)
	}
}

// TestOutKeepsIndexesAndFailsWhole checks that the target's indexes hold
// for the new documents, and that a violation leaves the old contents and
// no temporary collection.
func TestOutKeepsIndexesAndFailsWhole(t *testing.T) {
	e := openTestEngine(t)
	insertD(t, e, "db", "c", bson.D{{Key: "_id", Value: 1}, {Key: "k", Value: "x"}}, bson.D{{Key: "_id", Value: 2}, {Key: "k", Value: "x"}})
	insertD(t, e, "db", "dest", bson.D{{Key: "_id", Value: 9}, {Key: "k", Value: "old"}})
	if _, err := e.CreateIndexes(context.Background(), "db", "dest", []bson.Raw{mustMarshal(t, bson.D{{Key: "key", Value: bson.D{{Key: "k", Value: 1}}}, {Key: "name", Value: "k_1"}, {Key: "unique", Value: true}})}); err != nil {
		t.Fatal(err)
	}
	_, err := aggregateD(t, e, "db", "c", AggregateOptions{}, bson.D{{Key: "$out", Value: "dest"}})
	if mongoerr.CodeOf(err) != mongoerr.DuplicateKey {
		t.Fatalf("$out of duplicate keys: %v, want DuplicateKey", err)
	}
	if got := collDocs(t, e, "db", "dest"); len(got) != 1 || got[0].Lookup("k").StringValue() != "old" {
		t.Fatalf("after a failed $out dest holds %v", got)
	}
	for _, name := range e.CollectionNames(context.Background(), "db") {
		if strings.HasPrefix(name, "tmp.") {
			t.Fatalf("temporary collection %s left behind", name)
		}
	}
	// Without the duplicate the new contents replace the old, indexed.
	if _, err := aggregateD(t, e, "db", "c", AggregateOptions{}, bson.D{{Key: "$set", Value: bson.D{{Key: "k", Value: "$_id"}}}}, bson.D{{Key: "$out", Value: "dest"}}); err != nil {
		t.Fatal(err)
	}
	specs, err := e.ListIndexes(context.Background(), "db", "dest")
	if err != nil || len(specs) != 2 {
		t.Fatalf("indexes of dest after $out: %v %v", specs, err)
	}
	if got := collDocs(t, e, "db", "dest"); len(got) != 2 {
		t.Fatalf("dest holds %v", got)
	}
}

func TestOutAndMergeValidate(t *testing.T) {
	e := openTestEngine(t)
	insertD(t, e, "db", "c", bson.D{{Key: "_id", Value: 1}, {Key: "n", Value: "not a number"}})
	validator := mustMarshal(t, bson.D{{Key: "validator", Value: bson.D{{Key: "n", Value: bson.D{{Key: "$type", Value: "number"}}}}}})
	if err := e.CreateCollection(context.Background(), "db", "dest", CreateOptions{Raw: validator}); err != nil {
		t.Fatal(err)
	}
	// $merge writes a document of its own: merging one equal to what is
	// there changes nothing, and MongoDB validates only what changes.
	newID := bson.D{{Key: "$set", Value: bson.D{{Key: "_id", Value: 2}}}}
	for i, stages := range [][]bson.D{{{{Key: "$out", Value: "dest"}}}, {newID, {{Key: "$merge", Value: "dest"}}}} {
		_, err := aggregateD(t, e, "db", "c", AggregateOptions{}, stages...)
		if mongoerr.CodeOf(err) != mongoerr.DocumentValidationFailure {
			t.Fatalf("%v of an invalid document: %v, want DocumentValidationFailure", stages, err)
		}
		if _, err := aggregateD(t, e, "db", "c", AggregateOptions{BypassDocumentValidation: true}, stages...); err != nil {
			t.Fatalf("%v with bypassDocumentValidation: %v", stages, err)
		}
		if got := collDocs(t, e, "db", "dest"); len(got) != i+1 {
			t.Fatalf("after %v dest holds %v", stages, got)
		}
	}
	// $out kept the validator.
	res, err := e.Insert(context.Background(), "db", "dest", []bson.Raw{mustMarshal(t, bson.D{{Key: "n", Value: "x"}})}, true)
	if err != nil || len(res.Errors) == 0 {
		t.Fatalf("dest lost its validator after $out: %v %v", err, res)
	}
}

func TestMergeGeneratesMissingID(t *testing.T) {
	e := openTestEngine(t)
	insertD(t, e, "db", "c", bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: 1}})
	for i := 0; i < 2; i++ {
		if _, err := aggregateD(t, e, "db", "c", AggregateOptions{}, bson.D{{Key: "$project", Value: bson.D{{Key: "_id", Value: 0}}}}, bson.D{{Key: "$merge", Value: "dest"}}); err != nil {
			t.Fatal(err)
		}
	}
	if got := collDocs(t, e, "db", "dest"); len(got) != 2 {
		t.Fatalf("two merges of a document without _id made %v, want two documents", got)
	}
}

func TestMergeIntoAnotherDatabase(t *testing.T) {
	e := openTestEngine(t)
	insertD(t, e, "src", "c", bson.D{{Key: "_id", Value: 1}, {Key: "v", Value: "new"}}, bson.D{{Key: "_id", Value: 2}, {Key: "v", Value: "new"}})
	insertD(t, e, "reporting", "t", bson.D{{Key: "_id", Value: 1}, {Key: "v", Value: "old"}, {Key: "w", Value: 1}})
	into := bson.D{{Key: "db", Value: "reporting"}, {Key: "coll", Value: "t"}}
	if _, err := aggregateD(t, e, "src", "c", AggregateOptions{}, bson.D{{Key: "$merge", Value: bson.D{{Key: "into", Value: into}}}}); err != nil {
		t.Fatal(err)
	}
	got := collDocs(t, e, "reporting", "t")
	want := []bson.Raw{
		mustMarshal(t, bson.D{{Key: "_id", Value: 1}, {Key: "v", Value: "new"}, {Key: "w", Value: 1}}),
		mustMarshal(t, bson.D{{Key: "_id", Value: 2}, {Key: "v", Value: "new"}}),
	}
	if msg := sameDocs(got, want, true, false); msg != "" {
		t.Fatalf("reporting.t after $merge: %s: %v", msg, got)
	}
}
