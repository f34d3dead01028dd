/* Every WMS operation through a real wms_client (curl transport) against
 * wms-sim, in SOAP 1.1 and 1.2: idempotent submit, status over time, cancel
 * rules, stock reservations; then the simulator's own HTTP surface (WSDL,
 * stats, control, request checks) and its schedule. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "itest.h"

#define HOUR_MS 3600000u

typedef struct fx {
	wms_sim *sim;
	wms_client *c;
	int soap12;
} fx;

/* A sim whose clock only moves when the test says so (tick: one hour). */
static int setup_version(void **state, int soap12)
{
	fx *f = calloc(1, sizeof(*f));
	it_client_opts o;
	assert_non_null(f);
	memset(&o, 0, sizeof(o));
	o.soap_version = soap12 ? WMS_SOAP_12 : WMS_SOAP_11;
	f->soap12 = soap12;
	f->sim = it_sim_start(HOUR_MS);
	f->c = it_client(f->sim, &o);
	*state = f;
	return 0;
}

static int setup11(void **state) { return setup_version(state, 0); }
static int setup12(void **state) { return setup_version(state, 1); }

static int teardown(void **state)
{
	fx *f = *state;
	wms_client_free(f->c);
	wms_sim_stop(f->sim);
	free(f);
	it_tmp_cleanup();
	return 0;
}

static const char *client_code(const fx *f) { return f->soap12 ? "Sender" : "Client"; }

static void assert_client_fault(const fx *f, wms_status st, const wms_error *err,
				const char *wms_code)
{
	assert_int_equal(st, WMS_ERR_SOAP_FAULT);
	assert_int_equal(err->status, WMS_ERR_SOAP_FAULT);
	assert_int_equal(err->delivery, WMS_DELIVERY_ANSWERED);
	assert_string_equal(err->fault_code, client_code(f));
	assert_string_equal(err->wms_code, wms_code);
	assert_int_equal(err->http_status, 500);
	assert_false(wms_error_is_retryable(err));
}

static void assert_closed(const fx *f)
{
	assert_int_equal(wms_breaker_state_get(wms_client_breaker(f->c)), WMS_BREAKER_STATE_CLOSED);
}

/* ---- SubmitOrder --------------------------------------------------------- */

static void test_submit_idempotent(void **state)
{
	fx *f = *state;
	wms_submit_reply r1, r2;
	wms_sim_order_info info;
	wms_error err;

	assert_int_equal(it_submit(f->c, "ORD-1001", "SKU-7", 2, &r1, &err), WMS_OK);
	assert_int_equal(err.status, WMS_OK);
	assert_int_equal(err.delivery, WMS_DELIVERY_ANSWERED);
	assert_string_equal(r1.order_id, "ORD-1001");
	assert_string_equal(r1.wms_reference, "WMS-000001");
	assert_int_equal(r1.state, WMS_ORDER_STATE_RECEIVED);
	assert_int_equal(r1.duplicate, 0);

	/* The same order again: the same reference, nothing new created. */
	assert_int_equal(it_submit(f->c, "ORD-1001", "SKU-7", 2, &r2, &err), WMS_OK);
	assert_int_equal(r2.duplicate, 1);
	assert_string_equal(r2.wms_reference, r1.wms_reference);
	assert_int_equal(wms_sim_order_count(f->sim), 1);
	assert_true(wms_sim_order_get(&info, f->sim, "ORD-1001"));
	assert_int_equal(info.submits, 2);
	assert_string_equal(info.wms_reference, "WMS-000001");
	assert_string_equal(info.state, "RECEIVED");
	assert_string_equal(info.priority, "EXPRESS");
	assert_int_equal(info.line_count, 1);
	assert_int_equal(info.total_quantity, 2);
	assert_string_equal(info.ship_to_name, "Ada Lovelace");
	assert_string_equal(info.country, "GB");

	/* The same id with other lines: rejected, still one order. */
	assert_client_fault(f, it_submit(f->c, "ORD-1001", "SKU-7", 3, NULL, &err), &err,
			    "DUPLICATE_MISMATCH");
	assert_non_null(strstr(err.fault_string, "ORD-1001"));
	assert_int_equal(wms_sim_order_count(f->sim), 1);
	assert_true(wms_sim_order_get(&info, f->sim, "ORD-1001"));
	assert_int_equal(info.submits, 2);
	assert_int_equal(info.total_quantity, 2);

	/* A second order gets the next reference. */
	assert_int_equal(it_submit(f->c, "ORD-1002", "SKU-8", 1, &r1, &err), WMS_OK);
	assert_string_equal(r1.wms_reference, "WMS-000002");
	assert_false(wms_sim_order_get(&info, f->sim, "ORD-9999"));
	/* Business rejections say nothing about the WMS's health. */
	assert_closed(f);
	assert_int_equal(wms_sim_requests(f->sim, "SubmitOrder"), 4);
}

