/*
 * libwms - an embedded health and metrics HTTP endpoint (opt-in, 0.3.2).
 *
 * A service without an HTTP server of its own can let libwms serve its
 * breakers' state on a port of its choosing, on libmicrohttpd:
 *
 *     GET /health   the wms_health_json document of every breaker of the
 *                   clients given (one document); 200 when UP or DEGRADED,
 *                   503 when DOWN; Content-Type application/json
 *     GET /metrics  wms_health_prometheus text of the same breakers;
 *                   Content-Type text/plain; version=0.0.4; charset=utf-8
 *
 * HEAD is answered as GET, without the body. Any other path: 404; any other
 * method on these two: 405 with "Allow: GET, HEAD"; a request carrying a
 * body (Content-Length above 0, or Transfer-Encoding): 400.
 *
 * The server runs one thread of its own (MHD's internal polling thread,
 * epoll where there is one, else poll). It only reads breaker snapshots:
 * it never takes a client's call path or waits on the WMS. At most
 * WMS_HEALTH_SERVER_MAX_CONNECTIONS connections are open at once (MHD
 * stops accepting past that: a further one waits in the listen backlog
 * until one closes); a connection idle for
 * WMS_HEALTH_SERVER_TIMEOUT_S seconds is closed. docs/health-endpoint.md
 * has the details.
 *
 * A library built without libmicrohttpd (meson -Dhealth_server=disabled)
 * still has these functions: wms_health_server_start fails with
 * WMS_ERR_INVALID_ARG, "built without the health server (libmicrohttpd)".
 */
#ifndef WMS_HEALTH_SERVER_H
#define WMS_HEALTH_SERVER_H

#include "common.h"
#include "errors.h"
#include "client.h"

WMS_BEGIN_DECL

typedef struct wms_health_server wms_health_server;

/** Connections served at once; past it the kernel's backlog holds them. */
#define WMS_HEALTH_SERVER_MAX_CONNECTIONS 16
/** Seconds a connection may stay idle (a slow or silent client) before it is closed. */
#define WMS_HEALTH_SERVER_TIMEOUT_S 5
/** The address served when `listen_addr` is NULL: loopback only. */
#define WMS_HEALTH_SERVER_DEFAULT_LISTEN "127.0.0.1:9464"

/**
 * Start serving /health and /metrics for every breaker of `clients[0..count)`,
 * as they stand at each request (a generic operation's breaker, made by its
 * first call, shows from then on), with their bulkheads and read caches.
 * The clients must outlive the server. Bound beyond loopback, anyone who
 * can reach the port can hold its WMS_HEALTH_SERVER_MAX_CONNECTIONS
 * connections for WMS_HEALTH_SERVER_TIMEOUT_S at a time: expose it only
 * where a network policy limits who connects.
 *
 * `listen_addr`: "ADDRESS:PORT", ADDRESS an IPv4 dotted quad ("127.0.0.1",
 * "0.0.0.0") or an IPv6 literal in brackets ("[::1]"), PORT 0-65535 (0: a
 * free port the kernel picks; wms_health_server_port tells which). No host
 * names. NULL = WMS_HEALTH_SERVER_DEFAULT_LISTEN. `metric_prefix`: the
 * Prometheus metric prefix, NULL = "fulfillment".
 *
 * The clients must outlive the server: stop it before freeing them.
 *
 * Returns WMS_OK with `*out` set, or (with `*out` NULL and `err` filled):
 * WMS_ERR_INVALID_ARG for a bad argument, a malformed `listen_addr`, an address
 * that cannot be bound (in use, not this host's, a privileged port: the
 * message names the address and the system's reason), or a library built
 * without the health server; WMS_ERR_NOMEM; WMS_ERR_INTERNAL when the
 * server's socket or thread cannot be made.
 */
WMS_EXTERN(wms_status) wms_health_server_start(wms_health_server **out,
					       wms_client *const *clients, size_t count,
					       const char *listen_addr, const char *metric_prefix,
					       wms_error *err);

/** The port the server listens on (the kernel's pick for a port of 0). */
WMS_EXTERN(uint16_t) wms_health_server_port(const wms_health_server *srv);

/** Stop serving: closes every connection and joins the server's thread.
 *  NULL-safe. */
WMS_EXTERN(void) wms_health_server_stop(wms_health_server *srv);

WMS_END_DECL

#endif
