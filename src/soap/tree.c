/*
 * The tree parser for documents other than replies (fixture files, the
 * requests matched against them, a generic call's body and its reply
 * once the reply parser has checked it): libxml2 with no network, no entity
 * substitution, no DTD loading and no DOCTYPE at all, within the
 * structural limits of soap/limits.h.
 */
#include <stdio.h>
#include <string.h>

#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/xmlerror.h>

#include "soap/soap.h"
#include "soap/limits.h"

/* SAX hook: a DOCTYPE stops the parse before any entity is declared. */
static void refuse_doctype(void *ctx, const xmlChar *name, const xmlChar *external_id,
			   const xmlChar *system_id)
{
	xmlParserCtxtPtr ctxt = ctx;
	(void)name;
	(void)external_id;
	(void)system_id;
	if (ctxt->_private)
		*(int *)ctxt->_private = 1;
	xmlStopParser(ctxt);
}

/*
 * Parse `len` bytes with no network, no entity substitution, no DTD loading
 * and no DOCTYPE at all, within the structural limits of soap/limits.h
 * (checked before libxml2 reads a byte: its costs are quadratic in what one
 * start tag carries). NULL with `why` set on failure.
 *
 * Lifetimes: the tree's names live in the parser context's dictionary,
 * which the document holds a reference to (doc->dict): freeing the context
 * here leaves them valid until xmlFreeDoc.
 */
xmlDocPtr wms__xml_safe_parse(const char *buf, size_t len, const char *url, const char *encoding,
			      char *why, size_t why_size)
{
	xmlParserCtxtPtr ctxt;
	xmlDocPtr doc = NULL;
	wms__xml_quiet quiet;
	wms__xml_scan scan;
	char found[160];
	int doctype = 0;

	wms__xml_init();
	if (len > (size_t)0x7fffffff) {
		snprintf(why, why_size, "document too large (%zu bytes)", len);
		return NULL;
	}
	switch (wms__xml_check_limits(&scan, buf, len)) {
	case WMS_OK:
		if (!scan.limit)
			break;
		wms__xml_scan_describe(&scan, found, sizeof(found));
		snprintf(why, why_size, "%s%s", scan.malformed ? "not well-formed XML: " : "", found);
		return NULL;
	case WMS_ERR_NOMEM:
		snprintf(why, why_size, "out of memory");
		return NULL;
	default:
		snprintf(why, why_size, "refused: %s%s",
			 scan.limit ? scan.limit : "an encoding libwms does not read",
			 scan.limit && strstr(scan.limit, "encoding")
				 ? " (libwms reads " WMS__ENCODINGS_READ ")"
				 : "");
		return NULL;
	}
	ctxt = xmlNewParserCtxt();
	if (!ctxt || !ctxt->sax) {
		snprintf(why, why_size, "out of memory");
		goto done;
	}
	ctxt->sax->internalSubset = refuse_doctype;
	ctxt->sax->externalSubset = NULL;
	ctxt->_private = &doctype;
	/* Encoding errors bypass the context and would reach stderr. */
	wms__xml_quiet_begin(&quiet);
	doc = xmlCtxtReadMemory(ctxt, buf ? buf : "", (int)len, url, encoding,
				XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
	wms__xml_quiet_end(&quiet);
	if (doctype || (doc && (doc->intSubset || doc->extSubset))) {
		snprintf(why, why_size, "DOCTYPE refused (no DTDs or entity declarations)");
		if (doc)
			xmlFreeDoc(doc);
		doc = NULL;
	} else if (ctxt->errNo == XML_ERR_NO_MEMORY || quiet.nomem) {
		/* libxml2 2.9 may go on after one and report what it then made
		 * of the input: never take that for the document's fault */
		snprintf(why, why_size, "out of memory");
		if (doc)
			xmlFreeDoc(doc);
		doc = NULL;
	} else if (!doc || !xmlDocGetRootElement(doc) || !ctxt->nsWellFormed) {
		/* An undeclared prefix is only a namespace error to libxml2, but
		 * such a body could never match a real request. */
		const char *what = doc && xmlDocGetRootElement(doc) ? "namespace error" :
								      "not well-formed XML";
		xmlErrorPtr e = xmlCtxtGetLastError(ctxt);
		if (e && e->message) {
			size_t n = strlen(e->message);
			while (n && (e->message[n - 1] == '\n' || e->message[n - 1] == ' '))
				n--;
			snprintf(why, why_size, "%s (line %d): %.*s", what, e->line, (int)n, e->message);
		} else {
			snprintf(why, why_size, "%s", what);
		}
		if (doc)
			xmlFreeDoc(doc);
		doc = NULL;
	} else if (quiet.errors) {
		snprintf(why, why_size, "characters that do not decode (libxml2 error %d)",
			 quiet.first_code);
		xmlFreeDoc(doc);
		doc = NULL;
	}
done:
	if (ctxt) {
		ctxt->_private = NULL;
		xmlFreeParserCtxt(ctxt);
	}
	return doc;
}
