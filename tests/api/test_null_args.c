/* Every public function with a pointer parameter, called with each pointer
 * NULL in turn (the others valid), against what its header says for that
 * NULL: a wms_status function gives WMS_ERR_INVALID_ARG (err filled: its
 * status the same, delivery NOT_SENT, a message naming the argument)
 * unless its comment allows the NULL, in which case the call must work as
 * documented; a free function takes NULL as a no-op; a function returning
 * a value gives what its comment says for NULL. Where a header is silent
 * on a NULL for a function that returns no wms_status, the check is only
 * "no crash, a neutral result" (0, NULL, nothing changed: README's "NULL
 * arguments" states these) and the comment says "header silent". Each
 * function's comment names the doc line followed. Installed headers only;
 * no network: the clients' endpoint is ENDPOINT, a port held and never
 * listening (refused: a call that gets past its checks ends in
 * WMS_ERR_CONNECT, which is how a "NULL allowed" case shows it was
 * accepted), and the one call held in flight goes to a loopback listener
 * of ours that never accepts. Checks are soft inside a test (every case
 * of a function runs and prints), the test fails at its end. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include <libxml/tree.h>
#include "wms/wms.h"
#include "wms/sys/alloc.h"
#include "wms/sys/breaker_store.h"
#include "wms/sys/transport.h"
#include "local_port.h" /* tests/common */
#include "api_sweep.h"

const char sweep_file[] = "test_null_args.c";

static wms_status g_global_init_st; /* wms_global_init(NULL, &err), first thing in main */
static wms_error g_global_init_err;

static int group_setup(void **state)
{
	(void)state;
	sweep_setup("ORD-NULLARGS-1");
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	sweep_teardown("null_args", "NULL cases");
	return 0;
}

/* ===== errors.h ============================================================ */

static void errors_h(void **state)
{
	wms_error e;
	(void)state;
	/* errors.h: wms_error_clear "Reset an error to "no error". NULL-safe." */
	FN("wms_error_clear");
	CASE();
	wms_error_clear(NULL);
	stale(&e);
	wms_error_clear(&e);
	CHECK(e.status == WMS_OK && e.message[0] == '\0', "wms_error_clear(&e) did not clear");

	/* errors.h: wms_error_is_retryable "Whether it is safe to send the same
	 * request again" - header silent on NULL: the safe answer, 0 (no). */
	FN("wms_error_is_retryable");
	CASE();
	CHECK(wms_error_is_retryable(NULL) == 0, "wms_error_is_retryable(NULL) != 0");
	END();
}

/* ===== client.h ============================================================ */

/* client.h, call.h, breaker.h, async.h: wms_*_options_init - no NULL text:
 * status rule (curl.h's, shared.h's and the global one are with their
 * headers' other functions) */
static void options_inits(void **state)
{
	(void)state;
	FN("wms_client_options_init");
	BAD_ARG(wms_client_options_init(NULL, WMS_CLIENT_OPTIONS_VERSION), NULL, NULL);
	FN("wms_call_options_init");
	BAD_ARG(wms_call_options_init(NULL, WMS_CALL_OPTIONS_VERSION), NULL, NULL);
	FN("wms_breaker_options_init");
	BAD_ARG(wms_breaker_options_init(NULL, WMS_BREAKER_OPTIONS_VERSION), NULL, NULL);
	FN("wms_async_options_init");
	BAD_ARG(wms_async_options_init(NULL, WMS_ASYNC_OPTIONS_VERSION), NULL, NULL);
	END();
}

static void client_new(void **state)
{
	wms_client_options o = WMS_CLIENT_OPTIONS_INIT;
	wms_client *c = NULL;
	wms_error e;
	(void)state;
	/* client.h: wms_client_new "Create a client. `err` (optional) explains
	 * an INVALID_ARG." */
	FN("wms_client_new");
	o.endpoint = ENDPOINT;
	stale(&e);
	BAD_ARG(wms_client_new(NULL, &o, &e), &e, "out");
	stale(&e);
	BAD_ARG(wms_client_new(&c, NULL, &e), &e, "options");
	c = NULL;
	WORKS(wms_client_new(&c, &o, NULL), WMS_OK, NULL);
	CHECK(c != NULL, "wms_client_new(&c, &o, NULL): no client");
	wms_client_free(c);
	END();
}

static void client_free(void **state)
{
	(void)state;
	/* client.h: wms_client_free "NULL-safe." */
	FN("wms_client_free");
	CASE();
	wms_client_free(NULL);
	END();
}

static void client_breaker(void **state)
{
	(void)state;
	/* client.h: wms_client_breaker "The client's breaker" - header silent
	 * on NULL: no breaker (NULL). */
	FN("wms_client_breaker");
	CASE();
	CHECK(wms_client_breaker(NULL) == NULL, "wms_client_breaker(NULL) != NULL");
	END();
}

static void error_outcome(void **state)
{
	(void)state;
	/* client.h: wms_error_outcome - header silent on NULL: no error says
	 * nothing of the WMS's health, IGNORED (breaker.h: "Says nothing about
	 * the dependency's health"). */
	FN("wms_error_outcome");
	CASE();
	CHECK(wms_error_outcome(NULL) == WMS_OUTCOME_IGNORED, "wms_error_outcome(NULL) = %d",
	      (int)wms_error_outcome(NULL));
	END();
}

static void client_breaker_for(void **state)
{
	(void)state;
	/* client.h: wms_client_breaker_for "The breaker guarding `operation`
	 * ...; NULL if unknown." */
	FN("wms_client_breaker_for");
	CHECK(wms_client_breaker_for(g_client, "SubmitOrder") != NULL, "baseline: no breaker");
	CASE();
	CHECK(wms_client_breaker_for(NULL, "SubmitOrder") == NULL, "client NULL: not NULL");
	CASE();
	CHECK(wms_client_breaker_for(g_client, NULL) == NULL, "operation NULL: not NULL");
	END();
}

static void client_breakers(void **state)
{
	wms_breaker *b[4] = { NULL };
	size_t n;
	(void)state;
	/* client.h: wms_client_breakers "writes up to `max` into `out`, returns
	 * how many there are" - header silent on NULL: `out` NULL writes
	 * nothing and still says how many; a NULL client has none (0). */
	FN("wms_client_breakers");
	n = wms_client_breakers(b, 4, g_client);
	CHECK(n >= 1 && b[0] == wms_client_breaker(g_client), "baseline: %zu breakers", n);
	CASE();
	CHECK(wms_client_breakers(NULL, 4, g_client) == n, "out NULL: count differs");
	CASE();
	b[0] = NULL;
	CHECK(wms_client_breakers(b, 4, NULL) == 0 && b[0] == NULL, "client NULL: not 0 / wrote");
	END();
}

static void client_bulkhead_get(void **state)
{
	wms_bulkhead_snapshot s;
	(void)state;
	/* client.h: wms_client_bulkhead_get "(NULL: the client's ...).
	 * INVALID_ARG for a NULL argument or an unknown operation." */
	FN("wms_client_bulkhead_get");
	BAD_ARG(wms_client_bulkhead_get(NULL, g_client, "SubmitOrder"), NULL, NULL);
	BAD_ARG(wms_client_bulkhead_get(&s, NULL, "SubmitOrder"), NULL, NULL);
	WORKS(wms_client_bulkhead_get(&s, g_client, NULL), WMS_OK, NULL);
	END();
}

static void client_read_cache_get(void **state)
{
	wms_read_cache_snapshot s;
	(void)state;
	/* client.h: wms_client_read_cache_get "INVALID_ARG for a NULL argument." */
	FN("wms_client_read_cache_get");
	WORKS(wms_client_read_cache_get(&s, g_client), WMS_OK, NULL);
	BAD_ARG(wms_client_read_cache_get(NULL, g_client), NULL, NULL);
	BAD_ARG(wms_client_read_cache_get(&s, NULL), NULL, NULL);
	END();
}

