/* A transport's transfers run from an event loop (async.c drives them):
 * what the libcurl transport offers beside its blocking send. Internal
 * for now; a transport without an engine is called from the loop. */
#ifndef WMS_TRANSPORT_ENGINE_H
#define WMS_TRANSPORT_ENGINE_H

#include <stdint.h>
#include "wms/sys/transport.h"

typedef struct wms__engine wms__engine;
typedef struct wms__xfer wms__xfer;

/* What an engine asks of its loop. watch/timer as wms_async_options'
 * (WMS_POLL_*), returning WMS_OK, or NOMEM or INTERNAL (the caller's
 * callback failed) for the transfers on it to end with. done: a transfer ended
 * with `st` (as send() returns it; err and resp filled as send fills them);
 * the xfer is gone when done is called. */
typedef struct wms__engine_loop {
	wms_status (*watch)(void *ctx, int fd, int what);
	wms_status (*timer)(void *ctx, long timeout_ms);
	void (*done)(void *ctx, void *arg, wms_status st);
	/* fd is about to be closed (still open now): a watch of it is to go */
	void (*closing)(void *ctx, int fd);
	void *ctx;
	/* the timer may be set with no transfer running (for the close of
	 * idle connections): libwms's own loop, which stops for no timer. A
	 * caller's loop is left without one then, so that it can end (libuv's
	 * uv_run returns once no call is in flight). */
	int idle_timer;
} wms__engine_loop;

typedef struct wms__engine_ops {
	/* max_connections 0: no cap */
	wms_status (*create)(wms_transport *t, const wms__engine_loop *loop, uint32_t max_connections,
			     wms__engine **out);
	void (*destroy)(wms__engine *e); /* no transfer left */
	/* Start a transfer: req, resp and err are borrowed until done (or
	 * cancel). Not WMS_OK: err is set, nothing started, done not called. */
	wms_status (*start)(wms__engine *e, const wms_http_request *req, wms_http_response *resp,
			    wms_error *err, void *arg, wms__xfer **out);
	/* Stop a transfer (done is not called): its delivery so far. */
	wms_delivery (*cancel)(wms__engine *e, wms__xfer *x);
	/* fd ready (WMS_EV_*), the timer due: may call done */
	void (*socket)(wms__engine *e, int fd, int events);
	void (*timeout)(wms__engine *e);
} wms__engine_ops;

/* The engine of transport t, or NULL if t has none (curl.c). */
const wms__engine_ops *wms__transport_engine(const wms_transport *t);

/* Tests' view of a libcurl engine (curl_async.c): the connection shards it
 * has made (0: its connections are the multi's cache) and, into running,
 * up to n of them, the transfers each runs now. */
unsigned wms__curl_engine_shards(const wms__engine *e, unsigned *running, unsigned n);
/* and the idle connections it knows of in them (its tokens) */
size_t wms__curl_engine_idle_tokens(const wms__engine *e);
/* How long a shard where no transfer starts or ends keeps its
 * connections (5 s; tests change it). */
#define WMS__SHARD_IDLE_NS_DEFAULT 5000000000ull
extern uint64_t wms__shard_idle_ns;
/* How often a start looks for idle shards at most, and how long a shard
 * whose close was refused waits to be tried again (1 s; tests shorten
 * it). */
#define WMS__SHARD_SWEEP_NS_DEFAULT 1000000000ull
extern uint64_t wms__shard_sweep_ns;

#endif
