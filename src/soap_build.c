/* Request envelopes, built with libxml2's tree API and serialised as UTF-8.
 * Stable prefixes: soap (1.1) or soap12 (1.2) for the envelope, wh for
 * urn:libwms:warehouse:1, both declared on the Envelope. No Header. */
#include <pthread.h>
#include <stdio.h>
#include <errno.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <openssl/evp.h>
#include <openssl/crypto.h>
#include <openssl/sha.h>
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/xmlerror.h>
#include <libxml/xmlsave.h>
#include "soap.h"

/* ---- operations ---------------------------------------------------------- */

static const char *const op_names[WMS__OP_COUNT] = {
	"SubmitOrder", "GetOrderStatus", "CancelOrder", "GetStockLevel",
};

static const char *const op_actions[WMS__OP_COUNT] = {
	WMS__NS "/SubmitOrder", WMS__NS "/GetOrderStatus", WMS__NS "/CancelOrder",
	WMS__NS "/GetStockLevel",
};

#define SOAP12_CT(op) "application/soap+xml; charset=utf-8; action=\"" WMS__NS "/" op "\""
static const char *const op_content_types_12[WMS__OP_COUNT] = {
	SOAP12_CT("SubmitOrder"), SOAP12_CT("GetOrderStatus"), SOAP12_CT("CancelOrder"),
	SOAP12_CT("GetStockLevel"),
};

static int op_valid(wms__op op)
{
	return (int)op >= 0 && op < WMS__OP_COUNT;
}

const char *wms__op_name(wms__op op)
{
	return op_valid(op) ? op_names[op] : "";
}

const char *wms__op_action(wms__op op)
{
	return op_valid(op) ? op_actions[op] : "";
}

const char *wms__op_content_type(wms__op op, wms_soap_version v)
{
	if (!op_valid(op))
		return "";
	return v == WMS_SOAP_12 ? op_content_types_12[op] : "text/xml; charset=utf-8";
}

/* ---- building -------------------------------------------------------------- */

typedef struct envelope {
	xmlDocPtr doc;
	xmlNsPtr wh;
	xmlNodePtr request; /* the Body's child, e.g. wh:SubmitOrderRequest */
} envelope;

#define X(s) ((const xmlChar *)(s))

#define WSSE_NS "http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-wssecurity-secext-1.0.xsd"
#define WSU_NS "http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-wssecurity-utility-1.0.xsd"
#define WSSE_PROFILE "http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-username-token-profile-1.0"
#define WSSE_B64 "http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-soap-message-security-1.0#Base64Binary"

static wms_status b64(char *out, size_t size, const unsigned char *in, size_t n)
{
	if (size < 4 * ((n + 2) / 3) + 1 || n > INT32_MAX)
		return WMS_ERR_INTERNAL;
	EVP_EncodeBlock((unsigned char *)out, in, (int)n);
	return WMS_OK;
}

/* UsernameToken: fresh 16-byte nonce and created per message; the digest
 * is Base64(SHA-1(nonce + created + password)) (UsernameToken profile 1.0). */
