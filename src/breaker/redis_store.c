/*
 * The Redis breaker store (wms/shared.h): one agent thread per store owns
 * the Redis connections; callers only touch each breaker's mirror (atomics)
 * and a bounded queue of outcomes, so no call ever waits on Redis.
 *
 * Each linked breaker has a hash (state, epoch, counts, reopenings, open
 * deadline in Redis's clock), a lease key and, in the rate modes, a window
 * key: "wms:{FLEET}:s:NAME", "...:l:NAME", "...:w:NAME", changed only by
 * the script (redis_script.c), which publishes every change on
 * "wms:{FLEET}:c:NAME". The agent learns of changes from the script's
 * replies, from pub/sub, and from a poll of every hash each heartbeat
 * (pub/sub loses messages across a reconnect); the poll is also how it
 * knows Redis answers. A command that fails or outlives command_timeout_ms
 * degrades the store: every breaker's in-process engine is seeded with the
 * mirror and decides until the agent has reconnected and rejoined (the
 * join script: epochs only grow, and open wins).
 *
 * After a fork (util/fork.h) the child has a copy of the store without its
 * agent thread, with the parent's Redis connections and eventfd: there
 * every breaker's engine decides, seeded from the mirror as when the store
 * is lost, nothing is queued or woken, and freeing waits for no lock, joins
 * nothing and sends nothing (to_engine_in_child, store_free_in_child).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include <hiredis/hiredis.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include "internal.h"
#include "util/fork.h"
#include "wms/shared.h"
#include "wms/sys/breaker_store.h"
#include "redis_int.h"

#define NS_PER_MS 1000000ull
#define ST_CLOSED WMS_BREAKER_STATE_CLOSED
#define ST_OPEN WMS_BREAKER_STATE_OPEN
#define ST_HALF WMS_BREAKER_STATE_HALF_OPEN

enum { MODE_LOCAL = 0, MODE_SHARED = 1 };
enum { NO_MANUAL = -1 };
#define MAN_STATE(m) ((m) & 7)
#define MAN_AGAIN 8 /* put back by the agent: its attempt failed */
_Static_assert(WMS_BREAKER_STATE_FORCED_OPEN <= 7, "every breaker state fits MAN_STATE, below MAN_AGAIN");

typedef struct rlink rlink;

/* One queued outcome: a call in CLOSED 'f' failed, 's' succeeded, 'g' and
 * 't' the same but slow; a trial 'F', 'S', 'G', 'T' (redis_script.c). */
typedef struct queued {
	rlink *link;
	uint64_t epoch;
	char what;
} queued;

typedef struct cell {
	_Atomic size_t seq;
	queued o;
} cell;

struct rlink {
	struct rstore *s;
	/* The breaker: callers use it freely (it outlives their calls); the
	 * agent only under blk, after checking `gone` (see hold()). */
	wms_breaker *b;
	pthread_mutex_t blk;      /* held by the agent while it uses b; never across I/O */
	_Atomic int gone;         /* unlinked: the agent frees the link */
	size_t free_after;        /* once unlinked: freed when the queue's tail is past this */
	char *key, *lease, *win, *quorum, *chan; /* "wms:{FLEET}:s:NAME", l:, w:, q:, c: */
	uint32_t threshold, open_ms, growth, cap_ms, jitter, lease_ms, trials;
	char mode_c;              /* 'c' consecutive, 'n' count window, 't' time window */
	int gated;                /* consecutive mode without a quorum: see link_acquire */
	int orphan;               /* made in a child on the parent's store: on no list */
	uint32_t rate_pct, slow_pct, window, min_calls;
	/* The store's fork generation, beside the mirror the closed path reads
	 * (a copy: no load through `s` on that path). */
	unsigned long fork_gen;
	/* In a child: who hands the link to its engine (to_engine_in_child). */
	_Atomic unsigned long switching;

	/* the mirror: written by the agent, read by callers */
	_Atomic int mode;
	_Atomic int state;
	_Atomic uint64_t epoch;
	_Atomic uint64_t open_until_ns;
	_Atomic uint32_t failures;
	_Atomic uint32_t w_calls, w_failures, w_slow; /* the fleet's window (rate modes) */
	/* The gate (consecutive mode): the mirror's count above this process's
	 * failures queued and not yet answered by Redis, in one word, so that
	 * the agent moves failures from the one to the other in a single step
	 * (a caller never counts one twice, nor nowhere). */
	_Atomic uint64_t gate;
	/* This process's round of trials: its lease's epoch above the trials it
	 * may still start (one word, so a slot given back can never land in
	 * another round), and when the lease runs out (the breaker's clock). */
	_Atomic uint64_t round;
	_Atomic uint64_t lease_until_ns;
	_Atomic int want_probe;
	/* NO_MANUAL, or the change made by hand not yet answered by Redis: its
	 * state (MAN_STATE), with MAN_AGAIN when the agent put it back after
	 * a failed attempt. A caller's change never has it, so the agent tells
	 * a change it must send again from a newer one with the same state
	 * however many were made meanwhile (a count of changes would wrap). */
	_Atomic int manual;

	/* the agent's own (`next`: the pending list's until the agent takes it) */
	rlink *next;
	uint64_t retry_join_ns;   /* after an error reply, when to try joining again */
	/* The epoch the pending change made by hand was first sent with; when
	 * it is put back (MAN_AGAIN), not before when (a refusal's back-off). */
	uint64_t man_epoch, man_after_ns;
	int joined;
	int join_local;           /* the engine's state the join was sent with */
	int told;                 /* the store state last told to the breaker */
	uint64_t last_probe_ns, last_probe_epoch;
	uint64_t f_popped;        /* failures popped, not yet settled in the gate */
	int polled;               /* its command is in this poll's pipeline */
	char *batch;              /* outcomes of one epoch waiting to be sent */
	size_t batch_len;
	uint64_t batch_epoch;
};

typedef struct rstore {
	wms_breaker_store base; /* first: the store handed out */
	wms__redis_addr addr;
	char *fleet;
	uint32_t command_timeout_ms, heartbeat_ms, quorum;
	uint64_t key_ttl_ms;
	char *script;            /* redis_script.c's, whole */
	char sha[41];
	char token[33];
	char *pattern;           /* "wms:{FLEET}:*:ch" */

	pthread_t thread;
	int thread_started;
	unsigned long fork_gen;  /* made in this generation (util/fork.h) */
	int wake_fd;
	_Atomic int wake_pending;
	_Atomic int stop;

	/* Links made since the agent last looked: the one thing callers and
	 * the agent share under a lock, held for a pointer swap only. */
	pthread_mutex_t lock;
	rlink *pending;
	rlink *links;            /* the agent's own */

	cell *q;
	size_t q_mask;
	_Atomic size_t q_head; /* producers */
	size_t q_tail;         /* the agent */

	/* the agent's own */
	const char *why;         /* why the store was given up on: an event's reason */
	redisContext *cmd, *sub;
	int connected;
	int store_state;
	uint64_t next_beat_ns, next_connect_ns;
	uint64_t backoff_ms;     /* between reconnect attempts: heartbeat, doubling to 2 s */
	uint64_t drain_until_ns; /* the last drain's deadline, when the store is freed */
	uint64_t rng;

	_Atomic uint64_t n_commands, n_scripts, n_loads, n_messages, n_connects, n_degrades,
		n_dropped;
} rstore;

/* ---- the outcome queue: bounded, many producers, one consumer -------- */

static int q_push(rstore *s, const queued *o)
{
	size_t pos = atomic_load_explicit(&s->q_head, memory_order_relaxed);
	for (;;) {
		cell *c = &s->q[pos & s->q_mask];
		size_t seq = atomic_load_explicit(&c->seq, memory_order_acquire);
		intptr_t dif = (intptr_t)seq - (intptr_t)pos;
		if (dif == 0) {
			if (atomic_compare_exchange_weak_explicit(&s->q_head, &pos, pos + 1,
								  memory_order_relaxed,
								  memory_order_relaxed)) {
				c->o = *o;
				atomic_store_explicit(&c->seq, pos + 1, memory_order_release);
				return 0;
			}
		} else if (dif < 0) {
			return -1; /* full */
		} else {
			pos = atomic_load_explicit(&s->q_head, memory_order_relaxed);
		}
	}
}

static int q_pop(rstore *s, queued *o)
{
	cell *c = &s->q[s->q_tail & s->q_mask];
	size_t seq = atomic_load_explicit(&c->seq, memory_order_acquire);

	if ((intptr_t)seq - (intptr_t)(s->q_tail + 1) < 0)
		return -1; /* empty */
	*o = c->o;
	atomic_store_explicit(&c->seq, s->q_tail + s->q_mask + 1, memory_order_release);
	s->q_tail++;
	return 0;
}

/* After a push. Both sides swap wake_pending (read-modify-writes, so one
 * reads the other's write): either the agent's swap to 0 comes after this
 * one and, acquiring it, sees the pushed outcome, or this swap reads its
 * 0 and writes the eventfd. No wake-up is lost to store buffering, and no
 * fence is needed (ThreadSanitizer does not model fences). */
static void wake(rstore *s)
{
	/* in a child the eventfd is the parent's agent's: nobody here to wake */
	if (wms__forked_since(s->fork_gen))
		return;
	if (atomic_exchange_explicit(&s->wake_pending, 1, memory_order_acq_rel) == 0) {
		uint64_t one = 1;
		ssize_t w = write(s->wake_fd, &one, sizeof(one));
		(void)w; /* an eventfd at its maximum is awake already */
	}
}

