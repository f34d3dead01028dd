/* Bounded strings and byte search. Never installed. */
#ifndef WMS_UTIL_STR_H
#define WMS_UTIL_STR_H

#include <stddef.h>

/* Copy a string into a fixed field, truncating, always NUL-terminated; a
 * cut never leaves half a UTF-8 character at the end. */
void wms__strlcpy(char *dst, const char *src, size_t size);

/* The first n bytes equal to s in [p, end), or NULL (n == 0: p). */
const char *wms__find(const char *p, const char *end, const char *s, size_t n);

/* a + b + c, freshly allocated (wms__malloc); NULL when out of memory. */
char *wms__join3(const char *a, const char *b, const char *c);

#endif
