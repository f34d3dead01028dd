/* Issue 16 item 6: 1 000 calls in flight from one thread, through the
 * asynchronous API, while the sim's faults switch under them (healthy,
 * hang, reply-lost, refuse, slow, 503, reset). The loop acts on the
 * delivery verdict only: NOT_SENT (refused, breaker open) -> submit again
 * after retry_after; UNKNOWN or an answer that is no confirmation ->
 * submit again with the same order id (SubmitOrder is idempotent on it).
 * Checked: every start completes exactly once (no lost completion, no
 * second one), every order ends confirmed, and the sim holds each exactly
 * once, its stock reserved once. N: 1 000 (300 under valgrind,
 * WMS_ASYNC_FLAP_ORDERS overrides). Hard stop at 90 s: a failure. */
#include <inttypes.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <cmocka.h>
#include "stress.h"

#define HARD_STOP_MS 90000.0
#define SKUS 20

typedef struct flap flap;

typedef struct rec {
	flap *fl;
	st_order o;
	int outstanding; /* started, not completed */
	int confirmed;
	unsigned starts, completions;
	double due; /* resubmit no earlier than this; 0: not waiting */
} rec;

struct flap {
	size_t n;
	rec *r;
	wms_async *a;
	wms_sim *sim;
	size_t confirmed, waiting;
	unsigned long by_status[WMS_ERR_CANCELLED + 1];
	unsigned long not_sent, unknown, answered;
	unsigned bugs;
	char bug[256];
	atomic_int done;
	unsigned phases[WMS_SIM_FAULT_COUNT];
	uint32_t phase_ms;
};

static void bug(flap *fl, const char *fmt, ...)
{
	va_list ap;
	if (fl->bugs++)
		return;
	va_start(ap, fmt);
	vsnprintf(fl->bug, sizeof(fl->bug), fmt, ap);
	va_end(ap);
}

static void on_done(wms_status st, const wms_submit_reply *reply, const wms_error *err, void *p);

static void start(rec *r)
{
	flap *fl = r->fl;
	r->starts++;
	r->outstanding = 1;
	if (wms_async_submit_order(NULL, fl->a, &r->o.order, on_done, r) != WMS_OK)
		bug(fl, "start %s refused", r->o.id);
}

static void on_done(wms_status st, const wms_submit_reply *reply, const wms_error *err, void *p)
{
	rec *r = p;
	flap *fl = r->fl;
	r->completions++;
	if (!r->outstanding) {
		bug(fl, "%s completed twice", r->o.id);
		return;
	}
	r->outstanding = 0;
	if ((unsigned)st <= WMS_ERR_CANCELLED)
		fl->by_status[st]++;
	if (st == WMS_OK) {
		if (!reply || strcmp(reply->order_id, r->o.id) != 0)
			bug(fl, "%s confirmed with another order's reply", r->o.id);
		r->confirmed = 1;
		fl->confirmed++;
		return;
	}
	if (st == WMS_ERR_SOAP_FAULT && (!strcmp(err->fault_code, "Client") ||
					 !strcmp(err->fault_code, "Sender"))) {
		bug(fl, "%s rejected: %s", r->o.id, err->message);
		return;
	}
	if (st == WMS_ERR_INVALID_ARG || st == WMS_ERR_INTERNAL || st == WMS_ERR_NOMEM ||
	    st == WMS_ERR_CANCELLED) {
		bug(fl, "%s: %s: %s", r->o.id, wms_status_name(st), err->message);
		return;
	}
	switch (err->delivery) {
	case WMS_DELIVERY_NOT_SENT:
		fl->not_sent++;
		break;
	case WMS_DELIVERY_UNKNOWN:
		fl->unknown++;
		break;
	case WMS_DELIVERY_ANSWERED:
		fl->answered++;
		break;
	}
	/* the same order id again, after the hint (or a short pause) */
	r->due = st_now_ms() + (err->retry_after_ms ? err->retry_after_ms : 20u);
	fl->waiting++;
}

