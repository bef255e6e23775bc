package integration

import (
	"runtime"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestStatsCommandsAsMongod checks the statistics commands tools read
// against MongoDB 7.0:
//   - collStats of a missing collection is ok with zero sizes (CmdCollStats
//     in src/mongo/db/commands/dbcommands.cpp ignores NamespaceNotFound);
//   - collStats lists indexSizes in the catalog's order and reports
//     freeStorageSize (docs/reference/command/collStats);
//   - dbstats is dbStats' alias (DBStatsCommand's command_alias);
//   - listDatabases' totalSize sums the databases the filter keeps
//     (list_databases.cpp);
//   - dataSize reports size and numObjects, of an index range too
//     (CmdDatasize); compact answers bytesFreed (compact.cpp);
//   - serverStatus has catalogStats and buildInfo buildEnvironment
//     (docs/reference/command/serverStatus, buildInfo).
func TestStatsCommandsAsMongod(t *testing.T) {
	ts := startServer(t)
	ctx := testCtx(t)
	db := ts.Client.Database("test")
	coll := db.Collection("c")
	for i := range 10 {
		mustInsert(t, coll, bson.D{{Key: "_id", Value: i}, {Key: "z", Value: i}, {Key: "a", Value: i}})
	}
	for _, name := range []string{"z", "a"} {
		createIndex(t, coll, bson.D{{Key: "key", Value: bson.D{{Key: name, Value: 1}}}, {Key: "name", Value: name + "_1"}})
	}

	missing := run(t, db, bson.D{{Key: "collStats", Value: "nosuch"}})
	for _, f := range []string{"size", "count", "storageSize", "totalIndexSize", "totalSize"} {
		if n := lookup(t, missing, f).AsInt64(); n != 0 {
			t.Errorf("collStats of a missing collection: %s = %d, want 0", f, n)
		}
	}

	stats := run(t, db, bson.D{{Key: "collStats", Value: "c"}})
	sizes, err := lookup(t, stats, "indexSizes").Document().Elements()
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, e := range sizes {
		order = append(order, e.Key())
	}
	if len(order) != 3 || order[0] != "_id_" || order[1] != "z_1" || order[2] != "a_1" {
		t.Errorf("indexSizes order = %v, want [_id_ z_1 a_1]", order)
	}
	if _, err := stats.LookupErr("freeStorageSize"); err != nil {
		t.Errorf("collStats has no freeStorageSize: %v", stats)
	}

	if n := lookup(t, run(t, db, bson.D{{Key: "dbstats", Value: 1}}), "objects").AsInt64(); n != 10 {
		t.Errorf("dbstats objects = %d, want 10", n)
	}

	mustInsert(t, ts.Client.Database("other").Collection("o"), bson.D{{Key: "_id", Value: 1}})
	admin := ts.Client.Database("admin")
	listed := run(t, admin, bson.D{{Key: "listDatabases", Value: 1}, {Key: "filter", Value: bson.D{{Key: "name", Value: "test"}}}})
	dbs := mustValues(t, lookup(t, listed, "databases"))
	if len(dbs) != 1 {
		t.Fatalf("filtered listDatabases: %v", listed)
	}
	if total, one := lookup(t, listed, "totalSize").AsInt64(), lookup(t, dbs[0].Document(), "sizeOnDisk").AsInt64(); total != one {
		t.Errorf("filtered listDatabases totalSize = %d, want the listed database's %d", total, one)
	}

	ds := run(t, db, bson.D{{Key: "dataSize", Value: "test.c"}})
	if n := lookup(t, ds, "numObjects").AsInt64(); n != 10 {
		t.Errorf("dataSize numObjects = %d, want 10", n)
	}
	ranged := run(t, db, bson.D{{Key: "dataSize", Value: "test.c"}, {Key: "keyPattern", Value: bson.D{{Key: "z", Value: 1}}},
		{Key: "min", Value: bson.D{{Key: "z", Value: 2}}}, {Key: "max", Value: bson.D{{Key: "z", Value: 5}}}})
	if n := lookup(t, ranged, "numObjects").AsInt64(); n != 3 {
		t.Errorf("dataSize of [2, 5) numObjects = %d, want 3", n)
	}
	if a, b := lookup(t, ranged, "size").AsInt64(), lookup(t, ds, "size").AsInt64(); a <= 0 || a >= b {
		t.Errorf("dataSize of a range = %d bytes, of all %d", a, b)
	}
	if n := lookup(t, run(t, db, bson.D{{Key: "dataSize", Value: "test.nosuch"}}), "numObjects").AsInt64(); n != 0 {
		t.Errorf("dataSize of a missing collection numObjects = %d", n)
	}

	if _, err := coll.DeleteMany(ctx, bson.D{}); err != nil {
		t.Fatal(err)
	}
	compacted := run(t, db, bson.D{{Key: "compact", Value: "c"}})
	if n := lookup(t, compacted, "bytesFreed").AsInt64(); n < 0 {
		t.Errorf("compact bytesFreed = %d", n)
	}
	wantCode(t, db.RunCommand(ctx, bson.D{{Key: "compact", Value: "nosuch"}}).Err(), 26)

	status := run(t, admin, bson.D{{Key: "serverStatus", Value: 1}})
	if n := lookup(t, status, "catalogStats", "collections").AsInt64(); n != 2 {
		t.Errorf("catalogStats.collections = %d, want 2 (test.c, other.o)", n)
	}
	info := run(t, admin, bson.D{{Key: "buildInfo", Value: 1}})
	if os := lookup(t, info, "buildEnvironment", "target_os").StringValue(); os != runtime.GOOS {
		t.Errorf("buildEnvironment.target_os = %q, want %q", os, runtime.GOOS)
	}
}

// TestGetParameterDetails checks getParameter's showDetails form and the
// parameters tools read (docs/reference/command/getParameter): each value
// comes with settableAtRuntime and settableAtStartup.
func TestGetParameterDetails(t *testing.T) {
	ts := startServer(t)
	admin := ts.Client.Database("admin")
	reply := run(t, admin, bson.D{{Key: "getParameter", Value: bson.D{{Key: "showDetails", Value: true}}},
		{Key: "logLevel", Value: 1}, {Key: "cursorTimeoutMillis", Value: 1}, {Key: "enableLocalhostAuthBypass", Value: 1}})
	if !lookup(t, reply, "logLevel", "settableAtStartup").Boolean() {
		t.Errorf("logLevel settableAtStartup = false, want true (--log-level): %v", reply)
	}
	if n := lookup(t, reply, "cursorTimeoutMillis", "value").AsInt64(); n != 600000 {
		t.Errorf("cursorTimeoutMillis = %d, want 600000", n)
	}
	if !lookup(t, reply, "enableLocalhostAuthBypass", "value").Boolean() {
		t.Errorf("enableLocalhostAuthBypass: %v", reply)
	}
}

// TestStatsStopAtMaxTime: collStats and dbStats count a collection's live
// documents exactly, reading every one, so maxTimeMS must stop them as it
// does any command (MaxTimeMSExpired, 50, as mongod's commands that honour
// maxTimeMS; docs/reference/method/cursor.maxTimeMS) rather than let a
// request read millions of documents; without it they answer.
func TestStatsStopAtMaxTime(t *testing.T) {
	ts := startServer(t)
	ctx := testCtx(t)
	db := ts.Client.Database("test")
	coll := db.Collection("big")
	// Enough documents that counting them takes several times maxTimeMS's
	// least value of 1 ms: 60,000 were counted within it in about one run
	// in twelve, and the command then rightly answered.
	batch := make([]any, 0, 10_000)
	for i := range 300_000 {
		batch = append(batch, bson.D{{Key: "_id", Value: i}})
		if len(batch) == cap(batch) {
			if _, err := coll.InsertMany(ctx, batch); err != nil {
				t.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	for _, cmd := range []bson.D{
		{{Key: "collStats", Value: "big"}, {Key: "maxTimeMS", Value: 1}},
		{{Key: "dbStats", Value: 1}, {Key: "maxTimeMS", Value: 1}},
	} {
		wantCode(t, db.RunCommand(ctx, cmd).Err(), 50)
	}
	if n := lookup(t, run(t, db, bson.D{{Key: "dbStats", Value: 1}}), "objects").AsInt64(); n != 300_000 {
		t.Fatalf("dbStats counts %d objects, want 300000", n)
	}
}
