/* Request envelopes: golden bytes, schema validity of every Body payload
 * (wsdl/warehouse.xsd via xmlSchemaValidateOneElement), values surviving a
 * round trip, optional fields, limits, bad input and failed allocations.
 *
 * WMS_REGENERATE_GOLDEN=1 rewrites tests/data/soap/golden/ instead of comparing
 * (ninja -C <builddir> regen-soap-golden). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/xmlschemas.h>
#include "count_alloc.h"
#include "soap/soap.h"
#include "util.h"

static xmlSchemaPtr schema;
static int regenerate;

/* ---- fixtures ---- */

static const wms_order_line one_line[] = { { "SKU-RED-42", 3 } };

static wms_order golden_order(void)
{
	wms_order o = WMS_ORDER_INIT;
	o.order_id = "ORD-2024-0001";
	o.ship_to.name = "Ada Lovelace";
	o.ship_to.line1 = "12 Analytical Way";
	o.ship_to.city = "London";
	o.ship_to.postal_code = "N1 9GU";
	o.ship_to.country = "GB";
	o.priority = WMS_PRIORITY_EXPRESS;
	o.lines = one_line;
	o.line_count = 1;
	return o;
}

static const char *const golden_skus[] = { "SKU-RED-42", "SKU-BLUE-7" };

/* ---- helpers ---- */

static void schema_error(void *ctx, xmlErrorPtr e)
{
	char *buf = ctx;
	if (!buf[0] && e && e->message)
		snprintf(buf, 256, "%s", e->message);
}

/* Validate one element against the schema; 0 when valid. */
static int validate(xmlNodePtr el, char msg[256])
{
	xmlSchemaValidCtxtPtr v = xmlSchemaNewValidCtxt(schema);
	int rc;
	assert_non_null(v);
	msg[0] = '\0';
	xmlSchemaSetValidStructuredErrors(v, schema_error, msg);
	rc = xmlSchemaValidateOneElement(v, el);
	xmlSchemaFreeValidCtxt(v);
	return rc;
}

static xmlNodePtr first_element(xmlNodePtr n)
{
	for (; n; n = n->next)
		if (n->type == XML_ELEMENT_NODE)
			return n;
	return NULL;
}

static void assert_ns(xmlNodePtr n, const char *href, const char *prefix, const char *name)
{
	assert_non_null(n);
	assert_string_equal((const char *)n->name, name);
	assert_non_null(n->ns);
	assert_string_equal((const char *)n->ns->href, href);
	assert_string_equal((const char *)n->ns->prefix, prefix);
}

/* Check the envelope's shape and validate its payload; returns the parsed
 * document (free it) and the payload element in *payload. */
static xmlDocPtr check_envelope(const wms__buf *b, wms_soap_version v, const char *payload_name,
				xmlNodePtr *payload)
{
	static const char decl[] = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
	char msg[256];
	xmlDocPtr doc;
	xmlNodePtr root, body, req;

	assert_non_null(b->data);
	assert_int_equal(strlen(b->data), b->len); /* no NUL inside, terminated */
	assert_memory_equal(b->data, decl, sizeof(decl) - 1);
	doc = xmlReadMemory(b->data, (int)b->len, NULL, NULL, XML_PARSE_NONET | XML_PARSE_NOBLANKS);
	assert_non_null(doc);
	assert_null(doc->intSubset);
	root = xmlDocGetRootElement(doc);
	if (v == WMS_SOAP_12)
		assert_ns(root, WMS__SOAP12_NS, "soap12", "Envelope");
	else
		assert_ns(root, WMS__SOAP11_NS, "soap", "Envelope");
	body = first_element(root->children);
	assert_ns(body, (const char *)root->ns->href, (const char *)root->ns->prefix, "Body");
	assert_null(first_element(body->next)); /* no Header, nothing after Body */
	req = first_element(body->children);
	assert_ns(req, WMS__NS, "wh", payload_name);
	assert_null(first_element(req->next));
	if (validate(req, msg) != 0)
		fail_msg("%s does not validate against warehouse.xsd: %s", payload_name, msg);
	*payload = req;
	return doc;
}

/* Text of the element at a slash-separated path of wh: local names. */
static const char *text_at(xmlNodePtr from, const char *path)
{
	static char out[1024];
	char step[64];
	const char *p = path;
	xmlNodePtr n = from;
	xmlChar *content;

	while (*p) {
		size_t len = strcspn(p, "/");
		memcpy(step, p, len);
		step[len] = '\0';
		for (n = first_element(n->children); n; n = first_element(n->next))
			if (n->ns && !strcmp((const char *)n->ns->href, WMS__NS) &&
			    !strcmp((const char *)n->name, step))
				break;
		if (!n)
			return NULL;
		p += len + (p[len] == '/');
	}
	content = xmlNodeGetContent(n);
	snprintf(out, sizeof(out), "%s", content ? (const char *)content : "");
	xmlFree(content);
	return out;
}

static size_t count_children(xmlNodePtr n)
{
	size_t c = 0;
	for (n = first_element(n->children); n; n = first_element(n->next))
		c++;
	return c;
}

static void golden(const wms__buf *b, const char *name)
{
	char rel[128];
	char *want;
	size_t len;
	snprintf(rel, sizeof(rel), "tests/data/soap/golden/%s", name);
	if (regenerate) {
		util_write_source_file(rel, b->data, b->len);
		return;
	}
	want = util_read_source_file(rel, &len);
	if (len != b->len || memcmp(want, b->data, len) != 0)
		fail_msg("%s differs from the builder's output:\n%s", rel, b->data);
	free(want);
}

/* ---- tests ---- */

static void golden_envelopes(void **state)
{
	static const struct {
		wms_soap_version v;
		const char *suffix;
	} versions[] = { { WMS_SOAP_11, "soap11" }, { WMS_SOAP_12, "soap12" } };
	wms_order order = golden_order();
	size_t i;
	(void)state;

	for (i = 0; i < 2; i++) {
		wms_soap_version v = versions[i].v;
		wms__buf b = { NULL, 0, 0 };
		wms_error err;
		xmlNodePtr req;
		xmlDocPtr doc;
		char name[64];

		wms_error_clear(&err);
		assert_int_equal(wms__build_submit_order(&b, v, &order, &err), WMS_OK);
		doc = check_envelope(&b, v, "SubmitOrderRequest", &req);
		assert_string_equal(text_at(req, "clientOrderId"), "ORD-2024-0001");
		assert_string_equal(text_at(req, "priority"), "EXPRESS");
		assert_string_equal(text_at(req, "lines/line/sku"), "SKU-RED-42");
		assert_string_equal(text_at(req, "lines/line/quantity"), "3");
		snprintf(name, sizeof(name), "submit_order_1line_%s.xml", versions[i].suffix);
		golden(&b, name);
		xmlFreeDoc(doc);
		wms__buf_free(&b);

		assert_int_equal(wms__build_get_order_status(&b, v, "ORD-2024-0001", &err), WMS_OK);
		doc = check_envelope(&b, v, "GetOrderStatusRequest", &req);
		assert_string_equal(text_at(req, "clientOrderId"), "ORD-2024-0001");
		snprintf(name, sizeof(name), "get_order_status_%s.xml", versions[i].suffix);
		golden(&b, name);
		xmlFreeDoc(doc);
		wms__buf_free(&b);

		assert_int_equal(wms__build_cancel_order(&b, v, "ORD-2024-0001", "Customer request",
							 &err), WMS_OK);
		doc = check_envelope(&b, v, "CancelOrderRequest", &req);
		assert_string_equal(text_at(req, "reason"), "Customer request");
		snprintf(name, sizeof(name), "cancel_order_%s.xml", versions[i].suffix);
		golden(&b, name);
		xmlFreeDoc(doc);
		wms__buf_free(&b);

		assert_int_equal(wms__build_get_stock_level(&b, v, golden_skus, 2, &err), WMS_OK);
		doc = check_envelope(&b, v, "GetStockLevelRequest", &req);
		assert_int_equal(count_children(req), 2);
		snprintf(name, sizeof(name), "get_stock_level_%s.xml", versions[i].suffix);
		golden(&b, name);
		xmlFreeDoc(doc);
		wms__buf_free(&b);
	}
}

