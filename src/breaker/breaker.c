/*
 * The circuit breaker: one engine, three policies.
 *
 * Hot paths take no lock: the state is an atomic, CLOSED calls in the
 * consecutive mode touch only atomic counters, and an OPEN breaker rejects
 * after one clock read. Transitions, the rate windows and half-open trials
 * are serialised by a mutex. Every transition bumps `epoch`; a permit
 * carries the epoch it was granted in, so an outcome that arrives after the
 * breaker has moved on (a slow call from before it opened, a trial already
 * written off by max_wait_in_half_open_ms) cannot decide the new state. The
 * consecutive mode's run of failures shares one atomic word with the low
 * half of the epoch, so a late outcome cannot slip into a newer run between
 * an epoch check and the update either.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include "internal.h"
#include "breaker/breaker_int.h"
#include "wms/breaker.h"
#include "wms/sys/breaker_store.h"

#define PERMIT_TRIAL WMS_PERMIT_TRIAL
#define PERMIT_TIMED 2u /* start_ns is the call's start (0 is a valid clock value) */
#define PERMIT_STORE WMS_PERMIT_STORE /* granted by the store: decides nothing here */
/* A store's permit keeps the reset epoch it was granted under here (the
 * store has its epoch and _reserved[0]). */
#define STORE_PERMIT_RESET(p) ((p)->_reserved[1])

/* `run`: the epoch's low 32 bits above the consecutive-failure count. */
#define RUN_EPOCH(w) ((uint32_t)((w) >> 32))
#define RUN_COUNT(w) ((uint32_t)(w))

#define NS_PER_MS 1000000ull
#define NS_PER_S 1000000000ull

typedef struct bucket {
	uint64_t second; /* which second this bucket holds */
	uint32_t calls, failures, slow;
} bucket;

struct wms_breaker {
	/* read on every call */
	_Atomic int state;
	_Atomic uint64_t epoch;
	_Atomic uint64_t open_until_ns;
	_Atomic uint64_t run;         /* see RUN_EPOCH / RUN_COUNT */
	_Atomic uint64_t reset_epoch; /* permits from before the last reset count nowhere */
	int track_time; /* read the clock on acquire/record (slow calls, time window) */
	wms_breaker_options o;
	uint64_t slow_ns;

	/* counters (relaxed atomics: only their sums matter) */
	_Atomic uint64_t n_permitted, n_rejected, n_success, n_failure, n_slow, n_ignored,
		n_transitions;

	pthread_mutex_t lock;
	/* everything below is guarded by lock */
	char *name;
	/* count window: a ring of outcome flags (bit 0 failure, bit 1 slow) */
	uint8_t *ring;
	uint32_t ring_head, ring_count, win_failures, win_slow;
	/* time window: one bucket per second */
	bucket *buckets;
	uint64_t win_last_second;
	uint32_t win_calls;
	/* half-open trials */
	uint32_t ho_started, ho_in_flight, ho_done, ho_failures, ho_slow;
	uint64_t ho_deadline_ns;
	/* open-duration growth and jitter */
	uint32_t reopen_count;
	uint64_t rng;

	/* a shared store (wms/sys/breaker_store.h); NULL: in-process only */
	wms_breaker_link *link;
	const wms_breaker_store_ops *lops;
	_Atomic int store_state;
	_Atomic uint64_t store_since_ns;
};

typedef struct pending_event {
	int fire;
	wms_breaker_event ev;
} pending_event;

static uint64_t default_clock(void *ctx)
{
	(void)ctx;
	return wms__now_ns();
}

static inline uint64_t now_ns(const wms_breaker *b)
{
	return b->o.callbacks.clock(b->o.callbacks.payload);
}

const char *wms_store_state_name(wms_store_state state)
{
	switch (state) {
	case WMS_STORE_STATE_NONE: return "NONE";
	case WMS_STORE_STATE_CONNECTING: return "CONNECTING";
	case WMS_STORE_STATE_CONNECTED: return "CONNECTED";
	case WMS_STORE_STATE_DEGRADED: return "DEGRADED";
	}
	return "UNKNOWN";
}

const char *wms_breaker_state_name(wms_breaker_state state)
{
	switch (state) {
	case WMS_BREAKER_STATE_CLOSED: return "CLOSED";
	case WMS_BREAKER_STATE_OPEN: return "OPEN";
	case WMS_BREAKER_STATE_HALF_OPEN: return "HALF_OPEN";
	case WMS_BREAKER_STATE_DISABLED: return "DISABLED";
	case WMS_BREAKER_STATE_FORCED_OPEN: return "FORCED_OPEN";
	}
	return "UNKNOWN";
}

wms_status wms_breaker_options_init(wms_breaker_options *opts, unsigned version)
{
	if (!opts || version != WMS_BREAKER_OPTIONS_VERSION)
		return WMS_ERR_INVALID_ARG;
	memset(opts, 0, sizeof(*opts));
	opts->version = version;
	return WMS_OK;
}

static int in_range(uint32_t v, uint32_t lo, uint32_t hi)
{
	return v >= lo && v <= hi;
}

/* INVALID_ARG, *why (when asked) naming the option and what it takes. */
static wms_status refuse(const char **why, const char *text)
{
	if (why)
		*why = text;
	return WMS_ERR_INVALID_ARG;
}

