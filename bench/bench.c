/*
 * bench: the figures libwms is held to, one line each (`name value`), every
 * value the median of REPS runs. Lines starting with '#' are context.
 *
 *     ninja -C build bench-run        (or ./build/bench/bench)
 *     ./build/bench/bench --quick     short runs, a smoke test
 *     ./build/bench/bench --only e2e  one group: breaker, client, envelope, e2e, shared,
 *                                     peers, memory, scale (e.g. under `perf record`)
 *     ./build/bench/bench --only scale --delay-ms 50
 *                                     the scale group with another server delay
 *
 * Targets: breaker <= 50 ns/call closed and open with 0 allocations;
 * CIRCUIT_OPEN from wms_submit_order <= 200 ns; end to end >= 0.9 x raw curl
 * (reported with server and callers on two CPUs, and on one); the scale
 * group's own (bench_scale.c) and the memory group's (bench_peers.c:
 * resident set growth over 1 000 000 calls <= 1 MiB), printed as target_*
 * lines.
 */
#define _GNU_SOURCE /* CPU_SET, pthread_setaffinity_np: the e2e placements */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <curl/curl.h>
#include "internal.h"
#include "soap/soap.h"
#include "wms/wms.h"
#include "wms/sys/alloc.h"
#include "wms/sys/transport.h"
#include "bench_server.h"
#include "bench.h"
#include "bench_cpu.h"

int quick;

/* ---- helpers ----------------------------------------------------------- */

static _Atomic uint64_t n_allocs;

static void *count_malloc(size_t n, void *ctx)
{
	(void)ctx;
	atomic_fetch_add_explicit(&n_allocs, 1, memory_order_relaxed);
	return malloc(n);
}

static void *count_realloc(void *p, size_t n, void *ctx)
{
	(void)ctx;
	atomic_fetch_add_explicit(&n_allocs, 1, memory_order_relaxed);
	return realloc(p, n);
}

static void count_free(void *p, void *ctx)
{
	(void)ctx;
	free(p);
}

uint64_t allocs(void)
{
	return atomic_load_explicit(&n_allocs, memory_order_relaxed);
}

uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

