package auth

import (
	"container/list"
	"net"
	"sync"
	"time"
)

// Throttle slows down repeated authentication failures from one address:
// the first few failures cost nothing (a mistyped password), then each
// further attempt waits twice as long as the one before, up to a cap. The
// server sleeps only the connection that is authenticating, so other
// clients never wait.
//
// Memory is bounded: at most maxTracked addresses are remembered, the
// least recently failing forgotten first, and an address is forgotten
// once it has not failed for forgetAfter.
//
// Failures from many addresses at once (an attacker with many of them, or
// a crowd of misconfigured clients) are slowed as a whole: past
// globalBurst failures, the server answers at most globalRate failures a
// second across all addresses, by holding every attempt (a new correct
// login too) for as long as the failures above that rate take to drain.
// Authenticated clients are never held, and so keep the machine.
type Throttle struct {
	mu    sync.Mutex
	addrs map[string]*list.Element // of *throttled
	order *list.List               // most recent failure first
	// debt is the recent failures across all addresses, draining at
	// globalRate a second since debtAt.
	debt   float64
	debtAt time.Time
}

type throttled struct {
	addr     string
	failures int
	last     time.Time
}

const (
	freeFailures = 3
	firstDelay   = 100 * time.Millisecond
	maxDelay     = 5 * time.Second
	forgetAfter  = 10 * time.Minute
	maxTracked   = 10000

	globalRate     = 200 // failures a second, across all addresses
	globalBurst    = 400
	maxGlobalDelay = 20 * time.Second
)

// MaxDelay is the longest Delay asks for.
const MaxDelay = maxGlobalDelay

// NewThrottle returns a throttle that remembers no failures.
func NewThrottle() *Throttle {
	return &Throttle{addrs: make(map[string]*list.Element), order: list.New()}
}

// Delay is how long the server should hold an authentication attempt from
// addr (a host, or host:port whose port is ignored) before answering it.
func (t *Throttle) Delay(addr string, now time.Time) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	global := t.globalDelay(now)
	e, ok := t.addrs[hostOf(addr)]
	if !ok {
		return global
	}
	th := e.Value.(*throttled)
	if now.Sub(th.last) >= forgetAfter {
		t.remove(e)
		return global
	}
	return max(delayAfter(th.failures), global)
}

// drain lets the failure debt run down to now.
func (t *Throttle) drain(now time.Time) {
	if elapsed := now.Sub(t.debtAt).Seconds(); elapsed > 0 {
		t.debt = max(t.debt-elapsed*globalRate, 0)
		t.debtAt = now
	}
}

// globalDelay is how long the failures of all addresses past globalBurst
// take to drain at globalRate.
func (t *Throttle) globalDelay(now time.Time) time.Duration {
	t.drain(now)
	over := t.debt - globalBurst
	if over <= 0 {
		return 0
	}
	return min(time.Duration(over/globalRate*float64(time.Second)), maxGlobalDelay)
}

func delayAfter(failures int) time.Duration {
	if failures < freeFailures {
		return 0
	}
	d := firstDelay
	for i := freeFailures; i < failures && d < maxDelay; i++ {
		d *= 2
	}
	return min(d, maxDelay)
}

// Failed records a failed authentication from addr at now.
func (t *Throttle) Failed(addr string, now time.Time) {
	host := hostOf(addr)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.drain(now)
	t.debt++
	if e, ok := t.addrs[host]; ok {
		th := e.Value.(*throttled)
		if now.Sub(th.last) >= forgetAfter {
			th.failures = 0
		}
		th.failures++
		th.last = now
		t.order.MoveToFront(e)
		return
	}
	t.addrs[host] = t.order.PushFront(&throttled{addr: host, failures: 1, last: now})
	for t.order.Len() > maxTracked {
		t.remove(t.order.Back())
	}
}

// Succeeded forgets addr's failures.
func (t *Throttle) Succeeded(addr string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e, ok := t.addrs[hostOf(addr)]; ok {
		t.remove(e)
	}
}

func (t *Throttle) remove(e *list.Element) {
	delete(t.addrs, e.Value.(*throttled).addr)
	t.order.Remove(e)
}

// hostOf drops the port: a client reconnecting from a new port is the
// same client.
func hostOf(addr string) string {
	if host, _, err := net.SplitHostPort(addr); err == nil {
		return host
	}
	return addr
}
