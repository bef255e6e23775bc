//go:build linux && cgo

package pebblekv

import "testing"

// TestMallocArenasAreBounded checks that threads allocating at once share
// at most one glibc arena per CPU (lethe_tune_malloc). Each arena keeps the
// space freed in it, so more arenas than that made the server's memory grow
// past --cache-size.
func TestMallocArenasAreBounded(t *testing.T) {
	if mallocHeaps() < 0 {
		t.Skip("not glibc: malloc_info is not there to count arenas")
	}
	mallocContend(64)
	if got, limit := mallocHeaps(), mallocArenas(); got > limit {
		t.Fatalf("64 threads allocating at once made %d malloc arenas; lethe_tune_malloc allows %d", got, limit)
	}
}
