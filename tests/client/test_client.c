/* The client end to end over a scripted in-memory transport: every status,
 * its delivery, and what it does to the breaker. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include <stdlib.h>
#include "wms/wms.h"
#include "wms/sys/alloc.h"
#include "wms/sys/transport.h"



#include "bounds.h"
#include "client_fx.h"
#include "build_kind.h"
#include "count_alloc.h"
#include "hostile_xml.h"
#include "internal.h" /* wms__now_ns */
#include "client/client.h" /* call_seq: the correlation ids' counter */


static const char server_fault[] =
	ENV_OPEN "<s:Fault><faultcode>s:Server</faultcode><faultstring>database down</faultstring>"
	"<detail><w:WmsFault xmlns:w=\"urn:libwms:warehouse:1\"><w:code>INTERNAL</w:code>"
	"</w:WmsFault></detail></s:Fault>" ENV_CLOSE;

static const char client_fault[] =
	ENV_OPEN "<s:Fault><faultcode>s:Client</faultcode><faultstring>unknown SKU</faultstring>"
	"<detail><w:WmsFault xmlns:w=\"urn:libwms:warehouse:1\"><w:code>UNKNOWN_SKU</w:code>"
	"</w:WmsFault></detail></s:Fault>" ENV_CLOSE;

static const wms_order_line one_line[] = { { "SKU-1", 2 } };

static wms_order order(const char *id)
{
	wms_order o = WMS_ORDER_INIT;
	o.order_id = id;
	o.ship_to.name = "Ada Lovelace";
	o.ship_to.line1 = "1 Analytical Way";
	o.ship_to.city = "London";
	o.ship_to.postal_code = "N1 9GU";
	o.ship_to.country = "GB";
	o.lines = one_line;
	o.line_count = 1;
	return o;
}

static void script(fx *x, long status, const char *ctype, const char *body)
{
	memset(&x->t->next, 0, sizeof(x->t->next));
	x->t->next.status = status;
	x->t->next.content_type = ctype;
	x->t->next.body = body;
}

static void script_fail(fx *x, wms_status st, wms_delivery d)
{
	memset(&x->t->next, 0, sizeof(x->t->next));
	x->t->next.fail = st;
	x->t->next.delivery = d;
}

static wms_status submit(fx *x, wms_error *err)
{
	wms_order o = order("ORD-1");
	return wms_submit_order(NULL, x->c, &o, err);
}

static wms_breaker_snapshot snap(fx *x)
{
	wms_breaker_snapshot s;
	wms_breaker_snapshot_get(&s, wms_client_breaker(x->c));
	return s;
}

/* ---- tests ----------------------------------------------------------------- */

static void submit_ok_11(void **state)
{
	fx x = setup_client(WMS_SOAP_11);
	wms_order o = order("ORD-1");
	wms_submit_reply r;
	wms_error err;
	(void)state;
	script(&x, 200, "text/xml; charset=utf-8", fx_submit_ok);
	assert_int_equal(wms_submit_order(&r, x.c, &o, &err), WMS_OK);
	assert_string_equal(r.wms_reference, "WMS-000042");
	assert_string_equal(r.order_id, "ORD-1");
	assert_int_equal(r.state, WMS_ORDER_STATE_RECEIVED);
	assert_int_equal(r.duplicate, 0);
	assert_int_equal(err.status, WMS_OK);
	assert_int_equal(err.delivery, WMS_DELIVERY_ANSWERED);
	assert_string_equal(x.t->last_action, "urn:libwms:warehouse:1/SubmitOrder");
	assert_string_equal(x.t->last_ctype, "text/xml; charset=utf-8");
	assert_non_null(strstr(x.t->last_body, "ORD-1"));
	assert_int_equal(snap(&x).successes, 1);
	wms_client_free(x.c);
}

/* The correlation id: "<client's prefix>-<call number, 6 digits or more>",
 * the same in the error and on the wire; numbered from 1 by the client's
 * own count, which is set only three times (to 0, to just under a million
 * and to just under 2^64: a 20-digit number, the longest id there is) and
 * counts on by itself from each. */
static void correlation_ids_count_the_calls(void **state)
{
	static const struct {
		int set; /* set the counter to seq before this call */
		uint64_t seq;
		const char *num;
	} at[] = {
		{ 1, 0, "000001" },
		{ 0, 0, "000002" },
		{ 1, 999997, "999998" },
		{ 0, 0, "999999" },
		{ 0, 0, "1000000" },
		{ 0, 0, "1000001" },
		{ 1, UINT64_MAX - 2, "18446744073709551614" },
		{ 0, 0, "18446744073709551615" },
		{ 0, 0, "000000" },
		{ 0, 0, "000001" },
	};
	fx x = setup_client(WMS_SOAP_11);
	char prefix[40], want[64];
	wms_error err;
	size_t i, n;
	(void)state;
	for (i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
		if (at[i].set)
			atomic_store(&x.c->call_seq, at[i].seq);
		script(&x, 200, "text/xml", fx_submit_ok);
		assert_int_equal(submit(&x, &err), WMS_OK);
		if (i == 0) {
			/* "wms-" and 8 hex digits, the client's own */
			n = strlen(err.correlation_id);
			assert_int_equal(n, 4 + 8 + 1 + 6);
			assert_memory_equal(err.correlation_id, "wms-", 4);
			assert_int_equal(strspn(err.correlation_id + 4, "0123456789abcdef"), 8);
			memcpy(prefix, err.correlation_id, 12);
			prefix[12] = '\0';
		}
		snprintf(want, sizeof(want), "%s-%s", prefix, at[i].num);
		assert_string_equal(err.correlation_id, want);
		assert_string_equal(x.t->last_correlation_id, want);
	}
	wms_client_free(x.c);
}

