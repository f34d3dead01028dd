/* Request envelopes, built with libxml2's tree API and serialised by it as
 * UTF-8. Stable prefixes: soap (1.1) or soap12 (1.2) for the envelope, wh
 * for urn:libwms:warehouse:1, both declared on the Envelope. A Header only
 * for WS-Security. */
#include <stdio.h>
#include <string.h>
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/xmlerror.h>
#include <libxml/xmlsave.h>
#include "soap/soap.h"
#include "soap/wsse.h"
#include "util/num.h"

/* ---- building -------------------------------------------------------------- */

/*
 * A request's tree is built by walking it with a cursor (put/enter/leave):
 * put() reuses the element standing where the next one goes when it has the
 * same name, and makes one otherwise; leave() frees whatever of the old
 * children was not reused. On an empty request element that builds the tree
 * from scratch; on the tree of this workspace's last request for the same
 * operation it changes only what differs - the text of the values, the
 * number of lines - and the envelope around it is kept. Either way the tree
 * and so the serialised bytes are the same; tests check both byte for byte.
 */

/* One put of a tree walk: the element's name (the literal the walk passes)
 * and whether it carries a value (a text node) or is a container. */
typedef struct tput {
	const char *name;
	int valued;
} tput;

typedef struct envelope {
	xmlDocPtr doc;
	xmlNsPtr soap, wh;
	xmlNodePtr body;
	xmlNodePtr request; /* the Body's child, e.g. wh:SubmitOrderRequest */
	wms_soap_version v;
	int failed; /* libxml2 could not allocate: the tree is not to be trusted */
	/* A kept envelope's frame (see "The frame"): the bytes libxml2 wrote
	 * before the request element, then those after it; NULL until known. */
	char *frame;
	size_t frame_len, frame_split;
	size_t last_len; /* the last envelope's length: the next one's buffer */
	/* A kept envelope's puts (see "The template"): this tree walk's and
	 * the one before's (NULL until a walk is traced; `over` when a walk
	 * had more than WMS__TEMPLATE_MAX_PUTS), and the template learnt for
	 * one shape: its puts, its static parts back to back and where each
	 * part ends (tpl_end[i], i = 0..slots). */
	tput *trace, *prev;
	size_t trace_n, prev_n;
	int trace_over, prev_over;
	tput *tpl_puts;
	size_t tpl_n, tpl_slots;
	char *tpl_bytes;
	size_t *tpl_end;
	/* while a template is written: the next put, the next slot */
	int emitting;
	size_t emit_put, emit_slot;
	xmlOutputBufferPtr emit_out;
} envelope;

/* The builder's part of a workspace: each operation's last envelope. */
struct wms__build_ws {
	envelope env[WMS__OP_COUNT];
	/* A save context kept between calls (creating one costs about a tenth
	 * of a serialisation); it writes into `sink`, handed to the caller. */
	xmlSaveCtxtPtr save;
	wms__buf sink;
	/* An output buffer kept between calls that writes templates, values
	 * escaped by libxml2 (xmlOutputBufferWriteEscape), into `sink` too. */
	xmlOutputBufferPtr out;
};

/*
 * Lifetimes:
 *  - envelope.soap, .wh, .body and .request belong to envelope.doc and are
 *    valid until envelope_drop() frees it; every drop goes through that
 *    function, which zeroes them all. The trees have no dictionary (names
 *    are each node's own copies), so nothing outlives or is shared by them.
 *  - envelope.frame is a copy of bytes libxml2 wrote, owned by the envelope.
 *  - ws->save writes through write_cb into ws->sink, the struct itself (its
 *    buffer is handed to the caller after each call and the struct
 *    zeroed): the context must not outlive the workspace, which frees it
 *    first, nor write anywhere else. A context made for a call without a
 *    workspace writes into the caller's `out` and is closed in serialise().
 *  - A kept context that saw an error is closed, never reused (libxml2's
 *    output buffer keeps its error and writes nothing after it).
 *  - A call's scratch envelope (no workspace) is dropped in finish().
 */

/* Kept trees whose envelope came out larger are dropped after the call
 * (a 1000-line order must not pin its tree in a client's pool). */
#define KEEP_BODY_BYTES 16384

