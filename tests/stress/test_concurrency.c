/* Issue 5 item 6: 8 threads share one wms_client against wms-sim while a
 * switcher thread flips the sim's fault under them (none, hang,
 * server-fault, reply-lost, refuse, http-503). Checked afterwards:
 * - the breaker's books: permitted + rejected == calls made, successes +
 *   failures + ignored == permitted, each counter equal to what the callers
 *   saw; at most one half-open trial in flight at any moment (counted on
 *   the permits themselves, see the --wrap note below); every state change
 *   a legal edge, and as many as the breaker reports;
 * - every call returned within timeout + margin with a status the injected
 *   faults explain;
 * - nothing leaked: /proc/self/fd counts the same before the sim and client
 *   exist and after both are gone, the client keeps at most its 8 idle
 *   connections, and the sim's end of every connection closes once the
 *   client is freed.
 * Run it under ThreadSanitizer too (./run tsan): that build must be silent.
 *
 * The permits: the client calls wms_breaker_acquire/record/release from
 * src/client/call.c. The test links with -Wl,--wrap for those three (the cmocka
 * way of intercepting a call between two objects of a static library), so
 * it sees every permit the client gets: a trial permit
 * (wms_breaker_permit_is_trial) is counted in flight from the moment
 * acquire grants it until just before it is recorded - a window inside the
 * breaker's own, so more than one at a time is a breaker bug. */
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
#include <cmocka.h>
#include "stress.h"

#define THREADS 8
#define MAX_IDLE 8 /* the client's keep-alive pool (max_idle_connections) */
#define STATUS_SLOTS 32

/* ---- the permits, seen through --wrap ------------------------------------- */

wms_status __real_wms_breaker_acquire(wms_breaker_permit *out, wms_breaker *b,
				      uint32_t *retry_after_ms);
void __real_wms_breaker_record(wms_breaker *b, const wms_breaker_permit *p, wms_outcome o);
void __real_wms_breaker_release(wms_breaker *b, const wms_breaker_permit *p);
wms_status __wrap_wms_breaker_acquire(wms_breaker_permit *out, wms_breaker *b,
				      uint32_t *retry_after_ms);
void __wrap_wms_breaker_record(wms_breaker *b, const wms_breaker_permit *p, wms_outcome o);
void __wrap_wms_breaker_release(wms_breaker *b, const wms_breaker_permit *p);

static struct {
	atomic_ulong permitted, rejected, trials, released;
	atomic_ulong recorded[3]; /* by wms_outcome */
	atomic_int trials_in_flight, max_trials_in_flight;
} perm;

static void permits_reset(void)
{
	int i;
	atomic_store(&perm.permitted, 0);
	atomic_store(&perm.rejected, 0);
	atomic_store(&perm.trials, 0);
	atomic_store(&perm.released, 0);
	for (i = 0; i < 3; i++)
		atomic_store(&perm.recorded[i], 0);
	atomic_store(&perm.trials_in_flight, 0);
	atomic_store(&perm.max_trials_in_flight, 0);
}

static void trial_enter(void)
{
	int n = atomic_fetch_add(&perm.trials_in_flight, 1) + 1;
	int m = atomic_load(&perm.max_trials_in_flight);
	while (n > m && !atomic_compare_exchange_weak(&perm.max_trials_in_flight, &m, n))
		;
	atomic_fetch_add(&perm.trials, 1);
}

wms_status __wrap_wms_breaker_acquire(wms_breaker_permit *out, wms_breaker *b,
				      uint32_t *retry_after_ms)
{
	wms_status st = __real_wms_breaker_acquire(out, b, retry_after_ms);
	if (st == WMS_OK) {
		atomic_fetch_add(&perm.permitted, 1);
		if (wms_breaker_permit_is_trial(out))
			trial_enter();
	} else if (st == WMS_ERR_CIRCUIT_OPEN) {
		atomic_fetch_add(&perm.rejected, 1);
	}
	return st;
}

void __wrap_wms_breaker_record(wms_breaker *b, const wms_breaker_permit *p, wms_outcome o)
{
	if ((unsigned)o < 3u)
		atomic_fetch_add(&perm.recorded[o], 1);
	if (wms_breaker_permit_is_trial(p))
		atomic_fetch_sub(&perm.trials_in_flight, 1);
	__real_wms_breaker_record(b, p, o);
}

