/* UTF-8, strictly: no overlongs, surrogates or code points past U+10FFFF.
 * Never installed. */
#ifndef WMS_UTIL_UTF8_H
#define WMS_UTIL_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* Decode one UTF-8 sequence at s (NUL-terminated, or with the rest of the
 * sequence readable) into *cp. Returns its length, 0 when malformed. */
size_t wms__utf8_decode(const unsigned char *s, uint32_t *cp);

/* The length of s[0..n) without a UTF-8 character cut short at its end. */
size_t wms__utf8_whole(const char *s, size_t n);

/* Whether s is valid UTF-8 without control characters (C0, DEL, C1). */
int wms__utf8_text_ok(const char *s);

#endif
