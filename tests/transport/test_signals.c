/*
 * Calls under a signal storm. A service's handlers (SIGCHLD, timers,
 * profilers) are often installed without SA_RESTART, and their signals land
 * on whatever thread is in a libwms call: poll(), epoll_wait(), nanosleep()
 * and the rest then fail with EINTR. Here a storm thread sends SIGUSR1 (a
 * handler without SA_RESTART) to the calling thread every 100-300 us, far
 * more often than any single wait of a call lasts, and each scenario checks
 * that the calls still succeed, that a deadline, the stall guard, a retry's
 * pause and a bulkhead's wait are neither cut short nor extended (a wait
 * restarted at full length after each EINTR would never end while the storm
 * lasts: the storm stops on its own past the scenario's bound, so such a
 * bug ends as a failure, not a hang), and that no status comes of an EINTR.
 * Every scenario runs twice in a row on one client, then a quiet call on it
 * must succeed; each counts the signals delivered, so none passes for want
 * of a storm.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "wms/wms.h"
#include "build_kind.h"
#include "client_new.h"
#include "loopback.h"
#include "loopback_io.h"
#include "sample_order.h"
#include "tls_test.h"

/* ---- the storm ---------------------------------------------------------- */

static atomic_uint delivered; /* SIGUSR1s the handler ran for */

static void on_usr1(int sig)
{
	(void)sig;
	atomic_fetch_add_explicit(&delivered, 1, memory_order_relaxed);
}

typedef struct storm {
	pthread_t thread;
	pthread_t target;
	atomic_int stop;
	uint64_t cap_ns;     /* stops on its own at this time (CLOCK_MONOTONIC) */
	unsigned min_us, max_us;
	unsigned sent;
	unsigned at_start;   /* `delivered` when it began */
	unsigned got;        /* delivered while it ran, once ended */
	int running;
} storm;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t now_ms(void)
{
	return now_ns() / 1000000u;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { (time_t)(ms / 1000u), (long)(ms % 1000u) * 1000000L };
	nanosleep(&ts, NULL);
}

static void *storm_main(void *p)
{
	storm *s = p;
	uint64_t rng = now_ns() | 1u;
	while (!atomic_load(&s->stop) && now_ns() < s->cap_ns) {
		struct timespec ts;
		unsigned us;
		if (pthread_kill(s->target, SIGUSR1) == 0)
			s->sent++;
		rng ^= rng << 13;
		rng ^= rng >> 7;
		rng ^= rng << 17;
		us = s->min_us + (unsigned)(rng % (s->max_us - s->min_us + 1u));
		ts.tv_sec = 0;
		ts.tv_nsec = (long)us * 1000L;
		/* this thread gets no SIGUSR1: one sleep is one sleep */
		clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL);
	}
	return NULL;
}

/* Storm the calling thread until storm_end, or for at most cap_ms: past a
 * scenario's bound, so that a wait restarted in full on each EINTR ends
 * (late: the bound fails) instead of hanging the test. */
static void storm_begin(storm *s, uint64_t cap_ms)
{
	memset(s, 0, sizeof(*s));
	s->target = pthread_self();
	s->cap_ns = now_ns() + cap_ms * 1000000u;
	/* Under valgrind a signal costs the target far more: still one per
	 * few ms, far shorter than any wait of a call. */
	s->min_us = tk_build_kind() == TK_VALGRIND ? 1000u : 100u;
	s->max_us = tk_build_kind() == TK_VALGRIND ? 3000u : 300u;
	s->at_start = atomic_load(&delivered);
	assert_int_equal(pthread_create(&s->thread, NULL, storm_main, s), 0);
	s->running = 1;
}

/* Stop the storm; the signals delivered during it. */
static unsigned storm_end(storm *s)
{
	if (!s->running)
		return s->got;
	atomic_store(&s->stop, 1);
	pthread_join(s->thread, NULL);
	s->running = 0;
	s->got = atomic_load(&delivered) - s->at_start;
	return s->got;
}

/* The least a round must have been hit by: "many", not a handful (ends
 * the storm if storm_end has not). */
static void assert_stormed(storm *s, const char *what, unsigned least)
{
	unsigned got = storm_end(s);
	if (getenv("WMS_TEST_VERBOSE"))
		print_message("  %s: %u signals sent, %u delivered\n", what, s->sent, got);
	if (got < least)
		fail_msg("%s: only %u SIGUSR1 delivered (%u sent), want >= %u", what, got,
			 s->sent, least);
}

