package pebblekv

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestWriteSetLastWriteWins checks a write set against a map through
// random writes of repeated keys, with lookups between them: before and
// after it starts indexing, and with writes the index has not seen yet.
func TestWriteSetLastWriteWins(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 20 {
		var w writeSet
		want := map[string]string{}
		writes := 1 + rng.IntN(4*indexAfter)
		for i := range writes {
			key := fmt.Sprintf("k%02d", rng.IntN(3*indexAfter))
			value := fmt.Sprintf("v%d", i)
			w.add(pending{key: []byte(key), value: []byte(value)})
			want[key] = value
			if rng.IntN(5) == 0 {
				probe := fmt.Sprintf("k%02d", rng.IntN(3*indexAfter))
				p, ok := w.get([]byte(probe))
				if v, written := want[probe]; ok != written || ok && string(p.value) != v {
					t.Fatalf("round %d, after %d writes: get(%s) = %q, %v; want %q, %v", round, i+1, probe, p.value, ok, v, written)
				}
			}
		}
		got := map[string]string{}
		w.last(func(p pending) {
			if _, dup := got[string(p.key)]; dup {
				t.Fatalf("round %d: last visits %s twice", round, p.key)
			}
			got[string(p.key)] = string(p.value)
		})
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("round %d: last gives %v, want %v", round, got, want)
		}
		n := 0
		w.each(func(pending) { n++ })
		if n != writes {
			t.Fatalf("round %d: each visits %d writes of %d", round, n, writes)
		}
	}
}
