/* A growable byte buffer, allocated through the seam. Never installed. */
#ifndef WMS_UTIL_BUF_H
#define WMS_UTIL_BUF_H

#include <stddef.h>
#include "wms/errors.h"

/* NUL-terminated when non-empty; { 0 } is an empty buffer. */
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

#endif
