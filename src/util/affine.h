/* A stack of idle items that prefers, for each thread, the item that thread
 * gave back last: a connection or workspace, and the buffers it grew, stay
 * on the thread that uses them (malloc's arenas are per thread: a buffer
 * grown on one thread and freed or regrown on another costs both), while a
 * thread with none of its own still gets the warmest item (the top).
 * Never installed. The caller holds whatever lock guards the stack. */
#ifndef WMS_UTIL_AFFINE_H
#define WMS_UTIL_AFFINE_H

#include <stddef.h>
#include <stdint.h>

typedef struct wms__affine_slot {
	void *item;
	uintptr_t owner; /* wms__thread_tag() of the thread that gave it back */
} wms__affine_slot;

/* A tag of the calling thread, distinct from every other live thread's (a
 * thread that has exited may have left its tag to a new one: a mere
 * preference then). */
uintptr_t wms__thread_tag(void);

/* Remove and return the most recent item the calling thread gave back, or
 * else the top one; NULL when *count is 0. Looks at every slot: a stack
 * is as long as the pool's max_idle at most. */
void *wms__affine_take(wms__affine_slot *slots, size_t *count);

/* Push `item` for the calling thread; the caller has checked *count < cap. */
void wms__affine_give(wms__affine_slot *slots, size_t *count, void *item);

#endif