/* ---- the link's calls (any thread; never blocking) ------------------ */

static void end_round(rlink *l);

static uint32_t ms_left(uint64_t until, uint64_t now)
{
	uint64_t d = until > now ? until - now : 0;
	uint64_t ms = (d + NS_PER_MS - 1) / NS_PER_MS;
	return ms > UINT32_MAX ? UINT32_MAX : (uint32_t)ms;
}

/* In a child forked since the store was made, the first call that finds
 * a link still on the mirror hands the breaker to its engine, as the
 * agent does when Redis is lost (hand_to_engine, tell_link_degraded): the
 * engine is seeded with what the fleet had decided at the fork, and the
 * breaker is told that its store is DEGRADED (its listener, if any, runs
 * on this caller's thread). The mirror is this process's copy: nothing of
 * the parent's is touched.
 *
 * One thread wins the switch, by a CAS on l->switching, and seeds the
 * engine before it stores MODE_LOCAL, the agent's order: no call gets the
 * verdict of an engine not seeded yet (CLOSED while the fleet was OPEN). A
 * call on another thread meanwhile answers from the mirror, as on a shared
 * link (what it would queue or wake goes nowhere in a child: enqueue,
 * wake). l->switching holds the generation the switch was taken in, plus
 * one: a child forked from this one in the middle of a switch (mode still
 * SHARED there, the winner not there) takes it again instead of answering
 * from the mirror for ever.
 *
 * 1: the engine decides (the caller answers WMS_STORE_LOCAL); 0: another
 * thread is switching, answer from the mirror. */
static int to_engine_in_child(rlink *l)
{
	unsigned long mine = atomic_load_explicit(&wms__fork_gen, memory_order_relaxed) + 1;
	unsigned long taken = atomic_load(&l->switching);
	wms_breaker_state st;
	uint32_t rem;

	if (taken == mine || !atomic_compare_exchange_strong(&l->switching, &taken, mine))
		/* the winner may have finished since the caller looked */
		return atomic_load_explicit(&l->mode, memory_order_acquire) != MODE_SHARED;
	st = (wms_breaker_state)atomic_load(&l->state);
	rem = ms_left(atomic_load(&l->open_until_ns), wms_breaker_clock_ns(l->b));
	end_round(l);
	wms_breaker_local_adopt(l->b, st, rem);
	/* seeded: from here every call asks the engine */
	atomic_store_explicit(&l->mode, MODE_LOCAL, memory_order_release);
	st = wms_breaker_local_state(l->b, NULL);
	wms_breaker_store_event(l->b, st, st,
				"shared store belongs to the process this one was forked from: the "
				"in-process breaker decides",
				WMS_STORE_STATE_DEGRADED);
	return 1;
}

#define GATE_COUNT(g) ((uint32_t)((g) >> 32))
#define GATE_OWN(g) ((uint32_t)(g))

/* The mirror's count is `count` now, and `settled` of this process's
 * failures have been answered (they are in that count, or were refused). */
static void gate_set(rlink *l, uint32_t count, uint64_t settled)
{
	uint64_t g = atomic_load(&l->gate), ng;
	do
		ng = ((uint64_t)count << 32) | (uint32_t)(GATE_OWN(g) - settled);
	while (!atomic_compare_exchange_weak(&l->gate, &g, ng));
}

static void gate_settle(rlink *l, uint64_t settled)
{
	if (settled)
		atomic_fetch_sub(&l->gate, settled);
}

#define ROUND_BITS 20 /* permitted_calls_in_half_open <= 100000 */
#define ROUND_SLOTS(w) ((uint32_t)((w) & ((1u << ROUND_BITS) - 1)))
#define ROUND_EPOCH(w) ((w) >> ROUND_BITS)

/* A trial slot of this process's round, while its lease lasts; *epoch:
 * the round's (what the trial's outcome is sent with). */
static int take_slot(rlink *l, uint64_t *epoch)
{
	uint64_t w = atomic_load(&l->round);
	if (!ROUND_SLOTS(w) || wms_breaker_clock_ns(l->b) >= atomic_load(&l->lease_until_ns))
		return 0;
	while (ROUND_SLOTS(w))
		if (atomic_compare_exchange_weak(&l->round, &w, w - 1)) {
			*epoch = ROUND_EPOCH(w);
			return 1;
		}
	return 0;
}

/* A trial that says nothing (released, IGNORED): its slot back, if its
 * round is still on. */
static void give_slot(rlink *l, uint64_t epoch)
{
	uint64_t w = atomic_load(&l->round);
	while (ROUND_SLOTS(w) && ROUND_EPOCH(w) == epoch && ROUND_SLOTS(w) < l->trials)
		if (atomic_compare_exchange_weak(&l->round, &w, w + 1))
			return;
}

static int link_acquire(wms_breaker_link *bl, wms_breaker_permit *out, uint32_t *retry)
{
	rlink *l = (rlink *)bl;
	uint64_t now, until;
	int st;

	if (atomic_load_explicit(&l->mode, memory_order_acquire) != MODE_SHARED)
		return WMS_STORE_LOCAL;
	/* the closed path's one addition: a relaxed load and a compare; in a
	 * child, while another thread switches, the mirror answers */
	if (wms__forked_since(l->fork_gen) && to_engine_in_child(l))
		return WMS_STORE_LOCAL;
	st = atomic_load_explicit(&l->state, memory_order_acquire);
	switch (st) {
	case ST_CLOSED:
		if (l->gated) {
			/* This process's own failures on their way to Redis would take
			 * the fleet's count to the threshold: grant nothing until the
			 * agent has its answer (a round trip), or the fleet would see
			 * a failure per call made meanwhile. */
			uint64_t g = atomic_load_explicit(&l->gate, memory_order_acquire);
			if (GATE_OWN(g) && (uint64_t)GATE_COUNT(g) + GATE_OWN(g) >= l->threshold) {
				if (retry)
					*retry = 0;
				return WMS_ERR_CIRCUIT_OPEN;
			}
		}
		/* fall through */
	case WMS_BREAKER_STATE_DISABLED:
		out->flags = 0;
		out->epoch = atomic_load_explicit(&l->epoch, memory_order_acquire);
		return WMS_OK;
	case WMS_BREAKER_STATE_FORCED_OPEN:
		if (retry)
			*retry = l->open_ms;
		return WMS_ERR_CIRCUIT_OPEN;
	case ST_OPEN:
		now = wms_breaker_clock_ns(l->b);
		until = atomic_load_explicit(&l->open_until_ns, memory_order_acquire);
		if (now < until) {
			if (retry)
				*retry = ms_left(until, now);
			return WMS_ERR_CIRCUIT_OPEN;
		}
		break;
	default:
		break;
	}
	/* the open period is over, or a round of trials is on */
	if (take_slot(l, &out->epoch)) {
		out->flags = WMS_PERMIT_TRIAL;
		return WMS_OK;
	}
	if (!atomic_exchange(&l->want_probe, 1))
		wake(l->s);
	if (retry)
		*retry = 0;
	return WMS_ERR_CIRCUIT_OPEN;
}

static int is_closed_failure(char what)
{
	return what == 'f' || what == 'g';
}

static void enqueue(rlink *l, uint64_t epoch, char what)
{
	queued o;
	/* a permit the parent's store granted before the fork, reported in
	 * the child: no agent here will ever take it */
	if (wms__forked_since(l->fork_gen))
		return;
	o.link = l;
	o.epoch = epoch;
	o.what = what;
	if (is_closed_failure(what))
		atomic_fetch_add(&l->gate, 1);
	if (q_push(l->s, &o) != 0) {
		atomic_fetch_add_explicit(&l->s->n_dropped, 1, memory_order_relaxed);
		if (is_closed_failure(what))
			atomic_fetch_sub(&l->gate, 1);
		return;
	}
	wake(l->s);
}

static void link_record(wms_breaker_link *bl, const wms_breaker_permit *p, wms_outcome outcome,
			int slow)
{
	rlink *l = (rlink *)bl;
	int failed = outcome == WMS_OUTCOME_FAILURE;
	char what;

	if (l->mode_c == 'c')
		slow = 0; /* the consecutive mode has no slow calls */
	what = failed ? (slow ? 'g' : 'f') : (slow ? 't' : 's');
	if (p->flags & WMS_PERMIT_TRIAL) {
		if (outcome == WMS_OUTCOME_IGNORED) {
			/* says nothing: the slot is free for another trial */
			give_slot(l, p->epoch);
			return;
		}
		enqueue(l, p->epoch, (char)(what - 'a' + 'A'));
		return;
	}
	if (outcome == WMS_OUTCOME_IGNORED ||
	    atomic_load_explicit(&l->mode, memory_order_relaxed) != MODE_SHARED)
		return; /* granted before the store was lost: the engine decides now */
	if (atomic_load_explicit(&l->state, memory_order_relaxed) != ST_CLOSED)
		return; /* DISABLED, or a change since the permit: nothing to count */
	/* In the consecutive mode a success says nothing new while the
	 * fleet's count is 0 and none of this process's failures is on its
	 * way; in a window every call counts. */
	if (failed || l->mode_c != 'c' || atomic_load_explicit(&l->gate, memory_order_acquire) != 0)
		enqueue(l, p->epoch, what);
}

static void link_release(wms_breaker_link *bl, const wms_breaker_permit *p)
{
	rlink *l = (rlink *)bl;
	if (p->flags & WMS_PERMIT_TRIAL)
		give_slot(l, p->epoch);
}

