/* Every fault wms-sim can inject, seen through a real wms_client: the
 * status, the delivery verdict, whether the WMS acted, and the time bounds
 * (hang -> TIMEOUT within timeout + 100 ms). */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "itest.h"

typedef struct fx {
	wms_sim *sim;
	wms_client *c;
	int soap12;
} fx;

static int setup_version(void **state, int soap12)
{
	fx *f = calloc(1, sizeof(*f));
	it_client_opts o;
	assert_non_null(f);
	memset(&o, 0, sizeof(o));
	o.soap_version = soap12 ? WMS_SOAP_12 : WMS_SOAP_11;
	f->soap12 = soap12;
	f->sim = it_sim_start(3600000u);
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
	return 0;
}

static void set_fault(fx *f, const char *op, wms_sim_fault kind, uint32_t param)
{
	wms_sim_status st = wms_sim_set_fault(f->sim, op, kind, param);
	if (st != WMS_SIM_OK)
		fail_msg("wms_sim_set_fault(%s): %s", wms_sim_fault_name(kind), wms_sim_last_error());
}

static void assert_healthy(fx *f, const char *id)
{
	wms_submit_reply r;
	wms_error err;
	wms_status st = it_submit(f->c, id, "SKU-2", 1, &r, &err);
	if (st != WMS_OK)
		fail_msg("healthy call %s: %s: %s", id, wms_status_name(st), err.message);
	assert_int_equal(r.duplicate, 0);
}

/* ---- faults with an immediate answer (or non-answer) ---------------------- */

typedef struct row {
	wms_sim_fault fault;
	uint32_t param;
	wms_status status;
	wms_delivery delivery;
	int performed;        /* the WMS carried the order out */
	long http_status;     /* -1: not checked */
	const char *fault_code; /* 1.1 spelling; "" none */
	const char *wms_code;
} row;

static const row rows[] = {
	{ WMS_SIM_FAULT_HTTP_500, 0, WMS_ERR_HTTP, WMS_DELIVERY_UNKNOWN, 0, 500, "", "" },
	{ WMS_SIM_FAULT_HTTP_503, 0, WMS_ERR_HTTP, WMS_DELIVERY_UNKNOWN, 0, 503, "", "" },
	{ WMS_SIM_FAULT_SERVER, 0, WMS_ERR_SOAP_FAULT, WMS_DELIVERY_ANSWERED, 0, 500, "Server",
	  "INTERNAL" },
	{ WMS_SIM_FAULT_CLIENT, 0, WMS_ERR_SOAP_FAULT, WMS_DELIVERY_ANSWERED, 0, 500, "Client",
	  "INVALID_REQUEST" },
	{ WMS_SIM_FAULT_TRUNCATED, 0, WMS_ERR_TRUNCATED, WMS_DELIVERY_UNKNOWN, 1, -1, "", "" },
	{ WMS_SIM_FAULT_GARBAGE, 0, WMS_ERR_NOT_XML, WMS_DELIVERY_UNKNOWN, 0, 200, "", "" },
	{ WMS_SIM_FAULT_GARBAGE, 5000, WMS_ERR_NOT_XML, WMS_DELIVERY_UNKNOWN, 0, 200, "", "" },
	{ WMS_SIM_FAULT_RESET, 0, WMS_ERR_TRANSPORT, WMS_DELIVERY_UNKNOWN, 1, -1, "", "" },
	{ WMS_SIM_FAULT_REPLY_LOST, 0, WMS_ERR_TRANSPORT, WMS_DELIVERY_UNKNOWN, 1, -1, "", "" },
};

