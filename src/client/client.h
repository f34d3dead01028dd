/* What the client's files (src/client/) share: the client itself and one
 * call's arguments. Never installed. */
#ifndef WMS_CLIENT_CLIENT_H
#define WMS_CLIENT_CLIENT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include "client/classify.h"
#include "internal.h"
#include "soap/soap.h"
#include "wms/client.h"
#include "wms/call.h"
#include "wms/sys/transport.h"

/* ---- bulkhead.c: a cap on the calls in flight ---------------------------- */

/* One bulkhead (wms_bulkhead_options). With max 0 it is off: enter and
 * leave touch nothing. A slot is an atomic count; only a call that has to
 * wait takes the lock, and a leaving call takes it only while one waits. */
typedef struct wms__bulkhead {
	uint32_t max, wait_ms;
	_Atomic uint32_t in_flight, waiting;
	_Atomic uint64_t admitted, waited, rejected;
	pthread_mutex_t lock;
	pthread_cond_t freed; /* on CLOCK_MONOTONIC */
	int ready;            /* lock and freed were made */
} wms__bulkhead;

/* WMS_OK, or NOMEM/INTERNAL when the lock cannot be made. */
wms_status wms__bulkhead_init(wms__bulkhead *b, const wms_bulkhead_options *o);
void wms__bulkhead_destroy(wms__bulkhead *b);
/* A slot if one is free now: 1 (always, when off), else 0, nothing counted. */
int wms__bulkhead_try(wms__bulkhead *b);
/* A slot, waiting at most wait_ms for one: 1, or 0 counted as refused. */
int wms__bulkhead_wait(wms__bulkhead *b);
/* Count a call refused without waiting. */
void wms__bulkhead_refused(wms__bulkhead *b);
void wms__bulkhead_leave(wms__bulkhead *b);
void wms__bulkhead_snapshot(wms_bulkhead_snapshot *out, wms__bulkhead *b);

/* What the state-change hook of one breaker needs. */
typedef struct breaker_hook {
	wms_client *client;
	/* set once made; the gauge reads its state. Atomic: a shared breaker's
	 * store may fire an event from its own thread before it is set. */
	_Atomic(wms_breaker *) breaker;
	const char *operation; /* NULL for the client-wide breaker */
	/* the caller's breaker callbacks, called with their payload */
	wms_breaker_callbacks user;
} breaker_hook;

/* Breakers (and bulkheads) a client may hold: the typed operations', then
 * one per generic operation with per-operation breakers (wms/call.h). */
#define WMS__CLIENT_SLOTS (WMS__OP_COUNT + WMS_MAX_CALL_OPERATIONS)

struct wms_client {
	char *endpoint;
	wms_soap_version soap_version;
	uint32_t connect_timeout_ms;
	uint32_t timeout_ms;
	uint32_t stall_timeout_ms;
	size_t max_reply_bytes;
	/* breakers[op]: the same pointer for every op in PER_CLIENT scope; past
	 * WMS__OP_COUNT, the generic operations' (call_names), made on first
	 * use under calls_lock and published by breaker_count */
	wms_breaker *breakers[WMS__CLIENT_SLOTS];
	breaker_hook hooks[WMS__CLIENT_SLOTS];
	_Atomic size_t breaker_count;
	int own_breakers;
	wms_breaker_options bo; /* what the client's breakers are made from */
	char *breaker_base;     /* bo.name's copy: "<base>.<operation>" names */
	pthread_mutex_t calls_lock;
	int calls_lock_ready;
	char *call_names[WMS_MAX_CALL_OPERATIONS];
	size_t call_count;
	/* bulkheads[i] guards breakers[i] (i < breaker_count): an operation's
	 * slot (wms__client_slot) indexes both */
	wms__bulkhead bulkheads[WMS__CLIENT_SLOTS];
	wms_bulkhead_options bulkhead_opts;
	wms_breaker_store *store; /* made from options.shared, freed after the breakers */
	wms_transport *transport;
	wms_retry_options retry;
	wms_client_callbacks cb; /* error filter, metrics, wire log */
	wms_fallbacks fallbacks;
	int has_fallbacks;
	char *state_metric; /* "<prefix>.circuit_breaker_state" */
	/* WS-Security (TLS and HTTP credentials are the transport's) */
	wms__wsse wsse;
	char *wsse_username;
	char *wsse_password;
	/* wire log and correlation ids */
	size_t wire_max;
	char id_prefix[16];
	_Atomic uint64_t call_seq;
	/* libxml2 workspaces, one per call in flight (soap.h) */
	wms__xml_pool *xml_pool;
	/* the read cache; NULL when off (read_cache.c) */
	struct wms__read_cache *read_cache;
	/* the async contexts made on it (async.c), under calls_lock */
	struct wms_async *asyncs;
	/* the process it was made in (util/fork.h): its generation, and its
	 * id for the message a forked child is refused with */
	unsigned long fork_gen;
	long pid;
};

