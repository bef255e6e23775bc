package engine

import (
	"context"
	"testing"

	"github.com/lethedb/lethe/engine/kv"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestStoredBadValidatorDoesNotBlockOpen checks that a validator an older
// version stored without checking does not keep the store from opening.
func TestStoredBadValidatorDoesNotBlockOpen(t *testing.T) {
	dir := t.TempDir()
	e, err := Open(dir, Options{NoReaper: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.CreateCollection(context.Background(), "db", "c", CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	meta := e.collection("db", "c").st().meta
	meta.Options = mustMarshal(t, bson.D{{Key: "validator", Value: bson.D{{Key: "$foo", Value: 1}}}})
	rawWrite(t, e, func(tx kv.Txn) error { return putMeta(tx, &meta) })
	e.Close()
	e, err = Open(dir, Options{NoReaper: true})
	if err != nil {
		t.Fatalf("open with a stored bad validator: %v", err)
	}
	defer e.Close()
	if _, err := e.Insert(context.Background(), "db", "c", []bson.Raw{mustMarshal(t, bson.D{{Key: "_id", Value: 1}})}, true); err != nil {
		t.Fatal(err)
	}
	if err := e.CreateCollection(context.Background(), "db", "d", CreateOptions{Raw: meta.Options}); err == nil {
		t.Fatal("create accepted a validator that does not compile")
	}
}