void __wrap_wms_breaker_release(wms_breaker *b, const wms_breaker_permit *p)
{
	atomic_fetch_add(&perm.released, 1);
	if (wms_breaker_permit_is_trial(p))
		atomic_fetch_sub(&perm.trials_in_flight, 1);
	__real_wms_breaker_release(b, p);
}

/* ---- settings per build ----------------------------------------------------- */

typedef struct config {
	st_kind kind;
	uint32_t duration_ms; /* how long the threads call */
	uint32_t timeout_ms;  /* the client's deadline */
	uint32_t margin_ms;   /* a call may end this much past it */
	uint32_t phase_ms;    /* each fault (or healthy) phase: phase_ms .. 1.5 x */
	uint32_t open_ms;     /* the breaker's open duration */
	uint32_t drain_ms;    /* time for the sim to close its ends */
	uint32_t backoff_ms;  /* a caller told CIRCUIT_OPEN waits this long */
} config;

static config make_config(void)
{
	config c;
	c.kind = st_build_kind();
	c.duration_ms = (uint32_t)st_env_ulong("WMS_STRESS_MS", 5000);
	/* short: keeps the half-open gate busy; longer under valgrind, whose
	 * one CPU would otherwise go to rejections */
	c.backoff_ms = c.kind == ST_VALGRIND ? 5 : 1;
	switch (c.kind) {
	case ST_PLAIN:
	case ST_ASAN:
		c.timeout_ms = 250;
		c.margin_ms = 250;
		c.phase_ms = 250;
		c.open_ms = 100;
		c.drain_ms = 3000;
		break;
	case ST_TSAN:
		c.timeout_ms = 400;
		c.margin_ms = 600;
		c.phase_ms = 300;
		c.open_ms = 150;
		c.drain_ms = 5000;
		break;
	case ST_VALGRIND:
		c.timeout_ms = 1500;
		c.margin_ms = 2500;
		c.phase_ms = 600;
		c.open_ms = 300;
		c.drain_ms = 20000;
		break;
	}
	return c;
}

/* ---- what the callers saw --------------------------------------------------- */

typedef enum op_kind { OP_SUBMIT, OP_STATUS, OP_CANCEL, OP_STOCK, OP_KINDS } op_kind;

static const char *const op_names[OP_KINDS] = { "SubmitOrder", "GetOrderStatus", "CancelOrder",
						"GetStockLevel" };

typedef struct shared {
	config cf;
	wms_client *client;
	wms_breaker *breaker;
	wms_sim *sim;
	atomic_int stop;
	atomic_int cycle_done; /* every fault of the cycle has had its phase */

	atomic_ulong calls;
	atomic_ulong by_op[OP_KINDS];
	atomic_ulong by_status[STATUS_SLOTS];
	atomic_ulong successes, failures, rejected; /* as the breaker should count them */
	atomic_ulong late;
	atomic_ullong worst_us;

	/* the first few surprises, for the failure message */
	pthread_mutex_t note_lock;
	unsigned notes;
	char note[4][WMS_ERROR_MESSAGE_MAX + 96];

	/* the switcher */
	unsigned phases[WMS_SIM_FAULT_COUNT];
	unsigned switch_errors;
	char switch_error[WMS_ERROR_MESSAGE_MAX];
	int max_half_open_in_flight; /* sampled from snapshots */
} shared;

/* State changes, by (from, to), from the breaker's callback. */
static atomic_ulong edges[5][5];

static void on_state_change(const wms_breaker_event *ev, void *ctx)
{
	(void)ctx;
	if ((unsigned)ev->from < 5u && (unsigned)ev->to < 5u)
		atomic_fetch_add(&edges[ev->from][ev->to], 1);
}

static void note(shared *s, const char *fmt, ...)
#if defined(__GNUC__)
	__attribute__((format(printf, 2, 3)))
#endif
	;

static void note(shared *s, const char *fmt, ...)
{
	va_list ap;
	pthread_mutex_lock(&s->note_lock);
	if (s->notes < 4) {
		va_start(ap, fmt);
		vsnprintf(s->note[s->notes], sizeof(s->note[0]), fmt, ap);
		va_end(ap);
	}
	s->notes++;
	pthread_mutex_unlock(&s->note_lock);
}