void die(const char *what, const char *detail)
{
	fprintf(stderr, "bench: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
	exit(1);
}

void figure(const char *name, double value, int decimals)
{
	printf("%s %.*f\n", name, decimals, value);
	fflush(stdout);
}

/* ---- the breaker ------------------------------------------------------- */

static wms_breaker *make_breaker(wms_breaker_mode mode, int open)
{
	wms_breaker_options o = WMS_BREAKER_OPTIONS_INIT;
	wms_breaker_permit p;
	wms_breaker *b;
	int i;

	o.mode = mode;
	o.failure_threshold = 1;
	o.minimum_number_of_calls = 10;
	o.open_duration_ms = 3600000; /* stays open for the whole run */
	if (wms_breaker_new(&b, &o) != WMS_OK)
		die("wms_breaker_new failed", NULL);
	for (i = 0; open && i < 100 && wms_breaker_state_get(b) != WMS_BREAKER_STATE_OPEN; i++) {
		if (wms_breaker_acquire(&p, b, NULL) != WMS_OK)
			die("cannot trip the breaker", NULL);
		wms_breaker_record(b, &p, WMS_OUTCOME_FAILURE);
	}
	if (wms_breaker_state_get(b) != (open ? WMS_BREAKER_STATE_OPEN : WMS_BREAKER_STATE_CLOSED))
		die("breaker in the wrong state", NULL);
	return b;
}

/* ns per acquire+record (closed) or per rejected acquire (open). */
static double breaker_run(wms_breaker *b, int open, uint64_t iters, uint64_t *n_alloc)
{
	wms_breaker_permit p;
	uint32_t retry;
	uint64_t a0 = allocs(), t0 = now_ns(), i;

	if (!open) {
		for (i = 0; i < iters; i++) {
			if (wms_breaker_acquire(&p, b, &retry) != WMS_OK)
				die("closed breaker rejected a call", NULL);
			wms_breaker_record(b, &p, WMS_OUTCOME_SUCCESS);
		}
	} else {
		for (i = 0; i < iters; i++)
			if (wms_breaker_acquire(&p, b, &retry) != WMS_ERR_CIRCUIT_OPEN)
				die("open breaker let a call through", NULL);
	}
	*n_alloc += allocs() - a0;
	return (double)(now_ns() - t0) / (double)iters;
}

static void bench_breakers(void)
{
	static const struct {
		wms_breaker_mode mode;
		const char *name;
	} modes[] = {
		{ WMS_BREAKER_MODE_CONSECUTIVE, "breaker" },
		{ WMS_BREAKER_MODE_COUNT_BASED, "breaker_count_based" },
		{ WMS_BREAKER_MODE_TIME_BASED, "breaker_time_based" },
	};
	uint64_t iters = quick ? 200000 : 5000000, n_alloc = 0, calls = 0;
	char name[64];

	for (size_t m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
		for (int open = 0; open <= 1; open++) {
			double v[REPS];
			wms_breaker *b = make_breaker(modes[m].mode, open);
			breaker_run(b, open, iters / 10, &n_alloc); /* warm up */
			for (int r = 0; r < REPS; r++)
				v[r] = breaker_run(b, open, iters, &n_alloc);
			calls += iters / 10 + (uint64_t)REPS * iters;
			wms_breaker_free(b);
			snprintf(name, sizeof(name), "%s_%s_ns_per_call", modes[m].name,
				 open ? "open" : "closed");
			figure(name, median(v, REPS), 1);
			if (modes[m].mode == WMS_BREAKER_MODE_CONSECUTIVE) /* the one with a target */
				target(name, median(v, REPS), "<=", 50.0, NULL);
		}
	}
	printf("breaker_allocs_per_call %g\n", (double)n_alloc / (double)calls);
	target("breaker_allocs_per_call", (double)n_alloc / (double)calls, "<=", 0.0, NULL);
}

/* ---- the client's fail-fast path --------------------------------------- */

typedef struct null_transport {
	wms_transport parent;
	uint64_t sends;
} null_transport;

static wms_status null_send(wms_transport *self, const wms_http_request *req,
			    wms_http_response *resp, wms_error *err)
{
	(void)req;
	(void)resp;
	((null_transport *)self)->sends++;
	return wms_transport_fail(err, WMS_ERR_CONNECT, WMS_DELIVERY_NOT_SENT, "bench: no network");
}

static void null_free(wms_transport *self)
{
	wms__free(self);
}

static const wms_address bench_address = { "Bench Customer", "1 Loop Road", NULL, "Localhost",
					   NULL, "12345", "US" };

static double client_open_run(wms_client *c, const wms_order *order, uint64_t iters,
			      uint64_t *n_alloc)
{
	wms_submit_reply reply;
	wms_error err;
	uint64_t a0 = allocs(), t0 = now_ns(), i;

	for (i = 0; i < iters; i++)
		if (wms_submit_order(&reply, c, order, &err) != WMS_ERR_CIRCUIT_OPEN)
			die("an open client let a call through", err.message);
	*n_alloc += allocs() - a0;
	return (double)(now_ns() - t0) / (double)iters;
}

static void bench_client_open(void)
{
	wms_client_options opts = WMS_CLIENT_OPTIONS_INIT;
	wms_order_line line = { "SKU-1", 1 };
	wms_order order = WMS_ORDER_INIT;
	null_transport *t = wms__calloc(1, sizeof(*t));
	uint64_t iters = quick ? 100000 : 2000000, n_alloc = 0, calls = 0;
	wms_breaker_permit p;
	wms_client *c;
	wms_error err;
	double v[REPS];

	if (!t)
		die("out of memory", NULL);
	t->parent.version = WMS_TRANSPORT_VERSION;
	t->parent.send = null_send;
	t->parent.free = null_free;
	opts.endpoint = "http://127.0.0.1:1/wms";
	opts.transport = &t->parent;
	opts.breaker_options.failure_threshold = 1;
	opts.breaker_options.open_duration_ms = 3600000;
	if (wms_client_new(&c, &opts, &err) != WMS_OK)
		die("wms_client_new", err.message);
	order.order_id = "BENCH-1";
	order.ship_to = bench_address;
	order.lines = &line;
	order.line_count = 1;

	/* Trip it the way a failed call would, without depending on the network. */
	if (wms_breaker_acquire(&p, wms_client_breaker(c), NULL) != WMS_OK)
		die("cannot trip the client's breaker", NULL);
	wms_breaker_record(wms_client_breaker(c), &p, WMS_OUTCOME_FAILURE);
	client_open_run(c, &order, iters / 10, &n_alloc);
	for (int r = 0; r < REPS; r++)
		v[r] = client_open_run(c, &order, iters, &n_alloc);
	calls += iters / 10 + (uint64_t)REPS * iters;
	figure("client_circuit_open_ns_per_call", median(v, REPS), 1);
	target("client_circuit_open_ns_per_call", median(v, REPS), "<=", 200.0, NULL);

	wms_breaker_force_open(wms_client_breaker(c));
	for (int r = 0; r < REPS; r++)
		v[r] = client_open_run(c, &order, iters, &n_alloc);
	calls += (uint64_t)REPS * iters;
	figure("client_forced_open_ns_per_call", median(v, REPS), 1);
	printf("client_circuit_open_allocs_per_call %g\n", (double)n_alloc / (double)calls);
	target("client_circuit_open_allocs_per_call", (double)n_alloc / (double)calls, "<=", 0.0,
	       NULL);
	if (t->sends)
		die("the transport was called while the breaker was open", NULL);
	wms_client_free(c);
}

/* ---- envelopes --------------------------------------------------------- */

const char submit_reply[] =
	"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
	"<soap:Envelope xmlns:soap=\"http://schemas.xmlsoap.org/soap/envelope/\" "
	"xmlns:wh=\"urn:libwms:warehouse:1\"><soap:Body><wh:SubmitOrderResponse>"
	"<wh:clientOrderId>" BENCH_REPLY_ORDER_ID "</wh:clientOrderId>"
	"<wh:wmsReference>" BENCH_REPLY_REFERENCE "</wh:wmsReference>"
	"<wh:state>" BENCH_REPLY_STATE "</wh:state>"
	"<wh:duplicate>" BENCH_REPLY_DUPLICATE "</wh:duplicate>"
	"</wh:SubmitOrderResponse></soap:Body></soap:Envelope>\n";
const size_t submit_reply_len = sizeof(submit_reply) - 1;

bench_order bench_orders[NORDERS];

void make_orders(unsigned n)
{
	for (unsigned k = 0; k < NORDERS; k++) {
		bench_order *b = &bench_orders[k];
		snprintf(b->name, sizeof(b->name), "Bench Customer %02u", k);
		snprintf(b->line1, sizeof(b->line1), "%02u Loop Road", k);
		snprintf(b->city, sizeof(b->city), "Localhost%02u", k);
		snprintf(b->postal, sizeof(b->postal), "123%02u", k);
		for (unsigned i = 0; i < n; i++) {
			snprintf(b->skus[i], sizeof(b->skus[i]), "SKU-%02u-%04u", k, (i + 1) % 10000);
			b->lines[i].sku = b->skus[i];
			b->lines[i].quantity = (uint32_t)((i + k) % 7 + 1);
		}
		b->order = (wms_order)WMS_ORDER_INIT;
		b->order.order_id = BENCH_REPLY_ORDER_ID;
		b->order.ship_to = bench_address;
		b->order.ship_to.name = b->name;
		b->order.ship_to.line1 = b->line1;
		b->order.ship_to.city = b->city;
		b->order.ship_to.postal_code = b->postal;
		b->order.lines = b->lines;
		b->order.line_count = n;
	}
}

/* µs per build (what = 1), parse (2) or both (3), through a workspace as the
 * client does (ws), or each from scratch (ws NULL). With sleep_us, the
 * thread sleeps that long before each one and only the work is timed: the
 * work as a caller meets it after waiting on a reply, its caches left to
 * whatever else the CPU did meanwhile. */
static double envelope_run(wms__xml_ws *ws, int what, uint64_t iters, unsigned sleep_us)
{
	const struct timespec nap = { 0, (long)sleep_us * 1000 };
	wms_submit_reply reply;
	wms_error err;
	uint64_t t0 = now_ns(), asleep = 0;

	for (uint64_t i = 0; i < iters; i++) {
		if (sleep_us) {
			uint64_t s0 = now_ns();
			nanosleep(&nap, NULL);
			asleep += now_ns() - s0;
		}
		if (what & 1) {
			const wms_order *order = &bench_orders[i % NORDERS].order;
			wms__request r = { WMS__OP_SUBMIT_ORDER, order, NULL, NULL, NULL, 0 };
			wms__buf body = { 0 };
			if (wms__build_request_ws(ws, &body, WMS_SOAP_11, &r, NULL, &err) != WMS_OK)
				die("wms__build_request_ws", err.message);
			wms__buf_free(&body);
		}
		if ((what & 2) &&
		    wms__parse_reply_ws(ws, WMS__OP_SUBMIT_ORDER, &reply, submit_reply,
					submit_reply_len, "text/xml; charset=utf-8",
					WMS_DEFAULT_MAX_REPLY_BYTES, 0, &err) != WMS_OK)
			die("wms__parse_reply_ws", err.message);
	}
	return (double)(now_ns() - t0 - asleep) / (double)iters / 1000.0;
}

/* Sleep before each build and parse in the after-sleep figures: about a
 * loopback round trip's wait. */
#define ENVELOPE_SLEEP_US 30

static void bench_envelopes(void)
{
	static const struct {
		unsigned lines;
		int what;
		const char *name;
	} runs[] = {
		{ 1, 1, "envelope_build_1_line" },
		{ 50, 1, "envelope_build_50_lines" },
		{ 1, 2, "reply_parse" },
		{ 1, 3, "envelope_build_parse_1_line" },
		{ 50, 3, "envelope_build_parse_50_lines" },
	};
	char name[64];

	for (size_t k = 0; k < sizeof(runs) / sizeof(runs[0]); k++) {
		uint64_t iters = (quick ? 2000 : 20000) / (runs[k].lines > 1 ? 10 : 1);
		make_orders(runs[k].lines);
		/* fresh: each from scratch; then reused: one workspace, as a client */
		for (int reuse = 0; reuse < 2; reuse++) {
			wms__xml_ws ws = { NULL, NULL };
			double v[REPS];
			envelope_run(reuse ? &ws : NULL, runs[k].what, iters / 10 + 1, 0);
			for (int r = 0; r < REPS; r++)
				v[r] = envelope_run(reuse ? &ws : NULL, runs[k].what, iters, 0);
			snprintf(name, sizeof(name), "%s_%s_us", runs[k].name,
				 reuse ? "reused" : "fresh");
			figure(name, median(v, REPS), 2);
			/* the same through the workspace, each after a sleep */
			if (reuse && runs[k].lines == 1) {
				for (int r = 0; r < REPS; r++)
					v[r] = envelope_run(&ws, runs[k].what, iters / 10,
							    ENVELOPE_SLEEP_US);
				snprintf(name, sizeof(name), "%s_reused_after_sleep_us",
					 runs[k].name);
				figure(name, median(v, REPS), 2);
			}
			wms__parse_ws_free(ws.parse);
			wms__build_ws_free(ws.build);
		}
	}
}

/* ---- end to end -------------------------------------------------------- */

static size_t sink(char *data, size_t size, size_t n, void *ctx)
{
	wms__buf *b = ctx;
	return wms__buf_append(b, data, size * n) == WMS_OK ? size * n : 0;
}

/* One easy handle, the request libwms would send, byte for byte (its
 * correlation id is one of the same length: libwms numbers its calls). */
void raw_curl_init(raw_curl *rc, const char *url, const wms__buf *body)
{
	static const char *const headers[] = {
		"Content-Type: text/xml; charset=utf-8",
		"SOAPAction: \"urn:libwms:warehouse:1/SubmitOrder\"",
		"Expect:",
		"Accept: text/xml, application/soap+xml",
		"X-Correlation-Id: wms-00000000-000001",
	};

	memset(rc, 0, sizeof(*rc));
	rc->easy = curl_easy_init();
	if (!rc->easy)
		die("curl_easy_init", NULL);
	for (size_t i = 0; i < sizeof(headers) / sizeof(headers[0]); i++) {
		struct curl_slist *l = curl_slist_append(rc->headers, headers[i]);
		if (!l)
			die("curl_slist_append", NULL);
		rc->headers = l;
	}
	curl_easy_setopt(rc->easy, CURLOPT_URL, url);
	curl_easy_setopt(rc->easy, CURLOPT_HTTPHEADER, rc->headers);
	curl_easy_setopt(rc->easy, CURLOPT_POSTFIELDS, body->data);
	curl_easy_setopt(rc->easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body->len);
	curl_easy_setopt(rc->easy, CURLOPT_USERAGENT, "libwms/" WMS_VERSION);
	curl_easy_setopt(rc->easy, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(rc->easy, CURLOPT_CONNECTTIMEOUT_MS, (long)WMS_DEFAULT_CONNECT_TIMEOUT_MS);
	curl_easy_setopt(rc->easy, CURLOPT_TIMEOUT_MS, (long)WMS_DEFAULT_TIMEOUT_MS);
	curl_easy_setopt(rc->easy, CURLOPT_WRITEFUNCTION, sink);
	curl_easy_setopt(rc->easy, CURLOPT_WRITEDATA, &rc->reply);
}

void raw_curl_free(raw_curl *rc)
{
	curl_easy_cleanup(rc->easy);
	curl_slist_free_all(rc->headers);
	wms__buf_free(&rc->reply);
}

void raw_curl_call(raw_curl *rc)
{
	long code = 0;
	CURLcode cc;

	rc->reply.len = 0;
	cc = curl_easy_perform(rc->easy);
	if (cc != CURLE_OK)
		die("raw curl", curl_easy_strerror(cc));
	curl_easy_getinfo(rc->easy, CURLINFO_RESPONSE_CODE, &code);
	if (code != 200 || rc->reply.len != submit_reply_len)
		die("raw curl: unexpected reply", NULL);
}

/* A "VmRSS:" / "VmHWM:" line of /proc/self/status, in kB; -1 if absent. */
long status_kb(const char *field)
{
	FILE *f = fopen("/proc/self/status", "r");
	size_t n = strlen(field);
	char line[256];
	long v = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, field, n) == 0) {
			v = strtol(line + n, NULL, 10);
			break;
		}
	fclose(f);
	return v;
}