static wms_status add_wsse(envelope *e, xmlNodePtr root, xmlNsPtr soap, const wms__wsse *w)
{
	unsigned char nonce[16], digest[SHA_DIGEST_LENGTH];
	char nonce64[32], digest64[32], created[40];
	xmlNodePtr header, sec, tok, pw, el;
	xmlNsPtr wsse, wsu;
	struct timespec ts;
	struct tm tm;
	size_t got = 0;
	wms_status rc;

	if (!(header = xmlNewNode(soap, X("Header"))))
		return WMS_ERR_NOMEM;
	if (!xmlAddChild(root, header)) {
		xmlFreeNode(header);
		return WMS_ERR_NOMEM;
	}
	if (!(sec = xmlNewChild(header, NULL, X("Security"), NULL)) ||
	    !(wsse = xmlNewNs(sec, X(WSSE_NS), X("wsse"))) ||
	    !(wsu = xmlNewNs(sec, X(WSU_NS), X("wsu"))))
		return WMS_ERR_NOMEM;
	xmlSetNs(sec, wsse);
	if (!xmlSetNsProp(sec, soap, X("mustUnderstand"), X("1")) ||
	    !(tok = xmlNewChild(sec, wsse, X("UsernameToken"), NULL)) ||
	    !xmlNewTextChild(tok, wsse, X("Username"), X(w->username)))
		return WMS_ERR_NOMEM;
	if (w->mode == WMS_WSSE_PASSWORD_TEXT) {
		if (!(pw = xmlNewTextChild(tok, wsse, X("Password"), X(w->password))) ||
		    !xmlSetProp(pw, X("Type"), X(WSSE_PROFILE "#PasswordText")))
			return WMS_ERR_NOMEM;
		return WMS_OK;
	}
	while (got < sizeof(nonce)) {
		ssize_t n = getrandom(nonce + got, sizeof(nonce) - got, 0);
		if (n < 0 && errno != EINTR)
			return WMS_ERR_INTERNAL;
		got += n > 0 ? (size_t)n : 0;
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	snprintf(created, sizeof(created), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
		 (tm.tm_year + 1900) % 10000, (tm.tm_mon + 1) % 100, tm.tm_mday % 100,
		 tm.tm_hour % 100, tm.tm_min % 100, tm.tm_sec % 100,
		 (int)(ts.tv_nsec / 1000000L) % 1000);
	{
		EVP_MD_CTX *md = EVP_MD_CTX_new();
		unsigned int len = 0;
		int ok = md && EVP_DigestInit_ex(md, EVP_sha1(), NULL) &&
			 EVP_DigestUpdate(md, nonce, sizeof(nonce)) &&
			 EVP_DigestUpdate(md, created, strlen(created)) &&
			 EVP_DigestUpdate(md, w->password, strlen(w->password)) &&
			 EVP_DigestFinal_ex(md, digest, &len) && len == sizeof(digest);
		EVP_MD_CTX_free(md);
		if (!ok)
			return WMS_ERR_INTERNAL;
	}
	if ((rc = b64(nonce64, sizeof(nonce64), nonce, sizeof(nonce))) != WMS_OK ||
	    (rc = b64(digest64, sizeof(digest64), digest, sizeof(digest))) != WMS_OK)
		return rc;
	OPENSSL_cleanse(digest, sizeof(digest));
	if (!(pw = xmlNewTextChild(tok, wsse, X("Password"), X(digest64))) ||
	    !xmlSetProp(pw, X("Type"), X(WSSE_PROFILE "#PasswordDigest")) ||
	    !(el = xmlNewTextChild(tok, wsse, X("Nonce"), X(nonce64))) ||
	    !xmlSetProp(el, X("EncodingType"), X(WSSE_B64)) ||
	    !xmlNewTextChild(tok, wsu, X("Created"), X(created)))
		return WMS_ERR_NOMEM;
	(void)e;
	return WMS_OK;
}

/* A new document: Envelope, [Header,] Body and the empty request element `name`. */
static wms_status envelope_new(envelope *e, wms_soap_version v, const char *name,
			       const wms__wsse *wsse)
{
	xmlNodePtr root, body;
	xmlNsPtr soap;

	memset(e, 0, sizeof(*e));
	if (!(e->doc = xmlNewDoc(X("1.0"))))
		return WMS_ERR_NOMEM;
	/* declared in the prolog; UTF-8 is libxml2's own encoding, so the
	 * serialiser copies bytes instead of running an encoder */
	if (!(e->doc->encoding = xmlStrdup(X("UTF-8"))))
		return WMS_ERR_NOMEM;
	if (!(root = xmlNewDocNode(e->doc, NULL, X("Envelope"), NULL)))
		return WMS_ERR_NOMEM;
	xmlDocSetRootElement(e->doc, root);
	if (v == WMS_SOAP_12)
		soap = xmlNewNs(root, X(WMS__SOAP12_NS), X("soap12"));
	else
		soap = xmlNewNs(root, X(WMS__SOAP11_NS), X("soap"));
	if (!soap)
		return WMS_ERR_NOMEM;
	xmlSetNs(root, soap);
	if (!(e->wh = xmlNewNs(root, X(WMS__NS), X(WMS__NS_PREFIX))))
		return WMS_ERR_NOMEM;
	if (wsse && wsse->mode != WMS_WSSE_NONE) {
		wms_status rc = add_wsse(e, root, soap, wsse);
		if (rc != WMS_OK)
			return rc;
	}
	if (!(body = xmlNewChild(root, soap, X("Body"), NULL)))
		return WMS_ERR_NOMEM;
	if (!(e->request = xmlNewChild(body, e->wh, X(name), NULL)))
		return WMS_ERR_NOMEM;
	return WMS_OK;
}

/* <wh:name>value</wh:name> under parent; the value is escaped on output. */
static wms_status add_text(envelope *e, xmlNodePtr parent, const char *name, const char *value,
			   xmlNodePtr *out)
{
	xmlNodePtr el, text;
	if (!(el = xmlNewChild(parent, e->wh, X(name), NULL)))
		return WMS_ERR_NOMEM;
	if (out)
		*out = el;
	if (!value)
		return WMS_OK;
	if (!(text = xmlNewDocText(e->doc, X(value))))
		return WMS_ERR_NOMEM;
	if (!xmlAddChild(el, text)) {
		xmlFreeNode(text);
		return WMS_ERR_NOMEM;
	}
	return WMS_OK;
}

static int write_cb(void *ctx, const char *buf, int len)
{
	if (len < 0 || wms__buf_append(ctx, buf, (size_t)len) != WMS_OK)
		return -1;
	return len;
}

static int close_cb(void *ctx)
{
	(void)ctx;
	return 0;
}

/* Serialise with its XML declaration, indented, into `out`. */
static wms_status serialise(wms__buf *out, xmlDocPtr doc)
{
	xmlSaveCtxtPtr save;
	long rc;
	int close_rc;

	save = xmlSaveToIO(write_cb, close_cb, out, NULL, XML_SAVE_AS_XML);
	if (!save)
		return WMS_ERR_NOMEM;
	rc = xmlSaveDoc(save, doc);
	close_rc = xmlSaveClose(save);
	if (rc < 0 || close_rc < 0 || !out->len)
		return WMS_ERR_NOMEM;
	return WMS_OK;
}

/* Serialise e->doc into *out, free the document, end the quiet guard the
 * builder started; on failure report `rc`. */
static wms_status finish(wms__buf *out, envelope *e, wms_status rc, wms__op op,
			 wms__xml_quiet *quiet, wms_error *err)
{
	wms__buf body = { NULL, 0, 0 };

	if (rc == WMS_OK)
		rc = serialise(&body, e->doc);
	xmlFreeDoc(e->doc);
	e->doc = NULL;
	wms__xml_quiet_end(quiet);
	/* libxml2 sometimes reports a failure (e.g. out of memory while
	 * encoding) and carries on: never hand out such an envelope. */
	if (rc == WMS_OK && quiet->errors)
		rc = quiet->nomem ? WMS_ERR_NOMEM : WMS_ERR_INTERNAL;
	if (rc != WMS_OK) {
		wms__buf_free(&body);
		return wms__fail(err, rc, WMS_DELIVERY_NOT_SENT, "building the %s request: %s",
				 wms__op_name(op), wms_strerror(rc));
	}
	*out = body;
	return WMS_OK;
}

static wms_status check_args(const wms__buf *out, wms_soap_version v, wms_error *err)
{
	if (!out)
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "out: required (got NULL)");
	if (v != WMS_SOAP_11 && v != WMS_SOAP_12)
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "soap_version: must be WMS_SOAP_11 or WMS_SOAP_12 (got %d)", (int)v);
	return WMS_OK;
}

