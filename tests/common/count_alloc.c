/* The counting allocator (see count_alloc.h). */
#include "count_alloc.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define MAGIC_LIVE 0x6c6962776d73a11cULL
#define MAGIC_DEAD 0x6c6962776d73deadULL

typedef union hdr {
	struct {
		uint64_t magic;
		size_t size;
	} h;
	max_align_t align;
} hdr;

static int fails(count_alloc *a)
{
	long n, at;
	if (a->counts && !a->counts(a->counts_payload))
		return 0;
	n = atomic_fetch_add(&a->calls, 1) + 1;
	at = atomic_load(&a->fail_at);
	if (at && (n == at || (atomic_load(&a->sticky) && n > at))) {
		atomic_fetch_add(&a->failed, 1);
		return 1;
	}
	return 0;
}

int count_alloc_fails(count_alloc *a)
{
	return fails(a);
}

void count_alloc_arm(count_alloc *a, long fail_at, int sticky)
{
	atomic_store(&a->fail_at, 0);
	atomic_store(&a->calls, 0);
	atomic_store(&a->failed, 0);
	atomic_store(&a->sticky, sticky);
	atomic_store(&a->fail_at, fail_at);
}

static hdr *header_of(void *p)
{
	hdr *h = (hdr *)p - 1;
	if (h->h.magic != MAGIC_LIVE) {
		fprintf(stderr, "count_alloc: block %p did not come from this allocator "
				"(or came back twice)\n", p);
		abort();
	}
	return h;
}

static void *ca_malloc(size_t n, void *payload)
{
	count_alloc *a = payload;
	hdr *h;
	void *p;
	if (fails(a))
		return NULL;
	if (!a->headers) {
		p = malloc(n);
	} else if (n > SIZE_MAX - sizeof(hdr) || !(h = malloc(sizeof(hdr) + n))) {
		p = NULL;
	} else {
		h->h.magic = MAGIC_LIVE;
		h->h.size = n;
		p = h + 1;
		atomic_fetch_add(&a->live_bytes, (long)n);
	}
	if (p)
		atomic_fetch_add(&a->live, 1);
	return p;
}

static void *ca_realloc(void *p, size_t n, void *payload)
{
	count_alloc *a = payload;
	hdr *h, *g;
	if (!p)
		return ca_malloc(n, payload);
	if (!a->headers)
		return fails(a) ? NULL : realloc(p, n);
	h = header_of(p);
	if (fails(a) || n > SIZE_MAX - sizeof(hdr))
		return NULL;
	h->h.magic = MAGIC_DEAD;
	{
		size_t was = h->h.size;
		g = realloc(h, sizeof(hdr) + n);
		if (!g) {
			h->h.magic = MAGIC_LIVE;
			return NULL;
		}
		atomic_fetch_add(&a->live_bytes, (long)n - (long)was);
	}
	g->h.magic = MAGIC_LIVE;
	g->h.size = n;
	return g + 1;
}

static void ca_free(void *p, void *payload)
{
	count_alloc *a = payload;
	if (!p)
		return;
	atomic_fetch_sub(&a->live, 1);
	if (a->headers) {
		hdr *h = header_of(p);
		atomic_fetch_sub(&a->live_bytes, (long)h->h.size);
		h->h.magic = MAGIC_DEAD;
		free(h);
		return;
	}
	free(p);
}

wms_allocator count_alloc_hooks(count_alloc *a)
{
	wms_allocator al = { ca_malloc, ca_realloc, ca_free, a };
	return al;
}

int count_alloc_teardown(void **state)
{
	(void)state;
	return wms_set_allocator(NULL) == WMS_OK ? 0 : -1;
}
