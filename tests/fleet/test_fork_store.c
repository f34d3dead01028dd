/*
 * A Redis breaker store across fork() (the fork contract, points 3 to 5):
 * two replicas (stores of their own) in the parent on one redis-server;
 * the test forks, twice in a row on the same stores.
 *
 * Each time A trips the fleet just before the fork, and A's agent thread
 * is held at the fork in A's listener for the reply that opened it (an
 * event fires with the link's lock held): the child inherits a lock no
 * thread of its own will ever release. B, with a heartbeat of 10 s, is
 * idle (so valgrind finds, in the child, no reply in the hands of an
 * agent that is not there).
 *
 * In the child, replica A (its store and breaker, the parent's):
 *   - its breaker decides in-process, seeded with what the fleet had
 *     decided at the fork (OPEN, most of a minute left), and its store is
 *     DEGRADED (told once; the first call a snapshot the first time, an
 *     acquire the second); force_closed and failures then move it
 *     in-process only;
 *   - freeing the breaker and the store returns at once: no lock waited
 *     for, no agent thread joined; the child's copies of the two
 *     connections and of the eventfd are closed;
 *   - nothing reaches Redis: Redis's MONITOR, read by the parent from a
 *     mark set before the fork to one set once the child is done, shows
 *     the parent's heartbeats (EVALSHA "get", PING, the scripts' own
 *     commands) and nothing else (the parent makes no call meanwhile);
 *   - B (idle) and a breaker made in the child on B's store (in-process
 *     and DEGRADED from its first call) are freed the same way;
 *   - a store made in the child works: its breaker joins, and its trip
 *     reaches Redis.
 * In the parent afterwards: A's store never lost its connection, the
 * fleet's state is what B left (OPEN: the child's force_closed went
 * nowhere), and A's force_closed, then a trip in A, reach B.
 *
 * A child uses no cmocka: it reports by its exit status (0, or which check
 * failed; valgrind's error exit 99 too) and carries an alarm, so that a
 * hang (the store's free joining a thread that is not there) fails fast.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>
#include "wms/wms.h"
#include "wms/breaker.h"
#include "wms/shared.h"
#include "wms/sys/breaker_store.h"
#include "child_exit.h"
#include "proc_fds.h"
#include "redis_server.h"
#include "fleet_time.h"
#include "fleet_calls.h"

#define FLEET "fork-test"
#define THRESHOLD 3
#define OPEN_MS 60000

typedef struct replica {
	wms_breaker_store *store;
	wms_breaker *b;
	_Atomic int degraded; /* events telling the store DEGRADED */
	_Atomic int hold;     /* the parent's next trip event waits in the listener */
	_Atomic int held;     /* ... and is waiting now */
} replica;

static pid_t parent_pid;

static void on_event(const wms_breaker_event *e, void *p)
{
	replica *r = p;
	if (e->from == e->to && e->store == WMS_STORE_STATE_DEGRADED)
		atomic_fetch_add(&r->degraded, 1);
	/* the parent's store's agent, told of another replica's trip, with
	 * the link's lock held: kept here until the test lets it go */
	if (e->from != e->to && e->to == WMS_BREAKER_STATE_OPEN && getpid() == parent_pid &&
	    atomic_load(&r->hold)) {
		atomic_store(&r->held, 1);
		while (atomic_load(&r->hold))
			sleep_ms(1);
		atomic_store(&r->held, 0);
	}
}

static int replica_make(replica *r, const rs_server *rs, const char *breaker, uint32_t threshold,
			uint32_t heartbeat_ms)
{
	wms_shared_options so = WMS_SHARED_OPTIONS_INIT;
	wms_breaker_options bo = WMS_BREAKER_OPTIONS_INIT;
	wms_error err;

	memset(r, 0, sizeof(*r));
	so.redis_url = rs->url;
	so.name = FLEET;
	/* Redis is not lost in this test: no slow reply on a loaded machine
	 * may give the store up (test_fleet.c says why) */
	so.command_timeout_ms = 2000;
	so.heartbeat_ms = heartbeat_ms;
	if (wms_redis_store_new(&r->store, &so, &err) != WMS_OK)
		return -1;
	bo.name = breaker;
	bo.failure_threshold = threshold;
	bo.open_duration_ms = OPEN_MS;
	bo.store = r->store;
	bo.callbacks.on_state_change = on_event;
	bo.callbacks.payload = r;
	if (wms_breaker_new(&r->b, &bo) != WMS_OK) {
		wms_breaker_store_free(r->store);
		r->store = NULL;
		return -1;
	}
	return 0;
}

