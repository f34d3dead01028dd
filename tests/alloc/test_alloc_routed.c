/*
 * Fail the N-th allocation of a whole call, for every N, with libxml2 and
 * libcurl routed through the seam (wms_global_init): wms_client_new +
 * the operation + wms_client_free against a loopback server, over a real
 * socket. Each run must end in the normal result or a clean status, with an
 * error message, and give back every block it took.
 *
 * The counting allocator puts a header on every block here, so a block the
 * seam did not hand out (e.g. one libxml2 got from malloc before the
 * switch) aborts the test when it comes back through the seam.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <curl/curl.h>
#include <libxml/parser.h>
#include <libxml/xmlerror.h>

#include "internal.h"
#include "wms/sys/alloc.h"
#include "wms/wms.h"
#include "loopback.h"
#include <libxml/tree.h>
#include "wms/call.h"
#include "soap/soap.h" /* wms__xml_doc_free */
#include "count_alloc.h"
#include "async_seen.h"
#include "client/client.h"    /* wms__async_engine */
#include "transport/engine.h" /* wms__curl_engine_idle_tokens */

/* ---- the counting, failing allocator ----------------------------------- */

/* The tests' counting allocator (tests/common/count_alloc.h), with a header
 * on every block: installed before anything was allocated. */
static count_alloc cnt = { .headers = 1 };

static void arm(long fail_at, int sticky)
{
	count_alloc_arm(&cnt, fail_at, sticky);
}

/* ---- the calls --------------------------------------------------------- */

/* Bodies as another SOAP stack sent them (tests/data/soap/replies/). */
static const char submit_ok[] =
	"<?xml version='1.0' encoding='UTF-8'?>\n"
	"<S:Envelope xmlns:S=\"http://schemas.xmlsoap.org/soap/envelope/\">\n"
	"   <S:Header>\n"
	"      <Trace xmlns=\"urn:example:trace\">abc-123</Trace>\n"
	"   </S:Header>\n"
	"   <S:Body>\n"
	"      <SubmitOrderResponse xmlns=\"urn:libwms:warehouse:1\">\n"
	"         <clientOrderId>ORD-2024-0001</clientOrderId>\n"
	"         <wmsReference>WMS:778899</wmsReference>\n"
	"         <state>RECEIVED</state>\n"
	"         <duplicate>false</duplicate>\n"
	"      </SubmitOrderResponse>\n"
	"   </S:Body>\n"
	"</S:Envelope>\n";

static const char stock_ok[] =
	"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
	"<soapenv:Envelope xmlns:soapenv=\"http://schemas.xmlsoap.org/soap/envelope/\">\n"
	" <soapenv:Body>\n"
	"  <ns1:GetStockLevelResponse xmlns:ns1=\"urn:libwms:warehouse:1\">\n"
	"   <ns1:level><ns1:sku>SKU-1</ns1:sku><ns1:onHand>120</ns1:onHand>"
	"<ns1:reserved>20</ns1:reserved><ns1:available>100</ns1:available></ns1:level>\n"
	"   <ns1:level><ns1:sku>SKU-2</ns1:sku><ns1:onHand>7</ns1:onHand>"
	"<ns1:reserved>0</ns1:reserved><ns1:available>7</ns1:available></ns1:level>\n"
	"  </ns1:GetStockLevelResponse>\n"
	" </soapenv:Body>\n"
	"</soapenv:Envelope>\n";

static const char fault_unknown_sku[] =
	"<SOAP-ENV:Envelope xmlns:SOAP-ENV=\"http://schemas.xmlsoap.org/soap/envelope/\">\n"
	"<SOAP-ENV:Body>\n"
	"<SOAP-ENV:Fault>\n"
	"<faultcode>SOAP-ENV:Client</faultcode>\n"
	"<faultstring>Unknown SKU: SKU-404</faultstring>\n"
	"<faultactor>http://wms.example/orders</faultactor>\n"
	"<detail><WmsFault xmlns=\"urn:libwms:warehouse:1\"><code> UNKNOWN_SKU </code>"
	"<retryable>false</retryable></WmsFault></detail>\n"
	"</SOAP-ENV:Fault>\n"
	"</SOAP-ENV:Body>\n"
	"</SOAP-ENV:Envelope>\n";

