package engine

import (
	"context"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/engine/update"
	"github.com/lethedb/lethe/mongoerr"
)

func mustRaw(t *testing.T, v any) bson.Raw {
	t.Helper()
	raw, err := bson.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func mustCompileUpdate(t *testing.T, u bson.D) *update.Update {
	t.Helper()
	up, err := update.Compile(mustRaw(t, u), update.Options{Now: time.Unix(0, 0)})
	if err != nil {
		t.Fatal(err)
	}
	return up
}

// withDeadline runs fn and fails the test if it does not return within a
// few seconds: a write that waits on a lock it holds never returns.
func withDeadline(t *testing.T, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatalf("%s did not return: a lock is held by its own request", what)
	}
}

func TestUpsertOfMissingIDReturns(t *testing.T) {
	e := openTestEngine(t)
	ctx := context.Background()
	if _, err := e.Insert(context.Background(), "db", "c", []bson.Raw{mustRaw(t, bson.D{{Key: "_id", Value: 1}})}, true); err != nil {
		t.Fatal(err)
	}
	filter := mustRaw(t, bson.D{{Key: "_id", Value: 5}})
	set := mustCompileUpdate(t, bson.D{{Key: "$set", Value: bson.D{{Key: "x", Value: 1}}}})
	withDeadline(t, "findAndModify upsert", func() {
		res, err := e.FindAndModify(ctx, "db", "c", FindAndModifySpec{Filter: filter, Update: set, Upsert: true, New: true})
		if err != nil || res.N != 1 || res.Value == nil {
			t.Errorf("findAndModify upsert: %+v, %v", res, err)
		}
	})
	withDeadline(t, "update upsert", func() {
		res, err := e.Update(ctx, "db", "c", UpdateSpec{Filter: mustRaw(t, bson.D{{Key: "_id", Value: 6}}), Update: set, Upsert: true})
		if err != nil || res.Upserted.Type == 0 {
			t.Errorf("update upsert: %+v, %v", res, err)
		}
	})
	withDeadline(t, "drop", func() {
		if _, err := e.DropCollection(ctx, "db", "c"); err != nil {
			t.Error(err)
		}
	})
	assertNoLocksHeld(t, e)
}

func TestUniqueIndexHoldsWithinOneInsert(t *testing.T) {
	e := openTestEngine(t)
	if _, err := e.CreateIndexes(context.Background(), "db", "c", []bson.Raw{mustRaw(t, bson.D{{Key: "key", Value: bson.D{{Key: "name", Value: 1}}}, {Key: "name", Value: "name_1"}, {Key: "unique", Value: true}})}); err != nil {
		t.Fatal(err)
	}
	docs := []bson.Raw{
		mustRaw(t, bson.D{{Key: "_id", Value: 1}, {Key: "name", Value: "A"}}),
		mustRaw(t, bson.D{{Key: "_id", Value: 2}, {Key: "name", Value: "A"}}),
		mustRaw(t, bson.D{{Key: "_id", Value: 3}, {Key: "name", Value: "B"}}),
	}
	res, err := e.Insert(context.Background(), "db", "c", docs, false)
	if err != nil {
		t.Fatal(err)
	}
	if res.N != 2 || len(res.Errors) != 1 || res.Errors[0].Index != 1 {
		t.Fatalf("insert: %+v, want the second document refused", res)
	}
	if me, ok := mongoerr.As(res.Errors[0].Err); !ok || me.Code != mongoerr.DuplicateKey {
		t.Fatalf("insert: %v, want a duplicate key error", res.Errors[0].Err)
	}
	checkConsistency(t, e, "db", "c")
	assertNoLocksHeld(t, e)
}

// An upsert is retried after a duplicate key only when its filter is
// nothing but equalities on the refusing index's fields, with the values
// that collided.
func TestRetryUpsertOnlyForEqualityOnTheKey(t *testing.T) {
	dup := func(kv bson.D) error {
		return duplicateKey(&collState{}, "ix", nil, kv)
	}
	five := bson.RawValue{Type: bson.TypeInt32, Value: []byte{5, 0, 0, 0}}
	six := bson.RawValue{Type: bson.TypeInt32, Value: []byte{6, 0, 0, 0}}
	cases := []struct {
		name   string
		filter bson.D
		err    error
		want   bool
	}{
		{"equality", bson.D{{Key: "_id", Value: 5}}, dup(bson.D{{Key: "_id", Value: five}}), true},
		{"$eq", bson.D{{Key: "_id", Value: bson.D{{Key: "$eq", Value: 5}}}}, dup(bson.D{{Key: "_id", Value: five}}), true},
		{"same number, other type", bson.D{{Key: "_id", Value: 5.0}}, dup(bson.D{{Key: "_id", Value: five}}), true},
		{"compound", bson.D{{Key: "b", Value: 6}, {Key: "a", Value: 5}}, dup(bson.D{{Key: "a", Value: five}, {Key: "b", Value: six}}), true},
		{"other value", bson.D{{Key: "_id", Value: 6}}, dup(bson.D{{Key: "_id", Value: five}}), false},
		{"other field", bson.D{{Key: "_id", Value: 5}}, dup(bson.D{{Key: "name", Value: five}}), false},
		{"extra predicate", bson.D{{Key: "_id", Value: 5}, {Key: "x", Value: 1}}, dup(bson.D{{Key: "_id", Value: five}}), false},
		{"range", bson.D{{Key: "_id", Value: bson.D{{Key: "$gte", Value: 5}}}}, dup(bson.D{{Key: "_id", Value: five}}), false},
		{"$eq and more", bson.D{{Key: "_id", Value: bson.D{{Key: "$eq", Value: 5}, {Key: "$lt", Value: 9}}}}, dup(bson.D{{Key: "_id", Value: five}}), false},
		{"not a duplicate", bson.D{{Key: "_id", Value: 5}}, mongoerr.New(mongoerr.BadValue, "no"), false},
		{"missing key", bson.D{{Key: "k", Value: nil}}, dup(bson.D{{Key: "k", Value: nil}}), true},
	}
	for _, tc := range cases {
		if got := retryUpsert(context.Background(), tc.err, mustRaw(t, tc.filter), 1); got != tc.want {
			t.Errorf("%s: retry %v, want %v", tc.name, got, tc.want)
		}
	}
	if retryUpsert(context.Background(), dup(bson.D{{Key: "_id", Value: five}}), mustRaw(t, bson.D{{Key: "_id", Value: 5}}), maxUpsertAttempts) {
		t.Error("retried past the last attempt")
	}
}
