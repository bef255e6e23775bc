package integration

import (
	"errors"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// MongoDB parses a write command's statements with its IDL parser before
// it runs any (src/mongo/db/ops/write_ops.idl: UpdateOpEntry and
// DeleteOpEntry are strict; write_ops_parsers.cpp parses u, write_ops.cpp
// the delete limit): a statement that fails that parse fails the whole
// command and nothing is written. What is parsed as a statement runs (the
// query, update operators, pipeline stages) is that statement's write
// error, after the statements before it were applied
// (src/mongo/db/ops/write_ops_exec.cpp, performUpdates and performDeletes;
// jstests/core/write/delete/batch_write_command_delete.js; the drivers'
// command-monitoring test "A successful updateOne with write errors").

// wantParseFailure runs cmd and wants it to fail as a command with code
// and, when msg is not empty, that message.
func wantParseFailure(t *testing.T, db *mongo.Database, cmd bson.D, code int, msg string) {
	t.Helper()
	err := db.RunCommand(testCtx(t), cmd).Err()
	var ce mongo.CommandError
	if !errors.As(err, &ce) {
		t.Fatalf("%v: got %v, want a command error with code %d", cmd, err, code)
	}
	if int(ce.Code) != code || (msg != "" && ce.Message != msg) {
		t.Fatalf("%v: got code %d %q, want %d %q", cmd, ce.Code, ce.Message, code, msg)
	}
}

// wantWriteError runs cmd and wants it to succeed with n and one write
// error, at index with code.
func wantWriteError(t *testing.T, db *mongo.Database, cmd bson.D, n int32, index int32, code int32) {
	t.Helper()
	// The driver turns a reply with writeErrors into a WriteException.
	var we mongo.WriteException
	if err := db.RunCommand(testCtx(t), cmd).Err(); !errors.As(err, &we) {
		t.Fatalf("%v: got %v, want write errors", cmd, err)
	}
	reply := we.Raw
	if got := reply.Lookup("n").Int32(); got != n {
		t.Errorf("%v: n = %d, want %d", cmd, got, n)
	}
	errs, ok := reply.Lookup("writeErrors").ArrayOK()
	if !ok {
		t.Fatalf("%v: no writeErrors in %v", cmd, reply)
	}
	vals, _ := errs.Values()
	if len(vals) != 1 {
		t.Fatalf("%v: writeErrors %v, want one", cmd, errs)
	}
	got := vals[0].Document()
	if got.Lookup("index").Int32() != index || got.Lookup("code").Int32() != code {
		t.Errorf("%v: write error %v, want index %d code %d", cmd, got, index, code)
	}
}

var setX = bson.D{{Key: "$set", Value: bson.D{{Key: "x", Value: 1}}}}

// TestUpdateStatementParse: an update statement that mongod's parser
// refuses fails the command before the statements ahead of it run.
// MongoDB 7.0 has no sort in update statements (8.0 added it to
// UpdateOpEntry): it is an unknown field there.
func TestUpdateStatementParse(t *testing.T) {
	ts := startServer(t)
	db := ts.Client.Database("test")
	coll := db.Collection("upd_parse")
	mustInsert(t, coll, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "_id", Value: 2}})
	good := bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: 1}}}, {Key: "u", Value: setX}}
	for _, tc := range []struct {
		name string
		bad  bson.D
		code int
		msg  string
	}{
		{"sort", bson.D{{Key: "q", Value: bson.D{}}, {Key: "u", Value: setX}, {Key: "sort", Value: bson.D{{Key: "_id", Value: -1}}}},
			40415, "BSON field 'update.updates.sort' is an unknown field."},
		{"unknown field", bson.D{{Key: "q", Value: bson.D{}}, {Key: "u", Value: setX}, {Key: "bogus", Value: 1}},
			40415, "BSON field 'update.updates.bogus' is an unknown field."},
		{"missing q", bson.D{{Key: "u", Value: setX}}, 40414, "BSON field 'update.updates.q' is missing but a required field"},
		{"missing u", bson.D{{Key: "q", Value: bson.D{}}}, 40414, "BSON field 'update.updates.u' is missing but a required field"},
		{"q not an object", bson.D{{Key: "q", Value: 1}, {Key: "u", Value: setX}}, 14, ""},
		{"u a number", bson.D{{Key: "q", Value: bson.D{}}, {Key: "u", Value: 5}}, 9, "Update argument must be either an object or an array"},
		{"pipeline of a number", bson.D{{Key: "q", Value: bson.D{}}, {Key: "u", Value: bson.A{1}}}, 14, "Each element of the 'pipeline' array must be an object"},
		{"multi not a bool", bson.D{{Key: "q", Value: bson.D{}}, {Key: "u", Value: setX}, {Key: "multi", Value: "yes"}}, 14, ""},
		{"arrayFilters of a number", bson.D{{Key: "q", Value: bson.D{}}, {Key: "u", Value: setX}, {Key: "arrayFilters", Value: bson.A{1}}}, 14,
			"BSON field 'update.updates.arrayFilters.0' is the wrong type 'int', expected type 'object'"},
		{"collation not an object", bson.D{{Key: "q", Value: bson.D{}}, {Key: "u", Value: setX}, {Key: "collation", Value: 1}}, 14, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, ordered := range []bool{true, false} {
				wantParseFailure(t, db, bson.D{{Key: "update", Value: "upd_parse"}, {Key: "updates", Value: bson.A{good, tc.bad}}, {Key: "ordered", Value: ordered}}, tc.code, tc.msg)
			}
			if n := count(t, coll, bson.D{{Key: "x", Value: 1}}); n != 0 {
				t.Fatalf("the statement before the refused one was applied")
			}
		})
	}

	// The Go driver's updateOne and replaceOne with sort (a MongoDB 8.0
	// option) meet the same refusal, and change nothing.
	ctx := testCtx(t)
	_, err := coll.UpdateOne(ctx, bson.D{}, setX, options.UpdateOne().SetSort(bson.D{{Key: "_id", Value: -1}}))
	wantCode(t, err, 40415)
	_, err = coll.ReplaceOne(ctx, bson.D{}, bson.D{{Key: "x", Value: 1}}, options.Replace().SetSort(bson.D{{Key: "_id", Value: -1}}))
	wantCode(t, err, 40415)
	if n := count(t, coll, bson.D{{Key: "x", Value: 1}}); n != 0 {
		t.Fatalf("an update with sort was applied")
	}

	// Parsed when the statement runs: an unknown update operator, an
	// unknown pipeline stage, a bad query. Write errors, after the first
	// statement was applied.
	for _, tc := range []struct {
		name string
		bad  bson.D
		code int32
	}{
		{"unknown operator", bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: 2}}}, {Key: "u", Value: bson.D{{Key: "$nothing", Value: bson.D{{Key: "x", Value: 1}}}}}}, 9},
		{"unknown stage", bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: 2}}}, {Key: "u", Value: bson.A{bson.D{{Key: "$invalidOperator", Value: true}}}}}, 40324},
		{"bad query", bson.D{{Key: "q", Value: bson.D{{Key: "$bogus", Value: 1}}}, {Key: "u", Value: setX}}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := coll.UpdateMany(testCtx(t), bson.D{}, bson.D{{Key: "$unset", Value: bson.D{{Key: "x", Value: 1}}}}); err != nil {
				t.Fatal(err)
			}
			wantWriteError(t, db, bson.D{{Key: "update", Value: "upd_parse"}, {Key: "updates", Value: bson.A{good, tc.bad}}}, 1, 1, tc.code)
			wantIDs(t, coll, bson.D{{Key: "x", Value: 1}}, 1)
		})
	}
}