typedef enum call_kind {
	SUBMIT,
	STOCK,
	SUBMIT_FAULT,
	GENERIC,
	ASYNC,
	ASYNC_STOCK,
	ASYNC_GENERIC
} call_kind;

typedef struct scenario {
	const char *name;
	call_kind kind;
	int http_status;
	const char *body;
	wms_status want; /* the result without injected failures */
} scenario;

/* The order every SubmitOrder here sends (ORD-2024-0001, two lines). */
static wms_order sample_order(void)
{
	static const wms_order_line lines[] = { { "SKU-123", 2 }, { "SKU-456", 1 } };
	wms_order order = WMS_ORDER_INIT;
	order.order_id = "ORD-2024-0001";
	order.ship_to = (wms_address){ "Ada Lovelace", "12 Analytical Way", NULL, "London", NULL,
				       "N1 9GU", "GB" };
	order.lines = lines;
	order.line_count = 2;
	return order;
}

static wms_status submit(wms_client *client, wms_error *err)
{
	wms_order order = sample_order();
	wms_submit_reply reply;
	wms_status st;

	st = wms_submit_order(&reply, client, &order, err);
	if (st == WMS_OK) {
		assert_string_equal(reply.wms_reference, "WMS:778899");
		assert_string_equal(reply.order_id, "ORD-2024-0001");
		assert_int_equal(reply.state, WMS_ORDER_STATE_RECEIVED);
		assert_int_equal(reply.duplicate, 0);
		assert_int_equal(err->delivery, WMS_DELIVERY_ANSWERED);
	} else if (st == WMS_ERR_SOAP_FAULT) {
		assert_string_equal(err->fault_code, "Client");
		assert_string_equal(err->fault_string, "Unknown SKU: SKU-404");
		assert_string_equal(err->wms_code, "UNKNOWN_SKU");
		assert_int_equal(err->delivery, WMS_DELIVERY_ANSWERED);
	}
	return st;
}


/* Run `*a` until its one call completes: the call's status, its error in
 * err; or, when the loop itself failed (NOMEM, the call cancelled), the
 * loop's, with *a freed and NULL. */
static wms_status run_one(wms_async **a, const seen *s, wms_error *err)
{
	wms_status st = wms_async_run(*a, 20000);
	if (st != WMS_OK) {
		wms_async_free(*a);
		*a = NULL;
		assert_int_equal(s->calls, 1);
		return wms__fail(err, st, WMS_DELIVERY_UNKNOWN, "the loop failed");
	}
	assert_int_equal(s->calls, 1);
	*err = s->err;
	return s->st;
}

/* SubmitOrder through the asynchronous API (own loop): one call, then the
 * same order again over the kept connection, then the context freed. */
static wms_status submit_async(wms_client *client, wms_error *err)
{
	wms_order order = sample_order();
	wms_async *a = NULL;
	seen s;
	wms_status st;
	int i;

	st = wms_async_new(&a, client, NULL, err);
	if (st != WMS_OK) {
		assert_null(a);
		return st;
	}
	for (i = 0; i < 2; i++) {
		memset(&s, 0, sizeof(s));
		assert_int_equal(wms_async_submit_order(NULL, a, &order, on_submit, &s), WMS_OK);
		st = run_one(&a, &s, err);
		if (!a)
			return st;
		if (st != WMS_OK)
			break;
		assert_string_equal(s.submit.wms_reference, "WMS:778899");
		assert_string_equal(s.submit.order_id, "ORD-2024-0001");
	}
	wms_async_free(a);
	return st;
}

/* GetStockLevel through the asynchronous API, typed (ASYNC_STOCK) or as a
 * generic call whose body is a tree (ASYNC_GENERIC): twice over the kept
 * connection, then the context freed. */
static void check_stock_tree(struct _xmlDoc *doc);