/* No trial slot, and no permit of a past round may give one back. */
static void end_round(rlink *l)
{
	atomic_store(&l->round, 0);
}

static void link_manual(wms_breaker_link *bl, wms_breaker_state to, int reset)
{
	rlink *l = (rlink *)bl;
	(void)reset; /* the fleet's state starts afresh either way; counters are per process */
	/* In a child the engine has made the change (breaker.c asked
	 * link_state first, which handed the link to its engine); the fleet
	 * is not told, there is no agent to tell it. Unless another thread
	 * was switching at that very moment (link_state answered from the
	 * mirror): its seeding may then land after this change and undo it,
	 * a window of a clock read and the adoption. */
	if (wms__forked_since(l->fork_gen))
		return;
	end_round(l);
	/* pending first: a reply the agent takes meanwhile must not undo it */
	atomic_store(&l->manual, (int)to);
	atomic_store(&l->failures, 0); /* the fleet's count starts afresh too */
	gate_set(l, 0, 0);
	if (atomic_load(&l->mode) == MODE_SHARED)
		atomic_store(&l->state, (int)to);
	wake(l->s);
}

static int link_state(wms_breaker_link *bl)
{
	rlink *l = (rlink *)bl;
	if (atomic_load_explicit(&l->mode, memory_order_acquire) != MODE_SHARED)
		return WMS_STORE_LOCAL;
	if (wms__forked_since(l->fork_gen) && to_engine_in_child(l))
		return WMS_STORE_LOCAL;
	return atomic_load_explicit(&l->state, memory_order_acquire);
}

static void link_snapshot(wms_breaker_link *bl, wms_breaker_snapshot *out)
{
	rlink *l = (rlink *)bl;
	uint64_t now;

	if (atomic_load(&l->mode) != MODE_SHARED)
		return;
	if (wms__forked_since(l->fork_gen) && to_engine_in_child(l)) {
		/* `out` may hold the engine from before it was seeded: again,
		 * from the engine (this link answers LOCAL now: no deeper) */
		wms_breaker_snapshot_get(out, l->b);
		return;
	}
	out->state = (wms_breaker_state)atomic_load(&l->state);
	out->consecutive_failures = atomic_load(&l->failures);
	out->retry_after_ms = 0;
	out->half_open_in_flight = 0;
	if (l->mode_c != 'c') {
		uint32_t calls = atomic_load(&l->w_calls);
		out->window_calls = calls;
		out->failure_rate = out->slow_call_rate = -1.0;
		if (calls && calls >= l->min_calls) {
			out->failure_rate = 100.0 * atomic_load(&l->w_failures) / calls;
			out->slow_call_rate = 100.0 * atomic_load(&l->w_slow) / calls;
		}
	}
	if (out->state == ST_OPEN) {
		now = wms_breaker_clock_ns(l->b);
		out->retry_after_ms = ms_left(atomic_load(&l->open_until_ns), now);
	} else if (out->state == WMS_BREAKER_STATE_FORCED_OPEN) {
		out->retry_after_ms = l->open_ms; /* the hint link_acquire gives */
	}
}

/* The link's memory; its mutex is not touched (see link_free). */
static void link_free_memory(rlink *l)
{
	wms__free(l->key);
	wms__free(l->lease);
	wms__free(l->win);
	wms__free(l->quorum);
	wms__free(l->chan);
	wms__free(l->batch);
	wms__free(l);
}

static void link_free(rlink *l)
{
	pthread_mutex_destroy(&l->blk);
	link_free_memory(l);
}

static void link_unlink(wms_breaker_link *bl)
{
	rlink *l = (rlink *)bl;
	rstore *s = l->s;
	if (wms__forked_since(s->fork_gen)) {
		/* No agent, and blk may have been held by the parent's at the
		 * fork: a link of the parent's lists is only marked, for
		 * store_free; one made here is on none, and goes now. */
		if (l->orphan)
			link_free(l);
		else
			atomic_store_explicit(&l->gone, 1, memory_order_relaxed);
		return;
	}
	/* The agent may hold outcomes of this link in its queue: it frees the
	 * link once it has drained them. blk is held by the agent only for a
	 * few reads and writes of the breaker (and its listener), never across
	 * Redis I/O: this never waits on Redis. */
	pthread_mutex_lock(&l->blk);
	l->free_after = atomic_load(&s->q_head);
	atomic_store_explicit(&l->gone, 1, memory_order_release);
	pthread_mutex_unlock(&l->blk);
	wake(s);
}

/* The agent's way to the breaker: NULL once it is unlinked; otherwise it
 * stays alive until unhold(). */
static wms_breaker *hold(rlink *l)
{
	pthread_mutex_lock(&l->blk);
	if (atomic_load_explicit(&l->gone, memory_order_relaxed)) {
		pthread_mutex_unlock(&l->blk);
		return NULL;
	}
	return l->b;
}

static void unhold(rlink *l)
{
	pthread_mutex_unlock(&l->blk);
}

static int gone(rlink *l)
{
	return atomic_load_explicit(&l->gone, memory_order_acquire);
}

static wms_status link_new(wms_breaker_store *bs, wms_breaker *b, const wms_breaker_options *o,
			   wms_breaker_link **out, wms_error *err)
{
	rstore *s = (rstore *)bs;
	rlink *l;
	char *prefix;

	l = wms__calloc(1, sizeof(*l));
	if (l && pthread_mutex_init(&l->blk, NULL) != 0) {
		wms__free(l);
		return wms__fail(err, WMS_ERR_INTERNAL, WMS_DELIVERY_NOT_SENT, "shared: no mutex");
	}
	prefix = wms__join3("wms:{", s->fleet, "}:");
	if (!l || !prefix)
		goto nomem;
	/* a tag before the breaker's name, so that no name (they may hold ':')
	 * reaches another's keys */
	l->key = wms__join3(prefix, "s:", o->name);
	l->lease = wms__join3(prefix, "l:", o->name);
	l->win = wms__join3(prefix, "w:", o->name);
	l->quorum = wms__join3(prefix, "q:", o->name);
	l->chan = wms__join3(prefix, "c:", o->name);
	l->batch = wms__malloc(256);
	if (!l->key || !l->lease || !l->win || !l->quorum || !l->chan || !l->batch)
		goto nomem;
	wms__free(prefix);
	l->s = s;
	l->b = b;
	l->threshold = o->failure_threshold;
	l->open_ms = o->open_duration_ms;
	l->growth = o->open_duration_growth_pct;
	l->cap_ms = o->max_open_duration_ms;
	l->jitter = o->open_duration_jitter_pct;
	l->lease_ms = o->max_wait_in_half_open_ms;
	l->trials = o->permitted_calls_in_half_open;
	l->mode_c = o->mode == WMS_BREAKER_MODE_COUNT_BASED  ? 'n'
		    : o->mode == WMS_BREAKER_MODE_TIME_BASED ? 't'
							     : 'c';
	l->gated = l->mode_c == 'c' && s->quorum <= 1;
	l->rate_pct = o->failure_rate_threshold;
	l->slow_pct = o->slow_call_rate_threshold;
	l->window = o->sliding_window_size;
	l->min_calls = o->minimum_number_of_calls;
	l->fork_gen = s->fork_gen;
	atomic_init(&l->mode, MODE_LOCAL);
	atomic_init(&l->state, ST_CLOSED);
	atomic_init(&l->manual, NO_MANUAL);
	atomic_init(&l->gone, 0);
	atomic_init(&l->switching, 0);
	if (wms__forked_since(s->fork_gen)) {
		/* A breaker made in a child on the parent's store: no agent will
		 * take it, and the store's lock may have been held at the fork.
		 * It stays off the lists (its unlink frees it) and starts on a
		 * mirror that says CLOSED, so that its first call hands it to
		 * its engine as an inherited one (and tells it DEGRADED). */
		l->orphan = 1;
		atomic_store(&l->mode, MODE_SHARED);
		*out = (wms_breaker_link *)l;
		return WMS_OK;
	}
	pthread_mutex_lock(&s->lock);
	l->next = s->pending;
	s->pending = l;
	pthread_mutex_unlock(&s->lock);
	*out = (wms_breaker_link *)l;
	wake(s);
	return WMS_OK;
nomem:
	wms__free(prefix);
	if (l)
		link_free(l);
	return wms__fail(err, WMS_ERR_NOMEM, WMS_DELIVERY_NOT_SENT, "shared: out of memory");
}

/* ---- the agent: Redis I/O -------------------------------------------- */

static struct timeval tv_ms(uint32_t ms)
{
	struct timeval tv;
	tv.tv_sec = ms / 1000;
	tv.tv_usec = (long)(ms % 1000) * 1000;
	return tv;
}

static void drop_ctx(redisContext **c)
{
	if (*c)
		redisFree(*c);
	*c = NULL;
}

static redisReply *command_argv(rstore *s, redisContext *c, int argc, const char **argv,
				const size_t *lens)
{
	atomic_fetch_add_explicit(&s->n_commands, 1, memory_order_relaxed);
	return redisCommandArgv(c, argc, argv, lens);
}

/* Why Redis refused a command of the connection's setup: what the
 * breakers' events will say. */
static void refused(rstore *s, const redisReply *r, const char *why)
{
	s->why = !strncmp(r->str, "NOAUTH", 6)
			 ? "shared store needs AUTH (no password in the URL): the in-process "
			   "breaker decides"
			 : why;
}

