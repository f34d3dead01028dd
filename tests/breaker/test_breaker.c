/* The breaker on its own, driven by a fake clock: every transition. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "wms/breaker.h"
#include "bounds.h"

#define MS 1000000ull

typedef struct fake_clock {
	uint64_t now;
} fake_clock;

typedef struct events {
	int n;
	wms_breaker_state from[32], to[32];
	uint64_t at[32];
} events;

typedef struct fx {
	fake_clock clock;
	events ev;
	wms_breaker *b;
} fx;

/* both callbacks are given the fixture (one payload) */
static uint64_t fake_now(void *payload)
{
	return ((fx *)payload)->clock.now;
}

static void on_event(const wms_breaker_event *ev, void *payload)
{
	events *e = &((fx *)payload)->ev;
	if (e->n < 32) {
		e->from[e->n] = ev->from;
		e->to[e->n] = ev->to;
		e->at[e->n] = ev->time_ns;
	}
	e->n++;
	assert_non_null(ev->reason);
	assert_string_equal(ev->name, "test");
}

static fx *fx_new(wms_breaker_options *o)
{
	fx *f = test_calloc(1, sizeof(*f));
	f->clock.now = 1000 * MS;
	o->callbacks.clock = fake_now;
	o->callbacks.on_state_change = on_event;
	o->callbacks.payload = f;
	o->name = "test";
	assert_int_equal(wms_breaker_new(&f->b, o), WMS_OK);
	return f;
}

static void fx_free(fx *f)
{
	wms_breaker_free(f->b);
	test_free(f);
}

/* One call: acquire, then record `outcome` if permitted. Returns the acquire status. */
static wms_status call(fx *f, wms_outcome outcome)
{
	wms_breaker_permit p;
	wms_status st = wms_breaker_acquire(&p, f->b, NULL);
	if (st == WMS_OK)
		wms_breaker_record(f->b, &p, outcome);
	return st;
}

static void consecutive_opens_at_threshold(void **state)
{
	wms_breaker_options o = WMS_BREAKER_OPTIONS_INIT;
	fx *f = fx_new(&o);
	int i;
	(void)state;
	for (i = 0; i < 4; i++)
		assert_int_equal(call(f, WMS_OUTCOME_FAILURE), WMS_OK);
	assert_int_equal(wms_breaker_state_get(f->b), WMS_BREAKER_STATE_CLOSED);
	assert_int_equal(f->ev.n, 0);
	assert_int_equal(call(f, WMS_OUTCOME_FAILURE), WMS_OK);
	assert_int_equal(wms_breaker_state_get(f->b), WMS_BREAKER_STATE_OPEN);
	assert_int_equal(f->ev.n, 1);
	assert_int_equal(f->ev.from[0], WMS_BREAKER_STATE_CLOSED);
	assert_int_equal(f->ev.to[0], WMS_BREAKER_STATE_OPEN);
	assert_int_equal(f->ev.at[0], 1000 * MS);
	fx_free(f);
}

static void success_resets_consecutive_count(void **state)
{
	wms_breaker_options o = WMS_BREAKER_OPTIONS_INIT;
	fx *f;
	int i;
	(void)state;
	o.failure_threshold = 3;
	f = fx_new(&o);
	for (i = 0; i < 10; i++) {
		call(f, WMS_OUTCOME_FAILURE);
		call(f, WMS_OUTCOME_FAILURE);
		call(f, WMS_OUTCOME_SUCCESS);
	}
	assert_int_equal(wms_breaker_state_get(f->b), WMS_BREAKER_STATE_CLOSED);
	/* ignored outcomes neither count nor reset */
	call(f, WMS_OUTCOME_FAILURE);
	call(f, WMS_OUTCOME_IGNORED);
	call(f, WMS_OUTCOME_FAILURE);
	assert_int_equal(wms_breaker_state_get(f->b), WMS_BREAKER_STATE_CLOSED);
	call(f, WMS_OUTCOME_FAILURE);
	assert_int_equal(wms_breaker_state_get(f->b), WMS_BREAKER_STATE_OPEN);
	fx_free(f);
}

static void open_rejects_with_retry_after(void **state)
{
	wms_breaker_options o = WMS_BREAKER_OPTIONS_INIT;
	wms_breaker_permit p;
	wms_breaker_snapshot s;
	uint32_t retry = 0;
	fx *f;
	(void)state;
	o.failure_threshold = 1;
	o.open_duration_ms = 30000;
	f = fx_new(&o);
	call(f, WMS_OUTCOME_FAILURE);
	assert_int_equal(wms_breaker_acquire(&p, f->b, &retry), WMS_ERR_CIRCUIT_OPEN);
	assert_int_equal(retry, 30000);
	f->clock.now += 12345 * MS + 1;
	assert_int_equal(wms_breaker_acquire(&p, f->b, &retry), WMS_ERR_CIRCUIT_OPEN);
	assert_int_equal(retry, 17655); /* rounded up: never says "now" too early */
	wms_breaker_snapshot_get(&s, f->b);
	assert_int_equal(s.state, WMS_BREAKER_STATE_OPEN);
	assert_int_equal(s.rejected, 2);
	assert_int_equal(s.permitted, 1);
	assert_int_equal(s.failures, 1);
	assert_int_equal(s.retry_after_ms, 17655);
	fx_free(f);
}

static void exactly_one_probe_at_open_duration(void **state)
{
	wms_breaker_options o = WMS_BREAKER_OPTIONS_INIT;
	wms_breaker_permit probe, other;
	uint32_t retry = 99;
	fx *f;
	(void)state;
	o.failure_threshold = 2;
	o.open_duration_ms = 5000;
	f = fx_new(&o);
	call(f, WMS_OUTCOME_FAILURE);
	call(f, WMS_OUTCOME_FAILURE);
	f->clock.now += 5000 * MS - 1;
	assert_int_equal(wms_breaker_acquire(&probe, f->b, &retry), WMS_ERR_CIRCUIT_OPEN);
	assert_int_equal(retry, 1);
	f->clock.now += 1; /* exactly open_duration_ms: let through */
	assert_int_equal(wms_breaker_acquire(&probe, f->b, &retry), WMS_OK);
	assert_int_equal(wms_breaker_state_get(f->b), WMS_BREAKER_STATE_HALF_OPEN);
	assert_int_equal(wms_breaker_acquire(&other, f->b, &retry), WMS_ERR_CIRCUIT_OPEN);
	assert_int_equal(retry, 0);
	wms_breaker_record(f->b, &probe, WMS_OUTCOME_SUCCESS);
	assert_int_equal(wms_breaker_state_get(f->b), WMS_BREAKER_STATE_CLOSED);
	assert_int_equal(f->ev.n, 3);
	assert_int_equal(f->ev.to[1], WMS_BREAKER_STATE_HALF_OPEN);
	assert_int_equal(f->ev.to[2], WMS_BREAKER_STATE_CLOSED);
	/* closed again: the count starts from zero */
	call(f, WMS_OUTCOME_FAILURE);
	assert_int_equal(wms_breaker_state_get(f->b), WMS_BREAKER_STATE_CLOSED);
	fx_free(f);
}

