/* The Redis breaker store's internals (src/breaker/redis_*.c). Never
 * installed. hiredis lives in redis_store.c only. */
#ifndef WMS_BREAKER_REDIS_INT_H
#define WMS_BREAKER_REDIS_INT_H

#include <stddef.h>
#include <stdint.h>
#include "wms/errors.h"

/* The script (redis_script.c), in parts (NULL last), and the whole of it
 * in a string of its own (wms__free it; NULL when out of memory). */
extern const char *const wms__redis_script[];
char *wms__redis_script_text(void);

/* A parsed redis_url (redis_url.c). Strings are the struct's own. */
typedef struct wms__redis_addr {
	char host[256];      /* TCP host, or "" for a unix socket */
	char path[108];      /* unix socket path (sun_path's size) */
	int port;            /* 1-65535, default 6379 */
	unsigned db;         /* 0-15 (Redis's default databases) */
	char user[128];      /* "" when none (AUTH with the password alone) */
	char password[256];  /* "" when none; never printed */
} wms__redis_addr;

/* Parse redis://[[USER]:PASSWORD@]HOST[:PORT][/DB] or
 * unix:///PATH[?db=DB]. On failure `err` names what is wrong without
 * repeating the URL (it may hold a password). */
wms_status wms__redis_url_parse(wms__redis_addr *out, const char *url, wms_error *err);

/* After Redis answers a breaker's script with an error or a state out of
 * range, how long that breaker's engine decides before its link tries to
 * join again, and a change made by hand that Redis refused waits before
 * it is sent again (redis_store.c): 1 s. A test hook, like the async
 * engine's wms__shard_idle_ns, set before a store is made (atomic: a
 * test failing midway may leave a store's thread running). */
#define WMS__REDIS_REJOIN_NS_DEFAULT 1000000000ull
extern _Atomic uint64_t wms__redis_rejoin_ns;

#endif
