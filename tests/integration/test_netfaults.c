/* Network faults (issue 5 item 3) through a real wms_client and its curl
 * transport against wms-sim: refused, hang before the headers, hang in the
 * middle of the body, a trickle of one byte a second (stall guard, and
 * deadline), a reset in the middle of the reply or before it (on a fresh and
 * on a reused connection), the server closing the idle keep-alive connection
 * after every reply (between calls, and racing the next one), and a name that
 * does not resolve.
 *
 * Each asserts the status, the delivery verdict, the libcurl code, how the
 * breaker counted it, a time bound relative to the configured deadline or
 * stall guard, whether the WMS carried the order out, and that the client
 * works again afterwards. The raw-socket versions of most of these are in
 * tests/transport/test_curl_transport.c. Every test runs twice: with the
 * blocking call, then through an async context of the client (it_submit's
 * async mode), with the same expectations. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <curl/curl.h>
#include "itest.h"

typedef struct fx {
	wms_sim *sim;
	unsigned healthy;
} fx;

static int setup(void **state)
{
	fx *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	f->sim = it_sim_start(3600000u);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fx *f = *state;
	wms_sim_stop(f->sim);
	free(f);
	return 0;
}

/* Stall guards and trickle periods are stretched under valgrind, where
 * everything is slower; deadlines get it_slack_ms() on top. */
static uint32_t stretch(uint32_t ms)
{
	return it_valgrind() ? 2u * ms : ms;
}

typedef struct copts {
	const char *endpoint;     /* NULL: the sim */
	uint32_t timeout_ms;      /* plus it_slack_ms() */
	uint32_t stall_ms;        /* stretched; 0: the default 5000 */
	uint32_t connect_ms;      /* 0: 1000 */
	uint32_t threshold;       /* 0: 1000 (the breaker stays closed) */
} copts;

static wms_client *client(fx *f, const copts *o)
{
	wms_client_options co = WMS_CLIENT_OPTIONS_INIT;
	wms_client *c = NULL;
	wms_error err;
	co.endpoint = o->endpoint ? o->endpoint : wms_sim_url(f->sim);
	co.timeout_ms = o->timeout_ms + it_slack_ms();
	co.stall_timeout_ms = stretch(o->stall_ms);
	co.connect_timeout_ms = (o->connect_ms ? o->connect_ms : 1000u) + it_slack_ms();
	co.breaker_options.failure_threshold = o->threshold ? o->threshold : 1000u;
	co.breaker_options.open_duration_ms = 60000u;
	if (wms_client_new(&c, &co, &err) != WMS_OK)
		fail_msg("wms_client_new: %s", err.message);
	return c;
}

static void set_fault(fx *f, const char *op, wms_sim_fault kind, uint32_t param)
{
	if (wms_sim_set_fault(f->sim, op, kind, param) != WMS_SIM_OK)
		fail_msg("wms_sim_set_fault(%s): %s", wms_sim_fault_name(kind), wms_sim_last_error());
}

static void set_reply(fx *f, const wms_sim_reply *r)
{
	if (wms_sim_set_reply(f->sim, "SubmitOrder", r) != WMS_SIM_OK)
		fail_msg("wms_sim_set_reply: %s", wms_sim_last_error());
}

/* What one faulted call must give. */
typedef struct expect {
	const char *name;
	wms_status status;
	wms_delivery delivery;
	int curl_code;        /* -1: not checked */
	const char *message;  /* substring, or NULL */
	double min_ms, max_ms; /* before slack */
	int performed;        /* the WMS committed the order */
	uint64_t requests;    /* requests the WMS received */
} expect;

typedef struct result {
	wms_status st;
	wms_error err;
	double ms;
} result;

