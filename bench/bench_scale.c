/*
 * Many calls in flight (group "scale"): a WMS that answers every call after
 * a fixed delay (100 ms; --delay-ms), and N = 10, 100, 1000 calls kept in
 * flight against it by
 *   - async: libwms's asynchronous API from ONE thread, libwms's own poll
 *     loop (wms_async_poll), each completion starting the next call;
 *   - blocking: wms_submit_order on N threads sharing one client (its
 *     pool keeps N connections);
 *   - gsoap: gSOAP's generated client on N threads, a context each;
 * and, at the largest N only, two references:
 *   - async_epoll: the same asynchronous calls on the caller's loop (the
 *     watch and timer callbacks) run by epoll: what libwms's own poll()
 *     loop costs next to it;
 *   - raw_curl: one libcurl multi handle driven from one thread by epoll
 *     (multi-socket), posting libwms's bytes: what this machine and
 *     server allow, with no SOAP work at all.
 * For each: calls/s, its ratio to the ideal rate (N / delay), the growth
 * of the process's peak RSS over its RSS before the first call, and CPU
 * per call (getrusage, user + system, every thread of the process).
 *
 * Each configuration runs in a fresh process of its own (this binary,
 * --scale-worker), so that the RSS and CPU figures are that client's
 * alone: not the server's, not memory kept by malloc from an earlier
 * configuration. The server is another process (--scale-server,
 * bench_server_start_delayed: a thread per connection sleeping out the
 * delay; the raw_curl line shows what it allows). A worker warms up
 * (connections, threads) for max(500 ms, 5 x delay), then measures for
 * max(2 s, 20 x delay). Rounds run every configuration once, the order of
 * the clients rotating from round to round; each figure is the median of
 * the rounds, the spread (min..max) on a '#' line.
 *
 * Before that, the asynchronous path at one call in flight against the
 * blocking call, against the zero-delay in-process server the sequential
 * figures use, pinned (seq_placement says why): short interleaved rounds,
 * the ratio taken within each round.
 *
 * Last, the targets, each said met or NOT met.
 */
#define _GNU_SOURCE /* pipe2 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <curl/curl.h>
#include <microhttpd.h>
#include "internal.h"
#include "soap/soap.h"
#include "wms/wms.h"
#include "wms/async.h"
#include "bench_server.h"
#include "bench.h"
#include "bench_cpu.h"
#ifdef BENCH_GSOAP
#include "bench_gsoap.h"
#endif

unsigned scale_delay_ms = 100;

extern char **environ;

enum { K_ASYNC, K_BLOCKING, K_GSOAP, K_RAW_CURL, K_ASYNC_EPOLL, K_COUNT };
static const char *const kind_name[K_COUNT] = { "async", "blocking", "gsoap", "raw_curl",
						"async_epoll" };

#define NLEVELS 3
static const unsigned levels[NLEVELS] = { 10, 100, 1000 };
#define MAX_SCALE_ROUNDS 5

/* ---- shared helpers ------------------------------------------------------ */

static void raise_fd_limit(void)
{
	struct rlimit r;
	if (getrlimit(RLIMIT_NOFILE, &r) != 0)
		return;
	if (r.rlim_cur < 65536 && r.rlim_cur < r.rlim_max) {
		r.rlim_cur = r.rlim_max < 65536 ? r.rlim_max : 65536;
		setrlimit(RLIMIT_NOFILE, &r);
	}
}

static long fd_limit(void)
{
	struct rlimit r;
	return getrlimit(RLIMIT_NOFILE, &r) == 0 ? (long)r.rlim_cur : -1;
}