static void template_drop(envelope *e)
{
	wms__free(e->tpl_puts);
	wms__free(e->tpl_bytes);
	wms__free(e->tpl_end);
	e->tpl_puts = NULL;
	e->tpl_bytes = NULL;
	e->tpl_end = NULL;
	e->tpl_n = e->tpl_slots = 0;
}

static void envelope_drop(envelope *e)
{
	if (e->doc)
		xmlFreeDoc(e->doc);
	wms__free(e->frame);
	template_drop(e);
	wms__free(e->trace);
	wms__free(e->prev);
	memset(e, 0, sizeof(*e));
}

#define X(s) ((const xmlChar *)(s))

/* A new document: Envelope, Body and the empty request element `name`. */
static wms_status envelope_new(envelope *e, wms_soap_version v, const char *name)
{
	xmlNodePtr root;

	memset(e, 0, sizeof(*e));
	e->v = v;
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
		e->soap = xmlNewNs(root, X(WMS__SOAP12_NS), X("soap12"));
	else
		e->soap = xmlNewNs(root, X(WMS__SOAP11_NS), X("soap"));
	if (!e->soap)
		return WMS_ERR_NOMEM;
	xmlSetNs(root, e->soap);
	if (!(e->wh = xmlNewNs(root, X(WMS__NS), X(WMS__NS_PREFIX))))
		return WMS_ERR_NOMEM;
	if (!(e->body = xmlNewChild(root, e->soap, X("Body"), NULL)))
		return WMS_ERR_NOMEM;
	if (!(e->request = xmlNewChild(e->body, e->wh, X(name), NULL)))
		return WMS_ERR_NOMEM;
	return WMS_OK;
}

/* The envelope for operation `name` in version v: the workspace's kept one
 * (its request element's content to be walked over), or a new one. With
 * WS-Security a fresh Header goes before the Body every time. */
static wms_status envelope_get(envelope **out, envelope *scratch, wms__build_ws *bws,
			       wms__op op, wms_soap_version v, const wms__wsse *wsse)
{
	envelope *e = bws ? &bws->env[op] : scratch;
	xmlNodePtr header;
	wms_status rc;

	*out = e;
	if (e->doc && e->v != v)
		envelope_drop(e);
	if (!e->doc && (rc = envelope_new(e, v, wms__op_get(op)->request)) != WMS_OK)
		return rc;
	/* Drop the last call's Header (a new nonce each message), add a new one. */
	while ((header = e->body->prev) != NULL) {
		xmlUnlinkNode(header);
		xmlFreeNode(header);
	}
	if (wsse && wsse->mode != WMS_WSSE_NONE) {
		if (!(header = xmlNewDocNode(e->doc, e->soap, X("Header"), NULL)))
			return WMS_ERR_NOMEM;
		if (!xmlAddPrevSibling(e->body, header)) {
			xmlFreeNode(header);
			return WMS_ERR_NOMEM;
		}
		if ((rc = wms__wsse_add(header, e->soap, wsse)) != WMS_OK)
			return rc;
	}
	return WMS_OK;
}

/* Where the next element goes: under `parent`, at `at` (NULL: at the end). */
typedef struct spot {
	envelope *e;
	xmlNodePtr parent, at;
} spot;

static spot enter(envelope *e, xmlNodePtr el)
{
	spot s;
	s.e = e;
	s.parent = el;
	s.at = el ? el->children : NULL;
	return s;
}

/* Free the old children that were not walked over. */
static void leave(spot *s)
{
	while (s->at) {
		xmlNodePtr gone = s->at;
		s->at = gone->next;
		xmlUnlinkNode(gone);
		xmlFreeNode(gone);
	}
}

/* The element's content becomes exactly `value` (NULL: no text, for a
 * container). Text is stored raw and escaped on output. */
static int set_text(envelope *e, xmlNodePtr el, const char *value)
{
	xmlNodePtr t = el->children;
	if (!value)
		return 1;
	if (t && t->type == XML_TEXT_NODE && !t->next) {
		if (t->content && !strcmp((const char *)t->content, value))
			return 1;
		xmlNodeSetContent(t, X(value));
		return t->content != NULL;
	}
	while ((t = el->children) != NULL) {
		xmlUnlinkNode(t);
		xmlFreeNode(t);
	}
	if (!(t = xmlNewDocText(e->doc, X(value))))
		return 0;
	if (!xmlAddChild(el, t)) {
		xmlFreeNode(t);
		return 0;
	}
	return 1;
}

