package integration

import (
	"context"
	"runtime"
	"runtime/metrics"
	"slices"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// The resource tests attack the server with one client and check, through a
// second, that everybody else is still served: "no request can take the
// server down". underAttack does the measuring and the common assertions;
// each test asserts the attacker's own error.

const (
	// defaultPingP99 bounds the 99th percentile of a bystander's ping
	// latency during an attack. A ping on an idle loopback connection takes
	// well under a millisecond; 50 ms is what a user would notice.
	defaultPingP99 = 50 * time.Millisecond
	// defaultMaxHeap bounds the test process's heap (server and clients
	// together) during an attack: 256 MiB.
	defaultMaxHeap = 256 << 20
	// goroutineSlack is how far above its baseline the goroutine count may
	// stay after an attack: the driver's pool and monitors come and go.
	goroutineSlack = 8
	// settleTimeout is how long the server gets after an attack to close the
	// attacker's connections and end its requests.
	settleTimeout = 10 * time.Second
)

// attackBounds are what an attack must stay within; zero fields take the
// defaults above.
type attackBounds struct {
	PingP99 time.Duration
	MaxHeap uint64 // bytes
}

// attackReport is what underAttack measured, for the test's log.
type attackReport struct {
	Duration time.Duration // how long the attack ran
	Pings    int           // bystander pings sent during the attack
	PingP50  time.Duration
	PingP99  time.Duration
	PingMax  time.Duration
	// HeapBase and HeapPeak are the heap's object bytes (live and not yet
	// swept) before and at most during the attack; HeapAfter is the live
	// heap after the attack and a forced GC.
	HeapBase, HeapPeak, HeapAfter uint64
	// GoroutinesBase and GoroutinesAfter are the process's goroutine counts
	// before the attack and once it has settled.
	GoroutinesBase, GoroutinesAfter int

	bounds  attackBounds
	pingErr error // the first bystander ping that failed
}

// Log writes the measured figures against their limits.
func (r attackReport) Log(t *testing.T) {
	t.Helper()
	t.Logf("attack %v: %d bystander pings, p50 %v, p99 %v (limit %v, %.0f%%), max %v; heap peak %.1f MiB (limit %.0f MiB, %.0f%%), base %.1f MiB, after GC %.1f MiB; goroutines %d -> %d",
		r.Duration.Round(time.Millisecond), r.Pings, r.PingP50, r.PingP99, r.bounds.PingP99,
		100*float64(r.PingP99)/float64(r.bounds.PingP99), r.PingMax,
		mib(r.HeapPeak), mib(r.bounds.MaxHeap), 100*float64(r.HeapPeak)/float64(r.bounds.MaxHeap),
		mib(r.HeapBase), mib(r.HeapAfter), r.GoroutinesBase, r.GoroutinesAfter)
}

func mib(n uint64) float64 { return float64(n) / (1 << 20) }

// underAttack runs attack while a bystander client, on its own connection,
// pings the server without pause and the process's heap is sampled every
// few milliseconds. attack must close whatever connections it opened before
// it returns. Afterwards underAttack checks that
//   - no bystander ping failed and their p99 stayed under b.PingP99,
//   - the heap never exceeded b.MaxHeap,
//   - the server still answers, on the old connection and on a new one,
//   - the goroutine count came back to near its baseline (no request goroutine
//     outlived its client).
//
// The attack's context ends when the test's would: attacks bound themselves.
func underAttack(t *testing.T, ts *testServer, b attackBounds, attack func(ctx context.Context)) attackReport {
	t.Helper()
	rep := measureAttack(t, ts, b, attack)
	rep.Log(t)
	rep.check(t)
	return rep
}

// measureAttack runs attack and measures, asserting only what the
// measuring itself needs.
func measureAttack(t *testing.T, ts *testServer, b attackBounds, attack func(ctx context.Context)) attackReport {
	t.Helper()
	if b.PingP99 == 0 {
		b.PingP99 = defaultPingP99
	}
	if b.MaxHeap == 0 {
		b.MaxHeap = defaultMaxHeap
	}
	rep := attackReport{bounds: b}

	bystander := ts.NewClient(t, options.Client().SetMaxPoolSize(1))
	admin := bystander.Database("admin")
	ping := func(ctx context.Context) error {
		return admin.RunCommand(ctx, bson.D{{Key: "ping", Value: 1}}).Err()
	}
	if err := ping(testCtx(t)); err != nil {
		t.Fatalf("bystander ping before the attack: %v", err)
	}
	runtime.GC()
	rep.HeapBase = heapObjects()
	rep.GoroutinesBase = runtime.NumGoroutine()

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var latencies []time.Duration
	var pingErr error
	wg.Add(2)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			start := time.Now()
			err := ping(ctx)
			latencies = append(latencies, time.Since(start))
			cancel()
			if err != nil {
				pingErr = err
				return
			}
		}
	}()
	peak := rep.HeapBase
	go func() {
		defer wg.Done()
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			peak = max(peak, heapObjects())
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()

	start := time.Now()
	attack(testCtx(t))
	rep.Duration = time.Since(start)
	close(stop)
	wg.Wait()
	rep.HeapPeak = max(peak, heapObjects())

	rep.Pings = len(latencies)
	slices.Sort(latencies)
	if n := len(latencies); n > 0 {
		rep.PingP50 = latencies[n/2]
		rep.PingP99 = latencies[min(n-1, n*99/100)]
		rep.PingMax = latencies[n-1]
	}

	// The server still answers, on the bystander's connection and a new one.
	if err := ping(testCtx(t)); err != nil {
		t.Errorf("bystander ping after the attack: %v", err)
	}
	fresh, err := mongo.Connect(options.Client().ApplyURI(ts.URI).SetServerSelectionTimeout(5 * time.Second))
	if err != nil {
		t.Fatalf("connect after the attack: %v", err)
	}
	if err := fresh.Ping(testCtx(t), nil); err != nil {
		t.Errorf("new client's ping after the attack: %v", err)
	}
	fresh.Disconnect(context.Background())

	// Goroutines of the attacker's connections and requests end.
	deadline := time.Now().Add(settleTimeout)
	for {
		rep.GoroutinesAfter = runtime.NumGoroutine()
		if rep.GoroutinesAfter <= rep.GoroutinesBase+goroutineSlack || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	runtime.GC()
	rep.HeapAfter = heapLive()
	rep.pingErr = pingErr
	return rep
}

// check asserts the bounds on what was measured.
func (rep attackReport) check(t *testing.T) {
	t.Helper()
	b := rep.bounds
	if rep.pingErr != nil {
		t.Errorf("a bystander ping failed during the attack: %v", rep.pingErr)
	}
	if rep.Pings == 0 {
		t.Errorf("no bystander ping completed during the attack")
	}
	if rep.PingP99 >= b.PingP99 {
		t.Errorf("bystander ping p99 %v during the attack, limit %v", rep.PingP99, b.PingP99)
	}
	if rep.HeapPeak >= b.MaxHeap {
		t.Errorf("heap peaked at %.1f MiB during the attack, limit %.0f MiB", mib(rep.HeapPeak), mib(b.MaxHeap))
	}
	if rep.GoroutinesAfter > rep.GoroutinesBase+goroutineSlack {
		buf := make([]byte, 1<<20)
		t.Errorf("%d goroutines %v after the attack, %d before: leaked requests or connections?\n%s",
			rep.GoroutinesAfter, settleTimeout, rep.GoroutinesBase, buf[:runtime.Stack(buf, true)])
	}
}

var heapSamples = []metrics.Sample{
	{Name: "/memory/classes/heap/objects:bytes"},
	{Name: "/gc/heap/live:bytes"},
}

// heapObjects is the bytes of heap objects, live or not yet swept: what the
// process actually holds, between collections.
func heapObjects() uint64 {
	s := []metrics.Sample{heapSamples[0]}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// heapLive is the bytes of live heap as of the last GC.
func heapLive() uint64 {
	s := []metrics.Sample{heapSamples[1]}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// TestUnderAttackMeasures checks the harness itself: an attack that holds
// 300 MiB must show in the heap peak and break the default bound, and pings
// must have been measured. A harness that cannot fail proves nothing.
func TestUnderAttackMeasures(t *testing.T) {
	ts := startServer(t)
	var hold [][]byte
	rep := measureAttack(t, ts, attackBounds{}, func(ctx context.Context) {
		for range 300 {
			hold = append(hold, make([]byte, 1<<20))
			time.Sleep(time.Millisecond)
		}
	})
	runtime.KeepAlive(hold)
	rep.Log(t)
	if rep.HeapPeak < 300<<20 || rep.HeapPeak < defaultMaxHeap {
		t.Errorf("heap peak %.1f MiB while the attack held 300 MiB", mib(rep.HeapPeak))
	}
	if rep.Pings < 10 || rep.PingP99 <= 0 {
		t.Errorf("%d pings measured, p99 %v: the bystander did not run", rep.Pings, rep.PingP99)
	}
}
