/* Issue 5 item 8: no lost, no duplicated orders. N orders go through one
 * client from several threads (N: 10 000; 2 000 under sanitizers; 1 000
 * under valgrind, which runs every thread on one CPU; WMS_SOAK_ORDERS and
 * WMS_SOAK_THREADS override) while the sim flaps between
 * healthy, hang, reply-lost (stored, then the connection dies before any
 * reply byte) and refuse. The service loop acts on the delivery verdict
 * only, as a real one would:
 *   NOT_SENT (refused, reset before the request left, CIRCUIT_OPEN) ->
 *              resubmit later (after retry_after);
 *   UNKNOWN -> resubmit with the same order id (even orders), or ask
 *              GetOrderStatus first and resubmit only if the WMS has no
 *              such order (odd orders);
 *   a Client fault on SubmitOrder, or any status the faults do not explain,
 *   is a bug.
 * At the end the sim's store holds every order exactly once with the
 * reference the client's ledger recorded, its stock reserved once per
 * order, and the ledger agrees. Hard stop at 90 s: a failure. */
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

#define HARD_STOP_MS 90000.0
#define SKUS 100u

enum { ACT_SUBMIT = 0, ACT_QUERY = 1 };

/* The client's ledger: one record per order. A record belongs to the
 * worker that took it until that worker confirms it. */
typedef struct ledger_rec {
	char id[24];
	char ref[WMS_ID_MAX + 1]; /* the WMS reference, once confirmed */
	double not_before;        /* resubmit / query no earlier than this */
	int32_t next;             /* the worker's retry queue */
	uint8_t action;
	uint8_t done;
	uint8_t via_query; /* confirmed by GetOrderStatus, not by a SubmitOrder reply */
	uint32_t submits;  /* SubmitOrder calls made for it */
} ledger_rec;

typedef struct counts {
	unsigned long submits, queries;
	unsigned long resub_circuit_open, resub_not_sent, resub_unknown, resub_server;
	unsigned long unknown_timeout, unknown_transport; /* resub_unknown by status */
	unsigned long duplicates;    /* SubmitOrder replies with duplicate = true */
	unsigned long found_by_query, absent_by_query;
	unsigned long confirmed;
} counts;

typedef struct soak {
	size_t n;
	unsigned threads;
	st_kind kind;
	uint32_t timeout_ms, healthy_ms, fault_ms;
	wms_client *client;
	wms_sim *sim;
	ledger_rec *orders;
	atomic_size_t next_fresh;
	atomic_int abort_run;  /* a bug, or the hard stop */
	atomic_int workers_left;
	double t0, hard_deadline;
	double release_every_ms; /* fresh order k goes out no earlier than t0 + k * this */
	/* the flapper */
	unsigned phases[WMS_SIM_FAULT_COUNT];
	unsigned switch_errors;
	char switch_error[WMS_ERROR_MESSAGE_MAX];
} soak;

typedef struct worker {
	soak *s;
	unsigned index;
	pthread_t thread;
	int32_t head, tail; /* retry queue (FIFO through ledger_rec.next) */
	double pause_until; /* the breaker said wait, or the WMS refused */
	counts c;
	double worst_call_ms;
	char bug[WMS_ERROR_MESSAGE_MAX + 128];
	int bugs;
	int hit_hard_stop;
} worker;

static void bug(worker *w, const char *fmt, ...)
#if defined(__GNUC__)
	__attribute__((format(printf, 2, 3)))
#endif
	;

static void bug(worker *w, const char *fmt, ...)
{
	va_list ap;
	if (!w->bugs++) {
		va_start(ap, fmt);
		vsnprintf(w->bug, sizeof(w->bug), fmt, ap);
		va_end(ap);
	}
	atomic_store(&w->s->abort_run, 1);
}

static void push(worker *w, int32_t i, double not_before)
{
	ledger_rec *r = &w->s->orders[i];
	r->not_before = not_before;
	r->next = -1;
	if (w->tail >= 0)
		w->s->orders[w->tail].next = i;
	else
		w->head = i;
	w->tail = i;
}

