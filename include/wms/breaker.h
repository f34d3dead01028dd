/*
 * libwms - the circuit breaker.
 *
 * Every client call goes through one; it is also usable on its own:
 *
 *     wms_breaker_permit p;
 *     if (wms_breaker_acquire(&p, b, &retry_after_ms) != WMS_OK)
 *         return fail_fast();            // open: nothing is sent
 *     outcome = do_the_call();
 *     wms_breaker_record(b, &p, outcome);
 *
 * Thread-safe: any number of threads may share one breaker. The closed path
 * of the consecutive mode takes no lock and allocates nothing.
 */
#ifndef WMS_BREAKER_H
#define WMS_BREAKER_H

#include "common.h"
#include "errors.h"

WMS_BEGIN_DECL

typedef struct wms_breaker wms_breaker;

/** Where a shared breaker's state lives (wms/shared.h makes the Redis one;
 *  wms/sys/breaker_store.h is the seam). Since 0.3.1. */
typedef struct wms_breaker_store wms_breaker_store;

/** A breaker's store, as it stands. Since 0.3.1. */
typedef enum wms_store_state {
	/** No store: the in-process breaker (the default). */
	WMS_STORE_STATE_NONE = 0,
	/** Linked, not yet joined: the in-process engine decides meanwhile. */
	WMS_STORE_STATE_CONNECTING = 1,
	/** The shared state decides. */
	WMS_STORE_STATE_CONNECTED = 2,
	/** The store was lost (down, slow, unreachable): the in-process engine,
	 *  seeded with the last shared state, decides until the store is back. */
	WMS_STORE_STATE_DEGRADED = 3
} wms_store_state;

/** "NONE", "CONNECTING", "CONNECTED", "DEGRADED". Since 0.3.1. */
WMS_EXTERN(const char *) wms_store_state_name(wms_store_state state);

/** Breaker states. The first three values are those of the state gauge
 *  (fulfillment.circuit_breaker_state: 0 closed, 1 open, 2 half-open). */
typedef enum wms_breaker_state {
	WMS_BREAKER_STATE_CLOSED = 0,
	WMS_BREAKER_STATE_OPEN = 1,
	WMS_BREAKER_STATE_HALF_OPEN = 2,
	WMS_BREAKER_STATE_DISABLED = 3,     /**< manual: every call permitted, outcomes only counted */
	WMS_BREAKER_STATE_FORCED_OPEN = 4   /**< manual: every call rejected until the next manual change */
} wms_breaker_state;

typedef enum wms_breaker_mode {
	/** failure_threshold consecutive failures open it (the default). */
	WMS_BREAKER_MODE_CONSECUTIVE = 0,
	/** failure / slow-call rate over the last sliding_window_size calls. */
	WMS_BREAKER_MODE_COUNT_BASED = 1,
	/** failure / slow-call rate over the last sliding_window_size seconds. */
	WMS_BREAKER_MODE_TIME_BASED = 2
} wms_breaker_mode;

typedef enum wms_outcome {
	WMS_OUTCOME_SUCCESS = 0,
	WMS_OUTCOME_FAILURE = 1,
	/** Says nothing about the dependency's health (e.g. a business rejection):
	 *  not counted in any rate; a half-open trial that reports it frees its slot. */
	WMS_OUTCOME_IGNORED = 2
} wms_outcome;

/** A monotonic clock in nanoseconds. The default is CLOCK_MONOTONIC. */
typedef uint64_t (*wms_clock_fn)(void *payload);

typedef struct wms_breaker_event {
	wms_breaker_state from;
	wms_breaker_state to;
	/** Static text: "failure threshold reached", "probe succeeded", ... */
	const char *reason;
	/** The breaker's clock at the transition, nanoseconds. */
	uint64_t time_ns;
	/** The breaker's name (options.name). */
	const char *name;
	/** The store's state after the event. A change of the store's own state
	 *  (joined, lost) is an event with from == to. Since 0.3.1. */
	wms_store_state store;
} wms_breaker_event;

/** Called on every state change, after the change, outside the breaker's
 *  lock; it may call any wms_breaker_* read function. A shared breaker's
 *  changes made by other replicas (and its store's own: from == to) come
 *  from the store's thread. Changes made on
 *  different threads at nearly the same time may be reported in either
 *  order: for the state now, read wms_breaker_state_get() in the callback
 *  rather than keeping the last event's `to`. */
typedef void (*wms_breaker_event_fn)(const wms_breaker_event *event, void *payload);

