/* Request envelopes: golden bytes, schema validity of every Body payload
 * (wsdl/warehouse.xsd via xmlSchemaValidateOneElement), values surviving a
 * round trip, optional fields, limits, bad input and failed allocations.
 *
 * WMS_REGENERATE_GOLDEN=1 rewrites tests/soap/golden/ instead of comparing
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
#include "soap.h"
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
	snprintf(rel, sizeof(rel), "tests/soap/golden/%s", name);
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

static int setup(void **state)
{
	xmlSchemaParserCtxtPtr pc;
	(void)state;
	pc = xmlSchemaNewParserCtxt(util_source_path("wsdl/warehouse.xsd"));
	if (!pc)
		return -1;
	schema = xmlSchemaParse(pc);
	xmlSchemaFreeParserCtxt(pc);
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
	};
	const char *r = getenv("WMS_REGENERATE_GOLDEN");
	regenerate = r && *r && strcmp(r, "0") != 0;
	util_xml_mem_install();
	return cmocka_run_group_tests(tests, setup, teardown);
}