void target(const char *name, double v, const char *op, double limit, const char *what)
{
	int met = op[0] == '>' ? v >= limit : v <= limit;
	printf("target_%s %.3f %s %.3f%s%s %s\n", name, v, op, limit, what ? " " : "",
	       what ? what : "", met ? "met" : "NOT met");
}

uint64_t thread_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Raw libcurl plus the XML work libwms does around the same call (build
 * the next order's envelope, parse the reply, through one workspace as a
 * client does): what the ratio would be if the rest of libwms cost nothing. */
static void raw_curl_call_with_xml(raw_curl *rc, wms__xml_ws *ws, const wms_order *order)
{
	wms__request r = { WMS__OP_SUBMIT_ORDER, order, NULL, NULL, NULL, 0 };
	wms_submit_reply reply;
	wms__buf body = { 0 };
	wms_error err;

	if (wms__build_request_ws(ws, &body, WMS_SOAP_11, &r, NULL, &err) != WMS_OK)
		die("wms__build_request_ws", err.message);
	wms__buf_free(&body); /* raw curl posts its own copy of the same bytes */
	raw_curl_call(rc);
	if (wms__parse_reply_ws(ws, WMS__OP_SUBMIT_ORDER, &reply, rc->reply.data, rc->reply.len,
				"text/xml; charset=utf-8", WMS_DEFAULT_MAX_REPLY_BYTES, 0, &err) != WMS_OK)
		die("wms__parse_reply_ws", err.message);
}

