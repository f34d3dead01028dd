/*
 * libwms - the WMS client and its operations.
 *
 * A wms_client owns its transport and its breaker. It may be shared by any
 * number of threads: every operation is thread-safe, and calls made at the
 * same time run in parallel over separate keep-alive connections. Options
 * are copied at creation; nothing can be changed afterwards.
 */
#ifndef WMS_CLIENT_H
#define WMS_CLIENT_H

#include "common.h"
#include "errors.h"
#include "breaker.h"
#include "curl.h"
#include "shared.h"

WMS_BEGIN_DECL

typedef struct wms_client wms_client;
typedef struct wms_fallbacks wms_fallbacks; /* below */

typedef enum wms_soap_version {
	WMS_SOAP_11 = 0, /**< text/xml, quoted SOAPAction header (default) */
	WMS_SOAP_12 = 1  /**< application/soap+xml; action="..." */
} wms_soap_version;

typedef enum wms_breaker_scope {
	WMS_BREAKER_SCOPE_PER_CLIENT = 0,   /**< one breaker for every operation */
	WMS_BREAKER_SCOPE_PER_OPERATION = 1 /**< one breaker per WMS operation */
} wms_breaker_scope;

/**
 * Retries inside the breaker (the breaker wraps the retry). Each
 * attempt asks the breaker and is recorded by it; no attempt follows
 * CIRCUIT_OPEN; all attempts and backoffs fit inside timeout_ms. A failure
 * is retried when the breaker counts it as a failure, after error_filter
 * (not a Client/Sender fault, an HTTP status below 500 or a bad argument);
 * every WMS operation carries the order id and is idempotent, so a delivery
 * of UNKNOWN is retried too unless `not_sent_only` is set.
 */
typedef struct wms_retry_options {
	uint32_t max_attempts;           /**< attempts in all; 0 or 1 = no retry; max 10 */
	uint32_t initial_backoff_ms;     /**< 0 = 100; max 3600000, and at most max_backoff_ms */
	uint32_t max_backoff_ms;         /**< 0 = 2000; max 3600000 */
	uint32_t backoff_multiplier_pct; /**< 0 = 200 (doubles); 100-1000 */
	int not_sent_only;               /**< retry only when delivery was NOT_SENT */
	/** Room for options to come (the group is embedded in the client's
	 *  options, so it grows into this, never past it); zero. */
	uint32_t _reserved[6];
} wms_retry_options;

#define WMS_RETRY_OPTIONS_INIT { 0, 0, 0, 0, 0, { 0 } }

/** Reclassify a finished attempt for the breaker. `proposed` is the default
 *  classification; return it, or another outcome. Called once per attempt
 *  whose outcome the breaker records, from the calling thread; never for an
 *  attempt that ended INVALID_ARG, NOMEM, FIXTURE, CONFIG or INTERNAL (its
 *  permit is handed back unused), nor for a call rejected with CIRCUIT_OPEN. */
typedef wms_outcome (*wms_error_filter_fn)(const wms_error *err, wms_outcome proposed,
					   void *payload);

/** A metric sample: name, value, and the breaker it is about. */
typedef struct wms_metric {
	const char *name;      /**< e.g. "fulfillment.circuit_breaker_state" */
	double value;          /**< state gauge: 0 closed/disabled, 1 open/forced open, 2 half-open */
	const char *breaker;   /**< breaker name, e.g. "wms" or "wms.SubmitOrder" */
	const char *operation; /**< operation for per-operation breakers, else NULL */
} wms_metric;

typedef void (*wms_metric_fn)(const wms_metric *metric, void *payload);

/** WS-Security UsernameToken profile. */
typedef enum wms_wsse_mode {
	WMS_WSSE_NONE = 0,
	/** wsse:Password in clear (use over TLS only). */
	WMS_WSSE_PASSWORD_TEXT = 1,
	/** Base64(SHA-1(nonce + created + password)), fresh nonce and created per message. */
	WMS_WSSE_PASSWORD_DIGEST = 2
} wms_wsse_mode;

