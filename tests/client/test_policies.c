/* Client policies around the breaker: retries inside it, the error filter,
 * per-operation breakers, fallbacks and the state metric. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "bounds.h"
#include "client_fx.h"
#include "internal.h"

static const char submit_ok[] =
	"<s:Envelope xmlns:s=\"http://schemas.xmlsoap.org/soap/envelope/\"><s:Body>"
	"<SubmitOrderResponse xmlns=\"urn:libwms:warehouse:1\"><clientOrderId>ORD-1</clientOrderId>"
	"<wmsReference>WMS-7</wmsReference><state>RECEIVED</state><duplicate>false</duplicate>"
	"</SubmitOrderResponse></s:Body></s:Envelope>";

static const char client_fault[] =
	"<s:Envelope xmlns:s=\"http://schemas.xmlsoap.org/soap/envelope/\"><s:Body><s:Fault>"
	"<faultcode>s:Client</faultcode><faultstring>unknown SKU</faultstring></s:Fault>"
	"</s:Body></s:Envelope>";

static const wms_order_line one_line[] = { { "SKU-1", 2 } };

static wms_order order(void)
{
	wms_order o = WMS_ORDER_INIT;
	o.order_id = "ORD-1";
	o.ship_to.name = "Ada";
	o.ship_to.line1 = "1 Way";
	o.ship_to.city = "London";
	o.ship_to.postal_code = "N1";
	o.ship_to.country = "GB";
	o.lines = one_line;
	o.line_count = 1;
	return o;
}

static wms_status submit(fx *x, wms_submit_reply *r, wms_error *err)
{
	wms_order o = order();
	return wms_submit_order(r, x->c, &o, err);
}

static step fail_step(wms_status st, wms_delivery d)
{
	step s = { .fail = st, .delivery = d };
	return s;
}

static step ok_step(const char *body)
{
	step s = { .fail = WMS_OK, .delivery = WMS_DELIVERY_ANSWERED, .status = 200,
		   .content_type = "text/xml", .body = body };
	return s;
}

static wms_client_options retry_opts(uint32_t attempts)
{
	wms_client_options o = WMS_CLIENT_OPTIONS_INIT;
	o.retry.max_attempts = attempts;
	o.retry.initial_backoff_ms = 1;
	o.retry.max_backoff_ms = 2;
	return o;
}

static void retries_until_success(void **state)
{
	wms_client_options o = retry_opts(3);
	wms_breaker_snapshot s;
	wms_submit_reply r;
	wms_error err;
	fx x;
	(void)state;
	x = setup_client_with(&o);
	x.t->seq[0] = fail_step(WMS_ERR_CONNECT, WMS_DELIVERY_NOT_SENT);
	x.t->seq[1] = fail_step(WMS_ERR_CONNECT, WMS_DELIVERY_NOT_SENT);
	x.t->seq[2] = ok_step(submit_ok);
	x.t->seq_len = 3;
	assert_int_equal(submit(&x, &r, &err), WMS_OK);
	assert_string_equal(r.wms_reference, "WMS-7");
	assert_int_equal(err.attempts, 3);
	assert_int_equal(x.t->sends, 3);
	wms_breaker_snapshot_get(&s, wms_client_breaker(x.c));
	assert_int_equal(s.permitted, 3); /* each attempt went through the breaker */
	assert_int_equal(s.failures, 2);
	assert_int_equal(s.successes, 1);
	wms_client_free(x.c);
}

static void no_retry_after_circuit_open(void **state)
{
	wms_client_options o = retry_opts(5);
	wms_error err;
	fx x;
	(void)state;
	o.breaker_options.failure_threshold = 2;
	x = setup_client_with(&o);
	x.t->next = fail_step(WMS_ERR_CONNECT, WMS_DELIVERY_NOT_SENT);
	assert_int_equal(submit(&x, NULL, &err), WMS_ERR_CONNECT);
	assert_int_equal(x.t->sends, 2);
	assert_int_equal(err.attempts, 2);
	assert_true(err.retry_after_ms > 0);
	assert_int_equal(wms_breaker_state_get(wms_client_breaker(x.c)), WMS_BREAKER_STATE_OPEN);
	wms_client_free(x.c);
}

static void business_faults_are_not_retried(void **state)
{
	wms_client_options o = retry_opts(5);
	wms_error err;
	fx x;
	(void)state;
	x = setup_client_with(&o);
	x.t->next = ok_step(client_fault);
	x.t->next.status = 500;
	assert_int_equal(submit(&x, NULL, &err), WMS_ERR_SOAP_FAULT);
	assert_int_equal(x.t->sends, 1);
	wms_client_free(x.c);
}

static void delivery_stays_unknown_once_unknown(void **state)
{
	wms_client_options o = retry_opts(2);
	wms_error err;
	fx x;
	(void)state;
	x = setup_client_with(&o);
	x.t->seq[0] = fail_step(WMS_ERR_TIMEOUT, WMS_DELIVERY_UNKNOWN);
	x.t->seq[1] = fail_step(WMS_ERR_CONNECT, WMS_DELIVERY_NOT_SENT);
	x.t->seq_len = 2;
	assert_int_equal(submit(&x, NULL, &err), WMS_ERR_CONNECT);
	assert_int_equal(err.delivery, WMS_DELIVERY_UNKNOWN);
	assert_int_equal(x.t->sends, 2);
	wms_client_free(x.c);
}

