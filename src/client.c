/*
 * The client: every operation is validate -> breaker -> build -> send ->
 * parse -> classify -> record. The breaker is asked first, so an open
 * breaker answers before any XML is built or any socket touched.
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include "internal.h"
#include "client_internal.h"
#include "soap.h"
#include "wms/client.h"
#include "wms/sys/transport.h"

struct wms_client {
	char *endpoint;
	char *user_agent;
	char *ca_file;
	char *ca_path;
	wms_soap_version soap_version;
	uint32_t connect_timeout_ms;
	uint32_t timeout_ms;
	uint32_t stall_timeout_ms;
	size_t max_reply_bytes;
	wms_breaker *breaker;
	int own_breaker;
	wms_transport *transport;
};

wms_status wms_client_options_init(wms_client_options *opts, unsigned version)
{
	if (!opts || version != WMS_CLIENT_OPTIONS_VERSION)
		return WMS_ERR_INVALID_ARG;
	memset(opts, 0, sizeof(*opts));
	opts->version = version;
	opts->breaker_options.version = WMS_BREAKER_OPTIONS_VERSION;
	return WMS_OK;
}

static int has_scheme(const char *url)
{
	return strncasecmp(url, "http://", 7) == 0 || strncasecmp(url, "https://", 8) == 0;
}

void wms_client_free(wms_client *c)
{
	if (!c)
		return;
	if (c->transport && c->transport->free)
		c->transport->free(c->transport);
	if (c->own_breaker)
		wms_breaker_free(c->breaker);
	wms__free(c->endpoint);
	wms__free(c->user_agent);
	wms__free(c->ca_file);
	wms__free(c->ca_path);
	wms__free(c);
}

static wms_status dup_opt(char **dst, const char *src)
{
	if (!src)
		return WMS_OK;
	*dst = wms__strdup(src);
	return *dst ? WMS_OK : WMS_ERR_NOMEM;
}

wms_status wms_client_new(wms_client **out, const wms_client_options *opts, wms_error *err)
{
	wms_client *c = NULL;
	wms_transport *transport = opts ? opts->transport : NULL;
	wms_status st;

	wms_error_clear(err);
	if (!out) {
		st = wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT, "out is NULL");
		goto fail;
	}
	*out = NULL;
	if (!opts) {
		st = wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
			       "options are required (the endpoint has no default)");
		goto fail;
	}
	if (opts->version != WMS_CLIENT_OPTIONS_VERSION) {
		st = wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
			       "options version %u is not supported (this libwms knows %u)",
			       opts->version, WMS_CLIENT_OPTIONS_VERSION);
		goto fail;
	}
	if (!transport && (!opts->endpoint || !has_scheme(opts->endpoint))) {
		st = wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
			       "endpoint must be an http:// or https:// URL");
		goto fail;
	}
	if (opts->soap_version != WMS_SOAP_11 && opts->soap_version != WMS_SOAP_12) {
		st = wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
			       "soap_version must be WMS_SOAP_11 or WMS_SOAP_12");
		goto fail;
	}
	if (opts->timeout_ms > WMS_MAX_TIMEOUT_MS || opts->connect_timeout_ms > WMS_MAX_TIMEOUT_MS ||
	    opts->stall_timeout_ms > WMS_MAX_TIMEOUT_MS) {
		st = wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
			       "timeouts must be at most %u ms", WMS_MAX_TIMEOUT_MS);
		goto fail;
	}
	if (opts->max_reply_bytes > (size_t)1 << 30) {
		st = wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
			       "max_reply_bytes must be at most 1 GiB");
		goto fail;
	}
	c = wms__calloc(1, sizeof(*c));
	if (!c) {
		st = wms__fail(err, WMS_ERR_NOMEM, WMS_DELIVERY_NOT_SENT, "out of memory");
		goto fail;
	}
	c->soap_version = opts->soap_version;
	c->timeout_ms = opts->timeout_ms ? opts->timeout_ms : WMS_DEFAULT_TIMEOUT_MS;
	c->connect_timeout_ms =
		opts->connect_timeout_ms ? opts->connect_timeout_ms : WMS_DEFAULT_CONNECT_TIMEOUT_MS;
	if (c->connect_timeout_ms > c->timeout_ms)
		c->connect_timeout_ms = c->timeout_ms; /* the total deadline always wins */
	c->stall_timeout_ms =
		opts->stall_timeout_ms ? opts->stall_timeout_ms : WMS_DEFAULT_STALL_TIMEOUT_MS;
	c->max_reply_bytes = opts->max_reply_bytes ? opts->max_reply_bytes : WMS_DEFAULT_MAX_REPLY_BYTES;
	if (dup_opt(&c->endpoint, opts->endpoint ? opts->endpoint : "") ||
	    dup_opt(&c->user_agent, opts->user_agent ? opts->user_agent : "libwms/" WMS_VERSION) ||
	    dup_opt(&c->ca_file, opts->ca_file) || dup_opt(&c->ca_path, opts->ca_path)) {
		st = wms__fail(err, WMS_ERR_NOMEM, WMS_DELIVERY_NOT_SENT, "out of memory");
		goto fail;
	}
	if (opts->breaker) {
		c->breaker = opts->breaker;
	} else {
		st = wms_breaker_new(&c->breaker, &opts->breaker_options);
		if (st != WMS_OK) {
			wms__fail(err, st, WMS_DELIVERY_NOT_SENT,
				  st == WMS_ERR_INVALID_ARG ? "breaker_options: a value is out of range"
							    : "cannot create the breaker");
			goto fail;
		}
		c->own_breaker = 1;
	}
	wms__xml_init();
	if (!transport) {
		st = wms_curl_transport_new(&transport);
		if (st != WMS_OK) {
			wms__fail(err, st, WMS_DELIVERY_NOT_SENT, "cannot create the HTTP transport");
			goto fail;
		}
	}
	c->transport = transport;
	transport = NULL;
	*out = c;
	return WMS_OK;
