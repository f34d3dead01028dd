/*
 * wms-demo: a fulfillment loop riding out a WMS outage.
 *
 * Seed 002's scenario with time compressed (1 tick = 100 ms by default): one
 * order per tick for 40 ticks, the WMS stops answering for 15 ticks from
 * tick 11, every call has a 3-tick deadline. The WMS is wms-sim, started in
 * this process on loopback. Each call runs on its own thread, as a service's
 * request threads would, so a hanging WMS ties up threads - until the
 * breaker opens and rejects calls at once.
 *
 * No order is lost: CIRCUIT_OPEN and NOT_SENT orders stay in the ledger and
 * are resubmitted once the breaker closes; UNKNOWN ones are resolved with
 * GetOrderStatus or resubmitted under the same order id. The run ends by
 * checking that the WMS holds every order exactly once (exit 1 if not).
 *
 *   wms-demo [--scenario default|no-breaker|low-threshold|long-open|short-outage]
 *            [--policy count_based|consecutive] [--outage hang|refuse|http-503|
 *            server-fault|reply-lost|garbage] [--tick-ms N] [--ticks N]
 *            [--no-compare] [--endpoint URL]
 *   wms-demo --replicas N ...   the fleet demo (wms-demo-fleet): N replica
 *            processes, per-process breakers and then one shared through Redis
 *   wms-demo --scenario slow-wms [--rate N] [--short]   a WMS slowing down
 *            under ~200 orders/s from one thread (wms-demo-slow: the
 *            asynchronous API, the bulkhead, the breaker's slow-call rule)
 * A replica of the fleet demo runs with --endpoint URL --replica ID
 * [--shared-redis URL]: its orders are R<ID>-ORD-nnnn, its breaker shared
 * when a Redis URL is given, and it ends with one "replica ..." line.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "wms/wms.h"
#include "wms_sim.h"
#include "util/num.h"
#include "example_common.h"

enum ledger_state { PENDING, IN_FLIGHT, UNKNOWN, CONFIRMED };

typedef struct order_rec {
	char id[32];
	enum ledger_state state;
	char reference[WMS_ID_MAX + 1];
	unsigned submits;       /* SubmitOrder calls that reached the breaker */
	unsigned rejected;      /* CIRCUIT_OPEN */
	wms_status first_status;
	int first_done;
} order_rec;

typedef struct scenario {
	const char *name;
	const char *what;
	int breaker;            /* 0: no breaker (disabled: measure only) */
	uint32_t threshold_pct; /* count_based failure rate */
	uint32_t open_ticks;
	uint32_t outage_ticks;
} scenario;

static const scenario scenarios[] = {
	{ "default", "15-tick outage, threshold 50 %, open 5 ticks, 3 trial calls", 1, 50, 5, 15 },
	{ "no-breaker", "15-tick outage, no breaker: every call waits for its deadline", 0, 50, 5, 15 },
	{ "low-threshold", "threshold 30 %: the breaker opens sooner", 1, 30, 5, 15 },
	{ "long-open", "open 10 ticks: fewer trial calls during the outage", 1, 50, 10, 15 },
	{ "short-outage", "5-tick outage, threshold 80 %: the rate never gets there", 1, 80, 5, 5 },
};

typedef struct demo {
	/* configuration */
	const scenario *sc;
	int consecutive;
	const char *outage;
	uint32_t tick_ms, ticks, outage_from;
	int quiet;
	const char *endpoint; /* a real WMS instead of the simulator */
	const char *replica;  /* the fleet demo's replica id, or NULL */
	const char *redis;    /* the fleet demo's shared breaker, or NULL */
	/* run state */
	wms_sim *sim;
	wms_client *client;
	uint64_t t0;
	pthread_mutex_t lock;
	order_rec *orders;
	size_t order_count;
	uint64_t calls, sent, failed, rejected;
	int last_ok; /* the most recent call that reached the WMS succeeded */
	double waited_ms;
	char transitions[256];
} demo;

typedef struct job {
	demo *d;
	order_rec *rec;
	uint32_t tick;
	int recovery;
} job;

static void resolve_unknown(demo *d, order_rec *rec);

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static double since_ms(const demo *d)
{
	return (now_ns() - d->t0) / 1e6;
}

