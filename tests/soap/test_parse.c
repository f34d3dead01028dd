/* Reply parsing: replies from other stacks, faults, and every kind of bad
 * body (HTML, text, truncated, DOCTYPE/XXE/billion laughs, too large, wrong
 * operation, missing or invalid fields). Sample replies are files under
 * tests/data/soap/replies/{good,fault,bad}/, one table row each. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <dirent.h>
#include <cmocka.h>
#include <libxml/parser.h>
#include <libxml/xmlerror.h>
#include "soap/soap.h"
#include "util.h"

#define MAX (1024u * 1024u)
#define CANARY "CANARY-7f3a9c"

/* Everything one parse produced. */
typedef struct result {
	wms_status rc;
	wms_error err;
	union {
		wms_submit_reply submit;
		wms_status_reply status;
		wms_cancel_reply cancel;
		wms_stock_reply *stock;
	} out;
} result;

static void parse_bytes(result *r, wms__op op, const char *buf, size_t len, const char *ct,
			size_t max)
{
	memset(r, 0xA5, sizeof(*r)); /* the parser must set what it reports */
	wms_error_clear(&r->err);
	r->rc = wms__parse_reply(op, &r->out, buf, len, ct, max, &r->err);
	assert_int_equal(r->rc, r->err.status);
	assert_null(strchr(r->err.message, '\n'));
	if (r->rc != WMS_OK && r->rc != WMS_ERR_INVALID_ARG)
		assert_int_equal(r->err.delivery, WMS_DELIVERY_ANSWERED);
	if (op == WMS__OP_GET_STOCK_LEVEL && r->rc != WMS_OK)
		assert_null(r->out.stock);
}

static void parse_file(result *r, wms__op op, const char *file, const char *ct)
{
	char rel[256];
	size_t len;
	char *buf;
	snprintf(rel, sizeof(rel), "tests/data/soap/replies/%s", file);
	buf = util_read_source_file(rel, &len);
	parse_bytes(r, op, buf, len, ct, MAX);
	free(buf);
}

static void release(result *r, wms__op op)
{
	if (op == WMS__OP_GET_STOCK_LEVEL && r->rc == WMS_OK)
		wms_stock_reply_free(r->out.stock);
}

/* ---- checks for the table rows ---- */

static void c_submit_jaxws(const result *r)
{
	assert_string_equal(r->out.submit.order_id, "ORD-2024-0001");
	assert_string_equal(r->out.submit.wms_reference, "WMS:778899");
	assert_int_equal(r->out.submit.state, WMS_ORDER_STATE_RECEIVED);
	assert_int_equal(r->out.submit.duplicate, 0);
}

static void c_submit_env(const result *r)
{
	assert_string_equal(r->out.submit.order_id, "ORD-2024-0001");
	assert_string_equal(r->out.submit.wms_reference, "W-1");
	assert_int_equal(r->out.submit.state, WMS_ORDER_STATE_ALLOCATED);
	assert_int_equal(r->out.submit.duplicate, 1);
}

static void c_submit_unknown_state(const result *r)
{
	assert_int_equal(r->out.submit.state, WMS_ORDER_STATE_UNKNOWN);
	assert_string_equal(r->out.submit.wms_reference, "W-1");
}

static void c_submit_extras(const result *r)
{
	assert_string_equal(r->out.submit.order_id, "ORD-3");
	assert_string_equal(r->out.submit.wms_reference, "W-3");
	assert_int_equal(r->out.submit.state, WMS_ORDER_STATE_PACKED);
	assert_int_equal(r->out.submit.duplicate, 1);
}

static void c_status_iso(const result *r)
{
	assert_string_equal(r->out.status.order_id, "ORD-7");
	assert_string_equal(r->out.status.wms_reference, "R.7");
	assert_int_equal(r->out.status.state, WMS_ORDER_STATE_SHIPPED);
	assert_string_equal(r->out.status.updated_at, "2024-05-01T12:30:00.250+02:00");
}

static void c_status_bom(const result *r)
{
	assert_string_equal(r->out.status.order_id, "ORD-8");
	assert_string_equal(r->out.status.wms_reference, "R-8");
	assert_int_equal(r->out.status.state, WMS_ORDER_STATE_PICKING);
	assert_string_equal(r->out.status.updated_at, "2024-05-01T10:00:00Z");
}

static void c_cancel_cdata(const result *r)
{
	assert_string_equal(r->out.cancel.order_id, "ORD-9");
	assert_int_equal(r->out.cancel.state, WMS_ORDER_STATE_CANCELLED);
	assert_int_equal(r->out.cancel.already_cancelled, 1);
}

static void c_cancel_swapped(const result *r)
{
	assert_string_equal(r->out.cancel.order_id, "ORD-10");
	assert_int_equal(r->out.cancel.state, WMS_ORDER_STATE_CANCELLED);
	assert_int_equal(r->out.cancel.already_cancelled, 0);
}

static void c_stock_axis(const result *r)
{
	const wms_stock_reply *s = r->out.stock;
	assert_non_null(s);
	assert_int_equal(s->count, 3);
	assert_string_equal(s->levels[0].sku, "SKU-1");
	assert_true(s->levels[0].on_hand == 120 && s->levels[0].reserved == 20 &&
		    s->levels[0].available == 100);
	assert_string_equal(s->levels[1].sku, "SKU-2");
	assert_true(s->levels[1].on_hand == INT64_MAX && s->levels[1].reserved == 0 &&
		    s->levels[1].available == INT64_MAX);
	assert_string_equal(s->levels[2].sku, "SKU-3");
	assert_true(s->levels[2].on_hand == 0 && s->levels[2].reserved == 5 &&
		    s->levels[2].available == INT64_MIN);
}

static void c_stock_utf16(const result *r)
{
	const wms_stock_reply *s = r->out.stock;
	assert_non_null(s);
	assert_int_equal(s->count, 1);
	assert_string_equal(s->levels[0].sku, "SKU-\xc3\xa9"); /* decoded to UTF-8 */
	assert_true(s->levels[0].on_hand == 7 && s->levels[0].reserved == 2 &&
		    s->levels[0].available == 5);
}

static void fault_is(const result *r, const char *code, const char *text, const char *wms_code)
{
	assert_string_equal(r->err.fault_code, code);
	assert_string_equal(r->err.fault_string, text);
	assert_string_equal(r->err.wms_code, wms_code);
}

static void c_fault_overloaded(const result *r)
{
	fault_is(r, "Server.Overloaded", "Warehouse is busy, try again later", "OVERLOADED");
	assert_string_equal(r->err.message,
			    "SOAP fault Server.Overloaded: Warehouse is busy, try again later [OVERLOADED]");
	assert_true(wms_error_is_retryable(&r->err));
}

static void c_fault_unknown_sku(const result *r)
{
	fault_is(r, "Client", "Unknown SKU: SKU-404", "UNKNOWN_SKU");
	assert_false(wms_error_is_retryable(&r->err));
}

static void c_fault_no_detail(const result *r)
{
	fault_is(r, "Server", "java.lang.NullPointerException", "");
	assert_string_equal(r->err.message, "SOAP fault Server: java.lang.NullPointerException");
}

static void c_fault12_subcode(const result *r)
{
	fault_is(r, "Receiver", "Internal warehouse error", "INTERNAL"); /* en-GB over fr */
	assert_string_equal(r->err.message,
			    "SOAP fault Receiver (Internal): Internal warehouse error [INTERNAL]");
}

static void c_fault12_sender(const result *r)
{
	fault_is(r, "Sender", "Ung\xc3\xbcltige Anfrage", "");
	assert_false(wms_error_is_retryable(&r->err));
}

/* node-soap's default: the detail unqualified */
static void c_fault_node_soap(const result *r)
{
	fault_is(r, "Client", "Unknown SKU: SKU-404", "UNKNOWN_SKU");
}

static void c_fault12_node_soap(const result *r)
{
	fault_is(r, "Sender", "SKU-404 is not stocked", "UNKNOWN_SKU"); /* empty Reason: the message */
}

static void c_fault_latin1(const result *r)
{
	fault_is(r, "Client", "Commande refus\xc3\xa9" "e : entrep\xc3\xb4t ferm\xc3\xa9",
		 "NOT_CANCELLABLE");
}

