package integration

import (
	"context"
	"errors"
	"slices"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// errCode extracts the MongoDB error code from a driver error: a command
// error, or the first write error of a write or bulk write exception.
func errCode(err error) int {
	var ce mongo.CommandError
	if errors.As(err, &ce) {
		return int(ce.Code)
	}
	var we mongo.WriteException
	if errors.As(err, &we) {
		if len(we.WriteErrors) > 0 {
			return we.WriteErrors[0].Code
		}
		if we.WriteConcernError != nil {
			return we.WriteConcernError.Code
		}
	}
	var bwe mongo.BulkWriteException
	if errors.As(err, &bwe) && len(bwe.WriteErrors) > 0 {
		return bwe.WriteErrors[0].Code
	}
	return 0
}

// wantCode fails the test unless err carries code.
func wantCode(t *testing.T, err error, code int) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want code %d", code)
	}
	if got := errCode(err); got != code {
		t.Fatalf("got error %v (code %d), want code %d", err, got, code)
	}
}

// run runs a command and returns its reply, failing the test on error.
func run(t *testing.T, db *mongo.Database, cmd bson.D) bson.Raw {
	t.Helper()
	raw, err := db.RunCommand(context.Background(), cmd).Raw()
	if err != nil {
		t.Fatalf("%v: %v", cmd, err)
	}
	return raw
}

// ids returns the _id values (as int32s) of the documents find returns,
// sorted.
func ids(t *testing.T, coll *mongo.Collection, filter any) []int32 {
	t.Helper()
	cur, err := coll.Find(context.Background(), filter)
	if err != nil {
		t.Fatalf("find %v: %v", filter, err)
	}
	var docs []bson.M
	if err := cur.All(context.Background(), &docs); err != nil {
		t.Fatalf("find %v: %v", filter, err)
	}
	out := make([]int32, 0, len(docs))
	for _, d := range docs {
		switch id := d["_id"].(type) {
		case int32:
			out = append(out, id)
		case int64:
			out = append(out, int32(id))
		default:
			t.Fatalf("unexpected _id %v (%T)", d["_id"], d["_id"])
		}
	}
	slices.Sort(out)
	return out
}

// wantIDs fails unless find(filter) returns exactly the given _ids.
func wantIDs(t *testing.T, coll *mongo.Collection, filter any, want ...int32) {
	t.Helper()
	got := ids(t, coll, filter)
	if want == nil {
		want = []int32{}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("find %v: got _ids %v, want %v", filter, got, want)
	}
}

func mustInsert(t *testing.T, coll *mongo.Collection, docs ...any) {
	t.Helper()
	if _, err := coll.InsertMany(context.Background(), docs); err != nil {
		t.Fatalf("insert: %v", err)
	}
}

func count(t *testing.T, coll *mongo.Collection, filter any) int64 {
	t.Helper()
	n, err := coll.CountDocuments(context.Background(), filter)
	if err != nil {
		t.Fatalf("countDocuments: %v", err)
	}
	return n
}

// notMonitorHello is a $match stage after $currentOp that leaves out the
// hello (or legacy isMaster) of the driver's monitors, which they send on
// connections of their own at any time: one in flight is a running
// command, listed as on mongod.
var notMonitorHello = bson.D{{Key: "$match", Value: bson.D{
	{Key: "command.hello", Value: bson.D{{Key: "$exists", Value: false}}},
	{Key: "command.isMaster", Value: bson.D{{Key: "$exists", Value: false}}},
}}}