static void test_submit_multi_line(void **state)
{
	fx *f = *state;
	it_order o;
	wms_submit_reply r;
	wms_sim_order_info info;
	wms_sim_stock st;
	wms_error err;

	it_order_init(&o, "ORD-ML", "SKU-1", 5);
	o.lines[1].sku = "SKU-2";
	o.lines[1].quantity = 7;
	o.lines[2].sku = "SKU-1";
	o.lines[2].quantity = 1;
	o.order.line_count = 3;
	o.order.ship_to.line2 = "Flat 3";
	o.order.ship_to.region = "Greater London";
	o.order.ship_to.name = "Zoë Ångström-Ñúñez";
	o.order.priority = WMS_PRIORITY_OVERNIGHT;
	assert_int_equal(wms_submit_order(&r, f->c, &o.order, &err), WMS_OK);
	assert_true(wms_sim_order_get(&info, f->sim, "ORD-ML"));
	assert_int_equal(info.line_count, 3);
	assert_int_equal(info.total_quantity, 13);
	assert_string_equal(info.priority, "OVERNIGHT");
	assert_string_equal(info.ship_to_name, "Zoë Ångström-Ñúñez");
	assert_true(wms_sim_stock_get(&st, f->sim, "SKU-1"));
	assert_int_equal(st.reserved, 6);
	assert_true(wms_sim_stock_get(&st, f->sim, "SKU-2"));
	assert_int_equal(st.reserved, 7);
	/* Same lines in another order are other lines. */
	o.lines[0].sku = "SKU-2";
	o.lines[0].quantity = 7;
	o.lines[1].sku = "SKU-1";
	o.lines[1].quantity = 5;
	assert_client_fault(f, wms_submit_order(&r, f->c, &o.order, &err), &err,
			    "DUPLICATE_MISMATCH");
}

/* ---- GetOrderStatus ------------------------------------------------------ */

static void assert_state(fx *f, const char *id, wms_order_state want)
{
	wms_status_reply r;
	wms_error err;
	wms_status st = wms_get_order_status(&r, f->c, id, &err);
	if (st != WMS_OK)
		fail_msg("GetOrderStatus %s: %s: %s", id, wms_status_name(st), err.message);
	assert_string_equal(r.order_id, id);
	if (r.state != want)
		fail_msg("%s is %s, want %s", id, wms_order_state_name(r.state),
			 wms_order_state_name(want));
	/* xs:dateTime, UTC, e.g. 2024-03-15T10:00:00.123Z */
	assert_int_equal(strlen(r.updated_at), 24);
	assert_int_equal(r.updated_at[10], 'T');
	assert_int_equal(r.updated_at[23], 'Z');
}

static void test_status_advances_with_the_clock(void **state)
{
	static const wms_order_state steps[] = { WMS_ORDER_STATE_ALLOCATED, WMS_ORDER_STATE_PICKING,
						 WMS_ORDER_STATE_PACKED, WMS_ORDER_STATE_SHIPPED,
						 WMS_ORDER_STATE_SHIPPED };
	fx *f = *state;
	wms_submit_reply sr;
	wms_status_reply r;
	wms_sim_order_info info;
	wms_error err;
	size_t i;

	assert_int_equal(it_submit(f->c, "ST-1", "SKU-4", 1, &sr, &err), WMS_OK);
	assert_state(f, "ST-1", WMS_ORDER_STATE_RECEIVED);
	assert_int_equal(wms_get_order_status(&r, f->c, "ST-1", &err), WMS_OK);
	assert_string_equal(r.wms_reference, sr.wms_reference);
	for (i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		wms_sim_advance_clock(f->sim, HOUR_MS);
		assert_state(f, "ST-1", steps[i]);
	}
	assert_true(wms_sim_order_get(&info, f->sim, "ST-1"));
	assert_string_equal(info.state, "SHIPPED");

	assert_client_fault(f, wms_get_order_status(&r, f->c, "ST-404", &err), &err,
			    "UNKNOWN_ORDER");
	assert_int_equal(wms_sim_requests(f->sim, "GetOrderStatus"), 8);
}

/* The real clock, with a small tick: only lower bounds (time only grows). */
static void test_status_advances_in_real_time(void **state)
{
	fx *f = *state;
	uint32_t tick = it_valgrind() ? 400u : 60u;
	wms_sim *sim;
	wms_client *c;
	wms_status_reply r;
	wms_error err;
	it_client_opts o;

	memset(&o, 0, sizeof(o));
	o.soap_version = f->soap12 ? WMS_SOAP_12 : WMS_SOAP_11;
	sim = it_sim_start(tick);
	c = it_client(sim, &o);
	assert_int_equal(it_submit(c, "RT-1", "SKU-1", 1, NULL, &err), WMS_OK);
	it_sleep_ms(3 * tick);
	assert_int_equal(wms_get_order_status(&r, c, "RT-1", &err), WMS_OK);
	assert_true(r.state >= WMS_ORDER_STATE_PACKED);
	it_sleep_ms(2 * tick);
	assert_int_equal(wms_get_order_status(&r, c, "RT-1", &err), WMS_OK);
	assert_int_equal(r.state, WMS_ORDER_STATE_SHIPPED);
	wms_client_free(c);
	wms_sim_stop(sim);
}

/* ---- CancelOrder --------------------------------------------------------- */