static wms_status stock_async(wms_client *client, int generic, wms_error *err)
{
	static const char *const skus[] = { "SKU-1", "SKU-2" };
	static const char body[] =
		"<wh:GetStockLevelRequest xmlns:wh=\"urn:libwms:warehouse:1\">"
		"<wh:sku>SKU-1</wh:sku><wh:sku>SKU-2</wh:sku></wh:GetStockLevelRequest>";
	wms_call_options op = WMS_CALL_OPTIONS_INIT;
	xmlDocPtr req = NULL;
	wms_async *a = NULL;
	seen s;
	wms_status st;
	int i;

	op.operation = "GetStockLevel";
	op.soap_action = "urn:libwms:warehouse:1/GetStockLevel";
	op.reply_namespace = "urn:libwms:warehouse:1";
	op.reply_element = "GetStockLevelResponse";
	op.idempotent = 1;
	if (generic) {
		/* the caller's tree (its allocations are libxml2's, through
		 * the seam: a failure there is the caller's NOMEM) */
		req = xmlReadMemory(body, (int)sizeof(body) - 1, NULL, NULL, XML_PARSE_NONET);
		if (!req)
			return wms__fail(err, WMS_ERR_NOMEM, WMS_DELIVERY_NOT_SENT,
					 "the test's body");
	}
	st = wms_async_new(&a, client, NULL, err);
	if (st != WMS_OK) {
		assert_null(a);
		xmlFreeDoc(req);
		return st;
	}
	for (i = 0; i < 2; i++) {
		memset(&s, 0, sizeof(s));
		if (generic)
			assert_int_equal(wms_async_call_start(NULL, a, &op, xmlDocGetRootElement(req),
							      on_call, &s),
					 WMS_OK);
		else
			assert_int_equal(wms_async_get_stock_level(NULL, a, skus, 2, on_stock, &s),
					 WMS_OK);
		st = run_one(&a, &s, err);
		if (!a) {
			xmlFreeDoc(req);
			return st;
		}
		if (st != WMS_OK)
			break;
		if (generic) {
			assert_string_equal(s.doc_root, "GetStockLevelResponse");
		} else {
			assert_int_equal(s.stock_count, 2);
			assert_int_equal(s.stock_on_hand0, 120);
		}
	}
	wms_async_free(a);
	xmlFreeDoc(req);
	return st;
}

/* The generic call's reply, read without allocating (the failure may
 * still be armed): a copy made through a failure would show here. */
static void check_stock_tree(struct _xmlDoc *doc)
{
	xmlNodePtr root = xmlDocGetRootElement(doc), level, last = NULL, el;
	int levels = 0;
	assert_non_null(root);
	assert_string_equal((const char *)root->name, "GetStockLevelResponse");
	assert_non_null(root->ns);
	assert_string_equal((const char *)root->ns->href, "urn:libwms:warehouse:1");
	for (level = root->children; level; level = level->next)
		if (level->type == XML_ELEMENT_NODE) {
			assert_string_equal((const char *)level->name, "level");
			assert_non_null(level->ns);
			levels++;
			last = level;
		}
	assert_int_equal(levels, 2);
	for (el = last->children; el && !(el->type == XML_ELEMENT_NODE &&
					  strcmp((const char *)el->name, "onHand") == 0);
	     el = el->next)
		;
	assert_non_null(el);
	assert_non_null(el->children);
	assert_string_equal((const char *)el->children->content, "7");
}

/* One run: a new client, the scenario's call(s), free. SubmitOrder is sent
 * twice, the second time (the same order id, as after an UNKNOWN delivery)
 * over the kept-alive connection and the pooled curl handle. The first
 * status that is not the normal result is the run's. */