/* Calls per second over `ms` milliseconds: libwms (who = 0), raw curl (1)
 * or raw curl with libwms's XML work (2). *cpu_us gets this thread's CPU
 * time per call: what the caller pays, and less disturbed by other
 * processes than the wall clock. */
static wms__xml_ws raw_xml_ws; /* raw_curl_call_with_xml's, freed by bench_e2e */

static double e2e_run(int who, wms_client *c, raw_curl *rc, uint64_t ms, double *cpu_us)
{
	uint64_t t0 = now_ns(), cpu0 = thread_cpu_ns(), end = t0 + ms * 1000000u, n = 0, t;
	wms_submit_reply reply;
	wms_error err;

	do {
		for (int i = 0; i < 16; i++) {
			if (who == 0) {
				const wms_order *order = &bench_orders[(n + (uint64_t)i) % NORDERS].order;
				if (wms_submit_order(&reply, c, order, &err) != WMS_OK)
					die("wms_submit_order", err.message);
			} else if (who == 1) {
				raw_curl_call(rc);
			} else {
				raw_curl_call_with_xml(rc, &raw_xml_ws,
						       &bench_orders[(n + (uint64_t)i) % NORDERS].order);
			}
		}
		n += 16;
		t = now_ns();
	} while (t < end);
	*cpu_us = (double)(thread_cpu_ns() - cpu0) / (double)n / 1000.0;
	return (double)n * 1e9 / (double)(t - t0);
}

