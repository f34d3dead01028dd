/*
 * libwms - calls that do not block: thousands in flight from one thread.
 *
 * A wms_async runs calls of one client on an event loop: the caller's
 * (libuv, libevent, an epoll loop: it watches the sockets and the one timer
 * libwms asks for and calls back in, as with libcurl's multi-socket
 * interface), or libwms's own poll loop (wms_async_run). Every call goes
 * through what a blocking call goes through - the client's breaker (an
 * open breaker completes the call at once, nothing sent), bulkhead, read
 * cache and fallbacks, retries (their pauses are timers inside the call's
 * deadline), deadlines, WS-Security, wire log, correlation ids - and its
 * callback gets what the blocking call returns: the status, the reply, and
 * the error with its delivery, fault fields and retry_after_ms.
 *
 *     static void done(wms_status st, const wms_submit_reply *r,
 *                      const wms_error *err, void *payload) { ... }
 *
 *     wms_async *a;
 *     wms_async_new(&a, client, NULL, &err);        // NULL: libwms's loop
 *     for (i = 0; i < n; i++)
 *         wms_async_submit_order(NULL, a, &orders[i], done, &orders[i]);
 *     wms_async_run(a, -1);                         // until all completed
 *     wms_async_free(a);
 *
 * Threads. A wms_async belongs to one thread at a time, the one running its
 * loop: every wms_async_* function on it is called from there, and every
 * callback (completion, watch, timer) runs there, from inside
 * wms_async_socket_action, wms_async_timeout, wms_async_poll,
 * wms_async_run, wms_async_cancel(_all), wms_async_free, or the start
 * function itself for a call that ends without I/O (bad arguments, breaker
 * open, bulkhead full, max_in_flight reached: "completes at once"). The
 * client may be shared with other threads making blocking calls and with
 * other wms_async contexts (one per loop thread): its breakers, bulkheads
 * and read cache are thread-safe.
 *
 * What a callback may call:
 *   - a completion callback: anything. It may start calls and cancel calls
 *     (any; cancelling itself is WMS_ERR_INVALID_ARG: it has completed);
 *     wms_async_free on its own context is deferred to when the outermost
 *     dispatch returns (and wms_async_run returns WMS_OK then);
 *     wms_client_free of its client completes the other calls as cancelled
 *     and leaves the context to be freed;
 *   - the client's callbacks that run while a call is being worked on
 *     (the wire log, error_filter, on_metric, the breaker's
 *     on_state_change, a transport of the caller's; the fallbacks of a
 *     refused call): wms_async_cancel, wms_async_cancel_all, starts and
 *     wms_async_free, from the loop's thread only (a breaker's
 *     on_state_change also comes from blocking callers and the shared
 *     store's thread: those must not touch a context). A cancel there
 *     completes no call on the spot: the call being worked on (the one
 *     being logged, say) completes as cancelled when its step ends, with
 *     the delivery it reached (a reply, if it came, is not reported), the
 *     others right after that step, before the libwms function that ran
 *     it returns; so no completion callback ever runs inside a step. A
 *     call started there that completes at once (refused, bad arguments)
 *     has its callback run then too, not from inside the start. Not
 *     wms_client_free. The breaker's clock is a test hook: it should only
 *     return the time;
 *   - the watch and timer callbacks run inside libcurl or a dispatch: only
 *     wms_async_free (deferred: its calls are cancelled when the dispatch
 *     returns) and wms_async_in_flight. The rest is refused there:
 *     wms_async_cancel, the starts, wms_async_socket_action,
 *     wms_async_timeout, wms_async_poll and wms_async_run return
 *     WMS_ERR_INVALID_ARG (no callback), wms_async_cancel_all 0. Not
 *     wms_client_free.
 * wms_async_cancel_all cancels the calls in flight when it is called: the
 * calls their callbacks start run on. A call started while its context or
 * client is being freed (from one of the cancellations' callbacks)
 * completes at once as cancelled.
 *
 * wms_client_free completes the calls of EVERY context of the client, and
 * runs their callbacks, on the thread that calls it: free a client shared
 * by several loop threads only once those loops have stopped (no thread
 * inside a wms_async_* function of one of its contexts), or from the one
 * thread that runs them all.
 *
 * The wire log (when on) ends a cancelled attempt's request record with a
 * reply record of status WMS_ERR_CANCELLED, no HTTP status and no body.
 *
 * Since 0.3.2.
 */
#ifndef WMS_ASYNC_H
#define WMS_ASYNC_H

#include <stddef.h>
#include <stdint.h>
#include "common.h"
#include "errors.h"
#include "client.h"
#include "call.h"

WMS_BEGIN_DECL

/** One event-loop context of a client. */
typedef struct wms_async wms_async;
/** One call in flight: valid from its start until its callback returns. */
typedef struct wms_async_call wms_async_call;