static void not_sent_only(void **state)
{
	wms_client_options o = retry_opts(3);
	wms_error err;
	fx x;
	(void)state;
	o.retry.not_sent_only = 1;
	x = setup_client_with(&o);
	x.t->next = fail_step(WMS_ERR_TIMEOUT, WMS_DELIVERY_UNKNOWN);
	assert_int_equal(submit(&x, NULL, &err), WMS_ERR_TIMEOUT);
	assert_int_equal(x.t->sends, 1);
	wms_client_free(x.c);
}

static void retries_fit_in_the_deadline(void **state)
{
	wms_client_options o = retry_opts(10);
	uint64_t t0, elapsed_ms;
	wms_error err;
	fx x;
	(void)state;
	o.timeout_ms = 200;
	o.breaker_options.failure_threshold = 100;
	x = setup_client_with(&o);
	x.t->next = fail_step(WMS_ERR_TIMEOUT, WMS_DELIVERY_UNKNOWN);
	x.t->next.sleep_ms = 60;
	t0 = wms__now_ns();
	assert_int_equal(submit(&x, NULL, &err), WMS_ERR_TIMEOUT);
	elapsed_ms = (wms__now_ns() - t0) / MS;
	/* 60 ms per attempt in a 200 ms budget: 3 or 4 attempts, never 10 */
	assert_true(x.t->sends >= 3 && x.t->sends <= 4);
	assert_true(x.t->last_timeout_ms < 200); /* later attempts get what is left */
	assert_true(elapsed_ms < 200 + 60 + (getenv("WMS_UNDER_VALGRIND") ? 500 : 50));
	wms_client_free(x.c);
}

/* Wall time may be slow under valgrind: a looser ratio there. */
static int well_under(uint64_t elapsed_ns, uint32_t backoff_ms)
{
	uint64_t ratio = getenv("WMS_UNDER_VALGRIND") ? 4 : 10;
	return elapsed_ns * ratio < (uint64_t)backoff_ms * MS;
}

/* A 503 or 429 reply's Retry-After (README, "Errors and what to do"):
 * err->retry_after_ms carries it; a retry waits at least that long, longer
 * than its own backoff; one that would not fit in timeout_ms is not made
 * (the call ends at once, with the hint); another status's is not read.
 * Each twice in a row on one client. */
static step unavailable_step(long status, uint32_t retry_after_ms)
{
	step s = { .fail = WMS_OK, .delivery = WMS_DELIVERY_ANSWERED, .status = status,
		   .content_type = "text/html", .body = "<html>busy</html>",
		   .retry_after_ms = retry_after_ms };
	return s;
}

static void retry_after_is_honoured(void **state)
{
	wms_client_options o = retry_opts(2);
	uint64_t t0, elapsed;
	wms_submit_reply r;
	wms_error err;
	fx x;
	(void)state;
	o.timeout_ms = 5000;
	o.breaker_options.failure_threshold = 100;
	x = setup_client_with(&o);
	for (int twice = 0; twice < 2; twice++) {
		/* 150 ms asked, a 1-2 ms backoff: the retry comes after >= 150 ms */
		x.t->sends = 0;
		x.t->seq[0] = unavailable_step(503, 150);
		x.t->seq[1] = ok_step(submit_ok);
		x.t->seq_len = 2;
		t0 = wms__now_ns();
		assert_int_equal(submit(&x, &r, &err), WMS_OK);
		elapsed = wms__now_ns() - t0;
		assert_int_equal(x.t->sends, 2);
		assert_true(elapsed >= 150 * MS);
		assert_int_equal(err.retry_after_ms, 0); /* the answer has none */

		/* 60 s asked in a 5 s budget: no retry, at once, the hint kept */
		x.t->sends = 0;
		x.t->seq[0] = unavailable_step(503, 60000);
		x.t->seq_len = 2;
		t0 = wms__now_ns();
		assert_int_equal(submit(&x, &r, &err), WMS_ERR_HTTP);
		assert_true(well_under(wms__now_ns() - t0, 1000));
		assert_int_equal(x.t->sends, 1);
		assert_int_equal(err.attempts, 1);
		assert_int_equal(err.http_status, 503);
		assert_int_equal(err.retry_after_ms, 60000);

		/* 429 (not a failure: not retried) carries it to the caller */
		x.t->sends = 0;
		x.t->seq[0] = unavailable_step(429, 2000);
		x.t->seq_len = 1;
		assert_int_equal(submit(&x, &r, &err), WMS_ERR_HTTP);
		assert_int_equal(x.t->sends, 1);
		assert_int_equal(err.retry_after_ms, 2000);
		assert_true(wms_error_is_retryable(&err));

		/* another status's is not read: a 500, a 502 */
		x.t->seq[0] = unavailable_step(500, 2000);
		assert_int_equal(submit(&x, &r, &err), WMS_ERR_HTTP);
		assert_int_equal(err.retry_after_ms, 0);
		x.t->seq[0] = unavailable_step(502, 2000);
		assert_int_equal(submit(&x, &r, &err), WMS_ERR_HTTP);
		assert_int_equal(err.retry_after_ms, 0);
	}
	wms_client_free(x.c);
}

