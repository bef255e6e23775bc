package pebblekv

import (
	"fmt"
	"testing"
)

// TestLockSetIndexFollowsReleases checks that a lock set's index, which
// has brings up to date lazily, forgets the keys a failed tryAdd gives
// back, whether or not the index had seen them yet.
func TestLockSetIndexFollowsReleases(t *testing.T) {
	table := newLockTable()
	other := &lockSet{t: table}
	if !other.tryAdd([][]byte{[]byte("busy")}) {
		t.Fatal("locking a free key failed")
	}
	defer other.unlockAll()
	ls := &lockSet{t: table}
	defer ls.unlockAll()
	key := func(i int) []byte { return []byte(fmt.Sprintf("k%03d", i)) }
	for i := range 30 {
		if !ls.tryAdd([][]byte{key(i)}) {
			t.Fatalf("locking free %s failed", key(i))
		}
	}
	if !ls.has(key(29)) { // builds the index over k000..k029
		t.Fatal("has(k029) is false after locking it")
	}
	// Two keys the index has not seen and one held elsewhere: all three
	// refused, the two given back.
	if ls.tryAdd([][]byte{key(30), key(31), []byte("busy")}) {
		t.Fatal("tryAdd took a key another set holds")
	}
	for i := range 32 {
		if got := ls.has(key(i)); got != (i < 30) {
			t.Fatalf("has(%s) = %v after the failed tryAdd", key(i), got)
		}
	}
	// Give back keys the index had seen: the set holds k000..k019 again.
	ls.releaseFrom(20)
	for i := range 32 {
		if got := ls.has(key(i)); got != (i < 20) {
			t.Fatalf("has(%s) = %v after releasing from 20", key(i), got)
		}
	}
	if !ls.tryAdd([][]byte{key(25)}) || !ls.has(key(25)) || ls.has(key(24)) {
		t.Fatal("a key taken again after its release is not found, or a released one is")
	}
	// What was released is free for others.
	third := &lockSet{t: table}
	if !third.tryAdd([][]byte{key(24), key(30), key(31)}) {
		t.Fatal("keys given back are still held")
	}
	third.unlockAll()
}