static const char *priority_name(wms_priority p)
{
	switch (p) {
	case WMS_PRIORITY_STANDARD: return "STANDARD";
	case WMS_PRIORITY_EXPRESS: return "EXPRESS";
	case WMS_PRIORITY_OVERNIGHT: return "OVERNIGHT";
	}
	return "STANDARD"; /* unreachable: validated */
}

/* Inputs are validated again here (cheap, no allocation) so that no caller
 * can make a builder emit an envelope the WMS would reject as malformed. */

static wms_status build_submit_order(wms__buf *out, wms_soap_version v, const wms_order *order,
				    const wms__wsse *wsse, wms_error *err)
{
	const wms_address *a;
	envelope e = { NULL, NULL, NULL };
	wms__xml_quiet quiet;
	xmlNodePtr ship_to, lines, line;
	char qty[16];
	wms_status rc;
	size_t i;

	wms__xml_init();
	if ((rc = check_args(out, v, err)) != WMS_OK || (rc = wms__validate_order(order, err)) != WMS_OK)
		return rc;
	a = &order->ship_to;
	wms__xml_quiet_begin(&quiet);
	if ((rc = envelope_new(&e, v, "SubmitOrderRequest", wsse)) != WMS_OK ||
	    (rc = add_text(&e, e.request, "clientOrderId", order->order_id, NULL)) != WMS_OK ||
	    (rc = add_text(&e, e.request, "shipTo", NULL, &ship_to)) != WMS_OK ||
	    (rc = add_text(&e, ship_to, "name", a->name, NULL)) != WMS_OK ||
	    (rc = add_text(&e, ship_to, "line1", a->line1, NULL)) != WMS_OK ||
	    (a->line2 && *a->line2 &&
	     (rc = add_text(&e, ship_to, "line2", a->line2, NULL)) != WMS_OK) ||
	    (rc = add_text(&e, ship_to, "city", a->city, NULL)) != WMS_OK ||
	    (a->region && *a->region &&
	     (rc = add_text(&e, ship_to, "region", a->region, NULL)) != WMS_OK) ||
	    (rc = add_text(&e, ship_to, "postalCode", a->postal_code, NULL)) != WMS_OK ||
	    (rc = add_text(&e, ship_to, "country", a->country, NULL)) != WMS_OK ||
	    (rc = add_text(&e, e.request, "priority", priority_name(order->priority), NULL)) != WMS_OK ||
	    (rc = add_text(&e, e.request, "lines", NULL, &lines)) != WMS_OK)
		goto done;
	for (i = 0; i < order->line_count; i++) {
		snprintf(qty, sizeof(qty), "%lu", (unsigned long)order->lines[i].quantity);
		if ((rc = add_text(&e, lines, "line", NULL, &line)) != WMS_OK ||
		    (rc = add_text(&e, line, "sku", order->lines[i].sku, NULL)) != WMS_OK ||
		    (rc = add_text(&e, line, "quantity", qty, NULL)) != WMS_OK)
			goto done;
	}
done:
	return finish(out, &e, rc, WMS__OP_SUBMIT_ORDER, &quiet, err);
}

