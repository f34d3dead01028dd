/*
 * Fixture replay and recording transports (wms/fixture.h).
 *
 * Format: tests/fixtures/README.md. A fixture's request body is turned into a
 * canonical text rendering at load (one line per element, attribute and text
 * node, `{namespace}local`), and so is every request sent, with the same
 * masks; a match is an equal SOAPAction and an equal rendering. On a
 * mismatch the renderings are diffed line by line (Myers) and shown as a
 * unified diff.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/xmlerror.h>

#include "internal.h"
#include "soap.h" /* wms__xml_init, wms__xml_check_limits */
#include "xml_limits.h"
#include "fixture_internal.h"
#include "wms/fixture.h"

#define FIXTURE_NS "urn:libwms:fixture:1"
#define WSSE_NS "http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-wssecurity-secext-1.0.xsd"
#define REDACTED "REDACTED"

/* A fixture file larger than this is refused (they are one exchange each). */
#define FIXTURE_FILE_MAX (64u * 1024u * 1024u)
/* Unified-diff context lines, the most edits Myers may search for before the
 * diff falls back to "replace the whole middle", and the diff text cap. */
#define DIFF_CONTEXT 3
#define DIFF_MAX_EDITS 2000
#define DIFF_TEXT_MAX (64u * 1024u)
/* curl's CURLE_COULDNT_RESOLVE_PROXY / _HOST: libcurl stays in its own file. */
#define CURL_CODE_RESOLVE_PROXY 5
#define CURL_CODE_RESOLVE_HOST 6

/* ---- libxml2: a parser that refuses DOCTYPEs ------------------------------ */

/* libxml2's global set-up is done once per process by the SOAP code. */
static void xml_init(void)
{
	wms__xml_init();
}

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
 * and no DOCTYPE at all, within the structural limits of xml_limits.h
 * (checked before libxml2 reads a byte: its costs are quadratic in what one
 * start tag carries). NULL with `why` set on failure.
 *
 * Lifetimes: the tree's names live in the parser context's dictionary,
 * which the document holds a reference to (doc->dict): freeing the context
 * here leaves them valid until xmlFreeDoc.
 */
