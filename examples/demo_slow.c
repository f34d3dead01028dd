/*
 * wms-demo-slow (./run demo --scenario slow-wms): a WMS that slows down
 * under a fulfillment loop that keeps ~200 orders/s flowing from ONE thread
 * through libwms's asynchronous API (wms/async.h, libwms's own poll loop).
 *
 * The WMS is wms-sim, started in this process on loopback. Its replies take
 * 5 ms, then (changed live, wms_sim_set_fault SLOW) 100 ms, 300 ms, 1 s,
 * 2 s, and back: 300 ms, 5 ms. Nothing fails - every reply is a success,
 * only late - so it is the client's two guards against a slow dependency
 * that act:
 *   - the bulkhead (bulkhead.max_concurrent_calls 50): 200 orders/s at
 *     300 ms each would be 60 calls in flight; the calls past 50 are
 *     refused at once (BULKHEAD_FULL, nothing sent);
 *   - the breaker's slow-call rule (count_based over the last 20 calls,
 *     slow_call_duration_ms 800, slow_call_rate_threshold 50 %): once half
 *     the calls take longer than 800 ms it opens, and every call is refused
 *     at once (CIRCUIT_OPEN, nothing sent) until its trial calls are fast
 *     again.
 * Refused orders are kept and sent again once the breaker is closed (and
 * the bulkhead has room); an order whose delivery is unknown (a deadline
 * hit) is sent again under the same order id, which the WMS treats as the
 * same order. Every 500 ms a line: calls in flight, completions per second,
 * statuses, the breaker's state, the process's threads. At the end the
 * ledger: every order is in the WMS exactly once with the reference we
 * hold, or known not sent (and not in the WMS); exit 1 otherwise.
 *
 *   wms-demo-slow [--rate N] [--short]
 *   (wms-demo --scenario slow-wms [...] runs this program)
 *     --rate N    orders per second, 10-1000 (default 200)
 *     --short     a shorter script (about 7 s instead of 12 s) for tests
 */
#include <ctype.h>
#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>
#include "wms/wms.h"
#include "wms_sim.h"
#include "util/num.h"
#include "example_common.h"

#define REPORT_MS 500u
#define TIMEOUT_MS 3000u
#define BULKHEAD 50u
#define HEADROOM 10u   /* resends leave this many slots to fresh orders */
#define BURST 64u      /* calls started per pass of the loop, at most */
#define SLOW_MS 800u   /* the breaker's slow_call_duration_ms */
#define PROBE_MS 100u  /* while the breaker is not closed, one order of the backlog this often */
#define N_STATUS 32    /* more than wms_status has */

/* The WMS's reply time from `at_ms` on. */
typedef struct step {
	uint32_t at_ms;
	uint32_t delay_ms;
} step;

/* The scripts, timed so that the breaker's story does not hang on the
 * machine's speed. It can open only once calls slower than 800 ms have
 * ended: not before 4.0 s (1 s replies from 3.0 s; short: 2 s replies from
 * 1.0 s, so 3.0 s). Its trial calls go 1.5 s later or more: default, from
 * 5.5 s, into 2 s replies (it reopens, trials again from 7.5 s: 2 s, or
 * 300 ms from 8.5 s, or 5 ms from 9.0 s); short, from 4.5 s, into 300 ms
 * or 5 ms replies (it closes). New orders flow 3 s (short: 2 s) past the
 * WMS's recovery, refused ones are sent again until 3 s (2.5 s) later. */
static const step script_default[] = {
	{ 0, 5 }, { 2000, 100 }, { 2500, 300 }, { 3000, 1000 }, { 3500, 2000 },
	{ 8500, 300 }, { 9000, 5 },
};
static const step script_short[] = {
	{ 0, 5 }, { 500, 300 }, { 1000, 2000 }, { 4500, 300 }, { 5000, 5 },
};

typedef struct script {
	const step *steps;
	size_t count;
	uint32_t fresh_ms;  /* new orders from 0 to this */
	uint32_t resend_ms; /* refused orders are sent again until this */
	uint32_t end_ms;    /* every call has ended by this (calls still in flight are cancelled) */
} script;