static void submit_ok_12_content_type(void **state)
{
	fx x = setup_client(WMS_SOAP_12);
	(void)state;
	script(&x, 200, "application/soap+xml",
	       "<e:Envelope xmlns:e=\"http://www.w3.org/2003/05/soap-envelope\"><e:Body>"
	       "<SubmitOrderResponse xmlns=\"urn:libwms:warehouse:1\"><clientOrderId>ORD-1</clientOrderId>"
	       "<wmsReference>R1</wmsReference><state>ALLOCATED</state><duplicate>true</duplicate>"
	       "</SubmitOrderResponse></e:Body></e:Envelope>");
	assert_int_equal(submit(&x, NULL), WMS_OK);
	assert_string_equal(x.t->last_ctype, "application/soap+xml; charset=utf-8; "
					     "action=\"urn:libwms:warehouse:1/SubmitOrder\"");
	assert_non_null(strstr(x.t->last_body, "http://www.w3.org/2003/05/soap-envelope"));
	wms_client_free(x.c);
}

static void breaker_opens_and_nothing_is_sent(void **state)
{
	fx x = setup_client(WMS_SOAP_11);
	wms_error err;
	int i;
	(void)state;
	script_fail(&x, WMS_ERR_CONNECT, WMS_DELIVERY_NOT_SENT);
	for (i = 0; i < 5; i++) {
		assert_int_equal(submit(&x, &err), WMS_ERR_CONNECT);
		assert_int_equal(err.delivery, WMS_DELIVERY_NOT_SENT);
		assert_string_equal(err.operation, "SubmitOrder");
	}
	assert_int_equal(wms_breaker_state_get(wms_client_breaker(x.c)), WMS_BREAKER_STATE_OPEN);
	clock_now += 10000 * MS;
	assert_int_equal(submit(&x, &err), WMS_ERR_CIRCUIT_OPEN);
	assert_int_equal(x.t->sends, 5); /* nothing sent */
	assert_int_equal(err.delivery, WMS_DELIVERY_NOT_SENT);
	assert_int_equal(err.retry_after_ms, 20000);
	assert_true(strlen(err.message) > 0);
	assert_true(wms_error_is_retryable(&err));
	/* every operation goes through the breaker */
	assert_int_equal(wms_get_order_status(NULL, x.c, "ORD-1", &err), WMS_ERR_CIRCUIT_OPEN);
	assert_int_equal(wms_cancel_order(NULL, x.c, "ORD-1", NULL, &err), WMS_ERR_CIRCUIT_OPEN);
	assert_int_equal(x.t->sends, 5);
	/* after the open duration one probe goes; success closes */
	clock_now += 20000 * MS;
	script(&x, 200, "text/xml", fx_submit_ok);
	assert_int_equal(submit(&x, &err), WMS_OK);
	assert_int_equal(x.t->sends, 6);
	assert_int_equal(wms_breaker_state_get(wms_client_breaker(x.c)), WMS_BREAKER_STATE_CLOSED);
	wms_client_free(x.c);
}

static void server_fault_counts_as_failure(void **state)
{
	fx x = setup_client(WMS_SOAP_11);
	wms_error err;
	(void)state;
	script(&x, 500, "text/xml; charset=utf-8", server_fault);
	assert_int_equal(submit(&x, &err), WMS_ERR_SOAP_FAULT);
	assert_int_equal(err.delivery, WMS_DELIVERY_ANSWERED);
	assert_int_equal(err.http_status, 500);
	assert_string_equal(err.fault_code, "Server");
	assert_string_equal(err.fault_string, "database down");
	assert_string_equal(err.wms_code, "INTERNAL");
	assert_int_equal(snap(&x).failures, 1);
	assert_int_equal(snap(&x).consecutive_failures, 1);
	wms_client_free(x.c);
}

static void client_fault_is_not_a_failure(void **state)
{
	fx x = setup_client(WMS_SOAP_11);
	wms_error err;
	int i;
	(void)state;
	script(&x, 500, "text/xml", client_fault);
	for (i = 0; i < 10; i++) {
		assert_int_equal(submit(&x, &err), WMS_ERR_SOAP_FAULT);
		assert_string_equal(err.fault_code, "Client");
		assert_string_equal(err.wms_code, "UNKNOWN_SKU");
		assert_int_equal(err.delivery, WMS_DELIVERY_ANSWERED);
	}
	assert_false(wms_error_is_retryable(&err));
	assert_int_equal(wms_breaker_state_get(wms_client_breaker(x.c)), WMS_BREAKER_STATE_CLOSED);
	assert_int_equal(snap(&x).ignored, 10);
	assert_int_equal(snap(&x).failures, 0);
	wms_client_free(x.c);
}

/* A reply in the other SOAP version than the request's is read as what
 * its Envelope says (README.md, "Interoperability"): a success as a
 * success, a fault as a fault, both ways. */