/* Whether the status is one the injected faults explain, and how the
 * breaker must have counted it (1 failure, 0 success, -1 rejected, 2 none).
 * Not a switch: a status added later is simply unexplained here. */
static int judge(wms_status st, const wms_error *err, int *counted)
{
	*counted = 2;
	if (st == WMS_OK) {
		*counted = 0;
		return err->delivery == WMS_DELIVERY_ANSWERED;
	}
	if (st == WMS_ERR_CIRCUIT_OPEN) {
		*counted = -1;
		return err->delivery == WMS_DELIVERY_NOT_SENT && err->attempts == 0;
	}
	/* hang; reply-lost or refuse closing a kept-alive connection; refuse */
	if (st == WMS_ERR_TIMEOUT || st == WMS_ERR_TRANSPORT || st == WMS_ERR_CONNECT) {
		*counted = 1;
		return err->delivery != WMS_DELIVERY_ANSWERED;
	}
	if (st == WMS_ERR_HTTP) { /* http-503 */
		*counted = 1;
		return err->http_status == 503 && err->delivery == WMS_DELIVERY_UNKNOWN;
	}
	if (st == WMS_ERR_SOAP_FAULT) { /* server-fault; never a Client fault here */
		*counted = 1;
		return err->delivery == WMS_DELIVERY_ANSWERED &&
		       strcmp(err->fault_code, "Server") == 0 && strcmp(err->wms_code, "INTERNAL") == 0;
	}
	return 0;
}

typedef struct worker {
	shared *s;
	unsigned index;
	pthread_t thread;
	/* orders of this thread the WMS confirmed: status and cancel use them */
	char ok_ids[16][WMS_ID_MAX + 1];
	unsigned ok_count;
} worker;

static wms_status call_one(worker *w, op_kind op, unsigned n, uint32_t *rng, wms_error *err)
{
	shared *s = w->s;
	wms_status st = WMS_ERR_INTERNAL;

	switch (op) {
	case OP_SUBMIT: {
		st_order o;
		wms_submit_reply r;
		char id[WMS_ID_MAX + 1];
		snprintf(id, sizeof(id), "C-%u-%u", w->index, n);
		st_order_init(&o, id, 1u + st_rand(rng) % 100u, 1u);
		st = wms_submit_order(&r, s->client, &o.order, err);
		if (st == WMS_OK) {
			if (strcmp(r.order_id, id) != 0 || !r.wms_reference[0] || r.duplicate)
				note(s, "SubmitOrder %s: reply for '%s', reference '%s', duplicate %d",
				     id, r.order_id, r.wms_reference, r.duplicate);
			snprintf(w->ok_ids[w->ok_count % 16], sizeof(w->ok_ids[0]), "%s", id);
			w->ok_count++;
		}
		break;
	}
	case OP_STATUS: {
		wms_status_reply r;
		const char *id = w->ok_ids[st_rand(rng) % (w->ok_count < 16 ? w->ok_count : 16)];
		st = wms_get_order_status(&r, s->client, id, err);
		if (st == WMS_OK && (strcmp(r.order_id, id) != 0 || !r.wms_reference[0]))
			note(s, "GetOrderStatus %s: reply for '%s'", id, r.order_id);
		break;
	}
	case OP_CANCEL: {
		wms_cancel_reply r;
		const char *id = w->ok_ids[st_rand(rng) % (w->ok_count < 16 ? w->ok_count : 16)];
		st = wms_cancel_order(&r, s->client, id, "stress", err);
		if (st == WMS_OK && (strcmp(r.order_id, id) != 0 || r.state != WMS_ORDER_STATE_CANCELLED))
			note(s, "CancelOrder %s: reply for '%s' in state %s", id, r.order_id,
			     wms_order_state_name(r.state));
		break;
	}
	case OP_STOCK: {
		static const char *const skus[] = { "SKU-1", "SKU-2" };
		wms_stock_reply *r = NULL;
		st = wms_get_stock_level(&r, s->client, skus, 2, err);
		if (st == WMS_OK && (!r || r->count != 2))
			note(s, "GetStockLevel: %zu levels", r ? r->count : 0);
		wms_stock_reply_free(r);
		break;
	}
	case OP_KINDS:
		break;
	}
	return st;
}

