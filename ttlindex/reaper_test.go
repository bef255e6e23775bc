package ttlindex

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/lethedb/lethe/clock"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

var errDisk = errors.New("disk on fire")

// fakeStore holds the due times of its documents and deletes them the way
// the engine's store does. Every ReapBatch closes changed, so that tests
// wait for the reaper without sleeping.
type fakeStore struct {
	mu       sync.Mutex
	due      []time.Time   // sorted
	failing  int           // ReapBatch calls still to fail
	stuck    bool          // claim more is due without deleting anything
	work     time.Duration // how long each ReapBatch takes
	calls    int
	deleted  int
	maxLimit int
	changed  chan struct{}
}

func newFakeStore(due ...time.Time) *fakeStore {
	s := &fakeStore{changed: make(chan struct{})}
	s.add(due...)
	return s
}

func (s *fakeStore) ReapBatch(_ context.Context, now time.Time, limit int) (int, bool, time.Time, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.notifyLocked()
	s.calls++
	s.maxLimit = max(s.maxLimit, limit)
	time.Sleep(s.work)
	if s.failing > 0 {
		s.failing--
		return 0, false, time.Time{}, errDisk
	}
	if s.stuck {
		return 0, true, time.Time{}, nil
	}
	n := 0
	for n < limit && n < len(s.due) && !s.due[n].After(now) {
		n++
	}
	s.due = s.due[n:]
	s.deleted += n
	more := len(s.due) > 0 && !s.due[0].After(now)
	var next time.Time
	if len(s.due) > 0 && !more {
		next = s.due[0]
	}
	return n, more, next, nil
}

func (s *fakeStore) add(due ...time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.due = append(s.due, due...)
	slices.SortFunc(s.due, time.Time.Compare)
}

func (s *fakeStore) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// waitFor waits until cond holds of the store, and fails the test if that
// takes more than 5s.
func (s *fakeStore) waitFor(t *testing.T, what string, cond func(*fakeStore) bool) {
	t.Helper()
	timeout := time.After(5 * time.Second)
	for {
		s.mu.Lock()
		ok, changed := cond(s), s.changed
		s.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-changed:
		case <-timeout:
			t.Fatalf("timed out waiting until %s", what)
		}
	}
}

func (s *fakeStore) stats() (calls, deleted, remaining int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls, s.deleted, len(s.due)
}

func calledAtLeast(n int) func(*fakeStore) bool {
	return func(s *fakeStore) bool { return s.calls >= n }
}

func deletedAtLeast(n int) func(*fakeStore) bool {
	return func(s *fakeStore) bool { return s.deleted >= n }
}

// startReaper runs r until the test ends or stop is called; stop fails the
// test if Run does not return promptly.
func startReaper(t *testing.T, r *Reaper) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.Run(ctx)
	}()
	stop = func() {
		cancel()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Error("Run did not return after its context was canceled")
		}
	}
	t.Cleanup(stop)
	return stop
}

var t0 = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

func times(n int, at time.Time) []time.Time {
	ts := make([]time.Time, n)
	for i := range ts {
		ts[i] = at
	}
	return ts
}

func TestPassBatchesUntilNothingIsDue(t *testing.T) {
	tests := []struct {
		name          string
		due, later    int
		batchSize     int
		wantSubPasses int64
		wantLimit     int
	}{
		{"nothing due", 0, 3, 100, 1, 100},
		{"one partial batch", 5, 0, 100, 1, 100},
		{"exact batches", 1000, 2, 100, 10, 100},
		{"batches and a tail", 1001, 0, 100, 11, 100},
		{"default batch size", 600, 0, 0, 3, defaultBatchSize},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := clock.NewManual(t0)
			store := newFakeStore(times(tt.due, t0.Add(-time.Second))...)
			store.add(times(tt.later, t0.Add(time.Hour))...)
			r := NewReaper(store, ReaperOptions{Clock: clk, BatchSize: tt.batchSize})

			deleted, err := r.Pass()
			if err != nil || deleted != tt.due {
				t.Fatalf("Pass() = %d, %v; want %d", deleted, err, tt.due)
			}
			want := Metrics{Passes: 1, SubPasses: tt.wantSubPasses, DeletedDocuments: int64(tt.due)}
			if got := r.Metrics(); got != want {
				t.Errorf("Metrics() = %+v, want %+v", got, want)
			}
			if _, _, remaining := store.stats(); remaining != tt.later {
				t.Errorf("%d documents left, want the %d not yet due", remaining, tt.later)
			}
			if store.maxLimit != tt.wantLimit {
				t.Errorf("largest batch asked for = %d, want %d", store.maxLimit, tt.wantLimit)
			}
		})
	}
}

