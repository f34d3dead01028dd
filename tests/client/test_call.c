/*
 * The generic call (wms/call.h) over the fake transport: what is sent, what
 * comes back, and that every protection of a typed call applies (breaker,
 * per-operation breakers and their bound, retries and idempotency,
 * WS-Security, the reply limits, hostile replies), and every limit on what
 * a generic call is given or answered, at it and one past, twice.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include <libxml/tree.h>

#include "bounds.h"
#include "client_fx.h"
#include "wms/call.h"

#define ENV11 "<?xml version=\"1.0\"?><s:Envelope xmlns:s=\"http://schemas.xmlsoap.org/soap/envelope/\""
#define SHIP_NS "urn:example:wms:shipping"

static const char ship_reply[] =
	ENV11 " xmlns:sh=\"" SHIP_NS "\"><s:Body><sh:GetShipmentStatusResponse carrier=\"DHL\">"
	"<sh:shipmentId>SHP-7</sh:shipmentId><sh:state>IN_TRANSIT</sh:state>"
	"</sh:GetShipmentStatusResponse></s:Body></s:Envelope>";

static const char ship_body[] =
	"<sh:GetShipmentStatus xmlns:sh=\"" SHIP_NS "\"><sh:shipmentId>SHP-7</sh:shipmentId>"
	"</sh:GetShipmentStatus>";

static const char server_fault[] =
	ENV11 "><s:Body><s:Fault><faultcode>s:Server</faultcode><faultstring>database down"
	"</faultstring><detail><w:WmsFault xmlns:w=\"urn:libwms:warehouse:1\"><w:code>INTERNAL"
	"</w:code></w:WmsFault></detail></s:Fault></s:Body></s:Envelope>";

static wms_call_options ship_call(void)
{
	wms_call_options o = WMS_CALL_OPTIONS_INIT;
	o.operation = "GetShipmentStatus";
	o.soap_action = "urn:example:wms/GetShipmentStatus";
	o.reply_namespace = SHIP_NS;
	o.reply_element = "GetShipmentStatusResponse";
	o.idempotent = 1;
	return o;
}

static void answer(fx *x, const char *body)
{
	x->t->next.status = 200;
	x->t->next.content_type = "text/xml; charset=utf-8";
	x->t->next.body = body;
	x->t->next.fail = WMS_OK;
}

static char *child_text(xmlNodePtr parent, const char *name)
{
	for (xmlNodePtr c = parent->children; c; c = c->next)
		if (c->type == XML_ELEMENT_NODE && strcmp((const char *)c->name, name) == 0)
			return (char *)xmlNodeGetContent(c);
	return NULL;
}

/* Bytes in, the Body's element out as a document of its own, with its
 * namespace and attributes, and the request as a SOAP 1.1 envelope. */
static void bytes_round_trip(void **state)
{
	fx x = setup_client(WMS_SOAP_11);
	wms_call_options op = ship_call();
	xmlDocPtr reply = NULL;
	xmlNodePtr root;
	wms_error err;
	char *v;
	(void)state;

	answer(&x, ship_reply);
	for (int round = 0; round < 2; round++) {
		assert_int_equal(wms_call_bytes(&reply, x.c, &op, ship_body, strlen(ship_body), &err),
				 WMS_OK);
		assert_non_null(reply);
		root = xmlDocGetRootElement(reply);
		assert_string_equal((const char *)root->name, "GetShipmentStatusResponse");
		assert_non_null(root->ns);
		assert_string_equal((const char *)root->ns->href, SHIP_NS);
		v = (char *)xmlGetProp(root, (const xmlChar *)"carrier");
		assert_string_equal(v, "DHL");
		xmlFree(v);
		v = child_text(root, "state");
		assert_string_equal(v, "IN_TRANSIT");
		xmlFree(v);
		xmlFreeDoc(reply);
		assert_int_equal(err.status, WMS_OK);
		assert_int_equal(err.delivery, WMS_DELIVERY_ANSWERED);
		assert_string_equal(err.operation, "GetShipmentStatus");
		assert_int_equal(err.attempts, 1);
	}
	assert_string_equal(x.t->last_action, "urn:example:wms/GetShipmentStatus");
	assert_string_equal(x.t->last_ctype, "text/xml; charset=utf-8");
	assert_non_null(strstr(x.t->last_body, "<soap:Envelope xmlns:soap=\"http://schemas.xmlsoap."
					      "org/soap/envelope/\"><soap:Body><sh:GetShipmentStatus"));
	assert_non_null(strstr(x.t->last_body, "<sh:shipmentId>SHP-7</sh:shipmentId>"));
	assert_int_equal(x.t->sends, 2);
	wms_client_free(x.c);
}

/* A node the caller built, in SOAP 1.2: the action goes into the
 * Content-Type; the caller keeps its node. */
static void node_soap12(void **state)
{
	fx x = setup_client(WMS_SOAP_12);
	wms_call_options op = ship_call();
	xmlDocPtr mine = xmlNewDoc((const xmlChar *)"1.0"), reply = NULL;
	xmlNodePtr n = xmlNewDocNode(mine, NULL, (const xmlChar *)"GetShipmentStatus", NULL);
	xmlNsPtr ns = xmlNewNs(n, (const xmlChar *)SHIP_NS, (const xmlChar *)"x");
	wms_error err;
	(void)state;

	xmlSetNs(n, ns);
	xmlDocSetRootElement(mine, n);
	xmlNewTextChild(n, ns, (const xmlChar *)"shipmentId", (const xmlChar *)"A&B <7>");
	answer(&x, "<?xml version=\"1.0\"?><e:Envelope xmlns:e=\"http://www.w3.org/2003/05/"
		   "soap-envelope\"><e:Body><GetShipmentStatusResponse xmlns=\"" SHIP_NS "\"/>"
		   "</e:Body></e:Envelope>");
	assert_int_equal(wms_call(&reply, x.c, &op, n, &err), WMS_OK);
	assert_string_equal(x.t->last_ctype, "application/soap+xml; charset=utf-8; "
					     "action=\"urn:example:wms/GetShipmentStatus\"");
	assert_non_null(strstr(x.t->last_body, "<x:shipmentId>A&amp;B &lt;7&gt;</x:shipmentId>"));
	assert_non_null(strstr(x.t->last_body, "http://www.w3.org/2003/05/soap-envelope"));
	assert_string_equal((const char *)xmlDocGetRootElement(reply)->name,
			    "GetShipmentStatusResponse");
	xmlFreeDoc(reply);
	assert_ptr_equal(xmlDocGetRootElement(mine), n); /* still the caller's */
	xmlFreeDoc(mine);
	wms_client_free(x.c);
}

/* A node deep in the caller's tree: the namespaces declared above it (one
 * used by its name, one only by a QName in a value) travel with it; its
 * attributes, CDATA, comments and PIs are copied; an entity reference is
 * refused. The reply's namespaces, declared on its Envelope, are declared
 * on the root of the document handed back. */