static void sleep_ms(uint64_t ms)
{
	struct timespec ts = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* User + system CPU of the whole process. */
static uint64_t process_cpu_ns(void)
{
	struct rusage ru;
	if (getrusage(RUSAGE_SELF, &ru) != 0)
		die("getrusage", NULL);
	return ((uint64_t)ru.ru_utime.tv_sec + (uint64_t)ru.ru_stime.tv_sec) * 1000000000u +
	       ((uint64_t)ru.ru_utime.tv_usec + (uint64_t)ru.ru_stime.tv_usec) * 1000u;
}

/* Peak RSS back to the current RSS (Linux >= 4.0): 1 if done. */
static int reset_peak_rss(void)
{
	int fd = open("/proc/self/clear_refs", O_WRONLY | O_CLOEXEC), ok;
	if (fd < 0)
		return 0;
	ok = write(fd, "5", 1) == 1;
	close(fd);
	return ok;
}

static void check_reply(const wms_submit_reply *r, const wms_order *order)
{
	if (strcmp(r->order_id, order->order_id) != 0 ||
	    strcmp(r->wms_reference, BENCH_REPLY_REFERENCE) != 0 ||
	    strcmp(wms_order_state_name(r->state), BENCH_REPLY_STATE) != 0 || r->from_fallback)
		die("wms_submit_order: the reply is not the server's", r->wms_reference);
}

static wms_client *scale_client(const char *url, uint32_t pool)
{
	wms_client_options opts = WMS_CLIENT_OPTIONS_INIT;
	wms_client *c;
	wms_error err;

	opts.endpoint = url;
	opts.max_idle_connections = pool;
	if (wms_client_new(&c, &opts, &err) != WMS_OK)
		die("wms_client_new", err.message);
	return c;
}

/* ---- a worker: one client configuration, in a process of its own ---------- */

/* What a worker counts: calls completed, and the clocks. */
typedef struct snap {
	uint64_t calls, ns, cpu_ns;
} snap;

/* async: every call's completion starts the next, until stopping. With
 * ep >= 0 the context runs on the caller's loop: this epoll. */
typedef struct async_run {
	wms_async *a;
	unsigned next;
	uint64_t calls;
	int stopping;
	int ep, timer_set;
	uint64_t timer_due;
} async_run;

static void async_start(async_run *r);

static void async_done(wms_status st, const wms_submit_reply *reply, const wms_error *err,
		       void *payload)
{
	async_run *r = payload;
	if (st != WMS_OK)
		die("wms_async_submit_order", err->message);
	check_reply(reply, &bench_orders[0].order); /* every order is BENCH-1 */
	r->calls++;
	if (!r->stopping)
		async_start(r);
}

static void async_start(async_run *r)
{
	const wms_order *order = &bench_orders[r->next++ % NORDERS].order;
	if (wms_async_submit_order(NULL, r->a, order, async_done, r) != WMS_OK)
		die("wms_async_submit_order refused a call", NULL);
}

/* ms from now to end, rounded up (the loop wakes for nothing of ours) */
static int ms_left(uint64_t end)
{
	uint64_t now = now_ns();
	return now >= end ? 0 : (int)((end - now + 999999u) / 1000000u);
}

static void async_poll_until(async_run *r, uint64_t end)
{
	while (now_ns() < end)
		if (wms_async_poll(r->a, ms_left(end)) != WMS_OK)
			die("wms_async_poll", NULL);
}

/* The caller's loop (wms/async.h's watch and timer): epoll. */
static int ep_watch(wms_async *a, int fd, int what, void *payload, void **sockp)
{
	async_run *r = payload;
	struct epoll_event ev;

	(void)a;
	(void)sockp;
	if (what == WMS_POLL_REMOVE)
		return epoll_ctl(r->ep, EPOLL_CTL_DEL, fd, NULL) == 0 || errno == ENOENT ? 0 : -1;
	memset(&ev, 0, sizeof(ev));
	ev.data.fd = fd;
	ev.events = ((what & WMS_POLL_IN) ? EPOLLIN : 0u) | ((what & WMS_POLL_OUT) ? EPOLLOUT : 0u);
	if (epoll_ctl(r->ep, EPOLL_CTL_ADD, fd, &ev) != 0 &&
	    (errno != EEXIST || epoll_ctl(r->ep, EPOLL_CTL_MOD, fd, &ev) != 0))
		return -1;
	return 0;
}

static int ep_timer(wms_async *a, long timeout_ms, void *payload)
{
	async_run *r = payload;
	(void)a;
	r->timer_set = timeout_ms >= 0;
	r->timer_due = now_ns() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0) * 1000000u;
	return 0;
}

/* Until `end`; or, with until_idle, until no call is in flight. */
static void ep_loop_until(async_run *r, uint64_t end, int until_idle)
{
	struct epoll_event evs[256];

	while (until_idle ? wms_async_in_flight(r->a) > 0 : now_ns() < end) {
		int ms = ms_left(end), n;
		if (r->timer_set && ms_left(r->timer_due) < ms)
			ms = ms_left(r->timer_due);
		n = epoll_wait(r->ep, evs, 256, ms);
		if (n < 0 && errno != EINTR)
			die("epoll_wait", strerror(errno));
		for (int i = 0; i < n; i++) {
			int ev = ((evs[i].events & EPOLLIN) ? WMS_EV_IN : 0) |
				 ((evs[i].events & EPOLLOUT) ? WMS_EV_OUT : 0) |
				 ((evs[i].events & (EPOLLERR | EPOLLHUP)) ? WMS_EV_ERR : 0);
			if (wms_async_socket_action(r->a, evs[i].data.fd, ev) != WMS_OK)
				die("wms_async_socket_action", NULL);
		}
		if (r->timer_set && r->timer_due <= now_ns()) {
			r->timer_set = 0;
			if (wms_async_timeout(r->a) != WMS_OK)
				die("wms_async_timeout", NULL);
		}
		if (until_idle && now_ns() > end)
			die("async (epoll): calls still in flight at the end", NULL);
	}
}

/* threads: blocking libwms or gSOAP, each thread one call at a time. */
static _Atomic uint64_t thr_calls;
static _Atomic int thr_stop;

typedef struct thr {
	int kind;
	wms_client *client;
	const char *url;
	unsigned next;
} thr;

static void *thread_main(void *arg)
{
	thr *t = arg;
#ifdef BENCH_GSOAP
	bench_gsoap *g = t->kind == K_GSOAP ? bench_gsoap_new(t->url) : NULL;
#endif
	while (!atomic_load_explicit(&thr_stop, memory_order_relaxed)) {
		const wms_order *order = &bench_orders[t->next++ % NORDERS].order;
		if (t->kind == K_BLOCKING) {
			wms_submit_reply reply;
			wms_error err;
			if (wms_submit_order(&reply, t->client, order, &err) != WMS_OK)
				die("wms_submit_order", err.message);
			check_reply(&reply, order);
		}
#ifdef BENCH_GSOAP
		else {
			bench_gsoap_submit_order(g, order);
		}
#endif
		atomic_fetch_add_explicit(&thr_calls, 1, memory_order_relaxed);
	}
#ifdef BENCH_GSOAP
	bench_gsoap_free(g);
#endif
	return NULL;
}