/* A 503 that opens the breaker (threshold 1): the retry is not made, and
 * of the breaker's hint (its 1 s open duration) and the WMS's Retry-After
 * the later is the call's retry_after_ms, whichever is later. Twice each. */
static void retry_after_beside_an_open_breaker(void **state)
{
	wms_submit_reply r;
	wms_error err;
	(void)state;
	for (int later = 0; later < 2; later++) {
		wms_client_options o = retry_opts(3);
		fx x;
		uint32_t asked = later ? 60000 : 200;
		o.breaker_options.failure_threshold = 1;
		o.breaker_options.open_duration_ms = 1000;
		x = setup_client_with(&o);
		for (int twice = 0; twice < 2; twice++) {
			wms_breaker_reset(wms_client_breaker(x.c));
			x.t->sends = 0;
			x.t->next = unavailable_step(503, asked);
			assert_int_equal(submit(&x, &r, &err), WMS_ERR_HTTP);
			assert_int_equal(x.t->sends, 1);
			assert_int_equal(err.attempts, 1);
			assert_int_equal(err.retry_after_ms, later ? 60000 : 1000);
			assert_int_equal(wms_breaker_state_get(wms_client_breaker(x.c)),
					 WMS_BREAKER_STATE_OPEN);
		}
		wms_client_free(x.c);
	}
}

/* The first attempt's failure opens the breaker (threshold 1): the call
 * returns at once with that error and the breaker's retry-after, without
 * the 2 s pause, whether or not the pause would fit the deadline. */
static void no_backoff_once_the_breaker_opened(void **state)
{
	static const uint32_t timeouts[] = { 10000, 1500 }; /* the pause fits; may not */
	size_t i;
	int round;
	(void)state;
	for (i = 0; i < 2; i++)
		for (round = 0; round < 3; round++) {
			wms_client_options o = retry_opts(3);
			wms_breaker_snapshot s;
			uint64_t t0, elapsed;
			wms_error err;
			fx x;
			o.timeout_ms = timeouts[i];
			o.retry.initial_backoff_ms = 2000;
			o.retry.max_backoff_ms = 2000;
			o.breaker_options.failure_threshold = 1;
			o.breaker_options.open_duration_ms = 30000;
			x = setup_client_with(&o);
			x.t->next = fail_step(WMS_ERR_CONNECT, WMS_DELIVERY_NOT_SENT);
			t0 = wms__now_ns();
			assert_int_equal(submit(&x, NULL, &err), WMS_ERR_CONNECT);
			elapsed = wms__now_ns() - t0;
			assert_true(well_under(elapsed, o.retry.initial_backoff_ms));
			assert_int_equal(x.t->sends, 1);
			assert_int_equal(err.attempts, 1);
			assert_int_equal(err.delivery, WMS_DELIVERY_NOT_SENT);
			/* the fake clock stands still: the whole open duration is left */
			assert_true(err.retry_after_ms > 0 && err.retry_after_ms <= 30000);
			wms_breaker_snapshot_get(&s, wms_client_breaker(x.c));
			assert_int_equal(s.state, WMS_BREAKER_STATE_OPEN);
			assert_int_equal(s.permitted, 1);
			assert_int_equal(s.failures, 1);
			/* no retry was asked for: nothing rejected */
			assert_int_equal(s.rejected, 0);
			wms_client_free(x.c);
		}
}

/* Forces the breaker open while the attempt is judged, as an operator
 * might from another thread. */
static wms_outcome force_open_filter(const wms_error *err, wms_outcome proposed, void *ctx)
{
	(void)err;
	wms_breaker_force_open(ctx);
	return proposed;
}

static void no_backoff_once_forced_open(void **state)
{
	wms_client_options o = retry_opts(3);
	wms_breaker_snapshot s;
	wms_breaker *b;
	uint64_t t0, elapsed;
	wms_error err;
	fx x;
	(void)state;
	assert_int_equal(wms_breaker_new(&b, NULL), WMS_OK);
	o.breaker = b;
	o.callbacks.error_filter = force_open_filter;
	o.callbacks.payload = b;
	o.retry.initial_backoff_ms = 2000;
	o.retry.max_backoff_ms = 2000;
	x = setup_client_with(&o);
	x.t->next = fail_step(WMS_ERR_TIMEOUT, WMS_DELIVERY_UNKNOWN);
	t0 = wms__now_ns();
	assert_int_equal(submit(&x, NULL, &err), WMS_ERR_TIMEOUT);
	elapsed = wms__now_ns() - t0;
	assert_true(well_under(elapsed, o.retry.initial_backoff_ms));
	assert_int_equal(x.t->sends, 1);
	assert_int_equal(err.attempts, 1);
	assert_int_equal(err.delivery, WMS_DELIVERY_UNKNOWN);
	/* a forced-open breaker's hint: its open_duration_ms (30 s default) */
	assert_int_equal(err.retry_after_ms, 30000);
	wms_breaker_snapshot_get(&s, b);
	assert_int_equal(s.state, WMS_BREAKER_STATE_FORCED_OPEN);
	assert_int_equal(s.permitted, 1);
	assert_int_equal(s.rejected, 1); /* the retry's ask, refused as any would be */
	wms_client_free(x.c);
	wms_breaker_free(b);
}