static xmlDocPtr safe_parse(const char *buf, size_t len, const char *url, char *why,
			    size_t why_size)
{
	xmlParserCtxtPtr ctxt;
	xmlDocPtr doc = NULL;
	wms__xml_quiet quiet;
	wms__xml_scan scan;
	char found[160];
	int doctype = 0;

	xml_init();
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
	doc = xmlCtxtReadMemory(ctxt, buf ? buf : "", (int)len, url, NULL,
				XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
	wms__xml_quiet_end(&quiet);
	if (doctype || (doc && (doc->intSubset || doc->extSubset))) {
		snprintf(why, why_size, "DOCTYPE refused (no DTDs or entity declarations)");
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

static const char *xs(const xmlChar *s)
{
	return s ? (const char *)s : "";
}

static int is_xml_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* The tail of a long path, so the problem still fits the error message. */
static const char *short_path(const char *path, char *buf, size_t size)
{
	size_t n = strlen(path);
	if (n <= 80)
		return path;
	snprintf(buf, size, "...%s", path + n - 77);
	return buf;
}

/* ---- canonical rendering -------------------------------------------------- */

typedef struct mask_set {
	char *const *a;
	size_t na;
	char *const *b;
	size_t nb;
} mask_set;

static int is_masked(const mask_set *m, const char *local)
{
	size_t i;
	for (i = 0; i < m->na; i++)
		if (strcmp(m->a[i], local) == 0)
			return 1;
	for (i = 0; i < m->nb; i++)
		if (strcmp(m->b[i], local) == 0)
			return 1;
	return 0;
}

static wms_status put(wms__buf *out, const char *s)
{
	return wms__buf_append(out, s, strlen(s));
}

static wms_status put_indent(wms__buf *out, int depth)
{
	static const char spaces[] = "                                ";
	wms_status st = WMS_OK;
	while (depth > 0 && st == WMS_OK) {
		int n = depth > 16 ? 16 : depth;
		st = wms__buf_append(out, spaces, (size_t)n * 2);
		depth -= n;
	}
	return st;
}

/* "{ns}local", or "local" outside any namespace. */
static wms_status put_qname(wms__buf *out, const xmlNs *ns, const xmlChar *local)
{
	wms_status st = WMS_OK;
	if (ns && ns->href && ns->href[0]) {
		st = put(out, "{");
		if (st == WMS_OK)
			st = put(out, xs(ns->href));
		if (st == WMS_OK)
			st = put(out, "}");
	}
	return st == WMS_OK ? put(out, xs(local)) : st;
}

/* A quoted string with newlines, tabs, quotes and control bytes escaped, so
 * one value stays on one line. */
static wms_status put_quoted(wms__buf *out, const char *s, size_t n)
{
	wms_status st = put(out, "\"");
	size_t i, start = 0;
	for (i = 0; i < n && st == WMS_OK; i++) {
		unsigned char c = (unsigned char)s[i];
		char esc[8];
		if (c >= 0x20 && c != '"' && c != '\\' && c != 0x7f)
			continue;
		st = wms__buf_append(out, s + start, i - start);
		start = i + 1;
		if (c == '\n')
			snprintf(esc, sizeof(esc), "\\n");
		else if (c == '\t')
			snprintf(esc, sizeof(esc), "\\t");
		else if (c == '\r')
			snprintf(esc, sizeof(esc), "\\r");
		else if (c == '"' || c == '\\')
			snprintf(esc, sizeof(esc), "\\%c", c);
		else
			snprintf(esc, sizeof(esc), "\\x%02x", c);
		if (st == WMS_OK)
			st = put(out, esc);
	}
	if (st == WMS_OK)
		st = wms__buf_append(out, s + start, n - start);
	return st == WMS_OK ? put(out, "\"") : st;
}

static wms_status put_text_line(wms__buf *out, int depth, const wms__buf *text)
{
	const char *s = text->data;
	size_t n = text->len;
	wms_status st;
	while (n && is_xml_space(*s)) {
		s++;
		n--;
	}
	while (n && is_xml_space(s[n - 1]))
		n--;
	if (!n)
		return WMS_OK;
	st = put_indent(out, depth);
	if (st == WMS_OK)
		st = put_quoted(out, s, n);
	return st == WMS_OK ? put(out, "\n") : st;
}

static int cmp_attr(const void *pa, const void *pb)
{
	const xmlAttr *a = *(const xmlAttr *const *)pa;
	const xmlAttr *b = *(const xmlAttr *const *)pb;
	int c = strcmp(a->ns ? xs(a->ns->href) : "", b->ns ? xs(b->ns->href) : "");
	return c ? c : strcmp(xs(a->name), xs(b->name));
}

static wms_status render_attrs(wms__buf *out, xmlNodePtr el, int depth)
{
	xmlAttrPtr a;
	xmlAttrPtr *v = NULL;
	size_t n = 0, i;
	wms_status st = WMS_OK;

	for (a = el->properties; a; a = a->next)
		n++;
	if (!n)
		return WMS_OK;
	v = wms__calloc(n, sizeof(*v));
	if (!v)
		return WMS_ERR_NOMEM;
	for (n = 0, a = el->properties; a; a = a->next)
		v[n++] = a;
	qsort(v, n, sizeof(*v), cmp_attr);
	for (i = 0; i < n && st == WMS_OK; i++) {
		xmlChar *val = xmlNodeGetContent((xmlNodePtr)v[i]);
		st = put_indent(out, depth);
		if (st == WMS_OK)
			st = put(out, "@");
		if (st == WMS_OK)
			st = put_qname(out, v[i]->ns, v[i]->name);
		if (st == WMS_OK)
			st = put(out, "=");
		if (st == WMS_OK)
			st = put_quoted(out, xs(val), strlen(xs(val)));
		if (st == WMS_OK)
			st = put(out, "\n");
		if (val)
			xmlFree(val);
	}
	wms__free(v);
	return st;
}

/* One element: its line, its attributes (sorted), then its content. Text
 * split only by comments or PIs counts as one text node. */
static wms_status render_element(wms__buf *out, xmlNodePtr el, int depth, const mask_set *m)
{
	wms__buf text = { NULL, 0, 0 };
	xmlNodePtr c;
	wms_status st;

	st = put_indent(out, depth);
	if (st == WMS_OK)
		st = put_qname(out, el->ns, el->name);
	if (st != WMS_OK)
		goto done;
	if (is_masked(m, xs(el->name))) {
		st = put(out, " *masked*\n");
		goto done;
	}
	st = put(out, "\n");
	if (st == WMS_OK)
		st = render_attrs(out, el, depth + 1);
	for (c = el->children; c && st == WMS_OK; c = c->next) {
		switch (c->type) {
		case XML_TEXT_NODE:
		case XML_CDATA_SECTION_NODE:
			if (c->content)
				st = put(&text, xs(c->content));
			break;
		case XML_ELEMENT_NODE:
			st = put_text_line(out, depth + 1, &text);
			text.len = 0;
			if (st == WMS_OK)
				st = render_element(out, c, depth + 1, m);
			break;
		case XML_ENTITY_REF_NODE: /* only the predefined ones can appear: no DTDs */
		case XML_COMMENT_NODE:
		case XML_PI_NODE:
		case XML_ATTRIBUTE_NODE:
		case XML_ENTITY_NODE:
		case XML_DOCUMENT_NODE:
		case XML_DOCUMENT_TYPE_NODE:
		case XML_DOCUMENT_FRAG_NODE:
		case XML_NOTATION_NODE:
		case XML_HTML_DOCUMENT_NODE:
		case XML_DTD_NODE:
		case XML_ELEMENT_DECL:
		case XML_ATTRIBUTE_DECL:
		case XML_ENTITY_DECL:
		case XML_NAMESPACE_DECL:
		case XML_XINCLUDE_START:
		case XML_XINCLUDE_END:
#ifdef LIBXML_DOCB_ENABLED
		case XML_DOCB_DOCUMENT_NODE:
#endif
			break;
		}
	}
	if (st == WMS_OK)
		st = put_text_line(out, depth + 1, &text);
done:
	wms__buf_free(&text);
	return st;
}

/* The rendering of a whole document into `out` (reset first). */
static wms_status render_doc(wms__buf *out, xmlDocPtr doc, const mask_set *m)
{
	xmlNodePtr root = xmlDocGetRootElement(doc);
	out->len = 0;
	if (out->data)
		out->data[0] = '\0';
	if (!root)
		return WMS_ERR_FIXTURE;
	return render_element(out, root, 0, m);
}

/* ---- line diff (Myers) ------------------------------------------------------ */

typedef struct dline {
	const char *p;
	size_t n;
} dline;

typedef enum edit_op { EDIT_EQ = 0, EDIT_DEL = 1, EDIT_INS = 2 } edit_op;

typedef struct edit {
	edit_op op;
	size_t a; /* index in the old lines (EQ, DEL) */
	size_t b; /* index in the new lines (EQ, INS) */
} edit;

static wms_status split_lines(const char *text, size_t len, dline **out, size_t *count)
{
	size_t n = 0, i, start = 0;
	dline *v;
	for (i = 0; i < len; i++)
		if (text[i] == '\n')
			n++;
	if (len && text[len - 1] != '\n')
		n++;
	v = wms__calloc(n ? n : 1, sizeof(*v));
	if (!v)
		return WMS_ERR_NOMEM;
	for (n = 0, i = 0; i < len; i++) {
		if (text[i] == '\n') {
			v[n].p = text + start;
			v[n++].n = i - start;
			start = i + 1;
		}
	}
	if (start < len) {
		v[n].p = text + start;
		v[n++].n = len - start;
	}
	*out = v;
	*count = n;
	return WMS_OK;
}

static int line_eq(const dline *x, const dline *y)
{
	return x->n == y->n && memcmp(x->p, y->p, x->n) == 0;
}

/*
 * Shortest edit script for a[0..n) -> b[0..m), both non-empty, appended to
 * `ed`. Returns WMS_ERR_TOO_LARGE (nothing appended) when it needs more than
 * DIFF_MAX_EDITS edits: the caller then replaces the whole range.
 */
static wms_status myers(const dline *a, int n, const dline *b, int m, edit *ed, size_t *ned)
{
	int max = n + m, dmax = max < DIFF_MAX_EDITS ? max : DIFF_MAX_EDITS;
	int off = dmax + 1, d, k, x, y, found = -1;
	int *v = NULL, *trace = NULL;
	size_t start = *ned, i, j, cap = 0;
	wms_status st = WMS_OK;

	/* v[off + k] for k in [-d-1, d+1]; trace row d (2d+1 values) at d*d. */
	v = wms__calloc((size_t)2 * (size_t)dmax + 3, sizeof(*v));
	if (!v) {
		st = WMS_ERR_NOMEM;
		goto done;
	}
	for (d = 0; d <= dmax && found < 0; d++) {
		size_t need = ((size_t)d + 1) * ((size_t)d + 1);
		for (k = -d; k <= d; k += 2) {
			if (k == -d || (k != d && v[off + k - 1] < v[off + k + 1]))
				x = v[off + k + 1];
			else
				x = v[off + k - 1] + 1;
			y = x - k;
			while (x < n && y < m && line_eq(&a[x], &b[y])) {
				x++;
				y++;
			}
			v[off + k] = x;
			if (x >= n && y >= m)
				found = d;
		}
		if (need > cap) {
			size_t ncap = cap ? cap * 2 : 64;
			int *nt;
			while (ncap < need)
				ncap *= 2;
			nt = wms__realloc(trace, ncap * sizeof(*trace));
			if (!nt) {
				st = WMS_ERR_NOMEM;
				goto done;
			}
			trace = nt;
			cap = ncap;
		}
		memcpy(trace + (size_t)d * (size_t)d, v + off - d, ((size_t)2 * (size_t)d + 1) * sizeof(*v));
	}
	if (found < 0) {
		st = WMS_ERR_TOO_LARGE;
		goto done;
	}
	/* Walk back from (n, m), emitting edits in reverse. */
	x = n;
	y = m;
	for (d = found; d > 0; d--) {
		const int *vp = trace + (size_t)(d - 1) * (size_t)(d - 1) + (d - 1); /* vp[k] */
		int pk, px, py, mx, my, ins;
		k = x - y;
		ins = k == -d || (k != d && vp[k - 1] < vp[k + 1]);
		pk = ins ? k + 1 : k - 1;
		px = vp[pk];
		py = px - pk;
		mx = ins ? px : px + 1;
		my = ins ? py + 1 : py;
		while (x > mx && y > my) {
			x--;
			y--;
			ed[(*ned)++] = (edit){ EDIT_EQ, (size_t)x, (size_t)y };
		}
		if (ins)
			ed[(*ned)++] = (edit){ EDIT_INS, (size_t)px, (size_t)py };
		else
			ed[(*ned)++] = (edit){ EDIT_DEL, (size_t)px, (size_t)py };
		x = px;
		y = py;
	}
	while (x > 0 && y > 0) {
		x--;
		y--;
		ed[(*ned)++] = (edit){ EDIT_EQ, (size_t)x, (size_t)y };
	}
	for (i = start, j = *ned; i + 1 < j; i++, j--) {
		edit t = ed[i];
		ed[i] = ed[j - 1];
		ed[j - 1] = t;
	}
done:
	wms__free(v);
	wms__free(trace);
	return st;
}

typedef struct diff {
	dline *a, *b;
	size_t na, nb;
	edit *ed;
	size_t ned;
	size_t cost; /* lines removed + lines added */
	char *own;   /* the text `b` points into, when the diff owns it */
} diff;

static void diff_free(diff *df)
{
	wms__free(df->own);
	wms__free(df->a);
	wms__free(df->b);
	wms__free(df->ed);
	memset(df, 0, sizeof(*df));
}

/* Diff two renderings: common prefix and suffix first, Myers on the rest. */
static wms_status diff_compute(diff *df, const char *old_text, size_t old_len,
			       const char *new_text, size_t new_len)
{
	size_t p = 0, s = 0, i;
	wms_status st;

	memset(df, 0, sizeof(*df));
	st = split_lines(old_text, old_len, &df->a, &df->na);
	if (st == WMS_OK)
		st = split_lines(new_text, new_len, &df->b, &df->nb);
	if (st != WMS_OK)
		goto done;
	if (df->na + df->nb > (size_t)0x3fffffff) {
		st = WMS_ERR_TOO_LARGE;
		goto done;
	}
	df->ed = wms__calloc(df->na + df->nb + 1, sizeof(*df->ed));
	if (!df->ed) {
		st = WMS_ERR_NOMEM;
		goto done;
	}
	while (p < df->na && p < df->nb && line_eq(&df->a[p], &df->b[p]))
		p++;
	while (s < df->na - p && s < df->nb - p &&
	       line_eq(&df->a[df->na - 1 - s], &df->b[df->nb - 1 - s]))
		s++;
	for (i = 0; i < p; i++)
		df->ed[df->ned++] = (edit){ EDIT_EQ, i, i };
	{
		size_t n = df->na - p - s, m = df->nb - p - s, before = df->ned;
		if (n && m) {
			st = myers(df->a + p, (int)n, df->b + p, (int)m, df->ed, &df->ned);
			if (st == WMS_ERR_TOO_LARGE)
				st = WMS_OK; /* too different: replace the whole middle */
			else if (st != WMS_OK)
				goto done;
			else
				n = m = 0; /* done by myers */
			for (i = before; i < df->ned; i++) {
				df->ed[i].a += p;
				df->ed[i].b += p;
			}
		}
		for (i = 0; i < n; i++)
			df->ed[df->ned++] = (edit){ EDIT_DEL, p + i, p };
		for (i = 0; i < m; i++)
			df->ed[df->ned++] = (edit){ EDIT_INS, p + n, p + i };
	}
	for (i = 0; i < s; i++)
		df->ed[df->ned++] = (edit){ EDIT_EQ, df->na - s + i, df->nb - s + i };
	for (i = 0; i < df->ned; i++)
		if (df->ed[i].op != EDIT_EQ)
			df->cost++;
done:
	if (st != WMS_OK)
		diff_free(df);
	return st;
}

static wms_status put_diff_line(wms__buf *out, char mark, const dline *l)
{
	wms_status st = wms__buf_append(out, &mark, 1);
	if (st == WMS_OK)
		st = wms__buf_append(out, l->p, l->n);
	return st == WMS_OK ? put(out, "\n") : st;
}

/* Unified-style hunks with DIFF_CONTEXT lines of context, capped in size. */
static wms_status diff_render(wms__buf *out, const diff *df)
{
	size_t i = 0, apos = 0, bpos = 0;
	wms_status st = WMS_OK;

	while (i < df->ned && st == WMS_OK) {
		size_t j = i, start, end, k, last, ac = 0, bc = 0, as, bs;
		char hdr[96];
		while (j < df->ned && df->ed[j].op == EDIT_EQ)
			j++;
		if (j == df->ned)
			break;
		start = j >= i + DIFF_CONTEXT ? j - DIFF_CONTEXT : i;
		for (k = i; k < start; k++) {
			apos++;
			bpos++;
		}
		last = j;
		for (k = j + 1; k < df->ned; k++) {
			if (df->ed[k].op != EDIT_EQ)
				last = k;
			else if (k - last > 2 * DIFF_CONTEXT)
				break;
		}
		end = last + 1 + DIFF_CONTEXT < df->ned ? last + 1 + DIFF_CONTEXT : df->ned;
		for (k = start; k < end; k++) {
			if (df->ed[k].op != EDIT_INS)
				ac++;
			if (df->ed[k].op != EDIT_DEL)
				bc++;
		}
		as = ac ? apos + 1 : apos;
		bs = bc ? bpos + 1 : bpos;
		snprintf(hdr, sizeof(hdr), "@@ -%zu,%zu +%zu,%zu @@\n", as, ac, bs, bc);
		st = put(out, hdr);
		for (k = start; k < end && st == WMS_OK; k++) {
			const edit *e = &df->ed[k];
			if (out->len > DIFF_TEXT_MAX) {
				st = put(out, "... (diff truncated)\n");
				return st;
			}
			switch (e->op) {
			case EDIT_EQ:
				st = put_diff_line(out, ' ', &df->a[e->a]);
				break;
			case EDIT_DEL:
				st = put_diff_line(out, '-', &df->a[e->a]);
				break;
			case EDIT_INS:
				st = put_diff_line(out, '+', &df->b[e->b]);
				break;
			}
		}
		apos += ac;
		bpos += bc;
		i = end;
	}
	return st;
}

/* "line 14: -"SKU-1" +"SKU-2"" for the one-line summary. */
static void diff_first(const diff *df, char *buf, size_t size)
{
	const dline *del = NULL, *ins = NULL;
	size_t i, at = 0;
	int seen = 0;
	for (i = 0; i < df->ned; i++) {
		const edit *e = &df->ed[i];
		if (e->op == EDIT_EQ) {
			if (seen)
				break;
			continue;
		}
		if (!seen)
			at = (e->op == EDIT_DEL ? e->a : e->b) + 1;
		seen = 1;
		if (e->op == EDIT_DEL && !del)
			del = &df->a[e->a];
		if (e->op == EDIT_INS && !ins)
			ins = &df->b[e->b];
	}
	{
		const char *dp = del ? del->p : "", *ip = ins ? ins->p : "";
		size_t dn = del ? del->n : 0, in = ins ? ins->n : 0;
		while (dn && *dp == ' ') {
			dp++;
			dn--;
		}
		while (in && *ip == ' ') {
			ip++;
			in--;
		}
		if (del && ins)
			snprintf(buf, size, "line %zu: -%.*s +%.*s", at, (int)(dn > 60 ? 60 : dn), dp,
				 (int)(in > 60 ? 60 : in), ip);
		else if (del)
			snprintf(buf, size, "line %zu: -%.*s", at, (int)(dn > 60 ? 60 : dn), dp);
		else
			snprintf(buf, size, "line %zu: +%.*s", at, (int)(in > 60 ? 60 : in), ip);
	}
}

/* ---- fixtures ---------------------------------------------------------------- */

typedef enum fault_kind {
	FAULT_NONE = 0,
	FAULT_TIMEOUT,
	FAULT_REFUSED,
	FAULT_RESET,
	FAULT_DNS,
	FAULT_CONNECT_TIMEOUT, /* a timeout before the request left: NOT_SENT */
	FAULT_RESET_BEFORE_SEND /* a reset before the request left: NOT_SENT */
} fault_kind;

typedef struct fixture {
	char *path;
	char *name;
	char *operation;   /* may be NULL */
	char *soap_action;
	char **masks;
	size_t mask_count;
	char *canon;       /* the request body's rendering */
	size_t canon_len;
	/* the reply, or the fault */
	long status;
	uint32_t delay_ms;
	char *content_type;
	char *body;
	size_t body_len;
	fault_kind fault;
	uint32_t after_ms;
	int has_after;
	size_t used;       /* guarded by the transport's lock */
} fixture;

static void fixture_free(fixture *fx)
{
	size_t i;
	wms__free(fx->path);
	wms__free(fx->name);
	wms__free(fx->operation);
	wms__free(fx->soap_action);
	for (i = 0; i < fx->mask_count; i++)
		wms__free(fx->masks[i]);
	wms__free(fx->masks);
	wms__free(fx->canon);
	wms__free(fx->content_type);
	wms__free(fx->body);
	memset(fx, 0, sizeof(*fx));
}

typedef struct replay {
	wms_transport parent;
	fixture *fx;
	size_t count;
	char **masks; /* options->masked_elements, copied */
	size_t mask_count;
	wms_replay_order order;
	wms_replay_mismatch_fn on_mismatch;
	void *mismatch_ctx;
	int real_time;
	pthread_mutex_t lock;
	size_t cursor; /* SEQUENCE: the next fixture to answer */
	size_t hits;
} replay;

static mask_set fixture_masks(const replay *r, const fixture *fx)
{
	mask_set m;
	m.a = fx->masks;
	m.na = fx->mask_count;
	m.b = r->masks;
	m.nb = r->mask_count;
	return m;
}

/* A load problem: "fixture PATH:LINE: WHAT". */
static wms_status bad_fixture(wms_error *err, const char *path, long lineno, const char *fmt, ...)
#if defined(__GNUC__)
	__attribute__((format(printf, 4, 5)))
#endif
	;

static wms_status bad_fixture(wms_error *err, const char *path, long lineno, const char *fmt, ...)
{
	char what[WMS_ERROR_MESSAGE_MAX], pbuf[96];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	if (lineno > 0)
		return wms__fail(err, WMS_ERR_FIXTURE, WMS_DELIVERY_NOT_SENT, "fixture %s:%ld: %s",
				 short_path(path, pbuf, sizeof(pbuf)), lineno, what);
	return wms__fail(err, WMS_ERR_FIXTURE, WMS_DELIVERY_NOT_SENT, "fixture %s: %s",
			 short_path(path, pbuf, sizeof(pbuf)), what);
}

static int in_fixture_ns(const xmlNode *n)
{
	return n->ns && n->ns->href && strcmp(xs(n->ns->href), FIXTURE_NS) == 0;
}

/* Every un-namespaced attribute of `el` must be one of `allowed` (NULL-ended);
 * namespaced ones are left for annotations. Returns the offending name. */
static const char *unknown_attr(const xmlNode *el, const char *const *allowed)
{
	const xmlAttr *a;
	for (a = el->properties; a; a = a->next) {
		const char *const *p;
		if (a->ns)
			continue;
		for (p = allowed; *p; p++)
			if (strcmp(*p, xs(a->name)) == 0)
				break;
		if (!*p)
			return xs(a->name);
	}
	return NULL;
}

/* A non-negative decimal of at most `max`, nothing else. */
static int parse_uint(const char *s, unsigned long max, unsigned long *out)
{
	unsigned long v = 0;
	if (!s || !*s)
		return -1;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -1;
		if (v > (max - (unsigned long)(*s - '0')) / 10)
			return -1;
		v = v * 10 + (unsigned long)(*s - '0');
	}
	*out = v;
	return 0;
}

static int b64_value(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

/* Strict base64 (whitespace ignored, '=' padding only at the end). */
static wms_status b64_decode(const char *s, size_t n, char **out, size_t *out_len, char *why,
			     size_t why_size)
{
	char *o = wms__malloc(n / 4 * 3 + 3);
	size_t i, olen = 0, q = 0, pad = 0;
	unsigned acc = 0;
	if (!o)
		return WMS_ERR_NOMEM;
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		int v;
		if (is_xml_space((char)c))
			continue;
		if (c == '=') {
			if (q < 2 || pad >= 2) {
				snprintf(why, why_size, "bad base64 in <body>: misplaced '=' at offset %zu", i);
				goto fail;
			}
			pad++;
			q++;
			acc <<= 6;
			if (q == 4) {
				o[olen++] = (char)((acc >> 16) & 0xff);
				if (pad == 1)
					o[olen++] = (char)((acc >> 8) & 0xff);
				q = 0;
				acc = 0;
			}
			continue;
		}
		v = b64_value(c);
		if (v < 0 || pad) {
			snprintf(why, why_size, "bad base64 in <body>: unexpected character '%c' at offset %zu",
				 (c >= 0x20 && c < 0x7f) ? c : '?', i);
			goto fail;
		}
		acc = (acc << 6) | (unsigned)v;
		if (++q == 4) {
			o[olen++] = (char)((acc >> 16) & 0xff);
			o[olen++] = (char)((acc >> 8) & 0xff);
			o[olen++] = (char)(acc & 0xff);
			q = 0;
			acc = 0;
		}
	}
	if (q != 0) {
		snprintf(why, why_size, "bad base64 in <body>: length is not a multiple of 4");
		goto fail;
	}
	o[olen] = '\0';
	*out = o;
	*out_len = olen;
	return WMS_OK;
fail:
	wms__free(o);
	return WMS_ERR_FIXTURE;
}

/*
 * The bytes a <body> stands for. Text: its text and CDATA content, where
 * whitespace-only text around CDATA sections is layout and dropped.
 * encoding="base64": decoded, whitespace ignored.
 */
static wms_status body_value(const xmlNode *body, char **out, size_t *out_len, char *why,
			     size_t why_size)
{
	wms__buf text = { NULL, 0, 0 };
	const xmlNode *c;
	const char *allowed[] = { "encoding", NULL };
	const char *bad;
	xmlChar *enc = NULL;
	int has_cdata = 0, b64 = 0;
	wms_status st = WMS_OK;

	*out = NULL;
	*out_len = 0;
	if ((bad = unknown_attr(body, allowed)) != NULL) {
		snprintf(why, why_size, "unknown attribute '%s' on <body>", bad);
		return WMS_ERR_FIXTURE;
	}
	enc = xmlGetProp(body, (const xmlChar *)"encoding");
	if (enc) {
		if (strcmp(xs(enc), "base64") == 0) {
			b64 = 1;
		} else if (strcmp(xs(enc), "text") != 0) {
			snprintf(why, why_size, "<body encoding=\"%.40s\">: expected \"text\" or \"base64\"",
				 xs(enc));
			st = WMS_ERR_FIXTURE;
			goto done;
		}
	}
	for (c = body->children; c; c = c->next) {
		if (c->type == XML_CDATA_SECTION_NODE)
			has_cdata = 1;
		if (c->type == XML_ELEMENT_NODE) {
			snprintf(why, why_size, "<body> holds an element <%.40s>: put the XML in a CDATA section",
				 xs(c->name));
			st = WMS_ERR_FIXTURE;
			goto done;
		}
	}
	for (c = body->children; c && st == WMS_OK; c = c->next) {
		const char *s = xs(c->content);
		size_t i, n;
		if (c->type != XML_TEXT_NODE && c->type != XML_CDATA_SECTION_NODE)
			continue;
		n = strlen(s);
		if (has_cdata && c->type == XML_TEXT_NODE) {
			for (i = 0; i < n && is_xml_space(s[i]); i++)
				;
			if (i == n)
				continue;
		}
		st = wms__buf_append(&text, s, n);
	}
	if (st != WMS_OK)
		goto done;
	if (b64) {
		st = b64_decode(text.data ? text.data : "", text.len, out, out_len, why, why_size);
	} else {
		*out = text.data ? text.data : wms__strdup("");
		*out_len = text.len;
		text.data = NULL;
		if (!*out)
			st = WMS_ERR_NOMEM;
	}
done:
	if (enc)
		xmlFree(enc);
	wms__buf_free(&text);
	return st;
}

/* Whitespace and comments are fine between the fixture's elements; stray
 * text is a typo worth reporting. */
static const xmlNode *stray_text(const xmlNode *el)
{
	const xmlNode *c;
	for (c = el->children; c; c = c->next) {
		if (c->type == XML_TEXT_NODE || c->type == XML_CDATA_SECTION_NODE) {
			const char *s = xs(c->content);
			while (*s && is_xml_space(*s))
				s++;
			if (*s)
				return c;
		}
	}
	return NULL;
}

static char *trimmed_content(const xmlNode *n)
{
	xmlChar *v = xmlNodeGetContent(n);
	const char *s = xs(v);
	size_t len;
	char *r;
	while (*s && is_xml_space(*s))
		s++;
	len = strlen(s);
	while (len && is_xml_space(s[len - 1]))
		len--;
	r = wms__strndup(s, len);
	if (v)
		xmlFree(v);
	return r;
}

static wms_status load_request(replay *r, fixture *fx, const xmlNode *req, wms_error *err)
{
	const char *allowed[] = { "operation", "soap-action", NULL };
	const char *bad;
	const xmlNode *c, *body = NULL;
	xmlChar *op = NULL, *action = NULL;
	char why[200], *bytes = NULL;
	size_t len = 0, nmask = 0;
	xmlDocPtr doc = NULL;
	wms__buf canon = { NULL, 0, 0 };
	mask_set m;
	wms_status st = WMS_OK;

	if ((bad = unknown_attr(req, allowed)) != NULL) {
		st = bad_fixture(err, fx->path, xmlGetLineNo(req), "unknown attribute '%s' on <request>", bad);
		goto done;
	}
	op = xmlGetProp(req, (const xmlChar *)"operation");
	action = xmlGetProp(req, (const xmlChar *)"soap-action");
	if (!action && !op) {
		st = bad_fixture(err, fx->path, xmlGetLineNo(req),
				 "<request> needs a soap-action (or an operation) attribute");
		goto done;
	}
	if (op && !*xs(op)) {
		st = bad_fixture(err, fx->path, xmlGetLineNo(req), "<request operation=\"\"> is empty");
		goto done;
	}
	if (op && !(fx->operation = wms__strdup(xs(op)))) {
		st = WMS_ERR_NOMEM;
		goto done;
	}
	if (action) {
		fx->soap_action = wms__strdup(xs(action));
	} else {
		/* The contract's action for this operation. */
		size_t n = strlen("urn:libwms:warehouse:1/") + strlen(xs(op)) + 1;
		fx->soap_action = wms__malloc(n);
		if (fx->soap_action)
			snprintf(fx->soap_action, n, "urn:libwms:warehouse:1/%s", xs(op));
	}
	if (!fx->soap_action) {
		st = WMS_ERR_NOMEM;
		goto done;
	}
	if ((c = stray_text(req)) != NULL) {
		st = bad_fixture(err, fx->path, xmlGetLineNo(c), "unexpected text inside <request>");
		goto done;
	}
	for (c = req->children; c; c = c->next)
		if (c->type == XML_ELEMENT_NODE)
			nmask++;
	fx->masks = wms__calloc(nmask ? nmask : 1, sizeof(*fx->masks));
	if (!fx->masks) {
		st = WMS_ERR_NOMEM;
		goto done;
	}
	for (c = req->children; c; c = c->next) {
		const char *name = xs(c->name);
		if (c->type != XML_ELEMENT_NODE)
			continue;
		if (!in_fixture_ns(c)) {
			st = bad_fixture(err, fx->path, xmlGetLineNo(c),
					 "<%.40s> inside <request> is not in the fixture namespace", name);
			goto done;
		}
		if (strcmp(name, "mask") == 0) {
			char *v = trimmed_content(c);
			if (!v) {
				st = WMS_ERR_NOMEM;
				goto done;
			}
			fx->masks[fx->mask_count++] = v;
			if (!*v || strchr(v, ':') || strpbrk(v, " \t\r\n<>")) {
				st = bad_fixture(err, fx->path, xmlGetLineNo(c),
						 "<mask> must hold one element local name (no prefix)");
				goto done;
			}
		} else if (strcmp(name, "header") == 0) {
			const char *hallowed[] = { "name", NULL };
			xmlChar *hn;
			if ((bad = unknown_attr(c, hallowed)) != NULL) {
				st = bad_fixture(err, fx->path, xmlGetLineNo(c),
						 "unknown attribute '%s' on <header>", bad);
				goto done;
			}
			hn = xmlGetProp(c, (const xmlChar *)"name");
			if (!hn || !*xs(hn)) {
				if (hn)
					xmlFree(hn);
				st = bad_fixture(err, fx->path, xmlGetLineNo(c), "<header> needs a name attribute");
				goto done;
			}
			xmlFree(hn);
		} else if (strcmp(name, "body") == 0) {
			if (body) {
				st = bad_fixture(err, fx->path, xmlGetLineNo(c), "<request> has two <body> elements");
				goto done;
			}
			body = c;
		} else {
			st = bad_fixture(err, fx->path, xmlGetLineNo(c), "unknown element <%.40s> in <request>",
					 name);
			goto done;
		}
	}
	if (!body) {
		st = bad_fixture(err, fx->path, xmlGetLineNo(req), "<request> has no <body>");
		goto done;
	}
	st = body_value(body, &bytes, &len, why, sizeof(why));
	if (st == WMS_ERR_FIXTURE)
		st = bad_fixture(err, fx->path, xmlGetLineNo(body), "request %s", why);
	if (st != WMS_OK)
		goto done;
	doc = safe_parse(bytes, len, fx->path, why, sizeof(why));
	if (!doc) {
		st = bad_fixture(err, fx->path, xmlGetLineNo(body), "request <body>: %s", why);
		goto done;
	}
	m = fixture_masks(r, fx);
	st = render_doc(&canon, doc, &m);
	if (st != WMS_OK)
		goto done;
	fx->canon = canon.data;
	fx->canon_len = canon.len;
	canon.data = NULL;
done:
	if (op)
		xmlFree(op);
	if (action)
		xmlFree(action);
	if (doc)
		xmlFreeDoc(doc);
	wms__free(bytes);
	wms__buf_free(&canon);
	return st;
}

static wms_status load_reply(fixture *fx, const xmlNode *rep, wms_error *err)
{
	const char *allowed[] = { "status", "delay-ms", NULL };
	const char *bad;
	const xmlNode *c, *body = NULL;
	xmlChar *status = NULL, *delay = NULL;
	unsigned long v;
	char why[200];
	wms_status st = WMS_OK;

	if ((bad = unknown_attr(rep, allowed)) != NULL) {
		st = bad_fixture(err, fx->path, xmlGetLineNo(rep), "unknown attribute '%s' on <reply>", bad);
		goto done;
	}
	status = xmlGetProp(rep, (const xmlChar *)"status");
	if (!status || parse_uint(xs(status), 599, &v) != 0 || v < 100) {
		st = bad_fixture(err, fx->path, xmlGetLineNo(rep),
				 "<reply status=\"%.20s\">: expected an HTTP status 100-599",
				 status ? xs(status) : "(missing)");
		goto done;
	}
	fx->status = (long)v;
	delay = xmlGetProp(rep, (const xmlChar *)"delay-ms");
	if (delay) {
		if (parse_uint(xs(delay), WMS_MAX_TIMEOUT_MS, &v) != 0) {
			st = bad_fixture(err, fx->path, xmlGetLineNo(rep),
					 "<reply delay-ms=\"%.20s\">: expected 0-%u", xs(delay),
					 WMS_MAX_TIMEOUT_MS);
			goto done;
		}
		fx->delay_ms = (uint32_t)v;
	}
	if ((c = stray_text(rep)) != NULL) {
		st = bad_fixture(err, fx->path, xmlGetLineNo(c), "unexpected text inside <reply>");
		goto done;
	}
	for (c = rep->children; c; c = c->next) {
		const char *name = xs(c->name);
		if (c->type != XML_ELEMENT_NODE)
			continue;
		if (!in_fixture_ns(c)) {
			st = bad_fixture(err, fx->path, xmlGetLineNo(c),
					 "<%.40s> inside <reply> is not in the fixture namespace", name);
			goto done;
		}
		if (strcmp(name, "header") == 0) {
			const char *hallowed[] = { "name", NULL };
			xmlChar *hn;
			if ((bad = unknown_attr(c, hallowed)) != NULL) {
				st = bad_fixture(err, fx->path, xmlGetLineNo(c),
						 "unknown attribute '%s' on <header>", bad);
				goto done;
			}
			hn = xmlGetProp(c, (const xmlChar *)"name");
			if (!hn || !*xs(hn)) {
				if (hn)
					xmlFree(hn);
				st = bad_fixture(err, fx->path, xmlGetLineNo(c), "<header> needs a name attribute");
				goto done;
			}
			if (strcasecmp(xs(hn), "Content-Type") == 0) {
				xmlFree(hn);
				if (fx->content_type) {
					st = bad_fixture(err, fx->path, xmlGetLineNo(c),
							 "<reply> has two Content-Type headers");
					goto done;
				}
				fx->content_type = trimmed_content(c);
				if (!fx->content_type) {
					st = WMS_ERR_NOMEM;
					goto done;
				}
			} else {
				xmlFree(hn); /* other headers document the exchange only */
			}
		} else if (strcmp(name, "body") == 0) {
			if (body) {
				st = bad_fixture(err, fx->path, xmlGetLineNo(c), "<reply> has two <body> elements");
				goto done;
			}
			body = c;
		} else {
			st = bad_fixture(err, fx->path, xmlGetLineNo(c), "unknown element <%.40s> in <reply>",
					 name);
			goto done;
		}
	}
	if (body) {
		st = body_value(body, &fx->body, &fx->body_len, why, sizeof(why));
		if (st == WMS_ERR_FIXTURE)
			st = bad_fixture(err, fx->path, xmlGetLineNo(body), "reply %s", why);
	}
done:
	if (status)
		xmlFree(status);
	if (delay)
		xmlFree(delay);
	return st;
}

static wms_status load_fault(fixture *fx, const xmlNode *f, wms_error *err)
{
	const char *allowed[] = { "kind", "after-ms", NULL };
	const char *bad;
	const xmlNode *c;
	xmlChar *kind = NULL, *after = NULL;
	unsigned long v;
	wms_status st = WMS_OK;

	if ((bad = unknown_attr(f, allowed)) != NULL) {
		st = bad_fixture(err, fx->path, xmlGetLineNo(f), "unknown attribute '%s' on <fault>", bad);
		goto done;
	}
	kind = xmlGetProp(f, (const xmlChar *)"kind");
	if (kind && strcmp(xs(kind), "timeout") == 0)
		fx->fault = FAULT_TIMEOUT;
	else if (kind && strcmp(xs(kind), "refused") == 0)
		fx->fault = FAULT_REFUSED;
	else if (kind && strcmp(xs(kind), "reset") == 0)
		fx->fault = FAULT_RESET;
	else if (kind && strcmp(xs(kind), "reset-before-send") == 0)
		fx->fault = FAULT_RESET_BEFORE_SEND;
	else if (kind && strcmp(xs(kind), "dns") == 0)
		fx->fault = FAULT_DNS;
	else if (kind && strcmp(xs(kind), "connect-timeout") == 0)
		fx->fault = FAULT_CONNECT_TIMEOUT;
	else {
		st = bad_fixture(err, fx->path, xmlGetLineNo(f),
				 "<fault kind=\"%.30s\">: expected timeout, connect-timeout, refused, "
				 "reset, reset-before-send or dns",
				 kind ? xs(kind) : "(missing)");
		goto done;
	}
	after = xmlGetProp(f, (const xmlChar *)"after-ms");
	if (after) {
		if (parse_uint(xs(after), WMS_MAX_TIMEOUT_MS, &v) != 0) {
			st = bad_fixture(err, fx->path, xmlGetLineNo(f),
					 "<fault after-ms=\"%.20s\">: expected 0-%u", xs(after),
					 WMS_MAX_TIMEOUT_MS);
			goto done;
		}
		fx->after_ms = (uint32_t)v;
		fx->has_after = 1;
	}
	for (c = f->children; c; c = c->next) {
		if (c->type == XML_ELEMENT_NODE || c->type == XML_CDATA_SECTION_NODE ||
		    (c->type == XML_TEXT_NODE && stray_text(f))) {
			st = bad_fixture(err, fx->path, xmlGetLineNo(c), "<fault> must be empty");
			goto done;
		}
	}
done:
	if (kind)
		xmlFree(kind);
	if (after)
		xmlFree(after);
	return st;
}

static wms_status read_file(const char *path, wms__buf *out, char *why, size_t why_size)
{
	FILE *f = fopen(path, "rb");
	char chunk[8192];
	size_t n;
	wms_status st = WMS_OK;

	if (!f) {
		snprintf(why, why_size, "cannot open: %s", strerror(errno));
		return WMS_ERR_FIXTURE;
	}
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
		if (out->len + n > FIXTURE_FILE_MAX) {
			snprintf(why, why_size, "larger than %u bytes", FIXTURE_FILE_MAX);
			st = WMS_ERR_FIXTURE;
			goto done;
		}
		st = wms__buf_append(out, chunk, n);
		if (st != WMS_OK)
			goto done;
	}
	if (ferror(f)) {
		snprintf(why, why_size, "cannot read: %s", strerror(errno));
		st = WMS_ERR_FIXTURE;
	}
done:
	fclose(f);
	return st;
}

/* Load fixture `fx` from the `len` bytes at `data`; `path` names it in messages. */
static wms_status load_fixture_bytes(replay *r, fixture *fx, const char *path, const char *data,
				     size_t len, wms_error *err)
{
	const char *allowed[] = { "name", NULL };
	const char *bad, *base;
	xmlDocPtr doc = NULL;
	xmlNodePtr root, c, req = NULL, answer = NULL;
	xmlChar *name = NULL;
	char why[200];
	int descriptions = 0;
	wms_status st = WMS_OK;

	fx->path = wms__strdup(path);
	if (!fx->path)
		return wms__fail(err, WMS_ERR_NOMEM, WMS_DELIVERY_NOT_SENT, "out of memory");
	if (len > FIXTURE_FILE_MAX) {
		st = bad_fixture(err, path, 0, "larger than %u bytes", FIXTURE_FILE_MAX);
		goto done;
	}
	doc = safe_parse(data, len, path, why, sizeof(why));
	if (!doc) {
		st = bad_fixture(err, path, 0, "%s", why);
		goto done;
	}
	root = xmlDocGetRootElement(doc);
	if (strcmp(xs(root->name), "fixture") != 0 || !in_fixture_ns(root)) {
		st = bad_fixture(err, path, xmlGetLineNo(root),
				 "root element must be <fixture xmlns=\"%s\">", FIXTURE_NS);
		goto done;
	}
	if ((bad = unknown_attr(root, allowed)) != NULL) {
		st = bad_fixture(err, path, xmlGetLineNo(root), "unknown attribute '%s' on <fixture>", bad);
		goto done;
	}
	name = xmlGetProp(root, (const xmlChar *)"name");
	if (name && *xs(name)) {
		fx->name = wms__strdup(xs(name));
	} else {
		size_t n;
		base = strrchr(path, '/');
		base = base ? base + 1 : path;
		n = strlen(base);
		if (n > 4 && strcmp(base + n - 4, ".xml") == 0)
			n -= 4;
		fx->name = wms__strndup(base, n);
	}
	if (!fx->name) {
		st = WMS_ERR_NOMEM;
		goto done;
	}
	if ((c = (xmlNodePtr)stray_text(root)) != NULL) {
		st = bad_fixture(err, path, xmlGetLineNo(c), "unexpected text inside <fixture>");
		goto done;
	}
	for (c = root->children; c; c = c->next) {
		const char *cn = xs(c->name);
		if (c->type != XML_ELEMENT_NODE)
			continue;
		if (!in_fixture_ns(c)) {
			st = bad_fixture(err, path, xmlGetLineNo(c),
					 "<%.40s> is not in the fixture namespace %s", cn, FIXTURE_NS);
			goto done;
		}
		if (strcmp(cn, "description") == 0) {
			if (descriptions++) {
				st = bad_fixture(err, path, xmlGetLineNo(c), "two <description> elements");
				goto done;
			}
		} else if (strcmp(cn, "request") == 0) {
			if (req) {
				st = bad_fixture(err, path, xmlGetLineNo(c), "two <request> elements");
				goto done;
			}
			req = c;
		} else if (strcmp(cn, "reply") == 0 || strcmp(cn, "fault") == 0) {
			if (answer) {
				st = bad_fixture(err, path, xmlGetLineNo(c),
						 "<%s> after a <%s>: a fixture has one <reply> or one <fault>",
						 cn, xs(answer->name));
				goto done;
			}
			answer = c;
		} else {
			st = bad_fixture(err, path, xmlGetLineNo(c), "unknown element <%.40s>", cn);
			goto done;
		}
	}
	if (!req) {
		st = bad_fixture(err, path, xmlGetLineNo(root), "missing <request>");
		goto done;
	}
	if (!answer) {
		st = bad_fixture(err, path, xmlGetLineNo(root), "missing <reply> or <fault>");
		goto done;
	}
	st = load_request(r, fx, req, err);
	if (st != WMS_OK)
		goto done;
	if (strcmp(xs(answer->name), "reply") == 0)
		st = load_reply(fx, answer, err);
	else
		st = load_fault(fx, answer, err);
done:
	if (st == WMS_ERR_NOMEM)
		wms__fail(err, WMS_ERR_NOMEM, WMS_DELIVERY_NOT_SENT, "out of memory loading fixture");
	if (name)
		xmlFree(name);
	if (doc)
		xmlFreeDoc(doc);
	return st;
}

static wms_status load_fixture(replay *r, fixture *fx, const char *path, wms_error *err)
{
	wms__buf file = { NULL, 0, 0 };
	char why[200];
	wms_status st = read_file(path, &file, why, sizeof(why));

	if (st == WMS_OK)
		st = load_fixture_bytes(r, fx, path, file.data ? file.data : "", file.len, err);
	else if (st == WMS_ERR_FIXTURE)
		st = bad_fixture(err, path, 0, "%s", why);
	else
		st = wms__fail(err, WMS_ERR_NOMEM, WMS_DELIVERY_NOT_SENT, "out of memory loading fixture");
	wms__buf_free(&file);
	return st;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The directory's *.xml files (no dot files), sorted, as full paths. */
static wms_status list_dir(const char *dir, char ***out, size_t *count, wms_error *err)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char **v = NULL;
	size_t n = 0, cap = 0, i;
	wms_status st = WMS_OK;

	*out = NULL;
	*count = 0;
	if (!d)
		return wms__fail(err, WMS_ERR_FIXTURE, WMS_DELIVERY_NOT_SENT,
				 "fixture directory %s: %s", dir, strerror(errno));
	while ((e = readdir(d)) != NULL) {
		size_t len = strlen(e->d_name), plen;
		char *p;
		if (e->d_name[0] == '.' || len < 5 || strcmp(e->d_name + len - 4, ".xml") != 0)
			continue;
		if (n == cap) {
			char **nv;
			cap = cap ? cap * 2 : 16;
			nv = wms__realloc(v, cap * sizeof(*v));
			if (!nv) {
				st = WMS_ERR_NOMEM;
				goto done;
			}
			v = nv;
		}
		plen = strlen(dir) + 1 + len + 1;
		p = wms__malloc(plen);
		if (!p) {
			st = WMS_ERR_NOMEM;
			goto done;
		}
		snprintf(p, plen, "%s/%s", dir, e->d_name);
		v[n++] = p;
	}
	if (n)
		qsort(v, n, sizeof(*v), cmp_str);
	*out = v;
	*count = n;
	v = NULL;
done:
	closedir(d);
	if (v) {
		for (i = 0; i < n; i++)
			wms__free(v[i]);
		wms__free(v);
	}
	if (st == WMS_ERR_NOMEM)
		wms__fail(err, st, WMS_DELIVERY_NOT_SENT, "out of memory");
	return st;
}

/* ---- the replay transport ----------------------------------------------- */

static void sleep_ms(uint32_t ms)
{
	struct timespec ts;
	ts.tv_sec = (time_t)(ms / 1000u);
	ts.tv_nsec = (long)(ms % 1000u) * 1000000L;
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static void default_mismatch(const char *diff_text, void *ctx)
{
	(void)ctx;
	fputs(diff_text, stderr);
	fflush(stderr);
}

static const char *op_name(const wms_http_request *req)
{
	return req->operation && *req->operation ? req->operation : "(unnamed)";
}

/* Answer with fixture `fx`: its reply or its fault, the delay honoured. */
static wms_status answer(const replay *r, const fixture *fx, const wms_http_request *req,
			 wms_http_response *resp, wms_error *err)
{
	uint32_t delay, deadline = req->timeout_ms;
	int late;
	char pbuf[96];
	const char *p = short_path(fx->path, pbuf, sizeof(pbuf));
	wms_status st;

	if (fx->fault == FAULT_NONE)
		delay = fx->delay_ms;
	else if (fx->has_after)
		delay = fx->after_ms;
	else
		delay = fx->fault == FAULT_TIMEOUT || fx->fault == FAULT_CONNECT_TIMEOUT ? deadline
											    : 0;
	late = deadline && delay >= deadline;
	if (r->real_time && (late ? deadline : delay))
		sleep_ms(late ? deadline : delay);

	switch (fx->fault) {
	case FAULT_TIMEOUT:
		return wms__fail(err, WMS_ERR_TIMEOUT, WMS_DELIVERY_UNKNOWN,
				 "replayed timeout (fixture %s)", p);
	case FAULT_CONNECT_TIMEOUT:
		return wms__fail(err, WMS_ERR_TIMEOUT, WMS_DELIVERY_NOT_SENT,
				 "replayed connect timeout, nothing sent (fixture %s)", p);
	case FAULT_REFUSED:
		if (late)
			break;
		return wms__fail(err, WMS_ERR_CONNECT, WMS_DELIVERY_NOT_SENT,
				 "replayed connection refused (fixture %s)", p);
	case FAULT_DNS:
		if (late)
			break;
		return wms__fail(err, WMS_ERR_CONNECT, WMS_DELIVERY_NOT_SENT,
				 "replayed DNS failure: could not resolve host (fixture %s)", p);
	case FAULT_RESET:
		if (late)
			break;
		return wms__fail(err, WMS_ERR_TRANSPORT, WMS_DELIVERY_UNKNOWN,
				 "replayed connection reset by peer (fixture %s)", p);
	case FAULT_RESET_BEFORE_SEND:
		if (late)
			break;
		return wms__fail(err, WMS_ERR_TRANSPORT, WMS_DELIVERY_NOT_SENT,
				 "replayed connection reset before the request left, nothing sent "
				 "(fixture %s)",
				 p);
	case FAULT_NONE:
		if (late)
			return wms__fail(err, WMS_ERR_TIMEOUT, WMS_DELIVERY_UNKNOWN,
					 "reply delayed %u ms by fixture %s, past the %u ms timeout",
					 (unsigned)delay, p, (unsigned)deadline);
		resp->status = fx->status;
		if (fx->content_type) {
			st = wms_http_response_set_content_type(resp, fx->content_type,
								strlen(fx->content_type));
			if (st != WMS_OK)
				return wms__fail(err, st, WMS_DELIVERY_ANSWERED, "out of memory");
		}
		st = wms_http_response_append(resp, fx->body ? fx->body : "", fx->body_len);
		if (st == WMS_ERR_TOO_LARGE) {
			if (err)
				err->http_status = fx->status;
			/* as the curl transport: a reply we did not read tells nothing */
			return wms__fail(err, st, WMS_DELIVERY_UNKNOWN,
					 "reply of %zu bytes (fixture %s) exceeds the %zu-byte limit",
					 fx->body_len, p, resp->max_body);
		}
		if (st != WMS_OK)
			return wms__fail(err, st, WMS_DELIVERY_ANSWERED, "out of memory");
		return WMS_OK;
	}
	/* A fault recorded after the deadline: the deadline wins, and a
	 * connect-phase fault's request (refused, dns, reset-before-send)
	 * still never left. */
	return wms__fail(err, WMS_ERR_TIMEOUT,
			 fx->fault == FAULT_RESET ? WMS_DELIVERY_UNKNOWN : WMS_DELIVERY_NOT_SENT,
			 "replayed fault after %u ms, past the %u ms timeout (fixture %s)",
			 (unsigned)delay, (unsigned)deadline, p);
}

/* Whether `fx` matches the parsed request (rendering into `scratch`). */
static wms_status matches(const replay *r, const fixture *fx, const char *action, xmlDocPtr doc,
			  wms__buf *scratch, int *yes)
{
	mask_set m = fixture_masks(r, fx);
	wms_status st;
	*yes = 0;
	if (strcmp(fx->soap_action, action) != 0)
		return WMS_OK;
	st = render_doc(scratch, doc, &m);
	if (st == WMS_OK)
		*yes = scratch->len == fx->canon_len && memcmp(scratch->data, fx->canon, fx->canon_len) == 0;
	return st;
}

/* Diff of fixture `fx` against the request (df owns the request's rendering). */
static wms_status diff_against(const replay *r, const fixture *fx, xmlDocPtr doc, diff *df)
{
	wms__buf canon = { NULL, 0, 0 };
	mask_set m = fixture_masks(r, fx);
	wms_status st = render_doc(&canon, doc, &m);
	if (st == WMS_OK)
		st = diff_compute(df, fx->canon, fx->canon_len, canon.data ? canon.data : "", canon.len);
	if (st == WMS_OK) {
		df->own = canon.data; /* df->b points into it */
		canon.data = NULL;
	}
	wms__buf_free(&canon);
	return st;
}

/* Build the mismatch report: the diff text for on_mismatch, the summary on err. */
static wms_status mismatch(const replay *r, const wms_http_request *req, const char *action,
			   xmlDocPtr doc, size_t expected, wms_error *err)
{
	wms__buf text = { NULL, 0, 0 };
	diff best, df;
	size_t i, nearest = (size_t)-1, same_action = 0;
	char first[160], pbuf[96];
	const char *op = op_name(req);
	wms_status st = WMS_OK;

	memset(&best, 0, sizeof(best));
	memset(&df, 0, sizeof(df));
	if (r->order == WMS_REPLAY_SEQUENCE) {
		if (expected >= r->count) {
			wms__buf canon = { NULL, 0, 0 };
			mask_set m = { r->masks, r->mask_count, NULL, 0 };
			st = wms__buf_printf(&text,
					     "%s request after all %zu fixtures of the sequence were used "
					     "(SOAPAction \"%s\")\n",
					     op, r->count, action);
			if (st == WMS_OK)
				st = render_doc(&canon, doc, &m);
			if (st == WMS_OK)
				st = wms__buf_append(&text, canon.data, canon.len);
			wms__buf_free(&canon);
			if (st == WMS_OK)
				r->on_mismatch(text.data, r->mismatch_ctx);
			wms__buf_free(&text);
			if (st != WMS_OK)
				return wms__fail(err, st, WMS_DELIVERY_NOT_SENT, "out of memory");
			return wms__fail(err, WMS_ERR_FIXTURE, WMS_DELIVERY_NOT_SENT,
					 "%s request after all %zu fixtures of the sequence were used", op,
					 r->count);
		}
		nearest = expected;
		st = diff_against(r, &r->fx[nearest], doc, &best);
		same_action = strcmp(r->fx[nearest].soap_action, action) == 0;
	} else {
		for (i = 0; i < r->count && st == WMS_OK; i++) {
			if (strcmp(r->fx[i].soap_action, action) != 0)
				continue;
			same_action++;
			st = diff_against(r, &r->fx[i], doc, &df);
			if (st != WMS_OK)
				break;
			if (nearest == (size_t)-1 || df.cost < best.cost) {
				diff_free(&best);
				best = df;
				nearest = i;
				memset(&df, 0, sizeof(df));
			} else {
				diff_free(&df);
			}
		}
	}
	if (st != WMS_OK)
		goto done;

	if (nearest == (size_t)-1) {
		st = wms__buf_printf(&text, "no fixture has SOAPAction \"%s\" (%s request); loaded:\n",
				     action, op);
		for (i = 0; i < r->count && st == WMS_OK && text.len < DIFF_TEXT_MAX; i++) {
			st = wms__buf_printf(&text, "  %s: %s\n", r->fx[i].path, r->fx[i].soap_action);
		}
		if (st != WMS_OK)
			goto done;
		r->on_mismatch(text.data, r->mismatch_ctx);
		st = wms__fail(err, WMS_ERR_FIXTURE, WMS_DELIVERY_NOT_SENT,
			       "%s request matches no fixture: no fixture has SOAPAction \"%s\"", op,
			       action);
		goto done;
	}

	{
		const fixture *fx = &r->fx[nearest];
		st = wms__buf_printf(&text, "%s request matches no fixture; %s fixture %s (%s):\n", op,
				     r->order == WMS_REPLAY_SEQUENCE ? "the next" : "nearest", fx->path,
				     fx->name);
		if (st == WMS_OK && !same_action)
			st = wms__buf_printf(&text, "-SOAPAction: %s\n+SOAPAction: %s\n", fx->soap_action,
					     action);
		if (st == WMS_OK)
			st = wms__buf_printf(&text, "--- fixture %s\n+++ request\n", fx->name);
		if (st == WMS_OK)
			st = diff_render(&text, &best);
		if (st != WMS_OK)
			goto done;
		r->on_mismatch(text.data, r->mismatch_ctx);
		if (best.cost)
			diff_first(&best, first, sizeof(first));
		else
			snprintf(first, sizeof(first), "body equal");
		if (!same_action)
			st = wms__fail(err, WMS_ERR_FIXTURE, WMS_DELIVERY_NOT_SENT,
				       "%s request: the next fixture %s expects SOAPAction \"%s\", not \"%s\"",
				       op, short_path(fx->path, pbuf, sizeof(pbuf)), fx->soap_action, action);
		else
			st = wms__fail(err, WMS_ERR_FIXTURE, WMS_DELIVERY_NOT_SENT,
				       "%s request matches no fixture; %s %s differs by %zu line(s), %s",
				       op, r->order == WMS_REPLAY_SEQUENCE ? "next" : "nearest",
				       short_path(fx->path, pbuf, sizeof(pbuf)), best.cost, first);
	}
done:
	if (st == WMS_ERR_NOMEM)
		wms__fail(err, st, WMS_DELIVERY_NOT_SENT, "out of memory building the fixture diff");
	diff_free(&best);
	diff_free(&df);
	wms__buf_free(&text);
	return st;
}

static wms_status replay_send(wms_transport *self, const wms_http_request *req,
			      wms_http_response *resp, wms_error *err)
{
	replay *r = (replay *)self;
	const char *action;
	xmlDocPtr doc = NULL;
	wms__buf scratch = { NULL, 0, 0 };
	size_t i, chosen = (size_t)-1, expected = 0;
	char why[200];
	wms_status st = WMS_OK;
	int yes = 0;

	if (!self || !req || !resp)
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "replay transport: NULL request or response");
	action = req->soap_action ? req->soap_action : "";
	doc = safe_parse(req->body, req->body_len, "request", why, sizeof(why));
	if (!doc) {
		st = wms__fail(err, WMS_ERR_FIXTURE, WMS_DELIVERY_NOT_SENT,
			       "%s request body cannot be matched: %s", op_name(req), why);
		goto done;
	}
	if (r->order == WMS_REPLAY_SEQUENCE) {
		pthread_mutex_lock(&r->lock);
		expected = r->cursor;
		if (expected < r->count)
			st = matches(r, &r->fx[expected], action, doc, &scratch, &yes);
		if (st == WMS_OK && yes) {
			chosen = expected;
			r->cursor++;
			r->fx[chosen].used++;
			r->hits++;
		}
		pthread_mutex_unlock(&r->lock);
	} else {
		for (i = 0; i < r->count && st == WMS_OK; i++) {
			st = matches(r, &r->fx[i], action, doc, &scratch, &yes);
			if (st == WMS_OK && yes) {
				chosen = i;
				break;
			}
		}
		if (chosen != (size_t)-1) {
			pthread_mutex_lock(&r->lock);
			r->fx[chosen].used++;
			r->hits++;
			pthread_mutex_unlock(&r->lock);
		}
	}
	if (st != WMS_OK) {
		st = wms__fail(err, st, WMS_DELIVERY_NOT_SENT, "out of memory matching fixtures");
		goto done;
	}
	if (chosen == (size_t)-1) {
		st = mismatch(r, req, action, doc, expected, err);
		if (st == WMS_OK) /* cannot happen: a mismatch always reports */
			st = wms__fail(err, WMS_ERR_FIXTURE, WMS_DELIVERY_NOT_SENT, "no fixture matches");
		goto done;
	}
	xmlFreeDoc(doc);
	doc = NULL;
	wms__buf_free(&scratch);
	st = answer(r, &r->fx[chosen], req, resp, err);
done:
	if (doc)
		xmlFreeDoc(doc);
	wms__buf_free(&scratch);
	return st;
}

static void replay_free(wms_transport *self)
{
	replay *r = (replay *)self;
	size_t i;
	if (!r)
		return;
	for (i = 0; i < r->count; i++)
		fixture_free(&r->fx[i]);
	wms__free(r->fx);
	for (i = 0; i < r->mask_count; i++)
		wms__free(r->masks[i]);
	wms__free(r->masks);
	pthread_mutex_destroy(&r->lock);
	wms__free(r);
}

wms_status wms_replay_options_init(wms_replay_options *opts, unsigned version)
{
	wms_replay_options def = WMS_REPLAY_OPTIONS_INIT;
	if (!opts || version != WMS_REPLAY_OPTIONS_VERSION)
		return WMS_ERR_INVALID_ARG;
	*opts = def;
	return WMS_OK;
}

static wms_status check_replay_options(const wms_replay_options *o, wms_error *err)
{
	size_t i;
	if (o->version != WMS_REPLAY_OPTIONS_VERSION)
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "replay options version %u is not supported (expected %u)", o->version,
				 WMS_REPLAY_OPTIONS_VERSION);
	if (o->file_count && !o->files)
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "replay options: file_count is %zu but files is NULL", o->file_count);
	for (i = 0; i < o->file_count; i++)
		if (!o->files[i] || !*o->files[i])
			return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
					 "replay options: files[%zu] is NULL or empty", i);
	if (!o->file_count && (!o->directory || !*o->directory))
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "replay options: no fixture files and no directory");
	switch (o->order) {
	case WMS_REPLAY_ANY:
	case WMS_REPLAY_SEQUENCE:
		break;
	default:
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "replay options: unknown order %d", (int)o->order);
	}
	if (o->masked_count && !o->masked_elements)
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "replay options: masked_count is %zu but masked_elements is NULL",
				 o->masked_count);
	for (i = 0; i < o->masked_count; i++)
		if (!o->masked_elements[i] || !*o->masked_elements[i])
			return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
					 "replay options: masked_elements[%zu] is NULL or empty", i);
	return WMS_OK;
}

