/* Many threads on one breaker (run under TSan in ./run tsan): the trial
 * limit holds and the counters add up.
 *
 * A trial is what wms_breaker_permit_is_trial() says (in the rate modes
 * every permit has non-zero flags, CLOSED ones too). Two checks on trials:
 * - never more than permitted_calls_in_half_open in flight at once: a
 *   thread counts its trial from acquire's return to just before record, a
 *   window inside the breaker's own;
 * - per half-open round, the trials that reported SUCCESS or FAILURE (an
 *   IGNORED one frees its slot for another) are never more than
 *   permitted_calls_in_half_open, and exactly that many in every round the
 *   breaker has left (it decides once all have reported). A trial's round
 *   is its permit's epoch: the breaker starts a new epoch on every
 *   transition and, within HALF_OPEN, only when max_wait_in_half_open_ms
 *   writes trials off, which the 60 s set here keeps from happening. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <pthread.h>
#include <cmocka.h>
#include "wms/breaker.h"

#define THREADS 8
#define CALLS 20000

/* One trial as its thread saw it. */
typedef struct trial {
	uint64_t epoch;
	wms_outcome outcome;
} trial;

typedef struct shared {
	wms_breaker *b;
	atomic_int trials_in_flight;
	atomic_int max_trials_seen;
	atomic_ulong attempts;
} shared;

typedef struct worker_arg {
	shared *s;
	trial *log; /* CALLS entries */
	size_t n;
} worker_arg;

static void *worker(void *arg)
{
	worker_arg *w = arg;
	shared *s = w->s;
	unsigned seed = (unsigned)(uintptr_t)&seed;
	int i;
	for (i = 0; i < CALLS; i++) {
		wms_breaker_permit p;
		wms_outcome outcome;
		wms_status st;
		int is_trial;
		atomic_fetch_add(&s->attempts, 1);
		st = wms_breaker_acquire(&p, s->b, NULL);
		if (st != WMS_OK)
			continue;
		is_trial = wms_breaker_permit_is_trial(&p);
		if (is_trial) {
			int n = atomic_fetch_add(&s->trials_in_flight, 1) + 1;
			int m = atomic_load(&s->max_trials_seen);
			while (n > m && !atomic_compare_exchange_weak(&s->max_trials_seen, &m, n))
				;
		}
		seed = seed * 1103515245u + 12345u;
		outcome = (seed >> 16) % 3 == 0   ? WMS_OUTCOME_FAILURE
			  : (seed >> 16) % 7 == 0 ? WMS_OUTCOME_IGNORED
						  : WMS_OUTCOME_SUCCESS;
		if (is_trial) {
			w->log[w->n].epoch = p.epoch;
			w->log[w->n].outcome = outcome;
			w->n++;
			/* leave before reporting: our window sits inside the breaker's */
			atomic_fetch_sub(&s->trials_in_flight, 1);
		}
		wms_breaker_record(s->b, &p, outcome);
	}
	return NULL;
}

static int by_epoch(const void *a, const void *b)
{
	uint64_t x = ((const trial *)a)->epoch, y = ((const trial *)b)->epoch;
	return x < y ? -1 : x > y;
}

/* The rounds' tallies; returns how many rounds had a trial. */
static size_t check_rounds(trial *all, size_t n, unsigned permitted, wms_breaker_state last)
{
	size_t i = 0, rounds = 0;
	qsort(all, n, sizeof(*all), by_epoch);
	while (i < n) {
		uint64_t epoch = all[i].epoch;
		unsigned decided = 0, granted = 0;
		for (; i < n && all[i].epoch == epoch; i++) {
			granted++;
			decided += all[i].outcome != WMS_OUTCOME_IGNORED;
		}
		rounds++;
		/* The breaker ends in the last round only if it is still half-open;
		 * every earlier round was decided, by exactly `permitted` trials. */
		if (decided > permitted || (decided != permitted && !(i == n && last ==
								    WMS_BREAKER_STATE_HALF_OPEN)))
			fail_msg("half-open round %zu (epoch %llu): %u trials reported an outcome, "
				 "%u granted, permitted_calls_in_half_open %u%s",
				 rounds, (unsigned long long)epoch, decided, granted, permitted,
				 i == n ? " (the last round)" : "");
	}
	return rounds;
}

static void run_mode(wms_breaker_mode mode, unsigned trials)
{
	wms_breaker_options o = WMS_BREAKER_OPTIONS_INIT;
	wms_breaker_snapshot snap;
	pthread_t th[THREADS];
	worker_arg wa[THREADS];
	shared s = { 0 };
	trial *all;
	size_t n = 0, rounds;
	int i;
	o.mode = mode;
	o.failure_threshold = 3;
	o.sliding_window_size = mode == WMS_BREAKER_MODE_TIME_BASED ? 2 : 20;
	o.minimum_number_of_calls = 10;
	o.failure_rate_threshold = 30; /* failures run at ~37 %: it must open */
	o.open_duration_ms = 1; /* real clock: flap as fast as possible */
	o.permitted_calls_in_half_open = trials;
	o.max_wait_in_half_open_ms = 60000; /* no trial is written off: one epoch per round */
	assert_int_equal(wms_breaker_new(&s.b, &o), WMS_OK);
	all = calloc((size_t)THREADS * CALLS, sizeof(*all));
	assert_non_null(all);
	for (i = 0; i < THREADS; i++) {
		wa[i].s = &s;
		wa[i].log = all + (size_t)i * CALLS;
		wa[i].n = 0;
		assert_int_equal(pthread_create(&th[i], NULL, worker, &wa[i]), 0);
	}
	for (i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	wms_breaker_snapshot_get(&snap, s.b);
	if (atomic_load(&s.max_trials_seen) > (int)trials)
		fail_msg("%d trials in flight at once, permitted_calls_in_half_open %u",
			 atomic_load(&s.max_trials_seen), trials);
	/* pack the threads' logs together (each lands at or before where it
	 * starts), then tally by round */
	for (i = 0; i < THREADS; i++) {
		size_t k;
		for (k = 0; k < wa[i].n; k++)
			all[n++] = wa[i].log[k];
	}
	rounds = check_rounds(all, n, trials, snap.state);
	print_message("%zu half-open rounds, %zu trials, at most %d in flight (of %u), "
		      "%llu transitions\n", rounds, n, atomic_load(&s.max_trials_seen), trials,
		      (unsigned long long)snap.transitions);
	assert_true(rounds > 0); /* it did open and probe */
	assert_int_equal(snap.permitted + snap.rejected, atomic_load(&s.attempts));
	assert_int_equal(snap.successes + snap.failures + snap.ignored, snap.permitted);
	assert_true(snap.transitions > 0);
	free(all);
	wms_breaker_free(s.b);
}

static void consecutive_threads(void **state) { (void)state; run_mode(WMS_BREAKER_MODE_CONSECUTIVE, 1); }
static void count_threads(void **state) { (void)state; run_mode(WMS_BREAKER_MODE_COUNT_BASED, 3); }
static void time_threads(void **state) { (void)state; run_mode(WMS_BREAKER_MODE_TIME_BASED, 2); }

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(consecutive_threads),
		cmocka_unit_test(count_threads),
		cmocka_unit_test(time_threads),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