static void fifty_lines_in_order(void **state)
{
	wms_order_line lines[50];
	char skus[50][16];
	wms_order order = golden_order();
	int vi;
	size_t i;
	(void)state;

	for (i = 0; i < 50; i++) {
		snprintf(skus[i], sizeof(skus[i]), "SKU-%03zu", i);
		lines[i].sku = skus[i];
		lines[i].quantity = (uint32_t)(i * 1000 + 1);
	}
	order.lines = lines;
	order.line_count = 50;
	order.priority = WMS_PRIORITY_OVERNIGHT;
	for (vi = 0; vi < 2; vi++) {
		wms__buf b = { NULL, 0, 0 };
		xmlNodePtr req, line;
		xmlDocPtr doc;
		assert_int_equal(wms__build_submit_order(&b, (wms_soap_version)vi, &order, NULL), WMS_OK);
		doc = check_envelope(&b, (wms_soap_version)vi, "SubmitOrderRequest", &req);
		assert_string_equal(text_at(req, "priority"), "OVERNIGHT");
		line = first_element(first_element(req->children)->next);       /* shipTo */
		line = first_element(first_element(line->next)->next);          /* lines */
		assert_string_equal((const char *)line->name, "lines");
		assert_int_equal(count_children(line), 50);
		line = first_element(line->children);
		for (i = 0; i < 50; i++, line = first_element(line->next)) {
			char qty[16];
			snprintf(qty, sizeof(qty), "%zu", i * 1000 + 1);
			assert_string_equal(text_at(line, "sku"), skus[i]);
			assert_string_equal(text_at(line, "quantity"), qty);
		}
		xmlFreeDoc(doc);
		wms__buf_free(&b);
	}
}

static void maximum_sizes_validate(void **state)
{
	static wms_order_line lines[WMS_MAX_LINES];
	const char *skus[WMS_MAX_SKUS];
	wms_order order = golden_order();
	wms__buf b = { NULL, 0, 0 };
	xmlNodePtr req;
	xmlDocPtr doc;
	size_t i;
	(void)state;

	for (i = 0; i < WMS_MAX_LINES; i++) {
		lines[i].sku = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.:";
		lines[i].quantity = 1000000;
	}
	for (i = 0; i < WMS_MAX_SKUS; i++)
		skus[i] = lines[0].sku;
	order.lines = lines;
	order.line_count = WMS_MAX_LINES;
	assert_int_equal(wms__build_submit_order(&b, WMS_SOAP_11, &order, NULL), WMS_OK);
	doc = check_envelope(&b, WMS_SOAP_11, "SubmitOrderRequest", &req);
	xmlFreeDoc(doc);
	wms__buf_free(&b);
	assert_int_equal(wms__build_get_stock_level(&b, WMS_SOAP_12, skus, WMS_MAX_SKUS, NULL), WMS_OK);
	doc = check_envelope(&b, WMS_SOAP_12, "GetStockLevelRequest", &req);
	assert_int_equal(count_children(req), WMS_MAX_SKUS);
	xmlFreeDoc(doc);
	wms__buf_free(&b);
}

static void optional_fields(void **state)
{
	static const char *const with[] = { "name", "line1", "line2", "city", "region", "postalCode",
					    "country" };
	wms_order order = golden_order();
	wms__buf b = { NULL, 0, 0 };
	xmlNodePtr req, n;
	xmlDocPtr doc;
	size_t i;
	(void)state;

	/* present: in schema order */
	order.ship_to.line2 = "Flat 3";
	order.ship_to.region = "Greater London";
	assert_int_equal(wms__build_submit_order(&b, WMS_SOAP_12, &order, NULL), WMS_OK);
	doc = check_envelope(&b, WMS_SOAP_12, "SubmitOrderRequest", &req);
	n = first_element(first_element(req->children)->next);
	assert_int_equal(count_children(n), 7);
	for (i = 0, n = first_element(n->children); n; n = first_element(n->next), i++)
		assert_string_equal((const char *)n->name, with[i]);
	assert_string_equal(text_at(req, "shipTo/line2"), "Flat 3");
	assert_string_equal(text_at(req, "shipTo/region"), "Greater London");
	xmlFreeDoc(doc);
	wms__buf_free(&b);

	/* absent as NULL and as "" */
	order.ship_to.line2 = NULL;
	order.ship_to.region = "";
	assert_int_equal(wms__build_submit_order(&b, WMS_SOAP_11, &order, NULL), WMS_OK);
	doc = check_envelope(&b, WMS_SOAP_11, "SubmitOrderRequest", &req);
	assert_null(text_at(req, "shipTo/line2"));
	assert_null(text_at(req, "shipTo/region"));
	assert_int_equal(count_children(first_element(first_element(req->children)->next)), 5);
	xmlFreeDoc(doc);
	wms__buf_free(&b);

	/* cancel without a reason */
	assert_int_equal(wms__build_cancel_order(&b, WMS_SOAP_11, "ORD-1", NULL, NULL), WMS_OK);
	doc = check_envelope(&b, WMS_SOAP_11, "CancelOrderRequest", &req);
	assert_int_equal(count_children(req), 1);
	xmlFreeDoc(doc);
	wms__buf_free(&b);
	assert_int_equal(wms__build_cancel_order(&b, WMS_SOAP_12, "ORD-1", "", NULL), WMS_OK);
	doc = check_envelope(&b, WMS_SOAP_12, "CancelOrderRequest", &req);
	assert_null(text_at(req, "reason"));
	xmlFreeDoc(doc);
	wms__buf_free(&b);
}

static void non_ascii_and_markup_survive(void **state)
{
	static const char name[] = "Jos\xc3\xa9 \xc3\x91\xc3\xba\xc3\xb1" "ez & <Sons> \"Ltd\" 'x'";
	static const char line1[] = "\xe6\x97\xa5\xe6\x9c\xac\xe6\xa9\x8b 1-1";
	static const char line2[] = "]]> not a CDATA end";
	static const char region[] = "\xf0\x9d\x84\x9e Music";
	static const char reason[] = "Kunde w\xc3\xbcnscht Storno <sofort> & \xe2\x82\xac";
	wms_order order = golden_order();
	wms__buf b = { NULL, 0, 0 };
	xmlNodePtr req;
	xmlDocPtr doc;
	int vi;
	(void)state;

	order.ship_to.name = name;
	order.ship_to.line1 = line1;
	order.ship_to.line2 = line2;
	order.ship_to.city = "Z\xc3\xbcrich";
	order.ship_to.region = region;
	for (vi = 0; vi < 2; vi++) {
		assert_int_equal(wms__build_submit_order(&b, (wms_soap_version)vi, &order, NULL), WMS_OK);
		/* escaped markup, raw UTF-8 (no character references) */
		assert_non_null(strstr(b.data, "Jos\xc3\xa9 \xc3\x91\xc3\xba\xc3\xb1" "ez &amp; &lt;Sons&gt;"));
		assert_non_null(strstr(b.data, "]]&gt; not a CDATA end"));
		assert_null(strstr(b.data, "&#"));
		doc = check_envelope(&b, (wms_soap_version)vi, "SubmitOrderRequest", &req);
		assert_string_equal(text_at(req, "shipTo/name"), name);
		assert_string_equal(text_at(req, "shipTo/line1"), line1);
		assert_string_equal(text_at(req, "shipTo/line2"), line2);
		assert_string_equal(text_at(req, "shipTo/city"), "Z\xc3\xbcrich");
		assert_string_equal(text_at(req, "shipTo/region"), region);
		xmlFreeDoc(doc);
		wms__buf_free(&b);
	}
	assert_int_equal(wms__build_cancel_order(&b, WMS_SOAP_11, "ORD-1", reason, NULL), WMS_OK);
	doc = check_envelope(&b, WMS_SOAP_11, "CancelOrderRequest", &req);
	assert_string_equal(text_at(req, "reason"), reason);
	xmlFreeDoc(doc);
	wms__buf_free(&b);
}

