package clock

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestSyncedFollowsItsSource: two clocks synced with one source that runs
// an hour ahead of the local clock both read that hour ahead, and agree.
func TestSyncedFollowsItsSource(t *testing.T) {
	source := func(context.Context) (time.Time, error) { return time.Now().Add(time.Hour), nil }
	a, err := NewSynced(context.Background(), source)
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewSynced(context.Background(), source)
	if err != nil {
		t.Fatal(err)
	}
	ahead := a.Now().Sub(time.Now())
	if ahead < time.Hour-time.Second || ahead > time.Hour+time.Second {
		t.Fatalf("synced clock is %v ahead of the local clock, want about an hour", ahead)
	}
	if d := b.Now().Sub(a.Now()); d < -time.Second || d > time.Second {
		t.Fatalf("two clocks synced with one source differ by %v", d)
	}
}

// TestSyncedNeverGoesBack: a sync that lowers the offset does not move
// Now backwards.
func TestSyncedNeverGoesBack(t *testing.T) {
	offset := time.Hour
	c, err := NewSynced(context.Background(), func(context.Context) (time.Time, error) { return time.Now().Add(offset), nil })
	if err != nil {
		t.Fatal(err)
	}
	before := c.Now()
	offset = 0
	if err := c.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if after := c.Now(); after.Before(before) {
		t.Fatalf("Now went back from %v to %v after a sync", before, after)
	}
}

// TestSyncedKeepsOffsetOnError: a failed first read is an error; a failed
// later sync keeps the offset.
func TestSyncedKeepsOffsetOnError(t *testing.T) {
	boom := errors.New("unreachable")
	if _, err := NewSynced(context.Background(), func(context.Context) (time.Time, error) { return time.Time{}, boom }); !errors.Is(err, boom) {
		t.Fatalf("NewSynced = %v, want the source's error", err)
	}
	fail := false
	c, err := NewSynced(context.Background(), func(context.Context) (time.Time, error) {
		if fail {
			return time.Time{}, boom
		}
		return time.Now().Add(time.Hour), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	fail = true
	if err := c.Sync(context.Background()); !errors.Is(err, boom) {
		t.Fatalf("Sync = %v, want the source's error", err)
	}
	if ahead := c.Now().Sub(time.Now()); ahead < time.Hour-time.Second {
		t.Fatalf("after a failed sync the clock is %v ahead, want the hour it had", ahead)
	}
}