static void c_fault_latin1_header(const result *r)
{
	fault_is(r, "Client", "Commande refus\xc3\xa9" "e : entrep\xc3\xb4t ferm\xc3\xa9", "");
}

typedef struct reply_case {
	const char *file; /* under tests/data/soap/replies/ */
	wms__op op;
	const char *content_type;
	wms_status status;
	const char *message; /* expected substring of err.message, or NULL */
	void (*check)(const result *r);
} reply_case;

#define SUBMIT WMS__OP_SUBMIT_ORDER
#define STATUS WMS__OP_GET_ORDER_STATUS
#define CANCEL WMS__OP_CANCEL_ORDER
#define STOCK WMS__OP_GET_STOCK_LEVEL
#define XML11 "text/xml; charset=utf-8"
#define XML12 "application/soap+xml; charset=utf-8"
#define WH "{urn:libwms:warehouse:1}"

static const reply_case cases[] = {
	/* good replies from other stacks */
	{ "good/submit_order_soap11_jaxws.xml", SUBMIT, XML11, WMS_OK, NULL, c_submit_jaxws },
	{ "good/submit_order_soap11_jaxws.xml", SUBMIT, "text/html", WMS_OK, NULL, c_submit_jaxws },
	{ "good/submit_order_soap12_env.xml", SUBMIT, XML12, WMS_OK, NULL, c_submit_env },
	{ "good/submit_order_unknown_state.xml", SUBMIT, NULL, WMS_OK, NULL, c_submit_unknown_state },
	{ "good/get_order_status_soap11_iso8859.xml", STATUS, "text/xml", WMS_OK, NULL, c_status_iso },
	/* the BOM wins over a wrong charset in the header */
	{ "good/get_order_status_soap12_bom.xml", STATUS, "application/soap+xml; charset=ISO-8859-1",
	  WMS_OK, NULL, c_status_bom },
	{ "good/cancel_order_soap11_cdata.xml", CANCEL, XML11, WMS_OK, NULL, c_cancel_cdata },
	{ "good/cancel_order_soap12_swapped_prefixes.xml", CANCEL, XML12, WMS_OK, NULL,
	  c_cancel_swapped },
	{ "good/get_stock_level_soap11_axis.xml", STOCK, XML11, WMS_OK, NULL, c_stock_axis },
	{ "good/get_stock_level_soap12_utf16.xml", STOCK, "application/soap+xml", WMS_OK, NULL,
	  c_stock_utf16 },
	{ "bad/wrong_operation.xml", CANCEL, XML11, WMS_OK, NULL, NULL },
	/* a Header, comments and whitespace anywhere, unknown and foreign
	 * elements (even repeated, even named like ours): all still read */
	{ "good/submit_order_soap11_extras.xml", SUBMIT, XML11, WMS_OK, NULL, c_submit_extras },

	/* faults: any operation */
	{ "fault/soap11_server_overloaded.xml", SUBMIT, XML11, WMS_ERR_SOAP_FAULT, NULL,
	  c_fault_overloaded },
	{ "fault/soap11_client_unknown_sku.xml", STOCK, XML11, WMS_ERR_SOAP_FAULT,
	  "SOAP fault Client: Unknown SKU: SKU-404 [UNKNOWN_SKU]", c_fault_unknown_sku },
	{ "fault/soap11_no_detail.xml", STATUS, XML11, WMS_ERR_SOAP_FAULT, NULL, c_fault_no_detail },
	{ "fault/soap12_receiver_subcode.xml", CANCEL, XML12, WMS_ERR_SOAP_FAULT, NULL,
	  c_fault12_subcode },
	{ "fault/soap12_sender_no_detail.xml", SUBMIT, XML12, WMS_ERR_SOAP_FAULT,
	  "SOAP fault Sender: Ung", c_fault12_sender },
	{ "fault/soap11_unqualified_detail_node_soap.xml", STOCK, XML11, WMS_ERR_SOAP_FAULT,
	  "SOAP fault Client: Unknown SKU: SKU-404 [UNKNOWN_SKU]", c_fault_node_soap },
	{ "fault/soap12_unqualified_detail_node_soap.xml", STOCK, XML12, WMS_ERR_SOAP_FAULT, NULL,
	  c_fault12_node_soap },
	{ "fault/soap11_iso8859.xml", CANCEL, "text/xml", WMS_ERR_SOAP_FAULT, NULL, c_fault_latin1 },
	{ "fault/soap11_latin1_charset_in_header.xml", CANCEL, "text/xml; charset=ISO-8859-1",
	  WMS_ERR_SOAP_FAULT, NULL, c_fault_latin1_header },
	{ "fault/soap11_latin1_charset_in_header.xml", CANCEL, "text/xml;Charset=\"iso-8859-1\"",
	  WMS_ERR_SOAP_FAULT, NULL, c_fault_latin1_header },
	/* without the header's charset the same bytes are not UTF-8 */
	{ "fault/soap11_latin1_charset_in_header.xml", CANCEL, "text/xml", WMS_ERR_NOT_XML,
	  "reply is not well-formed XML: Input is not proper UTF-8", NULL },
	/* a charset libxml2 does not know is ignored */
	{ "fault/soap11_no_detail.xml", STATUS, "text/xml; charset=x-klingon", WMS_ERR_SOAP_FAULT,
	  NULL, c_fault_no_detail },

	/* not XML */
	{ "bad/html_502_nginx.html", SUBMIT, "text/html", WMS_ERR_NOT_XML,
	  "reply is an HTML page, not XML", NULL },
	{ "bad/html_502_nginx.html", SUBMIT, NULL, WMS_ERR_NOT_XML, "HTML page", NULL },
	{ "bad/html5_503.html", STATUS, NULL, WMS_ERR_NOT_XML, "HTML page", NULL },
	{ "bad/xhtml_wellformed.html", CANCEL, "text/html; charset=utf-8", WMS_ERR_NOT_XML,
	  "HTML page", NULL },
	{ "bad/xhtml_wellformed.html", CANCEL, "application/xhtml+xml", WMS_ERR_NOT_XML,
	  "reply is an HTML page", NULL },
	{ "bad/plain_text.txt", SUBMIT, "text/plain", WMS_ERR_NOT_XML,
	  "reply is not XML (starts with \"Service Unavailable.\")", NULL },
	{ "bad/gzip_body.bin", SUBMIT, XML11, WMS_ERR_NOT_XML, "reply is not XML", NULL },
	{ "bad/tag_mismatch.xml", SUBMIT, XML11, WMS_ERR_NOT_XML,
	  "reply is not well-formed XML: Opening and ending tag mismatch", NULL },
	{ "bad/undefined_entity.xml", SUBMIT, XML11, WMS_ERR_NOT_XML, "Entity 'nbsp' not defined",
	  NULL },
	{ "bad/trailing_garbage.xml", SUBMIT, XML11, WMS_ERR_NOT_XML, "Extra content", NULL },
	{ "bad/shift_jis_undecodable.xml", SUBMIT, XML11, WMS_ERR_NOT_XML, NULL, NULL },
	/* libxml2's US-ASCII decoder stops at a byte past 0x7F without a word:
	 * still a decoding error, not a reply that ends early */
	{ "bad/us_ascii_declared_utf8_bytes.xml", SUBMIT, XML11, WMS_ERR_NOT_XML,
	  "reply is not XML: its characters do not decode", NULL },
	{ "bad/reference_with_space.xml", SUBMIT, "text/xml; charset=us-ascii", WMS_ERR_UNEXPECTED_REPLY,
	  "SubmitOrderResponse/wmsReference: invalid identifier \"W 1\"", NULL },
	{ "bad/reference_too_long.xml", SUBMIT, "text/xml; charset=US-ASCII", WMS_ERR_UNEXPECTED_REPLY,
	  "SubmitOrderResponse/wmsReference: value longer than 64 bytes", NULL },
	{ "fault/soap12_sender_no_detail.xml", SUBMIT, "text/xml; charset=us-ascii", WMS_ERR_NOT_XML,
	  "reply is not XML: its characters do not decode", NULL },
	/* a byte order mark and an XML declaration that disagree */
	{ "bad/bom_utf8_declared_latin1.xml", SUBMIT, XML11, WMS_ERR_NOT_XML,
	  "reply is not well-formed XML: a UTF-8 byte order mark, but the XML declaration says "
	  "encoding \"ISO-8859-1\"", NULL },
	{ "bad/bom_utf16_declared_utf8.xml", SUBMIT, XML11, WMS_ERR_NOT_XML,
	  "reply is not well-formed XML: a UTF-16LE byte order mark, but the XML declaration says "
	  "encoding \"UTF-8\"", NULL },
	{ "bad/bom_utf16be_declared_utf16le.xml", SUBMIT, XML11, WMS_ERR_NOT_XML,
	  "reply is not well-formed XML: a UTF-16BE byte order mark, but the XML declaration says "
	  "encoding \"UTF-16LE\"", NULL },
	{ "bad/undeclared_prefix.xml", SUBMIT, XML11, WMS_ERR_NOT_XML,
	  "reply is not namespace-well-formed XML: Namespace prefix soap on Envelope is not defined",
	  NULL },
	/* an unparseable text/html body is an error page, whatever broke it */
	{ "bad/tag_mismatch.xml", SUBMIT, "text/html", WMS_ERR_NOT_XML, "(text/html)", NULL },

	/* refused */
	{ "bad/billion_laughs.xml", SUBMIT, XML11, WMS_ERR_UNSAFE_XML, "DOCTYPE", NULL },
	{ "bad/doctype_internal_only.xml", CANCEL, XML11, WMS_ERR_UNSAFE_XML, "DOCTYPE", NULL },

	/* well-formed, but not this operation's reply */
	{ "bad/not_soap.xml", SUBMIT, XML11, WMS_ERR_UNEXPECTED_REPLY,
	  "expected a SOAP 1.1 or 1.2 Envelope, found " WH "order", NULL },
	{ "bad/envelope_wrong_ns.xml", SUBMIT, XML11, WMS_ERR_UNEXPECTED_REPLY,
	  "found {http://schemas.xmlsoap.org/soap/envelope}Envelope", NULL },
	{ "bad/envelope_no_body.xml", SUBMIT, XML11, WMS_ERR_UNEXPECTED_REPLY,
	  "expected {http://schemas.xmlsoap.org/soap/envelope/}Body in the SOAP Envelope, found nothing",
	  NULL },
	{ "bad/envelope_empty_body.xml", STATUS, XML11, WMS_ERR_UNEXPECTED_REPLY,
	  "expected " WH "GetOrderStatusResponse in the SOAP Body, found an empty Body", NULL },
	{ "bad/wrong_operation.xml", SUBMIT, XML11, WMS_ERR_UNEXPECTED_REPLY,
	  "expected " WH "SubmitOrderResponse in the SOAP Body, found " WH "CancelOrderResponse", NULL },
	{ "good/get_stock_level_soap11_axis.xml", STATUS, XML11, WMS_ERR_UNEXPECTED_REPLY,
	  "found " WH "GetStockLevelResponse", NULL },
	{ "bad/response_wrong_ns.xml", SUBMIT, XML11, WMS_ERR_UNEXPECTED_REPLY,
	  "found {urn:libwms:warehouse:2}SubmitOrderResponse", NULL },
	{ "bad/unqualified_children.xml", SUBMIT, XML11, WMS_ERR_UNEXPECTED_REPLY,
	  "SubmitOrderResponse: missing " WH "clientOrderId", NULL },
	{ "bad/missing_wms_reference.xml", SUBMIT, XML11, WMS_ERR_UNEXPECTED_REPLY,
	  "SubmitOrderResponse: missing " WH "wmsReference", NULL },
	{ "bad/invalid_state.xml", SUBMIT, XML11, WMS_ERR_UNEXPECTED_REPLY,
	  "SubmitOrderResponse/state: invalid value \"shipped!\"", NULL },
	{ "bad/empty_state.xml", SUBMIT, XML11, WMS_ERR_UNEXPECTED_REPLY,
	  "SubmitOrderResponse/state: empty", NULL },
	{ "bad/reference_too_long.xml", SUBMIT, XML11, WMS_ERR_UNEXPECTED_REPLY,
	  "SubmitOrderResponse/wmsReference: value longer than 64 bytes", NULL },
	{ "bad/reference_with_space.xml", SUBMIT, XML11, WMS_ERR_UNEXPECTED_REPLY,
	  "SubmitOrderResponse/wmsReference: invalid identifier \"W 1\"", NULL },
	{ "bad/reference_has_children.xml", SUBMIT, XML11, WMS_ERR_UNEXPECTED_REPLY,
	  "SubmitOrderResponse/wmsReference: expected text, found child elements", NULL },
	{ "bad/bad_boolean.xml", SUBMIT, XML11, WMS_ERR_UNEXPECTED_REPLY,
	  "SubmitOrderResponse/duplicate: not an xs:boolean (\"yes\")", NULL },
	{ "bad/status_bad_datetime.xml", STATUS, XML11, WMS_ERR_UNEXPECTED_REPLY,
	  "GetOrderStatusResponse/updatedAt: not an xs:dateTime (\"yesterday at noon\")", NULL },
	{ "bad/stock_no_levels.xml", STOCK, XML11, WMS_ERR_UNEXPECTED_REPLY,
	  "GetStockLevelResponse: missing " WH "level", NULL },
	{ "bad/stock_bad_long.xml", STOCK, XML11, WMS_ERR_UNEXPECTED_REPLY,
	  "GetStockLevelResponse/level[1]/onHand: not an xs:long (\"12x\")", NULL },
	{ "bad/stock_long_overflow.xml", STOCK, XML11, WMS_ERR_UNEXPECTED_REPLY,
	  "GetStockLevelResponse/level[0]/onHand: not an xs:long (\"9223372036854775808\")", NULL },
	{ "bad/status_datetime_out_of_range.xml", STATUS, XML11, WMS_ERR_UNEXPECTED_REPLY,
	  "GetOrderStatusResponse/updatedAt: month out of range (\"2024-13-45T99:99:99Z\")", NULL },
	{ "bad/status_datetime_february_30.xml", STATUS, XML11, WMS_ERR_UNEXPECTED_REPLY,
	  "GetOrderStatusResponse/updatedAt: day out of range (\"2024-02-30T10:00:00Z\")", NULL },

	/* ambiguous: a value the schema allows once given twice, a second
	 * Body, anything after the Body, the other SOAP version's Fault */
	{ "bad/duplicate_state.xml", SUBMIT, XML11, WMS_ERR_UNEXPECTED_REPLY,
	  "SubmitOrderResponse/state: repeated, the schema allows one", NULL },
	{ "bad/duplicate_client_order_id.xml", SUBMIT, XML11, WMS_ERR_UNEXPECTED_REPLY,
	  "SubmitOrderResponse/clientOrderId: repeated, the schema allows one", NULL },
	{ "bad/duplicate_already_cancelled.xml", CANCEL, XML11, WMS_ERR_UNEXPECTED_REPLY,
	  "CancelOrderResponse/alreadyCancelled: repeated, the schema allows one", NULL },
	{ "bad/status_duplicate_updated_at.xml", STATUS, XML11, WMS_ERR_UNEXPECTED_REPLY,
	  "GetOrderStatusResponse/updatedAt: repeated, the schema allows one", NULL },
	{ "bad/stock_duplicate_on_hand.xml", STOCK, XML11, WMS_ERR_UNEXPECTED_REPLY,
	  "GetStockLevelResponse/level[1]/onHand: repeated, the schema allows one", NULL },
	{ "bad/envelope_two_bodies.xml", SUBMIT, XML11, WMS_ERR_UNEXPECTED_REPLY,
	  "Envelope/Body: repeated, SOAP allows one", NULL },
	{ "bad/envelope_element_after_body.xml", SUBMIT, XML11, WMS_ERR_UNEXPECTED_REPLY,
	  "Envelope: {urn:example:trailer}Trailer after the Body, which must come last", NULL },
	{ "bad/soap12_fault_in_soap11_envelope.xml", SUBMIT, XML11, WMS_ERR_UNEXPECTED_REPLY,
	  "Body/Fault: a SOAP 1.2 {http://www.w3.org/2003/05/soap-envelope}Fault in a SOAP 1.1 "
	  "Envelope", NULL },
	{ "bad/soap11_fault_in_soap12_envelope.xml", STATUS, XML12, WMS_ERR_UNEXPECTED_REPLY,
	  "Body/Fault: a SOAP 1.1 {http://schemas.xmlsoap.org/soap/envelope/}Fault in a SOAP 1.2 "
	  "Envelope", NULL },
};