/* The sim's faults switch until the loop is done, then it heals. */
static void *flapper_main(void *arg)
{
	static const wms_sim_fault cycle[] = {
		/* the first is set before any call starts (see below) */
		WMS_SIM_FAULT_REPLY_LOST, WMS_SIM_FAULT_NONE,     WMS_SIM_FAULT_HANG,
		WMS_SIM_FAULT_NONE,       WMS_SIM_FAULT_REFUSE,   WMS_SIM_FAULT_NONE,
		WMS_SIM_FAULT_SLOW,       WMS_SIM_FAULT_HTTP_503, WMS_SIM_FAULT_NONE,
		WMS_SIM_FAULT_RESET,      WMS_SIM_FAULT_NONE,
	};
	flap *fl = arg;
	unsigned k;
	for (k = 0; !atomic_load(&fl->done); k++) {
		wms_sim_fault f = cycle[k % (sizeof(cycle) / sizeof(cycle[0]))];
		double until = st_now_ms() + fl->phase_ms;
		/* refuse stops the listener: for every operation */
		if (k > 0 &&
		    wms_sim_set_fault(fl->sim, f == WMS_SIM_FAULT_REFUSE ? NULL : "SubmitOrder", f,
				      f == WMS_SIM_FAULT_SLOW ? 30 : 0) == WMS_SIM_OK)
			fl->phases[f]++;
		if (f == WMS_SIM_FAULT_NONE)
			wms_sim_clear_faults(fl->sim);
		/* the first phase lasts until a tenth of the orders have met it,
		 * however slowly the sim's threads start */
		while (!atomic_load(&fl->done) &&
		       (st_now_ms() < until ||
			(k == 0 && wms_sim_requests(fl->sim, "SubmitOrder") < fl->n / 10)))
			st_sleep_ms(2);
	}
	wms_sim_clear_faults(fl->sim);
	return NULL;
}