/** What a watch callback is asked to watch (libcurl's CURL_POLL_* values). */
#define WMS_POLL_IN 1
#define WMS_POLL_OUT 2
#define WMS_POLL_INOUT 3
#define WMS_POLL_REMOVE 4

/** What wms_async_socket_action is told happened (CURL_CSELECT_* values). */
#define WMS_EV_IN 1
#define WMS_EV_OUT 2
#define WMS_EV_ERR 4

/**
 * Watch `fd` for `what` (WMS_POLL_IN, _OUT, _INOUT), replacing what was
 * watched before, or stop (WMS_POLL_REMOVE). `*sockp` is the caller's slot
 * for this socket (NULL the first time; what it is set to comes back on
 * the next calls for the same fd, until WMS_POLL_REMOVE, after which the
 * callback frees whatever it put there). WMS_POLL_REMOVE comes while the
 * fd is still open (before libwms closes it). Return 0; -1 (for IN, OUT
 * or INOUT) cannot be taken back by libcurl: EVERY call then running on
 * the context ends with WMS_ERR_INTERNAL (delivery NOT_SENT or UNKNOWN, as
 * far as each got), calls started from their callbacks run normally, and
 * the function that was running (wms_async_socket_action,
 * wms_async_timeout) or the next one returns WMS_ERR_INTERNAL once. A
 * REMOVE is done whatever the callback returns: libwms and libcurl forget
 * the socket, nothing else changes. See "What a callback may call" above.
 */
typedef int (*wms_async_watch_fn)(wms_async *async, int fd, int what, void *payload,
				  void **sockp);
/**
 * Call wms_async_timeout() once `timeout_ms` have passed (0: as soon as
 * possible, from the loop, not from inside this callback), replacing the
 * timer set before; -1: no timer. Return 0; -1 is reported once, as
 * WMS_ERR_INTERNAL, by the next wms_async_socket_action or
 * wms_async_timeout, and the timer is asked for again at the next change.
 */
typedef int (*wms_async_timer_fn)(wms_async *async, long timeout_ms, void *payload);

#define WMS_ASYNC_OPTIONS_VERSION 1

typedef struct wms_async_options {
	unsigned version;
	/** The caller's event loop: both set, or both NULL (then drive the
	 *  context with wms_async_poll or wms_async_run). */
	wms_async_watch_fn watch;
	wms_async_timer_fn timer;
	void *loop_payload; /**< passed to watch and timer */
	/** Calls in flight on this context at most; one more completes at once
	 *  with WMS_ERR_BULKHEAD_FULL (NOT_SENT), or from the read cache or a
	 *  fallback, as when the client's bulkhead refuses a call (it is not
	 *  counted in the bulkhead's snapshot). 0: 4096; at most 65536. The
	 *  client's bulkhead, if set, caps every context and blocking call
	 *  together; calls on a context never wait for its slot. */
	uint32_t max_in_flight;
	/** Connections to the WMS open at once (calls over it wait for one,
	 *  their deadline running); 0: no cap (one per call in flight).
	 *  Connections are kept and reused between calls (with no cap, each
	 *  kept in one of up to 16 caches, which share no TLS session; a
	 *  cache where no call started or ended for 5 s is closed with its
	 *  connections: by the context's timer, and as the next call starts.
	 *  On libwms's own loop the timer stays set for it with no call in
	 *  flight, so a wms_async_poll of a quiet service closes them; a
	 *  caller's loop is left with no timer once no call is in flight, so
	 *  that it can end, and its idle caches close as the next call
	 *  starts).
	 *  At most 65536. */
	uint32_t max_connections;
	/** Room to grow; zero. */
	void *_reserved[4];
} wms_async_options;

#define WMS_ASYNC_OPTIONS_INIT { WMS_ASYNC_OPTIONS_VERSION, NULL, NULL, NULL, 0, 0, { NULL } }

WMS_EXTERN(wms_status) wms_async_options_init(wms_async_options *opts, unsigned version);

/**
 * A context running calls of `client` (which must outlive it, or be freed
 * first: wms_client_free completes every call in flight on its contexts as
 * WMS_ERR_CANCELLED, and a context left behind completes new calls at once
 * the same way). Its transport runs transfers on the loop when it can (the
 * libcurl transport does); one that cannot (a replay of fixtures, a
 * transport of yours) is called from the loop and blocks it for the call.
 */
WMS_EXTERN(wms_status) wms_async_new(wms_async **out, wms_client *client,
				     const wms_async_options *opts, wms_error *err);

/** Complete every call in flight as WMS_ERR_CANCELLED (callbacks run), let
 *  the sockets go (watch callbacks run with WMS_POLL_REMOVE) and release
 *  the context. NULL-safe. In a child forked since the context was made
 *  (where every other function of it returns WMS_ERR_INVALID_ARG, or 0,
 *  with no callback), its calls are the parent's: they go without
 *  callbacks, and no watch or timer callback runs (README, "Processes and
 *  fork()"). */
