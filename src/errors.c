#include <stdio.h>
#include <string.h>
#include "internal.h"
#include "wms/common.h"

const char *wms_version(void) { return WMS_VERSION; }

/* No default: -Wswitch catches a status added without a description. */
const char *wms_strerror(wms_status status)
{
	switch (status) {
	case WMS_OK: return "success";
	case WMS_ERR_INVALID_ARG: return "invalid argument";
	case WMS_ERR_NOMEM: return "out of memory";
	case WMS_ERR_CIRCUIT_OPEN: return "circuit breaker open: call rejected without sending";
	case WMS_ERR_CONNECT: return "could not connect to the WMS";
	case WMS_ERR_TIMEOUT: return "WMS call timed out";
	case WMS_ERR_TRANSPORT: return "transport error talking to the WMS";
	case WMS_ERR_HTTP: return "WMS endpoint answered with an HTTP error";
	case WMS_ERR_SOAP_FAULT: return "WMS answered with a SOAP fault";
	case WMS_ERR_NOT_XML: return "WMS reply is not XML";
	case WMS_ERR_TRUNCATED: return "WMS reply is truncated";
	case WMS_ERR_UNEXPECTED_REPLY: return "WMS reply does not answer this operation";
	case WMS_ERR_TOO_LARGE: return "WMS reply exceeds the size limit";
	case WMS_ERR_UNSAFE_XML: return "WMS reply contains a DOCTYPE or entity declaration";
	case WMS_ERR_TLS: return "TLS handshake or certificate verification failed";
	case WMS_ERR_FIXTURE: return "no recorded fixture matches the request";
	case WMS_ERR_CONFIG: return "invalid configuration";
	case WMS_ERR_INTERNAL: return "internal error in libwms";
	case WMS_ERR_BULKHEAD_FULL: return "bulkhead full: too many calls in flight, call rejected without sending";
	case WMS_ERR_CANCELLED: return "call cancelled before it completed";
	}
	return "unknown status";
}

const char *wms_status_name(wms_status status)
{
	switch (status) {
	case WMS_OK: return "OK";
	case WMS_ERR_INVALID_ARG: return "INVALID_ARG";
	case WMS_ERR_NOMEM: return "NOMEM";
	case WMS_ERR_CIRCUIT_OPEN: return "CIRCUIT_OPEN";
	case WMS_ERR_CONNECT: return "CONNECT";
	case WMS_ERR_TIMEOUT: return "TIMEOUT";
	case WMS_ERR_TRANSPORT: return "TRANSPORT";
	case WMS_ERR_HTTP: return "HTTP";
	case WMS_ERR_SOAP_FAULT: return "SOAP_FAULT";
	case WMS_ERR_NOT_XML: return "NOT_XML";
	case WMS_ERR_TRUNCATED: return "TRUNCATED";
	case WMS_ERR_UNEXPECTED_REPLY: return "UNEXPECTED_REPLY";
	case WMS_ERR_TOO_LARGE: return "TOO_LARGE";
	case WMS_ERR_UNSAFE_XML: return "UNSAFE_XML";
	case WMS_ERR_TLS: return "TLS";
	case WMS_ERR_FIXTURE: return "FIXTURE";
	case WMS_ERR_CONFIG: return "CONFIG";
	case WMS_ERR_INTERNAL: return "INTERNAL";
	case WMS_ERR_BULKHEAD_FULL: return "BULKHEAD_FULL";
	case WMS_ERR_CANCELLED: return "CANCELLED";
	}
	return "UNKNOWN_STATUS";
}

const char *wms_cause_name(wms_cause cause)
{
	switch (cause) {
	case WMS_CAUSE_NONE: return "NONE";
	case WMS_CAUSE_DNS: return "DNS";
	case WMS_CAUSE_REFUSED: return "REFUSED";
	case WMS_CAUSE_CONNECT_TIMEOUT: return "CONNECT_TIMEOUT";
	case WMS_CAUSE_TIMEOUT: return "TIMEOUT";
	case WMS_CAUSE_STALL: return "STALL";
	case WMS_CAUSE_RESET: return "RESET";
	case WMS_CAUSE_TLS_HANDSHAKE: return "TLS_HANDSHAKE";
	case WMS_CAUSE_TLS_VERIFY: return "TLS_VERIFY";
	case WMS_CAUSE_LOCAL_FILE: return "LOCAL_FILE";
	case WMS_CAUSE_PROTOCOL: return "PROTOCOL";
	case WMS_CAUSE_OTHER: return "OTHER";
	}
	return "?";
}