static redisContext *open_ctx(rstore *s)
{
	struct timeval tv = tv_ms(s->command_timeout_ms);
	redisContext *c;
	redisReply *r;
	char db[16];

	c = s->addr.path[0] ? redisConnectUnixWithTimeout(s->addr.path, tv)
			    : redisConnectWithTimeout(s->addr.host, s->addr.port, tv);
	if (!c || c->err || redisSetTimeout(c, tv) != REDIS_OK ||
	    fcntl(c->fd, F_SETFD, FD_CLOEXEC) != 0) { /* hiredis 0.14 leaves it inheritable */
		if (c)
			redisFree(c);
		return NULL;
	}
	if (s->addr.password[0]) {
		/* AUTH [USER] PASSWORD */
		const char *argv[3] = { "AUTH", s->addr.user, s->addr.password };
		size_t lens[3] = { 4, strlen(s->addr.user), strlen(s->addr.password) };
		if (!s->addr.user[0]) {
			argv[1] = argv[2];
			lens[1] = lens[2];
		}
		r = command_argv(s, c, s->addr.user[0] ? 3 : 2, argv, lens);
		if (!r || r->type == REDIS_REPLY_ERROR) {
			if (r) {
				s->why = "shared store refused AUTH (user or password): the in-process "
					 "breaker decides";
				freeReplyObject(r);
			}
			redisFree(c);
			return NULL;
		}
		freeReplyObject(r);
	}
	if (s->addr.db) {
		const char *argv[2] = { "SELECT", db };
		size_t lens[2];
		snprintf(db, sizeof(db), "%u", s->addr.db);
		lens[0] = 6;
		lens[1] = strlen(db);
		r = command_argv(s, c, 2, argv, lens);
		if (!r || r->type == REDIS_REPLY_ERROR) {
			if (r) {
				refused(s, r, "shared store refused SELECT (no such database): the "
					      "in-process breaker decides");
				freeReplyObject(r);
			}
			redisFree(c);
			return NULL;
		}
		freeReplyObject(r);
	}
	return c;
}

static int open_sub(rstore *s)
{
	const char *argv[2] = { "PSUBSCRIBE", s->pattern };
	size_t lens[2] = { 10, strlen(s->pattern) };
	redisReply *r;

	s->sub = open_ctx(s);
	if (!s->sub)
		return -1;
	r = command_argv(s, s->sub, 2, argv, lens);
	if (!r || r->type != REDIS_REPLY_ARRAY) {
		if (r && r->type == REDIS_REPLY_ERROR)
			refused(s, r, "shared store refused PSUBSCRIBE (an ACL without pub/sub?): the "
				      "in-process breaker decides");
		if (r)
			freeReplyObject(r);
		drop_ctx(&s->sub);
		return -1;
	}
	freeReplyObject(r);
	return 0;
}

/* SCRIPT LOAD: 0 when Redis holds the script under our digest; -1 when
 * the connection failed, or Redis refused it (an ACL without scripting,
 * OOM): a Redis that cannot run the script cannot serve any breaker. */
static int load_script(rstore *s)
{
	const char *la[3] = { "SCRIPT", "LOAD", s->script };
	size_t ll[3] = { 6, 4, strlen(s->script) };
	redisReply *r;
	int ok;

	atomic_fetch_add_explicit(&s->n_loads, 1, memory_order_relaxed);
	r = command_argv(s, s->cmd, 3, la, ll);
	if (!r)
		return -1;
	ok = r->type == REDIS_REPLY_STRING && r->len == 40 && !memcmp(r->str, s->sha, 40);
	freeReplyObject(r);
	return ok ? 0 : -1;
}

/* Run the script: EVALSHA, and on NOSCRIPT (a restarted or flushed Redis)
 * load it and run it once more. NULL: the connection failed. */
static redisReply *run_script(rstore *s, rlink *l, int argc, const char **args)
{
	const char *argv[32];
	size_t lens[32];
	redisReply *r;
	int i, n = 0, tries;

	argv[n++] = "EVALSHA";
	argv[n++] = s->sha;
	argv[n++] = "4";
	argv[n++] = l->key;
	argv[n++] = l->lease;
	argv[n++] = l->win;
	argv[n++] = l->quorum;
	for (i = 0; i < argc && n < 32; i++)
		argv[n++] = args[i];
	for (i = 0; i < n; i++)
		lens[i] = strlen(argv[i]);
	for (tries = 0; tries < 2; tries++) {
		atomic_fetch_add_explicit(&s->n_scripts, 1, memory_order_relaxed);
		r = command_argv(s, s->cmd, n, argv, lens);
		if (!r)
			return NULL;
		if (r->type == REDIS_REPLY_ERROR && !strncmp(r->str, "NOSCRIPT", 8) && tries == 0) {
			freeReplyObject(r);
			if (load_script(s) != 0)
				return NULL;
			continue;
		}
		return r;
	}
	return r;
}

static uint64_t next_rand(rstore *s)
{
	s->rng ^= s->rng >> 12;
	s->rng ^= s->rng << 25;
	s->rng ^= s->rng >> 27;
	return s->rng * 0x2545F4914F6CDD1Dull;
}

static const char *reason_for(const rlink *l, int from, int to)
{
	if (from == ST_CLOSED && to == ST_OPEN)
		return l->mode_c == 'c' ? "consecutive failure threshold reached (fleet)"
					: "failure or slow-call rate at or above threshold (fleet)";
	if (from == ST_OPEN && to == ST_HALF)
		return "open duration elapsed (fleet)";
	if (from == ST_HALF && to == ST_CLOSED)
		return l->mode_c == 'c' ? "probe succeeded (fleet)" : "trials succeeded (fleet)";
	if (from == ST_HALF && to == ST_OPEN)
		return l->mode_c == 'c' ? "probe failed (fleet)" : "trials failed (fleet)";
	return "changed by the fleet";
}

/* A reply or message: { exists, state, epoch, failures, open ms left,
 * lease ms left, granted, window calls, failures, slow } as integers. */
typedef struct shared_view {
	long long exists, state, epoch, failures, rem_ms, lease_ms, granted, wc, wf, ws;
	uint64_t settle; /* this process's failures the reply answers (not from Redis) */
} shared_view;

/* The largest open period or lease a view may carry: the longest open
 * period the options allow is 2 x 86 400 000 ms (the cap plus 100 %
 * jitter), far below; the bound keeps now + ms * NS_PER_MS from wrapping
 * (a hash whose `un` some other writer set 600 years ahead would
 * otherwise read as open for a few ms). */
#define VIEW_MS_MAX ((long long)UINT32_MAX)
/* The largest epoch: a round packs it above ROUND_BITS bits of slots. */
#define VIEW_EPOCH_MAX ((long long)(UINT64_MAX >> ROUND_BITS >> 1))

/* What Redis says is a state this store can hold; anything else came from
 * a hash another writer (or a damaged one) left, and is not adopted. A
 * lease of -1 or -2 is PTTL's "none". */
static int view_in_range(const shared_view *v)
{
	return v->state >= 0 && v->state <= WMS_BREAKER_STATE_FORCED_OPEN && v->epoch >= 0 &&
	       v->epoch <= VIEW_EPOCH_MAX && v->failures >= 0 && v->rem_ms >= 0 &&
	       v->rem_ms <= VIEW_MS_MAX && v->lease_ms >= -2 && v->lease_ms <= VIEW_MS_MAX &&
	       v->wc >= 0 && v->wf >= 0 && v->ws >= 0 && v->wf <= v->wc && v->ws <= v->wc;
}

static int parse_reply(const redisReply *r, shared_view *v)
{
	long long *f[10] = { &v->exists, &v->state, &v->epoch, &v->failures, &v->rem_ms,
			     &v->lease_ms, &v->granted, &v->wc, &v->wf, &v->ws };
	size_t i;

	v->settle = 0;
	if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 10)
		return -1;
	for (i = 0; i < 10; i++) {
		if (r->element[i]->type != REDIS_REPLY_INTEGER)
			return -1;
		*f[i] = r->element[i]->integer;
	}
	return view_in_range(v) ? 0 : -1;
}