static void sleep_until(uint64_t t)
{
	uint64_t n = now_ns();
	if (t > n) {
		struct timespec ts = { (time_t)((t - n) / 1000000000u), (long)((t - n) % 1000000000u) };
		while (nanosleep(&ts, &ts) && errno == EINTR)
			;
	}
}

static void say(demo *d, const char *fmt, ...)
#if defined(__GNUC__)
	__attribute__((format(printf, 2, 3)))
#endif
;

static void say(demo *d, const char *fmt, ...)
{
	va_list ap;
	if (d->quiet)
		return;
	pthread_mutex_lock(&d->lock);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	fflush(stdout);
	pthread_mutex_unlock(&d->lock);
}

static void on_transition(const wms_breaker_event *ev, void *ctx)
{
	demo *d = ctx;
	size_t n;
	if (ev->from == ev->to) { /* the shared store joined or was lost */
		say(d, "%7.2fs         >>> breaker store %s (%s)\n", since_ms(d) / 1000.0,
		    wms_store_state_name(ev->store), ev->reason);
		return;
	}
	/* a shared breaker's events come from its store's thread too */
	pthread_mutex_lock(&d->lock);
	n = strlen(d->transitions);
	snprintf(d->transitions + n, sizeof(d->transitions) - n, " -> %s",
		 wms_breaker_state_name(ev->to));
	pthread_mutex_unlock(&d->lock);
	say(d, "%7.2fs         >>> breaker %s -> %s (%s)\n", since_ms(d) / 1000.0,
	    wms_breaker_state_name(ev->from), wms_breaker_state_name(ev->to), ev->reason);
}

/* One SubmitOrder on a worker thread; the ledger learns the outcome. */
static void *submit_job(void *arg)
{
	job *j = arg;
	demo *d = j->d;
	order_rec *rec = j->rec;
	wms_order_line line;
	wms_order o = ex_demo_order(rec->id, &line);
	wms_submit_reply reply;
	wms_error err;
	uint64_t start;
	wms_status st;

	if (j->recovery == 2) {
		/* an UNKNOWN order: ask the WMS before resending */
		resolve_unknown(d, rec);
		pthread_mutex_lock(&d->lock);
		st = rec->state == PENDING ? WMS_OK : WMS_ERR_INTERNAL;
		if (rec->state == IN_FLIGHT || rec->state == UNKNOWN)
			rec->state = UNKNOWN;
		else if (rec->state == PENDING)
			rec->state = IN_FLIGHT;
		pthread_mutex_unlock(&d->lock);
		if (st != WMS_OK) {
			free(j);
			return NULL;
		}
	}
	start = now_ns();
	st = wms_submit_order(&reply, d->client, &o, &err);
	double ms = (now_ns() - start) / 1e6;
	const char *bstate = wms_breaker_state_name(wms_breaker_state_get(wms_client_breaker(d->client)));

	pthread_mutex_lock(&d->lock);
	d->calls++;
	d->waited_ms += ms;
	if (st == WMS_ERR_CIRCUIT_OPEN) {
		d->rejected++;
		rec->rejected++;
	} else {
		d->sent++;
		rec->submits++;
		if (st != WMS_OK)
			d->failed++;
		d->last_ok = st == WMS_OK;
	}
	if (!rec->first_done) {
		rec->first_done = 1;
		rec->first_status = st;
	}
	if (st == WMS_OK) {
		rec->state = CONFIRMED;
		snprintf(rec->reference, sizeof(rec->reference), "%s", reply.wms_reference);
	} else if (err.delivery == WMS_DELIVERY_NOT_SENT) {
		rec->state = rec->state == UNKNOWN ? UNKNOWN : PENDING; /* keep it; resend later */
	} else if (st == WMS_ERR_SOAP_FAULT && strcmp(err.fault_code, "Client") == 0) {
		rec->state = PENDING; /* a business rejection; the demo's orders never get one */
	} else {
		rec->state = UNKNOWN; /* may be in the WMS: ask before resending */
	}
	pthread_mutex_unlock(&d->lock);

	if (!d->quiet) {
		char when[16];
		snprintf(when, sizeof(when), j->recovery ? "retry" : "%5u", j->tick);
		say(d, "%7.2fs %5s  %-10s %-13s %-9s %-10s %7.1f ms%s\n", since_ms(d) / 1000.0, when,
		    rec->id, wms_status_name(st),
		    st == WMS_OK ? (reply.duplicate ? "DUPLICATE" : "ANSWERED")
				 : wms_delivery_name(err.delivery),
		    bstate, ms, st == WMS_ERR_CIRCUIT_OPEN ? "  (kept for later)" : "");
	}
	free(j);
	return NULL;
}