fail:
	if (transport && transport->free)
		transport->free(transport);
	wms_client_free(c);
	return err ? err->status : st;
}

wms_breaker *wms_client_breaker(wms_client *c)
{
	return c ? c->breaker : NULL;
}

/* ---- classification -------------------------------------------------- */

static int fault_is(const char *code, const char *name)
{
	size_t n = strlen(name);
	return strncmp(code, name, n) == 0 && (code[n] == '\0' || code[n] == '.');
}

wms_outcome wms__default_outcome(const wms_error *err, int *record)
{
	*record = 1;
	switch (err->status) {
	case WMS_OK:
		return WMS_OUTCOME_SUCCESS;
	case WMS_ERR_SOAP_FAULT:
		/* Server/Receiver: the WMS is in trouble. Client/Sender and the
		 * envelope-level codes reject the request itself. */
		if (fault_is(err->fault_code, "Server") || fault_is(err->fault_code, "Receiver"))
			return WMS_OUTCOME_FAILURE;
		return WMS_OUTCOME_IGNORED;
	case WMS_ERR_HTTP:
		return err->http_status >= 500 ? WMS_OUTCOME_FAILURE : WMS_OUTCOME_IGNORED;
	case WMS_ERR_CONNECT:
	case WMS_ERR_TIMEOUT:
	case WMS_ERR_TRANSPORT:
	case WMS_ERR_TLS:
	case WMS_ERR_NOT_XML:
	case WMS_ERR_TRUNCATED:
	case WMS_ERR_UNEXPECTED_REPLY:
	case WMS_ERR_TOO_LARGE:
	case WMS_ERR_UNSAFE_XML:
		return WMS_OUTCOME_FAILURE;
	case WMS_ERR_INVALID_ARG:
	case WMS_ERR_NOMEM:
	case WMS_ERR_CIRCUIT_OPEN:
	case WMS_ERR_FIXTURE:
	case WMS_ERR_CONFIG:
	case WMS_ERR_INTERNAL:
		break;
	}
	/* Our own trouble, not the WMS's: hand the permit back. */
	*record = 0;
	return WMS_OUTCOME_IGNORED;
}

/* ---- one exchange ------------------------------------------------------ */

static const char *reason_phrase(long status)
{
	switch (status) {
	case 400: return " Bad Request";
	case 401: return " Unauthorized";
	case 403: return " Forbidden";
	case 404: return " Not Found";
	case 405: return " Method Not Allowed";
	case 408: return " Request Timeout";
	case 413: return " Payload Too Large";
	case 415: return " Unsupported Media Type";
	case 429: return " Too Many Requests";
	case 500: return " Internal Server Error";
	case 502: return " Bad Gateway";
	case 503: return " Service Unavailable";
	case 504: return " Gateway Timeout";
	default: return "";
	}
}

