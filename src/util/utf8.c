#include "util/utf8.h"

size_t wms__utf8_decode(const unsigned char *s, uint32_t *cp)
{
	uint32_t c;
	size_t n, i;
	if (s[0] < 0x80) {
		*cp = s[0];
		return 1;
	} else if (s[0] >= 0xC2 && s[0] <= 0xDF) {
		c = s[0] & 0x1Fu;
		n = 2;
	} else if (s[0] >= 0xE0 && s[0] <= 0xEF) {
		c = s[0] & 0x0Fu;
		n = 3;
	} else if (s[0] >= 0xF0 && s[0] <= 0xF4) {
		c = s[0] & 0x07u;
		n = 4;
	} else {
		return 0;
	}
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xC0) != 0x80) /* also stops at the terminating NUL */
			return 0;
		c = (c << 6) | (s[i] & 0x3Fu);
	}
	if ((n == 3 && c < 0x800) || (n == 4 && (c < 0x10000 || c > 0x10FFFF)) ||
	    (c >= 0xD800 && c <= 0xDFFF))
		return 0;
	*cp = c;
	return n;
}

size_t wms__utf8_whole(const char *s, size_t n)
{
	size_t k = n, need;
	unsigned char c;

	/* back over up to three continuation bytes to the character's start */
	while (k > 0 && n - k < 3 && ((unsigned char)s[k - 1] & 0xC0) == 0x80)
		k--;
	if (k == 0)
		return n;
	c = (unsigned char)s[k - 1];
	if (c < 0xC0)
		return n; /* ASCII, or not UTF-8 at all: nothing to mend */
	need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
	return n - (k - 1) < need ? k - 1 : n;
}

int wms__utf8_text_ok(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	uint32_t c = 0;
	size_t n;
	for (; *p; p += n) {
		if (!(n = wms__utf8_decode(p, &c)) || c < 0x20 || (c >= 0x7F && c <= 0x9F))
			return 0;
	}
	return 1;
}
