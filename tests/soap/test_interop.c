/* Interoperability with other SOAP stacks (gSOAP, zeep, node-soap): a reply
 * in the other SOAP version than the request's, and the forms a WmsFault
 * detail comes in (qualified, unqualified as node-soap writes it by
 * default, half-qualified), with the hostile ones beside them: a WmsFault
 * of another namespace, one nested deeper, two of them, codes at their
 * length limit. README.md, "Interoperability", says what is accepted. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "soap/soap.h"

#define MAX (1024u * 1024u)
#define XML11 "text/xml; charset=utf-8"
#define XML12 "application/soap+xml; charset=utf-8"
#define WH_DECL "xmlns:wh=\"" WMS__NS "\""

static wms_status parse(wms__xml_ws *ws, wms__op op, void *out, const char *body, const char *ct,
			wms_error *err)
{
	wms_status rc;
	wms_error_clear(err);
	rc = wms__parse_reply_ws(ws, op, out, body, strlen(body), ct, MAX, 0, err);
	assert_int_equal(rc, err->status);
	assert_null(strchr(err->message, '\n'));
	return rc;
}

/* A Fault envelope of SOAP 1.1 (soap12 0) or 1.2 whose detail holds
 * `detail`, faultstring/Reason `text` (none when NULL). */
static void fault_envelope(char *dst, size_t size, int soap12, const char *text,
			   const char *detail)
{
	int n;
	if (soap12)
		n = snprintf(dst, size,
			     "<env:Envelope xmlns:env=\"" WMS__SOAP12_NS "\"><env:Body><env:Fault>"
			     "<env:Code><env:Value>env:Sender</env:Value></env:Code>%s%s%s"
			     "<env:Detail>%s</env:Detail></env:Fault></env:Body></env:Envelope>",
			     text ? "<env:Reason><env:Text xml:lang=\"en\">" : "", text ? text : "",
			     text ? "</env:Text></env:Reason>" : "", detail);
	else
		n = snprintf(dst, size,
			     "<soap:Envelope xmlns:soap=\"" WMS__SOAP11_NS "\"><soap:Body><soap:Fault>"
			     "<faultcode>soap:Client</faultcode><faultstring>%s</faultstring>"
			     "<detail>%s</detail></soap:Fault></soap:Body></soap:Envelope>",
			     text ? text : "", detail);
	assert_true(n > 0 && (size_t)n < size);
}

/* ---- a reply in the other SOAP version ------------------------------------- */

static const char submit12[] =
	"<e:Envelope xmlns:e=\"" WMS__SOAP12_NS "\"><e:Body>"
	"<SubmitOrderResponse xmlns=\"" WMS__NS "\"><clientOrderId>ORD-1</clientOrderId>"
	"<wmsReference>W-1</wmsReference><state>RECEIVED</state><duplicate>false</duplicate>"
	"</SubmitOrderResponse></e:Body></e:Envelope>";

static const char submit11[] =
	"<s:Envelope xmlns:s=\"" WMS__SOAP11_NS "\"><s:Body>"
	"<SubmitOrderResponse xmlns=\"" WMS__NS "\"><clientOrderId>ORD-1</clientOrderId>"
	"<wmsReference>W-1</wmsReference><state>RECEIVED</state><duplicate>false</duplicate>"
	"</SubmitOrderResponse></s:Body></s:Envelope>";

/* What a SOAP 1.2 node answers a SOAP 1.1 message it will not process
 * (SOAP 1.2 Part 1, appendix A), and a SOAP 1.1 node a 1.2 one (SOAP 1.1
 * 4.4.1): a SOAP 1.1 VersionMismatch fault, whatever the request was. */
static const char version_mismatch11[] =
	"<s:Envelope xmlns:s=\"" WMS__SOAP11_NS "\"><s:Body><s:Fault>"
	"<faultcode>s:VersionMismatch</faultcode><faultstring>SOAP 1.1 only</faultstring>"
	"</s:Fault></s:Body></s:Envelope>";

/* The parser reads the version the Envelope's namespace says, whatever
 * the Content-Type (which names the request's version when a server
 * echoes it): success bodies and faults, both ways. */
