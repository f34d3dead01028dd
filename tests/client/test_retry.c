/*
 * The client's retry and classification rules on their own (src/client/
 * retry.c, classify.c): the backoff's bounds at every retry up to its cap,
 * the call's delivery over every pair of attempts, and which finished
 * attempts may be tried again.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "client/client.h"

/* Full jitter: each pause in [0, min(max, initial * mult^(n-1))] ms, and
 * the draws spread over that range (not stuck at 0 or at the cap). */
static void backoff_bounds(void **state)
{
	wms_retry_options r = WMS_RETRY_OPTIONS_INIT;
	uint64_t rng = 0x9e3779b97f4a7c15ull;
	uint32_t n;
	(void)state;
	r.max_attempts = 10;
	r.initial_backoff_ms = 100;
	r.max_backoff_ms = 2000;
	r.backoff_multiplier_pct = 200;
	for (n = 1; n <= 9; n++) {
		/* 100, 200, 400, 800, 1600, then the 2000 cap */
		uint64_t cap_ms = n <= 5 ? 100u << (n - 1) : 2000u, lo = UINT64_MAX, hi = 0;
		int i;
		for (i = 0; i < 2000; i++) {
			uint64_t ns = wms__backoff_ns(&r, n, &rng);
			assert_true(ns <= cap_ms * 1000000u);
			if (ns < lo)
				lo = ns;
			if (ns > hi)
				hi = ns;
		}
		if (lo > cap_ms * 1000000u / 20 || hi < cap_ms * 1000000u / 20 * 19)
			fail_msg("retry %u: draws in [%llu, %llu] ns of a %llu ms cap", n,
				 (unsigned long long)lo, (unsigned long long)hi,
				 (unsigned long long)cap_ms);
	}
	/* a multiplier of 100%: no growth; initial == max: always that cap */
	r.backoff_multiplier_pct = 100;
	for (n = 1; n <= 9; n++)
		assert_true(wms__backoff_ns(&r, n, &rng) <= 100u * 1000000u);
	r.initial_backoff_ms = r.max_backoff_ms = 7;
	r.backoff_multiplier_pct = 1000;
	for (n = 1; n <= 9; n++)
		assert_true(wms__backoff_ns(&r, n, &rng) <= 7u * 1000000u);
}

static void delivery_of_the_call(void **state)
{
	static const wms_delivery all[] = { WMS_DELIVERY_NOT_SENT, WMS_DELIVERY_UNKNOWN,
					    WMS_DELIVERY_ANSWERED };
	size_t i, j;
	(void)state;
	for (i = 0; i < 3; i++)
		for (j = 0; j < 3; j++) {
			wms_delivery so_far = all[i], last = all[j], want;
			if (last == WMS_DELIVERY_ANSWERED)
				want = WMS_DELIVERY_ANSWERED; /* the last attempt was answered */
			else if (so_far != WMS_DELIVERY_NOT_SENT)
				want = WMS_DELIVERY_UNKNOWN; /* an earlier one may have arrived */
			else
				want = last;
			if (wms__merge_delivery(so_far, last) != want)
				fail_msg("so far %d, last %d: %d, expected %d", (int)so_far, (int)last,
					 (int)wms__merge_delivery(so_far, last), (int)want);
		}
}

static wms_outcome filter_says(const wms_error *err, wms_outcome proposed, void *ctx)
{
	(void)err;
	(void)proposed;
	return *(const wms_outcome *)ctx;
}

static void outcomes_and_retries(void **state)
{
	wms_retry_options r = WMS_RETRY_OPTIONS_INIT;
	wms_error err;
	wms_outcome says;
	int record;
	(void)state;
	/* the filter reclassifies what is recorded; a value it should not
	 * return reads as IGNORED; our own errors never reach it */
	memset(&err, 0, sizeof(err));
	err.status = WMS_ERR_TIMEOUT;
	assert_int_equal(wms__call_outcome(&err, NULL, NULL, &record), WMS_OUTCOME_FAILURE);
	assert_int_equal(record, 1);
	says = WMS_OUTCOME_SUCCESS;
	assert_int_equal(wms__call_outcome(&err, filter_says, &says, &record), WMS_OUTCOME_SUCCESS);
	says = (wms_outcome)77;
	assert_int_equal(wms__call_outcome(&err, filter_says, &says, &record), WMS_OUTCOME_IGNORED);
	err.status = WMS_ERR_INVALID_ARG;
	says = WMS_OUTCOME_FAILURE;
	assert_int_equal(wms__call_outcome(&err, filter_says, &says, &record), WMS_OUTCOME_IGNORED);
	assert_int_equal(record, 0);
	/* retried: a recorded failure; not a success, an ignored or unrecorded one */
	assert_true(wms__retryable(&r, WMS_ERR_TIMEOUT, WMS_OUTCOME_FAILURE, 1, WMS_DELIVERY_UNKNOWN));
	assert_false(wms__retryable(&r, WMS_OK, WMS_OUTCOME_FAILURE, 1, WMS_DELIVERY_ANSWERED));
	assert_false(wms__retryable(&r, WMS_ERR_HTTP, WMS_OUTCOME_IGNORED, 1, WMS_DELIVERY_ANSWERED));
	assert_false(wms__retryable(&r, WMS_ERR_NOMEM, WMS_OUTCOME_FAILURE, 0, WMS_DELIVERY_NOT_SENT));
	/* not_sent_only: only what provably did not leave */
	r.not_sent_only = 1;
	assert_true(wms__retryable(&r, WMS_ERR_CONNECT, WMS_OUTCOME_FAILURE, 1, WMS_DELIVERY_NOT_SENT));
	assert_false(wms__retryable(&r, WMS_ERR_TIMEOUT, WMS_OUTCOME_FAILURE, 1, WMS_DELIVERY_UNKNOWN));
	assert_false(wms__retryable(&r, WMS_ERR_HTTP, WMS_OUTCOME_FAILURE, 1, WMS_DELIVERY_ANSWERED));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(backoff_bounds),
		cmocka_unit_test(delivery_of_the_call),
		cmocka_unit_test(outcomes_and_retries),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
