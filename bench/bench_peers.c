/*
 * libwms beside its peers (group "peers"), in one run, against the bench's
 * own server (bench_server.c, the canned SubmitOrderResponse):
 *   - gSOAP 2.8's C client generated from the same WSDL (bench_gsoap.c),
 *     SOAP 1.1 over HTTP keep-alive, the reply parsed and checked;
 *   - raw libcurl posting libwms's exact request bytes (bench.c's raw_curl).
 * Two placements, nothing pinned (as a service runs):
 *   - seq: one calling thread, one keep-alive connection per client, the
 *     server answering every connection from one thread;
 *   - 8threads: eight calling threads: libwms with ONE shared client (its
 *     pool allows 8 connections) and with a client per thread, gSOAP a
 *     context per thread, raw libcurl a handle per thread; calls/s is the
 *     total over the threads; the server has a thread per connection.
 * Each placement also runs a second libwms client like the first
 * (e2e_ratio_self_*): a ratio to a peer means something only where it is
 * further from 1 than that one.
 * Short rounds, each running every client once, in an order that rotates
 * from round to round; a ratio is libwms's rate over the peer's in the
 * same round (libwms = the shared client with 8 threads), and each figure
 * is the median over the rounds. CPU per call is the calling threads' own
 * (CLOCK_THREAD_CPUTIME_ID, summed over them), not the in-process server's.
 * libwms's replies are checked as gSOAP's are; raw libcurl checks status
 * and length only.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <curl/curl.h>
#include "internal.h"
#include "soap/soap.h"
#include "wms/wms.h"
#include "bench_server.h"
#include "bench.h"
#ifdef BENCH_GSOAP
#include "bench_gsoap.h"
#endif

#define NTHREADS 8
#define MAX_ROUNDS 40

typedef enum kind { KIND_WMS, KIND_GSOAP, KIND_RAW_CURL } kind;

/* One calling thread's client and where it is in the orders. */
typedef struct caller {
	kind kind;
	wms_client *client; /* KIND_WMS: its own, or the shared one */
#ifdef BENCH_GSOAP
	bench_gsoap *gsoap;
#endif
	raw_curl rc;
	unsigned next;
} caller;

/* One client in one placement: its callers (one per thread) and results. */
typedef struct entry {
	const char *name; /* figure names: e2e_<name>_<placement>_... */
	caller *callers;
	int nthreads;
	double rate[MAX_ROUNDS], cpu_us[MAX_ROUNDS];
	/* calls the callers made; requests and new connections the server saw
	 * while they ran (rounds only), and new connections in the warm-up */
	uint64_t calls, requests, connections, warmup_connections;
} entry;

/* One thread's share of a run. */
typedef struct run {
	caller *c;
	pthread_barrier_t *start;
	uint64_t ms;
	uint64_t calls, cpu_ns, t0, t1;
} run;

static void check_wms_reply(const wms_submit_reply *r, const wms_order *order)
{
	if (strcmp(r->order_id, order->order_id) != 0 ||
	    strcmp(r->wms_reference, BENCH_REPLY_REFERENCE) != 0 ||
	    strcmp(wms_order_state_name(r->state), BENCH_REPLY_STATE) != 0 ||
	    r->duplicate != (strcmp(BENCH_REPLY_DUPLICATE, "true") == 0) || r->from_fallback)
		die("wms_submit_order: the reply is not the server's", r->wms_reference);
}

static void one_call(caller *c)
{
	const wms_order *order = &bench_orders[c->next++ % NORDERS].order;
	wms_submit_reply reply;
	wms_error err;

	switch (c->kind) {
	case KIND_WMS:
		if (wms_submit_order(&reply, c->client, order, &err) != WMS_OK)
			die("wms_submit_order", err.message);
		check_wms_reply(&reply, order);
		break;
	case KIND_GSOAP:
#ifdef BENCH_GSOAP
		bench_gsoap_submit_order(c->gsoap, order);
#endif
		break;
	case KIND_RAW_CURL:
		raw_curl_call(&c->rc); /* libwms's bytes for order 0, every time */
		break;
	}
}

/* Calls until `ms` have passed since this thread started (after the
 * barrier, with threads), the clock read after every call. */
