package tikvkv

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/lethedb/lethe/engine/kv"
	"github.com/lethedb/lethe/engine/kv/kvtest"
)

// big is a value of n pseudo-random bytes, different for each seed; a
// seed of 0 makes one that starts with a zero byte.
func big(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 7))
	v := make([]byte, n)
	for i := range v {
		v[i] = byte(r.Uint32())
	}
	if seed == 0 && n > 0 {
		v[0] = 0
	}
	return v
}

// chunkKeys are the chunk keys stored under s's prefix, as raw keys.
func chunkKeys(t *testing.T, s *Store) []string {
	t.Helper()
	ts, err := s.now(ctx)
	mustT(t, err)
	it, err := s.kv.GetSnapshot(ts).Iter(s.k.chunks, s.k.chunkEnd)
	mustT(t, err)
	defer it.Close()
	var out []string
	for it.Valid() {
		out = append(out, fmt.Sprintf("%q", it.Key()))
		mustT(t, it.Next())
	}
	return out
}

func setKV(t *testing.T, s kv.Store, o kv.TxnOptions, pairs ...any) {
	t.Helper()
	tx, err := s.Begin(ctx, o)
	mustT(t, err)
	defer tx.Rollback()
	for i := 0; i+1 < len(pairs); i += 2 {
		k := []byte(pairs[i].(string))
		if o.Pessimistic {
			mustT(t, tx.LockKeys(ctx, kv.LockOptions{}, k))
		}
		if pairs[i+1] == nil {
			mustT(t, tx.Delete(k))
			continue
		}
		mustT(t, tx.Set(k, pairs[i+1].([]byte)))
	}
	_, err = tx.Commit(ctx, kv.Sync)
	mustT(t, err)
}

func wantValue(t *testing.T, what string, r kv.Reader, key string, want []byte) {
	t.Helper()
	got, err := r.Get(ctx, []byte(key))
	if want == nil {
		if err != kv.ErrNotFound {
			t.Fatalf("%s: Get(%q) = %d bytes, %v; want not found", what, key, len(got), err)
		}
		return
	}
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("%s: Get(%q) = %d bytes, %v; want %d bytes", what, key, len(got), err, len(want))
	}
}

// scan is the keys and values of r in [lo, hi), one way.
func scan(t *testing.T, r kv.Reader, lo, hi string, reverse bool) (ks []string, vs [][]byte) {
	t.Helper()
	var h []byte
	if hi != "" {
		h = []byte(hi)
	}
	it, err := r.Iter(ctx, []byte(lo), h, reverse)
	mustT(t, err)
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		ks = append(ks, string(it.Key()))
		vs = append(vs, bytes.Clone(it.Value()))
	}
	mustT(t, it.Error())
	return ks, vs
}

// TestChunked16MiB: a 16 MiB value, four times what one TiKV write
// request may carry, is written and read back whole by every read path,
// between small neighbours, with its chunks out of every scan.
func TestChunked16MiB(t *testing.T) {
	raw := mustOpen(t)
	s := kvtest.Contract(raw)
	defer s.Close()
	v := big(16<<20, 0)
	setKV(t, s, kv.TxnOptions{}, "a", []byte("small a"), "b", v, "c", []byte("small c"))
	if n := len(chunkKeys(t, raw)); n != 16 {
		t.Fatalf("%d chunk keys, want 16", n)
	}
	wantValue(t, "store", s, "b", v)
	snap, err := s.Snapshot(ctx)
	mustT(t, err)
	defer snap.Close()
	wantValue(t, "snapshot", snap, "b", v)
	for _, o := range []kv.TxnOptions{{}, {Pessimistic: true}, {Pessimistic: true, SnapshotReads: true}} {
		tx, err := s.Begin(ctx, o)
		mustT(t, err)
		wantValue(t, fmt.Sprintf("transaction %+v", o), tx, "b", v)
		tx.Rollback()
	}
	for _, reverse := range []bool{false, true} {
		ks, vs := scan(t, s, "", "", reverse)
		want := "[a b c]"
		if reverse {
			want = "[c b a]"
		}
		if fmt.Sprint(ks) != want || !bytes.Equal(vs[1], v) || string(vs[0]) != "small "+ks[0] {
			t.Fatalf("scan (reverse %v) = %v", reverse, ks)
		}
	}
	n, err := s.ApproximateSize(ctx, []byte("b"), []byte("c"))
	if err != nil || n != int64(1+len(v)) {
		t.Fatalf("ApproximateSize of b = %d, %v; want %d", n, err, 1+len(v))
	}
}