typedef enum wms_wire_direction {
	WMS_WIRE_REQUEST = 0,
	WMS_WIRE_REPLY = 1
} wms_wire_direction;

/** One entry of the wire log: a request as sent or a reply as received,
 *  secrets redacted (the content of every Password element, in any
 *  namespace, and of WS-Security Nonce elements; a body that is not XML and
 *  could hold one is withheld, with a note; HTTP credentials are never part
 *  of it), the body cut at wire_log_max_bytes. */
typedef struct wms_wire_record {
	const char *correlation_id; /**< the same for every record of one call */
	wms_wire_direction direction;
	const char *operation;      /**< "SubmitOrder", ... */
	uint32_t attempt;           /**< 1, 2, ... with retries */
	long http_status;           /**< replies: the HTTP status, 0 if none arrived */
	const char *content_type;   /**< NULL if none */
	const char *body;           /**< not NUL-terminated: use body_len */
	size_t body_len;
	size_t full_len;            /**< the body's length before cutting */
	wms_status status;          /**< replies: the attempt's status */
	double elapsed_ms;          /**< replies: time since the request record */
} wms_wire_record;

typedef void (*wms_wire_log_fn)(const wms_wire_record *record, void *payload);

/** WS-Security UsernameToken in the SOAP header. */
typedef struct wms_wsse_options {
	wms_wsse_mode mode;   /**< default NONE */
	const char *username; /**< required with a mode; copied */
	const char *password; /**< required with a mode; copied, wiped when the client is freed */
	/** Room for options to come; zero. */
	void *_reserved[4];
} wms_wsse_options;

#define WMS_WSSE_OPTIONS_INIT { WMS_WSSE_NONE, NULL, NULL, { NULL } }

/** The client's callbacks: each is given `payload`. All are optional. */
typedef struct wms_client_callbacks {
	/** Reclassify how a finished call counts for the breaker; NULL = the
	 *  default classification (README: "What counts as a failure"). */
	wms_error_filter_fn error_filter;
	/** Metrics: the breaker-state gauge, once per breaker at wms_client_new
	 *  with its initial state, then on every transition, manual ones
	 *  included (FORCED_OPEN reads 1, DISABLED 0). Never called when
	 *  options.breaker is set: the client then neither hooks that breaker
	 *  nor sends an initial sample. */
	wms_metric_fn on_metric;
	/** The wire log: every request and reply, redacted; NULL = off. */
	wms_wire_log_fn on_wire;
	void *payload;
	/** Room for callbacks to come; zero. */
	void *_reserved[4];
} wms_client_callbacks;

#define WMS_CLIENT_CALLBACKS_INIT { NULL, NULL, NULL, NULL, { NULL } }

/**
 * The bulkhead: a cap on the calls in flight at once, so that a WMS that
 * answers slowly (inside the deadline, which never trips the breaker)
 * cannot hold every caller thread. One bulkhead per breaker: the client's,
 * or each operation's with per-operation breakers. A call over the cap gets
 * WMS_ERR_BULKHEAD_FULL at once (delivery NOT_SENT, not counted by the
 * breaker, retry_after_ms a hint), or first waits up to
 * max_wait_for_slot_ms for a call to finish. An open breaker rejects at
 * once, without waiting for a slot; a call that waits does so before it
 * takes the breaker's permit (the wait is not the WMS's time, and holds no
 * half-open trial). Since client options version 4 (0.3.2).
 */
typedef struct wms_bulkhead_options {
	/** Calls in flight at once; 0 = no cap (the default: off, no cost).
	 *  At most WMS_MAX_CONCURRENT_CALLS. */
	uint32_t max_concurrent_calls;
	/** How long a call over the cap waits for a slot; 0 = not at all.
	 *  At most WMS_MAX_TIMEOUT_MS; the wait comes before, not out of, the
	 *  call's own timeout_ms. */
	uint32_t max_wait_for_slot_ms;
	/** Room to grow; zero. */
	uint32_t _reserved[6];
} wms_bulkhead_options;