static void test_cancel_rules(void **state)
{
	fx *f = *state;
	wms_cancel_reply r;
	wms_status_reply sr;
	wms_sim_stock st;
	wms_error err;

	assert_int_equal(it_submit(f->c, "C-1", "SKU-3", 4, NULL, &err), WMS_OK);
	assert_true(wms_sim_stock_get(&st, f->sim, "SKU-3"));
	assert_int_equal(st.reserved, 4);

	/* RECEIVED: cancelled, the reservation released. */
	assert_int_equal(wms_cancel_order(&r, f->c, "C-1", "customer changed their mind", &err),
			 WMS_OK);
	assert_string_equal(r.order_id, "C-1");
	assert_int_equal(r.state, WMS_ORDER_STATE_CANCELLED);
	assert_int_equal(r.already_cancelled, 0);
	assert_true(wms_sim_stock_get(&st, f->sim, "SKU-3"));
	assert_int_equal(st.reserved, 0);
	assert_int_equal(st.available, 10000);

	/* Again: fine, and it says so. */
	assert_int_equal(wms_cancel_order(&r, f->c, "C-1", NULL, &err), WMS_OK);
	assert_int_equal(r.already_cancelled, 1);
	assert_int_equal(r.state, WMS_ORDER_STATE_CANCELLED);
	assert_state(f, "C-1", WMS_ORDER_STATE_CANCELLED);
	/* A cancelled order stays cancelled as time passes. */
	wms_sim_advance_clock(f->sim, 5 * HOUR_MS);
	assert_state(f, "C-1", WMS_ORDER_STATE_CANCELLED);

	/* ALLOCATED: still cancellable; PICKING: no longer. */
	assert_int_equal(it_submit(f->c, "C-2", "SKU-3", 1, NULL, &err), WMS_OK);
	assert_int_equal(it_submit(f->c, "C-3", "SKU-3", 1, NULL, &err), WMS_OK);
	wms_sim_advance_clock(f->sim, HOUR_MS);
	assert_int_equal(wms_cancel_order(&r, f->c, "C-2", "", &err), WMS_OK);
	assert_int_equal(r.already_cancelled, 0);
	wms_sim_advance_clock(f->sim, HOUR_MS);
	assert_client_fault(f, wms_cancel_order(&r, f->c, "C-3", NULL, &err), &err,
			    "NOT_CANCELLABLE");
	assert_non_null(strstr(err.fault_string, "PICKING"));
	assert_state(f, "C-3", WMS_ORDER_STATE_PICKING);

	assert_client_fault(f, wms_cancel_order(&r, f->c, "C-404", NULL, &err), &err,
			    "UNKNOWN_ORDER");
	assert_client_fault(f, wms_get_order_status(&sr, f->c, "C-404", &err), &err,
			    "UNKNOWN_ORDER");
	assert_closed(f);
	assert_int_equal(wms_sim_requests(f->sim, "CancelOrder"), 5);
}

/* ---- GetStockLevel ------------------------------------------------------- */

static void test_stock_reserved_and_shipped(void **state)
{
	fx *f = *state;
	const char *two[] = { "SKU-2", "SKU-1" };
	const char *bad[] = { "SKU-1", "SKU-101" };
	wms_stock_reply *r = NULL;
	wms_sim_stock st;
	wms_error err;

	assert_int_equal(wms_get_stock_level(&r, f->c, two, 2, &err), WMS_OK);
	assert_non_null(r);
	assert_int_equal(r->count, 2);
	assert_string_equal(r->levels[0].sku, "SKU-2");
	assert_string_equal(r->levels[1].sku, "SKU-1");
	assert_int_equal(r->levels[1].on_hand, 10000);
	assert_int_equal(r->levels[1].reserved, 0);
	assert_int_equal(r->levels[1].available, 10000);
	wms_stock_reply_free(r);

	/* An order reserves... */
	assert_int_equal(it_submit(f->c, "S-1", "SKU-1", 30, NULL, &err), WMS_OK);
	assert_int_equal(wms_get_stock_level(&r, f->c, two, 2, &err), WMS_OK);
	assert_int_equal(r->levels[1].on_hand, 10000);
	assert_int_equal(r->levels[1].reserved, 30);
	assert_int_equal(r->levels[1].available, 9970);
	assert_int_equal(r->levels[0].reserved, 0);
	wms_stock_reply_free(r);

	/* ... and shipping consumes. */
	wms_sim_advance_clock(f->sim, 4 * HOUR_MS);
	assert_int_equal(wms_get_stock_level(&r, f->c, two + 1, 1, &err), WMS_OK);
	assert_int_equal(r->count, 1);
	assert_int_equal(r->levels[0].on_hand, 9970);
	assert_int_equal(r->levels[0].reserved, 0);
	assert_int_equal(r->levels[0].available, 9970);
	wms_stock_reply_free(r);

	/* Not in the catalogue (SKU-1..SKU-100). */
	assert_client_fault(f, wms_get_stock_level(&r, f->c, bad, 2, &err), &err, "UNKNOWN_SKU");
	assert_null(r);
	assert_client_fault(f, it_submit(f->c, "S-2", "SKU-101", 1, NULL, &err), &err,
			    "UNKNOWN_SKU");
	assert_false(wms_sim_order_get(NULL, f->sim, "S-2"));

	/* Not enough: rejected, nothing reserved; exactly enough: fine. */
	assert_int_equal(wms_sim_set_stock(f->sim, "SKU-9", 4), WMS_SIM_OK);
	assert_client_fault(f, it_submit(f->c, "S-3", "SKU-9", 5, NULL, &err), &err,
			    "INSUFFICIENT_STOCK");
	assert_true(wms_sim_stock_get(&st, f->sim, "SKU-9"));
	assert_int_equal(st.reserved, 0);
	assert_int_equal(it_submit(f->c, "S-3", "SKU-9", 4, NULL, &err), WMS_OK);
	assert_true(wms_sim_stock_get(&st, f->sim, "SKU-9"));
	assert_int_equal(st.on_hand, 4);
	assert_int_equal(st.reserved, 4);
	assert_int_equal(st.available, 0);
	assert_int_equal(wms_sim_set_stock(f->sim, "SKU-0", 1), WMS_SIM_ERR_INVALID_ARG);
	assert_int_equal(wms_sim_set_stock(f->sim, "SKU-9", -1), WMS_SIM_ERR_INVALID_ARG);
	assert_false(wms_sim_stock_get(&st, f->sim, "SKU-01"));
	assert_closed(f);
}