static void reply_in_the_other_soap_version(void **state)
{
	static const char submit_ok_12[] =
		"<e:Envelope xmlns:e=\"http://www.w3.org/2003/05/soap-envelope\"><e:Body>"
		"<SubmitOrderResponse xmlns=\"urn:libwms:warehouse:1\"><clientOrderId>ORD-1</clientOrderId>"
		"<wmsReference>R12</wmsReference><state>RECEIVED</state><duplicate>false</duplicate>"
		"</SubmitOrderResponse></e:Body></e:Envelope>";
	static const char fault_12[] =
		"<e:Envelope xmlns:e=\"http://www.w3.org/2003/05/soap-envelope\"><e:Body><e:Fault>"
		"<e:Code><e:Value>e:Sender</e:Value></e:Code>"
		"<e:Reason><e:Text xml:lang=\"en\">unknown SKU</e:Text></e:Reason>"
		"<e:Detail><w:WmsFault xmlns:w=\"urn:libwms:warehouse:1\"><w:code>UNKNOWN_SKU</w:code>"
		"</w:WmsFault></e:Detail></e:Fault></e:Body></e:Envelope>";
	static const char version_mismatch_11[] =
		ENV_OPEN "<s:Fault><faultcode>s:VersionMismatch</faultcode>"
		"<faultstring>SOAP 1.1 only</faultstring></s:Fault>" ENV_CLOSE;
	fx x = setup_client(WMS_SOAP_11);
	wms_submit_reply r;
	wms_order o = order("ORD-1");
	wms_error err;
	(void)state;

	/* a SOAP 1.1 request, SOAP 1.2 replies */
	script(&x, 200, "application/soap+xml; charset=utf-8", submit_ok_12);
	assert_int_equal(wms_submit_order(&r, x.c, &o, &err), WMS_OK);
	assert_string_equal(r.wms_reference, "R12");
	assert_string_equal(x.t->last_ctype, "text/xml; charset=utf-8");
	script(&x, 500, "application/soap+xml", fault_12);
	assert_int_equal(submit(&x, &err), WMS_ERR_SOAP_FAULT);
	assert_string_equal(err.fault_code, "Sender");
	assert_string_equal(err.fault_string, "unknown SKU");
	assert_string_equal(err.wms_code, "UNKNOWN_SKU");
	wms_client_free(x.c);

	/* a SOAP 1.2 request, SOAP 1.1 replies: the answer, and the
	 * VersionMismatch fault a SOAP 1.1 node gives a 1.2 envelope */
	x = setup_client(WMS_SOAP_12);
	script(&x, 200, "text/xml", fx_submit_ok);
	assert_int_equal(wms_submit_order(&r, x.c, &o, &err), WMS_OK);
	assert_string_equal(r.wms_reference, "WMS-000042");
	assert_non_null(strstr(x.t->last_ctype, "application/soap+xml"));
	script(&x, 500, "text/xml", version_mismatch_11);
	assert_int_equal(submit(&x, &err), WMS_ERR_SOAP_FAULT);
	assert_int_equal(err.delivery, WMS_DELIVERY_ANSWERED);
	assert_string_equal(err.fault_code, "VersionMismatch");
	assert_false(wms_error_is_retryable(&err));
	assert_int_equal(snap(&x).failures, 0); /* the request was refused, the WMS is well */
	wms_client_free(x.c);
}

/* node-soap's default fault detail, no namespace anywhere. */
static void unqualified_fault_detail(void **state)
{
	static const char fault[] =
		ENV_OPEN "<s:Fault><faultcode>s:Client</faultcode><faultstring>unknown SKU</faultstring>"
		"<detail><WmsFault><code>UNKNOWN_SKU</code><message>SKU-9 is not stocked</message>"
		"</WmsFault></detail></s:Fault>" ENV_CLOSE;
	fx x = setup_client(WMS_SOAP_11);
	wms_error err;
	(void)state;
	script(&x, 500, "text/xml; charset=utf-8", fault);
	assert_int_equal(submit(&x, &err), WMS_ERR_SOAP_FAULT);
	assert_int_equal(err.status, WMS_ERR_SOAP_FAULT);
	assert_int_equal(err.delivery, WMS_DELIVERY_ANSWERED);
	assert_string_equal(err.fault_code, "Client");
	assert_string_equal(err.fault_string, "unknown SKU");
	assert_string_equal(err.wms_code, "UNKNOWN_SKU");
	assert_string_equal(err.message, "SOAP fault Client: unknown SKU [UNKNOWN_SKU]");
	assert_false(wms_error_is_retryable(&err));
	assert_int_equal(snap(&x).failures, 0);
	wms_client_free(x.c);
}

static void html_502_from_a_proxy(void **state)
{
	fx x = setup_client(WMS_SOAP_11);
	wms_error err;
	(void)state;
	script(&x, 502, "text/html",
	       "<!DOCTYPE html><html><head><title>502 Bad Gateway</title></head>"
	       "<body><h1>Bad Gateway</h1></body></html>");
	assert_int_equal(submit(&x, &err), WMS_ERR_HTTP);
	assert_int_equal(err.http_status, 502);
	assert_int_equal(err.delivery, WMS_DELIVERY_UNKNOWN);
	assert_non_null(strstr(err.message, "502"));
	assert_int_equal(snap(&x).failures, 1);
	wms_client_free(x.c);
}

static void http_4xx_is_not_a_failure(void **state)
{
	fx x = setup_client(WMS_SOAP_11);
	wms_error err;
	(void)state;
	script(&x, 404, "text/plain", "no such path");
	assert_int_equal(submit(&x, &err), WMS_ERR_HTTP);
	assert_int_equal(err.http_status, 404);
	assert_int_equal(err.delivery, WMS_DELIVERY_ANSWERED);
	assert_int_equal(snap(&x).failures, 0);
	assert_int_equal(snap(&x).ignored, 1);
	wms_client_free(x.c);
}

static void bad_replies_with_200(void **state)
{
	struct {
		const char *ctype, *body;
		wms_status expect;
	} cases[] = {
		{ "text/html", "<html><body>maintenance</body></html>", WMS_ERR_NOT_XML },
		{ "text/xml", "", WMS_ERR_NOT_XML },
		{ "text/xml", ENV_OPEN "<SubmitOrderResponse xmlns=\"urn:libwms:warehouse:1\"><clientOrd",
		  WMS_ERR_TRUNCATED },
		{ "text/xml", ENV_OPEN "<GetStockLevelResponse xmlns=\"urn:libwms:warehouse:1\"><level>"
			      "<sku>A</sku><onHand>1</onHand><reserved>0</reserved><available>1</available>"
			      "</level></GetStockLevelResponse>" ENV_CLOSE, WMS_ERR_UNEXPECTED_REPLY },
		{ "text/xml", "<?xml version=\"1.0\"?><!DOCTYPE x [<!ENTITY e \"boom\">]>" ENV_OPEN ENV_CLOSE,
		  WMS_ERR_UNSAFE_XML },
	};
	size_t i;
	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		fx x = setup_client(WMS_SOAP_11);
		wms_error err;
		script(&x, 200, cases[i].ctype, cases[i].body);
		assert_int_equal(submit(&x, &err), cases[i].expect);
		assert_int_equal(err.status, cases[i].expect);
		assert_int_equal(err.delivery, WMS_DELIVERY_UNKNOWN);
		assert_int_equal(err.http_status, 200);
		assert_true(strlen(err.message) > 0);
		assert_null(strchr(err.message, '\n'));
		assert_int_equal(snap(&x).failures, 1);
		wms_client_free(x.c);
	}
}