/** The breaker's callbacks: each is given `payload`. */
typedef struct wms_breaker_callbacks {
	/** Clock override (tests). NULL: CLOCK_MONOTONIC. Called on the
	 *  calling thread, never under the breaker's lock; it should only
	 *  return the time. */
	wms_clock_fn clock;
	/** NULL: no events. */
	wms_breaker_event_fn on_state_change;
	void *payload;
	/** Room for callbacks to come; zero. */
	void *_reserved[4];
} wms_breaker_callbacks;

#define WMS_BREAKER_CALLBACKS_INIT { NULL, NULL, NULL, { NULL, NULL, NULL, NULL } }

#define WMS_BREAKER_OPTIONS_VERSION 2

/** Breaker options. Zero means "the default" for every field; a value out
 *  of its range makes wms_breaker_new() return WMS_ERR_INVALID_ARG. */
typedef struct wms_breaker_options {
	unsigned version;
	/** Name used in events, metrics and health output: UTF-8 text without
	 *  control characters. Default "wms". Copied. */
	const char *name;
	wms_breaker_mode mode;                 /**< default CONSECUTIVE */
	uint32_t failure_threshold;            /**< consecutive: failures to open; default 5; 1-1000000 */
	uint32_t failure_rate_threshold;       /**< rate modes: percent, 1-100; default 50 */
	uint32_t slow_call_rate_threshold;     /**< rate modes: percent, 1-100; default 100 */
	uint32_t slow_call_duration_ms;        /**< a call longer than this is slow; default 60000 */
	/** Calls (count_based, 1-100000) or seconds (time_based, 1-3600); default 100 / 60. */
	uint32_t sliding_window_size;
	/** Rate modes: calls before a rate is judged; default 100, 1-1000000. count_based: a
	 *  value above sliding_window_size is lowered to it (as Resilience4j does). */
	uint32_t minimum_number_of_calls;
	uint32_t open_duration_ms;             /**< default 30000; 1-86400000 */
	uint32_t permitted_calls_in_half_open; /**< trial calls, 1-100000; consecutive: always 1; default 1 */
	/** A trial that has not reported after this long counts as failed. Default 60000. */
	uint32_t max_wait_in_half_open_ms;
	/** Growth of the open duration on each reopening without a close in
	 *  between, in percent (200 doubles it), 100-1000. Default 100: no growth. */
	uint32_t open_duration_growth_pct;
	/** Cap for the grown open duration, open_duration_ms-86400000. Default
	 *  10 x open_duration_ms (at most 86400000). */
	uint32_t max_open_duration_ms;
	/** Random jitter added to each open duration, percent of it (0-100). Default 0. */
	uint32_t open_duration_jitter_pct;
	wms_breaker_callbacks callbacks;
	/** Share the state with every process linked to the same store under
	 *  the same name (wms/shared.h). Not owned: it must outlive the
	 *  breaker. NULL: in-process (the default). Since 0.3.1. */
	wms_breaker_store *store;
	/** Room for options to come (the group is embedded in the client's
	 *  options, so it grows into this, never past it); zero. */
	void *_reserved[7];
} wms_breaker_options;

#define WMS_BREAKER_OPTIONS_INIT { WMS_BREAKER_OPTIONS_VERSION, NULL, WMS_BREAKER_MODE_CONSECUTIVE, \
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, WMS_BREAKER_CALLBACKS_INIT, NULL, { NULL } }

/** Initialise options to the defaults (all zero) with the right version. */
WMS_EXTERN(wms_status) wms_breaker_options_init(wms_breaker_options *opts, unsigned version);

/** Create a breaker. NULL options mean all defaults. Validates every field:
 *  an out-of-range value gives WMS_ERR_INVALID_ARG. */
WMS_EXTERN(wms_status) wms_breaker_new(wms_breaker **out, const wms_breaker_options *opts);

/** NULL-safe. No call may be in flight on the breaker. With a shared
 *  store it waits for a state-change listener the store's thread is
 *  running for this breaker: do not free it while holding a lock that
 *  listener takes. */
WMS_EXTERN(void) wms_breaker_free(wms_breaker *breaker);

/** What acquire hands out; pass it back to record. Plain data, no cleanup.
 *  Its fields are the breaker's own (a non-zero `flags` does not make a
 *  half-open trial): ask wms_breaker_permit_is_trial(). */
