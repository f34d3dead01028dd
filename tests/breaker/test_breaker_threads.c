/* Many threads on one breaker (run under TSan in ./run tsan): the trial
 * limit holds and the counters add up. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdatomic.h>
#include <pthread.h>
#include <cmocka.h>
#include "wms/breaker.h"

#define THREADS 8
#define CALLS 20000

typedef struct shared {
	wms_breaker *b;
	atomic_int trials_in_flight;
	atomic_int max_trials_seen;
	atomic_ulong attempts;
	unsigned permitted_trials;
} shared;

static void *worker(void *arg)
{
	shared *s = arg;
	unsigned seed = (unsigned)(uintptr_t)&seed;
	int i;
	for (i = 0; i < CALLS; i++) {
		wms_breaker_permit p;
		wms_status st;
		atomic_fetch_add(&s->attempts, 1);
		st = wms_breaker_acquire(&p, s->b, NULL);
		if (st != WMS_OK)
			continue;
		if (p.flags) { /* a half-open trial */
			int n = atomic_fetch_add(&s->trials_in_flight, 1) + 1;
			int m = atomic_load(&s->max_trials_seen);
			while (n > m && !atomic_compare_exchange_weak(&s->max_trials_seen, &m, n))
				;
		}
		seed = seed * 1103515245u + 12345u;
		/* leave before reporting: our window sits inside the breaker's */
		if (p.flags)
			atomic_fetch_sub(&s->trials_in_flight, 1);
		wms_breaker_record(s->b, &p, (seed >> 16) % 3 == 0 ? WMS_OUTCOME_FAILURE
				   : (seed >> 16) % 7 == 0 ? WMS_OUTCOME_IGNORED : WMS_OUTCOME_SUCCESS);
	}
	return NULL;
}

static void run_mode(wms_breaker_mode mode, unsigned trials)
{
	wms_breaker_options o = WMS_BREAKER_OPTIONS_INIT;
	wms_breaker_snapshot snap;
	pthread_t th[THREADS];
	shared s = { 0 };
	int i;
	o.mode = mode;
	o.failure_threshold = 3;
	o.sliding_window_size = mode == WMS_BREAKER_TIME_BASED ? 2 : 20;
	o.minimum_number_of_calls = 10;
	o.failure_rate_threshold = 30; /* failures run at ~37 %: it must open */
	o.open_duration_ms = 1; /* real clock: flap as fast as possible */
	o.permitted_calls_in_half_open = trials;
	assert_int_equal(wms_breaker_new(&s.b, &o), WMS_OK);
	s.permitted_trials = trials;
	for (i = 0; i < THREADS; i++)
		assert_int_equal(pthread_create(&th[i], NULL, worker, &s), 0);
	for (i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	wms_breaker_snapshot_get(&snap, s.b);
	assert_true(atomic_load(&s.max_trials_seen) <= (int)trials);
	assert_int_equal(snap.permitted + snap.rejected, atomic_load(&s.attempts));
	assert_int_equal(snap.successes + snap.failures + snap.ignored, snap.permitted);
	assert_true(snap.transitions > 0);
	wms_breaker_free(s.b);
}

static void consecutive_threads(void **state) { (void)state; run_mode(WMS_BREAKER_CONSECUTIVE, 1); }
static void count_threads(void **state) { (void)state; run_mode(WMS_BREAKER_COUNT_BASED, 3); }
static void time_threads(void **state) { (void)state; run_mode(WMS_BREAKER_TIME_BASED, 2); }

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(consecutive_threads),
		cmocka_unit_test(count_threads),
		cmocka_unit_test(time_threads),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