static void thousand_in_flight_while_faults_switch(void **state)
{
	wms_client_options co = WMS_CLIENT_OPTIONS_INIT;
	wms_client *c = NULL;
	wms_error err;
	flap fl;
	pthread_t flapper;
	st_kind kind = st_build_kind();
	double t0, hard;
	size_t i, j;
	int64_t reserved = 0;
	unsigned long starts = 0, completions = 0;
	struct rlimit rl;

	(void)state;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max > 65536 ? 65536 : rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	memset(&fl, 0, sizeof(fl));
	fl.n = st_env_ulong("WMS_ASYNC_FLAP_ORDERS", kind == ST_VALGRIND ? 300 : 1000);
	fl.phase_ms = kind == ST_VALGRIND ? 400 : kind == ST_PLAIN ? 100 : 200;
	fl.r = calloc(fl.n, sizeof(*fl.r));
	assert_non_null(fl.r);
	fl.sim = st_sim_start(1000000000);
	co.endpoint = wms_sim_url(fl.sim);
	co.timeout_ms = kind == ST_VALGRIND ? 8000 : kind == ST_PLAIN ? 1500 : 3000;
	co.connect_timeout_ms = co.timeout_ms;
	co.breaker_options.failure_threshold = 20;
	co.breaker_options.open_duration_ms = 50;
	if (wms_client_new(&c, &co, &err) != WMS_OK)
		fail_msg("wms_client_new: %s", err.message);
	if (wms_async_new(&fl.a, c, NULL, &err) != WMS_OK)
		fail_msg("wms_async_new: %s", err.message);
	for (i = 0; i < fl.n; i++) {
		char id[32];
		snprintf(id, sizeof(id), "AF-%zu", i);
		fl.r[i].fl = &fl;
		st_order_init(&fl.r[i].o, id, (unsigned)(i % SKUS) + 1, 1);
	}
	/* the first calls meet a fault whatever the timing: their orders are
	 * stored, their replies lost, so they are sent again */
	st_sim_fault(fl.sim, WMS_SIM_FAULT_REPLY_LOST);
	fl.phases[WMS_SIM_FAULT_REPLY_LOST]++;
	assert_int_equal(pthread_create(&flapper, NULL, flapper_main, &fl), 0);
	t0 = st_now_ms();
	hard = t0 + HARD_STOP_MS;
	for (i = 0; i < fl.n; i++)
		start(&fl.r[i]);
	print_message("async flap: %s build, %zu orders started from one thread, %zu in flight\n",
		      st_kind_name(kind), fl.n, wms_async_in_flight(fl.a));
	while (fl.confirmed < fl.n && !fl.bugs && st_now_ms() < hard) {
		double now;
		assert_int_equal(wms_async_poll(fl.a, 10), WMS_OK);
		if (!fl.waiting)
			continue;
		now = st_now_ms();
		for (i = 0; i < fl.n; i++) {
			rec *r = &fl.r[i];
			if (r->due != 0.0 && r->due <= now) {
				r->due = 0.0;
				fl.waiting--;
				start(r);
			}
		}
	}
	atomic_store(&fl.done, 1);
	pthread_join(flapper, NULL);
	assert_int_equal(wms_async_run(fl.a, 30000), WMS_OK);
	if (fl.bugs)
		fail_msg("%u bugs, first: %s", fl.bugs, fl.bug);
	for (i = 0; i < fl.n; i++) {
		starts += fl.r[i].starts;
		completions += fl.r[i].completions;
		if (!fl.r[i].confirmed)
			fail_msg("%s never confirmed (%u starts)", fl.r[i].o.id, fl.r[i].starts);
		assert_int_equal(fl.r[i].starts, fl.r[i].completions);
	}
	print_message("async flap: %zu confirmed in %.1f s; %lu starts, %lu completions; "
		      "not sent %lu, unknown %lu, answered (no confirmation) %lu; "
		      "CIRCUIT_OPEN %lu, TIMEOUT %lu, TRANSPORT %lu, CONNECT %lu, HTTP %lu\n",
		      fl.confirmed, (st_now_ms() - t0) / 1000.0, starts, completions, fl.not_sent,
		      fl.unknown, fl.answered, fl.by_status[WMS_ERR_CIRCUIT_OPEN],
		      fl.by_status[WMS_ERR_TIMEOUT], fl.by_status[WMS_ERR_TRANSPORT],
		      fl.by_status[WMS_ERR_CONNECT], fl.by_status[WMS_ERR_HTTP]);
	print_message("async flap: phases: hang %u, reply-lost %u, refuse %u, slow %u, 503 %u, "
		      "reset %u\n",
		      fl.phases[WMS_SIM_FAULT_HANG], fl.phases[WMS_SIM_FAULT_REPLY_LOST],
		      fl.phases[WMS_SIM_FAULT_REFUSE], fl.phases[WMS_SIM_FAULT_SLOW],
		      fl.phases[WMS_SIM_FAULT_HTTP_503], fl.phases[WMS_SIM_FAULT_RESET]);
	/* the store: each order once, stock reserved once per order */
	assert_int_equal(wms_sim_order_count(fl.sim), fl.n);
	for (j = 1; j <= SKUS; j++) {
		wms_sim_stock k;
		char sku[16];
		snprintf(sku, sizeof(sku), "SKU-%zu", j);
		assert_true(wms_sim_stock_get(&k, fl.sim, sku));
		reserved += k.reserved;
	}
	assert_int_equal(reserved, (int64_t)fl.n);
	/* the run met faults: something had to be resubmitted */
	assert_true(starts > fl.n);
	assert_int_equal(wms_async_in_flight(fl.a), 0);
	wms_async_free(fl.a);
	wms_client_free(c);
	wms_sim_stop(fl.sim);
	free(fl.r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(thousand_in_flight_while_faults_switch),
	};
	return cmocka_run_group_tests_name("async: 1000 in flight, faults switching", tests, NULL,
					   NULL);
}
