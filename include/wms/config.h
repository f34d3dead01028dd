/*
 * libwms - configuration from the SLA file.
 *
 * A service keeps the breaker's thresholds in its human-authored SLA file
 * (e.g. contracts/slas/fulfillment-sla.yaml, `circuit_breaker` block).
 * libwms reads that block - and the `client` block's timeouts - with libyaml:
 *
 *     wms_config *cfg;
 *     if (wms_config_load_yaml(&cfg, "fulfillment-sla.yaml", &err) != WMS_OK)
 *         die(err.message);     // "fulfillment-sla.yaml:12: circuit_breaker.mode: ..."
 *     wms_client_options opts = WMS_CLIENT_OPTIONS_INIT;
 *     wms_config_apply(cfg, &opts);
 *     opts.endpoint = ...;
 *     wms_client_new(&client, &opts, &err);
 *     wms_config_free(cfg);     // after wms_client_new: it copies what it needs
 *
 * Nothing falls back silently: an unknown key, a wrong type, an
 * out-of-range value or a YAML syntax error is WMS_ERR_CONFIG with file,
 * line and key in the message. A `circuit_breaker.shared` block (since
 * 0.3.1) shares the breaker through Redis (wms/shared.h): its redis_url is
 * required and checked when the file is read, and no message repeats it
 * (it may hold a password). Top-level keys other than `circuit_breaker`
 * and `client` belong to the rest of the SLA and are skipped. Example:
 * examples/fulfillment-sla.yaml.
 */
#ifndef WMS_CONFIG_H
#define WMS_CONFIG_H

#include "common.h"
#include "errors.h"
#include "breaker.h"
#include "client.h"
#include "shared.h"

WMS_BEGIN_DECL

typedef struct wms_config wms_config;

/**
 * Read and check a YAML file (at most 1 MiB). On success `*out` is a config
 * to free with wms_config_free(); on failure it is NULL and the status is
 * WMS_ERR_CONFIG (delivery NOT_SENT; message "<file>:<line>: <dotted.key>:
 * <problem>", "<file>: cannot open: <strerror>", or "<file>: larger than
 * 1 MiB: not an SLA file"), WMS_ERR_NOMEM, or
 * WMS_ERR_INVALID_ARG for a NULL `out` or `path`. The accepted syntax
 * (decimal integers only, true/false, no anchors/aliases/tags, ...) is
 * described in examples/fulfillment-sla.yaml.
 */
WMS_EXTERN(wms_status) wms_config_load_yaml(wms_config **out, const char *path, wms_error *err);

/** The same from memory (`yaml` need not be NUL-terminated, at most 1 MiB:
 *  "<name>: larger than 1 MiB (<len> bytes): not an SLA file"; an empty
 *  one is WMS_ERR_CONFIG, "the file is empty"); `name` is used in messages
 *  in place of a file name (NULL: "<yaml>"). */
WMS_EXTERN(wms_status) wms_config_parse_yaml(wms_config **out, const char *yaml, size_t len,
					     const char *name, wms_error *err);

/** Copy the settings into client options: breaker_options (all keys),
 *  breaker_scope, retry, the client block's timeouts, soap_version,
 *  max_reply_bytes and endpoint, and (version 3) the shared block into
 *  `shared`, so that wms_client_new shares the client's breaker through
 *  Redis. The endpoint, the breaker name and the shared block's redis_url
 *  and name are strings borrowed from `cfg`: keep cfg until wms_client_new
 *  returns. Keys absent from the file leave opts alone; a key present
 *  always overwrites, even with a value such as `open_duration_jitter_pct:
 *  0`. `opts` must be initialised (WMS_CLIENT_OPTIONS_INIT or
 *  wms_client_options_init), version 2 to 4 (WMS_CLIENT_OPTIONS_VERSION);
 *  with a shared block in the file, version 3 or later with `shared`
 *  initialised (version 2 options have no room for it); with the bulkhead
 *  keys (client.max_concurrent_calls, client.max_wait_for_slot_ms) or the
 *  read cache's (client.read_cache_*), version 4. WMS_ERR_INVALID_ARG, with nothing written, otherwise.
 *  Options of an older version are never read or written past their end. */
WMS_EXTERN(wms_status) wms_config_apply(const wms_config *cfg, wms_client_options *opts);

/** The breaker options alone (for a standalone wms_breaker), on the same
 *  terms: absent keys leave opts alone, the name is borrowed from `cfg`,
 *  `opts` must be initialised (WMS_BREAKER_OPTIONS_INIT). */
WMS_EXTERN(wms_status) wms_config_breaker_options(const wms_config *cfg,
						  wms_breaker_options *opts);

/** The shared block's options alone (circuit_breaker.shared, for
 *  wms_redis_store_new), on the same terms: absent keys leave opts alone
 *  (no block: nothing is written), redis_url and name are borrowed from
 *  `cfg`, `opts` must be initialised (WMS_SHARED_OPTIONS_INIT or
 *  wms_shared_options_init, version WMS_SHARED_OPTIONS_VERSION):
 *  WMS_ERR_INVALID_ARG, with nothing written, otherwise. Since 0.3.1. */
WMS_EXTERN(wms_status) wms_config_shared_options(const wms_config *cfg,
						 wms_shared_options *opts);

/** client.health_listen, the ADDRESS:PORT the service's health endpoint
 *  should listen on (wms/health_server.h), checked when the file was read
 *  (a dotted IPv4 address or [IPv6], port 1-65535); NULL when the file
 *  names none. Borrowed from `cfg`. Since 0.3.2. */
WMS_EXTERN(const char *) wms_config_health_listen(const wms_config *cfg);

/** NULL-safe. */
WMS_EXTERN(void) wms_config_free(wms_config *cfg);

WMS_END_DECL

#endif
