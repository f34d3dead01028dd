/* Helpers shared by the config tests. */
#ifndef CFG_UTIL_H
#define CFG_UTIL_H

#include <stddef.h>
#include "wms/config.h"

/* The value `key` ("circuit_breaker.retry.max_attempts", "client.endpoint",
 * "circuit_breaker.shared.heartbeat_ms", ...) has in `o` (version 3), as text: numbers in decimal, enums by their YAML name,
 * booleans true/false, a NULL string "(unset)". Returns 0, or -1 for an
 * unknown key. */
int cfg_describe(const wms_client_options *o, const char *key, char *buf, size_t size);

/* A whole file, NUL-terminated, or NULL. *len gets its length. Free with free(). */
char *cfg_read_file(const char *path, size_t *len);

/* $WMS_SOURCE_ROOT/rel (static buffer). */
const char *cfg_source_path(const char *rel);

#endif
