/* Reply parsing: bytes in, a reply struct or a classified error out.
 *
 * How and why (a truncated body told from one that is not XML, no tree,
 * workspaces, the cost bounded before libxml2 runs): the reply parser's
 * page, docs/internals/reply-parser.md.
 *
 * Lifetimes (what each pointer a parse leaves behind may be read until):
 *  - rel.name and rel.uri point into the kept parser context's dictionary.
 *    xmlCtxtResetPush keeps the dictionary (a reused context interns each
 *    name once), so they stay valid until the context is freed. Once an
 *    element has been recorded the context is freed or kept only in
 *    release(), after wms__check_reply and the fault reader (every reader of
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
#include "soap/parsed.h"
#include "soap/sniff.h"

#define X(s) ((const xmlChar *)(s))
#define S(s) ((const char *)(s))

/* Safe options: no network, and none of NOENT (entity substitution), DTDLOAD,
 * DTDATTR, DTDVALID, HUGE or RECOVER; libxml2's own reporting off (errors are
 * collected per call through the context's structured handler). */
#define PARSE_OPTIONS (XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING | XML_PARSE_NOCDATA)

/* ---- recording the reply's elements (soap/parsed.h) ------------------------ */

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
			e->lang_en = wms__starts_ci(S(at[3]), S(at[4]), "en");
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
	while (n && wms__xml_space((unsigned char)dst[n - 1]))
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

/* What a parse came to, once it is over: WMS_OK, or the error that says
 * why not, the first that applies in this order. `parsed` is 0 when no
 * parser context could be had (then ctxt is NULL); `quiet` caught the
 * errors raised outside the context, `feed_decode_errors` of them while
 * the body was fed; `undecoded` as ascii_undecoded(). */
static wms_status outcome(const parse_state *st, xmlParserCtxtPtr ctxt, const wms__xml_quiet *quiet,
			  int parsed, int feed_decode_errors, int undecoded, int html_type,
			  size_t len, wms_error *err)
{
	wms_status rc;

	/* libxml2 2.9 sometimes reports running out of memory as a mere error
	 * and goes on: never trust what it produced after that. */
	if (!parsed || st->nomem || quiet->nomem || ctxt->errNo == XML_ERR_NO_MEMORY)
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
	else if (!(st->code || quiet->errors || undecoded || !ctxt->wellFormed || st->n_els < 2 ||
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
	else if (quiet->errors)
		rc = wms__fail(err, WMS_ERR_NOT_XML, WMS_DELIVERY_ANSWERED,
			       "reply is not XML: its characters do not decode (libxml2 error %d)",
			       quiet->first_code);
	else if (st->ns_msg[0])
		rc = wms__fail(err, WMS_ERR_NOT_XML, WMS_DELIVERY_ANSWERED,
			       "reply is not namespace-well-formed XML: %s", st->ns_msg);
	else
		rc = wms__fail(err, WMS_ERR_NOT_XML, WMS_DELIVERY_ANSWERED,
			       "reply is not well-formed XML");
	return rc;
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
	rc = outcome(st, ctxt, &quiet, parsed, feed_decode_errors, undecoded, html_type, len, err);
	if (ctxt)
		ctxt->_private = NULL;
	if (rc == WMS_OK)
		st->dirty = 0;
	wms__xml_quiet_end(&quiet);
	if (rc == WMS_OK)
		link_elements(st);
	return rc;
}

/* After the last reader of this parse (wms__check_reply, the fault reader) is
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

/* What a reply must be checked for: a typed operation's (gen NULL), or a
 * generic call's, whose answer is read from a tree into *gen->out. */
typedef struct generic_want {
	const char *ns, *name;
	struct _xmlDoc **out;
} generic_want;

static wms_status parse_reply(wms__parse_ws *ws, wms__op op, const generic_want *gen, void *out,
			      const char *buf, size_t len, const char *content_type,
			      size_t max_bytes, uint64_t deadline_ns, wms_error *err)
{
	char charset[WMS__SNIFF_CHARSET_MAX];
	const char *encoding = NULL;
	int html_type;
	wms_status rc;

	if (!gen && ((int)op < 0 || op >= WMS__OP_COUNT))
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_ANSWERED,
				 "parsing a reply: unknown operation %d", (int)op);
	if (!gen && out)
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

	html_type = wms__media_is_html(content_type);
	/* The bytes (soap/sniff.c), the parse, then the reply (soap/reply.c). */
	if ((rc = wms__sniff_reply(buf, len, content_type, deadline_ns, charset, &encoding, err)) !=
	    WMS_OK)
		return rc;
	if ((rc = parse_xml(ws, buf, len, encoding, html_type, deadline_ns, err)) != WMS_OK)
		return rc;
	if (!gen)
		return wms__check_reply(op, out, &ws->st.els[0], html_type, err);
	if ((rc = wms__check_generic(&ws->st.els[0], html_type, gen->ns, gen->name, err)) != WMS_OK)
		return rc;
	/* Checked whole (limits, safety, envelope, fault): now the tree. */
	return wms__generic_answer(gen->out, buf, len, encoding, err);
}

/* parse_reply through ws's parser part (made on first use; none, or no
 * memory for one: a temporary that keeps nothing). */
static wms_status parse_in(wms__xml_ws *ws, wms__op op, const generic_want *gen, void *out,
			   const char *buf, size_t len, const char *content_type,
			   size_t max_bytes, uint64_t deadline_ns, wms_error *err)
{
	wms__parse_ws tmp, *p = NULL;
	wms_status rc;

	if (ws && !ws->parse)
		ws->parse = wms__calloc(1, sizeof(*ws->parse));
	if (ws)
		p = ws->parse;
	if (!p) {
		memset(&tmp, 0, sizeof(tmp));
		p = &tmp;
	}
	rc = parse_reply(p, op, gen, out, buf, len, content_type, max_bytes, deadline_ns, err);
	/* Every reader of the parse's names and arrays has returned. */
	release(p, p == &tmp);
	return rc;
}

wms_status wms__parse_reply_ws(wms__xml_ws *ws, wms__op op, void *out, const char *buf,
			       size_t len, const char *content_type, size_t max_bytes,
			       uint64_t deadline_ns, wms_error *err)
{
	return parse_in(ws, op, NULL, out, buf, len, content_type, max_bytes, deadline_ns, err);
}

wms_status wms__parse_generic_ws(struct _xmlDoc **out, wms__xml_ws *ws, const char *want_ns,
				 const char *want_name, const char *buf, size_t len,
				 const char *content_type, size_t max_bytes, uint64_t deadline_ns,
				 wms_error *err)
{
	generic_want gen = { want_ns, want_name, out };
	*out = NULL;
	return parse_in(ws, WMS__OP_COUNT, &gen, NULL, buf, len, content_type, max_bytes,
			deadline_ns, err);
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
