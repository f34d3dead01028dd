/*
 * The bulkhead (wms_bulkhead_options): a cap on the calls in flight.
 *
 * A gate transport holds every call that reaches it until the test opens
 * the gate, and counts how many were inside at once; so the calls over the
 * cap are told apart from those that got a slot without timing anything.
 * The last test does the same over real sockets: 16 threads against a
 * loopback WMS that never answers, cap 4.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <libxml/tree.h>

#include "wms/wms.h"
#include "wms/call.h"
#include "wms/sys/transport.h"
#include <time.h>
#include <unistd.h>
#include "internal.h" /* wms__now_ns */
#include "build_kind.h"
#include "child_exit.h"
#include "loopback.h"
#include "sample_order.h"

static const char status_ok[] =
	"<?xml version=\"1.0\"?><s:Envelope xmlns:s=\"http://schemas.xmlsoap.org/soap/envelope/\">"
	"<s:Body><GetOrderStatusResponse xmlns=\"urn:libwms:warehouse:1\">"
	"<clientOrderId>ORD-1</clientOrderId><wmsReference>WMS-000042</wmsReference>"
	"<state>PICKING</state><updatedAt>2026-12-04T10:00:00Z</updatedAt></GetOrderStatusResponse>"
	"</s:Body></s:Envelope>";

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { (time_t)(ms / 1000u), (long)(ms % 1000u) * 1000000L };
	nanosleep(&ts, NULL);
}

/* ---- a transport that holds calls until the test lets them go ---------- */

typedef struct gate {
	wms_transport parent;
	pthread_mutex_t lock;
	pthread_cond_t changed;
	int open;          /* calls inside may answer */
	unsigned inside;   /* calls in send() now */
	unsigned most;     /* the most there were at once */
	unsigned sends;
	int in_child; /* freed in a forked child: see gate_free */
} gate;

static wms_status gate_send(wms_transport *self, const wms_http_request *req,
			    wms_http_response *resp, wms_error *err)
{
	gate *g = (gate *)self;
	const char *body = strcmp(req->operation, "GetOrderStatus") == 0 ? status_ok : sample_submit_ok;
	(void)err;
	pthread_mutex_lock(&g->lock);
	g->sends++;
	if (++g->inside > g->most)
		g->most = g->inside;
	pthread_cond_broadcast(&g->changed);
	while (!g->open)
		pthread_cond_wait(&g->changed, &g->lock);
	g->inside--;
	pthread_cond_broadcast(&g->changed);
	pthread_mutex_unlock(&g->lock);
	resp->status = 200;
	if (wms_http_response_set_content_type(resp, "text/xml", 8) != WMS_OK)
		return WMS_ERR_NOMEM;
	return wms_http_response_append(resp, body, strlen(body));
}

static void gate_free(wms_transport *self)
{
	gate *g = (gate *)self;
	/* in a forked child, a call of the parent's may still wait on
	 * `changed` in the copy, and pthread_cond_destroy would wait for it */
	if (!g->in_child) {
		pthread_mutex_destroy(&g->lock);
		pthread_cond_destroy(&g->changed);
	}
	free(g);
}

static gate *gate_new(void)
{
	gate *g = calloc(1, sizeof(*g));
	assert_non_null(g);
	g->parent.version = WMS_TRANSPORT_VERSION;
	g->parent.send = gate_send;
	g->parent.free = gate_free;
	pthread_mutex_init(&g->lock, NULL);
	pthread_cond_init(&g->changed, NULL);
	return g;
}

static void gate_set(gate *g, int open)
{
	pthread_mutex_lock(&g->lock);
	g->open = open;
	if (!open)
		g->most = g->inside; /* count afresh from here */
	pthread_cond_broadcast(&g->changed);
	pthread_mutex_unlock(&g->lock);
}

/* Wait until `n` calls are inside the gate (the test fails after 30 s). */
static void gate_wait_inside(gate *g, unsigned n)
{
	uint64_t until = wms__now_ns() + 30000000000ull;
	pthread_mutex_lock(&g->lock);
	while (g->inside != n && wms__now_ns() < until) {
		pthread_mutex_unlock(&g->lock);
		sleep_ms(1);
		pthread_mutex_lock(&g->lock);
	}
	assert_int_equal(g->inside, n);
	pthread_mutex_unlock(&g->lock);
}

/* ---- clients and callers ----------------------------------------------- */

static wms_client *client_with(wms_transport *t, const char *endpoint, uint32_t cap,
			       uint32_t wait_ms, wms_breaker_scope scope, uint32_t timeout_ms)
{
	wms_client_options o = WMS_CLIENT_OPTIONS_INIT;
	wms_client *c = NULL;
	wms_error err;
	o.endpoint = endpoint ? endpoint : "http://wms.invalid/ws";
	o.transport = t;
	o.breaker_scope = scope;
	o.timeout_ms = timeout_ms;
	o.bulkhead.max_concurrent_calls = cap;
	o.bulkhead.max_wait_for_slot_ms = wait_ms;
	if (wms_client_new(&c, &o, &err) != WMS_OK)
		fail_msg("wms_client_new: %s", err.message);
	return c;
}

