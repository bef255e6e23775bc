package auth

import (
	"fmt"
	"testing"
	"time"
)

func TestThrottleGrowsAndCaps(t *testing.T) {
	th := NewThrottle()
	now := time.Unix(1000, 0)
	want := []time.Duration{0, 0, 0, 100 * time.Millisecond, 200 * time.Millisecond,
		400 * time.Millisecond, 800 * time.Millisecond, 1600 * time.Millisecond,
		3200 * time.Millisecond, 5 * time.Second, 5 * time.Second}
	for i, w := range want {
		if got := th.Delay("10.0.0.1:5000", now); got != w {
			t.Fatalf("after %d failures: delay %v, want %v", i, got, w)
		}
		th.Failed("10.0.0.1:5000", now)
		now = now.Add(time.Second)
	}
	for i := 0; i < 100; i++ {
		th.Failed("10.0.0.1", now)
	}
	if got := th.Delay("10.0.0.1", now); got != maxDelay {
		t.Fatalf("delay %v after many failures", got)
	}
	// Another port of the same host is the same client; another host is not.
	if th.Delay("10.0.0.1:6000", now) == 0 || th.Delay("10.0.0.2:5000", now) != 0 {
		t.Fatal("addresses mixed up")
	}
	th.Succeeded("10.0.0.1:7000")
	if th.Delay("10.0.0.1", now) != 0 {
		t.Fatal("success did not reset")
	}
}

func TestThrottleForgets(t *testing.T) {
	th := NewThrottle()
	now := time.Unix(1000, 0)
	for i := 0; i < 5; i++ {
		th.Failed("[::1]:1", now)
	}
	if th.Delay("::1", now.Add(forgetAfter-time.Second)) == 0 {
		t.Fatal("forgot too early")
	}
	if th.Delay("::1", now.Add(forgetAfter)) != 0 {
		t.Fatal("did not forget")
	}
	// A failure long after the last starts a new count.
	for i := 0; i < 5; i++ {
		th.Failed("h", now)
	}
	th.Failed("h", now.Add(forgetAfter))
	if th.Delay("h", now.Add(forgetAfter)) != 0 {
		t.Fatal("old failures still counted")
	}
}

func TestThrottleBounded(t *testing.T) {
	th := NewThrottle()
	now := time.Unix(1000, 0)
	for i := 0; i < freeFailures+1; i++ {
		th.Failed("first", now)
	}
	for i := 0; i < maxTracked; i++ {
		th.Failed(fmt.Sprintf("10.%d.%d.%d", i>>16, (i>>8)&255, i&255), now.Add(time.Second))
	}
	if len(th.addrs) != maxTracked || th.order.Len() != maxTracked {
		t.Fatalf("tracking %d/%d addresses", len(th.addrs), th.order.Len())
	}
	if _, kept := th.addrs["first"]; kept {
		t.Fatal("the least recent address was kept")
	}
}

// TestThrottleGlobal: failures from many addresses, none failing often
// enough to be slowed alone, slow every attempt once they outrun
// globalRate past globalBurst, and the hold drains as the failures stop.
func TestThrottleGlobal(t *testing.T) {
	th := NewThrottle()
	now := time.Unix(1000, 0)
	addr := func(i int) string { return fmt.Sprintf("10.%d.%d.1:4000", i/256, i%256) }
	// globalBurst failures in an instant, one per address: no hold yet.
	for i := range globalBurst {
		th.Failed(addr(i), now)
	}
	if d := th.Delay("192.0.2.1", now); d != 0 {
		t.Fatalf("after %d failures: delay %v, want none", globalBurst, d)
	}
	// As many again: a new address waits for them to drain at
	// globalRate, two seconds.
	for i := range globalRate * 2 {
		th.Failed(addr(globalBurst+i), now)
	}
	if d := th.Delay("192.0.2.1", now); d != 2*time.Second {
		t.Fatalf("delay %v, want 2s", d)
	}
	// One second later half has drained.
	if d := th.Delay("192.0.2.1", now.Add(time.Second)); d != time.Second {
		t.Fatalf("a second later: delay %v, want 1s", d)
	}
	// A flood is held at most maxGlobalDelay.
	for i := range 100_000 {
		th.Failed(addr(i%5000), now)
	}
	if d := th.Delay("192.0.2.1", now); d != maxGlobalDelay {
		t.Fatalf("after a flood: delay %v, want %v", d, maxGlobalDelay)
	}
	// Quiet again once the debt has drained.
	if d := th.Delay("192.0.2.1", now.Add(time.Hour)); d != 0 {
		t.Fatalf("an hour later: delay %v", d)
	}
}