static void reply_file(void **state)
{
	const reply_case *c = *state;
	result r;
	parse_file(&r, c->op, c->file, c->content_type);
	if (r.rc != c->status)
		fail_msg("%s: expected %s, got %s: %s", c->file, wms_status_name(c->status),
			 wms_status_name(r.rc), r.err.message);
	if (c->message && !strstr(r.err.message, c->message))
		fail_msg("%s: message \"%s\" lacks \"%s\"", c->file, r.err.message, c->message);
	if (c->status == WMS_OK)
		assert_string_equal(r.err.message, "");
	if (c->check)
		c->check(&r);
	release(&r, c->op);
}

/* ---- programmatic cases ---- */

static void empty_and_whitespace_bodies(void **state)
{
	result r;
	(void)state;
	parse_bytes(&r, SUBMIT, "", 0, XML11, MAX);
	assert_int_equal(r.rc, WMS_ERR_NOT_XML);
	assert_string_equal(r.err.message, "reply body is empty");
	parse_bytes(&r, SUBMIT, NULL, 0, NULL, MAX);
	assert_int_equal(r.rc, WMS_ERR_NOT_XML);
	parse_bytes(&r, SUBMIT, " \r\n\t ", 5, XML11, MAX);
	assert_int_equal(r.rc, WMS_ERR_NOT_XML);
	assert_string_equal(r.err.message, "reply body is empty");
	parse_bytes(&r, SUBMIT, "\xef\xbb\xbf\n", 4, XML11, MAX);
	assert_int_equal(r.rc, WMS_ERR_NOT_XML);
	parse_bytes(&r, SUBMIT, NULL, 3, XML11, MAX);
	assert_int_equal(r.rc, WMS_ERR_INVALID_ARG);
	parse_bytes(&r, SUBMIT, "<a/>\0<b/>", 9, XML11, MAX); /* a NUL inside */
	assert_int_equal(r.rc, WMS_ERR_NOT_XML);
}

