package session

import (
	"encoding/binary"
	"runtime"
	"testing"
	"time"

	"github.com/lethedb/lethe/mongoerr"
)

// seqID is the n-th of a run of distinct ids, cheaper than NewID for
// tests that make a million.
func seqID(n int) ID {
	var id ID
	binary.BigEndian.PutUint64(id[8:], uint64(n))
	id[0] = 0xee
	return id
}

// One client at its bound is refused with TooManyLogicalSessions, while
// another client still starts sessions, and the first may go on using the
// sessions it has; once they end it may start new ones.
func TestMaxPerClient(t *testing.T) {
	r := New(Options{Timeout: time.Minute, Max: 10, MaxPerClient: 3})
	var mine []Key
	for i := range 3 {
		k := Key{ID: seqID(i), UID: NoUser}
		if err := r.Use(k, "", "attacker"); err != nil {
			t.Fatal(err)
		}
		mine = append(mine, k)
	}
	err := r.Use(Key{ID: seqID(3), UID: NoUser}, "", "attacker")
	if mongoerr.CodeOf(err) != mongoerr.TooManyLogicalSessions {
		t.Fatalf("the client's fourth session: %v, want TooManyLogicalSessions", err)
	}
	for i := range 3 {
		if _, err := r.Start(NoUser, "", "bystander"); err != nil {
			t.Fatalf("another client's session %d: %v", i, err)
		}
	}
	if err := r.Use(mine[0], "", "attacker"); err != nil {
		t.Fatalf("a known session at the bound: %v", err)
	}
	// A session another client names is charged to whoever started it.
	if err := r.Use(mine[1], "", "bystander"); err != nil {
		t.Fatal(err)
	}
	if n := r.LenOf("attacker"); n != 3 {
		t.Errorf("attacker keeps %d sessions, want 3", n)
	}
	r.End(mine)
	if _, err := r.Start(NoUser, "", "attacker"); err != nil {
		t.Fatalf("after ending its sessions: %v", err)
	}
	if n, all := r.LenOf("attacker"), r.Len(); n != 1 || all != 4 {
		t.Errorf("attacker keeps %d, all %d; want 1 and 4", n, all)
	}
}

// The per-client bound defaults to a tenth of Max, at least one.
func TestMaxPerClientDefault(t *testing.T) {
	if r := New(Options{}); r.opts.Max != 1_000_000 || r.opts.MaxPerClient != 100_000 {
		t.Errorf("defaults %d in all, %d per client", r.opts.Max, r.opts.MaxPerClient)
	}
	for _, tc := range []struct{ max, want int }{{50_000, 5_000}, {5, 1}} {
		if r := New(Options{Max: tc.max}); r.opts.MaxPerClient != tc.want {
			t.Errorf("Max %d: %d per client, want %d", tc.max, r.opts.MaxPerClient, tc.want)
		}
	}
}

// Clients and digests seen once cost nothing once their sessions are gone:
// their slots are reused.
func TestOwnersAreFreed(t *testing.T) {
	r, clock, _ := newTestRegistry(time.Minute, 0)
	for i := range 1000 {
		var uid UID
		binary.BigEndian.PutUint64(uid[:], uint64(i))
		if err := r.Use(Key{ID: seqID(i), UID: uid}, "", "addr"+string(rune('a'+i%26))+string(rune(i))); err != nil {
			t.Fatal(err)
		}
		if i%10 == 9 {
			clock.Advance(2 * time.Minute)
			r.Sweep()
		}
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	if u, c := len(r.owners.uids), len(r.owners.clients); u > 10 || c > 10 {
		t.Errorf("%d digest slots and %d client slots for at most 10 live sessions", u, c)
	}
	if len(r.owners.uidIndex) != r.owners.n || len(r.owners.clientIndex) != r.owners.n {
		t.Errorf("%d sessions, %d digests, %d clients indexed", r.owners.n, len(r.owners.uidIndex), len(r.owners.clientIndex))
	}
}

// maxSessionBytes bounds what one session costs the heap, so that
// MongoDB's maxSessions of a million fit in under 100 MiB (84 bytes each
// measured, 80 MiB for a million, with Go 1.26). The
// registry's first form, a sync.Map of pointers, took 177 bytes.
const maxSessionBytes = 96

// TestSessionMemory fills a registry with a million sessions of a few
// clients and measures the heap they take.
func TestSessionMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("a million sessions")
	}
	const n = DefaultMax
	r := New(Options{Timeout: time.Hour, MaxPerClient: n})
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	clients := []string{"10.0.0.1", "10.0.0.2", "app@admin"}
	for i := range n {
		if err := r.Use(Key{ID: seqID(i), UID: NoUser}, "", clients[i%len(clients)]); err != nil {
			t.Fatalf("session %d: %v", i, err)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	per := float64(after.HeapAlloc-before.HeapAlloc) / n
	t.Logf("%d sessions: %.1f MiB of heap, %.1f bytes each", r.Len(), float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), per)
	if per > maxSessionBytes {
		t.Errorf("a session takes %.1f bytes of heap, want at most %d", per, maxSessionBytes)
	}
	runtime.KeepAlive(r)
}
