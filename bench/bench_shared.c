/*
 * The breaker shared through Redis (group "shared"), against a
 * redis-server the bench starts on its own unix socket and stops by PID:
 *   - the closed and open paths with the Redis store (ns/call and
 *     allocations: the in-process targets, <= 50 ns and 0, hold), measured
 *     in the same run as the in-process breaker, and their ratio;
 *   - Redis commands per 10 000 calls: all successes, 1 % failures, and
 *     while OPEN (rejections), from the store's own count; and per second
 *     idle (the heartbeat and epoch poll);
 *   - time from a trip in one replica to rejections in another, with
 *     pub/sub and with the pub/sub connection killed just before (it is
 *     back within the cycle; a message lost outright is read by the next
 *     epoch poll, within heartbeat_ms);
 *   - time to give up on a frozen Redis (kill -STOP) and to rejoin it.
 * A replica is a store of its own (agent thread, connections, token).
 */
#include <stdio.h>
#include <string.h>
#include <sched.h>
#include <time.h>
#include "wms/wms.h"
#include "wms/sys/breaker_store.h"
#include "redis_server.h"
#include "bench.h"

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) != 0)
		;
}

static wms_breaker_store *store(const rs_server *rs)
{
	wms_shared_options so = WMS_SHARED_OPTIONS_INIT;
	wms_breaker_store *s;
	wms_error err;
	so.redis_url = rs->url;
	so.name = "bench";
	if (wms_redis_store_new(&s, &so, &err) != WMS_OK)
		die("wms_redis_store_new", err.message);
	return s;
}

/* Each measurement has a breaker (so a key) of its own; s NULL: in-process.
 * The rate modes keep their defaults: 100 calls or 60 s, judged at 50 %. */
static wms_breaker *breaker_mode(wms_breaker_store *s, const char *name, wms_breaker_mode mode,
				 uint32_t threshold, uint32_t open_ms)
{
	wms_breaker_options o = WMS_BREAKER_OPTIONS_INIT;
	wms_breaker *b;
	o.name = name;
	o.mode = mode;
	o.failure_threshold = threshold;
	o.open_duration_ms = open_ms;
	o.store = s;
	if (wms_breaker_new(&b, &o) != WMS_OK)
		die("wms_breaker_new (shared)", NULL);
	return b;
}

static wms_breaker *breaker(wms_breaker_store *s, const char *name, uint32_t threshold,
			    uint32_t open_ms)
{
	return breaker_mode(s, name, WMS_BREAKER_MODE_CONSECUTIVE, threshold, open_ms);
}

static wms_store_state store_state(wms_breaker *b)
{
	wms_breaker_snapshot s;
	wms_breaker_snapshot_get(&s, b);
	return s.store_state;
}

static double wait_for(wms_breaker *b, int want_store, int want_state, double limit_ms)
{
	uint64_t t0 = now_ns();
	for (;;) {
		if ((want_store < 0 || (int)store_state(b) == want_store) &&
		    (want_state < 0 || (int)wms_breaker_state_get(b) == want_state))
			return (double)(now_ns() - t0) / 1e6;
		if ((double)(now_ns() - t0) / 1e6 > limit_ms)
			die("shared: the breaker did not reach the state in time", NULL);
		sched_yield();
	}
}

static double run_calls(wms_breaker *b, uint64_t iters, int open, uint64_t *n_alloc)
{
	wms_breaker_permit p;
	uint32_t retry;
	uint64_t a0 = allocs(), t0 = now_ns(), i;
	for (i = 0; i < iters; i++) {
		if (!open) {
			if (wms_breaker_acquire(&p, b, &retry) != WMS_OK)
				die("shared closed breaker rejected a call", NULL);
			wms_breaker_record(b, &p, WMS_OUTCOME_SUCCESS);
		} else if (wms_breaker_acquire(&p, b, &retry) != WMS_ERR_CIRCUIT_OPEN) {
			die("shared open breaker let a call through", NULL);
		}
	}
	*n_alloc += allocs() - a0;
	return (double)(now_ns() - t0) / (double)iters;
}

static uint64_t commands(wms_breaker_store *s)
{
	wms_shared_stats st;
	wms_redis_store_stats(&st, s);
	return st.commands;
}

