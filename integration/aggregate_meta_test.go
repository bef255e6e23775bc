package integration

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// aggregateAll runs a pipeline on coll and returns its documents.
func aggregateAll(t *testing.T, coll *mongo.Collection, p mongo.Pipeline) []bson.Raw {
	t.Helper()
	ctx := testCtx(t)
	cur, err := coll.Aggregate(ctx, p)
	return pipelineDocs(t, ctx, cur, err, p)
}

// pipelineDocs returns the documents of the cursor an aggregation of p
// opened, failing the test on err or a cursor error.
func pipelineDocs(t *testing.T, ctx context.Context, cur *mongo.Cursor, err error, p mongo.Pipeline) []bson.Raw {
	t.Helper()
	if err != nil {
		t.Fatalf("%v: %v", p, err)
	}
	var docs []bson.Raw
	for cur.Next(ctx) {
		docs = append(docs, append(bson.Raw(nil), cur.Current...))
	}
	if err := cur.Err(); err != nil {
		t.Fatal(err)
	}
	return docs
}

func int64At(t *testing.T, d bson.Raw, path ...string) int64 {
	t.Helper()
	v, err := d.LookupErr(path...)
	if err != nil {
		t.Fatalf("%v in %v: %v", path, d, err)
	}
	n, ok := v.AsInt64OK()
	if !ok {
		t.Fatalf("%v in %v is a %v", path, d, v.Type)
	}
	return n
}

// $collStats counts the commands on the collection by kind, with
// MongoDB's histogram buckets, the collection scans, and its storage.
func TestAggregateCollStatsMeta(t *testing.T) {
	ts := startServer(t)
	ctx := testCtx(t)
	coll := ts.Client.Database("app").Collection("c")
	mustInsert(t, coll, bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: 1}}, bson.D{{Key: "_id", Value: 2}, {Key: "a", Value: 2}})
	for range 3 {
		if _, err := coll.Find(ctx, bson.D{{Key: "a", Value: 2}}); err != nil {
			t.Fatal(err)
		}
	}
	docs := aggregateAll(t, coll, mongo.Pipeline{
		{{Key: "$collStats", Value: bson.D{
			{Key: "latencyStats", Value: bson.D{{Key: "histograms", Value: true}}},
			{Key: "storageStats", Value: bson.D{{Key: "scale", Value: 1}}},
			{Key: "count", Value: bson.D{}},
			{Key: "queryExecStats", Value: bson.D{}},
		}}},
	})
	if len(docs) != 1 {
		t.Fatalf("%d documents", len(docs))
	}
	d := docs[0]
	if ns := d.Lookup("ns").StringValue(); ns != "app.c" {
		t.Errorf("ns %q", ns)
	}
	if _, ok := d.Lookup("localTime").DateTimeOK(); !ok {
		t.Errorf("localTime %v", d.Lookup("localTime"))
	}
	host := d.Lookup("host").StringValue()
	if !strings.HasSuffix(host, ":"+strconv.Itoa(portOf(t, ts))) {
		t.Errorf("host %q does not end with the server's port %d", host, portOf(t, ts))
	}
	// Three finds, one insert: the $collStats aggregate itself is filed
	// once it has finished.
	if n := int64At(t, d, "latencyStats", "reads", "ops"); n != 3 {
		t.Errorf("reads.ops %d, want 3: %v", n, d.Lookup("latencyStats"))
	}
	if n := int64At(t, d, "latencyStats", "writes", "ops"); n != 1 {
		t.Errorf("writes.ops %d, want 1", n)
	}
	var inBuckets int64
	hist, _ := d.Lookup("latencyStats", "reads", "histogram").Array().Values()
	for _, b := range hist {
		inBuckets += int64At(t, b.Document(), "count")
		if _, ok := b.Document().Lookup("micros").Int64OK(); !ok {
			t.Errorf("bucket %v: micros is not a long", b)
		}
	}
	if inBuckets != 3 {
		t.Errorf("histogram %v holds %d operations, want 3", hist, inBuckets)
	}
	if n := int64At(t, d, "count"); n != 2 {
		t.Errorf("count %d", n)
	}
	if n := int64At(t, d, "storageStats", "count"); n != 2 {
		t.Errorf("storageStats.count %d", n)
	}
	if n := int64At(t, d, "queryExecStats", "collectionScans", "total"); n != 3 {
		t.Errorf("collection scans %d, want 3 (the finds on an unindexed field)", n)
	}
	// Any stages may follow, and other places refuse it.
	docs = aggregateAll(t, coll, mongo.Pipeline{
		{{Key: "$collStats", Value: bson.D{{Key: "count", Value: bson.D{}}}}},
		{{Key: "$project", Value: bson.D{{Key: "_id", Value: 0}, {Key: "n", Value: "$count"}}}},
	})
	if len(docs) != 1 || int64At(t, docs[0], "n") != 2 {
		t.Errorf("$collStats then $project: %v", docs)
	}
	_, err := coll.Aggregate(ctx, mongo.Pipeline{{{Key: "$match", Value: bson.D{}}}, {{Key: "$collStats", Value: bson.D{}}}})
	wantCode(t, err, 40602)
	_, err = coll.Database().Aggregate(ctx, mongo.Pipeline{{{Key: "$collStats", Value: bson.D{}}}})
	wantCode(t, err, 73)
	_, err = coll.Aggregate(ctx, mongo.Pipeline{{{Key: "$collStats", Value: bson.D{{Key: "storageStats", Value: bson.D{{Key: "scale", Value: 0}}}}}}})
	wantCode(t, err, 51024)
}

