/* Retries: the backoff between attempts and the delivery of the whole call.
 * Pure but for the sleep; the loop that uses them is perform() in call.c. */
#include <time.h>
#include "client/client.h"

uint64_t wms__backoff_ns(const wms_retry_options *r, uint32_t retry_no, uint64_t *rng)
{
	uint64_t ms = r->initial_backoff_ms;
	uint32_t i;
	for (i = 1; i < retry_no && ms < r->max_backoff_ms; i++)
		ms = ms * r->backoff_multiplier_pct / 100u;
	if (ms > r->max_backoff_ms)
		ms = r->max_backoff_ms;
	*rng ^= *rng << 13;
	*rng ^= *rng >> 7;
	*rng ^= *rng << 17;
	return (*rng % (ms * 1000000u + 1u));
}

void wms__sleep_ns(uint64_t ns)
{
	struct timespec ts;
	ts.tv_sec = (time_t)(ns / 1000000000u);
	ts.tv_nsec = (long)(ns % 1000000000u);
	while (nanosleep(&ts, &ts) != 0)
		;
}

/* Once any attempt may have reached the WMS, the call may have. */
wms_delivery wms__merge_delivery(wms_delivery so_far, wms_delivery last)
{
	if (last == WMS_DELIVERY_ANSWERED)
		return last;
	if (so_far == WMS_DELIVERY_UNKNOWN || so_far == WMS_DELIVERY_ANSWERED)
		return WMS_DELIVERY_UNKNOWN;
	return last;
}