static void test_fault_table(void **state)
{
	fx *f = *state;
	size_t i;

	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const row *w = &rows[i];
		char id[64], ok_id[64];
		const char *code = w->fault_code;
		uint64_t before = wms_sim_requests(f->sim, "SubmitOrder"), sent;
		wms_sim_order_info info;
		wms_error err;
		wms_status st;

		if (f->soap12 && strcmp(code, "Server") == 0)
			code = "Receiver";
		else if (f->soap12 && strcmp(code, "Client") == 0)
			code = "Sender";
		snprintf(id, sizeof(id), "F-%s-%zu", wms_sim_fault_name(w->fault), i);
		set_fault(f, NULL, w->fault, w->param);
		st = it_submit(f->c, id, "SKU-1", 1, NULL, &err);
		if (st != w->status || err.delivery != w->delivery)
			fail_msg("%s: got %s/%s (%s), want %s/%s", wms_sim_fault_name(w->fault),
				 wms_status_name(st), wms_delivery_name(err.delivery), err.message,
				 wms_status_name(w->status), wms_delivery_name(w->delivery));
		assert_int_equal(err.status, w->status);
		assert_string_equal(err.operation, "SubmitOrder");
		assert_true(err.message[0] != '\0');
		if (w->http_status >= 0)
			assert_int_equal(err.http_status, w->http_status);
		assert_string_equal(err.fault_code, code);
		assert_string_equal(err.wms_code, w->wms_code);
		/* It reached the WMS once (counted; from the second row on the
		 * connection is a reused one, and nothing is resent on it), and the
		 * WMS did or did not act. */
		sent = wms_sim_requests(f->sim, "SubmitOrder") - before;
		if (sent != 1)
			fail_msg("%s: %" PRIu64 " requests reached the sim, want 1",
				 wms_sim_fault_name(w->fault), sent);
		if (wms_sim_order_get(&info, f->sim, id) != w->performed)
			fail_msg("%s: order %s the store", wms_sim_fault_name(w->fault),
				 w->performed ? "missing from" : "unexpectedly in");
		if (w->performed)
			assert_int_equal(info.submits, 1);
		/* What the caller may do next. */
		if (w->fault == WMS_SIM_FAULT_CLIENT)
			assert_false(wms_error_is_retryable(&err));
		else
			assert_true(wms_error_is_retryable(&err));
		/* Healthy again at once. */
		set_fault(f, NULL, WMS_SIM_FAULT_NONE, 0);
		snprintf(ok_id, sizeof(ok_id), "OK-%zu", i);
		assert_healthy(f, ok_id);
	}
	assert_int_equal(wms_breaker_state_get(wms_client_breaker(f->c)), WMS_BREAKER_STATE_CLOSED);
}

/* stored-but-reply-lost: the caller cannot tell, but resending the same
 * order id is safe and tells it the order exists. */
static void test_reply_lost_then_resend(void **state)
{
	fx *f = *state;
	wms_sim_order_info info;
	wms_submit_reply r;
	wms_error err;

	/* The client's first call: a fresh connection (see test_reply_lost_on_reused_connection). */
	set_fault(f, "SubmitOrder", WMS_SIM_FAULT_REPLY_LOST, 0);
	assert_int_equal(it_submit(f->c, "LOST-1", "SKU-5", 3, &r, &err), WMS_ERR_TRANSPORT);
	assert_int_equal(err.delivery, WMS_DELIVERY_UNKNOWN);
	assert_true(wms_error_is_retryable(&err));
	assert_true(wms_sim_order_get(&info, f->sim, "LOST-1"));
	assert_int_equal(info.submits, 1);

	set_fault(f, "SubmitOrder", WMS_SIM_FAULT_NONE, 0);
	assert_int_equal(it_submit(f->c, "LOST-1", "SKU-5", 3, &r, &err), WMS_OK);
	assert_int_equal(r.duplicate, 1);
	assert_string_equal(r.wms_reference, info.wms_reference);
	assert_int_equal(wms_sim_order_count(f->sim), 1);
	assert_true(wms_sim_order_get(&info, f->sim, "LOST-1"));
	assert_int_equal(info.submits, 2);
}

/* A keep-alive connection that dies before any reply byte, after the request
 * was written: libcurl would send the request again on a fresh connection of
 * its own accord, and the transport refuses that (the WMS may have acted, as
 * here). One copy reaches the WMS, the call fails TRANSPORT/UNKNOWN like on a
 * fresh connection; resending with the same order id is the caller's choice,
 * and the WMS answers it as a duplicate. */
