/* The counting allocator (see count_alloc.h). */
#include "count_alloc.h"

#include <stdlib.h>

/* Whether this allocation is the one to fail. */
static int fails(count_alloc *a)
{
	if (a->counts && !a->counts(a->counts_ctx))
		return 0;
	return ++a->calls == a->fail_at;
}

static void *ca_malloc(size_t n, void *ctx)
{
	count_alloc *a = ctx;
	void *p;
	if (fails(a))
		return NULL;
	p = malloc(n);
	if (p)
		a->live++;
	return p;
}

static void *ca_realloc(void *p, size_t n, void *ctx)
{
	if (!p)
		return ca_malloc(n, ctx);
	if (fails(ctx))
		return NULL;
	return realloc(p, n);
}

static void ca_free(void *p, void *ctx)
{
	count_alloc *a = ctx;
	if (p)
		a->live--;
	free(p);
}

wms_allocator count_alloc_hooks(count_alloc *a)
{
	wms_allocator al = { ca_malloc, ca_realloc, ca_free, a };
	return al;
}
