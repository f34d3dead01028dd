/* libwms internals shared across src/. Never installed. */
#ifndef WMS_INTERNAL_H
#define WMS_INTERNAL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include "wms/errors.h"

#include "util/alloc.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/str.h"
#include "util/utf8.h"

/* Fill `err` (may be NULL): status, delivery, one-line message (newlines
 * flattened, truncated to fit). Returns `status`. */
wms_status wms__fail(wms_error *err, wms_status status, wms_delivery delivery,
		     const char *fmt, ...)
#if defined(__GNUC__)
	__attribute__((format(printf, 4, 5)))
#endif
	;
wms_status wms__vfail(wms_error *err, wms_status status, wms_delivery delivery,
		      const char *fmt, va_list ap)
#if defined(__GNUC__)
	__attribute__((format(printf, 4, 0)))
#endif
	;

/* A SOAP fault code (prefix stripped) that rejects the request itself:
 * Client/Sender and the envelope-level codes. Anything else - Server,
 * Receiver, an empty or unknown code - is the WMS's trouble. */
int wms__fault_is_request_error(const char *code);

/* client/options.c: the bulkhead guarding a client's i-th breaker, in the
 * order wms_client_breakers gives them (i < that count). */
struct wms_client;
struct wms_bulkhead_snapshot;
void wms__client_bulkhead_at(struct wms_bulkhead_snapshot *out, struct wms_client *c, size_t i);

/* health.c: one health document (JSON) or Prometheus text for every
 * breaker of `count` clients, with their bulkheads, as they stand now. */
wms_status wms__health_clients_json(char **out, struct wms_client *const *clients, size_t count);
wms_status wms__health_clients_prometheus(char **out, struct wms_client *const *clients,
					  size_t count, const char *prefix);

/* transport/curl.c: the checks wms_curl_transport_create makes of its
 * options (the client makes them before it makes anything else). */
struct wms_curl_transport_options;
wms_status wms__curl_transport_check(const struct wms_curl_transport_options *o, wms_error *err);
/* transport/curl_errors.c: why libcurl's URL parser refuses `url` (its own
 * words, a static string; *code its CURLUcode), NULL if it takes it or
 * cannot be asked (no memory: the transfer says so). The client checks
 * its endpoint with it when it makes a libcurl transport (which starts
 * libcurl anyway), rather than every call failing. */
const char *wms__curl_url_refused(const char *url, int *code);

#endif
