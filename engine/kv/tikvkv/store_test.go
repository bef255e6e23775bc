package tikvkv

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/lethedb/lethe/engine/kv"
	"github.com/lethedb/lethe/engine/kv/kvtest"
	"github.com/tikv/client-go/v2/oracle"
	"github.com/tikv/client-go/v2/util/codec"
)

var ctx = context.Background()

func mustT(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func put(t *testing.T, s kv.Store, pairs ...string) {
	t.Helper()
	tx, err := s.Begin(ctx, kv.TxnOptions{})
	mustT(t, err)
	for i := 0; i+1 < len(pairs); i += 2 {
		mustT(t, tx.Set([]byte(pairs[i]), []byte(pairs[i+1])))
	}
	_, err = tx.Commit(ctx, kv.Sync)
	mustT(t, err)
}

func keysOf(t *testing.T, r kv.Reader, reverse bool) []string {
	t.Helper()
	it, err := r.Iter(ctx, []byte{}, nil, reverse)
	mustT(t, err)
	defer it.Close()
	var out []string
	for ok := it.First(); ok; ok = it.Next() {
		out = append(out, string(it.Key())+"="+string(it.Value()))
	}
	mustT(t, it.Error())
	return out
}

// TestPrefixIsolation: two deployments on one cluster, each under its own
// prefix, see only their own keys, in reads, scans and drops.
func TestPrefixIsolation(t *testing.T) {
	c, err := NewMockCluster(FamilySplits("a/")...)
	mustT(t, err)
	defer c.Close()
	a, err := c.Open(testOptions("a/"))
	mustT(t, err)
	defer a.Close()
	b, err := c.Open(testOptions("b/"))
	mustT(t, err)
	defer b.Close()
	put(t, a, "k", "from-a", "x", "1")
	put(t, b, "k", "from-b")
	if v, err := b.Get(ctx, []byte("k")); err != nil || string(v) != "from-b" {
		t.Fatalf("b's k = %q, %v", v, err)
	}
	if got := fmt.Sprint(keysOf(t, a, false)); got != "[k=from-a x=1]" {
		t.Fatalf("a's scan = %s", got)
	}
	if got := fmt.Sprint(keysOf(t, b, true)); got != "[k=from-b]" {
		t.Fatalf("b's reverse scan = %s", got)
	}
	mustT(t, b.DropRange(ctx, []byte("a"), []byte("z")))
	if got := fmt.Sprint(keysOf(t, a, false)); got != "[k=from-a x=1]" {
		t.Fatalf("a's scan after b dropped its range = %s", got)
	}
}

// TestValues: empty values and values that start with zero bytes survive
// the encoding, in every read path.
func TestValues(t *testing.T) {
	s := kvtest.Contract(mustOpen(t))
	defer s.Close()
	vals := map[string]string{"e": "", "z": "\x00", "zz": "\x00\x00x", "p": "plain"}
	tx, err := s.Begin(ctx, kv.TxnOptions{})
	mustT(t, err)
	for k, v := range vals {
		mustT(t, tx.Set([]byte(k), []byte(v)))
	}
	for k, v := range vals {
		if got, ok := tx.Buffered([]byte(k)); !ok || got == nil || string(got) != v {
			t.Fatalf("Buffered(%q) = %q, %v; want %q", k, got, ok, v)
		}
	}
	_, err = tx.Commit(ctx, kv.Sync)
	mustT(t, err)
	for k, v := range vals {
		got, err := s.Get(ctx, []byte(k))
		if err != nil || !bytes.Equal(got, []byte(v)) {
			t.Fatalf("Get(%q) = %q, %v; want %q", k, got, err, v)
		}
	}
	if got := fmt.Sprintf("%q", keysOf(t, s, false)); got != `["e=" "p=plain" "z=\x00" "zz=\x00\x00x"]` {
		t.Fatalf("scan = %s", got)
	}
}

func mustOpen(t *testing.T) *Store {
	t.Helper()
	s, err := OpenMock(testOptions(""))
	mustT(t, err)
	return s
}

// TestScanAcrossSplits: regions split while data is there; scans in both
// directions, in snapshots and transactions, stay whole and ordered.
func TestScanAcrossSplits(t *testing.T) {
	c, err := NewMockCluster()
	mustT(t, err)
	defer c.Close()
	s, err := c.Open(testOptions(""))
	mustT(t, err)
	defer s.Close()
	const n = 1000
	for i := 0; i < n; i += 100 {
		var pairs []string
		for j := i; j < i+100; j++ {
			pairs = append(pairs, fmt.Sprintf("k%04d", j), "v")
		}
		put(t, s, pairs...)
	}
	before, err := s.Snapshot(ctx)
	mustT(t, err)
	defer before.Close()
	c.SplitRange([]byte(DefaultPrefix+"k"), []byte(DefaultPrefix+"l"), 7)
	if r := len(c.cluster.GetAllRegions()); r < 5 {
		t.Fatalf("%d regions after the split", r)
	}
	tx, err := s.Begin(ctx, kv.TxnOptions{})
	mustT(t, err)
	defer tx.Rollback()
	mustT(t, tx.Delete([]byte("k0500")))
	for _, r := range []struct {
		name string
		r    kv.Reader
		want int
	}{{"store", s, n}, {"snapshot before the split", before, n}, {"transaction", tx, n - 1}} {
		for _, reverse := range []bool{false, true} {
			got := keysOf(t, r.r, reverse)
			if len(got) != r.want {
				t.Fatalf("%s (reverse %v): %d keys, want %d", r.name, reverse, len(got), r.want)
			}
			for i := 1; i < len(got); i++ {
				if (got[i-1] < got[i]) == reverse {
					t.Fatalf("%s (reverse %v): %s then %s", r.name, reverse, got[i-1], got[i])
				}
			}
		}
	}
	n64, err := s.ApproximateSize(ctx, []byte("k"), []byte("l"))
	if err != nil || n64 != int64(n*len("k0000v")) {
		t.Fatalf("ApproximateSize = %d, %v; want %d", n64, err, n*len("k0000v"))
	}
}

// TestLiveLockAtCommitIsQuick: an optimistic commit that meets a live
// pessimistic lock conflicts at once, not after client-go's backoff.
func TestLiveLockAtCommitIsQuick(t *testing.T) {
	s := mustOpen(t)
	defer s.Close()
	p, err := s.Begin(ctx, kv.TxnOptions{Pessimistic: true})
	mustT(t, err)
	defer p.Rollback()
	mustT(t, p.LockKeys(ctx, kv.LockOptions{}, []byte("a")))
	o, err := s.Begin(ctx, kv.TxnOptions{})
	mustT(t, err)
	mustT(t, o.Set([]byte("a"), []byte("o")))
	mustT(t, o.Set([]byte("b"), []byte("o")))
	start := time.Now()
	if _, err := o.Commit(ctx, kv.Sync); !kv.IsConflict(err) {
		t.Fatalf("commit over a live lock: %v, want a conflict", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("the conflict took %v", d)
	}
	// Its prewrite of b was rolled back: b is free and empty.
	q, err := s.Begin(ctx, kv.TxnOptions{Pessimistic: true, LockWait: 2 * time.Second})
	mustT(t, err)
	defer q.Rollback()
	mustT(t, q.LockKeys(ctx, kv.LockOptions{}, []byte("b")))
	if _, err := q.Get(ctx, []byte("b")); err != kv.ErrNotFound {
		t.Fatalf("b after the conflicting commit: %v", err)
	}
}

// TestUnwrittenLockIsNoChange: a key a pessimistic transaction locked but
// did not write is free once it commits, and is no change to a snapshot
// transaction that started before: it locks it without a conflict, as in
// MongoDB, where a failed insert or an update that changes nothing
// conflicts with no one.
func TestUnwrittenLockIsNoChange(t *testing.T) {
	s := kvtest.Contract(mustOpen(t))
	defer s.Close()
	put(t, s, "a", "0", "b", "0")
	snap, err := s.Begin(ctx, kv.TxnOptions{Pessimistic: true, SnapshotReads: true})
	mustT(t, err)
	defer snap.Rollback()
	p, err := s.Begin(ctx, kv.TxnOptions{Pessimistic: true})
	mustT(t, err)
	mustT(t, p.LockKeys(ctx, kv.LockOptions{}, []byte("a"), []byte("b"), []byte("c")))
	mustT(t, p.Set([]byte("a"), []byte("1")))
	_, err = p.Commit(ctx, kv.Sync)
	mustT(t, err)
	// b and c are free at once: another transaction takes them without
	// waiting.
	q, err := s.Begin(ctx, kv.TxnOptions{Pessimistic: true})
	mustT(t, err)
	mustT(t, q.LockKeys(ctx, kv.LockOptions{NoWait: true}, []byte("b"), []byte("c")))
	q.Rollback()
	// The snapshot transaction writes b, which nothing changed since its
	// start; a, changed, is a conflict.
	mustT(t, snap.LockKeys(ctx, kv.LockOptions{NoWait: true}, []byte("b")))
	mustT(t, snap.Set([]byte("b"), []byte("snap")))
	if err := snap.LockKeys(ctx, kv.LockOptions{NoWait: true}, []byte("a")); !kv.IsConflict(err) {
		t.Fatalf("lock of a, changed since the snapshot: %v, want a conflict", err)
	}
	_, err = snap.Commit(ctx, kv.Sync)
	mustT(t, err)
	if v, err := s.Get(ctx, []byte("b")); err != nil || string(v) != "snap" {
		t.Fatalf("b = %q, %v", v, err)
	}
}

// TestLaterLockOfChangedKey: a current-read transaction that holds a lock
// and locks a key another committed since its start either gets the lock
// and then commits, or is told at the lock: never a lock that its commit
// then refuses, which for a plain write that already committed part of a
// statement would be an error its client sees. Client-go's mock checks
// every key's prewrite against the start, so there the lock is the one
// to fail; on TiKV it succeeds.
func TestLaterLockOfChangedKey(t *testing.T) {
	s := kvtest.Contract(mustOpen(t))
	defer s.Close()
	p, err := s.Begin(ctx, kv.TxnOptions{Pessimistic: true})
	mustT(t, err)
	defer p.Rollback()
	mustT(t, p.LockKeys(ctx, kv.LockOptions{}, []byte("a")))
	mustT(t, p.Set([]byte("a"), []byte("p")))
	put(t, s, "b", "other")
	err = p.LockKeys(ctx, kv.LockOptions{NoWait: true}, []byte("b"))
	if err != nil {
		if !kv.IsConflict(err) {
			t.Fatalf("lock of b: %v, want nil or a conflict", err)
		}
		return
	}
	if v, err := p.Get(ctx, []byte("b")); err != nil || string(v) != "other" {
		t.Fatalf("b under the lock = %q, %v; want the latest commit", v, err)
	}
	mustT(t, p.Set([]byte("b"), []byte("p")))
	if _, err := p.Commit(ctx, kv.Sync); err != nil {
		t.Fatalf("commit after the lock of b succeeded: %v", err)
	}
}

// TestApproximateSizeFromPD: on a cluster, a range over more than two
// regions is sized from PD's region statistics
// (/pd/api/v1/stats/region, storage_size in MiB, bounds in client-go's
// memcomparable encoding of the stored keys); a range within two regions,
// or one PD cannot size, is read. A fake PD answers here: none runs on
// these machines.
func TestApproximateSizeFromPD(t *testing.T) {
	s := mustOpen(t)
	defer s.Close()
	put(t, s, "a", "12345", "b", "678")
	logical, err := s.ApproximateSize(ctx, []byte("a"), []byte("c"))
	mustT(t, err)
	if logical != 2+8 {
		t.Fatalf("logical size %d, want the 10 bytes of a, b and their values", logical)
	}
	regions := 3
	var gotLo []byte
	pd := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/pd/api/v1/stats/region" {
			http.NotFound(w, r)
			return
		}
		if gotLo == nil {
			gotLo = []byte(r.URL.Query().Get("start_key"))
		}
		fmt.Fprintf(w, `{"count": %d, "empty_count": 0, "storage_size": 7, "storage_keys": 100}`, regions)
	}))
	defer pd.Close()
	s.stats = newRegionStats([]string{"127.0.0.1:1", strings.TrimPrefix(pd.URL, "http://")}) // the first is down
	n, err := s.ApproximateSize(ctx, []byte("a"), []byte("c"))
	mustT(t, err)
	if n != 2*7<<20 {
		t.Fatalf("size over 3 regions %d, want 7 MiB of keys and 7 of chunks", n)
	}
	if want := codec.EncodeBytes(nil, s.k.in([]byte("a"))); !bytes.Equal(gotLo, want) {
		t.Fatalf("PD was asked from %q, want %q", gotLo, want)
	}
	regions = 1
	if n, err := s.ApproximateSize(ctx, []byte("a"), []byte("c")); err != nil || n != logical {
		t.Fatalf("size within one region %d, %v; want the logical %d", n, err, logical)
	}
	pd.Close()
	if n, err := s.ApproximateSize(ctx, []byte("a"), []byte("c")); err != nil || n != logical {
		t.Fatalf("size with PD down %d, %v; want the logical %d", n, err, logical)
	}
}

// TestCollectGarbageAdvancesSafePoint: a pass moves the cluster's GC safe
// point to the lifetime before the TSO's time, resolving the locks below
// it first, and a later pass only moves it forward.
func TestCollectGarbageAdvancesSafePoint(t *testing.T) {
	s := mustOpen(t)
	defer s.Close()
	put(t, s, "a", "1")
	before := time.Now()
	sp, err := s.collectGarbage(ctx, time.Minute)
	mustT(t, err)
	at := oracle.GetTimeFromTS(sp)
	if at.Before(before.Add(-time.Minute-5*time.Second)) || at.After(time.Now().Add(-time.Minute)) {
		t.Fatalf("safe point at %v, want about a minute before %v", at, before)
	}
	again, err := s.collectGarbage(ctx, time.Hour)
	mustT(t, err)
	if again != sp {
		t.Fatalf("a pass with a longer lifetime moved the safe point from %d to %d", sp, again)
	}
	if v, err := s.Get(ctx, []byte("a")); err != nil || string(v) != "1" {
		t.Fatalf("a = %q, %v after a GC pass", v, err)
	}
}