static void *run_thread(void *arg)
{
	run *r = arg;
	uint64_t cpu0, end;

	if (r->start)
		pthread_barrier_wait(r->start);
	r->t0 = now_ns();
	cpu0 = thread_cpu_ns();
	end = r->t0 + r->ms * 1000000u;
	r->calls = 0;
	do {
		one_call(r->c);
		r->calls++;
		r->t1 = now_ns();
	} while (r->t1 < end);
	r->cpu_ns = thread_cpu_ns() - cpu0;
	return NULL;
}

/* One run of `e` for `ms`: its rate (calls/s over all its threads, from the
 * first start to the last finish) and the callers' CPU µs per call. */
static void measure(entry *e, bench_server *srv, uint64_t ms, double *rate, double *cpu_us)
{
	run runs[NTHREADS];
	pthread_t threads[NTHREADS];
	pthread_barrier_t start;
	uint64_t req0 = bench_server_requests(srv), conn0 = bench_server_connections(srv);
	uint64_t calls = 0, cpu = 0, t0 = UINT64_MAX, t1 = 0;

	for (int i = 0; i < e->nthreads; i++)
		runs[i] = (run){ &e->callers[i], e->nthreads > 1 ? &start : NULL, ms, 0, 0, 0, 0 };
	if (e->nthreads == 1) {
		run_thread(&runs[0]);
	} else {
		if (pthread_barrier_init(&start, NULL, (unsigned)e->nthreads) != 0)
			die("pthread_barrier_init", NULL);
		for (int i = 0; i < e->nthreads; i++)
			if (pthread_create(&threads[i], NULL, run_thread, &runs[i]) != 0)
				die("pthread_create", NULL);
		for (int i = 0; i < e->nthreads; i++)
			pthread_join(threads[i], NULL);
		pthread_barrier_destroy(&start);
	}
	for (int i = 0; i < e->nthreads; i++) {
		calls += runs[i].calls;
		cpu += runs[i].cpu_ns;
		t0 = runs[i].t0 < t0 ? runs[i].t0 : t0;
		t1 = runs[i].t1 > t1 ? runs[i].t1 : t1;
	}
	*rate = (double)calls * 1e9 / (double)(t1 - t0);
	*cpu_us = (double)cpu / (double)calls / 1000.0;
	e->calls += calls;
	e->requests += bench_server_requests(srv) - req0;
	e->connections += bench_server_connections(srv) - conn0;
}

/* Warm up each entry (connections, caches), then `rounds` rounds of `ms`
 * per entry, the order rotating by one each round. */
static void placement(entry *e, int n, bench_server *srv, int rounds, uint64_t ms)
{
	double rate, cpu;

	for (int k = 0; k < n; k++) {
		uint64_t conn0 = bench_server_connections(srv);
		measure(&e[k], srv, 100, &rate, &cpu);
		e[k].warmup_connections = bench_server_connections(srv) - conn0;
		e[k].calls = e[k].requests = e[k].connections = 0;
	}
	for (int r = 0; r < rounds; r++)
		for (int i = 0; i < n; i++) {
			entry *x = &e[(i + r) % n];
			measure(x, srv, ms, &x->rate[r], &x->cpu_us[r]);
		}
}

/* Prints and returns the median over the rounds of a's rate over b's,
 * then a line with the rounds' spread: the middle half and all of them. */
static double ratio_figure(const char *name, const entry *a, const entry *b, int rounds)
{
	double v[MAX_ROUNDS], m;

	for (int r = 0; r < rounds; r++)
		v[r] = a->rate[r] / b->rate[r];
	m = median(v, rounds); /* sorts v */
	figure(name, m, 3);
	printf("# %s: %d rounds, the middle half %.3f..%.3f, all %.3f..%.3f\n", name, rounds,
	       v[rounds / 4], v[rounds - 1 - rounds / 4], v[0], v[rounds - 1]);
	return m;
}

static void report(entry *e, int n, const char *tag, int rounds, uint64_t ms)
{
	char name[96];

	for (int k = 0; k < n; k++) {
		snprintf(name, sizeof(name), "e2e_%s_%s_calls_per_s", e[k].name, tag);
		figure(name, median(e[k].rate, rounds), 0);
		snprintf(name, sizeof(name), "e2e_%s_%s_cpu_us_per_call", e[k].name, tag);
		figure(name, median(e[k].cpu_us, rounds), 2);
	}
	for (int k = 0; k < n; k++)
		printf("# peers %s %s: %d thread%s, %d rounds of %llu ms; %llu calls, the server "
		       "saw %llu requests on %llu new connections (%llu in the 100 ms warm-up)\n",
		       tag, e[k].name, e[k].nthreads, e[k].nthreads > 1 ? "s" : "", rounds,
		       (unsigned long long)ms, (unsigned long long)e[k].calls,
		       (unsigned long long)e[k].requests, (unsigned long long)e[k].connections,
		       (unsigned long long)e[k].warmup_connections);
}

