/* What the example programs (the demos and wmsctl) share. */
#ifndef WMS_EXAMPLE_COMMON_H
#define WMS_EXAMPLE_COMMON_H

#include "wms/wms.h"

/* The demos' one-line order: `order_id`, SKU-1 x 1, a fixed ship-to;
 * `line` is the caller's (the order points to it). */
wms_order ex_demo_order(const char *order_id, wms_order_line *line);

/* The process's threads now (/proc/self/status), -1 if it cannot tell. */
long ex_threads_now(void);

#endif