/* A generic call (wms/call.h) of `operation`; any single reply element. */
static wms_status generic_call(wms_client *c, const char *operation, wms_error *err)
{
	static const char body[] = "<q:Query xmlns:q=\"urn:example:q\"><q:id>7</q:id></q:Query>";
	wms_call_options op = WMS_CALL_OPTIONS_INIT;
	xmlDocPtr reply = (xmlDocPtr)err; /* must come back NULL unless OK */
	wms_status st;
	op.operation = operation;
	op.soap_action = "urn:example:q/Query";
	st = wms_call_bytes(&reply, c, &op, body, sizeof(body) - 1, err);
	if (st == WMS_OK)
		xmlFreeDoc(reply);
	else
		assert_null(reply);
	return st;
}

typedef struct caller {
	wms_client *client;
	int status_call; /* GetOrderStatus instead of SubmitOrder */
	const char *generic; /* non-NULL: wms_call_bytes of this operation instead */
	pthread_t thread;
	wms_status st;
	wms_error err;
	uint64_t ns; /* how long the call took */
	atomic_int *done;
} caller;

static void *call_thread(void *arg)
{
	caller *k = arg;
	uint64_t t0 = wms__now_ns();
	if (k->generic) {
		k->st = generic_call(k->client, k->generic, &k->err);
	} else if (k->status_call) {
		wms_status_reply r;
		k->st = wms_get_order_status(&r, k->client, "ORD-1", &k->err);
	} else {
		wms_order order = sample_order();
		wms_submit_reply r;
		k->st = wms_submit_order(&r, k->client, &order, &k->err);
	}
	k->ns = wms__now_ns() - t0;
	if (k->done)
		atomic_fetch_add(k->done, 1);
	return NULL;
}

static void start(caller *k, wms_client *c, int status_call, atomic_int *done)
{
	memset(k, 0, sizeof(*k));
	k->client = c;
	k->status_call = status_call;
	k->done = done;
	assert_int_equal(pthread_create(&k->thread, NULL, call_thread, k), 0);
}

static void start_generic(caller *k, wms_client *c, const char *operation)
{
	memset(k, 0, sizeof(*k));
	k->client = c;
	k->generic = operation;
	assert_int_equal(pthread_create(&k->thread, NULL, call_thread, k), 0);
}

static void wait_done(atomic_int *done, int n)
{
	uint64_t until = wms__now_ns() + 30000000000ull;
	while (atomic_load(done) < n && wms__now_ns() < until)
		sleep_ms(1);
	assert_int_equal(atomic_load(done), n);
}

static void assert_full(const caller *k, uint32_t timeout_ms)
{
	assert_int_equal(k->st, WMS_ERR_BULKHEAD_FULL);
	assert_int_equal(k->err.status, WMS_ERR_BULKHEAD_FULL);
	assert_int_equal(k->err.delivery, WMS_DELIVERY_NOT_SENT);
	assert_int_equal(k->err.retry_after_ms, timeout_ms);
	assert_int_equal(k->err.attempts, 0);
	assert_int_equal(k->err.fallback, 0);
	assert_non_null(strstr(k->err.message, "bulkhead full"));
	assert_true(wms_error_is_retryable(&k->err));
	assert_int_equal(wms_error_outcome(&k->err), WMS_OUTCOME_IGNORED);
}

static void assert_bulkhead(wms_client *c, const char *op, uint32_t in_flight, uint64_t admitted,
			    uint64_t waited, uint64_t rejected)
{
	wms_bulkhead_snapshot s;
	assert_int_equal(wms_client_bulkhead_get(&s, c, op), WMS_OK);
	assert_int_equal(s.in_flight, in_flight);
	assert_int_equal(s.admitted, admitted);
	assert_int_equal(s.waited, waited);
	assert_int_equal(s.rejected, rejected);
}

/* The promise: a call over the cap is refused "in under 1 ms".
 * Each refusal is timed by its own thread around the call, so a refusal
 * whose thread the scheduler put aside (16 threads on this 2-core machine,
 * other jobs running) shows that pause too: the median of the refusals is
 * held to 1 ms, which no pause of a few threads moves, and the slowest to a
 * bound that a refusal waiting on anything (a lock held across a call, the
 * WMS, a connection) would cross, 50 ms. Both grow with tk_slowdown()
 * under valgrind and the sanitizers. */