static void test_reply_lost_on_reused_connection(void **state)
{
	fx *f = *state;
	wms_sim_order_info info;
	wms_submit_reply r;
	wms_error err;

	assert_healthy(f, "WARM-1"); /* leaves an idle keep-alive connection */
	set_fault(f, "SubmitOrder", WMS_SIM_FAULT_REPLY_LOST, 0);
	assert_int_equal(it_submit(f->c, "LOST-2", "SKU-5", 1, NULL, &err), WMS_ERR_TRANSPORT);
	assert_int_equal(err.delivery, WMS_DELIVERY_UNKNOWN);
	assert_int_equal(err.attempts, 1);
	assert_non_null(strstr(err.message, "not resent (it may have been received)"));
	assert_true(wms_error_is_retryable(&err));
	assert_int_equal(wms_sim_requests(f->sim, "SubmitOrder"), 2);
	assert_true(wms_sim_order_get(&info, f->sim, "LOST-2"));
	assert_int_equal(info.submits, 1);
	assert_int_equal(wms_sim_order_count(f->sim), 2);

	set_fault(f, "SubmitOrder", WMS_SIM_FAULT_NONE, 0);
	assert_int_equal(it_submit(f->c, "LOST-2", "SKU-5", 1, &r, &err), WMS_OK);
	assert_int_equal(r.duplicate, 1);
	assert_string_equal(r.wms_reference, info.wms_reference);
	assert_true(wms_sim_order_get(&info, f->sim, "LOST-2"));
	assert_int_equal(info.submits, 2);
	assert_int_equal(wms_sim_order_count(f->sim), 2);
}

static void test_every_nth(void **state)
{
	static const wms_status want[] = { WMS_OK, WMS_OK, WMS_ERR_SOAP_FAULT, WMS_OK, WMS_OK,
					   WMS_ERR_SOAP_FAULT, WMS_OK };
	fx *f = *state;
	wms_status_reply r;
	wms_error err;
	size_t i;

	assert_int_equal(it_submit(f->c, "N-1", "SKU-1", 1, NULL, &err), WMS_OK);
	set_fault(f, "GetOrderStatus", WMS_SIM_FAULT_EVERY_NTH, 3);
	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		wms_status st = wms_get_order_status(&r, f->c, "N-1", &err);
		if (st != want[i])
			fail_msg("call %zu: %s, want %s", i + 1, wms_status_name(st),
				 wms_status_name(want[i]));
		if (st != WMS_OK)
			assert_string_equal(err.wms_code, "INTERNAL");
		/* Other operations are not counted towards it, nor affected. */
		assert_int_equal(it_submit(f->c, "N-1", "SKU-1", 1, NULL, &err), WMS_OK);
	}
	assert_int_equal(wms_sim_requests(f->sim, "GetOrderStatus"), 7);
}

/* A fault for one operation leaves the others alone; the operation's own
 * fault wins over the all-operations one. */
static void test_targeting(void **state)
{
	fx *f = *state;
	const char *sku[] = { "SKU-1" };
	wms_stock_reply *r = NULL;
	wms_error err;

	set_fault(f, "GetStockLevel", WMS_SIM_FAULT_HTTP_503, 0);
	assert_int_equal(wms_get_stock_level(&r, f->c, sku, 1, &err), WMS_ERR_HTTP);
	assert_healthy(f, "T-1");
	set_fault(f, NULL, WMS_SIM_FAULT_SERVER, 0);
	assert_int_equal(wms_get_stock_level(&r, f->c, sku, 1, &err), WMS_ERR_HTTP);
	assert_int_equal(it_submit(f->c, "T-2", "SKU-1", 1, NULL, &err), WMS_ERR_SOAP_FAULT);
	set_fault(f, "GetStockLevel", WMS_SIM_FAULT_NONE, 0);
	assert_int_equal(wms_get_stock_level(&r, f->c, sku, 1, &err), WMS_ERR_SOAP_FAULT);
	/* NONE for all: everything healthy again. */
	set_fault(f, "GetStockLevel", WMS_SIM_FAULT_GARBAGE, 0);
	set_fault(f, NULL, WMS_SIM_FAULT_NONE, 0);
	assert_int_equal(wms_get_stock_level(&r, f->c, sku, 1, &err), WMS_OK);
	wms_stock_reply_free(r);
	assert_healthy(f, "T-3");
}