/* The schema check above must be able to fail: a payload that breaks the
 * contract is rejected. */
static void schema_rejects_contract_violations(void **state)
{
	wms_order order = golden_order();
	wms__buf b = { NULL, 0, 0 };
	xmlNodePtr req, qty;
	xmlDocPtr doc;
	char msg[256];
	(void)state;

	assert_int_equal(wms__build_submit_order(&b, WMS_SOAP_11, &order, NULL), WMS_OK);
	doc = check_envelope(&b, WMS_SOAP_11, "SubmitOrderRequest", &req);
	qty = first_element(first_element(first_element(req->children)->next)->next); /* priority */
	xmlNodeSetContent(qty, (const xmlChar *)"URGENT");
	assert_int_not_equal(validate(req, msg), 0);
	assert_non_null(strstr(msg, "priority"));
	xmlFreeDoc(doc);
	wms__buf_free(&b);
}

static void builders_reject_bad_input(void **state)
{
	wms_order order = golden_order();
	wms__buf b = { NULL, 0, 0 };
	const char *skus[] = { "OK", "not ok" };
	wms_error err;
	(void)state;

	wms_error_clear(&err);
	assert_int_equal(wms__build_submit_order(&b, (wms_soap_version)2, &order, &err),
			 WMS_ERR_INVALID_ARG);
	assert_string_equal(err.message, "soap_version: must be WMS_SOAP_11 or WMS_SOAP_12 (got 2)");
	assert_int_equal(err.delivery, WMS_DELIVERY_NOT_SENT);
	assert_null(b.data);

	order.lines = NULL;
	assert_int_equal(wms__build_submit_order(&b, WMS_SOAP_11, &order, &err), WMS_ERR_INVALID_ARG);
	assert_string_equal(err.message, "lines: required (got NULL with line_count 1)");
	assert_null(b.data);
	assert_int_equal(wms__build_submit_order(&b, WMS_SOAP_11, NULL, &err), WMS_ERR_INVALID_ARG);
	assert_int_equal(wms__build_submit_order(NULL, WMS_SOAP_11, &order, &err), WMS_ERR_INVALID_ARG);
	assert_string_equal(err.message, "out: required (got NULL)");

	assert_int_equal(wms__build_get_order_status(&b, WMS_SOAP_11, "bad id", &err),
			 WMS_ERR_INVALID_ARG);
	assert_int_equal(wms__build_cancel_order(&b, WMS_SOAP_11, "ORD-1", "tab\there", &err),
			 WMS_ERR_INVALID_ARG);
	assert_string_equal(err.message, "reason: control character U+0009 at byte 3");
	assert_int_equal(wms__build_get_stock_level(&b, WMS_SOAP_12, skus, 2, &err),
			 WMS_ERR_INVALID_ARG);
	assert_string_equal(err.message,
			    "skus[1]: must be 1-64 characters of [A-Za-z0-9._:-] (byte 0x20 at offset 3)");
	assert_int_equal(wms__build_get_stock_level(&b, WMS_SOAP_12, skus, 0, &err),
			 WMS_ERR_INVALID_ARG);
	assert_null(b.data);
}

static void operation_names(void **state)
{
	(void)state;
	assert_string_equal(wms__op_name(WMS__OP_SUBMIT_ORDER), "SubmitOrder");
	assert_string_equal(wms__op_name(WMS__OP_GET_ORDER_STATUS), "GetOrderStatus");
	assert_string_equal(wms__op_name(WMS__OP_CANCEL_ORDER), "CancelOrder");
	assert_string_equal(wms__op_name(WMS__OP_GET_STOCK_LEVEL), "GetStockLevel");
	assert_string_equal(wms__op_name(WMS__OP_COUNT), "");
	assert_string_equal(wms__op_action(WMS__OP_SUBMIT_ORDER), "urn:libwms:warehouse:1/SubmitOrder");
	assert_string_equal(wms__op_action(WMS__OP_GET_STOCK_LEVEL),
			    "urn:libwms:warehouse:1/GetStockLevel");
	assert_string_equal(wms__op_action((wms__op)-1), "");
	assert_string_equal(wms__op_content_type(WMS__OP_CANCEL_ORDER, WMS_SOAP_11),
			    "text/xml; charset=utf-8");
	assert_string_equal(wms__op_content_type(WMS__OP_CANCEL_ORDER, WMS_SOAP_12),
			    "application/soap+xml; charset=utf-8; "
			    "action=\"urn:libwms:warehouse:1/CancelOrder\"");
	assert_string_equal(wms__op_content_type(WMS__OP_GET_ORDER_STATUS, WMS_SOAP_12),
			    "application/soap+xml; charset=utf-8; "
			    "action=\"urn:libwms:warehouse:1/GetOrderStatus\"");
}

/* Fail libxml2's n-th allocation for every n until a build succeeds: each
 * attempt gives NOMEM (nothing half-built handed out, nothing leaked - the
 * sanitizer and valgrind runs check that) or the exact normal output. */
static void every_failed_allocation(void **state)
{
	const wms_order_line lines[] = { { "A", 1 }, { "B", 2 }, { "C", 3 } };
	wms_order order = golden_order();
	wms__buf ref = { NULL, 0, 0 }, b = { NULL, 0, 0 };
	long n, nomem = 0;
	int vi;
	(void)state;

	order.lines = lines;
	order.line_count = 3;
	order.ship_to.line2 = "x";
	for (vi = 0; vi < 2; vi++) {
		assert_int_equal(wms__build_submit_order(&ref, (wms_soap_version)vi, &order, NULL), WMS_OK);
		for (n = 1;; n++) {
			wms_error err;
			wms_status rc;
			wms_error_clear(&err);
			util_xml_mem_fail_at(n);
			rc = wms__build_submit_order(&b, (wms_soap_version)vi, &order, &err);
			util_xml_mem_reset();
			if (rc == WMS_OK) {
				assert_int_equal(b.len, ref.len);
				assert_memory_equal(b.data, ref.data, b.len);
				wms__buf_free(&b);
				if (!util_xml_mem_failed())
					break;
				continue;
			}
			nomem++;
			assert_int_equal(rc, WMS_ERR_NOMEM);
			assert_int_equal(err.status, WMS_ERR_NOMEM);
			assert_string_equal(err.message, "building the SubmitOrder request: out of memory");
			assert_null(b.data);
			assert_true(n < 10000);
		}
		wms__buf_free(&ref);
	}
	assert_true(nomem > 20);
}

/* ---- workspaces: a kept tree, walked over, gives the bytes a new one does */

static uint32_t rng_next(uint32_t *x)
{
	*x = *x * 1103515245u + 12345u;
	return (*x >> 8) & 0xFFFFFFu;
}

typedef struct random_request {
	wms__request r;
	wms_order order;
	wms_order_line lines[80];
	char skus[80][24];
	const char *sku_ptrs[80];
	char id[32], name[40], reason[40];
} random_request;

/* A request of a random operation and shape: line and SKU counts, the
 * optional fields, values with markup and non-ASCII text, now and then a
 * 600-line order (larger than a workspace keeps). */