/* Pin the calling thread to `cpu` (-1: back to `saved`); threads it starts
 * afterwards inherit the mask. */
static int pin_to(int cpu, const cpu_set_t *saved)
{
	cpu_set_t set;
	if (cpu < 0)
		return pthread_setaffinity_np(pthread_self(), sizeof(*saved), saved);
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

/*
 * libwms and raw libcurl against one server, the server's thread pinned to
 * server_cpu and the callers to client_cpu. Where the two sit decides what
 * a loopback round trip costs (on this VM a wake-up across CPUs costs far
 * more than one on the same CPU), and so how much libwms's own work weighs
 * in the ratio: both placements are measured and reported, and a third
 * run with no pinning at all (CPU -1: wherever the scheduler puts them),
 * which is what a service gets by default.
 */
static void e2e_placement(const char *tag, int server_cpu, int client_cpu, const cpu_set_t *saved)
{
	wms_client_options opts = WMS_CLIENT_OPTIONS_INIT;
	/* Many short rounds: a pair run 50 ms apart sees the same machine. */
	int rounds = quick ? 10 : 40;
	uint64_t round_ms = 50;
	double wms_rate[40], raw_rate[40], ratio[40], xml_ratio[40], wms_cpu[40], raw_cpu[40], cpu;
	wms__buf body = { 0 };
	bench_server *srv;
	wms_client *c;
	raw_curl rc;
	wms_error err;
	char url[64], name[64];

	if (pin_to(server_cpu, saved) != 0)
		die("cannot pin the server thread", tag);
	/* one server thread for both callers (bench_server.c says why) */
	srv = bench_server_start_one_thread(submit_reply, submit_reply_len);
	if (!srv)
		die("cannot start the libmicrohttpd server on 127.0.0.1", NULL);
	if (pin_to(client_cpu, saved) != 0)
		die("cannot pin the calling thread", tag);
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/wms", (unsigned)bench_server_port(srv));
	opts.endpoint = url;
	if (wms_client_new(&c, &opts, &err) != WMS_OK)
		die("wms_client_new", err.message);
	make_orders(1);
	if (wms__build_submit_order(&body, WMS_SOAP_11, &bench_orders[0].order, &err) != WMS_OK)
		die("wms__build_submit_order", err.message);
	raw_curl_init(&rc, url, &body);

	e2e_run(0, c, &rc, 100, &cpu); /* warm up: connections, caches */
	e2e_run(1, c, &rc, 100, &cpu);
	/* Interleaved, alternating which goes first: this machine is noisy. */
	for (int r = 0; r < rounds; r++) {
		if (r % 2 == 0) {
			wms_rate[r] = e2e_run(0, c, &rc, round_ms, &wms_cpu[r]);
			raw_rate[r] = e2e_run(1, c, &rc, round_ms, &raw_cpu[r]);
		} else {
			raw_rate[r] = e2e_run(1, c, &rc, round_ms, &raw_cpu[r]);
			wms_rate[r] = e2e_run(0, c, &rc, round_ms, &wms_cpu[r]);
		}
		ratio[r] = wms_rate[r] / raw_rate[r];
	}
	/* Then raw libcurl with libwms's XML work against raw libcurl, the same
	 * way: how much of the gap the XML work is. */
	for (int r = 0; r < rounds; r++) {
		double xml_rate, plain_rate;
		if (r % 2 == 0) {
			xml_rate = e2e_run(2, c, &rc, round_ms, &cpu);
			plain_rate = e2e_run(1, c, &rc, round_ms, &cpu);
		} else {
			plain_rate = e2e_run(1, c, &rc, round_ms, &cpu);
			xml_rate = e2e_run(2, c, &rc, round_ms, &cpu);
		}
		xml_ratio[r] = xml_rate / plain_rate;
	}
#define E2E_FIGURE(what, v, d) \
	(snprintf(name, sizeof(name), "e2e_%s_%s", what, tag), figure(name, v, d))
	E2E_FIGURE("wms_calls_per_s", median(wms_rate, rounds), 0);
	E2E_FIGURE("raw_curl_calls_per_s", median(raw_rate, rounds), 0);
	E2E_FIGURE("ratio_vs_raw_curl", median(ratio, rounds), 3);
	E2E_FIGURE("wms_caller_cpu_us_per_call", median(wms_cpu, rounds), 2);
	E2E_FIGURE("raw_curl_caller_cpu_us_per_call", median(raw_cpu, rounds), 2);
	E2E_FIGURE("raw_curl_with_libwms_xml_ratio_vs_raw_curl", median(xml_ratio, rounds), 3);
#undef E2E_FIGURE
	printf("# e2e %s: server on CPU %d, callers on CPU %d (-1: not pinned); %d rounds of %llu ms "
	       "each side; the server saw %llu requests on %llu connections (keep-alive)\n",
	       tag, server_cpu, client_cpu, rounds, (unsigned long long)round_ms,
	       (unsigned long long)bench_server_requests(srv),
	       (unsigned long long)bench_server_connections(srv));
	raw_curl_free(&rc);
	wms__buf_free(&body);
	wms_client_free(c);
	bench_server_stop(srv);
	pin_to(-1, saved);
}

void bench_two_cpus(cpu_set_t *saved, int *first, int *second)
{
	*first = *second = -1;
	if (pthread_getaffinity_np(pthread_self(), sizeof(*saved), saved) != 0)
		die("pthread_getaffinity_np", NULL);
	for (int i = 0; i < CPU_SETSIZE && *second < 0; i++)
		if (CPU_ISSET(i, saved)) {
			if (*first < 0)
				*first = i;
			else
				*second = i;
		}
}

static void bench_e2e(void)
{
	cpu_set_t saved;
	int first, second;

	bench_two_cpus(&saved, &first, &second);
	if (second >= 0)
		e2e_placement("2cpu", second, first, &saved);
	else
		printf("# e2e 2cpu: skipped, this process may run on one CPU only\n");
	e2e_placement("1cpu", first, first, &saved);
	e2e_placement("unpinned", -1, -1, &saved);
	wms__parse_ws_free(raw_xml_ws.parse);
	wms__build_ws_free(raw_xml_ws.build);
}

int main(int argc, char **argv)
{
	static const wms_allocator counting = { count_malloc, count_realloc, count_free, NULL };
	static const struct {
		const char *name;
		void (*run)(void);
	} groups[] = {
		{ "breaker", bench_breakers },
		{ "client", bench_client_open },
		{ "envelope", bench_envelopes },
		{ "e2e", bench_e2e },
		{ "shared", bench_shared },
		{ "peers", bench_peers },
		{ "memory", bench_memory },
		{ "scale", bench_scale },
	};
	const char *only = NULL;
	int found = 0;

	/* the scale group's own processes (this binary again): a client
	 * configuration, or the delayed server */
	if (argc >= 2 && strcmp(argv[1], "--scale-worker") == 0)
		return bench_scale_worker(argc - 2, argv + 2);
	if (argc >= 2 && strcmp(argv[1], "--scale-server") == 0)
		return bench_scale_server(argc - 2, argv + 2);
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--quick") == 0) {
			quick = 1;
		} else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc) {
			only = argv[++i];
		} else if (strcmp(argv[i], "--delay-ms") == 0 && i + 1 < argc) {
			char *end;
			unsigned long v = strtoul(argv[++i], &end, 10);
			if (*end || v < 1 || v > 10000) {
				fprintf(stderr, "bench: --delay-ms takes 1..10000\n");
				return 2;
			}
			scale_delay_ms = (unsigned)v;
		} else {
			fprintf(stderr, "usage: %s [--quick] "
				"[--only breaker|client|envelope|e2e|shared|peers|memory|scale] "
				"[--delay-ms MS (scale)]\n", argv[0]);
			return 2;
		}
	}
	for (size_t g = 0; only && g < sizeof(groups) / sizeof(groups[0]); g++)
		found |= strcmp(only, groups[g].name) == 0;
	if (only && !found) {
		fprintf(stderr, "bench: no group '%s'\n", only);
		return 2;
	}
	/* Before any object exists, as wms/sys/alloc.h asks. */
	if (wms_set_allocator(&counting) != WMS_OK)
		die("wms_set_allocator", NULL);
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		die("curl_global_init", NULL);
	wms__xml_init();

	printf("# libwms %s bench: each figure is the median of %d runs%s\n", wms_version(), REPS,
	       quick ? " (--quick: short runs)" : "");
	for (size_t g = 0; g < sizeof(groups) / sizeof(groups[0]); g++) {
		if (only && strcmp(only, groups[g].name) != 0)
			continue;
		groups[g].run();
	}
	curl_global_cleanup();
	return 0;
}