/* The least a round of quick calls lasts: under valgrind, where a thread
 * runs only when it gets the lock, longer for the storm to get its turns. */
static uint64_t round_ms(void)
{
	return tk_build_kind() == TK_VALGRIND ? 1000u : 300u;
}

/* Allowed lateness past a deadline, and the least signals a round of a
 * few hundred ms takes. */
static uint64_t slack_ms(void)
{
	return 150u * tk_slowdown();
}

static unsigned least_signals(void)
{
	return tk_build_kind() == TK_VALGRIND ? 20u : 100u;
}

/* Whether a round of quick calls may end: past `end` and hit by enough
 * signals (or the storm is over: assert_stormed then says so). */
static int storm_enough(const storm *s, uint64_t end)
{
	return now_ms() >= end &&
	       (atomic_load(&delivered) - s->at_start >= least_signals() ||
		now_ns() >= s->cap_ns);
}

/* How many calls a round makes: fewer under the tools. */
static unsigned calls(unsigned plain)
{
	unsigned k = tk_build_kind() == TK_VALGRIND ? 20u : tk_build_kind() == TK_TSAN ? 4u : 1u;
	return plain / k ? plain / k : 1u;
}

/* ---- a WMS with modes, over plain sockets --------------------------------- */

typedef enum wms_mode {
	MODE_OK = 0,   /* sample_submit_ok at once */
	MODE_SILENT,   /* read the request, answer nothing until the client goes away */
	MODE_STALL,    /* the head and a first part of the body, then silence */
	MODE_503_503_OK, /* of every three requests, two 503s, then OK */
	MODE_HOLD      /* OK once the test releases it */
} wms_mode;

typedef struct wms_srv {
	lb_server *lb;
	atomic_int mode;
	atomic_uint seen;      /* requests read */
	atomic_int released;   /* MODE_HOLD: answer now */
	atomic_uint holding;   /* MODE_HOLD: requests being held */
	atomic_uint delay_ms;  /* MODE_OK: think this long first */
	char *ok, *busy;
} wms_srv;

/* Until the client closes the connection (or the server stops). */
static void until_client_gone(lb_conn *c)
{
	char scratch[512];
	while (lb_wait(c->server, c->fd, POLLIN, -1) == 1 &&
	       recv(c->fd, scratch, sizeof(scratch), 0) > 0)
		;
}

static const char *srv_reply(lb_conn *c, lb_request *r, size_t *len)
{
	static const char stall_head[] = "HTTP/1.1 200 OK\r\nContent-Type: text/xml\r\n"
					 "Content-Length: 1000\r\n\r\n<?xml version=\"1.0\"?>";
	wms_srv *s = c->ctx;
	unsigned n = atomic_fetch_add(&s->seen, 1);
	(void)r;
	*len = 0;
	switch ((wms_mode)atomic_load(&s->mode)) {
	case MODE_OK:
		if (atomic_load(&s->delay_ms))
			lb_wait(c->server, -1, POLLIN, (int)atomic_load(&s->delay_ms));
		break;
	case MODE_SILENT:
		until_client_gone(c);
		return NULL; /* the script's: nothing */
	case MODE_STALL:
		if (lb_plain_io.write(c, stall_head, sizeof(stall_head) - 1))
			until_client_gone(c);
		return NULL;
	case MODE_503_503_OK:
		if (n % 3 != 2) {
			*len = strlen(s->busy);
			return s->busy;
		}
		break;
	case MODE_HOLD:
		atomic_fetch_add(&s->holding, 1);
		while (!atomic_load(&s->released) && lb_wait(c->server, -1, POLLIN, 2) == 0)
			;
		atomic_fetch_sub(&s->holding, 1);
		break;
	}
	*len = strlen(s->ok);
	return s->ok;
}

static wms_srv *srv_start(void)
{
	lb_io io = lb_plain_io; /* with the mode's answers */
	lb_script script = { 0 };
	wms_srv *s = calloc(1, sizeof(*s));
	assert_non_null(s);
	s->ok = lb_http_response(200, "OK", "text/xml; charset=utf-8", sample_submit_ok);
	s->busy = lb_http_response(503, "Service Unavailable", "text/plain", "busy");
	assert_non_null(s->ok);
	assert_non_null(s->busy);
	io.reply = srv_reply;
	s->lb = lb_start_io(&script, &io, s); /* no response: the hook's, or none */
	assert_non_null(s->lb);
	return s;
}