static void random_request_make(random_request *q, uint32_t *x)
{
	static const char *const names[] = { "Ada", "Bob & <Co>", "Z\xc3\xbcrich \"AG\"", "" };
	size_t i, n;

	memset(q, 0, sizeof(*q));
	q->r.op = (wms__op)(rng_next(x) % WMS__OP_COUNT);
	snprintf(q->id, sizeof(q->id), "ORD-%06u", (unsigned)(rng_next(x) % 1000000u));
	snprintf(q->name, sizeof(q->name), "%s %u", names[rng_next(x) % 3], (unsigned)rng_next(x) % 100);
	n = 1 + rng_next(x) % (sizeof(q->lines) / sizeof(q->lines[0]));
	if (rng_next(x) % 3 == 0)
		n = 1 + rng_next(x) % 3;
	for (i = 0; i < n; i++) {
		snprintf(q->skus[i], sizeof(q->skus[i]), "SKU-%u", (unsigned)(rng_next(x) % 50));
		q->sku_ptrs[i] = q->skus[i];
		q->lines[i].sku = q->skus[i];
		q->lines[i].quantity = 1 + rng_next(x) % 999;
	}
	q->order = golden_order();
	q->order.order_id = q->id;
	q->order.ship_to.name = q->name;
	q->order.ship_to.line2 = rng_next(x) % 2 ? "Flat 3 <rear>" : NULL;
	q->order.ship_to.region = rng_next(x) % 2 ? "Greater London" : "";
	q->order.priority = (wms_priority)(rng_next(x) % 3);
	q->order.lines = q->lines;
	q->order.line_count = n;
	snprintf(q->reason, sizeof(q->reason), "%s", rng_next(x) % 2 ? "customer & \xe2\x82\xac" : "");
	q->r.order = &q->order;
	q->r.order_id = q->id;
	q->r.reason = q->reason;
	q->r.skus = q->sku_ptrs;
	q->r.sku_count = n;
	if (q->r.op == WMS__OP_GET_STOCK_LEVEL && rng_next(x) % 5 == 0)
		q->r.sku_count = 200 < n ? 200 : n;
}

static void workspace_builds_the_same_bytes(void **state)
{
	static random_request q;
	static wms_order_line big_lines[600];
	static char big_skus[600][16];
	wms__xml_ws ws = { NULL, NULL };
	wms__buf fresh = { NULL, 0, 0 }, reused = { NULL, 0, 0 };
	uint32_t x = 20261201u;
	size_t i;
	int k, big = 0;
	(void)state;

	for (i = 0; i < 600; i++) {
		snprintf(big_skus[i], sizeof(big_skus[i]), "BIG-%zu", i);
		big_lines[i].sku = big_skus[i];
		big_lines[i].quantity = 1;
	}
	for (k = 0; k < 1500; k++) {
		/* mostly one SOAP version, as a client has; now and then the other */
		wms_soap_version v = rng_next(&x) % 10 == 0 ? WMS_SOAP_12 : WMS_SOAP_11;
		wms_error e1, e2;
		random_request_make(&q, &x);
		if (q.r.op == WMS__OP_SUBMIT_ORDER && rng_next(&x) % 40 == 0) {
			q.order.lines = big_lines;
			q.order.line_count = 600;
			big++;
		}
		assert_int_equal(wms__build_request(&fresh, v, &q.r, NULL, &e1), WMS_OK);
		assert_int_equal(wms__build_request_ws(&ws, &reused, v, &q.r, NULL, &e2), WMS_OK);
		if (fresh.len != reused.len || memcmp(fresh.data, reused.data, fresh.len) != 0)
			fail_msg("request %d (op %d, v %d): a reused tree gave other bytes:\n%s\n-- vs --\n%s",
				 k, (int)q.r.op, (int)v, fresh.data, reused.data);
		wms__buf_free(&fresh);
		wms__buf_free(&reused);
	}
	assert_true(big > 3);
	assert_non_null(ws.build);
	wms__build_ws_free(ws.build);
}

/* WS-Security credentials go into the envelope as text: a user name (or a
 * text password) XML cannot carry is refused, never sent malformed, and the
 * refusal never quotes the password. A digest password may be any bytes. */
static void wsse_text_is_checked(void **state)
{
	static const char *const bad[] = { "bob\x01", "bob\xff", "bob\xef\xbf\xbe", "a\x1b" };
	wms_order order = golden_order();
	wms__request r = { WMS__OP_SUBMIT_ORDER, &order, NULL, NULL, NULL, 0 };
	wms__buf out = { NULL, 0, 0 };
	wms_error err;
	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		wms__wsse user = { WMS_WSSE_PASSWORD_DIGEST, bad[i], "s3cret" };
		wms__wsse pass = { WMS_WSSE_PASSWORD_TEXT, "svc-user", bad[i] };
		wms__wsse digest = { WMS_WSSE_PASSWORD_DIGEST, "svc-user", bad[i] };
		assert_int_equal(wms__build_request(&out, WMS_SOAP_11, &r, &user, &err),
				 WMS_ERR_INVALID_ARG);
		assert_non_null(strstr(err.message, "wsse username"));
		assert_int_equal(err.delivery, WMS_DELIVERY_NOT_SENT);
		assert_int_equal(wms__build_request(&out, WMS_SOAP_11, &r, &pass, &err),
				 WMS_ERR_INVALID_ARG);
		assert_non_null(strstr(err.message, "wsse password"));
		assert_null(strstr(err.message, "at byte")); /* no position, no character */
		assert_null(strstr(err.message, "U+"));
		assert_int_equal(wms__build_request(&out, WMS_SOAP_11, &r, &digest, &err), WMS_OK);
		{
			xmlDocPtr doc = xmlReadMemory(out.data, (int)out.len, NULL, NULL,
						      XML_PARSE_NONET | XML_PARSE_NOERROR |
							      XML_PARSE_NOWARNING);
			assert_non_null(doc); /* the envelope re-parses */
			xmlFreeDoc(doc);
		}
		wms__buf_free(&out);
	}
}

/* WS-Security: a fresh Header per message on a kept tree, and none left
 * behind when the next call goes without. */
static void workspace_headers(void **state)
{
	wms__wsse wsse = { WMS_WSSE_PASSWORD_DIGEST, "svc-user", "s3cret" };
	wms_order order = golden_order();
	wms__request r = { WMS__OP_SUBMIT_ORDER, &order, NULL, NULL, NULL, 0 };
	wms__xml_ws ws = { NULL, NULL };
	wms__buf plain = { NULL, 0, 0 }, a = { NULL, 0, 0 }, b = { NULL, 0, 0 };
	const char *na, *nb;
	(void)state;

	assert_int_equal(wms__build_request(&plain, WMS_SOAP_11, &r, NULL, NULL), WMS_OK);
	assert_int_equal(wms__build_request_ws(&ws, &a, WMS_SOAP_11, &r, &wsse, NULL), WMS_OK);
	assert_int_equal(wms__build_request_ws(&ws, &b, WMS_SOAP_11, &r, &wsse, NULL), WMS_OK);
	/* one Header each, before the Body, with its own nonce */
	assert_non_null(na = strstr(a.data, "<wsse:Nonce"));
	assert_non_null(nb = strstr(b.data, "<wsse:Nonce"));
	assert_null(strstr(na + 1, "<wsse:Nonce"));
	na = strchr(na, '>') + 1;
	nb = strchr(nb, '>') + 1;
	assert_null(strstr(strstr(a.data, "</soap:Header>") + 1, "<soap:Header"));
	assert_true(strstr(a.data, "</soap:Header><soap:Body>") != NULL);
	assert_memory_not_equal(na, nb, 24); /* 16 random bytes, Base64 */
	wms__buf_free(&a);
	assert_int_equal(wms__build_request_ws(&ws, &a, WMS_SOAP_11, &r, NULL, NULL), WMS_OK);
	assert_int_equal(a.len, plain.len);
	assert_memory_equal(a.data, plain.data, a.len);
	wms__buf_free(&a);
	wms__buf_free(&b);
	wms__buf_free(&plain);
	wms__build_ws_free(ws.build);
}