/* <wh:name>value</wh:name> at s, reusing the element there if it has that
 * name. NULL (and e->failed) when libxml2 runs out of memory. */
static xmlNodePtr emit_put(envelope *e, const char *name, const char *value);
static void template_learn(envelope *e, wms__build_ws *ws, size_t len, wms__xml_quiet *quiet);

static xmlNodePtr put(spot *s, const char *name, const char *value)
{
	envelope *e = s->e;
	xmlNodePtr el = s->at;

	if (e->emitting)
		return emit_put(e, name, value);
	if (e->failed)
		return NULL;
	if (e->trace) {
		if (e->trace_n < WMS__TEMPLATE_MAX_PUTS) {
			e->trace[e->trace_n].name = name;
			e->trace[e->trace_n].valued = value != NULL;
			e->trace_n++;
		} else {
			e->trace_over = 1;
		}
	}
	if (el && el->type == XML_ELEMENT_NODE && el->ns == e->wh &&
	    !strcmp((const char *)el->name, name)) {
		s->at = el->next;
	} else {
		if (!(el = xmlNewDocNode(e->doc, e->wh, X(name), NULL)))
			goto nomem;
		if (!(s->at ? xmlAddPrevSibling(s->at, el) : xmlAddChild(s->parent, el))) {
			xmlFreeNode(el);
			goto nomem;
		}
	}
	if (!value) {
		/* a container: no text of its own */
		if (el->children && el->children->type == XML_TEXT_NODE) {
			spot inner = enter(e, el);
			leave(&inner);
		}
	} else if (!set_text(e, el, value)) {
		goto nomem;
	}
	return el;
nomem:
	e->failed = 1;
	return NULL;
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

/*
 * The frame. Between two calls a kept envelope changes only inside its
 * request element (a WS-Security Header aside: that is new every message),
 * so what libxml2 writes around that element - the XML declaration, the
 * Envelope start tag with its namespace declarations, the Body's tags - is
 * the same every time. The first time, a kept envelope without a Header is
 * serialised whole (xmlSaveDoc); the request element is then serialised on
 * its own (xmlSaveTree, same save context) and the frame is what the whole
 * document has around those bytes. Later calls have libxml2 serialise the
 * request element alone between the frame's two halves: xmlSaveDoc's bytes,
 * byte for byte (tests compare every shape against a tree built from
 * scratch), for about a fifth less work per envelope. The save context
 * escapes text as xmlSaveDoc does in a document declared UTF-8 (markup
 * escaped, other characters as they are), which is what it sets itself for
 * the length of a xmlSaveDoc and what xmlSaveSetEscape(NULL) sets for good.
 */

/* The save context: ws's kept one, or a new one (NULL: no memory). */
static xmlSaveCtxtPtr save_ctx(wms__build_ws *ws, wms__buf *sink)
{
	xmlSaveCtxtPtr save = ws ? ws->save : NULL;
	if (!save && (save = xmlSaveToIO(write_cb, close_cb, sink, NULL, XML_SAVE_AS_XML)) != NULL &&
	    xmlSaveSetEscape(save, NULL) != 0) {
		xmlSaveClose(save);
		save = NULL;
	}
	return save;
}

/* Learn e's frame from `full`, the whole document just written through
 * ws's save context: serialise the request element alone (into ws->sink,
 * left empty) and keep what surrounds it. Nothing is learnt if anything
 * fails, and what libxml2 reported meanwhile is not the call's: the
 * envelope in `full` is sound either way. */
static void learn_frame(envelope *e, wms__build_ws *ws, const wms__buf *full,
			wms__xml_quiet *quiet)
{
	wms__xml_quiet before = *quiet;
	wms__buf *req = &ws->sink;
	const char *at = NULL;

	if (!ws->save)
		return;
	req->len = 0;
	if (xmlSaveTree(ws->save, e->request) < 0 || xmlSaveFlush(ws->save) < 0 ||
	    quiet->errors != before.errors) {
		xmlSaveClose(ws->save); /* its output buffer's error sticks */
		ws->save = NULL;
		wms__buf_free(req);
		*quiet = before;
		return;
	}
	if (req->len)
		at = wms__find(full->data, full->data + full->len, req->data, req->len);
	if (at && (e->frame = wms__malloc(full->len - req->len + 1)) != NULL) {
		e->frame_split = (size_t)(at - full->data);
		e->frame_len = full->len - req->len;
		memcpy(e->frame, full->data, e->frame_split);
		memcpy(e->frame + e->frame_split, at + req->len, e->frame_len - e->frame_split);
	}
	wms__buf_free(req);
}

/* Serialise e with its XML declaration into `out`: through ws's kept save
 * context when there is a workspace (inside the frame once it is known),
 * else through one made for the call. A kept context that failed is closed
 * (its output buffer's error sticks) and a new one made next time. */
static wms_status serialise(wms__buf *out, envelope *e, wms__build_ws *ws)
{
	wms__buf *sink = ws ? &ws->sink : out;
	xmlSaveCtxtPtr save = save_ctx(ws, sink);
	int framed = ws && e->frame && !e->body->prev;
	long rc = -1;
	int end_rc;

	if (!save)
		return WMS_ERR_NOMEM;
	sink->len = 0;
	if (!framed)
		rc = xmlSaveDoc(save, e->doc);
	else if (wms__buf_reserve(sink, e->last_len) == WMS_OK &&
		 wms__buf_append(sink, e->frame, e->frame_split) == WMS_OK)
		rc = xmlSaveTree(save, e->request);
	if (ws && rc >= 0 && (end_rc = xmlSaveFlush(save)) >= 0) {
		ws->save = save;
	} else {
		end_rc = xmlSaveClose(save);
		if (ws)
			ws->save = NULL;
	}
	/* The request element is never empty: nothing after the frame's first
	 * half means libxml2 wrote nothing (see finish). */
	if (framed && rc >= 0 && end_rc >= 0 &&
	    (sink->len <= e->frame_split ||
	     wms__buf_append(sink, e->frame + e->frame_split, e->frame_len - e->frame_split) != WMS_OK))
		rc = -1;
	if (rc < 0 || end_rc < 0 || !sink->len) {
		if (ws)
			wms__buf_free(sink);
		return WMS_ERR_NOMEM;
	}
	if (ws) {
		*out = *sink;
		memset(sink, 0, sizeof(*sink));
		e->last_len = out->len;
	}
	return WMS_OK;
}

/* Serialise e->doc into *out, end the quiet guard the builder started, and
 * keep the tree for the next call only if it is a workspace's and sound;
 * on failure report `rc`. */
static wms_status finish(wms__buf *out, envelope *e, wms__build_ws *kept, wms_status rc,
			 wms__op op, wms__xml_quiet *quiet, wms_error *err)
{
	wms__buf body = { NULL, 0, 0 };

	if (rc == WMS_OK && e->failed)
		rc = WMS_ERR_NOMEM;
	if (rc == WMS_OK)
		rc = serialise(&body, e, kept);
	/* libxml2 sometimes reports a failure (e.g. out of memory while
	 * encoding) and carries on: never hand out such an envelope. */
	if (rc == WMS_OK && quiet->errors)
		rc = quiet->nomem ? WMS_ERR_NOMEM : WMS_ERR_INTERNAL;
	/* An output buffer that could not grow keeps its error and writes
	 * nothing ever after, while the save functions go on returning
	 * success: a kept save context that saw any libxml2 error goes. */
	if (kept && kept->save && quiet->errors) {
		xmlSaveClose(kept->save);
		kept->save = NULL;
	}
	if (rc == WMS_OK && kept && !e->frame && !e->body->prev && body.len <= KEEP_BODY_BYTES)
		learn_frame(e, kept, &body, quiet);
	if (rc == WMS_OK && kept && !quiet->errors)
		template_learn(e, kept, body.len, quiet);
	if (!kept || rc != WMS_OK || quiet->errors || body.len > KEEP_BODY_BYTES)
		envelope_drop(e);
	wms__xml_quiet_end(quiet);
	if (rc != WMS_OK) {
		wms__buf_free(&body);
		return wms__fail(err, rc, WMS_DELIVERY_NOT_SENT, "building the %s request: %s",
				 wms__op_name(op), wms_strerror(rc));
	}
	*out = body;
	return WMS_OK;
}

/*
 * The template. A kept envelope without a Header that has been built twice
 * in a row with the same shape - the same puts, in order: which optional
 * fields, how many lines or SKUs - learns what libxml2 writes for that
 * shape: its tree is serialised whole (xmlSaveDoc, the kept save context)
 * with every value's text swapped for "<", which libxml2 writes as "&lt;"
 * and which nothing else in an envelope contains (names, prefixes, the two
 * namespace URIs and the XML declaration have no '&'); the bytes between
 * those are the template's static parts. While the shape stays the same a
 * request is then written as those parts with each value between them,
 * escaped by libxml2 (xmlOutputBufferWriteEscape with no escaping function
 * is xmlEscapeContent, what the save context's text output calls with
 * xmlSaveSetEscape(NULL) in a document declared UTF-8: markup escaped,
 * other characters as they are). The same walk (submit_order_body and the
 * rest) drives both: put() checks each put against the template's, and
 * any difference - another field, one line more or fewer - stops the
 * writing and the tree is walked as before. The shape of a walk is its
 * puts alone: each operation nests its elements in one fixed way, so the
 * same puts in the same order are the same tree. The bytes are xmlSaveDoc's
 * of the same tree (test_build_diff compares 100 000 random requests).
 * Shapes of more than WMS__TEMPLATE_MAX_PUTS puts, or envelopes over
 * KEEP_BODY_BYTES, get none: a template is learnt only from an envelope
 * of KEEP_BODY_BYTES or less. Once learnt it also writes envelopes past
 * that (longer values of the same shape) and stays: what it keeps is its
 * own, learnt at the bound or under it, and the envelope it wrote is the
 * caller's (test_build's workspace_template_escaped_past_keep_body_bytes).
 */

static const xmlChar template_marker[] = "<";
static const char template_marker_out[] = "&lt;";

/* Put `name` (value: NULL for a container) while writing a template:
 * the next put of the template's shape, or the end of the writing. */
static xmlNodePtr emit_put(envelope *e, const char *name, const char *value)
{
	const tput *t = &e->tpl_puts[e->emit_put];
	size_t from, to;

	if (e->failed)
		return NULL;
	if (e->emit_put >= e->tpl_n || t->name != name || t->valued != (value != NULL)) {
		e->failed = 2; /* another shape */
		return NULL;
	}
	e->emit_put++;
	if (!value)
		return NULL;
	from = e->tpl_end[e->emit_slot];
	to = e->tpl_end[++e->emit_slot];
	/* (libxml2 answers -1 for an empty string, and writes nothing for it) */
	if ((*value && xmlOutputBufferWriteEscape(e->emit_out, X(value), NULL) < 0) ||
	    xmlOutputBufferWrite(e->emit_out, (int)(to - from), e->tpl_bytes + from) < 0)
		e->failed = 1;
	return NULL;
}

static void walk_request(spot *s, const wms__request *r);

/* Write request r from e's template into *out: 1 done, 0 another shape
 * (nothing written, the tree is to be walked), -1 out of memory. */
static int template_write(envelope *e, wms__build_ws *ws, const wms__request *r, wms__buf *out)
{
	spot s;
	int rc;

	if (!ws->out &&
	    !(ws->out = xmlOutputBufferCreateIO(write_cb, close_cb, &ws->sink, NULL)))
		return -1;
	ws->sink.len = 0;
	if (wms__buf_reserve(&ws->sink, e->last_len) != WMS_OK)
		return -1;
	e->emitting = 1;
	e->emit_out = ws->out;
	e->emit_put = 0;
	e->emit_slot = 0;
	e->failed = 0;
	if (xmlOutputBufferWrite(ws->out, (int)e->tpl_end[0], e->tpl_bytes) < 0)
		e->failed = 1;
	s.e = e;
	s.parent = s.at = NULL;
	walk_request(&s, r);
	if (!e->failed && e->emit_put != e->tpl_n)
		e->failed = 2;
	e->emitting = 0;
	e->emit_out = NULL;
	if (!e->failed && xmlOutputBufferFlush(ws->out) < 0)
		e->failed = 1;
	rc = e->failed == 0 ? 1 : e->failed == 2 ? 0 : -1;
	e->failed = 0;
	if (rc != 1) {
		/* what it holds is not to be sent; an output buffer that failed
		 * keeps its error: it goes */
		if (rc < 0 || ws->out->error) {
			xmlOutputBufferClose(ws->out);
			ws->out = NULL;
		} else {
			xmlOutputBufferFlush(ws->out);
		}
		wms__buf_free(&ws->sink);
		return rc;
	}
	*out = ws->sink;
	memset(&ws->sink, 0, sizeof(ws->sink));
	e->last_len = out->len;
	return 1;
}

/* The node after n in document order among root's descendants; NULL after
 * the last. */
static xmlNodePtr next_under(xmlNodePtr n, xmlNodePtr root)
{
	if (n->children && n->type == XML_ELEMENT_NODE)
		return n->children;
	while (!n->next && n->parent != root)
		n = n->parent;
	return n->next;
}

/* Field by field: a tput's padding is never written. */
static int same_puts(const tput *a, const tput *b, size_t n)
{
	size_t i;
	for (i = 0; i < n; i++)
		if (a[i].name != b[i].name || a[i].valued != b[i].valued)
			return 0;
	return 1;
}

/* After a tree walk of e that was serialised into an envelope of `len`
 * bytes: keep this walk's puts, and learn its template if the walk before
 * had the same ones. What fails here costs only the template. */
static void template_learn(envelope *e, wms__build_ws *ws, size_t len, wms__xml_quiet *quiet)
{
	wms__xml_quiet before = *quiet;
	xmlChar **saved = NULL;
	xmlNodePtr n;
	tput *swap;
	size_t slots = 0, texts = 0, i, k, at;
	int same, found;

	if (!e->trace)
		return;
	same = !e->trace_over && !e->prev_over && e->trace_n && e->trace_n == e->prev_n &&
	       same_puts(e->trace, e->prev, e->trace_n) &&
	       !(e->tpl_n == e->trace_n && same_puts(e->tpl_puts, e->trace, e->trace_n));
	/* this walk becomes the one before */
	swap = e->prev;
	e->prev = e->trace;
	e->trace = swap;
	e->prev_n = e->trace_n;
	e->prev_over = e->trace_over;
	e->trace_n = 0;
	e->trace_over = 0;
	if (!same || e->body->prev || len > KEEP_BODY_BYTES || !ws->save)
		return;
	for (i = 0; i < e->prev_n; i++)
		slots += e->prev[i].valued ? 1u : 0u;
	template_drop(e);
	if (!(saved = wms__calloc(slots ? slots : 1, sizeof(*saved))))
		return;
	/* every value's text, in document order, swapped for the marker */
	for (n = e->request->children, k = 0; n; n = next_under(n, e->request)) {
		if (n->type == XML_TEXT_NODE && texts++ < slots) {
			saved[k++] = n->content;
			n->content = (xmlChar *)(uintptr_t)template_marker;
		}
	}
	ws->sink.len = 0;
	found = xmlSaveDoc(ws->save, e->doc) >= 0 && xmlSaveFlush(ws->save) >= 0 &&
		quiet->errors == before.errors;
	/* the tree's own text back, whatever happened */
	for (n = e->request->children, i = 0; n && i < k; n = next_under(n, e->request))
		if (n->type == XML_TEXT_NODE)
			n->content = saved[i++];
	wms__free(saved);
	if (!found) {
		xmlSaveClose(ws->save); /* its output buffer's error sticks */
		ws->save = NULL;
		wms__buf_free(&ws->sink);
		*quiet = before;
		return;
	}
	if (texts != slots)
		goto out;
	e->tpl_bytes = wms__malloc(ws->sink.len + 1);
	e->tpl_end = wms__malloc((slots + 1) * sizeof(*e->tpl_end));
	e->tpl_puts = wms__malloc(e->prev_n * sizeof(*e->tpl_puts));
	if (!e->tpl_bytes || !e->tpl_end || !e->tpl_puts)
		goto out;
	/* split at each marker: exactly one per value, and no other */
	for (at = 0, i = 0, k = 0; at < ws->sink.len;) {
		const char *m = wms__find(ws->sink.data + at, ws->sink.data + ws->sink.len,
					  template_marker_out, sizeof(template_marker_out) - 1);
		size_t part = m ? (size_t)(m - (ws->sink.data + at)) : ws->sink.len - at;
		memcpy(e->tpl_bytes + i, ws->sink.data + at, part);
		i += part;
		at += part;
		if (!m)
			break;
		if (k == slots)
			goto out;
		e->tpl_end[k++] = i;
		at += sizeof(template_marker_out) - 1;
	}
	if (k != slots)
		goto out;
	e->tpl_end[slots] = i;
	memcpy(e->tpl_puts, e->prev, e->prev_n * sizeof(*e->tpl_puts));
	e->tpl_n = e->prev_n;
	e->tpl_slots = slots;
	wms__buf_free(&ws->sink);
	return;
out:
	template_drop(e);
	wms__buf_free(&ws->sink);
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

/* The request element's content for each operation (inputs validated). */

static void submit_order_body(spot *s, const wms_order *order)
{
	const wms_address *a = &order->ship_to;
	spot to, ls, l;
	char qty[WMS__UINT_TEXT_MAX];
	size_t i;

	put(s, "clientOrderId", order->order_id);
	to = enter(s->e, put(s, "shipTo", NULL));
	put(&to, "name", a->name);
	put(&to, "line1", a->line1);
	if (a->line2 && *a->line2)
		put(&to, "line2", a->line2);
	put(&to, "city", a->city);
	if (a->region && *a->region)
		put(&to, "region", a->region);
	put(&to, "postalCode", a->postal_code);
	put(&to, "country", a->country);
	leave(&to);
	put(s, "priority", priority_name(order->priority));
	ls = enter(s->e, put(s, "lines", NULL));
	for (i = 0; i < order->line_count && !s->e->failed; i++) {
		wms__format_uint(qty, order->lines[i].quantity, 0);
		l = enter(s->e, put(&ls, "line", NULL));
		put(&l, "sku", order->lines[i].sku);
		put(&l, "quantity", qty);
		leave(&l);
	}
	leave(&ls);
}

static void stock_level_body(spot *s, const char *const *skus, size_t n)
{
	size_t i;
	for (i = 0; i < n && !s->e->failed; i++)
		put(s, "sku", skus[i]);
}

/* The request element's content: the tree walked over, or (e->emitting)
 * the template written. */
static void walk_request(spot *s, const wms__request *r)
{
	switch (r->op) {
	case WMS__OP_SUBMIT_ORDER:
		submit_order_body(s, r->order);
		break;
	case WMS__OP_GET_ORDER_STATUS:
		put(s, "clientOrderId", r->order_id);
		break;
	case WMS__OP_CANCEL_ORDER:
		put(s, "clientOrderId", r->order_id);
		if (r->reason && *r->reason)
			put(s, "reason", r->reason);
		break;
	case WMS__OP_GET_STOCK_LEVEL:
		stock_level_body(s, r->skus, r->sku_count);
		break;
	case WMS__OP_COUNT:
		break;
	}
}

/* Validate (cheap, no allocation: no caller can make a builder emit an
 * envelope the WMS would reject as malformed), then build the request. */
static wms_status build(wms__build_ws *bws, wms__buf *out, wms_soap_version v,
			const wms__request *r, const wms__wsse *wsse, wms_error *err)
{
	envelope scratch, *e;
	wms__xml_quiet quiet;
	wms_status rc;
	spot s;

	wms__xml_init();
	if ((rc = check_args(out, v, err)) != WMS_OK)
		return rc;
	switch (r->op) {
	case WMS__OP_SUBMIT_ORDER:
		rc = wms__validate_order(r->order, err);
		break;
	case WMS__OP_GET_ORDER_STATUS:
		rc = wms__validate_order_id(r->order_id, err);
		break;
	case WMS__OP_CANCEL_ORDER:
		if ((rc = wms__validate_order_id(r->order_id, err)) == WMS_OK)
			rc = wms__validate_reason(r->reason, err);
		break;
	case WMS__OP_GET_STOCK_LEVEL:
		rc = wms__validate_skus(r->skus, r->sku_count, err);
		break;
	case WMS__OP_COUNT:
	default:
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "unknown operation");
	}
	if (rc != WMS_OK)
		return rc;
	memset(&scratch, 0, sizeof(scratch));
	wms__xml_quiet_begin(&quiet);
	rc = envelope_get(&e, &scratch, bws, r->op, v, wsse);
	if (rc == WMS_OK && e != &scratch && !e->body->prev) {
		int w = e->tpl_n ? template_write(e, bws, r, out) : 0;
		if (w > 0 && !quiet.errors) {
			wms__xml_quiet_end(&quiet);
			return WMS_OK;
		}
		if (w > 0)
			wms__buf_free(out);
		if (w != 0 || quiet.errors)
			rc = quiet.nomem || w < 0 ? WMS_ERR_NOMEM : WMS_ERR_INTERNAL;
		/* trace this walk's puts (no memory: no template, that is all) */
		if (rc == WMS_OK && !e->trace) {
			e->trace = wms__malloc(WMS__TEMPLATE_MAX_PUTS * sizeof(*e->trace));
			e->prev = wms__malloc(WMS__TEMPLATE_MAX_PUTS * sizeof(*e->prev));
			if (!e->trace || !e->prev) {
				wms__free(e->trace);
				wms__free(e->prev);
				e->trace = e->prev = NULL;
			}
		}
		e->trace_n = 0;
		e->trace_over = 0;
	}
	if (rc == WMS_OK) {
		s = enter(e, e->request);
		walk_request(&s, r);
		leave(&s);
	}
	return finish(out, e, e != &scratch ? bws : NULL, rc, r->op, &quiet, err);
}

/* ---- the internal API (src/soap/soap.h) ---------------------------------------- */

wms_status wms__build_submit_order(wms__buf *out, wms_soap_version v, const wms_order *order,
				   wms_error *err)
{
	wms__request r = { WMS__OP_SUBMIT_ORDER, order, NULL, NULL, NULL, 0 };
	return build(NULL, out, v, &r, NULL, err);
}

wms_status wms__build_get_order_status(wms__buf *out, wms_soap_version v,
				       const char *order_id, wms_error *err)
{
	wms__request r = { WMS__OP_GET_ORDER_STATUS, NULL, order_id, NULL, NULL, 0 };
	return build(NULL, out, v, &r, NULL, err);
}

wms_status wms__build_cancel_order(wms__buf *out, wms_soap_version v, const char *order_id,
				   const char *reason, wms_error *err)
{
	wms__request r = { WMS__OP_CANCEL_ORDER, NULL, order_id, reason, NULL, 0 };
	return build(NULL, out, v, &r, NULL, err);
}

wms_status wms__build_get_stock_level(wms__buf *out, wms_soap_version v,
				      const char *const *skus, size_t n, wms_error *err)
{
	wms__request r = { WMS__OP_GET_STOCK_LEVEL, NULL, NULL, NULL, skus, n };
	return build(NULL, out, v, &r, NULL, err);
}

wms_status wms__build_request(wms__buf *out, wms_soap_version v, const wms__request *r,
			      const wms__wsse *wsse, wms_error *err)
{
	return wms__build_request_ws(NULL, out, v, r, wsse, err);
}

wms_status wms__build_request_ws(wms__xml_ws *ws, wms__buf *out, wms_soap_version v,
				 const wms__request *r, const wms__wsse *wsse, wms_error *err)
{
	wms_status rc = wms__wsse_check(wsse, err);
	if (rc != WMS_OK)
		return rc;
	if (!r)
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT, "request is NULL");
	if (ws && !ws->build)
		ws->build = wms__calloc(1, sizeof(*ws->build)); /* NULL: build from scratch */
	return build(ws ? ws->build : NULL, out, v, r, wsse, err);
}

void wms__build_ws_free(wms__build_ws *ws)
{
	size_t i;
	if (!ws)
		return;
	for (i = 0; i < WMS__OP_COUNT; i++)
		envelope_drop(&ws->env[i]);
	if (ws->save)
		xmlSaveClose(ws->save);
	if (ws->out)
		xmlOutputBufferClose(ws->out);
	wms__buf_free(&ws->sink);
	wms__free(ws);
}