static void assert_refused_fast(uint64_t *ns, int n, const char *what)
{
	const uint64_t median_max = 1000000ull * tk_slowdown(),
		       worst_max = 50000000ull * tk_slowdown();
	uint64_t median;
	for (int i = 1; i < n; i++) /* insertion sort: n is 12 */
		for (int j = i; j > 0 && ns[j] < ns[j - 1]; j--) {
			uint64_t v = ns[j];
			ns[j] = ns[j - 1];
			ns[j - 1] = v;
		}
	median = n % 2 ? ns[n / 2] : (ns[n / 2 - 1] + ns[n / 2]) / 2;
	print_message("%s: %d refusals, median %.3f ms, slowest %.3f ms\n", what, n,
		      (double)median / 1e6, (double)ns[n - 1] / 1e6);
	if (median > median_max)
		fail_msg("%s: median refusal %.3f ms, over %.3f ms", what, (double)median / 1e6,
			 (double)median_max / 1e6);
	if (ns[n - 1] > worst_max)
		fail_msg("%s: slowest refusal %.3f ms, over %.3f ms", what,
			 (double)ns[n - 1] / 1e6, (double)worst_max / 1e6);
}

/* ---- the tests ----------------------------------------------------------- */

#define THREADS 16

/* 16 callers, cap 4: 4 reach the transport, 12 are refused without it,
 * nothing of it reaches the breaker; twice in a row on one client. */
static void cap_holds_and_rejects(void **state)
{
	gate *g = gate_new();
	wms_client *c = client_with(&g->parent, NULL, 4, 0, WMS_BREAKER_SCOPE_PER_CLIENT, 10000);
	wms_breaker_snapshot bs;
	caller k[THREADS];
	(void)state;

	for (int round = 1; round <= 2; round++) {
		atomic_int done = 0;
		int full = 0, ok = 0;
		uint64_t refused_ns[THREADS];
		char what[32];
		gate_set(g, 0);
		for (int i = 0; i < THREADS; i++)
			start(&k[i], c, 0, &done);
		/* 4 inside, the 12 others back, while the 4 are still held */
		wait_done(&done, THREADS - 4);
		gate_wait_inside(g, 4);
		assert_bulkhead(c, NULL, 4, (uint64_t)round * 4, 0, (uint64_t)round * 12);
		gate_set(g, 1);
		for (int i = 0; i < THREADS; i++) {
			assert_int_equal(pthread_join(k[i].thread, NULL), 0);
			if (k[i].st == WMS_OK) {
				ok++;
				continue;
			}
			assert_full(&k[i], 10000);
			refused_ns[full++] = k[i].ns;
		}
		assert_int_equal(ok, 4);
		assert_int_equal(full, 12);
		assert_int_equal(g->most, 4);
		assert_int_equal(g->sends, (unsigned)round * 4);
		snprintf(what, sizeof(what), "round %d", round);
		assert_refused_fast(refused_ns, full, what);
		assert_bulkhead(c, NULL, 0, (uint64_t)round * 4, 0, (uint64_t)round * 12);
		/* the breaker saw 4 successes and no refusal, no failure */
		wms_breaker_snapshot_get(&bs, wms_client_breaker(c));
		assert_int_equal(bs.successes, (uint64_t)round * 4);
		assert_int_equal(bs.failures, 0);
		assert_int_equal(bs.rejected, 0);
		assert_int_equal(bs.half_open_in_flight, 0);
		assert_int_equal(bs.state, WMS_BREAKER_STATE_CLOSED);
	}
	wms_client_free(c);
}

/* A cap of 1 crossed both ways, twice: one at a time goes through, a
 * second at once does not; calls in a row each get the slot back. */
static void cap_of_one(void **state)
{
	gate *g = gate_new();
	wms_client *c = client_with(&g->parent, NULL, 1, 0, WMS_BREAKER_SCOPE_PER_CLIENT, 5000);
	caller a, b;
	(void)state;

	for (int round = 1; round <= 2; round++) {
		atomic_int done = 0;
		gate_set(g, 0);
		start(&a, c, 0, NULL);
		gate_wait_inside(g, 1);
		start(&b, c, 0, &done);
		wait_done(&done, 1);
		assert_int_equal(pthread_join(b.thread, NULL), 0);
		assert_full(&b, 5000);
		gate_set(g, 1);
		assert_int_equal(pthread_join(a.thread, NULL), 0);
		assert_int_equal(a.st, WMS_OK);
		/* in a row: each finds the slot free */
		for (int i = 0; i < 3; i++) {
			start(&a, c, 0, NULL);
			assert_int_equal(pthread_join(a.thread, NULL), 0);
			assert_int_equal(a.st, WMS_OK);
		}
	}
	assert_bulkhead(c, NULL, 0, 8, 0, 2);
	wms_client_free(c);
}

/* With max_wait_for_slot_ms, a call over the cap waits and gets the slot
 * a finishing call frees; twice in a row. */