static wms_status build_get_order_status(wms__buf *out, wms_soap_version v,
					 const char *order_id, const wms__wsse *wsse, wms_error *err)
{
	envelope e = { NULL, NULL, NULL };
	wms__xml_quiet quiet;
	wms_status rc;

	wms__xml_init();
	if ((rc = check_args(out, v, err)) != WMS_OK ||
	    (rc = wms__validate_order_id(order_id, err)) != WMS_OK)
		return rc;
	wms__xml_quiet_begin(&quiet);
	if ((rc = envelope_new(&e, v, "GetOrderStatusRequest", wsse)) == WMS_OK)
		rc = add_text(&e, e.request, "clientOrderId", order_id, NULL);
	return finish(out, &e, rc, WMS__OP_GET_ORDER_STATUS, &quiet, err);
}

static wms_status build_cancel_order(wms__buf *out, wms_soap_version v, const char *order_id,
				     const char *reason, const wms__wsse *wsse, wms_error *err)
{
	envelope e = { NULL, NULL, NULL };
	wms__xml_quiet quiet;
	wms_status rc;

	wms__xml_init();
	if ((rc = check_args(out, v, err)) != WMS_OK ||
	    (rc = wms__validate_order_id(order_id, err)) != WMS_OK ||
	    (rc = wms__validate_reason(reason, err)) != WMS_OK)
		return rc;
	wms__xml_quiet_begin(&quiet);
	if ((rc = envelope_new(&e, v, "CancelOrderRequest", wsse)) == WMS_OK &&
	    (rc = add_text(&e, e.request, "clientOrderId", order_id, NULL)) == WMS_OK &&
	    reason && *reason)
		rc = add_text(&e, e.request, "reason", reason, NULL);
	return finish(out, &e, rc, WMS__OP_CANCEL_ORDER, &quiet, err);
}

