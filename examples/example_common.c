/* example_common.h */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "example_common.h"

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