#define WMS_BULKHEAD_OPTIONS_INIT { 0, 0, { 0 } }
#define WMS_MAX_CONCURRENT_CALLS 65536u

/**
 * The read cache: the last good answers of GetOrderStatus (by order id)
 * and GetStockLevel (by the SKU list, in its order), served when a call is
 * refused without being sent (CIRCUIT_OPEN, BULKHEAD_FULL) and the answer
 * is at most max_age_ms old: WMS_OK, the reply's from_fallback set and
 * fallback_age_ms its age, err->fallback set, delivery NOT_SENT. Asked
 * before the `fallbacks`, which run when it has nothing fresh. Never for
 * SubmitOrder or CancelOrder. The least recently stored or served entry
 * goes first when max_entries or max_bytes would be passed. Since client
 * options version 4 (0.3.2).
 */
typedef struct wms_read_cache_options {
	/** Answers kept; 0 = off (the default: no cost). At most
	 *  WMS_MAX_READ_CACHE_ENTRIES. */
	uint32_t max_entries;
	/** The oldest answer served; 0 = 60000. At most 86400000 (a day). */
	uint32_t max_age_ms;
	/** Bytes the entries may hold in all (a 200-SKU answer takes about
	 *  36 KiB); 0 = 16 MiB; WMS_MIN_READ_CACHE_BYTES (one such answer
	 *  fits) to 1 GiB. */
	uint32_t max_bytes;
	/** Room to grow; zero. */
	uint32_t _reserved[5];
} wms_read_cache_options;

#define WMS_READ_CACHE_OPTIONS_INIT { 0, 0, 0, { 0 } }
#define WMS_MAX_READ_CACHE_ENTRIES 1000000u
#define WMS_MAX_READ_CACHE_AGE_MS 86400000u
#define WMS_MIN_READ_CACHE_BYTES 65536u
#define WMS_MAX_READ_CACHE_BYTES 1073741824u
#define WMS_DEFAULT_READ_CACHE_AGE_MS 60000u
#define WMS_DEFAULT_READ_CACHE_BYTES 16777216u

/* 3 (0.3.1) added `shared`, 4 (0.3.2) `bulkhead` and `read_cache`; a
 * program built with version 2 or 3 keeps working. */
#define WMS_CLIENT_OPTIONS_VERSION 4

#define WMS_DEFAULT_CONNECT_TIMEOUT_MS 2000u
#define WMS_DEFAULT_TIMEOUT_MS 10000u
#define WMS_DEFAULT_STALL_TIMEOUT_MS 5000u
#define WMS_DEFAULT_MAX_REPLY_BYTES (4u * 1024u * 1024u)
#define WMS_MAX_TIMEOUT_MS 3600000u

/**
 * The client's options: plain values, then one group per concern, each
 * with its own _INIT. Zero (or NULL) means "the default" everywhere. New
 * options are added at the end (with a new version), or inside a group's
 * `_reserved` room, so a program built against these headers keeps working
 * with a later libwms.
 */
