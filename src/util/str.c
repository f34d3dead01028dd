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

/* ASCII only, in either style: every system a prefix may reach (Prometheus,
 * OpenTelemetry, StatsD and Graphite servers) takes ASCII letters, and
 * which other characters are letters is not worth deciding here. */
size_t wms__metric_span(const char *s, wms__metric_style style)
{
	size_t i;
	for (i = 0; s[i]; i++) {
		char c = s[i];
		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':')
			continue;
		if (c >= '0' && c <= '9' && (i > 0 || style == WMS__METRIC_DOTTED))
			continue;
		if ((c == '.' || c == '-') && style == WMS__METRIC_DOTTED)
			continue;
		break;
	}
	return i;
}

size_t wms__url_bad_byte(const char *p, size_t n)
{
	size_t i;
	for (i = 0; i < n; i++)
		if ((unsigned char)p[i] <= 0x20 || p[i] == 0x7f)
			return i;
	return n;
}