static wms_outcome strict_filter(const wms_error *err, wms_outcome proposed, void *ctx)
{
	int *calls = ctx;
	(*calls)++;
	if (err->status == WMS_ERR_SOAP_FAULT)
		return WMS_OUTCOME_FAILURE; /* this team counts every fault */
	if (err->status == WMS_ERR_TIMEOUT)
		return WMS_OUTCOME_IGNORED;
	return proposed;
}

static void error_filter_reclassifies(void **state)
{
	wms_client_options o = WMS_CLIENT_OPTIONS_INIT;
	int calls = 0, i;
	fx x;
	(void)state;
	o.callbacks.error_filter = strict_filter;
	o.callbacks.payload = &calls;
	o.breaker_options.failure_threshold = 3;
	x = setup_client_with(&o);
	x.t->next = fail_step(WMS_ERR_TIMEOUT, WMS_DELIVERY_UNKNOWN);
	for (i = 0; i < 10; i++)
		submit(&x, NULL, NULL);
	assert_int_equal(wms_breaker_state_get(wms_client_breaker(x.c)), WMS_BREAKER_STATE_CLOSED);
	x.t->next = ok_step(client_fault);
	x.t->next.status = 500;
	for (i = 0; i < 3; i++)
		submit(&x, NULL, NULL);
	assert_int_equal(wms_breaker_state_get(wms_client_breaker(x.c)), WMS_BREAKER_STATE_OPEN);
	assert_int_equal(calls, 13);
	/* an invalid argument never reaches the filter */
	{
		wms_order bad = order();
		bad.line_count = 0;
		wms_breaker_force_closed(wms_client_breaker(x.c));
		assert_int_equal(wms_submit_order(NULL, x.c, &bad, NULL), WMS_ERR_INVALID_ARG);
		assert_int_equal(calls, 13);
	}
	wms_client_free(x.c);
}

static void per_operation_breakers(void **state)
{
	wms_client_options o = WMS_CLIENT_OPTIONS_INIT;
	wms_breaker *all[8];
	wms_breaker_snapshot s;
	wms_error err;
	int i;
	fx x;
	(void)state;
	o.breaker_scope = WMS_BREAKER_SCOPE_PER_OPERATION;
	o.breaker_options.failure_threshold = 2;
	o.breaker_options.name = "wms";
	x = setup_client_with(&o);
	assert_int_equal(wms_client_breakers(all, 8, x.c), 4);
	assert_ptr_not_equal(wms_client_breaker_for(x.c, "SubmitOrder"),
			     wms_client_breaker_for(x.c, "GetOrderStatus"));
	assert_null(wms_client_breaker_for(x.c, "Nope"));
	wms_breaker_snapshot_get(&s, wms_client_breaker_for(x.c, "CancelOrder"));
	assert_string_equal(s.name, "wms.CancelOrder");
	x.t->next = fail_step(WMS_ERR_CONNECT, WMS_DELIVERY_NOT_SENT);
	for (i = 0; i < 2; i++)
		submit(&x, NULL, NULL);
	assert_int_equal(submit(&x, NULL, &err), WMS_ERR_CIRCUIT_OPEN);
	/* status queries have their own breaker: still closed, still sent */
	assert_int_equal(wms_get_order_status(NULL, x.c, "ORD-1", &err), WMS_ERR_CONNECT);
	assert_int_equal(x.t->sends, 3);
	assert_int_equal(wms_breaker_state_get(wms_client_breaker_for(x.c, "GetOrderStatus")),
			 WMS_BREAKER_STATE_CLOSED);
	wms_client_free(x.c);
}

static wms_status accept_locally(wms_submit_reply *out, const wms_fallback_call *call, void *ctx)
{
	int *n = ctx;
	(*n)++;
	assert_string_equal(call->operation, "SubmitOrder");
	assert_int_equal(call->error->status, WMS_ERR_CIRCUIT_OPEN);
	assert_true(call->error->retry_after_ms > 0);
	snprintf(out->wms_reference, sizeof(out->wms_reference), "PENDING-%s", call->order_id);
	snprintf(out->order_id, sizeof(out->order_id), "%s", call->order_id);
	out->state = WMS_ORDER_STATE_UNKNOWN;
	return WMS_OK;
}

static wms_status stock_unknown(wms_stock_reply **out, const wms_fallback_call *call, void *ctx)
{
	(void)ctx;
	assert_int_equal(wms_stock_reply_new(out, call->sku_count), WMS_OK);
	snprintf((*out)->levels[0].sku, sizeof((*out)->levels[0].sku), "%s", call->skus[0]);
	(*out)->levels[0].available = -1;
	return WMS_OK;
}