static void namespaces_from_the_callers_tree(void **state)
{
	static const char tree[] =
		"<outer xmlns:sh=\"" SHIP_NS "\" xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\""
		" xmlns:t=\"urn:types\"><mid><sh:Req xsi:type=\"t:ById\" sh:v=\"1\">a<![CDATA[<b>]]>"
		"<!--c--><?pi x?></sh:Req></mid></outer>";
	fx x = setup_client(WMS_SOAP_11);
	wms_call_options op = ship_call();
	xmlDocPtr mine = xmlReadMemory(tree, (int)strlen(tree), NULL, NULL, 0), reply = NULL;
	xmlNodePtr req = xmlDocGetRootElement(mine)->children->children, root;
	wms_error err;
	(void)state;

	answer(&x, ship_reply);
	assert_int_equal(wms_call(&reply, x.c, &op, req, &err), WMS_OK);
	assert_non_null(strstr(x.t->last_body, "<soap:Body><sh:Req xmlns:sh=\"" SHIP_NS "\" "
					       "xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" "
					       "xmlns:t=\"urn:types\" xsi:type=\"t:ById\" sh:v=\"1\">"
					       "a<![CDATA[<b>]]><!--c--><?pi x?></sh:Req></soap:Body>"));
	root = xmlDocGetRootElement(reply);
	assert_non_null(root->ns);
	assert_string_equal((const char *)root->ns->href, SHIP_NS);
	assert_non_null(root->nsDef); /* declared on the root, from the Envelope */
	xmlFreeDoc(reply);
	/* a prefix bound to a URI another prefix already has in scope stays:
	 * a value may name it */
	{
		static const char qn[] =
			"<m:Req xmlns:m=\"urn:x\" xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\">"
			"<m:item xmlns:t=\"urn:x\" xsi:type=\"t:Foo\">1</m:item></m:Req>";
		assert_int_equal(wms_call_bytes(&reply, x.c, &op, qn, strlen(qn), &err), WMS_OK);
		assert_non_null(strstr(x.t->last_body, "<m:item xmlns:t=\"urn:x\" xsi:type=\"t:Foo\">"));
		xmlFreeDoc(reply);
	}
	/* an entity reference cannot be carried */
	xmlAddChild(req, xmlNewReference(mine, (const xmlChar *)"&amp;"));
	xmlAddChild(req, xmlNewReference(mine, (const xmlChar *)"&custom;"));
	assert_int_equal(wms_call(&reply, x.c, &op, req, &err), WMS_ERR_INVALID_ARG);
	assert_non_null(strstr(err.message, "entity reference"));
	assert_null(reply);
	xmlFreeDoc(mine);
	wms_client_free(x.c);
}

/* The reply must be the element asked for; a fault is a fault; hostile
 * replies are refused as a typed call's are. Nothing is handed out. */
static void replies_refused(void **state)
{
	static const struct {
		const char *body;
		long status;
		wms_status want;
		const char *part;
	} cases[] = {
		{ ENV11 "><s:Body><Other xmlns=\"" SHIP_NS "\"/></s:Body></s:Envelope>", 200,
		  WMS_ERR_UNEXPECTED_REPLY, "expected {" SHIP_NS "}GetShipmentStatusResponse" },
		{ ENV11 "><s:Body><GetShipmentStatusResponse/></s:Body></s:Envelope>", 200,
		  WMS_ERR_UNEXPECTED_REPLY, "found {}GetShipmentStatusResponse" },
		{ ENV11 "><s:Body></s:Body></s:Envelope>", 200, WMS_ERR_UNEXPECTED_REPLY,
		  "found an empty Body" },
		{ ENV11 "><s:Body><a xmlns=\"" SHIP_NS "\"/><b/></s:Body></s:Envelope>", 200,
		  WMS_ERR_UNEXPECTED_REPLY, "expected one element" },
		{ "<?xml version=\"1.0\"?><!DOCTYPE x [<!ENTITY a \"b\">]><x/>", 200,
		  WMS_ERR_UNSAFE_XML, "DOCTYPE" },
		{ "<html><body>Bad gateway</body></html>", 502, WMS_ERR_HTTP, "HTTP 502" },
		{ ENV11 "><s:Body><GetShipmentStatusResponse xmlns=\"" SHIP_NS "\">", 200,
		  WMS_ERR_TRUNCATED, "ends early" },
		{ server_fault, 500, WMS_ERR_SOAP_FAULT, "database down" },
		{ ship_reply, 500, WMS_ERR_HTTP, "HTTP 500" },
	};
	fx x = setup_client(WMS_SOAP_11);
	wms_call_options op = ship_call();
	wms_error err;
	(void)state;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		xmlDocPtr reply = (xmlDocPtr)&err; /* must come back NULL */
		answer(&x, cases[i].body);
		x.t->next.status = cases[i].status;
		assert_int_equal(wms_call_bytes(&reply, x.c, &op, ship_body, strlen(ship_body), &err),
				 cases[i].want);
		assert_null(reply);
		if (!strstr(err.message, cases[i].part) && !strstr(err.fault_string, cases[i].part))
			fail_msg("case %zu: '%s' not in: %s", i, cases[i].part, err.message);
		if (cases[i].want == WMS_ERR_SOAP_FAULT) {
			assert_string_equal(err.fault_code, "Server");
			assert_string_equal(err.wms_code, "INTERNAL");
		}
		wms_breaker_reset(wms_client_breaker(x.c));
	}
	/* reply_element NULL: any single element */
	op.reply_element = NULL;
	op.reply_namespace = NULL;
	answer(&x, ENV11 "><s:Body><Other/></s:Body></s:Envelope>");
	{
		xmlDocPtr reply = NULL;
		assert_int_equal(wms_call_bytes(&reply, x.c, &op, ship_body, strlen(ship_body), &err),
				 WMS_OK);
		assert_string_equal((const char *)xmlDocGetRootElement(reply)->name, "Other");
		xmlFreeDoc(reply);
	}
	/* larger than max_reply_bytes */
	wms_client_free(x.c);
	{
		wms_client_options o = WMS_CLIENT_OPTIONS_INIT;
		xmlDocPtr reply = NULL;
		o.max_reply_bytes = sizeof(ship_reply) - 2;
		x = setup_client_with(&o);
		op = ship_call();
		answer(&x, ship_reply);
		assert_int_equal(wms_call_bytes(&reply, x.c, &op, ship_body, strlen(ship_body), &err),
				 WMS_ERR_TOO_LARGE);
		assert_null(reply);
		wms_client_free(x.c);
	}
}

/* Bad options and bodies: INVALID_ARG naming what, nothing sent. (Their
 * bounds, at them and one past: limits_at_and_past.) */