static void replica_free(replica *r)
{
	wms_breaker_free(r->b);
	wms_breaker_store_free(r->store);
	r->b = NULL;
	r->store = NULL;
}

static wms_breaker_snapshot snap(wms_breaker *b)
{
	wms_breaker_snapshot s;
	wms_breaker_snapshot_get(&s, b);
	return s;
}

/* Until b's store is `st` (or the limit): 0, or -1. */
static int wait_store_state(wms_breaker *b, wms_store_state st, double limit_ms)
{
	double t0 = now_ms();
	while (snap(b).store_state != st) {
		if (now_ms() - t0 > limit_ms)
			return -1;
		sleep_ms(1);
	}
	return 0;
}

static int wait_state(wms_breaker *b, wms_breaker_state st, double limit_ms)
{
	double t0 = now_ms();
	while (wms_breaker_state_get(b) != st) {
		if (now_ms() - t0 > limit_ms)
			return -1;
		sleep_ms(1);
	}
	return 0;
}


/* Until b's permits carry the fleet's epoch: its store has the answer to
 * its own change made by hand. Failures granted before would be of an
 * older epoch, which the fleet no longer counts (B may see the change
 * before A's agent has read its reply). */
static void wait_mirror(wms_breaker *b, const rs_server *rs)
{
	double t0 = now_ms();
	for (;;) {
		long long ep = rs_hget_int(rs, "wms:{" FLEET "}:s:wms", "ep");
		wms_breaker_permit p;
		if (wms_breaker_acquire(&p, b, NULL) == WMS_OK) {
			wms_breaker_release(b, &p);
			if ((long long)p.epoch == ep)
				return;
		}
		if (now_ms() - t0 > limit(2000))
			fail_msg("the store's mirror is not at the fleet's epoch %lld", ep);
		sleep_ms(1);
	}
}

static int fd_seen(int fd, void *arg)
{
	(void)fd;
	(*(int *)arg)++;
	return 0;
}

/* This process's open descriptors (the listing's own not counted). */
static int open_fds(void)
{
	int n = 0;
	return proc_fds_each(fd_seen, &n) < 0 ? -1 : n;
}

/* ---- the child ---------------------------------------------------------- */

/* What a child's exit status says (0: every check passed). */
enum {
	C_STORE_PERMIT = 10,  /* an inherited breaker's permit came from the store */
	C_NOT_OPEN,           /* its failures did not open it in-process */
	C_NOT_DEGRADED,       /* its store is not DEGRADED, or was told so not once */
	C_NOT_SEEDED,         /* the fleet's OPEN at the fork was not the engine's */
	C_NOT_CLOSED,         /* force_closed did not close it */
	C_SLOW_FREE,          /* freeing the breaker and the store took long */
	C_FDS,                /* not exactly 3 descriptors closed by the free */
	C_PIPE,               /* the parent's go never came */
	C_MADE_HERE,          /* a breaker made in the child on B's store: not in-process */
	C_NEW_STORE = 20,     /* a store made in the child could not be made */
	C_NEW_NOT_JOINED,     /* its breaker did not join */
	C_NEW_PERMIT,         /* its permit did not come from the store */
	C_NEW_NOT_IN_REDIS,   /* its trip did not reach Redis */
};