enum order_state { NEW, IN_FLIGHT, PENDING, UNKNOWN, CONFIRMED, REJECTED };

struct demo;

typedef struct order_rec {
	struct demo *d;
	char id[32];
	enum order_state state;
	int queued;     /* in the resend queue */
	unsigned sends; /* SubmitOrder calls started for it */
	char reference[WMS_ID_MAX + 1];
} order_rec;

typedef struct demo {
	const script *sc;
	uint32_t rate;
	wms_sim *sim;
	wms_client *client;
	wms_breaker *breaker;
	wms_async *async;
	uint64_t t0;
	order_rec *orders;
	size_t n_orders, next_fresh;
	/* orders to send again (refused, or delivery unknown), first in first out */
	size_t *queue, q_head, q_len;
	size_t next_step;
	uint32_t delay_ms;
	int last_ok; /* the latest call that reached the WMS succeeded */
	/* this report's interval, and the whole run */
	uint64_t iv_done, iv_status[N_STATUS];
	uint64_t calls, resends, duplicates, status[N_STATUS];
	size_t max_in_flight;
	long max_threads, max_sim_threads, max_other_threads;
	double slowest_start_ms;
	char transitions[512];
} demo;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static double t_s(const demo *d)
{
	return (double)(now_ns() - d->t0) / 1e9;
}

static uint64_t at_ns(const demo *d, uint64_t ms)
{
	return d->t0 + ms * 1000000u;
}

/* ---- threads ---------------------------------------------------------------- */

typedef struct thread_count {
	long total;    /* /proc/self/status Threads: */
	long sim;      /* wms-sim's: its supervisor, libmicrohttpd's listener and one per connection */
	long sim_conn; /* ... of which connections */
	long other;    /* anything else but this thread: libcurl's resolver, libwms (none expected) */
} thread_count;

/* Who the threads are, by their names (/proc/self/task/TID/comm): this
 * one is the process's first; libmicrohttpd names its own MHD-listen and
 * MHD-connection; the sim's supervisor was named at its birth (start_sim). */
static void count_threads(thread_count *tc)
{
	pid_t self = getpid();
	int tries;
	for (tries = 0; tries < 3; tries++) {
		DIR *dir = opendir("/proc/self/task");
		struct dirent *e;
		long seen = 0;
		int gone = 0;
		memset(tc, 0, sizeof(*tc));
		tc->total = ex_threads_now();
		if (!dir)
			return;
		while ((e = readdir(dir)) != NULL) {
			char path[300], name[32] = "";
			FILE *f;
			if (!isdigit((unsigned char)e->d_name[0]))
				continue;
			seen++;
			if (atol(e->d_name) == (long)self)
				continue;
			snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
			if ((f = fopen(path, "r")) == NULL) {
				/* it ended since readdir listed it (a connection's
				 * thread): not counted, and the count taken again */
				gone = 1;
				continue;
			}
			if (!fgets(name, sizeof(name), f))
				name[0] = '\0';
			fclose(f);
			if (strncmp(name, "MHD-connection", 14) == 0) {
				tc->sim++;
				tc->sim_conn++;
			} else if (strncmp(name, "MHD-", 4) == 0 ||
				   strncmp(name, "sim-supervisor", 14) == 0) {
				tc->sim++;
			} else {
				tc->other++;
			}
		}
		closedir(dir);
		if (!gone && seen == tc->total) /* no thread came or went meanwhile */
			return;
	}
}

/* ---- the ledger's calls ------------------------------------------------------ */

static void enqueue(demo *d, order_rec *r)
{
	if (r->queued)
		return;
	r->queued = 1;
	d->queue[(d->q_head + d->q_len) % d->n_orders] = (size_t)(r - d->orders);
	d->q_len++;
}

