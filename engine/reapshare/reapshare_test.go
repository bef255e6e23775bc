package reapshare

import (
	"fmt"
	"testing"
)

func TestPlan(t *testing.T) {
	const now, exp = 1000, 4000
	live := []string{"a", "b", "c"}
	cur := []Lease{
		{},                           // 0: free, a's: a takes it
		{},                           // 1: free, b's: a leaves it
		{Holder: "a", Expires: 2000}, // 2: a holds c's slot: hands it to c
		{Holder: "a", Expires: 2000}, // 3: a holds its own: renews
		{Holder: "b", Expires: 2000}, // 4: b holds b's: left alone
		{Holder: "d", Expires: 900},  // 5: run out, c's: left to c
		{Holder: "d", Expires: 1000}, // 6: run out at now, a's: a takes it
		{Holder: "c", Expires: 2000}, // 7: c holds b's: left to c to hand over
	}
	writes, held := Plan(cur, "a", live, now, exp)
	want := map[int]Lease{0: {"a", exp}, 2: {"c", exp}, 3: {"a", exp}, 6: {"a", exp}}
	if fmt.Sprint(writes) != fmt.Sprint(want) {
		t.Errorf("writes = %v, want %v", writes, want)
	}
	if got := fmt.Sprint(held); got != "[true false false true false false true false]" {
		t.Errorf("held = %s", got)
	}
	// A server the roster no longer lists hands everything over, and with
	// nobody live, frees it.
	writes, held = Plan([]Lease{{"a", 2000}, {"a", 2000}}, "a", []string{"b"}, now, exp)
	if fmt.Sprint(writes) != fmt.Sprint(map[int]Lease{0: {"b", exp}, 1: {"b", exp}}) || held[0] || held[1] {
		t.Errorf("off the roster: writes %v, held %v", writes, held)
	}
	writes, _ = Plan([]Lease{{"a", 2000}}, "a", nil, now, exp)
	if fmt.Sprint(writes) != fmt.Sprint(map[int]Lease{0: {}}) {
		t.Errorf("nobody live: writes %v", writes)
	}
}
