/*
 * libwms - one breaker for the whole fleet: breaker state shared through
 * Redis by every replica of a service.
 *
 *     wms_shared_options so = WMS_SHARED_OPTIONS_INIT;
 *     wms_breaker_store *store;
 *     so.redis_url = "redis://10.0.0.5:6379/0";
 *     so.name = "fulfillment";
 *     if (wms_redis_store_new(&store, &so, &err) != WMS_OK) ...
 *     bo.store = store;              // wms_breaker_options, or the client's
 *     ...                            // free the breakers (clients) first
 *     wms_breaker_store_free(store);
 *
 * A client made with options.shared.redis_url set makes (and frees) its own.
 *
 * Callers never wait on Redis: one agent thread per store owns the
 * connections; acquire and record read and write the process's mirror of
 * the shared state and queue outcomes. Each change of the shared state is
 * one Lua script run on Redis, timed by Redis's own clock. When Redis is
 * slow, frozen, down or unreachable, every linked breaker falls back to its
 * in-process engine within heartbeat_ms + command_timeout_ms, seeded with
 * the last shared state, and rejoins when Redis is back; an OPEN breaker
 * is never closed by the rejoin (open wins). A breaker whose script Redis
 * answers with an error (OOM, READONLY, a key of another type), or with a
 * state out of range (a hash another writer changed), falls back alone, at
 * once, and tries to rejoin every second. Changes made by hand
 * (wms_breaker_force_open, ...) reach the fleet like outcomes: freeing the
 * breaker and then the store right after one sends it first, while Redis
 * answers: each change is one script run (up to a command timeout each, and
 * a reload of the script after a flush), then the outcomes within two
 * command timeouts. A change whose attempt failed (the connection was lost
 * before its reply, or Redis refused it) is sent again on the reconnect or
 * after the refusal's back-off, unless a newer one was made in this
 * process; Redis then keeps any change by hand that reached it since the
 * state this process knew when it made the change (this change itself,
 * run but unanswered, or one made elsewhere), and the replica adopts it.
 * A change the breaker's engine has left on its own while it waited (a
 * reset, then failures that tripped it) is not sent: the rejoin gives the
 * fleet the engine's state (open wins).
 * hiredis 0.14: RESP2, no TLS
 * (use a unix socket or a trusted network).
 */
#ifndef WMS_SHARED_H
#define WMS_SHARED_H

#include "common.h"
#include "errors.h"
#include "breaker.h"
#include "sys/breaker_store.h" /* wms_breaker_store_free */

WMS_BEGIN_DECL

#define WMS_SHARED_OPTIONS_VERSION 1

typedef struct wms_shared_options {
	unsigned version;
	/** redis://[[USER]:PASSWORD@]HOST[:PORT][/DB] or unix:///PATH[?db=DB].
	 *  Required. The password is never logged or put in a message. */
	const char *redis_url;
	/** The fleet's name for its breakers: every key is prefixed and
	 *  hash-tagged by it ("wms:{NAME}:s:BREAKER", ...). Letters, digits, '.', '-',
	 *  '_', 1-64 bytes. Default "wms". */
	const char *name;
	/** Deadline of each Redis command, and of each connect; default 100,
	 *  1-10000. */
	uint32_t command_timeout_ms;
	/** How often the agent checks that Redis answers, and reads every
	 *  breaker's shared epoch (pub/sub loses messages across a reconnect);
	 *  default 50, 5-10000. Redis is given up on within heartbeat_ms +
	 *  command_timeout_ms. */
	uint32_t heartbeat_ms;
	/** Seconds a breaker's keys outlive their last change; default 86400
	 *  (a day), 60-2592000. An OPEN breaker's keys always outlive its open
	 *  period. */
	uint32_t key_ttl_s;
	/** Outcomes queued for the agent before further ones are dropped (and
	 *  counted); default 4096, 64-1048576, rounded up to a power of two. */
	uint32_t queue_size;
	/** Replicas that must have reported a failure before the fleet opens
	 *  (counted by store: a client with options.shared makes its own, and a
	 *  restarted process is a new one), so that one replica whose own
	 *  network is broken cannot open the breaker for all: failures since
	 *  the breaker last closed (consecutive mode: in the current run; time
	 *  window: within it). Default 1 (any replica), 1-64. A fleet running
	 *  fewer replicas than this never opens through the store: keep it
	 *  below the replicas you run. Half-open trials are not subject to it. */
	uint32_t quorum;
	uint32_t _reserved32;
	/** Room for options to come; zero. */
	void *_reserved[5];
} wms_shared_options;

#define WMS_SHARED_OPTIONS_INIT { WMS_SHARED_OPTIONS_VERSION, NULL, NULL, 0, 0, 0, 0, 0, 0, { NULL } }

WMS_EXTERN(wms_status) wms_shared_options_init(wms_shared_options *opts, unsigned version);

/**
 * Make a Redis store and start its agent thread. It does not wait for
 * Redis: a store whose Redis is not (yet) reachable is made, its breakers
 * decide in-process (CONNECTING, then DEGRADED) and join when it answers.
 * WMS_ERR_INVALID_ARG (naming the field) for a bad option or URL, or for
 * `opts` NULL, WMS_ERR_NOMEM, WMS_ERR_INTERNAL if the thread cannot start;
 * on any error *out is NULL.
 */
WMS_EXTERN(wms_status) wms_redis_store_new(wms_breaker_store **out, const wms_shared_options *opts,
					   wms_error *err);

/** What the store has done since it was made (for tests and metrics). */
typedef struct wms_shared_stats {
	uint64_t commands;      /**< commands sent to Redis (scripts, pings, subscribes) */
	uint64_t scripts;       /**< script runs among them */
	uint64_t script_loads;  /**< scripts (re)loaded after NOSCRIPT */
	uint64_t messages;      /**< pub/sub messages received */
	uint64_t connects;      /**< successful (re)connects */
	uint64_t degrades;      /**< times the store was given up on */
	uint64_t dropped;       /**< outcomes dropped because the queue was full */
	uint64_t _reserved[9];
} wms_shared_stats;

WMS_EXTERN(void) wms_redis_store_stats(wms_shared_stats *out, wms_breaker_store *store);

WMS_END_DECL

#endif