/* ns/call, closed and open, in-process and shared, interleaved. */
static void paths(const rs_server *rs)
{
	uint64_t iters = quick ? 200000 : 2000000, n_alloc = 0, calls = 0;
	wms_breaker_store *s = store(rs);
	int open;

	for (open = 0; open <= 1; open++) {
		double vs[REPS], vl[REPS], ms, ml;
		wms_breaker *b = breaker(s, open ? "paths-open" : "paths-closed", 1, 3600000), *l;
		wms_breaker_options lo = WMS_BREAKER_OPTIONS_INIT;
		wms_breaker_permit p;
		char name[80];
		int r;

		lo.failure_threshold = 1;
		lo.open_duration_ms = 3600000;
		if (wms_breaker_new(&l, &lo) != WMS_OK)
			die("wms_breaker_new", NULL);
		wait_for(b, WMS_STORE_STATE_CONNECTED, -1, 5000);
		if (open) {
			wms_breaker_acquire(&p, b, NULL);
			wms_breaker_record(b, &p, WMS_OUTCOME_FAILURE);
			wait_for(b, -1, WMS_BREAKER_STATE_OPEN, 5000);
			wms_breaker_acquire(&p, l, NULL);
			wms_breaker_record(l, &p, WMS_OUTCOME_FAILURE);
		}
		run_calls(b, iters / 10, open, &n_alloc);
		for (r = 0; r < REPS; r++) {
			vl[r] = run_calls(l, iters, open, &n_alloc);
			vs[r] = run_calls(b, iters, open, &n_alloc);
			calls += 2 * iters;
		}
		calls += iters / 10;
		ms = median(vs, REPS);
		ml = median(vl, REPS);
		snprintf(name, sizeof(name), "breaker_shared_%s_ns_per_call", open ? "open" : "closed");
		figure(name, ms, 1);
		snprintf(name, sizeof(name), "breaker_shared_%s_vs_in_process", open ? "open" : "closed");
		figure(name, ms / ml, 2);
		wms_breaker_free(b);
		wms_breaker_free(l);
	}
	{
		/* a count window: every call is queued for the agent */
		double vs[REPS], vl[REPS], ms;
		wms_breaker *b = breaker_mode(s, "paths-count", WMS_BREAKER_MODE_COUNT_BASED, 1,
					      3600000);
		wms_breaker *l = breaker_mode(NULL, "paths-count", WMS_BREAKER_MODE_COUNT_BASED, 1,
					      3600000);
		wms_shared_stats st;
		int r;
		wait_for(b, WMS_STORE_STATE_CONNECTED, -1, 5000);
		for (r = 0; r < REPS; r++) {
			vl[r] = run_calls(l, iters / 10, 0, &n_alloc);
			vs[r] = run_calls(b, iters / 10, 0, &n_alloc);
			calls += 2 * (iters / 10);
		}
		ms = median(vs, REPS);
		figure("breaker_shared_count_closed_ns_per_call", ms, 1);
		figure("breaker_shared_count_closed_vs_in_process", ms / median(vl, REPS), 2);
		wms_redis_store_stats(&st, s);
		{
			/* what the agent took in while a loop called at full speed */
			double secs = 0, sent = (double)REPS * (double)(iters / 10);
			for (r = 0; r < REPS; r++)
				secs += vs[r] * (double)(iters / 10) / 1e9;
			printf("# shared count window at a loop's full speed: %llu of %.0f outcomes "
			       "dropped (queue 4096)\n",
			       (unsigned long long)st.dropped, sent);
			figure("shared_count_outcomes_taken_per_s", (sent - (double)st.dropped) / secs, 0);
		}
		wms_breaker_free(b);
		wms_breaker_free(l);
	}
	printf("breaker_shared_allocs_per_call %g\n", (double)n_alloc / (double)calls);
	wms_breaker_store_free(s);
}

/* Commands for 10 000 calls with 1 % failures, about 100 ms of them. */
static uint64_t costs_1pct(wms_breaker_store *s, wms_breaker *b)
{
	wms_breaker_permit p;
	uint64_t c0 = commands(s);
	int i;

	for (i = 0; i < 10000; i++) {
		if (wms_breaker_acquire(&p, b, NULL) != WMS_OK)
			die("shared: a closed breaker rejected a call", NULL);
		wms_breaker_record(b, &p, i % 100 == 50 ? WMS_OUTCOME_FAILURE : WMS_OUTCOME_SUCCESS);
		if (i % 100 == 99)
			sleep_ms(1);
	}
	sleep_ms(20);
	return commands(s) - c0;
}

