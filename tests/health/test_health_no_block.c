/*
 * "No health request ever blocks a WMS call" (wms/health_server.h): WMS
 * calls over loopback to a scripted WMS, timed while the health server is
 * idle and while it is hammered or stalled, in the same test. Latency is
 * compared as a ratio to the idle baseline measured alongside, never as an
 * absolute time, and each bound grows under valgrind and the sanitizers
 * (build_kind.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include <curl/curl.h>

#include "wms/wms.h"
#include "wms/health_server.h"
#include "health_server_int.h"
#include "build_kind.h"
#include "loopback.h"
#include "sample_order.h"

static uint64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { (time_t)(ms / 1000u), (long)(ms % 1000u) * 1000000L };
	nanosleep(&ts, NULL);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* `n` calls in a row, each timed, appended to t[*len]. */
static void timed_calls(wms_client *c, int n, uint64_t *t, size_t *len)
{
	wms_order o = sample_order();
	for (int i = 0; i < n; i++) {
		wms_submit_reply r;
		wms_error err;
		uint64_t t0 = now_ns();
		wms_status st = wms_submit_order(&r, c, &o, &err);
		t[(*len)++] = now_ns() - t0;
		if (st != WMS_OK)
			fail_msg("call %d: %s: %s", i, wms_status_name(st), err.message);
	}
}

/* Calls in a row for `ms` milliseconds (at most `room` of them). */
static void timed_calls_for(wms_client *c, unsigned ms, size_t room, uint64_t *t, size_t *len)
{
	uint64_t until = now_ns() + (uint64_t)ms * 1000000ull;
	while (now_ns() < until && *len + 10 <= room)
		timed_calls(c, 10, t, len);
}

/* How many times the idle median a call may take beside busy health
 * clients. Not a wait: the hammer's threads and the server's take CPU on
 * the same 2 cores as the calls (4 runnable threads on 2 CPUs, other jobs
 * besides); valgrind runs one thread at a time, so the calls' share of
 * the CPU falls further there. */
static double ratio_bound(double plain)
{
	switch (tk_build_kind()) {
	case TK_VALGRIND:
		return plain * 5;
	case TK_TSAN:
	case TK_ASAN:
		return plain * 2;
	default:
		return plain;
	}
}

typedef struct stats {
	uint64_t median, p90, max;
} stats;

static stats stats_of(uint64_t *t, size_t n)
{
	stats s;
	qsort(t, n, sizeof(*t), cmp_u64);
	s.median = t[n / 2];
	s.p90 = t[n * 9 / 10];
	s.max = t[n - 1];
	return s;
}

typedef struct world {
	lb_server *wms;
	wms_client *client;
	wms_health_server *health;
	uint16_t port;
	char *response;
} world;

/* A scripted WMS on loopback (keep-alive), a client of it and the health
 * server for that client; a connection may stay silent for an hour, so
 * a stalled one is held for the whole test. */
static void world_start(world *w)
{
	wms_client_options o = WMS_CLIENT_OPTIONS_INIT;
	lb_script script;
	wms_error err;

	memset(w, 0, sizeof(*w));
	memset(&script, 0, sizeof(script));
	w->response = lb_http_response(200, "OK", "text/xml; charset=utf-8", sample_submit_ok);
	script.response = w->response;
	w->wms = lb_start(&script);
	assert_non_null(w->wms);
	o.endpoint = lb_url(w->wms);
	o.timeout_ms = 60000;
	if (wms_client_new(&w->client, &o, &err) != WMS_OK)
		fail_msg("wms_client_new: %s", err.message);
	assert_int_equal(wms__health_server_start_limits(&w->health, &w->client, 1, "127.0.0.1:0",
							 NULL, WMS_HEALTH_SERVER_MAX_CONNECTIONS,
							 3600, &err),
			 WMS_OK);
	w->port = wms_health_server_port(w->health);
}

static void world_stop(world *w)
{
	wms_health_server_stop(w->health);
	wms_client_free(w->client);
	lb_stop(w->wms);
	free(w->response);
}

/* ---- health clients that hammer -------------------------------------------- */

typedef struct hammer {
	uint16_t port;
	atomic_int run;   /* 1: request, 0: pause, -1: end */
	atomic_uint done; /* answered requests */
	atomic_uint bad;  /* requests that failed or were not 200 */
	pthread_t thread[2];
} hammer;

static size_t discard(char *p, size_t size, size_t n, void *ctx)
{
	(void)p;
	(void)ctx;
	return size * n;
}