static int spawn(pthread_t *th, demo *d, order_rec *rec, uint32_t tick, int recovery)
{
	job *j = malloc(sizeof(*j));
	if (!j)
		return -1;
	j->d = d;
	j->rec = rec;
	j->tick = tick;
	j->recovery = recovery;
	rec->state = IN_FLIGHT;
	if (pthread_create(th, NULL, submit_job, j) != 0) {
		free(j);
		return -1;
	}
	return 0;
}

/* An UNKNOWN order: did the WMS get it? */
static void resolve_unknown(demo *d, order_rec *rec)
{
	wms_status_reply sr;
	wms_error err;
	wms_status st = wms_get_order_status(&sr, d->client, rec->id, &err);
	pthread_mutex_lock(&d->lock);
	if (st != WMS_ERR_CIRCUIT_OPEN)
		d->last_ok = st == WMS_OK || st == WMS_ERR_SOAP_FAULT;
	if (st == WMS_OK) {
		rec->state = CONFIRMED;
		snprintf(rec->reference, sizeof(rec->reference), "%s", sr.wms_reference);
	} else if (st == WMS_ERR_SOAP_FAULT && strcmp(err.wms_code, "UNKNOWN_ORDER") == 0) {
		rec->state = PENDING; /* never arrived: resubmit */
	} else {
		rec->state = UNKNOWN; /* still cannot tell: ask again later */
	}
	pthread_mutex_unlock(&d->lock);
	say(d, "%7.2fs check  %-10s GetOrderStatus -> %s%s\n", since_ms(d) / 1000.0, rec->id,
	    wms_status_name(st),
	    st == WMS_OK ? " (the WMS has it: confirmed)"
			 : rec->state == PENDING ? " (the WMS never got it: resubmit)" : "");
}

/* A replica of the fleet demo says "ready" (its shared breaker joined,
 * when it has one) and starts when wms-demo-fleet writes a byte to its
 * stdin: every replica's ticks then count from the same moment, however
 * long each took to start. */
static int replica_ready(demo *d)
{
	char go;

	if (d->redis && !ex_wait_store(d->client, 30000, 1)) {
		fprintf(stderr, "wms-demo: replica %s: the shared breaker never joined\n",
			d->replica);
		return -1;
	}
	printf("ready\n");
	fflush(stdout);
	if (read(0, &go, 1) != 1) {
		fprintf(stderr, "wms-demo: replica %s: no start from wms-demo-fleet\n", d->replica);
		return -1;
	}
	return 0;
}

static int start_client(demo *d, const char *endpoint, int with_breaker)
{
	wms_client_options o = WMS_CLIENT_OPTIONS_INIT;
	wms_error err;
	o.endpoint = endpoint;
	o.timeout_ms = 3 * d->tick_ms; /* the lab: a call waits 3 s, then times out */
	o.connect_timeout_ms = d->tick_ms;
	o.breaker_options.name = "wms";
	if (d->consecutive) {
		o.breaker_options.mode = WMS_BREAKER_MODE_CONSECUTIVE;
		o.breaker_options.failure_threshold = 5;
	} else {
		o.breaker_options.mode = WMS_BREAKER_MODE_COUNT_BASED;
		o.breaker_options.sliding_window_size = 10;
		o.breaker_options.minimum_number_of_calls = 10;
		o.breaker_options.failure_rate_threshold = d->sc->threshold_pct;
		o.breaker_options.permitted_calls_in_half_open = 3;
	}
	o.breaker_options.open_duration_ms = d->sc->open_ticks * d->tick_ms;
	o.breaker_options.max_wait_in_half_open_ms = 10 * d->tick_ms;
	o.breaker_options.callbacks.on_state_change = on_transition;
	o.breaker_options.callbacks.payload = d;
	if (d->redis) {
		o.shared.redis_url = d->redis;
		o.shared.name = "demo";
	}
	if (wms_client_new(&d->client, &o, &err) != WMS_OK) {
		fprintf(stderr, "wms-demo: client: %s: %s\n", wms_status_name(err.status), err.message);
		return -1;
	}
	if (!with_breaker)
		wms_breaker_disable(wms_client_breaker(d->client));
	return 0;
}