/* ---- counters and the ledger --------------------------------------------- */

typedef struct seen {
	char ids[8][WMS_ID_MAX + 1];
	int n;
	int stop_after;
} seen;

static int collect(const wms_sim_order_info *o, void *ctx)
{
	seen *s = ctx;
	snprintf(s->ids[s->n++], sizeof(s->ids[0]), "%s", o->order_id);
	return s->n == s->stop_after;
}

static void test_counters_and_snapshot(void **state)
{
	fx *f = *state;
	const char *sku[] = { "SKU-1" };
	wms_stock_reply *r = NULL;
	wms_error err;
	seen s;

	assert_int_equal(wms_sim_requests(f->sim, NULL), 0);
	assert_int_equal(it_submit(f->c, "A-3", "SKU-1", 1, NULL, &err), WMS_OK);
	assert_int_equal(it_submit(f->c, "A-1", "SKU-1", 1, NULL, &err), WMS_OK);
	assert_int_equal(it_submit(f->c, "A-2", "SKU-1", 1, NULL, &err), WMS_OK);
	assert_int_equal(wms_get_stock_level(&r, f->c, sku, 1, &err), WMS_OK);
	wms_stock_reply_free(r);
	assert_int_equal(wms_cancel_order(NULL, f->c, "A-2", NULL, &err), WMS_OK);
	assert_int_equal(wms_sim_requests(f->sim, "SubmitOrder"), 3);
	assert_int_equal(wms_sim_requests(f->sim, "GetStockLevel"), 1);
	assert_int_equal(wms_sim_requests(f->sim, "CancelOrder"), 1);
	assert_int_equal(wms_sim_requests(f->sim, "GetOrderStatus"), 0);
	assert_int_equal(wms_sim_requests(f->sim, NULL), 5);
	assert_int_equal(wms_sim_requests(f->sim, "Nope"), 0);

	memset(&s, 0, sizeof(s));
	assert_int_equal(wms_sim_order_foreach(f->sim, collect, &s), 3);
	assert_string_equal(s.ids[0], "A-3");
	assert_string_equal(s.ids[1], "A-1");
	assert_string_equal(s.ids[2], "A-2");
	memset(&s, 0, sizeof(s));
	s.stop_after = 2;
	assert_int_equal(wms_sim_order_foreach(f->sim, collect, &s), 2);
}

/* ---- the simulator's HTTP surface ------------------------------------------ */

#define ENV11_HEAD                                                                        \
	"<?xml version=\"1.0\" encoding=\"UTF-8\"?>"                                      \
	"<soap:Envelope xmlns:soap=\"http://schemas.xmlsoap.org/soap/envelope/\" "        \
	"xmlns:wh=\"urn:libwms:warehouse:1\"><soap:Body>"
#define ENV11_TAIL "</soap:Body></soap:Envelope>"
#define ENV12_HEAD                                                                        \
	"<env:Envelope xmlns:env=\"http://www.w3.org/2003/05/soap-envelope\" "            \
	"xmlns:wh=\"urn:libwms:warehouse:1\"><env:Body>"
#define ENV12_TAIL "</env:Body></env:Envelope>"
#define STATUS_REQ(id) "<wh:GetOrderStatusRequest><wh:clientOrderId>" id \
	"</wh:clientOrderId></wh:GetOrderStatusRequest>"
#define SUBMIT_REQ(qty)                                                                    \
	"<wh:SubmitOrderRequest><wh:clientOrderId>RAW-1</wh:clientOrderId><wh:shipTo>"    \
	"<wh:name>N</wh:name><wh:line1>L</wh:line1><wh:city>C</wh:city>"                 \
	"<wh:postalCode>P</wh:postalCode><wh:country>US</wh:country></wh:shipTo>"         \
	"<wh:priority>STANDARD</wh:priority><wh:lines><wh:line><wh:sku> SKU-1 </wh:sku>"  \
	"<wh:quantity>" qty "</wh:quantity></wh:line></wh:lines></wh:SubmitOrderRequest>"

#define CT11 "text/xml; charset=utf-8"
#define ACTION(op) "SOAPAction: \"urn:libwms:warehouse:1/" op "\""

/* POST a raw request and expect a SOAP Client fault mentioning `needle`. */
static void expect_invalid(fx *f, const char *ctype, const char *action, const char *body,
			   const char *needle)
{
	char *reply = NULL;
	long code = it_http("POST", wms_sim_url(f->sim), ctype, action, body, &reply);
	if (code != 500 || !strstr(reply, "INVALID_REQUEST") || !strstr(reply, needle))
		fail_msg("want a Client fault with '%s', got HTTP %ld: %s", needle, code, reply);
	assert_true(strstr(reply, "<faultcode>soap:Client</faultcode>") ||
		    strstr(reply, "<env:Value>env:Sender</env:Value>"));
	free(reply);
}

