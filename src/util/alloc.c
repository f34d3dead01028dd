#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "util/alloc.h"

static void *std_malloc(size_t n, void *ctx) { (void)ctx; return malloc(n); }
static void *std_realloc(void *p, size_t n, void *ctx) { (void)ctx; return realloc(p, n); }
static void std_free(void *p, void *ctx) { (void)ctx; free(p); }

static const wms_allocator std_alloc = { std_malloc, std_realloc, std_free, NULL };
static wms_allocator alloc = { std_malloc, std_realloc, std_free, NULL };

static atomic_uint routes_requested;
static atomic_uint routes_active;

static int same_allocator(const wms_allocator *a, const wms_allocator *b)
{
	return a->malloc_fn == b->malloc_fn && a->realloc_fn == b->realloc_fn &&
	       a->free_fn == b->free_fn && a->payload == b->payload;
}

wms_status wms__alloc_install(const wms_allocator *a)
{
	if (!a)
		a = &std_alloc;
	if (!a->malloc_fn || !a->realloc_fn || !a->free_fn)
		return WMS_ERR_INVALID_ARG;
	if (atomic_load(&routes_active) && !same_allocator(a, &alloc))
		return WMS_ERR_INVALID_ARG;
	alloc = *a;
	return WMS_OK;
}

wms_allocator wms__alloc_current(void)
{
	return alloc;
}

void wms__alloc_restore(const wms_allocator *a)
{
	alloc = *a;
}

void wms__alloc_routes_request(unsigned routes)
{
	atomic_store(&routes_requested, routes);
}

unsigned wms__alloc_routes_requested(void)
{
	return atomic_load(&routes_requested);
}

void wms__alloc_routes_activate(unsigned routes)
{
	atomic_fetch_or(&routes_active, routes);
}

unsigned wms__alloc_routes_active(void)
{
	return atomic_load(&routes_active);
}

int wms__alloc_route_libxml2(void)
{
	return (atomic_load(&routes_requested) & WMS_GLOBAL_ROUTE_LIBXML2) != 0;
}

int wms__alloc_route_libcurl(void)
{
	return (atomic_load(&routes_requested) & WMS_GLOBAL_ROUTE_LIBCURL) != 0;
}

void *wms__malloc(size_t n) { return alloc.malloc_fn(n ? n : 1, alloc.payload); }
void *wms__realloc(void *p, size_t n) { return alloc.realloc_fn(p, n ? n : 1, alloc.payload); }
void wms__free(void *p)
{
	if (p)
		alloc.free_fn(p, alloc.payload);
}

void *wms__calloc(size_t count, size_t n)
{
	void *p;
	size_t total;
	if (n && count > SIZE_MAX / n)
		return NULL;
	total = count * n;
	if (!total)
		total = 1;
	p = wms__malloc(total);
	if (p)
		memset(p, 0, total);
	return p;
}

char *wms__strndup(const char *s, size_t n)
{
	char *d = wms__malloc(n + 1);
	if (d) {
		memcpy(d, s, n);
		d[n] = '\0';
	}
	return d;
}

char *wms__strdup(const char *s)
{
	return s ? wms__strndup(s, strlen(s)) : NULL;
}

void wms__free_secret(char *p)
{
	if (p) {
		volatile char *v = p;
		while (*v)
			*v++ = '\0';
		wms__free(p);
	}
}

/* ---- libxml2 and libcurl through the seam -------------------------------- */

/* Set while wms_global_init checks that libcurl really took the trampolines;
 * written by that one thread only, so a relaxed load costs the others nothing. */
static atomic_int probing;
static atomic_int probe_hit;

static void note_probe(void)
{
	if (atomic_load_explicit(&probing, memory_order_relaxed))
		atomic_store_explicit(&probe_hit, 1, memory_order_relaxed);
}

/* Failed library allocations on this thread: a caller can tell whether a
 * library call that cannot report one (curl_easy_reset) had one. */
static _Thread_local unsigned long lib_failures;

static void *counted(void *p)
{
	if (!p)
		lib_failures++;
	return p;
}

unsigned long wms__alloc_lib_failures(void)
{
	return lib_failures;
}

void *wms__lib_malloc(size_t n)
{
	note_probe();
	return counted(wms__malloc(n));
}

void *wms__lib_realloc(void *p, size_t n)
{
	note_probe();
	return counted(wms__realloc(p, n));
}

void wms__lib_free(void *p)
{
	wms__free(p);
}

void *wms__lib_calloc(size_t count, size_t n)
{
	note_probe();
	return counted(wms__calloc(count, n));
}

char *wms__lib_strdup(const char *s)
{
	note_probe();
	return s ? counted(wms__strdup(s)) : NULL;
}

void wms__alloc_probe_begin(void)
{
	atomic_store(&probe_hit, 0);
	atomic_store(&probing, 1);
}

int wms__alloc_probe_end(void)
{
	atomic_store(&probing, 0);
	return atomic_load(&probe_hit);
}
