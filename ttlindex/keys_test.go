package ttlindex

import (
	"bytes"
	"cmp"
	"math"
	"slices"
	"testing"
)

var testMillis = []int64{
	math.MinInt64, -1 << 62, -86_400_000, -1, 0, 1, 999, 1_700_000_000_000, 1 << 62, math.MaxInt64,
}

var testPKs = [][]byte{{}, {0x00}, {0x00, 0x01}, {0x7f}, {0xff, 0xff}}

type expiryKey struct {
	collID uint64
	kind   byte
	millis int64
	pk     []byte
}

func (k expiryKey) encode() []byte {
	if k.kind == KindTS {
		return AppendTSKey(nil, k.collID, k.millis, k.pk)
	}
	return AppendOwnKey(nil, k.collID, k.millis, k.pk)
}

// allKeys returns keys of both families in three collections, with every
// test time and primary key, in random order.
func allKeys() []expiryKey {
	var keys []expiryKey
	for _, coll := range []uint64{1, 2, math.MaxUint64} {
		for _, kind := range []byte{KindTS, KindOwn} {
			for _, ms := range testMillis {
				for _, pk := range testPKs {
					keys = append(keys, expiryKey{coll, kind, ms, pk})
				}
			}
		}
	}
	// Reverse so that sorting has work to do.
	slices.Reverse(keys)
	return keys
}

func TestKeyOrder(t *testing.T) {
	keys := allKeys()
	byBytes := slices.Clone(keys)
	slices.SortFunc(byBytes, func(a, b expiryKey) int { return bytes.Compare(a.encode(), b.encode()) })
	byFields := slices.Clone(keys)
	slices.SortFunc(byFields, func(a, b expiryKey) int {
		switch {
		case a.collID != b.collID:
			return cmp.Compare(a.collID, b.collID)
		case a.kind != b.kind:
			return cmp.Compare(a.kind, b.kind)
		case a.millis != b.millis:
			return cmp.Compare(a.millis, b.millis)
		}
		return bytes.Compare(a.pk, b.pk)
	})
	for i := range byBytes {
		if !bytes.Equal(byBytes[i].encode(), byFields[i].encode()) {
			t.Fatalf("position %d: byte order has %+v, field order has %+v", i, byBytes[i], byFields[i])
		}
	}
}

func TestFamilyRanges(t *testing.T) {
	keys := allKeys()
	for _, kind := range []byte{KindTS, KindOwn} {
		for _, coll := range []uint64{1, math.MaxUint64} {
			for _, upto := range testMillis {
				var lo, hi []byte
				if kind == KindTS {
					lo, hi = TSRange(coll, upto)
				} else {
					lo, hi = OwnRange(coll, upto)
				}
				for _, k := range keys {
					enc := k.encode()
					in := bytes.Compare(enc, lo) >= 0 && bytes.Compare(enc, hi) < 0
					want := k.collID == coll && k.kind == kind && k.millis <= upto
					if in != want {
						t.Errorf("range(kind %c, coll %d, upto %d) holds %+v: %v, want %v", kind, coll, upto, k, in, want)
					}
				}
			}
		}
	}
}

func TestCollRange(t *testing.T) {
	keys := allKeys()
	for _, coll := range []uint64{1, 2, math.MaxUint64} {
		lo, hi := CollRange(coll)
		for _, k := range keys {
			enc := k.encode()
			in := bytes.Compare(enc, lo) >= 0 && bytes.Compare(enc, hi) < 0
			if in != (k.collID == coll) {
				t.Errorf("CollRange(%d) holds %+v: %v", coll, k, in)
			}
		}
		// Nothing outside the expiry keys may fall in the range either.
		if bytes.Compare(hi, []byte{KeyPrefix + 1}) > 0 {
			t.Errorf("CollRange(%d) ends past the expiry keys: %x", coll, hi)
		}
	}
}

func TestParseKeyRoundTrip(t *testing.T) {
	for _, k := range allKeys() {
		collID, kind, millis, pk, err := ParseKey(k.encode())
		if err != nil {
			t.Fatalf("ParseKey(%+v): %v", k, err)
		}
		if collID != k.collID || kind != k.kind || millis != k.millis || !bytes.Equal(pk, k.pk) {
			t.Fatalf("ParseKey = %d %c %d %x, want %+v", collID, kind, millis, pk, k)
		}
	}
}

func TestAppendKeepsDst(t *testing.T) {
	dst := []byte("head")
	k := AppendTSKey(dst, 7, 5, []byte("pk"))
	if !bytes.HasPrefix(k, []byte("head")) {
		t.Fatalf("AppendTSKey lost dst: %q", k)
	}
	if _, _, _, pk, err := ParseKey(k[len(dst):]); err != nil || string(pk) != "pk" {
		t.Fatalf("ParseKey of the appended key = %q, %v", pk, err)
	}
}

func TestParseKeyErrors(t *testing.T) {
	valid := AppendOwnKey(nil, 3, 42, []byte("id"))
	tests := []struct {
		name string
		key  []byte
	}{
		{"empty", nil},
		{"short", valid[:keyHeaderLen-1]},
		{"wrong prefix", append([]byte{'d'}, valid[1:]...)},
		{"unknown kind", func() []byte { k := slices.Clone(valid); k[familyLen-1] = 'z'; return k }()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, _, _, _, err := ParseKey(tt.key); err == nil {
				t.Fatalf("ParseKey(%x) succeeded", tt.key)
			}
		})
	}
}