static void *worker_main(void *arg)
{
	worker *w = arg;
	shared *s = w->s;
	uint32_t rng = 0x1234567u * (w->index + 1u);
	uint64_t limit_us = (uint64_t)(s->cf.timeout_ms + s->cf.margin_ms) * 1000u;
	unsigned n = 0;

	while (!atomic_load(&s->stop)) {
		uint32_t pick = st_rand(&rng) % 100u;
		op_kind op = w->ok_count == 0 || pick < 70 ? OP_SUBMIT
			     : pick < 80		 ? OP_STATUS
			     : pick < 90		 ? OP_CANCEL
							 : OP_STOCK;
		wms_error err;
		wms_status st;
		double t0 = st_now_ms();
		uint64_t us;
		int counted = 2;

		st = call_one(w, op, n++, &rng, &err);
		us = (uint64_t)((st_now_ms() - t0) * 1000.0);
		atomic_fetch_add(&s->calls, 1);
		atomic_fetch_add(&s->by_op[op], 1);
		atomic_fetch_add(&s->by_status[(unsigned)st < STATUS_SLOTS ? (unsigned)st : 0], 1);
		{
			unsigned long long worst = atomic_load(&s->worst_us);
			while (us > worst && !atomic_compare_exchange_weak(&s->worst_us, &worst, us))
				;
		}
		if (us > limit_us) {
			atomic_fetch_add(&s->late, 1);
			note(s, "%s took %.1f ms (%s: %s)", op_names[op], (double)us / 1000.0,
			     wms_status_name(st), err.message);
		}
		if (!judge(st, &err, &counted))
			note(s, "%s: unexpected %s/%s http %ld fault '%s' wms '%s': %s", op_names[op],
			     wms_status_name(st), wms_delivery_name(err.delivery), err.http_status,
			     err.fault_code, err.wms_code, err.message);
		if (counted == 0)
			atomic_fetch_add(&s->successes, 1);
		else if (counted == 1)
			atomic_fetch_add(&s->failures, 1);
		else if (counted == -1) {
			atomic_fetch_add(&s->rejected, 1);
			st_sleep_ms(s->cf.backoff_ms);
		}
	}
	return NULL;
}

/* ---- the switcher ------------------------------------------------------------ */

static const wms_sim_fault cycle[] = {
	WMS_SIM_FAULT_HANG, WMS_SIM_FAULT_SERVER, WMS_SIM_FAULT_REPLY_LOST,
	WMS_SIM_FAULT_REFUSE, WMS_SIM_FAULT_HTTP_503,
};
#define CYCLE_LEN (sizeof(cycle) / sizeof(cycle[0]))

static void *switcher_main(void *arg)
{
	shared *s = arg;
	uint32_t rng = 0xC0FFEEu;
	unsigned i;

	for (i = 0; !atomic_load(&s->stop); i++) {
		/* healthy between faults: the breaker gets to close again */
		wms_sim_fault kind = i % 2 == 0 ? WMS_SIM_FAULT_NONE : cycle[(i / 2) % CYCLE_LEN];
		double until;
		wms_sim_status st = wms_sim_set_fault(s->sim, NULL, kind, 0);
		if (st != WMS_SIM_OK) {
			if (!s->switch_errors++)
				snprintf(s->switch_error, sizeof(s->switch_error), "%s: %s",
					 wms_sim_fault_name(kind), wms_sim_last_error());
		} else {
			s->phases[kind]++;
		}
		if (i == 2 * CYCLE_LEN) /* healthy after the last fault of the first cycle */
			atomic_store(&s->cycle_done, 1);
		until = st_now_ms() + s->cf.phase_ms + st_rand(&rng) % (s->cf.phase_ms / 2u + 1u);
		while (!atomic_load(&s->stop) && st_now_ms() < until) {
			wms_breaker_snapshot snap;
			wms_breaker_snapshot_get(&snap, s->breaker);
			if ((int)snap.half_open_in_flight > s->max_half_open_in_flight)
				s->max_half_open_in_flight = (int)snap.half_open_in_flight;
			st_sleep_ms(2);
		}
	}
	return NULL;
}