static void failed_probe_reopens_for_full_duration(void **state)
{
	wms_breaker_options o = WMS_BREAKER_OPTIONS_INIT;
	wms_breaker_permit probe;
	uint32_t retry;
	fx *f;
	(void)state;
	o.failure_threshold = 1;
	o.open_duration_ms = 1000;
	f = fx_new(&o);
	call(f, WMS_OUTCOME_FAILURE);
	f->clock.now += 1000 * MS;
	assert_int_equal(wms_breaker_acquire(&probe, f->b, NULL), WMS_OK);
	f->clock.now += 400 * MS; /* the probe takes 400 ms */
	wms_breaker_record(f->b, &probe, WMS_OUTCOME_FAILURE);
	assert_int_equal(wms_breaker_state_get(f->b), WMS_BREAKER_STATE_OPEN);
	assert_int_equal(wms_breaker_acquire(&probe, f->b, &retry), WMS_ERR_CIRCUIT_OPEN);
	assert_int_equal(retry, 1000); /* from the probe's end, not its start */
	assert_int_equal(f->ev.n, 3);
	assert_int_equal(f->ev.from[2], WMS_BREAKER_STATE_HALF_OPEN);
	assert_int_equal(f->ev.to[2], WMS_BREAKER_STATE_OPEN);
	fx_free(f);
}

static void ignored_probe_frees_the_slot(void **state)
{
	wms_breaker_options o = WMS_BREAKER_OPTIONS_INIT;
	wms_breaker_permit probe, next;
	fx *f;
	(void)state;
	o.failure_threshold = 1;
	o.open_duration_ms = 1000;
	f = fx_new(&o);
	call(f, WMS_OUTCOME_FAILURE);
	f->clock.now += 1000 * MS;
	assert_int_equal(wms_breaker_acquire(&probe, f->b, NULL), WMS_OK);
	wms_breaker_record(f->b, &probe, WMS_OUTCOME_IGNORED);
	assert_int_equal(wms_breaker_state_get(f->b), WMS_BREAKER_STATE_HALF_OPEN);
	assert_int_equal(wms_breaker_acquire(&next, f->b, NULL), WMS_OK);
	/* release (the call was never made) frees it too */
	wms_breaker_release(f->b, &next);
	assert_int_equal(wms_breaker_acquire(&next, f->b, NULL), WMS_OK);
	wms_breaker_record(f->b, &next, WMS_OUTCOME_SUCCESS);
	assert_int_equal(wms_breaker_state_get(f->b), WMS_BREAKER_STATE_CLOSED);
	fx_free(f);
}

static void stale_permit_decides_nothing(void **state)
{
	wms_breaker_options o = WMS_BREAKER_OPTIONS_INIT;
	wms_breaker_permit slow_call, probe;
	fx *f;
	(void)state;
	o.failure_threshold = 1;
	o.open_duration_ms = 1000;
	f = fx_new(&o);
	assert_int_equal(wms_breaker_acquire(&slow_call, f->b, NULL), WMS_OK);
	call(f, WMS_OUTCOME_FAILURE); /* opens */
	f->clock.now += 1000 * MS;
	assert_int_equal(wms_breaker_acquire(&probe, f->b, NULL), WMS_OK);
	/* the call granted while CLOSED finishes now: it must not close the breaker */
	wms_breaker_record(f->b, &slow_call, WMS_OUTCOME_SUCCESS);
	assert_int_equal(wms_breaker_state_get(f->b), WMS_BREAKER_STATE_HALF_OPEN);
	wms_breaker_record(f->b, &probe, WMS_OUTCOME_FAILURE);
	assert_int_equal(wms_breaker_state_get(f->b), WMS_BREAKER_STATE_OPEN);
	fx_free(f);
}

/* Calls granted before an outage finish after the breaker has closed again:
 * their failures (and successes) must not count in the new CLOSED state's
 * run of consecutive failures. */
static void stale_permit_does_not_count_after_closing(void **state)
{
	wms_breaker_options o = WMS_BREAKER_OPTIONS_INIT;
	wms_breaker_permit late_fail, late_ok, probe;
	wms_breaker_snapshot snap;
	fx *f;
	(void)state;
	o.failure_threshold = 2;
	o.open_duration_ms = 1000;
	f = fx_new(&o);
	assert_int_equal(wms_breaker_acquire(&late_fail, f->b, NULL), WMS_OK);
	assert_int_equal(wms_breaker_acquire(&late_ok, f->b, NULL), WMS_OK);
	call(f, WMS_OUTCOME_FAILURE);
	call(f, WMS_OUTCOME_FAILURE); /* opens */
	f->clock.now += 1000 * MS;
	assert_int_equal(wms_breaker_acquire(&probe, f->b, NULL), WMS_OK);
	wms_breaker_record(f->b, &probe, WMS_OUTCOME_SUCCESS);
	assert_int_equal(wms_breaker_state_get(f->b), WMS_BREAKER_STATE_CLOSED);
	/* the late failure arrives, then one new failure: 1 of 2, still CLOSED */
	wms_breaker_record(f->b, &late_fail, WMS_OUTCOME_FAILURE);
	call(f, WMS_OUTCOME_FAILURE);
	assert_int_equal(wms_breaker_state_get(f->b), WMS_BREAKER_STATE_CLOSED);
	/* a late success does not wipe the new run either: the next failure opens */
	wms_breaker_record(f->b, &late_ok, WMS_OUTCOME_SUCCESS);
	call(f, WMS_OUTCOME_FAILURE);
	assert_int_equal(wms_breaker_state_get(f->b), WMS_BREAKER_STATE_OPEN);
	/* both late outcomes still show in the counters */
	wms_breaker_snapshot_get(&snap, f->b);
	assert_int_equal(snap.failures, 5);
	assert_int_equal(snap.successes, 2);
	fx_free(f);
}

/* A trial granted late in a half-open round (into a slot an IGNORED trial
 * freed) gets its full max_wait_in_half_open_ms too: it is not written off
 * with the round's first trial. */