static void size_limit(void **state)
{
	size_t len;
	char *buf = util_read_source_file("tests/data/soap/replies/good/submit_order_soap12_env.xml", &len);
	result r;
	(void)state;
	parse_bytes(&r, SUBMIT, buf, len, XML12, len - 1);
	assert_int_equal(r.rc, WMS_ERR_TOO_LARGE);
	{
		char want[96];
		snprintf(want, sizeof(want), "reply is %zu bytes, over the %zu-byte limit", len, len - 1);
		assert_string_equal(r.err.message, want);
	}
	parse_bytes(&r, SUBMIT, buf, len, XML12, len);
	assert_int_equal(r.rc, WMS_OK);
	parse_bytes(&r, SUBMIT, buf, len, XML12, 0); /* 0: the default limit */
	assert_int_equal(r.rc, WMS_OK);
	/* checked before anything is looked at */
	parse_bytes(&r, SUBMIT, "not xml at all", 14, XML12, 4);
	assert_int_equal(r.rc, WMS_ERR_TOO_LARGE);
	free(buf);
}

/* Cut each reply at every byte up to its last '>': always TRUNCATED (or
 * NOT_XML while there is nothing but a BOM/whitespace), never anything
 * else, never a crash. */
static void truncated_at_every_cut(void **state)
{
	static const struct {
		const char *file;
		wms__op op;
	} files[] = {
		{ "good/submit_order_soap11_jaxws.xml", SUBMIT },
		{ "good/get_order_status_soap11_iso8859.xml", STATUS },
		{ "good/get_order_status_soap12_bom.xml", STATUS },
		{ "good/cancel_order_soap11_cdata.xml", CANCEL },
		{ "good/get_stock_level_soap12_utf16.xml", STOCK },
		{ "fault/soap12_receiver_subcode.xml", CANCEL }, /* multi-byte UTF-8 in it */
		{ "fault/soap11_server_overloaded.xml", SUBMIT },
	};
	size_t f, step = util_under_valgrind() ? 5 : 1;
	long truncated = 0;
	(void)state;

	for (f = 0; f < sizeof(files) / sizeof(files[0]); f++) {
		char rel[256];
		size_t len, cut, end, first;
		char *buf;
		snprintf(rel, sizeof(rel), "tests/data/soap/replies/%s", files[f].file);
		buf = util_read_source_file(rel, &len);
		for (end = len; end && buf[end - 1] != '>'; end--)
			;
		first = strcspn(buf, "<"); /* bytes before the first '<' */
		for (cut = 1; cut < end; cut += step) {
			result r;
			parse_bytes(&r, files[f].op, buf, cut, XML11, MAX);
			if (cut <= first && r.rc == WMS_ERR_NOT_XML)
				continue;
			if (r.rc != WMS_ERR_TRUNCATED)
				fail_msg("%s cut at %zu of %zu: %s: %s", files[f].file, cut, len,
					 wms_status_name(r.rc), r.err.message);
			assert_non_null(strstr(r.err.message, "reply ends early: "));
			truncated++;
		}
		free(buf);
	}
	assert_true(truncated > 500);
}

/* A SubmitOrder reply as `enc` (utf-8, utf-16le, utf-16be), with `bom`
 * bytes first and an XML declaration naming `decl` (NULL: none). */
static size_t encoded_reply(char *dst, size_t size, const char *bom, const char *decl,
			    const char *enc)
{
	char text[1024];
	size_t n, i, len = strlen(bom);
	snprintf(text, sizeof(text),
		 "%s%s%s<soap:Envelope xmlns:soap=\"" WMS__SOAP11_NS "\"><soap:Body>"
		 "<SubmitOrderResponse xmlns=\"" WMS__NS "\"><clientOrderId>ORD-1</clientOrderId>"
		 "<wmsReference>W-1</wmsReference><state>RECEIVED</state><duplicate>0</duplicate>"
		 "</SubmitOrderResponse></soap:Body></soap:Envelope>",
		 decl ? "<?xml version=\"1.0\" encoding=\"" : "", decl ? decl : "",
		 decl ? "\"?>\n" : "");
	n = strlen(text);
	assert_true(len + 2 * n <= size);
	memcpy(dst, bom, len);
	for (i = 0; i < n; i++) {
		if (!strcmp(enc, "utf-8")) {
			dst[len++] = text[i];
		} else if (!strcmp(enc, "utf-16le")) {
			dst[len++] = text[i];
			dst[len++] = '\0';
		} else {
			dst[len++] = '\0';
			dst[len++] = text[i];
		}
	}
	return len;
}

/* XML 1.0 4.3.3 / Appendix F: a declaration naming another encoding than
 * the byte order mark's is a fatal error; the same encoding, in any case
 * and either of libxml2's spellings, is fine. */
