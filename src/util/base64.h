/* Base64 (RFC 4648, standard alphabet, padded) on OpenSSL's codec. Never
 * installed. */
#ifndef WMS_UTIL_BASE64_H
#define WMS_UTIL_BASE64_H

#include <stddef.h>
#include "util/buf.h"

/* The encoded length of n bytes (without the NUL). */
size_t wms__base64_len(size_t n);

/* OpenSSL's codec takes an int length: the bytes go through it this many
 * at a time (a multiple of 3; the text, 4/3 of it), so any length works. */
#define WMS__BASE64_CHUNK ((size_t)3 << 20)

/* Encode n bytes into out (room for wms__base64_len(n) + 1: NUL-terminated).
 * WMS_ERR_INVALID_ARG when out is too small. */
wms_status wms__base64_encode(char *out, size_t size, const void *in, size_t n);

/* Why a decode failed (see wms__base64_decode). */
typedef enum wms__base64_error {
	WMS__B64_OK = 0,
	WMS__B64_MISPLACED_PAD, /* '=' before the last two places of the last group */
	WMS__B64_BAD_CHAR,      /* not in the alphabet (or after the padding) */
	WMS__B64_LENGTH         /* not a whole number of 4-character groups */
} wms__base64_error;

/* Decode s[0..n), strictly: XML white space (space, tab, CR, LF) anywhere is
 * skipped, '=' pads only the end. The bytes are appended to `out`.
 * WMS_OK; WMS_ERR_INVALID_ARG with *why (and *at, the offset in s of the
 * offending character; n for LENGTH); WMS_ERR_NOMEM. */
wms_status wms__base64_decode(wms__buf *out, const char *s, size_t n, wms__base64_error *why,
			      size_t *at);

#endif
