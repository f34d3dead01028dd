#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "internal.h"
#include "wms/sys/alloc.h"

static void *std_malloc(size_t n, void *ctx) { (void)ctx; return malloc(n); }
static void *std_realloc(void *p, size_t n, void *ctx) { (void)ctx; return realloc(p, n); }
static void std_free(void *p, void *ctx) { (void)ctx; free(p); }

static wms_allocator alloc = { std_malloc, std_realloc, std_free, NULL };

/* WMS_GLOBAL_ROUTE_* that wms_global_init asked for (read by the libraries'
 * one-time set-up in soap_xml.c and transport_curl.c), and those it got:
 * once libxml2 or libcurl holds blocks from `alloc`, it must stay. */
static atomic_uint route_requested;
static atomic_uint route_active;
static atomic_int global_init_done;

static int same_allocator(const wms_allocator *a, const wms_allocator *b)
{
	return a->malloc_fn == b->malloc_fn && a->realloc_fn == b->realloc_fn &&
	       a->free_fn == b->free_fn && a->ctx == b->ctx;
}

wms_status wms_set_allocator(const wms_allocator *a)
{
	static const wms_allocator std = { std_malloc, std_realloc, std_free, NULL };
	if (!a)
		a = &std;
	if (!a->malloc_fn || !a->realloc_fn || !a->free_fn)
		return WMS_ERR_INVALID_ARG;
	if (atomic_load(&route_active) && !same_allocator(a, &alloc))
		return WMS_ERR_INVALID_ARG;
	alloc = *a;
	return WMS_OK;
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

int wms__alloc_route_libxml2(void)
{
	return (atomic_load(&route_requested) & WMS_GLOBAL_ROUTE_LIBXML2) != 0;
}

int wms__alloc_route_libcurl(void)
{
	return (atomic_load(&route_requested) & WMS_GLOBAL_ROUTE_LIBCURL) != 0;
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

wms_status wms_global_options_init(wms_global_options *opts, unsigned version)
{
	if (!opts || version != WMS_GLOBAL_OPTIONS_VERSION)
		return WMS_ERR_INVALID_ARG;
	memset(opts, 0, sizeof(*opts));
	opts->version = version;
	return WMS_OK;
}

/* Too late is a misuse of the call, like a bad option: INVALID_ARG, and the
 * message says which library and why. */
wms_status wms_global_init(const wms_global_options *opts, wms_error *err)
{
	static const wms_global_options defaults = WMS_GLOBAL_OPTIONS_INIT;
	const unsigned known = WMS_GLOBAL_ROUTE_LIBXML2 | WMS_GLOBAL_ROUTE_LIBCURL;
	const wms_allocator saved = alloc;
	const wms_allocator *a;
	const char *why;
	wms_status st = WMS_OK;
	int routed = 0;

	wms_error_clear(err);
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
	if ((opts->route & WMS_GLOBAL_ROUTE_LIBXML2) && (why = wms__xml_route_obstacle()) != NULL)
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "too late to route libxml2's allocations: %s", why);

	if (a)
		alloc = *a;
	atomic_store(&route_requested, opts->route);
	if (opts->route & WMS_GLOBAL_ROUTE_LIBCURL) {
		st = wms__curl_global_init(&routed);
		if (st != WMS_OK) {
			wms__fail(err, st, WMS_DELIVERY_NOT_SENT, "libcurl's global init failed");
			goto done;
		}
		if (!routed) {
			st = wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				       "too late to route libcurl's allocations: libcurl was "
				       "initialised before (by libwms or the application)");
			goto done;
		}
		atomic_fetch_or(&route_active, WMS_GLOBAL_ROUTE_LIBCURL);
	}
	if (opts->route & WMS_GLOBAL_ROUTE_LIBXML2) {
		if (!wms__xml_init_routed()) {
			st = wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				       "too late to route libxml2's allocations: another thread "
				       "initialised it meanwhile");
			goto done;
		}
		atomic_fetch_or(&route_active, WMS_GLOBAL_ROUTE_LIBXML2);
	}
