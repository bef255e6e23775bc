package server

import (
	"fmt"
	"testing"
	"time"

	"github.com/lethedb/lethe/engine/pipeline"
)

// The session cache forgets a session unused for the session timeout, and
// past its bound the least recently used one.
func TestSessionCacheExpiresAndEvicts(t *testing.T) {
	var sc sessionCache
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	sc.touch("old", t0)
	sc.touch("new", t0.Add(20*time.Minute))
	if n := len(sc.list(pipeline.SessionsSpec{}, t0.Add(25*time.Minute))); n != 2 {
		t.Fatalf("%d sessions listed, want 2", n)
	}
	if n := len(sc.list(pipeline.SessionsSpec{}, t0.Add(31*time.Minute))); n != 1 {
		t.Fatalf("%d sessions listed after the first expired, want 1", n)
	}
	// Refill to the bound with sessions used later than "new", then add
	// one more: "new" is the least recently used and goes.
	now := t0.Add(21 * time.Minute)
	for i := 1; i < maxLocalSessions; i++ {
		sc.touch(fmt.Sprintf("s%05d", i), now)
	}
	if n := sc.n.Load(); n != maxLocalSessions {
		t.Fatalf("%d sessions, want %d", n, maxLocalSessions)
	}
	sc.touch("last", now)
	if _, ok := sc.lastUse.Load("new"); ok || sc.n.Load() != maxLocalSessions {
		t.Errorf("after passing the bound: new kept %v, %d sessions", ok, sc.n.Load())
	}
	sc.end([]string{"last", "unknown"})
	if _, ok := sc.lastUse.Load("last"); ok || sc.n.Load() != maxLocalSessions-1 {
		t.Errorf("after end: last kept %v, %d sessions", ok, sc.n.Load())
	}
	if n := len(sc.list(pipeline.SessionsSpec{Users: []pipeline.SessionUser{{User: "u", DB: "admin"}}}, now)); n != 0 {
		t.Errorf("another user's sessions: %d, want none", n)
	}
}

// Commands file their latency by MongoDB's kinds.
func TestLatencyKind(t *testing.T) {
	for name, want := range map[string]string{
		"find": "reads", "getMore": "reads", "aggregate": "reads", "count": "reads", "distinct": "reads",
		"insert": "writes", "update": "writes", "delete": "writes", "findAndModify": "writes",
		"createIndexes": "commands", "collStats": "commands", "drop": "commands",
	} {
		got := map[int]string{0: "reads", 1: "writes", 2: "commands"}[int(latencyKind(name))]
		if got != want {
			t.Errorf("%s: %s, want %s", name, got, want)
		}
	}
}
