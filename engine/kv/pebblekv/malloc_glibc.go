//go:build linux && cgo

// This file bounds the C heap that holds pebble's block cache and
// memtables (pebble allocates them with calloc when cgo is on), so that the
// process's resident memory follows --cache-size. The constructor
// lethe_tune_malloc sets two of glibc's malloc parameters:
//
//   - At most one arena per CPU instead of eight. Each arena keeps the
//     space its freed blocks leave; with many of them, a store loading 2M
//     documents held 250-450 MiB free in arenas beside a 256 MiB cache.
//   - Allocations of 128 KiB and more always come from mmap and go back to
//     the system when freed. By default glibc raises that threshold to the
//     largest block freed so far, up to 32 MiB, so pebble's transient
//     flush and compaction buffers came from the arenas and left holes.
//
// It applies to the whole process that links this package, whichever
// store it opens. Other libcs, and builds without cgo (where pebble
// allocates from Go's heap), are left as they are.

package pebblekv

/*
#cgo LDFLAGS: -lpthread
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

// lethe_malloc_arenas is the most arenas glibc may create: one per CPU,
// and at least two.
static int lethe_malloc_arenas(void) {
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n < 2 ? 2 : (int)n;
}

// lethe_tune_malloc runs when the program is loaded, before the Go runtime
// starts its threads: glibc fixes its arena limit when a second thread
// first allocates, so a later mallopt would not bound the arenas.
__attribute__((constructor)) static void lethe_tune_malloc(void) {
#ifdef __GLIBC__
	mallopt(M_ARENA_MAX, lethe_malloc_arenas());
	mallopt(M_MMAP_THRESHOLD, 128 * 1024);
#endif
}

// lethe_malloc_heaps counts the heaps malloc_info reports: one per arena.
static int lethe_malloc_heaps(void) {
#ifdef __GLIBC__
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (f == NULL) return -1;
	malloc_info(0, f);
	fclose(f);
	int n = 0;
	for (char *p = buf; (p = strstr(p, "<heap nr=")) != NULL; p++) n++;
	free(buf);
	return n;
#else
	return -1;
#endif
}

static void *lethe_churn(void *arg) {
	(void)arg;
	for (int i = 0; i < 20000; i++) {
		void *p = malloc(64 + i % 4096);
		free(p);
	}
	return NULL;
}

// lethe_malloc_contend runs threads that allocate at once, which makes glibc
// give a thread that finds its arena locked an arena of its own.
static void lethe_malloc_contend(int threads) {
	pthread_t t[64];
	int started = 0;
	if (threads > 64) threads = 64;
	while (started < threads && pthread_create(&t[started], NULL, lethe_churn, NULL) == 0) started++;
	for (int i = 0; i < started; i++) pthread_join(t[i], NULL);
}
*/
import "C"

// mallocArenas is the most arenas glibc may create; for tests.
func mallocArenas() int { return int(C.lethe_malloc_arenas()) }

// mallocHeaps reports how many heaps (arenas) glibc's malloc has, or -1
// where that is unknown; for tests.
func mallocHeaps() int { return int(C.lethe_malloc_heaps()) }

// mallocContend makes threads allocate at once, for tests.
func mallocContend(threads int) { C.lethe_malloc_contend(C.int(threads)) }
