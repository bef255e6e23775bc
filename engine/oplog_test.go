package engine

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/clock"
	"github.com/lethedb/lethe/engine/oplogstore"
	"github.com/lethedb/lethe/oplog"
)

func openOplogEngine(t *testing.T, dir string, clock clock.Clock, opts Options) *Engine {
	t.Helper()
	opts.Clock, opts.NoReaper, opts.Oplog = clock, true, true
	e, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// oplogSince lists the visible entries after ts as "op ns key" lines, key
// being the _id of a document or the command's name and argument.
func oplogSince(t *testing.T, e *Engine, after oplog.Timestamp) ([]string, []bson.Raw, oplog.Timestamp) {
	t.Helper()
	var lines []string
	var raws []bson.Raw
	last, err := e.ReadOplog(context.Background(), after, func(ts oplog.Timestamp, raw bson.Raw) (bool, error) {
		if !after.Less(ts) {
			t.Fatalf("entry %v not after %v", ts, after)
		}
		after = ts
		f, err := oplog.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		if f.TS != ts {
			t.Fatalf("key %v, ts field %v", ts, f.TS)
		}
		var key string
		switch f.Op {
		case oplog.Insert, oplog.Delete:
			key = idString(raw.Lookup("o", "_id"))
		case oplog.Update:
			key = idString(raw.Lookup("o2", "_id"))
		case oplog.Command:
			el, _ := raw.Lookup("o").Document().IndexErr(0)
			key = el.Key() + ":" + el.Value().String()
			if v, ok := el.Value().Int32OK(); ok {
				key = fmt.Sprint(el.Key(), ":", v)
			}
		}
		if raw.Lookup("t").Int64() != 1 || raw.Lookup("wall").Type != bson.TypeDateTime {
			t.Fatalf("entry without t 1 or wall: %s", raw)
		}
		lines = append(lines, fmt.Sprintf("%c %s %s", f.Op, f.NS, key))
		raws = append(raws, append(bson.Raw(nil), raw...))
		return true, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return lines, raws, last
}

func idString(v bson.RawValue) string {
	if n, ok := v.Int32OK(); ok {
		return fmt.Sprint(n)
	}
	return v.String()
}

func TestOplogWriteKinds(t *testing.T) {
	clock := clock.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	e := openOplogEngine(t, t.TempDir(), clock, Options{})
	defer e.Close()
	ctx := context.Background()
	docs := []bson.Raw{mustRaw(t, bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: 1}, {Key: "b", Value: 1}}), mustRaw(t, bson.D{{Key: "_id", Value: 2}})}
	if _, err := e.Insert(context.Background(), "db", "c", docs, true); err != nil {
		t.Fatal(err)
	}
	// A refused insert (duplicate _id) and a no-op update log nothing.
	if res, err := e.Insert(context.Background(), "db", "c", docs[:1], true); err != nil || len(res.Errors) != 1 {
		t.Fatalf("duplicate insert: %+v, %v", res, err)
	}
	if _, err := e.Update(ctx, "db", "c", UpdateSpec{Filter: mustRaw(t, bson.D{{Key: "_id", Value: 1}}), Update: mustCompileUpdate(t, bson.D{{Key: "$set", Value: bson.D{{Key: "a", Value: 1}}}})}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Update(ctx, "db", "c", UpdateSpec{Filter: mustRaw(t, bson.D{{Key: "_id", Value: 1}}), Update: mustCompileUpdate(t, bson.D{{Key: "$set", Value: bson.D{{Key: "a", Value: 2}, {Key: "n", Value: 1}}}, {Key: "$unset", Value: bson.D{{Key: "b", Value: ""}}}})}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Update(ctx, "db", "c", UpdateSpec{Filter: mustRaw(t, bson.D{{Key: "_id", Value: 2}}), Update: mustCompileUpdate(t, bson.D{{Key: "x", Value: "r"}})}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Update(ctx, "db", "c", UpdateSpec{Filter: mustRaw(t, bson.D{{Key: "_id", Value: 3}}), Upsert: true, Update: mustCompileUpdate(t, bson.D{{Key: "$set", Value: bson.D{{Key: "u", Value: 1}}}})}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.FindAndModify(ctx, "db", "c", FindAndModifySpec{Filter: mustRaw(t, bson.D{{Key: "_id", Value: 3}}), Remove: true}); err != nil {
		t.Fatal(err)
	}
	if n, err := e.Delete(ctx, "db", "c", mustRaw(t, bson.D{}), 0, bson.RawValue{}); err != nil || n != 2 {
		t.Fatalf("delete: %d, %v", n, err)
	}
	spec := mustRaw(t, bson.D{{Key: "key", Value: bson.D{{Key: "a", Value: 1}}}, {Key: "name", Value: "a_1"}})
	if _, err := e.CreateIndexes(ctx, "db", "c", []bson.Raw{spec}); err != nil {
		t.Fatal(err)
	}
	if err := e.RenameCollection(ctx, "db", "c", "db", "d", false); err != nil {
		t.Fatal(err)
	}
	if _, err := e.DropCollection(ctx, "db", "d"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Insert(context.Background(), "db", "e", docs[1:], true); err != nil {
		t.Fatal(err)
	}
	if err := e.DropDatabase(ctx, "db"); err != nil {
		t.Fatal(err)
	}
	lines, raws, _ := oplogSince(t, e, oplog.Timestamp{})
	want := []string{
		"c db.$cmd create:\"c\"",
		"i db.c 1", "i db.c 2",
		"u db.c 1",
		"u db.c 2",
		"i db.c 3",
		"d db.c 3",
		"d db.c 1", "d db.c 2",
		"c db.$cmd createIndexes:\"c\"",
		"c db.$cmd renameCollection:\"db.c\"",
		"c db.$cmd drop:\"d\"",
		"c db.$cmd create:\"e\"",
		"i db.e 2",
		"c db.$cmd drop:\"e\"",
		"c db.$cmd dropDatabase:1",
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Fatalf("oplog:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	// The $set/$unset is a $v:2 diff; the replacement is the whole document.
	if got := raws[3].Lookup("o").String(); got != `{"$v": {"$numberInt":"2"},"diff": {"d": {"b": false},"u": {"a": {"$numberInt":"2"}},"i": {"n": {"$numberInt":"1"}}}}` {
		t.Errorf("update o = %s", got)
	}
	if got := raws[4].Lookup("o").String(); got != `{"_id": {"$numberInt":"2"},"x": "r"}` {
		t.Errorf("replacement o = %s", got)
	}
	if ui := raws[1].Lookup("ui"); ui.Type != bson.TypeBinary {
		t.Errorf("insert without ui: %s", raws[1])
	}
}

func TestOplogSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	clock := clock.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	e := openOplogEngine(t, dir, clock, Options{})
	for i := range 3 {
		if _, err := e.Insert(context.Background(), "db", "c", []bson.Raw{mustRaw(t, bson.D{{Key: "_id", Value: i}})}, true); err != nil {
			t.Fatal(err)
		}
	}
	before, _, last := oplogSince(t, e, oplog.Timestamp{})
	e.Close()
	// The clock moved back: timestamps still increase.
	clock.Set(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	e = openOplogEngine(t, dir, clock, Options{})
	defer e.Close()
	after, _, _ := oplogSince(t, e, oplog.Timestamp{})
	if strings.Join(before, "|") != strings.Join(after, "|") {
		t.Fatalf("before restart %v, after %v", before, after)
	}
	if _, err := e.Insert(context.Background(), "db", "c", []bson.Raw{mustRaw(t, bson.D{{Key: "_id", Value: 9}})}, true); err != nil {
		t.Fatal(err)
	}
	lines, _, newLast := oplogSince(t, e, last)
	if len(lines) != 1 || lines[0] != "i db.c 9" || !last.Less(newLast) {
		t.Fatalf("after restart: %v at %v, last before %v", lines, newLast, last)
	}
}

func TestOplogTTLPurgeIsDelete(t *testing.T) {
	clock := clock.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	e := openOplogEngine(t, t.TempDir(), clock, Options{})
	defer e.Close()
	spec := mustRaw(t, bson.D{{Key: "key", Value: bson.D{{Key: "_ts", Value: 1}}}, {Key: "name", Value: "_ts_1"}, {Key: "expireAfterSeconds", Value: 5}})
	if _, err := e.CreateIndexes(context.Background(), "db", "c", []bson.Raw{spec}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Insert(context.Background(), "db", "c", []bson.Raw{mustRaw(t, bson.D{{Key: "_id", Value: 7}})}, true); err != nil {
		t.Fatal(err)
	}
	_, _, last := oplogSince(t, e, oplog.Timestamp{})
	clock.Advance(5 * time.Second)
	if n, err := e.Reaper().Pass(); err != nil || n != 1 {
		t.Fatalf("pass: %d, %v", n, err)
	}
	lines, _, _ := oplogSince(t, e, last)
	if len(lines) != 1 || lines[0] != "d db.c 7" {
		t.Fatalf("after purge: %v", lines)
	}
}

func TestOplogTrimBoundsSize(t *testing.T) {
	clock := clock.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	const bound = 64 << 10
	e := openOplogEngine(t, t.TempDir(), clock, Options{OplogMaxBytes: bound})
	defer e.Close()
	pad := strings.Repeat("x", 1000)
	for i := range 300 {
		if _, err := e.Insert(context.Background(), "db", "c", []bson.Raw{mustRaw(t, bson.D{{Key: "_id", Value: i}, {Key: "p", Value: pad}})}, true); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.TrimOplog(context.Background()); err != nil {
		t.Fatal(err)
	}
	var size int64
	lines, _, _ := oplogSince(t, e, oplog.Timestamp{})
	if err := (oplogstore.Store{KV: e.store}).Scan(oplog.Timestamp{}, func(_ oplog.Timestamp, n int64) bool { size += n; return true }); err != nil {
		t.Fatal(err)
	}
	if size > bound || size != e.Oplog().Size() {
		t.Fatalf("stored %d bytes, log counts %d, bound %d", size, e.Oplog().Size(), bound)
	}
	if len(lines) == 0 || lines[len(lines)-1] != "i db.c 299" {
		t.Fatalf("newest entries lost: %v", lines)
	}
	oldest, err := e.OldestOplog(context.Background())
	if err != nil || oldest.IsZero() {
		t.Fatalf("oldest %v, %v", oldest, err)
	}
}

func TestOplogWaitWakesOnWrite(t *testing.T) {
	clock := clock.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	e := openOplogEngine(t, t.TempDir(), clock, Options{})
	defer e.Close()
	start := e.Oplog().Visible()
	got := make(chan oplog.Timestamp)
	go func() {
		ts, _ := e.Oplog().Wait(context.Background(), start)
		got <- ts
	}()
	if _, err := e.Insert(context.Background(), "db", "c", []bson.Raw{mustRaw(t, bson.D{{Key: "_id", Value: 1}})}, true); err != nil {
		t.Fatal(err)
	}
	if ts := <-got; !start.Less(ts) {
		t.Fatalf("woke at %v, not after %v", ts, start)
	}
}

func TestOplogOff(t *testing.T) {
	e := openTestEngine(t)
	if _, err := e.Insert(context.Background(), "db", "c", []bson.Raw{mustRaw(t, bson.D{{Key: "_id", Value: 1}})}, true); err != nil {
		t.Fatal(err)
	}
	if _, err := e.ReadOplog(context.Background(), oplog.Timestamp{}, nil); err != ErrOplogOff {
		t.Fatalf("read with the oplog off: %v", err)
	}
	lo, hi := oplog.Range()
	it, err := rawIter(e, lo, hi)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	if it.First() {
		t.Fatalf("oplog entry stored with the oplog off: %x", it.Key())
	}
}

func TestOplogFindAndWriteRefusal(t *testing.T) {
	clock := clock.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	e := openOplogEngine(t, t.TempDir(), clock, Options{})
	defer e.Close()
	ctx := context.Background()
	for i := range 5 {
		if _, err := e.Insert(context.Background(), "db", "c", []bson.Raw{mustRaw(t, bson.D{{Key: "_id", Value: i}})}, true); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.Insert(context.Background(), "db", "other", []bson.Raw{mustRaw(t, bson.D{{Key: "_id", Value: 9}})}, true); err != nil {
		t.Fatal(err)
	}
	ids := func(spec FindSpec) []int32 {
		t.Helper()
		cur, err := e.Find(ctx, "local", "oplog.rs", spec)
		if err != nil {
			t.Fatal(err)
		}
		var got []int32
		for !cur.Exhausted() {
			// Batches of two: the scan resumes where the last one ended.
			docs, err := cur.NextBatch(ctx, 2, 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range docs {
				got = append(got, d.Lookup("o", "_id").Int32())
			}
		}
		return got
	}
	inserts := mustRaw(t, bson.D{{Key: "ns", Value: "db.c"}, {Key: "op", Value: "i"}})
	if got := fmt.Sprint(ids(FindSpec{Filter: inserts})); got != "[0 1 2 3 4]" {
		t.Fatalf("inserts in natural order: %s", got)
	}
	if got := fmt.Sprint(ids(FindSpec{Filter: inserts, Sort: mustRaw(t, bson.D{{Key: "$natural", Value: -1}}), Limit: 3})); got != "[4 3 2]" {
		t.Fatalf("newest three: %s", got)
	}
	if got := fmt.Sprint(ids(FindSpec{Filter: inserts, Sort: mustRaw(t, bson.D{{Key: "ts", Value: -1}}), Skip: 1, Limit: 1})); got != "[3]" {
		t.Fatalf("second newest: %s", got)
	}
	// A bound on ts starts the scan after it.
	_, raws, _ := oplogSince(t, e, oplog.Timestamp{})
	third := raws[3].Lookup("ts")
	if got := fmt.Sprint(ids(FindSpec{Filter: mustRaw(t, bson.D{{Key: "ts", Value: bson.D{{Key: "$gt", Value: third}}}, {Key: "op", Value: "i"}})})); got != "[3 4 9]" {
		t.Fatalf("after the third insert: %s", got)
	}
	if n, err := e.Count(ctx, "local", "oplog.rs", inserts, 1, 0, bson.RawValue{}); err != nil || n != 4 {
		t.Fatalf("count of inserts after skipping one: %d, %v", n, err)
	}
	// Other sorts are done in memory: by ns descending, then ts.
	if got := fmt.Sprint(ids(FindSpec{Filter: mustRaw(t, bson.D{{Key: "op", Value: "i"}}), Sort: mustRaw(t, bson.D{{Key: "ns", Value: -1}, {Key: "ts", Value: 1}})})); got != "[9 0 1 2 3 4]" {
		t.Fatalf("by ns descending: %s", got)
	}
	before := len(raws)
	if _, err := e.Insert(context.Background(), "local", "oplog.rs", []bson.Raw{mustRaw(t, bson.D{{Key: "_id", Value: 1}})}, true); err == nil {
		t.Fatal("insert into the oplog accepted")
	}
	if n, err := e.Delete(ctx, "local", "oplog.rs", mustRaw(t, bson.D{}), 0, bson.RawValue{}); err == nil || n != 0 {
		t.Fatalf("delete from the oplog: %d, %v", n, err)
	}
	if _, raws, _ := oplogSince(t, e, oplog.Timestamp{}); len(raws) != before {
		t.Fatalf("refused writes logged %d entries", len(raws)-before)
	}
}

func TestOplogCatalogCommands(t *testing.T) {
	clock := clock.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	e := openOplogEngine(t, t.TempDir(), clock, Options{})
	defer e.Close()
	spec := mustRaw(t, bson.D{{Key: "key", Value: bson.D{{Key: "d", Value: 1}}}, {Key: "name", Value: "d_1"}, {Key: "expireAfterSeconds", Value: 60}})
	if _, err := e.CreateIndexes(context.Background(), "db", "c", []bson.Raw{spec}); err != nil {
		t.Fatal(err)
	}
	_, _, last := oplogSince(t, e, oplog.Timestamp{})
	hidden := true
	if _, err := e.CollModIndex(context.Background(), "db", "c", IndexChange{Name: "d_1", Hidden: &hidden}); err != nil {
		t.Fatal(err)
	}
	expire := bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, 120)}
	if _, err := e.CollModIndex(context.Background(), "db", "c", IndexChange{Name: "d_1", ExpireAfter: &expire}); err != nil {
		t.Fatal(err)
	}
	// A refused collMod logs nothing.
	if _, err := e.CollModIndex(context.Background(), "db", "c", IndexChange{Name: "nope", Hidden: &hidden}); err == nil {
		t.Fatal("collMod of a missing index succeeded")
	}
	if _, err := e.DropIndexes(context.Background(), "db", "c", bson.RawValue{Type: bson.TypeString, Value: bsoncoreString("d_1")}); err != nil {
		t.Fatal(err)
	}
	lines, raws, _ := oplogSince(t, e, last)
	want := "c db.$cmd collMod:\"c\"|c db.$cmd collMod:\"c\"|c db.$cmd dropIndexes:\"c\""
	if strings.Join(lines, "|") != want {
		t.Fatalf("oplog %v, want %s", lines, want)
	}
	// o2 keeps what the collMod changed, as MongoDB's: the collection's
	// options with its UUID, and a TTL index's expireAfterSeconds.
	if got := raws[0].Lookup("o", "index", "hidden"); !got.Boolean() {
		t.Errorf("collMod entry %s", raws[0])
	}
	if _, data, ok := raws[0].Lookup("o2", "collectionOptions_old", "uuid").BinaryOK(); !ok || len(data) != 16 {
		t.Errorf("collMod entry without the old options: %s", raws[0])
	}
	if _, err := raws[0].LookupErr("o2", "expireAfterSeconds_old"); err == nil {
		t.Errorf("collMod of hidden with expireAfterSeconds_old: %s", raws[0])
	}
	if got, ok := raws[1].Lookup("o2", "expireAfterSeconds_old").Int64OK(); !ok || got != 60 {
		t.Errorf("TTL collMod entry %s", raws[1])
	}
	if got := raws[2].Lookup("o", "index").StringValue(); got != "d_1" || raws[2].Lookup("o2", "name").StringValue() != "d_1" {
		t.Errorf("dropIndexes entry %s", raws[2])
	}
}

func bsoncoreString(s string) []byte {
	_, raw, _ := bson.MarshalValue(s)
	return raw
}

// TestOplogTailerMissesNothing follows the oplog while writers on several
// collections commit concurrently: batches commit out of timestamp order,
// and a reader that only reads up to the visible point must still see
// every entry exactly once, in order.
func TestOplogTailerMissesNothing(t *testing.T) {
	clock := clock.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	e := openOplogEngine(t, t.TempDir(), clock, Options{})
	defer e.Close()
	const writers, perWriter = 4, 200
	const want = writers * (perWriter + 1) // a create and the inserts each
	// The tailer stops once it has seen as many entries as there will be;
	// the timeout only keeps a broken wake-up from hanging the test.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tailed := make(chan []oplog.Timestamp, 1)
	go func() {
		var seen []oplog.Timestamp
		var last oplog.Timestamp
		for len(seen) < want {
			var err error
			last, err = e.ReadOplog(ctx, last, func(ts oplog.Timestamp, _ bson.Raw) (bool, error) {
				seen = append(seen, ts)
				return true, nil
			})
			if err == nil && len(seen) < want {
				_, err = e.Oplog().Wait(ctx, last)
			}
			if err != nil {
				break
			}
		}
		tailed <- seen
	}()
	done := make(chan error, writers)
	for w := range writers {
		go func() {
			coll := fmt.Sprint("c", w)
			for i := range perWriter {
				if _, err := e.Insert(context.Background(), "db", coll, []bson.Raw{mustRaw(t, bson.D{{Key: "_id", Value: i}})}, true); err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
	}
	for range writers {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	var all []oplog.Timestamp
	if _, err := e.ReadOplog(context.Background(), oplog.Timestamp{}, func(ts oplog.Timestamp, _ bson.Raw) (bool, error) {
		all = append(all, ts)
		return true, nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(all) != want {
		t.Fatalf("%d entries, want %d", len(all), want)
	}
	seen := <-tailed
	if len(seen) != len(all) {
		t.Fatalf("tailer saw %d entries, the oplog holds %d", len(seen), len(all))
	}
	for i := range all {
		if seen[i] != all[i] {
			t.Fatalf("entry %d: tailer %v, oplog %v", i, seen[i], all[i])
		}
	}
}

func TestOplogNoopMovesClusterTime(t *testing.T) {
	clock := clock.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	e := openOplogEngine(t, t.TempDir(), clock, Options{})
	defer e.Close()
	before := e.ClusterTime()
	ts, err := e.AppendNoop(context.Background(), bson.D{{Key: "msg", Value: "periodic noop"}})
	if err != nil {
		t.Fatal(err)
	}
	if !before.Less(ts) || e.ClusterTime() != ts || e.Oplog().Visible() != ts {
		t.Fatalf("noop at %v: cluster time %v (was %v), visible %v", ts, e.ClusterTime(), before, e.Oplog().Visible())
	}
	_, raws, _ := oplogSince(t, e, before)
	if len(raws) != 1 || raws[0].Lookup("op").StringValue() != "n" || raws[0].Lookup("o", "msg").StringValue() != "periodic noop" {
		t.Fatalf("entries %v", raws)
	}
}
