package session

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/lethedb/lethe/clock"
	"github.com/lethedb/lethe/mongoerr"
)

type goneLog struct {
	mu  sync.Mutex
	ids []Key
	ch  chan Key
}

func (g *goneLog) record(ids []Key) {
	g.mu.Lock()
	g.ids = append(g.ids, ids...)
	g.mu.Unlock()
	if g.ch != nil {
		for _, id := range ids {
			g.ch <- id
		}
	}
}

func (g *goneLog) take() []Key {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := g.ids
	g.ids = nil
	return out
}

func newTestRegistry(timeout time.Duration, maxN int) (*Registry, *clock.Manual, *goneLog) {
	clock := clock.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	g := &goneLog{}
	// One client may take all: these tests are about the bound in all.
	return New(Options{Timeout: timeout, Max: maxN, MaxPerClient: maxN, Clock: clock, Gone: g.record}), clock, g
}

// A session lives for the timeout after its last use; a use within it
// extends it, and the first use after it finds the session expired, ends
// it (reporting it gone) and starts it afresh.
func TestUseExtendsAndExpires(t *testing.T) {
	r, clock, g := newTestRegistry(time.Minute, 0)
	a, err := r.Start(NoUser, "", "client")
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(50 * time.Second)
	if err := r.Use(a, "", "client"); err != nil {
		t.Fatal(err)
	}
	clock.Advance(50 * time.Second) // 100 s after start, 50 s after use
	if err := r.Use(a, "", "client"); err != nil {
		t.Fatal(err)
	}
	if gone := g.take(); len(gone) != 0 {
		t.Fatalf("gone while in use: %v", gone)
	}
	clock.Advance(61 * time.Second)
	if err := r.Use(a, "", "client"); err != nil {
		t.Fatal(err)
	}
	if gone := g.take(); len(gone) != 1 || gone[0] != a {
		t.Fatalf("gone %v, want %v", gone, a)
	}
	if l := r.List(); len(l) != 1 || l[0].Key != a || !l[0].LastUse.Equal(clock.Now()) {
		t.Fatalf("listed %v", l)
	}
}

// Sweep ends the expired sessions and says when the next falls due.
func TestSweep(t *testing.T) {
	r, clock, g := newTestRegistry(time.Minute, 0)
	a, _ := r.Start(NoUser, "", "client")
	clock.Advance(30 * time.Second)
	b, _ := r.Start(NoUser, "", "client")
	if next := r.Sweep(); next != time.Minute-30*time.Second+1 {
		t.Errorf("next due in %v", next)
	}
	clock.Advance(31 * time.Second)
	r.Sweep()
	if gone := g.take(); len(gone) != 1 || gone[0] != a {
		t.Fatalf("gone %v, want [%v]", gone, a)
	}
	if l := r.List(); len(l) != 1 || l[0].Key != b {
		t.Fatalf("listed %v, want only %v", l, b)
	}
	if r.Len() != 1 {
		t.Errorf("Len %d", r.Len())
	}
}

// End forgets the sessions and reports every id it was given.
func TestEnd(t *testing.T) {
	r, _, g := newTestRegistry(0, 0)
	a, _ := r.Start(NoUser, "", "client")
	b, _ := r.Start(NoUser, "", "client")
	id, _ := NewID()
	unknown := Key{ID: id, UID: NoUser}
	r.End([]Key{a, unknown})
	if gone := g.take(); len(gone) != 2 || gone[0] != a || gone[1] != unknown {
		t.Fatalf("gone %v", gone)
	}
	if l := r.List(); len(l) != 1 || l[0].Key != b {
		t.Fatalf("listed %v", l)
	}
	if r.Timeout() != DefaultTimeout || r.TimeoutMinutes() != 30 {
		t.Errorf("timeout %v, %d minutes", r.Timeout(), r.TimeoutMinutes())
	}
}

// Past the bound new sessions are refused with TooManyLogicalSessions,
// unless expired ones make room; known ones go on being used.
func TestMax(t *testing.T) {
	r, clock, _ := newTestRegistry(time.Minute, 2)
	a, _ := r.Start(NoUser, "", "client")
	if _, err := r.Start(NoUser, "", "client"); err != nil {
		t.Fatal(err)
	}
	_, err := r.Start(NoUser, "", "client")
	if mongoerr.CodeOf(err) != mongoerr.TooManyLogicalSessions {
		t.Fatalf("third session: %v", err)
	}
	if err := r.Use(a, "", "client"); err != nil {
		t.Fatal(err)
	}
	clock.Advance(2 * time.Minute)
	if _, err := r.Start(NoUser, "", "client"); err != nil {
		t.Fatalf("after the others expired: %v", err)
	}
}