static void bom_and_declaration(void **state)
{
	static const struct {
		const char *bom, *decl, *enc;
		wms_status want;
	} rows[] = {
		{ "\xef\xbb\xbf", "UTF-8", "utf-8", WMS_OK },
		{ "\xef\xbb\xbf", "utf-8", "utf-8", WMS_OK },
		{ "\xef\xbb\xbf", "Utf-8", "utf-8", WMS_OK },
		{ "\xef\xbb\xbf", "UTF8", "utf-8", WMS_OK },
		{ "\xef\xbb\xbf", NULL, "utf-8", WMS_OK },
		{ "\xef\xbb\xbf", "ISO-8859-1", "utf-8", WMS_ERR_NOT_XML },
		{ "\xef\xbb\xbf", "US-ASCII", "utf-8", WMS_ERR_NOT_XML },
		{ "\xef\xbb\xbf", "windows-1252", "utf-8", WMS_ERR_NOT_XML },
		{ "\xef\xbb\xbf", "UTF-16", "utf-8", WMS_ERR_NOT_XML },
		{ "\xff\xfe", "UTF-16", "utf-16le", WMS_OK },
		{ "\xff\xfe", "utf-16", "utf-16le", WMS_OK },
		{ "\xff\xfe", "UTF-16LE", "utf-16le", WMS_OK },
		{ "\xff\xfe", NULL, "utf-16le", WMS_OK },
		{ "\xff\xfe", "UTF-16BE", "utf-16le", WMS_ERR_NOT_XML },
		{ "\xff\xfe", "UTF-8", "utf-16le", WMS_ERR_NOT_XML },
		{ "\xff\xfe", "ISO-8859-1", "utf-16le", WMS_ERR_NOT_XML },
		{ "\xfe\xff", "UTF-16", "utf-16be", WMS_OK },
		{ "\xfe\xff", "utf-16be", "utf-16be", WMS_OK },
		{ "\xfe\xff", "UTF-16LE", "utf-16be", WMS_ERR_NOT_XML },
		{ "\xfe\xff", "UTF-8", "utf-16be", WMS_ERR_NOT_XML },
		/* no BOM: the declaration decides, as before */
		{ "", "ISO-8859-1", "utf-8", WMS_OK },
		{ "", "US-ASCII", "utf-8", WMS_OK },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		char buf[2048], want[160];
		size_t len = encoded_reply(buf, sizeof(buf), rows[i].bom, rows[i].decl, rows[i].enc);
		result r;
		/* the header's charset is never what decides here */
		parse_bytes(&r, SUBMIT, buf, len, "text/xml; charset=iso-8859-1", MAX);
		if (r.rc != rows[i].want)
			fail_msg("row %zu (%s): %s: %s", i, rows[i].decl ? rows[i].decl : "no declaration",
				 wms_status_name(r.rc), r.err.message);
		if (r.rc == WMS_OK) {
			assert_string_equal(r.out.submit.wms_reference, "W-1");
		} else if (*rows[i].bom) {
			snprintf(want, sizeof(want),
				 "reply is not well-formed XML: a %s byte order mark, but the XML "
				 "declaration says encoding \"%s\"",
				 !strcmp(rows[i].enc, "utf-8") ? "UTF-8" :
				 !strcmp(rows[i].enc, "utf-16le") ? "UTF-16LE" : "UTF-16BE",
				 rows[i].decl);
			assert_string_equal(r.err.message, want);
		}
	}
}

/* A decoding error is no truncation, wherever the undecodable byte is; an
 * ASCII body cut short under US-ASCII still ends early. */
static void us_ascii_decoding(void **state)
{
	static const char ok[] =
		"<soap:Envelope xmlns:soap=\"" WMS__SOAP11_NS "\"><soap:Body>"
		"<SubmitOrderResponse xmlns=\"" WMS__NS "\"><clientOrderId>ORD-1</clientOrderId>"
		"<wmsReference>W-1</wmsReference><state>RECEIVED</state><duplicate>0</duplicate>"
		"</SubmitOrderResponse></soap:Body></soap:Envelope>";
	char buf[1024];
	result r;
	(void)state;
	parse_bytes(&r, SUBMIT, ok, strlen(ok), "text/xml; charset=us-ascii", MAX);
	assert_int_equal(r.rc, WMS_OK);
	/* after the root element, where the parser never looks for more */
	snprintf(buf, sizeof(buf), "%s<!-- \xc3\xa9 -->", ok);
	parse_bytes(&r, SUBMIT, buf, strlen(buf), "text/xml; charset=us-ascii", MAX);
	assert_int_equal(r.rc, WMS_ERR_NOT_XML);
	assert_non_null(strstr(r.err.message, "its characters do not decode"));
	snprintf(buf, sizeof(buf), "<?xml version=\"1.0\" encoding=\"ascii\"?>%s\x80", ok);
	parse_bytes(&r, SUBMIT, buf, strlen(buf), NULL, MAX);
	assert_int_equal(r.rc, WMS_ERR_NOT_XML);
	assert_non_null(strstr(r.err.message, "its characters do not decode"));
	/* a cut is still a cut */
	parse_bytes(&r, SUBMIT, ok, strlen(ok) - 10, "text/xml; charset=us-ascii", MAX);
	assert_int_equal(r.rc, WMS_ERR_TRUNCATED);
	snprintf(buf, sizeof(buf), "<?xml version=\"1.0\" encoding=\"US-ASCII\"?>%s", ok);
	parse_bytes(&r, SUBMIT, buf, strlen(buf) - 10, NULL, MAX);
	assert_int_equal(r.rc, WMS_ERR_TRUNCATED);
}

/* After the Body: no element (a Header, a second Body, the other SOAP
 * version's Body), while text, comments and processing instructions are
 * still nothing. Before it, Headers as ever. */
static void envelope_after_body(void **state)
{
	static const struct {
		const char *ns, *before, *after;
		wms_status want;
		const char *message;
	} rows[] = {
		{ WMS__SOAP11_NS, "", "\n  <!-- done -->\n  <?pi x?>\n", WMS_OK, "" },
		{ WMS__SOAP12_NS, "<s:Header/>\n<s:Header><h xmlns=\"urn:h\"/></s:Header>", " ", WMS_OK,
		  "" },
		{ WMS__SOAP11_NS, "", "<s:Header/>", WMS_ERR_UNEXPECTED_REPLY,
		  "Envelope: {" WMS__SOAP11_NS "}Header after the Body, which must come last" },
		{ WMS__SOAP12_NS, "", "<!-- x --><s:Body/>", WMS_ERR_UNEXPECTED_REPLY,
		  "Envelope/Body: repeated, SOAP allows one" },
		{ WMS__SOAP11_NS, "", "<b:Body xmlns:b=\"" WMS__SOAP12_NS "\"/>", WMS_ERR_UNEXPECTED_REPLY,
		  "Envelope: {" WMS__SOAP12_NS "}Body after the Body, which must come last" },
		{ WMS__SOAP11_NS, "", "<Body/>", WMS_ERR_UNEXPECTED_REPLY,
		  "Envelope: {}Body after the Body, which must come last" },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		char buf[1024];
		result r;
		snprintf(buf, sizeof(buf),
			 "<s:Envelope xmlns:s=\"%s\">%s<s:Body><SubmitOrderResponse xmlns=\"" WMS__NS "\">"
			 "<clientOrderId>ORD-1</clientOrderId><wmsReference>W-1</wmsReference>"
			 "<state>RECEIVED</state><duplicate>0</duplicate></SubmitOrderResponse></s:Body>"
			 "%s</s:Envelope>",
			 rows[i].ns, rows[i].before, rows[i].after);
		parse_bytes(&r, SUBMIT, buf, strlen(buf), XML11, MAX);
		if (r.rc != rows[i].want || strcmp(r.err.message, rows[i].message) != 0)
			fail_msg("row %zu: %s: \"%s\", expected \"%s\"", i, wms_status_name(r.rc),
				 r.err.message, rows[i].message);
	}
}

