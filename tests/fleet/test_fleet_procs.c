/*
 * The fleet in real processes (issue 13): N processes x M threads against
 * a failing simulator, one breaker shared through one redis-server.
 *
 *   - one OPEN for the fleet: the WMS sees at most threshold + in-flight
 *     failures (a breaker per process would let N x threshold through),
 *     and every process is refused with CIRCUIT_OPEN;
 *   - no lost count updates: with a threshold never reached, the shared
 *     count ends at exactly the number of failures the WMS returned.
 *
 * The parent starts redis-server (unix socket, stopped by its PID) and
 * forks the children while it is still single-threaded; it then starts
 * the embedded wms-sim (its threads exist in the parent only) and hands
 * each child the sim's URL through a pipe. A child uses nothing but
 * libwms (no cmocka: it reports through its pipe and _exits). Every wait
 * is bounded (poll on the pipes); a child that is late is killed by its
 * PID and reaped, in the test or in its teardown, which also stops the
 * sim and redis-server when an assertion has left the test.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include "fd_io.h"
#include "wms/wms.h"
#include "wms/breaker.h"
#include "wms/shared.h"
#include "wms_sim.h"
#include "redis_server.h"
#include "fleet_time.h"
#include "build_kind.h"

#define NPROC 3 /* N processes */
#define NTHR 4  /* M threads in each */
#define BREAKER "orders"

/* ---- time ---------------------------------------------------------------- */

/* Time budgets grow with what the test runs under (a loaded 2-core
 * machine is assumed everywhere): valgrind serialises each process's
 * threads, TSan slows everything a few times. */
static unsigned slow(void)
{
	switch (tk_build_kind()) {
	case TK_VALGRIND:
		return 10;
	case TK_TSAN:
		return 3;
	case TK_ASAN:
		return 2;
	default:
		return 1;
	}
}

/* ---- the scenarios ------------------------------------------------------- */

typedef struct scenario {
	const char *fleet;     /* shared.name */
	uint32_t threshold;
	uint32_t open_ms;
	uint32_t timeout_ms;   /* each call's deadline */
	uint32_t command_timeout_ms;
	uint32_t pace_ms;      /* pause after each call (0: none) */
	uint32_t window_ms;    /* run for this long (calls == 0) ... */
	int calls;             /* ... or make exactly this many calls per thread */
	int own_store;         /* the child makes the store (its stats can be read) */
} scenario;

/* child -> parent; one write each, well under PIPE_BUF */
enum { M_READY = 1, M_COUNTS = 2, M_STATS = 3, M_FAIL = 9 };

typedef struct msg {
	int32_t kind;
	int32_t pid;
	/* calls by outcome */
	uint64_t ok, open, failed, http503, other;
	int32_t first_other;   /* the status of the first "other" one */
	/* the breaker at the end of the window */
	int32_t state, store_state;
	uint64_t permitted, rejected, failures, transitions;
	/* the store's stats (own_store only) */
	uint64_t dropped, degrades, scripts;
	char text[200];
} msg;

/* ---- the child ----------------------------------------------------------- */

typedef struct worker {
	wms_client *c;
	const scenario *sc;
	int proc, idx;
	double start_ms, end_ms;
	uint64_t ok, open, failed, http503, other;
	int first_other;
} worker;

static void *worker_run(void *arg)
{
	worker *w = arg;
	wms_order_line line = { "SKU-1", 1 };
	wms_order order = WMS_ORDER_INIT;
	char id[64];
	int k;

	order.order_id = id;
	order.ship_to = (wms_address){ "Grace Hopper", "1 Navy Yard", NULL, "Arlington", NULL,
				       "22202", "US" };
	order.lines = &line;
	order.line_count = 1;
	while (now_ms() < w->start_ms)
		sleep_ms(1);
	for (k = 0; w->sc->calls ? k < w->sc->calls : now_ms() < w->end_ms; k++) {
		wms_submit_reply reply;
		wms_error err;
		wms_status st;

		snprintf(id, sizeof(id), "P%d-%ld-T%d-%d", w->proc, (long)getpid(), w->idx, k);
		memset(&err, 0, sizeof(err));
		st = wms_submit_order(&reply, w->c, &order, &err);
		if (st == WMS_OK) {
			w->ok++;
		} else if (st == WMS_ERR_CIRCUIT_OPEN) {
			w->open++;
		} else if (wms_error_outcome(&err) == WMS_OUTCOME_FAILURE) {
			w->failed++;
			if (st == WMS_ERR_HTTP && err.http_status == 503)
				w->http503++;
		} else {
			if (!w->other)
				w->first_other = (int)st;
			w->other++;
		}
		if (w->sc->pace_ms)
			sleep_ms(w->sc->pace_ms);
	}
	return NULL;
}