static uint32_t u32_of(long long v)
{
	return v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

static void set_counts(rlink *l, shared_view *v)
{
	gate_set(l, u32_of(v->failures), v->settle);
	v->settle = 0;
	atomic_store(&l->failures, u32_of(v->failures));
	atomic_store(&l->w_calls, u32_of(v->wc));
	atomic_store(&l->w_failures, u32_of(v->wf));
	atomic_store(&l->w_slow, u32_of(v->ws));
}

static void set_mirror(rlink *l, shared_view *v, uint64_t now)
{
	uint64_t rem = (uint64_t)v->rem_ms;
	atomic_store(&l->open_until_ns, now + rem * NS_PER_MS);
	if (v->granted) {
		atomic_store(&l->lease_until_ns, now + (uint64_t)v->lease_ms * NS_PER_MS);
		atomic_store(&l->round, ((uint64_t)v->epoch << ROUND_BITS) | l->trials);
	} else if ((uint64_t)v->epoch != atomic_load(&l->epoch)) {
		end_round(l); /* a new epoch: our round, if any, is over */
	}
	if (v->state == ST_CLOSED) {
		/* the counts first: a caller that sees CLOSED sees them */
		set_counts(l, v);
		atomic_store(&l->epoch, (uint64_t)v->epoch);
		atomic_store(&l->state, (int)v->state);
	} else {
		/* the state first: a trip's reply zeroes the count, and callers
		 * still seeing CLOSED would otherwise pass the gate meanwhile */
		atomic_store(&l->epoch, (uint64_t)v->epoch);
		atomic_store(&l->state, (int)v->state);
		set_counts(l, v);
	}
}

/* Take what Redis said of a link. Returns -1 if the hash is gone (the
 * link must rejoin). Events fire with the breaker held (hold()), which is
 * why a listener must not free its own breaker. */
static int adopt_view(rlink *l, shared_view *v)
{
	wms_breaker *b;
	uint64_t now;
	int from, rc = 0;

	if (!v->exists) {
		gate_settle(l, v->settle);
		l->joined = 0;
		return -1;
	}
	b = hold(l);
	if (!b) {
		gate_settle(l, v->settle);
		return 0;
	}
	now = wms_breaker_clock_ns(b);
	if (atomic_load(&l->mode) != MODE_SHARED) {
		from = wms_breaker_local_state(b, NULL);
		if (from != l->join_local &&
		    (from == ST_OPEN || from == ST_HALF || from == WMS_BREAKER_STATE_FORCED_OPEN)) {
			/* the engine tripped while the join was on its way: join
			 * again with that (open wins) */
			l->joined = 0;
			rc = -1;
			goto out;
		}
		set_mirror(l, v, now);
		atomic_store(&l->mode, MODE_SHARED);
		l->told = WMS_STORE_STATE_CONNECTED;
		wms_breaker_store_event(b, (wms_breaker_state)from, (wms_breaker_state)v->state,
					"shared store joined", WMS_STORE_STATE_CONNECTED);
		goto out;
	}
	if ((uint64_t)v->epoch < atomic_load(&l->epoch)) {
		/* an epoch from before ours: the hash was flushed or lost and made
		 * again by a newcomer; rejoin from the mirror (open wins) */
		l->joined = 0;
		rc = -1;
		goto out;
	}
	if (atomic_load(&l->manual) != NO_MANUAL)
		goto out; /* a change made by hand is on its way: this view is older */
	if (v->lease_ms > 0 && ROUND_SLOTS(atomic_load(&l->round)) &&
	    ROUND_EPOCH(atomic_load(&l->round)) == (uint64_t)v->epoch)
		/* our round goes on: each trial reported renews the lease */
		atomic_store(&l->lease_until_ns, now + (uint64_t)v->lease_ms * NS_PER_MS);
	from = atomic_load(&l->state);
	if ((uint64_t)v->epoch == atomic_load(&l->epoch) && from == v->state && !v->granted) {
		/* nothing moved but the counts and the clock */
		set_counts(l, v);
		if (v->state == ST_OPEN)
			atomic_store(&l->open_until_ns, now + (uint64_t)v->rem_ms * NS_PER_MS);
		goto out;
	}
	set_mirror(l, v, now);
	if (from != v->state)
		wms_breaker_store_event(b, (wms_breaker_state)from, (wms_breaker_state)v->state,
					reason_for(l, from, (int)v->state), WMS_STORE_STATE_CONNECTED);
out:
	gate_settle(l, v->settle); /* a view not taken: its failures answered all the same */
	unhold(l);
	return rc;
}

/* `failures`: this process's failures the command carries. Once Redis has
 * answered, the view's count takes them over from the gate's own part in
 * one step (gate_set). */
static int run_and_adopt_failures(rstore *s, rlink *l, int argc, const char **args,
				  uint64_t failures)
{
	shared_view v;
	redisReply *r = run_script(s, l, argc, args);

	if (!r)
		return -1; /* the connection failed or timed out */
	l->f_popped -= failures;
	if (parse_reply(r, &v) != 0) {
		/* an error reply for this link (WRONGTYPE, OOM, READONLY, ...):
		 * this link's trouble, not the connection's */
		gate_settle(l, failures);
		freeReplyObject(r);
		return 1;
	}
	v.settle = failures;
	freeReplyObject(r);
	adopt_view(l, &v);
	return 0;
}

static int run_and_adopt(rstore *s, rlink *l, int argc, const char **args)
{
	return run_and_adopt_failures(s, l, argc, args, 0);
}

#define U64(buf, v) (snprintf((buf), sizeof(buf), "%llu", (unsigned long long)(v)), (buf))

static int do_join(rstore *s, rlink *l)
{
	char ttl[24], lst[24], rem[24], lep[24];
	const char *args[6];
	uint32_t rem_ms = 0;
	wms_breaker *b = hold(l);
	int st, rc;

	if (!b)
		return 0;
	if (atomic_load(&l->mode) == MODE_SHARED) {
		/* the hash vanished under us (FLUSHALL, a restart, expiry): the
		 * mirror is what we know */
		uint64_t now = wms_breaker_clock_ns(b);
		st = atomic_load(&l->state);
		rem_ms = ms_left(atomic_load(&l->open_until_ns), now);
	} else {
		st = wms_breaker_local_state(b, &rem_ms);
	}
	unhold(l);
	l->join_local = st;
	args[0] = "join";
	args[1] = l->chan;
	args[2] = U64(ttl, s->key_ttl_ms);
	args[3] = U64(lst, (unsigned)st);
	args[4] = U64(rem, rem_ms);
	args[5] = U64(lep, atomic_load(&l->epoch));
	rc = run_and_adopt(s, l, 6, args);
	if (rc != 0)
		return rc;
	l->joined = atomic_load(&l->mode) == MODE_SHARED;
	return 0;
}

static int flush_batch(rstore *s, rlink *l)
{
	char ttl[24], ep[24], thr[16], base[16], growth[16], cap[16], jit[16], rnd[24];
	char mode[2] = { l->mode_c, '\0' }, frt[16], srt[16], size[16], min[16], trials[16];
	char quorum[16], lease[16];
	const char *args[20];
	uint64_t failures = 0;
	size_t i;

	if (!l->batch_len)
		return 0;
	for (i = 0; i < l->batch_len; i++)
		failures += is_closed_failure(l->batch[i]) ? 1u : 0u;
	l->batch[l->batch_len] = '\0';
	args[0] = "rec";
	args[1] = l->chan;
	args[2] = U64(ttl, s->key_ttl_ms);
	args[3] = U64(ep, l->batch_epoch);
	args[4] = l->batch;
	args[5] = s->token;
	args[6] = U64(thr, l->threshold);
	args[7] = U64(base, l->open_ms);
	args[8] = U64(growth, l->growth);
	args[9] = U64(cap, l->cap_ms);
	args[10] = U64(jit, l->jitter);
	args[11] = U64(rnd, next_rand(s) >> 33);
	args[12] = mode;
	args[13] = U64(frt, l->rate_pct);
	args[14] = U64(srt, l->slow_pct);
	args[15] = U64(size, l->window);
	args[16] = U64(min, l->min_calls);
	args[17] = U64(trials, l->trials);
	args[18] = U64(quorum, s->quorum);
	args[19] = U64(lease, l->lease_ms);
	l->batch_len = 0;
	return run_and_adopt_failures(s, l, 20, args, failures);
}

static int do_probe(rstore *s, rlink *l)
{
	char ttl[24], lease[24];
	const char *args[5] = { "probe", l->chan, U64(ttl, s->key_ttl_ms), s->token,
				U64(lease, l->lease_ms) };
	return run_and_adopt(s, l, 5, args);
}

static int do_manual(rstore *s, rlink *l, int to, uint64_t epoch, int again)
{
	char ttl[24], st[24], ep[24];
	const char *args[6] = { "man", l->chan, U64(ttl, s->key_ttl_ms), U64(st, (unsigned)to),
				U64(ep, epoch), again ? "1" : "0" };
	wms_breaker *b = hold(l);
	/* a link being freed sends it all the same (send_manual) */
	if (b) {
		l->join_local = wms_breaker_local_state(b, NULL);
		unhold(l);
	}
	return run_and_adopt(s, l, 6, args);
}

static void link_refused(rlink *l, uint64_t now);

/* Every link's hash in one round trip: the poll of epochs, and the
 * heartbeat. */
static int poll_all(rstore *s)
{
	char ttl[24];
	rlink *l;
	int n = 0, noscript = 0;

	U64(ttl, s->key_ttl_ms);
	for (l = s->links; l; l = l->next) {
		char mode[2] = { l->mode_c, '\0' }, size[16];
		const char *argv[12] = { "EVALSHA", s->sha, "4", l->key, l->lease, l->win, l->quorum,
					 "get", l->chan, ttl, mode, U64(size, l->window) };
		size_t lens[12];
		int i;
		l->polled = 0;
		if (gone(l) || !l->joined)
			continue;
		l->polled = 1;
		for (i = 0; i < 12; i++)
			lens[i] = strlen(argv[i]);
		if (redisAppendCommandArgv(s->cmd, 12, argv, lens) != REDIS_OK)
			return -1;
		atomic_fetch_add_explicit(&s->n_commands, 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&s->n_scripts, 1, memory_order_relaxed);
		n++;
	}
	if (!n) { /* nothing joined yet: a PING is the heartbeat */
		redisReply *r = redisCommand(s->cmd, "PING");
		int ok;
		atomic_fetch_add_explicit(&s->n_commands, 1, memory_order_relaxed);
		if (!r)
			return -1;
		ok = r->type == REDIS_REPLY_STATUS; /* not -LOADING, -NOAUTH, ... */
		freeReplyObject(r);
		return ok ? 0 : -1;
	}
	/* Exactly the links sent, in their order: a listener run by a reply
	 * may free a breaker (or a refusal unjoin one) before the next reply
	 * is read, and its reply must not go to the next link. */
	for (l = s->links; l; l = l->next) {
		redisReply *r = NULL;
		shared_view v;
		if (!l->polled)
			continue;
		l->polled = 0;
		if (redisGetReply(s->cmd, (void **)&r) != REDIS_OK || !r)
			return -1;
		if (r->type == REDIS_REPLY_ERROR && !strncmp(r->str, "NOSCRIPT", 8)) {
			noscript = 1; /* a flushed or restarted Redis: load it below */
		} else if (parse_reply(r, &v) == 0) {
			adopt_view(l, &v);
		} else {
			link_refused(l, wms__now_ns()); /* this link's keys refused (WRONGTYPE, ...) */
		}
		freeReplyObject(r);
	}
	if (noscript) {
		if (load_script(s) != 0)
			return -1;
		s->next_beat_ns = 0; /* and poll again at once */
	}
	return 0;
}

/* A published change: "EPOCH STATE FAILURES OPEN_MS_LEFT". Newer epochs
 * only: a message may arrive after a reply that was already newer. */
static void on_message(rstore *s, const char *chan, size_t chan_len, const char *msg)
{
	unsigned long long f[4]; /* epoch, state, failures, open ms left */
	shared_view m = { 0 };
	rlink *l;
	int i;

	atomic_fetch_add_explicit(&s->n_messages, 1, memory_order_relaxed);
	if (sscanf(msg, "%llu %llu %llu %llu", &f[0], &f[1], &f[2], &f[3]) != 4)
		return;
	for (i = 0; i < 4; i++)
		if (f[i] > (unsigned long long)LLONG_MAX)
			return;
	m.exists = 1;
	m.epoch = (long long)f[0];
	m.state = (long long)f[1];
	m.failures = (long long)f[2];
	m.rem_ms = (long long)f[3];
	if (!view_in_range(&m))
		return; /* as a reply would be: not a state this store can hold */
	for (l = s->links; l; l = l->next) {
		shared_view v = m;
		if (gone(l) || !l->joined || strlen(l->chan) != chan_len || memcmp(l->chan, chan, chan_len))
			continue;
		if ((uint64_t)v.epoch < atomic_load(&l->epoch) ||
		    ((uint64_t)v.epoch == atomic_load(&l->epoch) &&
		     (int)v.state == atomic_load(&l->state) &&
		     (unsigned long long)v.failures == atomic_load(&l->failures)))
			continue;
		if ((uint64_t)v.epoch == atomic_load(&l->epoch) && (int)v.state != atomic_load(&l->state))
			continue; /* our own manual change, not yet confirmed */
		/* the window's counts come with replies and polls, not messages */
		v.wc = atomic_load(&l->w_calls);
		v.wf = atomic_load(&l->w_failures);
		v.ws = atomic_load(&l->w_slow);
		adopt_view(l, &v);
	}
}

static int read_sub(rstore *s)
{
	void *rv;
	if (redisBufferRead(s->sub) != REDIS_OK)
		return -1;
	for (;;) {
		redisReply *r = NULL;
		if (redisGetReplyFromReader(s->sub, &rv) != REDIS_OK)
			return -1;
		r = rv;
		if (!r)
			return 0;
		if (r->type == REDIS_REPLY_ARRAY && r->elements == 4 &&
		    r->element[0]->type == REDIS_REPLY_STRING && !strcmp(r->element[0]->str, "pmessage") &&
		    r->element[2]->type == REDIS_REPLY_STRING && r->element[3]->type == REDIS_REPLY_STRING)
			on_message(s, r->element[2]->str, r->element[2]->len, r->element[3]->str);
		freeReplyObject(r);
	}
}

/* ---- the agent's cycle ------------------------------------------------ */

/* Tell one breaker that the in-process engine decides for it now. */
static void tell_link_degraded(rlink *l, const char *why)
{
	wms_breaker *b = hold(l);
	wms_breaker_state cur;

	if (!b)
		return;
	l->told = WMS_STORE_STATE_DEGRADED;
	cur = wms_breaker_local_state(b, NULL);
	wms_breaker_store_event(b, cur, cur, why, WMS_STORE_STATE_DEGRADED);
	unhold(l);
}

/* Tell every breaker still deciding in-process that the store is lost
 * (one linked after the loss included). */
static void tell_degraded(rstore *s)
{
	rlink *l;
	for (l = s->links; l; l = l->next)
		if (l->told != WMS_STORE_STATE_DEGRADED && atomic_load(&l->mode) != MODE_SHARED)
			tell_link_degraded(l, s->why);
}

/* One breaker's engine takes over, seeded from the mirror. */
static void hand_to_engine(rlink *l)
{
	wms_breaker *b;
	l->joined = 0;
	l->batch_len = 0;
	end_round(l);
	if (atomic_load(&l->mode) != MODE_SHARED || !(b = hold(l)))
		return;
	wms_breaker_local_adopt(b, (wms_breaker_state)atomic_load(&l->state),
				ms_left(atomic_load(&l->open_until_ns), wms_breaker_clock_ns(b)));
	atomic_store(&l->mode, MODE_LOCAL);
	unhold(l);
}

/* Redis answered this breaker's script with an error (OOM, READONLY, a
 * key of another type, ...) while the connection is fine: this breaker's
 * engine decides, the others stay shared; it tries to join again in a
 * second (wms__redis_rejoin_ns). */
_Atomic uint64_t wms__redis_rejoin_ns = WMS__REDIS_REJOIN_NS_DEFAULT;

static void link_refused(rlink *l, uint64_t now)
{
	hand_to_engine(l);
	l->retry_join_ns = now + atomic_load_explicit(&wms__redis_rejoin_ns, memory_order_relaxed);
	if (l->told != WMS_STORE_STATE_DEGRADED)
		tell_link_degraded(l, "shared store answered this breaker with an error (OOM, "
				      "READONLY, a key of another type) or a state out of range: "
				      "the in-process breaker decides");
}

/* Redis is lost: every breaker's engine takes over from the mirror. */
static void degrade(rstore *s)
{
	rlink *l;

	drop_ctx(&s->cmd);
	drop_ctx(&s->sub);
	if (s->connected)
		atomic_fetch_add_explicit(&s->n_degrades, 1, memory_order_relaxed);
	s->connected = 0;
	for (l = s->links; l; l = l->next)
		hand_to_engine(l);
	s->store_state = WMS_STORE_STATE_DEGRADED;
	tell_degraded(s);
}

static int connect_all(rstore *s)
{
	s->why = "shared store lost: the in-process breaker decides";
	s->cmd = open_ctx(s);
	if (!s->cmd)
		return -1;
	if (open_sub(s) != 0) {
		drop_ctx(&s->cmd);
		return -1;
	}
	s->connected = 1;
	atomic_fetch_add_explicit(&s->n_connects, 1, memory_order_relaxed);
	return 0;
}

/* Outcomes queued since the last cycle, into each link's batch; a batch
 * is sent when the epoch changes or the queue is empty. */
/* Failures popped are answered (their replies adopted) or dropped. */
static void settle_failures(rstore *s)
{
	rlink *l;
	for (l = s->links; l; l = l->next) {
		gate_settle(l, l->f_popped);
		l->f_popped = 0;
	}
}

static int pop(rstore *s, queued *o)
{
	if (q_pop(s, o) != 0)
		return -1;
	if (is_closed_failure(o->what))
		o->link->f_popped++;
	return 0;
}

static int drain(rstore *s, uint64_t now)
{
	queued o;
	rlink *l;
	int rc = 0, r;

	/* A link being freed still sends what it queued: a replica that exits
	 * right after its failures leaves the fleet's count whole. */
	while (rc == 0 && pop(s, &o) == 0) {
		l = o.link;
		if (s->drain_until_ns && wms__now_ns() > s->drain_until_ns)
			break; /* the store is being freed and out of time: dropped */
		if (!s->connected || !l->joined)
			continue;
		if (l->batch_len && (l->batch_epoch != o.epoch || l->batch_len == 255)) {
			r = flush_batch(s, l);
			if (r < 0) {
				rc = -1;
				break;
			}
			if (r > 0) {
				link_refused(l, now);
				continue;
			}
		}
		l->batch_epoch = o.epoch;
		l->batch[l->batch_len++] = o.what;
	}
	for (l = s->links; rc == 0 && l; l = l->next) {
		if (!l->batch_len || (s->drain_until_ns && wms__now_ns() > s->drain_until_ns))
			continue;
		r = flush_batch(s, l);
		if (r < 0)
			rc = -1;
		else if (r > 0)
			link_refused(l, now);
	}
	settle_failures(s); /* on failure: degraded, the batches dropped */
	return rc;
}

/* Links made since the last cycle join the agent's list (at its end:
 * the order they were made in does not matter, but it is cheap to keep). */
static void take_pending(rstore *s)
{
	rlink *p, **tail;

	pthread_mutex_lock(&s->lock);
	p = s->pending;
	s->pending = NULL;
	pthread_mutex_unlock(&s->lock);
	if (!p)
		return;
	for (tail = &s->links; *tail; tail = &(*tail)->next)
		;
	*tail = p;
}

static void free_unlinked(rstore *s)
{
	rlink **pp = &s->links;
	while (*pp) {
		rlink *l = *pp;
		/* the queue may still hold its outcomes: not before they are
		 * popped; nor before a change made by hand is sent, while there
		 * is a Redis to send it to */
		if (gone(l) && (intptr_t)(s->q_tail - l->free_after) >= 0 &&
		    (!s->connected || atomic_load(&l->manual) == NO_MANUAL)) {
			*pp = l->next;
			/* the unlinking thread may still be inside its unlock */
			pthread_mutex_lock(&l->blk);
			pthread_mutex_unlock(&l->blk);
			link_free(l);
		} else {
			pp = &l->next;
		}
	}
}

/* While this breaker's engine decides (Redis refused it or was lost), a
 * change made by hand puts the engine in that state at once; if the engine
 * has left it since on its own (a reset, then failures that tripped it),
 * the change is older news than the engine's state and is not sent: the
 * join that follows gives the fleet the engine's state (open wins). Sent,
 * it would close a fleet this process has seen fail since, and the reply
 * would close this breaker too. A newer change by hand replaces `manual`
 * and is sent as itself. */
static int superseded(rlink *l, int state)
{
	wms_breaker *b;
	int cur;

	if (atomic_load(&l->mode) == MODE_SHARED || !(b = hold(l)))
		return 0;
	cur = (int)wms_breaker_local_state(b, NULL);
	unhold(l);
	return cur != state;
}

/* The changes made by hand, each one script run. A link being freed still
 * sends its own, as drain() sends its outcomes: a tool that forces the
 * fleet open and exits has forced it open. A change whose attempt failed
 * is pending again unless a newer one was made meanwhile: for the
 * reconnect when the connection was lost, after the refusal's back-off
 * when Redis refused it (a link being freed then gives it up). It is sent
 * again marked so, with the epoch of its first attempt: the script keeps
 * a change by hand that reached Redis since (this one, whose reply was
 * lost, or a newer one made elsewhere), which a blind resend would undo. */
static int send_manual(rstore *s, uint64_t now)
{
	rlink *l;

	for (l = s->links; l; l = l->next) {
		int m = atomic_load(&l->manual), rc, none = NO_MANUAL, again;
		if (m == NO_MANUAL || ((m & MAN_AGAIN) && now < l->man_after_ns))
			continue;
		m = atomic_exchange(&l->manual, NO_MANUAL);
		if (m == NO_MANUAL)
			continue;
		again = (m & MAN_AGAIN) != 0;
		if (superseded(l, MAN_STATE(m)))
			continue;
		if (!again)
			l->man_epoch = atomic_load(&l->epoch);
		rc = do_manual(s, l, MAN_STATE(m), l->man_epoch, again);
		if (rc == 0) {
			l->joined = atomic_load(&l->mode) == MODE_SHARED;
			continue;
		}
		if (rc > 0)
			link_refused(l, now);
		if (rc < 0 || !gone(l)) {
			/* unless a caller made a newer change meanwhile */
			l->man_after_ns = rc > 0 ? l->retry_join_ns : 0;
			atomic_compare_exchange_strong(&l->manual, &none, m | MAN_AGAIN);
		}
		if (rc < 0)
			return -1;
	}
	return 0;
}

static int work(rstore *s, uint64_t now)
{
	rlink *l;

	/* changes made by hand first: a join must not undo one */
	if (send_manual(s, now) != 0)
		return -1;
	for (l = s->links; l; l = l->next) {
		int rc;
		if (gone(l) || l->joined || now < l->retry_join_ns)
			continue;
		rc = do_join(s, l);
		if (rc < 0)
			return -1;
		if (rc > 0)
			link_refused(l, now);
	}
	if (drain(s, now) != 0)
		return -1;
	for (l = s->links; l; l = l->next) {
		int rc;
		if (gone(l) || !l->joined || !atomic_load(&l->want_probe))
			continue;
		/* at once for a new epoch, then once a heartbeat (a lease may
		 * run out) */
		if (l->last_probe_epoch == atomic_load(&l->epoch) &&
		    now - l->last_probe_ns < (uint64_t)s->heartbeat_ms * NS_PER_MS)
			continue;
		atomic_store(&l->want_probe, 0);
		l->last_probe_ns = now;
		l->last_probe_epoch = atomic_load(&l->epoch);
		rc = do_probe(s, l);
		if (rc < 0)
			return -1;
		if (rc > 0)
			link_refused(l, now);
	}
	if (now >= s->next_beat_ns) {
		s->next_beat_ns = now + (uint64_t)s->heartbeat_ms * NS_PER_MS;
		if (poll_all(s) != 0)
			return -1;
	}
	return 0;
}

static void wait_for_work(rstore *s, uint64_t now)
{
	struct pollfd pf[2];
	uint64_t until = s->connected ? s->next_beat_ns : s->next_connect_ns;
	int n = 1, timeout = until > now ? (int)((until - now + NS_PER_MS - 1) / NS_PER_MS) : 0;

	pf[0].fd = s->wake_fd;
	pf[0].events = POLLIN;
	if (s->sub) {
		pf[1].fd = s->sub->fd;
		pf[1].events = POLLIN;
		n = 2;
	}
	if (poll(pf, (nfds_t)n, timeout) <= 0)
		return;
	if (pf[0].revents & POLLIN) {
		uint64_t v;
		ssize_t r = read(s->wake_fd, &v, sizeof(v));
		(void)r;
		atomic_exchange_explicit(&s->wake_pending, 0, memory_order_acq_rel); /* see wake() */
	}
	if (n == 2 && (pf[1].revents & (POLLIN | POLLHUP | POLLERR))) {
		if (read_sub(s) != 0) {
			/* the pub/sub connection alone is lost: messages may have
			 * been missed, so poll at once; resubscribe */
			drop_ctx(&s->sub);
			s->next_beat_ns = 0;
		}
	}
}

/* A write to a connection Redis has closed raises SIGPIPE at the writing
 * thread, which would kill the application: the agent runs with every
 * signal blocked (wms_redis_store_new), and takes any SIGPIPE its writes
 * left pending after each cycle. */
static void pipe_signal(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGPIPE);
}