static void waits_for_a_freed_slot(void **state)
{
	gate *g = gate_new();
	wms_client *c = client_with(&g->parent, NULL, 1, 60000, WMS_BREAKER_SCOPE_PER_CLIENT, 5000);
	wms_bulkhead_snapshot s;
	wms_breaker_snapshot bs;
	caller a, b;
	(void)state;

	for (int round = 1; round <= 2; round++) {
		uint64_t until = wms__now_ns() + 30000000000ull;
		gate_set(g, 0);
		start(&a, c, 0, NULL);
		gate_wait_inside(g, 1);
		start(&b, c, 0, NULL);
		do { /* b is waiting for the slot */
			sleep_ms(1);
			assert_int_equal(wms_client_bulkhead_get(&s, c, NULL), WMS_OK);
		} while (s.waiting != 1 && wms__now_ns() < until);
		assert_int_equal(s.waiting, 1);
		assert_int_equal(s.max_wait_for_slot_ms, 60000);
		/* b waits without a permit: its wait is not the WMS's time, and
		 * it holds no half-open trial */
		wms_breaker_snapshot_get(&bs, wms_client_breaker(c));
		assert_int_equal(bs.permitted, (uint64_t)(2 * round - 1));
		gate_set(g, 1);
		assert_int_equal(pthread_join(a.thread, NULL), 0);
		assert_int_equal(pthread_join(b.thread, NULL), 0);
		assert_int_equal(a.st, WMS_OK);
		assert_int_equal(b.st, WMS_OK);
		assert_int_equal(g->most, 1);
	}
	assert_bulkhead(c, NULL, 0, 4, 2, 0);
	wms_breaker_snapshot_get(&bs, wms_client_breaker(c));
	assert_int_equal(bs.permitted, 4);
	assert_int_equal(bs.successes, 4);
	wms_client_free(c);
}

/* fork() while one call holds the only slot and another waits for it. In
 * the child the client's copy of the bulkhead still counts the waiter (a
 * thread of the parent's, absent there), and glibc's pthread_cond_destroy
 * waits for a condition variable's waiters: wms_client_free must return
 * at once there all the same (the child's alarm ends a hang as a failure),
 * and the child's own call is refused before the bulkhead. The two calls
 * go on in the parent. Twice on one client. */
static void free_in_a_child_while_a_caller_waits(void **state)
{
	/* a plain build's 10 s for the child (its alarm), 5 more to reap it */
	const unsigned alarm_s = 10u * tk_slowdown(), reap_s = alarm_s + 5u * tk_slowdown();
	gate *g = gate_new();
	wms_client *c = client_with(&g->parent, NULL, 1, 60000, WMS_BREAKER_SCOPE_PER_CLIENT, 5000);
	wms_bulkhead_snapshot s;
	caller a, b;
	(void)state;

	for (int round = 1; round <= 2; round++) {
		uint64_t until = wms__now_ns() + 30000000000ull;
		char why[160];
		pid_t pid;
		gate_set(g, 0);
		start(&a, c, 0, NULL);
		gate_wait_inside(g, 1);
		start(&b, c, 0, NULL);
		do {
			sleep_ms(1);
			assert_int_equal(wms_client_bulkhead_get(&s, c, NULL), WMS_OK);
		} while (s.waiting != 1 && wms__now_ns() < until);
		assert_int_equal(s.waiting, 1);
		pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			wms_order order = sample_order();
			wms_submit_reply r;
			wms_error err;
			child_begin(alarm_s);
			if (wms_submit_order(&r, c, &order, &err) != WMS_ERR_INVALID_ARG)
				child_exit(2);
			if (err.delivery != WMS_DELIVERY_NOT_SENT || !strstr(err.message, "forked"))
				child_exit(3);
			g->in_child = 1;
			wms_client_free(c);
			child_exit(0);
		}
		if (child_reap(pid, reap_s, why, sizeof(why)) != 0)
			fail_msg("%s", why);
		assert_int_equal(g->sends, (unsigned)(2 * round - 1)); /* the child sent nothing */
		gate_set(g, 1);
		assert_int_equal(pthread_join(a.thread, NULL), 0);
		assert_int_equal(pthread_join(b.thread, NULL), 0);
		assert_int_equal(a.st, WMS_OK);
		assert_int_equal(b.st, WMS_OK);
	}
	assert_bulkhead(c, NULL, 0, 4, 2, 0);
	wms_client_free(c);
}

/* A wait that no call ends in time: BULKHEAD_FULL after max_wait, and not
 * much later. The call's own deadline (60 s) is far beyond any margin, so a
 * wait that ran to it, or to the call in flight, cannot pass. */
static void a_wait_runs_out(void **state)
{
	enum { WAIT_MS = 50, TIMEOUT_MS = 60000 };
	/* the timed wait's wake-up and the refusal: a few ms on a busy 2-core
	 * machine; 100 ms of margin in a plain build */
	const uint64_t most_ns = (WAIT_MS + 100ull * tk_slowdown()) * 1000000ull;
	gate *g = gate_new();
	wms_client *c = client_with(&g->parent, NULL, 1, WAIT_MS, WMS_BREAKER_SCOPE_PER_CLIENT,
				    TIMEOUT_MS);
	caller a, b;
	(void)state;

	gate_set(g, 0);
	start(&a, c, 0, NULL);
	gate_wait_inside(g, 1);
	for (int round = 0; round < 2; round++) {
		start(&b, c, 0, NULL);
		assert_int_equal(pthread_join(b.thread, NULL), 0);
		assert_full(&b, TIMEOUT_MS);
		assert_non_null(strstr(b.err.message, "after waiting"));
		print_message("round %d: refused after %.3f ms (wait %d ms, bound %.0f ms)\n", round,
			      (double)b.ns / 1e6, WAIT_MS, (double)most_ns / 1e6);
		assert_true(b.ns >= WAIT_MS * 1000000ull); /* it did wait */
		if (b.ns > most_ns)
			fail_msg("waited %.3f ms for a %d ms wait (bound %.0f ms)", (double)b.ns / 1e6,
				 WAIT_MS, (double)most_ns / 1e6);
	}
	gate_set(g, 1);
	assert_int_equal(pthread_join(a.thread, NULL), 0);
	assert_bulkhead(c, NULL, 0, 1, 0, 2);
	wms_client_free(c);
}