/* One fixture held in memory, in place of opts' files and directory. */
typedef struct mem_fixture {
	const char *name;
	const char *data;
	size_t len;
} mem_fixture;

/* The transport over opts' fixtures (checked already), or over `mem` alone. */
static wms_status replay_new(wms_transport **out, const wms_replay_options *opts,
			     const mem_fixture *mem, wms_error *err)
{
	replay *r = NULL;
	char **dir_files = NULL;
	size_t ndir = 0, i, total;
	int locked = 0;
	wms_status st;

	xml_init();

	r = wms__calloc(1, sizeof(*r));
	if (!r) {
		st = WMS_ERR_NOMEM;
		goto done;
	}
	if (pthread_mutex_init(&r->lock, NULL) != 0) {
		st = WMS_ERR_NOMEM;
		goto done;
	}
	locked = 1;
	r->parent.version = WMS_TRANSPORT_VERSION;
	r->parent.send = replay_send;
	r->parent.free = replay_free;
	r->order = opts->order;
	r->on_mismatch = opts->on_mismatch ? opts->on_mismatch : default_mismatch;
	r->mismatch_ctx = opts->mismatch_ctx;
	r->real_time = opts->real_time;
	if (opts->masked_count) {
		r->masks = wms__calloc(opts->masked_count, sizeof(*r->masks));
		if (!r->masks) {
			st = WMS_ERR_NOMEM;
			goto done;
		}
		for (i = 0; i < opts->masked_count; i++) {
			r->masks[i] = wms__strdup(opts->masked_elements[i]);
			if (!r->masks[i]) {
				st = WMS_ERR_NOMEM;
				goto done;
			}
			r->mask_count++;
		}
	}
	if (!mem && opts->directory && *opts->directory) {
		st = list_dir(opts->directory, &dir_files, &ndir, err);
		if (st != WMS_OK)
			goto done;
	}
	total = mem ? 1 : opts->file_count + ndir;
	if (!total) {
		st = wms__fail(err, WMS_ERR_FIXTURE, WMS_DELIVERY_NOT_SENT,
			       "fixture directory %s holds no *.xml fixture", opts->directory);
		goto done;
	}
	r->fx = wms__calloc(total, sizeof(*r->fx));
	if (!r->fx) {
		st = WMS_ERR_NOMEM;
		goto done;
	}
	for (i = 0; i < total; i++) {
		const char *path = i < opts->file_count ? opts->files[i] : dir_files[i - opts->file_count];
		r->count++;
		if (mem)
			st = load_fixture_bytes(r, &r->fx[i], mem->name, mem->data, mem->len, err);
		else
			st = load_fixture(r, &r->fx[i], path, err);
		if (st != WMS_OK)
			goto done;
	}
	*out = &r->parent;
	r = NULL;
done:
	if (st == WMS_ERR_NOMEM)
		wms__fail(err, st, WMS_DELIVERY_NOT_SENT, "out of memory creating the replay transport");
	if (dir_files) {
		for (i = 0; i < ndir; i++)
			wms__free(dir_files[i]);
		wms__free(dir_files);
	}
	if (r) {
		if (!locked) {
			wms__free(r);
		} else {
			replay_free(&r->parent);
		}
	}
	return st;
}