/* Interpret an HTTP reply: a SOAP answer, a SOAP fault, or an HTTP error. */
static wms_status interpret(wms__op op, void *out, const wms_http_response *resp, size_t max,
			    wms_error *err)
{
	wms_status st;
	long code = resp->status;
	int ok_status = code >= 200 && code < 300;

	if (resp->overflow)
		return wms__fail(err, WMS_ERR_TOO_LARGE, WMS_DELIVERY_UNKNOWN,
				 "reply exceeds max_reply_bytes (%zu)", max);
	if (ok_status || (code >= 400 && resp->body_len)) {
		st = wms__parse_reply(op, out, resp->body ? resp->body : "", resp->body_len,
				      resp->content_type, max, err);
		if (st == WMS_ERR_SOAP_FAULT) {
			err->delivery = WMS_DELIVERY_ANSWERED;
			err->http_status = code;
			return st;
		}
		if (ok_status) {
			if (err) {
				err->http_status = code;
				err->delivery = st == WMS_OK ? WMS_DELIVERY_ANSWERED
							     : WMS_DELIVERY_UNKNOWN;
			}
			return st;
		}
		/* An error status whose body is no SOAP fault: an HTTP error. */
		if (st == WMS_OK && op == WMS__OP_GET_STOCK_LEVEL && out) {
			wms_stock_reply_free(*(wms_stock_reply **)out);
			*(wms_stock_reply **)out = NULL;
		}
	}
	wms_error_clear(err);
	st = wms__fail(err, WMS_ERR_HTTP,
		       code >= 500 ? WMS_DELIVERY_UNKNOWN : WMS_DELIVERY_ANSWERED,
		       "HTTP %ld%s from the endpoint (%s, %zu bytes)", code, reason_phrase(code),
		       resp->content_type && *resp->content_type ? resp->content_type
								 : "no content type",
		       resp->body_len);
	if (err)
		err->http_status = code;
	return st;
}

static wms_status exchange(wms_client *c, wms__op op, const wms__buf *body, void *out,
			   wms_error *err)
{
	wms_http_request req;
	wms_http_response resp;
	char ctype[128];
	wms_status st;

	memset(&req, 0, sizeof(req));
	memset(&resp, 0, sizeof(resp));
	resp.max_body = c->max_reply_bytes;
	req.url = c->endpoint;
	req.operation = wms__op_name(op);
	req.soap_action = wms__op_action(op);
	req.soap_version = c->soap_version;
	if (c->soap_version == WMS_SOAP_12) {
		/* (the action is a fixed URN from soap.c: no quoting issue) */
		snprintf(ctype, sizeof(ctype), "application/soap+xml; charset=utf-8; action=\"%s\"",
			 req.soap_action);
		req.content_type = ctype;
	} else {
		req.content_type = "text/xml; charset=utf-8";
	}
	req.body = body->data;
	req.body_len = body->len;
	req.connect_timeout_ms = c->connect_timeout_ms;
	req.timeout_ms = c->timeout_ms;
	req.stall_timeout_ms = c->stall_timeout_ms;
	req.max_reply_bytes = c->max_reply_bytes;
	req.user_agent = c->user_agent;
	req.ca_file = c->ca_file;
	req.ca_path = c->ca_path;

	st = c->transport->send(c->transport, &req, &resp, err);
	if (st == WMS_OK)
		st = interpret(op, out, &resp, c->max_reply_bytes, err);
	else if (err && err->status != st)
		wms__fail(err, st, WMS_DELIVERY_UNKNOWN, "%s", wms_strerror(st));
	wms_http_response_clear(&resp);
	return st;
}

static const char circuit_open_msg[] = "circuit breaker open: call rejected without sending";

/* Start a call: clear err, ask the breaker. */
static wms_status begin(wms_client *c, wms__op op, wms_breaker_permit *permit, wms_error *err)
{
	uint32_t retry = 0;
	wms_status st;

	if (err) {
		wms_error_clear(err);
		wms__strlcpy(err->operation, wms__op_name(op), sizeof(err->operation));
	}
	st = wms_breaker_acquire(permit, c->breaker, &retry);
	if (st == WMS_ERR_CIRCUIT_OPEN && err) {
		err->status = st;
		err->delivery = WMS_DELIVERY_NOT_SENT;
		err->retry_after_ms = retry;
		memcpy(err->message, circuit_open_msg, sizeof(circuit_open_msg));
	}
	return st;
}

/* End a call: classify, tell the breaker. */
static wms_status finish(wms_client *c, const wms_breaker_permit *permit, wms_status st,
			 wms_error *err)
{
	int record;
	wms_outcome outcome = wms__default_outcome(err, &record);

	if (record)
		wms_breaker_record(c->breaker, permit, outcome);
	else
		wms_breaker_release(c->breaker, permit);
	return st;
}