static void caller_init(caller *c, kind k, wms_client *client, const char *url,
			const wms__buf *body, unsigned first_order)
{
	memset(c, 0, sizeof(*c));
	c->kind = k;
	c->next = first_order;
	if (k == KIND_WMS)
		c->client = client;
	else if (k == KIND_RAW_CURL)
		raw_curl_init(&c->rc, url, body);
#ifdef BENCH_GSOAP
	else
		c->gsoap = bench_gsoap_new(url);
#endif
}

static void caller_free(caller *c)
{
	if (c->kind == KIND_RAW_CURL)
		raw_curl_free(&c->rc);
#ifdef BENCH_GSOAP
	bench_gsoap_free(c->gsoap);
#endif
}

static wms_client *new_client(const char *url, uint32_t pool)
{
	wms_client_options opts = WMS_CLIENT_OPTIONS_INIT;
	wms_client *c;
	wms_error err;

	opts.endpoint = url;
	opts.max_idle_connections = pool; /* also curl's idle keep-alive connections */
	if (wms_client_new(&c, &opts, &err) != WMS_OK)
		die("wms_client_new", err.message);
	return c;
}

/* The bench's canned server (one_thread: bench_server_start_one_thread),
 * its URL in url[n], and the orders made. */
static bench_server *start_server(char *url, size_t n, int one_thread)
{
	bench_server *srv = one_thread ? bench_server_start_one_thread(submit_reply, submit_reply_len)
				       : bench_server_start(submit_reply, submit_reply_len);
	if (!srv)
		die("cannot start the libmicrohttpd server on 127.0.0.1", NULL);
	snprintf(url, n, "http://127.0.0.1:%u/wms", (unsigned)bench_server_port(srv));
	make_orders(1);
	return srv;
}

