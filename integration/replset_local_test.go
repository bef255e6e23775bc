package integration

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestReplSetKeepsLocal checks that a replica-set member answers as mongod
// does for its local database: creating local.oplog.rs is NamespaceExists
// (48), dropping it is refused (5255000, drop_collection.cpp) and so is
// dropping local (IllegalOperation, 20; CmdDropDatabase in dbcommands.cpp,
// jstests/replsets/drop_oplog.js). The oplog stays readable afterwards.
func TestReplSetKeepsLocal(t *testing.T) {
	_, client := startReplSet(t)
	ctx := testCtx(t)
	mustInsert(t, client.Database("test").Collection("c"), bson.D{{Key: "_id", Value: 1}})
	local := client.Database("local")
	wantCode(t, local.CreateCollection(ctx, "oplog.rs"), 48)
	wantCode(t, local.RunCommand(ctx, bson.D{{Key: "drop", Value: "oplog.rs"}}).Err(), 5255000)
	wantCode(t, local.RunCommand(ctx, bson.D{{Key: "dropDatabase", Value: 1}}).Err(), 20)
	if n, err := local.Collection("oplog.rs").CountDocuments(ctx, bson.D{{Key: "ns", Value: "test.c"}}); err != nil || n == 0 {
		t.Errorf("oplog entries of test.c: %d (%v), want some", n, err)
	}
	// Other collections of local come and go as usual.
	if err := local.CreateCollection(ctx, "mine"); err != nil {
		t.Errorf("create local.mine: %v", err)
	}
	if err := local.Collection("mine").Drop(ctx); err != nil {
		t.Errorf("drop local.mine: %v", err)
	}
}

// TestStandaloneLocalIsOrdinary checks that a standalone server, which has
// no replication, lets local be dropped as a standalone mongod does.
func TestStandaloneLocalIsOrdinary(t *testing.T) {
	ts := startServer(t)
	ctx := testCtx(t)
	local := ts.Client.Database("local")
	mustInsert(t, local.Collection("x"), bson.D{{Key: "_id", Value: 1}})
	if err := local.RunCommand(ctx, bson.D{{Key: "dropDatabase", Value: 1}}).Err(); err != nil {
		t.Errorf("dropDatabase local on a standalone server: %v", err)
	}
}

// TestWriteStagesRefuseLinearizable checks that $out and $merge under
// readConcern linearizable fail with InvalidOptions (72), as MongoDB's
// write stages answer (DocumentSourceOut and DocumentSourceMerge,
// LiteParsed::supportsReadConcern), and write nothing; a linearizable read
// without them still works.
func TestWriteStagesRefuseLinearizable(t *testing.T) {
	_, client := startReplSet(t)
	ctx := testCtx(t)
	db := client.Database("test")
	mustInsert(t, db.Collection("src"), bson.D{{Key: "_id", Value: 1}})
	linearizable := bson.D{{Key: "level", Value: "linearizable"}}
	for _, stage := range []bson.D{
		{{Key: "$out", Value: "dst"}},
		{{Key: "$merge", Value: bson.D{{Key: "into", Value: "dst"}}}},
	} {
		err := db.RunCommand(ctx, bson.D{{Key: "aggregate", Value: "src"}, {Key: "pipeline", Value: bson.A{stage}},
			{Key: "cursor", Value: bson.D{}}, {Key: "readConcern", Value: linearizable}}).Err()
		wantCode(t, err, 72)
	}
	if names, err := db.ListCollectionNames(ctx, bson.D{{Key: "name", Value: "dst"}}); err != nil || len(names) != 0 {
		t.Errorf("refused write stages created %v (%v)", names, err)
	}
	run(t, db, bson.D{{Key: "aggregate", Value: "src"}, {Key: "pipeline", Value: bson.A{}}, {Key: "cursor", Value: bson.D{}}, {Key: "readConcern", Value: linearizable}})
}
