/*
 * What libxml2 itself reads of a document, as counts of the structural
 * limits in src/soap/limits.h (fuzz.h): an oracle for the library's
 * byte scan (soap/limits.c) and the reply parser's own checks. It reads the
 * document as the reply parser does - a push parser, the same options, the
 * same 64 KiB chunks, no encoding forced - but counts from libxml2's SAX
 * events: attributes and namespace declarations per start tag, elements,
 * declarations in scope, depth, and the dictionary's growth. It knows
 * nothing of the scan's code.
 */
#include <stdio.h>
#include <string.h>
#include <libxml/parser.h>
#include <libxml/SAX2.h>
#include <libxml/xmlerror.h>
#include "fuzz.h"
#include "soap/limits.h"

/* The reply parser's options and chunk size (src/soap/parse.c). */
#define ORACLE_OPTIONS (XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING | XML_PARSE_NOCDATA)

typedef struct oracle {
	fuzz_xml_facts *f;
	xmlParserCtxtPtr ctxt;
	size_t dict_base;
	unsigned depth, scope;
	unsigned ns_of[WMS__XML_MAX_DEPTH + 16]; /* declarations of each open element */
	int scanning;  /* the scan still counts (it stops a little past the parsers' depth) */
	int stopped;   /* the reply parser would have stopped here */
	int fatal;
	int errors;    /* any error of level ERROR or worse */
} oracle;

static void name_of(char *dst, size_t size, const xmlChar *prefix, const xmlChar *local)
{
	size_t n = 0;
	const xmlChar *parts[3];
	int i;
	parts[0] = prefix;
	parts[1] = prefix ? (const xmlChar *)":" : NULL;
	parts[2] = local;
	for (i = 0; i < 3; i++) {
		const xmlChar *p = parts[i];
		while (p && *p && n + 1 < size) {
			unsigned char c = *p++;
			dst[n++] = c > 0x20 && c < 0x7F ? (char)c : '.';
		}
	}
	dst[n] = '\0';
}

static void crossed(fuzz_xml_facts *f, const char *limit, unsigned max, const xmlChar *prefix,
		    const xmlChar *local)
{
	if (!f->limit) {
		f->limit = limit;
		f->max = max;
		name_of(f->element, sizeof(f->element), prefix, local);
	} else if (!f->limit2) {
		f->limit2 = limit;
		f->max2 = max;
	}
}

static void on_start(void *ctx, const xmlChar *localname, const xmlChar *prefix, const xmlChar *uri,
		     int nb_namespaces, const xmlChar **namespaces, int nb_attributes,
		     int nb_defaulted, const xmlChar **attributes)
{
	oracle *o = ((xmlParserCtxtPtr)ctx)->_private;
	fuzz_xml_facts *f = o->f;
	unsigned ns = nb_namespaces > 0 ? (unsigned)nb_namespaces : 0;
	unsigned attrs = nb_attributes > 0 ? (unsigned)nb_attributes : 0;
	size_t names;

	(void)uri;
	(void)namespaces;
	(void)nb_defaulted;
	(void)attributes;
	if (o->stopped)
		return;
	f->elements++;
	if (o->scanning && !f->limit) {
		/* In the scan's order: the element, then what its tag carries
		 * (attributes and declarations as they come: either may be
		 * reported when both cross), then the scope it opens. */
		if (f->elements > WMS__XML_MAX_ELEMENTS) {
			crossed(f, "elements in one document", WMS__XML_MAX_ELEMENTS, prefix, localname);
		} else {
			if (attrs > WMS__XML_MAX_ATTRS)
				crossed(f, "attributes on one element", WMS__XML_MAX_ATTRS, prefix, localname);
			if (ns > WMS__XML_MAX_NS_DECLS)
				crossed(f, "namespace declarations on one element", WMS__XML_MAX_NS_DECLS,
					prefix, localname);
			if (!f->limit && o->depth < WMS__XML_MAX_DEPTH + 8 &&
			    o->scope + ns > WMS__XML_MAX_NS_SCOPE)
				crossed(f, "namespace declarations in scope", WMS__XML_MAX_NS_SCOPE, prefix,
					localname);
		}
		if (o->depth >= WMS__XML_MAX_DEPTH + 8)
			o->scanning = 0; /* the scan is full there and stops */
	}
	if (o->depth < sizeof(o->ns_of) / sizeof(o->ns_of[0]))
		o->ns_of[o->depth] = ns;
	o->scope += ns;
	o->depth++;
	if (o->depth > f->depth)
		f->depth = o->depth;
	/* The reply parser's own checks, in its order, at its start callback. */
	names = o->ctxt->dict ? (size_t)xmlDictSize(o->ctxt->dict) : 0;
	names = names > o->dict_base ? names - o->dict_base : 0;
	if (names > f->names)
		f->names = (unsigned)names;
	if (!f->stop && o->depth > WMS__XML_MAX_DEPTH)
		f->stop = FUZZ_STOP_DEPTH;
	else if (!f->stop && names > WMS__XML_MAX_NAMES)
		f->stop = FUZZ_STOP_NAMES;
	if (f->stop) {
		if (!f->limit)
			f->stop_first = 1;
		o->stopped = 1;
	}
}

