#include <stdint.h>
#include <openssl/evp.h>
#include "util/alloc.h"
#include "util/base64.h"

size_t wms__base64_len(size_t n)
{
	return 4 * ((n + 2) / 3);
}

wms_status wms__base64_encode(char *out, size_t size, const void *in, size_t n)
{
	const unsigned char *p = in;
	size_t done = 0;

	if (n > (SIZE_MAX - 1) / 4 * 3 || size < wms__base64_len(n) + 1)
		return WMS_ERR_INVALID_ARG;
	out[0] = '\0';
	while (done < n) {
		size_t k = n - done < WMS__BASE64_CHUNK ? n - done : WMS__BASE64_CHUNK;
		EVP_EncodeBlock((unsigned char *)out + done / 3 * 4, p + done, (int)k);
		done += k;
	}
	return WMS_OK;
}

static int in_alphabet(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       c == '+' || c == '/';
}

wms_status wms__base64_decode(wms__buf *out, const char *s, size_t n, wms__base64_error *why,
			      size_t *at)
{
	unsigned char *packed;
	size_t i, len = 0, q = 0, pad = 0, start = out->len;
	wms_status st;
	int got;

	*why = WMS__B64_OK;
	*at = 0;
	/* Checked and packed here (EVP_DecodeBlock neither skips inner white
	 * space nor says where a bad character is), decoded there. */
	if (!(packed = wms__malloc(n + 1)))
		return WMS_ERR_NOMEM;
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == ' ' || c == '\t' || c == '\r' || c == '\n')
			continue;
		if (c == '=') {
			if (q < 2 || pad >= 2) {
				*why = WMS__B64_MISPLACED_PAD;
				goto bad;
			}
			pad++;
		} else if (!in_alphabet(c) || pad) {
			*why = WMS__B64_BAD_CHAR;
			goto bad;
		}
		packed[len++] = c;
		q = (q + 1) % 4;
	}
	if (q != 0) {
		*why = WMS__B64_LENGTH;
		i = n;
		goto bad;
	}
	st = wms__buf_reserve(out, len / 4 * 3);
	if (st != WMS_OK) {
		wms__free(packed);
		return st;
	}
	for (i = 0, got = 0; i < len && got >= 0; i += WMS__BASE64_CHUNK / 3 * 4) {
		size_t k = len - i < WMS__BASE64_CHUNK / 3 * 4 ? len - i : WMS__BASE64_CHUNK / 3 * 4;
		got = EVP_DecodeBlock((unsigned char *)out->data + start + i / 4 * 3, packed + i,
				      (int)k);
	}
	wms__free(packed);
	if (got < 0) { /* not reached: checked above */
		*why = WMS__B64_BAD_CHAR;
		out->data[start] = '\0';
		return WMS_ERR_INVALID_ARG;
	}
	/* EVP_DecodeBlock counts the padding's zero bytes too */
	out->len = start + len / 4 * 3 - pad;
	out->data[out->len] = '\0';
	return WMS_OK;
bad:
	*at = i;
	wms__free(packed);
	return WMS_ERR_INVALID_ARG;
}