static void reply_for_another_request(void **state)
{
	fx x = setup_client(WMS_SOAP_11);
	wms_stock_reply *stock = NULL;
	const char *skus[] = { "SKU-1", "SKU-2" };
	wms_error err;
	(void)state;
	script(&x, 200, "text/xml",
	       ENV_OPEN "<SubmitOrderResponse xmlns=\"urn:libwms:warehouse:1\">"
	       "<clientOrderId>ORD-2</clientOrderId><wmsReference>W</wmsReference>"
	       "<state>RECEIVED</state><duplicate>false</duplicate></SubmitOrderResponse>" ENV_CLOSE);
	assert_int_equal(submit(&x, &err), WMS_ERR_UNEXPECTED_REPLY);
	assert_int_equal(err.delivery, WMS_DELIVERY_UNKNOWN);
	assert_non_null(strstr(err.message, "ORD-2"));
	script(&x, 200, "text/xml",
	       ENV_OPEN "<GetStockLevelResponse xmlns=\"urn:libwms:warehouse:1\">"
	       "<level><sku>SKU-2</sku><onHand>1</onHand><reserved>0</reserved><available>1</available></level>"
	       "<level><sku>SKU-1</sku><onHand>1</onHand><reserved>0</reserved><available>1</available></level>"
	       "</GetStockLevelResponse>" ENV_CLOSE);
	assert_int_equal(wms_get_stock_level(&stock, x.c, skus, 2, &err), WMS_ERR_UNEXPECTED_REPLY);
	assert_null(stock);
	assert_int_equal(snap(&x).failures, 2);
	wms_client_free(x.c);
}

static void transport_failures_keep_their_delivery(void **state)
{
	struct {
		wms_status st;
		wms_delivery d;
	} cases[] = {
		{ WMS_ERR_TIMEOUT, WMS_DELIVERY_UNKNOWN },
		{ WMS_ERR_TIMEOUT, WMS_DELIVERY_NOT_SENT },
		{ WMS_ERR_TRANSPORT, WMS_DELIVERY_UNKNOWN },
		{ WMS_ERR_TLS, WMS_DELIVERY_NOT_SENT },
		{ WMS_ERR_TRUNCATED, WMS_DELIVERY_UNKNOWN },
		{ WMS_ERR_TOO_LARGE, WMS_DELIVERY_UNKNOWN },
	};
	size_t i;
	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		fx x = setup_client(WMS_SOAP_11);
		wms_error err;
		script_fail(&x, cases[i].st, cases[i].d);
		assert_int_equal(submit(&x, &err), cases[i].st);
		assert_int_equal(err.delivery, cases[i].d);
		assert_int_equal(snap(&x).failures, 1);
		wms_client_free(x.c);
	}
}

static void fixture_mismatch_and_nomem_say_nothing_to_the_breaker(void **state)
{
	fx x = setup_client(WMS_SOAP_11);
	wms_error err;
	int i;
	(void)state;
	script_fail(&x, WMS_ERR_FIXTURE, WMS_DELIVERY_NOT_SENT);
	for (i = 0; i < 10; i++)
		assert_int_equal(submit(&x, &err), WMS_ERR_FIXTURE);
	assert_int_equal(snap(&x).permitted, 0);
	assert_int_equal(wms_breaker_state_get(wms_client_breaker(x.c)), WMS_BREAKER_STATE_CLOSED);
	wms_client_free(x.c);
}

/* What is done with the reply's bytes keeps the call's deadline: a reply
 * of 2 MiB handed over once the deadline has passed (the fake transport
 * does not keep it) stops with TIMEOUT at the scan's first look at the
 * clock, after 1 MiB (delivery UNKNOWN: the WMS may have acted on the
 * request), whatever the machine's speed; twice on one client. With time
 * to spare the same reply is read. */
static void reading_the_reply_keeps_the_deadline(void **state)
{
	const tk_kind kind = tk_build_kind();
	/* 100 ms past the deadline at most; instrumented code scans and parses
	 * slower (under TSan on a busy machine the scan ran 200 ms over, and
	 * reading the whole reply took more than 400 ms) */
	const uint32_t timeout = kind == TK_VALGRIND ? 4000 : kind == TK_PLAIN ? 400 : 2000,
		       slack = kind == TK_VALGRIND ? 1000 : kind == TK_PLAIN ? 100 : 500;
	wms_client_options o = WMS_CLIENT_OPTIONS_INIT;
	hx_buf x = { 0 }, body = { 0 };
	hx_parts pt = { 0 };
	wms_error err;
	int round;
	fx f;
	(void)state;
	while (x.len < (2u << 20)) { /* ~25 ms of libxml2's time here, within every limit */
		hx_put(&x, "<e");
		hx_attrs(&x, 200, "a");
		hx_put(&x, "/>");
	}
	pt.resp_before = x.data;
	hx_submit_reply(&body, "ORD-1", &pt);
	o.timeout_ms = timeout;
	o.max_reply_bytes = 8u << 20;
	o.breaker_options.failure_threshold = 100;
	f = setup_client_with(&o);
	for (round = 0; round < 2; round++) {
		uint64_t t0, ms;
		wms_status st;
		script(&f, 200, "text/xml; charset=utf-8", body.data);
		f.t->next.sleep_ms = timeout + 20;
		t0 = wms__now_ns();
		st = submit(&f, &err);
		ms = (wms__now_ns() - t0) / MS;
		if (st != WMS_ERR_TIMEOUT)
			fail_msg("round %d: %s (%s), want TIMEOUT", round, wms_status_name(st),
				 err.message);
		assert_int_equal(err.delivery, WMS_DELIVERY_UNKNOWN);
		assert_non_null(strstr(err.message, "ran past the call's deadline"));
		if (ms > timeout + 20 + slack)
			fail_msg("took %llu ms with timeout_ms %u, handed over at %u", (unsigned long long)ms,
				 timeout, timeout + 20);
		script(&f, 200, "text/xml; charset=utf-8", body.data);
		assert_int_equal(submit(&f, &err), WMS_OK);
	}
	wms_client_free(f.c);
	hx_free(&x);
	hx_free(&body);
}