/* One full run of the scenario. Returns 0 when the ledger check passes. */
static int run(demo *d, int with_breaker, double *waited_ms)
{
	pthread_t *threads = NULL;
	size_t nthreads = 0, cap = 0, i;
	const char *endpoint = d->endpoint;
	uint64_t deadline;
	int rc = 1;
	uint32_t tick;
	char sched[128];

	d->calls = d->sent = d->failed = d->rejected = 0;
	d->waited_ms = 0;
	snprintf(d->transitions, sizeof(d->transitions), "CLOSED");
	d->order_count = d->ticks;
	d->orders = calloc(d->order_count, sizeof(*d->orders));
	if (!d->orders)
		return 1;
	if (!d->endpoint) {
		wms_sim_options so = WMS_SIM_OPTIONS_INIT;
		so.tick_ms = 1000000; /* orders stay RECEIVED for the whole demo */
		if (wms_sim_start(&d->sim, &so) != WMS_SIM_OK) {
			fprintf(stderr, "wms-demo: simulator: %s\n", wms_sim_last_error());
			goto done;
		}
		endpoint = wms_sim_url(d->sim);
	}
	if (start_client(d, endpoint, with_breaker))
		goto done;
	if (!d->quiet) {
		/* a user and password in the URL stay out of the output */
		const char *host = strstr(endpoint, "://"), *at;
		host = host ? host + 3 : endpoint;
		at = strchr(host, '@');
		if (at && at < host + strcspn(host, "/?#"))
			printf("\nWMS: %.*s***%s%s\n", (int)(host - endpoint), endpoint,
			       strrchr(host, '@'), d->endpoint ? "" : " (wms-sim, in this process)");
		else
			printf("\nWMS: %s%s\n", endpoint,
			       d->endpoint ? "" : " (wms-sim, in this process)");
		if (!d->endpoint)
			printf("outage: '%s' from tick %u for %u ticks; every call's deadline is %u ms\n",
			       d->outage, d->outage_from, d->sc->outage_ticks, 3 * d->tick_ms);
		printf("\n   time  tick  order      result        delivery  breaker      latency\n");
	}
	if (d->replica && replica_ready(d))
		goto done;
	d->t0 = now_ns();
	if (d->sim) {
		/* the outage window, centred on the ticks so no call sits on an edge */
		snprintf(sched, sizeof(sched), "%u %u %s\n",
			 d->outage_from * d->tick_ms - d->tick_ms / 2,
			 (d->outage_from + d->sc->outage_ticks) * d->tick_ms - d->tick_ms / 2,
			 d->outage);
		if (wms_sim_set_schedule(d->sim, sched) != WMS_SIM_OK) {
			fprintf(stderr, "wms-demo: schedule: %s\n", wms_sim_last_error());
			goto done;
		}
	}
	for (i = 0; i < d->order_count; i++)
		snprintf(d->orders[i].id, sizeof(d->orders[i].id), "%s%s%sORD-%04zu",
			 d->replica ? "R" : "", d->replica ? d->replica : "", d->replica ? "-" : "",
			 i + 1);

	/* Main loop: one new order per tick; when the breaker is closed, also
	 * work off the backlog (orders kept after CIRCUIT_OPEN / NOT_SENT). */
	for (tick = 1; tick <= d->ticks + 20; tick++) {
		int closed;
		size_t backlog_sent = 0;
		sleep_until(d->t0 + (uint64_t)tick * d->tick_ms * 1000000u);
		if (cap < nthreads + 5) {
			pthread_t *t;
			cap = cap ? cap * 2 : 64;
			t = realloc(threads, cap * sizeof(*t));
			if (!t)
				goto done;
			threads = t;
		}
		if (tick <= d->ticks &&
		    spawn(&threads[nthreads], d, &d->orders[tick - 1], tick, 0) == 0)
			nthreads++;
		/* Work off the backlog once the WMS is answering again: breaker
		 * closed and the latest call that reached it succeeded. */
		pthread_mutex_lock(&d->lock);
		closed = (wms_breaker_state_get(wms_client_breaker(d->client)) == WMS_BREAKER_STATE_CLOSED ||
			  !with_breaker) && d->last_ok;
		pthread_mutex_unlock(&d->lock);
		if (!closed || (tick <= d->ticks && !with_breaker))
			continue;
		for (i = 0; i + 1 < tick && i < d->order_count && backlog_sent < 3; i++) {
			order_rec *r = &d->orders[i];
			int kind = 0;
			pthread_mutex_lock(&d->lock);
			if (r->state == UNKNOWN)
				kind = 2;
			else if (r->state == PENDING)
				kind = 1;
			pthread_mutex_unlock(&d->lock);
			if (kind && spawn(&threads[nthreads], d, r, tick, kind) == 0) {
				nthreads++;
				backlog_sent++;
			}
		}
		if (tick >= d->ticks) {
			int open_items = 0;
			pthread_mutex_lock(&d->lock);
			for (i = 0; i < d->order_count; i++)
				open_items += d->orders[i].state != CONFIRMED;
			pthread_mutex_unlock(&d->lock);
			if (!open_items)
				break;
		}
	}
	for (i = 0; i < nthreads; i++)
		pthread_join(threads[i], NULL);
	deadline = now_ns() + 5000000000ull;
	/* Final drain, bounded: anything still open is resolved one by one. */
	for (i = 0; i < d->order_count && now_ns() < deadline; i++) {
		order_rec *r = &d->orders[i];
		while (r->state != CONFIRMED && now_ns() < deadline) {
			if (r->state == UNKNOWN) {
				r->state = IN_FLIGHT;
				resolve_unknown(d, r);
			}
			if (r->state == PENDING) {
				pthread_t t;
				if (spawn(&t, d, r, 0, 1) == 0)
					pthread_join(t, NULL);
			}
			if (r->state != CONFIRMED)
				sleep_until(now_ns() + (uint64_t)d->tick_ms * 1000000u);
		}
	}
	*waited_ms = d->waited_ms;
	rc = 0;
done:
	free(threads);
	return rc;
}