static wms_status run_once(const scenario *sc, const char *url, wms_error *err)
{
	static const char *const skus[] = { "SKU-1", "SKU-2" };
	wms_client_options o = WMS_CLIENT_OPTIONS_INIT;
	wms_stock_reply *stock = NULL;
	wms_client *client = NULL;
	wms_status st;

	o.endpoint = url;
	o.timeout_ms = 10000;
	o.connect_timeout_ms = 5000;
	st = wms_client_new(&client, &o, err);
	if (st != WMS_OK) {
		assert_null(client);
		return st;
	}
	if (sc->kind == GENERIC) {
		/* GetStockLevel as a generic call: the body as bytes, the reply
		 * as a tree; twice, the second over the kept-alive connection */
		static const char body[] =
			"<wh:GetStockLevelRequest xmlns:wh=\"urn:libwms:warehouse:1\">"
			"<wh:sku>SKU-1</wh:sku><wh:sku>SKU-2</wh:sku></wh:GetStockLevelRequest>";
		wms_call_options op = WMS_CALL_OPTIONS_INIT;
		struct _xmlDoc *doc = NULL;
		op.operation = "GetStockLevel";
		op.soap_action = "urn:libwms:warehouse:1/GetStockLevel";
		op.reply_namespace = "urn:libwms:warehouse:1";
		op.reply_element = "GetStockLevelResponse";
		op.idempotent = 1;
		for (int i = 0; i < 2; i++) {
			st = wms_call_bytes(&doc, client, &op, body, sizeof(body) - 1, err);
			if (st != WMS_OK) {
				assert_null(doc);
				break;
			}
			assert_non_null(doc);
			/* a copy made through failures would show here */
			check_stock_tree(doc);
			wms__xml_doc_free(doc);
		}
	} else if (sc->kind == ASYNC) {
		st = submit_async(client, err);
	} else if (sc->kind == ASYNC_STOCK || sc->kind == ASYNC_GENERIC) {
		st = stock_async(client, sc->kind == ASYNC_GENERIC, err);
	} else if (sc->kind == STOCK) {
		st = wms_get_stock_level(&stock, client, skus, 2, err);
		if (st == WMS_OK) {
			assert_non_null(stock);
			assert_int_equal(stock->count, 2);
			assert_string_equal(stock->levels[0].sku, "SKU-1");
			assert_int_equal(stock->levels[0].available, 100);
			assert_string_equal(stock->levels[1].sku, "SKU-2");
			assert_int_equal(stock->levels[1].on_hand, 7);
		} else {
			assert_null(stock);
		}
		wms_stock_reply_free(stock);
	} else {
		st = submit(client, err);
		if (st == sc->want && sc->kind == SUBMIT)
			st = submit(client, err);
	}
	wms_client_free(client);
	return st;
}

/*
 * A status a run may end in when an allocation was failed, besides NOMEM and
 * the scenario's normal result: a failed allocation inside libcurl 7.88 that
 * libcurl itself reports as something else. Matched by status, curl code and
 * delivery; safe for the caller (the call failed, the delivery is right, and
 * resending with the same order id is what it does anyway), although the
 * breaker counts it as the failure it looks like.
 */
static int libcurl_misreport(wms_status st, const wms_error *err)
{
	/* curl 6 (COULDNT_RESOLVE_HOST) for 127.0.0.1: the address record
	 * (Curl_ip2addr) or the resolver thread could not be allocated.
	 * Nothing was sent. */
	return st == WMS_ERR_CONNECT && err->curl_code == CURLE_COULDNT_RESOLVE_HOST &&
	       err->delivery == WMS_DELIVERY_NOT_SENT;
}

/* ---- the loop ---------------------------------------------------------- */

#define STATUS_SLOTS (WMS_ERR_CANCELLED + 1)
#define RESTART_EVERY 100 /* the loopback server joins its threads on stop */
#define MAX_RUNS 200000
#define MISSES_TO_STOP 5 /* runs in a row that did not reach the N-th allocation */

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static lb_server *start_server(const scenario *sc, char **resp)
{
	lb_script script;
	lb_server *s;
	memset(&script, 0, sizeof(script));
	if (!*resp) {
		*resp = lb_http_response(sc->http_status, sc->http_status == 200 ? "OK" : "Error",
					 "text/xml; charset=utf-8", sc->body);
		assert_non_null(*resp);
	}
	script.response = *resp;
	script.after = LB_KEEP;
	s = lb_start(&script);
	assert_non_null(s);
	return s;
}

/* libxml2 keeps the last error of each thread (strings from xmlMalloc)
 * until the next error or the thread's end: bounded, not a leak, but it
 * must not count against the run that raised it. */