static void test_request_checks(void **state)
{
	fx *f = *state;
	char *reply = NULL;
	uint64_t before = wms_sim_requests(f->sim, NULL);

	expect_invalid(f, CT11, ACTION("GetOrderStatus"), "this is not XML", "not well-formed");
	expect_invalid(f, CT11, ACTION("GetOrderStatus"), "", "empty");
	expect_invalid(f, CT11, ACTION("GetOrderStatus"),
		       "<?xml version=\"1.0\"?><!DOCTYPE x [<!ENTITY e SYSTEM \"file:///etc/passwd\">]>"
		       ENV11_HEAD STATUS_REQ("&e;") ENV11_TAIL,
		       "DOCTYPE");
	expect_invalid(f, CT11, ACTION("GetOrderStatus"), "<hello/>", "not a SOAP");
	expect_invalid(f, CT11, ACTION("GetOrderStatus"),
		       ENV11_HEAD "<wh:SubmitOrderResponse/>" ENV11_TAIL, "no request");
	expect_invalid(f, CT11, ACTION("GetOrderStatus"), ENV11_HEAD ENV11_TAIL, "Body is empty");
	expect_invalid(f, CT11, ACTION("SubmitOrder"), ENV11_HEAD SUBMIT_REQ("0") ENV11_TAIL,
		       "minInclusive");
	expect_invalid(f, CT11, ACTION("GetOrderStatus"),
		       ENV11_HEAD STATUS_REQ("has space") ENV11_TAIL, "clientOrderId");
	expect_invalid(f, CT11, NULL, ENV11_HEAD STATUS_REQ("X-1") ENV11_TAIL,
		       "SOAPAction header is missing");
	expect_invalid(f, CT11, ACTION("CancelOrder"), ENV11_HEAD STATUS_REQ("X-1") ENV11_TAIL,
		       "names CancelOrder but the Body carries GetOrderStatus");
	expect_invalid(f, CT11, "SOAPAction: \"urn:other/Thing\"",
		       ENV11_HEAD STATUS_REQ("X-1") ENV11_TAIL, "unknown SOAP action");
	expect_invalid(f, CT11, ACTION("GetOrderStatus"), ENV12_HEAD STATUS_REQ("X-1") ENV12_TAIL,
		       "needs Content-Type application/soap+xml");
	expect_invalid(f, "application/soap+xml; charset=utf-8; action=\"urn:libwms:warehouse:1/"
			  "SubmitOrder\"",
		       NULL, ENV12_HEAD STATUS_REQ("X-1") ENV12_TAIL, "names SubmitOrder");

	/* A good raw request (whitespace around a token is fine), in 1.1 ... */
	assert_int_equal(it_http("POST", wms_sim_url(f->sim), CT11, ACTION("SubmitOrder"),
				 ENV11_HEAD SUBMIT_REQ("3") ENV11_TAIL, &reply),
			 200);
	assert_non_null(strstr(reply, "<wh:wmsReference>WMS-000001</wh:wmsReference>"));
	free(reply);
	/* ... and 1.2, answered in 1.2. */
	assert_int_equal(it_http("POST", wms_sim_url(f->sim),
				 "application/soap+xml; charset=utf-8; action=\"urn:libwms:"
				 "warehouse:1/GetOrderStatus\"",
				 NULL, ENV12_HEAD STATUS_REQ("RAW-1") ENV12_TAIL, &reply),
			 200);
	assert_non_null(strstr(reply, "http://www.w3.org/2003/05/soap-envelope"));
	assert_non_null(strstr(reply, "<wh:state>RECEIVED</wh:state>"));
	free(reply);
	assert_int_equal(wms_sim_requests(f->sim, NULL), before + 15);
}

static void test_wsdl_stats_and_routes(void **state)
{
	fx *f = *state;
	char url[256], *body = NULL, want[128];
	const char *base = wms_sim_base_url(f->sim);

	snprintf(url, sizeof(url), "%s?wsdl", wms_sim_url(f->sim));
	assert_int_equal(it_http("GET", url, NULL, NULL, NULL, &body), 200);
	assert_non_null(strstr(body, "<wsdl:definitions"));
	assert_non_null(strstr(body, "urn:libwms:warehouse:1/SubmitOrder"));
	/* The service address is this sim's. */
	snprintf(want, sizeof(want), "location=\"%s\"", wms_sim_url(f->sim));
	assert_non_null(strstr(body, want));
	free(body);

	snprintf(url, sizeof(url), "%s?xsd", wms_sim_url(f->sim));
	assert_int_equal(it_http("GET", url, NULL, NULL, NULL, &body), 200);
	assert_non_null(strstr(body, "<xsd:schema"));
	free(body);
	snprintf(url, sizeof(url), "%s/warehouse.xsd", base);
	assert_int_equal(it_http("GET", url, NULL, NULL, NULL, &body), 200);
	assert_non_null(strstr(body, "SubmitOrderRequest"));
	free(body);

	assert_int_equal(it_submit(f->c, "W-1", "SKU-1", 1, NULL, NULL), WMS_OK);
	snprintf(url, sizeof(url), "%s/stats", base);
	assert_int_equal(it_http("GET", url, NULL, NULL, NULL, &body), 200);
	assert_non_null(strstr(body, "\"total\":1,\"SubmitOrder\":1,\"GetOrderStatus\":0"));
	assert_non_null(strstr(body, "\"orders\":1"));
	assert_non_null(strstr(body, "\"fault\":{\"kind\":\"none\""));
	assert_non_null(strstr(body, "\"listening\":true"));
	free(body);

	snprintf(url, sizeof(url), "%s/nope", base);
	assert_int_equal(it_http("GET", url, NULL, NULL, NULL, NULL), 404);
	assert_int_equal(it_http("PUT", wms_sim_url(f->sim), NULL, NULL, NULL, NULL), 405);
	assert_int_equal(it_http("GET", wms_sim_url(f->sim), NULL, NULL, NULL, NULL), 400);
	snprintf(url, sizeof(url), "%s/control", base);
	assert_int_equal(it_http("GET", url, NULL, NULL, NULL, NULL), 405);
	snprintf(url, sizeof(url), "%s/", base);
	assert_int_equal(it_http("GET", url, NULL, NULL, NULL, &body), 200);
	assert_non_null(strstr(body, "/control"));
	free(body);
	/* None of these is a SOAP request. */
	assert_int_equal(wms_sim_requests(f->sim, NULL), 1);
}

