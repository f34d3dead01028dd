/* The one redactor of secrets in SOAP messages (soap/redact.h). libxml2's
 * SAX2 parser, building no tree, says where each element is and in which
 * namespace; xmlByteConsumed() gives its offsets in the body's own bytes,
 * so the output is the input with only the secrets' content replaced. */
#include <stdio.h>
#include <string.h>
#include <libxml/parser.h>
#include <libxml/parserInternals.h>
#include "internal.h"
#include "soap/soap.h"
#include "soap/redact.h"
#include "soap/limits.h"

/* A secret's content: [from, to) of the body. */
typedef struct span {
	size_t from, to;
} span;

typedef struct redactor {
	xmlParserCtxtPtr ctxt;
	const char *body;
	size_t len;
	wms__secrets found;
	unsigned depth;
	unsigned secret_depth; /* depth of the secret element being read, 0: none */
	size_t content_from;
	span *spans;
	size_t n, cap;
	const char *bad; /* why the secrets could not be located, NULL: they were */
	int nomem;
	int doctype;
} redactor;

static int is_secret(const xmlChar *local, const xmlChar *uri, int *password)
{
	*password = strcmp((const char *)local, "Password") == 0;
	return *password || (strcmp((const char *)local, "Nonce") == 0 && uri &&
			     strcmp((const char *)uri, WMS__WSSE_NS) == 0);
}

static void give_up(redactor *r, const char *why)
{
	if (!r->bad)
		r->bad = why;
	xmlStopParser(r->ctxt);
}

static void on_start(void *ctx, const xmlChar *local, const xmlChar *prefix, const xmlChar *uri,
		     int nb_namespaces, const xmlChar **namespaces, int nb_attributes,
		     int nb_defaulted, const xmlChar **attributes)
{
	redactor *r = ((xmlParserCtxtPtr)ctx)->_private;
	int password;
	long pos;
	(void)prefix;
	(void)nb_namespaces;
	(void)namespaces;
	(void)nb_attributes;
	(void)nb_defaulted;
	(void)attributes;
	/* libxml2 2.9 parses nested elements recursively: its depth limit
	 * keeps the stack bounded when no tree is built too. */
	if (++r->depth > WMS__XML_MAX_DEPTH) {
		give_up(r, "nested deeper than " WMS__XML_STR(WMS__XML_MAX_DEPTH) " elements");
		return;
	}
	if (uri && strcmp((const char *)uri, WMS__WSSE_NS) == 0)
		r->found.wsse = 1;
	if (r->secret_depth || !is_secret(local, uri, &password))
		return;
	/* Called before the start tag's '>' (or "/>") is read. */
	pos = xmlByteConsumed(r->ctxt);
	if (pos < 0 || (size_t)pos >= r->len || (r->body[pos] != '>' && r->body[pos] != '/')) {
		give_up(r, "an element's place in the body could not be told");
		return;
	}
	if (password)
		r->found.passwords++;
	else
		r->found.nonces++;
	r->secret_depth = r->depth;
	r->content_from = (size_t)pos + 1;
}

static void on_end(void *ctx, const xmlChar *local, const xmlChar *prefix, const xmlChar *uri)
{
	redactor *r = ((xmlParserCtxtPtr)ctx)->_private;
	long pos;
	size_t lt;
	(void)local;
	(void)prefix;
	(void)uri;
	if (r->secret_depth && r->secret_depth == r->depth) {
		r->secret_depth = 0;
		/* Called after the end tag's '>' ("/>" for an empty element):
		 * the content ends at the end tag's '<', the last one before. */
		pos = xmlByteConsumed(r->ctxt);
		if (pos <= 0 || (size_t)pos > r->len || r->body[pos - 1] != '>') {
			give_up(r, "an element's place in the body could not be told");
			return;
		}
		if (r->body[r->content_from - 1] == '/')
			goto out; /* <Password/>: nothing to hide */
		for (lt = (size_t)pos - 1; lt > r->content_from && r->body[lt] != '<'; lt--)
			;
		if (r->body[lt] != '<') {
			give_up(r, "an element's place in the body could not be told");
			return;
		}
		if (r->n == r->cap) {
			size_t cap = r->cap ? 2 * r->cap : 4;
			span *s = wms__realloc(r->spans, cap * sizeof(*s));
			if (!s) {
				r->nomem = 1;
				give_up(r, "out of memory");
				return;
			}
			r->spans = s;
			r->cap = cap;
		}
		r->spans[r->n].from = r->content_from;
		r->spans[r->n].to = lt;
		r->n++;
	}
out:
	r->depth--;
}

static void on_doctype(void *ctx, const xmlChar *name, const xmlChar *external_id,
		       const xmlChar *system_id)
{
	redactor *r = ((xmlParserCtxtPtr)ctx)->_private;
	(void)name;
	(void)external_id;
	(void)system_id;
	r->doctype = 1;
	give_up(r, "a DOCTYPE");
}

