/* Numbers in text. Never installed. */
#ifndef WMS_UTIL_NUM_H
#define WMS_UTIL_NUM_H

#include <stddef.h>
#include <stdint.h>

enum {
	WMS__NUM_OK = 0,
	WMS__NUM_NOT_DIGITS = -1, /* empty, or a byte that is not 0-9 (a sign, a blank) */
	WMS__NUM_RANGE = -2       /* digits, but below lo or above hi (or past 2^64) */
};

/* The unsigned decimal integer s[0..n): plain digits only, as strtoul does
 * not check (no blanks, no sign, no wrap of "-1"), within [lo, hi]. Leading
 * zeros are the caller's to refuse. *out is set on WMS__NUM_OK only. */
int wms__parse_uint(const char *s, size_t n, uint64_t lo, uint64_t hi, uint64_t *out);

/* The same for a NUL-terminated string (NULL: not digits). */
int wms__parse_uint_str(const char *s, uint64_t lo, uint64_t hi, uint64_t *out);

/* v in decimal, zero-padded to at least min_digits (at most 20), into out
 * (WMS__UINT_TEXT_MAX bytes or more) with a NUL; returns the digits
 * written. What snprintf's "%0*llu" writes, without its cost on a path run
 * for every call. */
#define WMS__UINT_TEXT_MAX 21
size_t wms__format_uint(char *out, uint64_t v, unsigned min_digits);

#endif