static long control(fx *f, const char *form, char **body)
{
	char url[200];
	snprintf(url, sizeof(url), "%s/control", wms_sim_base_url(f->sim));
	return it_http("POST", url, "application/x-www-form-urlencoded", NULL, form, body);
}

static void test_control_endpoint(void **state)
{
	fx *f = *state;
	wms_status_reply sr;
	wms_error err;
	char *body = NULL, url[200];

	assert_int_equal(it_submit(f->c, "K-1", "SKU-1", 1, NULL, &err), WMS_OK);
	assert_int_equal(control(f, "fault=server-fault&op=GetOrderStatus", &body), 200);
	assert_non_null(strstr(body, "\"GetOrderStatus\":{\"kind\":\"server-fault\""));
	free(body);
	assert_int_equal(wms_get_order_status(&sr, f->c, "K-1", &err), WMS_ERR_SOAP_FAULT);
	assert_string_equal(err.fault_code, f->soap12 ? "Receiver" : "Server");
	assert_int_equal(it_submit(f->c, "K-2", "SKU-1", 1, NULL, &err), WMS_OK);

	/* Query arguments work as well as a form body. */
	snprintf(url, sizeof(url), "%s/control?fault=none", wms_sim_base_url(f->sim));
	assert_int_equal(it_http("POST", url, NULL, NULL, NULL, NULL), 200);
	assert_int_equal(wms_get_order_status(&sr, f->c, "K-1", &err), WMS_OK);
	assert_int_equal(sr.state, WMS_ORDER_STATE_RECEIVED);

	/* The clock, and a schedule as text (URL-encoded). */
	assert_int_equal(control(f, "advance_ms=7200000", NULL), 200);
	assert_int_equal(wms_get_order_status(&sr, f->c, "K-1", &err), WMS_OK);
	assert_int_equal(sr.state, WMS_ORDER_STATE_PICKING);
	assert_int_equal(control(f, "schedule=%23+an+outage%0A0+600000+http-503", &body), 200);
	assert_non_null(strstr(body, "\"windows\":1"));
	free(body);
	assert_int_equal(wms_get_order_status(&sr, f->c, "K-1", &err), WMS_ERR_HTTP);
	assert_int_equal(err.http_status, 503);
	assert_int_equal(control(f, "clear=1", NULL), 200);
	assert_int_equal(wms_get_order_status(&sr, f->c, "K-1", &err), WMS_OK);

	/* Mistakes are 400 with a line saying why, and change nothing. */
	assert_int_equal(control(f, "fault=bogus", &body), 400);
	assert_non_null(strstr(body, "unknown fault 'bogus'"));
	free(body);
	assert_int_equal(control(f, "fault=hang&op=Nope", NULL), 400);
	assert_int_equal(control(f, "fault=refuse&op=SubmitOrder", NULL), 400);
	assert_int_equal(control(f, "fault=slow&param=-1", NULL), 400);
	assert_int_equal(control(f, "schedule=0+10+nope", NULL), 400);
	assert_int_equal(control(f, "", &body), 400);
	assert_non_null(strstr(body, "nothing to do"));
	free(body);
	assert_int_equal(control(f, "color=red", &body), 400);
	assert_non_null(strstr(body, "unknown parameter 'color'"));
	free(body);
	assert_int_equal(wms_get_order_status(&sr, f->c, "K-1", &err), WMS_OK);
}

/* ---- schedule -------------------------------------------------------------- */