static void fallback_answers_when_open(void **state)
{
	wms_client_options o = WMS_CLIENT_OPTIONS_INIT;
	wms_fallbacks fb = WMS_FALLBACKS_INIT;
	const char *skus[] = { "SKU-9" };
	wms_stock_reply *stock = NULL;
	wms_submit_reply r;
	wms_error err;
	int used = 0, sends;
	fx x;
	(void)state;
	fb.submit_order = accept_locally;
	fb.get_stock_level = stock_unknown;
	fb.payload = &used;
	o.fallbacks = &fb;
	o.breaker_options.failure_threshold = 1;
	x = setup_client_with(&o);
	x.t->next = fail_step(WMS_ERR_CONNECT, WMS_DELIVERY_NOT_SENT);
	assert_int_equal(submit(&x, &r, &err), WMS_ERR_CONNECT); /* a real failure: no fallback */
	assert_int_equal(used, 0);
	sends = x.t->sends;
	assert_int_equal(submit(&x, &r, &err), WMS_OK);
	assert_int_equal(used, 1);
	assert_int_equal(r.from_fallback, 1);
	assert_string_equal(r.wms_reference, "PENDING-ORD-1");
	assert_int_equal(err.fallback, 1);
	assert_int_equal(err.delivery, WMS_DELIVERY_NOT_SENT);
	assert_true(err.retry_after_ms > 0);
	assert_int_equal(x.t->sends, sends);
	/* no fallback for this operation: CIRCUIT_OPEN as usual */
	assert_int_equal(wms_get_order_status(NULL, x.c, "ORD-1", &err), WMS_ERR_CIRCUIT_OPEN);
	assert_int_equal(err.fallback, 0);
	assert_int_equal(wms_get_stock_level(&stock, x.c, skus, 1, &err), WMS_OK);
	assert_int_equal(stock->from_fallback, 1);
	assert_int_equal(stock->levels[0].available, -1);
	wms_stock_reply_free(stock);
	wms_client_free(x.c);
}

typedef struct gauge {
	int n;
	double values[16];
	char name[64];
	char breaker[64];
} gauge;

static void on_metric(const wms_metric *m, void *ctx)
{
	gauge *g = ctx;
	if (g->n < 16)
		g->values[g->n] = m->value;
	g->n++;
	snprintf(g->name, sizeof(g->name), "%s", m->name);
	snprintf(g->breaker, sizeof(g->breaker), "%s", m->breaker);
}

static int user_events;
static void user_event(const wms_breaker_event *ev, void *ctx)
{
	(void)ev;
	(void)ctx;
	user_events++;
}

static void state_gauge_follows_transitions(void **state)
{
	wms_client_options o = WMS_CLIENT_OPTIONS_INIT;
	gauge g = { 0 };
	fx x;
	(void)state;
	o.callbacks.on_metric = on_metric;
	o.callbacks.payload = &g;
	o.breaker_options.failure_threshold = 1;
	o.breaker_options.open_duration_ms = 1000;
	o.breaker_options.callbacks.on_state_change = user_event;
	user_events = 0;
	x = setup_client_with(&o);
	assert_int_equal(g.n, 1); /* the initial value */
	assert_true(g.values[0] == 0.0);
	assert_string_equal(g.name, "fulfillment.circuit_breaker_state");
	assert_string_equal(g.breaker, "wms");
	x.t->next = fail_step(WMS_ERR_CONNECT, WMS_DELIVERY_NOT_SENT);
	submit(&x, NULL, NULL);
	clock_now += 1000 * MS;
	x.t->next = ok_step(submit_ok);
	submit(&x, NULL, NULL);
	assert_int_equal(g.n, 4);
	assert_true(g.values[1] == 1.0);
	assert_true(g.values[2] == 2.0);
	assert_true(g.values[3] == 0.0);
	assert_int_equal(user_events, 3); /* the user's own callback still runs */
	/* manual states read as what callers get: forced open 1, disabled 0 */
	wms_breaker_force_open(wms_client_breaker(x.c));
	assert_int_equal(g.n, 5);
	assert_true(g.values[4] == 1.0);
	wms_breaker_disable(wms_client_breaker(x.c));
	assert_int_equal(g.n, 6);
	assert_true(g.values[5] == 0.0);
	wms_breaker_reset(wms_client_breaker(x.c));
	assert_int_equal(g.n, 7);
	assert_true(g.values[6] == 0.0);
	wms_client_free(x.c);
}

/* One payload per callback group: the breaker's clock and state-change
 * callbacks both get breaker_options.callbacks.payload, on every breaker
 * of a per-operation client (the client hooks them for its gauge), and the
 * client's own callbacks get theirs. */
typedef struct payload_probe {
	uint64_t now;
	int clock_calls, events;
	char names[8][64];
} payload_probe;

static uint64_t probe_clock(void *payload)
{
	payload_probe *p = payload;
	p->clock_calls++;
	return p->now;
}

static void probe_event(const wms_breaker_event *ev, void *payload)
{
	payload_probe *p = payload;
	if (p->events < 8)
		snprintf(p->names[p->events], sizeof(p->names[0]), "%s", ev->name);
	p->events++;
}

static void probe_metric(const wms_metric *m, void *payload)
{
	(void)m;
	((payload_probe *)payload)->events++;
}

