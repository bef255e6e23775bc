package changestream

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/lethedb/lethe/engine/keycodec"
	"github.com/lethedb/lethe/mongoerr"
	"github.com/lethedb/lethe/oplog"
)

func expiring(at int64, id int32) Expired {
	v := bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, id)}
	return Expired{DB: "d", Coll: "c", ID: v, Key: keycodec.Append(nil, v), At: at}
}

// describe names an event by kind and _id, for comparing sequences.
func describe(ev bson.Raw) string {
	return fmt.Sprintf("%s %d @%d", ev.Lookup("operationType").StringValue(), ev.Lookup("documentKey", "_id").Int32(), ev.Lookup("wallTime").DateTime())
}

// TestExpireEventsOrderAndResume: expire events come when the clock
// passes their instant, in instant order (ties by _id), after the oplog
// events read before them, and before the delete of their purge; resuming after any event's token gives exactly
// the events that followed it.
func TestExpireEventsOrderAndResume(t *testing.T) {
	src := &memSource{now: 1000}
	src.exp = []Expired{expiring(1500, 1), expiring(2000, 2), expiring(2000, 3), expiring(3000, 4), expiring(900, 9)}
	sp := func(extra ...bson.E) *Spec {
		return spec(t, append(bson.D{{Key: "showExpireEvents", Value: true}}, extra...), "d", "c")
	}
	s, err := Open(sp(), src)
	if err != nil {
		t.Fatal(err)
	}
	var all []bson.Raw
	next := func() {
		t.Helper()
		evs, err := s.Next(context.Background(), 0, 1<<20, false)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, evs...)
	}
	insert := func(id int) {
		src.add(oplog.Entry{Op: oplog.Insert, NS: "d.c", UI: make([]byte, 16), O: doc(t, bson.D{{Key: "_id", Value: id}})})
	}
	insert(10)
	src.now = 1999 // passes 1500 only
	next()
	src.now = 2000
	insert(11)
	next()
	next() // nothing new
	// The reaper purged 5 (expired at 2500) before the stream looked:
	// its expire event still comes, before its delete.
	src.add(oplog.Entry{Op: oplog.Delete, NS: "d.c", UI: make([]byte, 16), O: doc(t, bson.D{{Key: "_id", Value: 5}}), Expired: true, ExpiredAt: 2500})
	src.now = 5000
	next()
	var got []string
	for _, ev := range all {
		got = append(got, describe(ev))
	}
	want := []string{"insert 10 @100000", "expire 1 @1500", "insert 11 @100000", "expire 2 @2000", "expire 3 @2000", "expire 5 @2500", "delete 5 @100000", "expire 4 @3000"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("events\n%v\nwant\n%v", got, want)
	}
	for i, ev := range all {
		tok, err := ParseToken(ev.Lookup("_id"))
		if err != nil {
			t.Fatal(err)
		}
		r, err := Open(sp(bson.E{Key: "resumeAfter", Value: tok.Doc()}), src)
		if err != nil {
			t.Fatal(err)
		}
		evs, err := r.Next(context.Background(), 0, 1<<20, false)
		if err != nil {
			t.Fatalf("resume after %s: %v", got[i], err)
		}
		var rest []string
		for _, e := range evs {
			rest = append(rest, describe(e))
		}
		// The order of the suffix may differ (oplog events first), not its
		// members.
		if len(rest) != len(want)-i-1 || !sameSet(rest, want[i+1:]) {
			t.Errorf("resume after %s: %v, want %v", got[i], rest, want[i+1:])
		}
	}
}

// TestExpireEventsClockMovesDuringRead: the clock passes a document's
// expiry while a read goes on, and the reaper purges it between the
// read's scan and its end, after purging another that expired later. Its
// expire event must still come, and before the later one's.
func TestExpireEventsClockMovesDuringRead(t *testing.T) {
	src := &memSource{now: 1000}
	src.exp = []Expired{expiring(1500, 2)} // stored, not yet expired at 1000
	s, err := Open(spec(t, bson.D{{Key: "showExpireEvents", Value: true}}, "d", "c"), src)
	if err != nil {
		t.Fatal(err)
	}
	purge := func(id int32, at int64) {
		src.add(oplog.Entry{Op: oplog.Delete, NS: "d.c", UI: make([]byte, 16), O: doc(t, bson.D{{Key: "_id", Value: id}}), Expired: true, ExpiredAt: at})
	}
	// Right after the stream read the clock at 1000, the clock moved to
	// 2000 and the reaper purged 1 (expired at 2000); while the stream
	// reads that, it purges 2 as well.
	src.afterClock = func() {
		src.afterClock = nil
		src.now = 2000
		purge(1, 2000)
	}
	src.afterEntry = func() {
		if len(src.exp) > 0 {
			src.exp = nil
			purge(2, 1500)
		}
	}
	var got []string
	for _, now := range []int64{1000, 2500, 2500} {
		if now > src.now {
			src.now = now
		}
		evs, err := s.Next(context.Background(), 0, 1<<20, false)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			got = append(got, describe(ev))
		}
	}
	want := []string{"expire 2 @1500", "expire 1 @2000", "delete 1 @100000", "delete 2 @100000"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("events\n%v\nwant\n%v", got, want)
	}
}