// TestChunkedOverwrite: a chunked value replaced by a small one, a shorter
// chunked one, a longer one, and deleted, in transactions that read the
// key first and in ones that write it blind: every read sees the last
// value, and no chunk outlives its value.
func TestChunkedOverwrite(t *testing.T) {
	overwrites := [][]byte{big(3<<20+1, 1), []byte("small"), big(2<<20, 2), big(4<<20+9, 3), big(chunkSize+7, 4), nil,
		big(3<<20, 5), []byte{}, big(chunkSize, 6), big(chunkSize+1, 7)}
	for _, o := range []struct {
		name string
		opts kv.TxnOptions
		read bool
	}{
		{"optimistic blind", kv.TxnOptions{}, false},
		{"optimistic after a read", kv.TxnOptions{}, true},
		{"pessimistic blind", kv.TxnOptions{Pessimistic: true}, false},
		{"pessimistic after a read", kv.TxnOptions{Pessimistic: true}, true},
		{"snapshot after a read", kv.TxnOptions{Pessimistic: true, SnapshotReads: true}, true},
	} {
		t.Run(o.name, func(t *testing.T) {
			raw := mustOpen(t)
			s := kvtest.Contract(raw)
			defer s.Close()
			write := func(v []byte) {
				t.Helper()
				tx, err := s.Begin(ctx, o.opts)
				mustT(t, err)
				defer tx.Rollback()
				if o.opts.Pessimistic {
					mustT(t, tx.LockKeys(ctx, kv.LockOptions{}, []byte("k")))
				}
				if o.read {
					_, err := tx.Get(ctx, []byte("k"))
					if err != nil && err != kv.ErrNotFound {
						t.Fatal(err)
					}
				}
				if v == nil {
					mustT(t, tx.Delete([]byte("k")))
				} else {
					mustT(t, tx.Set([]byte("k"), v))
				}
				_, err = tx.Commit(ctx, kv.Sync)
				mustT(t, err)
				wantValue(t, "after the commit", s, "k", v)
				if got, want := len(chunkKeys(t, raw)), chunkCount(v); got != want {
					t.Fatalf("%d chunk keys after writing %d bytes, want %d: %v", got, len(v), want, chunkKeys(t, raw))
				}
			}
			for _, v := range overwrites {
				write(v)
			}
		})
	}
}

// TestChunkedInTransaction: a transaction's own chunked writes are read
// back by Get, Buffered and its iterators, both ways; an iterator keeps
// the value it was opened on when the transaction writes the key again;
// several writes of one key in one transaction leave only the last one's
// chunks.
func TestChunkedInTransaction(t *testing.T) {
	raw := mustOpen(t)
	s := kvtest.Contract(raw)
	defer s.Close()
	old := big(6<<20, 10)
	setKV(t, s, kv.TxnOptions{}, "d/1", old, "d/2", []byte("two"))
	tx, err := s.Begin(ctx, kv.TxnOptions{})
	mustT(t, err)
	defer tx.Rollback()
	v := big(10<<20, 11)
	mustT(t, tx.Set([]byte("d/3"), v))
	if got, ok := tx.Buffered([]byte("d/3")); !ok || !bytes.Equal(got, v) {
		t.Fatalf("Buffered(d/3) = %d bytes, %v", len(got), ok)
	}
	wantValue(t, "own write", tx, "d/3", v)
	it, err := tx.Iter(ctx, []byte("d/"), []byte("d0"), true)
	mustT(t, err)
	defer it.Close()
	// Written after the iterator opened: not in its walk.
	mustT(t, tx.Set([]byte("d/3"), big(2<<20, 12)))
	mustT(t, tx.Set([]byte("d/1"), []byte("small now")))
	var ks []string
	for ok := it.First(); ok; ok = it.Next() {
		ks = append(ks, string(it.Key()))
		want := map[string][]byte{"d/1": old, "d/2": []byte("two"), "d/3": v}[string(it.Key())]
		if !bytes.Equal(it.Value(), want) {
			t.Fatalf("iterator at %s: %d bytes, want %d", it.Key(), len(it.Value()), len(want))
		}
	}
	mustT(t, it.Error())
	if fmt.Sprint(ks) != "[d/3 d/2 d/1]" {
		t.Fatalf("reverse walk = %v", ks)
	}
	last := big(3<<20+5, 13)
	mustT(t, tx.Set([]byte("d/3"), last))
	ks, vs := scan(t, tx, "d/", "d0", false)
	if fmt.Sprint(ks) != "[d/1 d/2 d/3]" || string(vs[0]) != "small now" || !bytes.Equal(vs[2], last) {
		t.Fatalf("forward walk = %v", ks)
	}
	_, err = tx.Commit(ctx, kv.Sync)
	mustT(t, err)
	wantValue(t, "committed", s, "d/3", last)
	wantValue(t, "committed", s, "d/1", []byte("small now"))
	if got := len(chunkKeys(t, raw)); got != 4 {
		t.Fatalf("%d chunk keys, want the 4 of d/3: %v", got, chunkKeys(t, raw))
	}
}