static const char *child_says(int code)
{
	switch (code) {
	case C_STORE_PERMIT: return "an inherited breaker's permit came from the store";
	case C_NOT_OPEN: return "the inherited breaker's failures did not open it in-process";
	case C_NOT_DEGRADED: return "the inherited store is not DEGRADED (told once)";
	case C_NOT_SEEDED: return "the fleet's OPEN at the fork was not the engine's";
	case C_NOT_CLOSED: return "force_closed did not close the inherited breaker";
	case C_SLOW_FREE: return "freeing the inherited breaker and store was slow";
	case C_FDS: return "freeing the store did not close exactly its 3 descriptors";
	case C_PIPE: return "the parent's go never came";
	case C_MADE_HERE: return "a breaker made in the child on the parent's store is not in-process, DEGRADED";
	case C_NEW_STORE: return "a store made in the child could not be made";
	case C_NEW_NOT_JOINED: return "the child's own store did not join";
	case C_NEW_PERMIT: return "the child's own breaker did not decide through its store";
	case C_NEW_NOT_IN_REDIS: return "the child's own trip did not reach Redis";
	case 99: return "valgrind found errors (or leaks) in the child";
	}
	return "?";
}

/* Replica A, inherited, the fleet OPEN at the fork. The first call: a
 * snapshot in round 1, an acquire in round 2 (each hands the breaker to
 * its engine). */
static int child_inherited(replica *a, int round)
{
	wms_breaker_snapshot s;
	wms_breaker_permit p;
	uint32_t retry = 0;
	double t0;
	int i, fds;

	if (round == 2) {
		if (wms_breaker_acquire(&p, a->b, &retry) != WMS_ERR_CIRCUIT_OPEN ||
		    retry < OPEN_MS / 2)
			return C_NOT_SEEDED;
		if (atomic_load(&a->degraded) != 1)
			return C_NOT_DEGRADED;
	}
	s = snap(a->b);
	if (s.store_state != WMS_STORE_STATE_DEGRADED || atomic_load(&a->degraded) != 1)
		return C_NOT_DEGRADED;
	if (s.state != WMS_BREAKER_STATE_OPEN || s.retry_after_ms < OPEN_MS / 2)
		return C_NOT_SEEDED;
	if (wms_breaker_acquire(&p, a->b, &retry) != WMS_ERR_CIRCUIT_OPEN || retry < OPEN_MS / 2)
		return C_NOT_SEEDED;
	wms_breaker_force_closed(a->b);
	if (wms_breaker_state_get(a->b) != WMS_BREAKER_STATE_CLOSED)
		return C_NOT_CLOSED;
	for (i = 0; i < THRESHOLD; i++) {
		if (wms_breaker_acquire(&p, a->b, NULL) != WMS_OK || (p.flags & WMS_PERMIT_STORE))
			return C_STORE_PERMIT;
		wms_breaker_record(a->b, &p, WMS_OUTCOME_FAILURE);
	}
	if (wms_breaker_state_get(a->b) != WMS_BREAKER_STATE_OPEN)
		return C_NOT_OPEN;
	if (snap(a->b).store_state != WMS_STORE_STATE_DEGRADED || atomic_load(&a->degraded) != 1)
		return C_NOT_DEGRADED;

	fds = open_fds();
	t0 = now_ms();
	replica_free(a);
	if (now_ms() - t0 > limit(1000))
		return C_SLOW_FREE;
	/* the command and pub/sub connections, and the eventfd */
	if (open_fds() != fds - 3)
		return C_FDS;
	return 0;
}

/* The rest of what the child has of the parent's, let go of as a worker
 * would (B's store on an agent in its poll; the MONITOR connection, whose
 * plain hiredis free sends nothing): valgrind then finds nothing lost. */
static int child_lets_go(replica *b, redisContext *m)
{
	wms_breaker_options bo = WMS_BREAKER_OPTIONS_INIT;
	wms_breaker_permit p;
	wms_breaker *nb;
	double t0;

	/* a breaker made here on the parent's store: in-process from its
	 * first call, DEGRADED, and freed on its own */
	bo.name = "made-in-child";
	bo.failure_threshold = 1;
	bo.store = b->store;
	if (wms_breaker_new(&nb, &bo) != WMS_OK)
		return C_MADE_HERE;
	if (wms_breaker_acquire(&p, nb, NULL) != WMS_OK || (p.flags & WMS_PERMIT_STORE))
		return C_MADE_HERE;
	wms_breaker_record(nb, &p, WMS_OUTCOME_FAILURE);
	if (wms_breaker_state_get(nb) != WMS_BREAKER_STATE_OPEN ||
	    snap(nb).store_state != WMS_STORE_STATE_DEGRADED)
		return C_MADE_HERE;
	wms_breaker_free(nb);

	t0 = now_ms();
	replica_free(b);
	redisFree(m);
	return now_ms() - t0 > limit(1000) ? C_SLOW_FREE : 0;
}