static void late_trial_gets_its_full_wait(void **state)
{
	wms_breaker_options o = WMS_BREAKER_OPTIONS_INIT;
	wms_breaker_permit p1, p2, other;
	fx *f;
	(void)state;
	o.failure_threshold = 1;
	o.open_duration_ms = 1000;
	o.max_wait_in_half_open_ms = 60000;
	f = fx_new(&o);
	call(f, WMS_OUTCOME_FAILURE);
	f->clock.now += 1000 * MS;
	assert_int_equal(wms_breaker_acquire(&p1, f->b, NULL), WMS_OK);
	f->clock.now += 59999 * MS;
	wms_breaker_record(f->b, &p1, WMS_OUTCOME_IGNORED);
	assert_int_equal(wms_breaker_acquire(&p2, f->b, NULL), WMS_OK);
	f->clock.now += 59999 * MS; /* p2 has run 59.999 s: still waited for */
	assert_int_equal(wms_breaker_acquire(&other, f->b, NULL), WMS_ERR_CIRCUIT_OPEN);
	assert_int_equal(wms_breaker_state_get(f->b), WMS_BREAKER_STATE_HALF_OPEN);
	wms_breaker_record(f->b, &p2, WMS_OUTCOME_SUCCESS);
	assert_int_equal(wms_breaker_state_get(f->b), WMS_BREAKER_STATE_CLOSED);
	fx_free(f);
}

/* force_closed on a breaker that is CLOSED already starts afresh too: the
 * run of failures (consecutive) and the window (count_based) are cleared. */
static void force_closed_when_closed_clears(void **state)
{
	static const wms_breaker_mode modes[] = { WMS_BREAKER_MODE_CONSECUTIVE,
						  WMS_BREAKER_MODE_COUNT_BASED };
	(void)state;
	for (size_t m = 0; m < 2; m++) {
		wms_breaker_options o = WMS_BREAKER_OPTIONS_INIT;
		wms_breaker_snapshot snap;
		fx *f;
		int i;
		o.mode = modes[m];
		o.failure_threshold = 5;
		o.sliding_window_size = 10;
		o.minimum_number_of_calls = 5;
		f = fx_new(&o);
		for (i = 0; i < 4; i++)
			call(f, WMS_OUTCOME_FAILURE);
		wms_breaker_force_closed(f->b);
		wms_breaker_snapshot_get(&snap, f->b);
		assert_int_equal(snap.consecutive_failures, 0);
		assert_int_equal(snap.window_calls, 0);
		assert_int_equal(f->ev.n, 0); /* no change of state, no event */
		call(f, WMS_OUTCOME_FAILURE);
		assert_int_equal(wms_breaker_state_get(f->b), WMS_BREAKER_STATE_CLOSED);
		fx_free(f);
	}
}

/* time_based: a record whose clock was read before a snapshot emptied the
 * window must not relabel the newer second's bucket (which would drop every
 * call of that second from the window). */
static void time_window_late_record_keeps_newer_seconds(void **state)
{
	wms_breaker_options o = WMS_BREAKER_OPTIONS_INIT;
	wms_breaker_permit late;
	wms_breaker_snapshot snap;
	fx *f;
	int i;
	(void)state;
	o.mode = WMS_BREAKER_MODE_TIME_BASED;
	o.sliding_window_size = 3;
	o.minimum_number_of_calls = 5;
	o.failure_rate_threshold = 50;
	f = fx_new(&o);
	f->clock.now = 100000 * MS;
	call(f, WMS_OUTCOME_SUCCESS);
	f->clock.now = 103999 * MS;
	assert_int_equal(wms_breaker_acquire(&late, f->b, NULL), WMS_OK);
	f->clock.now = 104000 * MS;
	wms_breaker_snapshot_get(&snap, f->b); /* second 100 expires: empty */
	f->clock.now = 103999 * MS;            /* the late record's clock */
	wms_breaker_record(f->b, &late, WMS_OUTCOME_SUCCESS);
	f->clock.now = 104500 * MS;
	for (i = 0; i < 4; i++)
		call(f, WMS_OUTCOME_FAILURE);
	wms_breaker_snapshot_get(&snap, f->b);
	assert_int_equal(wms_breaker_state_get(f->b), WMS_BREAKER_STATE_OPEN); /* 4 of 5 */
	fx_free(f);
}

/* A permit granted before wms_breaker_reset and released or recorded after
 * it counts nowhere: the zeroed counters stay consistent. */
static void reset_then_late_permits(void **state)
{
	wms_breaker_options o = WMS_BREAKER_OPTIONS_INIT;
	wms_breaker_permit a, c;
	wms_breaker_snapshot snap;
	fx *f;
	(void)state;
	f = fx_new(&o);
	assert_int_equal(wms_breaker_acquire(&a, f->b, NULL), WMS_OK);
	assert_int_equal(wms_breaker_acquire(&c, f->b, NULL), WMS_OK);
	wms_breaker_reset(f->b);
	wms_breaker_release(f->b, &a);
	wms_breaker_record(f->b, &c, WMS_OUTCOME_FAILURE);
	wms_breaker_snapshot_get(&snap, f->b);
	assert_int_equal(snap.permitted, 0);
	assert_int_equal(snap.failures, 0);
	assert_int_equal(snap.consecutive_failures, 0);
	call(f, WMS_OUTCOME_SUCCESS);
	wms_breaker_snapshot_get(&snap, f->b);
	assert_int_equal(snap.permitted, 1);
	assert_int_equal(snap.successes, 1);
	fx_free(f);
}

/* A call that started at clock value 0 is timed like any other. */
static void slow_call_started_at_clock_zero(void **state)
{
	wms_breaker_options o = WMS_BREAKER_OPTIONS_INIT;
	wms_breaker_permit p;
	wms_breaker_snapshot snap;
	fx *f;
	(void)state;
	o.mode = WMS_BREAKER_MODE_COUNT_BASED;
	o.slow_call_duration_ms = 1000;
	f = fx_new(&o);
	f->clock.now = 0;
	assert_int_equal(wms_breaker_acquire(&p, f->b, NULL), WMS_OK);
	f->clock.now = 5000 * MS;
	wms_breaker_record(f->b, &p, WMS_OUTCOME_SUCCESS);
	wms_breaker_snapshot_get(&snap, f->b);
	assert_int_equal(snap.slow, 1);
	fx_free(f);
}

/* The name goes into JSON and Prometheus labels as it is: it must be
 * UTF-8 text without control characters. */
static void names_are_text(void **state)
{
	static const char *const bad[] = { "", "a\xff", "a\x01", ("a\xc2\x85" "b"), "a\xed\xa0\x80" };
	wms_breaker_options o = WMS_BREAKER_OPTIONS_INIT;
	wms_breaker *b = NULL;
	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		o.name = bad[i];
		assert_int_equal(wms_breaker_new(&b, &o), WMS_ERR_INVALID_ARG);
		assert_null(b);
	}
	o.name = "entrep\xc3\xb4t \"est\"";
	assert_int_equal(wms_breaker_new(&b, &o), WMS_OK);
	wms_breaker_free(b);
}