// While foreground requests are served, a pass pauses after each batch
// twice as long as the batch took; otherwise short batches run back to
// back.
func TestPassYieldsToForegroundRequests(t *testing.T) {
	for _, busy := range []bool{false, true} {
		t.Run(fmt.Sprintf("busy=%v", busy), func(t *testing.T) {
			store := newFakeStore(times(1000, t0.Add(-time.Second))...)
			store.work = time.Millisecond
			r := NewReaper(store, ReaperOptions{Clock: clock.NewManual(t0), BatchSize: 100, Busy: func() bool { return busy }})
			var yields []time.Duration
			r.yield = func(d time.Duration) { yields = append(yields, d) }
			if deleted, err := r.Pass(); err != nil || deleted != 1000 {
				t.Fatalf("Pass() = %d, %v; want 1000", deleted, err)
			}
			if !busy {
				// Ten batches of a millisecond make no streak.
				if len(yields) != 0 {
					t.Fatalf("an idle server's pass paused %v", yields)
				}
				return
			}
			// No pause after the last batch: the pass is over.
			if len(yields) != 9 {
				t.Fatalf("pass paused %d times over 10 batches, want 9", len(yields))
			}
			for _, d := range yields {
				if d < 2*store.work {
					t.Fatalf("paused %v after a batch of at least %v, want at least twice the batch", d, store.work)
				}
			}
		})
	}
}

func TestPassLogsEachBatch(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	store := newFakeStore(times(5, t0)...)
	r := NewReaper(store, ReaperOptions{Clock: clock.NewManual(t0), Logger: zap.New(core), BatchSize: 3})
	if _, err := r.Pass(); err != nil {
		t.Fatal(err)
	}
	var counts []int64
	for _, e := range logs.AllUntimed() {
		fields := e.ContextMap()
		if _, ok := fields["duration"]; !ok {
			t.Errorf("batch log %q has no duration", e.Message)
		}
		counts = append(counts, fields["count"].(int64))
	}
	if !slices.Equal(counts, []int64{3, 2}) {
		t.Errorf("logged batch counts %v, want [3 2]", counts)
	}
}

func TestPassStopsWhenABatchMakesNoProgress(t *testing.T) {
	store := newFakeStore()
	store.stuck = true
	r := NewReaper(store, ReaperOptions{Clock: clock.NewManual(t0)})
	if n, err := r.Pass(); n != 0 || err != nil {
		t.Fatalf("Pass() = %d, %v; want 0, nil", n, err)
	}
	if got := r.Metrics().SubPasses; got != 1 {
		t.Errorf("%d sub-passes, want 1", got)
	}
}

func TestPassReturnsStoreError(t *testing.T) {
	store := newFakeStore(t0)
	store.failing = 1
	r := NewReaper(store, ReaperOptions{Clock: clock.NewManual(t0)})
	if _, err := r.Pass(); !errors.Is(err, errDisk) {
		t.Fatalf("Pass() error = %v, want one wrapping %v", err, errDisk)
	}
	if n, err := r.Pass(); n != 1 || err != nil {
		t.Fatalf("second Pass() = %d, %v; want 1, nil", n, err)
	}
	if got, want := r.Metrics(), (Metrics{Passes: 2, SubPasses: 2, DeletedDocuments: 1}); got != want {
		t.Errorf("Metrics() = %+v, want %+v", got, want)
	}
}

func TestRunPassesWhenManualClockMoves(t *testing.T) {
	clk := clock.NewManual(t0)
	store := newFakeStore(t0.Add(10 * time.Second))
	// A sleep this long would fail the test: only the clock can wake it.
	r := NewReaper(store, ReaperOptions{Clock: clk, MaxSleep: time.Hour})
	startReaper(t, r)
	store.waitFor(t, "the first pass", calledAtLeast(1))

	clk.Advance(5 * time.Second)
	store.waitFor(t, "a pass after the first move", calledAtLeast(2))
	if _, deleted, _ := store.stats(); deleted != 0 {
		t.Fatalf("deleted %d documents 5s before they are due", deleted)
	}

	clk.Advance(5 * time.Second)
	store.waitFor(t, "the document is purged", deletedAtLeast(1))
}