/* Every ledger order is in the WMS exactly once, with the reference we hold. */
static int check_ledger(demo *d, const char *label)
{
	size_t i, bad = 0, confirmed = 0;
	for (i = 0; i < d->order_count; i++) {
		order_rec *r = &d->orders[i];
		if (r->state != CONFIRMED) {
			printf("  %s: not confirmed\n", r->id);
			bad++;
			continue;
		}
		confirmed++;
		if (d->sim) {
			wms_sim_order_info info;
			if (!wms_sim_order_get(&info, d->sim, r->id)) {
				printf("  %s: confirmed but missing from the WMS\n", r->id);
				bad++;
			} else if (strcmp(info.wms_reference, r->reference) != 0) {
				printf("  %s: reference %s, the WMS has %s\n", r->id, r->reference,
				       info.wms_reference);
				bad++;
			}
		} else {
			wms_status_reply sr;
			wms_status st = WMS_ERR_INTERNAL;
			int tries;
			/* a lookup that fails (a deadline of 3 ticks on a loaded
			 * machine, the breaker open again) is asked again: the
			 * check is of the WMS's books, not of this call */
			for (tries = 0; tries < 10 && st != WMS_OK; tries++) {
				st = wms_get_order_status(&sr, d->client, r->id, NULL);
				if (st != WMS_OK)
					sleep_until(now_ns() + 3ull * d->tick_ms * 1000000u);
			}
			if (st != WMS_OK || strcmp(sr.wms_reference, r->reference) != 0) {
				printf("  %s: not found in the WMS with reference %s\n", r->id,
				       r->reference);
				bad++;
			}
		}
	}
	if (d->sim && wms_sim_order_count(d->sim) != d->order_count) {
		printf("  the WMS holds %zu orders, the ledger %zu\n", wms_sim_order_count(d->sim),
		       d->order_count);
		bad++;
	}
	printf("ledger%s: %zu orders, %zu confirmed, %s\n", label, d->order_count, confirmed,
	       bad ? "CHECK FAILED" : "every order in the WMS exactly once");
	return bad ? 1 : 0;
}