/* Parse with the callbacks above; r->bad says why not, if it did not. */
static void locate(redactor *r)
{
	xmlSAXHandler sax;
	wms__xml_quiet quiet;
	memset(&sax, 0, sizeof(sax));
	sax.initialized = XML_SAX2_MAGIC;
	sax.startElementNs = on_start;
	sax.endElementNs = on_end;
	sax.internalSubset = on_doctype;
	r->ctxt = xmlCreatePushParserCtxt(&sax, NULL, NULL, 0, NULL);
	if (!r->ctxt) {
		r->nomem = 1;
		r->bad = "out of memory";
		return;
	}
	r->ctxt->_private = r;
	xmlCtxtUseOptions(r->ctxt, XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
	/* Encoding errors bypass the context and would reach stderr. */
	wms__xml_quiet_begin(&quiet);
	xmlParseChunk(r->ctxt, r->body, (int)r->len, 1);
	wms__xml_quiet_end(&quiet);
	if (!r->bad && (!r->ctxt->wellFormed || !r->ctxt->nsWellFormed || quiet.errors))
		r->bad = "not well-formed XML";
	if (quiet.nomem || r->ctxt->errNo == XML_ERR_NO_MEMORY) {
		r->nomem = 1;
		r->bad = "out of memory";
	}
	xmlFreeParserCtxt(r->ctxt);
	r->ctxt = NULL;
}

wms_status wms__redact_secrets(wms__buf *out, const char *body, size_t len, wms__secrets *found,
			       char *why, size_t why_size)
{
	redactor r;
	wms__xml_scan scan;
	wms_status st;
	size_t i, at = 0;

	memset(&r, 0, sizeof(r));
	if (found)
		memset(found, 0, sizeof(*found));
	if (why && why_size)
		why[0] = '\0';
	if (!body)
		body = "";
	if (len > (size_t)0x7fffffff) {
		if (why)
			snprintf(why, why_size, "too large to read (%zu bytes)", len);
		return WMS_ERR_NOT_XML;
	}
	/* libxml2's costs are quadratic in what one start tag carries: the
	 * linear scan first, as for every body libwms reads. */
	st = wms__xml_check_limits(&scan, body, len);
	if (st == WMS_ERR_NOMEM)
		return st;
	if (st != WMS_OK || scan.limit) {
		if (why) {
			char what[160];
			if (st == WMS_OK)
				wms__xml_scan_describe(&scan, what, sizeof(what));
			snprintf(why, why_size, "%s", st == WMS_OK ? what : scan.limit);
		}
		return WMS_ERR_NOT_XML;
	}
	r.body = body;
	r.len = len;
	locate(&r);
	/* The spans come in document order, each after the last: checked all
	 * the same, as an offset libxml2 got wrong must not read out of bounds. */
	for (i = 0; !r.bad && i < r.n; i++)
		if (r.spans[i].from < (i ? r.spans[i - 1].to : 0) || r.spans[i].to < r.spans[i].from ||
		    r.spans[i].to > len)
			r.bad = "an element's place in the body could not be told";
	if (r.bad) {
		wms__free(r.spans);
		if (r.nomem)
			return WMS_ERR_NOMEM;
		if (why)
			snprintf(why, why_size, "%s", r.bad);
		return WMS_ERR_NOT_XML;
	}
	st = wms__buf_reserve(out, len + r.n * (sizeof(WMS__REDACTED) - 1));
	for (i = 0; st == WMS_OK && i < r.n; i++) {
		st = wms__buf_append(out, body + at, r.spans[i].from - at);
		if (st == WMS_OK)
			st = wms__buf_append(out, WMS__REDACTED, sizeof(WMS__REDACTED) - 1);
		at = r.spans[i].to;
	}
	if (st == WMS_OK)
		st = wms__buf_append(out, body + at, len - at);
	wms__free(r.spans);
	if (st != WMS_OK) {
		wms__buf_free(out);
		return st;
	}
	if (found)
		*found = r.found;
	return WMS_OK;
}

wms_status wms__redact_for_log(wms__buf *out, const char *body, size_t len)
{
	char why[192], note[256];
	wms_status st = wms__redact_secrets(out, body, len, NULL, why, sizeof(why));
	int n;
	if (st != WMS_ERR_NOT_XML)
		return st;
	if (!body)
		body = "";
	if (!memchr(body, '\0', len) && !wms__find(body, body + len, "Password", 8) &&
	    !wms__find(body, body + len, "Nonce", 5))
		return wms__buf_append(out, body, len);
	n = snprintf(note, sizeof(note),
		     "[libwms: %zu bytes withheld: not XML libwms reads (%s), and they may hold "
		     "a secret it cannot locate]",
		     len, why);
	return wms__buf_append(out, note, n < 0 ? 0 : (size_t)n < sizeof(note) ? (size_t)n
										: sizeof(note) - 1);
}