const char *wms_delivery_name(wms_delivery delivery)
{
	switch (delivery) {
	case WMS_DELIVERY_NOT_SENT: return "NOT_SENT";
	case WMS_DELIVERY_UNKNOWN: return "UNKNOWN";
	case WMS_DELIVERY_ANSWERED: return "ANSWERED";
	}
	return "UNKNOWN";
}

void wms_error_clear(wms_error *err)
{
	if (err)
		memset(err, 0, sizeof(*err));
}

int wms_error_is_retryable(const wms_error *err)
{
	if (!err)
		return 0;
	switch (err->status) {
	case WMS_OK:
	case WMS_ERR_INVALID_ARG:
	case WMS_ERR_CONFIG:
	case WMS_ERR_FIXTURE:
	case WMS_ERR_INTERNAL:
		return 0;
	case WMS_ERR_SOAP_FAULT:
		/* A Client/Sender (or envelope-level) fault rejects the request
		 * itself: resending it unchanged gets the same answer. */
		return !wms__fault_is_request_error(err->fault_code);
	case WMS_ERR_HTTP:
		return err->http_status >= 500 || err->http_status == 429 ||
		       err->http_status == 408;
	case WMS_ERR_NOMEM:
	case WMS_ERR_CIRCUIT_OPEN:
	case WMS_ERR_BULKHEAD_FULL:
	case WMS_ERR_CANCELLED:
	case WMS_ERR_CONNECT:
	case WMS_ERR_TIMEOUT:
	case WMS_ERR_TRANSPORT:
	case WMS_ERR_NOT_XML:
	case WMS_ERR_TRUNCATED:
	case WMS_ERR_UNEXPECTED_REPLY:
	case WMS_ERR_TOO_LARGE:
	case WMS_ERR_UNSAFE_XML:
	case WMS_ERR_TLS:
		/* Every WMS operation is idempotent on the order id. */
		return 1;
	}
	return 0;
}

wms_status wms__vfail(wms_error *err, wms_status status, wms_delivery delivery,
		      const char *fmt, va_list ap)
{
	char *p;
	size_t n;
	if (!err)
		return status;
	err->status = status;
	err->delivery = delivery;
	if (fmt) {
		int w = vsnprintf(err->message, sizeof(err->message), fmt, ap);
		if (w >= (int)sizeof(err->message))
			err->message[wms__utf8_whole(err->message, sizeof(err->message) - 1)] = '\0';
		/* One line of UTF-8: a message may quote what libxml2 quoted of
		 * the reply (a comment never closed, say), which is any bytes. */
		for (p = err->message; *p; p += n) {
			uint32_t c;
			n = 1;
			if ((unsigned char)*p < 0x20 || *p == 0x7F)
				*p = ' ';
			else if ((unsigned char)*p >= 0x80 && !(n = wms__utf8_decode((unsigned char *)p, &c))) {
				*p = '?';
				n = 1;
			}
		}
	} else {
		wms__strlcpy(err->message, wms_strerror(status), sizeof(err->message));
	}
	return status;
}

wms_status wms__fail(wms_error *err, wms_status status, wms_delivery delivery,
		     const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	wms__vfail(err, status, delivery, fmt, ap);
	va_end(ap);
	return status;
}

static int code_is(const char *code, const char *name)
{
	size_t n = strlen(name);
	return strncmp(code, name, n) == 0 && (code[n] == '\0' || code[n] == '.');
}

int wms__fault_is_request_error(const char *code)
{
	return code_is(code, "Client") || code_is(code, "Sender") ||
	       code_is(code, "VersionMismatch") || code_is(code, "MustUnderstand") ||
	       code_is(code, "DataEncodingUnknown");
}