static void on_submit(wms_status st, const wms_submit_reply *reply, const wms_error *err,
		      void *payload)
{
	order_rec *r = payload;
	demo *d = r->d;
	unsigned slot = (unsigned)st < N_STATUS ? (unsigned)st : N_STATUS - 1;

	d->iv_done++;
	d->iv_status[slot]++;
	d->status[slot]++;
	if (err->delivery != WMS_DELIVERY_NOT_SENT)
		d->last_ok = st == WMS_OK;
	if (st == WMS_OK) {
		r->state = CONFIRMED;
		snprintf(r->reference, sizeof(r->reference), "%s", reply->wms_reference);
		d->duplicates += reply->duplicate != 0;
	} else if (err->delivery == WMS_DELIVERY_NOT_SENT) {
		/* refused (BULKHEAD_FULL, CIRCUIT_OPEN) or never connected:
		 * not in the WMS - unless an earlier send's fate is unknown */
		if (r->state != UNKNOWN)
			r->state = PENDING;
		enqueue(d, r);
	} else if (st == WMS_ERR_SOAP_FAULT && !wms_error_is_retryable(err)) {
		r->state = REJECTED; /* a business rejection: the demo's orders never get one */
	} else {
		r->state = UNKNOWN; /* the WMS may have it: send again, same order id */
		enqueue(d, r);
	}
}

static void on_transition(const wms_breaker_event *ev, void *payload)
{
	demo *d = payload;
	size_t n = strlen(d->transitions);
	snprintf(d->transitions + n, sizeof(d->transitions) - n, " -> %s",
		 wms_breaker_state_name(ev->to));
	printf("%6.2fs  >>> breaker %s -> %s (%s)\n", t_s(d), wms_breaker_state_name(ev->from),
	       wms_breaker_state_name(ev->to), ev->reason);
}

/* Start one SubmitOrder; its callback may have run when this returns
 * (refused at once). */
static void send_order(demo *d, order_rec *r)
{
	wms_order_line line;
	wms_order o = ex_demo_order(r->id, &line);
	uint64_t t = now_ns();
	double ms;

	if (r->state != UNKNOWN)
		r->state = IN_FLIGHT;
	r->sends++;
	d->calls++;
	d->resends += r->sends > 1;
	if (wms_async_submit_order(NULL, d->async, &o, on_submit, r) != WMS_OK) {
		/* only for a NULL context or callback */
		fprintf(stderr, "wms-demo-slow: cannot start a call\n");
		exit(1);
	}
	ms = (double)(now_ns() - t) / 1e6;
	if (ms > d->slowest_start_ms)
		d->slowest_start_ms = ms;
	if (wms_async_in_flight(d->async) > d->max_in_flight)
		d->max_in_flight = wms_async_in_flight(d->async);
}

/* ---- the loop ------------------------------------------------------------------ */

static void report(demo *d, uint64_t iv_ns)
{
	thread_count tc;
	uint64_t other = d->iv_done - d->iv_status[WMS_OK] - d->iv_status[WMS_ERR_BULKHEAD_FULL] -
			 d->iv_status[WMS_ERR_CIRCUIT_OPEN];

	count_threads(&tc);
	if (tc.total > d->max_threads)
		d->max_threads = tc.total;
	if (tc.sim > d->max_sim_threads)
		d->max_sim_threads = tc.sim;
	if (tc.other > d->max_other_threads)
		d->max_other_threads = tc.other;
	printf("%6.2fs %6u ms %6zu ", t_s(d), (unsigned)d->delay_ms, wms_async_in_flight(d->async));
	if (iv_ns >= 100000000u) /* a rate over less than 100 ms says little */
		printf("%7.0f", (double)d->iv_done * 1e9 / (double)iv_ns);
	else
		printf("%7s", "-");
	printf(" %6" PRIu64 " %13" PRIu64 " %12" PRIu64 " %5" PRIu64 "  %-9s  %3ld = 1 + %ld sim",
	       d->iv_status[WMS_OK], d->iv_status[WMS_ERR_BULKHEAD_FULL],
	       d->iv_status[WMS_ERR_CIRCUIT_OPEN], other,
	       wms_breaker_state_name(wms_breaker_state_get(d->breaker)), tc.total, tc.sim);
	if (tc.other)
		printf(" + %ld other", tc.other);
	printf("\n");
	fflush(stdout);
	d->iv_done = 0;
	memset(d->iv_status, 0, sizeof(d->iv_status));
}