/* Commands per 10 000 calls, by what the calls did, and per idle second. */
static void command_costs(const rs_server *rs)
{
	wms_breaker_store *s = store(rs);
	wms_breaker *b = breaker(s, "costs", 1000000, 3600000);
	wms_breaker_permit p;
	uint64_t c0;
	int i;

	wait_for(b, WMS_STORE_STATE_CONNECTED, -1, 5000);
	sleep_ms(100);
	c0 = commands(s);
	sleep_ms(1000);
	figure("shared_redis_commands_per_idle_second", (double)(commands(s) - c0), 0);

	c0 = commands(s);
	for (i = 0; i < 10000; i++) {
		if (wms_breaker_acquire(&p, b, NULL) != WMS_OK)
			die("shared: a closed breaker rejected a call", NULL);
		wms_breaker_record(b, &p, WMS_OUTCOME_SUCCESS);
		if (i % 100 == 99)
			sleep_ms(1); /* 10 000 calls over about 100 ms */
	}
	sleep_ms(20);
	figure("shared_redis_commands_per_10k_successes", (double)(commands(s) - c0), 0);

	figure("shared_redis_commands_per_10k_calls_1pct_failures", (double)costs_1pct(s, b), 0);
	wms_breaker_free(b);
	{
		/* the rate modes send every call, batched */
		static const wms_breaker_mode modes[2] = { WMS_BREAKER_MODE_COUNT_BASED,
							   WMS_BREAKER_MODE_TIME_BASED };
		static const char *const names[2] = { "count", "time" };
		int m;
		for (m = 0; m < 2; m++) {
			char name[80];
			b = breaker_mode(s, names[m], modes[m], 1, 3600000);
			wait_for(b, WMS_STORE_STATE_CONNECTED, -1, 5000);
			snprintf(name, sizeof(name), "shared_redis_commands_per_10k_calls_1pct_failures_%s",
				 names[m]);
			figure(name, (double)costs_1pct(s, b), 0);
			wms_breaker_free(b);
		}
	}

	b = breaker(s, "costs-open", 1, 3600000);
	wait_for(b, WMS_STORE_STATE_CONNECTED, -1, 5000);
	wms_breaker_acquire(&p, b, NULL);
	wms_breaker_record(b, &p, WMS_OUTCOME_FAILURE);
	wait_for(b, -1, WMS_BREAKER_STATE_OPEN, 5000);
	c0 = commands(s);
	for (i = 0; i < 10000; i++) {
		if (wms_breaker_acquire(&p, b, NULL) != WMS_ERR_CIRCUIT_OPEN)
			die("shared: an open breaker let a call through", NULL);
		if (i % 100 == 99)
			sleep_ms(1);
	}
	figure("shared_redis_commands_per_10k_rejections", (double)(commands(s) - c0), 0);
	wms_breaker_free(b);
	wms_breaker_store_free(s);
}

/* A trip in replica A to a rejection in replica B, median of rounds. */
static void propagation(rs_server *rs, int kill_pubsub)
{
	wms_breaker_store *sa = store(rs), *sb = store(rs);
	int rounds = quick ? 3 : REPS, r;
	double v[REPS];

	for (r = 0; r < rounds; r++) {
		const char *name = kill_pubsub ? "trip-lost" : "trip";
		wms_breaker *a = breaker(sa, name, 1, 3600000), *b = breaker(sb, name, 1, 3600000);
		wms_breaker_permit p;
		uint64_t t0;
		wait_for(a, WMS_STORE_STATE_CONNECTED, -1, 5000);
		wait_for(b, WMS_STORE_STATE_CONNECTED, -1, 5000);
		if (kill_pubsub) {
			redisReply *k = rs_cmd(rs, "CLIENT KILL TYPE pubsub");
			if (k)
				freeReplyObject(k);
		}
		t0 = now_ns();
		wms_breaker_acquire(&p, a, NULL);
		wms_breaker_record(a, &p, WMS_OUTCOME_FAILURE);
		while (wms_breaker_acquire(&p, b, NULL) == WMS_OK) {
			wms_breaker_release(b, &p);
			if (now_ns() - t0 > 5000000000ull)
				die("shared: the trip never reached the other replica", NULL);
		}
		v[r] = (double)(now_ns() - t0) / 1e6;
		wms_breaker_reset(a);
		wait_for(b, -1, WMS_BREAKER_STATE_CLOSED, 5000);
		wms_breaker_free(a);
		wms_breaker_free(b);
	}
	figure(kill_pubsub ? "shared_trip_to_rejection_ms_pubsub_killed_just_before" : "shared_trip_to_rejection_ms",
	       median(v, rounds), 2);
	wms_breaker_store_free(sa);
	wms_breaker_store_free(sb);
}

static void degrade_rejoin(rs_server *rs)
{
	int rounds = quick ? 3 : 5, r;
	double dg[REPS], rj[REPS];
	wms_breaker_store *s = store(rs);
	wms_breaker *b = breaker(s, "degrade", 5, 3600000);

	for (r = 0; r < rounds; r++) {
		wait_for(b, WMS_STORE_STATE_CONNECTED, -1, 5000);
		sleep_ms(60);
		rs_freeze(rs);
		dg[r] = wait_for(b, WMS_STORE_STATE_DEGRADED, -1, 5000);
		rs_thaw(rs);
		rj[r] = wait_for(b, WMS_STORE_STATE_CONNECTED, -1, 5000);
	}
	printf("# shared: heartbeat 50 ms, command timeout 100 ms (the defaults)\n");
	figure("shared_time_to_degrade_ms", median(dg, rounds), 1);
	figure("shared_time_to_rejoin_ms", median(rj, rounds), 1);
	wms_breaker_free(b);
	wms_breaker_store_free(s);
}

void bench_shared(void)
{
	rs_server rs;

	if (rs_start(&rs, 0) != 0) {
		printf("# shared: skipped, no redis-server (./run installs it)\n");
		return;
	}
	paths(&rs);
	command_costs(&rs);
	propagation(&rs, 0);
	propagation(&rs, 1);
	degrade_rejoin(&rs);
	rs_stop(&rs);
}