typedef struct wms_client_options {
	unsigned version;
	/** The WMS endpoint, http:// or https://. Required (unless a custom transport ignores it). */
	const char *endpoint;
	wms_soap_version soap_version;
	/** TCP+TLS connect deadline; 0 = 2000. Max 3600000. */
	uint32_t connect_timeout_ms;
	/** Deadline for the whole call, connect included; 0 = 10000. Max 3600000.
	 *  There is no way to make an unbounded call. */
	uint32_t timeout_ms;
	/** Stall guard: abort when under 1 byte/s is moving for this long; 0 = 5000.
	 *  Max 3600000. */
	uint32_t stall_timeout_ms;
	/** Largest reply body accepted; 0 = 4 MiB. At most 1 GiB. */
	size_t max_reply_bytes;
	/** XML workspaces kept for reuse, and the default for curl's idle
	 *  keep-alive connections; 0 = 8, at most 1024. More concurrent calls
	 *  use more, and free the surplus afterwards. */
	uint32_t max_idle_connections;
	/** The embedded breaker. Ignored when `breaker` is set. */
	wms_breaker_options breaker_options;
	/** Use this breaker instead of creating one (not owned, must outlive the client). */
	wms_breaker *breaker;
	/** One breaker for the client (default) or one per operation (a breaker
	 *  per resource). Ignored when `breaker` is set. */
	wms_breaker_scope breaker_scope;
	/** Retries inside the breaker; default: none (1 attempt). */
	wms_retry_options retry;
	/** Custom transport (wms/sys/transport.h); the client takes ownership,
	 *  also when creation fails. NULL = libcurl's, made from `curl`. */
	wms_transport *transport;
	/** libcurl's transport, when `transport` is NULL (wms/curl.h). With a
	 *  custom transport it must stay as WMS_CURL_TRANSPORT_OPTIONS_INIT
	 *  (INVALID_ARG naming the field): that one is configured when it is
	 *  made. TLS files are checked when the client is made (INVALID_ARG
	 *  naming the file). */
	wms_curl_transport_options curl;
	/** WS-Security UsernameToken; default none. */
	wms_wsse_options wsse;
	/** Per-operation fallbacks run on CIRCUIT_OPEN and BULKHEAD_FULL;
	 *  NULL = none. Copied. */
	const wms_fallbacks *fallbacks;
	/** Prefix of metric names; NULL = "fulfillment" (the state gauge is then
	 *  fulfillment.circuit_breaker_state). One or more bytes of
	 *  [A-Za-z0-9_.:-], any length (ASCII only: no control byte, space or
	 *  UTF-8); anything else, "" included, is INVALID_ARG naming the field
	 *  and the offset of the first bad byte. Copied. */
	const char *metric_prefix;
	/** Body bytes kept per wire-log record; 0 = 4096. */
	size_t wire_log_max_bytes;
	wms_client_callbacks callbacks;
	/** One breaker for the fleet (wms/shared.h): with redis_url set, the
	 *  client makes a Redis store, links its breakers to it (each by its
	 *  name) and frees it with the client. Ignored when `breaker` or
	 *  breaker_options.store is set. Since version 3 (0.3.1). */
	wms_shared_options shared;
	/** The bulkhead; default off. Since version 4 (0.3.2). */
	wms_bulkhead_options bulkhead;
	/** The read cache; default off. Since version 4 (0.3.2). */
	wms_read_cache_options read_cache;
} wms_client_options;

#define WMS_CLIENT_OPTIONS_INIT { WMS_CLIENT_OPTIONS_VERSION, NULL, WMS_SOAP_11, 0, 0, 0, 0, 0, \
	WMS_BREAKER_OPTIONS_INIT, NULL, WMS_BREAKER_SCOPE_PER_CLIENT, WMS_RETRY_OPTIONS_INIT, NULL, \
	WMS_CURL_TRANSPORT_OPTIONS_INIT, WMS_WSSE_OPTIONS_INIT, NULL, NULL, 0, \
	WMS_CLIENT_CALLBACKS_INIT, WMS_SHARED_OPTIONS_INIT, WMS_BULKHEAD_OPTIONS_INIT, \
	WMS_READ_CACHE_OPTIONS_INIT }

WMS_EXTERN(wms_status) wms_client_options_init(wms_client_options *opts, unsigned version);

/** Create a client. `err` (optional) explains an INVALID_ARG. */
WMS_EXTERN(wms_status) wms_client_new(wms_client **out, const wms_client_options *opts,
				      wms_error *err);

/** NULL-safe. No call may be in flight on the client. With
 *  options.shared, outcomes still queued for Redis are sent first (for
 *  at most two shared.command_timeout_ms), and a state-change listener
 *  running on the store's thread is waited for. In a child forked since
 *  the client was made (where its operations return WMS_ERR_INVALID_ARG),
 *  it lets go of the client without a byte sent on the parent's
 *  connections, a callback run, a lock waited for or a thread joined
 *  (README, "Processes and fork()"). */
