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

/*
 * libxml2 2.9's tree parser does not stop at a fatal error: without
 * XML_PARSE_RECOVER the tree is dropped at the end, but it reads on to the
 * end of the input first, raising an error for everything that follows.
 * The structure scan (soap/limits.h) reads as far as the first fatal
 * error, where it may stop (at "<!x" in content, which libxml2 takes for a
 * start tag without a name and reads on from), so what libxml2 read after
 * it was never checked: a comment full of "--" there cost what the scan
 * refuses it for (each "--" copies the comment read so far into an error:
 * a 2 MiB fixture took 39 s under ASan, a fuzzer's finding), and a start
 * tag after "<?<" at the top level, which the scan reads as inside a
 * processing instruction, carried as many attributes as it liked.
 *
 * So the parse stops at its first fatal error, as the reply parser's does:
 * the context's error handler marks it ended (instate XML_PARSER_EOF, SAX
 * off: libxml2 raises no more errors and leaves its loops), and the input
 * is read through a callback that gives libxml2 nothing more once it has
 * (xmlParseDocument starts its root element and its epilogue anew whatever
 * the state: past an error it finds at most what it had buffered, a few
 * KiB). xmlStopParser would free the input, which the function raising the
 * error may still be reading. The first fatal error is what `why` names.
 */
typedef struct safe_parse {
	const char *buf; /* the document, handed to libxml2 by read_input */
	size_t len, off;
	int doctype;     /* a DOCTYPE was met: the parse stopped there */
	int stopped;     /* a fatal error: libxml2 gets no more input */
	int line;        /* the first fatal error's line and message */
	char msg[160];
	wms__xml_quiet *quiet; /* counts the errors, as when they reached it */
} safe_parse;

/* SAX hook: a DOCTYPE stops the parse before any entity is declared. */
static void refuse_doctype(void *ctx, const xmlChar *name, const xmlChar *external_id,
			   const xmlChar *system_id)
{
	xmlParserCtxtPtr ctxt = ctx;
	(void)name;
	(void)external_id;
	(void)system_id;
	if (ctxt->_private)
		((safe_parse *)ctxt->_private)->doctype = 1;
	xmlStopParser(ctxt);
}

/* The context's structured error handler: the first fatal error ends the
 * parse (above). Errors of the context now reach this handler instead of
 * the thread's, which wms__xml_quiet_begin installed: each is counted
 * there still. */
static void stop_at_fatal(void *ctx, xmlErrorPtr e)
{
	xmlParserCtxtPtr ctxt = ctx;
	safe_parse *s = ctxt ? ctxt->_private : NULL;
	size_t n;
	if (!s || !e)
		return;
	wms__xml_quiet_note(s->quiet, e);
	if (e->level != XML_ERR_FATAL)
		return;
	if (!s->stopped) {
		s->stopped = 1;
		s->line = e->line;
		snprintf(s->msg, sizeof(s->msg), "%s", e->message ? e->message : "parse error");
		n = strlen(s->msg);
		while (n && (s->msg[n - 1] == '\n' || s->msg[n - 1] == ' '))
			s->msg[--n] = '\0';
	}
	ctxt->wellFormed = 0;
	ctxt->disableSAX = 1;
	ctxt->instate = XML_PARSER_EOF;
}

/* libxml2's input: the document, until the first fatal error. */
static int read_input(void *ctx, char *dst, int size)
{
	safe_parse *s = ctx;
	size_t n = s->len - s->off;
	if (s->stopped || size <= 0)
		return 0;
	if (n > (size_t)size)
		n = (size_t)size;
	if (n)
		memcpy(dst, s->buf + s->off, n);
	s->off += n;
	return (int)n;
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
	safe_parse state;

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
	ctxt->sax->serror = stop_at_fatal;
	memset(&state, 0, sizeof(state));
	state.buf = buf;
	state.len = buf ? len : 0;
	state.quiet = &quiet;
	ctxt->_private = &state;
	/* Encoding errors bypass the context and would reach stderr. */
	wms__xml_quiet_begin(&quiet);
	doc = xmlCtxtReadIO(ctxt, read_input, NULL, &state, url, encoding,
			    XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
	wms__xml_quiet_end(&quiet);
	if (state.doctype || (doc && (doc->intSubset || doc->extSubset))) {
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
		if (state.stopped) {
			snprintf(why, why_size, "%s (line %d): %s", what, state.line, state.msg);
		} else if (e && e->message) {
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