static int32_t pop(worker *w)
{
	int32_t i = w->head;
	w->head = w->s->orders[i].next;
	if (w->head < 0)
		w->tail = -1;
	return i;
}

/* A call failed: when to try again, and with what. */
static void retry_later(worker *w, int32_t i, wms_status st, const wms_error *err, double now)
{
	ledger_rec *r = &w->s->orders[i];

	if (err->delivery == WMS_DELIVERY_NOT_SENT) {
		if (st == WMS_ERR_CIRCUIT_OPEN) {
			/* 0 while a probe is in flight: its answer is imminent */
			double wait = err->retry_after_ms ? (double)err->retry_after_ms : 2.0;
			w->c.resub_circuit_open++;
			w->pause_until = now + wait;
			push(w, i, now + wait);
		} else if (st == WMS_ERR_CONNECT || st == WMS_ERR_TIMEOUT ||
			   st == WMS_ERR_TRANSPORT) {
			/* TRANSPORT: a connection the refuse fault cut before a
			 * byte of the request left (curl 55, reset on send) */
			w->c.resub_not_sent++;
			w->pause_until = now + 5.0;
			push(w, i, now + 5.0);
		} else {
			bug(w, "%s %s: NOT_SENT with %s: %s", r->action == ACT_QUERY ? "query" : "submit",
			    r->id, wms_status_name(st), err->message);
		}
		return;
	}
	if (err->delivery == WMS_DELIVERY_UNKNOWN) {
		if (st != WMS_ERR_TIMEOUT && st != WMS_ERR_TRANSPORT) {
			bug(w, "%s %s: UNKNOWN with %s (no fault here gives it): %s",
			    r->action == ACT_QUERY ? "query" : "submit", r->id, wms_status_name(st),
			    err->message);
			return;
		}
		w->c.resub_unknown++;
		if (st == WMS_ERR_TIMEOUT)
			w->c.unknown_timeout++;
		else
			w->c.unknown_transport++;
		/* odd orders: ask before sending again */
		if (r->action == ACT_SUBMIT && (i % 2) == 1)
			r->action = ACT_QUERY;
		push(w, i, now);
		return;
	}
	/* ANSWERED and not OK: only a Server fault would be worth retrying. */
	if (st == WMS_ERR_SOAP_FAULT && strcmp(err->fault_code, "Server") == 0) {
		w->c.resub_server++;
		push(w, i, now + 5.0);
		return;
	}
	bug(w, "%s %s: %s/ANSWERED fault '%s' wms '%s': %s",
	    r->action == ACT_QUERY ? "query" : "submit", r->id, wms_status_name(st),
	    err->fault_code, err->wms_code, err->message);
}

static void handle(worker *w, int32_t i)
{
	soak *s = w->s;
	ledger_rec *r = &s->orders[i];
	wms_error err;
	wms_status st;
	double t0 = st_now_ms(), now;

	if (r->action == ACT_QUERY) {
		wms_status_reply q;
		w->c.queries++;
		st = wms_get_order_status(&q, s->client, r->id, &err);
		now = st_now_ms();
		if (st == WMS_OK) {
			if (strcmp(q.order_id, r->id) != 0 || !q.wms_reference[0]) {
				bug(w, "GetOrderStatus %s: reply for '%s' reference '%s'", r->id,
				    q.order_id, q.wms_reference);
				return;
			}
			snprintf(r->ref, sizeof(r->ref), "%s", q.wms_reference);
			r->done = 1;
			r->via_query = 1;
			w->c.found_by_query++;
			w->c.confirmed++;
		} else if (st == WMS_ERR_SOAP_FAULT && err.delivery == WMS_DELIVERY_ANSWERED &&
			   strcmp(err.wms_code, "UNKNOWN_ORDER") == 0) {
			/* the WMS never stored it: now a resubmit is the only way */
			w->c.absent_by_query++;
			r->action = ACT_SUBMIT;
			push(w, i, now);
		} else {
			retry_later(w, i, st, &err, now);
		}
	} else {
		st_order o;
		wms_submit_reply rep;
		st_order_init(&o, r->id, 1u + (unsigned)(i % (int32_t)SKUS), 1u);
		w->c.submits++;
		r->submits++;
		st = wms_submit_order(&rep, s->client, &o.order, &err);
		now = st_now_ms();
		if (st == WMS_OK) {
			if (strcmp(rep.order_id, r->id) != 0 || !rep.wms_reference[0]) {
				bug(w, "SubmitOrder %s: reply for '%s' reference '%s'", r->id,
				    rep.order_id, rep.wms_reference);
				return;
			}
			snprintf(r->ref, sizeof(r->ref), "%s", rep.wms_reference);
			r->done = 1;
			w->c.confirmed++;
			if (rep.duplicate)
				w->c.duplicates++;
		} else {
			retry_later(w, i, st, &err, now);
		}
	}
	if (now - t0 > w->worst_call_ms)
		w->worst_call_ms = now - t0;
}

