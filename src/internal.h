/* libwms internals shared across src/. Never installed. */
#ifndef WMS_INTERNAL_H
#define WMS_INTERNAL_H

#include <stdarg.h>
#include <stddef.h>
#include "wms/errors.h"

/* The one allocation seam: everything in libwms allocates through these
 * (issue 5 routes libxml2 and libcurl through it too and fails the N-th
 * allocation in tests). */
void *wms__malloc(size_t n);
void *wms__calloc(size_t count, size_t n);
void *wms__realloc(void *p, size_t n);
void wms__free(void *p);
char *wms__strdup(const char *s);
char *wms__strndup(const char *s, size_t n);

/* Fill `err` (may be NULL): status, delivery, one-line message (newlines
 * flattened, truncated to fit). Returns `status`. */
wms_status wms__fail(wms_error *err, wms_status status, wms_delivery delivery,
		     const char *fmt, ...)
#if defined(__GNUC__)
	__attribute__((format(printf, 4, 5)))
#endif
	;
wms_status wms__vfail(wms_error *err, wms_status status, wms_delivery delivery,
		      const char *fmt, va_list ap)
#if defined(__GNUC__)
	__attribute__((format(printf, 4, 0)))
#endif
	;

/* Copy a string into a fixed field, truncating, always NUL-terminated. */
void wms__strlcpy(char *dst, const char *src, size_t size);

/* A growable byte buffer (NUL-terminated when non-empty). */
typedef struct wms__buf {
	char *data;
	size_t len;
	size_t cap;
} wms__buf;

wms_status wms__buf_append(wms__buf *b, const void *data, size_t len);
void wms__buf_free(wms__buf *b);

/* A SOAP fault code (prefix stripped) that rejects the request itself:
 * Client/Sender and the envelope-level codes. Anything else - Server,
 * Receiver, an empty or unknown code - is the WMS's trouble. */
int wms__fault_is_request_error(const char *code);

/* Monotonic clock, nanoseconds. */
uint64_t wms__now_ns(void);

#endif
