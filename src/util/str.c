#include <string.h>
#include "util/alloc.h"
#include "util/str.h"
#include "util/utf8.h"

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

char *wms__join3(const char *a, const char *b, const char *c)
{
	size_t na = strlen(a), nb = strlen(b), nc = strlen(c);
	char *s = wms__malloc(na + nb + nc + 1);
	if (!s)
		return NULL;
	memcpy(s, a, na);
	memcpy(s + na, b, nb);
	memcpy(s + na + nb, c, nc + 1);
	return s;
}