wms_status wms_replay_transport_new(wms_transport **out, const wms_replay_options *opts,
				    wms_error *err)
{
	wms_status st;

	if (!out)
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "wms_replay_transport_new: out is NULL");
	*out = NULL;
	if (!opts)
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "wms_replay_transport_new: options are required (the fixtures to load)");
	st = check_replay_options(opts, err);
	if (st != WMS_OK)
		return st;
	return replay_new(out, opts, NULL, err);
}

wms_status wms__replay_transport_from_memory(wms_transport **out, const char *data, size_t len,
					     const char *name, const wms_replay_options *opts,
					     wms_error *err)
{
	wms_replay_options o = WMS_REPLAY_OPTIONS_INIT;
	mem_fixture mem;
	wms_status st;

	if (!out)
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "wms__replay_transport_from_memory: out is NULL");
	*out = NULL;
	if (!data && len)
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "wms__replay_transport_from_memory: NULL data of %zu bytes", len);
	mem.name = name && *name ? name : "<memory>";
	mem.data = data ? data : "";
	mem.len = len;
	if (opts)
		o = *opts;
	o.files = &mem.name;
	o.file_count = 1;
	o.directory = NULL;
	st = check_replay_options(&o, err);
	if (st != WMS_OK)
		return st;
	return replay_new(out, &o, &mem, err);
}

