/* Reply parsing: bytes in, a reply struct or a classified error out.
 *
 * The body goes through libxml2's push parser, fed whole and then told the
 * input has ended. That split is how a truncated body is told apart from
 * one that is not XML: a body that parses without error until the end of
 * input is announced was a well-formed prefix that ended early (TRUNCATED);
 * an error while feeding means it was never XML (NOT_XML). A DOCTYPE stops
 * the parser from its SAX callback, before any declaration in it is read,
 * so no entity is ever defined, let alone expanded or fetched.
 *
 * No libxml2 tree is built: SAX2 callbacks record each element (its local
 * name and namespace URI, both owned by the parser's dictionary) and its
 * character data in three arrays, and the checks below walk those. A
 * workspace (wms__xml_ws) keeps the parser context and the arrays between
 * parses, so a client's steady state allocates next to nothing here.
 *
 * Every element is matched by namespace URI and local name, never by prefix.
 *
 * Cost is bounded before libxml2 runs: the bytes (decoded first when their
 * encoding is not ASCII-compatible) are scanned for the limits of
 * soap/limits.h, and the body is fed in chunks with the call's deadline
 * checked between them.
 *
 * Lifetimes (what each pointer a parse leaves behind may be read until):
 *  - rel.name and rel.uri point into the kept parser context's dictionary.
 *    xmlCtxtResetPush keeps the dictionary (a reused context interns each
 *    name once), so they stay valid until the context is freed. Once an
 *    element has been recorded the context is freed or kept only in
 *    release(), after check_reply and the fault reader (every reader of
 *    those names) have returned. parse_xml frees it itself only before
 *    anything of this parse is read: when a reset fails (parser_for) and
 *    when a parse near the names limit starts over on a new context (its
 *    elements are reset first, and nothing read them).
 *  - rseg.p and the rel/rseg links point into the workspace's arrays, which
 *    move while they grow: links are indexes until link_elements(), once the
 *    parse is over, and the arrays are emptied or given back only by the
 *    next parse's reset_elements() or by release().
 *  - The SAX callbacks read attribute values only during the callback.
 *  - What outlives the call (the reply struct, the error's fields) is
 *    copied out of the arrays, never pointed into them.
 */
#include <stdio.h>
#include <string.h>
#include <libxml/encoding.h>
#include <libxml/parser.h>
#include <libxml/SAX2.h>
#include <libxml/tree.h>
#include <libxml/xmlerror.h>
#include "soap/soap.h"
#include "soap/limits.h"

#define X(s) ((const xmlChar *)(s))
#define S(s) ((const char *)(s))

/* Safe options: no network, and none of NOENT (entity substitution), DTDLOAD,
 * DTDATTR, DTDVALID, HUGE or RECOVER; libxml2's own reporting off (errors are
 * collected per call through the context's structured handler). */
#define PARSE_OPTIONS (XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING | XML_PARSE_NOCDATA)

#define VALUE_MAX 256 /* longest text of a simple value looked at, white space
			* included (trimmed after) */

/* ---- public helpers declared in wms/client.h ------------------------------ */

const char *wms_order_state_name(wms_order_state state)
{
	switch (state) {
	case WMS_ORDER_STATE_RECEIVED: return "RECEIVED";
	case WMS_ORDER_STATE_ALLOCATED: return "ALLOCATED";
	case WMS_ORDER_STATE_PICKING: return "PICKING";
	case WMS_ORDER_STATE_PACKED: return "PACKED";
	case WMS_ORDER_STATE_SHIPPED: return "SHIPPED";
	case WMS_ORDER_STATE_CANCELLED: return "CANCELLED";
	case WMS_ORDER_STATE_UNKNOWN: return "UNKNOWN";
	}
	return "UNKNOWN";
}

void wms_stock_reply_free(wms_stock_reply *reply)
{
	if (!reply)
		return;
	wms__free(reply->levels);
	wms__free(reply);
}

/* ---- small byte helpers (locale-independent) ------------------------------ */