WMS_EXTERN(void) wms_client_free(wms_client *client);

/** The client's breaker (owned by the client unless one was passed in). With
 *  per-operation breakers: SubmitOrder's. */
WMS_EXTERN(wms_breaker *) wms_client_breaker(wms_client *client);

/**
 * How the client's default error filter counts a finished call for the
 * breaker (README: "What counts as a failure"): SUCCESS for WMS_OK; FAILURE
 * for connect/DNS errors, timeouts, resets, TLS, HTTP 5xx, SOAP faults other
 * than Client/Sender/envelope-level ones, and unusable replies; IGNORED for
 * Client/Sender/envelope-level faults, HTTP statuses other than 5xx, and our
 * own errors: INVALID_ARG, NOMEM, CIRCUIT_OPEN, FIXTURE, CONFIG, INTERNAL
 * (which the client does not record at all: it hands the permit back). A
 * custom error_filter receives this as `proposed`.
 */
WMS_EXTERN(wms_outcome) wms_error_outcome(const wms_error *err);

/** The breaker guarding `operation` ("SubmitOrder", ...); NULL if unknown. */
WMS_EXTERN(wms_breaker *) wms_client_breaker_for(wms_client *client, const char *operation);

/** Every breaker of the client: writes up to `max` into `out`, returns how many there are. */
WMS_EXTERN(size_t) wms_client_breakers(wms_breaker **out, size_t max, wms_client *client);

/** A bulkhead's figures at one moment (counts since the client was made). */
typedef struct wms_bulkhead_snapshot {
	uint32_t max_concurrent_calls; /**< 0: no cap (the counts below stay 0) */
	uint32_t max_wait_for_slot_ms;
	uint32_t in_flight;            /**< calls holding a slot */
	uint32_t waiting;              /**< calls waiting for one */
	uint64_t admitted;             /**< calls that got a slot */
	uint64_t waited;               /**< of those, how many had to wait */
	uint64_t rejected;             /**< calls refused: WMS_ERR_BULKHEAD_FULL */
	/** Room to grow (caller-allocated); zero. */
	uint64_t _reserved[4];
} wms_bulkhead_snapshot;

/** The bulkhead guarding `operation` ("SubmitOrder", ...; NULL: the
 *  client's, SubmitOrder's with per-operation breakers). INVALID_ARG for
 *  a NULL argument or an unknown operation. Since 0.3.2. */
WMS_EXTERN(wms_status) wms_client_bulkhead_get(wms_bulkhead_snapshot *out, wms_client *client,
					       const char *operation);

/** The read cache's figures at one moment (counts since the client was
 *  made). A lookup is made for each GetOrderStatus or GetStockLevel call
 *  refused without being sent. */
typedef struct wms_read_cache_snapshot {
	uint32_t max_entries; /**< 0: off (everything below stays 0) */
	uint32_t max_age_ms;
	uint64_t max_bytes;
	uint64_t entries;     /**< answers held */
	uint64_t bytes;       /**< what they take: headers, keys and answers
				   (counted against max_bytes; the hash table aside) */
	uint64_t hits;        /**< lookups answered from the cache */
	uint64_t misses;      /**< lookups not answered (expired ones included) */
	uint64_t expired;     /**< of the misses, those that found an answer too old */
	uint64_t evictions;   /**< entries dropped to make room */
	/** Room to grow (caller-allocated); zero. */
	uint64_t _reserved[4];
} wms_read_cache_snapshot;

/** The client's read cache. INVALID_ARG for a NULL argument. Since 0.3.2. */
WMS_EXTERN(wms_status) wms_client_read_cache_get(wms_read_cache_snapshot *out,
						 wms_client *client);

/* ---- the WMS operations (wsdl/warehouse.wsdl) -------------------------- */

#define WMS_ID_MAX 64      /* order ids, references, SKUs: at most 64 bytes */
#define WMS_MAX_LINES 1000 /* order lines per order */
#define WMS_MAX_SKUS 200   /* SKUs per stock query */

