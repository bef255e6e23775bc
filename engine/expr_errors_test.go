package engine

import (
	"context"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/engine/update"
	"github.com/lethedb/lethe/mongoerr"
)

// A $expr that fails on a document fails every command that filters, as in
// MongoDB, rather than leaving the document out.
func TestExprRuntimeErrorFailsCommands(t *testing.T) {
	e := openTestEngine(t)
	ctx := context.Background()
	docs := []bson.Raw{mustRaw(t, bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: 1}}), mustRaw(t, bson.D{{Key: "_id", Value: 2}, {Key: "a", Value: "x"}})}
	if _, err := e.Insert(context.Background(), "db", "c", docs, true); err != nil {
		t.Fatal(err)
	}
	filter := mustRaw(t, bson.D{{Key: "$expr", Value: bson.D{{Key: "$eq", Value: bson.A{bson.D{{Key: "$add", Value: bson.A{"$a", 1}}}, 2}}}}})
	want := mongoerr.TypeMismatch
	check := func(what string, err error) {
		t.Helper()
		if code := mongoerr.CodeOf(err); code != want {
			t.Errorf("%s: got %v (code %d), want code %d", what, err, code, want)
		}
	}
	_, err := e.Count(ctx, "db", "c", filter, 0, 0, bson.RawValue{})
	check("count", err)
	_, err = e.Distinct(ctx, "db", "c", "a", filter)
	check("distinct", err)
	cur, err := e.Find(ctx, "db", "c", FindSpec{Filter: filter})
	if err == nil {
		_, err = cur.All(ctx)
	}
	check("find", err)
	u, err := update.Compile(mustRaw(t, bson.D{{Key: "$set", Value: bson.D{{Key: "b", Value: 1}}}}), update.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.Update(ctx, "db", "c", UpdateSpec{Filter: filter, Update: u, Multi: true})
	check("update", err)
	_, err = e.Delete(ctx, "db", "c", filter, 0, bson.RawValue{})
	check("delete", err)
	// Nothing was changed by the failed writes.
	n, err := e.Count(ctx, "db", "c", nil, 0, 0, bson.RawValue{})
	if err != nil || n != 2 {
		t.Fatalf("count after failed writes: %d, %v", n, err)
	}
}