func TestRunWakesForEarlierDue(t *testing.T) {
	clk := clock.NewManual(t0)
	store := newFakeStore()
	r := NewReaper(store, ReaperOptions{Clock: clk, MaxSleep: time.Hour})
	startReaper(t, r)
	store.waitFor(t, "the first pass", calledAtLeast(1))

	store.add(clk.Now())
	r.Wake(clk.Now())
	store.waitFor(t, "the woken pass purges the document", deletedAtLeast(1))
}

func TestRunWakesAtFutureDueOnSystemClock(t *testing.T) {
	store := newFakeStore()
	r := NewReaper(store, ReaperOptions{MaxSleep: time.Hour})
	startReaper(t, r)
	store.waitFor(t, "the first pass", calledAtLeast(1))

	due := time.Now().Add(30 * time.Millisecond)
	store.add(due)
	r.Wake(due)
	store.waitFor(t, "the document is purged at its due time", deletedAtLeast(1))
}

func TestRunSleepsUntilNextDue(t *testing.T) {
	store := newFakeStore(time.Now().Add(30 * time.Millisecond))
	r := NewReaper(store, ReaperOptions{MaxSleep: time.Hour})
	startReaper(t, r)
	store.waitFor(t, "the document is purged at the next due time", deletedAtLeast(1))
}

func TestRunPassesAtLeastEveryMaxSleep(t *testing.T) {
	store := newFakeStore()
	r := NewReaper(store, ReaperOptions{Clock: clock.NewManual(t0), MaxSleep: 5 * time.Millisecond})
	startReaper(t, r)
	store.waitFor(t, "three passes with nothing due", calledAtLeast(3))
}

func TestWakeOnlySignalsEarlierDue(t *testing.T) {
	r := NewReaper(newFakeStore(), ReaperOptions{Clock: clock.NewManual(t0)})
	r.wakeBefore.Store(t0.Add(time.Second).UnixMilli())
	steps := []struct {
		due          time.Duration
		wantSignal   bool
		wantEarliest time.Duration
	}{
		{2 * time.Second, false, -1},
		{time.Second, false, -1},
		{500 * time.Millisecond, true, 500 * time.Millisecond},
		{600 * time.Millisecond, true, 500 * time.Millisecond},
		{100 * time.Millisecond, true, 100 * time.Millisecond},
	}
	for _, s := range steps {
		r.Wake(t0.Add(s.due))
		if got := len(r.wake) == 1; got != s.wantSignal {
			t.Errorf("after Wake(+%v): signal pending = %v, want %v", s.due, got, s.wantSignal)
		}
		want := int64(math.MaxInt64)
		if s.wantEarliest >= 0 {
			want = t0.Add(s.wantEarliest).UnixMilli()
		}
		if got := r.earliestWake.Load(); got != want {
			t.Errorf("after Wake(+%v): earliest wake = %d, want %d", s.due, got, want)
		}
	}
}

func TestRunRetriesAfterError(t *testing.T) {
	core, logs := observer.New(zapcore.ErrorLevel)
	store := newFakeStore(t0)
	store.failing = 2
	r := NewReaper(store, ReaperOptions{Clock: clock.NewManual(t0), Logger: zap.New(core), MaxSleep: 5 * time.Millisecond})
	startReaper(t, r)
	store.waitFor(t, "the document is purged after the store recovers", deletedAtLeast(1))

	if calls, _, _ := store.stats(); calls < 3 {
		t.Errorf("%d batches, want at least 3 (2 failures and a retry)", calls)
	}
	if n := logs.FilterFieldKey("error").Len(); n != 2 {
		t.Errorf("%d errors logged, want 2", n)
	}
}

func TestRunStopsWhenContextIsDone(t *testing.T) {
	store := newFakeStore()
	r := NewReaper(store, ReaperOptions{Clock: clock.NewManual(t0), MaxSleep: time.Hour})
	stop := startReaper(t, r)
	store.waitFor(t, "the first pass", calledAtLeast(1))
	stop()
}

func TestPassAlongsideRun(t *testing.T) {
	store := newFakeStore()
	r := NewReaper(store, ReaperOptions{BatchSize: 7, MaxSleep: time.Millisecond})
	startReaper(t, r)

	const writers, docs = 4, 50
	var wg sync.WaitGroup
	for range writers {
		wg.Go(func() {
			for range docs {
				now := time.Now()
				store.add(now)
				r.Wake(now)
				if _, err := r.Pass(); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	store.waitFor(t, "every document is purged", deletedAtLeast(writers*docs))
	if got := r.Metrics().DeletedDocuments; got != writers*docs {
		t.Errorf("DeletedDocuments = %d, want %d", got, writers*docs)
	}
}