/* GET /metrics and /health in turn, as fast as they are answered; every
 * other request on a fresh connection, so accepting is hammered too. */
static void *hammer_thread(void *arg)
{
	hammer *h = arg;
	char url[2][96];
	CURL *e = curl_easy_init();
	unsigned i = 0;
	snprintf(url[0], sizeof(url[0]), "http://127.0.0.1:%u/metrics", (unsigned)h->port);
	snprintf(url[1], sizeof(url[1]), "http://127.0.0.1:%u/health", (unsigned)h->port);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_TIMEOUT, 60L);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, discard);
	curl_easy_setopt(e, CURLOPT_PROXY, "");
	while (atomic_load(&h->run) >= 0) {
		long code = 0;
		if (atomic_load(&h->run) == 0) {
			sleep_ms(1);
			continue;
		}
		curl_easy_setopt(e, CURLOPT_URL, url[i % 2]);
		curl_easy_setopt(e, CURLOPT_FRESH_CONNECT, (long)(i % 2));
		if (curl_easy_perform(e) == CURLE_OK &&
		    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &code) == CURLE_OK && code == 200)
			atomic_fetch_add(&h->done, 1);
		else
			atomic_fetch_add(&h->bad, 1);
		i++;
	}
	curl_easy_cleanup(e);
	return NULL;
}

/* Rounds of calls with the health server idle and with it hammered by
 * two libcurl threads (every other request on a fresh connection, so
 * accepting is hammered too), 150 ms each, interleaved: the machine's
 * load drifts between rounds, and both sides see the same drift. The
 * calls' median under the hammer stays within a bound of the idle one
 * (ratio_bound); every health request is answered meanwhile. What the
 * hammer costs the calls is CPU; that no call waits for a health request
 * is shown without noise by stalled_health_clients. */
static void hammered_health_server(void **state)
{
	enum { ROUNDS = 6, PHASE_MS = 100, ROOM = 200000 };
	/* measured on this 2-core VM: x0.4-x4.3; an idle median alone moves
	 * x2.4 between rounds here (CPU placement and frequency) */
	const double ratio_max = ratio_bound(10.0);
	uint64_t *idle_t = calloc(ROOM, sizeof(uint64_t)), *busy_t = calloc(ROOM, sizeof(uint64_t));
	size_t idle_n = 0, busy_n = 0;
	hammer h;
	world w;
	stats idle, busy;
	unsigned served_before, served_busy = 0;
	(void)state;

	assert_non_null(idle_t);
	assert_non_null(busy_t);
	world_start(&w);
	memset(&h, 0, sizeof(h));
	h.port = w.port;
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&h.thread[i], NULL, hammer_thread, &h), 0);
	timed_calls(w.client, 20, idle_t, &idle_n); /* warm: the connection, the pools */
	idle_n = 0;
	for (int round = 0; round < ROUNDS; round++) {
		atomic_store(&h.run, 0);
		sleep_ms(20);
		timed_calls_for(w.client, PHASE_MS, ROOM, idle_t, &idle_n);
		atomic_store(&h.run, 1);
		served_before = atomic_load(&h.done);
		while (atomic_load(&h.done) < served_before + 10) /* the hammer is going */
			sleep_ms(1);
		served_before = atomic_load(&h.done);
		timed_calls_for(w.client, PHASE_MS, ROOM, busy_t, &busy_n);
		served_busy += atomic_load(&h.done) - served_before;
	}
	atomic_store(&h.run, -1);
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_join(h.thread[i], NULL), 0);
	idle = stats_of(idle_t, idle_n);
	busy = stats_of(busy_t, busy_n);
	print_message("  idle: %zu calls, median %.3f ms, p90 %.3f ms, max %.3f ms\n", idle_n,
		      idle.median / 1e6, idle.p90 / 1e6, idle.max / 1e6);
	print_message("  hammered (%u health requests answered meanwhile, %u failed): %zu calls, "
		      "median %.3f ms (x%.2f), p90 %.3f ms (x%.2f), max %.3f ms; bound x%.1f\n",
		      served_busy, atomic_load(&h.bad), busy_n, busy.median / 1e6,
		      (double)busy.median / (double)idle.median, busy.p90 / 1e6,
		      (double)busy.p90 / (double)idle.p90, busy.max / 1e6, ratio_max);
	assert_int_equal(atomic_load(&h.bad), 0);
	/* the hammer did hammer: requests went on all through the calls */
	assert_true(served_busy >= (unsigned)ROUNDS * 10);
	if ((double)busy.median > ratio_max * (double)idle.median)
		fail_msg("median call x%.2f the idle one under health requests",
			 (double)busy.median / (double)idle.median);
	world_stop(&w);
	free(idle_t);
	free(busy_t);
}

