package oplog

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"
)

// TestFromTSOOrders: oracle timestamps map to BSON timestamps in their
// order, and the 16 slots of one stay below the next one's.
func TestFromTSOOrders(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	base := uint64(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()) << tsoLogicalBits
	for range 100000 {
		a := base + r.Uint64N(1<<40)
		b := a + 1 + r.Uint64N(1<<20)
		if r.IntN(10) == 0 {
			// The largest logical part of a millisecond, then the next.
			a = a | (1<<tsoLogicalBits - 1)
			b = a + 1
		}
		hiA, loB := FromTSO(a, tsoSlots-1), FromTSO(b, 0)
		if !hiA.Less(loB) {
			t.Fatalf("FromTSO(%#x, 15) = %v not before FromTSO(%#x, 0) = %v", a, hiA, b, loB)
		}
		if got := int64(FromTSO(a, 0).T); got != int64(a>>tsoLogicalBits)/1000 {
			t.Fatalf("FromTSO(%#x).T = %d, want the physical seconds", a, got)
		}
	}
}

// fakeCluster is an oracle and a roster of floors shared by the logs of a
// test, with a check that no entry commits at or below a visible point
// some reader has used.
type fakeCluster struct {
	oracle *atomic.Uint64
	mu     *sync.Mutex
	floors map[int]Timestamp
	id     int
}

func (c fakeCluster) Now(context.Context) (uint64, error) { return c.oracle.Add(1), nil }

func (c fakeCluster) Publish(_ context.Context, f Timestamp) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.floors[c.id] = f
	return nil
}

func (c fakeCluster) Floors(context.Context) ([]Timestamp, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Timestamp
	for id, f := range c.floors {
		if id != c.id {
			out = append(out, f)
		}
	}
	return out, nil
}

// TestSharedVisibility: logs of several servers appending concurrently,
// with commits that land in any order and idle spells that make them stop
// and start publishing, never let a reader see past an entry that commits
// later; every timestamp is handed out once; the visible point reaches
// every committed entry.
func TestSharedVisibility(t *testing.T) {
	defer func(d time.Duration) { idleAfter = d }(idleAfter)
	idleAfter = 5 * time.Millisecond
	const servers, writers, appends = 3, 4, 150
	oracle := new(atomic.Uint64)
	oracle.Store(uint64(time.Now().UnixMilli()) << tsoLogicalBits)
	var mu sync.Mutex
	floors := map[int]Timestamp{}
	logs := make([]*Log, servers)
	ctx, cancel := context.WithCancel(context.Background())
	var loops sync.WaitGroup
	for i := range logs {
		logs[i] = New(Options{}, Timestamp{}, 0)
		logs[i].Share(fakeCluster{oracle: oracle, mu: &mu, floors: floors, id: i})
		loops.Add(1)
		go func() {
			defer loops.Done()
			logs[i].RunShared(ctx, zap.NewNop())
		}()
	}
	defer func() {
		cancel()
		loops.Wait()
	}()

	// read is the highest visible point a reader has used; committed
	// every committed timestamp.
	var (
		stateMu   sync.Mutex
		read      Timestamp
		committed = map[Timestamp]bool{}
		failure   error
	)
	stopReaders := make(chan struct{})
	var readers sync.WaitGroup
	for i := range logs {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for {
				select {
				case <-stopReaders:
					return
				default:
				}
				v := logs[i].Visible()
				stateMu.Lock()
				if read.Less(v) {
					read = v
				}
				stateMu.Unlock()
				time.Sleep(100 * time.Microsecond)
			}
		}()
	}
	var writersWG sync.WaitGroup
	for i := range logs {
		for w := range writers {
			writersWG.Add(1)
			go func() {
				defer writersWG.Done()
				r := rand.New(rand.NewPCG(uint64(i), uint64(w)))
				for k := range appends {
					s := &memStore{entries: map[uint64][]byte{}}
					ents := []Entry{insertEntry(t, k)}
					if r.IntN(20) == 0 {
						for j := range 40 { // more than one oracle timestamp's slots
							ents = append(ents, insertEntry(t, j))
						}
					}
					res, err := logs[i].Append(s, ents)
					if err != nil {
						t.Error(err)
						return
					}
					time.Sleep(time.Duration(r.IntN(300)) * time.Microsecond)
					ok := r.IntN(10) != 0
					if ok {
						stateMu.Lock()
						for _, k := range s.keys() {
							ts := FromUint64(k)
							if !read.Less(ts) && failure == nil {
								failure = fmt.Errorf("server %d commits %v, at or below the visible point %v a reader used", i, ts, read)
							}
							if committed[ts] && failure == nil {
								failure = fmt.Errorf("timestamp %v handed out twice", ts)
							}
							committed[ts] = true
						}
						stateMu.Unlock()
					}
					res.Finish(ok)
					if r.IntN(50) == 0 {
						time.Sleep(10 * time.Millisecond) // idle: publish no floor
					}
				}
			}()
		}
	}
	writersWG.Wait()
	close(stopReaders)
	readers.Wait()
	if failure != nil {
		t.Fatal(failure)
	}
	var top Timestamp
	for ts := range committed {
		if top.Less(ts) {
			top = ts
		}
	}
	for i, l := range logs {
		wctx, wcancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := l.Wait(wctx, top.Prev())
		wcancel()
		if err != nil {
			t.Fatalf("log %d's visible point %v never reached %v: %v", i, l.Visible(), top, err)
		}
	}
}