static void summary(demo *d, int with_breaker)
{
	size_t i;
	unsigned kept = 0, unknown_first = 0, resubmits = 0;
	for (i = 0; i < d->order_count; i++) {
		kept += d->orders[i].rejected > 0;
		unknown_first += d->orders[i].first_status == WMS_ERR_TIMEOUT ||
				 d->orders[i].first_status == WMS_ERR_TRANSPORT;
		resubmits += d->orders[i].submits + d->orders[i].rejected - 1;
	}
	printf("\nsummary (%s)\n", with_breaker ? "with the breaker" : "without a breaker");
	printf("  transitions:          %s\n", d->transitions);
	printf("  calls:                %" PRIu64 " (%" PRIu64 " sent to the WMS, %" PRIu64
	       " failed, %" PRIu64 " rejected at once)\n",
	       d->calls, d->sent, d->failed, d->rejected);
	printf("  orders kept for later: %u, first answer unknown: %u, resubmissions: %u\n", kept,
	       unknown_first, resubmits);
	printf("  caller time waiting:  %.0f ms\n", d->waited_ms);
	if (d->sim)
		printf("  requests the WMS saw: %" PRIu64 "\n", wms_sim_requests(d->sim, NULL));
}

static void teardown(demo *d)
{
	wms_client_free(d->client);
	d->client = NULL;
	wms_sim_stop(d->sim);
	d->sim = NULL;
	free(d->orders);
	d->orders = NULL;
}

static int usage(void)
{
	size_t i;
	fprintf(stderr,
		"usage: wms-demo [--scenario NAME] [--policy count_based|consecutive]\n"
		"                [--outage hang|refuse|http-503|server-fault|reply-lost|garbage]\n"
		"                [--tick-ms N] [--ticks N] [--no-compare] [--endpoint URL]\n"
		"       wms-demo --replicas N   (the fleet demo: N processes, one shared breaker)\n"
		"       wms-demo --scenario slow-wms [--rate N] [--short]\n"
		"scenarios (the first five are seed 002's presets):\n");
	for (i = 0; i < sizeof(scenarios) / sizeof(scenarios[0]); i++)
		fprintf(stderr, "  %-14s %s\n", scenarios[i].name, scenarios[i].what);
	fprintf(stderr, "  %-14s %s\n", "slow-wms",
		"replies slow from 5 ms to 2 s and back under ~200 orders/s from ONE thread\n"
		"                 (the asynchronous API; the bulkhead and the slow-call rule act)");
	return 2;
}

/* Run a demo program of its own, next to this one, with the same
 * arguments (the fleet demo, the slow-WMS one). Returns only on failure. */
static int exec_sibling(const char *name, char **argv)
{
	char self[4096], *slash;
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 32);
	if (n <= 0)
		return usage();
	self[n] = '\0';
	slash = strrchr(self, '/');
	strcpy(slash ? slash + 1 : self, name);
	argv[0] = self;
	execv(self, argv);
	fprintf(stderr, "wms-demo: cannot run %s: %s\n", self, strerror(errno));
	return 1;
}

static int parse_u32(const char *s, uint32_t lo, uint32_t hi, uint32_t *out)
{
	uint64_t v;
	if (wms__parse_uint_str(s, lo, hi, &v) != WMS__NUM_OK)
		return -1;
	*out = (uint32_t)v;
	return 0;
}