/* The breaker comes first: an open breaker refuses at once, even with
 * every slot taken and a long wait allowed; the bulkhead counts nothing. */
static void open_breaker_before_bulkhead(void **state)
{
	gate *g = gate_new();
	wms_client *c = client_with(&g->parent, NULL, 1, 60000, WMS_BREAKER_SCOPE_PER_CLIENT, 5000);
	caller a, b;
	(void)state;

	gate_set(g, 0);
	start(&a, c, 0, NULL);
	gate_wait_inside(g, 1);
	wms_breaker_force_open(wms_client_breaker(c));
	start(&b, c, 0, NULL);
	assert_int_equal(pthread_join(b.thread, NULL), 0);
	assert_int_equal(b.st, WMS_ERR_CIRCUIT_OPEN);
	assert_bulkhead(c, NULL, 1, 1, 0, 0);
	gate_set(g, 1);
	assert_int_equal(pthread_join(a.thread, NULL), 0);
	assert_int_equal(a.st, WMS_OK);
	wms_client_free(c);
}

/* Per-operation breakers: a bulkhead each. SubmitOrder's full does not
 * touch GetOrderStatus. */
static void one_bulkhead_per_operation(void **state)
{
	gate *g = gate_new();
	wms_client *c = client_with(&g->parent, NULL, 1, 0, WMS_BREAKER_SCOPE_PER_OPERATION, 5000);
	wms_bulkhead_snapshot s;
	caller a, b, d;
	atomic_int done = 0;
	(void)state;

	gate_set(g, 0);
	start(&a, c, 0, NULL);
	gate_wait_inside(g, 1);
	start(&b, c, 0, &done);       /* SubmitOrder: full */
	start(&d, c, 1, NULL);        /* GetOrderStatus: its own slot */
	wait_done(&done, 1);
	gate_wait_inside(g, 2);
	assert_int_equal(pthread_join(b.thread, NULL), 0);
	assert_full(&b, 5000);
	gate_set(g, 1);
	assert_int_equal(pthread_join(a.thread, NULL), 0);
	assert_int_equal(pthread_join(d.thread, NULL), 0);
	assert_int_equal(a.st, WMS_OK);
	assert_int_equal(d.st, WMS_OK);
	assert_bulkhead(c, "SubmitOrder", 0, 1, 0, 1);
	assert_bulkhead(c, NULL, 0, 1, 0, 1); /* NULL: SubmitOrder's */
	assert_bulkhead(c, "GetOrderStatus", 0, 1, 0, 0);
	assert_bulkhead(c, "CancelOrder", 0, 0, 0, 0);
	assert_int_equal(wms_client_bulkhead_get(&s, c, "NoSuchOperation"), WMS_ERR_INVALID_ARG);
	assert_int_equal(wms_client_bulkhead_get(NULL, c, NULL), WMS_ERR_INVALID_ARG);
	assert_int_equal(wms_client_bulkhead_get(&s, NULL, NULL), WMS_ERR_INVALID_ARG);
	wms_client_free(c);
}

static atomic_int fallback_runs;
static wms_status last_why;

static wms_status submit_fallback(wms_submit_reply *out, const wms_fallback_call *call,
				  void *payload)
{
	(void)payload;
	last_why = call->error->status;
	atomic_fetch_add(&fallback_runs, 1);
	snprintf(out->order_id, sizeof(out->order_id), "%s", call->order_id);
	out->state = WMS_ORDER_STATE_RECEIVED;
	return WMS_OK;
}

