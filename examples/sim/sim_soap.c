/*
 * wms-sim's envelopes: parse a request safely (no DTD, no entities, no
 * network), validate its payload against wsdl/warehouse.xsd, perform it on
 * the store and build the reply or fault with libxml2's tree API, in the
 * SOAP version of the request.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <libxml/parser.h>
#include <libxml/xmlerror.h>
#include "sim_internal.h"

#define CT_SOAP11 "text/xml; charset=utf-8"
#define CT_SOAP12 "application/soap+xml; charset=utf-8"

static const char *const priorities[] = { "STANDARD", "EXPRESS", "OVERNIGHT" };

/* ---- catching libxml2's messages -------------------------------------- */

/* The first error libxml2 reports during one call sequence on this thread. */
typedef struct xml_catch {
	char first[200];
	int count;
} xml_catch;

static void on_xml_error(void *ctx, xmlErrorPtr e)
{
	xml_catch *c = ctx;
	size_t n;
	if (!c || !e || c->count++)
		return;
	snprintf(c->first, sizeof(c->first), "%s", e->message ? e->message : "unknown error");
	/* libxml2's messages end in a newline; ours are one line. */
	for (n = strlen(c->first); n && (c->first[n - 1] == '\n' || c->first[n - 1] == ' '); n--)
		c->first[n - 1] = '\0';
	for (n = 0; c->first[n]; n++)
		if (c->first[n] == '\n' || c->first[n] == '\r')
			c->first[n] = ' ';
}

/* ---- schema -------------------------------------------------------------- */

struct sim_schema {
	xmlSchemaPtr schema;
	/* One validation at a time: libxml2 does not promise a shared schema
	 * is safe to validate against from several threads at once. */
	pthread_mutex_t lock;
};

wms_sim_status wms_sim__schema_load(sim_schema **out, const char *xsd_path)
{
	xmlSchemaParserCtxtPtr pc = NULL;
	sim_schema *s = NULL;
	xml_catch cat = { "", 0 };
	wms_sim_status st = WMS_SIM_OK;
	FILE *f;

	*out = NULL;
	f = fopen(xsd_path, "rb");
	if (!f)
		return wms_sim__fail(WMS_SIM_ERR_IO, "cannot read the schema %s: %s", xsd_path,
				     strerror(errno));
	fclose(f);
	s = calloc(1, sizeof(*s));
	if (!s)
		return wms_sim__fail(WMS_SIM_ERR_NOMEM, "out of memory");
	if (pthread_mutex_init(&s->lock, NULL) != 0) {
		free(s);
		return wms_sim__fail(WMS_SIM_ERR_INTERNAL, "cannot create a mutex");
	}
	pc = xmlSchemaNewParserCtxt(xsd_path);
	if (!pc) {
		st = wms_sim__fail(WMS_SIM_ERR_NOMEM, "out of memory");
		goto done;
	}
	xmlSchemaSetParserStructuredErrors(pc, on_xml_error, &cat);
	s->schema = xmlSchemaParse(pc);
	if (!s->schema)
		st = wms_sim__fail(WMS_SIM_ERR_PARSE, "schema %s does not compile: %s", xsd_path,
				   cat.count ? cat.first : "unknown error");
done:
	xmlSchemaFreeParserCtxt(pc);
	if (st != WMS_SIM_OK)
		wms_sim__schema_free(s);
	else
		*out = s;
	return st;
}