static long live_now(void)
{
	xmlResetLastError();
	return atomic_load(&cnt.live);
}

/* Fail the N-th allocation (sticky: and every one after it) for N = 1, 2,
 * ... until runs get through without reaching the N-th allocation. Returns
 * the number of runs. */
static long every_n(const scenario *sc, int sticky)
{
	long counts[STATUS_SLOTS] = { 0 };
	long n, base, calls0, runs = 0, misses = 0, misreports = 0;
	char *resp = NULL;
	lb_server *srv = start_server(sc, &resp);
	wms_error err;
	wms_status st;
	double t0 = now_s();
	size_t i;

	/* A clean run: the normal result, and how many allocations it makes. */
	arm(0, 0);
	base = live_now();
	st = run_once(sc, lb_url(srv), &err);
	assert_int_equal(st, sc->want);
	calls0 = atomic_load(&cnt.calls);
	assert_int_equal(live_now(), base);

	for (n = 1; n < MAX_RUNS; n++) {
		int injected;
		if (runs && runs % RESTART_EVERY == 0) {
			lb_stop(srv);
			srv = start_server(sc, &resp);
		}
		memset(&err, 0, sizeof(err));
		arm(n, sticky);
		st = run_once(sc, lb_url(srv), &err);
		injected = atomic_load(&cnt.failed) > 0;
		arm(0, 0);
		runs++;
		if (live_now() != base)
			fail_msg("%s: N=%ld: %ld block(s) leaked (status %s: %s)", sc->name, n,
				 atomic_load(&cnt.live) - base, wms_status_name(st), err.message);
		if (!injected) {
			/* Nothing failed: the whole call went through. The count
			 * moves by a few between runs, so make sure. */
			assert_int_equal(st, sc->want);
			if (++misses == MISSES_TO_STOP)
				break;
			continue;
		}
		misses = 0;
		if ((unsigned)st < STATUS_SLOTS)
			counts[st]++;
		else
			fail_msg("%s: N=%ld: status %d", sc->name, n, (int)st);
		if (st != WMS_OK) {
			if (!err.message[0])
				fail_msg("%s: N=%ld: status %s with an empty message", sc->name, n,
					 wms_status_name(st));
			assert_int_equal(err.status, st);
		}
		if (st == sc->want || st == WMS_ERR_NOMEM)
			continue;
		if (libcurl_misreport(st, &err)) {
			misreports++;
			continue;
		}
		fail_msg("%s: N=%ld: status %s (%s, curl %d, delivery %s), expected %s, NOMEM or a "
			 "listed one", sc->name, n, wms_status_name(st), err.message, err.curl_code,
			 wms_delivery_name(err.delivery), wms_status_name(sc->want));
	}
	lb_stop(srv);
	free(resp);
	assert_true(n < MAX_RUNS);
	printf("# %s%s: %ld runs (a clean run makes %ld allocations), %.2f s; with the failure "
	       "hit:", sc->name, sticky ? ", failing every allocation from N on" : "", runs,
	       calls0, now_s() - t0);
	for (i = 0; i < STATUS_SLOTS; i++)
		if (counts[i])
			printf(" %s %ld", wms_status_name((wms_status)i), counts[i]);
	printf(" (libcurl misreports %ld)\n", misreports);
	/* Not vacuous: every N up to the run's allocation count was tried. */
	assert_true(calls0 > 50);
	assert_true(runs >= calls0);
	return runs;
}

static long total_runs;

static const scenario submit_sc = { "SubmitOrder", SUBMIT, 200, submit_ok, WMS_OK };
static const scenario stock_sc = { "GetStockLevel", STOCK, 200, stock_ok, WMS_OK };
static const scenario fault_sc = { "SubmitOrder, SOAP fault", SUBMIT_FAULT, 500,
				   fault_unknown_sku, WMS_ERR_SOAP_FAULT };

static void test_submit_order(void **state)
{
	long runs;
	(void)state;
	runs = every_n(&submit_sc, 0);
	/* A whole SubmitOrder, twice over keep-alive: a few hundred N. */
	assert_true(runs > 200);
	total_runs += runs;
}