/* raw libcurl: one multi, epoll, each finished transfer re-added. */
typedef struct raw_multi {
	CURLM *m;
	int ep;
	int timer_set;
	uint64_t timer_due;
	uint64_t calls;
	int stopping;
} raw_multi;

static int raw_socket(CURL *easy, curl_socket_t s, int what, void *userp, void *socketp)
{
	raw_multi *rm = userp;
	struct epoll_event ev;

	(void)easy;
	(void)socketp;
	if (what == CURL_POLL_REMOVE) {
		epoll_ctl(rm->ep, EPOLL_CTL_DEL, s, NULL);
		return 0;
	}
	memset(&ev, 0, sizeof(ev));
	ev.data.fd = s;
	ev.events = ((what & CURL_POLL_IN) ? EPOLLIN : 0u) | ((what & CURL_POLL_OUT) ? EPOLLOUT : 0u);
	if (epoll_ctl(rm->ep, EPOLL_CTL_ADD, s, &ev) != 0 &&
	    (errno != EEXIST || epoll_ctl(rm->ep, EPOLL_CTL_MOD, s, &ev) != 0))
		die("epoll_ctl", strerror(errno));
	return 0;
}

static int raw_timer(CURLM *m, long timeout_ms, void *userp)
{
	raw_multi *rm = userp;
	(void)m;
	rm->timer_set = timeout_ms >= 0;
	rm->timer_due = now_ns() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0) * 1000000u;
	return 0;
}

static void raw_drain(raw_multi *rm)
{
	CURLMsg *msg;
	int pending;
	while ((msg = curl_multi_info_read(rm->m, &pending)) != NULL) {
		raw_curl *rc = NULL;
		long code = 0;
		if (msg->msg != CURLMSG_DONE)
			continue;
		if (msg->data.result != CURLE_OK)
			die("raw curl (multi)", curl_easy_strerror(msg->data.result));
		curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&rc);
		curl_easy_getinfo(msg->easy_handle, CURLINFO_RESPONSE_CODE, &code);
		if (!rc || code != 200 || rc->reply.len != submit_reply_len)
			die("raw curl (multi): unexpected reply", NULL);
		curl_multi_remove_handle(rm->m, rc->easy);
		rc->reply.len = 0;
		rm->calls++;
		if (!rm->stopping && curl_multi_add_handle(rm->m, rc->easy) != CURLM_OK)
			die("curl_multi_add_handle", NULL);
	}
}

static void raw_poll_until(raw_multi *rm, uint64_t end, int until_idle)
{
	struct epoll_event evs[256];
	int running = 1;

	while (until_idle ? running > 0 : now_ns() < end) {
		int ms = ms_left(end), n;
		if (rm->timer_set && ms_left(rm->timer_due) < ms)
			ms = ms_left(rm->timer_due);
		n = epoll_wait(rm->ep, evs, 256, ms);
		if (n < 0 && errno != EINTR)
			die("epoll_wait", strerror(errno));
		for (int i = 0; i < n; i++) {
			int ev = ((evs[i].events & EPOLLIN) ? CURL_CSELECT_IN : 0) |
				 ((evs[i].events & EPOLLOUT) ? CURL_CSELECT_OUT : 0) |
				 ((evs[i].events & (EPOLLERR | EPOLLHUP)) ? CURL_CSELECT_ERR : 0);
			curl_multi_socket_action(rm->m, evs[i].data.fd, ev, &running);
		}
		if (rm->timer_set && rm->timer_due <= now_ns()) {
			rm->timer_set = 0;
			curl_multi_socket_action(rm->m, CURL_SOCKET_TIMEOUT, 0, &running);
		}
		raw_drain(rm);
		if (until_idle && now_ns() > end)
			die("raw curl (multi): transfers still running at the end", NULL);
	}
}

/*
 * bench --scale-worker KIND N PORT WARM_MS MEASURE_MS: prints one line,
 *   result CALLS NS CPU_NS RSS_BASE_KB RSS_PEAK_KB THREADS PEAK_RESET TOTAL_CALLS
 * the first three over the measured window only.
 */