static int xml_space(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static unsigned char lower(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') ? (unsigned char)(c - 'A' + 'a') : c;
}

/* Whether [p, end) starts with `lit` (lower-case ASCII), ignoring case. */
static int starts_ci(const char *p, const char *end, const char *lit)
{
	for (; *lit; p++, lit++)
		if (p >= end || lower((unsigned char)*p) != (unsigned char)*lit)
			return 0;
	return 1;
}

static const char *find_lit(const char *p, const char *end, const char *lit)
{
	return wms__find(p, end, lit, strlen(lit));
}

static const char *skip_space(const char *p, const char *end)
{
	while (p < end && xml_space((unsigned char)*p))
		p++;
	return p;
}

/* ---- looking at the bytes before parsing --------------------------------- */

typedef enum sniff_kind { SNIFF_EMPTY, SNIFF_TEXT, SNIFF_HTML, SNIFF_XML } sniff_kind;

typedef enum bom_kind { BOM_NONE, BOM_UTF8, BOM_UTF16LE, BOM_UTF16BE } bom_kind;

typedef struct sniff_result {
	sniff_kind kind;
	int bom;          /* a byte order mark, or UTF-16/32 without one: the
			   * header's charset is not used */
	bom_kind bom_kind; /* the byte order mark itself, if there is one */
	bom_kind utf16;   /* UTF-16 by its BOM or, as libxml2 detects it, by "<?" */
	int ucs4;         /* UCS-4 by its first four bytes (libxml2's detection) */
	int ebcdic;       /* EBCDIC by its first four bytes (libxml2's detection) */
	int declared_enc; /* the XML declaration names an encoding */
	char enc[41];     /* that name, when it is short and ASCII ("" if not) */
	int decl_unread;  /* the body opens with an XML declaration or PI whose
			   * "?>" is not within WMS__XML_MAX_OPENING_PI
			   * characters (in UTF-16: or not in ASCII) */
	size_t decl_end;  /* just past an XML declaration at the very start
			   * (after a UTF-8 BOM); 0 if there is none */
} sniff_result;

/* The value of the encoding pseudo-attribute of the XML declaration
 * [decl, decl_end) into dst; "" when there is none or it does not fit (the
 * parser then has its say on it). */
static void decl_encoding(const char *decl, const char *decl_end, char *dst, size_t size)
{
	const char *p = find_lit(decl, decl_end, "encoding"), *v;
	size_t n;
	char quote;

	dst[0] = '\0';
	if (!p)
		return;
	p = skip_space(p + 8, decl_end);
	if (p == decl_end || *p != '=')
		return;
	p = skip_space(p + 1, decl_end);
	if (p == decl_end || (*p != '"' && *p != '\''))
		return;
	quote = *p++;
	for (v = p; p < decl_end && *p != quote; p++)
		;
	n = (size_t)(p - v);
	if (p == decl_end || n == 0 || n >= size)
		return;
	memcpy(dst, v, n);
	dst[n] = '\0';
}

/* A UTF-16 body's XML declaration, ASCII only, into dst as single bytes:
 * what there is of it up to its "?>", the first character outside ASCII or
 * size - 1 characters. */
static void utf16_prefix(char *dst, size_t size, const unsigned char *u, size_t len, int big_endian)
{
	size_t i, n = 0;
	for (i = 0; i + 1 < len && n + 1 < size; i += 2) {
		unsigned hi = u[i + !big_endian], lo = u[i + !!big_endian], c = hi << 8 | lo;
		if (c == 0 || c >= 0x80)
			break;
		dst[n++] = (char)c;
		if (n >= 2 && dst[n - 2] == '?' && dst[n - 1] == '>')
			break;
	}
	dst[n] = '\0';
}

/* Classify the start of the body. Only ASCII-compatible bodies are looked
 * at closely; UTF-16/32 are left to the parser, except for the encoding its
 * declaration names after a UTF-16 byte order mark. */
static void sniff(sniff_result *r, const char *buf, size_t len)
{
	const char *p = buf, *end = buf + len, *q;
	const unsigned char *u = (const unsigned char *)buf;

	memset(r, 0, sizeof(*r));
	r->kind = SNIFF_XML;
	r->ebcdic = len >= 4 && xmlDetectCharEncoding(u, 4) == XML_CHAR_ENCODING_EBCDIC;
	if (len >= 3 && u[0] == 0xEF && u[1] == 0xBB && u[2] == 0xBF) {
		r->bom = 1;
		r->bom_kind = BOM_UTF8;
		p += 3;
	} else if (len >= 2 && ((u[0] == 0xFF && u[1] == 0xFE) || (u[0] == 0xFE && u[1] == 0xFF) ||
				u[0] == 0 || u[1] == 0)) {
		r->bom = 1; /* UTF-16/32 (with or without a BOM): the parser decides */
		if (u[0] == 0xFF || u[0] == 0xFE) {
			r->bom_kind = u[0] == 0xFE ? BOM_UTF16BE : BOM_UTF16LE;
			r->utf16 = r->bom_kind;
		} else if (len >= 4) {
			switch (xmlDetectCharEncoding(u, 4)) {
			case XML_CHAR_ENCODING_UTF16LE: r->utf16 = BOM_UTF16LE; break;
			case XML_CHAR_ENCODING_UTF16BE: r->utf16 = BOM_UTF16BE; break;
			case XML_CHAR_ENCODING_UCS4LE:
			case XML_CHAR_ENCODING_UCS4BE:
			case XML_CHAR_ENCODING_UCS4_2143:
			case XML_CHAR_ENCODING_UCS4_3412: r->ucs4 = 1; break;
			default: break;
			}
		}
		if (r->utf16 != BOM_NONE) {
			char decl[WMS__XML_MAX_OPENING_PI + 1];
			size_t skip = r->bom_kind != BOM_NONE ? 2 : 0;
			utf16_prefix(decl, sizeof(decl), u + skip, len - skip, r->utf16 == BOM_UTF16BE);
			q = find_lit(decl, decl + strlen(decl), "?>");
			if (!strncmp(decl, "<?", 2) && !q && strlen(decl) * 2 + 2 <= len - skip)
				/* cut by the buffer or by a character past ASCII,
				 * not by the end of the body */
				r->decl_unread = 1;
			if (!strncmp(decl, "<?xml", 5) && xml_space((unsigned char)decl[5]) && q) {
				r->declared_enc = find_lit(decl, q, "encoding") != NULL;
				decl_encoding(decl, q, r->enc, sizeof(r->enc));
			}
		}
		return;
	}
	if (end - p >= 2 && p[0] == '<' && p[1] == '?' &&
	    (size_t)(end - p) > WMS__XML_MAX_OPENING_PI &&
	    !find_lit(p, p + WMS__XML_MAX_OPENING_PI, "?>"))
		r->decl_unread = 1;
	p = skip_space(p, end);
	if (p == end) {
		r->kind = SNIFF_EMPTY;
		return;
	}
	if (*p != '<') {
		r->kind = SNIFF_TEXT;
		return;
	}
	/* Skip the XML declaration, comments and processing instructions. */
	for (;;) {
		const char *at = p;
		p = skip_space(p, end);
		if (end - p >= 5 && !memcmp(p, "<?xml", 5) && p + 5 < end &&
		    xml_space((unsigned char)p[5])) {
			if (!(q = find_lit(p, end, "?>")))
				return;
			r->declared_enc = find_lit(p, q, "encoding") != NULL;
			decl_encoding(p, q, r->enc, sizeof(r->enc));
			/* libxml2 switches encodings only for one that opens the body */
			if (at == buf + (r->bom_kind == BOM_UTF8 ? 3 : 0) && p == at)
				r->decl_end = (size_t)(q + 2 - buf);
			p = q + 2;
		} else if (end - p >= 2 && !memcmp(p, "<?", 2)) {
			if (!(q = find_lit(p, end, "?>")))
				return;
			p = q + 2;
		} else if (end - p >= 4 && !memcmp(p, "<!--", 4)) {
			if (!(q = find_lit(p + 4, end, "-->")))
				return;
			p = q + 3;
		} else {
			break;
		}
	}
	if (starts_ci(p, end, "<!doctype")) {
		q = skip_space(p + 9, end);
		if (starts_ci(q, end, "html") && (q + 4 == end || xml_space((unsigned char)q[4]) ||
						  q[4] == '>'))
			r->kind = SNIFF_HTML;
	} else if (starts_ci(p, end, "<html") &&
		   (p + 5 == end || xml_space((unsigned char)p[5]) || p[5] == '>' || p[5] == '/')) {
		r->kind = SNIFF_HTML;
	}
}

/* Whether an XML declaration's encoding name agrees with the byte order
 * mark. XML 1.0 4.3.3 and Appendix F: an entity presented in an encoding
 * other than the one its declaration names is a fatal error, and a BOM
 * says which encoding that is. The names compared are libxml2's own
 * spellings of the BOM's encoding, in any case; a UTF-16 BOM also agrees
 * with the UTF-16LE or UTF-16BE of its own byte order. */
static int bom_agrees(bom_kind bom, const char *enc)
{
	switch (bom) {
	case BOM_NONE:
		return 1;
	case BOM_UTF8:
		return !xmlStrcasecmp(X(enc), X("UTF-8")) || !xmlStrcasecmp(X(enc), X("UTF8"));
	case BOM_UTF16LE:
	case BOM_UTF16BE:
		return !xmlStrcasecmp(X(enc), X("UTF-16")) || !xmlStrcasecmp(X(enc), X("UTF16")) ||
		       !xmlStrcasecmp(X(enc), X(bom == BOM_UTF16LE ? "UTF-16LE" : "UTF-16BE"));
	}
	return 0;
}

static const char *bom_name(bom_kind bom)
{
	switch (bom) {
	case BOM_NONE: break;
	case BOM_UTF8: return "UTF-8";
	case BOM_UTF16LE: return "UTF-16LE";
	case BOM_UTF16BE: return "UTF-16BE";
	}
	return "none";
}

/* Up to 32 bytes of the body's start, printable ASCII only, for messages. */
static void snippet(char *dst, size_t size, const char *buf, size_t len)
{
	size_t i, n = 0;
	const char *p = skip_space(buf, buf + len);
	len -= (size_t)(p - buf);
	for (i = 0; i < len && i < 32 && n + 1 < size; i++) {
		unsigned char c = (unsigned char)p[i];
		dst[n++] = (c >= 0x20 && c < 0x7F && c != '"') ? (char)c : '.';
	}
	dst[n] = '\0';
}

/* The media type is text/html (a proxy's or server's error page). */
static int media_is_html(const char *ct)
{
	const char *end;
	if (!ct)
		return 0;
	end = ct + strlen(ct);
	ct = skip_space(ct, end);
	return starts_ci(ct, end, "text/html") &&
	       (ct + 9 == end || ct[9] == ';' || xml_space((unsigned char)ct[9]));
}

/* The charset parameter of a Content-Type, unquoted, into dst. 0 if none. */
static int media_charset(const char *ct, char *dst, size_t size)
{
	const char *p, *end, *v;
	size_t n;
	if (!ct)
		return 0;
	end = ct + strlen(ct);
	for (p = ct; (p = memchr(p, ';', (size_t)(end - p))) != NULL;) {
		p = skip_space(p + 1, end);
		if (!starts_ci(p, end, "charset"))
			continue;
		p = skip_space(p + 7, end);
		if (p == end || *p != '=')
			continue;
		p = skip_space(p + 1, end);
		if (p < end && *p == '"') {
			v = ++p;
			while (p < end && *p != '"')
				p++;
		} else {
			v = p;
			while (p < end && *p != ';' && !xml_space((unsigned char)*p))
				p++;
		}
		n = (size_t)(p - v);
		if (n == 0 || n >= size)
			return 0;
		memcpy(dst, v, n);
		dst[n] = '\0';
		return 1;
	}
	return 0;
}

/* ---- the reply's elements --------------------------------------------------- */

typedef struct rseg rseg;
typedef struct rel rel;

/* A run of an element's character data (text, CDATA, entity references). */
struct rseg {
	const char *p;     /* set once parsing is over */
	const rseg *next;  /* the element's next run */
	size_t off, len;   /* in the text array */
	uint32_t next_i;
};

/* One element. While parsing, links are indexes (the arrays move as they
 * grow); once it is over they become pointers. Index 0 is the document. */
struct rel {
	const char *name; /* local name */
	const char *uri;  /* namespace URI, NULL for none */
	const rel *children, *next;
	const rseg *text;
	uint32_t parent_i, first_i, last_i, next_i, text_i, text_last_i;
	int lang_en;      /* an xml:lang attribute starting with "en" */
};

/* What one parse leaves for the checks, and the SAX callbacks' state. */
typedef struct parse_state {
	int phase;      /* 1 while feeding the body, 2 once its end is announced */
	int doctype;    /* a DOCTYPE was met: parsing stopped right there */
	int code;       /* the first fatal error's libxml2 code, 0 if none */
	int code_phase; /* the phase it happened in */
	int line;
	int nomem;      /* libxml2 or a callback ran out of memory */
	int too_many_names; /* the document crossed WMS__XML_MAX_NAMES */
	int timed_out;  /* the deadline passed before the body was all fed */
	int dirty;      /* the context saw a parse that did not end cleanly */
	size_t dict_base; /* names in the dictionary before this parse */
	size_t prior;     /* of those, names earlier parses left (0 on a new context) */
	int names_again;  /* prior names may hide some of this reply's: parse anew */
	size_t fed;     /* bytes handed to libxml2 */
	char msg[120];
	char ns_msg[120]; /* the first namespace error (undeclared prefix...) */
	rel *els;
	size_t n_els, cap_els;
	rseg *segs;
	size_t n_segs, cap_segs;
	char *text;
	size_t n_text, cap_text;
	uint32_t cur; /* the open element */
	unsigned depth;
} parse_state;

/* The parser's part of a workspace (soap.h). */
struct wms__parse_ws {
	xmlParserCtxtPtr push; /* NULL until the first parse, or after a failed one */
	size_t new_names;      /* names in push's dictionary when it was made */
	parse_state st;
};

#define KEEP_ELS WMS__PARSE_KEEP_ELS
#define KEEP_TEXT WMS__PARSE_KEEP_TEXT
#define KEEP_DICT_NAMES WMS__PARSE_KEEP_NAMES

/* The body goes to libxml2 in pieces this large, the deadline checked
 * between them. Within the limits of soap/limits.h a piece costs libxml2 a
 * few milliseconds at most, so a call overruns its deadline by no more. */
#define CHUNK_BYTES (64u * 1024u)

static int grow(void **arr, size_t *cap, size_t need, size_t size)
{
	size_t n = *cap ? *cap : 16;
	void *p;
	if (need <= *cap)
		return 1;
	while (n < need) {
		if (n > SIZE_MAX / 2 / size)
			return 0;
		n *= 2;
	}
	if (!(p = wms__realloc(*arr, n * size)))
		return 0;
	*arr = p;
	*cap = n;
	return 1;
}

static void out_of_memory(xmlParserCtxtPtr pctx, parse_state *st)
{
	st->nomem = 1;
	xmlStopParser(pctx);
}

static void on_start(void *ctx, const xmlChar *localname, const xmlChar *prefix,
		     const xmlChar *uri, int nb_namespaces, const xmlChar **namespaces,
		     int nb_attributes, int nb_defaulted, const xmlChar **attributes)
{
	xmlParserCtxtPtr pctx = ctx;
	parse_state *st = pctx->_private;
	rel *e, *parent;
	uint32_t i;
	int a;

	(void)prefix;
	(void)nb_namespaces;
	(void)namespaces;
	(void)nb_defaulted;
	if (++st->depth > WMS__XML_MAX_DEPTH) {
		if (!st->code) {
			st->code = XML_ERR_INTERNAL_ERROR;
			/* Too deep whenever libxml2 gets to the tag, which may be
			 * only once the input has ended: not a truncation. */
			st->code_phase = 1;
			st->line = xmlSAX2GetLineNumber(ctx);
			snprintf(st->msg, sizeof(st->msg), "Excessive depth in document: %d",
				 WMS__XML_MAX_DEPTH);
		}
		xmlStopParser(pctx);
		return;
	}
	/* Names are interned as the start tag is read; the scan's limits bound
	 * how many one tag can add before this check sees them. The names an
	 * earlier reply left in a kept dictionary are not added again: past
	 * the limit less those, this reply may be over it or not, so it is
	 * parsed again on a new context, where the count is exact. */
	/* (unsigned: st->prior is at most what release() keeps, below the limit) */
	_Static_assert(WMS__PARSE_KEEP_NAMES < WMS__XML_MAX_NAMES, "a kept dictionary under the limit");
	if (pctx->dict &&
	    xmlDictSize(pctx->dict) - st->dict_base > WMS__XML_MAX_NAMES - st->prior) {
		if (st->prior)
			st->names_again = 1;
		else
			st->too_many_names = 1;
		xmlStopParser(pctx);
		return;
	}
	if (st->n_els >= UINT32_MAX ||
	    !grow((void **)&st->els, &st->cap_els, st->n_els + 1, sizeof(*st->els))) {
		out_of_memory(pctx, st);
		return;
	}
	i = (uint32_t)st->n_els++;
	e = &st->els[i];
	memset(e, 0, sizeof(*e));
	e->name = S(localname);
	e->uri = uri && *uri ? S(uri) : NULL;
	e->parent_i = st->cur;
	parent = &st->els[st->cur];
	if (parent->last_i)
		st->els[parent->last_i].next_i = i;
	else
		parent->first_i = i;
	parent->last_i = i;
	/* attributes: (localname, prefix, URI, value, end) each */
	for (a = 0; a < nb_attributes; a++) {
		const xmlChar **at = attributes + 5 * a;
		if (at[2] && !strcmp(S(at[2]), S(XML_XML_NAMESPACE)) && !strcmp(S(at[0]), "lang"))
			e->lang_en = starts_ci(S(at[3]), S(at[4]), "en");
	}
	st->cur = i;
}

static void on_end(void *ctx, const xmlChar *localname, const xmlChar *prefix, const xmlChar *uri)
{
	xmlParserCtxtPtr pctx = ctx;
	parse_state *st = pctx->_private;
	(void)localname;
	(void)prefix;
	(void)uri;
	st->depth--;
	st->cur = st->els[st->cur].parent_i;
}

static void on_chars(void *ctx, const xmlChar *ch, int len)
{
	xmlParserCtxtPtr pctx = ctx;
	parse_state *st = pctx->_private;
	rel *e = &st->els[st->cur];
	size_t n = len > 0 ? (size_t)len : 0;
	rseg *last;

	if (!st->cur || !n)
		return;
	if (!grow((void **)&st->text, &st->cap_text, st->n_text + n, 1)) {
		out_of_memory(pctx, st);
		return;
	}
	memcpy(st->text + st->n_text, ch, n);
	/* Runs that follow each other in the element and in the array merge. */
	last = e->text_last_i ? &st->segs[e->text_last_i] : NULL;
	if (last && last->off + last->len == st->n_text) {
		last->len += n;
		st->n_text += n;
		return;
	}
	if (st->n_segs >= UINT32_MAX ||
	    !grow((void **)&st->segs, &st->cap_segs, st->n_segs + 1, sizeof(*st->segs))) {
		out_of_memory(pctx, st);
		return;
	}
	last = &st->segs[st->n_segs];
	memset(last, 0, sizeof(*last));
	last->off = st->n_text;
	last->len = n;
	if (e->text_last_i)
		st->segs[e->text_last_i].next_i = (uint32_t)st->n_segs;
	else
		e->text_i = (uint32_t)st->n_segs;
	e->text_last_i = (uint32_t)st->n_segs++;
	st->n_text += n;
}

/* Indexes to pointers, once the arrays have stopped moving. */
static void link_elements(parse_state *st)
{
	size_t i;
	for (i = 1; i < st->n_segs; i++) {
		st->segs[i].p = st->text + st->segs[i].off;
		st->segs[i].next = st->segs[i].next_i ? &st->segs[st->segs[i].next_i] : NULL;
	}
	for (i = 0; i < st->n_els; i++) {
		rel *e = &st->els[i];
		e->children = e->first_i ? &st->els[e->first_i] : NULL;
		e->next = e->next_i ? &st->els[e->next_i] : NULL;
		e->text = e->text_i ? &st->segs[e->text_i] : NULL;
	}
}

/* Empty the arrays for a new parse: element 0 (the document) and segment 0
 * (unused, so that 0 means "none") are always there. */
static int reset_elements(parse_state *st)
{
	st->n_els = st->n_segs = st->n_text = 0;
	st->cur = 0;
	st->depth = 0;
	if (!grow((void **)&st->els, &st->cap_els, 1, sizeof(*st->els)) ||
	    !grow((void **)&st->segs, &st->cap_segs, 1, sizeof(*st->segs)))
		return 0;
	memset(&st->els[0], 0, sizeof(st->els[0]));
	memset(&st->segs[0], 0, sizeof(st->segs[0]));
	st->n_els = st->n_segs = 1;
	return 1;
}

static void free_elements(parse_state *st)
{
	wms__free(st->els);
	wms__free(st->segs);
	wms__free(st->text);
	st->els = NULL;
	st->segs = NULL;
	st->text = NULL;
	st->cap_els = st->cap_segs = st->cap_text = 0;
	st->n_els = st->n_segs = st->n_text = 0;
}

void wms__parse_ws_free(wms__parse_ws *ws)
{
	if (!ws)
		return;
	if (ws->push)
		xmlFreeParserCtxt(ws->push);
	free_elements(&ws->st);
	wms__free(ws);
}

/* ---- the parse itself ------------------------------------------------------ */

static void copy_message(char *dst, size_t size, const char *msg)
{
	size_t n;
	wms__strlcpy(dst, msg ? msg : "parse error", size);
	n = strlen(dst);
	while (n && xml_space((unsigned char)dst[n - 1]))
		dst[--n] = '\0';
}

static void on_error(void *ctx, xmlErrorPtr e)
{
	xmlParserCtxtPtr pctx = ctx;
	parse_state *st = pctx ? pctx->_private : NULL;
	if (!st || !e)
		return;
	if (e->code == XML_ERR_NO_MEMORY)
		st->nomem = 1;
	if (e->domain == XML_FROM_NAMESPACE && e->level >= XML_ERR_ERROR && !st->ns_msg[0])
		copy_message(st->ns_msg, sizeof(st->ns_msg), e->message);
	if (e->level != XML_ERR_FATAL || st->code)
		return;
	st->code = e->code ? e->code : XML_ERR_INTERNAL_ERROR;
	st->code_phase = st->phase;
	st->line = e->line;
	copy_message(st->msg, sizeof(st->msg), e->message);
}

static void on_doctype(void *ctx, const xmlChar *name, const xmlChar *external_id,
		       const xmlChar *system_id)
{
	xmlParserCtxtPtr pctx = ctx;
	parse_state *st = pctx->_private;
	(void)name;
	(void)external_id;
	(void)system_id;
	st->doctype = 1;
	xmlStopParser(pctx);
}

/* A push parser whose SAX callbacks are ours, ready for a new document. */
static xmlParserCtxtPtr parser_for(wms__parse_ws *ws, const char *encoding)
{
	xmlSAXHandler sax;

	if (ws->push) {
		if (xmlCtxtResetPush(ws->push, NULL, 0, NULL, encoding) == 0) {
			/* As a new push context without a first chunk has it: the
			 * encoding is detected from the first bytes (a BOM, UTF-16),
			 * which xmlCtxtReset's UTF-8 would skip. */
			if (!encoding)
				ws->push->charset = XML_CHAR_ENCODING_NONE;
			return ws->push;
		}
		xmlFreeParserCtxt(ws->push);
		ws->push = NULL;
	}
	memset(&sax, 0, sizeof(sax));
	sax.initialized = XML_SAX2_MAGIC;
	sax.startElementNs = on_start;
	sax.endElementNs = on_end;
	sax.characters = on_chars;
	sax.ignorableWhitespace = on_chars;
	sax.internalSubset = on_doctype;
	sax.serror = on_error;
	ws->push = xmlCreatePushParserCtxt(&sax, NULL, NULL, 0, NULL);
	if (ws->push && encoding && xmlCtxtResetPush(ws->push, NULL, 0, NULL, encoding) != 0) {
		xmlFreeParserCtxt(ws->push);
		ws->push = NULL;
	}
	if (ws->push)
		ws->new_names = ws->push->dict && xmlDictSize(ws->push->dict) > 0
					? (size_t)xmlDictSize(ws->push->dict)
					: 0;
	return ws->push;
}

/* Bytes libxml2's own US-ASCII decoder left undecoded once the input has
 * ended. In 2.9 that decoder stops at the first byte past 0x7F as if its
 * output were full, without an error, and the parser goes on to report
 * the document it never saw the rest of as cut short. No ASCII character
 * takes two bytes, so what is left is never one that the end of the input
 * cut in two: it does not decode. (Every other decoder reports bytes it
 * cannot decode, and leaves only a cut character's first bytes.) */
static int ascii_undecoded(xmlParserCtxtPtr ctxt)
{
	xmlParserInputBufferPtr in = ctxt->input ? ctxt->input->buf : NULL;
	if (!in || !in->encoder || !in->encoder->name || !in->raw || !xmlBufUse(in->raw))
		return 0;
	return !xmlStrcasecmp(X(in->encoder->name), X("US-ASCII")) ||
	       !xmlStrcasecmp(X(in->encoder->name), X("ASCII"));
}

/* Parse the body into ws's arrays, or classify why not. `deadline_ns`
 * (wms__now_ns() time, 0 for none) is checked between chunks: the first is
 * always parsed, so a reply that arrived in time is never refused for a
 * deadline it reached while arriving. */
static wms_status parse_xml(wms__parse_ws *ws, const char *buf, size_t len, const char *encoding,
			    int html_type, uint64_t deadline_ns, wms_error *err)
{
	parse_state *st = &ws->st;
	xmlParserCtxtPtr ctxt;
	wms__xml_quiet quiet;
	wms_status rc;
	int parsed = 0, feed_decode_errors = 0, undecoded = 0;

again:
	st->phase = st->doctype = st->code = st->code_phase = st->line = st->nomem = 0;
	st->too_many_names = st->timed_out = st->names_again = 0;
	st->fed = 0;
	st->msg[0] = st->ns_msg[0] = '\0';

	wms__xml_quiet_begin(&quiet);
	ctxt = reset_elements(st) ? parser_for(ws, encoding) : NULL;
	if (!ctxt)
		goto done;
	st->dirty = 1; /* until this parse ends cleanly */
	ctxt->_private = st;
	xmlCtxtUseOptions(ctxt, PARSE_OPTIONS);
	/* These follow process-wide defaults an application may have changed. */
	ctxt->replaceEntities = 0;
	ctxt->loadsubset = 0;
	ctxt->validate = 0;
	st->dict_base = ctxt->dict && xmlDictSize(ctxt->dict) > 0 ? (size_t)xmlDictSize(ctxt->dict) : 0;
	st->prior = st->dict_base > ws->new_names ? st->dict_base - ws->new_names : 0;

	st->phase = 1;
	while (st->fed < len && !st->doctype && !st->code && !st->nomem && !st->too_many_names &&
	       !st->names_again) {
		size_t n = len - st->fed < CHUNK_BYTES ? len - st->fed : CHUNK_BYTES;
		if (st->fed && deadline_ns && wms__now_ns() >= deadline_ns) {
			st->timed_out = 1;
			break;
		}
		xmlParseChunk(ctxt, buf + st->fed, (int)n, 0);
		st->fed += n;
	}
	/* Errors outside the parser context while the body is fed are the
	 * decoder's: bytes that were all there and do not decode. (A decoder
	 * that needs bytes past a cut waits for them rather than complain.) */
	feed_decode_errors = quiet.errors;
	st->phase = 2;
	if (st->names_again && !st->nomem && !quiet.nomem) {
		/* Nothing read so far is kept: the context goes, and this parse
		 * starts over on a new one (whose count has no prior names). */
		ctxt->_private = NULL;
		xmlFreeParserCtxt(ws->push);
		ws->push = NULL;
		wms__xml_quiet_end(&quiet);
		goto again;
	}
	if (!st->doctype && !st->code && !st->nomem && !st->too_many_names && !st->timed_out)
		xmlParseChunk(ctxt, NULL, 0, 1);
	undecoded = !st->doctype && ascii_undecoded(ctxt);
	parsed = 1;
done:
	/* libxml2 2.9 sometimes reports running out of memory as a mere error
	 * and goes on: never trust what it produced after that. */
	if (!parsed || st->nomem || quiet.nomem || ctxt->errNo == XML_ERR_NO_MEMORY)
		rc = wms__fail(err, WMS_ERR_NOMEM, WMS_DELIVERY_ANSWERED,
			       "parsing the reply: out of memory");
	else if (st->doctype)
		rc = wms__fail(err, WMS_ERR_UNSAFE_XML, WMS_DELIVERY_ANSWERED,
			       "reply carries a DOCTYPE: refused, nothing in it was read");
	else if (st->too_many_names)
		rc = wms__fail(err, WMS_ERR_UNEXPECTED_REPLY, WMS_DELIVERY_ANSWERED,
			       "reply refused: more than %u distinct names in it (libwms's limit)",
			       WMS__XML_MAX_NAMES);
	else if (st->timed_out)
		rc = wms__fail(err, WMS_ERR_TIMEOUT, WMS_DELIVERY_ANSWERED,
			       "reading the reply ran past the call's deadline: stopped after %zu "
			       "of %zu bytes",
			       st->fed, len);
	else if (!(st->code || quiet.errors || undecoded || !ctxt->wellFormed || st->n_els < 2 ||
		   !ctxt->nsWellFormed || st->ns_msg[0]))
		rc = WMS_OK;
	else if (html_type)
		rc = wms__fail(err, WMS_ERR_NOT_XML, WMS_DELIVERY_ANSWERED,
			       "reply is an HTML page (text/html), not XML");
	else if (st->code && st->code_phase == 1)
		rc = wms__fail(err, WMS_ERR_NOT_XML, WMS_DELIVERY_ANSWERED,
			       "reply is not well-formed XML: %s (line %d)", st->msg, st->line);
	/* Characters that did not decode stop the parser where they are: what
	 * it then says at the end of the input ("Extra content...", "Premature
	 * end...") is no truncation. */
	else if (undecoded)
		rc = wms__fail(err, WMS_ERR_NOT_XML, WMS_DELIVERY_ANSWERED,
			       "reply is not XML: its characters do not decode (a byte past 0x7F "
			       "in US-ASCII)");
	else if (st->code && !feed_decode_errors)
		rc = wms__fail(err, WMS_ERR_TRUNCATED, WMS_DELIVERY_ANSWERED,
			       "reply ends early: %s (line %d)", st->msg, st->line);
	else if (quiet.errors)
		rc = wms__fail(err, WMS_ERR_NOT_XML, WMS_DELIVERY_ANSWERED,
			       "reply is not XML: its characters do not decode (libxml2 error %d)",
			       quiet.first_code);
	else if (st->ns_msg[0])
		rc = wms__fail(err, WMS_ERR_NOT_XML, WMS_DELIVERY_ANSWERED,
			       "reply is not namespace-well-formed XML: %s", st->ns_msg);
	else
		rc = wms__fail(err, WMS_ERR_NOT_XML, WMS_DELIVERY_ANSWERED,
			       "reply is not well-formed XML");
	if (ctxt)
		ctxt->_private = NULL;
	if (rc == WMS_OK)
		st->dirty = 0;
	wms__xml_quiet_end(&quiet);
	if (rc == WMS_OK)
		link_elements(st);
	return rc;
}

/* After the last reader of this parse (check_reply, the fault reader) is
 * done: keep the context only if its parse ended cleanly and its dictionary
 * is small; give back arrays that one large reply grew. `tmp` workspaces
 * keep nothing. */
static void release(wms__parse_ws *ws, int tmp)
{
	if (ws->push && (tmp || ws->st.dirty || !ws->push->dict ||
			 xmlDictSize(ws->push->dict) > KEEP_DICT_NAMES)) {
		xmlFreeParserCtxt(ws->push);
		ws->push = NULL;
		ws->st.dirty = 0;
	}
	if (tmp || ws->st.cap_els > KEEP_ELS || ws->st.cap_segs > KEEP_ELS ||
	    ws->st.cap_text > KEEP_TEXT)
		free_elements(&ws->st);
}

/* ---- tree helpers ----------------------------------------------------------- */

/* `uri` NULL means "no namespace". */
static int is_el(const rel *n, const char *uri, const char *name)
{
	if (!n || strcmp(n->name, name) != 0)
		return 0;
	if (!uri)
		return !n->uri;
	return n->uri && !strcmp(n->uri, uri);
}

static const rel *child(const rel *parent, const char *uri, const char *name)
{
	const rel *c;
	if (!parent)
		return NULL;
	for (c = parent->children; c; c = c->next)
		if (is_el(c, uri, name))
			return c;
	return NULL;
}

static const char *ns_uri(const rel *n)
{
	return n->uri ? n->uri : "";
}

enum { TEXT_OK, TEXT_TOO_LONG, TEXT_HAS_ELEMENTS };

/* Concatenate the element's character data (text and CDATA; comments and
 * PIs are not recorded) into dst. Cut at a character boundary when it does
 * not fit. Child elements are ignored when `lenient`, an error otherwise. */
static int element_text(const rel *el, char *dst, size_t size, int lenient)
{
	const rseg *t;
	size_t len = 0, n;

	dst[0] = '\0';
	if (el->children && !lenient)
		return TEXT_HAS_ELEMENTS;
	for (t = el->text; t; t = t->next) {
		n = t->len;
		if (len + n >= size) {
			n = size - 1 - len;
			while (n > 0 && (t->p[n] & 0xC0) == 0x80)
				n--;
			memcpy(dst + len, t->p, n);
			dst[len + n] = '\0';
			return TEXT_TOO_LONG;
		}
		memcpy(dst + len, t->p, n);
		len += n;
		dst[len] = '\0';
	}
	return TEXT_OK;
}

/* Strip leading and trailing XML whitespace in place. */
static void trim(char *s)
{
	size_t n = strlen(s), start = 0;
	while (n && xml_space((unsigned char)s[n - 1]))
		n--;
	while (start < n && xml_space((unsigned char)s[start]))
		start++;
	memmove(s, s + start, n - start);
	s[n - start] = '\0';
}

/* Control characters and runs of whitespace become single spaces. */
static void flatten(char *s)
{
	char *w = s;
	int space = 0;
	trim(s);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c < 0x20 || c == 0x7F || c == ' ') {
			space = 1;
			continue;
		}
		if (space)
			*w++ = ' ';
		space = 0;
		*w++ = *s;
	}
	*w = '\0';
}