void bench_peers(void)
{
	int seq_rounds = quick ? 10 : 40, thr_rounds = quick ? 6 : 30;
	uint64_t seq_ms = quick ? 30 : 50, thr_ms = quick ? 50 : 100;
#ifdef BENCH_GSOAP
	const int gsoap = 1;
#else
	const int gsoap = 0;
#endif
	caller seq_wms, seq_again, seq_gsoap, seq_raw;
	caller thr_shared[NTHREADS], thr_again[NTHREADS], thr_own[NTHREADS], thr_gsoap[NTHREADS],
		thr_raw[NTHREADS];
	wms_client *one, *one_again, *shared, *shared_again, *own[NTHREADS];
	wms__buf body = { 0 };
	bench_server *srv, *srv1;
	wms_error err;
	double vs_gsoap = 0, vs_curl, vs_own;
	char url[64], url1[64];

	srv1 = start_server(url1, sizeof(url1), 1);
	srv = start_server(url, sizeof(url), 0);
	if (wms__build_submit_order(&body, WMS_SOAP_11, &bench_orders[0].order, &err) != WMS_OK)
		die("wms__build_submit_order", err.message);
#ifdef BENCH_GSOAP
	printf("# peers: gSOAP %s (its generated C client, SOAP 1.1, keep-alive), libcurl %s; "
	       "nothing pinned\n",
	       bench_gsoap_version(), curl_version_info(CURLVERSION_NOW)->version);
#else
	printf("# peers gsoap: skipped: gSOAP not installed (the bench was built without gsoap, "
	       "wsdl2h or soapcpp2); libwms against raw libcurl only\n");
#endif

	/* One calling thread, against the server that answers every
	 * connection from one thread (bench_server.c says why). wms_again is
	 * a second libwms client, the same as the first: libwms over itself
	 * is what this method reads between two identical clients, its noise
	 * floor, printed beside the ratios. */
	one = new_client(url1, 0);
	one_again = new_client(url1, 0);
	caller_init(&seq_wms, KIND_WMS, one, url1, &body, 0);
	caller_init(&seq_again, KIND_WMS, one_again, url1, &body, 0);
	caller_init(&seq_raw, KIND_RAW_CURL, NULL, url1, &body, 0);
	if (gsoap)
		caller_init(&seq_gsoap, KIND_GSOAP, NULL, url1, &body, 0);
	{
		entry e[4] = {
			{ .name = "wms", .callers = &seq_wms, .nthreads = 1 },
			{ .name = "wms_again", .callers = &seq_again, .nthreads = 1 },
			{ .name = "raw_curl", .callers = &seq_raw, .nthreads = 1 },
			{ .name = "gsoap", .callers = &seq_gsoap, .nthreads = 1 },
		};
		int n = gsoap ? 4 : 3;
		placement(e, n, srv1, seq_rounds, seq_ms);
		if (gsoap)
			vs_gsoap = ratio_figure("e2e_ratio_vs_gsoap_seq", &e[0], &e[3], seq_rounds);
		vs_curl = ratio_figure("e2e_ratio_vs_raw_curl_seq", &e[0], &e[2], seq_rounds);
		ratio_figure("e2e_ratio_self_seq", &e[0], &e[1], seq_rounds);
		report(e, n, "seq", seq_rounds, seq_ms);
		/* issue 14's targets, each judged on this run's medians */
		if (gsoap) {
			target("peers_seq_ratio_vs_gsoap", vs_gsoap, ">=", 1.0, NULL);
			target("peers_seq_cpu_us_per_call", median(e[0].cpu_us, seq_rounds), "<=",
			       median(e[3].cpu_us, seq_rounds), "(gSOAP's)");
		}
		target("peers_seq_ratio_vs_raw_curl", vs_curl, ">=", 0.90, NULL);
	}

	/* Eight, against the server with a thread per connection; again a
	 * second shared client beside the first, for the noise floor. */
	shared = new_client(url, NTHREADS);
	shared_again = new_client(url, NTHREADS);
	for (int i = 0; i < NTHREADS; i++) {
		unsigned first = (unsigned)i * (NORDERS / NTHREADS);
		own[i] = new_client(url, 0);
		caller_init(&thr_shared[i], KIND_WMS, shared, url, &body, first);
		caller_init(&thr_again[i], KIND_WMS, shared_again, url, &body, first);
		caller_init(&thr_own[i], KIND_WMS, own[i], url, &body, first);
		caller_init(&thr_raw[i], KIND_RAW_CURL, NULL, url, &body, first);
		if (gsoap)
			caller_init(&thr_gsoap[i], KIND_GSOAP, NULL, url, &body, first);
	}
	{
		entry e[5] = {
			{ .name = "wms_shared", .callers = thr_shared, .nthreads = NTHREADS },
			{ .name = "wms_per_thread", .callers = thr_own, .nthreads = NTHREADS },
			{ .name = "raw_curl", .callers = thr_raw, .nthreads = NTHREADS },
			{ .name = "wms_shared_again", .callers = thr_again, .nthreads = NTHREADS },
			{ .name = "gsoap", .callers = thr_gsoap, .nthreads = NTHREADS },
		};
		int n = gsoap ? 5 : 4;
		placement(e, n, srv, thr_rounds, thr_ms);
		if (gsoap)
			vs_gsoap = ratio_figure("e2e_ratio_vs_gsoap_8threads", &e[0], &e[4],
						thr_rounds);
		ratio_figure("e2e_ratio_vs_raw_curl_8threads", &e[0], &e[2], thr_rounds);
		vs_own = ratio_figure("shared_client_vs_client_per_thread_8threads", &e[0], &e[1],
				      thr_rounds);
		ratio_figure("e2e_ratio_self_8threads", &e[0], &e[3], thr_rounds);
		report(e, n, "8threads", thr_rounds, thr_ms);
		if (gsoap)
			target("peers_8threads_ratio_vs_gsoap", vs_gsoap, ">=", 1.0, NULL);
		target("peers_8threads_shared_vs_client_per_thread", vs_own, ">=", 0.95, NULL);
	}
	printf("# peers: the servers saw %llu requests on %llu connections in all\n",
	       (unsigned long long)(bench_server_requests(srv) + bench_server_requests(srv1)),
	       (unsigned long long)(bench_server_connections(srv) +
				    bench_server_connections(srv1)));

	caller_free(&seq_wms);
	caller_free(&seq_again);
	caller_free(&seq_raw);
	if (gsoap)
		caller_free(&seq_gsoap);
	for (int i = 0; i < NTHREADS; i++) {
		caller_free(&thr_shared[i]);
		caller_free(&thr_again[i]);
		caller_free(&thr_own[i]);
		caller_free(&thr_raw[i]);
		if (gsoap)
			caller_free(&thr_gsoap[i]);
		wms_client_free(own[i]);
	}
	wms_client_free(shared);
	wms_client_free(shared_again);
	wms_client_free(one);
	wms_client_free(one_again);
	wms__buf_free(&body);
	bench_server_stop(srv);
	bench_server_stop(srv1);
}

