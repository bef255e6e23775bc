package integration

import (
	"bytes"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/lethedb/lethe/server"
)

// tikvMockTests are the tests TestOnTiKVMock runs again with their servers
// on client-go's mock of a TiKV cluster (what lethe --store tikv-mock
// runs on): CRUD, indexes and unique constraints, TTL with the reaper,
// aggregation (spilling too), views, change streams, retryable writes, transactions and
// users, restarts included (a restart opens a new front-end on the same
// cluster). go test ./integration -store=tikv-mock runs every test there.
var tikvMockTests = []struct {
	name string
	run  func(*testing.T)
}{
	{"TestInsertAndFindByID", TestInsertAndFindByID},
	{"TestInsertErrors", TestInsertErrors},
	{"TestConcurrentDuplicateIDOneWins", TestConcurrentDuplicateIDOneWins},
	{"TestFindOptionsAndCursors", TestFindOptionsAndCursors},
	{"TestUpdateDeleteAndFindAndModify", TestUpdateDeleteAndFindAndModify},
	{"TestCountDistinctAggregate", TestCountDistinctAggregate},
	{"TestRestartKeepsData", TestRestartKeepsData},
	{"TestCreateListDropIndexes", TestCreateListDropIndexes},
	{"TestUniqueIndexes", TestUniqueIndexes},
	{"TestMultikeySparsePartial", TestMultikeySparsePartial},
	{"TestRule01TimestampDrivesExpiry", TestRule01TimestampDrivesExpiry},
	{"TestRule04TouchResetsTimestamp", TestRule04TouchResetsTimestamp},
	{"TestRule15ExpiredDocumentsAreAbsentEverywhere", TestRule15ExpiredDocumentsAreAbsentEverywhere},
	{"TestRule16ReaperPurgesWithinASecond", TestRule16ReaperPurgesWithinASecond},
	{"TestRule19DateTTLIndex", TestRule19DateTTLIndex},
	{"TestRule20DateTTLPurgedByReaper", TestRule20DateTTLPurgedByReaper},
	{"TestAggregateJoinsAndWriters", TestAggregateJoinsAndWriters},
	{"TestAggregateSpilledSortStreams", TestAggregateSpilledSortStreams},
	{"TestViewReads", TestViewReads},
	{"TestChangeStreamEventKinds", TestChangeStreamEventKinds},
	{"TestChangeStreamResumeAfterRestart", TestChangeStreamResumeAfterRestart},
	{"TestChangeStreamTTLDelete", TestChangeStreamTTLDelete},
	{"TestChangeStreamExpireEvents", TestChangeStreamExpireEvents},
	{"TestRetryableWritesDriver", TestRetryableWritesDriver},
	{"TestTransactionCommitAndAbortGo", TestTransactionCommitAndAbortGo},
	{"TestTransactionSnapshotGo", TestTransactionSnapshotGo},
	{"TestTransactionWriteConflictGo", TestTransactionWriteConflictGo},
	{"TestTransactionUniqueConflictGo", TestTransactionUniqueConflictGo},
	{"TestAuthUsersSurviveRestart", TestAuthUsersSurviveRestart},
	{"TestServerStatusStorageEngine", TestServerStatusStorageEngine},
	{"TestServerStatusBlockCache", TestServerStatusBlockCache},
	{"BigDocuments", testBigDocuments},
}

// TestOnTiKVMock runs tikvMockTests on the TiKV mock.
func TestOnTiKVMock(t *testing.T) {
	t.Run("RunsOnTheMock", func(t *testing.T) {
		if ts := startServer(t); ts.mock == nil {
			t.Fatal("the server is not on the TiKV mock")
		}
	})
	for _, tc := range tikvMockTests {
		t.Run(tc.name, tc.run)
	}
}