static wms_status unexpected(wms_error *err, const char *fmt, ...)
#if defined(__GNUC__)
	__attribute__((format(printf, 2, 3)))
#endif
	;

static wms_status unexpected(wms_error *err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	wms__vfail(err, WMS_ERR_UNEXPECTED_REPLY, WMS_DELIVERY_ANSWERED, fmt, ap);
	va_end(ap);
	return WMS_ERR_UNEXPECTED_REPLY;
}

/* ---- typed values ------------------------------------------------------------ */

/* The one child {wh}name of parent, which the schema allows once: NULL and
 * an error if it is missing or repeated. `where` names the parent. */
static const rel *single(const rel *parent, const char *where, const char *name, wms_error *err)
{
	const rel *el = child(parent, WMS__NS, name), *c;

	if (!el) {
		unexpected(err, "%s: missing {%s}%s", where, WMS__NS, name);
		return NULL;
	}
	/* A second one makes the reply say two things, and taking the first
	 * (or the last) would be a guess: refused, whatever either holds. */
	for (c = el->next; c; c = c->next) {
		if (is_el(c, WMS__NS, name)) {
			unexpected(err, "%s/%s: repeated, the schema allows one", where, name);
			return NULL;
		}
	}
	return el;
}

/* The trimmed text of the required single child {wh}name of parent, at
 * most size - 1 bytes, not empty. `where` names the parent in messages;
 * `type`, when not NULL, is the XML Schema type a bad value is said not to
 * be. */