/* A failed allocation while walking a kept tree: NOMEM, and the workspace
 * still builds the exact bytes afterwards (the damaged tree was dropped). */
static void workspace_failed_allocation(void **state)
{
	const wms_order_line lines[] = { { "A", 1 }, { "B", 2 }, { "C", 3 }, { "D", 4 } };
	wms_order small = golden_order(), order = golden_order();
	wms__request rs = { WMS__OP_SUBMIT_ORDER, &small, NULL, NULL, NULL, 0 };
	wms__request r = { WMS__OP_SUBMIT_ORDER, &order, NULL, NULL, NULL, 0 };
	wms__xml_ws ws = { NULL, NULL };
	wms__buf ref = { NULL, 0, 0 }, b = { NULL, 0, 0 };
	long n, nomem = 0;
	(void)state;

	order.lines = lines;
	order.line_count = 4;
	/* markup and non-ASCII: a save context made anew after a failure
	 * must escape as the first one did (see "The frame") */
	order.ship_to.line2 = "Z\xc3\xbcrich & <Hof> \xe2\x82\xac";
	order.order_id = "ORD-OTHER";
	assert_int_equal(wms__build_request(&ref, WMS_SOAP_11, &r, NULL, NULL), WMS_OK);
	for (n = 1;; n++) {
		wms_error err;
		wms_status rc;
		/* warm: the kept tree is the one-line order's */
		assert_int_equal(wms__build_request_ws(&ws, &b, WMS_SOAP_11, &rs, NULL, NULL), WMS_OK);
		wms__buf_free(&b);
		wms_error_clear(&err);
		util_xml_mem_fail_at(n);
		rc = wms__build_request_ws(&ws, &b, WMS_SOAP_11, &r, NULL, &err);
		util_xml_mem_reset();
		if (rc == WMS_OK) {
			assert_int_equal(b.len, ref.len);
			assert_memory_equal(b.data, ref.data, b.len);
			wms__buf_free(&b);
			if (!util_xml_mem_failed())
				break;
			continue;
		}
		nomem++;
		assert_int_equal(rc, WMS_ERR_NOMEM);
		assert_null(b.data);
		assert_true(n < 10000);
		/* the next build, without a failure, is exact */
		assert_int_equal(wms__build_request_ws(&ws, &b, WMS_SOAP_11, &r, NULL, NULL), WMS_OK);
		assert_int_equal(b.len, ref.len);
		assert_memory_equal(b.data, ref.data, b.len);
		wms__buf_free(&b);
	}
	assert_true(nomem > 5);
	wms__buf_free(&ref);
	wms__build_ws_free(ws.build);
}

/* A kept workspace (frame learnt for SubmitOrder) builds a 200-SKU stock
 * request from scratch with its last libxml2 allocations failed in turn:
 * tree nodes, and the save context's output buffer growing (how early that
 * comes depends on the byte layout, so several SKU lengths are tried).
 * After each failure the framed SubmitOrder must come out exact: an output
 * buffer that could not grow keeps its error and silently writes nothing
 * ever after, so the save context that saw it is replaced, and the new one
 * escapes as the first did (markup escaped, non-ASCII as it is). */
static void stock_sweep_tail(size_t sku_len, long *grow_failures, long *runs)
{
	static char skus[WMS_MAX_SKUS][64];
	static const char *sku_ptrs[WMS_MAX_SKUS];
	/* Two shapes of SubmitOrder in turn (line2 or not): never the same
	 * twice in a row, so never a template (see workspace_template_*): the
	 * framed tree, through the save context, every time. */
	wms_order order = golden_order(), order2 = golden_order();
	wms__request r = { WMS__OP_SUBMIT_ORDER, &order, NULL, NULL, NULL, 0 };
	wms__request r2 = { WMS__OP_SUBMIT_ORDER, &order2, NULL, NULL, NULL, 0 };
	wms__request big = { WMS__OP_GET_STOCK_LEVEL, NULL, NULL, NULL, sku_ptrs, WMS_MAX_SKUS };
	wms__xml_ws probe = { NULL, NULL }, ws = { NULL, NULL };
	wms__buf ref = { NULL, 0, 0 }, ref2 = { NULL, 0, 0 }, b = { NULL, 0, 0 };
	long total, n;

	for (size_t i = 0; i < WMS_MAX_SKUS; i++) {
		snprintf(skus[i], sizeof(skus[i]), "SKU-%06zu-ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcdef",
			 i);
		skus[i][sku_len] = '\0';
		sku_ptrs[i] = skus[i];
	}
	order.ship_to.name = "Z\xc3\xbcrich & <Hof> \xe2\x82\xac";
	order2.ship_to.name = order.ship_to.name;
	order2.ship_to.line2 = "Hinterhaus";
	assert_int_equal(wms__build_request(&ref, WMS_SOAP_11, &r, NULL, NULL), WMS_OK);
	assert_int_equal(wms__build_request(&ref2, WMS_SOAP_11, &r2, NULL, NULL), WMS_OK);
	/* what a stock build from scratch allocates after a SubmitOrder */
	assert_int_equal(wms__build_request_ws(&probe, &b, WMS_SOAP_11, &r, NULL, NULL), WMS_OK);
	wms__buf_free(&b);
	util_xml_mem_fail_at(0);
	assert_int_equal(wms__build_request_ws(&probe, &b, WMS_SOAP_11, &big, NULL, NULL), WMS_OK);
	total = util_xml_mem_count();
	util_xml_mem_reset();
	wms__buf_free(&b);
	wms__build_ws_free(probe.build);

	/* learn the frame; then each failure drops the stock tree, so every
	 * run builds it from scratch again */
	assert_int_equal(wms__build_request_ws(&ws, &b, WMS_SOAP_11, &r, NULL, NULL), WMS_OK);
	wms__buf_free(&b);
	for (n = total > 12 ? total - 12 : 1; n <= total; n++) {
		wms_status rc;
		int injected;
		util_xml_mem_fail_at(n);
		rc = wms__build_request_ws(&ws, &b, WMS_SOAP_11, &big, NULL, NULL);
		injected = util_xml_mem_failed();
		if (injected && util_xml_mem_failed_size() > 4000)
			(*grow_failures)++;
		util_xml_mem_reset();
		wms__buf_free(&b);
		/* past the build's own allocations (learning its frame, whose
		 * failure is not the call's): the build went through */
		if (rc != WMS_OK) {
			assert_true(injected);
			assert_int_equal(rc, WMS_ERR_NOMEM);
			(*runs)++;
		}
		rc = wms__build_request_ws(&ws, &b, WMS_SOAP_11, n % 2 ? &r2 : &r, NULL, NULL);
		if (rc != WMS_OK)
			fail_msg("SKUs of %zu bytes, after failing allocation %ld of %ld: %s", sku_len,
				 n, total, wms_status_name(rc));
		if (b.len != (n % 2 ? &ref2 : &ref)->len ||
		    memcmp(b.data, (n % 2 ? &ref2 : &ref)->data, b.len) != 0)
			fail_msg("SKUs of %zu bytes, after failing allocation %ld of %ld, other "
				 "bytes:\n%s",
				 sku_len, n, total, b.data);
		wms__buf_free(&b);
	}
	wms__buf_free(&ref);
	wms__buf_free(&ref2);
	wms__build_ws_free(ws.build);
}

