/* example_common.h */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "example_common.h"

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int ex_wait_store(wms_client *client, uint32_t ms, int joined)
{
	uint64_t end = mono_ns() + (uint64_t)ms * 1000000u;
	wms_breaker *b[EX_MAX_BREAKERS];

	for (;;) {
		size_t n = wms_client_breakers(b, EX_MAX_BREAKERS, client), i, in = 0, first = 0;
		struct timespec ts = { 0, 2000000 };
		if (n > EX_MAX_BREAKERS)
			n = EX_MAX_BREAKERS;
		for (i = 0; i < n; i++) {
			wms_breaker_snapshot s;
			wms_breaker_snapshot_get(&s, b[i]);
			if (s.store_state == WMS_STORE_STATE_NONE ||
			    s.store_state == WMS_STORE_STATE_CONNECTED)
				in++;
			else if (s.store_state == WMS_STORE_STATE_CONNECTING)
				first++;
		}
		if (in == n)
			return 1;
		if ((!joined && !first) || mono_ns() >= end)
			return 0;
		nanosleep(&ts, NULL);
	}
}

wms_order ex_demo_order(const char *order_id, wms_order_line *line)
{
	wms_order o = WMS_ORDER_INIT;
	o.order_id = order_id;
	o.ship_to.name = "Demo Customer";
	o.ship_to.line1 = "1 Loopback Lane";
	o.ship_to.city = "Localhost";
	o.ship_to.postal_code = "12700";
	o.ship_to.country = "DE";
	o.priority = WMS_PRIORITY_STANDARD;
	line->sku = "SKU-1";
	line->quantity = 1;
	o.lines = line;
	o.line_count = 1;
	return o;
}

long ex_threads_now(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long n = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, "Threads:", 8) == 0) {
			n = strtol(line + 8, NULL, 10);
			break;
		}
	fclose(f);
	return n;
}
