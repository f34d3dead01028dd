/* The monotonic clock. Never installed. */
#ifndef WMS_UTIL_CLOCK_H
#define WMS_UTIL_CLOCK_H

#include <stdint.h>

/* Monotonic clock, nanoseconds. */
uint64_t wms__now_ns(void);

#endif