static void srv_stop(wms_srv *s)
{
	if (!s)
		return;
	atomic_store(&s->released, 1);
	lb_stop(s->lb);
	free(s->ok);
	free(s->busy);
	free(s);
}

/* ---- fixture: the handler, and what a test leaves running ------------------ */

typedef struct fx {
	struct sigaction old;
	storm st;
	wms_srv *srv;
	ts_server *tls;
	wms_client *c;
} fx;

static tls_pki pki;

static int group_setup(void **state)
{
	(void)state;
	tt_no_proxy();
	return tls_pki_make(&pki);
}

static int group_teardown(void **state)
{
	(void)state;
	tls_pki_free(&pki);
	return 0;
}

static int setup(void **state)
{
	struct sigaction sa;
	fx *f = calloc(1, sizeof(*f));
	if (!f)
		return -1;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = 0; /* no SA_RESTART: every blocking call sees EINTR */
	if (sigaction(SIGUSR1, &sa, &f->old) != 0) {
		free(f);
		return -1;
	}
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fx *f = *state;
	storm_end(&f->st); /* a failed assertion leaves it running */
	wms_client_free(f->c);
	srv_stop(f->srv);
	ts_stop(f->tls);
	/* A signal still pending must not meet the old disposition (the
	 * default one ends the process): taken here, blocked, first. */
	{
		struct timespec zero = { 0, 0 };
		sigset_t usr1, was;
		sigemptyset(&usr1);
		sigaddset(&usr1, SIGUSR1);
		pthread_sigmask(SIG_BLOCK, &usr1, &was);
		while (sigtimedwait(&usr1, NULL, &zero) == SIGUSR1)
			;
		sigaction(SIGUSR1, &f->old, NULL);
		pthread_sigmask(SIG_SETMASK, &was, NULL);
	}
	free(f);
	return 0;
}

static wms_client_options options(const char *url)
{
	wms_client_options o = WMS_CLIENT_OPTIONS_INIT;
	o.endpoint = url;
	o.timeout_ms = 5000u * tk_slowdown();
	o.connect_timeout_ms = 3000u * tk_slowdown();
	return o;
}

/* One SubmitOrder that must succeed with sample_submit_ok's answer. */
static void submit_ok(wms_client *c, const char *what)
{
	wms_order order = sample_order();
	wms_submit_reply r;
	wms_error err;
	wms_status st = wms_submit_order(&r, c, &order, &err);
	if (st != WMS_OK)
		fail_msg("%s: %s (%s, delivery %s): %s", what, wms_status_name(st),
			 wms_cause_name(err.cause), wms_delivery_name(err.delivery), err.message);
	assert_int_equal(err.delivery, WMS_DELIVERY_ANSWERED);
	assert_string_equal(r.order_id, "ORD-1");
	assert_string_equal(r.wms_reference, "WMS-000042");
	assert_int_equal(r.state, WMS_ORDER_STATE_RECEIVED);
}

/* At least n calls, and more until the round has lasted round_ms() (a
 * call takes a few hundred us: n alone would see a few dozen signals) and
 * has been hit by least_signals() (under valgrind a TLS handshake can keep
 * the storm thread from its turns); how many. */
static unsigned storm_calls(storm *s, wms_client *c, unsigned n, const char *what)
{
	uint64_t end = now_ms() + round_ms();
	unsigned i;
	for (i = 0; i < n || !storm_enough(s, end); i++)
		submit_ok(c, what);
	return i;
}

/* ---- 1. blocking calls ---------------------------------------------------- */

/* 200 blocking calls on one keep-alive connection, stormed: every one OK
 * with the reply, and none opens a new connection (an EINTR from the check
 * of the idle connection must not be taken for bytes on it). */
