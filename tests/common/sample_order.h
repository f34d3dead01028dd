/*
 * A valid one-line order for SubmitOrder, for tests that need some order
 * and do not look at its fields: ORD-1, shipped to Ada in Springfield,
 * two of SKU-1; and a WMS's SOAP 1.1 reply accepting it. Header only.
 */
#ifndef WMS_TEST_SAMPLE_ORDER_H
#define WMS_TEST_SAMPLE_ORDER_H

#include "wms/client.h"

/* SubmitOrderResponse for ORD-1: RECEIVED as WMS-000042, not a duplicate. */
static const char sample_submit_ok[] =
	"<?xml version=\"1.0\"?><s:Envelope xmlns:s=\"http://schemas.xmlsoap.org/soap/envelope/\">"
	"<s:Body><SubmitOrderResponse xmlns=\"urn:libwms:warehouse:1\">"
	"<clientOrderId>ORD-1</clientOrderId><wmsReference>WMS-000042</wmsReference>"
	"<state>RECEIVED</state><duplicate>false</duplicate></SubmitOrderResponse>"
	"</s:Body></s:Envelope>";

static inline wms_order sample_order(void)
{
	static const wms_order_line line = { "SKU-1", 2 };
	wms_order o = WMS_ORDER_INIT;
	o.order_id = "ORD-1";
	o.ship_to.name = "Ada";
	o.ship_to.line1 = "1 Loop St";
	o.ship_to.city = "Springfield";
	o.ship_to.postal_code = "12345";
	o.ship_to.country = "US";
	o.lines = &line;
	o.line_count = 1;
	return o;
}

#endif