static void probe_that_never_reports_counts_as_failed(void **state)
{
	wms_breaker_options o = WMS_BREAKER_OPTIONS_INIT;
	wms_breaker_permit probe, next;
	uint32_t retry;
	fx *f;
	(void)state;
	o.failure_threshold = 1;
	o.open_duration_ms = 1000;
	o.max_wait_in_half_open_ms = 3000;
	f = fx_new(&o);
	call(f, WMS_OUTCOME_FAILURE);
	f->clock.now += 1000 * MS;
	assert_int_equal(wms_breaker_acquire(&probe, f->b, NULL), WMS_OK);
	f->clock.now += 2999 * MS;
	assert_int_equal(wms_breaker_acquire(&next, f->b, &retry), WMS_ERR_CIRCUIT_OPEN);
	assert_int_equal(wms_breaker_state_get(f->b), WMS_BREAKER_STATE_HALF_OPEN);
	f->clock.now += 1 * MS;
	assert_int_equal(wms_breaker_acquire(&next, f->b, &retry), WMS_ERR_CIRCUIT_OPEN);
	assert_int_equal(wms_breaker_state_get(f->b), WMS_BREAKER_STATE_OPEN);
	assert_int_equal(retry, 1000);
	/* the lost probe reports at last: ignored, the breaker stays OPEN */
	wms_breaker_record(f->b, &probe, WMS_OUTCOME_SUCCESS);
	assert_int_equal(wms_breaker_state_get(f->b), WMS_BREAKER_STATE_OPEN);
	fx_free(f);
}

static void manual_controls(void **state)
{
	wms_breaker_options o = WMS_BREAKER_OPTIONS_INIT;
	wms_breaker_snapshot s;
	fx *f;
	int i;
	(void)state;
	o.failure_threshold = 1;
	o.open_duration_ms = 7000;
	f = fx_new(&o);
	wms_breaker_force_open(f->b);
	assert_int_equal(wms_breaker_state_get(f->b), WMS_BREAKER_STATE_FORCED_OPEN);
	f->clock.now += 3600000 * MS; /* forced open never probes */
	assert_int_equal(call(f, WMS_OUTCOME_SUCCESS), WMS_ERR_CIRCUIT_OPEN);
	/* its snapshot gives the hint acquire gives, open_duration_ms, not 0 */
	wms_breaker_snapshot_get(&s, f->b);
	assert_int_equal(s.state, WMS_BREAKER_STATE_FORCED_OPEN);
	assert_int_equal(s.retry_after_ms, 7000);
	wms_breaker_force_closed(f->b);
	assert_int_equal(wms_breaker_state_get(f->b), WMS_BREAKER_STATE_CLOSED);
	wms_breaker_disable(f->b);
	for (i = 0; i < 10; i++)
		assert_int_equal(call(f, WMS_OUTCOME_FAILURE), WMS_OK);
	assert_int_equal(wms_breaker_state_get(f->b), WMS_BREAKER_STATE_DISABLED);
	wms_breaker_snapshot_get(&s, f->b);
	assert_int_equal(s.failures, 10);
	assert_int_equal(s.rejected, 1);
	wms_breaker_reset(f->b);
	wms_breaker_snapshot_get(&s, f->b);
	assert_int_equal(s.state, WMS_BREAKER_STATE_CLOSED);
	assert_int_equal(s.failures, 0);
	assert_int_equal(s.permitted, 0);
	assert_int_equal(f->ev.n, 4);
	assert_int_equal(f->ev.to[3], WMS_BREAKER_STATE_CLOSED);
	assert_string_equal(wms_breaker_state_name(WMS_BREAKER_STATE_FORCED_OPEN), "FORCED_OPEN");
	fx_free(f);
}

static void open_duration_grows_and_is_capped(void **state)
{
	wms_breaker_options o = WMS_BREAKER_OPTIONS_INIT;
	wms_breaker_permit p;
	uint32_t retry, expect[] = { 1000, 2000, 4000, 5000, 5000 };
	fx *f;
	size_t i;
	(void)state;
	o.failure_threshold = 1;
	o.open_duration_ms = 1000;
	o.open_duration_growth_pct = 200;
	o.max_open_duration_ms = 5000;
	f = fx_new(&o);
	call(f, WMS_OUTCOME_FAILURE);
	for (i = 0; i < sizeof(expect) / sizeof(expect[0]); i++) {
		assert_int_equal(wms_breaker_acquire(&p, f->b, &retry), WMS_ERR_CIRCUIT_OPEN);
		assert_int_equal(retry, expect[i]);
		f->clock.now += (uint64_t)retry * MS;
		assert_int_equal(wms_breaker_acquire(&p, f->b, NULL), WMS_OK);
		wms_breaker_record(f->b, &p, WMS_OUTCOME_FAILURE);
	}
	/* a close resets the growth */
	f->clock.now += 5000 * MS;
	assert_int_equal(call(f, WMS_OUTCOME_SUCCESS), WMS_OK);
	call(f, WMS_OUTCOME_FAILURE);
	assert_int_equal(wms_breaker_acquire(&p, f->b, &retry), WMS_ERR_CIRCUIT_OPEN);
	assert_int_equal(retry, 1000);
	fx_free(f);
}

static void jitter_stays_in_bounds_and_varies(void **state)
{
	wms_breaker_options o = WMS_BREAKER_OPTIONS_INIT;
	wms_breaker_permit p;
	uint32_t retry, lo = UINT32_MAX, hi = 0;
	fx *f;
	int i;
	(void)state;
	o.failure_threshold = 1;
	o.open_duration_ms = 1000;
	o.open_duration_jitter_pct = 50;
	f = fx_new(&o);
	for (i = 0; i < 200; i++) {
		call(f, WMS_OUTCOME_FAILURE);
		assert_int_equal(wms_breaker_acquire(&p, f->b, &retry), WMS_ERR_CIRCUIT_OPEN);
		assert_true(retry >= 1000 && retry <= 1500);
		lo = retry < lo ? retry : lo;
		hi = retry > hi ? retry : hi;
		wms_breaker_force_closed(f->b);
	}
	assert_true(hi - lo > 100);
	fx_free(f);
}