static void arguments_refused(void **state)
{
	fx x = setup_client(WMS_SOAP_11);
	wms_call_options op = ship_call();
	xmlDocPtr reply = NULL;
	wms_error err;
	(void)state;

	answer(&x, ENV11 "><s:Body><r/></s:Body></s:Envelope>");
	op.reply_element = NULL;
	op.reply_namespace = NULL;

#define REFUSED(call_expr, part)                                                             \
	do {                                                                                 \
		int before = x.t->sends;                                                     \
		assert_int_equal((call_expr), WMS_ERR_INVALID_ARG);                          \
		assert_int_equal(err.delivery, WMS_DELIVERY_NOT_SENT);                       \
		if (!strstr(err.message, (part)))                                            \
			fail_msg("'%s' not in: %s", (part), err.message);                    \
		assert_int_equal(x.t->sends, before);                                        \
	} while (0)

	op.operation = NULL;
	REFUSED(wms_call_bytes(&reply, x.c, &op, "<r/>", 4, &err), "call.operation must be 1-64");
	op.operation = "Get Status";
	REFUSED(wms_call_bytes(&reply, x.c, &op, "<r/>", 4, &err), "(byte 4 is not)");
	op.operation = "GetStatus";
	/* the action: no quote, no control */
	op.soap_action = "urn:a\"b";
	REFUSED(wms_call_bytes(&reply, x.c, &op, "<r/>", 4, &err), "must not hold");
	op.soap_action = "urn:a\r\nX: y";
	REFUSED(wms_call_bytes(&reply, x.c, &op, "<r/>", 4, &err), "must not hold");
	op.soap_action = "urn:a";
	op.reply_element = "";
	REFUSED(wms_call_bytes(&reply, x.c, &op, "<r/>", 4, &err), "reply_element is empty");
	op.reply_element = NULL;
	op.version = 2;
	REFUSED(wms_call_bytes(&reply, x.c, &op, "<r/>", 4, &err), "call options version 2");
	op.version = WMS_CALL_OPTIONS_VERSION;
	/* bodies */
	REFUSED(wms_call_bytes(&reply, x.c, &op, "", 0, &err), "body is empty");
	REFUSED(wms_call_bytes(&reply, x.c, &op, "<r>", 3, &err), "body: not well-formed");
	REFUSED(wms_call_bytes(&reply, x.c, &op, "<!DOCTYPE r [<!ENTITY e \"x\">]><r>&e;</r>", 39,
			       &err),
		"DOCTYPE refused");
	{
		static const char env[] =
			"<s:Envelope xmlns:s=\"http://schemas.xmlsoap.org/soap/envelope/\"/>";
		REFUSED(wms_call_bytes(&reply, x.c, &op, env, strlen(env), &err),
			"pass the Body's content");
	}
	REFUSED(wms_call(&reply, x.c, &op, NULL, &err), "body is NULL");
	REFUSED(wms_call(NULL, x.c, &op, NULL, &err), "out is NULL");
	REFUSED(wms_call_bytes(&reply, NULL, &op, "<r/>", 4, &err), "client is NULL");
	{
		/* a body past libxml2's own depth (257) */
		static char deep[300 * 7 + 16];
		size_t n = 0;
		for (int i = 0; i < 300; i++)
			n += (size_t)sprintf(deep + n, "<a>");
		for (int i = 0; i < 300; i++)
			n += (size_t)sprintf(deep + n, "</a>");
		REFUSED(wms_call_bytes(&reply, x.c, &op, deep, n, &err), "body: not well-formed");
	}
	assert_null(reply);
	assert_int_equal(wms_call_options_init(&op, 1), WMS_OK);
	assert_null(op.operation);
	assert_int_equal(wms_call_options_init(&op, 2), WMS_ERR_INVALID_ARG);
	wms_client_free(x.c);
}

/* Per-operation breakers: a generic operation gets its own, named
 * "<base>.<operation>", listed with the others; a typed operation's name
 * shares that breaker; WMS_MAX_CALL_OPERATIONS of them and no more, twice. */
static void per_operation_breakers(void **state)
{
	wms_client_options o = WMS_CLIENT_OPTIONS_INIT;
	wms_call_options op = ship_call();
	wms_breaker *list[64];
	wms_breaker_snapshot snap;
	xmlDocPtr reply = NULL;
	wms_error err;
	char name[32];
	int sends;
	fx x;
	(void)state;

	assert_int_equal(WMS_MAX_CALL_OPERATIONS, 32); /* as documented */
	o.breaker_scope = WMS_BREAKER_SCOPE_PER_OPERATION;
	o.breaker_options.name = "wh";
	x = setup_client_with(&o);
	answer(&x, ENV11 "><s:Body><r/></s:Body></s:Envelope>");
	op.reply_element = NULL;
	op.reply_namespace = NULL;
	op.operation = "GetOrderStatus"; /* the typed one's breaker */
	assert_int_equal(wms_call_bytes(&reply, x.c, &op, "<r/>", 4, &err), WMS_OK);
	xmlFreeDoc(reply);
	assert_int_equal(wms_client_breakers(list, 64, x.c), 4);
	for (int round = 0; round < 2; round++) {
		for (int i = 0; i < WMS_MAX_CALL_OPERATIONS; i++) {
			snprintf(name, sizeof(name), "Op%02d", i);
			op.operation = name;
			assert_int_equal(wms_call_bytes(&reply, x.c, &op, "<r/>", 4, &err), WMS_OK);
			xmlFreeDoc(reply);
		}
		assert_int_equal(wms_client_breakers(list, 64, x.c), 4 + WMS_MAX_CALL_OPERATIONS);
		op.operation = "OneTooMany";
		sends = x.t->sends;
		assert_int_equal(wms_call_bytes(&reply, x.c, &op, "<r/>", 4, &err),
				 WMS_ERR_INVALID_ARG);
		assert_null(reply);
		assert_int_equal(err.delivery, WMS_DELIVERY_NOT_SENT);
		assert_int_equal(x.t->sends, sends);
		assert_non_null(strstr(err.message, "operation 'OneTooMany': this client already "
						    "keeps breakers for 32 other operations"));
		assert_null(wms_client_breaker_for(x.c, "OneTooMany"));
	}
	wms_breaker_snapshot_get(&snap, list[4 + 7]);
	assert_string_equal(snap.name, "wh.Op07");
	assert_int_equal(snap.successes, 2);
	assert_ptr_equal(wms_client_breaker_for(x.c, "Op07"), list[4 + 7]);
	/* a failure of one generic operation opens its breaker only */
	x.t->next.fail = WMS_ERR_CONNECT;
	x.t->next.delivery = WMS_DELIVERY_NOT_SENT;
	op.operation = "Op03";
	for (int i = 0; i < 5; i++)
		wms_call_bytes(&reply, x.c, &op, "<r/>", 4, &err);
	assert_int_equal(wms_call_bytes(&reply, x.c, &op, "<r/>", 4, &err), WMS_ERR_CIRCUIT_OPEN);
	assert_int_equal(err.delivery, WMS_DELIVERY_NOT_SENT);
	assert_int_equal(wms_breaker_state_get(list[4 + 3]), WMS_BREAKER_STATE_OPEN);
	assert_int_equal(wms_breaker_state_get(list[4 + 4]), WMS_BREAKER_STATE_CLOSED);
	{
		char *doc = NULL;
		assert_int_equal(wms_client_health_json(&doc, x.c), WMS_OK);
		/* the health document lists the first 8 breakers (health.c) */
		assert_non_null(strstr(doc, "\"name\":\"wh.Op00\""));
		wms_free(doc);
	}
	wms_client_free(x.c);
}

/* The first call of a generic operation makes its breaker and sends its
 * first gauge sample; a metrics callback that asks the client for that
 * breaker and its bulkhead then must not wait on the client's lock. */
static wms_client *metric_client;
static int metric_found;

static void on_metric_lookup(const wms_metric *m, void *payload)
{
	wms_bulkhead_snapshot snap;
	(void)payload;
	if (m->operation && strcmp(m->operation, "Lookup") == 0) {
		metric_found += wms_client_breaker_for(metric_client, m->operation) != NULL;
		metric_found += wms_client_bulkhead_get(&snap, metric_client, m->operation) == WMS_OK;
	}
}

static void metric_callback_may_look_up(void **state)
{
	wms_client_options o = WMS_CLIENT_OPTIONS_INIT;
	wms_call_options op = ship_call();
	xmlDocPtr reply = NULL;
	wms_error err;
	fx x;
	(void)state;

	o.breaker_scope = WMS_BREAKER_SCOPE_PER_OPERATION;
	o.callbacks.on_metric = on_metric_lookup;
	x = setup_client_with(&o);
	metric_client = x.c;
	answer(&x, ENV11 "><s:Body><r/></s:Body></s:Envelope>");
	op.operation = "Lookup";
	op.reply_element = NULL;
	op.reply_namespace = NULL;
	assert_int_equal(wms_call_bytes(&reply, x.c, &op, "<q/>", 4, &err), WMS_OK);
	xmlFreeDoc(reply);
	assert_int_equal(metric_found, 2);
	wms_client_free(x.c);
}