/* updatedAt within xs:dateTime's ranges, and not past them. */
static void datetime_ranges(void **state)
{
	static const char *const good[] = {
		"2024-05-01T10:00:00Z", "2024-02-29T23:59:59Z", "2000-02-29T00:00:00Z",
		"2023-01-31T00:00:00", "2023-04-30T12:00:00.5", "2023-12-31T24:00:00Z",
		"2023-12-31T24:00:00.000+01:00", "2024-05-01T12:30:00.250+14:00",
		"2024-05-01T12:30:59.999999-14:00", "2024-05-01T12:30:00-09:59", "0001-01-01T00:00:00Z",
		"-0044-03-15T12:00:00Z", "12024-01-01T00:00:00Z", "2400-02-29T00:00:00Z",
	};
	static const struct {
		const char *v, *why;
	} bad[] = {
		{ "2024-13-45T99:99:99Z", "month" }, { "2024-00-01T00:00:00Z", "month" },
		{ "2024-01-00T00:00:00Z", "day" }, { "2024-01-32T00:00:00Z", "day" },
		{ "2024-04-31T00:00:00Z", "day" }, { "2023-02-29T00:00:00Z", "day" },
		{ "1900-02-29T00:00:00Z", "day" }, { "2100-02-29T00:00:00Z", "day" },
		{ "2024-02-30T00:00:00Z", "day" }, { "2024-05-01T25:00:00Z", "hour" },
		{ "2024-05-01T24:00:01Z", "hour" }, { "2024-05-01T24:01:00Z", "hour" },
		{ "2024-05-01T24:00:00.001Z", "hour" }, { "2024-05-01T99:00:00Z", "hour" },
		{ "2024-05-01T10:60:00Z", "minute" }, { "2024-05-01T10:00:60Z", "second" },
		{ "2024-05-01T10:00:99.5Z", "second" }, { "0000-01-01T00:00:00Z", "year" },
		{ "-0000-01-01T00:00:00Z", "year" }, { "02024-01-01T00:00:00Z", "year" },
		{ "2024-05-01T10:00:00+15:00", "time zone" },
		{ "2024-05-01T10:00:00+14:30", "time zone" },
		{ "2024-05-01T10:00:00-05:60", "time zone" },
	};
	size_t i;
	(void)state;
	for (i = 0; i < sizeof(good) / sizeof(good[0]) + sizeof(bad) / sizeof(bad[0]); i++) {
		int ok = i < sizeof(good) / sizeof(good[0]);
		const char *v = ok ? good[i] : bad[i - sizeof(good) / sizeof(good[0])].v;
		char buf[1024], want[160];
		result r;
		snprintf(buf, sizeof(buf),
			 "<soap:Envelope xmlns:soap=\"" WMS__SOAP11_NS "\"><soap:Body>"
			 "<GetOrderStatusResponse xmlns=\"" WMS__NS "\"><clientOrderId>ORD-1</clientOrderId>"
			 "<wmsReference>W-1</wmsReference><state>PACKED</state>"
			 "<updatedAt> %s </updatedAt></GetOrderStatusResponse></soap:Body></soap:Envelope>",
			 v);
		parse_bytes(&r, STATUS, buf, strlen(buf), XML11, MAX);
		if (ok) {
			if (r.rc != WMS_OK)
				fail_msg("%s: %s: %s", v, wms_status_name(r.rc), r.err.message);
			assert_string_equal(r.out.status.updated_at, v);
			continue;
		}
		snprintf(want, sizeof(want), "GetOrderStatusResponse/updatedAt: %s out of range (\"%s\")",
			 bad[i - sizeof(good) / sizeof(good[0])].why, v);
		if (r.rc != WMS_ERR_UNEXPECTED_REPLY || strcmp(r.err.message, want) != 0)
			fail_msg("%s: %s: \"%s\", expected \"%s\"", v, wms_status_name(r.rc),
				 r.err.message, want);
	}
}

static char *xxe_reply(const char *kind)
{
	const char *secret = util_source_path("tests/data/soap/replies/secret.txt");
	char *buf = malloc(4096);
	assert_non_null(buf);
	if (!strcmp(kind, "general"))
		snprintf(buf, 4096,
			 "<?xml version=\"1.0\"?>\n"
			 "<!DOCTYPE soap:Envelope [<!ENTITY xxe SYSTEM \"file://%s\">]>\n"
			 "<soap:Envelope xmlns:soap=\"" WMS__SOAP11_NS "\"><soap:Body><soap:Fault>"
			 "<faultcode>soap:Server</faultcode><faultstring>&xxe;</faultstring>"
			 "<detail><wh:WmsFault xmlns:wh=\"" WMS__NS "\"><wh:code>&xxe;</wh:code>"
			 "</wh:WmsFault></detail></soap:Fault></soap:Body></soap:Envelope>\n", secret);
	else if (!strcmp(kind, "parameter"))
		snprintf(buf, 4096,
			 "<!DOCTYPE x [<!ENTITY %% p SYSTEM \"%s\"> %%p;]>\n"
			 "<soap:Envelope xmlns:soap=\"" WMS__SOAP11_NS "\"><soap:Body/></soap:Envelope>",
			 secret);
	else
		snprintf(buf, 4096,
			 "<!DOCTYPE soap:Envelope SYSTEM \"%s\">\n"
			 "<soap:Envelope xmlns:soap=\"" WMS__SOAP11_NS "\"><soap:Body><soap:Fault>"
			 "<faultcode>soap:Server</faultcode><faultstring>x</faultstring>"
			 "</soap:Fault></soap:Body></soap:Envelope>", secret);
	return buf;
}

/* A fault text longer than the error fields, of 2-, 3- and 4-byte UTF-8
 * characters, shifted so that each field's cut falls at every byte of a
 * character: the message and fault_string end on whole characters, as
 * prefixes of what was sent. */
static void long_utf8_fault_cut_on_characters(void **state)
{
	static const char *const chars[] = { "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x93\xa6" };
	(void)state;
	for (size_t c = 0; c < 3; c++) {
		for (size_t shift = 0; shift < 4; shift++) {
			char text[1200] = "", buf[2048];
			result r;
			memset(text, 'a', shift);
			text[shift] = '\0';
			while (strlen(text) + strlen(chars[c]) < 600)
				strcat(text, chars[c]);
			snprintf(buf, sizeof(buf),
				 "<soap:Envelope xmlns:soap=\"" WMS__SOAP11_NS "\"><soap:Body><soap:Fault>"
				 "<faultcode>soap:Server</faultcode><faultstring>%s</faultstring>"
				 "</soap:Fault></soap:Body></soap:Envelope>", text);
			parse_bytes(&r, SUBMIT, buf, strlen(buf), XML11, MAX);
			assert_int_equal(r.rc, WMS_ERR_SOAP_FAULT);
			assert_int_equal(xmlCheckUTF8((const xmlChar *)r.err.message), 1);
			assert_int_equal(xmlCheckUTF8((const xmlChar *)r.err.fault_string), 1);
			/* cut by at most one character, never more */
			assert_true(strlen(r.err.message) + 4 >= sizeof(r.err.message) - 1);
			assert_true(strlen(r.err.fault_string) + 4 >= sizeof(r.err.fault_string) - 1);
			assert_memory_equal(r.err.fault_string, text, strlen(r.err.fault_string));
			assert_true(strncmp(r.err.message, "SOAP fault Server: ", 19) == 0);
			assert_memory_equal(r.err.message + 19, text, strlen(r.err.message) - 19);
		}
	}
}

static void external_entities_never_read(void **state)
{
	static const char *const kinds[] = { "general", "parameter", "external-dtd" };
	size_t i;
	(void)state;
	for (i = 0; i < 3; i++) {
		char *buf = xxe_reply(kinds[i]);
		result r;
		parse_bytes(&r, SUBMIT, buf, strlen(buf), XML11, MAX);
		if (r.rc != WMS_ERR_UNSAFE_XML)
			fail_msg("%s: %s: %s", kinds[i], wms_status_name(r.rc), r.err.message);
		assert_string_equal(r.err.message,
				    "reply carries a DOCTYPE: refused, nothing in it was read");
		assert_null(strstr(r.err.message, CANARY));
		assert_null(strstr(r.err.fault_string, CANARY));
		assert_null(strstr(r.err.fault_code, CANARY));
		assert_null(strstr(r.err.wms_code, CANARY));
		free(buf);
	}
}

static void billion_laughs_is_cheap(void **state)
{
	size_t len;
	char *buf = util_read_source_file("tests/data/soap/replies/bad/billion_laughs.xml", &len);
	double t0, ms, bound = util_under_valgrind() ? 20000.0 : 2000.0;
	result r;
	(void)state;
	util_xml_mem_reset();
	t0 = util_now_ms();
	parse_bytes(&r, SUBMIT, buf, len, XML11, MAX);
	ms = util_now_ms() - t0;
	assert_int_equal(r.rc, WMS_ERR_UNSAFE_XML);
	/* Nothing was expanded: libxml2 allocated far less than one expansion level. */
	if (util_xml_mem_bytes() > 256u * 1024u)
		fail_msg("libxml2 allocated %zu bytes", util_xml_mem_bytes());
	if (ms > bound)
		fail_msg("took %.0f ms", ms);
	free(buf);
}