static wms_status value(const rel *parent, const char *where, const char *name, char *dst,
			size_t size, const char *type, wms_error *err)
{
	char tmp[VALUE_MAX + 1];
	const rel *el = single(parent, where, name, err);
	int rc;

	if (!el)
		return WMS_ERR_UNEXPECTED_REPLY;
	rc = element_text(el, tmp, sizeof(tmp), 0);
	trim(tmp);
	if (type && (rc != TEXT_OK || strlen(tmp) >= size || !tmp[0]))
		return unexpected(err, "%s/%s: not an %s", where, name, type);
	if (rc == TEXT_HAS_ELEMENTS)
		return unexpected(err, "%s/%s: expected text, found child elements", where, name);
	if (rc == TEXT_TOO_LONG)
		return unexpected(err, "%s/%s: text longer than %d bytes, white space included "
				  "(the value is at most %zu)", where, name, VALUE_MAX, size - 1);
	if (strlen(tmp) >= size)
		return unexpected(err, "%s/%s: value longer than %zu bytes", where, name, size - 1);
	if (!tmp[0])
		return unexpected(err, "%s/%s: empty", where, name);
	memcpy(dst, tmp, strlen(tmp) + 1);
	return WMS_OK;
}

/* Ids in replies: 1-64 bytes, no whitespace or control characters. The
 * charset is not enforced: a WMS that widens it must not break every call. */
