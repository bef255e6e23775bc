package engine

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/lethedb/lethe/engine/kv/pebblekv"
	"github.com/lethedb/lethe/engine/reapshare"
)

// holders returns, by slot, the sharers that think they hold it.
func shareHolders(sharers map[string]*reapshare.Sharer, slots int) [][]string {
	out := make([][]string, slots)
	ids := slices.Sorted(maps.Keys(sharers))
	for _, id := range ids {
		s := sharers[id]
		for slot, h := range s.Held() {
			if h {
				out[slot] = append(out[slot], id)
			}
		}
	}
	return out
}

// TestReapShareRounds: three servers' rounds divide the slots, each slot to one of
// them, each its share; the slots of one that stops (a dead server) are
// held by nobody until its lease has run out, and then by the others;
// a server that releases its slots has them taken at the next round.
func TestReapShareRounds(t *testing.T) {
	store, err := pebblekv.Open(t.TempDir(), pebblekv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	clk := &rosterTime{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	const slots, lease = 16, 3 * time.Second
	sharers := map[string]*reapshare.Sharer{}
	for _, id := range []string{"a", "b", "c"} {
		s, err := reapshare.New(reapshare.Options{Store: store, Slots: slots, Self: id, Now: clk.Now, Lease: lease})
		if err != nil {
			t.Fatal(err)
		}
		sharers[id] = s
	}
	round := func(live ...string) {
		t.Helper()
		for _, id := range live {
			if err := sharers[id].Round(context.Background(), live); err != nil {
				t.Fatal(err)
			}
		}
	}
	check := func(what string, live []string) {
		t.Helper()
		share := map[string]int{}
		for slot, hs := range shareHolders(sharers, slots) {
			if len(hs) != 1 {
				t.Fatalf("%s: slot %d held by %v, want one server", what, slot, hs)
			}
			share[hs[0]]++
		}
		for _, id := range live {
			if n := share[id]; n < slots/len(live) || n > (slots+len(live)-1)/len(live) {
				t.Errorf("%s: %s holds %d slots of %d among %d servers", what, id, n, slots, len(live))
			}
		}
	}
	// The first server to come takes only its own share: the others are
	// on the roster already.
	round("a", "b", "c")
	check("three servers", []string{"a", "b", "c"})
	clk.Add(lease / 3)
	round("a", "b", "c")
	check("three servers, renewed", []string{"a", "b", "c"})

	// c dies: it renews nothing any more. While its lease holds, its
	// slots stay its own; the roster still lists it.
	dead := sharers["c"]
	clk.Add(lease / 3)
	round("a", "b")
	for slot, hs := range shareHolders(sharers, slots) {
		if reapshare.Preferred(slot, []string{"a", "b", "c"}) == "c" && (len(hs) != 1 || hs[0] != "c") {
			t.Fatalf("slot %d of c, whose lease still holds, held by %v", slot, hs)
		}
	}
	// Its leases run out (and its roster record with them): the others
	// divide the slots between them.
	clk.Add(lease)
	for _, h := range dead.Held() {
		if h {
			t.Fatal("a server whose lease ran out still holds a slot")
		}
	}
	delete(sharers, "c")
	round("a", "b")
	check("after c died", []string{"a", "b"})

	// c comes back under a new id, d: the others hand it its share, and
	// it takes what they handed at its next round.
	d, err := reapshare.New(reapshare.Options{Store: store, Slots: slots, Self: "d", Now: clk.Now, Lease: lease})
	if err != nil {
		t.Fatal(err)
	}
	sharers["d"] = d
	round("d", "a", "b")
	if n := countShared(d); n != 0 {
		t.Fatalf("d took %d slots that others held", n)
	}
	round("d", "a", "b")
	check("after d joined", []string{"a", "b", "d"})

	// b leaves cleanly: the slots it held are taken at the others' next
	// round, without waiting for its leases to run out.
	ofB := sharers["b"].Held()
	if err := sharers["b"].Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := countShared(sharers["b"]); n != 0 {
		t.Fatalf("b holds %d slots after releasing them", n)
	}
	if err := sharers["b"].Round(context.Background(), []string{"a", "b", "d"}); err == nil {
		t.Fatal("a round after Release succeeded")
	}
	delete(sharers, "b")
	round("a", "d")
	for slot, hs := range shareHolders(sharers, slots) {
		if ofB[slot] && len(hs) != 1 {
			t.Fatalf("slot %d that b released is held by %v after a round", slot, hs)
		}
	}
	round("a", "d")
	check("after b left", []string{"a", "d"})
}

func countShared(s *reapshare.Sharer) int {
	n := 0
	for _, h := range s.Held() {
		if h {
			n++
		}
	}
	return n
}