/* A fallback stands in for a refused call, told why. */
static void fallback_on_full(void **state)
{
	gate *g = gate_new();
	wms_client_options o = WMS_CLIENT_OPTIONS_INIT;
	wms_fallbacks fb = { submit_fallback, NULL, NULL, NULL, NULL, { NULL } };
	wms_client *c;
	wms_error err;
	caller a, b;
	(void)state;

	o.endpoint = "http://wms.invalid/ws";
	o.transport = &g->parent;
	o.fallbacks = &fb;
	o.bulkhead.max_concurrent_calls = 1;
	assert_int_equal(wms_client_new(&c, &o, &err), WMS_OK);
	gate_set(g, 0);
	start(&a, c, 0, NULL);
	gate_wait_inside(g, 1);
	start(&b, c, 0, NULL);
	assert_int_equal(pthread_join(b.thread, NULL), 0);
	assert_int_equal(b.st, WMS_OK);
	assert_int_equal(b.err.fallback, 1);
	assert_int_equal(b.err.delivery, WMS_DELIVERY_NOT_SENT);
	assert_non_null(strstr(b.err.message, "bulkhead full: answered by the SubmitOrder fallback"));
	assert_int_equal(atomic_load(&fallback_runs), 1);
	assert_int_equal(last_why, WMS_ERR_BULKHEAD_FULL);
	gate_set(g, 1);
	assert_int_equal(pthread_join(a.thread, NULL), 0);
	assert_int_equal(a.st, WMS_OK);
	assert_int_equal(g->sends, 1);
	wms_client_free(c);
}

/* Every option bound on both sides; older option versions carry none. */
static void option_bounds(void **state)
{
	static const struct {
		uint32_t cap, wait;
		int ok;
	} cases[] = {
		{ 0, 0, 1 },          { 1, 0, 1 },          { 65536, 0, 1 },  { 65537, 0, 0 },
		{ 4, 3600000, 1 },    { 4, 3600001, 0 },    { 0, 3600000, 1 }, { UINT32_MAX, 0, 0 },
	};
	wms_client_options o;
	wms_client *c;
	wms_error err;
	wms_bulkhead_snapshot s;
	(void)state;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		gate *g = gate_new();
		wms_client_options_init(&o, WMS_CLIENT_OPTIONS_VERSION);
		o.endpoint = "http://wms.invalid/ws";
		o.transport = &g->parent;
		o.bulkhead.max_concurrent_calls = cases[i].cap;
		o.bulkhead.max_wait_for_slot_ms = cases[i].wait;
		if (cases[i].ok) {
			assert_int_equal(wms_client_new(&c, &o, &err), WMS_OK);
			assert_int_equal(wms_client_bulkhead_get(&s, c, NULL), WMS_OK);
			assert_int_equal(s.max_concurrent_calls, cases[i].cap);
			/* no cap: no wait either */
			assert_int_equal(s.max_wait_for_slot_ms, cases[i].cap ? cases[i].wait : 0);
			wms_client_free(c);
		} else {
			assert_int_equal(wms_client_new(&c, &o, &err), WMS_ERR_INVALID_ARG);
			assert_null(c);
			assert_non_null(strstr(err.message,
					       cases[i].wait > 3600000 ? "bulkhead.max_wait_for_slot_ms"
								       : "bulkhead.max_concurrent_calls"));
		}
	}
	/* A version-3 struct ends before `bulkhead`: what lies past it is not
	 * read (a canary that would be a cap of 1). */
	{
		unsigned char *mem = malloc(sizeof(wms_client_options));
		wms_client_options *v3 = (wms_client_options *)(void *)mem;
		gate *g = gate_new();
		memset(mem, 0x01, sizeof(wms_client_options));
		assert_int_equal(wms_client_options_init(v3, 3), WMS_OK);
		for (size_t i = offsetof(wms_client_options, bulkhead); i < sizeof(*v3); i++)
			assert_int_equal(mem[i], 0x01);
		v3->endpoint = "http://wms.invalid/ws";
		v3->transport = &g->parent;
		assert_int_equal(wms_client_new(&c, v3, &err), WMS_OK);
		assert_int_equal(wms_client_bulkhead_get(&s, c, NULL), WMS_OK);
		assert_int_equal(s.max_concurrent_calls, 0);
		wms_client_free(c);
		free(mem);
	}
	assert_int_equal(wms_client_options_init(&o, 5), WMS_ERR_INVALID_ARG);
	assert_int_equal(wms_client_options_init(&o, 4), WMS_OK);
	assert_int_equal(o.bulkhead.max_concurrent_calls, 0);
}

/* The health document and the metrics show a capped client's bulkhead,
 * and nothing of it for a client without one. */
