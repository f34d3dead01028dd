/* The embedded breaker against a real failing WMS: it opens after three
 * server faults, keeps every call off the wire while open (the sim's request
 * counter does not move), and after the open duration lets exactly one probe
 * through even with 8 threads calling at once. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "itest.h"

#define THRESHOLD 3u
/* 300 ms; longer under valgrind, where a few calls can take that long. */
#define OPEN_MS (300u + it_slack_ms())
#define THREADS 8

typedef struct events {
	pthread_mutex_t lock;
	wms_breaker_state from[64];
	wms_breaker_state to[64];
	int n;
} events;

typedef struct fx {
	wms_sim *sim;
	wms_client *c;
	events ev;
} fx;

static void on_change(const wms_breaker_event *e, void *ctx)
{
	events *ev = ctx;
	pthread_mutex_lock(&ev->lock);
	if (ev->n < 64) {
		ev->from[ev->n] = e->from;
		ev->to[ev->n] = e->to;
		ev->n++;
	}
	pthread_mutex_unlock(&ev->lock);
}

static wms_client *breaker_client(fx *f, uint32_t timeout_ms)
{
	it_client_opts o;
	memset(&o, 0, sizeof(o));
	o.timeout_ms = timeout_ms;
	o.failure_threshold = THRESHOLD;
	o.open_duration_ms = OPEN_MS;
	o.on_state_change = on_change;
	o.payload = &f->ev;
	return it_client(f->sim, &o);
}

