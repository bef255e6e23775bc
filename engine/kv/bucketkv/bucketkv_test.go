package bucketkv

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"

	"go.uber.org/zap"

	"github.com/lethedb/lethe/engine/kv"
	"github.com/lethedb/lethe/engine/kv/kvtest"
	"github.com/lethedb/lethe/engine/kv/pebblekv"
	"github.com/lethedb/lethe/engine/kv/tikvkv"
)

var ctx = context.Background()

// letters spreads every key of the conformance suite longer than one byte
// (its keys are short strings) over 4 buckets.
func letters() Options {
	o := Options{Buckets: 4}
	for c := byte('a'); c <= 'z'; c++ {
		o.Families = append(o.Families, Family{Prefix: c, Header: 1})
	}
	return o
}

func openPebble(t *testing.T) kv.Store {
	s, err := pebblekv.Open(t.TempDir(), pebblekv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func openMock(t *testing.T) kv.Store {
	o := tikvkv.Options{}
	if os.Getenv("LETHE_TIKV_LOG") == "" {
		o.Logger = zap.NewNop()
	}
	s, err := tikvkv.OpenMock(o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func wrap(t *testing.T, s kv.Store, o Options) kv.Store {
	w, err := Open(ctx, s, o)
	if err != nil {
		t.Fatal(err)
	}
	return kvtest.Contract(w)
}

// TestConformance: the kv contract holds through the buckets, on both
// backends.
func TestConformance(t *testing.T) {
	t.Run("pebble", func(t *testing.T) {
		kvtest.Run(t, func(t *testing.T) kv.Store { return wrap(t, openPebble(t), letters()) })
	})
	t.Run("tikv-mock", func(t *testing.T) {
		kvtest.Run(t, func(t *testing.T) kv.Store { return wrap(t, openMock(t), letters()) })
	})
}

// TestSameAsUnspread: random writes, scans, seeks and range drops give the
// same keys and values through the buckets as on a plain store, with
// families of several header lengths, keys shorter than their header, and
// bounds inside and between headers, 0x00 and 0xff bytes included.
func TestSameAsUnspread(t *testing.T) {
	seed := rand.Uint64()
	if v := os.Getenv("BUCKETKV_SEED"); v != "" {
		fmt.Sscan(v, &seed)
	}
	logOps := os.Getenv("BUCKETKV_SEED") != ""
	r := rand.New(rand.NewPCG(seed, 1))
	ref := kvtest.Contract(openPebble(t))
	defer ref.Close()
	sut := wrap(t, openPebble(t), Options{Buckets: 5, Families: []Family{{'d', 3}, {'o', 1}, {'x', 2}}})
	defer sut.Close()
	alphabet := []byte{0x00, 0x01, 'c', 'd', 'o', 'x', 'y', 0xfe, 0xff}
	key := func(maxLen int) []byte {
		n := 1 + r.IntN(maxLen)
		k := make([]byte, n)
		for i := range k {
			k[i] = alphabet[r.IntN(len(alphabet))]
		}
		return k
	}
	longKey := func() []byte {
		// Longer than every header, so that it is one this package spreads.
		return append(key(3), key(4)...)[:4+r.IntN(3)]
	}
	for step := 0; step < 3000; step++ {
		switch op := r.IntN(10); {
		case op < 5:
			k, v, del := longKey(), []byte(fmt.Sprint(step)), r.IntN(4) == 0
			if logOps {
				t.Logf("%d: write %x", step, k)
			}
			for _, s := range []kv.Store{ref, sut} {
				tx, err := s.Begin(ctx, kv.TxnOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if del {
					err = tx.Delete(k)
				} else {
					err = tx.Set(k, v)
				}
				if err != nil {
					t.Fatal(err)
				}
				if _, err := tx.Commit(ctx, kv.Sync); err != nil {
					t.Fatal(err)
				}
			}
		case op < 9:
			lo, hi := key(6), key(6)
			if bytes.Compare(lo, hi) > 0 {
				lo, hi = hi, lo
			}
			switch r.IntN(5) {
			case 0:
				hi = nil
			case 1:
				// A range of one key, as a read of a document by its _id.
				lo = longKey()
				hi = append(bytes.Clone(lo), 0)
			}
			reverse := r.IntN(2) == 0
			var seek []byte
			if !reverse && r.IntN(3) == 0 {
				seek = key(6)
			}
			want := scan(t, ref, lo, hi, reverse, seek)
			if got := scan(t, sut, lo, hi, reverse, seek); got != want {
				t.Fatalf("seed %d step %d: scan [%x, %x) reverse=%v seek=%x:\n got %s\nwant %s", seed, step, lo, hi, reverse, seek, got, want)
			}
		default:
			lo, hi := key(6), key(6)
			if bytes.Compare(lo, hi) >= 0 {
				continue
			}
			if logOps {
				t.Logf("%d: drop [%x, %x)", step, lo, hi)
			}
			for _, s := range []kv.Store{ref, sut} {
				if err := s.DropRange(ctx, lo, hi); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	if got, want := scan(t, sut, []byte{0}, nil, false, nil), scan(t, ref, []byte{0}, nil, false, nil); got != want {
		t.Fatalf("seed %d: at the end:\n got %s\nwant %s", seed, got, want)
	}
}

func scan(t *testing.T, s kv.Reader, lo, hi []byte, reverse bool, seek []byte) string {
	t.Helper()
	it, err := s.Iter(ctx, lo, hi, reverse)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	var b bytes.Buffer
	ok := it.First()
	if seek != nil {
		ok = it.SeekGE(seek)
	}
	for ; ok; ok = it.Next() {
		fmt.Fprintf(&b, "%x=%s ", it.Key(), it.Value())
	}
	if err := it.Error(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestSpreads: keys of a family land in every bucket, and are stored with
// the bucket after their header.
func TestSpreads(t *testing.T) {
	inner := openPebble(t)
	s := wrap(t, inner, Options{Buckets: 8, Families: []Family{{'o', 1}}})
	defer s.Close()
	tx, err := s.Begin(ctx, kv.TxnOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 256 {
		if err := tx.Set([]byte{'o', 0, byte(i)}, []byte{1}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := tx.Commit(ctx, kv.Sync); err != nil {
		t.Fatal(err)
	}
	seen := map[byte]int{}
	it, err := inner.Iter(ctx, []byte{'o'}, []byte{'p'}, false)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		seen[it.Key()[1]]++
	}
	if len(seen) != 8 {
		t.Fatalf("the keys landed in buckets %v, want all 8", seen)
	}
}

// TestLayoutIsKept: a store keeps the number of buckets it was created
// with, and one written unspread stays unspread.
func TestLayoutIsKept(t *testing.T) {
	dir := t.TempDir()
	p, err := pebblekv.Open(dir, pebblekv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	fam := []Family{{'o', 1}}
	if _, err := Open(ctx, p, Options{Buckets: 4, Families: fam}); err != nil {
		t.Fatal(err)
	}
	s, err := Open(ctx, p, Options{Buckets: 16, Families: fam})
	if err != nil {
		t.Fatal(err)
	}
	if n := s.(*store).l.buckets; n != 4 {
		t.Fatalf("reopened with %d buckets, want the stored 4", n)
	}
	old := openPebble(t)
	tx, _ := old.Begin(ctx, kv.TxnOptions{})
	tx.Set([]byte("o123"), []byte("v"))
	if _, err := tx.Commit(ctx, kv.Sync); err != nil {
		t.Fatal(err)
	}
	s, err = Open(ctx, old, Options{Buckets: 16, Families: fam})
	if err != nil {
		t.Fatal(err)
	}
	if v, err := s.Get(ctx, []byte("o123")); err != nil || string(v) != "v" {
		t.Fatalf("a key written unspread reads %q, %v", v, err)
	}
}

// TestSubset: a subset of the buckets reads exactly the family keys those
// buckets keep, and every key outside the families, in order, both ways
// and after a seek; Get agrees with the scans.
func TestSubset(t *testing.T) {
	o := Options{Buckets: 8, Families: []Family{{'o', 2}}}
	s := wrap(t, openPebble(t), o)
	defer s.Close()
	rng := rand.New(rand.NewPCG(7, 7))
	tx, err := s.Begin(ctx, kv.TxnOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var keys [][]byte
	for range 400 {
		k := []byte{'o', byte('a' + rng.IntN(3)), byte(rng.IntN(256)), byte(rng.IntN(256))}
		keys = append(keys, k)
	}
	// Keys outside the family, and a family key no longer than its header.
	keys = append(keys, []byte("a1"), []byte("n9"), []byte("z"), []byte{'o', 'b'})
	for _, k := range keys {
		if err := tx.Set(k, k); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := tx.Commit(ctx, kv.Sync); err != nil {
		t.Fatal(err)
	}
	if n := Buckets(s); n != 8 {
		t.Fatalf("Buckets = %d, want 8", n)
	}
	keep := func(b int) bool { return b%3 == 1 }
	sub := Subset(s, keep)
	sees := func(k []byte) bool {
		b, ok := BucketOf(s, k)
		if !ok {
			return !(len(k) > 0 && k[0] == 'o') // header-only family keys are in no bucket
		}
		return keep(b)
	}
	// The values are the keys: the expected walk is the whole store's,
	// filtered.
	keysOf := func(r kv.Reader, lo, hi []byte, reverse bool, seek []byte) (out []string) {
		it, err := r.Iter(ctx, lo, hi, reverse)
		if err != nil {
			t.Fatal(err)
		}
		defer it.Close()
		ok := it.First()
		if seek != nil {
			ok = it.SeekGE(seek)
		}
		for ; ok; ok = it.Next() {
			if !bytes.Equal(it.Key(), it.Value()) {
				t.Fatalf("key %x has value %x", it.Key(), it.Value())
			}
			out = append(out, fmt.Sprintf("%x", it.Key()))
		}
		if err := it.Error(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	want := func(lo, hi []byte, reverse bool, seek []byte) string {
		var out []string
		for _, h := range keysOf(s, lo, hi, reverse, seek) {
			var k []byte
			fmt.Sscanf(h, "%x", &k)
			if sees(k) {
				out = append(out, h)
			}
		}
		return fmt.Sprint(out)
	}
	for _, r := range []struct{ lo, hi, seek []byte }{
		{nil, nil, nil},
		{[]byte("o"), []byte("p"), nil},
		{[]byte("oa\x40"), []byte("oc\x10"), nil},
		{[]byte("ob"), []byte("oc"), []byte("ob\x80")},
		{[]byte("a"), []byte("oa\x80"), nil},
	} {
		for _, reverse := range []bool{false, true} {
			seek := r.seek
			if reverse {
				seek = nil
			}
			got, exp := fmt.Sprint(keysOf(sub, r.lo, r.hi, reverse, seek)), want(r.lo, r.hi, reverse, seek)
			if got != exp {
				t.Errorf("[%q, %q) reverse=%v seek=%q:\n got %s\nwant %s", r.lo, r.hi, reverse, seek, got, exp)
			}
			if got == "[]" && r.lo == nil {
				t.Errorf("the subset saw nothing")
			}
		}
	}
	for _, k := range keys {
		_, err := sub.Get(ctx, k)
		if found := err == nil; found != sees(k) {
			t.Errorf("Get(%x) found=%v, want %v (%v)", k, found, sees(k), err)
		}
	}
	if got := Subset(openPebble(t), keep); got == nil {
		t.Fatal("Subset of an unspread store is nil")
	}
}