static void blocking_calls(void **state)
{
	fx *f = *state;
	wms_client_options o;
	unsigned n = calls(200), made = 0;

	f->srv = srv_start();
	o = options(lb_url(f->srv->lb));
	f->c = must_client_new(&o);
	for (int round = 1; round <= 2; round++) {
		storm_begin(&f->st, 60000u * tk_slowdown());
		made += storm_calls(&f->st, f->c, n, "stormed call");
		assert_stormed(&f->st, "blocking calls", least_signals());
	}
	submit_ok(f->c, "quiet call");
	assert_int_equal(lb_requests(f->srv->lb), made + 1);
	assert_int_equal(lb_accepted(f->srv->lb), 1);
}

/* ---- 2. the deadline -------------------------------------------------------- */

/* One SubmitOrder with the server in `mode`, under a storm that stops on
 * its own cap_ms after it starts: its status, and in *ms how long it took. */
static wms_status stormed_submit(fx *f, wms_mode mode, uint64_t cap_ms, wms_error *err,
				 uint64_t *ms)
{
	wms_order order = sample_order();
	wms_status st;
	uint64_t t0;

	atomic_store(&f->srv->mode, mode);
	storm_begin(&f->st, cap_ms);
	t0 = now_ms();
	st = wms_submit_order(NULL, f->c, &order, err);
	*ms = now_ms() - t0;
	storm_end(&f->st);
	return st;
}

/* A WMS that reads the request and never answers; timeout_ms 300: the call
 * ends in TIMEOUT (UNKNOWN: the request left) no earlier than 300 ms and
 * not much later, storm or not. */
static void deadline_kept(void **state)
{
	fx *f = *state;
	const uint64_t timeout = 300, bound = timeout + slack_ms();
	wms_client_options o;

	f->srv = srv_start();
	o = options(lb_url(f->srv->lb));
	o.timeout_ms = (uint32_t)timeout;
	o.connect_timeout_ms = (uint32_t)timeout;
	f->c = must_client_new(&o);
	for (int round = 1; round <= 2; round++) {
		wms_error err;
		uint64_t ms;
		wms_status st = stormed_submit(f, MODE_SILENT, bound + 2000u, &err, &ms);

		if (st != WMS_ERR_TIMEOUT || ms < timeout || ms > bound)
			fail_msg("round %d: %s after %llu ms (want TIMEOUT in [%llu, %llu]): %s",
				 round, wms_status_name(st), (unsigned long long)ms,
				 (unsigned long long)timeout, (unsigned long long)bound,
				 err.message);
		assert_int_equal(err.delivery, WMS_DELIVERY_UNKNOWN);
		assert_int_equal(err.cause, WMS_CAUSE_TIMEOUT);
		assert_non_null(strstr(err.message, "(curl 28)"));
		assert_null(strstr(err.message, "stall"));
		assert_stormed(&f->st, "deadline", least_signals());
	}
	atomic_store(&f->srv->mode, MODE_OK);
	submit_ok(f->c, "quiet call");
}

/* ---- 3. the stall guard ----------------------------------------------------- */

/* The head and part of the body, then silence; stall_timeout_ms 300 and a
 * deadline far off: the stall guard ends the call (TIMEOUT, cause STALL)
 * after 300 ms of silence, within its one-second tick. */
static void stall_guard_kept(void **state)
{
	fx *f = *state;
	const uint64_t stall = 300, bound = stall + 1000u + slack_ms();
	wms_client_options o;

	f->srv = srv_start();
	o = options(lb_url(f->srv->lb));
	o.stall_timeout_ms = (uint32_t)stall;
	f->c = must_client_new(&o);
	for (int round = 1; round <= 2; round++) {
		wms_error err;
		uint64_t ms;
		wms_status st = stormed_submit(f, MODE_STALL, bound + 2000u, &err, &ms);

		if (st != WMS_ERR_TIMEOUT || err.cause != WMS_CAUSE_STALL || ms < stall ||
		    ms > bound)
			fail_msg("round %d: %s (%s) after %llu ms (want a stall in [%llu, %llu]): %s",
				 round, wms_status_name(st), wms_cause_name(err.cause),
				 (unsigned long long)ms, (unsigned long long)stall,
				 (unsigned long long)bound, err.message);
		assert_int_equal(err.delivery, WMS_DELIVERY_UNKNOWN);
		assert_non_null(strstr(err.message, "stall guard"));
		assert_stormed(&f->st, "stall guard", least_signals());
	}
	atomic_store(&f->srv->mode, MODE_OK);
	submit_ok(f->c, "quiet call");
}

/* ---- 4. over TLS ------------------------------------------------------------ */