// TestExpireEventsClockBehindPurge: the clock went back behind a purge
// the reaper made before (a manual clock restarts afresh): the stream
// takes the purge with its expire event at once rather than wait for the
// clock, and a document the clock lets expire behind the stream's
// position has its delete only, as the README says.
func TestExpireEventsClockBehindPurge(t *testing.T) {
	src := &memSource{now: 1000}
	s, err := Open(spec(t, bson.D{{Key: "showExpireEvents", Value: true}}, "d", "c"), src)
	if err != nil {
		t.Fatal(err)
	}
	purge := func(id int32, at int64) {
		src.add(oplog.Entry{Op: oplog.Delete, NS: "d.c", UI: make([]byte, 16), O: doc(t, bson.D{{Key: "_id", Value: id}}), Expired: true, ExpiredAt: at})
	}
	purge(1, 3000)
	var got []string
	next := func() {
		t.Helper()
		evs, err := s.Next(context.Background(), 0, 1<<20, false)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			got = append(got, describe(ev))
		}
	}
	next()
	src.exp = []Expired{expiring(1500, 2), expiring(3500, 3)}
	src.now = 4000
	purge(2, 1500)
	next()
	want := []string{"expire 1 @3000", "delete 1 @100000", "delete 2 @100000", "expire 3 @3500"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("events\n%v\nwant\n%v", got, want)
	}
}

// TestExpireEventWakesWaitingStream: with the system clock, which moves
// without notice, a waiting stream wakes at the next expiry rather than at
// the end of its wait.
func TestExpireEventWakesWaitingStream(t *testing.T) {
	src := &memSource{systemClock: true}
	s, err := Open(spec(t, bson.D{{Key: "showExpireEvents", Value: true}}, "d", "c"), src)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(20 * time.Millisecond).UnixMilli()
	src.exp = []Expired{expiring(at, 1)}
	const wait = 30 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	start := time.Now()
	evs, err := s.Next(ctx, 0, 1<<20, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1 || describe(evs[0]) != fmt.Sprintf("expire 1 @%d", at) {
		t.Fatalf("events %v", evs)
	}
	// Without the wake the event comes with the end of the wait.
	if took := time.Since(start); took > wait/2 {
		t.Fatalf("the event came after %v, at the end of the wait", took)
	}
}

func sameSet(a, b []string) bool {
	m := map[string]int{}
	for _, x := range a {
		m[x]++
	}
	for _, x := range b {
		m[x]--
	}
	for _, n := range m {
		if n != 0 {
			return false
		}
	}
	return true
}

// TestExpireBacklogIsBounded: a stream with showExpireEvents gathers every
// event up to the visible point in one read, so one too far behind fails
// with ExceededMemoryLimit instead of holding them all; one within the
// bound reads them.
func TestExpireBacklogIsBounded(t *testing.T) {
	for _, tc := range []struct {
		name             string
		inserts, expires int
		fails            bool
	}{
		{"within the bound", 3, 2, false},
		{"oplog backlog", 7, 0, true},
		{"expiries", 0, 7, true},
		{"both", 3, 3, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := &memSource{now: 1000}
			s, err := Open(spec(t, bson.D{{Key: "showExpireEvents", Value: true}}, "d", "c"), src)
			if err != nil {
				t.Fatal(err)
			}
			s.maxBacklog = 5
			for i := range tc.inserts {
				src.add(oplog.Entry{Op: oplog.Insert, NS: "d.c", UI: make([]byte, 16), O: doc(t, bson.D{{Key: "_id", Value: 100 + i}})})
			}
			for i := range tc.expires {
				src.exp = append(src.exp, expiring(1500+int64(i), int32(i)))
			}
			src.now = 3000
			evs, err := s.Next(context.Background(), 0, 1<<20, false)
			if tc.fails {
				if me, ok := mongoerr.As(err); !ok || me.Code != mongoerr.ExceededMemoryLimit {
					t.Fatalf("got %d events, %v; want ExceededMemoryLimit", len(evs), err)
				}
				return
			}
			if err != nil || len(evs) != tc.inserts+tc.expires {
				t.Fatalf("got %d events, %v; want %d", len(evs), err, tc.inserts+tc.expires)
			}
		})
	}
}