static void *worker_main(void *arg)
{
	worker *w = arg;
	soak *s = w->s;

	w->head = w->tail = -1;
	while (!atomic_load(&s->abort_run)) {
		double now = st_now_ms();
		int32_t i = -1;

		if (now > s->hard_deadline) {
			w->hit_hard_stop = 1;
			atomic_store(&s->abort_run, 1);
			break;
		}
		if (now < w->pause_until) {
			st_sleep_ms((uint32_t)(w->pause_until - now) + 1u);
			continue;
		}
		if (w->head >= 0 && s->orders[w->head].not_before <= now) {
			i = pop(w);
		} else {
			size_t k = atomic_fetch_add(&s->next_fresh, 1);
			if (k < s->n) {
				double at = s->t0 + (double)k * s->release_every_ms;
				if (at > now)
					st_sleep_ms((uint32_t)(at - now) + 1u);
				i = (int32_t)k;
				s->orders[i].action = ACT_SUBMIT;
			}
		}
		if (i < 0) {
			double wait;
			if (w->head < 0)
				break; /* nothing fresh, nothing pending: done */
			wait = s->orders[w->head].not_before - now;
			st_sleep_ms(wait > 20.0 ? 20u : (uint32_t)wait + 1u);
			continue;
		}
		handle(w, i);
	}
	atomic_fetch_sub(&s->workers_left, 1);
	return NULL;
}

/* Healthy, reply-lost, healthy, refuse, healthy, hang, healthy for longer
 * (the calls caught by the hang time out into it and open the breaker,
 * which must close again before the next reply-lost phase means anything),
 * and again, until the workers are done; then healthy. */
static void *flapper_main(void *arg)
{
	static const wms_sim_fault cycle[] = {
		WMS_SIM_FAULT_NONE, WMS_SIM_FAULT_REPLY_LOST, WMS_SIM_FAULT_NONE,
		WMS_SIM_FAULT_REFUSE, WMS_SIM_FAULT_NONE, WMS_SIM_FAULT_HANG,
	};
	soak *s = arg;
	wms_sim_fault prev = WMS_SIM_FAULT_NONE;
	unsigned k;

	for (k = 0; atomic_load(&s->workers_left) > 0; k++) {
		wms_sim_fault f = cycle[k % (sizeof(cycle) / sizeof(cycle[0]))];
		double len = f != WMS_SIM_FAULT_NONE	 ? s->fault_ms
			     : prev == WMS_SIM_FAULT_HANG ? s->healthy_ms + s->timeout_ms
							  : s->healthy_ms;
		double until = st_now_ms() + len;
		if (wms_sim_set_fault(s->sim, NULL, f, 0) != WMS_SIM_OK) {
			if (!s->switch_errors++)
				snprintf(s->switch_error, sizeof(s->switch_error), "%s: %s",
					 wms_sim_fault_name(f), wms_sim_last_error());
		} else {
			s->phases[f]++;
		}
		prev = f;
		while (atomic_load(&s->workers_left) > 0 && st_now_ms() < until)
			st_sleep_ms(2);
	}
	wms_sim_clear_faults(s->sim);
	return NULL;
}