static void test_schedule_file(void **state)
{
	fx *f = *state;
	uint32_t w = it_valgrind() ? 2500u : 500u; /* window length */
	char text[512];
	const char *path;
	double t0;
	wms_status_reply sr;
	wms_error err;
	wms_submit_reply r;

	assert_int_equal(it_submit(f->c, "SCH-0", "SKU-1", 1, NULL, &err), WMS_OK);
	snprintf(text, sizeof(text),
		 "# a scripted outage\n"
		 "0 %u server-fault op=SubmitOrder   # only submits fail\n"
		 "\n"
		 "%u %u refuse\n"
		 "%u %u every-nth param=2\n",
		 w, w, 2 * w, 2 * w, 3 * w);
	path = it_tmp_file("outage.schedule", text);
	t0 = it_now_ms();
	assert_int_equal(wms_sim_load_schedule(f->sim, path), WMS_SIM_OK);

	/* window 1: SubmitOrder fails, the other operations do not */
	assert_int_equal(it_submit(f->c, "SCH-1", "SKU-1", 1, NULL, &err), WMS_ERR_SOAP_FAULT);
	assert_string_equal(err.wms_code, "INTERNAL");
	assert_int_equal(wms_get_order_status(&sr, f->c, "SCH-0", &err), WMS_OK);
	/* window 2: nobody listens */
	it_sleep_until_ms(t0 + 1.5 * w);
	assert_int_equal(it_submit(f->c, "SCH-2", "SKU-1", 1, NULL, &err), WMS_ERR_CONNECT);
	assert_int_equal(err.delivery, WMS_DELIVERY_NOT_SENT);
	/* window 3: every second call fails */
	it_sleep_until_ms(t0 + 2.5 * w);
	assert_int_equal(wms_get_order_status(&sr, f->c, "SCH-0", &err), WMS_OK);
	assert_int_equal(wms_get_order_status(&sr, f->c, "SCH-0", &err), WMS_ERR_SOAP_FAULT);
	assert_int_equal(wms_get_order_status(&sr, f->c, "SCH-0", &err), WMS_OK);
	/* after the schedule: healthy, on the same port */
	it_sleep_until_ms(t0 + 3.2 * w);
	assert_int_equal(it_submit(f->c, "SCH-3", "SKU-1", 1, &r, &err), WMS_OK);
	assert_int_equal(r.duplicate, 0);
	assert_false(wms_sim_order_get(NULL, f->sim, "SCH-1"));
	assert_false(wms_sim_order_get(NULL, f->sim, "SCH-2"));
}

static void expect_schedule_error(fx *f, const char *text, const char *needle)
{
	wms_sim_status st = wms_sim_set_schedule(f->sim, text);
	assert_int_equal(st, WMS_SIM_ERR_PARSE);
	if (!strstr(wms_sim_last_error(), needle))
		fail_msg("schedule error '%s' lacks '%s'", wms_sim_last_error(), needle);
}

/* The simulator's own bounds, each on both sides, twice on one sim: a
 * schedule time of 10^12 ms and one past it, 1024 windows and 1025; a
 * scripted reply's content type of 511 bytes and 512, trickle_ms of
 * 3600000 and 3600001. A refused one leaves what was set before. */
static void test_sim_bounds(void **state)
{
	fx *f = *state;
	char *text = malloc(1025 * 48 + 1), ct[600]; /* a line is at most 40 bytes */
	wms_sim_reply r = WMS_SIM_REPLY_INIT;
	size_t i, n;
	int round;
	assert_non_null(text);
	for (round = 0; round < 2; round++) {
		assert_int_equal(wms_sim_set_schedule(f->sim, "0 1000000000000 slow param=1"),
				 WMS_SIM_OK);
		expect_schedule_error(f, "0 1000000000001 slow param=1", "at most 1000000000000");
		for (n = 1024; n <= 1025; n++) {
			text[0] = '\0';
			for (i = 0; i < n; i++)
				sprintf(text + strlen(text), "%zu %zu slow param=1\n", i * 10 + 5000000,
					i * 10 + 5000005);
			if (n == 1024)
				assert_int_equal(wms_sim_set_schedule(f->sim, text), WMS_SIM_OK);
			else
				expect_schedule_error(f, text, "more than 1024 windows");
		}
		assert_int_equal(wms_sim_set_schedule(f->sim, "# none\n"), WMS_SIM_OK);
		memset(ct, 'x', sizeof(ct));
		ct[511] = '\0';
		r.status = 200;
		r.content_type = ct;
		r.body = "<x/>";
		r.body_len = 4;
		r.times = 1;
		assert_int_equal(wms_sim_set_reply(f->sim, "SubmitOrder", &r), WMS_SIM_OK);
		ct[511] = 'x';
		ct[512] = '\0';
		assert_int_equal(wms_sim_set_reply(f->sim, "SubmitOrder", &r), WMS_SIM_ERR_INVALID_ARG);
		assert_non_null(strstr(wms_sim_last_error(), "under 512 bytes"));
		ct[511] = '\0';
		r.trickle_ms = 3600000u;
		assert_int_equal(wms_sim_set_reply(f->sim, "SubmitOrder", &r), WMS_SIM_OK);
		r.trickle_ms = 3600001u;
		assert_int_equal(wms_sim_set_reply(f->sim, "SubmitOrder", &r), WMS_SIM_ERR_INVALID_ARG);
		assert_non_null(strstr(wms_sim_last_error(), "at most 3600000"));
		r.trickle_ms = 0;
		assert_int_equal(wms_sim_set_reply(f->sim, "SubmitOrder", NULL), WMS_SIM_OK);
	}
	free(text);
	/* nothing refused stayed behind: an order goes through */
	assert_int_equal(it_submit(f->c, "B-1", "SKU-1", 1, NULL, NULL), WMS_OK);
}