static void workspace_frame_survives_a_failed_save_context(void **state)
{
	long grow_failures = 0, runs = 0;
	(void)state;
	for (size_t len = 30; len <= 48; len++)
		stock_sweep_tail(len, &grow_failures, &runs);
	assert_true(runs > 100);
	assert_true(grow_failures > 0); /* the output buffer's growth was hit */
}

/* ---- the template: a shape built twice in a row is written from libxml2's
 * bytes for it, values escaped by libxml2 (src/soap/build.c) */

/* Build r through ws and from scratch; the same bytes. Returns how many
 * libxml2 allocations the workspace's build made. */
static long build_both_sized(wms__xml_ws *ws, const wms__request *r, int k, size_t *bytes)
{
	wms__buf fresh = { NULL, 0, 0 }, kept = { NULL, 0, 0 };
	long allocs;

	assert_int_equal(wms__build_request(&fresh, WMS_SOAP_11, r, NULL, NULL), WMS_OK);
	util_xml_mem_fail_at(0);
	assert_int_equal(wms__build_request_ws(ws, &kept, WMS_SOAP_11, r, NULL, NULL), WMS_OK);
	allocs = util_xml_mem_count();
	if (bytes)
		*bytes = util_xml_mem_bytes();
	util_xml_mem_reset();
	if (fresh.len != kept.len || memcmp(fresh.data, kept.data, fresh.len) != 0)
		fail_msg("build %d: other bytes from the workspace:\n%s\n-- vs --\n%s", k,
			 fresh.data, kept.data);
	wms__buf_free(&fresh);
	wms__buf_free(&kept);
	return allocs;
}

static long build_both(wms__xml_ws *ws, const wms__request *r, int k)
{
	return build_both_sized(ws, r, k, NULL);
}

/* SubmitOrder with line2 and `lines` lines: 10 + 3 x lines puts. Every
 * value differs from one build to the next (name, SKUs, quantities). */
static void sized_order(wms_order *o, wms_order_line *lines, char (*skus)[24], char *name,
			size_t lines_n, int k)
{
	size_t i;
	*o = golden_order();
	snprintf(name, 40, "Customer <%d> & Co", k);
	o->ship_to.name = name;
	o->ship_to.line2 = "Hinterhaus";
	for (i = 0; i < lines_n; i++) {
		snprintf(skus[i], 24, "SKU-%d-%d", k % 100000, (int)i);
		lines[i].sku = skus[i];
		lines[i].quantity = (uint32_t)(1 + (i + (size_t)k) % 9);
	}
	o->lines = lines;
	o->line_count = lines_n;
}

/* From the third build of one shape on, a workspace writes the template:
 * from the fourth (the third makes its output buffer, once) no libxml2
 * allocation at all though every value changed (the tree path copies each
 * new value into its node). At WMS__TEMPLATE_MAX_PUTS puts (82
 * lines) it does; one put more (83 lines: 259) never: each shape four
 * times in a row, twice, on one workspace; every build byte for byte. */
static void workspace_template_is_used_up_to_its_limit(void **state)
{
	static wms_order_line lines[90];
	static char skus[90][24];
	char name[40];
	wms_order o;
	wms__request r = { WMS__OP_SUBMIT_ORDER, &o, NULL, NULL, NULL, 0 };
	wms__xml_ws ws = { NULL, NULL };
	static const size_t shapes[] = { 1, 82, 83, 82, 83, 1 };
	int k = 0;
	(void)state;

	_Static_assert(10 + 3 * 82 == WMS__TEMPLATE_MAX_PUTS, "82 lines are the limit");
	for (size_t sh = 0; sh < sizeof(shapes) / sizeof(shapes[0]); sh++) {
		for (int i = 0; i < 4; i++, k++) {
			long allocs;
			sized_order(&o, lines, skus, name, shapes[sh], k);
			allocs = build_both(&ws, &r, k);
			if (i >= 3 && shapes[sh] * 3 + 10 <= WMS__TEMPLATE_MAX_PUTS && allocs != 0)
				fail_msg("%zu lines, build %d of the shape: %ld libxml2 allocations "
					 "(the template was not written)", shapes[sh], i + 1, allocs);
			if (shapes[sh] * 3 + 10 > WMS__TEMPLATE_MAX_PUTS && allocs == 0)
				fail_msg("%zu lines (over the limit), build %d: no allocation", shapes[sh],
					 i + 1);
		}
	}
	wms__build_ws_free(ws.build);
}

/* Each libxml2 allocation failed in turn while a template is learnt (the
 * second build of a shape) and while it is first written (the third, with
 * a new output buffer): the call fails with NOMEM, or goes through (a
 * failed learning costs only the template); the builds after it, with
 * other values, come out exact either way. */
static void workspace_template_failed_allocation(void **state)
{
	static wms_order_line lines[4];
	static char skus[4][24];
	char name[40];
	wms_order o;
	wms__request r = { WMS__OP_SUBMIT_ORDER, &o, NULL, NULL, NULL, 0 };
	long failed = 0, through = 0;
	(void)state;

	for (int stage = 1; stage <= 2; stage++) {
		for (long n = 1;; n++) {
			wms__xml_ws ws = { NULL, NULL };
			wms__buf b = { NULL, 0, 0 };
			wms_status rc;
			int injected, k;

			for (k = 0; k < stage; k++) {
				sized_order(&o, lines, skus, name, 3, k);
				build_both(&ws, &r, k);
			}
			sized_order(&o, lines, skus, name, 3, k++);
			util_xml_mem_fail_at(n);
			rc = wms__build_request_ws(&ws, &b, WMS_SOAP_11, &r, NULL, NULL);
			injected = util_xml_mem_failed();
			util_xml_mem_reset();
			wms__buf_free(&b);
			if (rc != WMS_OK) {
				assert_true(injected);
				assert_int_equal(rc, WMS_ERR_NOMEM);
				failed++;
			} else {
				through++;
			}
			for (int after = 0; after < 4; after++, k++) {
				sized_order(&o, lines, skus, name, 3, k);
				build_both(&ws, &r, k);
			}
			wms__build_ws_free(ws.build);
			if (!injected)
				break;
			assert_true(n < 1000);
		}
	}
	assert_true(failed > 0);
	assert_true(through > 1);
}

/* ---- KEEP_BODY_BYTES (src/soap/build.c): a workspace keeps an envelope -
 * its tree, frame and puts - for the next call only if the envelope came
 * out at most this long, every byte handed out counted (XML declaration to
 * the final newline, markup escaped); a longer one is dropped after the
 * call, and a template is learnt only from a kept one. */

#define KEEP_BODY_BYTES 16384

/* What a workspace holds is seen through libwms's own allocations: a
 * counting allocator (count_alloc) is installed for the test, so its live
 * blocks are the workspace's. For the one operation a test builds: the
 * builder (1 block); a kept envelope's frame and its last two walks' puts
 * (3 more; its libxml2 tree goes with them, envelope_drop frees them all
 * at once); a template's puts, static bytes and part ends (3 more). */
enum { HOLDS_NOTHING = 1, HOLDS_TREE = 4, HOLDS_TEMPLATE = 7 };

typedef struct keep_view {
	count_alloc a;
	long bytes[HOLDS_TEMPLATE + 1]; /* each state's live bytes, when first seen */
} keep_view;

/* Static: a failed test leaves it installed until count_alloc_teardown. */
static keep_view kv;

static void keep_view_begin(void)
{
	wms_allocator hooks;
	memset(&kv, 0, sizeof(kv));
	for (size_t i = 0; i < sizeof(kv.bytes) / sizeof(kv.bytes[0]); i++)
		kv.bytes[i] = -1;
	kv.a.headers = 1; /* sizes: nothing allocated before is freed in the test */
	hooks = count_alloc_hooks(&kv.a);
	assert_int_equal(wms_set_allocator(&hooks), WMS_OK);
}