static void options_are_validated(void **state)
{
	wms_breaker_options o = WMS_BREAKER_OPTIONS_INIT;
	wms_breaker *b = NULL;
	wms_breaker_permit p;
	(void)state;
	assert_int_equal(wms_breaker_new(NULL, &o), WMS_ERR_INVALID_ARG);
	o.version = 99;
	assert_int_equal(wms_breaker_new(&b, &o), WMS_ERR_INVALID_ARG);
	assert_null(b);
	o.version = WMS_BREAKER_OPTIONS_VERSION;
	o.failure_rate_threshold = 101;
	assert_int_equal(wms_breaker_new(&b, &o), WMS_ERR_INVALID_ARG);
	o.failure_rate_threshold = 0;
	o.mode = (wms_breaker_mode)7;
	assert_int_equal(wms_breaker_new(&b, &o), WMS_ERR_INVALID_ARG);
	o.mode = WMS_BREAKER_MODE_CONSECUTIVE;
	o.open_duration_growth_pct = 50;
	assert_int_equal(wms_breaker_new(&b, &o), WMS_ERR_INVALID_ARG);
	o.open_duration_growth_pct = 0;
	o.open_duration_ms = 5000;
	o.max_open_duration_ms = 4000;
	assert_int_equal(wms_breaker_new(&b, &o), WMS_ERR_INVALID_ARG);
	o.max_open_duration_ms = 0;
	o.open_duration_jitter_pct = 101;
	assert_int_equal(wms_breaker_new(&b, &o), WMS_ERR_INVALID_ARG);
	assert_int_equal(wms_breaker_new(&b, NULL), WMS_OK);
	assert_int_equal(wms_breaker_acquire(NULL, b, NULL), WMS_ERR_INVALID_ARG);
	assert_int_equal(wms_breaker_acquire(&p, NULL, NULL), WMS_ERR_INVALID_ARG);
	wms_breaker_record(NULL, &p, WMS_OUTCOME_SUCCESS);
	wms_breaker_free(b);
	wms_breaker_free(NULL);
	assert_int_equal(wms_breaker_options_init(&o, WMS_BREAKER_OPTIONS_VERSION + 1),
			 WMS_ERR_INVALID_ARG);
	assert_int_equal(wms_breaker_options_init(&o, 1), WMS_ERR_INVALID_ARG); /* 0.2's */
}

/* A row's field of wms_breaker_options (bounds.h) */
#define BREAKER_FIELD(f, v) OPTION_FIELD(wms_breaker_options, f, v)

/* Every bound wms_breaker_new checks: the value at it accepted, one past it
 * refused with INVALID_ARG. Zero means the default, so a lower bound of 1
 * has nothing below it to refuse; the growth's 100 and max_open_duration_ms's
 * open_duration_ms are crossed from below too. The window's bound depends on
 * the mode, so each row names its mode. */
