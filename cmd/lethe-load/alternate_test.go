package main

import (
	"fmt"
	"testing"
)

// With as many rounds as variants, and an even number of them, each
// variant must come once in each place and right after each other variant
// once: what makes alternating rounds fair to all.
func TestRoundOrderBalanced(t *testing.T) {
	for _, n := range []int{2, 4, 6} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			place := make(map[[2]int]int)
			after := make(map[[2]int]int)
			for r := range n {
				order := roundOrder(r, n)
				if len(order) != n {
					t.Fatalf("round %d: order %v has %d variants, want %d", r, order, len(order), n)
				}
				for k, v := range order {
					place[[2]int{v, k}]++
					if k > 0 {
						after[[2]int{order[k-1], v}]++
					}
				}
			}
			for v := range n {
				for k := range n {
					if c := place[[2]int{v, k}]; c != 1 {
						t.Errorf("variant %d in place %d %d times, want once", v, k, c)
					}
					if c := after[[2]int{k, v}]; k != v && c != 1 {
						t.Errorf("variant %d right after %d %d times, want once", v, k, c)
					}
				}
			}
		})
	}
}

func TestRoundOrderOdd(t *testing.T) {
	for r := range 3 {
		seen := make(map[int]bool)
		for _, v := range roundOrder(r, 3) {
			seen[v] = true
		}
		if len(seen) != 3 {
			t.Errorf("round %d: order %v does not hold each of 3 variants once", r, roundOrder(r, 3))
		}
	}
}