static void other_version_reply(void **state)
{
	static const struct {
		const char *body, *ct;
		wms_status want;
		const char *fault_code;
	} rows[] = {
		{ submit12, XML11, WMS_OK, "" },
		{ submit11, XML12, WMS_OK, "" },
		{ submit12, NULL, WMS_OK, "" },
		{ version_mismatch11, XML12, WMS_ERR_SOAP_FAULT, "VersionMismatch" },
		{ version_mismatch11, XML11, WMS_ERR_SOAP_FAULT, "VersionMismatch" },
	};
	wms__xml_ws ws = { NULL, NULL };
	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		wms_submit_reply r;
		wms_error err;
		wms_status rc = parse(&ws, WMS__OP_SUBMIT_ORDER, &r, rows[i].body, rows[i].ct, &err);
		if (rc != rows[i].want)
			fail_msg("row %zu: %s: %s", i, wms_status_name(rc), err.message);
		assert_string_equal(err.fault_code, rows[i].fault_code);
		if (rc == WMS_OK) {
			assert_string_equal(r.order_id, "ORD-1");
			assert_string_equal(r.wms_reference, "W-1");
		} else {
			/* an envelope-level fault: the request was refused, not
			 * a sign the WMS is unwell, and not worth resending */
			assert_false(wms_error_is_retryable(&err));
		}
	}
	/* A fault of either version is a fault under either Content-Type. */
	for (int soap12 = 0; soap12 < 2; soap12++) {
		for (int ct = 0; ct < 2; ct++) {
			char buf[1024];
			wms_error err;
			fault_envelope(buf, sizeof(buf), soap12, "no",
				       "<wh:WmsFault " WH_DECL "><wh:code>UNKNOWN_SKU</wh:code></wh:WmsFault>");
			assert_int_equal(parse(&ws, WMS__OP_SUBMIT_ORDER, NULL, buf, ct ? XML12 : XML11,
					       &err),
					 WMS_ERR_SOAP_FAULT);
			assert_string_equal(err.fault_code, soap12 ? "Sender" : "Client");
			assert_string_equal(err.wms_code, "UNKNOWN_SKU");
		}
	}
	wms__parse_ws_free(ws.parse);
}

/* ---- the forms of a WmsFault detail ---------------------------------------- */

typedef struct detail_case {
	const char *name;
	const char *detail;   /* the detail element's content */
	const char *wms_code; /* expected, for both SOAP versions */
	const char *text;     /* expected fault_string when the fault has no text */
	int repeated;         /* the message says the detail was not read */
} detail_case;