static int child_new_store(const rs_server *rs, int round)
{
	char name[32], key[64];
	wms_breaker_permit p;
	replica c;
	double t0;

	snprintf(name, sizeof(name), "child-%d", round);
	snprintf(key, sizeof(key), "wms:{" FLEET "}:s:%s", name);
	if (replica_make(&c, rs, name, 1, 0) != 0)
		return C_NEW_STORE;
	if (wait_store_state(c.b, WMS_STORE_STATE_CONNECTED, limit(3000)) != 0)
		return C_NEW_NOT_JOINED;
	if (wms_breaker_acquire(&p, c.b, NULL) != WMS_OK || !(p.flags & WMS_PERMIT_STORE))
		return C_NEW_PERMIT;
	wms_breaker_record(c.b, &p, WMS_OUTCOME_FAILURE);
	t0 = now_ms();
	while (rs_hget_int(rs, key, "st") != WMS_BREAKER_STATE_OPEN) {
		if (now_ms() - t0 > limit(2000))
			return C_NEW_NOT_IN_REDIS;
		sleep_ms(2);
	}
	replica_free(&c);
	return 0;
}

static void child_main(replica *a, replica *b, redisContext *m, const rs_server *rs, int round,
		       int to_parent, int from_parent)
{
	char go = 0;
	int code;

	/* a crash ends the child (cmocka's handlers would run tests on in
	 * it), and a hang fails the test within seconds instead of hanging CI */
	child_begin(valgrind() ? 240 : 20);
	code = child_inherited(a, round);
	if (code == 0)
		code = child_lets_go(b, m);
	(void)!write(to_parent, "d", 1);
	if (code == 0) {
		/* the parent reads MONITOR up to here before the new store talks */
		if (read(from_parent, &go, 1) != 1)
			code = C_PIPE;
		else
			code = child_new_store(rs, round);
	}
	child_exit(code);
}

/* ---- the parent's view of Redis --------------------------------------- */

/* The n-th (0-based) double-quoted argument of a MONITOR line into out. */
static int quoted_arg(const char *line, int n, char *out, size_t size)
{
	const char *p = strchr(line, ']');
	int i;

	if (!p)
		return -1;
	for (i = 0;; i++) {
		const char *q;
		p = strchr(p, '"');
		if (!p)
			return -1;
		for (q = ++p; *q && *q != '"'; q++)
			if (*q == '\\' && q[1])
				q++;
		if (i == n) {
			if ((size_t)(q - p) >= size)
				return -1;
			memcpy(out, p, (size_t)(q - p));
			out[q - p] = '\0';
			return 0;
		}
		if (!*q)
			return -1;
		p = q + 1;
	}
}

/* Whether a MONITOR line is the parent's heartbeat (EVALSHA "get" or
 * PING, or a command the script ran: "[0 lua]"), or the ECHO `mark`. */
static int heartbeat(const char *line)
{
	char cmd[16], op[16];
	if (strstr(line, " lua]"))
		return 1;
	if (quoted_arg(line, 0, cmd, sizeof(cmd)) != 0)
		return 0;
	if (!strcmp(cmd, "PING"))
		return 1;
	return !strcmp(cmd, "EVALSHA") && quoted_arg(line, 7, op, sizeof(op)) == 0 &&
	       !strcmp(op, "get");
}

/* Send ECHO mark, then read MONITOR up to it; the commands neither a
 * heartbeat nor the mark are counted (the first kept in `first`). */
