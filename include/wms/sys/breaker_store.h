/*
 * libwms - the breaker store seam: where a breaker's state lives when it is
 * shared with other processes.
 *
 * A breaker without a store (the default) keeps its state in the process,
 * as it always has. A breaker given a store (wms_breaker_options.store)
 * links to it by name when it is made; from then on the store answers
 * acquire, record and release from the process's own memory, without
 * blocking and without I/O, and says when it cannot (WMS_STORE_LOCAL): the
 * breaker's own in-process engine then decides, so a store that has lost
 * its backend still protects the caller. The Redis store (wms/shared.h) is
 * the one libwms ships; this header is for writing another, and for what a
 * store may ask of the breaker it serves.
 *
 * Every function pointer but link, unlink and free is called on a
 * caller's call path, from many threads at once: none may block or do
 * I/O.
 */
#ifndef WMS_SYS_BREAKER_STORE_H
#define WMS_SYS_BREAKER_STORE_H

#include "../common.h"
#include "../errors.h"
#include "../breaker.h"

WMS_BEGIN_DECL

#define WMS_BREAKER_STORE_VERSION 1

/** A link's answer to acquire, record and release: WMS_OK or
 *  WMS_ERR_CIRCUIT_OPEN are verdicts; this one hands the call to the
 *  breaker's in-process engine. */
#define WMS_STORE_LOCAL (-1)

/** Bits of wms_breaker_permit.flags. A store sets TRIAL on a half-open
 *  trial it grants (what wms_breaker_permit_is_trial() reads); the breaker
 *  adds STORE to every permit a store grants (the in-process engine counts
 *  such a permit but lets it decide nothing). A store keeps its own data
 *  in the permit's epoch, _reserved32 and _reserved[0]; the breaker uses
 *  start_ns and _reserved[1]. */
#define WMS_PERMIT_TRIAL 1u
#define WMS_PERMIT_STORE 4u

typedef struct wms_breaker_link wms_breaker_link;   /**< the store's, one per breaker */

typedef struct wms_breaker_store_ops {
	/** Join `breaker`, whose options (defaults applied, name copied) are
	 *  `resolved`; *out is passed to every other call. The store may keep
	 *  `breaker` until unlink. */
	wms_status (*link)(wms_breaker_store *store, wms_breaker *breaker,
			   const wms_breaker_options *resolved, wms_breaker_link **out, wms_error *err);
	/** WMS_OK (the permit's epoch and flags filled), WMS_ERR_CIRCUIT_OPEN
	 *  (*retry_after_ms filled, when not NULL) or WMS_STORE_LOCAL. */
	int (*acquire)(wms_breaker_link *link, wms_breaker_permit *out, uint32_t *retry_after_ms);
	/** Called for permits carrying WMS_PERMIT_STORE only; `slow` is the
	 *  breaker's judgement of the call's duration. */
	void (*record)(wms_breaker_link *link, const wms_breaker_permit *permit, wms_outcome outcome,
		       int slow);
	void (*release)(wms_breaker_link *link, const wms_breaker_permit *permit);
	/** A manual change (force_open, force_closed, disable, reset: `reset`
	 *  1), already made in the in-process engine. */
	void (*manual)(wms_breaker_link *link, wms_breaker_state to, int reset);
	/** The state the store decides by, or WMS_STORE_LOCAL. */
	int (*state)(wms_breaker_link *link);
	/** The store's part of a snapshot: store_state, store_since_ns and,
	 *  while it decides, state, consecutive_failures, retry_after_ms (as
	 *  wms_breaker_snapshot says: OPEN's time left, FORCED_OPEN's
	 *  open_duration_ms, else 0). */
	void (*snapshot)(wms_breaker_link *link, wms_breaker_snapshot *out);
	/** The breaker is being freed; no call is in flight. It may wait for
	 *  a listener the store is running for this breaker (the Redis store
	 *  does): free a breaker while holding no lock its listener takes. */
	void (*unlink)(wms_breaker_link *link);
	/** wms_breaker_store_free(): every linked breaker has been freed. */
	void (*free)(wms_breaker_store *store);
	/** Room for calls to come; NULL. */
	void *_reserved[4];
} wms_breaker_store_ops;

/** A store starts with this header. */
struct wms_breaker_store {
	unsigned version;                 /**< WMS_BREAKER_STORE_VERSION */
	const wms_breaker_store_ops *ops;
	void *_reserved[2];
};

/* ---- what a store may ask of the breaker it serves (any thread) ---- */

/** The breaker's clock (its options' clock, or CLOCK_MONOTONIC), ns. */
WMS_EXTERN(uint64_t) wms_breaker_clock_ns(const wms_breaker *breaker);

/** The in-process engine's state, and for OPEN the milliseconds left of its
 *  open period. Since 0.3.1. */
WMS_EXTERN(wms_breaker_state) wms_breaker_local_state(wms_breaker *breaker,
						      uint32_t *open_remaining_ms);

/** Seed the in-process engine (the store is about to answer
 *  WMS_STORE_LOCAL): OPEN for `open_remaining_ms` (0: a probe may go at
 *  once), CLOSED afresh, FORCED_OPEN or DISABLED. HALF_OPEN is taken as
 *  OPEN with 0 left: the engine runs its own trials. Fires no event. */
WMS_EXTERN(void) wms_breaker_local_adopt(wms_breaker *breaker, wms_breaker_state state,
					 uint32_t open_remaining_ms);

/** Tell the breaker's listener of a change the store made (or of a change
 *  of the store's own state: then from == to, and the event's `store`
 *  says which). `reason` is static text, as the event's; NULL is given to
 *  the listener as "changed by its store". A NULL breaker, or a state or
 *  store state outside its enum: the whole event is dropped (no count, no
 *  event, and its store state, even a valid one, not kept). The
 *  store may call it from its own thread (the breaker's
 *  clock too): the listener may call any wms_breaker_* function, and make
 *  and free other breakers on that store; it must return quickly, and must
 *  not free its own breaker nor the store. */
WMS_EXTERN(void) wms_breaker_store_event(wms_breaker *breaker, wms_breaker_state from,
					 wms_breaker_state to, const char *reason,
					 wms_store_state store);

/** Free a store (NULL-safe). Every breaker linked to it must be freed
 *  first. */
WMS_EXTERN(void) wms_breaker_store_free(wms_breaker_store *store);

WMS_END_DECL

#endif