size_t wms_replay_transport_hits(wms_transport *transport)
{
	replay *r = (replay *)transport;
	size_t n;
	if (!transport || transport->send != replay_send)
		return 0;
	pthread_mutex_lock(&r->lock);
	n = r->hits;
	pthread_mutex_unlock(&r->lock);
	return n;
}

size_t wms_replay_transport_unused(wms_transport *transport)
{
	replay *r = (replay *)transport;
	size_t n = 0, i;
	if (!transport || transport->send != replay_send)
		return 0;
	pthread_mutex_lock(&r->lock);
	for (i = 0; i < r->count; i++)
		if (!r->fx[i].used)
			n++;
	pthread_mutex_unlock(&r->lock);
	return n;
}

/* ---- the recording transport ------------------------------------------ */

typedef struct recorder {
	wms_transport parent;
	wms_transport *inner;
	char *directory;
	char *prefix;
	wms_record_name_fn name;
	void *name_ctx;
	char **volatiles;
	size_t volatile_count;
	pthread_mutex_t lock;
	unsigned next;  /* the last index handed out */
	size_t written;
} recorder;

/* Length of the valid UTF-8 character at s (n bytes left), 0 if invalid or
 * not allowed in XML 1.0 (C0 controls except tab/LF, CR which XML folds,
 * surrogates, U+FFFE/U+FFFF). */