typedef struct wms_breaker_permit {
	uint64_t start_ns;
	uint64_t epoch;
	uint32_t flags;
	uint32_t _reserved32;
	/** Room to grow (a permit is caller-allocated); the breaker's own. */
	uint64_t _reserved[2];
} wms_breaker_permit;

/**
 * Ask to make a call. WMS_OK: go ahead, then report with wms_breaker_record().
 * WMS_ERR_CIRCUIT_OPEN: do not call; *retry_after_ms (optional) gets the
 * milliseconds until a probe may be let through (0 when a probe is in flight).
 * FORCED_OPEN gives open_duration_ms, a hint only: no probe is let through
 * until the breaker is reset, forced closed or disabled.
 */
WMS_EXTERN(wms_status) wms_breaker_acquire(wms_breaker_permit *out, wms_breaker *breaker,
					   uint32_t *retry_after_ms);

/** Report how a permitted call ended. Each permit must be recorded once.
 *  A permit granted before the breaker's last transition (or a half-open
 *  trial already counted as failed after max_wait_in_half_open_ms) is
 *  counted in the snapshot's counters but never decides the new state. */
WMS_EXTERN(void) wms_breaker_record(wms_breaker *breaker, const wms_breaker_permit *permit,
				    wms_outcome outcome);

/** Hand back a permit without an outcome (the call was never made). */
WMS_EXTERN(void) wms_breaker_release(wms_breaker *breaker, const wms_breaker_permit *permit);

/**
 * Whether a permit acquire granted (WMS_OK) is a half-open trial: 1 when it
 * was granted in HALF_OPEN, as one of the permitted_calls_in_half_open
 * calls whose outcomes decide the round; 0 for a call granted in CLOSED or
 * DISABLED, and for NULL. It says how the permit was granted: a trial whose
 * round is over (decided, or written off after max_wait_in_half_open_ms)
 * still reads 1, though its outcome no longer decides anything.
 * Since 0.2.0.
 */
WMS_EXTERN(int) wms_breaker_permit_is_trial(const wms_breaker_permit *permit);

/** The current state (OPEN whose duration has passed still reads OPEN until
 *  the next acquire moves it to HALF_OPEN). */
WMS_EXTERN(wms_breaker_state) wms_breaker_state_get(const wms_breaker *breaker);

/** "CLOSED", "OPEN", "HALF_OPEN", "DISABLED", "FORCED_OPEN". */
WMS_EXTERN(const char *) wms_breaker_state_name(wms_breaker_state state);

/**
 * Manual control; each change fires the state-change callback.
 * force_open: FORCED_OPEN, every call rejected until force_closed, reset or disable.
 * force_closed: CLOSED now (window cleared, as on every entry to CLOSED).
 * disable: DISABLED, every call permitted and only measured.
 * reset: CLOSED with the window and every counter zeroed.
 */
WMS_EXTERN(void) wms_breaker_force_open(wms_breaker *breaker);
WMS_EXTERN(void) wms_breaker_force_closed(wms_breaker *breaker);
WMS_EXTERN(void) wms_breaker_disable(wms_breaker *breaker);
WMS_EXTERN(void) wms_breaker_reset(wms_breaker *breaker);

/** Counters since creation (or the last reset of counters). */
typedef struct wms_breaker_snapshot {
	wms_breaker_state state;
	uint64_t permitted;
	uint64_t rejected;
	uint64_t successes;
	uint64_t failures;
	uint64_t slow;
	uint64_t ignored;
	uint64_t transitions;
	/** Over the current window (rate modes) or -1 when too few calls. Percent. */
	double failure_rate;
	double slow_call_rate;
	uint32_t window_calls;
	uint32_t consecutive_failures;
	uint32_t half_open_in_flight;
	/** OPEN: milliseconds until a probe may go through. FORCED_OPEN:
	 *  open_duration_ms, the hint wms_breaker_acquire gives (no probe goes
	 *  through until a manual change). 0 in every other state. */
	uint32_t retry_after_ms;
	const char *name;
	/** The store (NONE for an in-process breaker) and since when it has been
	 *  in that state, on the breaker's clock (ns). Since 0.3.1. */
	wms_store_state store_state;
	uint32_t _reserved32;
	uint64_t store_since_ns;
	/** Room to grow (a snapshot is caller-allocated); zero. */
	uint64_t _reserved[6];
} wms_breaker_snapshot;

WMS_EXTERN(void) wms_breaker_snapshot_get(wms_breaker_snapshot *out, wms_breaker *breaker);

WMS_END_DECL

#endif