static wms_status id_value(const rel *parent, const char *where, const char *name,
			   char dst[WMS_ID_MAX + 1], wms_error *err)
{
	wms_status rc = value(parent, where, name, dst, WMS_ID_MAX + 1, NULL, err);
	const unsigned char *p;
	if (rc != WMS_OK)
		return rc;
	for (p = (const unsigned char *)dst; *p; p++)
		if (*p <= 0x20 || *p == 0x7F)
			return unexpected(err, "%s/%s: invalid identifier \"%.40s\"", where, name, dst);
	return WMS_OK;
}

static wms_status state_value(const rel *parent, const char *where, wms_order_state *out,
			      wms_error *err)
{
	static const wms_order_state states[] = {
		WMS_ORDER_STATE_RECEIVED, WMS_ORDER_STATE_ALLOCATED, WMS_ORDER_STATE_PICKING,
		WMS_ORDER_STATE_PACKED, WMS_ORDER_STATE_SHIPPED, WMS_ORDER_STATE_CANCELLED,
	};
	char v[WMS_ID_MAX + 1];
	wms_status rc = value(parent, where, "state", v, sizeof(v), NULL, err);
	size_t i;
	if (rc != WMS_OK)
		return rc;
	for (i = 0; i < sizeof(states) / sizeof(states[0]); i++) {
		if (!strcmp(v, wms_order_state_name(states[i]))) {
			*out = states[i];
			return WMS_OK;
		}
	}
	/* A state this version does not know yet is fine; a malformed one is not. */
	for (i = 0; v[i]; i++)
		if (!((v[i] >= 'A' && v[i] <= 'Z') || (i > 0 && ((v[i] >= '0' && v[i] <= '9') ||
								 v[i] == '_'))))
			return unexpected(err, "%s/state: invalid value \"%.40s\"", where, v);
	*out = WMS_ORDER_STATE_UNKNOWN;
	return WMS_OK;
}

static wms_status bool_value(const rel *parent, const char *where, const char *name, int *out,
			     wms_error *err)
{
	char v[8];
	wms_status rc = value(parent, where, name, v, sizeof(v), "xs:boolean", err);
	if (rc != WMS_OK)
		return rc;
	if (!strcmp(v, "true") || !strcmp(v, "1"))
		*out = 1;
	else if (!strcmp(v, "false") || !strcmp(v, "0"))
		*out = 0;
	else
		return unexpected(err, "%s/%s: not an xs:boolean (\"%s\")", where, name, v);
	return WMS_OK;
}

static wms_status long_value(const rel *parent, const char *where, const char *name,
			     int64_t *out, wms_error *err)
{
	char v[32];
	const char *p = v;
	uint64_t mag = 0, limit;
	int neg = 0;
	wms_status rc = value(parent, where, name, v, sizeof(v), "xs:long", err);

	if (rc != WMS_OK)
		return rc;
	if (*p == '-' || *p == '+')
		neg = *p++ == '-';
	limit = neg ? (uint64_t)INT64_MAX + 1u : (uint64_t)INT64_MAX;
	if (!*p)
		goto bad;
	for (; *p; p++) {
		if (*p < '0' || *p > '9' || mag > (limit - (uint64_t)(*p - '0')) / 10u)
			goto bad;
		mag = mag * 10u + (uint64_t)(*p - '0');
	}
	if (neg)
		*out = mag ? -(int64_t)(mag - 1u) - 1 : 0;
	else
		*out = (int64_t)mag;
	return WMS_OK;
bad:
	return unexpected(err, "%s/%s: not an xs:long (\"%s\")", where, name, v);
}

static int digits(const char *p, int n)
{
	int i;
	for (i = 0; i < n; i++)
		if (p[i] < '0' || p[i] > '9')
			return 0;
	return 1;
}

static int num2(const char *p)
{
	return (p[0] - '0') * 10 + (p[1] - '0');
}

/* Whether an xs:dateTime is out of range, and in which field: NULL if it is
 * not. Its lexical form is
 *   -?YYYY-MM-DDThh:mm:ss(.s+)?(Z|[+-]hh:mm)?
 * and a malformed one gives "" ("not an xs:dateTime"). The ranges are XML
 * Schema's (Part 2, 3.2.7 and 3.3.7 in 1.1): a year of four digits or more,
 * no leading zero past four and not 0000 (1.0 has no year zero); month
 * 01-12; day 01 to the month's last (Gregorian leap years, the year's sign
 * aside); hour 00-23, or 24 for 24:00:00 (with a fraction, only zeros): the
 * end of that day; minute 00-59; second 00-59 with any fraction, so no leap
 * second (xs:dateTime has none, and neither has our timestamps); and a zone
 * of at most 14:00 either way, minutes 00-59. */
static const char *datetime_error(const char *s)
{
	static const int mdays[12] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	const char *p = s, *frac = NULL;
	int year = 0, y400 = 0, nonzero = 0, bad_year, month, day, hour, minute, second, i, last;
	int zone_h = 0, zone_m = 0;

	if (*p == '-')
		p++;
	while (p[year] >= '0' && p[year] <= '9') {
		y400 = (y400 * 10 + (p[year] - '0')) % 400;
		nonzero |= p[year] != '0';
		year++;
	}
	if (year < 4)
		return "";
	bad_year = (year > 4 && p[0] == '0') || !nonzero;
	p += year;
	if (!(p[0] == '-' && digits(p + 1, 2) && p[3] == '-' && digits(p + 4, 2) && p[6] == 'T' &&
	      digits(p + 7, 2) && p[9] == ':' && digits(p + 10, 2) && p[12] == ':' &&
	      digits(p + 13, 2)))
		return "";
	month = num2(p + 1);
	day = num2(p + 4);
	hour = num2(p + 7);
	minute = num2(p + 10);
	second = num2(p + 13);
	p += 15;
	if (*p == '.') {
		if (!digits(++p, 1))
			return "";
		for (frac = p; *p >= '0' && *p <= '9'; p++)
			;
	}
	if (*p == 'Z') {
		p++;
	} else if ((*p == '+' || *p == '-') && digits(p + 1, 2) && p[3] == ':' && digits(p + 4, 2)) {
		zone_h = num2(p + 1);
		zone_m = num2(p + 4);
		p += 6;
	}
	if (*p != '\0')
		return "";
	if (bad_year)
		return "year out of range";
	if (month < 1 || month > 12)
		return "month out of range";
	last = mdays[month - 1];
	if (month == 2 && y400 % 4 == 0 && (y400 % 100 != 0 || y400 == 0))
		last = 29;
	if (day < 1 || day > last)
		return "day out of range";
	if (hour == 24) {
		int zero = minute == 0 && second == 0;
		for (i = 0; zero && frac && frac[i] >= '0' && frac[i] <= '9'; i++)
			zero = frac[i] == '0';
		if (!zero)
			return "hour out of range";
	} else if (hour > 23) {
		return "hour out of range";
	}
	if (minute > 59)
		return "minute out of range";
	if (second > 59)
		return "second out of range";
	if (zone_h > 14 || zone_m > 59 || (zone_h == 14 && zone_m != 0))
		return "time zone out of range";
	return NULL;
}

/* ---- the four replies ------------------------------------------------------ */

static wms_status parse_submit(const rel *r, wms_submit_reply *out, wms_error *err)
{
	const char *w = wms__op_get(WMS__OP_SUBMIT_ORDER)->response;
	wms_status rc;
	if ((rc = id_value(r, w, "clientOrderId", out->order_id, err)) != WMS_OK ||
	    (rc = id_value(r, w, "wmsReference", out->wms_reference, err)) != WMS_OK ||
	    (rc = state_value(r, w, &out->state, err)) != WMS_OK ||
	    (rc = bool_value(r, w, "duplicate", &out->duplicate, err)) != WMS_OK)
		return rc;
	return WMS_OK;
}