/* ---- setup ------------------------------------------------------------------ */

static wms_client *make_client(wms_sim *sim, const config *cf)
{
	wms_client_options co = WMS_CLIENT_OPTIONS_INIT;
	wms_client *c = NULL;
	wms_error err;
	co.endpoint = wms_sim_url(sim);
	co.timeout_ms = cf->timeout_ms;
	co.connect_timeout_ms = cf->timeout_ms;
	co.max_idle_connections = MAX_IDLE;
	co.breaker_options.mode = WMS_BREAKER_MODE_CONSECUTIVE;
	co.breaker_options.failure_threshold = 5;
	co.breaker_options.open_duration_ms = cf->open_ms;
	co.breaker_options.callbacks.on_state_change = on_state_change;
	if (wms_client_new(&c, &co, &err) != WMS_OK)
		fail_msg("wms_client_new: %s", err.message);
	return c;
}

/* One sim and client through every path the run takes, then gone again:
 * whatever libcurl and libxml2 set up once per process exists before the
 * descriptors are counted. */
static void warm_up(const config *cf)
{
	wms_sim *sim = st_sim_start(1000000);
	wms_client *c = make_client(sim, cf);
	st_order o;
	wms_error err;
	wms_status st;

	st_order_init(&o, "WARM-1", 1, 1);
	st = wms_submit_order(NULL, c, &o.order, &err);
	if (st != WMS_OK)
		fail_msg("warm-up submit: %s: %s", wms_status_name(st), err.message);
	st_sim_fault(sim, WMS_SIM_FAULT_REFUSE);
	(void)wms_submit_order(NULL, c, &o.order, &err); /* refused, or reset on closing */
	st_sim_fault(sim, WMS_SIM_FAULT_NONE);
	st = wms_submit_order(NULL, c, &o.order, &err);
	if (st != WMS_OK)
		fail_msg("warm-up resubmit: %s: %s", wms_status_name(st), err.message);
	wms_client_free(c);
	wms_sim_stop(sim);
}

static void census(st_sockets *out, uint16_t port)
{
	if (st_socket_census(out, port) != 0)
		fail_msg("cannot read /proc/self/fd or /proc/self/net/tcp");
}

/* ---- the test ----------------------------------------------------------------- */

