package replset

import (
	"context"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/lethedb/lethe/clock"
)

// TestTickClock: the cluster time never repeats or goes back, within a
// second (an increment) or across seconds (the server clock's), and Await
// returns once a tick reaches the time awaited.
func TestTickClock(t *testing.T) {
	wall := clock.NewManual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	c := NewTickClock(wall)
	start := c.Now()
	if start.T != uint32(wall.Now().Unix()) || start.I != 1 {
		t.Fatalf("first cluster time %v, want the clock's second, increment 1", start)
	}
	last := start
	for i := range 5 {
		if i == 3 {
			wall.Advance(1500 * time.Millisecond)
		}
		ts := c.Tick()
		if !last.Before(ts) || c.Now() != ts {
			t.Fatalf("tick %d: %v after %v; Now %v", i, ts, last, c.Now())
		}
		last = ts
	}
	if last.T != start.T+1 || last.I != 2 {
		t.Errorf("after a second's move and two ticks: %v", last)
	}
	// A clock moved back keeps the cluster time where it was.
	wall.Advance(-time.Hour)
	if ts := c.Tick(); ts.T != last.T || ts.I != last.I+1 {
		t.Errorf("tick after the clock went back: %v, last %v", ts, last)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	if err := c.Await(ctx, bson.Timestamp{T: last.T + 100}); err == nil {
		t.Errorf("Await of a time never reached returned")
	}
	target := bson.Timestamp{T: last.T, I: last.I + 2}
	done := make(chan error, 1)
	go func() { done <- c.Await(context.Background(), target) }()
	c.Tick()
	select {
	case <-done:
		t.Fatal("Await returned one tick short of its time")
	default:
	}
	c.Tick()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	// A time of a second the clock has passed, say from before a restart,
	// is reached at once.
	held := bson.Timestamp{T: c.Now().T, I: c.Now().I + 100}
	wall.Advance(time.Hour + time.Second)
	if err := c.Await(context.Background(), held); err != nil || c.Now().Before(held) {
		t.Errorf("Await of a past second's time: %v, now %v", err, c.Now())
	}
}