/* Whether the WMS answers well again: breaker closed, and the latest call
 * that reached the WMS a success. */
static int healthy(demo *d)
{
	return d->last_ok && wms_breaker_state_get(d->breaker) == WMS_BREAKER_STATE_CLOSED;
}

static order_rec *dequeue(demo *d)
{
	order_rec *r = &d->orders[d->queue[d->q_head]];
	d->q_head = (d->q_head + 1) % d->n_orders;
	d->q_len--;
	r->queued = 0;
	return r;
}

/* Past resend_ms: refused orders are not sent any more (they stay known
 * not sent); those whose delivery is unknown still are. */
static void drop_pending(demo *d)
{
	size_t n = d->q_len;
	while (n--) {
		order_rec *r = dequeue(d);
		if (r->state != PENDING)
			enqueue(d, r);
	}
}

static int run(demo *d)
{
	const script *sc = d->sc;
	uint64_t next_report, last_report, next_probe = 0, period_ns = 1000000000u / d->rate;
	int dropped = 0;

	d->t0 = now_ns();
	last_report = d->t0;
	next_report = d->t0 + REPORT_MS * 1000000u;
	for (;;) {
		uint64_t now = now_ns(), wake;
		unsigned started = 0;
		long wait_ms;

		/* the WMS's script */
		while (d->next_step < sc->count && now >= at_ns(d, sc->steps[d->next_step].at_ms)) {
			uint32_t ms = sc->steps[d->next_step++].delay_ms;
			if (wms_sim_set_fault(d->sim, NULL, WMS_SIM_FAULT_SLOW, ms) != WMS_SIM_OK) {
				fprintf(stderr, "wms-demo-slow: %s\n", wms_sim_last_error());
				return 1;
			}
			if (d->delay_ms)
				printf("%6.2fs  >>> the WMS's replies now take %u ms\n", t_s(d), ms);
			d->delay_ms = ms;
		}
		/* new orders, on a fixed schedule (a late loop catches up) */
		while (d->next_fresh < d->n_orders && started < BURST &&
		       now >= d->t0 + d->next_fresh * period_ns) {
			send_order(d, &d->orders[d->next_fresh++]);
			started++;
		}
		if (!dropped && now >= at_ns(d, sc->resend_ms)) {
			drop_pending(d);
			dropped = 1;
		}
		/* the backlog: while the WMS answers well, as the bulkhead has
		 * room for (a few slots left to new orders); otherwise one order
		 * now and then, which the breaker refuses at once or lets through
		 * as a trial call (an open breaker moves on only when asked) */
		if (d->q_len && !healthy(d) && now >= next_probe) {
			send_order(d, dequeue(d));
			started++;
			next_probe = now + PROBE_MS * 1000000u;
		}
		while (d->q_len && started < BURST && healthy(d) &&
		       wms_async_in_flight(d->async) + HEADROOM < BULKHEAD) {
			uint64_t refused = d->status[WMS_ERR_BULKHEAD_FULL] +
					   d->status[WMS_ERR_CIRCUIT_OPEN];
			send_order(d, dequeue(d));
			started++;
			if (d->status[WMS_ERR_BULKHEAD_FULL] + d->status[WMS_ERR_CIRCUIT_OPEN] != refused)
				break; /* refused at once: later */
		}

		now = now_ns();
		if (now >= next_report) {
			report(d, now - last_report);
			last_report = now;
			next_report += REPORT_MS * 1000000u;
			if (next_report <= now)
				next_report = now + REPORT_MS * 1000000u;
		}
		if (d->next_fresh == d->n_orders && !wms_async_in_flight(d->async) && !d->q_len)
			break; /* every order answered, or too late to send */
		if (now >= at_ns(d, sc->end_ms)) {
			/* never in a healthy run: the deadline of every call is 3 s */
			size_t n = wms_async_cancel_all(d->async);
			printf("%6.2fs  >>> out of time: %zu calls cancelled, %zu orders not resolved\n",
			       t_s(d), n, d->q_len);
			break;
		}

		/* wait for the next thing to do, or for a call's socket or timer */
		wake = next_report;
		if (d->next_fresh < d->n_orders && d->t0 + d->next_fresh * period_ns < wake)
			wake = d->t0 + d->next_fresh * period_ns;
		if (d->next_step < sc->count && at_ns(d, sc->steps[d->next_step].at_ms) < wake)
			wake = at_ns(d, sc->steps[d->next_step].at_ms);
		if (d->q_len && !healthy(d) && next_probe < wake)
			wake = next_probe;
		if (!dropped && d->q_len && at_ns(d, sc->resend_ms) < wake)
			wake = at_ns(d, sc->resend_ms);
		if (at_ns(d, sc->end_ms) < wake)
			wake = at_ns(d, sc->end_ms);
		if (started >= BURST || (d->q_len && healthy(d) &&
					 wms_async_in_flight(d->async) + HEADROOM < BULKHEAD))
			wake = 0; /* more to start now */
		now = now_ns();
		wait_ms = wake > now ? (long)((wake - now + 999999u) / 1000000u) : 0;
		if (wms_async_poll(d->async, (int)wait_ms) != WMS_OK) {
			fprintf(stderr, "wms-demo-slow: the event loop failed\n");
			return 1;
		}
	}
	if (d->iv_done || now_ns() - last_report >= 100000000u)
		report(d, now_ns() - last_report);
	return 0;
}