/* The blocking calls over TLS (one handshake for all of them). */
static void over_tls(void **state)
{
	fx *f = *state;
	unsigned n = calls(100), made = 0;
	wms_client_options o;
	ts_options so;
	ts_stats st;
	char *reply = lb_http_response(200, "OK", "text/xml; charset=utf-8", sample_submit_ok);

	assert_non_null(reply);
	memset(&so, 0, sizeof(so));
	so.cert_file = pki.server.cert_file;
	so.key_file = pki.server.key_file;
	so.response = reply;
	f->tls = ts_start(&so);
	free(reply);
	assert_non_null(f->tls);
	o = options(ts_url(f->tls));
	o.curl.ca_file = pki.ca.cert_file;
	f->c = must_client_new(&o);
	for (int round = 1; round <= 2; round++) {
		storm_begin(&f->st, 60000u * tk_slowdown());
		made += storm_calls(&f->st, f->c, n, "stormed call over TLS");
		assert_stormed(&f->st, "TLS", least_signals());
	}
	submit_ok(f->c, "quiet call over TLS");
	ts_stats_get(f->tls, &st);
	assert_int_equal(st.requests, made + 1);
	assert_int_equal(st.accepted, 1);
	assert_int_equal(st.handshakes, 1);
}

/* ---- 5. retries ------------------------------------------------------------- */

/* 503, 503, OK for every call, three attempts, pauses drawn in [0, 100] ms.
 * A pause is random, so "not cut short" is read on the sum: a round's 10
 * pauses are over 100 ms in all unless the draws were (probability
 * 1/10! < 3e-7, Irwin-Hall), while pauses cut at the first signal would
 * leave the round a few ms. Not extended: at most the 10 pauses' 1 s, plus
 * the requests. */
static void retry_pauses_kept(void **state)
{
	fx *f = *state;
	const unsigned n = 5, pause_max = 100;
	const uint64_t least = pause_max, bound = 2u * n * pause_max + slack_ms() * 3u;
	wms_client_options o;

	f->srv = srv_start();
	atomic_store(&f->srv->mode, MODE_503_503_OK);
	o = options(lb_url(f->srv->lb));
	o.retry.max_attempts = 3;
	o.retry.initial_backoff_ms = pause_max;
	o.retry.max_backoff_ms = pause_max;
	o.retry.backoff_multiplier_pct = 100;
	f->c = must_client_new(&o);
	for (int round = 1; round <= 2; round++) {
		uint64_t t0, ms;
		storm_begin(&f->st, bound + 2000u);
		t0 = now_ms();
		for (unsigned i = 0; i < n; i++) {
			wms_order order = sample_order();
			wms_submit_reply r;
			wms_error err;
			wms_status st = wms_submit_order(&r, f->c, &order, &err);
			if (st != WMS_OK)
				fail_msg("round %d call %u: %s after %u attempts: %s", round, i,
					 wms_status_name(st), err.attempts, err.message);
			assert_int_equal(err.attempts, 3);
			assert_string_equal(r.wms_reference, "WMS-000042");
		}
		ms = now_ms() - t0;
		storm_end(&f->st);
		if (ms < least || ms > bound)
			fail_msg("round %d: %u calls with 2 pauses each took %llu ms, want [%llu, %llu]",
				 round, n, (unsigned long long)ms, (unsigned long long)least,
				 (unsigned long long)bound);
		assert_stormed(&f->st, "retries", least_signals());
	}
	atomic_store(&f->srv->mode, MODE_OK);
	submit_ok(f->c, "quiet call");
	assert_int_equal(atomic_load(&f->srv->seen), 2u * 3u * n + 1u);
}

/* ---- 6. the bulkhead -------------------------------------------------------- */

typedef struct holder {
	pthread_t thread;
	wms_client *c;
	wms_srv *srv;
	wms_status st;
} holder;

static void *hold_slot(void *p)
{
	holder *h = p;
	wms_order order = sample_order();
	wms_error err;
	h->st = wms_submit_order(NULL, h->c, &order, &err);
	return NULL;
}

/* The slot's call is answered once a caller waits for the slot. */
static void *release_when_waited(void *p)
{
	holder *h = p;
	wms_bulkhead_snapshot bs;
	uint64_t until = now_ms() + 10000u * tk_slowdown();
	do
		sleep_ms(1);
	while (wms_client_bulkhead_get(&bs, h->c, NULL) == WMS_OK && bs.waiting != 1 &&
	       now_ms() < until);
	atomic_store(&h->srv->released, 1);
	return NULL;
}