/* Once the workspace is freed: nothing of it is left. */
static void keep_view_end(void)
{
	assert_int_equal(atomic_load(&kv.a.live), 0);
}

/* The workspace holds `holds` blocks, and as many bytes as the last time
 * it was in that state: nothing of a larger envelope stays behind. */
static void assert_holds(long holds, int k)
{
	static const char *const what[] = { [HOLDS_NOTHING] = "the envelope dropped",
					    [HOLDS_TREE] = "tree, frame and puts kept",
					    [HOLDS_TEMPLATE] = "and a template" };
	long live = atomic_load(&kv.a.live), bytes = atomic_load(&kv.a.live_bytes);
	if (live != holds)
		fail_msg("build %d: the workspace holds %ld blocks, %ld expected (%s)", k, live,
			 holds, what[holds]);
	if (kv.bytes[holds] < 0)
		kv.bytes[holds] = bytes;
	else if (bytes != kv.bytes[holds])
		fail_msg("build %d: %s, in %ld bytes (%ld before)", k, what[holds], bytes,
			 kv.bytes[holds]);
}

/* SKUs and strings that lengthen_to may lengthen: 1-64 characters that
 * need no escaping, so that each one added adds one byte. */
typedef char sku_text[65];
static const char sku_chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789.:-_";

/* Set the n strings to one character, then lengthen them in turn until
 * r's envelope (SOAP 1.1, no workspace) is exactly `len` bytes; their
 * characters vary with k, so that each build changes every one. */
static void lengthen_to(const wms__request *r, sku_text *s, size_t n, size_t len, int k)
{
	const size_t nc = sizeof(sku_chars) - 1;
	wms__buf b = { NULL, 0, 0 };
	size_t have, i, j;

	for (i = 0; i < n; i++) {
		s[i][0] = sku_chars[(i + (size_t)k) % nc];
		s[i][1] = '\0';
	}
	assert_int_equal(wms__build_request(&b, WMS_SOAP_11, r, NULL, NULL), WMS_OK);
	have = b.len;
	wms__buf_free(&b);
	for (i = 0; i < n && have < len; i++)
		for (j = 1; j < 64 && have < len; j++, have++) {
			s[i][j] = sku_chars[(i * 7 + j + (size_t)k) % nc];
			s[i][j + 1] = '\0';
		}
	assert_int_equal(wms__build_request(&b, WMS_SOAP_11, r, NULL, NULL), WMS_OK);
	if (b.len != len)
		fail_msg("an envelope of %zu bytes asked for, %zu made", len, b.len);
	wms__buf_free(&b);
}

/* An order of n lines (up to 130) with line2, optionally a region, and
 * short address fields or long ones that escaping lengthens ('&' is
 * written "&amp;", '<' "&lt;", '>' "&gt;"); its SKUs lengthened to make
 * the envelope `len` bytes. */
typedef struct keep_order {
	wms_order o;
	wms_order_line lines[130];
	sku_text skus[130];
	char id[32], name[257], line1[257], line2[257], city[257], region[257], postal[257];
	wms__request r;
} keep_order;

static void fill(char *dst, const char *pattern, size_t n)
{
	size_t p = strlen(pattern);
	for (size_t i = 0; i < n; i++)
		dst[i] = pattern[i % p];
	dst[n] = '\0';
}

static void keep_order_make(keep_order *q, size_t n, int escaped, int region, size_t len, int k)
{
	q->o = golden_order();
	snprintf(q->id, sizeof(q->id), "ORD-%d", k);
	q->o.order_id = q->id;
	if (escaped) {
		/* 256 bytes each, some 1 280 once escaped */
		fill(q->name, "&", 256);
		fill(q->line1, "<", 256);
		fill(q->line2, "&<>\"", 256);
		fill(q->city, "&", 256);
		fill(q->region, "&>", 256);
		fill(q->postal, "&", 256);
	} else {
		snprintf(q->name, sizeof(q->name), "Customer <%d> & Co", k);
		snprintf(q->line1, sizeof(q->line1), "%d Analytical Way", k);
		snprintf(q->line2, sizeof(q->line2), "Hinterhaus");
		snprintf(q->city, sizeof(q->city), "London");
		snprintf(q->region, sizeof(q->region), "Greater London");
		snprintf(q->postal, sizeof(q->postal), "N1 9GU");
	}
	q->o.ship_to.name = q->name;
	q->o.ship_to.line1 = q->line1;
	q->o.ship_to.line2 = q->line2;
	q->o.ship_to.city = q->city;
	q->o.ship_to.region = region ? q->region : NULL;
	q->o.ship_to.postal_code = q->postal;
	for (size_t i = 0; i < n; i++) {
		q->lines[i].sku = q->skus[i];
		q->lines[i].quantity = (uint32_t)(1 + (i + (size_t)k) % 9);
	}
	q->o.lines = q->lines;
	q->o.line_count = n;
	q->r = (wms__request){ WMS__OP_SUBMIT_ORDER, &q->o, NULL, NULL, NULL, 0 };
	lengthen_to(&q->r, q->skus, n, len, k);
}

/* Orders of 130 lines (400 puts: never a template) whose envelopes are
 * exactly KEEP_BODY_BYTES bytes and one more, each side twice in a row and
 * the sides alternating, on one workspace: every build byte for byte the
 * same as one from scratch; after each, the tree is kept (with its frame)
 * at the bound and dropped past it; and the build after a kept tree walks
 * it (fewer libxml2 allocations than any build after a drop, which makes a
 * new tree). */
static void workspace_keeps_envelopes_up_to_keep_body_bytes(void **state)
{
	static const struct {
		size_t len;
		long holds;
	} steps[] = {
		{ KEEP_BODY_BYTES, HOLDS_TREE },        { KEEP_BODY_BYTES + 1, HOLDS_NOTHING },
		{ KEEP_BODY_BYTES, HOLDS_TREE },        { KEEP_BODY_BYTES + 1, HOLDS_NOTHING },
		{ KEEP_BODY_BYTES + 1, HOLDS_NOTHING }, { KEEP_BODY_BYTES, HOLDS_TREE },
		{ KEEP_BODY_BYTES, HOLDS_TREE },        { KEEP_BODY_BYTES + 1, HOLDS_NOTHING },
	};
	static keep_order q;
	wms__xml_ws ws = { NULL, NULL };
	long held = HOLDS_NOTHING, walked_max = -1, rebuilt_min = -1;
	(void)state;

	keep_view_begin();
	for (int k = 0; k < (int)(sizeof(steps) / sizeof(steps[0])); k++) {
		long allocs;
		keep_order_make(&q, 130, 0, 1, steps[k].len, k);
		allocs = build_both(&ws, &q.r, k);
		assert_holds(steps[k].holds, k);
		if (held == HOLDS_TREE && (walked_max < 0 || allocs > walked_max))
			walked_max = allocs;
		if (held == HOLDS_NOTHING && (rebuilt_min < 0 || allocs < rebuilt_min))
			rebuilt_min = allocs;
		held = steps[k].holds;
	}
	if (walked_max >= rebuilt_min)
		fail_msg("a build after a kept tree made %ld libxml2 allocations, one after a drop "
			 "%ld: the kept tree was not walked", walked_max, rebuilt_min);
	wms__build_ws_free(ws.build);
	keep_view_end();
}

/* A template is learnt only from an envelope the workspace keeps; once
 * learnt, it writes every request of its shape, however long: the bound
 * is on what a workspace keeps, and a request written from the template
 * leaves nothing of its own there (the tree stays the one the template was
 * learnt from, and the envelope is handed out). So an envelope written
 * past KEEP_BODY_BYTES keeps the template, and the workspace holds the
 * same blocks and bytes as before. `steps` on one workspace, each build
 * against one from scratch. */