static wms_status build_get_stock_level(wms__buf *out, wms_soap_version v,
					const char *const *skus, size_t n, const wms__wsse *wsse,
					wms_error *err)
{
	envelope e = { NULL, NULL, NULL };
	wms__xml_quiet quiet;
	wms_status rc;
	size_t i;

	wms__xml_init();
	if ((rc = check_args(out, v, err)) != WMS_OK || (rc = wms__validate_skus(skus, n, err)) != WMS_OK)
		return rc;
	wms__xml_quiet_begin(&quiet);
	if ((rc = envelope_new(&e, v, "GetStockLevelRequest", wsse)) != WMS_OK)
		goto done;
	for (i = 0; i < n; i++)
		if ((rc = add_text(&e, e.request, "sku", skus[i], NULL)) != WMS_OK)
			goto done;
done:
	return finish(out, &e, rc, WMS__OP_GET_STOCK_LEVEL, &quiet, err);
}

/* ---- the internal API (src/soap.h) ---------------------------------------- */

static wms_status check_wsse(const wms__wsse *w, wms_error *err)
{
	if (!w || w->mode == WMS_WSSE_NONE)
		return WMS_OK;
	if ((w->mode != WMS_WSSE_PASSWORD_TEXT && w->mode != WMS_WSSE_PASSWORD_DIGEST) ||
	    !w->username || !*w->username || !w->password)
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "wsse: a mode, a username and a password are required");
	return WMS_OK;
}

wms_status wms__build_submit_order(wms__buf *out, wms_soap_version v, const wms_order *order,
				   wms_error *err)
{
	return build_submit_order(out, v, order, NULL, err);
}

wms_status wms__build_get_order_status(wms__buf *out, wms_soap_version v,
				       const char *order_id, wms_error *err)
{
	return build_get_order_status(out, v, order_id, NULL, err);
}

wms_status wms__build_cancel_order(wms__buf *out, wms_soap_version v, const char *order_id,
				   const char *reason, wms_error *err)
{
	return build_cancel_order(out, v, order_id, reason, NULL, err);
}

wms_status wms__build_get_stock_level(wms__buf *out, wms_soap_version v,
				      const char *const *skus, size_t n, wms_error *err)
{
	return build_get_stock_level(out, v, skus, n, NULL, err);
}

wms_status wms__build_request(wms__buf *out, wms_soap_version v, const wms__request *r,
			      const wms__wsse *wsse, wms_error *err)
{
	wms_status rc = check_wsse(wsse, err);
	if (rc != WMS_OK)
		return rc;
	if (!r)
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT, "request is NULL");
	switch (r->op) {
	case WMS__OP_SUBMIT_ORDER:
		return build_submit_order(out, v, r->order, wsse, err);
	case WMS__OP_GET_ORDER_STATUS:
		return build_get_order_status(out, v, r->order_id, wsse, err);
	case WMS__OP_CANCEL_ORDER:
		return build_cancel_order(out, v, r->order_id, r->reason, wsse, err);
	case WMS__OP_GET_STOCK_LEVEL:
		return build_get_stock_level(out, v, r->skus, r->sku_count, wsse, err);
	case WMS__OP_COUNT:
		break;
	}
	return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT, "unknown operation");
}