static int setup(void **state)
{
	fx *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	pthread_mutex_init(&f->ev.lock, NULL);
	f->sim = it_sim_start(3600000u);
	f->c = breaker_client(f, 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fx *f = *state;
	wms_client_free(f->c);
	wms_sim_stop(f->sim);
	pthread_mutex_destroy(&f->ev.lock);
	free(f);
	return 0;
}

static wms_breaker_state state_of(fx *f)
{
	return wms_breaker_state_get(wms_client_breaker(f->c));
}

/* The transitions so far are exactly these (from, to pairs). */
static void assert_transitions(fx *f, const wms_breaker_state *pairs, int n)
{
	int i;
	pthread_mutex_lock(&f->ev.lock);
	if (f->ev.n != n) {
		int got = f->ev.n;
		pthread_mutex_unlock(&f->ev.lock);
		fail_msg("%d transitions, want %d", got, n);
	}
	for (i = 0; i < n; i++)
		if (f->ev.from[i] != pairs[2 * i] || f->ev.to[i] != pairs[2 * i + 1]) {
			pthread_mutex_unlock(&f->ev.lock);
			fail_msg("transition %d: %s -> %s, want %s -> %s", i,
				 wms_breaker_state_name(f->ev.from[i]),
				 wms_breaker_state_name(f->ev.to[i]),
				 wms_breaker_state_name(pairs[2 * i]),
				 wms_breaker_state_name(pairs[2 * i + 1]));
		}
	pthread_mutex_unlock(&f->ev.lock);
}

static void set_fault(fx *f, wms_sim_fault kind, uint32_t param)
{
	if (wms_sim_set_fault(f->sim, NULL, kind, param) != WMS_SIM_OK)
		fail_msg("wms_sim_set_fault: %s", wms_sim_last_error());
}

/* Three server faults: OPEN at the third, not before. Returns when it opened. */
static double trip(fx *f, const char *prefix)
{
	char id[64];
	wms_error err;
	unsigned i;
	set_fault(f, WMS_SIM_FAULT_SERVER, 0);
	for (i = 0; i < THRESHOLD; i++) {
		assert_int_equal(state_of(f), WMS_BREAKER_STATE_CLOSED);
		snprintf(id, sizeof(id), "%s-%u", prefix, i);
		assert_int_equal(it_submit(f->c, id, "SKU-1", 1, NULL, &err), WMS_ERR_SOAP_FAULT);
		assert_string_equal(err.fault_code, "Server");
	}
	assert_int_equal(state_of(f), WMS_BREAKER_STATE_OPEN);
	return it_now_ms();
}

/* While OPEN nothing reaches the WMS, whatever the operation. */
static void assert_rejected_quietly(fx *f)
{
	const char *sku[] = { "SKU-1" };
	uint64_t before = wms_sim_requests(f->sim, NULL);
	wms_stock_reply *r = NULL;
	wms_error err;
	int i;

	for (i = 0; i < 5; i++) {
		assert_int_equal(it_submit(f->c, "OPEN-1", "SKU-1", 1, NULL, &err),
				 WMS_ERR_CIRCUIT_OPEN);
		assert_int_equal(err.delivery, WMS_DELIVERY_NOT_SENT);
		assert_true(err.retry_after_ms > 0 && err.retry_after_ms <= OPEN_MS);
		assert_true(wms_error_is_retryable(&err));
	}
	assert_int_equal(wms_get_order_status(NULL, f->c, "OPEN-1", &err), WMS_ERR_CIRCUIT_OPEN);
	assert_int_equal(wms_cancel_order(NULL, f->c, "OPEN-1", NULL, &err), WMS_ERR_CIRCUIT_OPEN);
	assert_int_equal(wms_get_stock_level(&r, f->c, sku, 1, &err), WMS_ERR_CIRCUIT_OPEN);
	assert_null(r);
	assert_int_equal(wms_sim_requests(f->sim, NULL), before);
}

/* 8 threads, released together, each makes one call. */
typedef struct caller {
	fx *f;
	pthread_barrier_t *go;
	int index;
	wms_status st;
	wms_error err;
} caller;

static void *call_once(void *arg)
{
	caller *c = arg;
	char id[64];
	snprintf(id, sizeof(id), "PROBE-%d", c->index);
	pthread_barrier_wait(c->go);
	c->st = it_submit(c->f->c, id, "SKU-1", 1, NULL, &c->err);
	return NULL;
}

/* Returns how many calls ended with `st`. */
static int storm(fx *f, caller *calls, wms_status st)
{
	pthread_barrier_t go;
	pthread_t t[THREADS];
	int i, n = 0;

	assert_int_equal(pthread_barrier_init(&go, NULL, THREADS), 0);
	for (i = 0; i < THREADS; i++) {
		calls[i].f = f;
		calls[i].go = &go;
		calls[i].index = i;
		assert_int_equal(pthread_create(&t[i], NULL, call_once, &calls[i]), 0);
	}
	for (i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&go);
	for (i = 0; i < THREADS; i++)
		n += calls[i].st == st;
	return n;
}

static void test_open_then_one_probe_closes(void **state)
{
	static const wms_breaker_state want[] = {
		WMS_BREAKER_STATE_CLOSED, WMS_BREAKER_STATE_OPEN,
		WMS_BREAKER_STATE_OPEN, WMS_BREAKER_STATE_HALF_OPEN,
		WMS_BREAKER_STATE_HALF_OPEN, WMS_BREAKER_STATE_CLOSED,
	};
	fx *f = *state;
	caller calls[THREADS];
	double opened;
	int i;

	opened = trip(f, "TRIP");
	assert_int_equal(wms_sim_requests(f->sim, NULL), THRESHOLD);
	assert_transitions(f, want, 1);
	assert_rejected_quietly(f);
	assert_int_equal(wms_sim_requests(f->sim, NULL), THRESHOLD);

	/* The WMS is back but slow, so the probe is still in flight while the
	 * other seven ask. */
	set_fault(f, WMS_SIM_FAULT_SLOW, 300 + it_slack_ms());
	it_sleep_until_ms(opened + OPEN_MS + 20);
	memset(calls, 0, sizeof(calls));
	assert_int_equal(storm(f, calls, WMS_OK), 1);
	for (i = 0; i < THREADS; i++)
		if (calls[i].st != WMS_OK) {
			assert_int_equal(calls[i].st, WMS_ERR_CIRCUIT_OPEN);
			assert_int_equal(calls[i].err.delivery, WMS_DELIVERY_NOT_SENT);
		}
	assert_int_equal(wms_sim_requests(f->sim, NULL), THRESHOLD + 1);
	assert_int_equal(wms_sim_order_count(f->sim), 1);
	assert_int_equal(state_of(f), WMS_BREAKER_STATE_CLOSED);
	assert_transitions(f, want, 3);
}

static void test_failed_probe_reopens(void **state)
{
	static const wms_breaker_state want[] = {
		WMS_BREAKER_STATE_CLOSED, WMS_BREAKER_STATE_OPEN,
		WMS_BREAKER_STATE_OPEN, WMS_BREAKER_STATE_HALF_OPEN,
		WMS_BREAKER_STATE_HALF_OPEN, WMS_BREAKER_STATE_OPEN,
		WMS_BREAKER_STATE_OPEN, WMS_BREAKER_STATE_HALF_OPEN,
		WMS_BREAKER_STATE_HALF_OPEN, WMS_BREAKER_STATE_CLOSED,
	};
	fx *f = *state;
	caller calls[THREADS];
	wms_error err;
	double opened;

	opened = trip(f, "TRIP");
	it_sleep_until_ms(opened + OPEN_MS + 20);
	/* Still failing: one probe reaches the WMS, fails, and it is OPEN again. */
	memset(calls, 0, sizeof(calls));
	assert_int_equal(storm(f, calls, WMS_ERR_SOAP_FAULT), 1);
	assert_int_equal(storm(f, calls, WMS_ERR_CIRCUIT_OPEN), THREADS);
	assert_int_equal(wms_sim_requests(f->sim, NULL), THRESHOLD + 1);
	assert_int_equal(state_of(f), WMS_BREAKER_STATE_OPEN);
	assert_transitions(f, want, 3);
	opened = it_now_ms();
	assert_rejected_quietly(f);

	/* Healed: the next probe closes it. */
	set_fault(f, WMS_SIM_FAULT_NONE, 0);
	it_sleep_until_ms(opened + OPEN_MS + 20);
	assert_int_equal(it_submit(f->c, "HEALED", "SKU-1", 1, NULL, &err), WMS_OK);
	assert_int_equal(state_of(f), WMS_BREAKER_STATE_CLOSED);
	assert_transitions(f, want, 5);
	assert_int_equal(wms_sim_requests(f->sim, NULL), THRESHOLD + 2);
}

/* Timeouts, refused connections and HTML error pages count as failures
 * too; Client faults do not. */
static void test_what_counts(void **state)
{
	static const wms_breaker_state want[] = {
		WMS_BREAKER_STATE_CLOSED, WMS_BREAKER_STATE_OPEN,
		WMS_BREAKER_STATE_OPEN, WMS_BREAKER_STATE_HALF_OPEN,
		WMS_BREAKER_STATE_HALF_OPEN, WMS_BREAKER_STATE_OPEN,
		WMS_BREAKER_STATE_OPEN, WMS_BREAKER_STATE_HALF_OPEN,
		WMS_BREAKER_STATE_HALF_OPEN, WMS_BREAKER_STATE_OPEN,
	};
	fx *f = *state;
	wms_client *c;
	wms_error err;
	double opened;
	int i;

	/* Client faults: the WMS is fine, the requests were not. */
	set_fault(f, WMS_SIM_FAULT_CLIENT, 0);
	for (i = 0; i < 5; i++)
		assert_int_equal(it_submit(f->c, "CF-1", "SKU-1", 1, NULL, &err), WMS_ERR_SOAP_FAULT);
	assert_int_equal(state_of(f), WMS_BREAKER_STATE_CLOSED);
	assert_int_equal(wms_sim_requests(f->sim, NULL), 5);

	/* Hangs: three timeouts open it. */
	wms_client_free(f->c);
	f->c = c = breaker_client(f, 150 + it_slack_ms());
	set_fault(f, WMS_SIM_FAULT_HANG, 0);
	for (i = 0; i < 3; i++)
		assert_int_equal(it_submit(c, "HG-1", "SKU-1", 1, NULL, &err), WMS_ERR_TIMEOUT);
	opened = it_now_ms();
	assert_int_equal(state_of(f), WMS_BREAKER_STATE_OPEN);
	assert_int_equal(wms_sim_requests(f->sim, NULL), 8);

	/* Refused: the probe fails, OPEN again, and nothing was received. */
	set_fault(f, WMS_SIM_FAULT_REFUSE, 0);
	it_sleep_until_ms(opened + OPEN_MS + 20);
	assert_int_equal(it_submit(c, "RF-1", "SKU-1", 1, NULL, &err), WMS_ERR_CONNECT);
	opened = it_now_ms();
	assert_int_equal(state_of(f), WMS_BREAKER_STATE_OPEN);

	/* An HTML 503 page from a proxy: a failure as well. */
	set_fault(f, WMS_SIM_FAULT_HTTP_503, 0);
	it_sleep_until_ms(opened + OPEN_MS + 20);
	assert_int_equal(it_submit(c, "PX-1", "SKU-1", 1, NULL, &err), WMS_ERR_HTTP);
	assert_int_equal(state_of(f), WMS_BREAKER_STATE_OPEN);
	assert_transitions(f, want, 5);
	assert_int_equal(wms_sim_requests(f->sim, NULL), 9);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_open_then_one_probe_closes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_failed_probe_reopens, setup, teardown),
		cmocka_unit_test_setup_teardown(test_what_counts, setup, teardown),
	};
	return cmocka_run_group_tests_name("integration: breaker", tests, NULL, NULL);
}