int bench_scale_worker(int argc, char **argv)
{
	int kind = -1;
	unsigned n, threads = 0, port;
	uint64_t warm_ms, measure_ms, t0, total;
	long base_kb, peak_kb;
	int peak_reset;
	snap s0, s1;
	char url[64];

	if (argc != 5)
		die("--scale-worker KIND N PORT WARM_MS MEASURE_MS", NULL);
	for (int k = 0; k < K_COUNT; k++)
		if (strcmp(argv[0], kind_name[k]) == 0)
			kind = k;
	n = (unsigned)strtoul(argv[1], NULL, 10);
	port = (unsigned)strtoul(argv[2], NULL, 10);
	warm_ms = strtoull(argv[3], NULL, 10);
	measure_ms = strtoull(argv[4], NULL, 10);
	if (kind < 0 || n == 0 || port == 0 || port > 65535)
		die("--scale-worker: bad arguments", argv[0]);
#ifndef BENCH_GSOAP
	if (kind == K_GSOAP)
		die("--scale-worker: built without gSOAP", NULL);
#endif
	raise_fd_limit();
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		die("curl_global_init", NULL);
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/wms", port);
	make_orders(1);

	if (kind == K_ASYNC || kind == K_ASYNC_EPOLL) {
		wms_async_options ao = WMS_ASYNC_OPTIONS_INIT;
		wms_client *c = scale_client(url, 0);
		async_run r;
		wms_error err;
		memset(&r, 0, sizeof(r));
		r.ep = -1;
		if (kind == K_ASYNC_EPOLL) {
			if ((r.ep = epoll_create1(EPOLL_CLOEXEC)) < 0)
				die("epoll_create1", strerror(errno));
			ao.watch = ep_watch;
			ao.timer = ep_timer;
			ao.loop_payload = &r;
		}
		if (wms_async_new(&r.a, c, &ao, &err) != WMS_OK)
			die("wms_async_new", err.message);
		base_kb = status_kb("VmRSS:");
		peak_reset = reset_peak_rss();
		t0 = now_ns();
		for (unsigned i = 0; i < n; i++)
			async_start(&r);
		threads = 1;
		if (r.ep >= 0)
			ep_loop_until(&r, t0 + warm_ms * 1000000u, 0);
		else
			async_poll_until(&r, t0 + warm_ms * 1000000u);
		s0 = (snap){ r.calls, now_ns(), process_cpu_ns() };
		if (r.ep >= 0)
			ep_loop_until(&r, s0.ns + measure_ms * 1000000u, 0);
		else
			async_poll_until(&r, s0.ns + measure_ms * 1000000u);
		s1 = (snap){ r.calls, now_ns(), process_cpu_ns() };
		if (wms_async_in_flight(r.a) != n)
			die("the async context does not have N calls in flight", NULL);
		peak_kb = status_kb("VmHWM:");
		r.stopping = 1;
		if (r.ep >= 0)
			ep_loop_until(&r, now_ns() + 30000u * 1000000u, 1);
		else if (wms_async_run(r.a, 30000) != WMS_OK)
			die("wms_async_run: calls still in flight after 30 s", NULL);
		total = r.calls;
		wms_async_free(r.a);
		wms_client_free(c);
		if (r.ep >= 0)
			close(r.ep);
	} else if (kind == K_RAW_CURL) {
		wms__buf body = { 0 };
		raw_curl *rc = calloc(n, sizeof(*rc));
		raw_multi rm;
		wms_error err;
		if (!rc)
			die("out of memory", NULL);
		if (wms__build_submit_order(&body, WMS_SOAP_11, &bench_orders[0].order, &err) != WMS_OK)
			die("wms__build_submit_order", err.message);
		memset(&rm, 0, sizeof(rm));
		if (!(rm.m = curl_multi_init()) || (rm.ep = epoll_create1(EPOLL_CLOEXEC)) < 0)
			die("curl_multi_init / epoll_create1", NULL);
		curl_multi_setopt(rm.m, CURLMOPT_SOCKETFUNCTION, raw_socket);
		curl_multi_setopt(rm.m, CURLMOPT_SOCKETDATA, (void *)&rm);
		curl_multi_setopt(rm.m, CURLMOPT_TIMERFUNCTION, raw_timer);
		curl_multi_setopt(rm.m, CURLMOPT_TIMERDATA, (void *)&rm);
		base_kb = status_kb("VmRSS:");
		peak_reset = reset_peak_rss();
		t0 = now_ns();
		for (unsigned i = 0; i < n; i++) {
			raw_curl_init(&rc[i], url, &body);
			curl_easy_setopt(rc[i].easy, CURLOPT_PRIVATE, (void *)&rc[i]);
			if (curl_multi_add_handle(rm.m, rc[i].easy) != CURLM_OK)
				die("curl_multi_add_handle", NULL);
		}
		threads = 1;
		raw_poll_until(&rm, t0 + warm_ms * 1000000u, 0);
		s0 = (snap){ rm.calls, now_ns(), process_cpu_ns() };
		raw_poll_until(&rm, s0.ns + measure_ms * 1000000u, 0);
		s1 = (snap){ rm.calls, now_ns(), process_cpu_ns() };
		peak_kb = status_kb("VmHWM:");
		rm.stopping = 1;
		raw_poll_until(&rm, now_ns() + 30000u * 1000000u, 1);
		total = rm.calls;
		for (unsigned i = 0; i < n; i++) {
			curl_multi_remove_handle(rm.m, rc[i].easy);
			raw_curl_free(&rc[i]);
		}
		curl_multi_cleanup(rm.m);
		close(rm.ep);
		free(rc);
		wms__buf_free(&body);
	} else {
		/* N threads; one shared client for libwms, whose pool keeps them
		 * all connected (at most 1024: the pool's cap) */
		wms_client *c = kind == K_BLOCKING ? scale_client(url, n < 1024 ? n : 1024) : NULL;
		pthread_t *tid = calloc(n, sizeof(*tid));
		thr *t = calloc(n, sizeof(*t));
		if (!tid || !t)
			die("out of memory", NULL);
		base_kb = status_kb("VmRSS:");
		peak_reset = reset_peak_rss();
		for (unsigned i = 0; i < n; i++) {
			t[i] = (thr){ kind, c, url, i * 7u };
			/* a box that cannot start them all runs with what it has
			 * (the result says how many) */
			if (pthread_create(&tid[i], NULL, thread_main, &t[i]) != 0)
				break;
			threads++;
		}
		if (!threads)
			die("pthread_create", NULL);
		t0 = now_ns();
		sleep_ms(warm_ms);
		s0 = (snap){ atomic_load(&thr_calls), now_ns(), process_cpu_ns() };
		sleep_ms(measure_ms);
		s1 = (snap){ atomic_load(&thr_calls), now_ns(), process_cpu_ns() };
		peak_kb = status_kb("VmHWM:");
		atomic_store(&thr_stop, 1);
		for (unsigned i = 0; i < threads; i++)
			pthread_join(tid[i], NULL);
		total = atomic_load(&thr_calls);
		free(tid);
		free(t);
		wms_client_free(c);
	}
	(void)t0;
	printf("result %llu %llu %llu %ld %ld %u %d %llu\n", (unsigned long long)(s1.calls - s0.calls),
	       (unsigned long long)(s1.ns - s0.ns), (unsigned long long)(s1.cpu_ns - s0.cpu_ns),
	       base_kb, peak_kb, threads, peak_reset, (unsigned long long)total);
	fflush(stdout);
	curl_global_cleanup();
	return 0;
}