/* ---- the ledger ------------------------------------------------------------------ */

static int check_ledger(demo *d)
{
	size_t confirmed = 0, not_sent = 0, bad = 0, i;
	for (i = 0; i < d->n_orders; i++) {
		order_rec *r = &d->orders[i];
		wms_sim_order_info info;
		int in_wms = wms_sim_order_get(&info, d->sim, r->id);
		switch (r->state) {
		case CONFIRMED:
			confirmed++;
			if (!in_wms) {
				printf("  %s: confirmed, but the WMS does not have it\n", r->id);
				bad++;
			} else if (strcmp(info.wms_reference, r->reference) != 0) {
				printf("  %s: reference %s, the WMS has %s\n", r->id, r->reference,
				       info.wms_reference);
				bad++;
			}
			break;
		case PENDING:
			not_sent++;
			if (in_wms) {
				printf("  %s: known not sent, but the WMS has it\n", r->id);
				bad++;
			}
			break;
		case NEW:
		case IN_FLIGHT:
		case UNKNOWN:
		case REJECTED:
			printf("  %s: %s\n", r->id,
			       r->state == UNKNOWN ? "delivery still unknown"
			       : r->state == REJECTED ? "rejected by the WMS"
						      : "never ended");
			bad++;
			break;
		}
	}
	/* exactly once: the WMS holds one order per id, and no order we do not know */
	if (wms_sim_order_count(d->sim) != confirmed) {
		printf("  the WMS holds %zu orders, the ledger %zu confirmed\n",
		       wms_sim_order_count(d->sim), confirmed);
		bad++;
	}
	printf("ledger: %zu orders: %zu confirmed (in the WMS exactly once, same reference), "
	       "%zu known not sent (not in the WMS): %s\n",
	       d->n_orders, confirmed, not_sent,
	       bad ? "CHECK FAILED" : "nothing lost, nothing doubled");
	return bad ? 1 : 0;
}

