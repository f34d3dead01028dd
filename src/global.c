/* Process-wide set-up: the allocator, and the backends routed through it. */
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>
#include "init.h"
#include "internal.h"
#include "wms/sys/alloc.h"

/* The backends wms_global_init can route through the seam, in the order it
 * sets them up: each one's set-up, what stops it from being routed before
 * anything changes (NULL: found out by its set-up), and what to say when
 * its set-up ran but did not route it. */
typedef struct backend_init {
	unsigned route;
	const char *(*obstacle)(void);
	wms_status (*init)(int *routed);
	const char *init_failed;
	const char *not_routed;
} backend_init;

static const backend_init init_fns[] = {
	{ WMS_GLOBAL_ROUTE_LIBCURL, NULL, wms__curl_global_init, "libcurl's global init failed",
	  "too late to route libcurl's allocations: libcurl was initialised before (by libwms "
	  "or the application)" },
	{ WMS_GLOBAL_ROUTE_LIBXML2, wms__xml_route_obstacle, wms__xml_global_init,
	  "libxml2's set-up failed",
	  "too late to route libxml2's allocations: another thread initialised it meanwhile" },
};

#define N_INIT_FNS (sizeof(init_fns) / sizeof(init_fns[0]))

static atomic_int global_init_done;

wms_status wms_set_allocator(const wms_allocator *a)
{
	return wms__alloc_install(a);
}

wms_status wms_global_options_init(wms_global_options *opts, unsigned version)
{
	if (!opts || version != WMS_GLOBAL_OPTIONS_VERSION)
		return WMS_ERR_INVALID_ARG;
	memset(opts, 0, sizeof(*opts));
	opts->version = version;
	return WMS_OK;
}

static const char *route_name(unsigned route)
{
	return route == WMS_GLOBAL_ROUTE_LIBXML2 ? "libxml2" : "libcurl";
}

/* Too late is a misuse of the call, like a bad option: INVALID_ARG, and the
 * message says which library and why. */
wms_status wms_global_init(const wms_global_options *opts, wms_error *err)
{
	static const wms_global_options defaults = WMS_GLOBAL_OPTIONS_INIT;
	const wms_allocator saved = wms__alloc_current();
	unsigned known = 0;
	const wms_allocator *a;
	const char *why;
	wms_status st = WMS_OK;
	size_t i;

	wms_error_clear(err);
	for (i = 0; i < N_INIT_FNS; i++)
		known |= init_fns[i].route;
	if (!opts)
		opts = &defaults;
	if (opts->version != WMS_GLOBAL_OPTIONS_VERSION)
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "wms_global_options: unknown version %u", opts->version);
	if (opts->route & ~known)
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "wms_global_options: unknown route flags 0x%x",
				 opts->route & ~known);
	a = opts->allocator;
	if (a && (!a->malloc_fn || !a->realloc_fn || !a->free_fn))
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "wms_global_options: the allocator needs malloc_fn, realloc_fn "
				 "and free_fn");
	if (atomic_exchange(&global_init_done, 1))
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "too late: wms_global_init was called before (it is one-shot)");
	/* Checked before anything changes: libcurl's init cannot be undone. */
	for (i = 0; i < N_INIT_FNS; i++)
		if ((opts->route & init_fns[i].route) && init_fns[i].obstacle &&
		    (why = init_fns[i].obstacle()) != NULL)
			return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
					 "too late to route %s's allocations: %s",
					 route_name(init_fns[i].route), why);

	if (a)
		wms__alloc_restore(a); /* nothing is routed yet: no check to make */
	wms__alloc_routes_request(opts->route);
	for (i = 0; i < N_INIT_FNS && st == WMS_OK; i++) {
		int routed = 0;
		if (!(opts->route & init_fns[i].route))
			continue;
		st = init_fns[i].init(&routed);
		if (st != WMS_OK)
			wms__fail(err, st, WMS_DELIVERY_NOT_SENT, "%s", init_fns[i].init_failed);
		else if (!routed)
			st = wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT, "%s",
				       init_fns[i].not_routed);
		else
			wms__alloc_routes_activate(init_fns[i].route);
	}
	if (st != WMS_OK) {
		/* Keep the allocator if a library already holds blocks from it. */
		if (!wms__alloc_routes_active())
			wms__alloc_restore(&saved);
		wms__alloc_routes_request(wms__alloc_routes_active());
	}
	return st;
}