static void option_bounds(void **state)
{
	static const struct {
		const char *row;
		wms_breaker_mode mode;
		option_field set, also; /* `also` lets `set` reach its bound alone */
		int ok;
	} cases[] = {
		{ "version", WMS_BREAKER_MODE_CONSECUTIVE,
		  BREAKER_FIELD(version, WMS_BREAKER_OPTIONS_VERSION), NO_FIELD, 1 },
		{ "version-1 (0.2's)", WMS_BREAKER_MODE_CONSECUTIVE,
		  BREAKER_FIELD(version, WMS_BREAKER_OPTIONS_VERSION - 1), NO_FIELD, 0 },
		{ "version+1", WMS_BREAKER_MODE_CONSECUTIVE,
		  BREAKER_FIELD(version, WMS_BREAKER_OPTIONS_VERSION + 1), NO_FIELD, 0 },
		{ "mode time based", WMS_BREAKER_MODE_TIME_BASED, NO_FIELD, NO_FIELD, 1 },
		{ "mode past time based", WMS_BREAKER_MODE_CONSECUTIVE,
		  BREAKER_FIELD(mode, WMS_BREAKER_MODE_TIME_BASED + 1), NO_FIELD, 0 },
		{ "failure_threshold 1", WMS_BREAKER_MODE_CONSECUTIVE,
		  BREAKER_FIELD(failure_threshold, 1), NO_FIELD, 1 },
		{ "failure_threshold max", WMS_BREAKER_MODE_CONSECUTIVE,
		  BREAKER_FIELD(failure_threshold, 1000000), NO_FIELD, 1 },
		{ "failure_threshold max+1", WMS_BREAKER_MODE_CONSECUTIVE,
		  BREAKER_FIELD(failure_threshold, 1000001), NO_FIELD, 0 },
		{ "failure_rate_threshold 1", WMS_BREAKER_MODE_COUNT_BASED,
		  BREAKER_FIELD(failure_rate_threshold, 1), NO_FIELD, 1 },
		{ "failure_rate_threshold 100", WMS_BREAKER_MODE_COUNT_BASED,
		  BREAKER_FIELD(failure_rate_threshold, 100), NO_FIELD, 1 },
		{ "failure_rate_threshold 101", WMS_BREAKER_MODE_COUNT_BASED,
		  BREAKER_FIELD(failure_rate_threshold, 101), NO_FIELD, 0 },
		{ "slow_call_rate_threshold 1", WMS_BREAKER_MODE_COUNT_BASED,
		  BREAKER_FIELD(slow_call_rate_threshold, 1), NO_FIELD, 1 },
		{ "slow_call_rate_threshold 100", WMS_BREAKER_MODE_COUNT_BASED,
		  BREAKER_FIELD(slow_call_rate_threshold, 100), NO_FIELD, 1 },
		{ "slow_call_rate_threshold 101", WMS_BREAKER_MODE_COUNT_BASED,
		  BREAKER_FIELD(slow_call_rate_threshold, 101), NO_FIELD, 0 },
		{ "count window 1", WMS_BREAKER_MODE_COUNT_BASED,
		  BREAKER_FIELD(sliding_window_size, 1), NO_FIELD, 1 },
		{ "count window max", WMS_BREAKER_MODE_COUNT_BASED,
		  BREAKER_FIELD(sliding_window_size, 100000), NO_FIELD, 1 },
		{ "count window max+1", WMS_BREAKER_MODE_COUNT_BASED,
		  BREAKER_FIELD(sliding_window_size, 100001), NO_FIELD, 0 },
		{ "time window 1 s", WMS_BREAKER_MODE_TIME_BASED,
		  BREAKER_FIELD(sliding_window_size, 1), NO_FIELD, 1 },
		{ "time window max", WMS_BREAKER_MODE_TIME_BASED,
		  BREAKER_FIELD(sliding_window_size, 3600), NO_FIELD, 1 },
		{ "time window max+1", WMS_BREAKER_MODE_TIME_BASED,
		  BREAKER_FIELD(sliding_window_size, 3601), NO_FIELD, 0 },
		/* unused in this mode, and still checked with the count bound */
		{ "consecutive window max", WMS_BREAKER_MODE_CONSECUTIVE,
		  BREAKER_FIELD(sliding_window_size, 100000), NO_FIELD, 1 },
		{ "consecutive window max+1", WMS_BREAKER_MODE_CONSECUTIVE,
		  BREAKER_FIELD(sliding_window_size, 100001), NO_FIELD, 0 },
		{ "minimum_number_of_calls 1", WMS_BREAKER_MODE_TIME_BASED,
		  BREAKER_FIELD(minimum_number_of_calls, 1), NO_FIELD, 1 },
		{ "minimum_number_of_calls max", WMS_BREAKER_MODE_TIME_BASED,
		  BREAKER_FIELD(minimum_number_of_calls, 1000000), NO_FIELD, 1 },
		{ "minimum_number_of_calls max+1", WMS_BREAKER_MODE_TIME_BASED,
		  BREAKER_FIELD(minimum_number_of_calls, 1000001), NO_FIELD, 0 },
		/* checked before count_based lowers it to the window */
		{ "count minimum_number_of_calls max", WMS_BREAKER_MODE_COUNT_BASED,
		  BREAKER_FIELD(minimum_number_of_calls, 1000000), NO_FIELD, 1 },
		{ "count minimum_number_of_calls max+1", WMS_BREAKER_MODE_COUNT_BASED,
		  BREAKER_FIELD(minimum_number_of_calls, 1000001), NO_FIELD, 0 },
		{ "open_duration_ms 1", WMS_BREAKER_MODE_CONSECUTIVE,
		  BREAKER_FIELD(open_duration_ms, 1), NO_FIELD, 1 },
		{ "open_duration_ms max", WMS_BREAKER_MODE_CONSECUTIVE,
		  BREAKER_FIELD(open_duration_ms, 86400000), NO_FIELD, 1 },
		{ "open_duration_ms max+1", WMS_BREAKER_MODE_CONSECUTIVE,
		  BREAKER_FIELD(open_duration_ms, 86400001), NO_FIELD, 0 },
		{ "permitted_calls_in_half_open 1", WMS_BREAKER_MODE_COUNT_BASED,
		  BREAKER_FIELD(permitted_calls_in_half_open, 1), NO_FIELD, 1 },
		{ "permitted_calls_in_half_open max", WMS_BREAKER_MODE_COUNT_BASED,
		  BREAKER_FIELD(permitted_calls_in_half_open, 100000), NO_FIELD, 1 },
		{ "permitted_calls_in_half_open max+1", WMS_BREAKER_MODE_COUNT_BASED,
		  BREAKER_FIELD(permitted_calls_in_half_open, 100001), NO_FIELD, 0 },
		/* checked before consecutive forces it to 1 */
		{ "consecutive permitted_calls_in_half_open max+1", WMS_BREAKER_MODE_CONSECUTIVE,
		  BREAKER_FIELD(permitted_calls_in_half_open, 100001), NO_FIELD, 0 },
		{ "open_duration_growth_pct min-1", WMS_BREAKER_MODE_CONSECUTIVE,
		  BREAKER_FIELD(open_duration_growth_pct, 99), NO_FIELD, 0 },
		{ "open_duration_growth_pct min", WMS_BREAKER_MODE_CONSECUTIVE,
		  BREAKER_FIELD(open_duration_growth_pct, 100), NO_FIELD, 1 },
		{ "open_duration_growth_pct max", WMS_BREAKER_MODE_CONSECUTIVE,
		  BREAKER_FIELD(open_duration_growth_pct, 1000), NO_FIELD, 1 },
		{ "open_duration_growth_pct max+1", WMS_BREAKER_MODE_CONSECUTIVE,
		  BREAKER_FIELD(open_duration_growth_pct, 1001), NO_FIELD, 0 },
		{ "open_duration_jitter_pct 0", WMS_BREAKER_MODE_CONSECUTIVE,
		  BREAKER_FIELD(open_duration_jitter_pct, 0), NO_FIELD, 1 },
		{ "open_duration_jitter_pct max", WMS_BREAKER_MODE_CONSECUTIVE,
		  BREAKER_FIELD(open_duration_jitter_pct, 100), NO_FIELD, 1 },
		{ "open_duration_jitter_pct max+1", WMS_BREAKER_MODE_CONSECUTIVE,
		  BREAKER_FIELD(open_duration_jitter_pct, 101), NO_FIELD, 0 },
		{ "max_open_duration_ms = open", WMS_BREAKER_MODE_CONSECUTIVE,
		  BREAKER_FIELD(max_open_duration_ms, 1000), BREAKER_FIELD(open_duration_ms, 1000), 1 },
		{ "max_open_duration_ms = open-1", WMS_BREAKER_MODE_CONSECUTIVE,
		  BREAKER_FIELD(max_open_duration_ms, 999), BREAKER_FIELD(open_duration_ms, 1000), 0 },
		{ "max_open_duration_ms max", WMS_BREAKER_MODE_CONSECUTIVE,
		  BREAKER_FIELD(max_open_duration_ms, 86400000), NO_FIELD, 1 },
		{ "max_open_duration_ms max+1", WMS_BREAKER_MODE_CONSECUTIVE,
		  BREAKER_FIELD(max_open_duration_ms, 86400001), NO_FIELD, 0 },
	};
	size_t i;
	int round;
	(void)state;

	/* twice over: a refusal leaves nothing behind that changes the next */
	for (round = 0; round < 2; round++) {
		for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
			wms_breaker_options o = WMS_BREAKER_OPTIONS_INIT;
			wms_breaker *b = NULL;
			wms_status st;
			o.mode = cases[i].mode;
			set_option_field(&o, &cases[i].set);
			set_option_field(&o, &cases[i].also);
			st = wms_breaker_new(&b, &o);
			if (cases[i].ok) {
				if (st != WMS_OK)
					fail_msg("%s: %s, not accepted", cases[i].row, wms_status_name(st));
				assert_non_null(b);
				wms_breaker_free(b);
			} else {
				if (st != WMS_ERR_INVALID_ARG)
					fail_msg("%s: %s, not INVALID_ARG", cases[i].row,
						 wms_status_name(st));
				assert_null(b);
			}
		}
	}
}

/* Seed 002's default run: Resilience4j count-based window of 10, minimum
 * 10, threshold 50 %, open 5 s, 3 trials; calls once a second from t = 1 s;
 * the service is down from 11 s to 25 s. */
static void lab_default_scenario(void **state)
{
	wms_breaker_options o = WMS_BREAKER_OPTIONS_INIT;
	wms_breaker_state expect[] = { WMS_BREAKER_STATE_OPEN, WMS_BREAKER_STATE_HALF_OPEN, WMS_BREAKER_STATE_OPEN,
				       WMS_BREAKER_STATE_HALF_OPEN, WMS_BREAKER_STATE_CLOSED };
	uint64_t expect_at[] = { 15, 20, 22, 27, 29 };
	char rejected[41] = { 0 };
	fx *f;
	int t, i;
	(void)state;
	o.mode = WMS_BREAKER_MODE_COUNT_BASED;
	o.sliding_window_size = 10;
	o.minimum_number_of_calls = 10;
	o.failure_rate_threshold = 50;
	o.open_duration_ms = 5000;
	o.permitted_calls_in_half_open = 3;
	f = fx_new(&o);
	for (t = 1; t <= 40; t++) {
		f->clock.now = (uint64_t)t * 1000 * MS;
		if (call(f, t >= 11 && t <= 25 ? WMS_OUTCOME_FAILURE : WMS_OUTCOME_SUCCESS) != WMS_OK)
			rejected[t] = 1;
	}
	assert_int_equal(f->ev.n, 5);
	for (i = 0; i < 5; i++) {
		assert_int_equal(f->ev.to[i], expect[i]);
		assert_int_equal(f->ev.at[i], expect_at[i] * 1000 * MS);
	}
	for (t = 1; t <= 40; t++)
		assert_int_equal(rejected[t], (t >= 16 && t <= 19) || (t >= 23 && t <= 26));
	fx_free(f);
}

