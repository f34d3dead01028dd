/* The allocation seam: everything in libwms allocates through these, and
 * libxml2 and libcurl may too (wms_global_init). The base of the tree: it
 * knows nothing of what allocates through it. Never installed. */
#ifndef WMS_UTIL_ALLOC_H
#define WMS_UTIL_ALLOC_H

#include <stddef.h>
#include "wms/sys/alloc.h"

void *wms__malloc(size_t n);
void *wms__calloc(size_t count, size_t n);
void *wms__realloc(void *p, size_t n);
void wms__free(void *p);
char *wms__strdup(const char *s);
char *wms__strndup(const char *s, size_t n);
/* Wipe a secret's bytes, then free it (NULL-safe). */
void wms__free_secret(char *p);

/* Install `a` (NULL: malloc, realloc and free). INVALID_ARG without its
 * three functions, or once a library holds blocks from the installed one
 * and `a` is another (wms__alloc_routes_active). */
wms_status wms__alloc_install(const wms_allocator *a);
/* The installed allocator, to put back with wms__alloc_restore. */
wms_allocator wms__alloc_current(void);
void wms__alloc_restore(const wms_allocator *a);

/* The WMS_GLOBAL_ROUTE_* flags wms_global_init asked for (read by each
 * library's one-time set-up) and those it got: once a library holds blocks
 * from the installed allocator, that allocator must stay. */
void wms__alloc_routes_request(unsigned routes);
unsigned wms__alloc_routes_requested(void);
void wms__alloc_routes_activate(unsigned routes);
unsigned wms__alloc_routes_active(void);
int wms__alloc_route_libxml2(void);
int wms__alloc_route_libcurl(void);

/* The functions handed to xmlMemSetup and curl_global_init_mem: the
 * installed allocator, like wms__malloc & co. (signatures fit both). */
void *wms__lib_malloc(size_t n);
void *wms__lib_calloc(size_t count, size_t n);
void *wms__lib_realloc(void *p, size_t n);
void wms__lib_free(void *p);
char *wms__lib_strdup(const char *s);

/* Allocations of libxml2's and libcurl's that failed on this thread so far:
 * compare before and after a library call that cannot report one. */
unsigned long wms__alloc_lib_failures(void);

/* 1 if a wms__lib_* allocation happened between begin and end (one thread). */
void wms__alloc_probe_begin(void);
int wms__alloc_probe_end(void);

#endif