int main(int argc, char **argv)
{
	demo d;
	double with_ms = 0, without_ms = 0;
	int i, compare = 1, rc;
	size_t k;

	memset(&d, 0, sizeof(d));
	d.sc = &scenarios[0];
	d.outage = "hang";
	d.tick_ms = 100;
	d.ticks = 40;
	d.outage_from = 11;
	pthread_mutex_init(&d.lock, NULL);
	for (i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--scenario") && v && !strcmp(v, "slow-wms")) {
			/* one thread, asynchronous calls: a program of its own */
			return exec_sibling("wms-demo-slow", argv);
		} else if (!strcmp(a, "--scenario") && v) {
			for (k = 0; k < sizeof(scenarios) / sizeof(scenarios[0]); k++)
				if (!strcmp(scenarios[k].name, v))
					break;
			if (k == sizeof(scenarios) / sizeof(scenarios[0]))
				return usage();
			d.sc = &scenarios[k];
			i++;
		} else if (!strcmp(a, "--policy") && v) {
			if (strcmp(v, "consecutive") && strcmp(v, "count_based"))
				return usage();
			d.consecutive = !strcmp(v, "consecutive");
			i++;
		} else if (!strcmp(a, "--outage") && v) {
			wms_sim_fault f;
			if (wms_sim_fault_parse(&f, v) != WMS_SIM_OK || f == WMS_SIM_FAULT_NONE)
				return usage();
			d.outage = v;
			i++;
		} else if (!strcmp(a, "--tick-ms") && v) {
			if (parse_u32(v, 20, 10000, &d.tick_ms))
				return usage();
			i++;
		} else if (!strcmp(a, "--ticks") && v) {
			if (parse_u32(v, 30, 10000, &d.ticks))
				return usage();
			i++;
		} else if (!strcmp(a, "--endpoint") && v) {
			d.endpoint = v;
			i++;
		} else if (!strcmp(a, "--no-compare")) {
			compare = 0;
		} else if (!strcmp(a, "--replica") && v && strlen(v) <= 4) {
			d.replica = v;
			d.quiet = 1;
			i++;
		} else if (!strcmp(a, "--shared-redis") && v) {
			d.redis = v;
			i++;
		} else if (!strcmp(a, "--replicas")) {
			/* the fleet demo is a program of its own, next to this one */
			return exec_sibling("wms-demo-fleet", argv);
		} else {
			return usage();
		}
	}
	if (d.endpoint)
		compare = 0;
	if (d.replica) {
		/* one replica of the fleet demo: quiet, one line at the end */
		d.consecutive = 1;
		rc = run(&d, 1, &with_ms);
		if (rc == 0) {
			printf("replica %s: calls %" PRIu64 " sent %" PRIu64 " failed %" PRIu64
			       " rejected %" PRIu64 " waited_ms %.0f transitions %s\n",
			       d.replica, d.calls, d.sent, d.failed, d.rejected, with_ms, d.transitions);
			rc = check_ledger(&d, "");
		}
		teardown(&d);
		pthread_mutex_destroy(&d.lock);
		return rc ? 1 : 0;
	}

	printf("libwms demo: a fulfillment loop against a WMS outage\n");
	printf("scenario '%s': %s\n", d.sc->name, d.sc->what);
	printf("1 tick = %u ms; one order per tick for %u ticks; ", d.tick_ms, d.ticks);
	if (d.consecutive)
		printf("breaker: 5 consecutive failures, open %u ticks, 1 probe\n", d.sc->open_ticks);
	else
		printf("breaker: last 10 calls, failure rate >= %u %%, open %u ticks, 3 trial calls\n",
		       d.sc->threshold_pct, d.sc->open_ticks);

	rc = run(&d, d.sc->breaker, &with_ms);
	if (rc == 0) {
		summary(&d, d.sc->breaker);
		rc = check_ledger(&d, "");
	}
	teardown(&d);
	if (rc == 0 && compare && d.sc->breaker) {
		/* the same scenario with the breaker switched off, for comparison */
		d.quiet = 1;
		rc = run(&d, 0, &without_ms);
		d.quiet = 0;
		if (rc == 0)
			rc = check_ledger(&d, " (without a breaker)");
		printf("\nsame scenario without a breaker: %" PRIu64 " calls sent, %.0f ms of caller "
		       "time waiting\n", d.sent, without_ms);
		printf("the breaker saved %.0f ms of waiting (%.0f %%)\n", without_ms - with_ms,
		       without_ms > 0 ? 100.0 * (without_ms - with_ms) / without_ms : 0.0);
		teardown(&d);
	}
	pthread_mutex_destroy(&d.lock);
	printf("%s\n", rc ? "demo FAILED" : "demo OK");
	return rc ? 1 : 0;
}
