/*
 * One call: every operation is breaker -> bulkhead -> validate -> build ->
 * send -> parse -> classify -> record, with optional retries inside the
 * breaker and the bulkhead's slot. The breaker is asked first, so an open
 * breaker answers before any XML is built, any socket touched or any slot
 * waited for. A read refused so may be answered from the read cache
 * (read_cache.c), which the good reads fill.
 */
#include <stdio.h>
#include <string.h>
#include "client/client.h"
#include "soap/redact.h"
#include "util/num.h"
#include "wms/sys/breaker_store.h" /* wms_breaker_clock_ns */

wms_status wms_stock_reply_new(wms_stock_reply **out, size_t count)
{
	wms_stock_reply *r;
	if (!out)
		return WMS_ERR_INVALID_ARG;
	*out = NULL;
	if (count > WMS_MAX_SKUS)
		return WMS_ERR_INVALID_ARG;
	r = wms__calloc(1, sizeof(*r));
	if (!r)
		return WMS_ERR_NOMEM;
	if (count) {
		r->levels = wms__calloc(count, sizeof(*r->levels));
		if (!r->levels) {
			wms__free(r);
			return WMS_ERR_NOMEM;
		}
	}
	r->count = count;
	*out = r;
	return WMS_OK;
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

/* A reply past the bound, when the transport did not say so in its own
 * words: one message wherever the client finds it. */
static wms_status too_large(wms_error *err, size_t max)
{
	return wms__fail(err, WMS_ERR_TOO_LARGE, WMS_DELIVERY_UNKNOWN,
			 "reply exceeds max_reply_bytes (%zu)", max);
}

/* Interpret an HTTP reply: a SOAP answer, a SOAP fault, or an HTTP error. */
static wms_status interpret(wms__xml_ws *ws, const call *k, const wms_http_response *resp,
			    size_t max, uint64_t deadline_ns, wms_error *err)
{
	wms__op op = k->op;
	void *out = k->out;
	wms_status st;
	long code = resp->status;
	int ok_status = code >= 200 && code < 300;

	if (resp->overflow)
		return too_large(err, max);
	if (ok_status || (code >= 400 && resp->body_len)) {
		if (k->g) {
			st = wms__parse_generic_ws(k->g->out, ws, k->g->opts->reply_namespace,
						   k->g->opts->reply_element,
						   resp->body ? resp->body : "", resp->body_len,
						   resp->content_type, max, deadline_ns, err);
			/* an answer with an error status is no answer */
			if (st == WMS_OK && !ok_status) {
				wms__xml_doc_free(*k->g->out);
				*k->g->out = NULL;
			}
		} else {
			st = wms__parse_reply_ws(ws, op, out, resp->body ? resp->body : "",
						 resp->body_len, resp->content_type, max,
						 deadline_ns, err);
		}
		if (st == WMS_ERR_SOAP_FAULT) {
			err->delivery = WMS_DELIVERY_ANSWERED;
			err->http_status = code;
			return st;
		}
		if (ok_status) {
			err->http_status = code;
			err->delivery = st == WMS_OK ? WMS_DELIVERY_ANSWERED : WMS_DELIVERY_UNKNOWN;
			return st;
		}
		/* Out of memory while reading the error body: that, not the status. */
		if (st == WMS_ERR_NOMEM) {
			err->http_status = code;
			err->delivery = code >= 500 ? WMS_DELIVERY_UNKNOWN : WMS_DELIVERY_ANSWERED;
			return st;
		}
		/* An error status whose body is no SOAP fault: an HTTP error. */
		if (st == WMS_OK && !k->g && op == WMS__OP_GET_STOCK_LEVEL && out) {
			wms_stock_reply_free(*(wms_stock_reply **)out);
			*(wms_stock_reply **)out = NULL;
		}
	}
	/* drop what the parser said (fault fields, message), keep the call's identity */
	err->fault_code[0] = err->fault_string[0] = err->wms_code[0] = '\0';
	st = wms__fail(err, WMS_ERR_HTTP,
		       code >= 500 ? WMS_DELIVERY_UNKNOWN : WMS_DELIVERY_ANSWERED,
		       "HTTP %ld%s from the endpoint (%s, %zu bytes)", code, reason_phrase(code),
		       resp->content_type && *resp->content_type ? resp->content_type
								 : "no content type",
		       resp->body_len);
	err->http_status = code;
	return st;
}

static void wire_log(wms_client *c, const wms_http_request *req, const wms_http_response *resp,
		     wms_status st, const wms_error *err, uint64_t start)
{
	wms_wire_record rec;
	wms__buf clean = { 0 };
	const char *body = resp ? resp->body : req->body;
	size_t len = resp ? resp->body_len : req->body_len;

	memset(&rec, 0, sizeof(rec));
	rec.correlation_id = err->correlation_id;
	rec.direction = resp ? WMS_WIRE_REPLY : WMS_WIRE_REQUEST;
	rec.operation = req->operation;
	rec.attempt = err->attempts;
	rec.http_status = resp ? resp->status : 0;
	rec.content_type = resp ? resp->content_type : req->content_type;
	rec.full_len = len;
	rec.status = st;
	if (resp)
		rec.elapsed_ms = (wms__now_ns() - start) / 1e6;
	if (body && len && wms__redact_for_log(&clean, body, len) == WMS_OK) {
		rec.body = clean.data;
		rec.body_len = clean.len < c->wire_max ? clean.len : c->wire_max;
	} else {
		rec.body = "";
		rec.body_len = 0;
	}
	c->cb.on_wire(&rec, c->cb.payload);
	wms__buf_free(&clean);
}

static wms_status correlate(const call *k, wms_error *err);

void wms__call_request(wms_client *c, const call *k, const wms__buf *body, uint32_t timeout_ms,
		       const wms_error *err, wms_http_request *req)
{
	memset(req, 0, sizeof(*req));
	req->url = c->endpoint;
	if (k->g) {
		req->operation = k->g->opts->operation;
		req->soap_action = k->g->opts->soap_action ? k->g->opts->soap_action : "";
		req->content_type = k->g->content_type;
	} else {
		req->operation = wms__op_name(k->op);
		req->soap_action = wms__op_action(k->op);
		req->content_type = wms__op_content_type(k->op, c->soap_version);
	}
	req->soap_version = c->soap_version;
	req->body = body->data;
	req->body_len = body->len;
	req->timeout_ms = timeout_ms;
	req->connect_timeout_ms = c->connect_timeout_ms < timeout_ms ? c->connect_timeout_ms
								     : timeout_ms;
	req->stall_timeout_ms = c->stall_timeout_ms;
	req->max_reply_bytes = c->max_reply_bytes;
	req->correlation_id = err->correlation_id;
}

uint64_t wms__call_sending(wms_client *c, const wms_http_request *req, const wms_error *err)
{
	if (!c->cb.on_wire)
		return 0;
	wire_log(c, req, NULL, WMS_OK, err, 0);
	return wms__now_ns();
}

void wms__call_unanswered(wms_client *c, const wms_http_request *req, wms_status st,
			  const wms_error *err, uint64_t start)
{
	wms_http_response none;
	if (!c->cb.on_wire)
		return;
	memset(&none, 0, sizeof(none));
	wire_log(c, req, &none, st, err, start);
}

wms_status wms__call_reply(wms_client *c, wms__xml_ws *ws, const call *k,
			   const wms_http_request *req, wms_http_response *resp, wms_status sent,
			   uint64_t deadline_ns, uint64_t start, wms_error *err)
{
	wms_status st = sent;
	if (st == WMS_OK) {
		st = interpret(ws, k, resp, c->max_reply_bytes, deadline_ns, err);
		/* the WMS's (or its proxy's) word on when to come back: the
		 * caller's hint, and the least pause before a retry (call_after) */
		if (st != WMS_OK && (resp->status == 503 || resp->status == 429))
			err->retry_after_ms = resp->retry_after_ms;
	} else if (err->status != st && st == WMS_ERR_TOO_LARGE) {
		too_large(err, c->max_reply_bytes); /* the bound the transport was given */
	} else if (err->status != st) {
		wms__fail(err, st, WMS_DELIVERY_UNKNOWN, "%s", wms_strerror(st));
	}
	if (c->cb.on_wire)
		wire_log(c, req, resp, st, err, start);
	wms_http_response_clear(resp);
	if (st == WMS_OK)
		st = correlate(k, err);
	return st;
}

static wms_status exchange(wms_client *c, wms__xml_ws *ws, const call *k, const wms__buf *body,
			   uint32_t timeout_ms, wms_error *err)
{
	wms_http_request req;
	wms_http_response resp;
	/* What is done with the reply's bytes keeps the attempt's deadline too. */
	uint64_t start, deadline = wms__now_ns() + (uint64_t)timeout_ms * 1000000u;
	wms_status st;

	memset(&resp, 0, sizeof(resp));
	resp.max_body = c->max_reply_bytes;
	wms__call_request(c, k, body, timeout_ms, err, &req);
	start = wms__call_sending(c, &req, err);
	st = c->transport->send(c->transport, &req, &resp, err);
	return wms__call_reply(c, ws, k, &req, &resp, st, deadline, start, err);
}

/* ---- one call: breaker, retries, fallback ------------------------------- */

static const char circuit_open_msg[] = "circuit breaker open: call rejected without sending";

/* The parser knows the reply, not the request: check the reply answers
 * this request (same order id; one level per SKU asked, in order). */
static wms_status correlate(const call *k, wms_error *err)
{
	const char *got = NULL, *want = NULL;
	size_t i;

	if (k->g)
		return WMS_OK; /* the caller reads its own reply */
	switch (k->op) {
	case WMS__OP_SUBMIT_ORDER:
		got = ((const wms_submit_reply *)k->out)->order_id;
		want = k->order->order_id;
		break;
	case WMS__OP_GET_ORDER_STATUS:
		got = ((const wms_status_reply *)k->out)->order_id;
		want = k->order_id;
		break;
	case WMS__OP_CANCEL_ORDER:
		got = ((const wms_cancel_reply *)k->out)->order_id;
		want = k->order_id;
		break;
	case WMS__OP_GET_STOCK_LEVEL: {
		wms_stock_reply **r = k->out;
		if ((*r)->count != k->sku_count)
			goto stock_mismatch;
		for (i = 0; i < k->sku_count; i++)
			if (strcmp((*r)->levels[i].sku, k->skus[i]) != 0)
				goto stock_mismatch;
		return WMS_OK;
stock_mismatch:
		wms_stock_reply_free(*r);
		*r = NULL;
		return wms__fail(err, WMS_ERR_UNEXPECTED_REPLY, WMS_DELIVERY_UNKNOWN,
				 "GetStockLevel reply does not list the %zu SKUs asked for, in order",
				 k->sku_count);
	}
	case WMS__OP_COUNT:
		break;
	}
	if (got && want && strcmp(got, want) != 0)
		return wms__fail(err, WMS_ERR_UNEXPECTED_REPLY, WMS_DELIVERY_UNKNOWN,
				 "%s reply is for order id '%.64s', not '%.64s'", wms__op_name(k->op),
				 got, want);
	return WMS_OK;
}

static wms_status ask_breaker(wms_breaker *b, wms_breaker_permit *permit, wms_error *err)
{
	uint32_t retry = 0;
	wms_status st = wms_breaker_acquire(permit, b, &retry);
	if (st == WMS_ERR_CIRCUIT_OPEN) {
		err->status = st;
		err->delivery = WMS_DELIVERY_NOT_SENT;
		err->retry_after_ms = retry;
		memcpy(err->message, circuit_open_msg, sizeof(circuit_open_msg));
	}
	return st;
}

/* Whether the breaker refuses calls now, read without asking it for a
 * permit (which would count a rejection, or hold a half-open trial):
 * *retry_after_ms is OPEN's time left, 0 for FORCED_OPEN (the caller,
 * breaker_refuses, takes FORCED_OPEN's hint from a rejected acquire). */
static int breaker_open_now(wms_breaker *b, uint32_t *retry_after_ms)
{
	wms_breaker_snapshot snap;
	wms_breaker_state state = wms_breaker_state_get(b);

	*retry_after_ms = 0;
	if (state == WMS_BREAKER_STATE_OPEN) {
		wms_breaker_snapshot_get(&snap, b);
		if (snap.state == WMS_BREAKER_STATE_OPEN && snap.retry_after_ms) {
			*retry_after_ms = snap.retry_after_ms;
			return 1;
		}
		state = snap.state;
	}
	return state == WMS_BREAKER_STATE_FORCED_OPEN;
}

/* Whether the breaker refuses calls now (a failed attempt may just have
 * opened it); if so, *retry_after_ms says for how long. OPEN's comes from
 * the snapshot: the call was made, not refused, so no rejection is counted
 * (OPEN with no time left lets a probe through: not refused). FORCED_OPEN
 * asks acquire for its hint, which counts a rejection (test_policies
 * expects that count; the snapshot now carries the same hint, should the
 * count ever be meant not to move); a permit granted because the state
 * changed meanwhile goes straight back. */
static int breaker_refuses(wms_breaker *b, uint32_t *retry_after_ms)
{
	wms_breaker_permit p;

	if (!breaker_open_now(b, retry_after_ms))
		return 0;
	if (*retry_after_ms)
		return 1;
	if (wms_breaker_acquire(&p, b, retry_after_ms) == WMS_ERR_CIRCUIT_OPEN)
		return 1;
	wms_breaker_release(b, &p);
	return 0;
}

/* Tell the breaker how an attempt went; returns how it counted. */
static wms_outcome tell_breaker(wms_client *c, wms_breaker *b, const wms_breaker_permit *permit,
				const wms_error *err, int *recorded)
{
	wms_outcome outcome =
		wms__call_outcome(err, c->cb.error_filter, c->cb.payload, recorded);

	if (*recorded)
		wms_breaker_record(b, permit, outcome);
	else
		wms_breaker_release(b, permit);
	return outcome;
}

/* Validate the arguments and build the envelope for one attempt (the
 * builders check their input first, without allocating; WS-Security needs
 * a fresh nonce and created per message, so with it every attempt builds
 * anew). */
static wms_status build(wms_client *c, wms__xml_ws *ws, const call *k, wms__buf *body,
			wms_error *err)
{
	wms__request r;
	if (k->g) {
		wms__buf_free(body);
		return wms__build_generic(body, c->soap_version, k->g->body,
					  c->wsse.mode != WMS_WSSE_NONE ? &c->wsse : NULL, err);
	}
	(void)ws;
	r.op = k->op;
	r.order = k->order;
	r.order_id = k->order_id;
	r.reason = k->reason;
	r.skus = k->skus;
	r.sku_count = k->sku_count;
	wms__buf_free(body);
	return wms__build_request_ws(ws, body, c->soap_version, &r,
				     c->wsse.mode != WMS_WSSE_NONE ? &c->wsse : NULL, err);
}

/* A call the bulkhead refused: BULKHEAD_FULL, nothing sent. */
static wms_status bulkhead_full(wms_client *c, const wms__bulkhead *bh, wms_error *err)
{
	wms__fail(err, WMS_ERR_BULKHEAD_FULL, WMS_DELIVERY_NOT_SENT,
		  "bulkhead full: %u calls in flight (max_concurrent_calls), call rejected "
		  "without sending%s",
		  (unsigned)bh->max, bh->wait_ms ? " after waiting max_wait_for_slot_ms" : "");
	err->retry_after_ms = c->timeout_ms;
	return WMS_ERR_BULKHEAD_FULL;
}

/* Runs the operation's fallback, if any, on a call refused without being
 * sent (CIRCUIT_OPEN, BULKHEAD_FULL: err->status); otherwise returns that. */
static wms_status run_fallback(wms_client *c, const call *k, wms_error *err)
{
	const wms_fallbacks *f = &c->fallbacks;
	wms_fallback_call fc;
	wms_error why = *err;
	wms_status st = err->status;
	int ran = 1;

	memset(&fc, 0, sizeof(fc));
	fc.operation = wms__op_name(k->op);
	fc.order = k->order;
	fc.order_id = k->op == WMS__OP_SUBMIT_ORDER && k->order ? k->order->order_id : k->order_id;
	fc.reason = k->reason;
	fc.skus = k->skus;
	fc.sku_count = k->sku_count;
	fc.error = &why;
	switch (k->op) {
	case WMS__OP_SUBMIT_ORDER:
		if (!f->submit_order)
			return st;
		memset(k->out, 0, sizeof(wms_submit_reply));
		st = f->submit_order(k->out, &fc, f->payload);
		((wms_submit_reply *)k->out)->from_fallback = 1;
		break;
	case WMS__OP_GET_ORDER_STATUS:
		if (!f->get_order_status)
			return st;
		memset(k->out, 0, sizeof(wms_status_reply));
		st = f->get_order_status(k->out, &fc, f->payload);
		((wms_status_reply *)k->out)->from_fallback = 1;
		break;
	case WMS__OP_CANCEL_ORDER:
		if (!f->cancel_order)
			return st;
		memset(k->out, 0, sizeof(wms_cancel_reply));
		st = f->cancel_order(k->out, &fc, f->payload);
		((wms_cancel_reply *)k->out)->from_fallback = 1;
		break;
	case WMS__OP_GET_STOCK_LEVEL: {
		wms_stock_reply **o = k->out;
		if (!f->get_stock_level)
			return st;
		*o = NULL;
		st = f->get_stock_level(o, &fc, f->payload);
		if (*o)
			(*o)->from_fallback = 1;
		break;
	}
	case WMS__OP_COUNT:
		ran = 0;
		break;
	}
	if (!ran)
		return st;
	err->status = st;
	err->delivery = WMS_DELIVERY_NOT_SENT;
	err->fallback = 1;
	snprintf(err->message, sizeof(err->message), "%s: answered by the %s fallback (%s)",
		 why.status == WMS_ERR_BULKHEAD_FULL ? "bulkhead full" : "circuit breaker open",
		 fc.operation, wms_status_name(st));
	return st;
}

/* A read refused without being sent, answered from the read cache: 1, with
 * err saying so; 0 on a miss, err untouched. */
static int serve_cached(wms_client *c, const call *k, wms_error *err)
{
	uint64_t age_ms;
	wms_status why = err->status;
	if (!wms__read_cache_serve(c->read_cache, k, wms_breaker_clock_ns(c->breakers[wms__client_slot(c, k->op)]),
				   &age_ms))
		return 0;
	err->status = WMS_OK;
	err->delivery = WMS_DELIVERY_NOT_SENT;
	err->fallback = 1;
	snprintf(err->message, sizeof(err->message),
		 "%s: answered from the read cache (%s, %llu ms old)",
		 why == WMS_ERR_BULKHEAD_FULL ? "bulkhead full" : "circuit breaker open",
		 wms__op_name(k->op), (unsigned long long)age_ms);
	return 1;
}

/* A call refused without being sent (err->status CIRCUIT_OPEN or
 * BULKHEAD_FULL): for a typed read, the WMS's last good answer if the
 * cache holds a fresh one, which is better than a made-up one; else the
 * caller's fallback (typed calls only). */
wms_status wms__call_refused(wms_client *c, const call *k, wms_error *err)
{
	if (k->g)
		return err->status;
	if (c->read_cache && serve_cached(c, k, err))
		return WMS_OK;
	return c->has_fallbacks ? run_fallback(c, k, err) : err->status;
}

size_t wms__call_slot(wms_client *c, const call *k)
{
	return k->g ? k->slot : wms__client_slot(c, k->op);
}

int wms__call_admit(wms_client *c, const call *k, int may_wait, wms__attempts *at,
		    wms_status *final, wms_error *err)
{
	size_t slot = wms__call_slot(c, k);
	wms_breaker *b = c->breakers[slot];
	wms__bulkhead *bh = &c->bulkheads[slot];
	const char *opname = k->g ? k->g->opts->operation : wms__op_name(k->op);
	uint32_t open_for;
	int in_slot;

	memset(at, 0, sizeof(*at));
	at->b = b;
	at->bh = bh;
	at->delivery = WMS_DELIVERY_NOT_SENT;
	at->timeout_ms = c->timeout_ms;
	wms_error_clear(err);
	wms__strlcpy(err->operation, opname, sizeof(err->operation));
	/* A free slot; or, when none is and the breaker would let the call
	 * through, the wait for one, before the breaker's permit: the wait is
	 * not the WMS's time (a permit's clock runs from its acquire), and no
	 * half-open trial is held while waiting. */
	in_slot = wms__bulkhead_try(bh);
	if (!in_slot && may_wait && bh->wait_ms && !breaker_open_now(b, &open_for)) {
		if (!wms__bulkhead_wait(bh)) {
			bulkhead_full(c, bh, err);
			*final = wms__call_refused(c, k, err);
			return 0;
		}
		in_slot = 1;
	}
	/* The breaker speaks first: open, it refuses, slot or none. */
	if (ask_breaker(b, &at->permit, err) == WMS_ERR_CIRCUIT_OPEN) {
		if (in_slot)
			wms__bulkhead_leave(bh);
		*final = wms__call_refused(c, k, err);
		return 0;
	}
	if (!in_slot) {
		/* nothing was tried: the permit goes back unrecorded */
		wms_breaker_release(b, &at->permit);
		wms__bulkhead_refused(bh);
		bulkhead_full(c, bh, err);
		*final = wms__call_refused(c, k, err);
		return 0;
	}
	return 1;
}

/* "<client's prefix>-<this call's number, at least 6 digits>": "%s-%06llu",
 * written without snprintf (every call pays for it). The prefix (at most 15
 * bytes), the dash and 20 digits fit in correlation_id. */
_Static_assert(sizeof(((wms_client *)0)->id_prefix) + 1 + WMS__UINT_TEXT_MAX <=
		       sizeof(((wms_error *)0)->correlation_id),
	       "correlation_id holds the prefix, a dash and any call number");

static void correlation_id(wms_error *err, wms_client *c)
{
	size_t n = strlen(c->id_prefix);
	memcpy(err->correlation_id, c->id_prefix, n);
	err->correlation_id[n] = '-';
	wms__format_uint(err->correlation_id + n + 1,
			 atomic_fetch_add_explicit(&c->call_seq, 1, memory_order_relaxed) + 1, 6);
}

wms_status wms__call_first(wms_client *c, wms__xml_ws *ws, const call *k, wms__buf *body,
			   wms__attempts *at, wms_error *err)
{
	wms_status st = build(c, ws, k, body, err);
	if (st != WMS_OK) {
		wms_breaker_release(at->b, &at->permit);
		return st;
	}
	correlation_id(err, c);
	if (c->retry.max_attempts > 1) {
		uint64_t start = wms__now_ns();
		at->deadline = start + (uint64_t)c->timeout_ms * 1000000u;
		at->rng = start ^ (uint64_t)(uintptr_t)at;
	}
	at->attempt = 1;
	err->attempts = 1;
	return WMS_OK;
}

int wms__call_after(wms_client *c, const call *k, wms__attempts *at, wms_status st,
		    wms_error *err, uint64_t *pause_ns)
{
	wms_outcome outcome;
	int recorded;
	uint64_t now, pause;
	uint32_t asked;

	at->delivery = wms__merge_delivery(at->attempt == 1 ? WMS_DELIVERY_NOT_SENT : at->delivery,
					   err->delivery);
	err->delivery = at->delivery;
	outcome = tell_breaker(c, at->b, &at->permit, err, &recorded);
	if (at->attempt >= c->retry.max_attempts ||
	    !wms__retryable(&c->retry, st, outcome, recorded, at->delivery) ||
	    /* a request not known to be idempotent goes again only if it
	     * provably did not leave */
	    (k->g && !k->g->opts->idempotent && at->delivery != WMS_DELIVERY_NOT_SENT))
		return 0;
	/* If this attempt opened the breaker, the retry would be refused:
	 * stop now rather than after the pause (or at the deadline check). */
	asked = err->retry_after_ms; /* the reply's Retry-After (call_reply) */
	if (breaker_refuses(at->b, &err->retry_after_ms)) {
		/* the later of the two: the WMS's word is not cut short */
		if (asked > err->retry_after_ms)
			err->retry_after_ms = asked;
		return 0;
	}
	err->retry_after_ms = asked;
	now = wms__now_ns();
	pause = wms__backoff_ns(&c->retry, at->attempt, &at->rng);
	/* never sooner than the WMS asked */
	if ((uint64_t)asked * 1000000u > pause)
		pause = (uint64_t)asked * 1000000u;
	/* the next attempt needs time left after its pause: at least 1 ms */
	if (now + pause + 1000000u >= at->deadline)
		return 0;
	*pause_ns = pause;
	return 1;
}

int wms__call_again(wms_client *c, wms__xml_ws *ws, const call *k, wms__buf *body,
		    wms__attempts *at, wms_status *st, wms_error *err)
{
	uint64_t now = wms__now_ns();
	wms_status prev = *st;

	if (now + 1000000u >= at->deadline)
		return 0;
	at->timeout_ms = (uint32_t)((at->deadline - now) / 1000000u);
	{
		/* Never after CIRCUIT_OPEN: keep the last real error, and the
		 * later of its Retry-After and the breaker's hint. */
		wms_error open_err = *err;
		if (ask_breaker(at->b, &at->permit, &open_err) == WMS_ERR_CIRCUIT_OPEN) {
			if (open_err.retry_after_ms > err->retry_after_ms)
				err->retry_after_ms = open_err.retry_after_ms;
			return 0;
		}
	}
	/* a fresh error for the attempt; the merged delivery is kept aside */
	{
		char op[sizeof(err->operation)], id[sizeof(err->correlation_id)];
		memcpy(op, err->operation, sizeof(op));
		memcpy(id, err->correlation_id, sizeof(id));
		wms_error_clear(err);
		memcpy(err->operation, op, sizeof(op));
		memcpy(err->correlation_id, id, sizeof(id));
	}
	at->attempt++;
	err->attempts = at->attempt;
	if (c->wsse.mode != WMS_WSSE_NONE && (*st = build(c, ws, k, body, err)) != WMS_OK) {
		/* This attempt was never made, the earlier ones were: the
		 * call's delivery is theirs, UNKNOWN once one may have
		 * arrived (NOMEM after the request was sent), and the
		 * message keeps the last one's status. */
		size_t n = strlen(err->message);
		wms_breaker_release(at->b, &at->permit);
		err->attempts = at->attempt - 1;
		err->delivery = wms__merge_delivery(at->delivery, WMS_DELIVERY_NOT_SENT);
		snprintf(err->message + n, sizeof(err->message) - n,
			 " (attempt %u not sent; attempt %u: %s)", at->attempt, at->attempt - 1,
			 wms_status_name(prev));
		return 0;
	}
	return 1;
}

void wms__call_end(wms_client *c, const call *k, wms__attempts *at, wms_status st)
{
	wms__bulkhead_leave(at->bh);
	if (st == WMS_OK && c->read_cache && !k->g)
		wms__read_cache_store(c->read_cache, k, wms_breaker_clock_ns(at->b));
}

wms_status wms__perform(wms_client *c, const call *k, wms_error *err)
{
	wms__attempts at;
	wms__buf body = { 0 };
	wms__xml_ws *ws;
	uint64_t pause;
	wms_status st;

	if ((st = wms__client_check_process(c, err)) != WMS_OK)
		return st;
	if (!wms__call_admit(c, k, 1, &at, &st, err))
		return st;
	ws = wms__xml_pool_take(c->xml_pool);
	st = wms__call_first(c, ws, k, &body, &at, err);
	if (st == WMS_OK)
		for (;;) {
			st = exchange(c, ws, k, &body, at.timeout_ms, err);
			if (!wms__call_after(c, k, &at, st, err, &pause))
				break;
			wms__sleep_ns(pause);
			if (!wms__call_again(c, ws, k, &body, &at, &st, err))
				break;
		}
	wms__xml_pool_give(c->xml_pool, ws);
	wms__buf_free(&body);
	wms__call_end(c, k, &at, st);
	return st;
}

/* ---- the operations --------------------------------------------------------- */

#define NULL_ARG(err, what)                                                                  \
	(wms_error_clear(err),                                                               \
	 wms__fail((err), WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT, "%s is NULL", (what)))

wms_status wms_submit_order(wms_submit_reply *out, wms_client *c, const wms_order *order,
			    wms_error *err)
{
	wms_submit_reply tmp;
	wms_error local;
	call k = { WMS__OP_SUBMIT_ORDER, NULL, 0, NULL, NULL, NULL, NULL, 0, NULL };

	if (!c || !order)
		return NULL_ARG(err, c ? "order" : "client");
	k.order = order;
	k.out = out ? out : &tmp;
	return wms__perform(c, &k, err ? err : &local);
}

wms_status wms_get_order_status(wms_status_reply *out, wms_client *c, const char *order_id,
				wms_error *err)
{
	wms_status_reply tmp;
	wms_error local;
	call k = { WMS__OP_GET_ORDER_STATUS, NULL, 0, NULL, NULL, NULL, NULL, 0, NULL };

	if (!c || !order_id)
		return NULL_ARG(err, c ? "order_id" : "client");
	k.order_id = order_id;
	k.out = out ? out : &tmp;
	return wms__perform(c, &k, err ? err : &local);
}

wms_status wms_cancel_order(wms_cancel_reply *out, wms_client *c, const char *order_id,
			    const char *reason, wms_error *err)
{
	wms_cancel_reply tmp;
	wms_error local;
	call k = { WMS__OP_CANCEL_ORDER, NULL, 0, NULL, NULL, NULL, NULL, 0, NULL };

	if (!c || !order_id)
		return NULL_ARG(err, c ? "order_id" : "client");
	k.order_id = order_id;
	k.reason = reason;
	k.out = out ? out : &tmp;
	return wms__perform(c, &k, err ? err : &local);
}

wms_status wms_get_stock_level(wms_stock_reply **out, wms_client *c, const char *const *skus,
			       size_t sku_count, wms_error *err)
{
	wms_stock_reply *reply = NULL;
	wms_error local;
	wms_status st;
	call k = { WMS__OP_GET_STOCK_LEVEL, NULL, 0, NULL, NULL, NULL, NULL, 0, NULL };

	if (out)
		*out = NULL;
	if (!c || !out || !skus)
		return NULL_ARG(err, !c ? "client" : !out ? "out" : "skus");
	k.skus = skus;
	k.sku_count = sku_count;
	k.out = &reply;
	st = wms__perform(c, &k, err ? err : &local);
	if (st == WMS_OK)
		*out = reply;
	else
		wms_stock_reply_free(reply);
	return st;
}
