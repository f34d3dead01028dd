/*
 * libwms - the allocation seam (less stable than the rest of the API).
 *
 * Every allocation libwms makes goes through these functions. Install a
 * custom allocator before creating any client or breaker, and do not change
 * it while any object is alive. Not thread-safe.
 *
 * libxml2 and libcurl allocate with the C library's malloc unless the
 * process opts in, once and before anything else, with wms_global_init().
 */
#ifndef WMS_SYS_ALLOC_H
#define WMS_SYS_ALLOC_H

#include "../common.h"
#include "../errors.h"

WMS_BEGIN_DECL

typedef struct wms_allocator {
	void *(*malloc_fn)(size_t size, void *payload);
	void *(*realloc_fn)(void *ptr, size_t size, void *payload);
	void (*free_fn)(void *ptr, void *payload);
	void *payload;
} wms_allocator;

/**
 * Install `a` (copied), or the C library's allocator when NULL.
 *
 * After wms_global_init() has routed libxml2 or libcurl through the seam,
 * libxml2 and libcurl hold blocks from the installed allocator for the life
 * of the process: any other allocator is then refused with
 * WMS_ERR_INVALID_ARG (installing the same one again is a no-op).
 */
WMS_EXTERN(wms_status) wms_set_allocator(const wms_allocator *a);

/** Route libxml2's allocations (xmlMemSetup) through the seam. */
#define WMS_GLOBAL_ROUTE_LIBXML2 0x1u
/** Route libcurl's allocations (curl_global_init_mem) through the seam. */
#define WMS_GLOBAL_ROUTE_LIBCURL 0x2u

#define WMS_GLOBAL_OPTIONS_VERSION 1

typedef struct wms_global_options {
	unsigned version;
	/** Installed as by wms_set_allocator(); NULL keeps the one installed now. */
	const wms_allocator *allocator;
	/** WMS_GLOBAL_ROUTE_* flags: which libraries allocate through the seam. */
	unsigned route;
} wms_global_options;

#define WMS_GLOBAL_OPTIONS_INIT { WMS_GLOBAL_OPTIONS_VERSION, NULL, 0 }

WMS_EXTERN(wms_status) wms_global_options_init(wms_global_options *opts, unsigned version);

/**
 * Optional, one-shot process set-up: install the allocator and route the
 * libraries named in `opts->route` through it, so that every allocation made
 * on behalf of a libwms call reaches one allocator (to account for memory,
 * or to fail the N-th allocation in tests). NULL `opts`: the defaults (no
 * routing). Without this call nothing changes: libwms initialises libxml2
 * and libcurl lazily, with the C library's allocator.
 *
 * The hooks (xmlMemSetup, curl_global_init_mem) are process-global, which is
 * why this is opt-in:
 *
 * - Call it first, from one thread, before any other use of libwms, of
 *   libxml2 or of libcurl anywhere in the process, and before other threads
 *   start. Memory those libraries allocated before the switch would be freed
 *   through the new functions, so libwms refuses when it can tell it is too
 *   late, with WMS_ERR_INVALID_ARG and `err->message` naming the library:
 *   libwms has already initialised libxml2 or libcurl (any client, fixture
 *   or SOAP call does); libxml2's free, malloc or realloc is no longer the C
 *   library's (the application called xmlMemSetup); libcurl had been
 *   initialised already (curl_global_init_mem is then a silent no-op, which
 *   a probe allocation detects); or wms_global_init ran before. It cannot
 *   tell whether the application already allocated with libxml2 without
 *   calling xmlMemSetup: that is the caller's promise.
 * - The application's own libxml2 and libcurl calls are rerouted too, for
 *   the rest of the process: a slow or failing allocator affects them as
 *   well, and the allocator can no longer be changed (see
 *   wms_set_allocator). libwms never calls xmlCleanupParser() or
 *   curl_global_cleanup(); an application that calls them must do so last.
 * - libxml2's xmlInitParser() and libcurl's curl_global_init_mem()
 *   (CURL_GLOBAL_DEFAULT) run here instead of on first use; libcurl's
 *   caveat applies: before 7.84 its global init is not thread-safe.
 * - Only libxml2's and libcurl's own allocations are routed. The libraries
 *   they use (OpenSSL, nghttp2, zlib, libidn2, ...) and libyaml keep the C
 *   library's allocator. OpenSSL is left alone on purpose: it is initialised
 *   by libcurl and shared with the rest of the process, and it keeps lazily
 *   built tables for the life of the process.
 *
 * The allocator must be thread-safe (libxml2 and libcurl call it from every
 * thread that uses them, libcurl's resolver threads included), and
 * realloc_fn(NULL, n) must act as malloc_fn(n).
 *
 * Returns WMS_OK; WMS_ERR_INVALID_ARG (bad version, unknown route flag,
 * incomplete allocator, too late: see above); WMS_ERR_NOMEM or
 * WMS_ERR_INTERNAL when libcurl's global init fails. Bad options can be
 * corrected and the call repeated; any other failure uses up the one shot,
 * and leaves the previous allocator installed unless a library was routed.
 * `err` is optional.
 */
WMS_EXTERN(wms_status) wms_global_init(const wms_global_options *opts, wms_error *err);

WMS_END_DECL

#endif