/* ---- the server process ---------------------------------------------------- */

/*
 * bench --scale-server DELAY_MS: prints "port N", then serves until its
 * stdin closes, printing "served REQUESTS CONNECTIONS MAX_WAITING CPU_NS"
 * (so far; CPU_NS: its own, threads gone included) for every line read,
 * and once more at the end.
 */
int bench_scale_server(int argc, char **argv)
{
	bench_server *srv;
	char ch;
	ssize_t r;

	if (argc != 1)
		die("--scale-server DELAY_MS", NULL);
	raise_fd_limit();
	srv = bench_server_start_delayed(submit_reply, submit_reply_len,
					 (unsigned)strtoul(argv[0], NULL, 10));
	if (!srv)
		die("cannot start the delayed libmicrohttpd server on 127.0.0.1", NULL);
	printf("port %u\n", (unsigned)bench_server_port(srv));
	fflush(stdout);
	for (;;) {
		r = read(0, &ch, 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r == 1 && ch != '\n')
			continue;
		printf("served %llu %llu %llu %llu\n", (unsigned long long)bench_server_requests(srv),
		       (unsigned long long)bench_server_connections(srv),
		       (unsigned long long)bench_server_max_waiting(srv),
		       (unsigned long long)process_cpu_ns());
		fflush(stdout);
		if (r != 1)
			break;
	}
	bench_server_stop(srv);
	return 0;
}

/* ---- the orchestrator -------------------------------------------------------- */

/* This binary again, with `args`; its stdout (and stdin, if `to_stdin`) a
 * pipe of ours. */
static pid_t spawn_self(char *const args[], int *from_stdout, int *to_stdin)
{
	posix_spawn_file_actions_t fa;
	int out[2], in[2] = { -1, -1 };
	pid_t pid;

	if (pipe2(out, O_CLOEXEC) != 0 || (to_stdin && pipe2(in, O_CLOEXEC) != 0))
		die("pipe2", strerror(errno));
	if (posix_spawn_file_actions_init(&fa) != 0 ||
	    posix_spawn_file_actions_adddup2(&fa, out[1], 1) != 0 ||
	    (to_stdin && posix_spawn_file_actions_adddup2(&fa, in[0], 0) != 0))
		die("posix_spawn_file_actions", NULL);
	if (posix_spawn(&pid, "/proc/self/exe", &fa, NULL, args, environ) != 0)
		die("posix_spawn /proc/self/exe", strerror(errno));
	posix_spawn_file_actions_destroy(&fa);
	close(out[1]);
	*from_stdout = out[0];
	if (to_stdin) {
		close(in[0]);
		*to_stdin = in[1];
	}
	return pid;
}

