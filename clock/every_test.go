package clock

import (
	"context"
	"testing"
	"time"
)

// TestEveryKickAndEnd: a kick calls fn at once, long before the period,
// and Every returns when its context ends.
func TestEveryKickAndEnd(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	kick := make(chan struct{}, 1)
	calls := make(chan struct{}, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		Every(ctx, time.Hour, kick, func(context.Context) { calls <- struct{}{} })
	}()
	kick <- struct{}{}
	select {
	case <-calls:
	case <-time.After(10 * time.Second):
		t.Fatal("a kick did not call fn")
	}
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Every did not return when its context ended")
	}
}
