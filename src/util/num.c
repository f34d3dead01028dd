#include <string.h>
#include "util/num.h"

int wms__parse_uint(const char *s, size_t n, uint64_t lo, uint64_t hi, uint64_t *out)
{
	uint64_t v = 0;
	int over = 0;
	size_t i;

	if (!s || !n)
		return WMS__NUM_NOT_DIGITS;
	for (i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return WMS__NUM_NOT_DIGITS;
	for (i = 0; i < n && !over; i++) {
		unsigned c = (unsigned)(s[i] - '0');
		if (v > (UINT64_MAX - c) / 10)
			over = 1;
		else
			v = v * 10 + c;
	}
	if (over || v < lo || v > hi)
		return WMS__NUM_RANGE;
	*out = v;
	return WMS__NUM_OK;
}

int wms__parse_uint_str(const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
	return wms__parse_uint(s, s ? strlen(s) : 0, lo, hi, out);
}

size_t wms__format_uint(char *out, uint64_t v, unsigned min_digits)
{
	char tmp[WMS__UINT_TEXT_MAX - 1];
	size_t n = 0, i;
	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	if (min_digits > sizeof(tmp))
		min_digits = sizeof(tmp);
	while (n < min_digits)
		tmp[n++] = '0';
	for (i = 0; i < n; i++)
		out[i] = tmp[n - 1 - i];
	out[n] = '\0';
	return n;
}