static void deep_nesting(void **state)
{
	const size_t depth = 5000;
	size_t i, len = 0;
	char *buf = malloc(depth * 8 + 256);
	result r;
	(void)state;
	assert_non_null(buf);
	len += (size_t)sprintf(buf + len, "<s:Envelope xmlns:s=\"%s\"><s:Body>", WMS__SOAP11_NS);
	for (i = 0; i < depth; i++)
		len += (size_t)sprintf(buf + len, "<a>");
	for (i = 0; i < depth; i++)
		len += (size_t)sprintf(buf + len, "</a>");
	len += (size_t)sprintf(buf + len, "</s:Body></s:Envelope>");
	parse_bytes(&r, SUBMIT, buf, len, XML11, MAX);
	assert_int_equal(r.rc, WMS_ERR_NOT_XML);
	assert_non_null(strstr(r.err.message, "depth"));
	free(buf);
}

/* Nothing reaches stderr, and the caller's own libxml2 error handler on
 * this thread is neither called nor replaced. */
static int caller_handler_calls;
static void caller_handler(void *ctx, xmlErrorPtr e)
{
	(void)ctx;
	(void)e;
	caller_handler_calls++;
}

static void quiet_and_handlers_restored(void **state)
{
	static const char *const files[] = {
		"bad/shift_jis_undecodable.xml", "bad/tag_mismatch.xml", "bad/html_502_nginx.html",
		"bad/billion_laughs.xml", "bad/trailing_garbage.xml", "bad/undefined_entity.xml",
		"fault/soap11_latin1_charset_in_header.xml", "bad/unqualified_children.xml",
	};
	char captured[512];
	size_t i, n;
	int marker;
	(void)state;

	xmlSetStructuredErrorFunc(&marker, caller_handler);
	caller_handler_calls = 0;
	util_stderr_capture_begin();
	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		result r;
		parse_file(&r, SUBMIT, files[i], "text/xml");
		assert_int_not_equal(r.rc, WMS_OK);
	}
	{ /* an undecodable charset from the header */
		result r;
		parse_bytes(&r, SUBMIT, "<a>\x81\xff</a>", 7, "text/xml; charset=Shift_JIS", MAX);
		assert_int_equal(r.rc, WMS_ERR_NOT_XML);
	}
	n = util_stderr_capture_end(captured, sizeof(captured));
	assert_ptr_equal(xmlStructuredError, caller_handler);
	assert_ptr_equal(xmlStructuredErrorContext, &marker);
	xmlSetStructuredErrorFunc(NULL, NULL);
	if (n)
		fail_msg("%zu bytes on stderr: %s", n, captured);
	assert_int_equal(caller_handler_calls, 0);
}

static void null_out_and_bad_op(void **state)
{
	static const struct {
		const char *file;
		wms__op op;
	} files[] = {
		{ "good/submit_order_soap11_jaxws.xml", SUBMIT },
		{ "good/get_order_status_soap12_bom.xml", STATUS },
		{ "good/cancel_order_soap11_cdata.xml", CANCEL },
		{ "good/get_stock_level_soap11_axis.xml", STOCK },
	};
	wms_error err;
	size_t i, len;
	(void)state;
	for (i = 0; i < 4; i++) {
		char rel[256];
		char *buf;
		snprintf(rel, sizeof(rel), "tests/data/soap/replies/%s", files[i].file);
		buf = util_read_source_file(rel, &len);
		assert_int_equal(wms__parse_reply(files[i].op, NULL, buf, len, NULL, MAX, NULL), WMS_OK);
		free(buf);
	}
	wms_error_clear(&err);
	assert_int_equal(wms__parse_reply(WMS__OP_COUNT, NULL, "<a/>", 4, NULL, MAX, &err),
			 WMS_ERR_INVALID_ARG);
	assert_int_equal(wms__parse_reply((wms__op)-1, NULL, "<a/>", 4, NULL, MAX, NULL),
			 WMS_ERR_INVALID_ARG);
	wms_stock_reply_free(NULL);
}

static void state_names(void **state)
{
	(void)state;
	assert_string_equal(wms_order_state_name(WMS_ORDER_STATE_UNKNOWN), "UNKNOWN");
	assert_string_equal(wms_order_state_name(WMS_ORDER_STATE_RECEIVED), "RECEIVED");
	assert_string_equal(wms_order_state_name(WMS_ORDER_STATE_ALLOCATED), "ALLOCATED");
	assert_string_equal(wms_order_state_name(WMS_ORDER_STATE_PICKING), "PICKING");
	assert_string_equal(wms_order_state_name(WMS_ORDER_STATE_PACKED), "PACKED");
	assert_string_equal(wms_order_state_name(WMS_ORDER_STATE_SHIPPED), "SHIPPED");
	assert_string_equal(wms_order_state_name(WMS_ORDER_STATE_CANCELLED), "CANCELLED");
	assert_string_equal(wms_order_state_name((wms_order_state)42), "UNKNOWN");
}

/* Fail libxml2's n-th allocation for every n until the parse succeeds.
 * Never a crash, a leak or a wrong answer: each attempt gives NOMEM, some
 * other error, or exactly the normal result. (libxml2 2.9 does not report
 * every failed allocation: some surface as parse errors instead.) */
static void same_result(const result *got, const result *want, wms__op op)
{
	assert_int_equal(got->rc, want->rc);
	assert_string_equal(got->err.message, want->err.message);
	assert_string_equal(got->err.fault_code, want->err.fault_code);
	assert_string_equal(got->err.fault_string, want->err.fault_string);
	assert_string_equal(got->err.wms_code, want->err.wms_code);
	if (got->rc != WMS_OK)
		return;
	if (op == WMS__OP_GET_STOCK_LEVEL) {
		assert_int_equal(got->out.stock->count, want->out.stock->count);
		assert_memory_equal(got->out.stock->levels, want->out.stock->levels,
				    want->out.stock->count * sizeof(wms_stock_level));
	} else {
		assert_memory_equal(&got->out, &want->out, sizeof(got->out.status));
	}
}

static void every_failed_allocation(void **state)
{
	static const struct {
		const char *file;
		wms__op op;
	} files[] = {
		{ "good/submit_order_soap11_jaxws.xml", SUBMIT },
		{ "good/get_stock_level_soap11_axis.xml", STOCK },
		{ "good/get_order_status_soap11_iso8859.xml", STATUS },
		{ "fault/soap12_receiver_subcode.xml", CANCEL },
	};
	size_t f;
	(void)state;
	for (f = 0; f < sizeof(files) / sizeof(files[0]); f++) {
		char rel[256];
		size_t len;
		long n, nomem = 0, other = 0;
		result want;
		char *buf;
		snprintf(rel, sizeof(rel), "tests/data/soap/replies/%s", files[f].file);
		buf = util_read_source_file(rel, &len);
		parse_bytes(&want, files[f].op, buf, len, XML11, MAX);
		for (n = 1; n < 100000; n++) {
			result r;
			int failed;
			util_xml_mem_fail_at(n);
			parse_bytes(&r, files[f].op, buf, len, XML11, MAX);
			failed = util_xml_mem_failed();
			util_xml_mem_reset();
			if (r.rc == want.rc) {
				same_result(&r, &want, files[f].op);
				release(&r, files[f].op);
				if (!failed)
					break;
				continue;
			}
			assert_true(failed);
			assert_int_not_equal(r.rc, WMS_OK);
			if (r.rc == WMS_ERR_NOMEM) {
				assert_string_equal(r.err.message, "parsing the reply: out of memory");
				nomem++;
			} else {
				other++;
			}
		}
		print_message("%s: %ld allocations, %ld gave NOMEM, %ld another error\n",
			      files[f].file, n, nomem, other);
		assert_true(nomem > n / 2);
		release(&want, files[f].op);
		free(buf);
	}
}

/* ---- workspaces: a reused parser context gives what a new one does ---- */

typedef struct reply_input {
	char *buf;
	size_t len;
} reply_input;