static void take_sigpipe(const sigset_t *set)
{
	struct timespec zero = { 0, 0 };
	while (sigtimedwait(set, NULL, &zero) > 0)
		;
}

/* When to try again after a failed (re)connect, counted from now (an
 * attempt may itself take a command timeout): from heartbeat_ms,
 * doubling up to 2 s, with jitter so a fleet does not retry in step. */
static void schedule_reconnect(rstore *s)
{
	uint64_t ms = s->backoff_ms ? s->backoff_ms : s->heartbeat_ms;
	s->next_connect_ns = wms__now_ns() + (ms + next_rand(s) % (ms / 2 + 1)) * NS_PER_MS;
	s->backoff_ms = ms * 2 > 2000 ? (s->heartbeat_ms > 2000 ? s->heartbeat_ms : 2000) : ms * 2;
}

static void *agent(void *arg)
{
	rstore *s = arg;
	sigset_t pipe_set;

	pipe_signal(&pipe_set);

	while (!atomic_load(&s->stop)) {
		uint64_t now = wms__now_ns();
		take_pending(s);
		free_unlinked(s);
		if (!s->connected && now >= s->next_connect_ns) {
			if (connect_all(s) != 0) {
				degrade(s);
				schedule_reconnect(s);
			} else {
				s->next_beat_ns = 0;
			}
		}
		if (!s->connected) {
			queued o;
			tell_degraded(s); /* breakers linked since the loss */
			while (pop(s, &o) == 0)
				; /* outcomes for a lost store: the engines decide */
			settle_failures(s);
		}
		if (s->connected && !s->sub && open_sub(s) != 0) {
			degrade(s);
			schedule_reconnect(s);
		}
		if (s->connected) {
			if (work(s, now) != 0) {
				degrade(s);
				schedule_reconnect(s);
			} else {
				/* a whole cycle answered: the next loss backs off afresh
				 * (not on connect: a Redis that accepts connections but
				 * times out every command must keep backing off) */
				s->backoff_ms = 0;
			}
			if (s->connected && s->store_state != WMS_STORE_STATE_CONNECTED) {
				rlink *l;
				int all = 1;
				for (l = s->links; l; l = l->next)
					if (!gone(l) && !l->joined)
						all = 0;
				if (all && s->links)
					s->store_state = WMS_STORE_STATE_CONNECTED;
			}
		}
		take_sigpipe(&pipe_set);
		wait_for_work(s, wms__now_ns());
	}
	/* The store is being freed: the changes made by hand (a script run
	 * each, up to a command timeout) and what is still queued (within two
	 * command timeouts) are sent; a lost Redis ends it at once. */
	if (s->connected) {
		take_pending(s);
		s->drain_until_ns = wms__now_ns() + 2ull * s->command_timeout_ms * NS_PER_MS;
		if (send_manual(s, wms__now_ns()) != 0 || drain(s, wms__now_ns()) != 0)
			drop_ctx(&s->cmd);
	}
	take_sigpipe(&pipe_set);
	return NULL;
}