static void summary(demo *d)
{
	uint64_t other = d->calls - d->status[WMS_OK] - d->status[WMS_ERR_BULKHEAD_FULL] -
			 d->status[WMS_ERR_CIRCUIT_OPEN];
	printf("\nsummary\n");
	printf("  orders:       %zu (%u/s for %.1f s)\n", d->n_orders, (unsigned)d->rate,
	       d->sc->fresh_ms / 1000.0);
	printf("  calls:        %" PRIu64 " (%" PRIu64 " sends of refused or unknown orders; %" PRIu64
	       " answered as duplicates)\n", d->calls, d->resends, d->duplicates);
	printf("  statuses:     OK %" PRIu64 ", BULKHEAD_FULL %" PRIu64 ", CIRCUIT_OPEN %" PRIu64
	       ", other %" PRIu64 "\n", d->status[WMS_OK], d->status[WMS_ERR_BULKHEAD_FULL],
	       d->status[WMS_ERR_CIRCUIT_OPEN], other);
	for (int i = 0; i < N_STATUS; i++)
		if (d->status[i] && i != WMS_OK && i != WMS_ERR_BULKHEAD_FULL &&
		    i != WMS_ERR_CIRCUIT_OPEN)
			printf("                %s %" PRIu64 "\n", wms_status_name((wms_status)i),
			       d->status[i]);
	printf("  breaker:      %s\n", d->transitions);
	printf("  in flight:    at most %zu (the bulkhead's cap: %u)\n", d->max_in_flight,
	       (unsigned)BULKHEAD);
	printf("  threads:      at most %ld: 1 runs every call (this one), at most %ld are "
	       "wms-sim's, ", d->max_threads, d->max_sim_threads);
	if (d->max_other_threads)
		printf("at most %ld other (libwms's, libcurl's)\n", d->max_other_threads);
	else
		printf("none other (libwms and libcurl start none)\n");
	printf("  slowest call start: %.2f ms (the loop never waits on the WMS)\n",
	       d->slowest_start_ms);
	printf("  requests the WMS saw: %" PRIu64 "\n", wms_sim_requests(d->sim, NULL));
}

/* ---- set-up -------------------------------------------------------------------------- */

static int start_sim(demo *d)
{
	wms_sim_options so = WMS_SIM_OPTIONS_INIT;
	wms_sim_status st;
	so.tick_ms = 3600000; /* orders stay RECEIVED for the whole demo */
	/* the sim's supervisor thread takes its name from this one, at its
	 * birth: named so, the thread count can tell it */
	prctl(PR_SET_NAME, "sim-supervisor", 0, 0, 0);
	st = wms_sim_start(&d->sim, &so);
	prctl(PR_SET_NAME, "wms-demo-slow", 0, 0, 0);
	if (st != WMS_SIM_OK) {
		fprintf(stderr, "wms-demo-slow: simulator: %s\n", wms_sim_last_error());
		return -1;
	}
	return 0;
}

static int start_client(demo *d)
{
	wms_client_options o = WMS_CLIENT_OPTIONS_INIT;
	wms_error err;
	o.endpoint = wms_sim_url(d->sim);
	o.timeout_ms = TIMEOUT_MS;
	o.connect_timeout_ms = 1000;
	o.breaker_options.name = "wms";
	o.breaker_options.mode = WMS_BREAKER_MODE_COUNT_BASED;
	o.breaker_options.sliding_window_size = 20;
	o.breaker_options.minimum_number_of_calls = 20;
	o.breaker_options.failure_rate_threshold = 50;
	o.breaker_options.slow_call_rate_threshold = 50;
	o.breaker_options.slow_call_duration_ms = SLOW_MS;
	o.breaker_options.open_duration_ms = 1500;
	o.breaker_options.permitted_calls_in_half_open = 5;
	o.breaker_options.max_wait_in_half_open_ms = 5000; /* longer than a deadline */
	o.breaker_options.callbacks.on_state_change = on_transition;
	o.breaker_options.callbacks.payload = d;
	o.bulkhead.max_concurrent_calls = BULKHEAD;
	if (wms_client_new(&d->client, &o, &err) != WMS_OK) {
		fprintf(stderr, "wms-demo-slow: client: %s: %s\n", wms_status_name(err.status),
			err.message);
		return -1;
	}
	d->breaker = wms_client_breaker(d->client);
	if (wms_async_new(&d->async, d->client, NULL, &err) != WMS_OK) {
		fprintf(stderr, "wms-demo-slow: async: %s: %s\n", wms_status_name(err.status),
			err.message);
		return -1;
	}
	return 0;
}