/* WMS_OK, or (in a child forked since c was made) INVALID_ARG with err
 * saying so: nothing of c's is touched. */
wms_status wms__client_check_process(const wms_client *c, wms_error *err);

/* The breaker and bulkhead slot of a typed operation. */
size_t wms__client_slot(wms_client *c, wms__op op);
/* The slot of a generic operation (options.c): its typed namesake's, the
 * client's one, or one made on first use (per-operation breakers). */
wms_status wms__client_call_slot(wms_client *c, const char *operation, size_t *out,
				 wms_error *err);

/* A generic call (generic.c): its options, body and where the reply goes. */
typedef struct generic_call {
	const wms_call_options *opts;
	const struct _xmlNode *body;
	struct _xmlDoc **out;
	char content_type[640];
} generic_call;

/* One call's arguments, as the operations pass them on. */
typedef struct call {
	wms__op op;            /* typed calls */
	const generic_call *g; /* generic calls (op unused) */
	size_t slot;           /* its breaker and bulkhead */
	const wms_order *order;
	const char *order_id;
	const char *reason;
	const char *const *skus;
	size_t sku_count;
	void *out; /* the reply struct, or wms_stock_reply ** */
} call;

/* call.c: one call, typed or generic (k->g), through breaker, bulkhead,
 * retries and the transport. */
wms_status wms__perform(wms_client *c, const call *k, wms_error *err);

/* The steps wms__perform takes, which the asynchronous calls (async.c)
 * take too, driven by their event loop instead of a thread:
 *   admit -> first -> { request, [transport], reply -> after -> [pause]
 *   -> again } -> end. */
typedef struct wms__attempts {
	wms_breaker *b;
	wms__bulkhead *bh;
	wms_breaker_permit permit; /* held from admit (or again) to after */
	uint32_t attempt;          /* 1, 2, ... */
	uint32_t timeout_ms;       /* this attempt's */
	wms_delivery delivery;     /* the call's so far */
	uint64_t deadline, rng;    /* with retries */
} wms__attempts;

/* The breaker and bulkhead slot of a call. */
size_t wms__call_slot(wms_client *c, const call *k);
/* err cleared and named; a bulkhead slot (waited for, if may_wait and the
 * bulkhead waits) and the breaker's permit: 1. Refused: 0, with *final
 * the call's status (the read cache or a fallback may have answered). */
int wms__call_admit(wms_client *c, const call *k, int may_wait, wms__attempts *at,
		    wms_status *final, wms_error *err);
/* A call refused without being sent (err->status CIRCUIT_OPEN or
 * BULKHEAD_FULL): a typed read answered from the read cache, else the
 * caller's fallback, else err->status. The call's status. */
wms_status wms__call_refused(wms_client *c, const call *k, wms_error *err);
/* Build the first attempt's envelope, number the call (correlation id),
 * set its deadline. Failing, the permit goes back: the call's status. */
wms_status wms__call_first(wms_client *c, wms__xml_ws *ws, const call *k, wms__buf *body,
			   wms__attempts *at, wms_error *err);
/* The request of one attempt (borrowing body and err's correlation id). */
void wms__call_request(wms_client *c, const call *k, const wms__buf *body, uint32_t timeout_ms,
		       const wms_error *err, wms_http_request *req);
/* The wire log's request record, if one is kept: its time, else 0. */
uint64_t wms__call_sending(wms_client *c, const wms_http_request *req, const wms_error *err);
/* An attempt handed to the transport that ends with st (CANCELLED) and no
 * reply: the wire log's reply record says so (no HTTP status, no body). */
void wms__call_unanswered(wms_client *c, const wms_http_request *req, wms_status st,
			  const wms_error *err, uint64_t start);
/* What the transport brought back (`sent`: its status): interpreted,
 * logged, correlated; resp cleared. The attempt's status. */
wms_status wms__call_reply(wms_client *c, wms__xml_ws *ws, const call *k,
			   const wms_http_request *req, wms_http_response *resp, wms_status sent,
			   uint64_t deadline_ns, uint64_t start, wms_error *err);