// TestChunkedDropRange: DropRange takes the chunks of the values in its
// range and none of those outside, also of keys that extend its bounds.
func TestChunkedDropRange(t *testing.T) {
	raw := mustOpen(t)
	s := kvtest.Contract(raw)
	defer s.Close()
	keep := map[string][]byte{"a": big(2<<20, 20), "b\x00\x01": big(2<<20, 21)}
	drop := map[string][]byte{"a\x00": big(2<<20, 22), "a\x01": big(2<<20, 23), "b": big(2<<20, 24), "b\x00": big(2<<20, 25)}
	var pairs []any
	for _, m := range []map[string][]byte{keep, drop} {
		for k, v := range m {
			pairs = append(pairs, k, v)
		}
	}
	setKV(t, s, kv.TxnOptions{}, pairs...)
	mustT(t, s.DropRange(ctx, []byte("a\x00"), []byte("b\x00\x01")))
	for k, v := range keep {
		wantValue(t, "kept", s, k, v)
	}
	for k := range drop {
		wantValue(t, "dropped", s, k, nil)
	}
	if got := len(chunkKeys(t, raw)); got != 2*len(keep) {
		t.Fatalf("%d chunk keys left, want %d", got, 2*len(keep))
	}
}

// TestChunkedConflict: two transactions writing one chunked key: the
// second to commit conflicts, on the key kv knows.
func TestChunkedConflict(t *testing.T) {
	s := mustOpen(t)
	defer s.Close()
	a, err := s.Begin(ctx, kv.TxnOptions{})
	mustT(t, err)
	defer a.Rollback()
	b, err := s.Begin(ctx, kv.TxnOptions{})
	mustT(t, err)
	defer b.Rollback()
	mustT(t, a.Set([]byte("k"), big(3<<20, 30)))
	mustT(t, b.Set([]byte("k"), big(2<<20, 31)))
	_, err = a.Commit(ctx, kv.Sync)
	mustT(t, err)
	_, err = b.Commit(ctx, kv.Sync)
	var ce *kv.ConflictError
	if !kv.IsConflict(err) {
		t.Fatalf("second commit: %v, want a conflict", err)
	}
	if errors.As(err, &ce) && ce.Key != nil && string(ce.Key) != "k" {
		t.Fatalf("conflict on %q, want k", ce.Key)
	}
	wantValue(t, "after the conflict", s, "k", big(3<<20, 30))
}

func TestEscapeKeepsOrder(t *testing.T) {
	k := newKeys("p/")
	ks := [][]byte{{}, {0}, {0, 0}, {0, 1}, {0, 0xff}, {1}, []byte("a"), []byte("a\x00"), []byte("a\x00\x00"), []byte("a\x01"), []byte("ab"), {0xff}, {0xff, 0}}
	for i := range ks {
		for j := range ks {
			ci, cj := k.chunk(ks[i], 3), k.chunk(ks[j], 0)
			if want := bytes.Compare(ks[i], ks[j]); want != 0 && bytes.Compare(ci, cj) != want {
				t.Errorf("chunks of %q and %q compare %d, keys %d", ks[i], ks[j], bytes.Compare(ci, cj), want)
			}
			lo, hi := k.chunkBounds(ks[j], nil)
			if in := bytes.Compare(ci, lo) >= 0 && (hi == nil || bytes.Compare(ci, hi) < 0); in != (bytes.Compare(ks[i], ks[j]) >= 0) {
				t.Errorf("chunk of %q in the chunk bounds from %q: %v", ks[i], ks[j], in)
			}
			lo, hi = k.chunkBounds(nil, ks[j])
			if in := bytes.Compare(ci, lo) >= 0 && bytes.Compare(ci, hi) < 0; in != (bytes.Compare(ks[i], ks[j]) < 0) {
				t.Errorf("chunk of %q in the chunk bounds below %q: %v", ks[i], ks[j], in)
			}
		}
		if owner, ok := k.chunkOwner(k.chunk(ks[i], 7)); !ok || !bytes.Equal(owner, ks[i]) {
			t.Errorf("chunkOwner of a chunk of %q = %q, %v", ks[i], owner, ok)
		}
	}
}

func TestDecodeHead(t *testing.T) {
	for _, v := range [][]byte{{}, {0}, {0, 0}, {0, 0, 5}, []byte("x")} {
		stored := encodeValue(v)
		h, err := decodeHead(stored)
		if err != nil || h.chunks != 0 || !bytes.Equal(h.value, v) {
			t.Errorf("decodeHead(encodeValue(%q)) = %+v, %v", v, h, err)
		}
	}
	h, err := decodeHead(encodeHead(3*chunkSize-1, 3))
	if err != nil || h.chunks != 3 || h.size != 3*chunkSize-1 || h.value != nil {
		t.Errorf("decodeHead of a head = %+v, %v", h, err)
	}
	for _, bad := range [][]byte{{0, 1}, {0, 1, 5}, encodeHead(chunkSize, 1), encodeHead(2*chunkSize+1, 2), append(encodeHead(3*chunkSize, 3), 0)} {
		if _, err := decodeHead(bad); err == nil {
			t.Errorf("decodeHead(%q) accepted", bad)
		}
	}
}