typedef enum wms_priority {
	WMS_PRIORITY_STANDARD = 0,
	WMS_PRIORITY_EXPRESS = 1,
	WMS_PRIORITY_OVERNIGHT = 2
} wms_priority;

typedef enum wms_order_state {
	WMS_ORDER_STATE_UNKNOWN = 0, /**< a state this version of libwms does not know */
	WMS_ORDER_STATE_RECEIVED = 1,
	WMS_ORDER_STATE_ALLOCATED = 2,
	WMS_ORDER_STATE_PICKING = 3,
	WMS_ORDER_STATE_PACKED = 4,
	WMS_ORDER_STATE_SHIPPED = 5,
	WMS_ORDER_STATE_CANCELLED = 6
} wms_order_state;

/** "RECEIVED", "SHIPPED", ...; "UNKNOWN" for anything else. */
WMS_EXTERN(const char *) wms_order_state_name(wms_order_state state);

typedef struct wms_address {
	const char *name;        /**< required */
	const char *line1;       /**< required */
	const char *line2;       /**< optional */
	const char *city;        /**< required */
	const char *region;      /**< optional */
	const char *postal_code; /**< required */
	const char *country;     /**< required, ISO 3166-1 alpha-2 */
} wms_address;

/* wms_address and wms_order_line are plain inputs, written with positional
 * initializers: they carry no reserved room, so a field added to either is
 * a deliberate ABI break (a new soname and WMS_ORDER_VERSION). */
typedef struct wms_order_line {
	const char *sku;   /**< 1-64 bytes */
	uint32_t quantity; /**< 1-1000000 */
} wms_order_line;

#define WMS_ORDER_VERSION 1

typedef struct wms_order {
	unsigned version;
	/** The client's order id: the idempotency key. 1-64 bytes of [A-Za-z0-9._:-]. */
	const char *order_id;
	wms_address ship_to;
	wms_priority priority;
	const wms_order_line *lines;
	size_t line_count; /**< 1-WMS_MAX_LINES */
} wms_order;

#define WMS_ORDER_INIT { WMS_ORDER_VERSION, NULL, { NULL, NULL, NULL, NULL, NULL, NULL, NULL }, \
	WMS_PRIORITY_STANDARD, NULL, 0 }

typedef struct wms_submit_reply {
	char wms_reference[WMS_ID_MAX + 1];
	char order_id[WMS_ID_MAX + 1];
	wms_order_state state;
	/** Non-zero when the WMS already had this order id: nothing new was created. */
	int duplicate;
	/** Non-zero when a fallback produced this reply, not the WMS. */
	int from_fallback;
	/** Room to grow (caller-allocated); zero. */
	uint64_t _reserved[4];
} wms_submit_reply;

typedef struct wms_status_reply {
	char wms_reference[WMS_ID_MAX + 1];
	char order_id[WMS_ID_MAX + 1];
	wms_order_state state;
	/** The WMS's timestamp of the last change, as sent (xs:dateTime). */
	char updated_at[40];
	int from_fallback;
	/** With from_fallback: how old the answer served from the read cache
	 *  is, in ms; 0 otherwise. Since 0.3.2. */
	uint64_t fallback_age_ms;
	/** Room to grow (caller-allocated); zero. */
	uint64_t _reserved[3];
} wms_status_reply;

typedef struct wms_cancel_reply {
	char order_id[WMS_ID_MAX + 1];
	wms_order_state state;
	/** Non-zero when the order was already cancelled before this call. */
	int already_cancelled;
	int from_fallback;
	/** Room to grow (caller-allocated); zero. */
	uint64_t _reserved[4];
} wms_cancel_reply;

typedef struct wms_stock_level {
	char sku[WMS_ID_MAX + 1];
	int64_t on_hand;
	int64_t reserved;
	int64_t available;
	/** Room to grow (the levels are an array the caller indexes); zero. */
	uint64_t _reserved[2];
} wms_stock_level;