static void faulted_call(fx *f, wms_client *c, const char *id, const expect *e, result *r)
{
	wms_breaker_snapshot before, after;
	uint64_t sent = wms_sim_requests(f->sim, NULL);
	double t0;

	wms_breaker_snapshot_get(&before, wms_client_breaker(c));
	t0 = it_now_ms();
	r->st = it_submit(c, id, "SKU-1", 1, NULL, &r->err);
	r->ms = it_now_ms() - t0;
	wms_breaker_snapshot_get(&after, wms_client_breaker(c));

	if (r->st != e->status || r->err.delivery != e->delivery)
		fail_msg("%s: got %s/%s (%s), want %s/%s", e->name, wms_status_name(r->st),
			 wms_delivery_name(r->err.delivery), r->err.message,
			 wms_status_name(e->status), wms_delivery_name(e->delivery));
	assert_int_equal(r->err.status, r->st);
	assert_string_equal(r->err.operation, "SubmitOrder");
	assert_int_equal(r->err.attempts, 1);
	if (e->curl_code >= 0 && r->err.curl_code != e->curl_code)
		fail_msg("%s: curl code %d, want %d (%s)", e->name, r->err.curl_code, e->curl_code,
			 r->err.message);
	if (e->message && !strstr(r->err.message, e->message))
		fail_msg("%s: message \"%s\" lacks \"%s\"", e->name, r->err.message, e->message);
	if (r->ms < e->min_ms || r->ms > e->max_ms + it_slack_ms())
		fail_msg("%s: %.1f ms, want %.0f..%.0f ms", e->name, r->ms, e->min_ms,
			 e->max_ms + it_slack_ms());
	if (wms_sim_requests(f->sim, NULL) - sent != e->requests)
		fail_msg("%s: %" PRIu64 " requests reached the sim, want %" PRIu64, e->name,
			 wms_sim_requests(f->sim, NULL) - sent, e->requests);
	if (wms_sim_order_get(NULL, f->sim, id) != e->performed)
		fail_msg("%s: order %s %s the store", e->name, id,
			 e->performed ? "missing from" : "unexpectedly in");
	/* Every network fault counts against the WMS. */
	assert_int_equal(after.permitted - before.permitted, 1);
	assert_int_equal(after.failures - before.failures, 1);
	assert_int_equal(after.successes - before.successes, 0);
	assert_int_equal(after.ignored - before.ignored, 0);
	assert_true(wms_error_is_retryable(&r->err));
}

/* The client works again; resending the faulted order is safe (same id). */
static void recovers(fx *f, wms_client *c, const char *id, int performed)
{
	wms_submit_reply r;
	wms_error err;
	char ok[32];
	wms_status st;

	wms_sim_clear_faults(f->sim);
	st = it_submit(c, id, "SKU-1", 1, &r, &err);
	if (st != WMS_OK)
		fail_msg("resending %s: %s: %s", id, wms_status_name(st), err.message);
	assert_int_equal(r.duplicate, performed);
	snprintf(ok, sizeof(ok), "NF-OK-%u", ++f->healthy);
	assert_int_equal(it_submit(c, ok, "SKU-2", 1, &r, &err), WMS_OK);
	assert_int_equal(r.duplicate, 0);
}

/* ---- refused ----------------------------------------------------------------- */

static void test_refused(void **state)
{
	fx *f = *state;
	copts o = { NULL, 2000, 0, 0, 2 };
	wms_client *c = client(f, &o);
	const expect e = { "refused", WMS_ERR_CONNECT, WMS_DELIVERY_NOT_SENT, CURLE_COULDNT_CONNECT,
			   NULL, 0, 500, 0, 0 };
	uint64_t conns = wms_sim_connections(f->sim, NULL);
	wms_breaker_snapshot snap;
	result r;
	wms_error err;
	double t0;

	set_fault(f, NULL, WMS_SIM_FAULT_REFUSE, 0);
	faulted_call(f, c, "NF-R1", &e, &r);
	assert_int_equal(r.err.http_status, 0);
	/* The second refusal reaches the threshold (2): the breaker opens ... */
	faulted_call(f, c, "NF-R1", &e, &r);
	assert_int_equal(wms_breaker_state_get(wms_client_breaker(c)), WMS_BREAKER_STATE_OPEN);
	/* ... and the third call is not even attempted. */
	t0 = it_now_ms();
	assert_int_equal(it_submit(c, "NF-R1", "SKU-1", 1, NULL, &err), WMS_ERR_CIRCUIT_OPEN);
	assert_true(it_now_ms() - t0 < 50.0 + it_slack_ms());
	assert_int_equal(err.delivery, WMS_DELIVERY_NOT_SENT);
	assert_int_equal(err.attempts, 0);
	assert_true(err.retry_after_ms > 0);
	wms_breaker_snapshot_get(&snap, wms_client_breaker(c));
	assert_int_equal(snap.rejected, 1);
	assert_int_equal(snap.failures, 2);
	assert_int_equal(wms_sim_connections(f->sim, NULL), conns); /* nothing got through */
	assert_int_equal(wms_sim_requests(f->sim, NULL), 0);

	wms_breaker_reset(wms_client_breaker(c));
	recovers(f, c, "NF-R1", 0);
	it_client_free(c);
}