/* A line from fd (up to its newline), or die. */
static void read_line(int fd, char *buf, size_t cap, const char *who)
{
	size_t len = 0;
	while (len + 1 < cap) {
		ssize_t r = read(fd, buf + len, 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		if (buf[len] == '\n')
			break;
		len++;
	}
	buf[len] = '\0';
	if (!len)
		die("no answer from", who);
}

static void wait_ok(pid_t pid, const char *who)
{
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			die("waitpid", strerror(errno));
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		die("a child process failed", who);
}

/* The delayed server: its process and pipes. */
typedef struct server_proc {
	pid_t pid;
	int to, from;
} server_proc;

typedef struct server_count {
	unsigned long long requests, connections, max_waiting, cpu_ns;
} server_count;

static server_count server_counts(const server_proc *sp)
{
	server_count c;
	char line[128];
	if (write(sp->to, "\n", 1) != 1)
		die("the delayed server's stdin", strerror(errno));
	read_line(sp->from, line, sizeof(line), "the delayed server");
	if (sscanf(line, "served %llu %llu %llu %llu", &c.requests, &c.connections,
		   &c.max_waiting, &c.cpu_ns) != 4)
		die("the delayed server's answer", line);
	return c;
}

typedef struct outcome {
	double rate, ratio, rss_mib, cpu_us, peak_mib, util, server_us;
	unsigned threads;
	int peak_reset;
	unsigned long long calls, requests, connections; /* whole run, warm-up included */
} outcome;

static outcome run_worker(int kind, unsigned n, unsigned port, uint64_t warm_ms,
			  uint64_t measure_ms, const server_proc *sp)
{
	char a_n[16], a_port[16], a_warm[24], a_meas[24], line[256];
	char *args[] = { "bench", "--scale-worker", (char *)kind_name[kind], a_n, a_port,
			 a_warm, a_meas, NULL };
	unsigned long long calls, ns, cpu, total;
	long base_kb, peak_kb;
	server_count c0 = server_counts(sp), c1;
	outcome o;
	int fd;
	pid_t pid;

	snprintf(a_n, sizeof(a_n), "%u", n);
	snprintf(a_port, sizeof(a_port), "%u", port);
	snprintf(a_warm, sizeof(a_warm), "%llu", (unsigned long long)warm_ms);
	snprintf(a_meas, sizeof(a_meas), "%llu", (unsigned long long)measure_ms);
	pid = spawn_self(args, &fd, NULL);
	read_line(fd, line, sizeof(line), kind_name[kind]);
	close(fd);
	wait_ok(pid, kind_name[kind]);
	c1 = server_counts(sp);
	memset(&o, 0, sizeof(o));
	if (sscanf(line, "result %llu %llu %llu %ld %ld %u %d %llu", &calls, &ns, &cpu, &base_kb,
		   &peak_kb, &o.threads, &o.peak_reset, &total) != 8 ||
	    !calls || !ns)
		die("a worker's result line is not what it should be", line);
	o.rate = (double)calls * 1e9 / (double)ns;
	o.ratio = o.rate / ((double)n * 1000.0 / (double)scale_delay_ms);
	o.cpu_us = (double)cpu / (double)calls / 1000.0;
	o.util = (double)cpu / (double)ns;
	o.rss_mib = (double)(peak_kb - base_kb) / 1024.0;
	o.peak_mib = (double)peak_kb / 1024.0;
	o.calls = total;
	o.requests = c1.requests - c0.requests;
	o.connections = c1.connections - c0.connections;
	/* every call the client made is one the server answered: nothing
	 * failed, nothing was resent, nothing left unanswered */
	if (o.requests != total)
		die("the server answered another number of requests than the client made", line);
	o.server_us = (double)(c1.cpu_ns - c0.cpu_ns) / 1000.0 / (double)total;
	return o;
}

/* min and max of v[0..n) */
static void spread(const double *v, int n, double *lo, double *hi)
{
	*lo = *hi = v[0];
	for (int i = 1; i < n; i++) {
		*lo = v[i] < *lo ? v[i] : *lo;
		*hi = v[i] > *hi ? v[i] : *hi;
	}
}

/* median() of a copy: v keeps its order (n <= 40) */
static double med(const double *v, int n)
{
	double c[40];
	memcpy(c, v, (size_t)n * sizeof(*v));
	return median(c, n);
}

/* ---- one call in flight: async against blocking ------------------------------ */

typedef struct seq_async {
	wms_async *a;
	unsigned next;
	uint64_t calls, end, last;
} seq_async;

static void seq_next(seq_async *s);

static void seq_done(wms_status st, const wms_submit_reply *reply, const wms_error *err,
		     void *payload)
{
	seq_async *s = payload;
	if (st != WMS_OK)
		die("wms_async_submit_order", err->message);
	check_reply(reply, &bench_orders[0].order);
	s->calls++;
	s->last = now_ns();
	if (s->last < s->end)
		seq_next(s);
}

static void seq_next(seq_async *s)
{
	if (wms_async_submit_order(NULL, s->a, &bench_orders[s->next++ % NORDERS].order, seq_done,
				   s) != WMS_OK)
		die("wms_async_submit_order refused a call", NULL);
}

/* calls/s for `ms`, one call in flight; *cpu_us: this thread's CPU per call. */
static double seq_run(int async, wms_client *c, seq_async *s, uint64_t ms, double *cpu_us)
{
	uint64_t t0 = now_ns(), cpu0 = thread_cpu_ns(), calls = 0, t = t0;

	if (async) {
		s->calls = 0;
		s->end = t0 + ms * 1000000u;
		s->last = t0;
		seq_next(s);
		if (wms_async_run(s->a, 30000) != WMS_OK)
			die("wms_async_run", NULL);
		calls = s->calls;
		t = s->last;
	} else {
		unsigned next = 0;
		do {
			const wms_order *order = &bench_orders[next++ % NORDERS].order;
			wms_submit_reply reply;
			wms_error err;
			if (wms_submit_order(&reply, c, order, &err) != WMS_OK)
				die("wms_submit_order", err.message);
			check_reply(&reply, order);
			calls++;
			t = now_ns();
		} while (t < t0 + ms * 1000000u);
	}
	*cpu_us = (double)(thread_cpu_ns() - cpu0) / (double)calls / 1000.0;
	return (double)calls * 1e9 / (double)(t - t0);
}

/* Pin the calling thread to `cpu` (-1: back to `saved`); threads it starts
 * afterwards inherit the mask (as bench.c's e2e placements). */
static void pin_to(int cpu, const cpu_set_t *saved)
{
	cpu_set_t set;
	int rc;
	if (cpu < 0) {
		rc = pthread_setaffinity_np(pthread_self(), sizeof(*saved), saved);
	} else {
		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		rc = pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	}
	if (rc != 0)
		die("pthread_setaffinity_np", strerror(rc));
}

/*
 * The server's threads on server_cpu, the caller on client_cpu. Pinned,
 * because the server runs a thread per connection and the asynchronous
 * context and the blocking client each have their own connection: left to
 * the scheduler, one side's server thread may share the caller's CPU (a
 * cheap wake-up) and the other's not, or sit behind another process, and
 * the ratio measures that instead (on this VM it swung from 0.07 to 10).
 * Returns the median ratio.
 */
static double seq_placement(const char *tag, int server_cpu, int client_cpu,
			    const cpu_set_t *saved)
{
	int rounds = quick ? 6 : 20;
	uint64_t ms = quick ? 50 : 100;
	double ar[40], br[40], ratio[40], acpu[40], bcpu[40], cpu, lo, hi, m;
	bench_server *srv;
	seq_async s;
	wms_client *c;
	wms_error err;
	char url[64], name[96];

	pin_to(server_cpu, saved);
	srv = bench_server_start(submit_reply, submit_reply_len);
	if (!srv)
		die("cannot start the libmicrohttpd server on 127.0.0.1", NULL);
	pin_to(client_cpu, saved);
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/wms", (unsigned)bench_server_port(srv));
	c = scale_client(url, 0);
	memset(&s, 0, sizeof(s));
	if (wms_async_new(&s.a, c, NULL, &err) != WMS_OK)
		die("wms_async_new", err.message);
	seq_run(1, c, &s, 100, &cpu); /* warm up: connections, caches */
	seq_run(0, c, &s, 100, &cpu);
	for (int r = 0; r < rounds; r++) {
		if (r % 2 == 0) {
			ar[r] = seq_run(1, c, &s, ms, &acpu[r]);
			br[r] = seq_run(0, c, &s, ms, &bcpu[r]);
		} else {
			br[r] = seq_run(0, c, &s, ms, &bcpu[r]);
			ar[r] = seq_run(1, c, &s, ms, &acpu[r]);
		}
		ratio[r] = ar[r] / br[r];
	}
#define SEQ_FIGURE(what, v, d) (snprintf(name, sizeof(name), what "_%s", tag), figure(name, v, d))
	SEQ_FIGURE("async_seq_calls_per_s", med(ar, rounds), 0);
	SEQ_FIGURE("blocking_seq_calls_per_s", med(br, rounds), 0);
	SEQ_FIGURE("async_seq_cpu_us_per_call", med(acpu, rounds), 2);
	SEQ_FIGURE("blocking_seq_cpu_us_per_call", med(bcpu, rounds), 2);
	m = med(ratio, rounds);
	SEQ_FIGURE("async_seq_ratio_vs_blocking", m, 3);
#undef SEQ_FIGURE
	spread(ratio, rounds, &lo, &hi);
	printf("# seq %s: one call in flight, the zero-delay in-process server (a thread per "
	       "connection) on CPU %d, the caller on CPU %d; one client and its async context; "
	       "%d interleaved rounds of %llu ms each side; ratio %.3f..%.3f; caller CPU is "
	       "this thread's (CLOCK_THREAD_CPUTIME_ID)\n",
	       tag, server_cpu, client_cpu, rounds, (unsigned long long)ms, lo, hi);
	wms_async_free(s.a);
	wms_client_free(c);
	bench_server_stop(srv);
	pin_to(-1, saved);
	return m;
}

/* Both placements; *two_cpu is -1 when this process may use one CPU only. */
static void seq_section(double *one_cpu, double *two_cpu)
{
	cpu_set_t saved;
	int first, second;

	bench_two_cpus(&saved, &first, &second);
	*two_cpu = -1;
	if (second >= 0)
		*two_cpu = seq_placement("2cpu", second, first, &saved);
	else
		printf("# seq 2cpu: skipped, this process may run on one CPU only\n");
	*one_cpu = seq_placement("1cpu", first, first, &saved);
}

/* ---- the group -------------------------------------------------------------- */

void bench_scale(void)
{
#ifdef BENCH_GSOAP
	const int have_gsoap = 1;
#else
	const int have_gsoap = 0;
#endif
	int rounds = quick ? 1 : 3;
	uint64_t delay = scale_delay_ms;
	uint64_t warm_ms = quick ? 300 : (5 * delay > 500 ? 5 * delay : 500);
	uint64_t measure_ms = quick ? (5 * delay > 500 ? 5 * delay : 500)
				    : (20 * delay > 2000 ? 20 * delay : 2000);
	static outcome res[K_COUNT][NLEVELS][MAX_SCALE_ROUNDS];
	char *server_args[] = { "bench", "--scale-server", NULL, NULL };
	char a_delay[16], line[256], name[96];
	unsigned port;
	server_count served;
	server_proc sp;
	double seq_1cpu, seq_2cpu, t_start = (double)now_ns();

	raise_fd_limit();
	/* each process needs a descriptor per connection, and a few */
	if (fd_limit() < (long)levels[NLEVELS - 1] + 64)
		printf("# scale: RLIMIT_NOFILE is %ld: too few for %u calls in flight\n",
		       fd_limit(), levels[NLEVELS - 1]);

	/* one call in flight first: its server is in this process */
	make_orders(1);
	seq_section(&seq_1cpu, &seq_2cpu);

	snprintf(a_delay, sizeof(a_delay), "%u", scale_delay_ms);
	server_args[2] = a_delay;
	sp.pid = spawn_self(server_args, &sp.from, &sp.to);
	read_line(sp.from, line, sizeof(line), "the delayed server");
	if (sscanf(line, "port %u", &port) != 1 || !port)
		die("the delayed server's first line", line);
	printf("# scale: server: another process, libmicrohttpd %s, a thread per connection, "
	       "each reply %u ms after its request; each client in a fresh process "
	       "(RLIMIT_NOFILE %ld); warm-up %llu ms, then %llu ms measured; %d round%s, the "
	       "clients' order rotating; ideal = N / delay\n",
	       MHD_get_version(), scale_delay_ms, fd_limit(), (unsigned long long)warm_ms,
	       (unsigned long long)measure_ms, rounds, rounds > 1 ? "s" : "");
	if (!have_gsoap)
		printf("# scale gsoap: skipped: gSOAP not installed\n");

	for (int r = 0; r < rounds; r++)
		for (int l = 0; l < NLEVELS; l++) {
			int order[K_COUNT], m = 0;
			for (int k = 0; k < K_COUNT; k++)
				if ((k != K_GSOAP || have_gsoap) &&
				    ((k != K_RAW_CURL && k != K_ASYNC_EPOLL) || l == NLEVELS - 1))
					order[m++] = k;
			for (int i = 0; i < m; i++) {
				int k = order[(i + r) % m];
				res[k][l][r] = run_worker(k, levels[l], port, warm_ms, measure_ms,
							  &sp);
			}
		}

	served = server_counts(&sp);
	close(sp.to);
	read_line(sp.from, line, sizeof(line), "the delayed server");
	close(sp.from);
	wait_ok(sp.pid, "the delayed server");

	for (int l = 0; l < NLEVELS; l++)
		for (int k = 0; k < K_COUNT; k++) {
			double rate[MAX_SCALE_ROUNDS], ratio[MAX_SCALE_ROUNDS], rss[MAX_SCALE_ROUNDS],
				cpu[MAX_SCALE_ROUNDS], peak[MAX_SCALE_ROUNDS], util[MAX_SCALE_ROUNDS],
				srv[MAX_SCALE_ROUNDS], conns[MAX_SCALE_ROUNDS], lo[4], hi[4];
			unsigned threads = UINT32_MAX;
			int reset = 1;
			if (!res[k][l][0].rate)
				continue;
			for (int r = 0; r < rounds; r++) {
				const outcome *o = &res[k][l][r];
				rate[r] = o->rate;
				ratio[r] = o->ratio;
				rss[r] = o->rss_mib;
				cpu[r] = o->cpu_us;
				peak[r] = o->peak_mib;
				util[r] = o->util;
				srv[r] = o->server_us;
				conns[r] = (double)o->connections;
				threads = o->threads < threads ? o->threads : threads;
				reset &= o->peak_reset;
			}
#define SCALE_FIGURE(what, v, d) \
	(snprintf(name, sizeof(name), "scale_%s_%u_%s", kind_name[k], levels[l], what), \
	 figure(name, v, d))
			SCALE_FIGURE("calls_per_s", med(rate, rounds), 0);
			SCALE_FIGURE("ratio_to_ideal", med(ratio, rounds), 3);
			SCALE_FIGURE("rss_growth_mib", med(rss, rounds), 1);
			SCALE_FIGURE("cpu_us_per_call", med(cpu, rounds), 1);
#undef SCALE_FIGURE
			spread(rate, rounds, &lo[0], &hi[0]);
			spread(ratio, rounds, &lo[1], &hi[1]);
			spread(rss, rounds, &lo[2], &hi[2]);
			spread(cpu, rounds, &lo[3], &hi[3]);
			printf("# scale %s %u: %u thread%s%s; calls/s %.0f..%.0f, ratio %.3f..%.3f, "
			       "RSS growth %.1f..%.1f MiB (peak RSS %.1f MiB%s), CPU %.1f..%.1f us "
			       "per call (%.2f CPUs busy); server CPU %.1f us per request, %.0f "
			       "connections opened per run\n",
			       kind_name[k], levels[l], threads, threads > 1 ? "s" : "",
			       threads < levels[l] && (k == K_BLOCKING || k == K_GSOAP)
				       ? " (capped: no more could be started)"
				       : "",
			       lo[0], hi[0], lo[1], hi[1], lo[2], hi[2], med(peak, rounds),
			       reset ? "" : "; its reset failed: since start", lo[3], hi[3],
			       med(util, rounds), med(srv, rounds), med(conns, rounds));
		}
	printf("# scale: the server answered %llu requests on %llu connections, %llu waiting at "
	       "most at once; the section took %.0f s\n",
	       served.requests, served.connections, served.max_waiting,
	       ((double)now_ns() - t_start) / 1e9);

	/* the targets, at the largest N */
	{
		const int l = NLEVELS - 1;
		double a_ratio[MAX_SCALE_ROUNDS], a_rss[MAX_SCALE_ROUNDS], a_cpu[MAX_SCALE_ROUNDS],
			b_cpu[MAX_SCALE_ROUNDS];
		char what[96];
		for (int r = 0; r < rounds; r++) {
			a_ratio[r] = res[K_ASYNC][l][r].ratio;
			a_rss[r] = res[K_ASYNC][l][r].rss_mib;
			a_cpu[r] = res[K_ASYNC][l][r].cpu_us;
			b_cpu[r] = res[K_BLOCKING][l][r].cpu_us;
		}
		snprintf(name, sizeof(name), "async_%u_ratio_to_ideal", levels[l]);
		target(name, med(a_ratio, rounds), ">=", 0.90, NULL);
		snprintf(name, sizeof(name), "async_%u_rss_growth_mib", levels[l]);
		target(name, med(a_rss, rounds), "<=", 64, NULL);
		snprintf(name, sizeof(name), "async_%u_cpu_us_per_call", levels[l]);
		snprintf(what, sizeof(what), "(blocking, %u threads)", res[K_BLOCKING][l][0].threads);
		target(name, med(a_cpu, rounds), "<=", med(b_cpu, rounds), what);
		target("async_seq_ratio_vs_blocking_1cpu", seq_1cpu, ">=", 0.95, NULL);
		if (seq_2cpu >= 0)
			target("async_seq_ratio_vs_blocking_2cpu", seq_2cpu, ">=", 0.95, NULL);
	}
}