done:
	if (st != WMS_OK) {
		/* Keep the allocator if a library already holds blocks from it. */
		if (!atomic_load(&route_active))
			alloc = saved;
		atomic_store(&route_requested, atomic_load(&route_active));
	}
	return st;
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

size_t wms__utf8_whole(const char *s, size_t n)
{
	size_t k = n, need;
	unsigned char c;

	/* back over up to three continuation bytes to the character's start */
	while (k > 0 && n - k < 3 && ((unsigned char)s[k - 1] & 0xC0) == 0x80)
		k--;
	if (k == 0)
		return n;
	c = (unsigned char)s[k - 1];
	if (c < 0xC0)
		return n; /* ASCII, or not UTF-8 at all: nothing to mend */
	need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
	return n - (k - 1) < need ? k - 1 : n;
}

/* Decode one UTF-8 sequence at s (strict: no overlongs, no surrogates, at
 * most U+10FFFF). Returns its length, 0 when malformed. */
size_t wms__utf8_decode(const unsigned char *s, uint32_t *cp)
{
	uint32_t c;
	size_t n, i;
	if (s[0] < 0x80) {
		*cp = s[0];
		return 1;
	} else if (s[0] >= 0xC2 && s[0] <= 0xDF) {
		c = s[0] & 0x1Fu;
		n = 2;
	} else if (s[0] >= 0xE0 && s[0] <= 0xEF) {
		c = s[0] & 0x0Fu;
		n = 3;
	} else if (s[0] >= 0xF0 && s[0] <= 0xF4) {
		c = s[0] & 0x07u;
		n = 4;
	} else {
		return 0;
	}
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xC0) != 0x80) /* also stops at the terminating NUL */
			return 0;
		c = (c << 6) | (s[i] & 0x3Fu);
	}
	if ((n == 3 && c < 0x800) || (n == 4 && (c < 0x10000 || c > 0x10FFFF)) ||
	    (c >= 0xD800 && c <= 0xDFFF))
		return 0;
	*cp = c;
	return n;
}

int wms__utf8_text_ok(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	uint32_t c = 0;
	size_t n;
	for (; *p; p += n) {
		if (!(n = wms__utf8_decode(p, &c)) || c < 0x20 || (c >= 0x7F && c <= 0x9F))
			return 0;
	}
	return 1;
}

void wms__strlcpy(char *dst, const char *src, size_t size)
{
	size_t n;
	if (!size)
		return;
	n = src ? strlen(src) : 0;
	if (n >= size)
		n = wms__utf8_whole(src, size - 1);
	if (n)
		memcpy(dst, src, n);
	dst[n] = '\0';
}

const char *wms__find(const char *p, const char *end, const char *s, size_t n)
{
	if (!n)
		return p;
	while ((size_t)(end - p) >= n) {
		const char *q = memchr(p, s[0], (size_t)(end - p) - n + 1);
		if (!q)
			return NULL;
		if (!memcmp(q, s, n))
			return q;
		p = q + 1;
	}
	return NULL;
}

wms_status wms__buf_reserve(wms__buf *b, size_t len)
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
	return WMS_OK;
}

wms_status wms__buf_append(wms__buf *b, const void *data, size_t len)
{
	wms_status rc = wms__buf_reserve(b, len);
	if (rc != WMS_OK)
		return rc;
	if (len)
		memcpy(b->data + b->len, data, len);
	b->len += len;
	b->data[b->len] = '\0';
	return WMS_OK;
}

wms_status wms__buf_printf(wms__buf *b, const char *fmt, ...)
{
	va_list ap;
	wms_status rc;
	int n;
	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return WMS_ERR_INVALID_ARG;
	if ((rc = wms__buf_reserve(b, (size_t)n)) != WMS_OK)
		return rc;
	va_start(ap, fmt);
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
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