/* ---- hang before the headers ------------------------------------------------------ */

static void test_hang_before_headers(void **state)
{
	fx *f = *state;
	/* The deadline ends it (the stall guard is further away) ... */
	copts o1 = { NULL, 400, 5000, 0, 0 };
	/* ... or the stall guard does: nothing moves once the request is out. */
	copts o2 = { NULL, 5000, 300, 0, 0 };
	const expect e1 = { "hang, deadline", WMS_ERR_TIMEOUT, WMS_DELIVERY_UNKNOWN,
			    CURLE_OPERATION_TIMEDOUT, "timed out", 395, 500, 0, 1 };
	const expect e2 = { "hang, stall guard", WMS_ERR_TIMEOUT, WMS_DELIVERY_UNKNOWN, -1,
			    "stall guard: nothing moved for", 295, 1500, 0, 1 };
	wms_client *c1 = client(f, &o1), *c2 = client(f, &o2);
	result r;

	set_fault(f, "SubmitOrder", WMS_SIM_FAULT_HANG, 0);
	faulted_call(f, c1, "NF-H1", &e1, &r);
	assert_int_equal(r.err.http_status, 0);
	faulted_call(f, c2, "NF-H2", &e2, &r);
	assert_int_equal(r.err.http_status, 0);
	assert_true(r.ms < o2.timeout_ms);
	recovers(f, c1, "NF-H1", 0);
	recovers(f, c2, "NF-H2", 0);
	it_client_free(c1);
	it_client_free(c2);
}

/* ---- hang in the middle of the body --------------------------------------------- */

static void test_hang_mid_body(void **state)
{
	fx *f = *state;
	copts o1 = { NULL, 5000, 300, 0, 0 };
	copts o2 = { NULL, 500, 5000, 0, 0 };
	const expect e1 = { "hang mid-body, stall guard", WMS_ERR_TIMEOUT, WMS_DELIVERY_UNKNOWN,
			    -1, "stall guard", 295, 1500, 1, 1 };
	const expect e2 = { "hang mid-body, deadline", WMS_ERR_TIMEOUT, WMS_DELIVERY_UNKNOWN,
			    CURLE_OPERATION_TIMEDOUT, "timed out", 495, 600, 1, 1 };
	const expect e3 = { "Content-Length promises more, then silence", WMS_ERR_TIMEOUT,
			    WMS_DELIVERY_UNKNOWN, -1, "stall guard", 295, 1500, 1, 1 };
	wms_client *c1 = client(f, &o1), *c2 = client(f, &o2);
	wms_sim_reply rp = WMS_SIM_REPLY_INIT;
	result r;

	/* The real answer (the order is committed), cut after 40 body bytes. */
	rp.hang = 1;
	rp.hang_after = 40;
	set_reply(f, &rp);
	faulted_call(f, c1, "NF-M1", &e1, &r);
	assert_int_equal(r.err.http_status, 200); /* the headers had come */
	faulted_call(f, c2, "NF-M2", &e2, &r);
	assert_int_equal(r.err.http_status, 200);
	recovers(f, c1, "NF-M1", 1);
	recovers(f, c2, "NF-M2", 1);

	/* All of the body, but a Content-Length that promises 100 bytes more. */
	memset(&rp, 0, sizeof(rp));
	rp.version = WMS_SIM_REPLY_VERSION;
	rp.lie_length = 1;
	rp.content_length = 100000;
	set_reply(f, &rp);
	faulted_call(f, c1, "NF-M3", &e3, &r);
	assert_int_equal(r.err.http_status, 200);
	recovers(f, c1, "NF-M3", 1);
	it_client_free(c1);
	it_client_free(c2);
}

/* ---- a trickle of one byte a second ------------------------------------------------ */