/** The reply to GetStockLevel: one level per SKU asked for, in that order. */
typedef struct wms_stock_reply {
	size_t count;
	wms_stock_level *levels;
	int from_fallback;
	/** With from_fallback: how old the answer served from the read cache
	 *  is, in ms; 0 otherwise. Since 0.3.2. */
	uint64_t fallback_age_ms;
} wms_stock_reply;

/** Allocate a reply with `count` zeroed levels (for fallbacks). */
WMS_EXTERN(wms_status) wms_stock_reply_new(wms_stock_reply **out, size_t count);

/** NULL-safe; frees the levels too. */
WMS_EXTERN(void) wms_stock_reply_free(wms_stock_reply *reply);

/** What a fallback is told about the call it stands in for. */
typedef struct wms_fallback_call {
	const char *operation;        /**< "SubmitOrder", ... */
	const wms_order *order;       /**< SubmitOrder */
	const char *order_id;         /**< GetOrderStatus, CancelOrder, SubmitOrder */
	const char *reason;           /**< CancelOrder */
	const char *const *skus;      /**< GetStockLevel */
	size_t sku_count;
	const wms_error *error;       /**< why: CIRCUIT_OPEN or BULKHEAD_FULL, with
					   retry_after_ms */
} wms_fallback_call;

/**
 * Fallbacks, one per operation, run instead of failing with CIRCUIT_OPEN
 * or (since 0.3.2) BULKHEAD_FULL, calls refused before anything was sent
 * (e.g. accept the order locally as pending). What a fallback returns is
 * what the call returns; the reply has `from_fallback` set and the error
 * detail has `fallback` set and delivery NOT_SENT, so it can never be taken
 * for the WMS's answer. A NULL entry means no fallback for that operation.
 * With the read cache on, a fresh cached answer comes first; the fallback
 * runs when it has none.
 */
struct wms_fallbacks {
	wms_status (*submit_order)(wms_submit_reply *out, const wms_fallback_call *call,
				   void *payload);
	wms_status (*get_order_status)(wms_status_reply *out, const wms_fallback_call *call,
				       void *payload);
	wms_status (*cancel_order)(wms_cancel_reply *out, const wms_fallback_call *call,
				   void *payload);
	wms_status (*get_stock_level)(wms_stock_reply **out, const wms_fallback_call *call,
				      void *payload);
	void *payload;
	/** Room for operations to come (copied whole); NULL. */
	void *_reserved[4];
};

#define WMS_FALLBACKS_INIT { NULL, NULL, NULL, NULL, NULL, { NULL } }

/**
 * Submit an order. Idempotent on order->order_id: resubmitting the same
 * order after WMS_DELIVERY_UNKNOWN never creates a second one.
 * `out` and `err` may be NULL. `client` or `order` NULL: WMS_ERR_INVALID_ARG
 * whatever the breaker's state (as for `order_id` and `skus` below); the
 * rest of the arguments is checked once the breaker lets the call through.
 */
WMS_EXTERN(wms_status) wms_submit_order(wms_submit_reply *out, wms_client *client,
					const wms_order *order, wms_error *err);

/** `out` and `err` may be NULL; `order_id` NULL: WMS_ERR_INVALID_ARG. */
WMS_EXTERN(wms_status) wms_get_order_status(wms_status_reply *out, wms_client *client,
					    const char *order_id, wms_error *err);

/** `out` and `err` may be NULL; `order_id` NULL: WMS_ERR_INVALID_ARG;
 *  `reason` NULL or "": none is sent (the schema's reason is optional). */
WMS_EXTERN(wms_status) wms_cancel_order(wms_cancel_reply *out, wms_client *client,
					const char *order_id, const char *reason, wms_error *err);

/** `*out` receives a reply to free with wms_stock_reply_free(); `out` or
 *  `skus` NULL: WMS_ERR_INVALID_ARG. `err` may be NULL. */
WMS_EXTERN(wms_status) wms_get_stock_level(wms_stock_reply **out, wms_client *client,
					   const char *const *skus, size_t sku_count,
					   wms_error *err);

WMS_END_DECL

#endif
