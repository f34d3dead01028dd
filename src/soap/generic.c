/* A generic call's XML (wms/call.h): the envelope around a body the caller
 * built, and the reply's Body element handed back as a document of its own.
 * The reply has first been through the reply parser whole (limits, DOCTYPE,
 * envelope, fault: soap/parse.c), so the tree read here is of bytes known
 * to be safe and small enough; that second parse is the price of giving
 * the caller a tree of an element libwms does not know. */
#include <stdio.h>
#include <string.h>
#include <libxml/parser.h>
#include <libxml/tree.h>
#include "soap/soap.h"
#include "soap/limits.h"
#include "soap/wsse.h"

#define X(s) ((const xmlChar *)(s))

/*
 * Copy `src` (an element, and everything under it) under `parent`, in
 * parent's document. Not xmlDocCopyNode: libxml2 2.9 loses the part of a
 * copy it had made when an allocation fails, and may carry on with a
 * node that has lost its namespace. Here every node joins the tree as it
 * is made, so a failure leaves a partial tree that goes with the document,
 * and the caller sees the failure. `depth` is the copy's level in
 * parent's document: past WMS__XML_MAX_DEPTH the copy stops (TOO_LARGE).
 * The recursion must stop somewhere (a caller's tree may be a million
 * deep: the stack ran out at 200 000), and a request keeps the reply
 * parser's depth as it keeps the scan's limits, which it cannot otherwise:
 * the scan stops counting 8 levels past that depth, where a parser has
 * stopped. Namespaces: the source element's own
 * declarations are copied (a QName in a value may need them); with `top`,
 * every declaration in scope at the source is declared too, as the body
 * is taken out of its context. An element's or attribute's namespace is
 * then found in scope by prefix and URI, or declared on the element.
 * WMS_OK, NOMEM, TOO_LARGE (too deep), or INVALID_ARG for a node an
 * envelope cannot carry.
 */
static xmlNsPtr ns_for(xmlNodePtr el, const xmlNs *want)
{
	xmlNsPtr ns = xmlSearchNs(el->doc, el, want->prefix);
	if (ns && xmlStrEqual(ns->href, want->href))
		return ns;
	return xmlNewNs(el, want->href, want->prefix);
}

static wms_status copy_element(xmlNodePtr parent, const xmlNode *src, int top, unsigned depth)
{
	xmlNodePtr el, n;
	const xmlNode *c;
	const xmlNs *d;
	const xmlAttr *a;
	xmlNsPtr *scope = NULL;
	wms_status rc = WMS_ERR_NOMEM;

	if (depth > WMS__XML_MAX_DEPTH)
		return WMS_ERR_TOO_LARGE;
	if (!(el = xmlNewDocNode(parent->doc, NULL, src->name, NULL)))
		return WMS_ERR_NOMEM;
	if (!xmlAddChild(parent, el)) {
		xmlFreeNode(el);
		return WMS_ERR_NOMEM;
	}
	if (top && src->doc && (scope = xmlGetNsList(src->doc, src)) != NULL)
		for (size_t i = 0; scope[i]; i++)
			if (!xmlNewNs(el, scope[i]->href, scope[i]->prefix))
				goto done;
	/* by prefix: a prefix a value names (xsi:type="t:Foo") must stay
	 * bound, even to a URI another prefix has in scope too */
	for (d = src->nsDef; d; d = d->next) {
		xmlNsPtr in_scope = xmlSearchNs(el->doc, el, d->prefix);
		if ((!in_scope || !xmlStrEqual(in_scope->href, d->href)) &&
		    !xmlNewNs(el, d->href, d->prefix))
			goto done;
	}
	if (src->ns && !(el->ns = ns_for(el, src->ns)))
		goto done;
	for (a = src->properties; a; a = a->next) {
		xmlChar *v = xmlNodeListGetString(src->doc, a->children, 1);
		xmlNsPtr ans = NULL;
		xmlAttrPtr made;
		if (a->children && !v)
			goto done;
		if (a->ns && !(ans = ns_for(el, a->ns))) {
			xmlFree(v);
			goto done;
		}
		made = xmlNewNsProp(el, ans, a->name, v ? v : X(""));
		xmlFree(v);
		if (!made)
			goto done;
	}
	for (c = src->children; c; c = c->next) {
		switch (c->type) {
		case XML_ELEMENT_NODE:
			if ((rc = copy_element(el, c, 0, depth + 1)) != WMS_OK)
				goto done;
			rc = WMS_ERR_NOMEM;
			continue;
		case XML_TEXT_NODE:
			n = xmlNewDocText(el->doc, c->content);
			break;
		case XML_CDATA_SECTION_NODE:
			n = xmlNewCDataBlock(el->doc, c->content,
					     c->content ? xmlStrlen(c->content) : 0);
			break;
		case XML_COMMENT_NODE:
			n = xmlNewDocComment(el->doc, c->content);
			break;
		case XML_PI_NODE:
			n = xmlNewDocPI(el->doc, c->name, c->content);
			break;
		default:
			rc = WMS_ERR_INVALID_ARG; /* entity references and the like */
			goto done;
		}
		if (!n)
			goto done;
		if (!xmlAddChild(el, n)) {
			xmlFreeNode(n);
			goto done;
		}
	}
	rc = WMS_OK;
done:
	if (scope)
		xmlFree(scope);
	return rc;
}