/* ---- time: hang and slow --------------------------------------------------- */

static void test_hang_times_out(void **state)
{
	fx *f = *state;
	const uint32_t timeout = 400;
	it_client_opts o;
	wms_client *c;
	wms_error err;
	double t0, ms;

	memset(&o, 0, sizeof(o));
	o.soap_version = f->soap12 ? WMS_SOAP_12 : WMS_SOAP_11;
	o.timeout_ms = timeout;
	c = it_client(f->sim, &o);
	set_fault(f, "SubmitOrder", WMS_SIM_FAULT_HANG, 0);
	t0 = it_now_ms();
	assert_int_equal(it_submit(c, "H-1", "SKU-1", 1, NULL, &err), WMS_ERR_TIMEOUT);
	ms = it_now_ms() - t0;
	assert_int_equal(err.delivery, WMS_DELIVERY_UNKNOWN);
	if (ms < timeout - 5 || ms > timeout + 100 + it_slack_ms())
		fail_msg("hang: TIMEOUT after %.1f ms, want %u..%u ms", ms, timeout - 5,
			 timeout + 100 + it_slack_ms());
	assert_int_equal(wms_sim_requests(f->sim, "SubmitOrder"), 1);
	assert_false(wms_sim_order_get(NULL, f->sim, "H-1"));
	/* Only SubmitOrder hangs. */
	assert_int_equal(wms_get_order_status(NULL, c, "H-0", &err), WMS_ERR_SOAP_FAULT);
	assert_string_equal(err.wms_code, "UNKNOWN_ORDER");
	set_fault(f, NULL, WMS_SIM_FAULT_NONE, 0);
	assert_int_equal(it_submit(c, "H-1", "SKU-1", 1, NULL, &err), WMS_OK);
	wms_client_free(c);
}

typedef struct hung_call {
	wms_client *c;
	wms_status st;
	wms_error err;
	double ms;
} hung_call;

static void *call_in_thread(void *arg)
{
	hung_call *h = arg;
	double t0 = it_now_ms();
	h->st = it_submit(h->c, "HS-1", "SKU-1", 1, NULL, &h->err);
	h->ms = it_now_ms() - t0;
	return NULL;
}

/* Stopping the sim ends a hanging request at once (it does not wait for
 * the client to give up). */
static void test_stop_ends_hang(void **state)
{
	fx *f = *state;
	it_client_opts o;
	hung_call h;
	pthread_t t;
	double t0, stop_ms;

	memset(&o, 0, sizeof(o));
	o.timeout_ms = 10000;
	memset(&h, 0, sizeof(h));
	h.c = it_client(f->sim, &o);
	set_fault(f, NULL, WMS_SIM_FAULT_HANG, 0);
	assert_int_equal(pthread_create(&t, NULL, call_in_thread, &h), 0);
	while (wms_sim_requests(f->sim, NULL) == 0)
		it_sleep_ms(5);
	it_sleep_ms(50);
	t0 = it_now_ms();
	wms_sim_stop(f->sim);
	stop_ms = it_now_ms() - t0;
	f->sim = it_sim_start(0); /* for teardown */
	pthread_join(t, NULL);
	wms_client_free(h.c);
	/* Neither waited for the client's 10 s deadline. */
	assert_true(stop_ms < 5000.0);
	assert_true(h.ms < 5000.0);
	/* The connection was closed without a reply. */
	assert_int_equal(h.st, WMS_ERR_TRANSPORT);
	assert_int_equal(h.err.delivery, WMS_DELIVERY_UNKNOWN);
}