static void test_schedule_errors_and_fault_names(void **state)
{
	fx *f = *state;
	wms_sim_fault k;
	int i;

	expect_schedule_error(f, "0 10 hnag", "line 1: unknown fault 'hnag'");
	expect_schedule_error(f, "# c\n\n5 1 hang", "line 3: end_ms must be after start_ms");
	expect_schedule_error(f, "0 10 refuse op=SubmitOrder", "refuse closes the listener");
	expect_schedule_error(f, "0 10 hang op=Shipping", "unknown operation 'Shipping'");
	expect_schedule_error(f, "0 ten hang", "end_ms 'ten'");
	expect_schedule_error(f, "0 10", "want start_ms end_ms fault");
	expect_schedule_error(f, "0 10 slow param=fast", "param 'fast'");
	expect_schedule_error(f, "0 10 slow extra", "unexpected 'extra'");
	assert_int_equal(wms_sim_load_schedule(f->sim, "/nonexistent/x.schedule"), WMS_SIM_ERR_IO);
	assert_non_null(strstr(wms_sim_last_error(), "/nonexistent/x.schedule"));
	/* An empty schedule is fine, and nothing changed meanwhile. */
	assert_int_equal(wms_sim_set_schedule(f->sim, "# nothing\n"), WMS_SIM_OK);
	assert_int_equal(it_submit(f->c, "E-1", "SKU-1", 1, NULL, NULL), WMS_OK);

	assert_int_equal(wms_sim_set_fault(f->sim, "SubmitOrder", WMS_SIM_FAULT_REFUSE, 0),
			 WMS_SIM_ERR_INVALID_ARG);
	assert_int_equal(wms_sim_set_fault(f->sim, "Shipping", WMS_SIM_FAULT_HANG, 0),
			 WMS_SIM_ERR_INVALID_ARG);
	assert_int_equal(wms_sim_set_fault(f->sim, NULL, (wms_sim_fault)99, 0),
			 WMS_SIM_ERR_INVALID_ARG);
	for (i = 0; i < WMS_SIM_FAULT_COUNT; i++) {
		assert_int_equal(wms_sim_fault_parse(&k, wms_sim_fault_name((wms_sim_fault)i)),
				 WMS_SIM_OK);
		assert_int_equal(k, i);
	}
	assert_int_equal(wms_sim_fault_parse(&k, "HTTP_500"), WMS_SIM_OK);
	assert_int_equal(k, WMS_SIM_FAULT_HTTP_500);
	assert_int_equal(wms_sim_fault_parse(&k, "replylost"), WMS_SIM_OK);
	assert_int_equal(k, WMS_SIM_FAULT_REPLY_LOST);
	assert_int_equal(wms_sim_fault_parse(&k, "explode"), WMS_SIM_ERR_INVALID_ARG);
	assert_int_equal(wms_sim_fault_parse(&k, "hang2"), WMS_SIM_ERR_INVALID_ARG);
}

static void test_start_errors(void **state)
{
	fx *f = *state;
	wms_sim_options o = WMS_SIM_OPTIONS_INIT;
	wms_sim *sim = (wms_sim *)f; /* must be reset to NULL */

	o.bind = "not-an-address";
	assert_int_equal(wms_sim_start(&sim, &o), WMS_SIM_ERR_INVALID_ARG);
	assert_null(sim);
	assert_non_null(strstr(wms_sim_last_error(), "not-an-address"));
	o.bind = NULL;
	o.xsd_path = "/nonexistent/warehouse.xsd";
	assert_int_equal(wms_sim_start(&sim, &o), WMS_SIM_ERR_IO);
	o.xsd_path = NULL;
	o.wsdl_path = "/nonexistent/warehouse.wsdl";
	assert_int_equal(wms_sim_start(&sim, &o), WMS_SIM_ERR_IO);
	o.wsdl_path = NULL;
	o.schedule_path = it_tmp_file("bad.schedule", "0 10 hang\n1 2 3 4\n");
	assert_int_equal(wms_sim_start(&sim, &o), WMS_SIM_ERR_PARSE);
	assert_non_null(strstr(wms_sim_last_error(), "line 2"));
	o.schedule_path = NULL;
	/* The port is taken by this fixture's sim. */
	o.port = wms_sim_port(f->sim);
	assert_int_equal(wms_sim_start(&sim, &o), WMS_SIM_ERR_LISTEN);
	assert_non_null(strstr(wms_sim_last_error(), "cannot listen"));
	o.port = 0;
	o.version = 99;
	assert_int_equal(wms_sim_start(&sim, &o), WMS_SIM_ERR_INVALID_ARG);
	assert_int_equal(wms_sim_start(NULL, NULL), WMS_SIM_ERR_INVALID_ARG);
	assert_null(sim);
	wms_sim_stop(NULL);
	assert_int_equal(wms_sim_requests(NULL, NULL), 0);
	assert_string_equal(wms_sim_status_name(WMS_SIM_ERR_LISTEN), "LISTEN");
}

#define BOTH(t)                                                   \
	cmocka_unit_test_setup_teardown(t, setup11, teardown), \
	cmocka_unit_test_setup_teardown(t, setup12, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		BOTH(test_submit_idempotent),
		BOTH(test_submit_multi_line),
		BOTH(test_status_advances_with_the_clock),
		BOTH(test_status_advances_in_real_time),
		BOTH(test_cancel_rules),
		BOTH(test_stock_reserved_and_shipped),
		cmocka_unit_test_setup_teardown(test_counters_and_snapshot, setup11, teardown),
		cmocka_unit_test_setup_teardown(test_request_checks, setup11, teardown),
		cmocka_unit_test_setup_teardown(test_wsdl_stats_and_routes, setup11, teardown),
		BOTH(test_control_endpoint),
		cmocka_unit_test_setup_teardown(test_schedule_file, setup11, teardown),
		cmocka_unit_test_setup_teardown(test_sim_bounds, setup11, teardown),
		cmocka_unit_test_setup_teardown(test_schedule_errors_and_fault_names, setup11,
						teardown),
		cmocka_unit_test_setup_teardown(test_start_errors, setup11, teardown),
	};
	return cmocka_run_group_tests_name("integration: operations", tests, NULL, NULL);
}