static void health_and_metrics(void **state)
{
	gate *g = gate_new();
	wms_client *c = client_with(&g->parent, NULL, 3, 25, WMS_BREAKER_SCOPE_PER_CLIENT, 5000);
	gate *g2 = gate_new();
	wms_client *plain = client_with(&g2->parent, NULL, 0, 0, WMS_BREAKER_SCOPE_PER_CLIENT, 5000);
	char *doc = NULL;
	caller a;
	(void)state;

	gate_set(g, 0);
	start(&a, c, 0, NULL);
	gate_wait_inside(g, 1);
	assert_int_equal(wms_client_health_json(&doc, c), WMS_OK);
	assert_non_null(strstr(doc, ",\"bulkhead\":{\"max_concurrent_calls\":3,"
				    "\"max_wait_for_slot_ms\":25,\"in_flight\":1,\"waiting\":0,"
				    "\"admitted\":1,\"waited\":0,\"rejected\":0}}]}"));
	wms_free(doc);
	assert_int_equal(wms_client_health_prometheus(&doc, c, "shop"), WMS_OK);
	assert_non_null(strstr(doc, "shop_bulkhead_max_concurrent_calls{breaker=\"wms\"} 3\n"));
	assert_non_null(strstr(doc, "shop_bulkhead_in_flight{breaker=\"wms\"} 1\n"));
	assert_non_null(strstr(doc, "shop_bulkhead_waiting{breaker=\"wms\"} 0\n"));
	assert_non_null(strstr(doc, "shop_bulkhead_calls_total{breaker=\"wms\",kind=\"admitted\"} 1\n"));
	assert_non_null(strstr(doc, "shop_bulkhead_calls_total{breaker=\"wms\",kind=\"rejected\"} 0\n"));
	wms_free(doc);
	gate_set(g, 1);
	assert_int_equal(pthread_join(a.thread, NULL), 0);

	assert_int_equal(wms_client_health_json(&doc, plain), WMS_OK);
	assert_null(strstr(doc, "bulkhead"));
	wms_free(doc);
	assert_int_equal(wms_client_health_prometheus(&doc, plain, NULL), WMS_OK);
	assert_null(strstr(doc, "bulkhead"));
	wms_free(doc);
	wms_client_free(c);
	wms_client_free(plain);
}

/* What a breaker has seen: calls permitted, rejected and failed. */
static void assert_breaker_saw(wms_breaker *b, uint64_t permitted, uint64_t successes)
{
	wms_breaker_snapshot bs;
	assert_non_null(b);
	wms_breaker_snapshot_get(&bs, b);
	assert_int_equal(bs.permitted, permitted);
	assert_int_equal(bs.successes, successes);
	assert_int_equal(bs.failures, 0);
	assert_int_equal(bs.rejected, 0);
	assert_int_equal(bs.ignored, 0);
	assert_int_equal(bs.state, WMS_BREAKER_STATE_CLOSED);
}

/* A generic call (wms_call) over the cap is refused like a typed one:
 * BULKHEAD_FULL, NOT_SENT, nothing sent, nothing for the breaker (more
 * refusals than the breaker's threshold leave it closed and untouched); a
 * generic call in flight holds a slot a typed call then cannot have. */
static void generic_call_over_the_cap(void **state)
{
	gate *g = gate_new();
	wms_client *c = client_with(&g->parent, NULL, 1, 0, WMS_BREAKER_SCOPE_PER_CLIENT, 5000);
	wms_error err;
	caller a;
	(void)state;

	gate_set(g, 0);
	start(&a, c, 0, NULL); /* a typed SubmitOrder holds the one slot */
	gate_wait_inside(g, 1);
	for (int i = 0; i < 6; i++) { /* the default threshold is 5 */
		assert_int_equal(generic_call(c, "GetShipmentStatus", &err), WMS_ERR_BULKHEAD_FULL);
		assert_int_equal(err.status, WMS_ERR_BULKHEAD_FULL);
		assert_int_equal(err.delivery, WMS_DELIVERY_NOT_SENT);
		assert_string_equal(err.operation, "GetShipmentStatus");
		assert_int_equal(err.attempts, 0);
		assert_int_equal(err.retry_after_ms, 5000);
		assert_non_null(strstr(err.message, "bulkhead full"));
		assert_int_equal(wms_error_outcome(&err), WMS_OUTCOME_IGNORED);
	}
	assert_int_equal(g->sends, 1);
	assert_bulkhead(c, NULL, 1, 1, 0, 6);
	assert_breaker_saw(wms_client_breaker(c), 1, 0);
	gate_set(g, 1);
	assert_int_equal(pthread_join(a.thread, NULL), 0);
	assert_int_equal(a.st, WMS_OK);
	assert_breaker_saw(wms_client_breaker(c), 1, 1);

	/* the other way round: a generic call holds the slot */
	gate_set(g, 0);
	start_generic(&a, c, "GetShipmentStatus");
	gate_wait_inside(g, 1);
	{
		wms_order order = sample_order();
		assert_int_equal(wms_submit_order(NULL, c, &order, &err), WMS_ERR_BULKHEAD_FULL);
		assert_int_equal(err.delivery, WMS_DELIVERY_NOT_SENT);
	}
	gate_set(g, 1);
	assert_int_equal(pthread_join(a.thread, NULL), 0);
	assert_int_equal(a.st, WMS_OK);
	assert_int_equal(g->sends, 2);
	assert_bulkhead(c, NULL, 0, 2, 0, 7);
	assert_breaker_saw(wms_client_breaker(c), 2, 2);
	wms_client_free(c);
}

/* Per-operation breakers: a generic call is capped by the bulkhead of the
 * operation it names: its own for a new name, the typed operation's for a
 * typed name. A full one refuses only calls of that name. */