static void test_threads_under_faults(void **state)
{
	shared *s = calloc(1, sizeof(*s));
	worker *w = calloc(THREADS, sizeof(*w));
	pthread_t switcher;
	wms_breaker_snapshot snap;
	st_sockets sk;
	size_t fd_base, fd_sim, fd_now = 0;
	unsigned long calls, edge_sum = 0, from_half_open;
	uint16_t port;
	double t0, t_end, deadline;
	unsigned i, j;

	(void)state;
	assert_non_null(s);
	assert_non_null(w);
	s->cf = make_config();
	assert_int_equal(pthread_mutex_init(&s->note_lock, NULL), 0);
	print_message("stress: %s build, %u threads, %u ms, timeout %u ms + %u ms margin, "
		      "phases %u-%u ms, open %u ms\n",
		      st_kind_name(s->cf.kind), THREADS, s->cf.duration_ms, s->cf.timeout_ms,
		      s->cf.margin_ms, s->cf.phase_ms, s->cf.phase_ms * 3 / 2, s->cf.open_ms);

	warm_up(&s->cf);
	fd_base = st_fd_count();

	s->sim = st_sim_start(1000000000);
	port = wms_sim_port(s->sim);
	fd_sim = st_fd_count();
	census(&sk, port);
	assert_int_equal(sk.server_conns, 0);
	assert_int_equal(sk.client_conns, 0);
	assert_true(sk.listeners >= 1);

	s->client = make_client(s->sim, &s->cf);
	s->breaker = wms_client_breaker(s->client);
	assert_non_null(s->breaker);
	permits_reset();
	memset(edges, 0, sizeof(edges));

	/* the run */
	t0 = st_now_ms();
	for (i = 0; i < THREADS; i++) {
		w[i].s = s;
		w[i].index = i;
		assert_int_equal(pthread_create(&w[i].thread, NULL, worker_main, &w[i]), 0);
	}
	assert_int_equal(pthread_create(&switcher, NULL, switcher_main, s), 0);
	st_sleep_ms(s->cf.duration_ms);
	/* slow builds: at least one phase of every fault */
	while (!atomic_load(&s->cycle_done))
		st_sleep_ms(10);
	atomic_store(&s->stop, 1);
	for (i = 0; i < THREADS; i++)
		pthread_join(w[i].thread, NULL);
	pthread_join(switcher, NULL);
	t_end = st_now_ms();
	wms_sim_clear_faults(s->sim);

	/* what happened */
	calls = atomic_load(&s->calls);
	wms_breaker_snapshot_get(&snap, s->breaker);
	print_message("stress: %lu calls in %.0f ms (submit %lu, status %lu, cancel %lu, stock %lu); "
		      "sim saw %" PRIu64 " requests, stores %zu orders\n",
		      calls, t_end - t0, atomic_load(&s->by_op[OP_SUBMIT]),
		      atomic_load(&s->by_op[OP_STATUS]), atomic_load(&s->by_op[OP_CANCEL]),
		      atomic_load(&s->by_op[OP_STOCK]), wms_sim_requests(s->sim, NULL),
		      wms_sim_order_count(s->sim));
	print_message("stress: statuses:");
	for (i = 0; i < STATUS_SLOTS; i++)
		if (atomic_load(&s->by_status[i]))
			print_message(" %s %lu", wms_status_name((wms_status)i),
				      atomic_load(&s->by_status[i]));
	print_message("\nstress: breaker: permitted %" PRIu64 " rejected %" PRIu64
		      " successes %" PRIu64 " failures %" PRIu64 " ignored %" PRIu64
		      " transitions %" PRIu64 "; trials %lu (max %d in flight); slowest call %.1f ms\n",
		      snap.permitted, snap.rejected, snap.successes, snap.failures, snap.ignored,
		      snap.transitions, atomic_load(&perm.trials),
		      atomic_load(&perm.max_trials_in_flight),
		      (double)atomic_load(&s->worst_us) / 1000.0);
	print_message("stress: phases:");
	for (i = 0; i < WMS_SIM_FAULT_COUNT; i++)
		if (s->phases[i])
			print_message(" %s %u", wms_sim_fault_name((wms_sim_fault)i), s->phases[i]);
	print_message("\n");

	if (s->switch_errors)
		fail_msg("the switcher could not set %u faults; first: %s", s->switch_errors,
			 s->switch_error);
	if (s->notes)
		fail_msg("%u calls went wrong; first: %s%s%s%s%s%s%s", s->notes, s->note[0],
			 s->notes > 1 ? " | " : "", s->notes > 1 ? s->note[1] : "",
			 s->notes > 2 ? " | " : "", s->notes > 2 ? s->note[2] : "",
			 s->notes > 3 ? " | " : "", s->notes > 3 ? s->note[3] : "");
	assert_int_equal(atomic_load(&s->late), 0);

	/* the breaker's books against the callers' and the permits' */
	assert_int_equal(snap.permitted + snap.rejected, calls);
	assert_int_equal(snap.successes + snap.failures + snap.ignored, snap.permitted);
	assert_int_equal(snap.rejected, atomic_load(&s->rejected));
	assert_int_equal(snap.successes, atomic_load(&s->successes));
	assert_int_equal(snap.failures, atomic_load(&s->failures));
	assert_int_equal(snap.ignored, 0);
	assert_int_equal(atomic_load(&perm.permitted), snap.permitted);
	assert_int_equal(atomic_load(&perm.rejected), snap.rejected);
	assert_int_equal(atomic_load(&perm.recorded[WMS_OUTCOME_SUCCESS]), snap.successes);
	assert_int_equal(atomic_load(&perm.recorded[WMS_OUTCOME_FAILURE]), snap.failures);
	assert_int_equal(atomic_load(&perm.recorded[WMS_OUTCOME_IGNORED]), 0);
	assert_int_equal(atomic_load(&perm.released), 0);
	assert_int_equal(atomic_load(&perm.trials_in_flight), 0);
	assert_true(atomic_load(&perm.max_trials_in_flight) <= 1);
	assert_true(s->max_half_open_in_flight <= 1);
	assert_int_equal(snap.half_open_in_flight, 0);

	/* every transition legal, each trial granted on entering HALF_OPEN and decided */
	for (i = 0; i < 5; i++)
		for (j = 0; j < 5; j++) {
			unsigned long n = atomic_load(&edges[i][j]);
			int legal = (i == WMS_BREAKER_STATE_CLOSED && j == WMS_BREAKER_STATE_OPEN) ||
				    (i == WMS_BREAKER_STATE_OPEN && j == WMS_BREAKER_STATE_HALF_OPEN) ||
				    (i == WMS_BREAKER_STATE_HALF_OPEN &&
				     (j == WMS_BREAKER_STATE_CLOSED || j == WMS_BREAKER_STATE_OPEN));
			if (n && !legal)
				fail_msg("%lu transitions %s -> %s", n,
					 wms_breaker_state_name((wms_breaker_state)i),
					 wms_breaker_state_name((wms_breaker_state)j));
			edge_sum += n;
		}
	assert_int_equal(edge_sum, snap.transitions);
	from_half_open = atomic_load(&edges[WMS_BREAKER_STATE_HALF_OPEN][WMS_BREAKER_STATE_CLOSED]) +
			 atomic_load(&edges[WMS_BREAKER_STATE_HALF_OPEN][WMS_BREAKER_STATE_OPEN]);
	assert_int_equal(atomic_load(&perm.trials),
			 atomic_load(&edges[WMS_BREAKER_STATE_OPEN][WMS_BREAKER_STATE_HALF_OPEN]));
	assert_int_equal(from_half_open, atomic_load(&perm.trials));

	/* the run did what it is for: every fault bit, the breaker opened and closed */
	for (i = 0; i < CYCLE_LEN; i++)
		if (!s->phases[cycle[i]])
			fail_msg("no %s phase ran", wms_sim_fault_name(cycle[i]));
	assert_true(atomic_load(&s->by_status[WMS_OK]) > 0);
	assert_true(atomic_load(&s->by_status[WMS_ERR_TIMEOUT]) > 0);
	assert_true(atomic_load(&s->by_status[WMS_ERR_CONNECT]) > 0);
	assert_true(atomic_load(&s->by_status[WMS_ERR_HTTP]) > 0);
	assert_true(atomic_load(&s->by_status[WMS_ERR_SOAP_FAULT]) > 0);
	assert_true(atomic_load(&s->by_status[WMS_ERR_TRANSPORT]) > 0);
	assert_true(atomic_load(&s->by_status[WMS_ERR_CIRCUIT_OPEN]) > 0);
	assert_true(atomic_load(&edges[WMS_BREAKER_STATE_CLOSED][WMS_BREAKER_STATE_OPEN]) > 0);
	assert_true(atomic_load(&edges[WMS_BREAKER_STATE_HALF_OPEN][WMS_BREAKER_STATE_CLOSED]) > 0);

	/* connections: the client keeps at most its pool; none outlives it */
	census(&sk, port);
	print_message("stress: after the run: %u client and %u sim connections open, %zu fds "
		      "(%zu with the sim alone, %zu before it)\n",
		      sk.client_conns, sk.server_conns, st_fd_count(), fd_sim, fd_base);
	assert_true(sk.client_conns <= MAX_IDLE);
	wms_client_free(s->client);
	s->client = NULL;
	census(&sk, port);
	assert_int_equal(sk.client_conns, 0);
	deadline = st_now_ms() + s->cf.drain_ms;
	for (;;) {
		census(&sk, port);
		fd_now = st_fd_count();
		if ((sk.server_conns == 0 && fd_now == fd_sim) || st_now_ms() > deadline)
			break;
		st_sleep_ms(10);
	}
	if (sk.server_conns != 0 || fd_now != fd_sim)
		fail_msg("%u ms after the client was freed: the sim still has %u connections open, "
			 "%zu fds (%zu with the sim alone)",
			 s->cf.drain_ms, sk.server_conns, fd_now, fd_sim);
	assert_int_equal(sk.listeners >= 1, 1);
	wms_sim_stop(s->sim);
	s->sim = NULL;
	fd_now = st_fd_count();
	if (fd_now != fd_base)
		fail_msg("%zu fds after the run, %zu before: a descriptor leaked", fd_now, fd_base);

	pthread_mutex_destroy(&s->note_lock);
	free(w);
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_threads_under_faults),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