/* ---- health clients that stall ---------------------------------------------- */

/* Every connection the server takes, held by a client that stalls in
 * the middle of its request: in the request line, in a header, or with the
 * headers sent but not the blank line that ends them. (A client that asks
 * in full and never reads cannot hold the server: it answers with
 * Connection: close, a reply of a few KiB the kernel's buffers take.) WMS
 * calls made meanwhile take what calls take beside an idle health server
 * (a ratio of medians), and none waits for a stalled request: the
 * connections are held for an hour, so a call that waited would not come
 * back, and the slowest call stays under 100 ms (scaled). The idle calls
 * are a second world's, made alternately with the stalled world's, the
 * first of each pair alternating too: whatever else the machine does
 * meanwhile (CI's sanitizer builds and fuzzers) weighs on both alike. When
 * the idle ones were timed before the stall, a burst of other work during
 * the stalled ones read x8.35 under ASan against a bound of x8. */
static void stalled_health_clients(void **state)
{
	enum { CALLS = 300, HELD = WMS_HEALTH_SERVER_MAX_CONNECTIONS };
	const double ratio_max = ratio_bound(4.0);
	const uint64_t max_ns = 100000000ull * tk_slowdown();
	static uint64_t idle_t[CALLS], stalled_t[CALLS];
	size_t idle_n = 0, stalled_n = 0;
	static const char *const partial[] = { "GET /hea", "GET /metrics HTTP/1.1\r\nHo",
					       "GET /health HTTP/1.1\r\nHost: t\r\n",
					       "GET /metrics HTTP/1.1\r\nHost: t\r\nAccept: */*\r" };
	int held[HELD];
	stats idle, stalled;
	world w, quiet;
	(void)state;

	world_start(&w);
	world_start(&quiet);
	timed_calls(w.client, 20, stalled_t, &stalled_n); /* warm */
	timed_calls(quiet.client, 20, idle_t, &idle_n);
	idle_n = stalled_n = 0;
	for (int i = 0; i < HELD; i++) {
		const char *p = partial[i % 4];
		held[i] = lb_connect(w.port);
		assert_true(held[i] >= 0);
		assert_int_equal(send(held[i], p, strlen(p), MSG_NOSIGNAL), (ssize_t)strlen(p));
	}
	/* the server holds every one of them */
	for (int i = 0; i < 6000 && wms__health_server_connections(w.health) != HELD; i++)
		sleep_ms(10);
	assert_int_equal(wms__health_server_connections(w.health), HELD);

	for (int i = 0; i < CALLS; i++) {
		if (i % 2) {
			timed_calls(w.client, 1, stalled_t, &stalled_n);
			timed_calls(quiet.client, 1, idle_t, &idle_n);
		} else {
			timed_calls(quiet.client, 1, idle_t, &idle_n);
			timed_calls(w.client, 1, stalled_t, &stalled_n);
		}
	}
	assert_int_equal(wms__health_server_connections(w.health), HELD); /* still stalled */
	assert_int_equal(wms__health_server_connections(quiet.health), 0);
	idle = stats_of(idle_t, idle_n);
	stalled = stats_of(stalled_t, stalled_n);
	print_message("  idle: median %.3f ms, max %.3f ms; %d health clients stalled: median "
		      "%.3f ms (x%.2f), max %.3f ms; bounds x%.1f, %.0f ms\n",
		      idle.median / 1e6, idle.max / 1e6, HELD, stalled.median / 1e6,
		      (double)stalled.median / (double)idle.median, stalled.max / 1e6, ratio_max,
		      max_ns / 1e6);
	if ((double)stalled.median > ratio_max * (double)idle.median)
		fail_msg("median call x%.2f the idle one beside stalled health clients",
			 (double)stalled.median / (double)idle.median);
	if (stalled.max > max_ns)
		fail_msg("a call took %.3f ms beside stalled health clients", stalled.max / 1e6);
	for (int i = 0; i < HELD; i++)
		close(held[i]);
	world_stop(&quiet);
	world_stop(&w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(hammered_health_server),
		cmocka_unit_test(stalled_health_clients),
	};
	int rc;
	unsetenv("http_proxy");
	unsetenv("HTTP_PROXY");
	unsetenv("all_proxy");
	unsetenv("ALL_PROXY");
	curl_global_init(CURL_GLOBAL_DEFAULT);
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	curl_global_cleanup();
	return rc;
}