static wms_status parse_status(const rel *r, wms_status_reply *out, wms_error *err)
{
	const char *w = wms__op_get(WMS__OP_GET_ORDER_STATUS)->response, *bad;
	wms_status rc;
	if ((rc = id_value(r, w, "clientOrderId", out->order_id, err)) != WMS_OK ||
	    (rc = id_value(r, w, "wmsReference", out->wms_reference, err)) != WMS_OK ||
	    (rc = state_value(r, w, &out->state, err)) != WMS_OK ||
	    (rc = value(r, w, "updatedAt", out->updated_at, sizeof(out->updated_at), NULL, err)) !=
		    WMS_OK)
		return rc;
	if ((bad = datetime_error(out->updated_at)) != NULL)
		return unexpected(err, "%s/updatedAt: %s (\"%s\")", w,
				  *bad ? bad : "not an xs:dateTime", out->updated_at);
	return WMS_OK;
}

static wms_status parse_cancel(const rel *r, wms_cancel_reply *out, wms_error *err)
{
	const char *w = wms__op_get(WMS__OP_CANCEL_ORDER)->response;
	wms_status rc;
	if ((rc = id_value(r, w, "clientOrderId", out->order_id, err)) != WMS_OK ||
	    (rc = state_value(r, w, &out->state, err)) != WMS_OK ||
	    (rc = bool_value(r, w, "alreadyCancelled", &out->already_cancelled, err)) != WMS_OK)
		return rc;
	return WMS_OK;
}

static wms_status parse_stock(const rel *r, wms_stock_reply **out, wms_error *err)
{
	wms_stock_reply *reply = NULL;
	const rel *c;
	char where[64];
	size_t count = 0, i = 0;
	wms_status rc = WMS_OK;

	*out = NULL;
	for (c = r->children; c; c = c->next)
		if (is_el(c, WMS__NS, "level"))
			count++;
	if (!count)
		return unexpected(err, "GetStockLevelResponse: missing {%s}level", WMS__NS);
	if (!(reply = wms__calloc(1, sizeof(*reply))) ||
	    !(reply->levels = wms__calloc(count, sizeof(*reply->levels)))) {
		rc = wms__fail(err, WMS_ERR_NOMEM, WMS_DELIVERY_ANSWERED,
			       "parsing the GetStockLevel reply: out of memory");
		goto done;
	}
	reply->count = count;
	for (c = r->children; c; c = c->next) {
		wms_stock_level *l;
		if (!is_el(c, WMS__NS, "level"))
			continue;
		l = &reply->levels[i];
		snprintf(where, sizeof(where), "GetStockLevelResponse/level[%zu]", i);
		if ((rc = id_value(c, where, "sku", l->sku, err)) != WMS_OK ||
		    (rc = long_value(c, where, "onHand", &l->on_hand, err)) != WMS_OK ||
		    (rc = long_value(c, where, "reserved", &l->reserved, err)) != WMS_OK ||
		    (rc = long_value(c, where, "available", &l->available, err)) != WMS_OK)
			goto done;
		i++;
	}
done:
	if (rc != WMS_OK)
		wms_stock_reply_free(reply);
	else
		*out = reply;
	return rc;
}

/* ---- faults ------------------------------------------------------------------ */

/* The local part of a QName such as "soap:Server.Overloaded". */
static const char *local_part(const char *qname)
{
	const char *colon = strchr(qname, ':');
	return colon ? colon + 1 : qname;
}

/* SOAP 1.2 Reason: the English Text if there is one, else the first. */
static const rel *reason_text(const rel *reason)
{
	const rel *c, *first = NULL;
	if (!reason)
		return NULL;
	for (c = reason->children; c; c = c->next) {
		if (!is_el(c, WMS__SOAP12_NS, "Text"))
			continue;
		if (c->lang_en)
			return c;
		if (!first)
			first = c;
	}
	return first;
}

static void text_into(const rel *el, char *dst, size_t size)
{
	dst[0] = '\0';
	if (el)
		element_text(el, dst, size, 1);
	flatten(dst);
}

/* Reads names and text from the parse's arrays and dictionary, which
 * release() keeps until this returns; everything it reports is copied into
 * err's fields. */
static wms_status parse_fault(const rel *fault, wms_error *err)
{
	char code[WMS_ERROR_FIELD_MAX], sub[WMS_ERROR_FIELD_MAX] = "";
	char text[WMS_ERROR_MESSAGE_MAX], wms_code[WMS_ERROR_FIELD_MAX];
	const rel *detail, *wf;
	const char *c, *s;

	if (is_el(fault, WMS__SOAP12_NS, "Fault")) {
		const rel *code_el = child(fault, WMS__SOAP12_NS, "Code");
		text_into(child(code_el, WMS__SOAP12_NS, "Value"), code, sizeof(code));
		text_into(child(child(code_el, WMS__SOAP12_NS, "Subcode"), WMS__SOAP12_NS, "Value"),
			  sub, sizeof(sub));
		text_into(reason_text(child(fault, WMS__SOAP12_NS, "Reason")), text, sizeof(text));
		detail = child(fault, WMS__SOAP12_NS, "Detail");
	} else {
		/* SOAP 1.1 fault children are unqualified; some stacks qualify them. */
		const rel *fc = child(fault, NULL, "faultcode");
		const rel *fs = child(fault, NULL, "faultstring");
		text_into(fc ? fc : child(fault, WMS__SOAP11_NS, "faultcode"), code, sizeof(code));
		text_into(fs ? fs : child(fault, WMS__SOAP11_NS, "faultstring"), text, sizeof(text));
		detail = child(fault, NULL, "detail");
		if (!detail)
			detail = child(fault, WMS__SOAP11_NS, "detail");
	}
	wf = child(detail, WMS__NS, "WmsFault");
	text_into(child(wf, WMS__NS, "code"), wms_code, sizeof(wms_code));
	if (!text[0])
		text_into(child(wf, WMS__NS, "message"), text, sizeof(text));

	c = local_part(code);
	s = local_part(sub);
	if (err) {
		wms__strlcpy(err->fault_code, c, sizeof(err->fault_code));
		wms__strlcpy(err->fault_string, text, sizeof(err->fault_string));
		wms__strlcpy(err->wms_code, wms_code, sizeof(err->wms_code));
	}
	return wms__fail(err, WMS_ERR_SOAP_FAULT, WMS_DELIVERY_ANSWERED, "SOAP fault %s%s%s%s: %s%s%s%s",
			 *c ? c : "(no code)", *s ? " (" : "", s, *s ? ")" : "",
			 *text ? text : "(no reason given)", *wms_code ? " [" : "", wms_code,
			 *wms_code ? "]" : "");
}

/* ---- entry point ------------------------------------------------------------ */

static wms_status check_reply(wms__op op, void *out, const rel *doc, int html_type, wms_error *err)
{
	const rel *root = doc->children, *body = NULL, *first, *c;
	const char *soap_ns;
	int soap11;
	union {
		wms_submit_reply submit;
		wms_status_reply status;
		wms_cancel_reply cancel;
	} r;
	wms_status rc;

	if (!root)
		return wms__fail(err, WMS_ERR_NOT_XML, WMS_DELIVERY_ANSWERED, "reply has no root element");
	if ((soap11 = is_el(root, WMS__SOAP11_NS, "Envelope")) != 0)
		soap_ns = WMS__SOAP11_NS;
	else if (is_el(root, WMS__SOAP12_NS, "Envelope"))
		soap_ns = WMS__SOAP12_NS;
	else if (html_type || !xmlStrcasecmp(X(root->name), X("html")))
		/* A SOAP envelope mislabelled text/html is still read (above). */
		return wms__fail(err, WMS_ERR_NOT_XML, WMS_DELIVERY_ANSWERED,
				 "reply is an HTML page, not a SOAP envelope");
	else
		return unexpected(err, "expected a SOAP 1.1 or 1.2 Envelope, found {%s}%s",
				  ns_uri(root), root->name);
	for (c = root->children; c; c = c->next) {
		if (is_el(c, soap_ns, "Header"))
			continue;
		if (is_el(c, soap_ns, "Body"))
			body = c;
		break;
	}
	if (!body)
		return unexpected(err, "expected {%s}Body in the SOAP Envelope, found %s%s%s%s",
				  soap_ns, c ? "{" : "nothing", c ? ns_uri(c) : "", c ? "}" : "",
				  c ? S(c->name) : "");
	/* The Body comes last (SOAP 1.2 5.1; the qualified trailers SOAP 1.1
	 * still allowed after it are sent by no stack we talk to): a second
	 * Body, a fault or anything else after the answer makes the reply
	 * ambiguous. */
	if ((c = body->next) != NULL) {
		if (is_el(c, soap_ns, "Body"))
			return unexpected(err, "Envelope/Body: repeated, SOAP allows one");
		return unexpected(err, "Envelope: {%s}%s after the Body, which must come last",
				  ns_uri(c), S(c->name));
	}
	first = body->children;
	if (!first)
		return unexpected(err, "expected {%s}%s in the SOAP Body, found an empty Body", WMS__NS,
				  wms__op_get(op)->response);
	/* document/literal: one Body child. A second one (another answer, a
	 * fault after the answer) makes the reply ambiguous: refuse it. */
	if ((c = first->next) != NULL)
		return unexpected(err, "expected one element in the SOAP Body, found {%s}%s after {%s}%s",
				  ns_uri(c), S(c->name), ns_uri(first), S(first->name));
	if (is_el(first, soap_ns, "Fault"))
		return parse_fault(first, err);
	/* The other version's Fault is no fault of this Envelope's. */
	if (is_el(first, soap11 ? WMS__SOAP12_NS : WMS__SOAP11_NS, "Fault"))
		return unexpected(err, "Body/Fault: a SOAP %s {%s}Fault in a SOAP %s Envelope",
				  soap11 ? "1.2" : "1.1", ns_uri(first), soap11 ? "1.1" : "1.2");
	if (!is_el(first, WMS__NS, wms__op_get(op)->response))
		return unexpected(err, "expected {%s}%s in the SOAP Body, found {%s}%s", WMS__NS,
				  wms__op_get(op)->response, ns_uri(first), S(first->name));

	memset(&r, 0, sizeof(r));
	switch (op) {
	case WMS__OP_SUBMIT_ORDER:
		if ((rc = parse_submit(first, &r.submit, err)) == WMS_OK && out)
			memcpy(out, &r.submit, sizeof(r.submit));
		return rc;
	case WMS__OP_GET_ORDER_STATUS:
		if ((rc = parse_status(first, &r.status, err)) == WMS_OK && out)
			memcpy(out, &r.status, sizeof(r.status));
		return rc;
	case WMS__OP_CANCEL_ORDER:
		if ((rc = parse_cancel(first, &r.cancel, err)) == WMS_OK && out)
			memcpy(out, &r.cancel, sizeof(r.cancel));
		return rc;
	case WMS__OP_GET_STOCK_LEVEL: {
		wms_stock_reply *stock = NULL;
		rc = parse_stock(first, &stock, err);
		if (out)
			*(wms_stock_reply **)out = stock;
		else
			wms_stock_reply_free(stock);
		return rc;
	}
	case WMS__OP_COUNT:
		break;
	}
	return wms__fail(err, WMS_ERR_INTERNAL, WMS_DELIVERY_ANSWERED, "bad operation %d", (int)op);
}