static void stock_reply_new_free(void **state)
{
	wms_stock_reply *r = NULL;
	(void)state;
	/* client.h: wms_stock_reply_new "Allocate a reply" - no NULL text:
	 * status rule. */
	FN("wms_stock_reply_new");
	BAD_ARG(wms_stock_reply_new(NULL, 1), NULL, NULL);
	WORKS(wms_stock_reply_new(&r, 1), WMS_OK, NULL);
	wms_stock_reply_free(r);
	/* client.h: wms_stock_reply_free "NULL-safe; frees the levels too." */
	FN("wms_stock_reply_free");
	CASE();
	wms_stock_reply_free(NULL);
	END();
}

/* The four typed operations. client.h: wms_submit_order "`out` and `err`
 * may be NULL"; errors.h: calls that talk to the WMS "fill an optional
 * caller-owned wms_error". The other three say nothing of `out`: status
 * rule. A call that gets past its checks ends in CONNECT (ENDPOINT). */
static void submit_order(void **state)
{
	wms_submit_reply r;
	wms_error e;
	wms_order o;
	(void)state;
	FN("wms_submit_order");
	stale(&e);
	WORKS(wms_submit_order(&r, g_client, &g_order, &e), WMS_ERR_CONNECT, &e);
	stale(&e);
	WORKS(wms_submit_order(NULL, g_client, &g_order, &e), WMS_ERR_CONNECT, &e);
	stale(&e);
	BAD_ARG(wms_submit_order(&r, NULL, &g_order, &e), &e, "client");
	stale(&e);
	BAD_ARG(wms_submit_order(&r, g_client, NULL, &e), &e, "order");
	WORKS(wms_submit_order(&r, g_client, &g_order, NULL), WMS_ERR_CONNECT, NULL);
	BAD_ARG(wms_submit_order(&r, NULL, &g_order, NULL), NULL, NULL);

	/* The order's pointer fields, as client.h marks them: wms_order
	 * order_id (1-64 bytes), wms_address "required" / "optional",
	 * lines and each line's sku (1-64 bytes). */
	o = g_order;
	o.order_id = NULL;
	stale(&e);
	BAD_ARG(wms_submit_order(&r, g_client, &o, &e), &e, "order_id");
#define ADDRESS_FIELD(field, required)                                                       \
	do {                                                                                 \
		o = g_order;                                                                 \
		o.ship_to.field = NULL;                                                      \
		stale(&e);                                                                   \
		if (required)                                                                \
			BAD_ARG(wms_submit_order(&r, g_client, &o, &e), &e, #field);          \
		else                                                                         \
			WORKS(wms_submit_order(&r, g_client, &o, &e), WMS_ERR_CONNECT, &e);   \
	} while (0)
	ADDRESS_FIELD(name, 1);
	ADDRESS_FIELD(line1, 1);
	ADDRESS_FIELD(line2, 0);
	ADDRESS_FIELD(city, 1);
	ADDRESS_FIELD(region, 0);
	ADDRESS_FIELD(postal_code, 1);
	ADDRESS_FIELD(country, 1);
#undef ADDRESS_FIELD
	o = g_order;
	o.lines = NULL;
	stale(&e);
	BAD_ARG(wms_submit_order(&r, g_client, &o, &e), &e, "lines");
	{
		wms_order_line l = { NULL, 1 };
		o = g_order;
		o.lines = &l;
		stale(&e);
		BAD_ARG(wms_submit_order(&r, g_client, &o, &e), &e, "sku");
	}
	END();
}

static void get_order_status(void **state)
{
	wms_status_reply r;
	wms_error e;
	(void)state;
	FN("wms_get_order_status");
	stale(&e);
	WORKS(wms_get_order_status(&r, g_client, "ORD-1", &e), WMS_ERR_CONNECT, &e);
	/* client.h: "`out` and `err` may be NULL": the call goes */
	stale(&e);
	WORKS(wms_get_order_status(NULL, g_client, "ORD-1", &e), WMS_ERR_CONNECT, &e);
	stale(&e);
	BAD_ARG(wms_get_order_status(&r, NULL, "ORD-1", &e), &e, "client");
	stale(&e);
	BAD_ARG(wms_get_order_status(&r, g_client, NULL, &e), &e, "order_id");
	WORKS(wms_get_order_status(&r, g_client, "ORD-1", NULL), WMS_ERR_CONNECT, NULL);
	END();
}

static void cancel_order(void **state)
{
	wms_cancel_reply r;
	wms_error e;
	(void)state;
	FN("wms_cancel_order");
	stale(&e);
	WORKS(wms_cancel_order(&r, g_client, "ORD-1", "changed mind", &e), WMS_ERR_CONNECT, &e);
	/* client.h: "`out` and `err` may be NULL": the call goes */
	stale(&e);
	WORKS(wms_cancel_order(NULL, g_client, "ORD-1", "changed mind", &e), WMS_ERR_CONNECT, &e);
	stale(&e);
	BAD_ARG(wms_cancel_order(&r, NULL, "ORD-1", "changed mind", &e), &e, "client");
	stale(&e);
	BAD_ARG(wms_cancel_order(&r, g_client, NULL, "changed mind", &e), &e, "order_id");
	/* client.h: "`reason` NULL or "": none is sent": the call goes */
	stale(&e);
	WORKS(wms_cancel_order(&r, g_client, "ORD-1", NULL, &e), WMS_ERR_CONNECT, &e);
	WORKS(wms_cancel_order(&r, g_client, "ORD-1", "changed mind", NULL), WMS_ERR_CONNECT, NULL);
	END();
}

static void get_stock_level(void **state)
{
	wms_stock_reply *r = NULL;
	const char *holes[] = { NULL };
	wms_error e;
	(void)state;
	/* client.h: "`*out` receives a reply to free with wms_stock_reply_free()" */
	FN("wms_get_stock_level");
	stale(&e);
	WORKS(wms_get_stock_level(&r, g_client, g_skus, 1, &e), WMS_ERR_CONNECT, &e);
	stale(&e);
	BAD_ARG(wms_get_stock_level(NULL, g_client, g_skus, 1, &e), &e, "out");
	stale(&e);
	BAD_ARG(wms_get_stock_level(&r, NULL, g_skus, 1, &e), &e, "client");
	stale(&e);
	BAD_ARG(wms_get_stock_level(&r, g_client, NULL, 1, &e), &e, "skus");
	stale(&e);
	BAD_ARG(wms_get_stock_level(&r, g_client, holes, 1, &e), &e, "skus[0]");
	WORKS(wms_get_stock_level(&r, g_client, g_skus, 1, NULL), WMS_ERR_CONNECT, NULL);
	END();
}

/* ===== call.h ============================================================== */

static void call_node(void **state)
{
	xmlDocPtr out = (xmlDocPtr)&out; /* set: must come back NULL */
	wms_call_options op = g_call;
	wms_error e;
	(void)state;
	/* call.h: wms_call "On any other status `*out` is NULL and `err` says
	 * why"; `operation` "Required" */
	FN("wms_call");
	stale(&e);
	WORKS(wms_call(&out, g_client, &g_call, body_node(), &e), WMS_ERR_CONNECT, &e);
	CHECK(out == NULL, "failed call: *out not NULL");
	stale(&e);
	BAD_ARG(wms_call(NULL, g_client, &g_call, body_node(), &e), &e, "out");
	stale(&e);
	BAD_ARG(wms_call(&out, NULL, &g_call, body_node(), &e), &e, "client");
	stale(&e);
	BAD_ARG(wms_call(&out, g_client, NULL, body_node(), &e), &e, "call");
	stale(&e);
	BAD_ARG(wms_call(&out, g_client, &g_call, NULL, &e), &e, "body");
	WORKS(wms_call(&out, g_client, &g_call, body_node(), NULL), WMS_ERR_CONNECT, NULL);
	op.operation = NULL;
	stale(&e);
	BAD_ARG(wms_call(&out, g_client, &op, body_node(), &e), &e, "operation");
	/* call.h: soap_action "NULL = """, reply_namespace "NULL: any",
	 * reply_element "NULL: any single element" */
	op = g_call;
	op.soap_action = NULL;
	op.reply_namespace = NULL;
	op.reply_element = NULL;
	stale(&e);
	WORKS(wms_call(&out, g_client, &op, body_node(), &e), WMS_ERR_CONNECT, &e);
	END();
}

static void call_bytes(void **state)
{
	xmlDocPtr out = (xmlDocPtr)&out;
	size_t len = strlen(g_body_xml);
	wms_error e;
	(void)state;
	/* call.h: wms_call_bytes "The same with the body as bytes of XML" */
	FN("wms_call_bytes");
	stale(&e);
	WORKS(wms_call_bytes(&out, g_client, &g_call, g_body_xml, len, &e), WMS_ERR_CONNECT, &e);
	CHECK(out == NULL, "failed call: *out not NULL");
	stale(&e);
	BAD_ARG(wms_call_bytes(NULL, g_client, &g_call, g_body_xml, len, &e), &e, "out");
	stale(&e);
	BAD_ARG(wms_call_bytes(&out, NULL, &g_call, g_body_xml, len, &e), &e, "client");
	stale(&e);
	BAD_ARG(wms_call_bytes(&out, g_client, NULL, g_body_xml, len, &e), &e, "call");
	stale(&e);
	BAD_ARG(wms_call_bytes(&out, g_client, &g_call, NULL, len, &e), &e, "body");
	WORKS(wms_call_bytes(&out, g_client, &g_call, g_body_xml, len, NULL), WMS_ERR_CONNECT,
	      NULL);
	END();
}

/* ===== breaker.h =========================================================== */

static void breaker_new_free(void **state)
{
	wms_breaker_options o = WMS_BREAKER_OPTIONS_INIT;
	wms_breaker *b = NULL;
	(void)state;
	/* breaker.h: wms_breaker_new "NULL options mean all defaults." */
	FN("wms_breaker_new");
	BAD_ARG(wms_breaker_new(NULL, &o), NULL, NULL);
	WORKS(wms_breaker_new(&b, NULL), WMS_OK, NULL);
	CHECK(b && wms_breaker_state_get(b) == WMS_BREAKER_STATE_CLOSED, "defaults: not CLOSED");
	wms_breaker_free(b);
	/* breaker.h: wms_breaker_free "NULL-safe." */
	FN("wms_breaker_free");
	CASE();
	wms_breaker_free(NULL);
	END();
}

static void breaker_acquire(void **state)
{
	wms_breaker *b = NULL;
	wms_breaker_permit p;
	uint32_t ra = 7;
	(void)state;
	/* breaker.h: wms_breaker_acquire "*retry_after_ms (optional)"; the
	 * others: status rule */
	FN("wms_breaker_acquire");
	assert_int_equal(wms_breaker_new(&b, NULL), WMS_OK);
	BAD_ARG(wms_breaker_acquire(NULL, b, &ra), NULL, NULL);
	BAD_ARG(wms_breaker_acquire(&p, NULL, &ra), NULL, NULL);
	WORKS(wms_breaker_acquire(&p, b, NULL), WMS_OK, NULL);
	wms_breaker_release(b, &p);
	wms_breaker_force_open(b);
	WORKS(wms_breaker_acquire(&p, b, NULL), WMS_ERR_CIRCUIT_OPEN, NULL);
	wms_breaker_free(b);
	END();
}

static void breaker_record_release(void **state)
{
	wms_breaker *b = NULL;
	wms_breaker_permit p;
	wms_breaker_snapshot s0, s1;
	(void)state;
	/* breaker.h: wms_breaker_record / wms_breaker_release - header silent
	 * on NULL: no crash, nothing counted (the permit still to be recorded) */
	assert_int_equal(wms_breaker_new(&b, NULL), WMS_OK);
	assert_int_equal(wms_breaker_acquire(&p, b, NULL), WMS_OK);
	wms_breaker_snapshot_get(&s0, b);
	FN("wms_breaker_record");
	CASE();
	wms_breaker_record(NULL, &p, WMS_OUTCOME_FAILURE);
	CASE();
	wms_breaker_record(b, NULL, WMS_OUTCOME_FAILURE);
	FN("wms_breaker_release");
	CASE();
	wms_breaker_release(NULL, &p);
	CASE();
	wms_breaker_release(b, NULL);
	wms_breaker_snapshot_get(&s1, b);
	CHECK(s1.permitted == s0.permitted && s1.failures == s0.failures &&
		      s1.successes == s0.successes && s1.ignored == s0.ignored,
	      "a NULL record/release changed the counters");
	wms_breaker_record(b, &p, WMS_OUTCOME_SUCCESS);
	wms_breaker_snapshot_get(&s1, b);
	CHECK(s1.successes == s0.successes + 1, "the real record was not counted");
	wms_breaker_free(b);
	END();
}

static void breaker_reads(void **state)
{
	wms_breaker *b = NULL;
	wms_breaker_snapshot s;
	wms_breaker_state st;
	(void)state;
	assert_int_equal(wms_breaker_new(&b, NULL), WMS_OK);
	/* breaker.h: wms_breaker_permit_is_trial "0 for a call granted in
	 * CLOSED or DISABLED, and for NULL." */
	FN("wms_breaker_permit_is_trial");
	CASE();
	CHECK(wms_breaker_permit_is_trial(NULL) == 0, "wms_breaker_permit_is_trial(NULL) != 0");

	/* breaker.h: wms_breaker_state_get "The current state" - header silent
	 * on NULL; README ("NULL arguments"): "wms_breaker_state_get(NULL) reads
	 * CLOSED" */
	FN("wms_breaker_state_get");
	CASE();
	st = wms_breaker_state_get(NULL);
	CHECK(st == WMS_BREAKER_STATE_CLOSED, "wms_breaker_state_get(NULL) = %s",
	      wms_breaker_state_name(st));

	/* breaker.h: wms_breaker_snapshot_get - header silent on NULL: no
	 * crash; a NULL breaker has counted nothing */
	FN("wms_breaker_snapshot_get");
	CASE();
	wms_breaker_snapshot_get(NULL, b);
	CASE();
	memset(&s, 0xA5, sizeof(s));
	wms_breaker_snapshot_get(&s, NULL);
	CHECK(s.permitted == 0 && s.rejected == 0 && s.successes == 0 && s.failures == 0 &&
		      s.transitions == 0,
	      "snapshot of NULL: counters not 0");

	/* breaker.h: force_open/force_closed/disable/reset - header silent on
	 * NULL: no crash */
	FN("wms_breaker_force_open");
	CASE();
	wms_breaker_force_open(NULL);
	FN("wms_breaker_force_closed");
	CASE();
	wms_breaker_force_closed(NULL);
	FN("wms_breaker_disable");
	CASE();
	wms_breaker_disable(NULL);
	FN("wms_breaker_reset");
	CASE();
	wms_breaker_reset(NULL);
	CHECK(wms_breaker_state_get(b) == WMS_BREAKER_STATE_CLOSED, "another breaker changed");
	wms_breaker_free(b);
	END();
}

/* ===== sys/breaker_store.h ================================================= */

typedef struct events {
	int n;
	const char *reason;
	int reason_null;
} events;

static void on_event(const wms_breaker_event *ev, void *payload)
{
	events *x = payload;
	x->n++;
	x->reason = ev->reason;
	x->reason_null = ev->reason == NULL;
}

static void breaker_store_seam(void **state)
{
	wms_breaker_options o = WMS_BREAKER_OPTIONS_INIT;
	wms_breaker *b = NULL;
	events x = { 0, NULL, 0 };
	uint32_t left = 7;
	wms_breaker_state a, c;
	(void)state;
	o.callbacks.on_state_change = on_event;
	o.callbacks.payload = &x;
	assert_int_equal(wms_breaker_new(&b, &o), WMS_OK);

	/* breaker_store.h: wms_breaker_clock_ns "The breaker's clock (its
	 * options' clock, or CLOCK_MONOTONIC)" - header silent on NULL: no
	 * crash, a monotonic reading */
	FN("wms_breaker_clock_ns");
	CASE();
	CHECK(wms_breaker_clock_ns(NULL) > 0, "wms_breaker_clock_ns(NULL) = 0");

	/* wms_breaker_local_state "and for OPEN the milliseconds left" - header
	 * silent on NULL: the state without the figure; a NULL breaker: no
	 * crash, nothing left */
	FN("wms_breaker_local_state");
	wms_breaker_force_open(b);
	CASE();
	a = wms_breaker_local_state(b, NULL);
	c = wms_breaker_local_state(b, &left);
	CHECK(a == c, "open_remaining_ms NULL: another state (%d, %d)", (int)a, (int)c);
	CASE();
	left = 7;
	(void)wms_breaker_local_state(NULL, &left);
	CHECK(left == 0, "breaker NULL: open_remaining_ms %u", left);
	wms_breaker_reset(b);

	/* wms_breaker_local_adopt - header silent on NULL: no crash */
	FN("wms_breaker_local_adopt");
	CASE();
	wms_breaker_local_adopt(NULL, WMS_BREAKER_STATE_OPEN, 10);

	/* wms_breaker_store_event "Tell the breaker's listener of a change" -
	 * header silent on NULL: no crash for a NULL breaker; a NULL reason
	 * must not reach the listener, whose event's reason breaker.h
	 * documents as "Static text" */
	FN("wms_breaker_store_event");
	CASE();
	wms_breaker_store_event(NULL, WMS_BREAKER_STATE_CLOSED, WMS_BREAKER_STATE_OPEN, "x",
				WMS_STORE_STATE_NONE);
	CASE();
	x.n = 0;
	wms_breaker_store_event(b, WMS_BREAKER_STATE_CLOSED, WMS_BREAKER_STATE_CLOSED, NULL,
				WMS_STORE_STATE_NONE);
	CHECK(x.n == 1, "reason NULL: %d events", x.n);
	CHECK(x.n == 0 || !x.reason_null,
	      "reason NULL: the listener got an event whose reason is NULL (breaker.h: "
	      "\"Static text\")");

	/* wms_breaker_store_free "Free a store (NULL-safe)." */
	FN("wms_breaker_store_free");
	CASE();
	wms_breaker_store_free(NULL);
	wms_breaker_free(b);
	END();
}

/* ===== async.h ============================================================= */

static void async_new_free(void **state)
{
	wms_async_options o = WMS_ASYNC_OPTIONS_INIT;
	wms_async *a = NULL;
	wms_error e;
	(void)state;
	/* async.h: wms_async_new - the example: "wms_async_new(&a, client,
	 * NULL, &err); // NULL: libwms's loop"; err as everywhere, optional */
	FN("wms_async_new");
	stale(&e);
	BAD_ARG(wms_async_new(NULL, g_client, &o, &e), &e, "out");
	stale(&e);
	BAD_ARG(wms_async_new(&a, NULL, &o, &e), &e, "client");
	stale(&e);
	WORKS(wms_async_new(&a, g_client, NULL, &e), WMS_OK, &e);
	wms_async_free(a);
	a = NULL;
	WORKS(wms_async_new(&a, g_client, &o, NULL), WMS_OK, NULL);
	CHECK(a != NULL, "err NULL: no context");
	wms_async_free(a);
	/* async.h: wms_async_free "NULL-safe." */
	FN("wms_async_free");
	CASE();
	wms_async_free(NULL);
	END();
}

static void async_submit_order(void **state)
{
	wms_async *a = mk_async(g_client);
	wms_async_call *h;
	seen s;
	(void)state;
	memset(&s, 0, sizeof(s));
	memset(&g_no_payload, 0, sizeof(g_no_payload));
	/* async.h: "`*out` (optional) is the call's handle"; "Any other status
	 * (`async` or `cb` NULL)"; payload: given to the callback */
	FN("wms_async_submit_order");
	COMPLETES(wms_async_submit_order(&h, a, &g_order, on_submit, &s), &s, a, WMS_ERR_CONNECT,
		  NULL);
	COMPLETES(wms_async_submit_order(NULL, a, &g_order, on_submit, &s), &s, a,
		  WMS_ERR_CONNECT, NULL);
	NOT_STARTED(wms_async_submit_order(&h, NULL, &g_order, on_submit, &s), &s, a);
	COMPLETES(wms_async_submit_order(&h, a, NULL, on_submit, &s), &s, a, WMS_ERR_INVALID_ARG,
		  "order");
	NOT_STARTED(wms_async_submit_order(&h, a, &g_order, NULL, &s), &s, a);
	COMPLETES(wms_async_submit_order(&h, a, &g_order, on_submit, NULL), &g_no_payload, a,
		  WMS_ERR_CONNECT, NULL);
	wms_async_free(a);
	END();
}

static void async_get_order_status(void **state)
{
	wms_async *a = mk_async(g_client);
	wms_async_call *h;
	seen s;
	(void)state;
	memset(&s, 0, sizeof(s));
	memset(&g_no_payload, 0, sizeof(g_no_payload));
	FN("wms_async_get_order_status");
	COMPLETES(wms_async_get_order_status(&h, a, "ORD-1", on_status, &s), &s, a,
		  WMS_ERR_CONNECT, NULL);
	COMPLETES(wms_async_get_order_status(NULL, a, "ORD-1", on_status, &s), &s, a,
		  WMS_ERR_CONNECT, NULL);
	NOT_STARTED(wms_async_get_order_status(&h, NULL, "ORD-1", on_status, &s), &s, a);
	COMPLETES(wms_async_get_order_status(&h, a, NULL, on_status, &s), &s, a,
		  WMS_ERR_INVALID_ARG, "order_id");
	NOT_STARTED(wms_async_get_order_status(&h, a, "ORD-1", NULL, &s), &s, a);
	COMPLETES(wms_async_get_order_status(&h, a, "ORD-1", on_status, NULL), &g_no_payload, a,
		  WMS_ERR_CONNECT, NULL);
	wms_async_free(a);
	END();
}

static void async_cancel_order(void **state)
{
	wms_async *a = mk_async(g_client);
	wms_async_call *h;
	seen s;
	(void)state;
	memset(&s, 0, sizeof(s));
	memset(&g_no_payload, 0, sizeof(g_no_payload));
	FN("wms_async_cancel_order");
	COMPLETES(wms_async_cancel_order(&h, a, "ORD-1", "why", on_cancel, &s), &s, a,
		  WMS_ERR_CONNECT, NULL);
	COMPLETES(wms_async_cancel_order(NULL, a, "ORD-1", "why", on_cancel, &s), &s, a,
		  WMS_ERR_CONNECT, NULL);
	NOT_STARTED(wms_async_cancel_order(&h, NULL, "ORD-1", "why", on_cancel, &s), &s, a);
	COMPLETES(wms_async_cancel_order(&h, a, NULL, "why", on_cancel, &s), &s, a,
		  WMS_ERR_INVALID_ARG, "order_id");
	/* reason: as the blocking wms_cancel_order, "`reason` NULL or "": none
	 * is sent" */
	COMPLETES(wms_async_cancel_order(&h, a, "ORD-1", NULL, on_cancel, &s), &s, a,
		  WMS_ERR_CONNECT, NULL);
	NOT_STARTED(wms_async_cancel_order(&h, a, "ORD-1", "why", NULL, &s), &s, a);
	COMPLETES(wms_async_cancel_order(&h, a, "ORD-1", "why", on_cancel, NULL), &g_no_payload,
		  a, WMS_ERR_CONNECT, NULL);
	wms_async_free(a);
	END();
}

static void async_get_stock_level(void **state)
{
	wms_async *a = mk_async(g_client);
	wms_async_call *h;
	seen s;
	(void)state;
	memset(&s, 0, sizeof(s));
	memset(&g_no_payload, 0, sizeof(g_no_payload));
	FN("wms_async_get_stock_level");
	COMPLETES(wms_async_get_stock_level(&h, a, g_skus, 1, on_stock, &s), &s, a,
		  WMS_ERR_CONNECT, NULL);
	COMPLETES(wms_async_get_stock_level(NULL, a, g_skus, 1, on_stock, &s), &s, a,
		  WMS_ERR_CONNECT, NULL);
	NOT_STARTED(wms_async_get_stock_level(&h, NULL, g_skus, 1, on_stock, &s), &s, a);
	COMPLETES(wms_async_get_stock_level(&h, a, NULL, 1, on_stock, &s), &s, a,
		  WMS_ERR_INVALID_ARG, "skus");
	NOT_STARTED(wms_async_get_stock_level(&h, a, g_skus, 1, NULL, &s), &s, a);
	COMPLETES(wms_async_get_stock_level(&h, a, g_skus, 1, on_stock, NULL), &g_no_payload, a,
		  WMS_ERR_CONNECT, NULL);
	wms_async_free(a);
	END();
}

static void async_call_start(void **state)
{
	wms_async *a = mk_async(g_client);
	wms_async_call *h;
	seen s;
	(void)state;
	memset(&s, 0, sizeof(s));
	memset(&g_no_payload, 0, sizeof(g_no_payload));
	/* async.h: "wms_call (wms/call.h), asynchronously" */
	FN("wms_async_call_start");
	COMPLETES(wms_async_call_start(&h, a, &g_call, body_node(), on_call, &s), &s, a,
		  WMS_ERR_CONNECT, NULL);
	COMPLETES(wms_async_call_start(NULL, a, &g_call, body_node(), on_call, &s), &s, a,
		  WMS_ERR_CONNECT, NULL);
	NOT_STARTED(wms_async_call_start(&h, NULL, &g_call, body_node(), on_call, &s), &s, a);
	COMPLETES(wms_async_call_start(&h, a, NULL, body_node(), on_call, &s), &s, a,
		  WMS_ERR_INVALID_ARG, "call");
	COMPLETES(wms_async_call_start(&h, a, &g_call, NULL, on_call, &s), &s, a,
		  WMS_ERR_INVALID_ARG, "body");
	NOT_STARTED(wms_async_call_start(&h, a, &g_call, body_node(), NULL, &s), &s, a);
	COMPLETES(wms_async_call_start(&h, a, &g_call, body_node(), on_call, NULL), &g_no_payload,
		  a, WMS_ERR_CONNECT, NULL);
	wms_async_free(a);
	END();
}

/* A loopback listener that never accepts: a call to it connects (the
 * kernel's backlog) and then waits, in flight, until cancelled. */
static int listen_silent(uint16_t *port)
{
	int fd = local_listen(port, 8);
	assert_true(fd >= 0);
	return fd;
}

static void async_cancel_and_loop(void **state)
{
	char url[64];
	uint16_t port;
	int fd = listen_silent(&port);
	wms_client *c;
	wms_async *a;
	wms_async_call *h = NULL;
	seen s;
	(void)state;
	memset(&s, 0, sizeof(s));
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/", (unsigned)port);
	c = sweep_client(url);
	a = mk_async(c);
	assert_int_equal(wms_async_get_order_status(&h, a, "ORD-1", on_status, &s), WMS_OK);
	assert_non_null(h);
	(void)wms_async_poll(a, 0);
	CHECK(wms_async_in_flight(a) == 1, "the held call is not in flight");

	/* async.h: wms_async_cancel "WMS_ERR_INVALID_ARG if `call` is NULL";
	 * `async` NULL: status rule */
	FN("wms_async_cancel");
	NOT_STARTED(wms_async_cancel(a, NULL), &s, NULL);
	CHECK(wms_async_in_flight(a) == 1, "cancel(a, NULL) ended the call");
	BAD_ARG(wms_async_cancel(NULL, h), NULL, NULL);
	CHECK(s.calls == 0 && wms_async_in_flight(a) == 1, "cancel(NULL, h) ended the call");
	CHECK(wms_async_cancel(a, h) == WMS_OK && s.calls == 1 && s.st == WMS_ERR_CANCELLED,
	      "the real cancel: %d calls, %s", s.calls, wms_status_name(s.st));

	/* wms_async_cancel_all "Cancel every call in flight on the context;
	 * how many were." - header silent on NULL: none, 0 */
	FN("wms_async_cancel_all");
	CASE();
	CHECK(wms_async_cancel_all(NULL) == 0, "wms_async_cancel_all(NULL) != 0");
	/* wms_async_in_flight "Calls in flight" - header silent on NULL: 0 */
	FN("wms_async_in_flight");
	CASE();
	CHECK(wms_async_in_flight(NULL) == 0, "wms_async_in_flight(NULL) != 0");
	/* socket_action, timeout, poll, run: no NULL text: status rule */
	FN("wms_async_socket_action");
	BAD_ARG(wms_async_socket_action(NULL, -1, WMS_EV_IN), NULL, NULL);
	FN("wms_async_timeout");
	BAD_ARG(wms_async_timeout(NULL), NULL, NULL);
	FN("wms_async_poll");
	BAD_ARG(wms_async_poll(NULL, 0), NULL, NULL);
	FN("wms_async_run");
	BAD_ARG(wms_async_run(NULL, 0), NULL, NULL);
	wms_async_free(a);
	wms_client_free(c);
	close(fd);
	END();
}

/* The same NULLs with the breaker forced open and a fallback set: a NULL
 * the header does not allow is still a bad argument (status rule), and
 * must not be answered CIRCUIT_OPEN, nor OK by a fallback handed the NULL
 * (client.h: wms_fallback_call's order_id "GetOrderStatus, CancelOrder,
 * SubmitOrder"). */
static int g_fallback_runs;
static const char *g_fallback_order_id;

static wms_status fb_status(wms_status_reply *out, const wms_fallback_call *call, void *payload)
{
	(void)out;
	(void)payload;
	g_fallback_runs++;
	g_fallback_order_id = call->order_id;
	return WMS_OK;
}

static wms_status fb_cancel(wms_cancel_reply *out, const wms_fallback_call *call, void *payload)
{
	(void)out;
	(void)payload;
	g_fallback_runs++;
	g_fallback_order_id = call->order_id;
	return WMS_OK;
}

static void typed_calls_while_open(void **state)
{
	wms_client_options o = WMS_CLIENT_OPTIONS_INIT;
	wms_fallbacks f = WMS_FALLBACKS_INIT;
	wms_client *c = NULL;
	wms_status_reply sr;
	wms_cancel_reply cr;
	wms_stock_reply *kr = NULL;
	wms_submit_reply ur;
	wms_error e;
	(void)state;
	f.get_order_status = fb_status;
	f.cancel_order = fb_cancel;
	o.endpoint = ENDPOINT;
	o.fallbacks = &f;
	assert_int_equal(wms_client_new(&c, &o, &e), WMS_OK);
	wms_breaker_force_open(wms_client_breaker(c));
	/* (functions counted in their own tests above) */
	g_fallback_runs = 0;
	stale(&e);
	WORKS(wms_get_order_status(&sr, c, "ORD-1", &e), WMS_OK, &e); /* the fallback's */
	CHECK(g_fallback_runs == 1 && sr.from_fallback, "baseline: no fallback");
	g_fallback_runs = 0;
	stale(&e);
	BAD_ARG(wms_get_order_status(&sr, c, NULL, &e), &e, "order_id");
	CHECK(g_fallback_runs == 0, "order_id NULL: the fallback ran (its order_id %s)",
	      g_fallback_order_id ? g_fallback_order_id : "NULL");
	g_fallback_runs = 0;
	stale(&e);
	BAD_ARG(wms_cancel_order(&cr, c, NULL, "why", &e), &e, "order_id");
	CHECK(g_fallback_runs == 0, "order_id NULL: the fallback ran (its order_id %s)",
	      g_fallback_order_id ? g_fallback_order_id : "NULL");
	stale(&e);
	BAD_ARG(wms_get_stock_level(&kr, c, NULL, 1, &e), &e, "skus");
	wms_stock_reply_free(kr);
	stale(&e);
	BAD_ARG(wms_submit_order(&ur, c, NULL, &e), &e, "order");
	{ /* and asynchronously: "as their blocking namesakes" (async.h) */
		wms_async *a = mk_async(c);
		seen x;
		memset(&x, 0, sizeof(x));
		g_fallback_runs = 0;
		COMPLETES(wms_async_get_order_status(NULL, a, NULL, on_status, &x), &x, a,
			  WMS_ERR_INVALID_ARG, "order_id");
		CHECK(g_fallback_runs == 0, "async, order_id NULL: the fallback ran");
		COMPLETES(wms_async_cancel_order(NULL, a, NULL, "why", on_cancel, &x), &x, a,
			  WMS_ERR_INVALID_ARG, "order_id");
		CHECK(g_fallback_runs == 0, "async cancel, order_id NULL: the fallback ran");
		COMPLETES(wms_async_get_stock_level(NULL, a, NULL, 1, on_stock, &x), &x, a,
			  WMS_ERR_INVALID_ARG, "skus");
		COMPLETES(wms_async_submit_order(NULL, a, NULL, on_submit, &x), &x, a,
			  WMS_ERR_INVALID_ARG, "order");
		wms_async_free(a);
	}
	wms_client_free(c);
	END();
}

/* ===== config.h ============================================================ */

static const char g_yaml[] = "circuit_breaker:\n"
			     "  failure_threshold: 3\n"
			     "client:\n"
			     "  timeout_ms: 2500\n"
			     "  health_listen: 127.0.0.1:9464\n";

static void config_load_yaml(void **state)
{
	char dir[] = "/tmp/wms-nullargs-XXXXXX", path[64];
	wms_config *cfg = (wms_config *)&cfg;
	wms_error e;
	FILE *f;
	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/sla.yaml", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(g_yaml, f);
	fclose(f);
	/* config.h: wms_config_load_yaml "WMS_ERR_INVALID_ARG for a NULL `out`
	 * or `path`"; err as everywhere, optional */
	FN("wms_config_load_yaml");
	stale(&e);
	BAD_ARG(wms_config_load_yaml(NULL, path, &e), &e, "out");
	stale(&e);
	BAD_ARG(wms_config_load_yaml(&cfg, NULL, &e), &e, "path");
	CHECK(cfg == NULL, "path NULL: *out not NULL");
	WORKS(wms_config_load_yaml(&cfg, path, NULL), WMS_OK, NULL);
	CHECK(cfg != NULL, "err NULL: no config");
	wms_config_free(cfg);
	unlink(path);
	rmdir(dir);
	END();
}

static void config_parse_yaml(void **state)
{
	static const char bad[] = "circuit_breaker:\n  failure_threshold: lots\n";
	wms_config *cfg = (wms_config *)&cfg;
	size_t len = strlen(g_yaml);
	wms_error e;
	(void)state;
	/* config.h: wms_config_parse_yaml "`name` is used in messages in place
	 * of a file name (NULL: "<yaml>")"; `out`, `yaml`: status rule */
	FN("wms_config_parse_yaml");
	stale(&e);
	BAD_ARG(wms_config_parse_yaml(NULL, g_yaml, len, "sla", &e), &e, "out");
	stale(&e);
	BAD_ARG(wms_config_parse_yaml(&cfg, NULL, len, "sla", &e), &e, "yaml");
	CHECK(cfg == NULL, "yaml NULL: *out not NULL");
	stale(&e);
	WORKS(wms_config_parse_yaml(&cfg, g_yaml, len, NULL, &e), WMS_OK, &e);
	wms_config_free(cfg);
	cfg = NULL;
	CASE();
	stale(&e);
	CHECK(wms_config_parse_yaml(&cfg, bad, strlen(bad), NULL, &e) == WMS_ERR_CONFIG &&
		      strncmp(e.message, "<yaml>:", 7) == 0,
	      "name NULL: message \"%s\" does not start with <yaml>:", e.message);
	cfg = NULL;
	WORKS(wms_config_parse_yaml(&cfg, g_yaml, len, "sla", NULL), WMS_OK, NULL);
	wms_config_free(cfg);
	END();
}

static void config_readers(void **state)
{
	wms_client_options co = WMS_CLIENT_OPTIONS_INIT;
	wms_breaker_options bo = WMS_BREAKER_OPTIONS_INIT;
	wms_shared_options so = WMS_SHARED_OPTIONS_INIT;
	wms_config *cfg = NULL;
	wms_error e;
	(void)state;
	assert_int_equal(wms_config_parse_yaml(&cfg, g_yaml, strlen(g_yaml), "sla", &e), WMS_OK);
	/* config.h: apply / breaker_options / shared_options: "`opts` must be
	 * initialised ...: WMS_ERR_INVALID_ARG, with nothing written,
	 * otherwise"; cfg: status rule */
	FN("wms_config_apply");
	WORKS(wms_config_apply(cfg, &co), WMS_OK, NULL);
	BAD_ARG(wms_config_apply(NULL, &co), NULL, NULL);
	BAD_ARG(wms_config_apply(cfg, NULL), NULL, NULL);
	FN("wms_config_breaker_options");
	WORKS(wms_config_breaker_options(cfg, &bo), WMS_OK, NULL);
	BAD_ARG(wms_config_breaker_options(NULL, &bo), NULL, NULL);
	BAD_ARG(wms_config_breaker_options(cfg, NULL), NULL, NULL);
	FN("wms_config_shared_options");
	WORKS(wms_config_shared_options(cfg, &so), WMS_OK, NULL);
	BAD_ARG(wms_config_shared_options(NULL, &so), NULL, NULL);
	BAD_ARG(wms_config_shared_options(cfg, NULL), NULL, NULL);
	/* wms_config_health_listen "NULL when the file names none" - header
	 * silent on a NULL cfg: no file names none, NULL */
	FN("wms_config_health_listen");
	CHECK(wms_config_health_listen(cfg) && strcmp(wms_config_health_listen(cfg),
						      "127.0.0.1:9464") == 0,
	      "baseline health_listen");
	CASE();
	CHECK(wms_config_health_listen(NULL) == NULL, "wms_config_health_listen(NULL) != NULL");
	/* wms_config_free "NULL-safe." */
	FN("wms_config_free");
	CASE();
	wms_config_free(NULL);
	wms_config_free(cfg);
	END();
}

/* ===== curl.h and sys/transport.h ========================================== */

static void curl_transport(void **state)
{
	wms_curl_transport_options o = WMS_CURL_TRANSPORT_OPTIONS_INIT;
	wms_transport *t = NULL;
	wms_error e;
	(void)state;
	/* curl.h: wms_curl_transport_options_init - no NULL text: status rule */
	FN("wms_curl_transport_options_init");
	BAD_ARG(wms_curl_transport_options_init(NULL, WMS_CURL_TRANSPORT_OPTIONS_VERSION), NULL,
		NULL);
	/* curl.h: wms_curl_transport_create "`opts` NULL: the defaults", "`err`
	 * (optional)"; out: status rule */
	FN("wms_curl_transport_create");
	stale(&e);
	BAD_ARG(wms_curl_transport_create(NULL, &o, &e), &e, "out");
	stale(&e);
	WORKS(wms_curl_transport_create(&t, NULL, &e), WMS_OK, &e);
	CHECK(t && t->send && t->free, "opts NULL: no transport");
	if (t)
		t->free(t);
	t = NULL;
	WORKS(wms_curl_transport_create(&t, &o, NULL), WMS_OK, NULL);
	if (t)
		t->free(t);
	/* curl.h: wms_curl_transport_new - the same with the defaults */
	FN("wms_curl_transport_new");
	BAD_ARG(wms_curl_transport_new(NULL), NULL, NULL);
	END();
}

typedef wms_status (*fail_fn)(wms_error *, wms_status, wms_delivery, const char *, ...);

static void transport_helpers(void **state)
{
	wms_http_response resp;
	wms_error e;
	fail_fn tfail = wms_transport_fail; /* a NULL format past the format attribute */
	(void)state;
	memset(&resp, 0, sizeof(resp));
	/* sys/transport.h: wms_http_response_append / set_content_type - no
	 * NULL text: status rule (data NULL with a length: nothing to append) */
	FN("wms_http_response_append");
	WORKS(wms_http_response_append(&resp, "abc", 3), WMS_OK, NULL);
	BAD_ARG(wms_http_response_append(NULL, "abc", 3), NULL, NULL);
	BAD_ARG(wms_http_response_append(&resp, NULL, 3), NULL, NULL);
	CHECK(resp.body_len == 3, "a refused append changed the body (%zu)", resp.body_len);
	FN("wms_http_response_set_content_type");
	WORKS(wms_http_response_set_content_type(&resp, "text/xml", 8), WMS_OK, NULL);
	BAD_ARG(wms_http_response_set_content_type(NULL, "text/xml", 8), NULL, NULL);
	BAD_ARG(wms_http_response_set_content_type(&resp, NULL, 8), NULL, NULL);
	CHECK(resp.content_type && strcmp(resp.content_type, "text/xml") == 0,
	      "a refused set changed the content type");
	/* wms_http_response_clear "Drop everything" - header silent on NULL:
	 * no crash (a clear is a free) */
	FN("wms_http_response_clear");
	CASE();
	wms_http_response_clear(NULL);
	wms_http_response_clear(&resp);
	/* wms_transport_fail "Set `err` ...; Returns `status` for convenience" -
	 * header silent on NULL: returns `status` either way, and with a NULL
	 * format err still gets the status and delivery */
	FN("wms_transport_fail");
	CASE();
	CHECK(tfail(NULL, WMS_ERR_TRANSPORT, WMS_DELIVERY_UNKNOWN, "x %d", 1) == WMS_ERR_TRANSPORT,
	      "err NULL: status not returned");
	CASE();
	stale(&e);
	CHECK(tfail(&e, WMS_ERR_TRANSPORT, WMS_DELIVERY_UNKNOWN, NULL) == WMS_ERR_TRANSPORT &&
		      e.status == WMS_ERR_TRANSPORT && e.delivery == WMS_DELIVERY_UNKNOWN,
	      "fmt NULL: status %s delivery %s", wms_status_name(e.status),
	      wms_delivery_name(e.delivery));
	CHECK(e.message[0] && strcmp(e.message, "stale") != 0, "fmt NULL: message \"%s\"",
	      e.message);
	END();
}

/* ===== fixture.h =========================================================== */

static void replay(void **state)
{
	char file[512];
	const char *files[1];
	wms_replay_options o = WMS_REPLAY_OPTIONS_INIT;
	wms_transport *t = NULL;
	wms_error e;
	(void)state;
	files[0] = source_path(file, sizeof(file), "tests/data/fixtures/good/get-order-status-ok.xml");
	o.files = files;
	o.file_count = 1;
	/* fixture.h: wms_replay_options_init "INVALID_ARG for an unknown
	 * version" - NULL: status rule */
	FN("wms_replay_options_init");
	BAD_ARG(wms_replay_options_init(NULL, WMS_REPLAY_OPTIONS_VERSION), NULL, NULL);
	/* wms_replay_transport_new - no NULL text: status rule; err optional */
	FN("wms_replay_transport_new");
	stale(&e);
	BAD_ARG(wms_replay_transport_new(NULL, &o, &e), &e, "out");
	stale(&e);
	BAD_ARG(wms_replay_transport_new(&t, NULL, &e), &e, "options");
	WORKS(wms_replay_transport_new(&t, &o, NULL), WMS_OK, NULL);
	/* wms_replay_transport_hits / _unused "0 for a transport that is not a
	 * replay transport" */
	FN("wms_replay_transport_hits");
	CASE();
	CHECK(wms_replay_transport_hits(NULL) == 0, "hits(NULL) != 0");
	FN("wms_replay_transport_unused");
	CASE();
	CHECK(wms_replay_transport_unused(NULL) == 0, "unused(NULL) != 0");
	CHECK(t && wms_replay_transport_unused(t) == 1, "baseline: unused != 1");
	if (t)
		t->free(t);
	END();
}

static void record(void **state)
{
	char dir[] = "/tmp/wms-nullargs-XXXXXX";
	wms_record_options o = WMS_RECORD_OPTIONS_INIT;
	wms_transport *t = NULL, *inner;
	wms_error e;
	(void)state;
	assert_non_null(mkdtemp(dir));
	o.directory = dir;
	/* fixture.h: wms_record_options_init "INVALID_ARG for an unknown
	 * version" - NULL: status rule */
	FN("wms_record_options_init");
	BAD_ARG(wms_record_options_init(NULL, WMS_RECORD_OPTIONS_VERSION), NULL, NULL);
	/* wms_record_transport_new "Wrap `inner` (owned from now on, also when
	 * this fails)": a refusal frees it (valgrind / LeakSanitizer see a
	 * leak otherwise); `directory` "Required" */
	FN("wms_record_transport_new");
	assert_int_equal(wms_curl_transport_new(&inner), WMS_OK);
	stale(&e);
	BAD_ARG(wms_record_transport_new(NULL, inner, &o, &e), &e, "out");
	stale(&e);
	BAD_ARG(wms_record_transport_new(&t, NULL, &o, &e), &e, "inner");
	assert_int_equal(wms_curl_transport_new(&inner), WMS_OK);
	stale(&e);
	BAD_ARG(wms_record_transport_new(&t, inner, NULL, &e), &e, "options");
	assert_int_equal(wms_curl_transport_new(&inner), WMS_OK);
	o.directory = NULL;
	stale(&e);
	BAD_ARG(wms_record_transport_new(&t, inner, &o, &e), &e, "directory");
	o.directory = dir;
	assert_int_equal(wms_curl_transport_new(&inner), WMS_OK);
	WORKS(wms_record_transport_new(&t, inner, &o, NULL), WMS_OK, NULL);
	/* wms_record_transport_written "0 for a transport that is not a
	 * recording transport" */
	FN("wms_record_transport_written");
	CASE();
	CHECK(wms_record_transport_written(NULL) == 0, "written(NULL) != 0");
	if (t)
		t->free(t);
	rmdir(dir);
	END();
}

/* ===== health.h ============================================================ */

static void health_documents(void **state)
{
	wms_breaker *b = wms_client_breaker(g_client);
	wms_breaker *holes[1] = { NULL };
	char *out = (char *)&out;
	(void)state;
	/* health.h: wms_health_json "`*out`: a NUL-terminated JSON document" -
	 * no NULL text: status rule (`breakers` NULL with a count; a NULL
	 * breaker in the array is no breaker to render) */
	FN("wms_health_json");
	BAD_ARG(wms_health_json(NULL, &b, 1), NULL, NULL);
	BAD_ARG(wms_health_json(&out, NULL, 1), NULL, NULL);
	/* health.h: "a NULL among its first `count` entries: WMS_ERR_INVALID_ARG,
	 * with *out NULL" */
	out = (char *)&out;
	BAD_ARG(wms_health_json(&out, holes, 1), NULL, NULL);
	CHECK(out == NULL, "wms_health_json({NULL}, 1): *out not NULL");
	if (out != (char *)&out)
		wms_free(out);
	/* wms_health_prometheus "prefix NULL = "fulfillment"" */
	FN("wms_health_prometheus");
	out = NULL;
	BAD_ARG(wms_health_prometheus(NULL, &b, 1, "svc"), NULL, NULL);
	BAD_ARG(wms_health_prometheus(&out, NULL, 1, "svc"), NULL, NULL);
	out = (char *)&out;
	BAD_ARG(wms_health_prometheus(&out, holes, 1, "svc"), NULL, NULL);
	CHECK(out == NULL, "wms_health_prometheus({NULL}, 1): *out not NULL");
	if (out != (char *)&out)
		wms_free(out);
	out = NULL;
	WORKS(wms_health_prometheus(&out, &b, 1, NULL), WMS_OK, NULL);
	CHECK(out && strstr(out, "fulfillment_circuit_breaker_state"), "prefix NULL: no "
	      "fulfillment_circuit_breaker_state");
	wms_free(out);
	/* wms_client_health_json / _prometheus "The same for every breaker of a
	 * client" */
	FN("wms_client_health_json");
	out = NULL;
	BAD_ARG(wms_client_health_json(NULL, g_client), NULL, NULL);
	BAD_ARG(wms_client_health_json(&out, NULL), NULL, NULL);
	FN("wms_client_health_prometheus");
	BAD_ARG(wms_client_health_prometheus(NULL, g_client, "svc"), NULL, NULL);
	BAD_ARG(wms_client_health_prometheus(&out, NULL, "svc"), NULL, NULL);
	WORKS(wms_client_health_prometheus(&out, g_client, NULL), WMS_OK, NULL);
	CHECK(out && strstr(out, "fulfillment_circuit_breaker_state"), "prefix NULL: no "
	      "fulfillment_circuit_breaker_state");
	wms_free(out);
	/* wms_free "NULL-safe." */
	FN("wms_free");
	CASE();
	wms_free(NULL);
	END();
}

/* ===== health_server.h ===================================================== */

/* GET `path` from 127.0.0.1:port: the whole reply, NUL-terminated. */
static size_t http_get(uint16_t port, const char *path, char *buf, size_t size)
{
	struct timeval tv = { 5, 0 };
	char req[128];
	size_t got = 0;
	ssize_t n;
	int fd = local_connect(port);
	buf[0] = '\0';
	if (fd < 0)
		return 0;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	snprintf(req, sizeof(req), "GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n", path);
	if (send(fd, req, strlen(req), 0) < 0) {
		close(fd);
		return 0;
	}
	while (got + 1 < size && (n = recv(fd, buf + got, size - 1 - got, 0)) > 0)
		got += (size_t)n;
	buf[got] = '\0';
	close(fd);
	return got;
}

static void health_server(void **state)
{
	wms_client *clients[1] = { g_client }, *holes[1] = { NULL };
	wms_health_server *srv = NULL;
	static char page[65536];
	wms_error e;
	wms_status st;
	(void)state;
	st = wms_health_server_start(&srv, clients, 1, "127.0.0.1:0", "svc", &e);
	if (st == WMS_ERR_INVALID_ARG && strstr(e.message, "built without")) {
		FN("wms_health_server_start"); /* counted, not swept */
		skip();
	}
	assert_int_equal(st, WMS_OK);
	wms_health_server_stop(srv);
	srv = NULL;
	/* health_server.h: wms_health_server_start "WMS_ERR_INVALID_ARG for a
	 * bad argument", "`listen_addr` ... NULL =
	 * WMS_HEALTH_SERVER_DEFAULT_LISTEN" (a fixed port, 9464: not tried
	 * here, tests bind kernel-picked ports only), "`metric_prefix` ... NULL
	 * = "fulfillment"", `err` filled: optional as everywhere */
	FN("wms_health_server_start");
	stale(&e);
	BAD_ARG(wms_health_server_start(NULL, clients, 1, "127.0.0.1:0", "svc", &e), &e, "out");
	stale(&e);
	BAD_ARG(wms_health_server_start(&srv, NULL, 1, "127.0.0.1:0", "svc", &e), &e, "client");
	CHECK(srv == NULL, "clients NULL: *out not NULL");
	stale(&e);
	BAD_ARG(wms_health_server_start(&srv, holes, 1, "127.0.0.1:0", "svc", &e), &e,
		"clients[0]");
	stale(&e);
	WORKS(wms_health_server_start(&srv, clients, 1, "127.0.0.1:0", NULL, &e), WMS_OK, &e);
	if (srv) {
		CHECK(http_get(wms_health_server_port(srv), "/metrics", page, sizeof(page)) > 0 &&
			      strstr(page, "fulfillment_circuit_breaker_state"),
		      "metric_prefix NULL: /metrics has no fulfillment_circuit_breaker_state");
		wms_health_server_stop(srv);
		srv = NULL;
	}
	WORKS(wms_health_server_start(&srv, clients, 1, "127.0.0.1:0", "svc", NULL), WMS_OK, NULL);
	CHECK(srv && wms_health_server_port(srv) > 0, "err NULL: no server / port");
	wms_health_server_stop(srv);
	/* wms_health_server_port "The port the server listens on" - header
	 * silent on NULL: no server, no port (0) */
	FN("wms_health_server_port");
	CASE();
	CHECK(wms_health_server_port(NULL) == 0, "wms_health_server_port(NULL) != 0");
	/* wms_health_server_stop "NULL-safe." */
	FN("wms_health_server_stop");
	CASE();
	wms_health_server_stop(NULL);
	END();
}

/* ===== shared.h ============================================================ */

static void shared(void **state)
{
	wms_shared_options o = WMS_SHARED_OPTIONS_INIT;
	wms_breaker_store *s = (wms_breaker_store *)&o; /* set: shows whether a failure touches it */
	wms_shared_stats st;
	wms_error e;
	(void)state;
	/* a unix socket that is not there: no Redis, no network; the store is
	 * made all the same ("It does not wait for Redis") */
	o.redis_url = "unix:///nonexistent-wms-nullargs/redis.sock";
	o.name = "nullargs";
	/* shared.h: wms_shared_options_init - no NULL text: status rule */
	FN("wms_shared_options_init");
	BAD_ARG(wms_shared_options_init(NULL, WMS_SHARED_OPTIONS_VERSION), NULL, NULL);
	/* wms_redis_store_new "WMS_ERR_INVALID_ARG (naming the field) for a bad
	 * option"; redis_url "Required" */
	FN("wms_redis_store_new");
	stale(&e);
	BAD_ARG(wms_redis_store_new(NULL, &o, &e), &e, "out");
	/* shared.h: "on any error *out is NULL" */
	s = (wms_breaker_store *)&s;
	stale(&e);
	BAD_ARG(wms_redis_store_new(&s, NULL, &e), &e, "options");
	CHECK(s == NULL, "wms_redis_store_new(&s, NULL, &e) left *out as it was");
	o.redis_url = NULL;
	stale(&e);
	BAD_ARG(wms_redis_store_new(&s, &o, &e), &e, "redis_url");
	o.redis_url = "unix:///nonexistent-wms-nullargs/redis.sock";
	s = NULL;
	WORKS(wms_redis_store_new(&s, &o, NULL), WMS_OK, NULL);
	/* wms_redis_store_stats "What the store has done" - header silent on
	 * NULL: no crash; a NULL store has done nothing */
	FN("wms_redis_store_stats");
	CASE();
	wms_redis_store_stats(NULL, s);
	CASE();
	memset(&st, 0xA5, sizeof(st));
	wms_redis_store_stats(&st, NULL);
	CHECK(st.commands == 0 && st.connects == 0 && st.dropped == 0,
	      "stats of NULL: not zero");
	wms_breaker_store_free(s);
	END();
}

/* ===== sys/alloc.h ========================================================= */

static void alloc_seam(void **state)
{
	wms_global_options o = WMS_GLOBAL_OPTIONS_INIT;
	wms_status st;
	(void)state;
	/* sys/alloc.h: wms_set_allocator "Install `a` (copied), or the C
	 * library's allocator when NULL." */
	FN("wms_set_allocator");
	WORKS(wms_set_allocator(NULL), WMS_OK, NULL);
	/* wms_global_options_init - no NULL text: status rule */
	FN("wms_global_options_init");
	BAD_ARG(wms_global_options_init(NULL, WMS_GLOBAL_OPTIONS_VERSION), NULL, NULL);
	/* wms_global_init "NULL `opts`: the defaults (no routing)", "`err` is
	 * optional"; one shot, first thing in the process: main made the
	 * NULL-opts call; this later one is refused as "ran before", with err
	 * NULL */
	FN("wms_global_init");
	CASE();
	CHECK(g_global_init_st == WMS_OK, "wms_global_init(NULL, &err) first in main: %s (%s)",
	      wms_status_name(g_global_init_st), g_global_init_err.message);
	CASE();
	st = wms_global_init(&o, NULL);
	CHECK(st == WMS_ERR_INVALID_ARG, "wms_global_init(&o, NULL) a second time: %s",
	      wms_status_name(st));
	END();
}

static int reset(void **state)
{
	(void)state;
	nfail = 0;
	return 0;
}

#define T(f) cmocka_unit_test_setup(f, reset)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(alloc_seam),
		T(errors_h),
		T(options_inits),
		T(client_new),
		T(client_free),
		T(client_breaker),
		T(error_outcome),
		T(client_breaker_for),
		T(client_breakers),
		T(client_bulkhead_get),
		T(client_read_cache_get),
		T(stock_reply_new_free),
		T(submit_order),
		T(get_order_status),
		T(cancel_order),
		T(get_stock_level),
		T(typed_calls_while_open),
		T(call_node),
		T(call_bytes),
		T(breaker_new_free),
		T(breaker_acquire),
		T(breaker_record_release),
		T(breaker_reads),
		T(breaker_store_seam),
		T(async_new_free),
		T(async_submit_order),
		T(async_get_order_status),
		T(async_cancel_order),
		T(async_get_stock_level),
		T(async_call_start),
		T(async_cancel_and_loop),
		T(config_load_yaml),
		T(config_parse_yaml),
		T(config_readers),
		T(curl_transport),
		T(transport_helpers),
		T(replay),
		T(record),
		T(health_documents),
		T(health_server),
		T(shared),
	};
	/* sys/alloc.h: wms_global_init goes "first, ... before any other use
	 * of libwms, of libxml2 or of libcurl": before anything else here */
	g_global_init_st = wms_global_init(NULL, &g_global_init_err);
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