static size_t load_dir(reply_input *in, size_t n, size_t max, const char *dir)
{
	char path[512], rel[300];
	struct dirent *d;
	DIR *dp;

	snprintf(path, sizeof(path), "%s", util_source_path(dir));
	assert_non_null(dp = opendir(path));
	while ((d = readdir(dp)) != NULL && n < max) {
		if (d->d_name[0] == '.')
			continue;
		snprintf(rel, sizeof(rel), "%s/%s", dir, d->d_name);
		in[n].buf = util_read_source_file(rel, &in[n].len);
		n++;
	}
	closedir(dp);
	return n;
}

/* Every reply file, as every operation, under three content types, whole
 * and cut short, in a shuffled order twice over, through one workspace:
 * each result equals a fresh parse's (a context dropped after an error or
 * kept after a success must not change the next parse). */
static void workspace_parses_the_same(void **state)
{
	static const char *const types[] = { NULL, "text/xml; charset=iso-8859-1", "text/html" };
	static reply_input in[256];
	static result a, b;
	wms__xml_ws ws = { NULL, NULL };
	size_t n = 0, i, runs = 0;
	uint32_t x = 7u;
	(void)state;

	n = load_dir(in, n, 256, "tests/data/soap/replies/good");
	n = load_dir(in, n, 256, "tests/data/soap/replies/fault");
	n = load_dir(in, n, 256, "tests/data/soap/replies/bad");
	assert_true(n > 40);
	for (i = 0; i < 2 * n * 12; i++) {
		const reply_input *r;
		wms__op op;
		const char *ct;
		size_t len;
		char what[64];
		x = x * 1103515245u + 12345u;
		r = &in[(x >> 8) % n];
		op = (wms__op)((x >> 4) % WMS__OP_COUNT);
		ct = types[(x >> 12) % 3];
		len = (x >> 16) % 4 == 0 ? (size_t)((x >> 3) % (r->len + 1)) : r->len;
		snprintf(what, sizeof(what), "input %zu, op %d, %zu of %zu bytes",
			 (size_t)(r - in), (int)op, len, r->len);
		parse_bytes(&a, op, r->buf, len, ct, MAX);
		memset(&b, 0xA5, sizeof(b));
		wms_error_clear(&b.err);
		b.rc = wms__parse_reply_ws(&ws, op, &b.out, r->buf, len, ct, MAX, 0, &b.err);
		if (a.rc != b.rc || strcmp(a.err.message, b.err.message) != 0)
			fail_msg("%s: fresh %d \"%s\", reused %d \"%s\"", what, (int)a.rc,
				 a.err.message, (int)b.rc, b.err.message);
		same_result(&b, &a, op);
		release(&a, op);
		release(&b, op);
		runs++;
	}
	assert_non_null(ws.parse);
	wms__parse_ws_free(ws.parse);
	for (i = 0; i < n; i++)
		free(in[i].buf);
	assert_true(runs > 500);
}


/* Parsers and builders on several threads at once give the same answers. */
#define THREADS 6
#define ROUNDS 40

typedef struct thread_arg {
	const char *submit, *stock, *fault, *html;
	size_t submit_len, stock_len, fault_len, html_len;
	int failures;
} thread_arg;

static void *worker(void *p)
{
	thread_arg *a = p;
	const wms_order_line lines[] = { { "SKU-1", 1 } };
	wms_order order = WMS_ORDER_INIT;
	int i;
	order.order_id = "ORD-T";
	order.ship_to.name = "N";
	order.ship_to.line1 = "L";
	order.ship_to.city = "C";
	order.ship_to.postal_code = "P";
	order.ship_to.country = "DE";
	order.lines = lines;
	order.line_count = 1;
	for (i = 0; i < ROUNDS; i++) {
		wms_submit_reply sr;
		wms_stock_reply *st = NULL;
		wms__buf b = { NULL, 0, 0 };
		wms_error err;
		wms_error_clear(&err);
		if (wms__parse_reply(SUBMIT, &sr, a->submit, a->submit_len, NULL, MAX, &err) != WMS_OK ||
		    strcmp(sr.wms_reference, "WMS:778899") != 0)
			a->failures++;
		if (wms__parse_reply(STOCK, &st, a->stock, a->stock_len, NULL, MAX, &err) != WMS_OK ||
		    st->count != 3)
			a->failures++;
		wms_stock_reply_free(st);
		if (wms__parse_reply(CANCEL, NULL, a->fault, a->fault_len, NULL, MAX, &err) !=
			    WMS_ERR_SOAP_FAULT || strcmp(err.wms_code, "INTERNAL") != 0)
			a->failures++;
		if (wms__parse_reply(SUBMIT, NULL, a->html, a->html_len, "text/html", MAX, &err) !=
		    WMS_ERR_NOT_XML)
			a->failures++;
		if (wms__build_submit_order(&b, (wms_soap_version)(i & 1), &order, &err) != WMS_OK ||
		    !strstr(b.data, "<wh:clientOrderId>ORD-T</wh:clientOrderId>"))
			a->failures++;
		wms__buf_free(&b);
	}
	return NULL;
}

static void threads(void **state)
{
	pthread_t t[THREADS];
	thread_arg args[THREADS];
	thread_arg base;
	int i;
	(void)state;
	memset(&base, 0, sizeof(base));
	base.submit = util_read_source_file("tests/data/soap/replies/good/submit_order_soap11_jaxws.xml",
					    &base.submit_len);
	base.stock = util_read_source_file("tests/data/soap/replies/good/get_stock_level_soap11_axis.xml",
					   &base.stock_len);
	base.fault = util_read_source_file("tests/data/soap/replies/fault/soap12_receiver_subcode.xml",
					   &base.fault_len);
	base.html = util_read_source_file("tests/data/soap/replies/bad/tag_mismatch.xml", &base.html_len);
	for (i = 0; i < THREADS; i++) {
		args[i] = base;
		assert_int_equal(pthread_create(&t[i], NULL, worker, &args[i]), 0);
	}
	for (i = 0; i < THREADS; i++) {
		assert_int_equal(pthread_join(t[i], NULL), 0);
		assert_int_equal(args[i].failures, 0);
	}
	free((void *)base.submit);
	free((void *)base.stock);
	free((void *)base.fault);
	free((void *)base.html);
}

int main(void)
{
	static const struct CMUnitTest fixed[] = {
		cmocka_unit_test(empty_and_whitespace_bodies),
		cmocka_unit_test(size_limit),
		cmocka_unit_test(truncated_at_every_cut),
		cmocka_unit_test(bom_and_declaration),
		cmocka_unit_test(us_ascii_decoding),
		cmocka_unit_test(datetime_ranges),
		cmocka_unit_test(envelope_after_body),
		cmocka_unit_test(long_utf8_fault_cut_on_characters),
		cmocka_unit_test(external_entities_never_read),
		cmocka_unit_test(billion_laughs_is_cheap),
		cmocka_unit_test(deep_nesting),
		cmocka_unit_test(quiet_and_handlers_restored),
		cmocka_unit_test(null_out_and_bad_op),
		cmocka_unit_test(state_names),
		cmocka_unit_test(every_failed_allocation),
		cmocka_unit_test(workspace_parses_the_same),
		cmocka_unit_test(threads),
	};
	enum { NCASES = sizeof(cases) / sizeof(cases[0]), NFIXED = sizeof(fixed) / sizeof(fixed[0]) };
	static struct CMUnitTest tests[NCASES + NFIXED];
	static char names[NCASES][160];
	size_t i;

	util_xml_mem_install();
	for (i = 0; i < NCASES; i++) {
		snprintf(names[i], sizeof(names[i]), "%s as %s%s%s", cases[i].file,
			 wms__op_name(cases[i].op), cases[i].content_type ? " / " : "",
			 cases[i].content_type ? cases[i].content_type : "");
		tests[i].name = names[i];
		tests[i].test_func = reply_file;
		tests[i].setup_func = NULL;
		tests[i].teardown_func = NULL;
		tests[i].initial_state = (void *)&cases[i];
	}
	for (i = 0; i < NFIXED; i++)
		tests[NCASES + i] = fixed[i];
	return _cmocka_run_group_tests("soap_parse", tests, NCASES + NFIXED, NULL, NULL);
}
