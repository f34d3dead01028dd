/* Helpers every transport uses to fill a reply (wms/sys/transport.h). */
#include <stdarg.h>
#include <string.h>
#include "internal.h"
#include "wms/sys/transport.h"

wms_status wms_http_response_append(wms_http_response *resp, const void *data, size_t len)
{
	size_t need;
	char *p;
	if (!resp || (!data && len))
		return WMS_ERR_INVALID_ARG;
	if (resp->max_body && (len > resp->max_body || resp->body_len > resp->max_body - len)) {
		resp->overflow = 1;
		return WMS_ERR_TOO_LARGE;
	}
	need = resp->body_len + len + 1;
	p = wms__realloc(resp->body, need);
	if (!p)
		return WMS_ERR_NOMEM;
	resp->body = p;
	if (len)
		memcpy(resp->body + resp->body_len, data, len);
	resp->body_len += len;
	resp->body[resp->body_len] = '\0';
	return WMS_OK;
}

wms_status wms_http_response_set_content_type(wms_http_response *resp, const char *value,
					      size_t len)
{
	char *v;
	if (!resp || !value)
		return WMS_ERR_INVALID_ARG;
	while (len && (value[len - 1] == '\r' || value[len - 1] == '\n' || value[len - 1] == ' '))
		len--;
	while (len && (*value == ' ' || *value == '\t')) {
		value++;
		len--;
	}
	v = wms__strndup(value, len);
	if (!v)
		return WMS_ERR_NOMEM;
	wms__free(resp->content_type);
	resp->content_type = v;
	return WMS_OK;
}

void wms_http_response_clear(wms_http_response *resp)
{
	size_t max;
	if (!resp)
		return;
	max = resp->max_body;
	wms__free(resp->body);
	wms__free(resp->content_type);
	memset(resp, 0, sizeof(*resp));
	resp->max_body = max;
}

wms_status wms_transport_fail(wms_error *err, wms_status status, wms_delivery delivery,
			      const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	wms__vfail(err, status, delivery, fmt, ap);
	va_end(ap);
	return status;
}
