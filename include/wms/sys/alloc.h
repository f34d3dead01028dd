/*
 * libwms - the allocation seam (less stable than the rest of the API).
 *
 * Every allocation libwms makes goes through these functions. Install a
 * custom allocator before creating any client or breaker, and do not change
 * it while any object is alive. Not thread-safe.
 */
#ifndef WMS_SYS_ALLOC_H
#define WMS_SYS_ALLOC_H

#include "../common.h"
#include "../errors.h"

WMS_BEGIN_DECL

typedef struct wms_allocator {
	void *(*malloc_fn)(size_t size, void *ctx);
	void *(*realloc_fn)(void *ptr, size_t size, void *ctx);
	void (*free_fn)(void *ptr, void *ctx);
	void *ctx;
} wms_allocator;

/** Install `a` (copied), or the C library's allocator when NULL. */
WMS_EXTERN(wms_status) wms_set_allocator(const wms_allocator *a);

WMS_END_DECL

#endif