static void generic_call_per_operation_cap(void **state)
{
	gate *g = gate_new();
	wms_client *c = client_with(&g->parent, NULL, 1, 0, WMS_BREAKER_SCOPE_PER_OPERATION, 5000);
	wms_error err;
	caller ship, carriers, submit;
	(void)state;

	gate_set(g, 0);
	start_generic(&ship, c, "GetShipmentStatus");
	gate_wait_inside(g, 1);
	/* the same name: its one slot is taken */
	assert_int_equal(generic_call(c, "GetShipmentStatus", &err), WMS_ERR_BULKHEAD_FULL);
	assert_int_equal(err.delivery, WMS_DELIVERY_NOT_SENT);
	/* another generic name and a typed operation each have a slot */
	start_generic(&carriers, c, "ListCarriers");
	gate_wait_inside(g, 2);
	start(&submit, c, 0, NULL);
	gate_wait_inside(g, 3);
	/* a generic call named SubmitOrder meets the typed call's bulkhead */
	assert_int_equal(generic_call(c, "SubmitOrder", &err), WMS_ERR_BULKHEAD_FULL);
	assert_string_equal(err.operation, "SubmitOrder");
	assert_int_equal(err.delivery, WMS_DELIVERY_NOT_SENT);
	assert_int_equal(generic_call(c, "ListCarriers", &err), WMS_ERR_BULKHEAD_FULL);
	assert_int_equal(g->sends, 3);
	assert_bulkhead(c, "GetShipmentStatus", 1, 1, 0, 1);
	assert_bulkhead(c, "ListCarriers", 1, 1, 0, 1);
	assert_bulkhead(c, "SubmitOrder", 1, 1, 0, 1);
	assert_bulkhead(c, "GetOrderStatus", 0, 0, 0, 0);
	gate_set(g, 1);
	assert_int_equal(pthread_join(ship.thread, NULL), 0);
	assert_int_equal(pthread_join(carriers.thread, NULL), 0);
	assert_int_equal(pthread_join(submit.thread, NULL), 0);
	assert_int_equal(ship.st, WMS_OK);
	assert_int_equal(carriers.st, WMS_OK);
	assert_int_equal(submit.st, WMS_OK);
	/* each breaker saw its one call, none of the refusals */
	assert_breaker_saw(wms_client_breaker_for(c, "GetShipmentStatus"), 1, 1);
	assert_breaker_saw(wms_client_breaker_for(c, "ListCarriers"), 1, 1);
	assert_breaker_saw(wms_client_breaker_for(c, "SubmitOrder"), 1, 1);
	/* a slot free again: the same name goes through */
	assert_int_equal(generic_call(c, "GetShipmentStatus", &err), WMS_OK);
	assert_bulkhead(c, "GetShipmentStatus", 0, 2, 0, 1);
	wms_client_free(c);
}

/* Over real sockets: 16 threads against a WMS that accepts and never
 * answers, cap 4: 4 connections reach it, the 12 other calls come back
 * BULKHEAD_FULL without one. */
static void hanging_wms_over_sockets(void **state)
{
	lb_script script;
	lb_server *srv;
	wms_client *c;
	caller k[THREADS];
	atomic_int done = 0;
	int full = 0, other = 0;
	uint64_t refused_ns[THREADS];
	(void)state;

	memset(&script, 0, sizeof(script));
	script.no_read = 1;
	srv = lb_start(&script);
	assert_non_null(srv);
	c = client_with(NULL, lb_url(srv), 4, 0, WMS_BREAKER_SCOPE_PER_CLIENT, 60000);
	for (int i = 0; i < THREADS; i++)
		start(&k[i], c, 0, &done);
	wait_done(&done, THREADS - 4);
	{
		uint64_t until = wms__now_ns() + 30000000000ull;
		while (lb_accepted(srv) < 4 && wms__now_ns() < until)
			sleep_ms(1);
	}
	assert_int_equal(lb_accepted(srv), 4);
	assert_bulkhead(c, NULL, 4, 4, 0, 12);
	/* the hanging WMS goes away: the 4 calls held there end */
	lb_stop(srv);
	for (int i = 0; i < THREADS; i++) {
		assert_int_equal(pthread_join(k[i].thread, NULL), 0);
		if (k[i].st == WMS_ERR_BULKHEAD_FULL) {
			assert_full(&k[i], 60000);
			refused_ns[full++] = k[i].ns;
		} else {
			other++;
		}
	}
	assert_int_equal(full, 12);
	assert_int_equal(other, 4);
	assert_refused_fast(refused_ns, full, "against a hanging WMS");
	wms_client_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(cap_holds_and_rejects),
		cmocka_unit_test(cap_of_one),
		cmocka_unit_test(waits_for_a_freed_slot),
		cmocka_unit_test(free_in_a_child_while_a_caller_waits),
		cmocka_unit_test(a_wait_runs_out),
		cmocka_unit_test(open_breaker_before_bulkhead),
		cmocka_unit_test(one_bulkhead_per_operation),
		cmocka_unit_test(fallback_on_full),
		cmocka_unit_test(option_bounds),
		cmocka_unit_test(health_and_metrics),
		cmocka_unit_test(generic_call_over_the_cap),
		cmocka_unit_test(generic_call_per_operation_cap),
		cmocka_unit_test(hanging_wms_over_sockets),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
