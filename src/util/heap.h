/* A min-heap of timers, for an event loop's many deadlines (each
 * asynchronous call's pause and guard): O(log n) to add, remove or move
 * one, O(1) to read the next. The nodes live in their owners; the heap
 * keeps each node's due time beside its pointer, four children to a
 * parent (a parent's children share a cache line, and a sift compares
 * them without reading the nodes: with a thousand calls in flight their
 * structs are far apart), and keeps each node's index for removal. */
#ifndef WMS_UTIL_HEAP_H
#define WMS_UTIL_HEAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct wms__timer {
	uint64_t due_ns; /* as set; read it, set it through the heap */
	size_t index;    /* in the heap; (size_t)-1 when not in one */
} wms__timer;

typedef struct wms__heap_slot {
	uint64_t due_ns;
	wms__timer *t;
} wms__heap_slot;

typedef struct wms__heap {
	wms__heap_slot *items;
	size_t count, cap;
} wms__heap;

#define WMS__TIMER_UNSET ((size_t)-1)

/* A node not in any heap. */
void wms__timer_init(wms__timer *t);
/* Put t in (or move it, if in) at due_ns: 0, or -1 without memory to grow
 * (t then is not in the heap). */
int wms__heap_set(wms__heap *h, wms__timer *t, uint64_t due_ns);
/* Take t out; nothing if it is not in. */
void wms__heap_remove(wms__heap *h, wms__timer *t);
/* The earliest, or NULL. */
wms__timer *wms__heap_top(const wms__heap *h);
/* Room for `n` nodes at once (so that set cannot fail below it): 0 or -1. */
int wms__heap_reserve(wms__heap *h, size_t n);
void wms__heap_free(wms__heap *h);

#endif
