/*
 * A counting allocator for wms_set_allocator() in tests: it counts the
 * allocations it is asked for and the blocks still live, and fails the
 * fail_at-th counted one (0: none), so that a test can fail every
 * allocation of an operation in turn and check that nothing leaks.
 */
#ifndef WMS_TEST_COUNT_ALLOC_H
#define WMS_TEST_COUNT_ALLOC_H

#include "wms/sys/alloc.h"

typedef struct count_alloc {
	long calls;   /* allocations counted so far */
	long fail_at; /* the counted one that fails; 0: none */
	long live;    /* blocks handed out and not yet freed */
	/* Optional: whether this allocation counts (NULL: every one does);
	 * one that does not is still made and tracked as live. */
	int (*counts)(void *ctx);
	void *counts_ctx;
} count_alloc;

/* The hooks for wms_set_allocator(), with `a` as their context. */
wms_allocator count_alloc_hooks(count_alloc *a);

#endif