void wms_sim__schema_free(sim_schema *s)
{
	if (!s)
		return;
	if (s->schema)
		xmlSchemaFree(s->schema);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

int wms_sim__request_validate(sim_schema *schema, const sim_request *req, char *msg, size_t size)
{
	xmlSchemaValidCtxtPtr v;
	xml_catch cat = { "", 0 };
	int rc;

	pthread_mutex_lock(&schema->lock);
	v = xmlSchemaNewValidCtxt(schema->schema);
	if (!v) {
		pthread_mutex_unlock(&schema->lock);
		snprintf(msg, size, "out of memory validating the request");
		return 1;
	}
	xmlSchemaSetValidStructuredErrors(v, on_xml_error, &cat);
	rc = xmlSchemaValidateOneElement(v, req->payload);
	xmlSchemaFreeValidCtxt(v);
	pthread_mutex_unlock(&schema->lock);
	if (rc == 0)
		return 0;
	snprintf(msg, size, "%s", cat.count ? cat.first : "the request does not match the schema");
	return 1;
}

/* ---- parsing ------------------------------------------------------------- */

static int name_is(const xmlNode *n, const char *ns, const char *local)
{
	return n && n->type == XML_ELEMENT_NODE && n->ns && n->ns->href &&
	       strcmp((const char *)n->ns->href, ns) == 0 &&
	       strcmp((const char *)n->name, local) == 0;
}

static xmlNodePtr first_el(xmlNodePtr n)
{
	for (n = n ? n->children : NULL; n; n = n->next)
		if (n->type == XML_ELEMENT_NODE)
			return n;
	return NULL;
}

static xmlNodePtr next_el(xmlNodePtr n)
{
	for (n = n ? n->next : NULL; n; n = n->next)
		if (n->type == XML_ELEMENT_NODE)
			return n;
	return NULL;
}

static xmlNodePtr child(xmlNodePtr parent, const char *local)
{
	xmlNodePtr n;
	for (n = first_el(parent); n; n = next_el(n))
		if (name_is(n, SIM_NS, local))
			return n;
	return NULL;
}

/* A DOCTYPE is refused before libxml2 could do anything with it. */
static int has_doctype(const char *buf, size_t len)
{
	static const char tag[] = "<!DOCTYPE";
	size_t i, n = sizeof(tag) - 1;
	for (i = 0; i + n <= len; i++)
		if (buf[i] == '<' && memcmp(buf + i, tag, n) == 0)
			return 1;
	return 0;
}

static const char *const request_names[SIM_OP_COUNT] = {
	"SubmitOrderRequest", "GetOrderStatusRequest", "CancelOrderRequest", "GetStockLevelRequest",
	"GetShipmentStatusRequest"
};

static void describe(const xmlNode *n, char *out, size_t size)
{
	snprintf(out, size, "{%s}%s", n->ns && n->ns->href ? (const char *)n->ns->href : "",
		 (const char *)n->name);
}

void wms_sim__request_parse(sim_request *req, const char *buf, size_t len,
			    const char *content_type)
{
	xmlParserCtxtPtr ctxt = NULL;
	xmlStructuredErrorFunc saved_fn = xmlStructuredError;
	void *saved_ctx = xmlStructuredErrorContext;
	xml_catch cat = { "", 0 };
	xmlNodePtr root, n;
	char what[160];
	int i;

	memset(req, 0, sizeof(*req));
	req->op = SIM_OP_NONE;
	if (content_type) {
		while (*content_type == ' ' || *content_type == '\t')
			content_type++;
		req->soap12 = strncasecmp(content_type, "application/soap+xml", 20) == 0;
	}
	if (len == 0) {
		snprintf(req->error, sizeof(req->error), "the request body is empty");
		return;
	}
	if (len > (size_t)0x7fffffff) {
		snprintf(req->error, sizeof(req->error), "the request body is too large");
		return;
	}
	if (has_doctype(buf, len)) {
		snprintf(req->error, sizeof(req->error),
			 "a DOCTYPE is not allowed in a SOAP message: refused");
		return;
	}
	ctxt = xmlNewParserCtxt();
	if (!ctxt) {
		snprintf(req->error, sizeof(req->error), "out of memory parsing the request");
		return;
	}
	/* The parser reports to this thread's structured handler (the
	 * context's own serror would get the context, not ours): catch there,
	 * then put back what was set. */
	xmlSetStructuredErrorFunc(&cat, on_xml_error);
	req->doc = xmlCtxtReadMemory(ctxt, buf, (int)len, "request.xml", NULL,
				     XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
	xmlSetStructuredErrorFunc(saved_ctx, saved_fn);
	if (!req->doc || !ctxt->wellFormed) {
		snprintf(req->error, sizeof(req->error), "the request is not well-formed XML: %s",
			 cat.count ? cat.first : "parse error");
		goto done;
	}
	if (req->doc->intSubset || req->doc->extSubset) {
		snprintf(req->error, sizeof(req->error),
			 "a DOCTYPE is not allowed in a SOAP message: refused");
		goto done;
	}
	root = xmlDocGetRootElement(req->doc);
	if (name_is(root, SIM_SOAP12_NS, "Envelope")) {
		req->soap12 = 1;
	} else if (name_is(root, SIM_SOAP11_NS, "Envelope")) {
		req->soap12 = 0;
	} else {
		if (root)
			describe(root, what, sizeof(what));
		snprintf(req->error, sizeof(req->error),
			 "the request is not a SOAP 1.1 or 1.2 envelope (root element %s)",
			 root ? what : "missing");
		goto done;
	}
	n = first_el(root);
	if (n && name_is(n, (const char *)root->ns->href, "Header"))
		n = next_el(n);
	if (!n || !name_is(n, (const char *)root->ns->href, "Body")) {
		snprintf(req->error, sizeof(req->error), "the envelope has no Body");
		goto done;
	}
	req->payload = first_el(n);
	if (!req->payload) {
		snprintf(req->error, sizeof(req->error), "the Body is empty");
		goto done;
	}
	if (next_el(req->payload)) {
		snprintf(req->error, sizeof(req->error),
			 "the Body carries more than one element (document/literal wants one)");
		goto done;
	}
	for (i = 0; i < SIM_OP_COUNT; i++)
		if (name_is(req->payload, SIM_NS, request_names[i]))
			req->op = (sim_op)i;
	if (req->op == SIM_OP_NONE) {
		describe(req->payload, what, sizeof(what));
		snprintf(req->error, sizeof(req->error),
			 "the Body element %s is no request of " SIM_NS, what);
	}
done:
	xmlFreeParserCtxt(ctxt);
}

void wms_sim__request_free(sim_request *req)
{
	if (req && req->doc)
		xmlFreeDoc(req->doc);
	if (req) {
		req->doc = NULL;
		req->payload = NULL;
	}
}

/* ---- reading fields (the payload is schema-valid by now) ---------------- */

static int is_space(int c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* Copy n's text into out; trim for xsd:token types. Cut at a UTF-8
 * character boundary when it does not fit (free text only). */
static void text_of(xmlNodePtr n, char *out, size_t size, int trim)
{
	xmlChar *v = n ? xmlNodeGetContent(n) : NULL;
	const char *s = v ? (const char *)v : "";
	size_t len;

	if (trim)
		while (is_space((unsigned char)*s))
			s++;
	len = strlen(s);
	if (trim)
		while (len && is_space((unsigned char)s[len - 1]))
			len--;
	if (len >= size) {
		len = size - 1;
		while (len && ((unsigned char)s[len] & 0xC0) == 0x80)
			len--;
	}
	memcpy(out, s, len);
	out[len] = '\0';
	xmlFree(v);
}

static int read_submit(xmlNodePtr p, sim_submit *out)
{
	xmlNodePtr ship = child(p, "shipTo"), lines = child(p, "lines"), n;
	char prio[16], qty[16];
	size_t count = 0, i;

	memset(out, 0, sizeof(*out));
	text_of(child(p, "clientOrderId"), out->order_id, sizeof(out->order_id), 1);
	text_of(child(ship, "name"), out->name, sizeof(out->name), 0);
	text_of(child(ship, "country"), out->country, sizeof(out->country), 1);
	text_of(child(p, "priority"), prio, sizeof(prio), 1);
	out->priority = priorities[0];
	for (i = 0; i < 3; i++)
		if (strcmp(prio, priorities[i]) == 0)
			out->priority = priorities[i];
	for (n = first_el(lines); n; n = next_el(n))
		count++;
	out->lines = calloc(count ? count : 1, sizeof(*out->lines));
	if (!out->lines)
		return -1;
	for (n = first_el(lines), i = 0; n && i < count; n = next_el(n), i++) {
		text_of(child(n, "sku"), out->lines[i].sku, sizeof(out->lines[i].sku), 1);
		text_of(child(n, "quantity"), qty, sizeof(qty), 1);
		out->lines[i].quantity = (uint32_t)strtoul(qty[0] == '+' ? qty + 1 : qty, NULL, 10);
	}
	out->line_count = count;
	return 0;
}

/* ---- building replies ---------------------------------------------------- */

typedef struct builder {
	xmlDocPtr doc;
	xmlNsPtr soap;
	xmlNsPtr wh;
	xmlNodePtr body;
	int soap12;
	int oom;
} builder;

static xmlNodePtr add(builder *b, xmlNodePtr parent, xmlNsPtr ns, const char *name,
		      const char *text)
{
	xmlNodePtr n;
	if (b->oom || !parent)
		return NULL;
	/* Not xmlNewChild: with no ns it would inherit the parent's, and SOAP
	 * 1.1's faultcode, faultstring and detail are unqualified. */
	n = xmlNewDocNode(b->doc, ns, BAD_CAST name, NULL);
	if (!n || !xmlAddChild(parent, n)) {
		xmlFreeNode(n);
		b->oom = 1;
		return NULL;
	}
	if (text) {
		xmlNodePtr t = xmlNewDocText(b->doc, BAD_CAST text);
		if (!t || !xmlAddChild(n, t)) {
			xmlFreeNode(t);
			b->oom = 1;
			return NULL;
		}
	}
	return n;
}

static void begin(builder *b, int soap12)
{
	xmlNodePtr env = NULL;
	memset(b, 0, sizeof(*b));
	b->soap12 = soap12;
	b->doc = xmlNewDoc(BAD_CAST "1.0");
	if (b->doc)
		env = xmlNewNode(NULL, BAD_CAST "Envelope");
	if (env) {
		xmlDocSetRootElement(b->doc, env);
		b->soap = xmlNewNs(env, BAD_CAST(soap12 ? SIM_SOAP12_NS : SIM_SOAP11_NS),
				   BAD_CAST(soap12 ? "env" : "soap"));
		b->wh = xmlNewNs(env, BAD_CAST SIM_NS, BAD_CAST "wh");
	}
	if (!b->soap || !b->wh) {
		b->oom = 1;
		return;
	}
	xmlSetNs(env, b->soap);
	b->body = add(b, env, b->soap, "Body", NULL);
}

/* Serialise into out (status, content type) and free the tree. */
static int finish(builder *b, unsigned status, sim_reply *out)
{
	xmlChar *mem = NULL;
	int size = 0;
	int rc = -1;

	memset(out, 0, sizeof(*out));
	if (!b->oom && b->doc)
		xmlDocDumpMemoryEnc(b->doc, &mem, &size, "UTF-8");
	if (mem && size > 0) {
		out->body = malloc((size_t)size + 1);
		if (out->body) {
			memcpy(out->body, mem, (size_t)size);
			out->body[size] = '\0';
			out->len = (size_t)size;
			out->status = status;
			out->content_type = b->soap12 ? CT_SOAP12 : CT_SOAP11;
			rc = 0;
		}
	}
	xmlFree(mem);
	if (b->doc)
		xmlFreeDoc(b->doc);
	b->doc = NULL;
	return rc;
}

void wms_sim__reply_free(sim_reply *r)
{
	if (!r)
		return;
	free(r->body);
	r->body = NULL;
	r->len = 0;
}

int wms_sim__reply_fault(sim_reply *out, int soap12, int server, const char *wms_code,
			 const char *message, int retryable)
{
	builder b;
	xmlNodePtr f, n, detail, wf;

	begin(&b, soap12);
	f = add(&b, b.body, b.soap, "Fault", NULL);
	if (soap12) {
		n = add(&b, f, b.soap, "Code", NULL);
		add(&b, n, b.soap, "Value", server ? "env:Receiver" : "env:Sender");
		n = add(&b, f, b.soap, "Reason", NULL);
		n = add(&b, n, b.soap, "Text", message);
		if (n)
			xmlNodeSetLang(n, BAD_CAST "en");
		detail = add(&b, f, b.soap, "Detail", NULL);
	} else {
		/* SOAP 1.1: faultcode, faultstring and detail are unqualified. */
		add(&b, f, NULL, "faultcode", server ? "soap:Server" : "soap:Client");
		add(&b, f, NULL, "faultstring", message);
		detail = add(&b, f, NULL, "detail", NULL);
	}
	wf = add(&b, detail, b.wh, "WmsFault", NULL);
	add(&b, wf, b.wh, "code", wms_code);
	add(&b, wf, b.wh, "message", message);
	add(&b, wf, b.wh, "retryable", retryable ? "true" : "false");
	return finish(&b, 500, out);
}

static int reply_reject(sim_reply *out, int soap12, const sim_reject *rej)
{
	return wms_sim__reply_fault(out, soap12, 0, rej->code, rej->message, 0);
}

/* ---- performing ---------------------------------------------------------- */

static int do_submit(const sim_request *req, sim_store *store, uint64_t now, sim_reply *out)
{
	sim_submit s;
	sim_order_view v;
	sim_reject rej;
	builder b;
	xmlNodePtr p;
	int rc;

	if (read_submit(req->payload, &s) != 0)
		return -1;
	rc = wms_sim__store_submit(store, now, &s, &v, &rej);
	free(s.lines);
	if (rc != 0)
		return rc < 0 ? -1 : reply_reject(out, req->soap12, &rej);
	begin(&b, req->soap12);
	p = add(&b, b.body, b.wh, "SubmitOrderResponse", NULL);
	add(&b, p, b.wh, "clientOrderId", v.order_id);
	add(&b, p, b.wh, "wmsReference", v.wms_reference);
	add(&b, p, b.wh, "state", v.state);
	add(&b, p, b.wh, "duplicate", v.duplicate ? "true" : "false");
	return finish(&b, 200, out);
}

static int do_status(const sim_request *req, sim_store *store, uint64_t now, sim_reply *out)
{
	char id[SIM_ID_MAX + 1];
	sim_order_view v;
	sim_reject rej;
	builder b;
	xmlNodePtr p;
	int rc;

	text_of(child(req->payload, "clientOrderId"), id, sizeof(id), 1);
	rc = wms_sim__store_status(store, now, id, &v, &rej);
	if (rc != 0)
		return rc < 0 ? -1 : reply_reject(out, req->soap12, &rej);
	begin(&b, req->soap12);
	p = add(&b, b.body, b.wh, "GetOrderStatusResponse", NULL);
	add(&b, p, b.wh, "clientOrderId", v.order_id);
	add(&b, p, b.wh, "wmsReference", v.wms_reference);
	add(&b, p, b.wh, "state", v.state);
	add(&b, p, b.wh, "updatedAt", v.updated_at);
	return finish(&b, 200, out);
}

static int do_cancel(const sim_request *req, sim_store *store, uint64_t now, sim_reply *out)
{
	char id[SIM_ID_MAX + 1];
	sim_order_view v;
	sim_reject rej;
	builder b;
	xmlNodePtr p;
	int rc;

	text_of(child(req->payload, "clientOrderId"), id, sizeof(id), 1);
	rc = wms_sim__store_cancel(store, now, id, &v, &rej);
	if (rc != 0)
		return rc < 0 ? -1 : reply_reject(out, req->soap12, &rej);
	begin(&b, req->soap12);
	p = add(&b, b.body, b.wh, "CancelOrderResponse", NULL);
	add(&b, p, b.wh, "clientOrderId", v.order_id);
	add(&b, p, b.wh, "state", v.state);
	add(&b, p, b.wh, "alreadyCancelled", v.already_cancelled ? "true" : "false");
	return finish(&b, 200, out);
}

static int do_stock(const sim_request *req, sim_store *store, uint64_t now, sim_reply *out)
{
	char (*names)[SIM_ID_MAX + 1] = NULL;
	const char **ptrs = NULL;
	sim_stock_view *levels = NULL;
	sim_reject rej;
	builder b;
	xmlNodePtr n, p, l;
	size_t count = 0, i;
	char num[32];
	int rc = -1;

	for (n = first_el(req->payload); n; n = next_el(n))
		count++;
	names = calloc(count ? count : 1, sizeof(*names));
	ptrs = calloc(count ? count : 1, sizeof(*ptrs));
	levels = calloc(count ? count : 1, sizeof(*levels));
	if (!names || !ptrs || !levels)
		goto done;
	for (n = first_el(req->payload), i = 0; n && i < count; n = next_el(n), i++) {
		text_of(n, names[i], sizeof(names[i]), 1);
		ptrs[i] = names[i];
	}
	rc = wms_sim__store_stock(store, now, ptrs, count, levels, &rej);
	if (rc != 0) {
		rc = rc < 0 ? -1 : reply_reject(out, req->soap12, &rej);
		goto done;
	}
	begin(&b, req->soap12);
	p = add(&b, b.body, b.wh, "GetStockLevelResponse", NULL);
	for (i = 0; i < count; i++) {
		l = add(&b, p, b.wh, "level", NULL);
		add(&b, l, b.wh, "sku", levels[i].sku);
		snprintf(num, sizeof(num), "%lld", (long long)levels[i].on_hand);
		add(&b, l, b.wh, "onHand", num);
		snprintf(num, sizeof(num), "%lld", (long long)levels[i].reserved);
		add(&b, l, b.wh, "reserved", num);
		snprintf(num, sizeof(num), "%lld", (long long)levels[i].available);
		add(&b, l, b.wh, "available", num);
	}
	rc = finish(&b, 200, out);
done:
	free(names);
	free(ptrs);
	free(levels);
	return rc;
}

/* A carrier and tracking number that stay the same for an order id across
 * runs and simulators (FNV-1a of the id), so fixtures can be recorded. */
static void shipment_of(const char *order_id, const char **carrier, char *tracking, size_t size)
{
	static const char *const carriers[] = { "DHL", "UPS", "FedEx", "PostNL" };
	uint64_t h = 14695981039346656037ull;
	const unsigned char *p;

	for (p = (const unsigned char *)order_id; *p; p++)
		h = (h ^ *p) * 1099511628211ull;
	*carrier = carriers[h % (sizeof(carriers) / sizeof(carriers[0]))];
	snprintf(tracking, size, "%.3s-%016llX", *carrier, (unsigned long long)h);
	for (char *t = tracking; *t && *t != '-'; t++)
		if (*t >= 'a' && *t <= 'z')
			*t = (char)(*t - 'a' + 'A');
}

static int do_shipment(const sim_request *req, sim_store *store, uint64_t now, sim_reply *out)
{
	char id[SIM_ID_MAX + 1], tracking[32];
	const char *carrier;
	sim_order_view v;
	sim_reject rej;
	builder b;
	xmlNodePtr p;
	int rc, shipped;

	text_of(child(req->payload, "clientOrderId"), id, sizeof(id), 1);
	rc = wms_sim__store_status(store, now, id, &v, &rej);
	if (rc != 0)
		return rc < 0 ? -1 : reply_reject(out, req->soap12, &rej);
	/* the store has no carrier's scan: a shipped order stays in transit */
	shipped = strcmp(v.state, "SHIPPED") == 0;
	begin(&b, req->soap12);
	p = add(&b, b.body, b.wh, "GetShipmentStatusResponse", NULL);
	add(&b, p, b.wh, "clientOrderId", v.order_id);
	add(&b, p, b.wh, "state", shipped ? "IN_TRANSIT" : "NOT_SHIPPED");
	if (shipped) {
		shipment_of(v.order_id, &carrier, tracking, sizeof(tracking));
		add(&b, p, b.wh, "carrier", carrier);
		add(&b, p, b.wh, "trackingNumber", tracking);
	}
	return finish(&b, 200, out);
}

int wms_sim__request_perform(const sim_request *req, sim_store *store, uint64_t now_ns,
			     sim_reply *out)
{
	memset(out, 0, sizeof(*out));
	switch (req->op) {
	case SIM_OP_SUBMIT_ORDER:
		return do_submit(req, store, now_ns, out);
	case SIM_OP_GET_ORDER_STATUS:
		return do_status(req, store, now_ns, out);
	case SIM_OP_CANCEL_ORDER:
		return do_cancel(req, store, now_ns, out);
	case SIM_OP_GET_STOCK_LEVEL:
		return do_stock(req, store, now_ns, out);
	case SIM_OP_GET_SHIPMENT_STATUS:
		return do_shipment(req, store, now_ns, out);
	case SIM_OP_NONE:
		break;
	}
	return wms_sim__reply_fault(out, req->soap12, 0, "INVALID_REQUEST",
				    "the request names no operation", 0);
}