/* Retries: an idempotent operation is resent after UNKNOWN, any other only
 * after NOT_SENT. */
static void retries_and_idempotency(void **state)
{
	wms_client_options o = WMS_CLIENT_OPTIONS_INIT;
	wms_call_options op = ship_call();
	xmlDocPtr reply = NULL;
	wms_error err;
	fx x;
	(void)state;

	o.retry.max_attempts = 3;
	o.retry.initial_backoff_ms = 1;
	o.retry.max_backoff_ms = 1;
	o.breaker_options.failure_threshold = 100;
	x = setup_client_with(&o);
	x.t->seq_len = 2;
	x.t->seq[0].fail = WMS_ERR_TIMEOUT;
	x.t->seq[0].delivery = WMS_DELIVERY_UNKNOWN;
	x.t->seq[1].status = 200;
	x.t->seq[1].body = ship_reply;
	x.t->seq[1].content_type = "text/xml";
	assert_int_equal(wms_call_bytes(&reply, x.c, &op, ship_body, strlen(ship_body), &err),
			 WMS_OK);
	assert_int_equal(err.attempts, 2);
	xmlFreeDoc(reply);

	x.t->sends = 0;
	op.idempotent = 0;
	assert_int_equal(wms_call_bytes(&reply, x.c, &op, ship_body, strlen(ship_body), &err),
			 WMS_ERR_TIMEOUT);
	assert_int_equal(err.attempts, 1);
	assert_int_equal(err.delivery, WMS_DELIVERY_UNKNOWN);
	assert_int_equal(x.t->sends, 1);
	assert_null(reply);

	x.t->sends = 0;
	x.t->seq[0].fail = WMS_ERR_CONNECT;
	x.t->seq[0].delivery = WMS_DELIVERY_NOT_SENT;
	assert_int_equal(wms_call_bytes(&reply, x.c, &op, ship_body, strlen(ship_body), &err),
			 WMS_OK);
	assert_int_equal(err.attempts, 2);
	xmlFreeDoc(reply);
	wms_client_free(x.c);
}

/* WS-Security: the header goes before the Body, a digest's password never
 * on the wire; an open breaker refuses before sending. (The wire log: the
 * wire_log_ tests below; the bulkhead: test_bulkhead.) */
static void wsse_and_refusals(void **state)
{
	wms_client_options o = WMS_CLIENT_OPTIONS_INIT;
	wms_call_options op = ship_call();
	xmlDocPtr reply = NULL;
	wms_error err;
	fx x;
	(void)state;

	o.wsse.mode = WMS_WSSE_PASSWORD_DIGEST;
	o.wsse.username = "svc";
	o.wsse.password = "s3cret";
	x = setup_client_with(&o);
	answer(&x, ship_reply);
	assert_int_equal(wms_call_bytes(&reply, x.c, &op, ship_body, strlen(ship_body), &err),
			 WMS_OK);
	xmlFreeDoc(reply);
	assert_non_null(strstr(x.t->last_body, "<soap:Header><wsse:Security"));
	assert_non_null(strstr(x.t->last_body, "<wsse:Username>svc</wsse:Username>"));
	assert_null(strstr(x.t->last_body, "s3cret"));
	assert_true(strstr(x.t->last_body, "</soap:Header><soap:Body><sh:GetShipmentStatus") != NULL);

	wms_breaker_force_open(wms_client_breaker(x.c));
	x.t->sends = 0;
	assert_int_equal(wms_call_bytes(&reply, x.c, &op, ship_body, strlen(ship_body), &err),
			 WMS_ERR_CIRCUIT_OPEN);
	assert_int_equal(x.t->sends, 0);
	assert_null(reply);
	wms_client_free(x.c);
}

/* ---- the wire log of a generic call -------------------------------------- */

#define WSSE_PW "wsse-pw-Qm41-canary"
#define BODY_PW "body-pw-Lx09-canary"
#define REPLY_PW "reply-pw-Tt55-canary"

typedef struct wire_rec {
	char id[64];
	char op[80];
	wms_wire_direction dir;
	uint32_t attempt;
	long http_status;
	wms_status status;
} wire_rec;

typedef struct wirelog {
	int n;
	wire_rec r[8];
	char text[16384]; /* every record's body, one per line */
} wirelog;

static void on_wire(const wms_wire_record *r, void *payload)
{
	wirelog *w = payload;
	size_t used = strlen(w->text);
	if (w->n < 8) {
		wire_rec *e = &w->r[w->n];
		snprintf(e->id, sizeof(e->id), "%s", r->correlation_id ? r->correlation_id : "");
		snprintf(e->op, sizeof(e->op), "%s", r->operation ? r->operation : "");
		e->dir = r->direction;
		e->attempt = r->attempt;
		e->http_status = r->http_status;
		e->status = r->status;
	}
	w->n++;
	snprintf(w->text + used, sizeof(w->text) - used, "%.*s\n", (int)r->body_len, r->body);
}

static int count_of(const char *hay, const char *needle)
{
	int n = 0;
	for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
		n++;
	return n;
}

/* The text of the first <tag>...</tag> (or <tag attr...>...</tag>) in xml,
 * into out; 0 if there is none. */
static int element_text(char *out, size_t size, const char *xml, const char *tag)
{
	char open[64];
	size_t n = (size_t)snprintf(open, sizeof(open), "<%s", tag);
	const char *p, *gt, *end;
	for (p = strstr(xml, open); p && p[n] != '>' && p[n] != ' '; p = strstr(p + n, open))
		;
	if (!p || !(gt = strchr(p, '>')) || !(end = strstr(gt, "</")))
		return 0;
	snprintf(out, size, "%.*s", (int)(end - gt - 1), gt + 1);
	return 1;
}

static const char cred_body[] =
	"<sh:SetCredentials xmlns:sh=\"" SHIP_NS "\"><sh:user>ops</sh:user>"
	"<sh:Password>" BODY_PW "</sh:Password></sh:SetCredentials>";
static const char cred_reply[] =
	ENV11 "><s:Body><sh:SetCredentialsResponse xmlns:sh=\"" SHIP_NS "\"><sh:ok>true</sh:ok>"
	"<sh:Password>" REPLY_PW "</sh:Password></sh:SetCredentialsResponse></s:Body></s:Envelope>";

static wms_call_options cred_call(void)
{
	wms_call_options o = WMS_CALL_OPTIONS_INIT;
	o.operation = "SetCredentials";
	o.soap_action = "urn:example:wms/SetCredentials";
	o.reply_namespace = SHIP_NS;
	o.reply_element = "SetCredentialsResponse";
	o.idempotent = 1;
	return o;
}

/* A generic call's wire log: a request and a reply record under the
 * call's correlation id (the error's, and the X-Correlation-Id the
 * transport was given), named after the operation; the WS-Security
 * password (in clear in the envelope), a Password in the caller's own body
 * and one in the reply are all sent or received, and none is in the log,
 * while the rest of each body is. A second call has another id. */
