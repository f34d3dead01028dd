/*
 * libwms - health and metrics documents.
 *
 * A service exposes its breakers on a health endpoint and publishes their
 * state as a gauge. These render every breaker of a client (or any set of
 * breakers) as a JSON health document and as Prometheus text exposition,
 * ready to serve from the service's own /health and /metrics handlers.
 *
 * JSON: {"status":"UP","breakers":[{"name":"wms","state":"CLOSED",
 *        "state_value":0,"failure_rate":null,"slow_call_rate":null,
 *        "retry_after_ms":0,"window_calls":0,"consecutive_failures":0,
 *        "half_open_in_flight":0,"transitions":0,"calls":{"permitted":0,
 *        "rejected":0,"successes":0,"failures":0,"slow":0,"ignored":0}}]}
 * status: "UP" when every breaker is CLOSED or DISABLED, "DOWN" when every
 * one is OPEN or FORCED_OPEN, "DEGRADED" otherwise. Rates are percent, null
 * until the window holds minimum_number_of_calls.
 */
#ifndef WMS_HEALTH_H
#define WMS_HEALTH_H

#include "common.h"
#include "errors.h"
#include "breaker.h"
#include "client.h"

WMS_BEGIN_DECL

/** `*out`: a NUL-terminated JSON document; release with wms_free().
 *  `out` NULL, `breakers` NULL with `count` > 0, or a NULL among its first
 *  `count` entries: WMS_ERR_INVALID_ARG, with *out NULL. */
WMS_EXTERN(wms_status) wms_health_json(char **out, wms_breaker *const *breakers, size_t count);

/** `*out`: Prometheus text (gauge <prefix>_circuit_breaker_state and friends);
 *  the breakers as for wms_health_json, refused alike;
 *  prefix NULL = "fulfillment". Release with wms_free(). A prefix is 1 to
 *  64 bytes of [A-Za-z0-9_:], not starting with a digit (a metric name's
 *  characters); any other is WMS_ERR_INVALID_ARG, with *out NULL. */
WMS_EXTERN(wms_status) wms_health_prometheus(char **out, wms_breaker *const *breakers,
					     size_t count, const char *prefix);

/** The same for every breaker of a client. */
WMS_EXTERN(wms_status) wms_client_health_json(char **out, wms_client *client);
WMS_EXTERN(wms_status) wms_client_health_prometheus(char **out, wms_client *client,
						    const char *prefix);

/** Release memory handed out by libwms. NULL-safe. */
WMS_EXTERN(void) wms_free(void *ptr);

WMS_END_DECL

#endif