// TestDeleteStatementParse: a delete statement's limit other than 0 or 1,
// or a missing q or limit, fails the command before any statement runs
// (readMultiDeleteProperty in src/mongo/db/ops/write_ops.cpp is the IDL
// deserializer of limit, and reads any type as a double).
func TestDeleteStatementParse(t *testing.T) {
	ts := startServer(t)
	db := ts.Client.Database("test")
	coll := db.Collection("del_parse")
	mustInsert(t, coll, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "_id", Value: 2}})
	good := bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: 1}}}, {Key: "limit", Value: 1}}
	for _, tc := range []struct {
		name string
		bad  bson.D
		code int
		msg  string
	}{
		{"limit 2", bson.D{{Key: "q", Value: bson.D{}}, {Key: "limit", Value: 2}}, 9, "The limit field in delete objects must be 0 or 1. Got 2"},
		{"limit 0.5", bson.D{{Key: "q", Value: bson.D{}}, {Key: "limit", Value: 0.5}}, 9, "The limit field in delete objects must be 0 or 1. Got 0.5"},
		{"limit -1", bson.D{{Key: "q", Value: bson.D{}}, {Key: "limit", Value: int64(-1)}}, 9, "The limit field in delete objects must be 0 or 1. Got -1"},
		{"missing limit", bson.D{{Key: "q", Value: bson.D{}}}, 40414, "BSON field 'delete.deletes.limit' is missing but a required field"},
		{"missing q", bson.D{{Key: "limit", Value: 0}}, 40414, "BSON field 'delete.deletes.q' is missing but a required field"},
		{"unknown field", bson.D{{Key: "q", Value: bson.D{}}, {Key: "limit", Value: 0}, {Key: "sort", Value: bson.D{}}}, 40415, "BSON field 'delete.deletes.sort' is an unknown field."},
		{"q not an object", bson.D{{Key: "q", Value: "x"}, {Key: "limit", Value: 0}}, 14, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, ordered := range []bool{true, false} {
				wantParseFailure(t, db, bson.D{{Key: "delete", Value: "del_parse"}, {Key: "deletes", Value: bson.A{good, tc.bad}}, {Key: "ordered", Value: ordered}}, tc.code, tc.msg)
			}
			wantIDs(t, coll, bson.D{}, 1, 2)
		})
	}

	// A bad query is the statement's write error: the first statement ran.
	wantWriteError(t, db, bson.D{{Key: "delete", Value: "del_parse"}, {Key: "deletes", Value: bson.A{good,
		bson.D{{Key: "q", Value: bson.D{{Key: "$set", Value: bson.D{{Key: "a", Value: 1}}}}}, {Key: "limit", Value: 0}}}}}, 1, 1, 2)
	wantIDs(t, coll, bson.D{}, 2)

	// A limit that is not a number reads as 0, every match, as in mongod.
	mustInsert(t, coll, bson.D{{Key: "_id", Value: 3}})
	reply := run(t, db, bson.D{{Key: "delete", Value: "del_parse"}, {Key: "deletes", Value: bson.A{bson.D{{Key: "q", Value: bson.D{}}, {Key: "limit", Value: "one"}}}}})
	if n := reply.Lookup("n").Int32(); n != 2 {
		t.Errorf("limit \"one\" deleted %d documents, want 2", n)
	}
}