WMS_EXTERN(void) wms_async_free(wms_async *async);

/* ---- the operations: as their blocking namesakes (wms/client.h) --------- */

/** `reply` is set when status is WMS_OK, NULL otherwise; it and `err` live
 *  until the callback returns. */
typedef void (*wms_submit_order_cb)(wms_status status, const wms_submit_reply *reply,
				    const wms_error *err, void *payload);
typedef void (*wms_get_order_status_cb)(wms_status status, const wms_status_reply *reply,
					const wms_error *err, void *payload);
typedef void (*wms_cancel_order_cb)(wms_status status, const wms_cancel_reply *reply,
				    const wms_error *err, void *payload);
/** `reply` (WMS_OK only) is the callback's: free it with wms_stock_reply_free. */
typedef void (*wms_get_stock_level_cb)(wms_status status, wms_stock_reply *reply,
				       const wms_error *err, void *payload);
/** `reply` (WMS_OK only) is the callback's: free it with xmlFreeDoc. */
typedef void (*wms_call_cb)(wms_status status, struct _xmlDoc *reply, const wms_error *err,
			    void *payload);

/*
 * Start a call. The arguments are copied (the caller may free them once
 * the function returns). WMS_OK: `cb` runs exactly once, maybe before the
 * function returns (a call that completes at once); `*out` (optional) is
 * the call's handle then, or NULL if it has already completed. Any other
 * status (`async` or `cb` NULL): no callback, nothing started. The other
 * arguments are the blocking call's (wms/client.h): `order`, `order_id` or
 * `skus` NULL completes at once with WMS_ERR_INVALID_ARG, whatever the
 * breaker's state.
 */
WMS_EXTERN(wms_status) wms_async_submit_order(wms_async_call **out, wms_async *async,
					      const wms_order *order, wms_submit_order_cb cb,
					      void *payload);
WMS_EXTERN(wms_status) wms_async_get_order_status(wms_async_call **out, wms_async *async,
						  const char *order_id,
						  wms_get_order_status_cb cb, void *payload);
WMS_EXTERN(wms_status) wms_async_cancel_order(wms_async_call **out, wms_async *async,
					      const char *order_id, const char *reason,
					      wms_cancel_order_cb cb, void *payload);
WMS_EXTERN(wms_status) wms_async_get_stock_level(wms_async_call **out, wms_async *async,
						 const char *const *skus, size_t sku_count,
						 wms_get_stock_level_cb cb, void *payload);
/** wms_call (wms/call.h), asynchronously: `call`'s strings and `body` are
 *  copied. */
WMS_EXTERN(wms_status) wms_async_call_start(wms_async_call **out, wms_async *async,
					    const wms_call_options *call,
					    const struct _xmlNode *body, wms_call_cb cb,
					    void *payload);

/**
 * Cancel one call in flight: its callback runs before this returns, with
 * WMS_ERR_CANCELLED and delivery NOT_SENT only if no byte of the request
 * left (UNKNOWN otherwise: the WMS may have it). A call cancelled between
 * attempts keeps the delivery of those made. WMS_ERR_INVALID_ARG if `call`
 * is NULL.
 */
WMS_EXTERN(wms_status) wms_async_cancel(wms_async *async, wms_async_call *call);
/** Cancel every call in flight on the context; how many were. */
WMS_EXTERN(size_t) wms_async_cancel_all(wms_async *async);

/** Calls in flight (started, not yet completed). */
WMS_EXTERN(size_t) wms_async_in_flight(const wms_async *async);

/* ---- the caller's event loop (watch and timer set) ---------------------- */

/** `fd` is ready (`events`: WMS_EV_IN, _OUT, _ERR, or'ed). Runs what is
 *  due; completions run from here. */
WMS_EXTERN(wms_status) wms_async_socket_action(wms_async *async, int fd, int events);
/** The timer fired. */
WMS_EXTERN(wms_status) wms_async_timeout(wms_async *async);

/* ---- libwms's own loop (watch and timer NULL) ---------------------------- */

/** Wait at most `timeout_ms` (-1: until something happens; 0: do not wait)
 *  for sockets and timers, and run what is due. WMS_ERR_INVALID_ARG on a
 *  context with a loop of the caller's. */
WMS_EXTERN(wms_status) wms_async_poll(wms_async *async, int timeout_ms);
/** wms_async_poll until no call is in flight, or `timeout_ms` have passed
 *  (-1: no limit): WMS_OK when none is left, WMS_ERR_TIMEOUT otherwise. */
WMS_EXTERN(wms_status) wms_async_run(wms_async *async, int timeout_ms);

WMS_END_DECL

#endif
