/* What the example programs (the demos and wmsctl) share. */
#ifndef WMS_EXAMPLE_COMMON_H
#define WMS_EXAMPLE_COMMON_H

#include "wms/wms.h"

/* The demos' one-line order: `order_id`, SKU-1 x 1, a fixed ship-to;
 * `line` is the caller's (the order points to it). */
wms_order ex_demo_order(const char *order_id, wms_order_line *line);

/* Wait, up to `ms`, until every breaker of `client` (at most
 * EX_MAX_BREAKERS of them) has joined its shared store (Redis), or, when
 * `joined` is 0, until none is still making its first connection (refused
 * or timed out: the process's own breaker decides). 1 when every breaker
 * has joined or has no store, else 0. Polls every 2 ms. */
#define EX_MAX_BREAKERS 16
int ex_wait_store(wms_client *client, uint32_t ms, int joined);

/* The process's threads now (/proc/self/status), -1 if it cannot tell. */
long ex_threads_now(void);

#endif