static void invalid_arguments_are_not_sent(void **state)
{
	fx x = setup_client(WMS_SOAP_11);
	wms_order o = order("ORD-1");
	wms_order_line bad_line[] = { { "SKU-1", 0 } };
	wms_stock_reply *stock = (wms_stock_reply *)&o;
	const char *skus[] = { "OK-1", "bad sku" };
	wms_error err;
	int i;
	(void)state;
	for (i = 0; i < 10; i++) {
		o.lines = bad_line;
		assert_int_equal(wms_submit_order(NULL, x.c, &o, &err), WMS_ERR_INVALID_ARG);
		assert_int_equal(err.delivery, WMS_DELIVERY_NOT_SENT);
		assert_non_null(strstr(err.message, "quantity"));
	}
	o = order("");
	assert_int_equal(wms_submit_order(NULL, x.c, &o, &err), WMS_ERR_INVALID_ARG);
	o = order("ORD-1");
	o.version = 42;
	assert_int_equal(wms_submit_order(NULL, x.c, &o, &err), WMS_ERR_INVALID_ARG);
	assert_int_equal(wms_submit_order(NULL, x.c, NULL, &err), WMS_ERR_INVALID_ARG);
	assert_int_equal(wms_submit_order(NULL, NULL, &o, &err), WMS_ERR_INVALID_ARG);
	assert_int_equal(wms_get_order_status(NULL, x.c, NULL, &err), WMS_ERR_INVALID_ARG);
	assert_int_equal(wms_cancel_order(NULL, x.c, "has space", NULL, &err), WMS_ERR_INVALID_ARG);
	assert_int_equal(wms_get_stock_level(&stock, x.c, skus, 2, &err), WMS_ERR_INVALID_ARG);
	assert_null(stock);
	assert_int_equal(wms_get_stock_level(&stock, x.c, skus, 0, &err), WMS_ERR_INVALID_ARG);
	assert_int_equal(x.t->sends, 0);
	assert_int_equal(snap(&x).permitted, 0);
	assert_int_equal(snap(&x).failures, 0);
	wms_client_free(x.c);
}

static void other_operations(void **state)
{
	fx x = setup_client(WMS_SOAP_11);
	wms_status_reply sr;
	wms_cancel_reply cr;
	wms_stock_reply *stock = NULL;
	const char *skus[] = { "SKU-1", "SKU-2" };
	wms_error err;
	(void)state;
	script(&x, 200, "text/xml",
	       ENV_OPEN "<GetOrderStatusResponse xmlns=\"urn:libwms:warehouse:1\"><clientOrderId>ORD-1"
	       "</clientOrderId><wmsReference>R9</wmsReference><state>SHIPPED</state>"
	       "<updatedAt>2026-11-29T10:00:00Z</updatedAt></GetOrderStatusResponse>" ENV_CLOSE);
	assert_int_equal(wms_get_order_status(&sr, x.c, "ORD-1", &err), WMS_OK);
	assert_int_equal(sr.state, WMS_ORDER_STATE_SHIPPED);
	assert_string_equal(sr.wms_reference, "R9");
	assert_string_equal(sr.updated_at, "2026-11-29T10:00:00Z");
	assert_string_equal(x.t->last_action, "urn:libwms:warehouse:1/GetOrderStatus");

	script(&x, 200, "text/xml",
	       ENV_OPEN "<CancelOrderResponse xmlns=\"urn:libwms:warehouse:1\"><clientOrderId>ORD-1"
	       "</clientOrderId><state>CANCELLED</state><alreadyCancelled>1</alreadyCancelled>"
	       "</CancelOrderResponse>" ENV_CLOSE);
	assert_int_equal(wms_cancel_order(&cr, x.c, "ORD-1", "customer asked", &err), WMS_OK);
	assert_int_equal(cr.state, WMS_ORDER_STATE_CANCELLED);
	assert_int_equal(cr.already_cancelled, 1);
	assert_non_null(strstr(x.t->last_body, "customer asked"));

	script(&x, 200, "text/xml",
	       ENV_OPEN "<GetStockLevelResponse xmlns=\"urn:libwms:warehouse:1\">"
	       "<level><sku>SKU-1</sku><onHand>10</onHand><reserved>3</reserved><available>7</available></level>"
	       "<level><sku>SKU-2</sku><onHand>0</onHand><reserved>0</reserved><available>0</available></level>"
	       "</GetStockLevelResponse>" ENV_CLOSE);
	assert_int_equal(wms_get_stock_level(&stock, x.c, skus, 2, &err), WMS_OK);
	assert_non_null(stock);
	assert_int_equal(stock->count, 2);
	assert_string_equal(stock->levels[0].sku, "SKU-1");
	assert_int_equal(stock->levels[0].available, 7);
	assert_int_equal(stock->levels[1].on_hand, 0);
	wms_stock_reply_free(stock);

	/* a stock reply with an HTTP 500 and a fault leaves nothing allocated */
	script(&x, 500, "text/xml", server_fault);
	stock = NULL;
	assert_int_equal(wms_get_stock_level(&stock, x.c, skus, 2, &err), WMS_ERR_SOAP_FAULT);
	assert_null(stock);
	wms_client_free(x.c);
}