static size_t xml_char_len(const unsigned char *s, size_t n)
{
	uint32_t cp;
	size_t len, i;
	if (s[0] < 0x80) {
		if (s[0] < 0x20 && s[0] != '\t' && s[0] != '\n')
			return 0;
		return 1;
	}
	if ((s[0] & 0xe0) == 0xc0) {
		len = 2;
		cp = s[0] & 0x1fu;
	} else if ((s[0] & 0xf0) == 0xe0) {
		len = 3;
		cp = s[0] & 0x0fu;
	} else if ((s[0] & 0xf8) == 0xf0) {
		len = 4;
		cp = s[0] & 0x07u;
	} else {
		return 0;
	}
	if (len > n)
		return 0;
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3fu);
	}
	if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
	    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff) || cp == 0xfffe || cp == 0xffff)
		return 0;
	return len;
}

/* Whether `data` survives a CDATA section byte for byte. */
static int cdata_safe(const char *data, size_t len)
{
	size_t i = 0, n;
	while (i < len) {
		n = xml_char_len((const unsigned char *)data + i, len - i);
		if (!n)
			return 0;
		if (n == 1 && data[i] == ']' && i + 2 < len && data[i + 1] == ']' && data[i + 2] == '>')
			return 0;
		i += n;
	}
	return 1;
}