/* The lab's "short outage" preset: 5 s down, threshold 80 %: never opens. */
static void lab_short_outage_never_opens(void **state)
{
	wms_breaker_options o = WMS_BREAKER_OPTIONS_INIT;
	fx *f;
	int t;
	(void)state;
	o.mode = WMS_BREAKER_MODE_COUNT_BASED;
	o.sliding_window_size = 10;
	o.minimum_number_of_calls = 10;
	o.failure_rate_threshold = 80;
	o.open_duration_ms = 5000;
	o.permitted_calls_in_half_open = 3;
	f = fx_new(&o);
	for (t = 1; t <= 40; t++) {
		f->clock.now = (uint64_t)t * 1000 * MS;
		assert_int_equal(call(f, t >= 11 && t <= 15 ? WMS_OUTCOME_FAILURE
							    : WMS_OUTCOME_SUCCESS),
				 WMS_OK);
	}
	assert_int_equal(f->ev.n, 0);
	fx_free(f);
}

/* A rate exactly at the threshold opens; one a hair under it does not, also
 * when the percentage is not a whole number (1 of 3 is 33.3 %), and after
 * the count window has wrapped round many times. */
static void rate_threshold_boundary(void **state)
{
	static const struct {
		wms_breaker_mode mode;
		uint32_t threshold;
		int opens;
	} cases[] = {
		{ WMS_BREAKER_MODE_COUNT_BASED, 33, 1 }, { WMS_BREAKER_MODE_COUNT_BASED, 34, 0 },
		{ WMS_BREAKER_MODE_TIME_BASED, 33, 1 },  { WMS_BREAKER_MODE_TIME_BASED, 34, 0 },
	};
	(void)state;
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		wms_breaker_options o = WMS_BREAKER_OPTIONS_INIT;
		fx *f;
		int i;
		o.mode = cases[k].mode;
		o.sliding_window_size = 3;
		o.minimum_number_of_calls = 3;
		o.failure_rate_threshold = cases[k].threshold;
		f = fx_new(&o);
		/* 300 successes: the ring wraps 100 times; the time window sees
		 * them all in one second */
		for (i = 0; i < 300; i++)
			assert_int_equal(call(f, WMS_OUTCOME_SUCCESS), WMS_OK);
		assert_int_equal(call(f, WMS_OUTCOME_FAILURE), WMS_OK);
		if (cases[k].mode == WMS_BREAKER_MODE_TIME_BASED) {
			/* 1 failure of 301 calls: far under; then a quiet 3 s */
			assert_int_equal(wms_breaker_state_get(f->b), WMS_BREAKER_STATE_CLOSED);
			f->clock.now += 4000 * MS;
			call(f, WMS_OUTCOME_FAILURE);
			call(f, WMS_OUTCOME_SUCCESS);
			call(f, WMS_OUTCOME_SUCCESS);
		} else {
			call(f, WMS_OUTCOME_SUCCESS);
			call(f, WMS_OUTCOME_SUCCESS);
		}
		assert_int_equal(wms_breaker_state_get(f->b),
				 cases[k].opens ? WMS_BREAKER_STATE_OPEN : WMS_BREAKER_STATE_CLOSED);
		fx_free(f);
	}
}

static void count_based_waits_for_minimum_calls(void **state)
{
	wms_breaker_options o = WMS_BREAKER_OPTIONS_INIT;
	wms_breaker_snapshot s;
	fx *f;
	int i;
	(void)state;
	o.mode = WMS_BREAKER_MODE_COUNT_BASED;
	o.sliding_window_size = 20;
	o.minimum_number_of_calls = 5;
	o.failure_rate_threshold = 50;
	f = fx_new(&o);
	for (i = 0; i < 4; i++)
		call(f, WMS_OUTCOME_FAILURE);
	wms_breaker_snapshot_get(&s, f->b);
	assert_true(s.failure_rate < 0); /* not judged yet */
	assert_int_equal(s.state, WMS_BREAKER_STATE_CLOSED);
	call(f, WMS_OUTCOME_FAILURE);
	assert_int_equal(wms_breaker_state_get(f->b), WMS_BREAKER_STATE_OPEN);
	fx_free(f);
}

static void count_based_slow_calls_open(void **state)
{
	wms_breaker_options o = WMS_BREAKER_OPTIONS_INIT;
	wms_breaker_permit p;
	wms_breaker_snapshot s;
	fx *f;
	int i;
	(void)state;
	o.mode = WMS_BREAKER_MODE_COUNT_BASED;
	o.sliding_window_size = 4;
	o.minimum_number_of_calls = 4;
	o.slow_call_rate_threshold = 50;
	o.slow_call_duration_ms = 100;
	f = fx_new(&o);
	for (i = 0; i < 4; i++) {
		assert_int_equal(wms_breaker_acquire(&p, f->b, NULL), WMS_OK);
		f->clock.now += (i % 2 ? 101 : 100) * MS; /* 100 ms is not slow; 101 is */
		wms_breaker_record(f->b, &p, WMS_OUTCOME_SUCCESS);
	}
	assert_int_equal(wms_breaker_state_get(f->b), WMS_BREAKER_STATE_OPEN);
	wms_breaker_snapshot_get(&s, f->b);
	assert_int_equal(s.slow, 2);
	assert_int_equal(s.successes, 4);
	fx_free(f);
}

static void time_based_window_forgets_old_seconds(void **state)
{
	wms_breaker_options o = WMS_BREAKER_OPTIONS_INIT;
	wms_breaker_snapshot s;
	fx *f;
	int i;
	(void)state;
	o.mode = WMS_BREAKER_MODE_TIME_BASED;
	o.sliding_window_size = 5;
	o.minimum_number_of_calls = 4;
	o.failure_rate_threshold = 50;
	f = fx_new(&o);
	/* 3 failures at t=1000 s, then 6 s of nothing: they fall out of the window */
	for (i = 0; i < 3; i++)
		call(f, WMS_OUTCOME_FAILURE);
	f->clock.now += 6000 * MS;
	for (i = 0; i < 3; i++)
		call(f, WMS_OUTCOME_SUCCESS);
	wms_breaker_snapshot_get(&s, f->b);
	assert_int_equal(s.window_calls, 3);
	call(f, WMS_OUTCOME_FAILURE);
	assert_int_equal(wms_breaker_state_get(f->b), WMS_BREAKER_STATE_CLOSED); /* 1 of 4 */
	/* within the window: spread over 5 seconds they all count */
	for (i = 0; i < 4; i++) {
		f->clock.now += 1000 * MS;
		call(f, WMS_OUTCOME_FAILURE);
	}
	assert_int_equal(wms_breaker_state_get(f->b), WMS_BREAKER_STATE_OPEN);
	fx_free(f);
}