static void client_options_are_validated(void **state)
{
	wms_client_options o = WMS_CLIENT_OPTIONS_INIT;
	wms_client *c = NULL;
	wms_error err;
	(void)state;
	assert_int_equal(wms_client_new(&c, NULL, &err), WMS_ERR_INVALID_ARG);
	assert_int_equal(wms_client_new(&c, &o, &err), WMS_ERR_INVALID_ARG);
	assert_non_null(strstr(err.message, "endpoint"));
	o.endpoint = "ftp://wms/";
	assert_int_equal(wms_client_new(&c, &o, &err), WMS_ERR_INVALID_ARG);
	o.endpoint = "http://127.0.0.1:1/wms";
	o.timeout_ms = WMS_MAX_TIMEOUT_MS + 1;
	assert_int_equal(wms_client_new(&c, &o, &err), WMS_ERR_INVALID_ARG);
	o.timeout_ms = 0;
	o.version = WMS_CLIENT_OPTIONS_VERSION + 1;
	assert_int_equal(wms_client_new(&c, &o, &err), WMS_ERR_INVALID_ARG);
	assert_non_null(strstr(err.message, "version"));
	/* 0.2's layout (version 1) is not read as this one */
	o.version = 1;
	assert_int_equal(wms_client_new(&c, &o, &err), WMS_ERR_INVALID_ARG);
	assert_non_null(strstr(err.message, "version 1"));
	o.version = WMS_CLIENT_OPTIONS_VERSION;
	o.breaker_options.failure_rate_threshold = 500;
	assert_int_equal(wms_client_new(&c, &o, &err), WMS_ERR_INVALID_ARG);
	assert_non_null(strstr(err.message, "breaker"));
	o.breaker_options.failure_rate_threshold = 0;
	o.soap_version = (wms_soap_version)3;
	assert_int_equal(wms_client_new(&c, &o, &err), WMS_ERR_INVALID_ARG);
	assert_null(c);
	o.soap_version = WMS_SOAP_11;
	assert_int_equal(wms_client_new(&c, &o, NULL), WMS_OK);
	assert_non_null(wms_client_breaker(c));
	wms_client_free(c);
	wms_client_free(NULL);
	assert_int_equal(wms_client_options_init(&o, 9), WMS_ERR_INVALID_ARG);
	assert_int_equal(wms_client_options_init(&o, WMS_CLIENT_OPTIONS_VERSION), WMS_OK);
}

static void every_status_has_a_name_and_text(void **state)
{
	int s;
	(void)state;
	for (s = WMS_OK; s <= WMS_ERR_BULKHEAD_FULL; s++) {
		assert_string_not_equal(wms_status_name((wms_status)s), "UNKNOWN_STATUS");
		assert_string_not_equal(wms_strerror((wms_status)s), "unknown status");
	}
	assert_string_equal(wms_status_name(WMS_ERR_CIRCUIT_OPEN), "CIRCUIT_OPEN");
	assert_string_equal(wms_status_name(WMS_ERR_BULKHEAD_FULL), "BULKHEAD_FULL");
	assert_string_equal(wms_delivery_name(WMS_DELIVERY_UNKNOWN), "UNKNOWN");
	assert_string_equal(wms_status_name((wms_status)999), "UNKNOWN_STATUS");
	assert_string_equal(wms_version(), WMS_VERSION);
}

static void shared_breaker_is_not_freed(void **state)
{
	wms_client_options o = WMS_CLIENT_OPTIONS_INIT;
	wms_breaker *b;
	wms_client *c1, *c2;
	(void)state;
	assert_int_equal(wms_breaker_new(&b, NULL), WMS_OK);
	o.endpoint = "http://127.0.0.1:1/";
	o.breaker = b;
	assert_int_equal(wms_client_new(&c1, &o, NULL), WMS_OK);
	assert_int_equal(wms_client_new(&c2, &o, NULL), WMS_OK);
	assert_ptr_equal(wms_client_breaker(c1), b);
	assert_ptr_equal(wms_client_breaker(c2), b);
	wms_client_free(c1);
	wms_client_free(c2);
	wms_breaker_force_open(b); /* still alive */
	wms_breaker_free(b);
}

/* ---- names made from the options: whole, however long ------------------- */

/* The gauge samples a client gives its on_metric callback, names copied. */
typedef struct samples {
	int n;
	double value[8];
	char name[8][512];
	char breaker[8][512];
} samples;

static void on_metric_sample(const wms_metric *m, void *payload)
{
	samples *g = payload;
	if (g->n < 8) {
		g->value[g->n] = m->value;
		snprintf(g->name[g->n], sizeof(g->name[0]), "%s", m->name);
		snprintf(g->breaker[g->n], sizeof(g->breaker[0]), "%s", m->breaker);
	}
	g->n++;
}

/* `n` bytes: "p", then `fill`, ending in "z" (a cut anywhere shows). */
static char *text_of(size_t n, char fill)
{
	char *s = malloc(n + 1);
	assert_non_null(s);
	fill_text(s, n, 'p', fill, 'z');
	return s;
}

/* The state gauge is "<metric_prefix>.circuit_breaker_state" (client.h,
 * README), the prefix whole: in the initial sample and again when the
 * breaker opens (five refused submits). */
static void state_gauge_named(const char *prefix)
{
	wms_client_options o = WMS_CLIENT_OPTIONS_INIT;
	samples g = { 0 };
	char want[512];
	fx x;
	o.metric_prefix = prefix;
	o.breaker_options.open_duration_ms = 30000;
	o.callbacks.on_metric = on_metric_sample;
	o.callbacks.payload = &g;
	x = setup_client_with(&o);
	snprintf(want, sizeof(want), "%s.circuit_breaker_state", prefix ? prefix : "fulfillment");
	assert_int_equal(g.n, 1);
	assert_string_equal(g.name[0], want);
	fx_refused_submits(&x, 5);
	assert_int_equal(g.n, 2);
	assert_true(g.value[1] == 1.0);
	assert_string_equal(g.name[1], want);
	wms_client_free(x.c);
}

/* The gauge's name was made in a 128-byte buffer: a 105-byte prefix and
 * the 22 bytes of ".circuit_breaker_state" just fit, one byte more was cut
 * ("...circuit_breaker_stat"), silently. Both sides, twice on one client
 * each; and far beyond. */
static void metric_prefix_is_kept_whole(void **state)
{
	static const size_t lengths[] = { 105, 106, 300 };
	size_t i;
	(void)state;
	for (i = 0; i < sizeof(lengths) / sizeof(lengths[0]); i++) {
		char *prefix = text_of(lengths[i], 'm');
		state_gauge_named(prefix);
		free(prefix);
	}
}

/* ---- the metric prefix's bytes ------------------------------------------- */

/* What a dotted metric name (StatsD, Graphite, OpenTelemetry) may hold, as
 * client.h says: the test's own copy of the set. */
