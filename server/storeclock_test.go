package server

import (
	"context"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/lethedb/lethe/clock"
	"github.com/lethedb/lethe/engine/kv"
)

// aheadStore is a store whose shared time runs an hour ahead of this
// machine's clock, as another machine's could.
type aheadStore struct{ kv.Store }

func (aheadStore) PhysicalTime(context.Context) (time.Time, error) {
	return time.Now().Add(time.Hour), nil
}

// TestServerClockFollowsTheStore: a server given no clock decides time by
// its store's shared time when the store has one (TiKV's TSO), and by the
// wall clock otherwise.
func TestServerClockFollowsTheStore(t *testing.T) {
	c, stop, err := storeClock(aheadStore{}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if ahead := c.Now().Sub(time.Now()); ahead < time.Hour-time.Second || ahead > time.Hour+time.Second {
		t.Fatalf("the server's clock is %v ahead of the wall clock, want the store's hour", ahead)
	}
	c, stop, err = storeClock(nil, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	stop()
	if _, ok := c.(clock.System); !ok {
		t.Fatalf("without a store the clock is %T, want the wall clock", c)
	}
}
