#include <stdio.h>
#include "util/json.h"
#include "util/utf8.h"

int wms__json_string_to(const char *s, wms__json_put put, void *payload)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	char esc[8];
	uint32_t cp;
	size_t n;
	int rc = put(payload, "\"", 1);

	while (!rc && *p) {
		if (*p == '"' || *p == '\\') {
			esc[0] = '\\';
			esc[1] = (char)*p++;
			rc = put(payload, esc, 2);
		} else if (*p == '\n') {
			rc = put(payload, "\\n", 2);
			p++;
		} else if (*p == '\t') {
			rc = put(payload, "\\t", 2);
			p++;
		} else if (*p < 0x20 || *p == 0x7f) {
			snprintf(esc, sizeof(esc), "\\u%04x", (unsigned)*p++);
			rc = put(payload, esc, 6);
		} else if ((n = wms__utf8_decode(p, &cp)) == 0) {
			rc = put(payload, "\\ufffd", 6);
			p++;
		} else {
			rc = put(payload, (const char *)p, n);
			p += n;
		}
	}
	return rc ? rc : put(payload, "\"", 1);
}

static int to_buf(void *payload, const char *p, size_t n)
{
	return wms__buf_append(payload, p, n) != WMS_OK;
}

wms_status wms__json_string(wms__buf *b, const char *s)
{
	return wms__json_string_to(s, to_buf, b) ? WMS_ERR_NOMEM : WMS_OK;
}
