package engine

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/clock"
	"github.com/lethedb/lethe/oplog"
)

// TestExpiringIn: the window (from, to] holds exactly the documents whose
// expiry instant falls in it, under a default lifetime, their own ttl and
// a date TTL index, in order of instant then _id.
func TestExpiringIn(t *testing.T) {
	epoch := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := clock.NewManual(epoch)
	e, err := Open(t.TempDir(), Options{Clock: clock, NoReaper: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	index := func(coll, field string, secs int, dir ...int) {
		d := 1
		if len(dir) > 0 {
			d = dir[0]
		}
		spec, _ := bson.Marshal(bson.D{{Key: "key", Value: bson.D{{Key: field, Value: d}}}, {Key: "name", Value: fmt.Sprintf("%s_%d", field, d)}, {Key: "expireAfterSeconds", Value: secs}})
		if _, err := e.CreateIndexes(context.Background(), "db", coll, []bson.Raw{spec}); err != nil {
			t.Fatal(err)
		}
	}
	insert := func(coll string, docs ...bson.D) {
		var raws []bson.Raw
		for _, d := range docs {
			b, _ := bson.Marshal(d)
			raws = append(raws, b)
		}
		if _, err := e.Insert(context.Background(), "db", coll, raws, true); err != nil {
			t.Fatal(err)
		}
	}
	index("c", "_ts", 10)
	insert("c",
		bson.D{{Key: "_id", Value: 3}},                           // 10 s
		bson.D{{Key: "_id", Value: 1}, {Key: "ttl", Value: 5}},   // 5 s
		bson.D{{Key: "_id", Value: 2}},                           // 10 s
		bson.D{{Key: "_id", Value: 4}, {Key: "ttl", Value: -1}},  // never
		bson.D{{Key: "_id", Value: 5}, {Key: "ttl", Value: 100}}) // 100 s
	index("d", "at", 1)
	insert("d",
		bson.D{{Key: "_id", Value: "a"}, {Key: "at", Value: epoch.Add(4 * time.Second)}},                                      // 5 s
		bson.D{{Key: "_id", Value: "b"}, {Key: "at", Value: bson.A{epoch.Add(20 * time.Second), epoch.Add(8 * time.Second)}}}, // 9 s
		bson.D{{Key: "_id", Value: "c"}, {Key: "at", Value: "no date"}})
	// A descending date TTL index: its keys sort in reverse.
	index("e", "at", 2, -1)
	insert("e",
		bson.D{{Key: "_id", Value: "x"}, {Key: "at", Value: epoch.Add(3 * time.Second)}},  // 5 s
		bson.D{{Key: "_id", Value: "y"}, {Key: "at", Value: epoch.Add(8 * time.Second)}},  // 10 s
		bson.D{{Key: "_id", Value: "z"}, {Key: "at", Value: epoch.Add(40 * time.Second)}}) // 42 s
	ms := func(s int) int64 { return epoch.Add(time.Duration(s) * time.Second).UnixMilli() }
	all := func(string, string) bool { return true }
	cases := []struct {
		from, to int
		watch    func(db, coll string) bool
		want     string
	}{
		{0, 4, all, "[]"},
		{0, 5, all, "[c 1 @5 d a @5 e x @5]"},
		{5, 10, all, "[d b @9 c 2 @10 c 3 @10 e y @10]"},
		{4, 1000, func(_, coll string) bool { return coll == "c" }, "[c 1 @5 c 2 @10 c 3 @10 c 5 @100]"},
		{10, 99, all, "[e z @42]"},
		{42, 99, all, "[]"},
		{41, 42, func(_, coll string) bool { return coll == "e" }, "[e z @42]"},
	}
	for _, c := range cases {
		got, err := e.ExpiringIn(context.Background(), ms(c.from), ms(c.to), c.watch)
		if err != nil {
			t.Fatal(err)
		}
		var s []string
		for _, x := range got {
			id, ok := x.ID.StringValueOK()
			if !ok {
				id = fmt.Sprint(x.ID.Int32())
			}
			s = append(s, fmt.Sprintf("%s %s @%d", x.Coll, id, (x.At-ms(0))/1000))
		}
		if fmt.Sprint(s) != c.want && !(len(s) == 0 && c.want == "[]") {
			t.Errorf("(%d, %d]: %v, want %s", c.from, c.to, s, c.want)
		}
	}
}

// TestPurgeLogsExpiry: the reaper's delete entry carries the instant the
// document expired, not the later instant it was purged.
func TestPurgeLogsExpiry(t *testing.T) {
	epoch := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := clock.NewManual(epoch)
	e, err := Open(t.TempDir(), Options{Clock: clock, NoReaper: true, Oplog: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	spec, _ := bson.Marshal(bson.D{{Key: "key", Value: bson.D{{Key: "_ts", Value: 1}}}, {Key: "name", Value: "_ts_1"}, {Key: "expireAfterSeconds", Value: 5}})
	if _, err := e.CreateIndexes(context.Background(), "db", "c", []bson.Raw{spec}); err != nil {
		t.Fatal(err)
	}
	d, _ := bson.Marshal(bson.D{{Key: "_id", Value: 1}})
	if _, err := e.Insert(context.Background(), "db", "c", []bson.Raw{d}, true); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Minute)
	if n, err := e.Reaper().Pass(); err != nil || n != 1 {
		t.Fatalf("pass deleted %d, %v", n, err)
	}
	var last bson.Raw
	if _, err := e.ReadOplog(context.Background(), oplog.Timestamp{}, func(_ oplog.Timestamp, raw bson.Raw) (bool, error) {
		last = append(bson.Raw(nil), raw...)
		return true, nil
	}); err != nil {
		t.Fatal(err)
	}
	if op := last.Lookup("op").StringValue(); op != "d" {
		t.Fatalf("last entry %s, want the purge", last)
	}
	if at, ok := last.Lookup("expiredAt").DateTimeOK(); !ok || at != epoch.Add(5*time.Second).UnixMilli() {
		t.Fatalf("purge entry %s: expiredAt, want %v", last, epoch.Add(5*time.Second))
	}
}