static void test_submit_order_sticky(void **state)
{
	(void)state;
	total_runs += every_n(&submit_sc, 1);
}

static void test_get_stock_level(void **state)
{
	(void)state;
	total_runs += every_n(&stock_sc, 0);
}

static const scenario generic_sc = { "wms_call_bytes GetStockLevel", GENERIC, 200, stock_ok,
				     WMS_OK };

static void test_generic_call(void **state)
{
	(void)state;
	total_runs += every_n(&generic_sc, 0);
}

static const scenario async_sc = { "wms_async_submit_order", ASYNC, 200, submit_ok, WMS_OK };

static void test_async_submit(void **state)
{
	(void)state;
	total_runs += every_n(&async_sc, 0);
	total_runs += every_n(&async_sc, 1);
}

static const scenario async_stock_sc = { "wms_async_get_stock_level", ASYNC_STOCK, 200,
					 stock_ok, WMS_OK };
static const scenario async_generic_sc = { "wms_async_call_start GetStockLevel", ASYNC_GENERIC,
					   200, stock_ok, WMS_OK };

static void test_async_stock_and_generic(void **state)
{
	(void)state;
	total_runs += every_n(&async_stock_sc, 0);
	total_runs += every_n(&async_generic_sc, 0);
}

/* Memory per asynchronous call in flight, everything counted (libwms,
 * libcurl, libxml2): N calls sent to a server that never answers, the live
 * bytes over the idle context's, divided by N; bounded, and all of it
 * back once they are cancelled and the context freed. A call refused by an
 * open breaker allocates nothing. */
#define MEM_CALLS 200
#define MEM_PER_CALL_MAX (64 * 1024)

static void test_async_memory_per_call(void **state)
{
	static seen held[MEM_CALLS];
	wms_client_options o = WMS_CLIENT_OPTIONS_INIT;
	wms_order order = sample_order();
	lb_script script;
	lb_server *srv;
	wms_client *client = NULL;
	wms_async *a = NULL;
	wms_error err;
	long base, base_bytes, idle_bytes, busy_bytes, calls;
	double t0;
	size_t i, n = MEM_CALLS;
	const char *vg = getenv("WMS_UNDER_VALGRIND");
	(void)state;

	/* under valgrind every server thread crawls: fewer, longer */
	if (vg && *vg && strcmp(vg, "0") != 0)
		n = 50;
	memset(&script, 0, sizeof(script));
	script.after = LB_HOLD; /* no response: read, answer nothing */
	srv = lb_start(&script);
	assert_non_null(srv);
	arm(0, 0);
	base = live_now();
	base_bytes = atomic_load(&cnt.live_bytes);
	o.endpoint = lb_url(srv);
	o.timeout_ms = 120000;
	o.stall_timeout_ms = 120000;
	assert_int_equal(wms_client_new(&client, &o, &err), WMS_OK);
	assert_int_equal(wms_async_new(&a, client, NULL, &err), WMS_OK);
	idle_bytes = atomic_load(&cnt.live_bytes);
	memset(held, 0, sizeof(held));
	for (i = 0; i < n; i++)
		assert_int_equal(wms_async_submit_order(NULL, a, &order, on_submit, &held[i]),
				 WMS_OK);
	t0 = now_s();
	while (lb_requests(srv) < n && now_s() - t0 < 50.0)
		assert_int_equal(wms_async_poll(a, 50), WMS_OK);
	assert_int_equal(lb_requests(srv), n);
	busy_bytes = atomic_load(&cnt.live_bytes);
	printf("# async: %zu calls in flight hold %ld bytes (%ld per call: libwms, libcurl and "
	       "libxml2 together); the idle context and client %ld\n",
	       n, busy_bytes - idle_bytes, (busy_bytes - idle_bytes) / (long)n,
	       idle_bytes - base_bytes);
	assert_true((busy_bytes - idle_bytes) / (long)n <= MEM_PER_CALL_MAX);
	assert_int_equal(wms_async_cancel_all(a), n);
	for (i = 0; i < n; i++) {
		assert_int_equal(held[i].calls, 1);
		assert_int_equal(held[i].st, WMS_ERR_CANCELLED);
		assert_int_equal(held[i].err.delivery, WMS_DELIVERY_UNKNOWN);
	}
	/* refused at once by an open breaker: not one allocation */
	wms_breaker_force_open(wms_client_breaker(client));
	calls = atomic_load(&cnt.calls);
	for (i = 0; i < 1000; i++) {
		memset(&held[0], 0, sizeof(held[0]));
		assert_int_equal(wms_async_submit_order(NULL, a, &order, on_submit, &held[0]),
				 WMS_OK);
		assert_int_equal(held[0].st, WMS_ERR_CIRCUIT_OPEN);
	}
	assert_int_equal(atomic_load(&cnt.calls), calls);
	wms_async_free(a);
	wms_client_free(client);
	assert_int_equal(live_now(), base);
	lb_stop(srv);
}