static int by_ref(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

typedef struct seen_ctx {
	soak *s;
	unsigned char *seen;
	size_t foreign, repeated;
} seen_ctx;

static int mark_seen(const wms_sim_order_info *o, void *ctx)
{
	seen_ctx *c = ctx;
	unsigned long k;
	char *end;
	if (strncmp(o->order_id, "SOAK-", 5) != 0) {
		c->foreign++;
		return 0;
	}
	k = strtoul(o->order_id + 5, &end, 10);
	if (*end || k >= c->s->n) {
		c->foreign++;
		return 0;
	}
	if (c->seen[k]++)
		c->repeated++;
	return 0;
}

static void test_no_lost_no_duplicated_orders(void **state)
{
	soak *s = calloc(1, sizeof(*s));
	worker *w;
	wms_client_options co = WMS_CLIENT_OPTIONS_INIT;
	wms_error err;
	pthread_t flapper;
	counts t;
	seen_ctx sc;
	const char **refs;
	double wall, worst = 0;
	uint64_t sim_total, sim_submits, sim_status, store_submits = 0;
	unsigned long ledger_submits = 0, via_query = 0;
	int64_t reserved = 0;
	size_t i;
	unsigned j, bugs = 0, hard_stops = 0;
	const char *first_bug = NULL;

	(void)state;
	assert_non_null(s);
	s->kind = st_build_kind();
	s->n = st_env_ulong("WMS_SOAK_ORDERS", s->kind == ST_PLAIN      ? 10000
					       : s->kind == ST_VALGRIND ? 1000
								: 2000);
	s->threads = (unsigned)st_env_ulong("WMS_SOAK_THREADS", 8);
	assert_true(s->n < INT32_MAX);
	switch (s->kind) {
	case ST_PLAIN:
	case ST_ASAN:
		s->timeout_ms = 200;
		s->healthy_ms = 80;
		s->fault_ms = 60;
		break;
	case ST_TSAN:
		s->timeout_ms = 400;
		s->healthy_ms = 150;
		s->fault_ms = 100;
		break;
	case ST_VALGRIND:
		s->timeout_ms = 1500;
		s->healthy_ms = 600;
		s->fault_ms = 300;
		break;
	}
	print_message("soak: %s build, %zu orders (WMS_SOAK_ORDERS; default 10000 plain, 2000 under "
		      "sanitizers, 1000 under valgrind), %u threads, timeout %u ms, healthy %u ms / fault "
		      "%u ms\n",
		      st_kind_name(s->kind), s->n, s->threads, s->timeout_ms, s->healthy_ms,
		      s->fault_ms);

	s->orders = calloc(s->n, sizeof(*s->orders));
	w = calloc(s->threads, sizeof(*w));
	refs = calloc(s->n, sizeof(*refs));
	sc.seen = calloc(s->n, 1);
	assert_non_null(s->orders);
	assert_non_null(w);
	assert_non_null(refs);
	assert_non_null(sc.seen);
	for (i = 0; i < s->n; i++) {
		snprintf(s->orders[i].id, sizeof(s->orders[i].id), "SOAK-%u", (unsigned)i);
		s->orders[i].next = -1;
	}

	s->sim = st_sim_start(1000000000);
	co.endpoint = wms_sim_url(s->sim);
	co.timeout_ms = s->timeout_ms;
	co.connect_timeout_ms = s->timeout_ms;
	co.breaker_options.failure_threshold = 10;
	co.breaker_options.open_duration_ms = s->fault_ms / 2u;
	if (wms_client_new(&s->client, &co, &err) != WMS_OK)
		fail_msg("wms_client_new: %s", err.message);

	/* Fresh orders are released over two of the flapper's cycles (healthy,
	 * reply-lost, healthy, refuse, healthy, hang, the longer healthy), so
	 * every fault is met by calls however fast the build runs: unpaced,
	 * 2000 orders under TSan once finished in 0.7 s, before the first
	 * hang. */
	s->release_every_ms = 2.0 *
			      (3.0 * s->healthy_ms + 3.0 * s->fault_ms + (double)s->timeout_ms) /
			      (double)s->n;
	s->t0 = st_now_ms();
	s->hard_deadline = s->t0 + HARD_STOP_MS;
	atomic_store(&s->workers_left, (int)s->threads);
	for (j = 0; j < s->threads; j++) {
		w[j].s = s;
		w[j].index = j;
		assert_int_equal(pthread_create(&w[j].thread, NULL, worker_main, &w[j]), 0);
	}
	assert_int_equal(pthread_create(&flapper, NULL, flapper_main, s), 0);
	for (j = 0; j < s->threads; j++)
		pthread_join(w[j].thread, NULL);
	pthread_join(flapper, NULL);
	wall = st_now_ms() - s->t0;

	/* the figures */
	memset(&t, 0, sizeof(t));
	for (j = 0; j < s->threads; j++) {
		t.submits += w[j].c.submits;
		t.queries += w[j].c.queries;
		t.resub_circuit_open += w[j].c.resub_circuit_open;
		t.resub_not_sent += w[j].c.resub_not_sent;
		t.resub_unknown += w[j].c.resub_unknown;
		t.resub_server += w[j].c.resub_server;
		t.unknown_timeout += w[j].c.unknown_timeout;
		t.unknown_transport += w[j].c.unknown_transport;
		t.duplicates += w[j].c.duplicates;
		t.found_by_query += w[j].c.found_by_query;
		t.absent_by_query += w[j].c.absent_by_query;
		t.confirmed += w[j].c.confirmed;
		if (w[j].worst_call_ms > worst)
			worst = w[j].worst_call_ms;
		bugs += (unsigned)w[j].bugs;
		hard_stops += (unsigned)w[j].hit_hard_stop;
		if (w[j].bugs && !first_bug)
			first_bug = w[j].bug;
	}
	sim_total = wms_sim_requests(s->sim, NULL);
	sim_submits = wms_sim_requests(s->sim, "SubmitOrder");
	sim_status = wms_sim_requests(s->sim, "GetOrderStatus");
	print_message("soak: %zu orders in %.1f s (%.0f orders/s), %lu confirmed; calls: %lu "
		      "SubmitOrder, %lu GetOrderStatus; slowest call %.0f ms\n",
		      s->n, wall / 1000.0, (double)s->n * 1000.0 / wall, t.confirmed, t.submits,
		      t.queries, worst);
	print_message("soak: resubmits/retries by reason: CIRCUIT_OPEN %lu, NOT_SENT %lu, UNKNOWN "
		      "%lu (TIMEOUT %lu, TRANSPORT %lu), Server fault %lu; duplicate replies %lu; "
		      "queries found %lu, absent %lu\n",
		      t.resub_circuit_open, t.resub_not_sent, t.resub_unknown, t.unknown_timeout,
		      t.unknown_transport, t.resub_server, t.duplicates, t.found_by_query,
		      t.absent_by_query);
	print_message("soak: the sim saw %" PRIu64 " requests (%" PRIu64 " SubmitOrder, %" PRIu64
		      " GetOrderStatus); phases: healthy %u, hang %u, reply-lost %u, refuse %u\n",
		      sim_total, sim_submits, sim_status, s->phases[WMS_SIM_FAULT_NONE],
		      s->phases[WMS_SIM_FAULT_HANG], s->phases[WMS_SIM_FAULT_REPLY_LOST],
		      s->phases[WMS_SIM_FAULT_REFUSE]);

	if (hard_stops)
		fail_msg("hard stop: %.0f s passed with %lu of %zu orders confirmed",
			 HARD_STOP_MS / 1000.0, t.confirmed, s->n);
	if (bugs)
		fail_msg("%u service-loop surprises; first: %s", bugs, first_bug);
	if (s->switch_errors)
		fail_msg("the flapper could not set %u faults; first: %s", s->switch_errors,
			 s->switch_error);
	if (wall > 60000.0)
		print_message("soak: note: over a minute (%.1f s)\n", wall / 1000.0);

	/* the ledger: every order confirmed once, with a reference */
	assert_int_equal(t.confirmed, s->n);

	/* the store: exactly the ledger's orders, each once, same reference */
	assert_int_equal(wms_sim_order_count(s->sim), s->n);
	for (i = 0; i < s->n; i++) {
		ledger_rec *r = &s->orders[i];
		wms_sim_order_info info;
		if (!r->done || !r->ref[0])
			fail_msg("%s: not confirmed in the ledger", r->id);
		if (!wms_sim_order_get(&info, s->sim, r->id))
			fail_msg("%s: confirmed (%s) but not in the sim's store", r->id, r->ref);
		if (strcmp(info.wms_reference, r->ref) != 0)
			fail_msg("%s: the store says %s, the ledger %s", r->id, info.wms_reference,
				 r->ref);
		if (info.submits < 1 || info.line_count != 1 || info.total_quantity != 1)
			fail_msg("%s: submits %u, %zu lines, quantity %" PRIu64, r->id, info.submits,
				 info.line_count, info.total_quantity);
		/* a SubmitOrder that reached the WMS was made by us: never more
		 * copies than calls (one attempt each; the transport refuses
		 * libcurl's own resend on a dead kept-alive connection once the
		 * request was written, see test_sim_faults) */
		if (info.submits > r->submits)
			fail_msg("%s: the WMS saw %u submits, the client made %u", r->id, info.submits,
				 r->submits);
		store_submits += info.submits;
		ledger_submits += r->submits;
		via_query += r->via_query;
		refs[i] = r->ref;
	}
	/* the ledger's own books agree with the workers' counts */
	assert_int_equal(ledger_submits, t.submits);
	assert_int_equal(via_query, t.found_by_query);
	sc.s = s;
	sc.foreign = sc.repeated = 0;
	assert_int_equal(wms_sim_order_foreach(s->sim, mark_seen, &sc), s->n);
	assert_int_equal(sc.foreign, 0);
	assert_int_equal(sc.repeated, 0);
	for (i = 0; i < s->n; i++)
		if (sc.seen[i] != 1)
			fail_msg("SOAK-%zu listed %u times by the store", i, sc.seen[i]);
	/* no two orders share a reference */
	qsort(refs, s->n, sizeof(*refs), by_ref);
	for (i = 1; i < s->n; i++)
		if (strcmp(refs[i - 1], refs[i]) == 0)
			fail_msg("two orders have reference %s", refs[i]);
	/* stock reserved once per order, however often it was submitted */
	for (j = 1; j <= SKUS; j++) {
		wms_sim_stock k;
		char sku[16];
		snprintf(sku, sizeof(sku), "SKU-%u", j);
		assert_true(wms_sim_stock_get(&k, s->sim, sku));
		reserved += k.reserved;
	}
	assert_int_equal(reserved, (int64_t)s->n);
	print_message("soak: store: %zu orders, %" PRIu64 " SubmitOrder copies arrived for them, "
		      "%" PRId64 " units reserved\n",
		      wms_sim_order_count(s->sim), store_submits, reserved);

	/* the run really flapped (not meaningful for a token order count) */
	if (s->n >= 1000) {
		assert_true(s->phases[WMS_SIM_FAULT_HANG] > 0);
		assert_true(s->phases[WMS_SIM_FAULT_REPLY_LOST] > 0);
		assert_true(s->phases[WMS_SIM_FAULT_REFUSE] > 0);
		assert_true(t.resub_unknown > 0);
		assert_true(t.resub_circuit_open + t.resub_not_sent > 0);
		assert_true(t.duplicates + t.found_by_query > 0);
	}

	wms_client_free(s->client);
	wms_sim_stop(s->sim);
	free(sc.seen);
	free(refs);
	free(w);
	free(s->orders);
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_no_lost_no_duplicated_orders),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