static int read_monitor_to(redisContext *m, const rs_server *rs, const char *mark, char *first,
			   size_t size)
{
	redisReply *r = rs_cmd(rs, "ECHO %s", mark);
	int others = 0;

	assert_non_null(r);
	freeReplyObject(r);
	for (;;) {
		r = NULL;
		if (redisGetReply(m, (void **)&r) != REDIS_OK || !r)
			fail_msg("MONITOR: no line (%s)", m->errstr);
		if (r->type == REDIS_REPLY_STATUS && strstr(r->str, "\"ECHO\"") && strstr(r->str, mark)) {
			freeReplyObject(r);
			return others;
		}
		if (r->type == REDIS_REPLY_STATUS && !heartbeat(r->str)) {
			if (!others && first)
				snprintf(first, size, "%s", r->str);
			others++;
		}
		freeReplyObject(r);
	}
}

/* ---- the parent --------------------------------------------------------- */

/* The child of the round under way, and the parent's ends of its pipes
 * (-1: none): a failed assertion between the fork and the reap leaves it
 * to the teardown (kid_gone), which kills it by its PID, instead of a
 * child waiting for a word until its alarm. */
static struct {
	pid_t pid;
	int to_parent, from_parent;
} kid = { 0, -1, -1 };

static void kid_close(void)
{
	if (kid.to_parent >= 0)
		close(kid.to_parent);
	if (kid.from_parent >= 0)
		close(kid.from_parent);
	kid.to_parent = kid.from_parent = -1;
}

/* Wait for the child's exit (bounded; killed by its PID past the limit):
 * its exit code, the test failed if it did not exit. */
static int reap(pid_t pid, double limit_ms)
{
	char why[160];
	int code = child_reap(pid, (unsigned)(limit_ms / 1000.0) + 1u, why, sizeof(why));
	kid.pid = 0; /* reaped, whatever it said */
	if (code < 0)
		fail_msg("%s", why);
	return code;
}

/* After a failed assertion: no child outlives the test, none is left a
 * zombie. */
static void kid_gone(void)
{
	if (kid.pid > 0) {
		kill(kid.pid, SIGKILL);
		while (waitpid(kid.pid, NULL, 0) < 0 && errno == EINTR)
			;
		kid.pid = 0;
	}
	kid_close();
}