/* A start that fails after the asynchronous engine picked the shard of a
 * kept connection leaves that connection the engine's to hand out: its
 * idle token stays. The handle the start takes is one whose call was
 * cancelled (so it is set up afresh, allocating, after the pick); each of
 * the start's allocations is failed in turn. Two calls at once leave two
 * connections idle (two tokens); the cancelled call, which libcurl never
 * ran, gives its token back; a start that fails must leave both. */
static void test_async_start_failure_keeps_the_idle_token(void **state)
{
	wms_client_options o = WMS_CLIENT_OPTIONS_INIT;
	wms_order order = sample_order();
	char *resp = NULL;
	lb_server *srv = start_server(&async_sc, &resp);
	wms_client *client = NULL;
	wms_async *a = NULL;
	wms_async_call *d = NULL;
	wms__engine *e;
	wms_error err;
	seen s[2];
	long n, base, failed_starts = 0, misses = 0;
	(void)state;

	arm(0, 0);
	base = live_now();
	o.endpoint = lb_url(srv);
	o.timeout_ms = 10000;
	assert_int_equal(wms_client_new(&client, &o, &err), WMS_OK);
	assert_int_equal(wms_async_new(&a, client, NULL, &err), WMS_OK);
	e = wms__async_engine(a);
	for (n = 1; n < 1000 && misses < MISSES_TO_STOP; n++) {
		wms_status st;
		int injected;
		/* two connections left idle */
		memset(s, 0, sizeof(s));
		assert_int_equal(wms_async_submit_order(NULL, a, &order, on_submit, &s[0]), WMS_OK);
		assert_int_equal(wms_async_submit_order(NULL, a, &order, on_submit, &s[1]), WMS_OK);
		assert_int_equal(wms_async_run(a, 20000), WMS_OK);
		assert_int_equal(s[0].st, WMS_OK);
		assert_int_equal(s[1].st, WMS_OK);
		assert_int_equal(wms__curl_engine_idle_tokens(e), 2);
		/* a call that takes one and is cancelled before it ran: its
		 * handle goes back to be set up afresh, the token too */
		memset(s, 0, sizeof(s));
		assert_int_equal(wms_async_submit_order(&d, a, &order, on_submit, &s[0]), WMS_OK);
		assert_int_equal(wms__curl_engine_idle_tokens(e), 1);
		assert_int_equal(wms_async_cancel(a, d), WMS_OK);
		assert_int_equal(s[0].st, WMS_ERR_CANCELLED);
		assert_int_equal(wms__curl_engine_idle_tokens(e), 2);
		/* the start, with its n-th allocation failed */
		arm(n, 0);
		st = wms_async_submit_order(&d, a, &order, on_submit, &s[1]);
		injected = atomic_load(&cnt.failed) > 0;
		arm(0, 0);
		if (st != WMS_OK || (s[1].calls == 1 && s[1].st != WMS_OK)) {
			/* it failed at once: nothing runs */
			const char *msg = st != WMS_OK ? "(returned)" : s[1].err.message;
			assert_true(injected);
			assert_int_equal(s[1].calls, st != WMS_OK ? 0 : 1);
			assert_int_equal(wms_async_in_flight(a), 0);
			if (wms__curl_engine_idle_tokens(e) != 2)
				fail_msg("N=%ld: a start that failed (%s: %s) took the idle "
					 "connection's token", n, wms_status_name(st != WMS_OK ? st : s[1].st), msg);
			failed_starts++;
			misses = 0;
			continue;
		}
		/* it started (or the failure came later, or not at all): run it */
		assert_int_equal(wms_async_run(a, 20000), WMS_OK);
		assert_int_equal(s[1].calls, 1);
		misses = injected ? 0 : misses + 1;
	}
	printf("# a start after a cancelled call, each allocation failed in turn: %ld N, "
	       "%ld starts failed, each leaving both idle tokens\n", n - 1, failed_starts);
	/* not vacuous: the start allocates, and some of its failures end it */
	assert_true(failed_starts > 0);
	wms_async_free(a);
	wms_client_free(client);
	assert_int_equal(live_now(), base);
	lb_stop(srv);
	free(resp);
}