/* One byte a second moves, if slowly: a 1500 ms stall guard lets it be, and
 * the deadline ends it. A slower trickle (one byte every 3 s) is a stall: a
 * 500 ms guard ends it long before the deadline. (libcurl reports progress
 * about once a second when idle, so the guard fires 0.5-1.5 s into a gap.) */
static void test_trickle(void **state)
{
	fx *f = *state;
	copts o1 = { NULL, 2500, 1500, 0, 0 };
	copts o2 = { NULL, 8000, 500, 0, 0 };
	const expect e1 = { "trickle 1 byte/s, deadline", WMS_ERR_TIMEOUT, WMS_DELIVERY_UNKNOWN,
			    CURLE_OPERATION_TIMEDOUT, "timed out", 2495, 2600, 1, 1 };
	const expect e2 = { "trickle 1 byte/3 s, stall guard", WMS_ERR_TIMEOUT,
			    WMS_DELIVERY_UNKNOWN, -1, "stall guard", 495, 2600, 1, 1 };
	wms_client *c1 = client(f, &o1), *c2 = client(f, &o2);
	wms_sim_reply rp = WMS_SIM_REPLY_INIT;
	result r;

	rp.trickle_ms = stretch(1000);
	set_reply(f, &rp);
	faulted_call(f, c1, "NF-T1", &e1, &r);
	assert_int_equal(r.err.http_status, 200);
	rp.trickle_ms = stretch(3000);
	set_reply(f, &rp);
	faulted_call(f, c2, "NF-T2", &e2, &r);
	assert_int_equal(r.err.http_status, 200);
	recovers(f, c1, "NF-T1", 1);
	recovers(f, c2, "NF-T2", 1);
	it_client_free(c1);
	it_client_free(c2);
}

/* ---- reset --------------------------------------------------------------------- */

static void test_reset(void **state)
{
	fx *f = *state;
	copts o = { NULL, 2000, 0, 0, 0 };
	const expect mid = { "reset mid-reply", WMS_ERR_TRANSPORT, WMS_DELIVERY_UNKNOWN,
			     CURLE_RECV_ERROR, NULL, 0, 500, 1, 1 };
	const expect lost = { "reset before any reply byte", WMS_ERR_TRANSPORT,
			      WMS_DELIVERY_UNKNOWN, -1, NULL, 0, 500, 1, 1 };
	const expect lost_reused = { "reset before any reply byte, reused connection",
				     WMS_ERR_TRANSPORT, WMS_DELIVERY_UNKNOWN,
				     CURLE_ABORTED_BY_CALLBACK,
				     "not resent (it may have been received)", 0, 500, 1, 1 };
	wms_client *c = client(f, &o);
	result r;

	set_fault(f, "SubmitOrder", WMS_SIM_FAULT_RESET, 0);
	faulted_call(f, c, "NF-X1", &mid, &r);
	assert_int_equal(r.err.http_status, 200);
	recovers(f, c, "NF-X1", 1);
	it_client_free(c);

	/* On a fresh connection ... */
	c = client(f, &o);
	set_fault(f, "SubmitOrder", WMS_SIM_FAULT_REPLY_LOST, 0);
	faulted_call(f, c, "NF-X2", &lost, &r);
	assert_true(r.err.curl_code == CURLE_RECV_ERROR || r.err.curl_code == CURLE_GOT_NOTHING);
	recovers(f, c, "NF-X2", 1);
	/* ... and on the reused one recovers() left: the same verdict, and the
	 * WMS still has one copy (libcurl's own resend on a fresh connection
	 * is refused). */
	set_fault(f, "SubmitOrder", WMS_SIM_FAULT_REPLY_LOST, 0);
	faulted_call(f, c, "NF-X3", &lost_reused, &r);
	assert_int_equal(r.err.http_status, 0);
	recovers(f, c, "NF-X3", 1);
	it_client_free(c);
}

/* ---- the server closes the idle keep-alive connection after each reply --------- */

/* Between calls: a pause of pause_ms, or (0) until the sim has closed. */
static void between(fx *f, uint32_t pause_ms)
{
	if (pause_ms)
		it_sleep_ms(pause_ms);
	else
		it_wait_sim_closed(f->sim);
}