typedef struct keep_step {
	size_t lines; /* SubmitOrder: lines; 0: GetStockLevel of 200 SKUs */
	int escaped, region;
	size_t len;
	long holds;
	int written; /* from the template */
} keep_step;

static void run_keep_steps(const keep_step *steps, size_t n)
{
	static keep_order q;
	static sku_text skus[WMS_MAX_SKUS];
	static const char *sku_ptrs[WMS_MAX_SKUS];
	wms__request stock = { WMS__OP_GET_STOCK_LEVEL, NULL, NULL, NULL, sku_ptrs, WMS_MAX_SKUS };
	wms__xml_ws ws = { NULL, NULL };

	for (size_t i = 0; i < WMS_MAX_SKUS; i++)
		sku_ptrs[i] = skus[i];
	keep_view_begin();
	for (int k = 0; k < (int)n; k++) {
		const keep_step *s = &steps[k];
		const wms__request *r = &stock;
		size_t nskus = WMS_MAX_SKUS, bytes;
		long allocs;
		if (s->lines) {
			keep_order_make(&q, s->lines, s->escaped, s->region, s->len, k);
			r = &q.r;
			nskus = s->lines;
		} else {
			lengthen_to(&stock, skus, WMS_MAX_SKUS, s->len, k);
		}
		/* a template's size is its shape's */
		if (k && (s->lines != steps[k - 1].lines || s->region != steps[k - 1].region))
			kv.bytes[HOLDS_TEMPLATE] = -1;
		allocs = build_both_sized(&ws, r, k, &bytes);
		assert_holds(s->holds, k);
		/* Every SKU differs from the last build's: a tree walk would set
		 * each one's text (an allocation each). The template's output
		 * buffer may grow with where the values fall (seen: once, to
		 * 8 KiB; libxml2 passes it on every 4 000 bytes), never to the
		 * envelope's length. */
		if (s->written && (allocs >= (long)nskus || bytes >= s->len))
			fail_msg("build %d (%zu bytes): %ld libxml2 allocations of %zu bytes: not written "
				 "from the template, or a buffer grew to the envelope's length",
				 k, s->len, allocs, bytes);
	}
	wms__build_ws_free(ws.build);
	keep_view_end();
}

/* GetStockLevel of 200 SKUs (200 puts): at the bound, kept, and learns its
 * template the second time in a row; one byte past it before that, dropped
 * (no template learnt from it); after that, written from the template on
 * both sides of the bound, twice in a row each. */
static void workspace_template_past_keep_body_bytes(void **state)
{
	static const keep_step steps[] = {
		{ 0, 0, 0, KEEP_BODY_BYTES, HOLDS_TREE, 0 },
		{ 0, 0, 0, KEEP_BODY_BYTES + 1, HOLDS_NOTHING, 0 },
		{ 0, 0, 0, KEEP_BODY_BYTES + 1, HOLDS_NOTHING, 0 },
		{ 0, 0, 0, KEEP_BODY_BYTES, HOLDS_TREE, 0 },
		{ 0, 0, 0, KEEP_BODY_BYTES, HOLDS_TEMPLATE, 0 },     /* learnt */
		{ 0, 0, 0, KEEP_BODY_BYTES, HOLDS_TEMPLATE, 1 },
		{ 0, 0, 0, KEEP_BODY_BYTES + 1, HOLDS_TEMPLATE, 1 },
		{ 0, 0, 0, KEEP_BODY_BYTES + 1, HOLDS_TEMPLATE, 1 },
		{ 0, 0, 0, KEEP_BODY_BYTES, HOLDS_TEMPLATE, 1 },
		{ 0, 0, 0, KEEP_BODY_BYTES + 1, HOLDS_TEMPLATE, 1 },
	};
	(void)state;
	_Static_assert(WMS_MAX_SKUS <= WMS__TEMPLATE_MAX_PUTS, "200 SKUs take a template");
	run_keep_steps(steps, sizeof(steps) / sizeof(steps[0]));
}

/* The same with SubmitOrder at WMS__TEMPLATE_MAX_PUTS puts (82 lines,
 * line2, no region) whose values escaping lengthens (five address fields
 * of 256 bytes, written 5 760 bytes long): a template learnt from short
 * values writes envelopes at the bound and past it, twice in a row each;
 * then another shape (81 lines and a region: 254 puts), its tree walked
 * (the bound counts escaped bytes), is dropped one byte past the bound
 * twice in a row, kept at it, learns its own template there, and writes
 * past it. */
static void workspace_template_escaped_past_keep_body_bytes(void **state)
{
	static const keep_step steps[] = {
		{ 82, 0, 0, 8000, HOLDS_TREE, 0 },
		{ 82, 0, 0, 8000, HOLDS_TEMPLATE, 0 },           /* learnt */
		{ 82, 0, 0, 8000, HOLDS_TEMPLATE, 1 },
		{ 82, 1, 0, KEEP_BODY_BYTES, HOLDS_TEMPLATE, 1 },
		{ 82, 1, 0, KEEP_BODY_BYTES + 1, HOLDS_TEMPLATE, 1 },
		{ 82, 1, 0, KEEP_BODY_BYTES, HOLDS_TEMPLATE, 1 },
		{ 82, 1, 0, KEEP_BODY_BYTES + 1, HOLDS_TEMPLATE, 1 },
		{ 82, 1, 0, KEEP_BODY_BYTES + 300, HOLDS_TEMPLATE, 1 },
		{ 81, 1, 1, KEEP_BODY_BYTES + 1, HOLDS_NOTHING, 0 },
		{ 81, 1, 1, KEEP_BODY_BYTES + 1, HOLDS_NOTHING, 0 },
		{ 81, 1, 1, KEEP_BODY_BYTES, HOLDS_TREE, 0 },
		{ 81, 1, 1, KEEP_BODY_BYTES, HOLDS_TEMPLATE, 0 }, /* learnt */
		{ 81, 1, 1, KEEP_BODY_BYTES + 1, HOLDS_TEMPLATE, 1 },
	};
	(void)state;
	_Static_assert(10 + 3 * 82 == WMS__TEMPLATE_MAX_PUTS, "82 lines are the limit");
	run_keep_steps(steps, sizeof(steps) / sizeof(steps[0]));
}

static int setup(void **state)
{
	(void)state;
	schema = util_schema_load();
	return schema ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	xmlSchemaFree(schema);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(golden_envelopes),
		cmocka_unit_test(fifty_lines_in_order),
		cmocka_unit_test(maximum_sizes_validate),
		cmocka_unit_test(optional_fields),
		cmocka_unit_test(non_ascii_and_markup_survive),
		cmocka_unit_test(schema_rejects_contract_violations),
		cmocka_unit_test(builders_reject_bad_input),
		cmocka_unit_test(operation_names),
		cmocka_unit_test(every_failed_allocation),
		cmocka_unit_test(workspace_builds_the_same_bytes),
		cmocka_unit_test(workspace_headers),
		cmocka_unit_test(wsse_text_is_checked),
		cmocka_unit_test(workspace_failed_allocation),
		cmocka_unit_test(workspace_frame_survives_a_failed_save_context),
		cmocka_unit_test(workspace_template_is_used_up_to_its_limit),
		cmocka_unit_test(workspace_template_failed_allocation),
		cmocka_unit_test_teardown(workspace_keeps_envelopes_up_to_keep_body_bytes,
					  count_alloc_teardown),
		cmocka_unit_test_teardown(workspace_template_past_keep_body_bytes, count_alloc_teardown),
		cmocka_unit_test_teardown(workspace_template_escaped_past_keep_body_bytes,
					  count_alloc_teardown),
	};
	const char *r = getenv("WMS_REGENERATE_GOLDEN");
	regenerate = r && *r && strcmp(r, "0") != 0;
	util_xml_mem_install();
	return cmocka_run_group_tests(tests, setup, teardown);
}