static void wire_log_redacted_and_correlated(void **state)
{
	wms_client_options o = WMS_CLIENT_OPTIONS_INIT;
	wms_call_options op = cred_call();
	xmlDocPtr reply = NULL;
	char first[64];
	wirelog w;
	wms_error err;
	fx x;
	(void)state;

	memset(&w, 0, sizeof(w));
	o.wsse.mode = WMS_WSSE_PASSWORD_TEXT;
	o.wsse.username = "svc";
	o.wsse.password = WSSE_PW;
	o.callbacks.on_wire = on_wire;
	o.callbacks.payload = &w;
	x = setup_client_with(&o);
	answer(&x, cred_reply);
	assert_int_equal(wms_call_bytes(&reply, x.c, &op, cred_body, strlen(cred_body), &err),
			 WMS_OK);
	/* the caller gets the reply as the WMS sent it */
	assert_non_null(reply);
	{
		char *v = child_text(xmlDocGetRootElement(reply), "Password");
		assert_string_equal(v, REPLY_PW);
		xmlFree(v);
	}
	xmlFreeDoc(reply);
	/* the WMS got both secrets: the log below could have held them */
	assert_non_null(strstr(x.t->last_body, ">" WSSE_PW "</wsse:Password>"));
	assert_non_null(strstr(x.t->last_body, ">" BODY_PW "</sh:Password>"));

	assert_int_equal(w.n, 2);
	assert_int_equal(w.r[0].dir, WMS_WIRE_REQUEST);
	assert_int_equal(w.r[1].dir, WMS_WIRE_REPLY);
	assert_true(strlen(err.correlation_id) > 0);
	assert_string_equal(w.r[0].id, err.correlation_id);
	assert_string_equal(w.r[1].id, err.correlation_id);
	assert_string_equal(x.t->last_correlation_id, err.correlation_id);
	for (int i = 0; i < 2; i++) {
		assert_string_equal(w.r[i].op, "SetCredentials");
		assert_int_equal(w.r[i].attempt, 1);
	}
	assert_int_equal(w.r[1].http_status, 200);
	assert_int_equal(w.r[1].status, WMS_OK);
	assert_null(strstr(w.text, WSSE_PW));
	assert_null(strstr(w.text, BODY_PW));
	assert_null(strstr(w.text, REPLY_PW));
	assert_int_equal(count_of(w.text, ">REDACTED</"), 3);
	/* redacted, not withheld: the rest of each body is there */
	assert_non_null(strstr(w.text, "<wsse:Username>svc</wsse:Username>"));
	assert_non_null(strstr(w.text, "<sh:user>ops</sh:user>"));
	assert_non_null(strstr(w.text, "<sh:ok>true</sh:ok>"));
	assert_null(strstr(err.message, WSSE_PW));

	snprintf(first, sizeof(first), "%s", err.correlation_id);
	assert_int_equal(wms_call_bytes(&reply, x.c, &op, cred_body, strlen(cred_body), &err),
			 WMS_OK);
	xmlFreeDoc(reply);
	assert_int_equal(w.n, 4);
	assert_string_not_equal(err.correlation_id, first);
	assert_string_equal(w.r[2].id, err.correlation_id);
	assert_string_equal(w.r[3].id, err.correlation_id);
	wms_client_free(x.c);
}

/* With retries, every attempt of one generic call logs under the one id,
 * numbered; a PasswordDigest's Nonce is redacted too (its value, which
 * the WMS got, is nowhere in the log), and so is the body's Password on
 * each attempt. */
static void wire_log_of_retries_and_digest(void **state)
{
	wms_client_options o = WMS_CLIENT_OPTIONS_INIT;
	wms_call_options op = cred_call();
	xmlDocPtr reply = NULL;
	char nonce[128], digest[128];
	wirelog w;
	wms_error err;
	fx x;
	(void)state;

	memset(&w, 0, sizeof(w));
	o.wsse.mode = WMS_WSSE_PASSWORD_DIGEST;
	o.wsse.username = "svc";
	o.wsse.password = WSSE_PW;
	o.callbacks.on_wire = on_wire;
	o.callbacks.payload = &w;
	o.retry.max_attempts = 2;
	o.retry.initial_backoff_ms = 1;
	o.retry.max_backoff_ms = 1;
	x = setup_client_with(&o);
	x.t->seq_len = 2;
	x.t->seq[0].fail = WMS_ERR_TIMEOUT;
	x.t->seq[0].delivery = WMS_DELIVERY_UNKNOWN;
	x.t->seq[1].status = 200;
	x.t->seq[1].content_type = "text/xml";
	x.t->seq[1].body = cred_reply;
	assert_int_equal(wms_call_bytes(&reply, x.c, &op, cred_body, strlen(cred_body), &err),
			 WMS_OK);
	xmlFreeDoc(reply);
	assert_int_equal(err.attempts, 2);
	assert_int_equal(x.t->sends, 2);
	assert_true(element_text(nonce, sizeof(nonce), x.t->last_body, "wsse:Nonce"));
	assert_true(element_text(digest, sizeof(digest), x.t->last_body, "wsse:Password"));
	assert_true(strlen(nonce) >= 16 && strlen(digest) >= 16);

	assert_int_equal(w.n, 4);
	for (int i = 0; i < 4; i++) {
		assert_string_equal(w.r[i].id, err.correlation_id);
		assert_string_equal(w.r[i].op, "SetCredentials");
		assert_int_equal(w.r[i].dir, i % 2 ? WMS_WIRE_REPLY : WMS_WIRE_REQUEST);
		assert_int_equal(w.r[i].attempt, (uint32_t)(i / 2 + 1));
	}
	assert_int_equal(w.r[1].status, WMS_ERR_TIMEOUT);
	assert_int_equal(w.r[1].http_status, 0);
	assert_int_equal(w.r[3].status, WMS_OK);
	assert_null(strstr(w.text, nonce));
	assert_null(strstr(w.text, digest));
	assert_null(strstr(w.text, BODY_PW));
	assert_null(strstr(w.text, REPLY_PW));
	assert_null(strstr(w.text, WSSE_PW));
	/* two requests (Password and Nonce of WS-Security, the body's
	 * Password) and the reply's Password */
	assert_int_equal(count_of(w.text, ">REDACTED</"), 2 * 3 + 1);
	wms_client_free(x.c);
}

/* ---- every limit of a generic call, at it and one past --------------------- */

/* The fake transport, with the whole of the last request kept (the fake
 * keeps 127 bytes of the action and 8 KiB of the body): what went out at a
 * bound is checked whole. */
typedef struct whole {
	wms_transport t;
	wms_transport *fake;
	char *operation, *action, *ctype, *body;
} whole;

static char *dup_of(const char *s, size_t n)
{
	char *d = test_malloc(n + 1);
	memcpy(d, s, n);
	d[n] = '\0';
	return d;
}

static void whole_drop(whole *w)
{
	test_free(w->operation);
	test_free(w->action);
	test_free(w->ctype);
	test_free(w->body);
	w->operation = w->action = w->ctype = w->body = NULL;
}

static wms_status whole_send(wms_transport *t, const wms_http_request *req,
			     wms_http_response *resp, wms_error *err)
{
	whole *w = (whole *)t;
	whole_drop(w);
	w->operation = dup_of(req->operation, strlen(req->operation));
	w->action = dup_of(req->soap_action, strlen(req->soap_action));
	w->ctype = dup_of(req->content_type, strlen(req->content_type));
	w->body = dup_of(req->body, req->body_len);
	return w->fake->send(w->fake, req, resp, err);
}

static void whole_free(wms_transport *t)
{
	whole *w = (whole *)t;
	whole_drop(w);
	w->fake->free(w->fake);
	test_free(w);
}

/* A client over a whole-keeping fake; x->t is the fake, to script. */
static whole *whole_client(fx *x, wms_client_options *o)
{
	whole *w = test_calloc(1, sizeof(*w));
	wms_error err;
	w->t.version = WMS_TRANSPORT_VERSION;
	w->t.send = whole_send;
	w->t.free = whole_free;
	w->fake = fake_transport_new(&x->t);
	o->endpoint = "http://wms.invalid/wms";
	o->transport = &w->t;
	assert_int_equal(wms_client_new(&x->c, o, &err), WMS_OK);
	return w;
}