/* ---- the limits, checked before libxml2 reads a byte ---------------------- */

/* `s` is `prefix` (case ignored) then a number in [lo, hi] without a
 * leading zero. */
static int name_number(const char *s, const char *prefix, unsigned lo, unsigned hi)
{
	size_t n = strlen(prefix);
	unsigned v = 0;
	if (xmlStrncasecmp(X(s), X(prefix), (int)n) || !s[n] || s[n] == '0')
		return 0;
	for (s += n; *s; s++) {
		if (*s < '0' || *s > '9' || v > hi)
			return 0;
		v = v * 10 + (unsigned)(*s - '0');
	}
	return v >= lo && v <= hi;
}

/* Encodings in which every byte below 0x80 is that ASCII character, so the
 * body's own bytes show its markup: the scan reads them as they are. By
 * these names only: ISO-8859-1 to -16, windows-1250 to -1258. */
static int ascii_compatible(const char *enc)
{
	static const char *const names[] = { "UTF-8", "UTF8", "US-ASCII", "ASCII", "LATIN1",
					     "ISO-LATIN-1" };
	size_t i;
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!xmlStrcasecmp(X(enc), X(names[i])))
			return 1;
	return name_number(enc, "ISO-8859-", 1, 16) || name_number(enc, "ISO8859-", 1, 16) ||
	       name_number(enc, "ISO_8859-", 1, 16) || name_number(enc, "WINDOWS-", 1250, 1258) ||
	       name_number(enc, "CP", 1250, 1258);
}

/* The encodings libwms reads, by these names only (case ignored): the
 * ASCII-compatible ones above, UTF-16, and two stateless multibyte ones
 * the scan decodes as libxml2 does (through iconv). Any other name libxml2
 * may still resolve, through iconv or ICU (which ignores '-', '_', '.' and
 * leading zeros in names, and resets a stateful decoder such as
 * ISO-2022-JP's or UTF-7's at each call, where the scan's calls and the
 * parser's fall in different places): the scan could not vouch that it
 * read the characters the parser reads, so it could not vouch for the
 * limits. A reply that declares one is refused; a header's charset naming
 * one is ignored, as one libxml2 lacks is. */
static int encoding_read(const char *enc)
{
	static const char *const names[] = { "UTF-16", "UTF16", "UTF-16LE", "UTF-16BE", "Shift_JIS",
					     "EUC-JP" };
	size_t i;
	if (ascii_compatible(enc))
		return 1;
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!xmlStrcasecmp(X(enc), X(names[i])))
			return 1;
	return 0;
}

/* The body names an encoding libwms does not read (encoding_read), or one
 * the sniff could not read at all: why, for a message, or NULL. */
static const char *encoding_refused(const sniff_result *sn)
{
	if (sn->decl_unread)
		return "its XML declaration or the processing instruction it opens with goes on past "
		       WMS__XML_STR(WMS__XML_MAX_OPENING_PI) " characters (in UTF-16: or past ASCII)";
	if (sn->declared_enc && !sn->enc[0])
		return "its XML declaration names an encoding over 40 bytes long, or none";
	if (sn->declared_enc && !encoding_read(sn->enc))
		return "its XML declaration names an encoding libwms does not read";
	return NULL;
}

/* [buf, buf + len) decoded to UTF-8 into out, by slices, as far as it
 * decodes: libxml2 stops at the first byte that does not, so what follows
 * is never parsed. Some decoders (ICU's) take that byte and report it, so
 * the error, not a lack of progress, ends it (else every bad byte cost a
 * move of the rest of the slice: quadratic). NOMEM if memory ran out on
 * the way; NOT_XML for a decoder that makes too little progress to trust. */
static wms_status decode_utf8(wms__buf *out, xmlCharEncodingHandlerPtr h, const char *buf,
			      size_t len, uint64_t deadline_ns)
{
	enum { SLICE = 256 * 1024 };
	/* Sized by the first slice: a small reply does not allocate for a big
	 * one (xmlCharEncInFunc grows `dec` to twice what is pending). */
	size_t first = len < SLICE ? len : SLICE;
	xmlBufferPtr in = xmlBufferCreateSize(first + 64), dec = xmlBufferCreateSize(3 * first + 64);
	unsigned long failures = wms__alloc_lib_failures();
	wms__xml_quiet quiet;
	wms_status rc = WMS_OK;
	size_t off = 0, calls = 0;

	wms__xml_quiet_begin(&quiet);
	if (!in || !dec) {
		rc = WMS_ERR_NOMEM;
		goto done;
	}
	for (;;) {
		size_t n = len - off < SLICE ? len - off : SLICE;
		int pending, errors = quiet.errors;
		if (off && deadline_ns && wms__now_ns() >= deadline_ns) {
			rc = WMS_ERR_TIMEOUT;
			break;
		}
		if (n && xmlBufferAdd(in, X(buf + off), (int)n) != 0) {
			rc = WMS_ERR_NOMEM;
			break;
		}
		off += n;
		pending = xmlBufferLength(in);
		xmlBufferEmpty(dec);
		xmlCharEncInFunc(h, dec, in);
		if (xmlBufferLength(dec) > 0 &&
		    (rc = wms__buf_append(out, xmlBufferContent(dec), (size_t)xmlBufferLength(dec))) !=
			    WMS_OK)
			break;
		/* All of it, or stuck: a byte that does not decode, or a character
		 * the end of the body cut short. */
		if ((off == len && !xmlBufferLength(in)) || xmlBufferLength(in) == pending ||
		    quiet.errors != errors)
			break;
		/* Each call takes at least half of what is pending (the output has
		 * room for twice the input): a few calls per slice at most. */
		if (++calls > (len / SLICE + 2) * 8) {
			rc = WMS_ERR_NOT_XML;
			break;
		}
	}
done:
	wms__xml_quiet_end(&quiet);
	if (rc != WMS_ERR_TIMEOUT && (quiet.nomem || wms__alloc_lib_failures() != failures))
		rc = WMS_ERR_NOMEM;
	if (in)
		xmlBufferFree(in);
	if (dec)
		xmlBufferFree(dec);
	return rc;
}


/* The encoding a BOM, or libxml2's look at the first bytes, says and the
 * one the declaration names disagree: libxml2 would read what follows the
 * declaration as something else than what its start was. */
static int encodings_disagree(const sniff_result *sn)
{
	return (sn->bom_kind != BOM_NONE || sn->utf16 != BOM_NONE) && sn->enc[0] &&
	       !bom_agrees(sn->bom_kind != BOM_NONE ? sn->bom_kind : sn->utf16, sn->enc);
}

/* Scan the body for the limits of soap/limits.h as libxml2 will read it: its
 * own bytes when its encoding is ASCII-compatible, else decoded to UTF-8
 * from where libxml2 switches to its encoding. `encoding` is the charset
 * the parser will be given, or NULL. WMS_OK (scan->limit says whether one
 * was crossed), NOMEM, TIMEOUT past `deadline_ns` (0: none), or NOT_XML
 * for UCS-4 and EBCDIC, which libwms does not read. */
static wms_status scan_as_read(wms__xml_scan *scan, const char *buf, size_t len,
			       const sniff_result *sn, const char *encoding, uint64_t deadline_ns)
{
	xmlCharEncodingHandlerPtr h = NULL;
	const char *name = NULL;
	wms__buf dec = { 0 };
	size_t from = 0;
	wms_status rc;

	memset(scan, 0, sizeof(*scan));
	if (sn->ucs4 || sn->ebcdic) /* a reply in EBCDIC is refused earlier, as text */
		return WMS_ERR_NOT_XML;
	if (sn->utf16 != BOM_NONE) {
		name = sn->utf16 == BOM_UTF16LE ? "UTF-16LE" : "UTF-16BE";
		from = sn->bom_kind != BOM_NONE ? 2 : 0;
	} else if (sn->decl_end && sn->enc[0]) {
		/* A UTF-16 label on bytes that are not: libxml2 says so and reads on
		 * as UTF-8. */
		if (!ascii_compatible(sn->enc) && xmlStrcasecmp(X(sn->enc), X("UTF-16")) &&
		    xmlStrcasecmp(X(sn->enc), X("UTF16"))) {
			name = sn->enc;
			from = sn->decl_end;
		}
	} else if (!sn->declared_enc && encoding && !ascii_compatible(encoding)) {
		name = encoding;
	}
	if (name) {
		wms__xml_quiet quiet;
		wms__xml_quiet_begin(&quiet);
		h = xmlFindCharEncodingHandler(name);
		wms__xml_quiet_end(&quiet);
	}
	/* No decoder: libxml2 has none either, fails on the declaration and
	 * reads on as UTF-8, as the scan then does. */
	if (!h)
		return wms__xml_scan_limits(scan, buf, len, deadline_ns) == WMS__XML_SCAN_LATE
			       ? WMS_ERR_TIMEOUT
			       : WMS_OK;
	rc = decode_utf8(&dec, h, buf + from, len - from, deadline_ns);
	xmlCharEncCloseFunc(h);
	if (rc == WMS_OK && wms__xml_scan_limits(scan, dec.data ? dec.data : "", dec.len,
						 deadline_ns) == WMS__XML_SCAN_LATE)
		rc = WMS_ERR_TIMEOUT;
	scan->decoded = 1;
	wms__buf_free(&dec);
	return rc;
}