static const char metric_bytes[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.:-";

/* libwms's allocations while a prefix is checked (count_alloc.h). */
static count_alloc M;

/* wms_client_new with `prefix`, over a fresh fake transport (the client's
 * even when it refuses: cmocka sees it leak if it is not freed): refused,
 * twice in a row on one options struct, with INVALID_ARG, no client, the
 * exact message `msg`, and no allocation of libwms's made (the check comes
 * before anything is). The message never holds a control or non-ASCII byte,
 * whatever the prefix held. */
static void prefix_refused(const char *prefix, const char *msg)
{
	wms_client_options o = WMS_CLIENT_OPTIONS_INIT;
	int round;
	size_t i;
	o.endpoint = "http://wms.invalid/wms";
	o.metric_prefix = prefix;
	for (round = 0; round < 2; round++) {
		wms_client *c = (wms_client *)&o; /* must be set to NULL */
		wms_error err;
		wms_status st;
		fake *t;
		o.transport = fake_transport_new(&t);
		count_alloc_arm(&M, 0, 0);
		st = wms_client_new(&c, &o, &err);
		if (st != WMS_ERR_INVALID_ARG)
			fail_msg("prefix \"%s\": %s, not INVALID_ARG", prefix, wms_status_name(st));
		assert_null(c);
		assert_int_equal(err.delivery, WMS_DELIVERY_NOT_SENT);
		assert_string_equal(err.message, msg);
		for (i = 0; err.message[i]; i++)
			assert_true((unsigned char)err.message[i] >= 0x20 &&
				    (unsigned char)err.message[i] < 0x7f);
		assert_int_equal(M.calls, 0);
		assert_int_equal(M.live, 0);
	}
}

/* "metric_prefix must be ... (byte 0xBB at offset N)" */
static void prefix_refused_at(const char *prefix, size_t offset)
{
	char msg[128];
	snprintf(msg, sizeof(msg),
		 "metric_prefix must be one or more of [A-Za-z0-9_.:-] (byte 0x%02X at offset %zu)",
		 (unsigned)(unsigned char)prefix[offset], offset);
	prefix_refused(prefix, msg);
}

/* Whether `b` may be in a dotted metric name, by the test's set. */
static int metric_byte(int b)
{
	return b && strchr(metric_bytes, b) != NULL;
}

/* The prefix went into the gauge's name unchecked: a newline, an escape
 * sequence or a space reached the caller's on_metric (and a StatsD line,
 * a log). Refused now, INVALID_ARG naming the field and the first bad
 * byte's offset: every class at the start, in the middle and at the end;
 * NULL keeps "fulfillment"; no length bound (300 bytes with the bad byte
 * last). Every byte 0x01-0xFF at offset 0, 1 and 2 of a 3-byte prefix: the
 * set's own bytes make the gauge, in each place (a digit first too: a
 * StatsD or Graphite name may start with one), and every other byte is
 * refused at its offset. */
static void metric_prefix_is_a_metric_name(void **state)
{
	const wms_allocator al = count_alloc_hooks(&M);
	char *longest;
	int b, at;
	(void)state;

	assert_int_equal(wms_set_allocator(&al), WMS_OK);
	prefix_refused("", "metric_prefix must be one or more of [A-Za-z0-9_.:-] "
			   "(got an empty string; NULL is fulfillment)");
	prefix_refused_at("\nfulfillment", 0);
	prefix_refused_at("\x01shop", 0);
	prefix_refused_at("shop\r\nwms", 4);
	prefix_refused_at("shop\x1b[2Jwms", 4); /* an ANSI escape: clear screen */
	prefix_refused_at("shop wms", 4);
	prefix_refused_at("shop|wms", 4); /* StatsD's field separator */
	prefix_refused_at("shop/wms", 4);
	prefix_refused_at("fulfillment\t", 11);
	prefix_refused_at("fulfillment\x7f", 11);
	prefix_refused_at("caf\xc3\xa9", 3); /* UTF-8 letters too: ASCII only */
	prefix_refused_at("shop\xff", 4);
	longest = text_of(300, 'm');
	longest[299] = '\n';
	prefix_refused_at(longest, 299);
	free(longest);

	state_gauge_named(NULL);
	state_gauge_named("a");
	state_gauge_named("9lives");
	state_gauge_named("shop.wms-eu:1_A");
	state_gauge_named(metric_bytes);
	for (b = 1; b <= 0xFF; b++)
		for (at = 0; at < 3; at++) {
			char p[4] = "pqz";
			p[at] = (char)b;
			if (metric_byte(b))
				state_gauge_named(p);
			else
				prefix_refused_at(p, (size_t)at);
		}
	assert_int_equal(M.live, 0);
	assert_int_equal(wms_set_allocator(NULL), WMS_OK);
}

/* A per-operation client on breaker name `base`: every breaker is
 * "<base>.<operation>", the base whole, as wms_client_breakers lists them,
 * as wms_client_breaker_for finds them and as the gauge names them; once
 * when made and again after SubmitOrder's opens. */
static void breakers_named(const char *base)
{
	static const char *const ops[] = { "SubmitOrder", "GetOrderStatus", "CancelOrder",
					   "GetStockLevel" };
	wms_client_options o = WMS_CLIENT_OPTIONS_INIT;
	samples g = { 0 };
	wms_breaker *list[4];
	wms_breaker_snapshot s;
	char want[4][512];
	int i, round;
	fx x;
	o.breaker_scope = WMS_BREAKER_SCOPE_PER_OPERATION;
	o.breaker_options.name = base;
	o.breaker_options.open_duration_ms = 30000;
	o.callbacks.on_metric = on_metric_sample;
	o.callbacks.payload = &g;
	x = setup_client_with(&o);
	for (i = 0; i < 4; i++)
		snprintf(want[i], sizeof(want[i]), "%s.%s", base, ops[i]);
	assert_int_equal(g.n, 4); /* a first sample per breaker, in this order */
	for (i = 0; i < 4; i++)
		assert_string_equal(g.breaker[i], want[i]);
	for (round = 0; round < 2; round++) {
		assert_int_equal(wms_client_breakers(list, 4, x.c), 4);
		for (i = 0; i < 4; i++) {
			wms_breaker_snapshot_get(&s, list[i]);
			assert_string_equal(s.name, want[i]);
			wms_breaker_snapshot_get(&s, wms_client_breaker_for(x.c, ops[i]));
			assert_string_equal(s.name, want[i]);
		}
		if (round == 0)
			fx_refused_submits(&x, 5);
	}
	assert_int_equal(g.n, 5);
	assert_true(g.value[4] == 1.0);
	assert_string_equal(g.breaker[4], want[0]);
	wms_client_free(x.c);
}

/* Per-operation names were made in a 160-byte buffer, cut on a whole
 * UTF-8 character: a 144-byte base gives "<base>.GetOrderStatus" of 159
 * bytes, which fit; a 145-byte one lost that name's last byte
 * ("...GetOrderStatu"); a base whose 160th byte falls inside a character
 * ("€" at bytes 158-160) was cut before it, and then every operation's
 * breaker had the same name (one key for them all in a shared store). */
static void per_operation_breaker_names_are_whole(void **state)
{
	char *base;
	(void)state;
	base = text_of(144, 'b');
	breakers_named(base);
	free(base);
	base = text_of(145, 'b');
	breakers_named(base);
	free(base);
	base = text_of(160, 'b');
	memcpy(base + 157, "\xe2\x82\xac", 3); /* U+20AC: bytes 158 to 160 */
	breakers_named(base);
	free(base);
}

/* ---- allocation failures in wms_client_new ------------------------------ */

/* libwms's allocations and live blocks, the fail_at-th failing. */
static count_alloc A;

static wms_status new_client(wms_client **c, wms_breaker_scope scope, wms_breaker_mode mode,
			     wms_error *err)
{
	wms_client_options o = WMS_CLIENT_OPTIONS_INIT;
	fake *t;
	o.endpoint = "http://wms.invalid/wms";
	o.transport = fake_transport_new(&t); /* the client's, even when it fails */
	o.breaker_scope = scope;
	o.breaker_options.mode = mode;
	return wms_client_new(c, &o, err);
}

/* Fail the N-th allocation of wms_client_new for every N a clean run makes:
 * each run is NOMEM (or OK) and leaves no block behind; in particular a
 * per-operation breaker that cannot be made frees the ones made before it. */
static void new_client_frees_everything_on_nomem(void **state)
{
	const wms_allocator al = count_alloc_hooks(&A);
	static const wms_breaker_scope scopes[] = { WMS_BREAKER_SCOPE_PER_CLIENT,
						    WMS_BREAKER_SCOPE_PER_OPERATION };
	static const wms_breaker_mode modes[] = { WMS_BREAKER_MODE_CONSECUTIVE,
						  WMS_BREAKER_MODE_COUNT_BASED };
	size_t s, m;
	(void)state;

	assert_int_equal(wms_set_allocator(&al), WMS_OK);
	for (s = 0; s < 2; s++)
		for (m = 0; m < 2; m++) {
			wms_client *c = NULL;
			wms_error err;
			long n, total, breaker_failures = 0;

			memset(&A, 0, sizeof(A));
			assert_int_equal(new_client(&c, scopes[s], modes[m], &err), WMS_OK);
			total = A.calls;
			wms_client_free(c);
			assert_int_equal(A.live, 0);
			for (n = 1; n <= total; n++) {
				wms_status st;
				memset(&A, 0, sizeof(A));
				A.fail_at = n;
				c = NULL;
				st = new_client(&c, scopes[s], modes[m], &err);
				if (st == WMS_OK) {
					wms_client_free(c);
				} else {
					assert_int_equal(st, WMS_ERR_NOMEM);
					assert_int_equal(err.status, WMS_ERR_NOMEM);
					assert_int_equal(err.delivery, WMS_DELIVERY_NOT_SENT);
					assert_null(c);
					if (strcmp(err.message, "cannot create the breaker") == 0)
						breaker_failures++;
				}
				assert_true(A.calls >= n); /* the failure was reached */
				assert_int_equal(A.live, 0);
			}
			/* every allocation of every breaker was failed once (two or
			 * more each): past the first one too, per operation */
			assert_true(breaker_failures >=
				    (scopes[s] == WMS_BREAKER_SCOPE_PER_OPERATION ? 8 : 2));
		}
	assert_int_equal(wms_set_allocator(NULL), WMS_OK);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(submit_ok_11),
		cmocka_unit_test(correlation_ids_count_the_calls),
		cmocka_unit_test(submit_ok_12_content_type),
		cmocka_unit_test(breaker_opens_and_nothing_is_sent),
		cmocka_unit_test(server_fault_counts_as_failure),
		cmocka_unit_test(client_fault_is_not_a_failure),
		cmocka_unit_test(reply_in_the_other_soap_version),
		cmocka_unit_test(unqualified_fault_detail),
		cmocka_unit_test(html_502_from_a_proxy),
		cmocka_unit_test(http_4xx_is_not_a_failure),
		cmocka_unit_test(bad_replies_with_200),
		cmocka_unit_test(reply_for_another_request),
		cmocka_unit_test(transport_failures_keep_their_delivery),
		cmocka_unit_test(fixture_mismatch_and_nomem_say_nothing_to_the_breaker),
		cmocka_unit_test(reading_the_reply_keeps_the_deadline),
		cmocka_unit_test(invalid_arguments_are_not_sent),
		cmocka_unit_test(other_operations),
		cmocka_unit_test(client_options_are_validated),
		cmocka_unit_test(every_status_has_a_name_and_text),
		cmocka_unit_test(shared_breaker_is_not_freed),
		cmocka_unit_test(metric_prefix_is_kept_whole),
		cmocka_unit_test_teardown(metric_prefix_is_a_metric_name, count_alloc_teardown),
		cmocka_unit_test(per_operation_breaker_names_are_whole),
		cmocka_unit_test(new_client_frees_everything_on_nomem),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
