/* The public-API sweeps' shared harness: api_sweep.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <libxml/parser.h>
#include "api_sweep.h"
#include "local_port.h"

#ifndef API_SWEEP_SOURCE_ROOT
#define API_SWEEP_SOURCE_ROOT "."
#endif

int nfail;
unsigned n_funcs;
unsigned n_cases;

char g_endpoint[64];
static int g_port_fd = -1; /* holds g_endpoint's port, never listening */
wms_client *g_client;
wms_order g_order;
const wms_order_line g_lines[1] = { { "SKU-1", 2 } };
const char *const g_skus[1] = { "SKU-1" };
const char g_body_xml[] = "<Ping xmlns=\"urn:example:wms\"><id>1</id></Ping>";
xmlDocPtr g_body_doc;
wms_call_options g_call;

void check_(int ok, int line, const char *fmt, ...)
{
	va_list ap;
	if (ok)
		return;
	nfail++;
	printf("FAIL %s:%d: ", sweep_file, line);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

void stale(wms_error *e)
{
	memset(e, 0, sizeof(*e));
	e->status = WMS_ERR_INTERNAL;
	e->delivery = WMS_DELIVERY_ANSWERED;
	strcpy(e->message, "stale");
}

void bad_arg_(wms_status st, const wms_error *e, const char *name, const char *what, int line)
{
	n_cases++;
	check_(st == WMS_ERR_INVALID_ARG, line, "%s: got %s (\"%s\"), want INVALID_ARG", what,
	       wms_status_name(st), e ? e->message : "");
	if (!e)
		return;
	check_(e->status == st, line, "%s: err.status %s, returned %s", what,
	       wms_status_name(e->status), wms_status_name(st));
	check_(e->delivery == WMS_DELIVERY_NOT_SENT, line, "%s: delivery %s", what,
	       wms_delivery_name(e->delivery));
	check_(e->message[0] && strcmp(e->message, "stale") != 0, line, "%s: no message (\"%s\")",
	       what, e->message);
	if (name)
		check_(strstr(e->message, name) != NULL, line, "%s: message \"%s\" does not name %s",
		       what, e->message, name);
}

void works_(wms_status st, wms_status want, const wms_error *e, const char *what, int line)
{
	n_cases++;
	check_(st == want, line, "%s: got %s (\"%s\"), want %s", what, wms_status_name(st),
	       e ? e->message : "", wms_status_name(want));
	if (e)
		check_(e->status == st, line, "%s: err.status %s, returned %s", what,
		       wms_status_name(e->status), wms_status_name(st));
}

wms_client_options sweep_client_options(const char *endpoint)
{
	wms_client_options o = WMS_CLIENT_OPTIONS_INIT;
	o.endpoint = endpoint;
	o.connect_timeout_ms = 2000;
	o.timeout_ms = 4000;
	o.breaker_options.failure_threshold = 1000000; /* never opens here */
	return o;
}

wms_client *sweep_client(const char *endpoint)
{
	wms_client_options o = sweep_client_options(endpoint);
	wms_client *c = NULL;
	wms_error e;
	assert_int_equal(wms_client_new(&c, &o, &e), WMS_OK);
	return c;
}

const char *source_path(char *buf, size_t size, const char *rel)
{
	const char *root = getenv("WMS_SOURCE_ROOT");
	snprintf(buf, size, "%s/%s", root && *root ? root : API_SWEEP_SOURCE_ROOT, rel);
	return buf;
}

const xmlNode *body_node(void)
{
	return xmlDocGetRootElement(g_body_doc);
}

void sweep_setup(const char *order_id)
{
	uint16_t port;
	g_port_fd = local_listen(&port, -1);
	assert_true(g_port_fd >= 0);
	snprintf(g_endpoint, sizeof(g_endpoint), "http://127.0.0.1:%u/", (unsigned)port);
	g_client = sweep_client(ENDPOINT);
	g_order = (wms_order)WMS_ORDER_INIT;
	g_order.order_id = order_id;
	g_order.ship_to.name = "A Person";
	g_order.ship_to.line1 = "1 Main Street";
	g_order.ship_to.city = "Springfield";
	g_order.ship_to.postal_code = "12345";
	g_order.ship_to.country = "US";
	g_order.lines = g_lines;
	g_order.line_count = 1;
	g_body_doc = xmlReadMemory(g_body_xml, (int)strlen(g_body_xml), "body.xml", NULL,
				   XML_PARSE_NONET);
	assert_non_null(g_body_doc);
	g_call = (wms_call_options)WMS_CALL_OPTIONS_INIT;
	g_call.operation = "Ping";
	g_call.soap_action = "urn:example:wms/Ping";
}

void sweep_teardown(const char *what, const char *cases)
{
	wms_client_free(g_client);
	g_client = NULL;
	xmlFreeDoc(g_body_doc);
	g_body_doc = NULL;
	close(g_port_fd);
	g_port_fd = -1;
	printf("%s: %u functions swept, %u %s\n", what, n_funcs, n_cases, cases);
}

/* ---- asynchronous calls (api_sweep.h) ---- */

seen g_no_payload; /* callbacks given payload NULL land here */

static void note(void *payload, wms_status st, int reply, const wms_error *err)
{
	seen *s = payload ? payload : &g_no_payload;
	s->calls++;
	s->st = st;
	s->reply = reply;
	s->err_null = err == NULL;
	snprintf(s->msg, sizeof(s->msg), "%s", err ? err->message : "");
}

void on_submit(wms_status st, const wms_submit_reply *r, const wms_error *err, void *p)
{
	note(p, st, r != NULL, err);
}

void on_status(wms_status st, const wms_status_reply *r, const wms_error *err, void *p)
{
	note(p, st, r != NULL, err);
}

void on_cancel(wms_status st, const wms_cancel_reply *r, const wms_error *err, void *p)
{
	note(p, st, r != NULL, err);
}

void on_stock(wms_status st, wms_stock_reply *r, const wms_error *err, void *p)
{
	note(p, st, r != NULL, err);
	wms_stock_reply_free(r);
}

void on_call(wms_status st, struct _xmlDoc *r, const wms_error *err, void *p)
{
	note(p, st, r != NULL, err);
	xmlFreeDoc(r);
}

/* async.h: "Any other status (`async` or `cb` NULL): no callback, nothing
 * started": INVALID_ARG and `s` untouched. */
void not_started_(wms_status st, const seen *s, wms_async *a, const char *what, int line)
{
	bad_arg_(st, NULL, NULL, what, line);
	check_(s->calls == 0, line, "%s: the callback ran", what);
	check_(wms_async_in_flight(a) == 0, line, "%s: a call is in flight", what);
}

/* async.h: "WMS_OK: `cb` runs exactly once"; a call that ends without I/O
 * (bad arguments) "completes at once"; the operations are "as their
 * blocking namesakes". Run the loop until the call is done, then: one
 * callback with `want` (and for INVALID_ARG a message naming `name`). */
void completes_(wms_status st, seen *s, wms_async *a, wms_status want, const char *name,
		       const char *what, int line)
{
	n_cases++;
	check_(st == WMS_OK, line, "%s: start returned %s", what, wms_status_name(st));
	if (st == WMS_OK && wms_async_in_flight(a))
		check_(wms_async_run(a, 20000) == WMS_OK, line, "%s: still in flight", what);
	check_(s->calls == 1, line, "%s: callback ran %d times", what, s->calls);
	check_(s->st == want, line, "%s: callback got %s (\"%s\"), want %s", what,
	       wms_status_name(s->st), s->msg, wms_status_name(want));
	check_(!s->err_null, line, "%s: callback's err NULL", what);
	if (want == WMS_ERR_INVALID_ARG && name)
		check_(strstr(s->msg, name) != NULL, line, "%s: message \"%s\" does not name %s",
		       what, s->msg, name);
	memset(s, 0, sizeof(*s));
}

wms_async *mk_async(wms_client *c)
{
	wms_async *a = NULL;
	wms_error e;
	assert_int_equal(wms_async_new(&a, c, NULL, &e), WMS_OK);
	return a;
}