/* ---- the store -------------------------------------------------------- */

/* The store's memory, once its thread (if any) is gone; its lock is not
 * touched (see store_free). */
static void store_free_memory(rstore *s)
{
	wms__free(s->q);
	wms__free(s->fleet);
	wms__free(s->pattern);
	wms__free(s->script);
	OPENSSL_cleanse(&s->addr, sizeof(s->addr));
	wms__free(s);
}

/* In a child: one of the parent's connections let go of. Its copy is made
 * to point at /dev/null first, so that whatever hiredis does while freeing
 * it (a TLS context's close_notify) reaches nothing; the connection is
 * the parent's. */
static void forget_ctx(redisContext **c)
{
	if (!*c)
		return;
	if ((*c)->fd >= 0)
		(void)wms__fd_forget((*c)->fd);
	redisFree(*c);
	*c = NULL;
}

/* In a child forked since the store was made: the agent thread does not
 * exist here, any lock (the store's, a link's blk) may have been held by
 * another of the parent's threads at the fork, and the connections and the
 * eventfd are the parent's. Nothing is joined, woken or sent, and no lock
 * waited for (no change made by hand, no drain): the links on the lists
 * are freed (those the parent's agent had not taken yet too), the child's
 * copies of the connections and of the eventfd are closed, and the memory
 * is freed. What the agent held only in its own variables at the fork (a
 * reply it was reading, a connection it was opening, links between the two
 * lists in take_pending) is out of reach, and stays allocated. */