static void test_soap_fault(void **state)
{
	(void)state;
	total_runs += every_n(&fault_sc, 0);
}

/* The set-up took: libxml2 and libcurl allocate through the seam, and the
 * allocator can no longer be swapped. */
static void test_routed(void **state)
{
	static count_alloc another;
	const wms_allocator other = count_alloc_hooks(&another);
	wms_allocator same = count_alloc_hooks(&cnt);
	wms_global_options go = WMS_GLOBAL_OPTIONS_INIT;
	wms_error err;
	xmlDocPtr doc;
	CURL *h;
	long before;
	(void)state;

	arm(0, 0);
	before = atomic_load(&cnt.live);
	doc = xmlReadMemory("<a>b</a>", 8, "x.xml", NULL, XML_PARSE_NONET);
	assert_non_null(doc);
	assert_true(atomic_load(&cnt.live) > before);
	xmlFreeDoc(doc);
	assert_int_equal(atomic_load(&cnt.live), before);

	arm(0, 0);
	h = curl_easy_init();
	assert_non_null(h);
	assert_true(atomic_load(&cnt.live) > before);
	curl_easy_cleanup(h);
	assert_int_equal(atomic_load(&cnt.live), before);

	/* libxml2's and libcurl's global state came from this allocator. */
	assert_int_equal(wms_set_allocator(&other), WMS_ERR_INVALID_ARG);
	assert_int_equal(wms_set_allocator(NULL), WMS_ERR_INVALID_ARG);
	assert_int_equal(wms_set_allocator(&same), WMS_OK);
	/* One-shot. */
	go.route = WMS_GLOBAL_ROUTE_LIBXML2;
	assert_int_equal(wms_global_init(&go, &err), WMS_ERR_INVALID_ARG);
	assert_non_null(strstr(err.message, "too late"));
}

/* Last: the loops together went through many hundreds of N. */
static void test_not_vacuous(void **state)
{
	(void)state;
	printf("# %ld runs in all, each failing allocation N of a whole call\n", total_runs);
	assert_true(total_runs > 600);
}

int main(void)
{
	wms_allocator a = count_alloc_hooks(&cnt);
	wms_global_options go = WMS_GLOBAL_OPTIONS_INIT;
	wms_error err;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_routed),
		cmocka_unit_test(test_submit_order),
		cmocka_unit_test(test_submit_order_sticky),
		cmocka_unit_test(test_get_stock_level),
		cmocka_unit_test(test_soap_fault),
		cmocka_unit_test(test_generic_call),
		cmocka_unit_test(test_async_submit),
		cmocka_unit_test(test_async_stock_and_generic),
		cmocka_unit_test(test_async_memory_per_call),
		cmocka_unit_test(test_async_start_failure_keeps_the_idle_token),
		cmocka_unit_test(test_not_vacuous),
	};

	/* Process-global, one-time allocations (libxml2's and libcurl's global
	 * init) happen here, before any failure is injected. */
	go.allocator = &a;
	go.route = WMS_GLOBAL_ROUTE_LIBXML2 | WMS_GLOBAL_ROUTE_LIBCURL;
	if (wms_global_init(&go, &err) != WMS_OK) {
		fprintf(stderr, "wms_global_init: %s\n", err.message);
		return 1;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