static const detail_case details[] = {
	/* the WSDL's own form, with a prefix and with a default namespace */
	{ "qualified", "<wh:WmsFault " WH_DECL "><wh:code>UNKNOWN_SKU</wh:code>"
	  "<wh:message>SKU-9 is not stocked</wh:message></wh:WmsFault>",
	  "UNKNOWN_SKU", "SKU-9 is not stocked", 0 },
	{ "default xmlns on WmsFault", "<WmsFault xmlns=\"" WMS__NS "\"><code>UNKNOWN_SKU</code>"
	  "<message>SKU-9 is not stocked</message></WmsFault>",
	  "UNKNOWN_SKU", "SKU-9 is not stocked", 0 },
	/* node-soap's default: no namespace anywhere */
	{ "unqualified", "<WmsFault><code>UNKNOWN_SKU</code>"
	  "<message>SKU-9 is not stocked</message></WmsFault>",
	  "UNKNOWN_SKU", "SKU-9 is not stocked", 0 },
	/* elementFormDefault="unqualified" as some stacks assume it */
	{ "namespace on WmsFault only", "<wh:WmsFault " WH_DECL "><code>UNKNOWN_SKU</code>"
	  "<message>SKU-9 is not stocked</message></wh:WmsFault>",
	  "UNKNOWN_SKU", "SKU-9 is not stocked", 0 },
	{ "namespace on its children only", "<WmsFault><wh:code " WH_DECL ">UNKNOWN_SKU</wh:code>"
	  "<wh:message " WH_DECL ">SKU-9 is not stocked</wh:message></WmsFault>",
	  "UNKNOWN_SKU", "SKU-9 is not stocked", 0 },
	/* xmlns="" is no namespace */
	{ "explicit xmlns=\"\"", "<WmsFault xmlns=\"\"><code>UNKNOWN_SKU</code></WmsFault>",
	  "UNKNOWN_SKU", "", 0 },
	/* the same spacing and control characters flattened either way */
	{ "unqualified, spaced", "<WmsFault>\n <code>\tUNKNOWN\r\nSKU </code></WmsFault>", "UNKNOWN SKU", "", 0 },

	/* never someone else's element */
	{ "foreign namespace", "<x:WmsFault xmlns:x=\"urn:other\"><x:code>UNKNOWN_SKU</x:code>"
	  "</x:WmsFault>",
	  "", "", 0 },
	{ "foreign default namespace", "<WmsFault xmlns=\"urn:other\"><code>UNKNOWN_SKU</code>"
	  "</WmsFault>",
	  "", "", 0 },
	{ "foreign WmsFault, our children", "<x:WmsFault xmlns:x=\"urn:other\">"
	  "<wh:code " WH_DECL ">UNKNOWN_SKU</wh:code></x:WmsFault>",
	  "", "", 0 },
	{ "our WmsFault, foreign code", "<wh:WmsFault " WH_DECL "><x:code xmlns:x=\"urn:other\">"
	  "UNKNOWN_SKU</x:code></wh:WmsFault>",
	  "", "", 0 },
	{ "unqualified WmsFault, foreign code", "<WmsFault><code xmlns=\"urn:other\">UNKNOWN_SKU"
	  "</code></WmsFault>",
	  "", "", 0 },
	{ "nested deeper, unqualified", "<wrapper><WmsFault><code>UNKNOWN_SKU</code></WmsFault>"
	  "</wrapper>",
	  "", "", 0 },
	{ "nested deeper, qualified", "<wh:wrapper " WH_DECL "><wh:WmsFault><wh:code>UNKNOWN_SKU"
	  "</wh:code></wh:WmsFault></wh:wrapper>",
	  "", "", 0 },
	{ "code nested deeper", "<WmsFault><inner><code>UNKNOWN_SKU</code></inner></WmsFault>",
	  "", "", 0 },
	/* a foreign entry first, then ours */
	{ "after a foreign entry", "<x:WmsFault xmlns:x=\"urn:other\"><x:code>OTHER</x:code>"
	  "</x:WmsFault><WmsFault><code>UNKNOWN_SKU</code></WmsFault>",
	  "UNKNOWN_SKU", "", 0 },

	/* two of them: which is meant would be a guess, so neither is read */
	{ "two qualified", "<wh:WmsFault " WH_DECL "><wh:code>FIRST</wh:code></wh:WmsFault>"
	  "<wh:WmsFault " WH_DECL "><wh:code>SECOND</wh:code></wh:WmsFault>",
	  "", "", 1 },
	{ "two unqualified", "<WmsFault><code>FIRST</code></WmsFault>"
	  "<WmsFault><code>SECOND</code></WmsFault>",
	  "", "", 1 },
	{ "unqualified then qualified", "<WmsFault><code>FIRST</code></WmsFault>"
	  "<wh:WmsFault " WH_DECL "><wh:code>SECOND</wh:code></wh:WmsFault>",
	  "", "", 1 },
	{ "two codes", "<wh:WmsFault " WH_DECL "><wh:code>FIRST</wh:code><wh:code>SECOND</wh:code>"
	  "</wh:WmsFault>",
	  "", "", 1 },
	{ "a qualified and an unqualified code", "<wh:WmsFault " WH_DECL "><code>FIRST</code>"
	  "<wh:code>SECOND</wh:code></wh:WmsFault>",
	  "", "", 1 },
	{ "two messages", "<WmsFault><code>UNKNOWN_SKU</code><message>one</message>"
	  "<message>two</message></WmsFault>",
	  "", "", 1 },
	/* a foreign WmsFault beside ours is no second one of ours */
	{ "ours and a foreign one", "<WmsFault><code>UNKNOWN_SKU</code></WmsFault>"
	  "<x:WmsFault xmlns:x=\"urn:other\"><x:code>OTHER</x:code></x:WmsFault>",
	  "UNKNOWN_SKU", "", 0 },
};

static void detail_forms(void **state)
{
	wms__xml_ws ws = { NULL, NULL };
	(void)state;
	for (size_t i = 0; i < sizeof(details) / sizeof(details[0]); i++) {
		for (int soap12 = 0; soap12 < 2; soap12++) {
			const detail_case *c = &details[i];
			char buf[2048];
			wms_error err;

			/* with a fault text of its own, and without: then the
			 * WmsFault's message stands in */
			fault_envelope(buf, sizeof(buf), soap12, "refused", c->detail);
			assert_int_equal(parse(&ws, WMS__OP_GET_STOCK_LEVEL, NULL, buf,
					       soap12 ? XML12 : XML11, &err),
					 WMS_ERR_SOAP_FAULT);
			if (strcmp(err.wms_code, c->wms_code) != 0)
				fail_msg("%s (SOAP 1.%d): wms_code \"%s\", expected \"%s\"", c->name,
					 soap12 ? 2 : 1, err.wms_code, c->wms_code);
			assert_string_equal(err.fault_code, soap12 ? "Sender" : "Client");
			assert_string_equal(err.fault_string, "refused");
			assert_int_equal(strstr(err.message, "(WmsFault detail not read: repeated)") != NULL,
					 c->repeated);

			fault_envelope(buf, sizeof(buf), soap12, NULL, c->detail);
			assert_int_equal(parse(&ws, WMS__OP_GET_STOCK_LEVEL, NULL, buf,
					       soap12 ? XML12 : XML11, &err),
					 WMS_ERR_SOAP_FAULT);
			assert_string_equal(err.wms_code, c->wms_code);
			if (strcmp(err.fault_string, c->text) != 0)
				fail_msg("%s (SOAP 1.%d): fault_string \"%s\", expected \"%s\"", c->name,
					 soap12 ? 2 : 1, err.fault_string, c->text);
		}
	}
	wms__parse_ws_free(ws.parse);
}