/* An attempt ended with st: the breaker told; 1 when another may follow
 * after *pause_ns, 0 when the call ends with st. */
int wms__call_after(wms_client *c, const call *k, wms__attempts *at, wms_status st,
		    wms_error *err, uint64_t *pause_ns);
/* After the pause: 1 with the next attempt's permit, timeout and envelope;
 * 0 when the call ends, with *st its status. */
int wms__call_again(wms_client *c, wms__xml_ws *ws, const call *k, wms__buf *body,
		    wms__attempts *at, wms_status *st, wms_error *err);
/* The slot given back, a good read kept in the read cache. */
void wms__call_end(wms_client *c, const call *k, wms__attempts *at, wms_status st);

/* ---- async.c and options.c: a client's async contexts ------------------- */

struct wms_async;
/* Link and unlink a context (under calls_lock). */
void wms__client_async_add(wms_client *c, struct wms_async *a);
void wms__client_async_remove(wms_client *c, struct wms_async *a);
/* The client is being freed: a's calls complete as cancelled, its engine
 * goes, it is left without a client. */
void wms__async_client_gone(struct wms_async *a);
/* The same in a child forked since: the calls go without callbacks and the
 * engine without touching the parent's connections (async.c's forget). */
void wms__async_client_forgotten(struct wms_async *a);
/* The context's place in its client's list (async.c owns the struct). */
struct wms_async **wms__async_next(struct wms_async *a);
/* Tests: the context's engine (NULL: its transport has none). */
struct wms__engine *wms__async_engine(struct wms_async *a);

/* generic.c: what wms_call checks and makes before its call starts: g
 * filled (options, body, content type, out), or err says why not. */
wms_status wms__generic_prepare(generic_call *g, wms_client *c, const wms_call_options *opts,
				const struct _xmlNode *body, struct _xmlDoc **out, wms_error *err);

/* ---- read_cache.c: the last good answers of the reads ------------------- */

typedef struct wms__read_cache wms__read_cache;

/* *out NULL when max_entries is 0 (off); WMS_OK, NOMEM or INTERNAL. The
 * options are checked already. */
wms_status wms__read_cache_new(wms__read_cache **out, const wms_read_cache_options *o);
void wms__read_cache_free(wms__read_cache *rc);
/* Keep a copy of the good, correlated answer in k->out (a read's; other
 * calls are ignored), stored at now_ns; not kept without memory. */
void wms__read_cache_store(wms__read_cache *rc, const call *k, uint64_t now_ns);
/* 1: an answer at most max_age_ms old was written to k->out, marked
 * from_fallback with its age (also in *age_ms); 0: none (a miss). */
int wms__read_cache_serve(wms__read_cache *rc, const call *k, uint64_t now_ns, uint64_t *age_ms);
void wms__read_cache_snapshot(wms_read_cache_snapshot *out, wms__read_cache *rc);

/* ---- classify.c: what counts as a failure, what may be tried again ------ */

/* How a finished attempt counts for the breaker: the default
 * classification, then the caller's filter (a value it should not return
 * reads as IGNORED). *record = 0: the attempt says nothing of the WMS (our
 * own error), the permit goes back unrecorded. */
wms_outcome wms__call_outcome(const wms_error *err, wms_error_filter_fn filter, void *payload,
			      int *record);

/* Whether an attempt that ended with `st`, counted `outcome` (recorded or
 * not), may be tried again, the attempts and the time left aside: the
 * breaker counted it as a failure and, with not_sent_only, it provably did
 * not reach the WMS (`delivery`, the whole call's so far). */
int wms__retryable(const wms_retry_options *r, wms_status st, wms_outcome outcome, int recorded,
		   wms_delivery delivery);

/* ---- retry.c: backoff and the call's delivery --------------------------- */

/* Full-jitter backoff before retry `retry_no` (1: the first): uniform in
 * [0, min(max, initial * mult^(retry_no-1))] ms, in ns; *rng is the
 * caller's xorshift state (non-zero). */
uint64_t wms__backoff_ns(const wms_retry_options *r, uint32_t retry_no, uint64_t *rng);

/* Sleep `ns`, through signals. */
void wms__sleep_ns(uint64_t ns);

/* The delivery that is true of the whole call, given what it was so far and
 * the last attempt's. */
wms_delivery wms__merge_delivery(wms_delivery so_far, wms_delivery last);

#endif