// Run sweeps when a manual clock moves past a session's timeout.
func TestRunSweepsWhenTheClockMoves(t *testing.T) {
	r, clock, g := newTestRegistry(time.Minute, 0)
	g.ch = make(chan Key, 1)
	a, _ := r.Start(NoUser, "", "client")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	clock.Advance(2 * time.Minute)
	select {
	case id := <-g.ch:
		if id != a {
			t.Fatalf("gone %v, want %v", id, a)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the sweep did not end the expired session")
	}
}

// Concurrent uses of one session never lose it or report it gone.
func TestConcurrentUse(t *testing.T) {
	r, clock, g := newTestRegistry(time.Minute, 0)
	a, _ := r.Start(NoUser, "", "client")
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 1000; i++ {
				if err := r.Use(a, "", "client"); err != nil {
					t.Error(err)
					return
				}
				if i%100 == 0 {
					r.Sweep()
				}
			}
		}()
	}
	for i := 0; i < 10; i++ {
		clock.Advance(time.Second)
	}
	wg.Wait()
	if gone := g.take(); len(gone) != 0 || r.Len() != 1 {
		t.Fatalf("gone %v, %d kept", gone, r.Len())
	}
}

func TestIDString(t *testing.T) {
	id := ID{0x0a, 1, 2, 3, 4, 5, 0x46, 7, 0x88, 9, 10, 11, 12, 13, 14, 15}
	if s := id.String(); s != "0a010203-0405-4607-8809-0a0b0c0d0e0f" {
		t.Errorf("%s", s)
	}
}

// One UUID named by two users is two sessions: ending one leaves the
// other live, and each lists with its own digest and user name.
func TestSessionsArePerUser(t *testing.T) {
	r, _, g := newTestRegistry(time.Minute, 0)
	id, _ := NewID()
	alice := Key{ID: id, UID: UserUID("alice", "app")}
	bob := Key{ID: id, UID: UserUID("bob", "app")}
	if err := r.Use(alice, "alice@app", "client"); err != nil {
		t.Fatal(err)
	}
	if err := r.Use(bob, "bob@app", "client"); err != nil {
		t.Fatal(err)
	}
	if r.Len() != 2 {
		t.Fatalf("%d sessions kept, want 2", r.Len())
	}
	r.End([]Key{bob})
	if gone := g.take(); len(gone) != 1 || gone[0] != bob {
		t.Fatalf("gone %v, want [%v]", gone, bob)
	}
	if !r.Live(alice) || r.Live(bob) {
		t.Fatalf("live: alice %v, bob %v", r.Live(alice), r.Live(bob))
	}
	l := r.List()
	if len(l) != 1 || l[0].Key != alice || l[0].User != "alice@app" {
		t.Fatalf("listed %+v", l)
	}
	// A later use does not rename the session.
	if err := r.Use(alice, "other@app", "client"); err != nil {
		t.Fatal(err)
	}
	if l := r.List(); l[0].User != "alice@app" {
		t.Fatalf("user %q after another use", l[0].User)
	}
}

// List orders sessions by id, then by user digest.
func TestListOrder(t *testing.T) {
	r, _, _ := newTestRegistry(time.Minute, 0)
	ids := []ID{{2}, {1}}
	uids := []UID{{9}, {3}}
	for _, id := range ids {
		for _, uid := range uids {
			if err := r.Use(Key{ID: id, UID: uid}, "", "client"); err != nil {
				t.Fatal(err)
			}
		}
	}
	want := []Key{{ID{1}, UID{3}}, {ID{1}, UID{9}}, {ID{2}, UID{3}}, {ID{2}, UID{9}}}
	l := r.List()
	if len(l) != len(want) {
		t.Fatalf("listed %d, want %d", len(l), len(want))
	}
	for i := range want {
		if l[i].Key != want[i] {
			t.Errorf("listed[%d] = %v, want %v", i, l[i].Key, want[i])
		}
	}
}

// The digests are MongoDB's: SHA-256 of "user@db", and of "" for no user.
func TestUserUID(t *testing.T) {
	if s := NoUser.String(); s != "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=" {
		t.Errorf("NoUser %s", s)
	}
	if UserUID("", "") != NoUser {
		t.Error("the empty user's digest is not NoUser")
	}
	// echo -n 'a@app' | sha256sum
	if s := fmt.Sprintf("%x", [32]byte(UserUID("a", "app"))); s != "db48bec5c1c242ccbf5ea25bdd776fd86b1dc01ca2b0d804c0b68d0a3f2d5a7e" {
		t.Errorf("a@app: %s", s)
	}
}
