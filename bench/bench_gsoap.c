/*
 * gSOAP as the bench's peer: the C client soapcpp2 generates from the
 * warehouse WSDL at build time (bench/meson.build: wsdl2h -c, then
 * soapcpp2 -c -C with the prefix whgs), driven as its documentation has a
 * client do it: one context per connection (and per thread), the request
 * built from the caller's data in the context's managed memory, and
 * soap_destroy + soap_end after every call.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
/* The generated SOAP_ENV__Header is an empty struct (a GNU extension):
 * the one warning its headers raise under -Wpedantic. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpedantic"
#include "whgsH.h"
#pragma GCC diagnostic pop
#include "bench.h"
#include "bench_gsoap.h"

/*
 * The namespace table. soapcpp2 writes one per binding (*.nsmap), each with
 * SOAP 1.2's envelope first, because the WSDL also has a SOAP 1.2 binding:
 * gSOAP takes the version it sends from that first row. libwms sends 1.1,
 * so this is the generated table with the 1.1 URIs first; the fourth
 * column is what replies may use instead (SOAP 1.2's, any XML Schema
 * year). gSOAP declares every row on the envelope it sends, so its
 * request carries five xmlns more than libwms's, as a user of the
 * generated table would. libgsoap refers to a global of this name as the
 * default for new contexts; each context is also given it with
 * soap_set_namespaces, so what it sends does not depend on that default.
 */
#define W3_ANY "http://www.w3.org/*/"
struct Namespace namespaces[] = {
	{ "SOAP-ENV", "http://schemas.xmlsoap.org/soap/envelope/", W3_ANY "soap-envelope", NULL },
	{ "SOAP-ENC", "http://schemas.xmlsoap.org/soap/encoding/", W3_ANY "soap-encoding", NULL },
	{ "xsi", "http://www.w3.org/2001/XMLSchema-instance", W3_ANY "XMLSchema-instance", NULL },
	{ "xsd", "http://www.w3.org/2001/XMLSchema", W3_ANY "XMLSchema", NULL },
	{ "wh2", "urn:libwms:warehouse:1/WarehouseSoap11Binding", NULL, NULL },
	{ "wh", "urn:libwms:warehouse:1", NULL, NULL },
	{ "wh3", "urn:libwms:warehouse:1/WarehouseSoap12Binding", NULL, NULL },
	{ NULL, NULL, NULL, NULL },
};

struct bench_gsoap {
	struct soap *soap;
	char *url;
};

const char *bench_gsoap_version(void)
{
	static char v[16];
	snprintf(v, sizeof(v), "%d.%d.%d", GSOAP_VERSION / 100000, GSOAP_VERSION / 1000 % 100,
		 GSOAP_VERSION % 1000);
	return v;
}

bench_gsoap *bench_gsoap_new(const char *url)
{
	bench_gsoap *g = calloc(1, sizeof(*g));

	if (!g || !(g->url = strdup(url)))
		die("out of memory", NULL);
	g->soap = soap_new1(SOAP_IO_KEEPALIVE);
	if (!g->soap)
		die("soap_new1", NULL);
	if (soap_set_namespaces(g->soap, namespaces) != SOAP_OK)
		die("soap_set_namespaces", NULL);
	/* libwms's defaults: 2 s to connect, 10 s for the call (gSOAP's are
	 * per send and per receive); no SIGPIPE on a connection gone. */
	g->soap->connect_timeout = 2;
	g->soap->send_timeout = 10;
	g->soap->recv_timeout = 10;
	g->soap->socket_flags = MSG_NOSIGNAL;
	return g;
}

static enum wh__Priority priority(wms_priority p)
{
	switch (p) {
	case WMS_PRIORITY_EXPRESS:
		return wh__Priority__EXPRESS;
	case WMS_PRIORITY_OVERNIGHT:
		return wh__Priority__OVERNIGHT;
	case WMS_PRIORITY_STANDARD:
		break;
	}
	return wh__Priority__STANDARD;
}

void bench_gsoap_submit_order(bench_gsoap *g, const wms_order *order)
{
	struct soap *soap = g->soap;
	struct _wh__SubmitOrderRequest req;
	struct _wh__SubmitOrderResponse resp;
	struct wh__Address ship_to;
	struct wh__OrderLines lines;
	struct wh__OrderLine *line;
	const char *state, *duplicate;
	char fault[512];

	/* Every field libwms sends (line2 and region only when set, as libwms).
	 * gSOAP's structs take char *: it only reads them to serialize. */
	ship_to.name = (char *)order->ship_to.name;
	ship_to.line1 = (char *)order->ship_to.line1;
	ship_to.line2 = (char *)order->ship_to.line2;
	ship_to.city = (char *)order->ship_to.city;
	ship_to.region = (char *)order->ship_to.region;
	ship_to.postalCode = (char *)order->ship_to.postal_code;
	ship_to.country = (char *)order->ship_to.country;
	line = soap_malloc(soap, order->line_count * sizeof(*line));
	if (!line)
		die("gSOAP: out of memory", NULL);
	for (size_t i = 0; i < order->line_count; i++) {
		line[i].sku = (char *)order->lines[i].sku;
		line[i].quantity = (int)order->lines[i].quantity;
	}
	lines.__sizeline = (int)order->line_count;
	lines.line = line;
	req.clientOrderId = (char *)order->order_id;
	req.shipTo = &ship_to;
	req.priority = priority(order->priority);
	req.lines = &lines;

	/* NULL action: the binding's, urn:libwms:warehouse:1/SubmitOrder. */
	if (soap_call___wh2__SubmitOrder(soap, g->url, NULL, &req, &resp) != SOAP_OK)
		die("gSOAP SubmitOrder", soap_sprint_fault(soap, fault, sizeof(fault)));
	state = soap_wh__OrderState2s(soap, resp.state);
	duplicate = soap_xsd__boolean2s(soap, resp.duplicate);
	if (!resp.clientOrderId || strcmp(resp.clientOrderId, order->order_id) != 0 ||
	    !resp.wmsReference || strcmp(resp.wmsReference, BENCH_REPLY_REFERENCE) != 0 ||
	    !state || strcmp(state, BENCH_REPLY_STATE) != 0 || !duplicate ||
	    strcmp(duplicate, BENCH_REPLY_DUPLICATE) != 0)
		die("gSOAP SubmitOrder: the reply is not the server's", resp.wmsReference);
	soap_destroy(soap);
	soap_end(soap);
}

void bench_gsoap_free(bench_gsoap *g)
{
	if (!g)
		return;
	soap_destroy(g->soap);
	soap_end(g->soap);
	soap_free(g->soap); /* soap_done: closes the socket */
	free(g->url);
	free(g);
}