static void half_open_trials_decide_by_rate(void **state)
{
	wms_breaker_options o = WMS_BREAKER_OPTIONS_INIT;
	wms_breaker_permit t[4];
	fx *f;
	(void)state;
	o.mode = WMS_BREAKER_MODE_COUNT_BASED;
	o.sliding_window_size = 2;
	o.minimum_number_of_calls = 2;
	o.failure_rate_threshold = 50;
	o.permitted_calls_in_half_open = 3;
	o.open_duration_ms = 1000;
	f = fx_new(&o);
	call(f, WMS_OUTCOME_FAILURE);
	call(f, WMS_OUTCOME_FAILURE);
	assert_int_equal(wms_breaker_state_get(f->b), WMS_BREAKER_STATE_OPEN);
	f->clock.now += 1000 * MS;
	assert_int_equal(wms_breaker_acquire(&t[0], f->b, NULL), WMS_OK);
	assert_int_equal(wms_breaker_acquire(&t[1], f->b, NULL), WMS_OK);
	assert_int_equal(wms_breaker_acquire(&t[2], f->b, NULL), WMS_OK);
	assert_int_equal(wms_breaker_acquire(&t[3], f->b, NULL), WMS_ERR_CIRCUIT_OPEN);
	wms_breaker_record(f->b, &t[0], WMS_OUTCOME_FAILURE);
	wms_breaker_record(f->b, &t[1], WMS_OUTCOME_SUCCESS);
	assert_int_equal(wms_breaker_state_get(f->b), WMS_BREAKER_STATE_HALF_OPEN); /* not all in */
	wms_breaker_record(f->b, &t[2], WMS_OUTCOME_SUCCESS);
	/* 1 of 3 failed = 33 % < 50 % */
	assert_int_equal(wms_breaker_state_get(f->b), WMS_BREAKER_STATE_CLOSED);
	fx_free(f);
}

/* wms_breaker_permit_is_trial says what the breaker granted, not what the
 * flags look like: in the rate modes every permit carries a start time, so
 * its flags are non-zero in CLOSED too. A trial stays one after its round. */
static void permit_is_trial_only_in_half_open(void **state)
{
	static const wms_breaker_mode modes[] = { WMS_BREAKER_MODE_CONSECUTIVE,
						  WMS_BREAKER_MODE_COUNT_BASED,
						  WMS_BREAKER_MODE_TIME_BASED };
	size_t m;
	(void)state;
	assert_int_equal(wms_breaker_permit_is_trial(NULL), 0);
	for (m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
		wms_breaker_options o = WMS_BREAKER_OPTIONS_INIT;
		wms_breaker_permit closed, t[2], after, disabled;
		uint32_t trials = modes[m] == WMS_BREAKER_MODE_CONSECUTIVE ? 1 : 2, i;
		fx *f;
		o.mode = modes[m];
		o.failure_threshold = 1;
		o.sliding_window_size = modes[m] == WMS_BREAKER_MODE_TIME_BASED ? 10 : 4;
		o.minimum_number_of_calls = 1;
		o.failure_rate_threshold = 100;
		o.open_duration_ms = 1000;
		o.permitted_calls_in_half_open = trials;
		f = fx_new(&o);
		assert_int_equal(wms_breaker_acquire(&closed, f->b, NULL), WMS_OK);
		assert_int_equal(wms_breaker_permit_is_trial(&closed), 0);
		wms_breaker_record(f->b, &closed, WMS_OUTCOME_FAILURE); /* opens */
		assert_int_equal(wms_breaker_state_get(f->b), WMS_BREAKER_STATE_OPEN);
		f->clock.now += 1000 * MS;
		for (i = 0; i < trials; i++) {
			assert_int_equal(wms_breaker_acquire(&t[i], f->b, NULL), WMS_OK);
			assert_int_equal(wms_breaker_state_get(f->b), WMS_BREAKER_STATE_HALF_OPEN);
			assert_int_equal(wms_breaker_permit_is_trial(&t[i]), 1);
		}
		for (i = 0; i < trials; i++)
			wms_breaker_record(f->b, &t[i], WMS_OUTCOME_SUCCESS);
		assert_int_equal(wms_breaker_state_get(f->b), WMS_BREAKER_STATE_CLOSED);
		assert_int_equal(wms_breaker_permit_is_trial(&t[0]), 1);
		assert_int_equal(wms_breaker_acquire(&after, f->b, NULL), WMS_OK);
		assert_int_equal(wms_breaker_permit_is_trial(&after), 0);
		wms_breaker_record(f->b, &after, WMS_OUTCOME_SUCCESS);
		wms_breaker_disable(f->b);
		assert_int_equal(wms_breaker_acquire(&disabled, f->b, NULL), WMS_OK);
		assert_int_equal(wms_breaker_permit_is_trial(&disabled), 0);
		wms_breaker_record(f->b, &disabled, WMS_OUTCOME_FAILURE);
		fx_free(f);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(consecutive_opens_at_threshold),
		cmocka_unit_test(success_resets_consecutive_count),
		cmocka_unit_test(open_rejects_with_retry_after),
		cmocka_unit_test(exactly_one_probe_at_open_duration),
		cmocka_unit_test(failed_probe_reopens_for_full_duration),
		cmocka_unit_test(ignored_probe_frees_the_slot),
		cmocka_unit_test(stale_permit_decides_nothing),
		cmocka_unit_test(stale_permit_does_not_count_after_closing),
		cmocka_unit_test(late_trial_gets_its_full_wait),
		cmocka_unit_test(force_closed_when_closed_clears),
		cmocka_unit_test(time_window_late_record_keeps_newer_seconds),
		cmocka_unit_test(reset_then_late_permits),
		cmocka_unit_test(slow_call_started_at_clock_zero),
		cmocka_unit_test(names_are_text),
		cmocka_unit_test(probe_that_never_reports_counts_as_failed),
		cmocka_unit_test(manual_controls),
		cmocka_unit_test(open_duration_grows_and_is_capped),
		cmocka_unit_test(jitter_stays_in_bounds_and_varies),
		cmocka_unit_test(options_are_validated),
		cmocka_unit_test(option_bounds),
		cmocka_unit_test(lab_default_scenario),
		cmocka_unit_test(lab_short_outage_never_opens),
		cmocka_unit_test(rate_threshold_boundary),
		cmocka_unit_test(count_based_waits_for_minimum_calls),
		cmocka_unit_test(count_based_slow_calls_open),
		cmocka_unit_test(time_based_window_forgets_old_seconds),
		cmocka_unit_test(half_open_trials_decide_by_rate),
		cmocka_unit_test(permit_is_trial_only_in_half_open),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
