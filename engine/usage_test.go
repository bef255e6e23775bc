package engine

import (
	"context"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

func statsDoc(t *testing.T, e *Engine, stages ...string) []bson.Raw {
	t.Helper()
	var p []bson.Raw
	for _, s := range stages {
		var d bson.Raw
		if err := bson.UnmarshalExtJSON([]byte(s), false, &d); err != nil {
			t.Fatal(err)
		}
		p = append(p, d)
	}
	docs, err := e.Aggregate(context.Background(), "db", "c", p, AggregateOptions{Host: "h:1"})
	if err != nil {
		t.Fatal(err)
	}
	return docs
}

func lookupInt(t *testing.T, d bson.Raw, path ...string) int64 {
	t.Helper()
	v, err := bsoncore.Document(d).LookupErr(path...)
	if err != nil {
		t.Fatalf("%v in %v: %v", path, d, err)
	}
	n, ok := v.AsInt64OK()
	if !ok {
		t.Fatalf("%v in %v is %v", path, d, v.Type)
	}
	return n
}

// An operation that reads by an index counts one access of it, whatever
// it reads; a collection scan counts in queryExecStats instead.
func TestIndexAccessesAndCollectionScans(t *testing.T) {
	e, clock := openTestEngineClock(t)
	ctx := context.Background()
	docs := []bson.Raw{extJSON(t, `{"_id": 1, "a": 1}`), extJSON(t, `{"_id": 2, "a": 2}`)}
	opened := clock.Now()
	if _, err := e.Insert(context.Background(), "db", "c", docs, true); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Minute)
	built := clock.Now()
	if _, err := e.CreateIndexes(ctx, "db", "c", []bson.Raw{extJSON(t, `{"key": {"a": 1}, "name": "a_1"}`)}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Minute)
	for range 3 {
		cur, err := e.Find(ctx, "db", "c", FindSpec{Filter: extJSON(t, `{"a": {"$gt": 0}}`)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cur.All(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.Count(ctx, "db", "c", extJSON(t, `{"b": 1}`), 0, 0, bson.RawValue{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.FindByID(context.Background(), "db", "c", bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, 1)}); err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, d := range statsDoc(t, e, `{"$indexStats": {}}`) {
		got[d.Lookup("name").StringValue()] = lookupInt(t, d, "accesses", "ops")
		if h := d.Lookup("host").StringValue(); h != "h:1" {
			t.Errorf("host %q", h)
		}
		// The counts start when the collection was created, or the
		// index built after it.
		want := opened
		if d.Lookup("name").StringValue() == "a_1" {
			want = built
		}
		if since := d.Lookup("accesses", "since").Time(); !since.Equal(want) {
			t.Errorf("%s: since %v, want %v", d.Lookup("name"), since, want)
		}
	}
	if got["a_1"] != 3 || got["_id_"] != 1 || len(got) != 2 {
		t.Errorf("accesses %v, want a_1: 3, _id_: 1", got)
	}
	cs := statsDoc(t, e, `{"$collStats": {"queryExecStats": {}}}`)[0]
	if n := lookupInt(t, cs, "queryExecStats", "collectionScans", "total"); n != 1 {
		t.Errorf("%d collection scans, want 1 (the count on an unindexed field): %v", n, cs)
	}
	// Dropping the collection drops its statistics.
	if _, err := e.DropCollection(ctx, "db", "c"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Insert(context.Background(), "db", "c", docs[:1], true); err != nil {
		t.Fatal(err)
	}
	for _, d := range statsDoc(t, e, `{"$indexStats": {}}`) {
		if n := lookupInt(t, d, "accesses", "ops"); n != 0 {
			t.Errorf("after the drop %s has %d accesses", d.Lookup("name"), n)
		}
	}
}

// Latencies are filed by kind, in µs, into MongoDB's buckets.
func TestLatencyStats(t *testing.T) {
	e := openTestEngine(t)
	if _, err := e.Insert(context.Background(), "db", "c", []bson.Raw{extJSON(t, `{"_id": 1}`)}, true); err != nil {
		t.Fatal(err)
	}
	e.RecordLatency("db", "c", LatencyReads, 1500*time.Microsecond)
	e.RecordLatency("db", "c", LatencyReads, 3*time.Millisecond)
	e.RecordLatency("db", "c", LatencyWrites, 10*time.Microsecond)
	e.RecordLatency("db", "nope", LatencyWrites, time.Second)
	d := statsDoc(t, e, `{"$collStats": {"latencyStats": {"histograms": true}}}`)[0]
	if n, l := lookupInt(t, d, "latencyStats", "reads", "ops"), lookupInt(t, d, "latencyStats", "reads", "latency"); n != 2 || l != 4500 {
		t.Errorf("reads: %d ops, %d µs; want 2, 4500", n, l)
	}
	hist, _ := d.Lookup("latencyStats", "reads", "histogram").Array().Values()
	want := []string{`{"micros": {"$numberLong": "1024"}, "count": {"$numberLong": "1"}}`, `{"micros": {"$numberLong": "2048"}, "count": {"$numberLong": "1"}}`}
	if len(hist) != len(want) {
		t.Fatalf("histogram %v", hist)
	}
	for i, w := range want {
		if !bsonEqualRaw(hist[i].Document(), extJSON(t, w)) {
			t.Errorf("bucket %d: %v, want %s", i, hist[i], w)
		}
	}
	if n := lookupInt(t, d, "latencyStats", "writes", "ops"); n != 1 {
		t.Errorf("writes: %d ops", n)
	}
	if n := lookupInt(t, d, "latencyStats", "commands", "ops"); n != 0 {
		t.Errorf("commands: %d ops", n)
	}
}

func bsonEqualRaw(a, b bson.Raw) bool { return string(a) == string(b) }

func extJSON(t *testing.T, s string) bson.Raw {
	t.Helper()
	var d bson.Raw
	if err := bson.UnmarshalExtJSON([]byte(s), false, &d); err != nil {
		t.Fatal(err)
	}
	return d
}
