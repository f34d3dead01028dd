/* JSON text. Never installed. */
#ifndef WMS_UTIL_JSON_H
#define WMS_UTIL_JSON_H

#include "util/buf.h"

/* Where the pieces of a JSON text go: 0, or nonzero to stop. */
typedef int (*wms__json_put)(void *payload, const char *p, size_t n);

/* The JSON string for s (quotes included), always valid JSON whatever s
 * holds: '"' and '\' escaped, \n and \t as such, other C0 controls and DEL
 * as \u00XX, and each byte that does not begin well-formed UTF-8 (no
 * overlongs, surrogates or code points past U+10FFFF) as \ufffd. Returns
 * the first nonzero of `put`, else 0. */
int wms__json_string_to(const char *s, wms__json_put put, void *payload);

/* The same appended to a buffer: WMS_OK or WMS_ERR_NOMEM. */
wms_status wms__json_string(wms__buf *b, const char *s);

#endif
