#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "util/alloc.h"
#include "util/buf.h"

wms_status wms__buf_reserve(wms__buf *b, size_t len)
{
	if (len > SIZE_MAX - b->len - 1)
		return WMS_ERR_NOMEM;
	if (b->len + len + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		char *p;
		while (cap < b->len + len + 1)
			cap = cap > SIZE_MAX / 2 ? b->len + len + 1 : cap * 2;
		p = wms__realloc(b->data, cap);
		if (!p)
			return WMS_ERR_NOMEM;
		b->data = p;
		b->cap = cap;
	}
	return WMS_OK;
}

wms_status wms__buf_append(wms__buf *b, const void *data, size_t len)
{
	wms_status rc = wms__buf_reserve(b, len);
	if (rc != WMS_OK)
		return rc;
	if (len)
		memcpy(b->data + b->len, data, len);
	b->len += len;
	b->data[b->len] = '\0';
	return WMS_OK;
}

wms_status wms__buf_printf(wms__buf *b, const char *fmt, ...)
{
	va_list ap;
	wms_status rc;
	int n;
	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return WMS_ERR_INVALID_ARG;
	if ((rc = wms__buf_reserve(b, (size_t)n)) != WMS_OK)
		return rc;
	va_start(ap, fmt);
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
	return WMS_OK;
}

void wms__buf_free(wms__buf *b)
{
	if (!b)
		return;
	wms__free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}