static void store_free_in_child(rstore *s)
{
	rlink *l;

	/* s->pending changes under s->lock (link_new's push, take_pending's
	 * swap). Taken by a thread of the parent at the fork, it stays taken:
	 * that thread was in the middle of a change, the list is not walked,
	 * and the links on it stay allocated (link_unlink in a child only
	 * marks). */
	if (pthread_mutex_trylock(&s->lock) == 0) {
		while ((l = s->pending) != NULL) {
			s->pending = l->next;
			link_free_memory(l);
		}
		pthread_mutex_unlock(&s->lock);
		pthread_mutex_destroy(&s->lock);
	}
	/* s->links is the agent's own, changed without a lock one pointer
	 * store at a time (take_pending's append, free_unlinked's unlink): a
	 * list whatever the agent was doing at the fork. The links' blk are
	 * not touched (link_free_memory): the agent may have held one. */
	while ((l = s->links) != NULL) {
		s->links = l->next;
		link_free_memory(l);
	}
	forget_ctx(&s->cmd);
	forget_ctx(&s->sub);
	if (s->wake_fd >= 0)
		close(s->wake_fd);
	store_free_memory(s);
}

static void store_free(wms_breaker_store *bs)
{
	rstore *s = (rstore *)bs;
	if (wms__forked_since(s->fork_gen)) {
		store_free_in_child(s);
		return;
	}
	if (s->thread_started) {
		atomic_store(&s->stop, 1);
		atomic_store(&s->wake_pending, 0);
		wake(s);
		pthread_join(s->thread, NULL);
	}
	take_pending(s);
	free_unlinked(s);
	while (s->links) { /* breakers not freed first: the caller's bug, not a leak */
		rlink *l = s->links;
		s->links = l->next;
		link_free(l);
	}
	drop_ctx(&s->cmd);
	drop_ctx(&s->sub);
	if (s->wake_fd >= 0)
		close(s->wake_fd);
	pthread_mutex_destroy(&s->lock);
	store_free_memory(s);
}

static const wms_breaker_store_ops redis_ops = {
	link_new, link_acquire, link_record, link_release, link_manual, link_state,
	link_snapshot, link_unlink, store_free, { NULL, NULL, NULL, NULL }
};

wms_status wms_shared_options_init(wms_shared_options *opts, unsigned version)
{
	if (!opts || version != WMS_SHARED_OPTIONS_VERSION)
		return WMS_ERR_INVALID_ARG;
	memset(opts, 0, sizeof(*opts));
	opts->version = version;
	return WMS_OK;
}

static int fleet_name_ok(const char *n)
{
	size_t i, len = strlen(n);
	if (len < 1 || len > 64)
		return 0;
	for (i = 0; i < len; i++) {
		char c = n[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '-' || c == '_'))
			return 0;
	}
	return 1;
}

#define BAD(...) wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT, __VA_ARGS__)

static wms_status check_options(const wms_shared_options *o, wms_error *err)
{
	if (o->version != WMS_SHARED_OPTIONS_VERSION)
		return BAD("shared options version %u is not supported (this libwms knows %u)",
			   o->version, WMS_SHARED_OPTIONS_VERSION);
	if (o->name && !fleet_name_ok(o->name))
		return BAD("shared.name must be 1-64 letters, digits, '.', '-' or '_'");
	if (o->command_timeout_ms && o->command_timeout_ms > 10000)
		return BAD("shared.command_timeout_ms must be 1-10000");
	if (o->heartbeat_ms && (o->heartbeat_ms < 5 || o->heartbeat_ms > 10000))
		return BAD("shared.heartbeat_ms must be 5-10000");
	if (o->key_ttl_s && (o->key_ttl_s < 60 || o->key_ttl_s > 2592000))
		return BAD("shared.key_ttl_s must be 60-2592000");
	if (o->queue_size && (o->queue_size < 64 || o->queue_size > 1048576))
		return BAD("shared.queue_size must be 64-1048576");
	if (o->quorum > 64)
		return BAD("shared.quorum must be 1-64");
	return WMS_OK;
}

static int make_ids(rstore *s)
{
	unsigned char md[EVP_MAX_MD_SIZE], rnd[16];
	unsigned mdlen = 0, i;

	s->script = wms__redis_script_text();
	if (!s->script ||
	    !EVP_Digest(s->script, strlen(s->script), md, &mdlen, EVP_sha1(), NULL) ||
	    mdlen != 20 || RAND_bytes(rnd, sizeof(rnd)) != 1)
		return -1;
	for (i = 0; i < 20; i++)
		snprintf(s->sha + 2 * i, 3, "%02x", md[i]);
	for (i = 0; i < 16; i++)
		snprintf(s->token + 2 * i, 3, "%02x", rnd[i]);
	memcpy(&s->rng, rnd, sizeof(s->rng));
	s->rng |= 1;
	return 0;
}

wms_status wms_redis_store_new(wms_breaker_store **out, const wms_shared_options *o,
			       wms_error *err)
{
	rstore *s;
	size_t qn = 4096, i;
	wms_status st;
	int rc;

	if (out)
		*out = NULL;
	wms_error_clear(err); /* an earlier call's error does not outlive a success */
	if (!out || !o)
		return BAD("wms_redis_store_new: out and options are required");
	st = check_options(o, err);
	if (st != WMS_OK)
		return st;
	s = wms__calloc(1, sizeof(*s));
	if (!s)
		return wms__fail(err, WMS_ERR_NOMEM, WMS_DELIVERY_NOT_SENT, "shared: out of memory");
	s->wake_fd = -1;
	/* first: a store freed on a failure below is this process's (and the
	 * child handler is registered before any fork could copy the store) */
	s->fork_gen = wms__fork_gen_now();
	st = wms__redis_url_parse(&s->addr, o->redis_url, err);
	if (st != WMS_OK) {
		OPENSSL_cleanse(&s->addr, sizeof(s->addr)); /* a password may be half copied */
		wms__free(s);
		return st;
	}
	if (pthread_mutex_init(&s->lock, NULL) != 0) {
		OPENSSL_cleanse(&s->addr, sizeof(s->addr));
		wms__free(s);
		return wms__fail(err, WMS_ERR_INTERNAL, WMS_DELIVERY_NOT_SENT, "shared: no mutex");
	}
	s->base.version = WMS_BREAKER_STORE_VERSION;
	s->base.ops = &redis_ops;
	s->command_timeout_ms = o->command_timeout_ms ? o->command_timeout_ms : 100;
	s->heartbeat_ms = o->heartbeat_ms ? o->heartbeat_ms : 50;
	s->quorum = o->quorum ? o->quorum : 1;
	s->key_ttl_ms = (uint64_t)(o->key_ttl_s ? o->key_ttl_s : 86400) * 1000u;
	s->store_state = WMS_STORE_STATE_CONNECTING;
	s->why = "shared store lost: the in-process breaker decides";
	if (o->queue_size)
		for (qn = 64; qn < o->queue_size; qn <<= 1)
			;
	s->fleet = wms__strdup(o->name ? o->name : "wms");
	s->pattern = s->fleet ? wms__malloc(strlen(s->fleet) + 16) : NULL;
	s->q = wms__calloc(qn, sizeof(cell));
	if (!s->fleet || !s->pattern || !s->q) {
		store_free(&s->base);
		return wms__fail(err, WMS_ERR_NOMEM, WMS_DELIVERY_NOT_SENT, "shared: out of memory");
	}
	sprintf(s->pattern, "wms:{%s}:c:*", s->fleet);
	s->q_mask = qn - 1;
	for (i = 0; i < qn; i++)
		atomic_init(&s->q[i].seq, i);
	if (make_ids(s) != 0) {
		store_free(&s->base);
		return wms__fail(err, WMS_ERR_INTERNAL, WMS_DELIVERY_NOT_SENT,
				 "shared: cannot digest the script or draw a lease token");
	}
	s->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (s->wake_fd < 0) {
		rc = errno;
	} else {
		/* The agent runs with every signal blocked (it inherits the mask):
		 * the application's handlers run on its own threads, never in the
		 * middle of the agent's I/O. */
		sigset_t all, old;
		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, &old);
		rc = pthread_create(&s->thread, NULL, agent, s);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	}
	if (rc != 0) {
		store_free(&s->base);
		return wms__fail(err, WMS_ERR_INTERNAL, WMS_DELIVERY_NOT_SENT,
				 "shared: cannot start the agent thread: %s", strerror(rc));
	}
	s->thread_started = 1;
	*out = &s->base;
	return WMS_OK;
}

void wms_redis_store_stats(wms_shared_stats *out, wms_breaker_store *bs)
{
	rstore *s = (rstore *)bs;
	if (!out)
		return;
	memset(out, 0, sizeof(*out));
	if (!s || s->base.ops != &redis_ops)
		return;
	out->commands = atomic_load(&s->n_commands);
	out->scripts = atomic_load(&s->n_scripts);
	out->script_loads = atomic_load(&s->n_loads);
	out->messages = atomic_load(&s->n_messages);
	out->connects = atomic_load(&s->n_connects);
	out->degrades = atomic_load(&s->n_degrades);
	out->dropped = atomic_load(&s->n_dropped);
}