/* Start a call on another thread (not stormed) and wait until the WMS
 * holds it: it has the only slot. */
static void hold(holder *h, wms_client *c, wms_srv *srv)
{
	uint64_t until = now_ms() + 10000u * tk_slowdown();
	memset(h, 0, sizeof(*h));
	h->c = c;
	h->srv = srv;
	atomic_store(&srv->released, 0);
	atomic_store(&srv->mode, MODE_HOLD);
	assert_int_equal(pthread_create(&h->thread, NULL, hold_slot, h), 0);
	while (atomic_load(&srv->holding) != 1 && now_ms() < until)
		sleep_ms(1);
	assert_int_equal(atomic_load(&srv->holding), 1);
}

static void unhold(holder *h)
{
	atomic_store(&h->srv->released, 1);
	assert_int_equal(pthread_join(h->thread, NULL), 0);
	assert_int_equal(h->st, WMS_OK);
}

/* One slot, 200 ms to wait for it; another thread's call holds it (the WMS
 * holds its answer) and is not stormed. The stormed waiter gets
 * BULKHEAD_FULL, NOT_SENT, no earlier than 200 ms and not much later; and
 * with the slot freed while it waits, the slot (OK), before the 200 ms are
 * up (under valgrind the release may come too late: FULL then, on time). */
static void bulkhead_wait_kept(void **state)
{
	fx *f = *state;
	const uint64_t wait = 200, bound = wait + slack_ms();
	wms_client_options o;

	f->srv = srv_start();
	o = options(lb_url(f->srv->lb));
	o.bulkhead.max_concurrent_calls = 1;
	o.bulkhead.max_wait_for_slot_ms = (uint32_t)wait;
	f->c = must_client_new(&o);
	for (int round = 1; round <= 2; round++) {
		wms_order order = sample_order();
		wms_bulkhead_snapshot bs;
		pthread_t releaser;
		holder h;
		wms_error err;
		wms_status st;
		uint64_t t0, ms;

		/* held all along: FULL, on time */
		hold(&h, f->c, f->srv);
		storm_begin(&f->st, bound + 2000u);
		t0 = now_ms();
		st = wms_submit_order(NULL, f->c, &order, &err);
		ms = now_ms() - t0;
		storm_end(&f->st);
		if (st != WMS_ERR_BULKHEAD_FULL || ms < wait || ms > bound)
			fail_msg("round %d: %s after %llu ms (want BULKHEAD_FULL in [%llu, %llu]): %s",
				 round, wms_status_name(st), (unsigned long long)ms,
				 (unsigned long long)wait, (unsigned long long)bound, err.message);
		assert_int_equal(err.delivery, WMS_DELIVERY_NOT_SENT);
		assert_int_equal(atomic_load(&f->srv->holding), 1);
		assert_stormed(&f->st, "bulkhead, full", least_signals());
		unhold(&h);

		/* freed while the stormed caller waits: the slot */
		hold(&h, f->c, f->srv);
		assert_int_equal(pthread_create(&releaser, NULL, release_when_waited, &h), 0);
		storm_begin(&f->st, bound + 2000u);
		t0 = now_ms();
		st = wms_submit_order(NULL, f->c, &order, &err);
		ms = now_ms() - t0;
		storm_end(&f->st);
		assert_int_equal(pthread_join(releaser, NULL), 0);
		unhold(&h);
		if (!(st == WMS_OK && ms <= bound) &&
		    !(tk_build_kind() == TK_VALGRIND && st == WMS_ERR_BULKHEAD_FULL && ms >= wait &&
		      ms <= bound))
			fail_msg("round %d: %s after %llu ms (want OK, the slot freed): %s", round,
				 wms_status_name(st), (unsigned long long)ms, err.message);
		assert_int_equal(wms_client_bulkhead_get(&bs, f->c, NULL), WMS_OK);
		assert_int_equal(bs.in_flight, 0);
		assert_int_equal(bs.waiting, 0);
	}
	atomic_store(&f->srv->mode, MODE_OK);
	submit_ok(f->c, "quiet call");
}

/* ---- 7. WS-Security digests ----------------------------------------------- */

