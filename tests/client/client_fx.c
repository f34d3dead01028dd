/* A client on the fake transport, with a fake clock. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include "client_fx.h"

uint64_t clock_now;

const char fx_submit_ok[] =
	ENV_OPEN "<SubmitOrderResponse xmlns=\"urn:libwms:warehouse:1\">"
	"<clientOrderId>ORD-1</clientOrderId><wmsReference>WMS-000042</wmsReference>"
	"<state>RECEIVED</state><duplicate>false</duplicate></SubmitOrderResponse>" ENV_CLOSE;

static uint64_t fake_clock(void *payload)
{
	(void)payload;
	return clock_now;
}

fx setup_client_with(wms_client_options *o)
{
	wms_client_options defaults = WMS_CLIENT_OPTIONS_INIT;
	wms_error err;
	fx x;
	if (!o) {
		o = &defaults;
		o->breaker_options.open_duration_ms = 30000;
	}
	o->endpoint = "http://wms.invalid/wms";
	o->transport = fake_transport_new(&x.t);
	o->breaker_options.callbacks.clock = fake_clock;
	clock_now = 1000 * MS;
	assert_int_equal(wms_client_new(&x.c, o, &err), WMS_OK);
	return x;
}

fx setup_client(wms_soap_version v)
{
	wms_client_options o = WMS_CLIENT_OPTIONS_INIT;
	o.soap_version = v;
	o.breaker_options.open_duration_ms = 30000;
	return setup_client_with(&o);
}

void fx_refused_submits(fx *x, int calls)
{
	wms_order_line line = { "SKU-1", 1 };
	wms_order o = WMS_ORDER_INIT;
	int i;
	o.order_id = "ORD-1";
	o.ship_to.name = "A";
	o.ship_to.line1 = "B";
	o.ship_to.city = "C";
	o.ship_to.postal_code = "D";
	o.ship_to.country = "GB";
	o.lines = &line;
	o.line_count = 1;
	x->t->next.fail = WMS_ERR_CONNECT;
	for (i = 0; i < calls; i++)
		wms_submit_order(NULL, x->c, &o, NULL);
}