/* Escaped text for an attribute or element; bytes XML cannot carry become '?'. */
static wms_status put_escaped(wms__buf *out, const char *s, size_t len)
{
	size_t i = 0, n;
	wms_status st = WMS_OK;
	while (i < len && st == WMS_OK) {
		char c = s[i];
		n = xml_char_len((const unsigned char *)s + i, len - i);
		if (!n) {
			st = put(out, "?");
			i++;
			continue;
		}
		if (c == '&')
			st = put(out, "&amp;");
		else if (c == '<')
			st = put(out, "&lt;");
		else if (c == '>')
			st = put(out, "&gt;");
		else if (c == '"')
			st = put(out, "&quot;");
		else if (c == '\n')
			st = put(out, "&#10;");
		else if (c == '\t')
			st = put(out, "&#9;");
		else
			st = wms__buf_append(out, s + i, n);
		i += n;
	}
	return st;
}

static wms_status put_b64(wms__buf *out, const unsigned char *d, size_t len, const char *indent)
{
	static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t i, col = 0;
	wms_status st = WMS_OK;
	for (i = 0; i < len && st == WMS_OK; i += 3) {
		char q[4];
		unsigned v = (unsigned)d[i] << 16;
		if (i + 1 < len)
			v |= (unsigned)d[i + 1] << 8;
		if (i + 2 < len)
			v |= d[i + 2];
		q[0] = tab[(v >> 18) & 63];
		q[1] = tab[(v >> 12) & 63];
		q[2] = i + 1 < len ? tab[(v >> 6) & 63] : '=';
		q[3] = i + 2 < len ? tab[v & 63] : '=';
		if (col == 0) {
			st = put(out, "\n");
			if (st == WMS_OK)
				st = put(out, indent);
		}
		if (st == WMS_OK)
			st = wms__buf_append(out, q, 4);
		col = (col + 4) % 76;
	}
	return st;
}

/* <body> for `data`: a CDATA section when it survives one, else base64. */
static wms_status put_body(wms__buf *out, const char *data, size_t len, const char *indent)
{
	wms_status st;
	if (!len)
		return WMS_OK;
	st = put(out, indent);
	if (st != WMS_OK)
		return st;
	if (cdata_safe(data, len)) {
		st = put(out, "<body><![CDATA[");
		if (st == WMS_OK)
			st = wms__buf_append(out, data, len);
		return st == WMS_OK ? put(out, "]]></body>\n") : st;
	}
	st = put(out, "<body encoding=\"base64\">");
	if (st == WMS_OK) {
		char deeper[32];
		snprintf(deeper, sizeof(deeper), "%s  ", indent);
		st = put_b64(out, (const unsigned char *)data, len, deeper);
	}
	if (st == WMS_OK)
		st = put(out, "\n");
	if (st == WMS_OK)
		st = put(out, indent);
	return st == WMS_OK ? put(out, "</body>\n") : st;
}

static int is_secret_header(const char *name)
{
	return strcasecmp(name, "Authorization") == 0 || strcasecmp(name, "Proxy-Authorization") == 0;
}

static wms_status put_header(wms__buf *out, const char *indent, const char *name, const char *value)
{
	wms_status st = put(out, indent);
	if (st == WMS_OK)
		st = put(out, "<header name=\"");
	if (st == WMS_OK)
		st = put_escaped(out, name, strlen(name));
	if (st == WMS_OK)
		st = put(out, "\">");
	if (st == WMS_OK) {
		if (is_secret_header(name))
			st = put(out, REDACTED);
		else
			st = put_escaped(out, value, strlen(value));
	}
	return st == WMS_OK ? put(out, "</header>\n") : st;
}

typedef struct redaction {
	int password, nonce, wsse;
	int failed; /* a secret could not be replaced: write nothing */
} redaction;

static void redact_node(xmlNodePtr n, redaction *rd)
{
	xmlChar *now;
	xmlNodeSetContent(n, (const xmlChar *)REDACTED);
	now = xmlNodeGetContent(n);
	if (!now || strcmp(xs(now), REDACTED) != 0)
		rd->failed = 1;
	if (now)
		xmlFree(now);
}

static void redact_walk(xmlNodePtr n, redaction *rd)
{
	for (; n; n = n->next) {
		const char *ns, *local;
		if (n->type != XML_ELEMENT_NODE)
			continue;
		ns = n->ns ? xs(n->ns->href) : "";
		local = xs(n->name);
		if (strcmp(ns, WSSE_NS) == 0)
			rd->wsse = 1;
		/* Password in any namespace: a fixture never needs one. */
		if (strcmp(local, "Password") == 0) {
			redact_node(n, rd);
			rd->password = 1;
			continue;
		}
		if (strcmp(local, "Nonce") == 0 && strcmp(ns, WSSE_NS) == 0) {
			redact_node(n, rd);
			rd->nonce = 1;
			continue;
		}
		redact_walk(n->children, rd);
	}
}

/* The request body as it goes on disk: secrets replaced, and which masks
 * that calls for. A body that is not XML cannot be checked: refused. */
static wms_status redact_request(const wms_http_request *req, char **out, size_t *out_len,
				 redaction *rd, char *why, size_t why_size)
{
	xmlDocPtr doc = safe_parse(req->body, req->body_len, "request", why, why_size);
	xmlChar *mem = NULL;
	int size = 0;
	wms_status st = WMS_OK;

	memset(rd, 0, sizeof(*rd));
	*out = NULL;
	*out_len = 0;
	if (!doc)
		return WMS_ERR_FIXTURE;
	redact_walk(xmlDocGetRootElement(doc), rd);
	if (rd->failed) {
		snprintf(why, why_size, "out of memory redacting secrets");
		st = WMS_ERR_NOMEM;
		goto done;
	}
	if (rd->password || rd->nonce) {
		xmlDocDumpMemoryEnc(doc, &mem, &size, "UTF-8");
		if (!mem || size < 0) {
			st = WMS_ERR_NOMEM;
			goto done;
		}
		*out = wms__strndup((const char *)mem, (size_t)size);
		*out_len = (size_t)size;
	} else {
		*out = wms__strndup(req->body, req->body_len);
		*out_len = req->body_len;
	}
	if (!*out)
		st = WMS_ERR_NOMEM;
done:
	if (mem)
		xmlFree(mem);
	xmlFreeDoc(doc);
	return st;
}

static wms_status put_mask(wms__buf *out, const char *name, char **seen, size_t *nseen)
{
	size_t i;
	wms_status st;
	for (i = 0; i < *nseen; i++)
		if (strcmp(seen[i], name) == 0)
			return WMS_OK;
	seen[(*nseen)++] = (char *)(uintptr_t)name;
	st = put(out, "    <mask>");
	if (st == WMS_OK)
		st = put_escaped(out, name, strlen(name));
	return st == WMS_OK ? put(out, "</mask>\n") : st;
}

static const char *fault_name(fault_kind k)
{
	switch (k) {
	case FAULT_TIMEOUT: return "timeout";
	case FAULT_REFUSED: return "refused";
	case FAULT_RESET: return "reset";
	case FAULT_DNS: return "dns";
	case FAULT_CONNECT_TIMEOUT: return "connect-timeout";
	case FAULT_RESET_BEFORE_SEND: return "reset-before-send";
	case FAULT_NONE: return "none";
	}
	return "none";
}

/* The whole fixture file's text. */
static wms_status build_fixture(const recorder *rec, const char *name, const char *operation,
				const wms_http_request *req, const char *body, size_t body_len,
				const redaction *rd, const wms_http_response *resp, fault_kind fault,
				uint32_t elapsed_ms, wms__buf *out)
{
	char **seen = NULL;
	size_t nseen = 0, i;
	char num[64];
	wms_status st;

	seen = wms__calloc(rec->volatile_count + 4, sizeof(*seen));
	if (!seen)
		return WMS_ERR_NOMEM;
	st = put(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		      "<!-- Recorded by the libwms recording transport; format: tests/fixtures/README.md -->\n"
		      "<fixture xmlns=\"" FIXTURE_NS "\" name=\"");
	if (st == WMS_OK)
		st = put_escaped(out, name, strlen(name));
	if (st == WMS_OK)
		st = put(out, "\">\n  <description>Recorded ");
	if (st == WMS_OK)
		st = put_escaped(out, operation, strlen(operation));
	if (st == WMS_OK)
		st = put(out, " exchange</description>\n  <request operation=\"");
	if (st == WMS_OK)
		st = put_escaped(out, operation, strlen(operation));
	if (st == WMS_OK)
		st = put(out, "\" soap-action=\"");
	if (st == WMS_OK && req->soap_action)
		st = put_escaped(out, req->soap_action, strlen(req->soap_action));
	if (st == WMS_OK)
		st = put(out, "\">\n");
	if (st == WMS_OK && rd->password)
		st = put_mask(out, "Password", seen, &nseen);
	if (st == WMS_OK && (rd->wsse || rd->nonce))
		st = put_mask(out, "Nonce", seen, &nseen);
	if (st == WMS_OK && rd->wsse)
		st = put_mask(out, "Created", seen, &nseen);
	if (st == WMS_OK && rd->wsse) /* wsu:Timestamp's other half */
		st = put_mask(out, "Expires", seen, &nseen);
	for (i = 0; i < rec->volatile_count && st == WMS_OK; i++)
		st = put_mask(out, rec->volatiles[i], seen, &nseen);
	if (st == WMS_OK && req->content_type)
		st = put_header(out, "    ", "Content-Type", req->content_type);
	if (st == WMS_OK)
		st = put_body(out, body, body_len, "    ");
	if (st == WMS_OK)
		st = put(out, "  </request>\n");
	if (st != WMS_OK)
		goto done;
	if (fault == FAULT_NONE) {
		snprintf(num, sizeof(num), "  <reply status=\"%ld\">\n", resp->status);
		st = put(out, num);
		if (st == WMS_OK && resp->content_type)
			st = put_header(out, "    ", "Content-Type", resp->content_type);
		if (st == WMS_OK)
			st = put_body(out, resp->body, resp->body ? resp->body_len : 0, "    ");
		if (st == WMS_OK)
			st = put(out, "  </reply>\n");
	} else {
		snprintf(num, sizeof(num), "  <fault kind=\"%s\" after-ms=\"%u\"/>\n", fault_name(fault),
			 (unsigned)elapsed_ms);
		st = put(out, num);
	}
	if (st == WMS_OK)
		st = put(out, "</fixture>\n");
done:
	wms__free(seen);
	return st;
}