#define RANGE(field, lo, hi, text)                                 \
	do {                                                        \
		if (!in_range(o->field, (lo), (hi)))                \
			return refuse(why, #field ": must be " text); \
	} while (0)

/* Copy options, apply defaults for zero fields, and check ranges. */
static wms_status resolve_options(wms_breaker_options *o, const wms_breaker_options *in,
				  const char **why)
{
	if (in) {
		if (in->version != WMS_BREAKER_OPTIONS_VERSION)
			return refuse(why, "version: not this library's WMS_BREAKER_OPTIONS_VERSION");
		*o = *in;
	} else {
		wms_breaker_options_init(o, WMS_BREAKER_OPTIONS_VERSION);
	}
	switch (o->mode) {
	case WMS_BREAKER_MODE_CONSECUTIVE:
	case WMS_BREAKER_MODE_COUNT_BASED:
	case WMS_BREAKER_MODE_TIME_BASED:
		break;
	default:
		return refuse(why, "mode: not a wms_breaker_mode");
	}
	if (!o->name)
		o->name = "wms";
	/* It goes into JSON and Prometheus labels as it is. */
	if (!*o->name || !wms__utf8_text_ok(o->name))
		return refuse(why, "name: must be UTF-8 text, not empty, without control characters");
	if (!o->failure_threshold)
		o->failure_threshold = 5;
	if (!o->failure_rate_threshold)
		o->failure_rate_threshold = 50;
	if (!o->slow_call_rate_threshold)
		o->slow_call_rate_threshold = 100;
	if (!o->slow_call_duration_ms)
		o->slow_call_duration_ms = 60000;
	if (!o->sliding_window_size)
		o->sliding_window_size = o->mode == WMS_BREAKER_MODE_TIME_BASED ? 60 : 100;
	if (!o->minimum_number_of_calls)
		o->minimum_number_of_calls = 100;
	if (!o->open_duration_ms)
		o->open_duration_ms = 30000;
	if (!o->permitted_calls_in_half_open)
		o->permitted_calls_in_half_open = 1;
	if (!o->max_wait_in_half_open_ms)
		o->max_wait_in_half_open_ms = 60000;
	if (!o->open_duration_growth_pct)
		o->open_duration_growth_pct = 100;
	if (!o->callbacks.clock)
		o->callbacks.clock = default_clock; /* ignores the payload */
	RANGE(failure_threshold, 1, 1000000, "1 to 1000000");
	RANGE(failure_rate_threshold, 1, 100, "1 to 100");
	RANGE(slow_call_rate_threshold, 1, 100, "1 to 100");
	if (o->mode == WMS_BREAKER_MODE_TIME_BASED)
		RANGE(sliding_window_size, 1, 3600, "1 to 3600 (seconds, time_based)");
	else
		RANGE(sliding_window_size, 1, 100000, "1 to 100000 (calls)");
	RANGE(minimum_number_of_calls, 1, 1000000, "1 to 1000000");
	RANGE(open_duration_ms, 1, 86400000, "1 to 86400000");
	RANGE(permitted_calls_in_half_open, 1, 100000, "1 to 100000");
	RANGE(open_duration_growth_pct, 100, 1000, "100 to 1000");
	RANGE(open_duration_jitter_pct, 0, 100, "0 to 100");
	if (!o->max_open_duration_ms) {
		uint64_t cap = (uint64_t)o->open_duration_ms * 10u;
		o->max_open_duration_ms = cap > 86400000u ? 86400000u : (uint32_t)cap;
	}
	RANGE(max_open_duration_ms, o->open_duration_ms, 86400000,
	      "open_duration_ms to 86400000");
	/* A count window never holds more calls than its size (as Resilience4j). */
	if (o->mode == WMS_BREAKER_MODE_COUNT_BASED &&
	    o->minimum_number_of_calls > o->sliding_window_size)
		o->minimum_number_of_calls = o->sliding_window_size;
	if (o->mode == WMS_BREAKER_MODE_CONSECUTIVE)
		o->permitted_calls_in_half_open = 1;
	return WMS_OK;
}

#undef RANGE

static wms_status link_store(wms_breaker *b, const char **why)
{
	wms_breaker_store *s = b->o.store;
	wms_status st;

	if (s->version != WMS_BREAKER_STORE_VERSION || !s->ops || !s->ops->link ||
	    !s->ops->acquire || !s->ops->record || !s->ops->release || !s->ops->manual ||
	    !s->ops->state || !s->ops->snapshot || !s->ops->unlink)
		return refuse(why, "store: not a WMS_BREAKER_STORE_VERSION store with every op set");
	/* CONNECTING until the store says otherwise (it may, from its own
	 * thread, as soon as it is linked) */
	atomic_store(&b->store_state, WMS_STORE_STATE_CONNECTING);
	b->lops = s->ops;
	st = s->ops->link(s, b, &b->o, &b->link, NULL);
	return st == WMS_ERR_INVALID_ARG ? refuse(why, "store: its link refused these options") : st;
}

wms_status wms_breaker_new(wms_breaker **out, const wms_breaker_options *opts)
{
	return wms__breaker_new(out, opts, NULL);
}

wms_status wms__breaker_new(wms_breaker **out, const wms_breaker_options *opts, const char **why)
{
	wms_breaker *b = NULL;
	wms_status st;

	if (why)
		*why = NULL;
	if (!out)
		return refuse(why, "out is NULL");
	*out = NULL;
	b = wms__calloc(1, sizeof(*b));
	if (!b)
		return WMS_ERR_NOMEM;
	st = resolve_options(&b->o, opts, why);
	if (st != WMS_OK)
		goto fail;
	st = WMS_ERR_NOMEM;
	b->name = wms__strdup(b->o.name);
	if (!b->name)
		goto fail;
	b->o.name = b->name;
	if (b->o.mode == WMS_BREAKER_MODE_COUNT_BASED) {
		b->ring = wms__calloc(b->o.sliding_window_size, 1);
		if (!b->ring)
			goto fail;
	} else if (b->o.mode == WMS_BREAKER_MODE_TIME_BASED) {
		b->buckets = wms__calloc(b->o.sliding_window_size, sizeof(bucket));
		if (!b->buckets)
			goto fail;
	}
	if (pthread_mutex_init(&b->lock, NULL) != 0) {
		st = WMS_ERR_INTERNAL;
		goto fail;
	}
	b->track_time = b->o.mode != WMS_BREAKER_MODE_CONSECUTIVE;
	b->slow_ns = (uint64_t)b->o.slow_call_duration_ms * NS_PER_MS;
	b->rng = (uint64_t)(uintptr_t)b ^ wms__now_ns() ^ 0x9E3779B97F4A7C15ull;
	atomic_init(&b->state, WMS_BREAKER_STATE_CLOSED);
	atomic_init(&b->epoch, 1);
	atomic_init(&b->run, (uint64_t)1 << 32);
	atomic_init(&b->reset_epoch, 1);
	atomic_init(&b->store_state, WMS_STORE_STATE_NONE);
	atomic_init(&b->store_since_ns, now_ns(b));
	if (b->o.store) {
		st = link_store(b, why);
		if (st != WMS_OK) {
			pthread_mutex_destroy(&b->lock);
			goto fail;
		}
	}
	*out = b;
	return WMS_OK;
fail:
	wms__free(b->ring);
	wms__free(b->buckets);
	wms__free(b->name);
	wms__free(b);
	return st;
}

void wms_breaker_free(wms_breaker *b)
{
	if (!b)
		return;
	if (b->link)
		b->lops->unlink(b->link);
	pthread_mutex_destroy(&b->lock);
	wms__free(b->ring);
	wms__free(b->buckets);
	wms__free(b->name);
	wms__free(b);
}

/* ---- the rate window (lock held) ------------------------------------- */

static void window_clear(wms_breaker *b)
{
	if (b->ring)
		memset(b->ring, 0, b->o.sliding_window_size);
	if (b->buckets)
		memset(b->buckets, 0, sizeof(bucket) * b->o.sliding_window_size);
	b->ring_head = b->ring_count = 0;
	b->win_failures = b->win_slow = b->win_calls = 0;
	b->win_last_second = 0;
}

/* A new epoch (lock held): every permit granted before it is stale, and the
 * run of consecutive failures starts again at 0. */
static void bump_epoch(wms_breaker *b)
{
	uint64_t e = atomic_fetch_add(&b->epoch, 1) + 1;
	atomic_store(&b->run, (uint64_t)(uint32_t)e << 32);
}

/* Drop time buckets older than the window; amortised O(1): each bucket is
 * cleared at most once per second that passes. */
static void window_advance(wms_breaker *b, uint64_t second)
{
	uint32_t n = b->o.sliding_window_size;
	uint64_t s;

	/* Never backwards: a record whose clock was read before a newer one's
	 * must not relabel (and so empty) the newer seconds' buckets. */
	if (second <= b->win_last_second && (b->win_calls || b->win_last_second))
		return;
	s = b->win_last_second + 1;
	if (!b->win_calls || second - b->win_last_second >= n)
		s = second + 1 > n ? second + 1 - n : 0; /* everything expired */
	for (; s <= second; s++) {
		bucket *k = &b->buckets[s % n];
		if (k->second != s) {
			b->win_calls -= k->calls;
			b->win_failures -= k->failures;
			b->win_slow -= k->slow;
			k->second = s;
			k->calls = k->failures = k->slow = 0;
		}
	}
	if (second > b->win_last_second)
		b->win_last_second = second;
}

static void window_add(wms_breaker *b, int failed, int slow, uint64_t now)
{
	if (b->ring) {
		uint32_t n = b->o.sliding_window_size;
		uint8_t v = (uint8_t)((failed ? 1 : 0) | (slow ? 2 : 0));
		if (b->ring_count == n) {
			uint8_t old = b->ring[b->ring_head];
			b->win_failures -= old & 1;
			b->win_slow -= (old >> 1) & 1;
		} else {
			b->ring_count++;
		}
		b->ring[b->ring_head] = v;
		if (++b->ring_head == n)
			b->ring_head = 0;
		b->win_failures += failed ? 1 : 0;
		b->win_slow += slow ? 1 : 0;
		b->win_calls = b->ring_count;
	} else if (b->buckets) {
		uint64_t second = now / NS_PER_S;
		bucket *k;
		window_advance(b, second);
		k = &b->buckets[second % b->o.sliding_window_size];
		if (k->second != second) { /* a late record for a second already gone */
			return;
		}
		k->calls++;
		k->failures += failed ? 1 : 0;
		k->slow += slow ? 1 : 0;
		b->win_calls++;
		b->win_failures += failed ? 1 : 0;
		b->win_slow += slow ? 1 : 0;
	}
}

/* Whether the window (just brought up to date) trips the breaker: 1 for the
 * failure rate, 2 for the slow-call rate, 0 for neither. In integers, so a
 * rate exactly at its threshold trips it with no rounding in between (and
 * no division on every recorded call). */
static int window_trips(const wms_breaker *b)
{
	uint64_t calls = b->win_calls;

	if (calls == 0 || calls < b->o.minimum_number_of_calls)
		return 0;
	if (100u * (uint64_t)b->win_failures >= (uint64_t)b->o.failure_rate_threshold * calls)
		return 1;
	if (100u * (uint64_t)b->win_slow >= (uint64_t)b->o.slow_call_rate_threshold * calls)
		return 2;
	return 0;
}

/* Rates in percent, or -1 when the window holds too few calls. */
static void window_rates(wms_breaker *b, uint64_t now, double *fail, double *slow)
{
	if (b->buckets)
		window_advance(b, now / NS_PER_S);
	if (b->o.mode == WMS_BREAKER_MODE_CONSECUTIVE || b->win_calls == 0 ||
	    b->win_calls < b->o.minimum_number_of_calls) {
		*fail = *slow = -1.0;
		return;
	}
	*fail = 100.0 * b->win_failures / b->win_calls;
	*slow = 100.0 * b->win_slow / b->win_calls;
}

/* ---- transitions (lock held) ----------------------------------------- */

static uint64_t next_rand(wms_breaker *b)
{
	/* xorshift64*: jitter only needs to differ between processes */
	b->rng ^= b->rng >> 12;
	b->rng ^= b->rng << 25;
	b->rng ^= b->rng >> 27;
	return b->rng * 0x2545F4914F6CDD1Dull;
}

static uint64_t open_duration_ns(wms_breaker *b)
{
	uint64_t ms = b->o.open_duration_ms;
	uint32_t i;

	for (i = 0; i < b->reopen_count && ms < b->o.max_open_duration_ms; i++)
		ms = ms * b->o.open_duration_growth_pct / 100u;
	if (ms > b->o.max_open_duration_ms)
		ms = b->o.max_open_duration_ms;
	if (b->o.open_duration_jitter_pct)
		ms += next_rand(b) % (ms * b->o.open_duration_jitter_pct / 100u + 1u);
	return ms * NS_PER_MS;
}

static void transition(wms_breaker *b, wms_breaker_state to, const char *reason, uint64_t now,
		       pending_event *pe)
{
	wms_breaker_state from = (wms_breaker_state)atomic_load(&b->state);

	switch (to) {
	case WMS_BREAKER_STATE_OPEN:
		if (from == WMS_BREAKER_STATE_HALF_OPEN)
			b->reopen_count++;
		atomic_store(&b->open_until_ns, now + open_duration_ns(b));
		break;
	case WMS_BREAKER_STATE_HALF_OPEN:
		b->ho_started = b->ho_in_flight = b->ho_done = b->ho_failures = b->ho_slow = 0;
		b->ho_deadline_ns = now + (uint64_t)b->o.max_wait_in_half_open_ms * NS_PER_MS;
		break;
	case WMS_BREAKER_STATE_CLOSED:
		window_clear(b);
		b->reopen_count = 0;
		break;
	case WMS_BREAKER_STATE_DISABLED:
	case WMS_BREAKER_STATE_FORCED_OPEN:
		window_clear(b);
		break;
	}
	bump_epoch(b);
	atomic_store(&b->state, (int)to);
	if (from != to)
		atomic_fetch_add_explicit(&b->n_transitions, 1, memory_order_relaxed);
	if (pe && b->o.callbacks.on_state_change) {
		pe->fire = 1;
		pe->ev.from = from;
		pe->ev.to = to;
		pe->ev.reason = reason;
		pe->ev.time_ns = now;
		pe->ev.name = b->name;
		pe->ev.store = (wms_store_state)atomic_load(&b->store_state);
	}
}

static void fire(wms_breaker *b, const pending_event *pe)
{
	if (pe->fire && b->o.callbacks.on_state_change)
		b->o.callbacks.on_state_change(&pe->ev, b->o.callbacks.payload);
}

/* Decide a half-open round once every permitted trial has reported. */
static void half_open_decide(wms_breaker *b, uint64_t now, pending_event *pe)
{
	uint32_t n = b->o.permitted_calls_in_half_open;

	if (b->ho_done < n)
		return;
	if (b->o.mode == WMS_BREAKER_MODE_CONSECUTIVE) {
		if (b->ho_failures)
			transition(b, WMS_BREAKER_STATE_OPEN, "probe failed", now, pe);
		else
			transition(b, WMS_BREAKER_STATE_CLOSED, "probe succeeded", now, pe);
		return;
	}
	if (100.0 * b->ho_failures / b->ho_done >= b->o.failure_rate_threshold)
		transition(b, WMS_BREAKER_STATE_OPEN, "trial failure rate at or above threshold", now, pe);
	else if (100.0 * b->ho_slow / b->ho_done >= b->o.slow_call_rate_threshold)
		transition(b, WMS_BREAKER_STATE_OPEN, "trial slow-call rate at or above threshold", now, pe);
	else
		transition(b, WMS_BREAKER_STATE_CLOSED, "trials succeeded", now, pe);
}

/* Trials that outlived max_wait_in_half_open_ms count as failed. */
static void half_open_expire(wms_breaker *b, uint64_t now, pending_event *pe)
{
	if (!b->ho_in_flight || now < b->ho_deadline_ns)
		return;
	b->ho_done += b->ho_in_flight;
	b->ho_failures += b->ho_in_flight;
	b->ho_in_flight = 0;
	/* Their permits are now stale: a late report must not count twice. */
	bump_epoch(b);
	if (b->o.mode == WMS_BREAKER_MODE_CONSECUTIVE)
		transition(b, WMS_BREAKER_STATE_OPEN, "probe did not report in time", now, pe);
	else if (b->ho_done >= b->o.permitted_calls_in_half_open)
		half_open_decide(b, now, pe);
}

static inline uint32_t ms_until(uint64_t until, uint64_t now)
{
	uint64_t d = until > now ? until - now : 0;
	uint64_t ms = (d + NS_PER_MS - 1) / NS_PER_MS;
	return ms > UINT32_MAX ? UINT32_MAX : (uint32_t)ms;
}

/* ---- acquire / record ------------------------------------------------ */

static wms_status reject(wms_breaker *b, uint32_t *retry_after_ms, uint32_t ms)
{
	atomic_fetch_add_explicit(&b->n_rejected, 1, memory_order_relaxed);
	if (retry_after_ms)
		*retry_after_ms = ms;
	return WMS_ERR_CIRCUIT_OPEN;
}

static wms_status acquire_slow(wms_breaker_permit *out, wms_breaker *b, uint32_t *retry_after_ms,
			       uint64_t now)
{
	pending_event pe = { 0 };
	wms_status st = WMS_ERR_CIRCUIT_OPEN;
	uint32_t retry = 0;
	int state;

	pthread_mutex_lock(&b->lock);
	state = atomic_load(&b->state);
	if (state == WMS_BREAKER_STATE_OPEN) {
		uint64_t until = atomic_load(&b->open_until_ns);
		if (now < until) {
			retry = ms_until(until, now);
			goto unlock;
		}
		transition(b, WMS_BREAKER_STATE_HALF_OPEN, "open duration elapsed", now, &pe);
		state = WMS_BREAKER_STATE_HALF_OPEN;
	}
	if (state == WMS_BREAKER_STATE_HALF_OPEN) {
		half_open_expire(b, now, &pe);
		state = atomic_load(&b->state);
	}
	if (state == WMS_BREAKER_STATE_HALF_OPEN) {
		if (b->ho_started < b->o.permitted_calls_in_half_open) {
			b->ho_started++;
			b->ho_in_flight++;
			/* Written off only once the newest trial has had its full
			 * wait: every trial in flight has then had at least that. */
			b->ho_deadline_ns = now + (uint64_t)b->o.max_wait_in_half_open_ms * NS_PER_MS;
			out->flags = PERMIT_TRIAL | (b->track_time ? PERMIT_TIMED : 0u);
			out->epoch = atomic_load(&b->epoch);
			out->start_ns = now;
			st = WMS_OK;
		}
		/* retry stays 0: trials are in flight, the answer is imminent */
	} else if (state == WMS_BREAKER_STATE_OPEN) {
		retry = ms_until(atomic_load(&b->open_until_ns), now);
	} else if (state == WMS_BREAKER_STATE_FORCED_OPEN) {
		retry = b->o.open_duration_ms;
	} else {
		/* CLOSED or DISABLED after a concurrent change */
		out->flags = b->track_time ? PERMIT_TIMED : 0u;
		out->epoch = atomic_load(&b->epoch);
		out->start_ns = now;
		st = WMS_OK;
	}
unlock:
	pthread_mutex_unlock(&b->lock);
	fire(b, &pe);
	if (st == WMS_OK)
		atomic_fetch_add_explicit(&b->n_permitted, 1, memory_order_relaxed);
	else
		reject(b, retry_after_ms, retry);
	return st;
}

wms_status wms_breaker_acquire(wms_breaker_permit *out, wms_breaker *b, uint32_t *retry_after_ms)
{
	int state;
	uint64_t now;

	if (!out || !b)
		return WMS_ERR_INVALID_ARG;
	if (b->link) {
		int v = b->lops->acquire(b->link, out, retry_after_ms);
		if (v == WMS_OK) {
			out->flags |= PERMIT_STORE | (b->track_time ? PERMIT_TIMED : 0u);
			out->start_ns = b->track_time ? now_ns(b) : 0;
			STORE_PERMIT_RESET(out) = atomic_load_explicit(&b->reset_epoch, memory_order_relaxed);
			atomic_fetch_add_explicit(&b->n_permitted, 1, memory_order_relaxed);
			return WMS_OK;
		}
		if (v != WMS_STORE_LOCAL) {
			atomic_fetch_add_explicit(&b->n_rejected, 1, memory_order_relaxed);
			return WMS_ERR_CIRCUIT_OPEN;
		}
	}
	state = atomic_load_explicit(&b->state, memory_order_acquire);
	if (state == WMS_BREAKER_STATE_CLOSED || state == WMS_BREAKER_STATE_DISABLED) {
		out->flags = b->track_time ? PERMIT_TIMED : 0u;
		out->epoch = atomic_load_explicit(&b->epoch, memory_order_acquire);
		out->start_ns = b->track_time ? now_ns(b) : 0;
		atomic_fetch_add_explicit(&b->n_permitted, 1, memory_order_relaxed);
		return WMS_OK;
	}
	if (state == WMS_BREAKER_STATE_FORCED_OPEN)
		return reject(b, retry_after_ms, b->o.open_duration_ms);
	now = now_ns(b);
	if (state == WMS_BREAKER_STATE_OPEN) {
		uint64_t until = atomic_load_explicit(&b->open_until_ns, memory_order_acquire);
		if (now < until)
			return reject(b, retry_after_ms, ms_until(until, now));
	}
	return acquire_slow(out, b, retry_after_ms, now);
}

static void count_outcome(wms_breaker *b, wms_outcome outcome, int slow)
{
	switch (outcome) {
	case WMS_OUTCOME_SUCCESS:
		atomic_fetch_add_explicit(&b->n_success, 1, memory_order_relaxed);
		break;
	case WMS_OUTCOME_FAILURE:
		atomic_fetch_add_explicit(&b->n_failure, 1, memory_order_relaxed);
		break;
	case WMS_OUTCOME_IGNORED:
		atomic_fetch_add_explicit(&b->n_ignored, 1, memory_order_relaxed);
		break;
	}
	if (slow)
		atomic_fetch_add_explicit(&b->n_slow, 1, memory_order_relaxed);
}

void wms_breaker_record(wms_breaker *b, const wms_breaker_permit *p, wms_outcome outcome)
{
	pending_event pe = { 0 };
	uint64_t now = 0;
	int slow = 0, failed, state, trips;

	if (!b || !p)
		return;
	if (outcome != WMS_OUTCOME_SUCCESS && outcome != WMS_OUTCOME_FAILURE)
		outcome = WMS_OUTCOME_IGNORED;
	if (b->track_time || (p->flags & PERMIT_TRIAL)) {
		now = now_ns(b);
		slow = b->track_time && outcome != WMS_OUTCOME_IGNORED && (p->flags & PERMIT_TIMED) &&
		       now - p->start_ns > b->slow_ns;
	}
	if (p->flags & PERMIT_STORE) {
		/* the store's: counted here unless from before a reset, decided there */
		if (STORE_PERMIT_RESET(p) >= atomic_load_explicit(&b->reset_epoch, memory_order_acquire))
			count_outcome(b, outcome, slow);
		if (b->link)
			b->lops->record(b->link, p, outcome, slow);
		return;
	}
	if (p->epoch < atomic_load_explicit(&b->reset_epoch, memory_order_acquire))
		return; /* granted before a reset: counted nowhere, decides nothing */
	count_outcome(b, outcome, slow);
	failed = outcome == WMS_OUTCOME_FAILURE;

	/* Fast path: consecutive mode, CLOSED, same epoch. A permit granted
	 * before the last transition is counted above but must not touch the
	 * run of failures the new state keeps. */
	state = atomic_load_explicit(&b->state, memory_order_acquire);
	if (b->o.mode == WMS_BREAKER_MODE_CONSECUTIVE && state == WMS_BREAKER_STATE_CLOSED &&
	    !(p->flags & PERMIT_TRIAL)) {
		uint64_t w = atomic_load_explicit(&b->run, memory_order_acquire), nw;
		if (!failed && outcome != WMS_OUTCOME_SUCCESS)
			return;
		do {
			if (RUN_EPOCH(w) != (uint32_t)p->epoch)
				return; /* a newer epoch's run: not this permit's */
			if (failed)
				nw = RUN_COUNT(w) == UINT32_MAX ? w : w + 1;
			else if (RUN_COUNT(w))
				nw = w & ~(uint64_t)UINT32_MAX;
			else
				return;
		} while (!atomic_compare_exchange_weak(&b->run, &w, nw));
		if (!failed || RUN_COUNT(nw) < b->o.failure_threshold)
			return;
		/* Threshold reached: decide under the lock. */
	} else if (state == WMS_BREAKER_STATE_DISABLED || state == WMS_BREAKER_STATE_FORCED_OPEN) {
		return;
	}

	/* the clock is the caller's (a test's): never called under the lock */
	if (!now && (b->o.mode != WMS_BREAKER_MODE_CONSECUTIVE || failed))
		now = now_ns(b);
	pthread_mutex_lock(&b->lock);
	if (p->epoch != atomic_load(&b->epoch))
		goto unlock; /* granted under an earlier state: counted, but decides nothing */
	state = atomic_load(&b->state);
	if (state == WMS_BREAKER_STATE_HALF_OPEN && (p->flags & PERMIT_TRIAL)) {
		b->ho_in_flight--;
		if (outcome == WMS_OUTCOME_IGNORED) {
			b->ho_started--; /* says nothing: free the slot for another trial */
			goto unlock;
		}
		b->ho_done++;
		b->ho_failures += failed ? 1 : 0;
		b->ho_slow += slow ? 1 : 0;
		if (b->o.mode == WMS_BREAKER_MODE_CONSECUTIVE) {
			b->ho_done = b->o.permitted_calls_in_half_open;
		}
		half_open_decide(b, now, &pe);
		goto unlock;
	}
	if (state != WMS_BREAKER_STATE_CLOSED)
		goto unlock;
	if (b->o.mode == WMS_BREAKER_MODE_CONSECUTIVE) {
		if (failed && RUN_COUNT(atomic_load(&b->run)) >= b->o.failure_threshold)
			transition(b, WMS_BREAKER_STATE_OPEN, "consecutive failure threshold reached", now,
				   &pe);
		goto unlock;
	}
	if (outcome == WMS_OUTCOME_IGNORED)
		goto unlock;
	window_add(b, failed, slow, now);
	trips = window_trips(b);
	if (trips == 1)
		transition(b, WMS_BREAKER_STATE_OPEN, "failure rate at or above threshold", now, &pe);
	else if (trips == 2)
		transition(b, WMS_BREAKER_STATE_OPEN, "slow-call rate at or above threshold", now, &pe);
unlock:
	pthread_mutex_unlock(&b->lock);
	fire(b, &pe);
}

void wms_breaker_release(wms_breaker *b, const wms_breaker_permit *p)
{
	if (!b || !p)
		return;
	if (p->flags & PERMIT_STORE) {
		if (STORE_PERMIT_RESET(p) >= atomic_load_explicit(&b->reset_epoch, memory_order_acquire))
			atomic_fetch_sub_explicit(&b->n_permitted, 1, memory_order_relaxed);
		if (b->link)
			b->lops->release(b->link, p);
		return;
	}
	/* Undo the permit (unless a reset has zeroed the counters since it was
	 * granted); a trial slot is freed for the next caller. */
	if (p->epoch >= atomic_load_explicit(&b->reset_epoch, memory_order_acquire))
		atomic_fetch_sub_explicit(&b->n_permitted, 1, memory_order_relaxed);
	if (!(p->flags & PERMIT_TRIAL))
		return;
	pthread_mutex_lock(&b->lock);
	if (p->epoch == atomic_load(&b->epoch) &&
	    atomic_load(&b->state) == WMS_BREAKER_STATE_HALF_OPEN && b->ho_in_flight) {
		b->ho_in_flight--;
		b->ho_started--;
	}
	pthread_mutex_unlock(&b->lock);
}

int wms_breaker_permit_is_trial(const wms_breaker_permit *p)
{
	return p && (p->flags & PERMIT_TRIAL) ? 1 : 0;
}

wms_breaker_state wms_breaker_state_get(const wms_breaker *b)
{
	if (!b)
		return WMS_BREAKER_STATE_CLOSED;
	if (b->link) {
		int v = b->lops->state(b->link);
		if (v != WMS_STORE_LOCAL)
			return (wms_breaker_state)v;
	}
	return (wms_breaker_state)atomic_load(&((wms_breaker *)b)->state);
}

static void manual(wms_breaker *b, wms_breaker_state to, const char *reason, int zero)
{
	pending_event pe = { 0 };
	uint64_t now;
	int shared_from = WMS_STORE_LOCAL;

	if (!b)
		return;
	now = now_ns(b);
	if (b->link)
		shared_from = b->lops->state(b->link);
	pthread_mutex_lock(&b->lock);
	if (zero) {
		atomic_store(&b->n_permitted, 0);
		atomic_store(&b->n_rejected, 0);
		atomic_store(&b->n_success, 0);
		atomic_store(&b->n_failure, 0);
		atomic_store(&b->n_slow, 0);
		atomic_store(&b->n_ignored, 0);
		atomic_store(&b->n_transitions, 0);
	}
	/* CLOSED by hand always starts afresh (window, run, a new epoch), even
	 * when it was CLOSED already; an event only for a change of state. */
	if (atomic_load(&b->state) != (int)to || to == WMS_BREAKER_STATE_CLOSED)
		transition(b, to, reason, now, atomic_load(&b->state) != (int)to ? &pe : NULL);
	if (zero)
		atomic_store(&b->reset_epoch, atomic_load(&b->epoch));
	pthread_mutex_unlock(&b->lock);
	if (b->link) {
		/* The fleet's state follows, and the mirror at once. While the
		 * store decides, the event tells of its state, not the engine's. */
		b->lops->manual(b->link, to, zero);
		if (shared_from != WMS_STORE_LOCAL) {
			pe.fire = shared_from != (int)to && b->o.callbacks.on_state_change;
			pe.ev.from = (wms_breaker_state)shared_from;
			pe.ev.to = to;
			pe.ev.reason = reason;
			pe.ev.time_ns = now;
			pe.ev.name = b->name;
			pe.ev.store = (wms_store_state)atomic_load(&b->store_state);
		}
	}
	fire(b, &pe);
}

void wms_breaker_force_open(wms_breaker *b) { manual(b, WMS_BREAKER_STATE_FORCED_OPEN, "forced open", 0); }
void wms_breaker_force_closed(wms_breaker *b) { manual(b, WMS_BREAKER_STATE_CLOSED, "forced closed", 0); }
void wms_breaker_disable(wms_breaker *b) { manual(b, WMS_BREAKER_STATE_DISABLED, "disabled", 0); }
void wms_breaker_reset(wms_breaker *b) { manual(b, WMS_BREAKER_STATE_CLOSED, "reset", 1); }

void wms_breaker_snapshot_get(wms_breaker_snapshot *out, wms_breaker *b)
{
	uint64_t now;

	if (!out)
		return;
	memset(out, 0, sizeof(*out));
	if (!b)
		return;
	now = now_ns(b);
	pthread_mutex_lock(&b->lock);
	out->state = (wms_breaker_state)atomic_load(&b->state);
	out->permitted = atomic_load(&b->n_permitted);
	out->rejected = atomic_load(&b->n_rejected);
	out->successes = atomic_load(&b->n_success);
	out->failures = atomic_load(&b->n_failure);
	out->slow = atomic_load(&b->n_slow);
	out->ignored = atomic_load(&b->n_ignored);
	out->transitions = atomic_load(&b->n_transitions);
	window_rates(b, now, &out->failure_rate, &out->slow_call_rate);
	out->window_calls = b->win_calls;
	out->consecutive_failures = RUN_COUNT(atomic_load(&b->run));
	out->half_open_in_flight =
		out->state == WMS_BREAKER_STATE_HALF_OPEN ? b->ho_in_flight : 0;
	if (out->state == WMS_BREAKER_STATE_OPEN)
		out->retry_after_ms = ms_until(atomic_load(&b->open_until_ns), now);
	else if (out->state == WMS_BREAKER_STATE_FORCED_OPEN)
		out->retry_after_ms = b->o.open_duration_ms; /* the hint acquire gives */
	out->name = b->name;
	out->store_state = (wms_store_state)atomic_load(&b->store_state);
	out->store_since_ns = atomic_load(&b->store_since_ns);
	pthread_mutex_unlock(&b->lock);
	if (b->link)
		b->lops->snapshot(b->link, out);
}

/* ---- what a store may ask (wms/sys/breaker_store.h) ------------------- */

uint64_t wms_breaker_clock_ns(const wms_breaker *b)
{
	return b ? now_ns(b) : wms__now_ns();
}

wms_breaker_state wms_breaker_local_state(wms_breaker *b, uint32_t *open_remaining_ms)
{
	wms_breaker_state st;
	uint64_t now;

	if (open_remaining_ms)
		*open_remaining_ms = 0;
	if (!b)
		return WMS_BREAKER_STATE_CLOSED;
	now = now_ns(b);
	pthread_mutex_lock(&b->lock);
	st = (wms_breaker_state)atomic_load(&b->state);
	if (st == WMS_BREAKER_STATE_OPEN && open_remaining_ms)
		*open_remaining_ms = ms_until(atomic_load(&b->open_until_ns), now);
	pthread_mutex_unlock(&b->lock);
	return st;
}

void wms_breaker_local_adopt(wms_breaker *b, wms_breaker_state to, uint32_t open_remaining_ms)
{
	uint64_t now;

	if (!b)
		return;
	now = now_ns(b);
	pthread_mutex_lock(&b->lock);
	switch (to) {
	case WMS_BREAKER_STATE_HALF_OPEN:
		open_remaining_ms = 0; /* the engine runs its own trials */
		/* fall through */
	case WMS_BREAKER_STATE_OPEN:
		transition(b, WMS_BREAKER_STATE_OPEN, "adopted from the store", now, NULL);
		atomic_store(&b->open_until_ns, now + (uint64_t)open_remaining_ms * NS_PER_MS);
		break;
	case WMS_BREAKER_STATE_CLOSED:
	case WMS_BREAKER_STATE_DISABLED:
	case WMS_BREAKER_STATE_FORCED_OPEN:
		transition(b, to, "adopted from the store", now, NULL);
		break;
	}
	pthread_mutex_unlock(&b->lock);
}

void wms_breaker_store_event(wms_breaker *b, wms_breaker_state from, wms_breaker_state to,
			     const char *reason, wms_store_state store)
{
	pending_event pe = { 0 };

	/* a state no breaker has: nothing counted, kept or told (the cast to
	 * unsigned catches a negative value as well) */
	if (!b || (unsigned)from > WMS_BREAKER_STATE_FORCED_OPEN ||
	    (unsigned)to > WMS_BREAKER_STATE_FORCED_OPEN || (unsigned)store > WMS_STORE_STATE_DEGRADED)
		return;
	if ((wms_store_state)atomic_load(&b->store_state) != store) {
		atomic_store(&b->store_since_ns, now_ns(b));
		atomic_store(&b->store_state, (int)store);
	}
	if (from != to)
		atomic_fetch_add_explicit(&b->n_transitions, 1, memory_order_relaxed);
	if (!b->o.callbacks.on_state_change)
		return;
	pe.fire = 1;
	pe.ev.from = from;
	pe.ev.to = to;
	pe.ev.reason = reason ? reason : "changed by its store"; /* never NULL to a listener */
	pe.ev.time_ns = now_ns(b);
	pe.ev.name = b->name;
	pe.ev.store = store;
	fire(b, &pe);
}

void wms_breaker_store_free(wms_breaker_store *s)
{
	if (s && s->ops && s->ops->free)
		s->ops->free(s);
}