/* Without a caller's err we still need the detail to classify faults. */
#define LOCAL_ERR(err, storage) ((err) ? (err) : ((storage) = (wms_error){ 0 }, &(storage)))

static wms_status run(wms_client *c, wms__op op, wms__buf *body, wms_status built, void *out,
		      const wms_breaker_permit *permit, wms_error *err)
{
	wms_status st = built;
	if (st == WMS_OK)
		st = exchange(c, op, body, out, err);
	wms__buf_free(body);
	return finish(c, permit, st, err);
}

wms_status wms_submit_order(wms_submit_reply *out, wms_client *c, const wms_order *order,
			    wms_error *err)
{
	wms_breaker_permit permit;
	wms_submit_reply tmp;
	wms__buf body = { 0 };
	wms_error local;
	wms_status st;

	if (!c || !order) {
		wms_error_clear(err);
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "%s is NULL", c ? "order" : "client");
	}
	err = LOCAL_ERR(err, local);
	st = begin(c, WMS__OP_SUBMIT_ORDER, &permit, err);
	if (st != WMS_OK)
		return st;
	st = wms__validate_order(order, err);
	if (st == WMS_OK)
		st = wms__build_submit_order(&body, c->soap_version, order, err);
	st = run(c, WMS__OP_SUBMIT_ORDER, &body, st, out ? (void *)out : (void *)&tmp, &permit,
		 err);
	return st;
}

wms_status wms_get_order_status(wms_status_reply *out, wms_client *c, const char *order_id,
				wms_error *err)
{
	wms_breaker_permit permit;
	wms_status_reply tmp;
	wms__buf body = { 0 };
	wms_error local;
	wms_status st;

	if (!c) {
		wms_error_clear(err);
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT, "client is NULL");
	}
	err = LOCAL_ERR(err, local);
	st = begin(c, WMS__OP_GET_ORDER_STATUS, &permit, err);
	if (st != WMS_OK)
		return st;
	st = wms__validate_order_id(order_id, err);
	if (st == WMS_OK)
		st = wms__build_get_order_status(&body, c->soap_version, order_id, err);
	return run(c, WMS__OP_GET_ORDER_STATUS, &body, st, out ? (void *)out : (void *)&tmp,
		   &permit, err);
}

wms_status wms_cancel_order(wms_cancel_reply *out, wms_client *c, const char *order_id,
			    const char *reason, wms_error *err)
{
	wms_breaker_permit permit;
	wms_cancel_reply tmp;
	wms__buf body = { 0 };
	wms_error local;
	wms_status st;

	if (!c) {
		wms_error_clear(err);
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT, "client is NULL");
	}
	err = LOCAL_ERR(err, local);
	st = begin(c, WMS__OP_CANCEL_ORDER, &permit, err);
	if (st != WMS_OK)
		return st;
	st = wms__validate_order_id(order_id, err);
	if (st == WMS_OK && reason && strlen(reason) > 256)
		st = wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
			       "reason: at most 256 bytes");
	if (st == WMS_OK)
		st = wms__build_cancel_order(&body, c->soap_version, order_id, reason, err);
	return run(c, WMS__OP_CANCEL_ORDER, &body, st, out ? (void *)out : (void *)&tmp, &permit,
		   err);
}

wms_status wms_get_stock_level(wms_stock_reply **out, wms_client *c, const char *const *skus,
			       size_t sku_count, wms_error *err)
{
	wms_breaker_permit permit;
	wms_stock_reply *reply = NULL;
	wms__buf body = { 0 };
	wms_error local;
	wms_status st;

	if (out)
		*out = NULL;
	if (!c || !out) {
		wms_error_clear(err);
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT, "%s is NULL",
				 c ? "out" : "client");
	}
	err = LOCAL_ERR(err, local);
	st = begin(c, WMS__OP_GET_STOCK_LEVEL, &permit, err);
	if (st != WMS_OK)
		return st;
	st = wms__validate_skus(skus, sku_count, err);
	if (st == WMS_OK)
		st = wms__build_get_stock_level(&body, c->soap_version, skus, sku_count, err);
	st = run(c, WMS__OP_GET_STOCK_LEVEL, &body, st, &reply, &permit, err);
	if (st == WMS_OK)
		*out = reply;
	else
		wms_stock_reply_free(reply);
	return st;
}