/* Write `data` to dir/name through a temporary file and a rename. */
static wms_status write_atomic(const char *dir, const char *name, const char *data, size_t len,
			       char *why, size_t why_size)
{
	size_t plen = strlen(dir) + strlen(name) + 32;
	char *path = wms__malloc(plen), *tmp = wms__malloc(plen);
	int fd = -1;
	size_t off = 0;
	wms_status st = WMS_ERR_FIXTURE;

	if (tmp)
		tmp[0] = '\0'; /* nothing to unlink yet */
	if (!path || !tmp) {
		st = WMS_ERR_NOMEM;
		snprintf(why, why_size, "out of memory");
		goto done;
	}
	snprintf(path, plen, "%s/%s", dir, name);
	snprintf(tmp, plen, "%s/.%s.tmp.XXXXXX", dir, name);
	fd = mkstemp(tmp);
	if (fd < 0) {
		snprintf(why, why_size, "cannot create a file in %s: %s", dir, strerror(errno));
		tmp[0] = '\0';
		goto done;
	}
	while (off < len) {
		ssize_t n = write(fd, data + off, len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			snprintf(why, why_size, "cannot write %s: %s", path, strerror(errno));
			goto done;
		}
		off += (size_t)n;
	}
	if (fchmod(fd, 0644) != 0 || fsync(fd) != 0) {
		snprintf(why, why_size, "cannot write %s: %s", path, strerror(errno));
		goto done;
	}
	if (close(fd) != 0) {
		fd = -1;
		snprintf(why, why_size, "cannot write %s: %s", path, strerror(errno));
		goto done;
	}
	fd = -1;
	if (rename(tmp, path) != 0) {
		snprintf(why, why_size, "cannot rename to %s: %s", path, strerror(errno));
		goto done;
	}
	tmp[0] = '\0';
	st = WMS_OK;
done:
	if (fd >= 0)
		close(fd);
	if (tmp && tmp[0])
		unlink(tmp);
	wms__free(path);
	wms__free(tmp);
	return st;
}

/* The operation as it goes into a file name: [A-Za-z0-9._-], at most 48. */
static void file_operation(const wms_http_request *req, char *buf, size_t size)
{
	const char *op = req->operation;
	size_t i, n = 0;
	if ((!op || !*op) && req->soap_action) {
		op = strrchr(req->soap_action, '/');
		op = op ? op + 1 : req->soap_action;
	}
	if (!op || !*op)
		op = "request";
	for (i = 0; op[i] && n + 1 < size && n < 48; i++) {
		char c = op[i];
		int ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
			 c == '.' || c == '_' || c == '-';
		buf[n++] = ok ? c : '_';
	}
	buf[n] = '\0';
}

static wms_status record_exchange(recorder *rec, const wms_http_request *req,
				  const wms_http_response *resp, fault_kind fault,
				  uint32_t elapsed_ms, char *why, size_t why_size)
{
	char fname[256], opname[64], fxname[256];
	char *body = NULL;
	size_t body_len = 0, n;
	redaction rd;
	wms__buf text = { NULL, 0, 0 };
	unsigned index;
	wms_status st;

	file_operation(req, opname, sizeof(opname));
	pthread_mutex_lock(&rec->lock);
	index = ++rec->next;
	pthread_mutex_unlock(&rec->lock);
	if (rec->name) {
		memset(fname, 0, sizeof(fname));
		if (rec->name(fname, sizeof(fname), index, opname, rec->name_ctx) != 0) {
			snprintf(why, why_size, "the name callback refused exchange %u", index);
			st = WMS_ERR_FIXTURE;
			goto done;
		}
		if (!memchr(fname, '\0', sizeof(fname)) || !fname[0] || fname[0] == '.' ||
		    strchr(fname, '/')) {
			snprintf(why, why_size, "the name callback gave an unusable file name for exchange %u",
				 index);
			st = WMS_ERR_FIXTURE;
			goto done;
		}
	} else {
		snprintf(fname, sizeof(fname), "%s%03u-%s.xml", rec->prefix, index, opname);
	}
	n = strlen(fname);
	if (n > 4 && strcmp(fname + n - 4, ".xml") == 0)
		n -= 4;
	snprintf(fxname, sizeof(fxname), "%.*s", (int)n, fname);

	st = redact_request(req, &body, &body_len, &rd, why, why_size);
	if (st == WMS_ERR_FIXTURE) {
		char inner[160];
		snprintf(inner, sizeof(inner), "%s", why);
		snprintf(why, why_size, "request body cannot be checked for secrets: %.160s", inner);
		goto done;
	}
	if (st == WMS_OK)
		st = build_fixture(rec, fxname, req->operation && *req->operation ? req->operation : opname,
				   req, body, body_len, &rd, resp, fault, elapsed_ms, &text);
	if (st == WMS_ERR_NOMEM)
		snprintf(why, why_size, "out of memory");
	if (st != WMS_OK)
		goto done;
	st = write_atomic(rec->directory, fname, text.data, text.len, why, why_size);
	if (st == WMS_OK) {
		pthread_mutex_lock(&rec->lock);
		rec->written++;
		pthread_mutex_unlock(&rec->lock);
	}
done:
	wms__free(body);
	wms__buf_free(&text);
	return st;
}

static wms_status record_send(wms_transport *self, const wms_http_request *req,
			      wms_http_response *resp, wms_error *err)
{
	recorder *rec = (recorder *)self;
	wms_error local;
	wms_error *e = err ? err : &local;
	uint64_t t0;
	uint32_t elapsed_ms;
	fault_kind fault;
	char why[WMS_ERROR_MESSAGE_MAX];
	wms_status st, wst;

	if (!self || !req || !resp)
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "recording transport: NULL request or response");
	wms_error_clear(&local);
	t0 = wms__now_ns();
	st = rec->inner->send(rec->inner, req, resp, e);
	elapsed_ms = (uint32_t)((wms__now_ns() - t0) / 1000000u);
	switch (st) {
	case WMS_OK:
		fault = FAULT_NONE;
		break;
	case WMS_ERR_TIMEOUT:
		/* replayed with the delivery the live call had */
		fault = e->delivery == WMS_DELIVERY_NOT_SENT ? FAULT_CONNECT_TIMEOUT : FAULT_TIMEOUT;
		break;
	case WMS_ERR_CONNECT:
		fault = (e->curl_code == CURL_CODE_RESOLVE_HOST ||
			 e->curl_code == CURL_CODE_RESOLVE_PROXY) ? FAULT_DNS : FAULT_REFUSED;
		break;
	case WMS_ERR_TRANSPORT:
		/* a reset before any byte left keeps NOT_SENT: safe to resend */
		fault = e->delivery == WMS_DELIVERY_NOT_SENT ? FAULT_RESET_BEFORE_SEND : FAULT_RESET;
		break;
	case WMS_ERR_INVALID_ARG:
	case WMS_ERR_NOMEM:
	case WMS_ERR_CIRCUIT_OPEN:
	case WMS_ERR_HTTP:
	case WMS_ERR_SOAP_FAULT:
	case WMS_ERR_NOT_XML:
	case WMS_ERR_TRUNCATED:
	case WMS_ERR_UNEXPECTED_REPLY:
	case WMS_ERR_TOO_LARGE:
	case WMS_ERR_UNSAFE_XML:
	case WMS_ERR_TLS:
	case WMS_ERR_FIXTURE:
	case WMS_ERR_CONFIG:
	case WMS_ERR_INTERNAL:
	default:
		return st; /* nothing a fixture can replay: passed on as is */
	}
	why[0] = '\0';
	wst = record_exchange(rec, req, resp, fault, elapsed_ms, why, sizeof(why));
	/* The inner transport's error comes first; a write failure only
	 * replaces success, so a test notices the missing fixture. */
	if (wst != WMS_OK && st == WMS_OK)
		return wms__fail(err, WMS_ERR_FIXTURE, WMS_DELIVERY_ANSWERED,
				 "exchange answered but not recorded: %s", why);
	return st;
}

static void record_free(wms_transport *self)
{
	recorder *rec = (recorder *)self;
	size_t i;
	if (!rec)
		return;
	if (rec->inner && rec->inner->free)
		rec->inner->free(rec->inner);
	wms__free(rec->directory);
	wms__free(rec->prefix);
	for (i = 0; i < rec->volatile_count; i++)
		wms__free(rec->volatiles[i]);
	wms__free(rec->volatiles);
	pthread_mutex_destroy(&rec->lock);
	wms__free(rec);
}

wms_status wms_record_options_init(wms_record_options *opts, unsigned version)
{
	wms_record_options def = WMS_RECORD_OPTIONS_INIT;
	if (!opts || version != WMS_RECORD_OPTIONS_VERSION)
		return WMS_ERR_INVALID_ARG;
	*opts = def;
	return WMS_OK;
}

static wms_status check_record_options(const wms_record_options *o, wms_error *err)
{
	struct stat sb;
	size_t i;
	if (!o)
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "wms_record_transport_new: options are required (the directory)");
	if (o->version != WMS_RECORD_OPTIONS_VERSION)
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "record options version %u is not supported (expected %u)", o->version,
				 WMS_RECORD_OPTIONS_VERSION);
	if (!o->directory || !*o->directory)
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "record options: directory is required");
	if (stat(o->directory, &sb) != 0)
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "record directory %s: %s", o->directory, strerror(errno));
	if (!S_ISDIR(sb.st_mode))
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "record directory %s: not a directory", o->directory);
	if (o->prefix && (strchr(o->prefix, '/') || o->prefix[0] == '.' || strlen(o->prefix) > 128))
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "record options: prefix must not contain '/', start with '.', or exceed 128 bytes");
	if (o->volatile_count && !o->volatile_elements)
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "record options: volatile_count is %zu but volatile_elements is NULL",
				 o->volatile_count);
	for (i = 0; i < o->volatile_count; i++) {
		const char *v = o->volatile_elements[i];
		if (!v || !*v || strchr(v, ':') || strpbrk(v, " \t\r\n<>&\""))
			return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
					 "record options: volatile_elements[%zu] is not an element local name", i);
	}
	return WMS_OK;
}

wms_status wms_record_transport_new(wms_transport **out, wms_transport *inner,
				    const wms_record_options *opts, wms_error *err)
{
	recorder *rec = NULL;
	size_t i;
	wms_status st;

	if (out)
		*out = NULL;
	if (!out || !inner || !inner->send) {
		st = wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
			       "wms_record_transport_new: %s is NULL",
			       !out ? "out" : !inner ? "inner" : "inner->send");
		goto fail;
	}
	st = check_record_options(opts, err);
	if (st != WMS_OK)
		goto fail;
	xml_init();
	rec = wms__calloc(1, sizeof(*rec));
	if (!rec || pthread_mutex_init(&rec->lock, NULL) != 0) {
		wms__free(rec);
		st = wms__fail(err, WMS_ERR_NOMEM, WMS_DELIVERY_NOT_SENT, "out of memory");
		goto fail;
	}
	rec->parent.version = WMS_TRANSPORT_VERSION;
	rec->parent.send = record_send;
	rec->parent.free = record_free;
	rec->inner = inner;
	inner = NULL;
	rec->name = opts->name;
	rec->name_ctx = opts->name_ctx;
	rec->directory = wms__strdup(opts->directory);
	rec->prefix = wms__strdup(opts->prefix ? opts->prefix : "");
	rec->volatiles = wms__calloc(opts->volatile_count ? opts->volatile_count : 1,
				     sizeof(*rec->volatiles));
	if (!rec->directory || !rec->prefix || !rec->volatiles)
		goto nomem;
	for (i = 0; i < opts->volatile_count; i++) {
		rec->volatiles[i] = wms__strdup(opts->volatile_elements[i]);
		if (!rec->volatiles[i])
			goto nomem;
		rec->volatile_count++;
	}
	*out = &rec->parent;
	return WMS_OK;
nomem:
	record_free(&rec->parent);
	return wms__fail(err, WMS_ERR_NOMEM, WMS_DELIVERY_NOT_SENT, "out of memory");
fail:
	if (inner && inner->free)
		inner->free(inner);
	return st;
}

size_t wms_record_transport_written(wms_transport *transport)
{
	recorder *rec = (recorder *)transport;
	size_t n;
	if (!transport || transport->send != record_send)
		return 0;
	pthread_mutex_lock(&rec->lock);
	n = rec->written;
	pthread_mutex_unlock(&rec->lock);
	return n;
}
