#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "internal.h"
#include "wms/sys/alloc.h"

static void *std_malloc(size_t n, void *ctx) { (void)ctx; return malloc(n); }
static void *std_realloc(void *p, size_t n, void *ctx) { (void)ctx; return realloc(p, n); }
static void std_free(void *p, void *ctx) { (void)ctx; free(p); }

static wms_allocator alloc = { std_malloc, std_realloc, std_free, NULL };

wms_status wms_set_allocator(const wms_allocator *a)
{
	if (!a) {
		alloc.malloc_fn = std_malloc;
		alloc.realloc_fn = std_realloc;
		alloc.free_fn = std_free;
		alloc.ctx = NULL;
		return WMS_OK;
	}
	if (!a->malloc_fn || !a->realloc_fn || !a->free_fn)
		return WMS_ERR_INVALID_ARG;
	alloc = *a;
	return WMS_OK;
}

void *wms__malloc(size_t n) { return alloc.malloc_fn(n ? n : 1, alloc.ctx); }
void *wms__realloc(void *p, size_t n) { return alloc.realloc_fn(p, n ? n : 1, alloc.ctx); }
void wms__free(void *p)
{
	if (p)
		alloc.free_fn(p, alloc.ctx);
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

void wms__strlcpy(char *dst, const char *src, size_t size)
{
	size_t n;
	if (!size)
		return;
	n = src ? strlen(src) : 0;
	if (n >= size)
		n = size - 1;
	if (n)
		memcpy(dst, src, n);
	dst[n] = '\0';
}

wms_status wms__buf_append(wms__buf *b, const void *data, size_t len)
{
	if (len > SIZE_MAX - b->len - 1)
		return WMS_ERR_NOMEM;
	if (b->len + len + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		char *p;
		while (cap < b->len + len + 1)
			cap = cap > SIZE_MAX / 2 ? b->len + len + 1 : cap * 2;
		p = wms__realloc(b->data, cap);
		if (!p)
			return WMS_ERR_NOMEM;
		b->data = p;
		b->cap = cap;
	}
	if (len)
		memcpy(b->data + b->len, data, len);
	b->len += len;
	b->data[b->len] = '\0';
	return WMS_OK;
}

void wms__buf_free(wms__buf *b)
{
	if (!b)
		return;
	wms__free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}

uint64_t wms__now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