static void on_end(void *ctx, const xmlChar *localname, const xmlChar *prefix, const xmlChar *uri)
{
	oracle *o = ((xmlParserCtxtPtr)ctx)->_private;
	(void)localname;
	(void)prefix;
	(void)uri;
	if (o->stopped || !o->depth)
		return;
	o->depth--;
	if (o->depth < sizeof(o->ns_of) / sizeof(o->ns_of[0]))
		o->scope -= o->ns_of[o->depth];
}

static void on_chars(void *ctx, const xmlChar *ch, int len)
{
	(void)ctx;
	(void)ch;
	(void)len;
}

static void on_doctype(void *ctx, const xmlChar *name, const xmlChar *external_id,
		       const xmlChar *system_id)
{
	xmlParserCtxtPtr ctxt = ctx;
	oracle *o = ctxt->_private;
	(void)name;
	(void)external_id;
	(void)system_id;
	o->f->doctype = 1;
	xmlStopParser(ctxt);
}

static void on_error(void *ctx, xmlErrorPtr e)
{
	xmlParserCtxtPtr ctxt = ctx;
	oracle *o = ctxt ? ctxt->_private : NULL;
	if (!o || !e)
		return;
	if (e->level >= XML_ERR_ERROR)
		o->errors++;
	if (e->level == XML_ERR_FATAL)
		o->fatal = 1;
}

void fuzz_xml_facts_read(fuzz_xml_facts *f, const char *buf, size_t len)
{
	xmlSAXHandler sax;
	xmlParserCtxtPtr ctxt;
	wms__xml_quiet quiet;
	oracle o;
	size_t fed = 0;

	memset(f, 0, sizeof(*f));
	memset(&o, 0, sizeof(o));
	o.f = f;
	o.scanning = 1;
	memset(&sax, 0, sizeof(sax));
	sax.initialized = XML_SAX2_MAGIC;
	sax.startElementNs = on_start;
	sax.endElementNs = on_end;
	sax.characters = on_chars;
	sax.ignorableWhitespace = on_chars;
	sax.internalSubset = on_doctype;
	sax.serror = on_error;
	wms__xml_quiet_begin(&quiet);
	ctxt = xmlCreatePushParserCtxt(&sax, NULL, NULL, 0, NULL);
	FUZZ_CHECK(ctxt != NULL, "oracle: no parser context");
	o.ctxt = ctxt;
	ctxt->_private = &o;
	xmlCtxtUseOptions(ctxt, ORACLE_OPTIONS);
	ctxt->replaceEntities = 0;
	ctxt->loadsubset = 0;
	ctxt->validate = 0;
	o.dict_base = ctxt->dict && xmlDictSize(ctxt->dict) > 0 ? (size_t)xmlDictSize(ctxt->dict) : 0;
	while (fed < len && !o.fatal && !f->doctype && !o.stopped) {
		size_t n = len - fed < FUZZ_PARSE_CHUNK ? len - fed : FUZZ_PARSE_CHUNK;
		xmlParseChunk(ctxt, buf + fed, (int)n, 0);
		fed += n;
	}
	if (!o.fatal && !f->doctype && !o.stopped)
		xmlParseChunk(ctxt, NULL, 0, 1);
	f->clean = !o.fatal && !o.errors && !f->doctype && !o.stopped && !quiet.errors &&
		   ctxt->wellFormed && ctxt->nsWellFormed && f->elements > 0;
	ctxt->_private = NULL;
	xmlFreeParserCtxt(ctxt);
	wms__xml_quiet_end(&quiet);
}

/* ---- what the library says about a limit ----------------------------------- */

static const struct {
	const char *what;
	unsigned max;
} scan_limits[] = {
	{ "elements in one document", WMS__XML_MAX_ELEMENTS },
	{ "attributes on one element", WMS__XML_MAX_ATTRS },
	{ "namespace declarations on one element", WMS__XML_MAX_NS_DECLS },
	{ "namespace declarations in scope", WMS__XML_MAX_NS_SCOPE },
};

const char *fuzz_limit_tail(const char *s, char *element, size_t size)
{
	static const char mid[] = "> crosses libwms's limit of ";
	const char *p;
	size_t i, n;
	char want[96];

	if (element && size)
		element[0] = '\0';
	if (s[0] != '<' || !(p = strstr(s, mid)))
		return NULL;
	if (element && size) {
		n = (size_t)(p - (s + 1));
		if (n >= size)
			n = size - 1;
		memcpy(element, s + 1, n);
		element[n] = '\0';
	}
	p += sizeof(mid) - 1;
	for (i = 0; i < sizeof(scan_limits) / sizeof(scan_limits[0]); i++) {
		snprintf(want, sizeof(want), "%u %s", scan_limits[i].max, scan_limits[i].what);
		if (!strcmp(p, want))
			return scan_limits[i].what;
	}
	fuzz_fail(__FILE__, __LINE__, "a known limit", "\"%.200s\" names no limit of soap/limits.h", s);
}