func portOf(t *testing.T, ts *testServer) int {
	t.Helper()
	addr := ts.Srv.Addr().String()
	n, err := strconv.Atoi(addr[strings.LastIndex(addr, ":")+1:])
	if err != nil {
		t.Fatalf("address %v", addr)
	}
	return n
}

// $indexStats counts each operation that reads by an index once.
func TestAggregateIndexStatsMeta(t *testing.T) {
	ts := startServer(t)
	ctx := testCtx(t)
	coll := ts.Client.Database("app").Collection("c")
	mustInsert(t, coll, bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: 1}}, bson.D{{Key: "_id", Value: 2}, {Key: "a", Value: 2}})
	if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "a", Value: 1}}}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := coll.Find(ctx, bson.D{{Key: "a", Value: bson.D{{Key: "$gte", Value: 1}}}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: 2}}).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := coll.UpdateOne(ctx, bson.D{{Key: "a", Value: 1}}, bson.D{{Key: "$set", Value: bson.D{{Key: "b", Value: 1}}}}); err != nil {
		t.Fatal(err)
	}
	ops := map[string]int64{}
	for _, d := range aggregateAll(t, coll, mongo.Pipeline{{{Key: "$indexStats", Value: bson.D{}}}}) {
		name := d.Lookup("name").StringValue()
		ops[name] = int64At(t, d, "accesses", "ops")
		if _, ok := d.Lookup("accesses", "since").DateTimeOK(); !ok {
			t.Errorf("%s: since %v", name, d.Lookup("accesses", "since"))
		}
		if _, ok := d.Lookup("key").DocumentOK(); !ok {
			t.Errorf("%s: key %v", name, d.Lookup("key"))
		}
		if sn := d.Lookup("spec", "name").StringValue(); sn != name {
			t.Errorf("%s: spec %v", name, d.Lookup("spec"))
		}
	}
	if len(ops) != 2 || ops["a_1"] != 3 || ops["_id_"] != 1 {
		t.Errorf("accesses %v, want a_1: 3 (two finds, an update), _id_: 1", ops)
	}
	_, err := coll.Aggregate(ctx, mongo.Pipeline{{{Key: "$indexStats", Value: bson.D{{Key: "x", Value: 1}}}}})
	wantCode(t, err, 28803)
	_, err = coll.Aggregate(ctx, mongo.Pipeline{{{Key: "$facet", Value: bson.D{{Key: "i", Value: bson.A{bson.D{{Key: "$indexStats", Value: bson.D{}}}}}}}}})
	wantCode(t, err, 40600)
}

