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

/* The bytes a metric name may hold, by the systems it is for. */
typedef enum wms__metric_style {
	/* Prometheus text: [A-Za-z_:][A-Za-z0-9_:]* */
	WMS__METRIC_PROMETHEUS,
	/* Dotted names (StatsD, Graphite, OpenTelemetry, the client's
	 * on_metric): [A-Za-z0-9_.:-]* */
	WMS__METRIC_DOTTED
} wms__metric_style;

/* The longest Prometheus prefix the health documents take (wms/health.h). */
#define WMS__PROMETHEUS_PREFIX_MAX 64

/* As strspn: how many bytes at the start of s a metric name of `style` may
 * be made of. s is such a name when s[n] is its NUL and n > 0; otherwise
 * s[n] is the first byte refused (a control byte, a space, any byte past
 * 0x7E, ...). No length bound: that is the caller's. */
size_t wms__metric_span(const char *s, wms__metric_style style);

/* The offset of the first byte in p[0, n) that no URL holds unencoded (RFC
 * 3986): a space, a control byte (a CR or LF among them) or DEL; n if none. */
size_t wms__url_bad_byte(const char *p, size_t n);

#endif