static void breaker_callbacks_get_their_payload(void **state)
{
	wms_client_options o = WMS_CLIENT_OPTIONS_INIT;
	payload_probe bp, cp;
	wms_status_reply sr;
	wms_client *c;
	wms_error err;
	size_t n;
	fake *t;
	(void)state;
	memset(&bp, 0, sizeof(bp));
	memset(&cp, 0, sizeof(cp));
	bp.now = 1000 * MS;
	o.endpoint = "http://wms.invalid/wms";
	o.transport = fake_transport_new(&t);
	o.breaker_scope = WMS_BREAKER_SCOPE_PER_OPERATION;
	o.breaker_options.failure_threshold = 1;
	o.breaker_options.open_duration_ms = 1000;
	o.breaker_options.callbacks.clock = probe_clock;
	o.breaker_options.callbacks.on_state_change = probe_event;
	o.breaker_options.callbacks.payload = &bp;
	o.callbacks.on_metric = probe_metric;
	o.callbacks.payload = &cp;
	assert_int_equal(wms_client_new(&c, &o, &err), WMS_OK);
	n = wms_client_breakers(NULL, 0, c);
	assert_int_equal(n, 4);
	assert_int_equal(cp.events, n); /* a gauge sample per breaker */
	t->next = fail_step(WMS_ERR_CONNECT, WMS_DELIVERY_NOT_SENT);
	{
		fx x = { c, t };
		submit(&x, NULL, NULL);
	}
	wms_get_order_status(&sr, c, "ORD-1", &err);
	assert_int_equal(bp.events, 2);
	assert_string_equal(bp.names[0], "wms.SubmitOrder");
	assert_string_equal(bp.names[1], "wms.GetOrderStatus");
	/* the clock the breakers read is the caller's, with its payload */
	bp.now += 1000 * MS;
	t->next = ok_step(submit_ok);
	{
		fx x = { c, t };
		assert_int_equal(submit(&x, NULL, &err), WMS_OK);
	}
	assert_true(bp.clock_calls > 0);
	assert_int_equal(bp.events, 4); /* SubmitOrder: half-open, closed */
	assert_string_equal(bp.names[3], "wms.SubmitOrder");
	assert_int_equal(cp.events, n + 4);
	assert_int_equal(cp.clock_calls, 0);
	wms_client_free(c);
}

static void retry_options_are_validated(void **state)
{
	wms_client_options o = WMS_CLIENT_OPTIONS_INIT;
	wms_client *c = NULL;
	wms_error err;
	(void)state;
	o.endpoint = "http://127.0.0.1:1/";
	o.retry.max_attempts = 11;
	assert_int_equal(wms_client_new(&c, &o, &err), WMS_ERR_INVALID_ARG);
	assert_non_null(strstr(err.message, "retry"));
	o.retry.max_attempts = 3;
	o.retry.initial_backoff_ms = 500;
	o.retry.max_backoff_ms = 100;
	assert_int_equal(wms_client_new(&c, &o, &err), WMS_ERR_INVALID_ARG);
	o.retry.max_backoff_ms = 0;
	o.breaker_scope = (wms_breaker_scope)5;
	assert_int_equal(wms_client_new(&c, &o, &err), WMS_ERR_INVALID_ARG);
	assert_null(c);
}

/* A row's field of wms_client_options (bounds.h) */
#define CLIENT_FIELD(f, v) OPTION_FIELD(wms_client_options, f, v)

/* Every bound wms_client_new checks (check_options, check_retry): the value
 * at it accepted, one past it refused with INVALID_ARG and the message
 * naming the option. Zero means the default, so a lower bound of 1 has
 * nothing below it to refuse; a lower bound above 1 (backoff multiplier,
 * read-cache bytes, the version) is crossed from below too. */