/* Text built up with printf, on cmocka's allocator. */
typedef struct text {
	char *s;
	size_t len, cap;
} text;

static void put(text *t, const char *fmt, ...)
{
	va_list ap;
	int n;
	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	assert_true(n >= 0);
	if (t->len + (size_t)n + 1 > t->cap) {
		t->cap = (t->len + (size_t)n + 1) * 2;
		t->s = test_realloc(t->s, t->cap);
	}
	va_start(ap, fmt);
	vsnprintf(t->s + t->len, t->cap - t->len, fmt, ap);
	va_end(ap);
	t->len += (size_t)n;
}

/* The request bodies, n of what the row counts, written as libxml2 writes
 * them back (the envelope must hold them byte for byte). */
static void body_depth(text *t, unsigned n) /* n elements, each in the one before */
{
	for (unsigned i = 1; i < n; i++)
		put(t, "<a>");
	put(t, "<a/>");
	for (unsigned i = 1; i < n; i++)
		put(t, "</a>");
}

static void body_elements(text *t, unsigned n) /* n elements in all */
{
	put(t, "<r>");
	for (unsigned i = 1; i < n; i++)
		put(t, "<e/>");
	put(t, "</r>");
}

static void attrs(text *t, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		put(t, " a%u=\"\"", i);
}

static void ns_decls(text *t, unsigned first, unsigned n)
{
	for (unsigned i = first; i < first + n; i++)
		put(t, " xmlns:p%u=\"urn:p:%u\"", i, i);
}

static void body_attrs(text *t, unsigned n) /* on one element */
{
	put(t, "<r");
	attrs(t, n);
	put(t, "/>");
}

static void body_ns_decls(text *t, unsigned n) /* on one element */
{
	put(t, "<r");
	ns_decls(t, 0, n);
	put(t, "/>");
}

/* n in scope on the inner element, with the Envelope's own: 64 on the
 * outer, the rest on the inner (each within the 64 of one element). */
static void body_scope(text *t, unsigned n)
{
	put(t, "<r");
	ns_decls(t, 0, 64);
	put(t, "><c");
	ns_decls(t, 64, n - 64);
	put(t, "/></r>");
}

/* An XML declaration of n characters, "<?" to "?>", opening the body. */
static void xml_decl(text *t, unsigned n)
{
	static const char v[] = "<?xml version=\"1.0\"";
	put(t, "%s%*s?>", v, (int)(n - (sizeof(v) - 1) - 2), "");
}

static void body_decl(text *t, unsigned n)
{
	xml_decl(t, n);
	put(t, "<r/>");
}

/* The replies: a SOAP 1.1 Envelope whose Body holds <r>, n of what the
 * row counts in it. */
#define REPLY_OPEN "<s:Envelope xmlns:s=\"http://schemas.xmlsoap.org/soap/envelope/\">"

static void reply_depth(text *t, unsigned n) /* n levels, Envelope and Body included */
{
	put(t, REPLY_OPEN "<s:Body><r>");
	body_depth(t, n - 3);
	put(t, "</r></s:Body></s:Envelope>");
}

static void reply_elements(text *t, unsigned n) /* n elements, Envelope and Body included */
{
	put(t, REPLY_OPEN "<s:Body>");
	body_elements(t, n - 2);
	put(t, "</s:Body></s:Envelope>");
}

static void reply_attrs(text *t, unsigned n)
{
	put(t, REPLY_OPEN "<s:Body>");
	body_attrs(t, n);
	put(t, "</s:Body></s:Envelope>");
}

static void reply_ns_decls(text *t, unsigned n)
{
	put(t, REPLY_OPEN "<s:Body>");
	body_ns_decls(t, n);
	put(t, "</s:Body></s:Envelope>");
}

static void reply_scope(text *t, unsigned n) /* the Envelope's 1, the Body's, <r>'s 64 */
{
	put(t, REPLY_OPEN "<s:Body");
	ns_decls(t, 0, n - 1 - 64);
	put(t, "><r");
	ns_decls(t, n - 1 - 64, 64);
	put(t, "/></s:Body></s:Envelope>");
}

/* n distinct element names in <r>. The parser counts every name libxml2
 * interns: with the reply's own (s, its URI, Envelope, Body, r) and the
 * three libxml2 2.9 adds, 4088 make the 4096 of the limit. */
static void reply_names(text *t, unsigned n)
{
	put(t, REPLY_OPEN "<s:Body><r>");
	for (unsigned i = 0; i < n; i++)
		put(t, "<e%u/>", i);
	put(t, "</r></s:Body></s:Envelope>");
}

static void reply_decl(text *t, unsigned n)
{
	xml_decl(t, n);
	put(t, REPLY_OPEN "<s:Body><r/></s:Body></s:Envelope>");
}

static void reply_bytes(text *t, unsigned n) /* n bytes in all */
{
	static const char open[] = REPLY_OPEN "<s:Body><r>", close[] = "</r></s:Body></s:Envelope>";
	put(t, "%s%*s%s", open, (int)(n - (sizeof(open) - 1) - (sizeof(close) - 1)), "", close);
}

/* What a row crosses: an option of the call, the request's body (as bytes
 * and as a node, or as bytes only), or the reply. */
typedef enum limit_kind { L_OPERATION, L_ACTION, L_BODY, L_BODY_BYTES, L_REPLY } limit_kind;

typedef struct limit_row {
	const char *name;
	limit_kind kind;
	unsigned at, past;              /* the value taken, the one refused */
	void (*make)(text *, unsigned); /* the body or reply of a value */
	unsigned got;                   /* L_REPLY: what got_count finds in the answer at `at` */
	unsigned (*got_count)(xmlNodePtr root);
	wms_soap_version v;
	option_field opt;               /* a client option the row sets */
	wms_status refused;             /* one past: this status and delivery */
	wms_delivery delivery;
	const char *field, *says;       /* the refusal's message starts with field, holds says */
} limit_row;

static unsigned tree_depth(xmlNodePtr n)
{
	unsigned d = 0;
	for (xmlNodePtr c = n->children; c; c = c->next)
		if (c->type == XML_ELEMENT_NODE) {
			unsigned cd = tree_depth(c);
			d = cd > d ? cd : d;
		}
	return d + 1;
}

static unsigned tree_elements(xmlNodePtr n)
{
	unsigned k = 1;
	for (xmlNodePtr c = n->children; c; c = c->next)
		if (c->type == XML_ELEMENT_NODE)
			k += tree_elements(c);
	return k;
}

static unsigned root_attrs(xmlNodePtr n)
{
	unsigned k = 0;
	for (xmlAttrPtr a = n->properties; a; a = a->next)
		k++;
	return k;
}

static unsigned root_ns_decls(xmlNodePtr n) /* the copy declares all in scope */
{
	unsigned k = 0;
	for (xmlNsPtr d = n->nsDef; d; d = d->next)
		k++;
	return k;
}

/* The operation's name or the action: n bytes whose ends show a cut. */
static void name_of(char *buf, unsigned n, char first, char fill, char last)
{
	if (n >= 2)
		fill_text(buf, n, first, fill, last);
	else
		snprintf(buf, 2, "%.*s", (int)n, &first);
}

static const char r_reply[] = ENV11 "><s:Body><r/></s:Body></s:Envelope>";

/* One generic call of a row at value n: the call's options, body and the
 * WMS's answer as the row makes them, bytes or (node) a tree. */
