package engine

import (
	"context"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/lethedb/lethe/engine/kv/pebblekv"
	"github.com/lethedb/lethe/engine/members"
)

// rosterTime is a time the test moves by hand.
type rosterTime struct {
	mu  sync.Mutex
	now time.Time
}

func (f *rosterTime) Now() time.Time { f.mu.Lock(); defer f.mu.Unlock(); return f.now }
func (f *rosterTime) Add(d time.Duration) {
	f.mu.Lock()
	f.now = f.now.Add(d)
	f.mu.Unlock()
}

// TestMembersRoster: members that renew are live with what they published; one
// that stops renewing drops off the roster once its lease has passed, and
// knows it is no longer valid at the same time; one that leaves is gone at
// once.
func TestMembersRoster(t *testing.T) {
	ctx := context.Background()
	store, err := pebblekv.Open(t.TempDir(), pebblekv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	clk := &rosterTime{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	join := func(addr string) *members.Member {
		m, err := members.Join(ctx, members.Options{Store: store, Now: clk.Now, Addr: addr, Lease: 3 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	a, b, c := join("a:1"), join("b:1"), join("c:1")
	// The roster's point reads of the ids its last scan found must read
	// what a scan does (a fresh Roster's first read), as servers join,
	// report, run out and leave.
	var roster members.Roster
	live := func() map[string]members.Record {
		recs, err := new(members.Roster).Live(ctx, store, clk.Now())
		if err != nil {
			t.Fatal(err)
		}
		cached, err := roster.Live(ctx, store, clk.Now())
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(cached, recs) {
			t.Fatalf("the roster read %v, a scan %v", cached, recs)
		}
		out := map[string]members.Record{}
		for _, r := range recs {
			out[r.Addr] = r
		}
		return out
	}
	if got := live(); len(got) != 3 {
		t.Fatalf("live after joins = %v, want three", got)
	}
	a.Update(func(r *members.Record) { r.Catalog = 7 })
	if err := a.Renew(ctx); err != nil {
		t.Fatal(err)
	}
	if got := live()["a:1"].Catalog; got != 7 {
		t.Fatalf("a's published catalog = %d, want 7", got)
	}
	clk.Add(2 * time.Second)
	for _, m := range []*members.Member{a, b} {
		if err := m.Renew(ctx); err != nil {
			t.Fatal(err)
		}
	}
	clk.Add(1500 * time.Millisecond)
	got := live()
	if _, ok := got["c:1"]; ok || len(got) != 2 {
		t.Fatalf("live after c's lease passed = %v, want a and b", got)
	}
	if c.Valid() || !a.Valid() {
		t.Fatalf("valid: a %v, c %v; want a only", a.Valid(), c.Valid())
	}
	if err := b.Leave(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Renew(ctx); err == nil {
		t.Fatal("a member that left renewed its lease")
	}
	if got := live(); len(got) != 1 || got["a:1"].ID != a.ID() {
		t.Fatalf("live after b left = %v, want a", got)
	}
	d := join("d:1")
	if got := live(); len(got) != 2 || got["d:1"].ID != d.ID() {
		t.Fatalf("live after d joined = %v, want a and d", got)
	}
}