wms_status wms__generic_body_copy(xmlDocPtr *out, const xmlNode *body)
{
	xmlDocPtr doc = xmlNewDoc(X("1.0"));
	wms_status rc;
	*out = NULL;
	if (!doc)
		return WMS_ERR_NOMEM;
	rc = copy_element((xmlNodePtr)doc, body, 1, 1);
	if (rc != WMS_OK) {
		xmlFreeDoc(doc);
		return rc == WMS_ERR_TOO_LARGE ? WMS_ERR_INVALID_ARG : rc;
	}
	*out = doc;
	return WMS_OK;
}

wms_status wms__build_generic(wms__buf *out, wms_soap_version v, const xmlNode *body,
			      const wms__wsse *wsse, wms_error *err)
{
	xmlDocPtr doc = NULL;
	xmlNodePtr root, header, bodyel;
	xmlNsPtr soap;
	xmlChar *mem = NULL;
	int size = 0;
	wms__xml_quiet quiet;
	wms__xml_scan scan;
	wms_status rc = WMS_ERR_NOMEM;

	wms__xml_init();
	if (!body || body->type != XML_ELEMENT_NODE)
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "body must be an element node");
	if (body->ns && (xmlStrEqual(body->ns->href, X(WMS__SOAP11_NS)) ||
			 xmlStrEqual(body->ns->href, X(WMS__SOAP12_NS))))
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "body is a SOAP {%s}%s: pass the Body's content, libwms writes "
				 "the envelope", (const char *)body->ns->href, (const char *)body->name);
	if ((rc = wms__wsse_check(wsse, err)) != WMS_OK)
		return rc;
	rc = WMS_ERR_NOMEM;
	wms__xml_quiet_begin(&quiet);
	if (!(doc = xmlNewDoc(X("1.0"))) || !(doc->encoding = xmlStrdup(X("UTF-8"))) ||
	    !(root = xmlNewDocNode(doc, NULL, X("Envelope"), NULL)))
		goto done;
	xmlDocSetRootElement(doc, root);
	soap = v == WMS_SOAP_12 ? xmlNewNs(root, X(WMS__SOAP12_NS), X("soap12"))
				: xmlNewNs(root, X(WMS__SOAP11_NS), X("soap"));
	if (!soap)
		goto done;
	xmlSetNs(root, soap);
	if (wsse && wsse->mode != WMS_WSSE_NONE) {
		if (!(header = xmlNewChild(root, soap, X("Header"), NULL)))
			goto done;
		if ((rc = wms__wsse_add(header, soap, wsse)) != WMS_OK)
			goto done;
		rc = WMS_ERR_NOMEM;
	}
	if (!(bodyel = xmlNewChild(root, soap, X("Body"), NULL)))
		goto done;
	/* A copy: the caller keeps its node. Its element is the Envelope's
	 * third level. */
	if ((rc = copy_element(bodyel, body, 1, 3)) != WMS_OK) {
		if (rc == WMS_ERR_TOO_LARGE)
			rc = wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				       "body refused: nested deeper than libwms's limit of "
				       WMS__XML_STR(WMS__XML_MAX_DEPTH) " levels in the envelope "
				       "(the Envelope and Body are 2 of them)");
		else if (rc == WMS_ERR_INVALID_ARG)
			wms__fail(err, rc, WMS_DELIVERY_NOT_SENT,
				  "body holds an entity reference or a node an envelope cannot carry");
		goto done;
	}
	rc = WMS_ERR_NOMEM;
	xmlDocDumpMemoryEnc(doc, &mem, &size, "UTF-8");
	if (!mem || size <= 0 || quiet.errors) {
		rc = quiet.errors && !quiet.nomem ? WMS_ERR_INTERNAL : WMS_ERR_NOMEM;
		goto done;
	}
	/* What a WMS is sent keeps the limits libwms holds replies to. */
	if ((rc = wms__xml_check_limits(&scan, (const char *)mem, (size_t)size)) != WMS_OK) {
		if (rc != WMS_ERR_NOMEM)
			rc = WMS_ERR_INTERNAL; /* libxml2 wrote UTF-8: nothing else to refuse */
		goto done;
	}
	if (scan.limit) {
		char why[160];
		wms__xml_scan_describe(&scan, why, sizeof(why));
		rc = WMS_ERR_INVALID_ARG;
		wms__fail(err, rc, WMS_DELIVERY_NOT_SENT, "body refused: %s", why);
		goto done;
	}
	out->len = 0;
	rc = wms__buf_append(out, mem, (size_t)size);