// $currentOp runs only on admin with {aggregate: 1}, first, and lists
// the running commands (the aggregate itself) and, when asked, idle
// connections and cursors.
func TestAggregateCurrentOpMeta(t *testing.T) {
	ts := startServer(t)
	ctx := testCtx(t)
	admin := ts.Client.Database("admin")
	coll := ts.Client.Database("app").Collection("c")
	mustInsert(t, coll, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "_id", Value: 2}})
	// An idle cursor: a find that returns one of two documents.
	open, err := coll.Find(ctx, bson.D{}, options.Find().SetBatchSize(1))
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close(ctx)
	other := ts.NewClient(t)
	if err := other.Ping(ctx, nil); err != nil {
		t.Fatal(err)
	}
	cur, err := admin.Aggregate(ctx, mongo.Pipeline{{{Key: "$currentOp", Value: bson.D{}}}, notMonitorHello})
	if err != nil {
		t.Fatal(err)
	}
	var active []bson.Raw
	for cur.Next(ctx) {
		active = append(active, append(bson.Raw(nil), cur.Current...))
	}
	if len(active) != 1 || active[0].Lookup("command", "aggregate").Type == 0 || active[0].Lookup("type").StringValue() != "op" {
		t.Fatalf("$currentOp lists %v, want only the aggregate", active)
	}
	cur, err = admin.Aggregate(ctx, mongo.Pipeline{
		{{Key: "$currentOp", Value: bson.D{{Key: "idleConnections", Value: true}, {Key: "idleCursors", Value: true}}}},
		notMonitorHello,
		{{Key: "$group", Value: bson.D{{Key: "_id", Value: bson.D{{Key: "type", Value: "$type"}, {Key: "active", Value: "$active"}}}, {Key: "n", Value: bson.D{{Key: "$sum", Value: 1}}}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int32{}
	for cur.Next(ctx) {
		id := cur.Current.Lookup("_id").Document()
		key := id.Lookup("type").StringValue()
		if b, ok := id.Lookup("active").BooleanOK(); ok {
			key += "/" + strconv.FormatBool(b)
		}
		kinds[key] = cur.Current.Lookup("n").Int32()
	}
	if kinds["op/true"] != 1 || kinds["op/false"] < 1 || kinds["idleCursor"] != 1 {
		t.Errorf("with idle connections and cursors: %v, want the aggregate, idle connections and one idle cursor", kinds)
	}
	for _, c := range []struct {
		name string
		db   *mongo.Database
		coll bool
		p    mongo.Pipeline
		code int
	}{
		{"not on admin", ts.Client.Database("app"), false, mongo.Pipeline{{{Key: "$currentOp", Value: bson.D{}}}}, 73},
		{"on a collection", admin, true, mongo.Pipeline{{{Key: "$currentOp", Value: bson.D{}}}}, 73},
		{"not first", admin, false, mongo.Pipeline{{{Key: "$currentOp", Value: bson.D{}}}, {{Key: "$currentOp", Value: bson.D{}}}}, 40602},
		{"unknown option", admin, false, mongo.Pipeline{{{Key: "$currentOp", Value: bson.D{{Key: "bogus", Value: true}}}}}, 9},
		{"allUsers not a boolean", admin, false, mongo.Pipeline{{{Key: "$currentOp", Value: bson.D{{Key: "allUsers", Value: 1}}}}}, 14},
		{"idleConnections not a boolean", admin, false, mongo.Pipeline{{{Key: "$currentOp", Value: bson.D{{Key: "idleConnections", Value: 1}}}}}, 9},
		{"in $facet", admin, false, mongo.Pipeline{{{Key: "$documents", Value: bson.A{bson.D{}}}}, {{Key: "$facet", Value: bson.D{{Key: "x", Value: bson.A{bson.D{{Key: "$currentOp", Value: bson.D{}}}}}}}}}, 40600},
		{"empty pipeline", admin, false, mongo.Pipeline{}, 73},
	} {
		var err error
		if c.coll {
			_, err = c.db.Collection("c").Aggregate(ctx, c.p)
		} else {
			_, err = c.db.Aggregate(ctx, c.p)
		}
		if got := errCode(err); got != c.code {
			t.Errorf("%s: %v (code %d), want code %d", c.name, err, got, c.code)
		}
	}
}

// $listLocalSessions lists the sessions the server's clients used, with
// MongoDB's _id {id, uid} and lastUse, until endSessions ends them.
func TestAggregateListLocalSessionsMeta(t *testing.T) {
	ts := startServer(t)
	ctx := testCtx(t)
	db := ts.Client.Database("app")
	sess, err := ts.Client.StartSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.EndSession(ctx)
	sctx := mongo.NewSessionContext(ctx, sess)
	if err := db.RunCommand(sctx, bson.D{{Key: "ping", Value: 1}}).Err(); err != nil {
		t.Fatal(err)
	}
	_, want := sess.ID().Lookup("id").Binary()
	listed := func(spec bson.D) bool {
		t.Helper()
		found := false
		for _, d := range aggregateDB(t, db, mongo.Pipeline{{{Key: "$listLocalSessions", Value: spec}}}) {
			_, id := d.Lookup("_id", "id").Binary()
			_, uid := d.Lookup("_id", "uid").Binary()
			if len(uid) != 32 {
				t.Errorf("uid %x", uid)
			}
			if _, ok := d.Lookup("lastUse").DateTimeOK(); !ok {
				t.Errorf("lastUse %v", d.Lookup("lastUse"))
			}
			found = found || string(id) == string(want)
		}
		return found
	}
	if !listed(bson.D{}) || !listed(bson.D{{Key: "allUsers", Value: true}}) {
		t.Fatal("the session is not listed")
	}
	if listed(bson.D{{Key: "users", Value: bson.A{bson.D{{Key: "user", Value: "u"}, {Key: "db", Value: "admin"}}}}}) {
		t.Error("the session is listed as another user's")
	}
	// Another client ends it (its own sessions are not the one ended),
	// as a driver does when it disconnects, and then lists.
	db = ts.NewClient(t).Database("app")
	if err := db.RunCommand(ctx, bson.D{{Key: "endSessions", Value: bson.A{sess.ID()}}}).Err(); err != nil {
		t.Fatal(err)
	}
	if listed(bson.D{}) {
		t.Error("the session is listed after endSessions")
	}
	_, err = db.Collection("c").Aggregate(ctx, mongo.Pipeline{{{Key: "$listLocalSessions", Value: bson.D{}}}})
	wantCode(t, err, 73)
	_, err = db.Aggregate(ctx, mongo.Pipeline{{{Key: "$listLocalSessions", Value: bson.D{{Key: "allUsers", Value: true}, {Key: "users", Value: bson.A{bson.D{{Key: "user", Value: "u"}, {Key: "db", Value: "d"}}}}}}}})
	wantCode(t, err, 12)
	_, err = db.Aggregate(ctx, mongo.Pipeline{{{Key: "$listLocalSessions", Value: 1}}})
	wantCode(t, err, 14)
}

// aggregateDB runs a database pipeline ({aggregate: 1}) on db and returns
// its documents.
func aggregateDB(t *testing.T, db *mongo.Database, p mongo.Pipeline) []bson.Raw {
	t.Helper()
	ctx := testCtx(t)
	cur, err := db.Aggregate(ctx, p)
	return pipelineDocs(t, ctx, cur, err, p)
}

// $documents runs with {aggregate: 1} only, and any stages follow it.
func TestAggregateDocumentsDBLevel(t *testing.T) {
	ts := startServer(t)
	docs := aggregateDB(t, ts.Client.Database("app"), mongo.Pipeline{
		{{Key: "$documents", Value: bson.A{bson.D{{Key: "x", Value: 1}}, bson.D{{Key: "x", Value: 2}}}}},
		{{Key: "$match", Value: bson.D{{Key: "x", Value: 2}}}},
	})
	if len(docs) != 1 || docs[0].Lookup("x").Int32() != 2 {
		t.Errorf("%v", docs)
	}
	// A collection's pipeline may not start with it.
	_, err := ts.Client.Database("app").Collection("c").Aggregate(testCtx(t), mongo.Pipeline{{{Key: "$documents", Value: bson.A{bson.D{}}}}})
	wantCode(t, err, 73)
}

// Explain of a pipeline shows the leading stages the planner took as a
// $cursor stage holding the winning plan and the others after it, each
// with its nReturned and time when executed; a pipeline the planner takes
// whole explains like a find.
func TestAggregateExplainMeta(t *testing.T) {
	ts := startServer(t)
	ctx := testCtx(t)
	db := ts.Client.Database("app")
	coll := db.Collection("c")
	mustInsert(t, coll, bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: 1}}, bson.D{{Key: "_id", Value: 2}, {Key: "a", Value: 2}},
		bson.D{{Key: "_id", Value: 3}, {Key: "a", Value: 2}}, bson.D{{Key: "_id", Value: 4}, {Key: "a", Value: 0}})
	if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "a", Value: 1}}}); err != nil {
		t.Fatal(err)
	}
	explain := func(verbosity string, p bson.A) bson.Raw {
		t.Helper()
		return run(t, db, bson.D{{Key: "explain", Value: bson.D{{Key: "aggregate", Value: "c"}, {Key: "pipeline", Value: p}, {Key: "cursor", Value: bson.D{}}}}, {Key: "verbosity", Value: verbosity}})
	}
	match := bson.D{{Key: "$match", Value: bson.D{{Key: "a", Value: bson.D{{Key: "$gte", Value: 1}}}}}}
	group := bson.D{{Key: "$group", Value: bson.D{{Key: "_id", Value: "$a"}, {Key: "n", Value: bson.D{{Key: "$sum", Value: 1}}}}}}

	r := explain("executionStats", bson.A{match, group})
	if v := r.Lookup("explainVersion").StringValue(); v != "1" {
		t.Errorf("explainVersion %q", v)
	}
	stages := mustValues(t, r.Lookup("stages"))
	if len(stages) != 2 {
		t.Fatalf("stages %v", r.Lookup("stages"))
	}
	cursor := stages[0].Document()
	if ix := cursor.Lookup("$cursor", "queryPlanner", "winningPlan", "inputStage"); ix.Document().Lookup("stage").StringValue() != "IXSCAN" || ix.Document().Lookup("indexName").StringValue() != "a_1" {
		t.Errorf("$cursor's winning plan %v, want an IXSCAN of a_1", cursor.Lookup("$cursor", "queryPlanner", "winningPlan"))
	}
	if n := int64At(t, cursor, "$cursor", "executionStats", "nReturned"); n != 3 {
		t.Errorf("$cursor executionStats.nReturned %d, want 3", n)
	}
	if n := int64At(t, cursor, "nReturned"); n != 3 {
		t.Errorf("$cursor nReturned %d, want 3", n)
	}
	int64At(t, cursor, "executionTimeMillisEstimate")
	g := stages[1].Document()
	if _, ok := g.Lookup("$group").DocumentOK(); !ok {
		t.Errorf("second stage %v, want $group", g)
	}
	if n := int64At(t, g, "nReturned"); n != 2 {
		t.Errorf("$group nReturned %d, want 2 groups", n)
	}
	int64At(t, g, "executionTimeMillisEstimate")

	// queryPlanner: the plan, and no execution figures.
	r = explain("queryPlanner", bson.A{match, group})
	stages = mustValues(t, r.Lookup("stages"))
	if len(stages) != 2 || stages[0].Document().Lookup("$cursor", "executionStats").Type != 0 || stages[1].Document().Lookup("nReturned").Type != 0 {
		t.Errorf("queryPlanner verbosity: %v", r.Lookup("stages"))
	}

	// The planner takes $match, $sort and $limit whole.
	r = explain("executionStats", bson.A{match, bson.D{{Key: "$sort", Value: bson.D{{Key: "a", Value: -1}}}}, bson.D{{Key: "$limit", Value: 2}}})
	if r.Lookup("stages").Type != 0 || r.Lookup("queryPlanner", "winningPlan").Type == 0 {
		t.Errorf("a pipeline the planner takes whole: %v", r)
	}
	if n := int64At(t, r, "executionStats", "nReturned"); n != 2 {
		t.Errorf("executionStats.nReturned %d, want 2", n)
	}

	// aggregate with explain: true answers with the explanation, no cursor.
	raw, err := db.RunCommand(ctx, bson.D{{Key: "aggregate", Value: "c"}, {Key: "pipeline", Value: bson.A{match, group}}, {Key: "explain", Value: true}}).Raw()
	if err != nil {
		t.Fatal(err)
	}
	if raw.Lookup("cursor").Type != 0 || len(mustValues(t, raw.Lookup("stages"))) != 2 {
		t.Errorf("explain: true: %v", raw)
	}

	// Stages that make their own documents have no $cursor.
	r = explain("executionStats", bson.A{bson.D{{Key: "$collStats", Value: bson.D{{Key: "count", Value: bson.D{}}}}}})
	stages = mustValues(t, r.Lookup("stages"))
	if len(stages) != 1 || stages[0].Document().Lookup("$collStats").Type == 0 || int64At(t, stages[0].Document(), "nReturned") != 1 {
		t.Errorf("$collStats: %v", r.Lookup("stages"))
	}
	r = run(t, db, bson.D{{Key: "explain", Value: bson.D{{Key: "aggregate", Value: 1}, {Key: "pipeline", Value: bson.A{
		bson.D{{Key: "$documents", Value: bson.A{bson.D{{Key: "x", Value: 1}}, bson.D{{Key: "x", Value: 2}}}}},
		bson.D{{Key: "$match", Value: bson.D{{Key: "x", Value: 1}}}},
	}}, {Key: "cursor", Value: bson.D{}}}}, {Key: "verbosity", Value: "executionStats"}})
	stages = mustValues(t, r.Lookup("stages"))
	if len(stages) != 2 || int64At(t, stages[0].Document(), "nReturned") != 2 || int64At(t, stages[1].Document(), "nReturned") != 1 {
		t.Errorf("$documents: %v", r.Lookup("stages"))
	}

	// A pipeline explain refuses is one aggregate refuses.
	err = db.RunCommand(ctx, bson.D{{Key: "explain", Value: bson.D{{Key: "aggregate", Value: "c"}, {Key: "pipeline", Value: bson.A{match, bson.D{{Key: "$collStats", Value: bson.D{}}}}}, {Key: "cursor", Value: bson.D{}}}}}).Err()
	wantCode(t, err, 40602)
}
