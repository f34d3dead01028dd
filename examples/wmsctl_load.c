/*
 * wmsctl load: a measured series of SubmitOrder calls through one client,
 * so one breaker sees them all, as a service's would. Every call becomes a
 * JSON line; the breaker's transitions come from its on_state_change hook.
 * One call at a time (blocking calls), or with --concurrency N up to N in
 * flight at once, all from this one thread (wms/async.h on libwms's own
 * poll loop): the same schedule, lines and summary either way.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include "wmsctl.h"
#include "example_common.h"

#define STATUS_SLOTS 64 /* more than wms_status will ever have; the last one collects strays */

typedef struct transition {
	uint64_t time_ns;
	wms_breaker_state from;
	wms_breaker_state to;
	const char *reason; /* static text (wms/breaker.h) */
} transition;

typedef struct load_run {
	uint64_t t0_ns;
	transition *tr;
	size_t n_tr, cap_tr, lost_tr;
	uint64_t by_status[STATUS_SLOTS];
	uint64_t calls, ok, failed, rejected;
	uint64_t waiting_ns;
	wms_breaker *breaker; /* read after each call for its line */
	FILE *call_log;       /* --call-log, or NULL */
	/* --concurrency (0: one blocking call at a time) */
	uint32_t concurrency;
	size_t max_in_flight; /* the most calls in flight at once */
	long threads;         /* the most threads the process had when looked at; -1: unknown */
} load_run;

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

static void catch_signal(int sig, const struct sigaction *sa)
{
	struct sigaction old;

	if (sigaction(sig, NULL, &old) == 0 && old.sa_handler != SIG_IGN)
		sigaction(sig, sa, NULL);
}

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t ms_since(uint64_t t, uint64_t t0)
{
	return t > t0 ? (t - t0) / 1000000u : 0;
}

/* The breaker calls this on the calling thread, outside its lock. */
static void on_state_change(const wms_breaker_event *ev, void *ctx)
{
	load_run *run = ctx;

	if (run->n_tr == run->cap_tr) {
		size_t cap = run->cap_tr ? run->cap_tr * 2 : 16;
		transition *p = realloc(run->tr, cap * sizeof(*p));
		if (!p) {
			run->lost_tr++;
			return;
		}
		run->tr = p;
		run->cap_tr = cap;
	}
	run->tr[run->n_tr].time_ns = ev->time_ns;
	run->tr[run->n_tr].from = ev->from;
	run->tr[run->n_tr].to = ev->to;
	run->tr[run->n_tr].reason = ev->reason ? ev->reason : "";
	run->n_tr++;
}