static wms_status row_call(xmlDocPtr *reply, fx *x, const limit_row *row, unsigned n, int node,
			   text *made, wms_error *err)
{
	static char name[600], action[600];
	wms_call_options op = WMS_CALL_OPTIONS_INIT;
	const char *body = "<q/>";
	wms_status st;

	op.operation = "Limits";
	op.reply_element = "r";
	made->len = 0;
	if (made->s)
		made->s[0] = '\0';
	answer(x, r_reply);
	switch (row->kind) {
	case L_OPERATION:
		name_of(name, n, 'A', 'b', 'Z');
		op.operation = name;
		break;
	case L_ACTION:
		name_of(action, n, 'u', 'x', 'Z');
		op.soap_action = action;
		break;
	case L_BODY:
	case L_BODY_BYTES:
		row->make(made, n);
		body = made->s;
		break;
	case L_REPLY:
		row->make(made, n);
		answer(x, made->s);
		break;
	}
	if (!node)
		return wms_call_bytes(reply, x->c, &op, body, strlen(body), err);
	{
		xmlDocPtr mine = xmlReadMemory(body, (int)strlen(body), NULL, NULL, 0);
		assert_non_null(mine);
		st = wms_call(reply, x->c, &op, xmlDocGetRootElement(mine), err);
		xmlFreeDoc(mine);
		return st;
	}
}

/* At the value taken: sent and answered, what was sent whole, the answer
 * as the WMS gave it. */
static void row_taken(fx *x, whole *w, const limit_row *row, int node, text *made)
{
	char want[700];
	xmlDocPtr reply = NULL;
	wms_error err;
	int before = x->t->sends;
	wms_status st = row_call(&reply, x, row, row->at, node, made, &err);

	if (st != WMS_OK)
		fail_msg("%s at %u%s: %s, %s", row->name, row->at, node ? " (a node)" : "",
			 wms_status_name(st), err.message);
	assert_int_equal(err.delivery, WMS_DELIVERY_ANSWERED);
	assert_int_equal(x->t->sends, before + 1);
	assert_non_null(reply);
	switch (row->kind) {
	case L_OPERATION:
		name_of(want, row->at, 'A', 'b', 'Z');
		assert_string_equal(w->operation, want);
		/* wms_error.operation holds its first 31 bytes (errors.h) */
		assert_int_equal(strlen(err.operation),
				 strlen(want) < sizeof(err.operation) ? strlen(want) : sizeof(err.operation) - 1);
		assert_memory_equal(err.operation, want, strlen(err.operation));
		if (row->opt.size) { /* per operation: its own breaker, keyed by the whole name */
			wms_breaker_snapshot snap;
			wms_breaker *b = wms_client_breaker_for(x->c, want);
			assert_non_null(b);
			wms_breaker_snapshot_get(&snap, b);
			assert_string_equal(snap.name + 4, want);
			assert_memory_equal(snap.name, "wms.", 4);
		}
		break;
	case L_ACTION:
		name_of(want, row->at, 'u', 'x', 'Z');
		assert_string_equal(w->action, want);
		if (row->v == WMS_SOAP_12) {
			char ctype[700];
			snprintf(ctype, sizeof(ctype),
				 "application/soap+xml; charset=utf-8; action=\"%s\"", want);
			assert_string_equal(w->ctype, ctype);
		} else {
			assert_string_equal(w->ctype, "text/xml; charset=utf-8");
		}
		break;
	case L_BODY:
	case L_BODY_BYTES: {
		/* the body as it was given, in the Body, whole (an XML
		 * declaration opening it aside) */
		const char *el = made->s;
		if (strncmp(el, "<?", 2) == 0)
			el = strstr(el, "?>") + 2;
		if (!strstr(w->body, el))
			fail_msg("%s at %u: the body was not sent whole", row->name, row->at);
		break;
	}
	case L_REPLY: {
		unsigned got = row->got_count(xmlDocGetRootElement(reply));
		if (got != row->got)
			fail_msg("%s at %u: %u in the answer, not %u", row->name, row->at, got,
				 row->got);
		break;
	}
	}
	assert_string_equal((const char *)xmlDocGetRootElement(reply)->name, "r");
	xmlFreeDoc(reply);
}

/* One past: refused with the row's status, the message naming the field and
 * the limit; nothing sent (a request) or nothing handed out (a reply). */
static void row_refused(fx *x, const limit_row *row, int node, text *made)
{
	xmlDocPtr reply = (xmlDocPtr)x; /* must come back NULL */
	wms_error err;
	int before = x->t->sends;
	wms_status st = row_call(&reply, x, row, row->past, node, made, &err);

	if (st != row->refused)
		fail_msg("%s at %u%s: %s (not %s), %s", row->name, row->past,
			 node ? " (a node)" : "", wms_status_name(st),
			 wms_status_name(row->refused),
			 err.message);
	assert_int_equal(err.status, st);
	assert_null(reply);
	if (strncmp(err.message, row->field, strlen(row->field)) != 0 ||
	    !strstr(err.message, row->says))
		fail_msg("%s at %u: the message should start with '%s' and hold '%s': %s",
			 row->name, row->past, row->field, row->says, err.message);
	assert_int_equal(err.delivery, row->delivery);
	if (row->kind == L_REPLY) {
		assert_int_equal(x->t->sends, before + 1);
	} else {
		assert_int_equal(x->t->sends, before);
		assert_int_equal(err.attempts, 0);
	}
}

/*
 * Every limit on what a generic call is given or answered: at its value
 * the call is sent and answered and what went out or came back is whole;
 * one past it is refused with the documented status, a message naming the
 * field and the limit, and for a request nothing sent; twice in a row on
 * one client, which then makes an ordinary call. A body's limits are those
 * of a reply (README "Limits on a reply"), held by the envelope the body
 * goes into: its Envelope and Body take 2 of the 256 levels and of the
 * 100 000 elements, and the Envelope's declaration 1 of the 128 in scope.
 */