static void calls_across_closes(fx *f, wms_client *c, const char *prefix, unsigned n,
				uint32_t pause_ms)
{
	uint64_t req0 = wms_sim_requests(f->sim, NULL), conn0 = wms_sim_connections(f->sim, NULL);
	const char *sku[] = { "SKU-3" };
	unsigned i;

	for (i = 0; i < n; i++) {
		char id[32];
		wms_sim_order_info info;
		wms_submit_reply r;
		wms_status_reply sr;
		wms_stock_reply *stock = NULL;
		wms_error err;
		wms_status st;

		snprintf(id, sizeof(id), "%s-%u", prefix, i);
		/* Alternate operations: each finds the connection the last one left closed. */
		st = it_submit(c, id, "SKU-3", 1, &r, &err);
		if (st != WMS_OK)
			fail_msg("%s: call %u: %s/%s: %s", prefix, 3 * i, wms_status_name(st),
				 wms_delivery_name(err.delivery), err.message);
		between(f, pause_ms);
		st = wms_get_order_status(&sr, c, id, &err);
		if (st != WMS_OK)
			fail_msg("%s: call %u: %s: %s", prefix, 3 * i + 1, wms_status_name(st),
				 err.message);
		between(f, pause_ms);
		st = wms_get_stock_level(&stock, c, sku, 1, &err);
		if (st != WMS_OK)
			fail_msg("%s: call %u: %s: %s", prefix, 3 * i + 2, wms_status_name(st),
				 err.message);
		wms_stock_reply_free(stock);
		between(f, pause_ms);
		/* The WMS saw the order once: no call was resent after it was read. */
		assert_true(wms_sim_order_get(&info, f->sim, id));
		if (info.submits != 1)
			fail_msg("%s: order %s reached the WMS %u times", prefix, id, info.submits);
	}
	/* Every request arrived exactly once, each on a connection of its own. */
	if (wms_sim_requests(f->sim, NULL) - req0 != 3 * n)
		fail_msg("%s: the sim received %" PRIu64 " requests for %u calls (libcurl resent "
			 "some)", prefix, wms_sim_requests(f->sim, NULL) - req0, 3 * n);
	assert_int_equal(wms_sim_connections(f->sim, NULL) - conn0, 3 * n);
}

/* Back to back: the next request may go out before the sim's close, on the
 * connection it is closing. That request was written, and cannot be told
 * from one the WMS read before closing: the call fails UNKNOWN and is not
 * resent. Every call is OK or that; no request reaches the WMS twice; a
 * failed submit resent with its order id is answered once. */
static void calls_racing_closes(fx *f, wms_client *c, const char *prefix, unsigned n)
{
	uint64_t req0 = wms_sim_requests(f->sim, NULL);
	unsigned i, calls = 0, raced = 0;

	for (i = 0; i < n; i++) {
		char id[32];
		wms_sim_order_info info;
		wms_submit_reply r;
		wms_status_reply sr;
		wms_error err;
		wms_status st;
		int stored;

		snprintf(id, sizeof(id), "%s-%u", prefix, i);
		st = it_submit(c, id, "SKU-3", 1, &r, &err);
		calls++;
		if (st != WMS_OK) {
			if (st != WMS_ERR_TRANSPORT || err.delivery != WMS_DELIVERY_UNKNOWN ||
			    !strstr(err.message, "not resent"))
				fail_msg("%s: submit %u: %s/%s: %s", prefix, i, wms_status_name(st),
					 wms_delivery_name(err.delivery), err.message);
			raced++;
			it_wait_sim_closed(f->sim); /* done with that connection, and the request */
			stored = wms_sim_order_get(NULL, f->sim, id);
			st = it_submit(c, id, "SKU-3", 1, &r, &err);
			calls++;
			if (st != WMS_OK)
				fail_msg("%s: resending %s: %s: %s", prefix, id,
					 wms_status_name(st), err.message);
			assert_int_equal(r.duplicate, stored);
		}
		assert_true(wms_sim_order_get(&info, f->sim, id));
		if (info.submits > 2 || (!r.duplicate && info.submits != 1))
			fail_msg("%s: order %s reached the WMS %u times", prefix, id, info.submits);
		st = wms_get_order_status(&sr, c, id, &err);
		calls++;
		if (st != WMS_OK) {
			if (st != WMS_ERR_TRANSPORT || err.delivery != WMS_DELIVERY_UNKNOWN)
				fail_msg("%s: status %u: %s/%s: %s", prefix, i, wms_status_name(st),
					 wms_delivery_name(err.delivery), err.message);
			raced++;
		}
	}
	if (wms_sim_requests(f->sim, NULL) - req0 > calls)
		fail_msg("%s: the sim received %" PRIu64 " requests for %u calls", prefix,
			 wms_sim_requests(f->sim, NULL) - req0, calls);
	print_message("%s: %u of %u calls went out as the sim was closing (UNKNOWN, not "
		      "resent)\n", prefix, raced, calls);
}