static void test_slow(void **state)
{
	fx *f = *state;
	const uint32_t delay = 150;
	it_client_opts o;
	wms_client *c;
	wms_submit_reply r;
	wms_error err;
	double t0, ms;

	set_fault(f, NULL, WMS_SIM_FAULT_SLOW, delay);
	t0 = it_now_ms();
	assert_int_equal(it_submit(f->c, "SL-1", "SKU-1", 1, &r, &err), WMS_OK);
	ms = it_now_ms() - t0;
	assert_true(ms >= delay);

	/* Slower than the caller waits: TIMEOUT, delivery unknown - and the
	 * WMS still commits the order once it gets to it. */
	memset(&o, 0, sizeof(o));
	o.soap_version = f->soap12 ? WMS_SOAP_12 : WMS_SOAP_11;
	o.timeout_ms = 200;
	c = it_client(f->sim, &o);
	set_fault(f, NULL, WMS_SIM_FAULT_SLOW, 600 + it_slack_ms());
	t0 = it_now_ms();
	assert_int_equal(it_submit(c, "SL-2", "SKU-1", 1, NULL, &err), WMS_ERR_TIMEOUT);
	assert_int_equal(err.delivery, WMS_DELIVERY_UNKNOWN);
	assert_false(wms_sim_order_get(NULL, f->sim, "SL-2"));
	it_sleep_until_ms(t0 + 600 + it_slack_ms() + 200);
	assert_true(wms_sim_order_get(NULL, f->sim, "SL-2"));
	set_fault(f, NULL, WMS_SIM_FAULT_NONE, 0);
	assert_int_equal(it_submit(c, "SL-2", "SKU-1", 1, &r, &err), WMS_OK);
	assert_int_equal(r.duplicate, 1);
	wms_client_free(c);
}

/* ---- refuse ---------------------------------------------------------------- */

static void test_refuse(void **state)
{
	fx *f = *state;
	uint16_t port = wms_sim_port(f->sim);
	uint64_t before;
	wms_error err;
	double t0, ms;

	/* A keep-alive connection exists: refusing closes it too. */
	assert_healthy(f, "R-0");
	before = wms_sim_requests(f->sim, NULL);
	set_fault(f, NULL, WMS_SIM_FAULT_REFUSE, 0);
	t0 = it_now_ms();
	assert_int_equal(it_submit(f->c, "R-1", "SKU-1", 1, NULL, &err), WMS_ERR_CONNECT);
	ms = it_now_ms() - t0;
	assert_int_equal(err.delivery, WMS_DELIVERY_NOT_SENT);
	/* Refused at once, not after the connect deadline. */
	assert_true(ms < (double)(1000u + it_slack_ms()));
	assert_int_equal(it_submit(f->c, "R-1", "SKU-1", 1, NULL, &err), WMS_ERR_CONNECT);
	assert_int_equal(wms_sim_requests(f->sim, NULL), before);

	/* Back, on the same port. */
	set_fault(f, NULL, WMS_SIM_FAULT_NONE, 0);
	assert_int_equal(wms_sim_port(f->sim), port);
	assert_healthy(f, "R-1");

	/* For a while only (param: milliseconds). */
	set_fault(f, NULL, WMS_SIM_FAULT_REFUSE, 300);
	t0 = it_now_ms();
	assert_int_equal(it_submit(f->c, "R-2", "SKU-1", 1, NULL, &err), WMS_ERR_CONNECT);
	it_sleep_until_ms(t0 + 300 + 200 + it_slack_ms());
	assert_healthy(f, "R-2");
	assert_int_equal(wms_sim_order_count(f->sim), 3);
}

#define BOTH(t)                                                   \
	cmocka_unit_test_setup_teardown(t, setup11, teardown), \
	cmocka_unit_test_setup_teardown(t, setup12, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		BOTH(test_fault_table),
		BOTH(test_reply_lost_then_resend),
		cmocka_unit_test_setup_teardown(test_reply_lost_on_reused_connection, setup11,
						teardown),
		cmocka_unit_test_setup_teardown(test_every_nth, setup11, teardown),
		cmocka_unit_test_setup_teardown(test_targeting, setup11, teardown),
		BOTH(test_hang_times_out),
		cmocka_unit_test_setup_teardown(test_stop_ends_hang, setup11, teardown),
		BOTH(test_slow),
		BOTH(test_refuse),
	};
	return cmocka_run_group_tests_name("integration: faults", tests, NULL, NULL);
}