static void limits_at_and_past(void **state)
{
	/* a request refused: nothing sent */
#define NOT_SENT_ARG WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT
#define PER_OP OPTION_FIELD(wms_client_options, breaker_scope, WMS_BREAKER_SCOPE_PER_OPERATION)
	static const limit_row rows[] = {
		{ "operation, 64 bytes", L_OPERATION, 64, 65, NULL, 0, NULL, WMS_SOAP_11, PER_OP,
		  NOT_SENT_ARG, "call.operation", "must be 1-64 bytes" },
		{ "operation, 1 byte", L_OPERATION, 1, 0, NULL, 0, NULL, WMS_SOAP_11, PER_OP,
		  NOT_SENT_ARG, "call.operation", "must be 1-64 bytes" },
		{ "soap_action, 512 bytes (SOAP 1.1)", L_ACTION, 512, 513, NULL, 0, NULL,
		  WMS_SOAP_11, NO_FIELD, NOT_SENT_ARG, "call.soap_action",
		  "longer than 512 bytes" },
		/* the action in the Content-Type */
		{ "soap_action, 512 bytes (SOAP 1.2)", L_ACTION, 512, 513, NULL, 0, NULL,
		  WMS_SOAP_12, NO_FIELD, NOT_SENT_ARG, "call.soap_action",
		  "longer than 512 bytes" },
		{ "body depth, 254 levels", L_BODY, 254, 255, body_depth, 0, NULL, WMS_SOAP_11,
		  NO_FIELD, NOT_SENT_ARG, "body", "limit of 256 levels" },
		{ "body elements, 99 998", L_BODY, 99998, 99999, body_elements, 0, NULL,
		  WMS_SOAP_11, NO_FIELD, NOT_SENT_ARG, "body",
		  "limit of 100000 elements in one document" },
		{ "body attributes on one element, 256", L_BODY, 256, 257, body_attrs, 0, NULL,
		  WMS_SOAP_11, NO_FIELD, NOT_SENT_ARG, "body",
		  "limit of 256 attributes on one element" },
		{ "body namespace declarations on one element, 64", L_BODY, 64, 65, body_ns_decls,
		  0, NULL, WMS_SOAP_12, NO_FIELD, NOT_SENT_ARG, "body",
		  "limit of 64 namespace declarations on one element" },
		{ "body namespace declarations in scope, 127", L_BODY, 127, 128, body_scope, 0,
		  NULL, WMS_SOAP_11, NO_FIELD, NOT_SENT_ARG, "body",
		  "limit of 128 namespace declarations in scope" },
		{ "body's XML declaration, 511 characters", L_BODY_BYTES, 511, 512, body_decl, 0,
		  NULL, WMS_SOAP_11, NO_FIELD, NOT_SENT_ARG, "body", "past 511 characters" },
		/* the fake returns wms_http_response_append's TOO_LARGE as it is,
		 * without a message of its own: the client's says the rest */
		{ "reply bytes, max_reply_bytes 4096", L_REPLY, 4096, 4097, reply_bytes, 1,
		  tree_elements, WMS_SOAP_11,
		  OPTION_FIELD(wms_client_options, max_reply_bytes, 4096),
		  WMS_ERR_TOO_LARGE, WMS_DELIVERY_UNKNOWN, "reply",
		  "exceeds max_reply_bytes (4096)" },
		{ "reply depth, 256 levels", L_REPLY, 256, 257, reply_depth, 254, tree_depth,
		  WMS_SOAP_11, NO_FIELD, WMS_ERR_NOT_XML, WMS_DELIVERY_UNKNOWN, "reply",
		  "Excessive depth in document: 256" },
		{ "reply elements, 100 000", L_REPLY, 100000, 100001, reply_elements, 99998,
		  tree_elements, WMS_SOAP_11, NO_FIELD, WMS_ERR_UNEXPECTED_REPLY,
		  WMS_DELIVERY_UNKNOWN, "reply", "limit of 100000 elements in one document" },
		{ "reply attributes on one element, 256", L_REPLY, 256, 257, reply_attrs, 256,
		  root_attrs, WMS_SOAP_11, NO_FIELD, WMS_ERR_UNEXPECTED_REPLY,
		  WMS_DELIVERY_UNKNOWN, "reply", "limit of 256 attributes on one element" },
		/* the copy handed back declares the Envelope's one on <r> too */
		{ "reply namespace declarations on one element, 64", L_REPLY, 64, 65,
		  reply_ns_decls, 65, root_ns_decls, WMS_SOAP_11, NO_FIELD,
		  WMS_ERR_UNEXPECTED_REPLY, WMS_DELIVERY_UNKNOWN, "reply",
		  "limit of 64 namespace declarations on one element" },
		{ "reply namespace declarations in scope, 128", L_REPLY, 128, 129, reply_scope,
		  128, root_ns_decls, WMS_SOAP_11, NO_FIELD, WMS_ERR_UNEXPECTED_REPLY,
		  WMS_DELIVERY_UNKNOWN, "reply", "limit of 128 namespace declarations in scope" },
		{ "reply distinct names, 4096", L_REPLY, 4088, 4089, reply_names, 4089,
		  tree_elements, WMS_SOAP_11, NO_FIELD, WMS_ERR_UNEXPECTED_REPLY,
		  WMS_DELIVERY_UNKNOWN, "reply", "more than 4096 distinct names" },
		{ "reply's XML declaration, 511 characters", L_REPLY, 511, 512, reply_decl, 1,
		  tree_elements, WMS_SOAP_11, NO_FIELD, WMS_ERR_NOT_XML, WMS_DELIVERY_UNKNOWN,
		  "reply", "past 511 characters" },
	};
#undef NOT_SENT_ARG
#undef PER_OP
	text made = { NULL, 0, 0 };
	(void)state;

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const limit_row *row = &rows[i];
		wms_client_options o = WMS_CLIENT_OPTIONS_INIT;
		wms_call_options ship = ship_call();
		xmlDocPtr reply = NULL;
		wms_error err;
		whole *w;
		fx x;

		print_message("  %s: %u taken, %u refused\n", row->name, row->at, row->past);
		o.soap_version = row->v;
		set_option_field(&o, &row->opt);
		w = whole_client(&x, &o);
		for (int node = 0; node < (row->kind == L_BODY ? 2 : 1); node++)
			for (int round = 0; round < 2; round++) {
				row_taken(&x, w, row, node, &made);
				row_refused(&x, row, node, &made);
			}
		/* and the client goes on as before */
		answer(&x, ship_reply);
		assert_int_equal(wms_call_bytes(&reply, x.c, &ship, ship_body, strlen(ship_body),
						&err),
				 WMS_OK);
		assert_string_equal((const char *)xmlDocGetRootElement(reply)->name,
				    "GetShipmentStatusResponse");
		assert_non_null(strstr(w->body, ship_body + sizeof("<sh:GetShipmentStatus")));
		assert_string_equal(w->action, "urn:example:wms/GetShipmentStatus");
		xmlFreeDoc(reply);
		wms_client_free(x.c);
	}
	test_free(made.s);
}

/* A caller's tree of any depth is refused, past the 256 levels, before it
 * is sent or copied further (the copy recursed: a tree 200 000 deep ran the
 * stack out; one 100 000 deep was sent whole, its elements past the scan's
 * 264 levels uncounted). */
static void deep_node_refused(void **state)
{
	fx x = setup_client(WMS_SOAP_11);
	wms_call_options op = ship_call();
	xmlDocPtr mine = xmlNewDoc((const xmlChar *)"1.0"), reply = NULL;
	xmlNodePtr n = xmlNewDocNode(mine, NULL, (const xmlChar *)"a", NULL);
	wms_error err;
	(void)state;

	xmlDocSetRootElement(mine, n);
	for (int i = 1; i < 100000; i++)
		n = xmlNewChild(n, NULL, (const xmlChar *)"a", NULL);
	answer(&x, ship_reply);
	for (int round = 0; round < 2; round++) {
		assert_int_equal(wms_call(&reply, x.c, &op, xmlDocGetRootElement(mine), &err),
				 WMS_ERR_INVALID_ARG);
		assert_null(reply);
		assert_int_equal(err.delivery, WMS_DELIVERY_NOT_SENT);
		assert_non_null(strstr(err.message, "body refused: nested deeper than libwms's "
						    "limit of 256 levels"));
		assert_int_equal(x.t->sends, 0);
	}
	xmlFreeDoc(mine);
	assert_int_equal(wms_call_bytes(&reply, x.c, &op, ship_body, strlen(ship_body), &err),
			 WMS_OK);
	xmlFreeDoc(reply);
	assert_int_equal(x.t->sends, 1);
	wms_client_free(x.c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(bytes_round_trip),
		cmocka_unit_test(node_soap12),
		cmocka_unit_test(namespaces_from_the_callers_tree),
		cmocka_unit_test(replies_refused),
		cmocka_unit_test(arguments_refused),
		cmocka_unit_test(limits_at_and_past),
		cmocka_unit_test(deep_node_refused),
		cmocka_unit_test(per_operation_breakers),
		cmocka_unit_test(metric_callback_may_look_up),
		cmocka_unit_test(retries_and_idempotency),
		cmocka_unit_test(wsse_and_refusals),
		cmocka_unit_test(wire_log_redacted_and_correlated),
		cmocka_unit_test(wire_log_of_retries_and_digest),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