/* 0, or -1 (closed, error) / -2 (not within limit_ms) */
static int read_full(int fd, void *buf, size_t len, double limit_ms)
{
	char *p = buf;
	double t0 = now_ms();
	while (len) {
		struct pollfd pf = { fd, POLLIN, 0 };
		double left = limit_ms - (now_ms() - t0);
		ssize_t n;
		int r;
		if (left <= 0)
			return -2;
		r = poll(&pf, 1, (int)left + 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		if (r == 0)
			continue;
		n = read(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static void child_fail(int up, msg *m, const char *fmt, ...)
{
	va_list ap;
	m->kind = M_FAIL;
	va_start(ap, fmt);
	vsnprintf(m->text, sizeof(m->text), fmt, ap);
	va_end(ap);
	(void)fd_write_all(up, m, sizeof(*m));
}

/* The child's whole life: 0 when it went as planned. */
static int child_run(int proc, int up, int down, const scenario *sc, const char *redis_url)
{
	wms_client_options o = WMS_CLIENT_OPTIONS_INIT;
	wms_shared_options so = WMS_SHARED_OPTIONS_INIT;
	wms_breaker_store *store = NULL;
	wms_client *c = NULL;
	wms_breaker_snapshot sn;
	wms_shared_stats ss;
	worker w[NTHR];
	pthread_t th[NTHR];
	char url[256], go;
	msg m;
	wms_error err;
	double t0, wait_ms = 120000.0 * slow();
	int i, started = 0, rc = 1;

	memset(&m, 0, sizeof(m));
	memset(&err, 0, sizeof(err));
	m.pid = (int32_t)getpid();
	if (read_full(down, url, sizeof(url), wait_ms) != 0) {
		child_fail(up, &m, "no URL from the parent");
		return 1;
	}
	url[sizeof(url) - 1] = '\0';

	so.redis_url = redis_url;
	so.name = sc->fleet;
	so.command_timeout_ms = sc->command_timeout_ms;
	o.endpoint = url;
	o.timeout_ms = sc->timeout_ms;
	o.connect_timeout_ms = sc->timeout_ms;
	o.retry.max_attempts = 1; /* retries off: one request per call */
	o.breaker_options.name = BREAKER;
	o.breaker_options.mode = WMS_BREAKER_MODE_CONSECUTIVE;
	o.breaker_options.failure_threshold = sc->threshold;
	o.breaker_options.open_duration_ms = sc->open_ms;
	if (sc->own_store) {
		/* a store of the child's own, so that its stats can be read */
		if (wms_redis_store_new(&store, &so, &err) != WMS_OK) {
			child_fail(up, &m, "wms_redis_store_new: %s", err.message);
			return 1;
		}
		o.breaker_options.store = store;
	} else {
		o.shared = so; /* the client makes its store and frees it */
	}
	if (wms_client_new(&c, &o, &err) != WMS_OK) {
		child_fail(up, &m, "wms_client_new: %s", err.message);
		goto out;
	}
	t0 = now_ms();
	for (;;) {
		wms_breaker_snapshot_get(&sn, wms_client_breaker(c));
		if (sn.store_state == WMS_STORE_STATE_CONNECTED)
			break;
		if (now_ms() - t0 > 10000.0 * slow()) {
			child_fail(up, &m, "store %s, not CONNECTED, after %.0f ms",
				   wms_store_state_name(sn.store_state), now_ms() - t0);
			goto out;
		}
		sleep_ms(5);
	}
	m.kind = M_READY;
	if (fd_write_all(up, &m, sizeof(m)) != 0)
		goto out;
	if (read_full(down, &go, 1, wait_ms) != 0 || go != 'G') {
		child_fail(up, &m, "no go from the parent");
		goto out;
	}

	t0 = now_ms();
	for (i = 0; i < NTHR; i++) {
		memset(&w[i], 0, sizeof(w[i]));
		w[i].c = c;
		w[i].sc = sc;
		w[i].proc = proc;
		w[i].idx = i;
		/* the fleet's threads spread over one pause: not in step */
		w[i].start_ms = t0 + (double)sc->pace_ms * (proc * NTHR + i) / (NPROC * NTHR);
		w[i].end_ms = t0 + sc->window_ms;
		if (pthread_create(&th[i], NULL, worker_run, &w[i]) != 0) {
			child_fail(up, &m, "pthread_create failed");
			break;
		}
		started++;
	}
	for (i = 0; i < started; i++) {
		pthread_join(th[i], NULL);
		m.ok += w[i].ok;
		m.open += w[i].open;
		m.failed += w[i].failed;
		m.http503 += w[i].http503;
		if (w[i].other && !m.other)
			m.first_other = w[i].first_other;
		m.other += w[i].other;
	}
	if (started != NTHR)
		goto out;
	wms_breaker_snapshot_get(&sn, wms_client_breaker(c));
	m.state = (int32_t)sn.state;
	m.store_state = (int32_t)sn.store_state;
	m.permitted = sn.permitted;
	m.rejected = sn.rejected;
	m.failures = sn.failures;
	m.transitions = sn.transitions;
	m.kind = M_COUNTS;
	if (fd_write_all(up, &m, sizeof(m)) != 0)
		goto out;
	/* the parent reads Redis meanwhile: freeing the client now would
	 * drop outcomes still queued for the store */
	if (read_full(down, &go, 1, wait_ms) != 0 || go != 'F') {
		child_fail(up, &m, "no finish from the parent");
		goto out;
	}
	if (store) {
		wms_redis_store_stats(&ss, store);
		m.dropped = ss.dropped;
		m.degrades = ss.degrades;
		m.scripts = ss.scripts;
	}
	m.kind = M_STATS;
	if (fd_write_all(up, &m, sizeof(m)) != 0)
		goto out;
	rc = 0;
out:
	wms_client_free(c);
	wms_breaker_store_free(store); /* NULL-safe; after its breaker */
	return rc;
}

/* ---- the parent ---------------------------------------------------------- */

typedef struct procs {
	rs_server rs;
	wms_sim *sim;
	pid_t pid[NPROC];
	int up[NPROC], down[NPROC]; /* the parent's ends; -1 once closed */
	msg counts[NPROC], stats[NPROC];
	int exit_status[NPROC];
} procs;

static procs the_procs;

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* Kill (by PID) and reap every child still there. */
static void kill_children(procs *p)
{
	int i;
	for (i = 0; i < NPROC; i++) {
		if (p->pid[i] > 0) {
			kill(p->pid[i], SIGKILL);
			while (waitpid(p->pid[i], NULL, 0) < 0 && errno == EINTR)
				;
			p->pid[i] = 0;
		}
		close_fd(&p->up[i]);
		close_fd(&p->down[i]);
	}
}

static int setup(void **state)
{
	procs *p = &the_procs;
	int i;

	memset(p, 0, sizeof(*p));
	for (i = 0; i < NPROC; i++)
		p->up[i] = p->down[i] = -1;
	if (rs_start(&p->rs, 0) != 0) {
		print_error("cannot start redis-server (is it installed? ./run installs it)\n");
		return -1;
	}
	*state = p;
	return 0;
}

static int teardown(void **state)
{
	procs *p = *state;
	kill_children(p);
	wms_sim_stop(p->sim);
	p->sim = NULL;
	rs_stop(&p->rs);
	return 0;
}

/* Fork the children while this process has no thread of its own. */
static void fork_children(procs *p, const scenario *sc)
{
	int i, j;
	fflush(NULL);
	for (i = 0; i < NPROC; i++) {
		int up[2], down[2];
		assert_int_equal(pipe(up), 0);
		assert_int_equal(pipe(down), 0);
		p->pid[i] = fork();
		assert_true(p->pid[i] >= 0);
		if (p->pid[i] == 0) {
			int rc;
			prctl(PR_SET_PDEATHSIG, SIGKILL); /* a parent gone takes it along */
			for (j = 0; j < i; j++) {
				close(p->up[j]);
				close(p->down[j]);
			}
			close(up[0]);
			close(down[1]);
			rc = child_run(i, up[1], down[0], sc, p->rs.url);
			close(up[1]);
			close(down[0]);
			_exit(rc);
		}
		close(up[1]);
		close(down[0]);
		p->up[i] = up[0];
		p->down[i] = down[1];
	}
}

static void send_all(procs *p, const void *buf, size_t len)
{
	int i;
	for (i = 0; i < NPROC; i++)
		if (fd_write_all(p->down[i], buf, len) != 0)
			fail_msg("child %d: cannot write to its pipe", i);
}

/* One message of `kind` from every child, all within limit_ms. */
static void read_all(procs *p, int kind, msg *out, double limit_ms)
{
	double t0 = now_ms();
	int i;
	for (i = 0; i < NPROC; i++) {
		double left = limit_ms - (now_ms() - t0);
		int r = read_full(p->up[i], &out[i], sizeof(out[i]), left > 1 ? left : 1);
		if (r == -2)
			fail_msg("child %d: no message %d within %.0f ms", i, kind, limit_ms);
		if (r != 0)
			fail_msg("child %d: its pipe closed before message %d", i, kind);
		out[i].text[sizeof(out[i].text) - 1] = '\0';
		if (out[i].kind == M_FAIL)
			fail_msg("child %d (pid %d): %s", i, (int)out[i].pid, out[i].text);
		if (out[i].kind != kind)
			fail_msg("child %d: message %d, not %d", i, (int)out[i].kind, kind);
	}
}

/* Reap every child within limit_ms; a late one is killed (and fails). */
static void reap_all(procs *p, double limit_ms)
{
	double t0 = now_ms();
	int i, late = -1;
	for (i = 0; i < NPROC; i++) {
		int status = 0;
		pid_t r;
		for (;;) {
			r = waitpid(p->pid[i], &status, WNOHANG);
			if (r < 0 && errno != EINTR)
				fail_msg("child %d: waitpid: %s", i, strerror(errno));
			if (r == p->pid[i])
				break;
			if (now_ms() - t0 > limit_ms) {
				late = i;
				break;
			}
			sleep_ms(5);
		}
		if (late >= 0)
			break;
		p->pid[i] = 0;
		p->exit_status[i] = status;
	}
	if (late >= 0) {
		kill_children(p);
		fail_msg("child %d did not exit within %.0f ms: killed", late, limit_ms);
	}
	for (i = 0; i < NPROC; i++) {
		close_fd(&p->up[i]);
		close_fd(&p->down[i]);
		if (!WIFEXITED(p->exit_status[i]) || WEXITSTATUS(p->exit_status[i]) != 0)
			fail_msg("child %d: exit status 0x%x (valgrind's error exit code is 99)", i,
				 p->exit_status[i]);
	}
}

static long long hash_int(const rs_server *rs, const char *fleet, const char *field)
{
	char key[128];
	snprintf(key, sizeof(key), "wms:{%s}:s:" BREAKER, fleet);
	return rs_hget_int(rs, key, field);
}

/* Everything up to the end of the window: children forked, joined, the
 * sim failing every SubmitOrder; returns the requests it saw meanwhile. */
static uint64_t run_window(procs *p, const scenario *sc)
{
	wms_sim_options so = WMS_SIM_OPTIONS_INIT;
	char url[256];
	uint64_t before, after;
	double t0;

	fork_children(p, sc);
	so.tick_ms = 3600000u; /* nothing moves on its own */
	if (wms_sim_start(&p->sim, &so) != WMS_SIM_OK)
		fail_msg("wms_sim_start: %s", wms_sim_last_error());
	memset(url, 0, sizeof(url));
	snprintf(url, sizeof(url), "%s", wms_sim_url(p->sim));
	send_all(p, url, sizeof(url));
	read_all(p, M_READY, p->counts, 30000.0 * slow());
	/* a fast failure the breaker counts: 503, nothing performed */
	assert_int_equal(wms_sim_set_fault(p->sim, "SubmitOrder", WMS_SIM_FAULT_HTTP_503, 0),
			 WMS_SIM_OK);
	before = wms_sim_requests(p->sim, "SubmitOrder");
	t0 = now_ms();
	send_all(p, "G", 1);
	read_all(p, M_COUNTS, p->counts,
		 (sc->calls ? 60000.0 : (double)sc->window_ms + 30000.0) * slow());
	after = wms_sim_requests(p->sim, "SubmitOrder");
	print_message("%s: %d processes x %d threads for %.0f ms; the WMS saw %llu SubmitOrder "
		      "request(s)\n", sc->fleet, NPROC, NTHR, now_ms() - t0,
		      (unsigned long long)(after - before));
	return after - before;
}

static void finish(procs *p)
{
	send_all(p, "F", 1);
	read_all(p, M_STATS, p->stats, 30000.0 * slow());
	reap_all(p, 30000.0 * slow());
}

/* ---- one OPEN for the fleet ---------------------------------------------- */

/*
 * Every thread calls SubmitOrder once per pause for a window well inside
 * the open period, against a WMS that fails every call. With one breaker
 * for the fleet, the WMS sees the threshold's failures, plus what was in
 * flight when the fleet opened: at most one call per thread (N x M), so
 * threshold + N x M = 10 + 12 = 22. A breaker per process would let at
 * least N x threshold = 30 through before every process had opened (each
 * counts only its own failures): the bound is below that, so this fails
 * for breakers that are not shared (checked: a fleet name per process
 * gives 30-32). And at least the threshold must have reached the WMS, or
 * nothing tripped.
 *
 * "In flight" assumes a thread's next call comes after the OPEN has
 * reached its process (the agent's script reply, or pub/sub): the pause
 * here (100 ms, scaled) is far longer than a round trip. Threads calling
 * back to back: a_burst_with_no_pause.
 */
static void trip_at_pace(procs *p, uint32_t pace_ms, uint64_t bound)
{
	unsigned k = slow();
	scenario sc;
	uint64_t seen, rejected = 0, failed = 0;
	long long st, ep;
	int i;

	memset(&sc, 0, sizeof(sc));
	sc.fleet = "procs-trip";
	sc.threshold = 10;
	sc.pace_ms = pace_ms;
	sc.window_ms = 1500 * k;               /* 15 pauses of 100 ms, plain */
	sc.open_ms = 3 * sc.window_ms + 30000; /* OPEN for the whole window and after */
	sc.timeout_ms = 300 * k;
	sc.command_timeout_ms = 2000 * (k > 2 ? 2 : 1); /* no store given up on for load */
	seen = run_window(p, &sc);

	st = hash_int(&p->rs, sc.fleet, "st");
	ep = hash_int(&p->rs, sc.fleet, "ep");
	for (i = 0; i < NPROC; i++) {
		msg *m = &p->counts[i];
		print_message("  process %d: %llu failed (%llu 503), %llu CIRCUIT_OPEN, %llu ok, "
			      "%llu other; breaker %s (%llu transition(s)), store %s\n", i,
			      (unsigned long long)m->failed, (unsigned long long)m->http503,
			      (unsigned long long)m->open, (unsigned long long)m->ok,
			      (unsigned long long)m->other,
			      wms_breaker_state_name((wms_breaker_state)m->state),
			      (unsigned long long)m->transitions,
			      wms_store_state_name((wms_store_state)m->store_state));
		rejected += m->open;
		failed += m->failed;
	}
	print_message("  pause %u ms: WMS saw %llu: threshold %u <= %llu <= %llu "
		      "(a breaker per process: >= %u); Redis st %lld ep %lld\n", pace_ms,
		      (unsigned long long)seen, sc.threshold, (unsigned long long)seen,
		      (unsigned long long)bound, NPROC * sc.threshold, st, ep);
	finish(p);

	for (i = 0; i < NPROC; i++) {
		msg *m = &p->counts[i];
		assert_int_equal(m->ok, 0);      /* the WMS failed every call */
		assert_int_equal(m->other, 0);   /* and each was a failure for the breaker */
		assert_true(m->open > 0);        /* the one OPEN reached every process */
		assert_int_equal(m->state, WMS_BREAKER_STATE_OPEN);
		assert_int_equal(m->transitions, 1); /* CLOSED -> OPEN, once */
		assert_int_equal(m->store_state, WMS_STORE_STATE_CONNECTED);
		assert_int_equal(m->rejected, m->open);
	}
	/* every request the WMS saw ended as a failure in some process (a call
	 * may also time out before the WMS has read it: not the other way) */
	assert_true(seen <= failed);
	assert_true(seen >= sc.threshold);
	assert_true(seen <= bound);
	assert_true(rejected > 0);
	assert_int_equal(st, 1); /* OPEN in Redis */
}

static void one_open_for_the_fleet(void **state)
{
	/* threshold + every thread's call in flight */
	trip_at_pace(*state, 100 * slow(), 10 + NPROC * NTHR);
}

/*
 * Threads calling back to back: a process whose own failures on their way
 * to Redis would reach the threshold grants nothing more until Redis has
 * answered, so each process sends at most threshold + its own threads in
 * flight, and the fleet N x (threshold + M) = 42 (before that gate: 24 to
 * 153). Failures made within one round trip of each other in different
 * processes are each counted before any of them learns of the others':
 * here the fleet is no better than a breaker per process, by design (no
 * call waits on Redis).
 */
static void a_burst_with_no_pause(void **state)
{
	trip_at_pace(*state, 0, NPROC * (10 + NTHR));
}

/* ---- no lost count updates ----------------------------------------------- */

/*
 * Every thread makes exactly K failing calls (a threshold never reached,
 * so every call goes to the WMS and nothing resets the count: in the
 * consecutive mode only a success would). The shared count must end at
 * exactly what the WMS returned: N x M x K, each failure counted once by
 * one of three processes' agents running scripts concurrently. The
 * children stay until the parent has read it (a client freed with
 * outcomes still queued would drop them); the queue (4096) holds all of
 * a process's outcomes (400 at most), and its stats must show none
 * dropped and the store never given up on.
 */
static void no_lost_count_updates(void **state)
{
	procs *p = *state;
	unsigned k = slow();
	scenario sc;
	uint64_t seen, failed = 0;
	long long n = -1;
	double t0;
	int i;

	memset(&sc, 0, sizeof(sc));
	sc.fleet = "procs-count";
	sc.threshold = 1000000;
	sc.open_ms = 60000;
	sc.calls = k >= 10 ? 20 : k >= 3 ? 40 : 100;
	sc.timeout_ms = 5000 * k; /* no deadline: every failure is the WMS's 503 */
	sc.command_timeout_ms = 2000 * (k > 2 ? 2 : 1);
	sc.own_store = 1;
	seen = run_window(p, &sc);

	for (i = 0; i < NPROC; i++)
		failed += p->counts[i].failed;
	/* every queued outcome reaches Redis while the children are still up */
	t0 = now_ms();
	for (;;) {
		n = hash_int(&p->rs, sc.fleet, "n");
		if (n == (long long)seen || now_ms() - t0 > 10000.0 * k)
			break;
		sleep_ms(5);
	}
	print_message("  Redis n reached %lld after %.0f ms; %llu failures seen by the "
		      "processes, %llu requests by the WMS (expected %d)\n", n, now_ms() - t0,
		      (unsigned long long)failed, (unsigned long long)seen,
		      NPROC * NTHR * sc.calls);
	sleep_ms(200 * k);
	n = hash_int(&p->rs, sc.fleet, "n"); /* and nothing counted twice after */
	finish(p);

	for (i = 0; i < NPROC; i++) {
		msg *m = &p->counts[i], *s = &p->stats[i];
		print_message("  process %d: %llu failed (%llu 503), %llu other, %llu CIRCUIT_OPEN; "
			      "store: %llu scripts, %llu dropped, %llu degrades\n", i,
			      (unsigned long long)m->failed, (unsigned long long)m->http503,
			      (unsigned long long)m->other, (unsigned long long)m->open,
			      (unsigned long long)s->scripts, (unsigned long long)s->dropped,
			      (unsigned long long)s->degrades);
		assert_int_equal(m->failed, (uint64_t)NTHR * (uint64_t)sc.calls);
		assert_int_equal(m->http503, m->failed);
		assert_int_equal(m->ok + m->open + m->other, 0);
		assert_int_equal(m->store_state, WMS_STORE_STATE_CONNECTED);
		assert_int_equal(m->state, WMS_BREAKER_STATE_CLOSED);
		assert_int_equal(s->dropped, 0);
		assert_int_equal(s->degrades, 0);
	}
	assert_int_equal(seen, (uint64_t)NPROC * NTHR * (uint64_t)sc.calls);
	assert_int_equal(failed, seen);
	assert_int_equal(n, (long long)seen);
	assert_int_equal(hash_int(&p->rs, sc.fleet, "st"), 0);
}

int main(void)
{
	/* each scenario twice in a row, each time with its own redis-server,
	 * sim and processes */
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(one_open_for_the_fleet, setup, teardown),
		cmocka_unit_test_setup_teardown(one_open_for_the_fleet, setup, teardown),
		cmocka_unit_test_setup_teardown(a_burst_with_no_pause, setup, teardown),
		cmocka_unit_test_setup_teardown(a_burst_with_no_pause, setup, teardown),
		cmocka_unit_test_setup_teardown(no_lost_count_updates, setup, teardown),
		cmocka_unit_test_setup_teardown(no_lost_count_updates, setup, teardown),
	};
	/* a child gone early must fail its test, not kill this process */
	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
