/* libwms internals shared across src/. Never installed. */
#ifndef WMS_INTERNAL_H
#define WMS_INTERNAL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
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

/* Copy a string into a fixed field, truncating, always NUL-terminated; a
 * cut never leaves half a UTF-8 character at the end. */
void wms__strlcpy(char *dst, const char *src, size_t size);

/* The length of s[0..n) without a UTF-8 character cut short at its end. */
size_t wms__utf8_whole(const char *s, size_t n);

/* Decode one UTF-8 sequence at s (NUL-terminated; strict: no overlongs,
 * surrogates or code points past U+10FFFF) into *cp. Returns its length,
 * 0 when malformed. */
size_t wms__utf8_decode(const unsigned char *s, uint32_t *cp);

/* Whether s is valid UTF-8 (no overlongs, surrogates or code points past
 * U+10FFFF) without control characters (C0, DEL, C1). */
int wms__utf8_text_ok(const char *s);

/* The first n bytes equal to s in [p, end), or NULL (n == 0: p). */
const char *wms__find(const char *p, const char *end, const char *s, size_t n);

/* A growable byte buffer (NUL-terminated when non-empty). */
typedef struct wms__buf {
	char *data;
	size_t len;
	size_t cap;
} wms__buf;

wms_status wms__buf_append(wms__buf *b, const void *data, size_t len);
/* Room for `len` more bytes (and the NUL) without growing again. */
wms_status wms__buf_reserve(wms__buf *b, size_t len);
void wms__buf_free(wms__buf *b);
/* Append printf-style text, whatever its length (never cut). */
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
wms_status wms__buf_printf(wms__buf *b, const char *fmt, ...);

/* A SOAP fault code (prefix stripped) that rejects the request itself:
 * Client/Sender and the envelope-level codes. Anything else - Server,
 * Receiver, an empty or unknown code - is the WMS's trouble. */
int wms__fault_is_request_error(const char *code);

/* Monotonic clock, nanoseconds. */
uint64_t wms__now_ns(void);

/* ---- libxml2 and libcurl through the seam (wms_global_init, alloc.c) ---- */

/* The functions handed to xmlMemSetup and curl_global_init_mem: the
 * installed allocator, like wms__malloc & co. (signatures fit both). */
void *wms__lib_malloc(size_t n);
void *wms__lib_calloc(size_t count, size_t n);
void *wms__lib_realloc(void *p, size_t n);
void wms__lib_free(void *p);
char *wms__lib_strdup(const char *s);

/* Whether wms_global_init asked to route libxml2 / libcurl; read by their
 * one-time set-up. */
int wms__alloc_route_libxml2(void);
int wms__alloc_route_libcurl(void);

/* Allocations of libxml2's and libcurl's that failed on this thread so far:
 * compare before and after a library call that cannot report one. */
unsigned long wms__alloc_lib_failures(void);

/* 1 if a wms__lib_* allocation happened between begin and end (one thread). */
void wms__alloc_probe_begin(void);
int wms__alloc_probe_end(void);

/* soap_xml.c: NULL while libxml2's allocator can still be switched, else why not. */
const char *wms__xml_route_obstacle(void);
/* soap_xml.c: run libxml2's one-time set-up now; 1 if it routed libxml2. */
int wms__xml_init_routed(void);

/* transport_curl.c: wms_curl_transport_new keeping up to max_idle idle
 * handles (keep-alive connections); 0 = 8. */
struct wms_transport;
wms_status wms__curl_transport_new(struct wms_transport **out, size_t max_idle);

/* transport_curl.c: run libcurl's one-time global init now; *routed: whether
 * libcurl took the wms__lib_* functions. */
wms_status wms__curl_global_init(int *routed);

#endif