/* ---- memory over a million calls (group "memory") ------------------------ */

#define MEM_CALLS 1000000u
#define MEM_WARMUP 1000u
/* "No growth": what malloc's arenas may still move by, not a leak's rate
 * (a leak of 1 byte a call is 0.95 MiB here). */
#define MEM_TARGET_MIB 1.0

typedef struct mem_run {
	caller *c;
	unsigned calls;
} mem_run;

static void *mem_thread(void *arg)
{
	mem_run *r = arg;
	for (unsigned i = 0; i < r->calls; i++)
		one_call(r->c);
	return NULL;
}

/* The process's resident set now (not its peak), in MiB. */
static double rss_mib(void)
{
	long kb = status_kb("VmRSS:");
	if (kb < 0)
		die("reading VmRSS from /proc/self/status", NULL);
	return (double)kb / 1024.0;
}

/* `total` calls spread over NTHREADS threads sharing `callers`' client. */
static void mem_calls(caller *callers, unsigned total)
{
	pthread_t threads[NTHREADS];
	mem_run runs[NTHREADS];
	for (int i = 0; i < NTHREADS; i++) {
		unsigned share = total / NTHREADS + ((unsigned)i < total % NTHREADS);
		runs[i] = (mem_run){ &callers[i], share };
		if (pthread_create(&threads[i], NULL, mem_thread, &runs[i]) != 0)
			die("pthread_create", NULL);
	}
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(threads[i], NULL);
}

/* One client shared by 8 threads (the bench's own server, every reply
 * checked): the resident set after the first MEM_WARMUP calls and after
 * MEM_CALLS in all (one measurement, not a median). The server runs in
 * this process, so its memory counts too. With --quick a tenth of the
 * calls against the same limit: malloc's arenas move by about 0.1 MiB
 * whatever the count, so a tenth of the limit would judge that noise. */
void bench_memory(void)
{
	unsigned total = quick ? MEM_CALLS / 10 : MEM_CALLS;
	caller callers[NTHREADS];
	wms_client *shared;
	bench_server *srv;
	double rss0, rss1, secs;
	uint64_t t0;
	char url[64];

	srv = start_server(url, sizeof(url), 0);
	shared = new_client(url, NTHREADS);
	for (int i = 0; i < NTHREADS; i++)
		caller_init(&callers[i], KIND_WMS, shared, url, NULL,
			    (unsigned)i * (NORDERS / NTHREADS));
	mem_calls(callers, MEM_WARMUP);
	rss0 = rss_mib();
	t0 = now_ns();
	mem_calls(callers, total - MEM_WARMUP);
	secs = (double)(now_ns() - t0) / 1e9;
	rss1 = rss_mib();
	printf("# memory: one measurement, not a median\n");
	figure("memory_rss_after_1k_calls_mib", rss0, 1);
	figure("memory_rss_after_all_calls_mib", rss1, 1);
	figure("memory_rss_growth_mib", rss1 - rss0, 2);
	target("memory_rss_growth_mib", rss1 - rss0, "<=", MEM_TARGET_MIB,
	       quick ? "(--quick: 100 000 calls)" : NULL);
	printf("# memory: %u calls from %d threads on one client: %u of warm-up, then %u "
	       "in %.1f s; the server saw %llu requests on %llu connections\n",
	       total, NTHREADS, MEM_WARMUP, total - MEM_WARMUP, secs,
	       (unsigned long long)bench_server_requests(srv),
	       (unsigned long long)bench_server_connections(srv));
	for (int i = 0; i < NTHREADS; i++)
		caller_free(&callers[i]);
	wms_client_free(shared);
	bench_server_stop(srv);
}