static int usage(void)
{
	fprintf(stderr, "usage: wms-demo-slow [--rate N] [--short]\n"
			"       (wms-demo --scenario slow-wms [--rate N] [--short])\n"
			"  --rate N    orders per second, 10-1000 (default 200)\n"
			"  --short     a shorter script, about 7 s instead of 12 s\n");
	return 2;
}

int main(int argc, char **argv)
{
	static const script scripts[2] = {
		{ script_default, sizeof(script_default) / sizeof(script_default[0]), 12000, 15000,
		  18000 },
		{ script_short, sizeof(script_short) / sizeof(script_short[0]), 7000, 9500, 12000 },
	};
	demo d;
	int i, rc = 1;

	memset(&d, 0, sizeof(d));
	d.sc = &scripts[0];
	d.rate = 200;
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--rate") && i + 1 < argc) {
			uint64_t v;
			if (wms__parse_uint_str(argv[++i], 10, 1000, &v) != WMS__NUM_OK)
				return usage();
			d.rate = (uint32_t)v;
		} else if (!strcmp(argv[i], "--short")) {
			d.sc = &scripts[1];
		} else if (!strcmp(argv[i], "--scenario") && i + 1 < argc &&
			   !strcmp(argv[i + 1], "slow-wms")) {
			i++; /* from wms-demo */
		} else {
			return usage();
		}
	}
	d.n_orders = (size_t)d.rate * d.sc->fresh_ms / 1000u;
	d.orders = calloc(d.n_orders, sizeof(*d.orders));
	d.queue = calloc(d.n_orders, sizeof(*d.queue));
	if (!d.orders || !d.queue) {
		fprintf(stderr, "wms-demo-slow: out of memory\n");
		goto done;
	}
	for (size_t k = 0; k < d.n_orders; k++) {
		d.orders[k].d = &d;
		snprintf(d.orders[k].id, sizeof(d.orders[k].id), "SLOW-%05zu", k + 1);
	}
	snprintf(d.transitions, sizeof(d.transitions), "CLOSED");
	d.last_ok = 1;
	if (start_sim(&d) || start_client(&d))
		goto done;

	printf("libwms demo: a WMS that slows down (scenario slow-wms)\n");
	printf("WMS: %s (wms-sim, in this process): replies take", wms_sim_url(d.sim));
	for (size_t k = 0; k < d.sc->count; k++)
		printf("%s %u ms from %.1f s", k ? "," : "", (unsigned)d.sc->steps[k].delay_ms,
		       d.sc->steps[k].at_ms / 1000.0);
	printf("\nloop: %u orders/s for %.1f s, every call from ONE thread (wms/async.h, libwms's "
	       "poll loop)\n", (unsigned)d.rate, d.sc->fresh_ms / 1000.0);
	printf("client: deadline %u ms; bulkhead: %u calls in flight; breaker: last 20 calls, "
	       "opens at 50 %% failed\n        or 50 %% slower than %u ms, open 1.5 s, 5 trial "
	       "calls\n", TIMEOUT_MS, BULKHEAD, SLOW_MS);
	printf("orders refused (BULKHEAD_FULL, CIRCUIT_OPEN: nothing sent) are sent again once "
	       "the breaker is closed\n");
	printf("\nevery %u ms: the calls in flight, completions per second and their statuses, "
	       "the breaker,\nthe process's threads (/proc/self/status): 1 = this thread, which "
	       "runs every call;\nsim = wms-sim's (its supervisor, its HTTP listener and one per "
	       "open connection);\nany other (libwms's, libcurl's) would be listed\n\n",
	       REPORT_MS);
	printf("   time  WMS delay flight  done/s     OK  BULKHEAD_FULL  CIRCUIT_OPEN other  "
	       "breaker    threads\n");
	fflush(stdout);

	rc = run(&d);
	if (rc == 0) {
		summary(&d);
		rc = check_ledger(&d);
	}
done:
	wms_async_free(d.async);
	wms_client_free(d.client);
	wms_sim_stop(d.sim);
	free(d.orders);
	free(d.queue);
	printf("%s\n", rc ? "demo FAILED" : "demo OK");
	return rc ? 1 : 0;
}