static void client_option_bounds(void **state)
{
	static const struct {
		const char *row;
		option_field set, also; /* `also` lets `set` reach its bound alone */
		const char *msg;       /* NULL: accepted */
	} cases[] = {
		{ "version 2, the oldest read", CLIENT_FIELD(version, 2), NO_FIELD, NULL },
		{ "version 1", CLIENT_FIELD(version, 1), NO_FIELD,
		  "options version 1 is not supported (this libwms knows 2-4)" },
		{ "version 4", CLIENT_FIELD(version, WMS_CLIENT_OPTIONS_VERSION), NO_FIELD, NULL },
		{ "version 5", CLIENT_FIELD(version, WMS_CLIENT_OPTIONS_VERSION + 1), NO_FIELD,
		  "options version 5 is not supported (this libwms knows 2-4)" },
		{ "soap_version 1.2", CLIENT_FIELD(soap_version, WMS_SOAP_12), NO_FIELD, NULL },
		{ "soap_version past 1.2", CLIENT_FIELD(soap_version, WMS_SOAP_12 + 1), NO_FIELD,
		  "soap_version must be WMS_SOAP_11 or WMS_SOAP_12" },
		{ "breaker_scope per operation",
		  CLIENT_FIELD(breaker_scope, WMS_BREAKER_SCOPE_PER_OPERATION), NO_FIELD, NULL },
		{ "breaker_scope past per operation",
		  CLIENT_FIELD(breaker_scope, WMS_BREAKER_SCOPE_PER_OPERATION + 1), NO_FIELD,
		  "breaker_scope must be PER_CLIENT or PER_OPERATION" },
		{ "connect_timeout_ms max", CLIENT_FIELD(connect_timeout_ms, WMS_MAX_TIMEOUT_MS),
		  NO_FIELD, NULL },
		{ "connect_timeout_ms max+1", CLIENT_FIELD(connect_timeout_ms, WMS_MAX_TIMEOUT_MS + 1),
		  NO_FIELD, "connect_timeout_ms must be at most 3600000 (got 3600001)" },
		{ "timeout_ms max", CLIENT_FIELD(timeout_ms, WMS_MAX_TIMEOUT_MS), NO_FIELD, NULL },
		{ "timeout_ms max+1", CLIENT_FIELD(timeout_ms, WMS_MAX_TIMEOUT_MS + 1), NO_FIELD,
		  "timeout_ms must be at most 3600000 (got 3600001)" },
		{ "stall_timeout_ms max", CLIENT_FIELD(stall_timeout_ms, WMS_MAX_TIMEOUT_MS),
		  NO_FIELD, NULL },
		{ "stall_timeout_ms max+1", CLIENT_FIELD(stall_timeout_ms, WMS_MAX_TIMEOUT_MS + 1),
		  NO_FIELD, "stall_timeout_ms must be at most 3600000 (got 3600001)" },
		{ "max_idle_connections max", CLIENT_FIELD(max_idle_connections, 1024), NO_FIELD,
		  NULL },
		{ "max_idle_connections max+1", CLIENT_FIELD(max_idle_connections, 1025), NO_FIELD,
		  "max_idle_connections must be at most 1024 (got 1025)" },
		{ "max_reply_bytes 1 GiB", CLIENT_FIELD(max_reply_bytes, (uint64_t)1 << 30),
		  NO_FIELD, NULL },
		{ "max_reply_bytes 1 GiB+1", CLIENT_FIELD(max_reply_bytes, ((uint64_t)1 << 30) + 1),
		  NO_FIELD, "max_reply_bytes must be at most 1 GiB" },
		{ "bulkhead.max_concurrent_calls max",
		  CLIENT_FIELD(bulkhead.max_concurrent_calls, WMS_MAX_CONCURRENT_CALLS), NO_FIELD,
		  NULL },
		{ "bulkhead.max_concurrent_calls max+1",
		  CLIENT_FIELD(bulkhead.max_concurrent_calls, WMS_MAX_CONCURRENT_CALLS + 1),
		  NO_FIELD, "bulkhead.max_concurrent_calls must be at most 65536 (got 65537)" },
		{ "bulkhead.max_wait_for_slot_ms max",
		  CLIENT_FIELD(bulkhead.max_wait_for_slot_ms, WMS_MAX_TIMEOUT_MS), NO_FIELD, NULL },
		{ "bulkhead.max_wait_for_slot_ms max+1",
		  CLIENT_FIELD(bulkhead.max_wait_for_slot_ms, WMS_MAX_TIMEOUT_MS + 1), NO_FIELD,
		  "bulkhead.max_wait_for_slot_ms must be at most 3600000 (got 3600001)" },
		{ "read_cache.max_entries max",
		  CLIENT_FIELD(read_cache.max_entries, WMS_MAX_READ_CACHE_ENTRIES), NO_FIELD, NULL },
		{ "read_cache.max_entries max+1",
		  CLIENT_FIELD(read_cache.max_entries, WMS_MAX_READ_CACHE_ENTRIES + 1), NO_FIELD,
		  "read_cache.max_entries must be at most 1000000 (got 1000001)" },
		{ "read_cache.max_age_ms max",
		  CLIENT_FIELD(read_cache.max_age_ms, WMS_MAX_READ_CACHE_AGE_MS), NO_FIELD, NULL },
		{ "read_cache.max_age_ms max+1",
		  CLIENT_FIELD(read_cache.max_age_ms, WMS_MAX_READ_CACHE_AGE_MS + 1), NO_FIELD,
		  "read_cache.max_age_ms must be at most 86400000 (got 86400001)" },
		{ "read_cache.max_bytes min",
		  CLIENT_FIELD(read_cache.max_bytes, WMS_MIN_READ_CACHE_BYTES), NO_FIELD, NULL },
		{ "read_cache.max_bytes min-1",
		  CLIENT_FIELD(read_cache.max_bytes, WMS_MIN_READ_CACHE_BYTES - 1), NO_FIELD,
		  "read_cache.max_bytes must be 0 or 65536-1073741824 (got 65535)" },
		{ "read_cache.max_bytes max",
		  CLIENT_FIELD(read_cache.max_bytes, WMS_MAX_READ_CACHE_BYTES), NO_FIELD, NULL },
		{ "read_cache.max_bytes max+1",
		  CLIENT_FIELD(read_cache.max_bytes, WMS_MAX_READ_CACHE_BYTES + 1), NO_FIELD,
		  "read_cache.max_bytes must be 0 or 65536-1073741824 (got 1073741825)" },
		{ "retry.max_attempts 1", CLIENT_FIELD(retry.max_attempts, 1), NO_FIELD, NULL },
		{ "retry.max_attempts max", CLIENT_FIELD(retry.max_attempts, 10), NO_FIELD, NULL },
		{ "retry.max_attempts max+1", CLIENT_FIELD(retry.max_attempts, 11), NO_FIELD,
		  "retry.max_attempts must be 1-10 (got 11)" },
		{ "retry.backoff_multiplier_pct min", CLIENT_FIELD(retry.backoff_multiplier_pct, 100),
		  NO_FIELD, NULL },
		{ "retry.backoff_multiplier_pct min-1", CLIENT_FIELD(retry.backoff_multiplier_pct, 99),
		  NO_FIELD, "retry.backoff_multiplier_pct must be 100-1000 (got 99)" },
		{ "retry.backoff_multiplier_pct max",
		  CLIENT_FIELD(retry.backoff_multiplier_pct, 1000), NO_FIELD, NULL },
		{ "retry.backoff_multiplier_pct max+1",
		  CLIENT_FIELD(retry.backoff_multiplier_pct, 1001), NO_FIELD,
		  "retry.backoff_multiplier_pct must be 100-1000 (got 1001)" },
		/* the default max_backoff_ms (2000) would refuse these on its own */
		{ "retry.initial_backoff_ms max",
		  CLIENT_FIELD(retry.initial_backoff_ms, WMS_MAX_TIMEOUT_MS),
		  CLIENT_FIELD(retry.max_backoff_ms, WMS_MAX_TIMEOUT_MS), NULL },
		{ "retry.initial_backoff_ms max+1",
		  CLIENT_FIELD(retry.initial_backoff_ms, WMS_MAX_TIMEOUT_MS + 1),
		  CLIENT_FIELD(retry.max_backoff_ms, WMS_MAX_TIMEOUT_MS),
		  "retry.initial_backoff_ms must be at most max_backoff_ms (3600000; got 3600001)" },
		{ "retry.max_backoff_ms max", CLIENT_FIELD(retry.max_backoff_ms, WMS_MAX_TIMEOUT_MS),
		  NO_FIELD, NULL },
		{ "retry.max_backoff_ms max+1",
		  CLIENT_FIELD(retry.max_backoff_ms, WMS_MAX_TIMEOUT_MS + 1), NO_FIELD,
		  "retry.max_backoff_ms must be at most 3600000 (got 3600001)" },
		/* max_backoff_ms's lower bound is initial_backoff_ms */
		{ "retry.max_backoff_ms = initial", CLIENT_FIELD(retry.max_backoff_ms, 500),
		  CLIENT_FIELD(retry.initial_backoff_ms, 500), NULL },
		{ "retry.max_backoff_ms = initial-1", CLIENT_FIELD(retry.max_backoff_ms, 499),
		  CLIENT_FIELD(retry.initial_backoff_ms, 500),
		  "retry.initial_backoff_ms must be at most max_backoff_ms (499; got 500)" },
	};
	wms_client *c;
	wms_error err;
	size_t i;
	int round;
	(void)state;

	/* twice over: a refusal leaves nothing behind that changes the next */
	for (round = 0; round < 2; round++) {
		for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
			wms_client_options o = WMS_CLIENT_OPTIONS_INIT;
			wms_status st;
			o.endpoint = "http://127.0.0.1:1/wms";
			set_option_field(&o, &cases[i].set);
			set_option_field(&o, &cases[i].also);
			c = NULL;
			memset(&err, 0, sizeof(err));
			st = wms_client_new(&c, &o, &err);
			if (!cases[i].msg) {
				if (st != WMS_OK)
					fail_msg("%s: %s (%s)", cases[i].row, wms_status_name(st),
						 err.message);
				assert_non_null(c);
				wms_client_free(c);
			} else {
				if (st != WMS_ERR_INVALID_ARG)
					fail_msg("%s: %s, not INVALID_ARG", cases[i].row,
						 wms_status_name(st));
				assert_null(c);
				assert_string_equal(err.message, cases[i].msg);
			}
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(retries_until_success),
		cmocka_unit_test(no_retry_after_circuit_open),
		cmocka_unit_test(business_faults_are_not_retried),
		cmocka_unit_test(delivery_stays_unknown_once_unknown),
		cmocka_unit_test(not_sent_only),
		cmocka_unit_test(retries_fit_in_the_deadline),
		cmocka_unit_test(retry_after_is_honoured),
		cmocka_unit_test(retry_after_beside_an_open_breaker),
		cmocka_unit_test(no_backoff_once_the_breaker_opened),
		cmocka_unit_test(no_backoff_once_forced_open),
		cmocka_unit_test(error_filter_reclassifies),
		cmocka_unit_test(per_operation_breakers),
		cmocka_unit_test(fallback_answers_when_open),
		cmocka_unit_test(state_gauge_follows_transitions),
		cmocka_unit_test(breaker_callbacks_get_their_payload),
		cmocka_unit_test(retry_options_are_validated),
		cmocka_unit_test(client_option_bounds),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