static void test_idle_connection_closed(void **state)
{
	fx *f = *state;
	copts o = { NULL, 2000, 0, 0, 0 };
	wms_client *c = client(f, &o);
	wms_sim_reply rp = WMS_SIM_REPLY_INIT;
	wms_breaker_snapshot snap;
	uint64_t open_now = 1;
	double t0;

	/* Every operation answers normally, then the sim closes the connection
	 * without a "Connection: close". */
	rp.close = 1;
	if (wms_sim_set_reply(f->sim, NULL, &rp) != WMS_SIM_OK)
		fail_msg("wms_sim_set_reply: %s", wms_sim_last_error());
	/* With time for the close to arrive between calls, and right after it:
	 * libcurl's check before reuse finds the connection dead, nothing is
	 * resent and nothing fails. */
	calls_across_closes(f, c, "NF-C", 5, 50);
	calls_across_closes(f, c, "NF-B", 10, 0);
	wms_breaker_snapshot_get(&snap, wms_client_breaker(c));
	assert_int_equal(snap.failures, 0);
	assert_int_equal(snap.successes, 45);
	/* Racing the close. */
	calls_racing_closes(f, c, "NF-R", 10);

	/* Without the fault: one connection, kept alive. */
	assert_int_equal(wms_sim_set_reply(f->sim, NULL, NULL), WMS_SIM_OK);
	it_wait_sim_closed(f->sim);
	{
		uint64_t conn0;
		it_submit(c, "NF-K-0", "SKU-3", 1, NULL, NULL);
		conn0 = wms_sim_connections(f->sim, NULL);
		assert_int_equal(it_submit(c, "NF-K-1", "SKU-3", 1, NULL, NULL), WMS_OK);
		assert_int_equal(it_submit(c, "NF-K-2", "SKU-3", 1, NULL, NULL), WMS_OK);
		assert_int_equal(wms_sim_connections(f->sim, NULL), conn0);
	}
	it_client_free(c);
	/* And none is left open once the client is gone. */
	t0 = it_now_ms();
	while (it_now_ms() - t0 < 2000.0 + it_slack_ms()) {
		wms_sim_connections(f->sim, &open_now);
		if (!open_now)
			break;
		it_sleep_ms(10);
	}
	assert_int_equal(open_now, 0);
}

/* ---- DNS ---------------------------------------------------------------------- */

static void test_dns_failure(void **state)
{
	fx *f = *state;
	copts o = { "http://nonexistent.invalid/wms", 2000, 0, 1500, 0 };
	const expect e = { "DNS failure", WMS_ERR_CONNECT, WMS_DELIVERY_NOT_SENT,
			   CURLE_COULDNT_RESOLVE_HOST, "nonexistent.invalid", 0, 1500, 0, 0 };
	wms_client *c = client(f, &o);
	result r;

	faulted_call(f, c, "NF-D1", &e, &r);
	assert_int_equal(r.err.http_status, 0);
	faulted_call(f, c, "NF-D1", &e, &r); /* the same again: nothing cached as good */
	it_client_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hang_before_headers, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hang_mid_body, setup, teardown),
		cmocka_unit_test_setup_teardown(test_trickle, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reset, setup, teardown),
		cmocka_unit_test_setup_teardown(test_idle_connection_closed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dns_failure, setup, teardown),
	};
	int failed = cmocka_run_group_tests_name("integration: network faults", tests, NULL, NULL);
	/* the same faults and expectations through the asynchronous API */
	it_async_mode(1);
	failed += cmocka_run_group_tests_name("integration: network faults, async", tests, NULL,
					      NULL);
	return failed;
}