/* PasswordDigest calls: a fresh nonce (getrandom) for each, stormed. */
static void wsse_digest_calls(void **state)
{
	fx *f = *state;
	unsigned n = calls(100), made = 0;
	wms_client_options o;
	lb_request last;

	f->srv = srv_start();
	o = options(lb_url(f->srv->lb));
	o.wsse.mode = WMS_WSSE_PASSWORD_DIGEST;
	o.wsse.username = "svc";
	o.wsse.password = "wsse-pw";
	f->c = must_client_new(&o);
	for (int round = 1; round <= 2; round++) {
		storm_begin(&f->st, 60000u * tk_slowdown());
		made += storm_calls(&f->st, f->c, n, "stormed digest call");
		assert_stormed(&f->st, "WS-Security", least_signals());
	}
	submit_ok(f->c, "quiet digest call");
	assert_true(lb_last_request(f->srv->lb, &last));
	assert_non_null(strstr(last.body, "#PasswordDigest"));
	assert_non_null(strstr(last.body, "Nonce"));
	lb_request_free(&last);
	assert_int_equal(lb_requests(f->srv->lb), made + 1);
	assert_int_equal(lb_accepted(f->srv->lb), 1);
}

/* ---- 8. async ------------------------------------------------------------------ */

typedef struct tally {
	unsigned ok, other;
	wms_status first_bad;
} tally;

static void on_done(wms_status st, const wms_submit_reply *r, const wms_error *err, void *p)
{
	tally *t = p;
	(void)err;
	if (st == WMS_OK && r && strcmp(r->wms_reference, "WMS-000042") == 0) {
		t->ok++;
	} else if (!t->other++) {
		t->first_bad = st;
	}
}

/* 50 calls in flight on libwms's own loop, the loop's thread stormed, the
 * WMS thinking 20 ms before each answer (the loop waits in epoll_wait):
 * every one completes OK, and wms_async_poll never returns an error. */
static void async_calls(void **state)
{
	fx *f = *state;
	unsigned n = calls(50);
	wms_client_options o;

	f->srv = srv_start();
	atomic_store(&f->srv->delay_ms, 20);
	o = options(lb_url(f->srv->lb));
	f->c = must_client_new(&o);
	for (int round = 1; round <= 2; round++) {
		wms_order order = sample_order();
		tally t = { 0, 0, WMS_OK };
		uint64_t end, until = now_ms() + 30000u * tk_slowdown();
		unsigned polls = 0, batches = 0;
		wms_async *a;
		wms_error err;

		assert_int_equal(wms_async_new(&a, f->c, NULL, &err), WMS_OK);
		storm_begin(&f->st, 60000u * tk_slowdown());
		/* batches of n in flight, as storm_calls */
		for (end = now_ms() + round_ms(); !batches || !storm_enough(&f->st, end); batches++) {
			for (unsigned i = 0; i < n; i++)
				assert_int_equal(wms_async_submit_order(NULL, a, &order, on_done, &t),
						 WMS_OK);
			while (wms_async_in_flight(a) && now_ms() < until) {
				wms_status st = wms_async_poll(a, 100);
				polls++;
				if (st != WMS_OK)
					fail_msg("round %d: wms_async_poll returned %s after %u polls",
						 round, wms_status_name(st), polls);
			}
			assert_int_equal(wms_async_in_flight(a), 0);
		}
		assert_stormed(&f->st, "async", least_signals());
		wms_async_free(a);
		if (t.ok != batches * n)
			fail_msg("round %d: %u of %u OK; first other: %s", round, t.ok, batches * n,
				 wms_status_name(t.first_bad));
	}
	submit_ok(f->c, "quiet call");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(blocking_calls, setup, teardown),
		cmocka_unit_test_setup_teardown(deadline_kept, setup, teardown),
		cmocka_unit_test_setup_teardown(stall_guard_kept, setup, teardown),
		cmocka_unit_test_setup_teardown(over_tls, setup, teardown),
		cmocka_unit_test_setup_teardown(retry_pauses_kept, setup, teardown),
		cmocka_unit_test_setup_teardown(bulkhead_wait_kept, setup, teardown),
		cmocka_unit_test_setup_teardown(wsse_digest_calls, setup, teardown),
		cmocka_unit_test_setup_teardown(async_calls, setup, teardown),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