/* Sleep until `target` on the monotonic clock; a signal ends the wait. */
static void sleep_until(uint64_t target)
{
	struct timespec ts;

	ts.tv_sec = (time_t)(target / 1000000000u);
	ts.tv_nsec = (long)(target % 1000000000u);
	while (!stop_requested && clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

static void print_call(uint32_t seq, uint64_t t_ms, wms_status st, const wms_error *err,
		       wms_breaker_state breaker, double latency_ms)
{
	printf("{\"seq\":%" PRIu32 ",\"t_ms\":%" PRIu64 ",\"status\":\"%s\",\"delivery\":\"%s\","
	       "\"breaker\":\"%s\",\"latency_ms\":%.2f",
	       seq, t_ms, wms_status_name(st), wms_delivery_name(err->delivery),
	       wms_breaker_state_name(breaker), latency_ms);
	/* A successful call's line is exactly the six fields; failures say why. */
	if (st != WMS_OK) {
		fputs(",\"message\":", stdout);
		ctl_put_json(stdout, err->message[0] ? err->message : wms_strerror(st));
		if (st == WMS_ERR_CIRCUIT_OPEN)
			printf(",\"retry_after_ms\":%" PRIu32, err->retry_after_ms);
		if (err->fault_code[0]) {
			fputs(",\"fault_code\":", stdout);
			ctl_put_json(stdout, err->fault_code);
		}
		if (err->wms_code[0]) {
			fputs(",\"wms_code\":", stdout);
			ctl_put_json(stdout, err->wms_code);
		}
		if (err->http_status)
			printf(",\"http_status\":%ld", err->http_status);
	}
	fputs("}\n", stdout);
	fflush(stdout); /* one line per call, as it happens: `| tail -f`, `| jq` */
}

/* One call that has ended, however it was made: counted, printed as its
 * JSON line, written to the call log. */
static void record_call(load_run *run, uint32_t seq, uint64_t start, uint64_t end, wms_status st,
			const wms_error *err)
{
	const char *outcome;

	run->calls++;
	run->by_status[(unsigned)st < STATUS_SLOTS - 1 ? (unsigned)st : STATUS_SLOTS - 1]++;
	if (st == WMS_OK)
		run->ok++;
	else if (st == WMS_ERR_CIRCUIT_OPEN)
		run->rejected++;
	else
		run->failed++;
	print_call(seq, ms_since(start, run->t0_ns), st, err, wms_breaker_state_get(run->breaker),
		   (double)(end - start) / 1e6);
	outcome = ctl_breaker_outcome(st, err);
	if (run->call_log && outcome)
		fprintf(run->call_log, "%" PRIu64 ",%s,%.2f\n", ms_since(start, run->t0_ns), outcome,
			(double)(end - start) / 1e6);
}

/* When call `seq` is due on the fixed schedule (saturating). */
static uint64_t due_ns(const load_run *run, uint32_t seq, uint32_t interval_ms)
{
	uint64_t offset_ms = (uint64_t)(seq - 1) * interval_ms;

	return offset_ms > (UINT64_MAX - run->t0_ns) / 1000000u ? UINT64_MAX
								 : run->t0_ns + offset_ms * 1000000u;
}

static void print_summary(const load_run *run, uint64_t end_ns, wms_breaker *breaker)
{
	wms_breaker_snapshot snap;

	int first = 1;

	printf("{\"summary\":{\"calls\":%" PRIu64 ",\"ok\":%" PRIu64 ",\"failed\":%" PRIu64
	       ",\"rejected\":%" PRIu64 ",\"by_status\":{",
	       run->calls, run->ok, run->failed, run->rejected);
	for (int i = 0; i < STATUS_SLOTS; i++) {
		if (!run->by_status[i])
			continue;
		printf("%s\"%s\":%" PRIu64, first ? "" : ",",
		       i == STATUS_SLOTS - 1 ? "UNKNOWN_STATUS" : wms_status_name((wms_status)i),
		       run->by_status[i]);
		first = 0;
	}
	fputs("},\"transitions\":[", stdout);
	for (size_t i = 0; i < run->n_tr; i++) {
		const transition *t = &run->tr[i];
		printf("%s{\"t_ms\":%" PRIu64 ",\"from\":\"%s\",\"to\":\"%s\",\"reason\":",
		       i ? "," : "", ms_since(t->time_ns, run->t0_ns),
		       wms_breaker_state_name(t->from), wms_breaker_state_name(t->to));
		ctl_put_json(stdout, t->reason);
		fputc('}', stdout);
	}
	printf("],\"wall_ms\":%" PRIu64 ",\"time_waiting_ms\":%" PRIu64,
	       ms_since(end_ns, run->t0_ns), run->waiting_ns / 1000000u);
	if (run->concurrency) {
		printf(",\"concurrency\":%" PRIu32 ",\"max_in_flight\":%zu,\"threads\":",
		       run->concurrency, run->max_in_flight);
		if (run->threads > 0)
			printf("%ld", run->threads);
		else
			fputs("null", stdout);
	}
	if (run->lost_tr)
		printf(",\"transitions_lost\":%zu", run->lost_tr);
	/* a shared breaker (the SLA file's circuit_breaker.shared): its store at the end */
	wms_breaker_snapshot_get(&snap, breaker);
	if (snap.store_state != WMS_STORE_STATE_NONE)
		printf(",\"store\":\"%s\"", wms_store_state_name(snap.store_state));
	if (stop_requested)
		fputs(",\"interrupted\":true", stdout);
	fputs("}}\n", stdout);
}

/* Call `seq`'s order id, PREFIX-SEQ, into id (WMS_ID_MAX + 1 bytes). */
static void order_id(char *id, const ctl_config *cfg, const char *prefix, uint32_t seq)
{
	snprintf(id, WMS_ID_MAX + 1, "%s-%" PRIu32, cfg->order_prefix ? cfg->order_prefix : prefix,
		 seq);
}

/* One blocking call at a time, each started when it is due (or at once
 * when the one before ended late). */
static void run_blocking(load_run *run, const ctl_config *cfg, wms_client *client,
			 const wms_order *order, char *id, const char *prefix)
{
	run->t0_ns = mono_ns();
	for (uint32_t seq = 1; seq <= cfg->count && !stop_requested; seq++) {
		uint64_t target = due_ns(run, seq, cfg->interval_ms);
		uint64_t start = mono_ns(), end;
		wms_error err;
		wms_status st;

		if (target > start) {
			sleep_until(target);
			end = mono_ns();
			run->waiting_ns += end - start;
			start = end;
			if (stop_requested)
				break;
		}
		order_id(id, cfg, prefix, seq);
		st = wms_submit_order(NULL, client, order, &err);
		end = mono_ns();
		record_call(run, seq, start, end, st, &err);
	}
}

/* ---- --concurrency: many calls in flight from this one thread ------------ */

struct flight;

/* One call in flight: what its line needs when it completes. */
typedef struct slot {
	struct flight *fl;
	uint32_t seq;
	uint64_t start_ns;
	struct slot *next_free;
} slot;

typedef struct flight {
	load_run *run;
	slot *slots; /* --concurrency of them */
	slot *free;  /* those not in flight */
} flight;

static void note_threads(load_run *run)
{
	long n = ex_threads_now();

	if (n > run->threads)
		run->threads = n;
}

/* A socket per call in flight: let the process open that many, if it may. */
static void raise_fd_limit(uint32_t calls)
{
	struct rlimit r;
	rlim_t want = (rlim_t)calls + 64;

	if (getrlimit(RLIMIT_NOFILE, &r) != 0 || r.rlim_cur == RLIM_INFINITY || r.rlim_cur >= want)
		return;
	r.rlim_cur = r.rlim_max != RLIM_INFINITY && r.rlim_max < want ? r.rlim_max : want;
	setrlimit(RLIMIT_NOFILE, &r);
}

/* The completion callback (on this thread, from inside libwms's loop, or
 * from wms_async_submit_order itself for a call refused at once). */
static void on_done(wms_status st, const wms_submit_reply *reply, const wms_error *err,
		    void *payload)
{
	slot *sl = payload;

	(void)reply;
	record_call(sl->fl->run, sl->seq, sl->start_ns, mono_ns(), st, err);
	sl->next_free = sl->fl->free;
	sl->fl->free = sl;
}

/* The schedule of the blocking path, with up to cfg->concurrency calls in
 * flight: a call starts when it is due and a slot is free. Returns an exit
 * code; every call started has completed (or was cancelled) on return. */
static int run_concurrent(load_run *run, const ctl_config *cfg, wms_client *client,
			  wms_order *order, char *id, const char *prefix)
{
	wms_async_options ao = WMS_ASYNC_OPTIONS_INIT;
	wms_async *async = NULL;
	flight fl;
	uint64_t looked = 0;
	uint32_t seq = 1;
	wms_error err;
	wms_status st;
	int rc = CTL_EXIT_OK;

	fl.slots = calloc(cfg->concurrency, sizeof(*fl.slots));
	if (!fl.slots) {
		fputs("wmsctl: load: out of memory\n", stderr);
		return CTL_EXIT_INTERNAL;
	}
	fl.run = run;
	fl.free = NULL;
	for (uint32_t i = cfg->concurrency; i-- > 0;) {
		fl.slots[i].fl = &fl;
		fl.slots[i].next_free = fl.free;
		fl.free = &fl.slots[i];
	}
	raise_fd_limit(cfg->concurrency);
	ao.max_in_flight = cfg->concurrency; /* never reached past: a call starts in a free slot */
	st = wms_async_new(&async, client, &ao, &err);
	if (st != WMS_OK) {
		ctl_print_error(cfg->command, st, &err);
		free(fl.slots);
		return CTL_EXIT_INTERNAL;
	}
	run->threads = ex_threads_now();
	run->t0_ns = mono_ns();
	while (!stop_requested) {
		uint64_t now = mono_ns(), target = 0, before;
		int timeout_ms = -1;

		/* start every call that is due and has a slot */
		while (seq <= cfg->count && fl.free && !stop_requested &&
		       (target = due_ns(run, seq, cfg->interval_ms)) <= now) {
			slot *sl = fl.free;
			fl.free = sl->next_free;
			sl->seq = seq;
			order_id(id, cfg, prefix, seq);
			sl->start_ns = mono_ns();
			/* the order is copied: id is free for the next one on return */
			st = wms_async_submit_order(NULL, async, order, on_done, sl);
			if (st != WMS_OK) { /* only for a NULL context or callback */
				fprintf(stderr, "wmsctl: load: cannot start a call: %s\n",
					wms_strerror(st));
				rc = CTL_EXIT_INTERNAL;
				goto out;
			}
			seq++;
			if (wms_async_in_flight(async) > run->max_in_flight)
				run->max_in_flight = wms_async_in_flight(async);
			now = mono_ns();
		}
		if (now - looked >= 20000000u) { /* every 20 ms or so */
			note_threads(run);
			looked = now;
		}
		if ((seq > cfg->count && !wms_async_in_flight(async)) || stop_requested)
			break;
		/* a free slot and a call to come: the schedule holds it back */
		if (seq <= cfg->count && fl.free) {
			uint64_t left = (target - now + 999999u) / 1000000u;
			timeout_ms = left > INT_MAX ? INT_MAX : (int)left;
		}
		before = mono_ns();
		st = wms_async_poll(async, timeout_ms); /* a signal ends the wait */
		if (timeout_ms >= 0)
			run->waiting_ns += mono_ns() - before;
		if (st != WMS_OK) {
			fprintf(stderr, "wmsctl: load: the event loop failed: %s\n", wms_strerror(st));
			rc = CTL_EXIT_INTERNAL;
			goto out;
		}
	}
out:
	/* Ctrl-C, SIGTERM or a failure: the calls still in flight end now,
	 * CANCELLED (their lines say whether the WMS may have them) */
	wms_async_cancel_all(async);
	note_threads(run);
	wms_async_free(async);
	free(fl.slots);
	return rc;
}

/* --health-listen: served from before the first call until after the summary,
 * so that a breaker opening can be watched with curl. */
static int start_health(wms_health_server **out, wms_client *client, const char *listen_addr)
{
	const char *colon = strrchr(listen_addr, ':');
	wms_error err;
	wms_status st;

	st = wms_health_server_start(out, &client, 1, listen_addr, NULL, &err);
	if (st != WMS_OK) {
		fputs("wmsctl: load: --health-listen: ", stderr);
		ctl_put_safe(stderr, err.message[0] ? err.message : wms_strerror(st));
		fputc('\n', stderr);
		/* a malformed or unbindable address is the caller's; nothing was sent */
		return st == WMS_ERR_INVALID_ARG ? CTL_EXIT_USAGE : CTL_EXIT_INTERNAL;
	}
	fprintf(stderr, "health endpoint: http://%.*s:%u/health and /metrics\n",
		(int)(colon - listen_addr), listen_addr, (unsigned)wms_health_server_port(*out));
	return CTL_EXIT_OK;
}

int ctl_run_load(const ctl_config *cfg)
{
	wms_breaker_options bo = WMS_BREAKER_OPTIONS_INIT;
	wms_order order = WMS_ORDER_INIT;
	wms_order_line default_line = { "SKU-1", 1 }; /* in wms-sim's catalogue */
	wms_order_line *lines = NULL;
	wms_client *client = NULL;
	wms_health_server *health = NULL;
	wms_breaker *breaker;
	FILE *call_log = NULL;
	char prefix[32], id[WMS_ID_MAX + 1];
	struct sigaction sa;
	load_run run;
	int rc;

	memset(&run, 0, sizeof(run));
	if (cfg->call_log) {
		call_log = fopen(cfg->call_log, "w");
		if (!call_log) {
			fprintf(stderr, "wmsctl: load: --call-log %s: %s\n", cfg->call_log,
				strerror(errno));
			rc = CTL_EXIT_USAGE;
			goto done;
		}
	}
	run.call_log = call_log;
	bo.name = "wmsctl-load"; /* the SLA file's name, if it has one, wins */
	bo.callbacks.on_state_change = on_state_change;
	bo.callbacks.payload = &run;
	rc = ctl_make_client(&client, cfg, &bo);
	if (rc != CTL_EXIT_OK)
		goto done;
	breaker = wms_client_breaker(client);
	run.breaker = breaker;

	if (cfg->sku_count) {
		lines = calloc(cfg->sku_count, sizeof(*lines));
		if (!lines) {
			fputs("wmsctl: load: out of memory\n", stderr);
			rc = CTL_EXIT_INTERNAL;
			goto done;
		}
	}
	ctl_fill_order(&order, lines, cfg);
	if (!cfg->sku_count) {
		order.lines = &default_line;
		order.line_count = 1;
	}
	if (cfg->health_listen) {
		rc = start_health(&health, client, cfg->health_listen);
		if (rc != CTL_EXIT_OK)
			goto done;
	}
	snprintf(prefix, sizeof(prefix), "load-%ld", (long)getpid());
	order.order_id = id;

	/* Ctrl-C or SIGTERM ends the run early, still with a summary (a signal
	 * the caller ignores, as for `cmd &` in a script, stays ignored). */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	catch_signal(SIGINT, &sa);
	catch_signal(SIGTERM, &sa);

	if (cfg->concurrency) {
		run.concurrency = cfg->concurrency;
		rc = run_concurrent(&run, cfg, client, &order, id, prefix);
		if (rc != CTL_EXIT_OK)
			goto done;
	} else {
		run_blocking(&run, cfg, client, &order, id, prefix);
	}
	print_summary(&run, mono_ns(), breaker);
	if (run.lost_tr)
		fprintf(stderr, "wmsctl: load: out of memory: %zu breaker transitions not listed\n",
			run.lost_tr);
	rc = CTL_EXIT_OK;
	if (fflush(stdout) != 0 || ferror(stdout)) {
		perror("wmsctl: load: writing the output");
		rc = CTL_EXIT_INTERNAL;
	}
done:
	if (call_log) {
		int bad = ferror(call_log);
		if (fclose(call_log) != 0 || bad) {
			fprintf(stderr, "wmsctl: load: --call-log %s: write failed\n",
				cfg->call_log);
			rc = CTL_EXIT_INTERNAL;
		}
	}
	wms_health_server_stop(health); /* before the client whose breakers it reads */
	wms_client_free(client);
	free(lines);
	free(run.tr);
	return rc;
}