static wms_status check_limits(const char *buf, size_t len, const sniff_result *sn,
			       const char *encoding, uint64_t deadline_ns, wms_error *err)
{
	wms__xml_scan scan;
	char what[160];
	switch (scan_as_read(&scan, buf, len, sn, encoding, deadline_ns)) {
	case WMS_OK:
		if (!scan.limit)
			return WMS_OK;
		wms__xml_scan_describe(&scan, what, sizeof(what));
		if (scan.malformed)
			return wms__fail(err, WMS_ERR_NOT_XML, WMS_DELIVERY_ANSWERED,
					 "reply is not well-formed XML: %s", what);
		return unexpected(err, "reply refused: %s", what);
	case WMS_ERR_NOT_XML:
		if (sn->ucs4)
			return wms__fail(err, WMS_ERR_NOT_XML, WMS_DELIVERY_ANSWERED,
					 "reply is in UCS-4 (UTF-32), which libwms does not read");
		return wms__fail(err, WMS_ERR_NOT_XML, WMS_DELIVERY_ANSWERED,
				 "reply is in an encoding whose decoder made too little progress "
				 "to check the reply's structure");
	case WMS_ERR_TIMEOUT:
		return wms__fail(err, WMS_ERR_TIMEOUT, WMS_DELIVERY_ANSWERED,
				 "reading the reply ran past the call's deadline: stopped checking "
				 "its structure (%zu bytes)",
				 len);
	default:
		return wms__fail(err, WMS_ERR_NOMEM, WMS_DELIVERY_ANSWERED,
				 "decoding the reply for its limits: out of memory");
	}
}

wms_status wms__xml_check_limits(wms__xml_scan *out, const char *buf, size_t len)
{
	sniff_result sn;
	wms_status rc;
	wms__xml_init();
	memset(out, 0, sizeof(*out));
	sniff(&sn, buf ? buf : "", len);
	out->limit = encodings_disagree(&sn)
			     ? "a byte order mark or UTF-16 content the XML declaration contradicts"
			     : encoding_refused(&sn);
	if (out->limit)
		return WMS_ERR_NOT_XML;
	rc = scan_as_read(out, buf ? buf : "", len, &sn, NULL, 0);
	if (rc == WMS_ERR_NOT_XML)
		out->limit = sn.ucs4 || sn.ebcdic ? "in UCS-4 or EBCDIC, which libwms does not read"
						  : "in an encoding whose decoder made too little "
						    "progress to check the structure";
	return rc;
}

static size_t out_size(wms__op op)
{
	switch (op) {
	case WMS__OP_SUBMIT_ORDER: return sizeof(wms_submit_reply);
	case WMS__OP_GET_ORDER_STATUS: return sizeof(wms_status_reply);
	case WMS__OP_CANCEL_ORDER: return sizeof(wms_cancel_reply);
	case WMS__OP_GET_STOCK_LEVEL: return sizeof(wms_stock_reply *);
	case WMS__OP_COUNT: break;
	}
	return 0;
}

static wms_status parse_reply(wms__parse_ws *ws, wms__op op, void *out, const char *buf, size_t len,
			      const char *content_type, size_t max_bytes, uint64_t deadline_ns,
			      wms_error *err)
{
	char charset[64], start[40];
	const char *encoding = NULL, *why;
	sniff_result sn;
	int html_type;
	wms_status rc;

	if ((int)op < 0 || op >= WMS__OP_COUNT)
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_ANSWERED,
				 "parsing a reply: unknown operation %d", (int)op);
	if (out)
		memset(out, 0, out_size(op));
	if (!buf && len)
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_ANSWERED,
				 "parsing a reply: NULL body of %zu bytes", len);
	if (!max_bytes)
		max_bytes = WMS_DEFAULT_MAX_REPLY_BYTES;
	if (len > max_bytes)
		return wms__fail(err, WMS_ERR_TOO_LARGE, WMS_DELIVERY_ANSWERED,
				 "reply is %zu bytes, over the %zu-byte limit", len, max_bytes);
	wms__xml_init();

	html_type = media_is_html(content_type);
	sniff(&sn, buf ? buf : "", len);
	switch (sn.kind) {
	case SNIFF_EMPTY:
		return wms__fail(err, WMS_ERR_NOT_XML, WMS_DELIVERY_ANSWERED, "reply body is empty");
	case SNIFF_TEXT:
		snippet(start, sizeof(start), buf, len);
		return wms__fail(err, WMS_ERR_NOT_XML, WMS_DELIVERY_ANSWERED,
				 "reply is not XML (starts with \"%s\")", start);
	case SNIFF_HTML:
		return wms__fail(err, WMS_ERR_NOT_XML, WMS_DELIVERY_ANSWERED,
				 "reply is an HTML page, not XML");
	case SNIFF_XML:
		break;
	}
	/* A BOM and an XML declaration naming another encoding: a fatal error
	 * (XML 1.0 4.3.3, Appendix F), not a guess at which of them is right.
	 * The same for UTF-16 without a BOM, which libxml2 tells by its first
	 * bytes: it would switch to the declared encoding after the declaration,
	 * reading the rest as something else than what its start was. */
	if (encodings_disagree(&sn)) {
		snippet(start, sizeof(start), sn.enc, strlen(sn.enc));
		return wms__fail(err, WMS_ERR_NOT_XML, WMS_DELIVERY_ANSWERED,
				 "reply is not well-formed XML: %s %s%s, but the XML declaration says "
				 "encoding \"%s\"",
				 sn.bom_kind != BOM_NONE ? "a" : "",
				 bom_name(sn.bom_kind != BOM_NONE ? sn.bom_kind : sn.utf16),
				 sn.bom_kind != BOM_NONE ? " byte order mark" : " content", start);
	}
	if ((why = encoding_refused(&sn)) != NULL) {
		snippet(start, sizeof(start), sn.enc, strlen(sn.enc));
		return wms__fail(err, WMS_ERR_NOT_XML, WMS_DELIVERY_ANSWERED, "reply refused: %s%s%s%s%s",
				 why, start[0] ? " (\"" : "", start, start[0] ? "\")" : "",
				 sn.decl_unread ? "" : " (libwms reads " WMS__ENCODINGS_READ ")");
	}
	/* The BOM or else the XML declaration decide the encoding; the header's
	 * charset only when neither does. An encoding libxml2 lacks is ignored,
	 * and so is one libwms does not read (encoding_read). */
	if (!sn.bom && !sn.declared_enc && media_charset(content_type, charset, sizeof(charset)) &&
	    xmlStrcasecmp(X(charset), X("utf-8")) && xmlStrcasecmp(X(charset), X("utf8")) &&
	    encoding_read(charset)) {
		wms__xml_quiet quiet;
		xmlCharEncodingHandlerPtr h;
		wms__xml_quiet_begin(&quiet);
		h = xmlFindCharEncodingHandler(charset);
		wms__xml_quiet_end(&quiet);
		if (h) {
			xmlCharEncCloseFunc(h);
			encoding = charset;
		}
	}
	if ((rc = check_limits(buf, len, &sn, encoding, deadline_ns, err)) != WMS_OK ||
	    (rc = parse_xml(ws, buf, len, encoding, html_type, deadline_ns, err)) != WMS_OK)
		return rc;
	return check_reply(op, out, &ws->st.els[0], html_type, err);
}

wms_status wms__parse_reply_ws(wms__xml_ws *ws, wms__op op, void *out, const char *buf,
			       size_t len, const char *content_type, size_t max_bytes,
			       uint64_t deadline_ns, wms_error *err)
{
	wms__parse_ws tmp, *p = NULL;
	wms_status rc;

	if (ws && !ws->parse)
		ws->parse = wms__calloc(1, sizeof(*ws->parse));
	if (ws)
		p = ws->parse;
	if (!p) { /* no workspace, or no memory for one: a temporary */
		memset(&tmp, 0, sizeof(tmp));
		p = &tmp;
	}
	rc = parse_reply(p, op, out, buf, len, content_type, max_bytes, deadline_ns, err);
	/* Every reader of the parse's names and arrays has returned. */
	release(p, p == &tmp);
	return rc;
}

size_t wms__parse_ws_kept(const wms__xml_ws *ws, size_t *names, size_t *els, size_t *text)
{
	const wms__parse_ws *p = ws ? ws->parse : NULL;
	*names = p && p->push && p->push->dict && xmlDictSize(p->push->dict) > 0
			 ? (size_t)xmlDictSize(p->push->dict)
			 : 0;
	*els = p ? p->st.cap_els : 0;
	*text = p ? p->st.cap_text : 0;
	return p && p->push ? 1 : 0;
}

wms_status wms__parse_reply(wms__op op, void *out, const char *buf, size_t len,
			    const char *content_type, size_t max_bytes, wms_error *err)
{
	return wms__parse_reply_ws(NULL, op, out, buf, len, content_type, max_bytes, 0, err);
}