/* Only the fault's own detail element holds the WMS's detail: not a
 * WmsFault beside it in the Fault, not a SOAP 1.2 Detail out of its
 * namespace. */
static void detail_only_where_soap_puts_it(void **state)
{
	static const char *const bodies[] = {
		"<soap:Envelope xmlns:soap=\"" WMS__SOAP11_NS "\"><soap:Body><soap:Fault>"
		"<faultcode>soap:Client</faultcode><faultstring>no</faultstring>"
		"<WmsFault><code>UNKNOWN_SKU</code></WmsFault></soap:Fault></soap:Body></soap:Envelope>",
		"<env:Envelope xmlns:env=\"" WMS__SOAP12_NS "\"><env:Body><env:Fault>"
		"<env:Code><env:Value>env:Sender</env:Value></env:Code>"
		"<Detail><WmsFault><code>UNKNOWN_SKU</code></WmsFault></Detail>"
		"</env:Fault></env:Body></env:Envelope>",
		"<env:Envelope xmlns:env=\"" WMS__SOAP12_NS "\"><env:Body><env:Fault>"
		"<env:Code><env:Value>env:Sender</env:Value></env:Code>"
		"<env:Reason><env:Text>no</env:Text></env:Reason>"
		"<detail><WmsFault><code>UNKNOWN_SKU</code></WmsFault></detail>"
		"</env:Fault></env:Body></env:Envelope>",
	};
	(void)state;
	for (size_t i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++) {
		wms_error err;
		assert_int_equal(parse(NULL, WMS__OP_CANCEL_ORDER, NULL, bodies[i], NULL, &err),
				 WMS_ERR_SOAP_FAULT);
		if (err.wms_code[0])
			fail_msg("body %zu: wms_code \"%s\" read from outside the detail", i,
				 err.wms_code);
	}
}

/* A code of WMS_ERROR_FIELD_MAX - 1 bytes is kept whole, one byte more is
 * cut to it, in every form, twice in a row on one workspace. */
static void code_at_its_limit(void **state)
{
	static const char *const forms[][2] = {
		{ "<wh:WmsFault " WH_DECL "><wh:code>", "</wh:code></wh:WmsFault>" },
		{ "<WmsFault><code>", "</code></WmsFault>" },
		{ "<wh:WmsFault " WH_DECL "><code>", "</code></wh:WmsFault>" },
		{ "<WmsFault><wh:code " WH_DECL ">", "</wh:code></WmsFault>" },
	};
	wms__xml_ws ws = { NULL, NULL };
	char code[WMS_ERROR_FIELD_MAX + 1], want[WMS_ERROR_FIELD_MAX];
	(void)state;
	memset(code, 'C', sizeof(code) - 1);
	code[sizeof(code) - 1] = '\0';
	memcpy(want, code, sizeof(want) - 1);
	want[sizeof(want) - 1] = '\0';
	for (size_t f = 0; f < sizeof(forms) / sizeof(forms[0]); f++) {
		for (int round = 0; round < 4; round++) {
			int soap12 = round & 1, over = round >> 1;
			char detail[512], buf[2048];
			wms_error err;
			/* 127 bytes, then 128 */
			code[WMS_ERROR_FIELD_MAX - 1 + over] = '\0';
			snprintf(detail, sizeof(detail), "%s%s%s", forms[f][0], code, forms[f][1]);
			code[WMS_ERROR_FIELD_MAX - 1 + over] = 'C';
			fault_envelope(buf, sizeof(buf), soap12, "no", detail);
			for (int again = 0; again < 2; again++) {
				assert_int_equal(parse(&ws, WMS__OP_SUBMIT_ORDER, NULL, buf, NULL, &err),
						 WMS_ERR_SOAP_FAULT);
				assert_string_equal(err.wms_code, want);
			}
		}
	}
	wms__parse_ws_free(ws.parse);
}

int main(void)
{
	static const struct CMUnitTest tests[] = {
		cmocka_unit_test(other_version_reply),
		cmocka_unit_test(detail_forms),
		cmocka_unit_test(detail_only_where_soap_puts_it),
		cmocka_unit_test(code_at_its_limit),
	};
	return cmocka_run_group_tests_name("soap_interop", tests, NULL, NULL);
}