static void one_fork(replica *a, replica *b, const rs_server *rs, redisContext *m, int round)
{
	int to_parent[2], from_parent[2], status, others;
	wms_shared_stats before, after;
	char mark[32], first[512] = "";
	struct pollfd pf;
	pid_t pid;

	/* A trips the fleet; A's agent is held in A's listener for it */
	atomic_store(&a->hold, 1);
	fail_calls_shared(a->b, THRESHOLD);
	{
		double t0 = now_ms();
		while (!atomic_load(&a->held)) {
			if (now_ms() - t0 > limit(2000))
				fail_msg("round %d: A's trip did not open A", round);
			sleep_ms(1);
		}
	}
	if (wait_state(b->b, WMS_BREAKER_STATE_OPEN, limit(2000)) != 0)
		fail_msg("round %d: A's trip did not reach B", round);
	sleep_ms(valgrind() ? 500 : 20); /* B's agent back in its poll */
	wms_redis_store_stats(&before, a->store);
	snprintf(mark, sizeof(mark), "fork-mark-%d-start", round);
	read_monitor_to(m, rs, mark, NULL, 0);
	assert_int_equal(pipe(to_parent), 0);
	assert_int_equal(pipe(from_parent), 0);
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(to_parent[0]);
		close(from_parent[1]);
		child_main(a, b, m, rs, round, to_parent[1], from_parent[0]);
	}
	kid.pid = pid;
	kid.to_parent = to_parent[0];
	kid.from_parent = from_parent[1];
	close(to_parent[1]);
	close(from_parent[0]);
	atomic_store(&a->hold, 0); /* the parent's agent goes on */

	/* the child's part on A done (or the child gone) */
	pf.fd = to_parent[0];
	pf.events = POLLIN;
	pf.revents = 0;
	if (poll(&pf, 1, (int)limit(30000)) != 1) {
		kill(pid, SIGKILL);
		reap(pid, limit(5000));
		fail_msg("round %d: the child did not report", round);
	}
	snprintf(mark, sizeof(mark), "fork-mark-%d-end", round);
	others = read_monitor_to(m, rs, mark, first, sizeof(first));
	(void)!write(from_parent[1], "g", 1);
	status = reap(pid, limit(30000));
	kid_close();
	if (status != 0)
		fail_msg("round %d: child exit %d: %s", round, status, child_says(status));
	if (others)
		fail_msg("round %d: %d command(s) other than the parent's heartbeat reached Redis "
			 "while the child had A; the first: %s", round, others, first);

	/* the parent's store never lost Redis, and still has it */
	wms_redis_store_stats(&after, a->store);
	assert_int_equal(after.connects, before.connects);
	assert_int_equal(after.degrades, before.degrades);
	assert_int_equal(snap(a->b).store_state, WMS_STORE_STATE_CONNECTED);
	assert_int_equal(snap(b->b).store_state, WMS_STORE_STATE_CONNECTED);
	assert_int_equal(atomic_load(&a->degraded), 0);
	/* the child's force_closed went nowhere */
	assert_int_equal(rs_hget_int(rs, "wms:{" FLEET "}:s:wms", "st"), WMS_BREAKER_STATE_OPEN);
	assert_int_equal(wms_breaker_state_get(a->b), WMS_BREAKER_STATE_OPEN);
	assert_int_equal(wms_breaker_state_get(b->b), WMS_BREAKER_STATE_OPEN);
	/* the parent's force_closed, then its trip, reach the other replica */
	wms_breaker_force_closed(a->b);
	if (wait_state(b->b, WMS_BREAKER_STATE_CLOSED, limit(2000)) != 0)
		fail_msg("round %d: A's force_closed did not reach B", round);
	wait_mirror(a->b, rs);
	fail_calls_shared(a->b, THRESHOLD);
	if (wait_state(b->b, WMS_BREAKER_STATE_OPEN, limit(2000)) != 0)
		fail_msg("round %d: the parent's trip did not reach B", round);
	assert_int_equal(wms_breaker_state_get(a->b), WMS_BREAKER_STATE_OPEN);
	/* CLOSED again for the next round */
	wms_breaker_force_closed(a->b);
	if (wait_state(b->b, WMS_BREAKER_STATE_CLOSED, limit(2000)) != 0)
		fail_msg("round %d: A's second force_closed did not reach B", round);
	wait_mirror(a->b, rs);
}

/* What the teardown frees, also after a failed assertion. */
typedef struct world {
	rs_server rs;
	replica a, b;
	redisContext *m;
} world;

static int world_new(void **state)
{
	world *w = calloc(1, sizeof(*w));
	if (!w)
		return -1;
	*state = w;
	return 0;
}

static int world_free(void **state)
{
	world *w = *state;
	kid_gone();
	atomic_store(&w->a.hold, 0); /* after a failed assertion: A's agent goes on */
	if (w->m)
		redisFree(w->m);
	replica_free(&w->a);
	replica_free(&w->b);
	rs_stop(&w->rs);
	free(w);
	return 0;
}

static void a_store_across_two_forks(void **state)
{
	world *w = *state;
	redisReply *r;

	if (rs_start(&w->rs, 0) != 0)
		fail_msg("cannot start redis-server (is it installed? ./run installs it)");
	assert_int_equal(replica_make(&w->a, &w->rs, "wms", THRESHOLD, 0), 0);
	assert_int_equal(replica_make(&w->b, &w->rs, "wms", THRESHOLD, 10000), 0);
	assert_int_equal(wait_store_state(w->a.b, WMS_STORE_STATE_CONNECTED, limit(3000)), 0);
	assert_int_equal(wait_store_state(w->b.b, WMS_STORE_STATE_CONNECTED, limit(3000)), 0);
	w->m = rs_connect(&w->rs);
	assert_non_null(w->m);
	r = redisCommand(w->m, "MONITOR");
	assert_non_null(r);
	freeReplyObject(r);

	one_fork(&w->a, &w->b, &w->rs, w->m, 1);
	one_fork(&w->a, &w->b, &w->rs, w->m, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(a_store_across_two_forks, world_new, world_free),
	};
	/* a child that failed early has closed its end of the go pipe */
	signal(SIGPIPE, SIG_IGN);
	parent_pid = getpid();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