done:
	wms__xml_quiet_end(&quiet);
	if (mem)
		xmlFree(mem);
	if (doc)
		xmlFreeDoc(doc);
	if (rc == WMS_ERR_NOMEM || rc == WMS_ERR_INTERNAL)
		wms__fail(err, rc, WMS_DELIVERY_NOT_SENT, "building the request: %s",
			  wms_strerror(rc));
	return rc;
}

wms_status wms__generic_body_parse(xmlDocPtr *out, const char *buf, size_t len, wms_error *err)
{
	char why[200];

	*out = NULL;
	if (!buf || !len)
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT, "body is empty");
	*out = wms__xml_safe_parse(buf, len, "body", NULL, why, sizeof(why));
	if (!*out)
		return wms__fail(err, strcmp(why, "out of memory") == 0 ? WMS_ERR_NOMEM
									 : WMS_ERR_INVALID_ARG,
				 WMS_DELIVERY_NOT_SENT, "body: %s", why);
	return WMS_OK;
}

wms_status wms__generic_content_type(char *dst, size_t size, wms_soap_version v,
				     const char *action, wms_error *err)
{
	int n = v == WMS_SOAP_12
			? snprintf(dst, size, "application/soap+xml; charset=utf-8; action=\"%s\"",
				   action ? action : "")
			: snprintf(dst, size, "text/xml; charset=utf-8");
	if (n < 0 || (size_t)n >= size)
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "call.soap_action is too long for the Content-Type");
	return WMS_OK;
}

/* The element child of `parent` named {ns}name, after `after`. */
static xmlNodePtr element(xmlNodePtr parent, const char *ns, const char *name)
{
	xmlNodePtr c;
	for (c = parent ? parent->children : NULL; c; c = c->next)
		if (c->type == XML_ELEMENT_NODE && c->ns && xmlStrEqual(c->ns->href, X(ns)) &&
		    xmlStrEqual(c->name, X(name)))
			return c;
	return NULL;
}

static xmlNodePtr first_element(xmlNodePtr parent)
{
	xmlNodePtr c;
	for (c = parent ? parent->children : NULL; c; c = c->next)
		if (c->type == XML_ELEMENT_NODE)
			return c;
	return NULL;
}

void wms__xml_doc_free(xmlDocPtr doc)
{
	if (doc)
		xmlFreeDoc(doc);
}

xmlNodePtr wms__xml_doc_root(xmlDocPtr doc)
{
	return doc ? xmlDocGetRootElement(doc) : NULL;
}

wms_status wms__generic_answer(xmlDocPtr *out, const char *buf, size_t len, const char *encoding,
			       wms_error *err)
{
	xmlDocPtr doc, answer = NULL;
	xmlNodePtr root, first;
	const char *soap_ns;
	char why[200];
	wms__xml_quiet quiet;
	wms_status rc = WMS_ERR_NOMEM;

	*out = NULL;
	doc = wms__xml_safe_parse(buf, len, "reply", encoding, why, sizeof(why));
	/* The reply parser read these very bytes whole: a tree that cannot be
	 * made of them now is out of resources, whatever libxml2 calls it. */
	if (!doc)
		return wms__fail(err, WMS_ERR_NOMEM, WMS_DELIVERY_ANSWERED,
				 "reading the reply's Body into a tree: %s", why);
	root = xmlDocGetRootElement(doc);
	soap_ns = root && root->ns && xmlStrEqual(root->ns->href, X(WMS__SOAP12_NS))
			  ? WMS__SOAP12_NS
			  : WMS__SOAP11_NS;
	/* The reply parser has checked this very shape: Envelope, Body, one
	 * element. Anything else here is libwms's own mistake. */
	first = first_element(element(root, soap_ns, "Body"));
	if (!first) {
		rc = wms__fail(err, WMS_ERR_INTERNAL, WMS_DELIVERY_ANSWERED,
			       "reading the reply's Body: no element where the parser found one");
		goto done;
	}
	wms__xml_quiet_begin(&quiet);
	if ((answer = xmlNewDoc(X("1.0"))) != NULL)
		rc = copy_element((xmlNodePtr)answer, first, 1, 1);
	if (rc == WMS_OK && quiet.errors)
		rc = WMS_ERR_NOMEM;
	wms__xml_quiet_end(&quiet);
	if (rc != WMS_OK) {
		if (answer)
			xmlFreeDoc(answer);
		/* INVALID_ARG: a node the parser never makes of a reply (an
		 * entity reference: a DOCTYPE was refused) */
		rc = wms__fail(err, rc == WMS_ERR_NOMEM ? rc : WMS_ERR_INTERNAL,
			       WMS_DELIVERY_ANSWERED, "copying the reply's Body element: %s",
			       rc == WMS_ERR_NOMEM ? "out of memory" : "an unexpected node");
		goto done;
	}
	*out = answer;
done:
	xmlFreeDoc(doc);
	return rc;
}