// testBigDocuments: documents of nearly MongoDB's 16 MiB, twice what one
// TiKV write may carry, are stored in chunks and come back whole through
// finds, updates, index scans and replacement by a small one; deleting one
// leaves nothing behind.
func testBigDocuments(t *testing.T) {
	ts := startServer(t)
	coll := ts.Client.Database("app").Collection("big")
	if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "tag", Value: 1}}}); err != nil {
		t.Fatal(err)
	}
	// The largest document an insert may carry, with room for the
	// command around it in one 48 MB message.
	payload := strings.Repeat("0123456789abcdef", (16<<20-1024)/16)
	mustInsert(t, coll,
		bson.D{{Key: "_id", Value: 1}, {Key: "tag", Value: "big"}, {Key: "payload", Value: payload}},
		bson.D{{Key: "_id", Value: 2}, {Key: "tag", Value: "small"}},
		bson.D{{Key: "_id", Value: 3}, {Key: "tag", Value: "big"}, {Key: "payload", Value: payload[:9<<20]}})
	check := func(what string, filter bson.D, want ...string) {
		t.Helper()
		cur, err := coll.Find(ctx, filter, options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}))
		if err != nil {
			t.Fatal(err)
		}
		var got []struct {
			ID      int32  `bson:"_id"`
			Payload string `bson:"payload"`
		}
		if err := cur.All(ctx, &got); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if len(got) != len(want) {
			t.Fatalf("%s: %d documents, want %d", what, len(got), len(want))
		}
		for i, d := range got {
			if d.Payload != want[i] {
				t.Fatalf("%s: document %d holds %d bytes of payload, want %d", what, d.ID, len(d.Payload), len(want[i]))
			}
		}
	}
	check("collection scan", bson.D{}, payload, "", payload[:9<<20])
	check("_id point", bson.D{{Key: "_id", Value: 1}}, payload)
	check("index scan", bson.D{{Key: "tag", Value: "big"}}, payload, payload[:9<<20])

	// An update that keeps it big, then a replacement by a small one.
	if _, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$set", Value: bson.D{{Key: "n", Value: 1}}}}); err != nil {
		t.Fatal(err)
	}
	var one struct {
		N       int32  `bson:"n"`
		Payload string `bson:"payload"`
	}
	if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: 1}}).Decode(&one); err != nil || one.N != 1 || one.Payload != payload {
		t.Fatalf("after $set: n %d, %d bytes, %v", one.N, len(one.Payload), err)
	}
	if _, err := coll.ReplaceOne(ctx, bson.D{{Key: "_id", Value: 3}}, bson.D{{Key: "tag", Value: "was big"}}); err != nil {
		t.Fatal(err)
	}
	check("after the replacement", bson.D{{Key: "_id", Value: bson.D{{Key: "$gte", Value: 2}}}}, "", "")
	// Small grows big in place.
	if _, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: 2}}, bson.D{{Key: "$set", Value: bson.D{{Key: "payload", Value: payload[:5<<20]}}}}); err != nil {
		t.Fatal(err)
	}
	check("after growing", bson.D{{Key: "_id", Value: 2}}, payload[:5<<20])
	if _, err := coll.DeleteMany(ctx, bson.D{}); err != nil {
		t.Fatal(err)
	}
	if n, err := coll.CountDocuments(ctx, bson.D{}); err != nil || n != 0 {
		t.Fatalf("after delete: %d documents, %v", n, err)
	}
	// One 16 MiB document is too large, as on MongoDB.
	over := bson.D{{Key: "_id", Value: 4}, {Key: "payload", Value: payload + string(bytes.Repeat([]byte("x"), 2048))}}
	if _, err := coll.InsertOne(ctx, over); err == nil {
		t.Fatal("a document over 16 MiB was stored")
	}
}

// TestServerStatusStorageEngine: serverStatus's storageEngine section, in
// mongod's shape, names the backend --store chose and says whether its data
// outlives the process: pebble on disk, or client-go's in-memory mock.
func TestServerStatusStorageEngine(t *testing.T) {
	ts := startServer(t)
	var status struct {
		StorageEngine struct {
			Name           string `bson:"name"`
			Persistent     bool   `bson:"persistent"`
			ReadOnly       bool   `bson:"readOnly"`
			CommittedReads bool   `bson:"supportsCommittedReads"`
		} `bson:"storageEngine"`
	}
	if err := ts.Client.Database("admin").RunCommand(ctx, bson.D{{Key: "serverStatus", Value: 1}}).Decode(&status); err != nil {
		t.Fatal(err)
	}
	se := status.StorageEngine
	wantName, wantPersistent := "pebble", true
	if ts.mock != nil {
		wantName, wantPersistent = "tikv-mock", false
	}
	if se.Name != wantName || se.Persistent != wantPersistent || se.ReadOnly || !se.CommittedReads {
		t.Fatalf("storageEngine = %+v, want %s, persistent %v, writable, committed reads", se, wantName, wantPersistent)
	}
}

// TestServerStatusBlockCache: serverStatus's lethe section shows the block
// cache of an embedded store, with the budget --cache-size-mb gave it, so
// that a user can tell whether reads find their blocks there. A store
// whose caches are the cluster's (TiKV) shows none.
func TestServerStatusBlockCache(t *testing.T) {
	ts := startServer(t, func(c *server.Config) { c.CacheSize = 48 << 20 })
	coll := ts.Client.Database("db").Collection("c")
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	var status struct {
		Lethe struct {
			BlockCache *struct {
				MaxBytes int64 `bson:"maxBytes"`
				Bytes    int64 `bson:"bytes"`
				Hits     int64 `bson:"hits"`
				Misses   int64 `bson:"misses"`
			} `bson:"blockCache"`
		} `bson:"lethe"`
	}
	if err := ts.Client.Database("admin").RunCommand(ctx, bson.D{{Key: "serverStatus", Value: 1}}).Decode(&status); err != nil {
		t.Fatal(err)
	}
	bc := status.Lethe.BlockCache
	if ts.mock != nil {
		if bc != nil {
			t.Fatalf("a block cache on TiKV: %+v", *bc)
		}
		return
	}
	if bc == nil || bc.MaxBytes != 48<<20 || bc.Bytes < 0 || bc.Bytes > bc.MaxBytes || bc.Hits < 0 || bc.Misses < 0 {
		t.Fatalf("lethe.blockCache = %+v, want a budget of 48 MiB", bc)
	}
}
