/*
 * The tests' one way of running out of memory: a counting allocator for
 * wms_set_allocator() (or wms_global_init(), which routes libxml2 and
 * libcurl through it too). It counts what it is asked for and the blocks
 * still live, and fails the fail_at-th counted event (0: none), or every
 * one from there on when `sticky`, so that a test can fail each allocation
 * of an operation in turn and check that nothing leaks. A step that does
 * not allocate can be failed in the same count with count_alloc_fails()
 * (e.g. a buffer append wrapped at link time). Thread-safe.
 */
#ifndef WMS_TEST_COUNT_ALLOC_H
#define WMS_TEST_COUNT_ALLOC_H

#include <stdatomic.h>
#include "wms/sys/alloc.h"

typedef struct count_alloc {
	atomic_long calls;   /* events counted so far */
	atomic_long fail_at; /* the counted one that fails; 0: none */
	atomic_int sticky;   /* fail every counted one from fail_at on */
	atomic_long failed;  /* events failed so far */
	atomic_long live;    /* blocks handed out and not yet freed */
	atomic_long live_bytes; /* their sizes (with headers only) */
	/* Blocks carry a header, checked when they come back: a block that
	 * did not come from this allocator, or comes back twice, aborts.
	 * Only for an allocator installed before anything was allocated (as
	 * wms_global_init does). Set before installing. */
	int headers;
	/* Optional: whether this allocation counts (NULL: every one does);
	 * one that does not is still made and tracked as live. */
	int (*counts)(void *payload);
	void *counts_payload;
} count_alloc;

/* The hooks for wms_set_allocator(), with `a` as their payload. */
wms_allocator count_alloc_hooks(count_alloc *a);

/* Start counting afresh (calls and failed to 0), failing the fail_at-th
 * event (0: none), and every later one too when `sticky`. */
void count_alloc_arm(count_alloc *a, long fail_at, int sticky);

/* Count one event that is not an allocation; 1 when it is to fail. */
int count_alloc_fails(count_alloc *a);

/* A cmocka teardown for a test that installed a count_alloc: the C
 * library's allocator back, even after a failure (whatever the failed test
 * left allocated is never freed); 0, or -1 when libwms refuses. */
int count_alloc_teardown(void **state);

#endif
