#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "internal.h"

void *wms__malloc(size_t n) { return malloc(n ? n : 1); }
void *wms__calloc(size_t count, size_t n) { return calloc(count ? count : 1, n ? n : 1); }
void *wms__realloc(void *p, size_t n) { return realloc(p, n ? n : 1); }
void wms__free(void *p) { free(p); }

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
