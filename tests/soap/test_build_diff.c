/* The request builder, differentially (issue 14): a client's workspace
 * (wms__build_request_ws) must write the very bytes a fresh tree does
 * (wms__build_request: a new document serialised by xmlSaveDoc), for any
 * request validation lets through, whatever came before on the workspace.
 *
 * The workspace may write an envelope from a template learnt per request
 * shape (the sequence of elements: optional fields present, order lines,
 * SKUs) once a shape has been built twice in a row, from the third call on,
 * for shapes of at most WMS__TEMPLATE_MAX_PUTS elements. So the random
 * requests come in runs of one shape with fresh values (some fields now and
 * then the same in the two calls a template would be learnt from, and
 * different after), every value anywhere in its valid range: every code
 * point validation accepts, markup that needs escaping, values at their
 * length limits. Shapes at the template limit and one past it are crossed
 * both ways, on a fresh and on a well-used workspace. A sample of the
 * envelopes, and every one at the limit, is parsed back: the Body's payload
 * validates against wsdl/warehouse.xsd and carries exactly the values
 * given (equal bytes could still both be wrong).
 *
 * The random stream is fixed by a seed, printed; WMS_DIFF_SEED=<n> replays
 * another, WMS_DIFF_REQUESTS=<n> sets how many random requests. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/xmlschemas.h>
#include "soap/soap.h"
#include "build_kind.h"
#include "util.h"

#ifndef WMS__TEMPLATE_MAX_PUTS
#define WMS__TEMPLATE_MAX_PUTS 256 /* until src/soap/soap.h has it */
#endif

#define TEXT_MAX 256u   /* validate.c: address fields and the reason, bytes */
#define QTY_MAX 1000000u
#define TEXT_BUF 320    /* room for the invalid ones too */
#define SLOTS (WMS_MAX_LINES > WMS_MAX_SKUS + 1 ? WMS_MAX_LINES : WMS_MAX_SKUS + 1)
#define MAX_PUTS_EXPECTED (3 * SLOTS + 16)
#define DEFAULT_SEED 0x1d1ff2026ull

static xmlSchemaPtr schema;
static unsigned long long seed;

/* ---- deterministic random numbers (splitmix64) ---- */

static uint64_t rng;

static uint64_t rnd(void)
{
	uint64_t z = (rng += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

static uint32_t below(uint32_t n)
{
	return (uint32_t)(rnd() % n);
}

static uint32_t between(uint32_t lo, uint32_t hi) /* inclusive */
{
	return lo + below(hi - lo + 1);
}

static int one_in(uint32_t n)
{
	return below(n) == 0;
}

/* ---- requests ---- */

enum { T_NAME, T_LINE1, T_LINE2, T_CITY, T_REGION, T_POSTAL, T_REASON, T_COUNT };

/* Groups of values a run may keep from one request to the next. */
enum {
	K_ID = 1u << T_COUNT,
	K_COUNTRY = K_ID << 1,
	K_PRIORITY = K_ID << 2,
	K_SKUS = K_ID << 3,
	K_QTYS = K_ID << 4,
	K_ALL = (K_ID << 5) - 1
};

typedef struct shape {
	wms__op op;
	wms_soap_version v;
	int line2, region; /* SubmitOrder: optional address fields present */
	int reason;        /* CancelOrder: a reason present */
	size_t n;          /* SubmitOrder: lines; GetStockLevel: SKUs */
} shape;

typedef struct request {
	shape s;
	wms__request r;
	wms_order order;
	char order_id[WMS_ID_MAX + 1];
	char text[T_COUNT][TEXT_BUF];
	char country[3];
	char skus[SLOTS][WMS_ID_MAX + 1];
	const char *sku_ptrs[SLOTS];
	wms_order_line lines[SLOTS];
} request;

static int shape_same(const shape *a, const shape *b)
{
	if (a->op != b->op || a->v != b->v)
		return 0;
	switch (a->op) {
	case WMS__OP_SUBMIT_ORDER:
		return a->line2 == b->line2 && a->region == b->region && a->n == b->n;
	case WMS__OP_CANCEL_ORDER:
		return a->reason == b->reason;
	case WMS__OP_GET_STOCK_LEVEL:
		return a->n == b->n;
	default:
		return 1;
	}
}

/* Elements the builder writes inside the request element. */
static size_t shape_puts(const shape *s)
{
	switch (s->op) {
	case WMS__OP_SUBMIT_ORDER:
		/* clientOrderId, shipTo + 5..7 fields, priority, lines, 3 a line */
		return 4 + 5 + (size_t)(s->line2 != 0) + (size_t)(s->region != 0) + 3 * s->n;
	case WMS__OP_CANCEL_ORDER:
		return 1 + (size_t)(s->reason != 0);
	case WMS__OP_GET_STOCK_LEVEL:
		return s->n;
	default:
		return 1;
	}
}

static const char *version_name(wms_soap_version v)
{
	return v == WMS_SOAP_12 ? "1.2" : "1.1";
}

/* ---- values ---- */

static size_t utf8_put(char *d, uint32_t c)
{
	if (c < 0x80) {
		d[0] = (char)c;
		return 1;
	}
	if (c < 0x800) {
		d[0] = (char)(0xC0 | (c >> 6));
		d[1] = (char)(0x80 | (c & 0x3F));
		return 2;
	}
	if (c < 0x10000) {
		d[0] = (char)(0xE0 | (c >> 12));
		d[1] = (char)(0x80 | ((c >> 6) & 0x3F));
		d[2] = (char)(0x80 | (c & 0x3F));
		return 3;
	}
	d[0] = (char)(0xF0 | (c >> 18));
	d[1] = (char)(0x80 | ((c >> 12) & 0x3F));
	d[2] = (char)(0x80 | ((c >> 6) & 0x3F));
	d[3] = (char)(0x80 | (c & 0x3F));
	return 4;
}

/* What validation accepts in text (validate.c, check_text). */
static int cp_ok(uint32_t c)
{
	return c >= 0x20 && !(c >= 0x7F && c <= 0x9F) && !(c >= 0xD800 && c <= 0xDFFF) &&
	       c != 0xFFFE && c != 0xFFFF && c <= 0x10FFFF;
}

/* A code point accepted, encoded in `len` bytes. */
static uint32_t cp_of_len(size_t len)
{
	static const uint32_t lo[] = { 0, 0x20, 0xA0, 0x800, 0x10000 };
	static const uint32_t hi[] = { 0, 0x7E, 0x7FF, 0xFFFF, 0x10FFFF };
	for (;;) {
		uint32_t c = between(lo[len], hi[len]);
		if (cp_ok(c))
			return c;
	}
}

/* Anywhere in U+0020..U+10FFFF (mostly four bytes, as most code points are). */
static uint32_t cp_uniform(void)
{
	for (;;) {
		uint32_t c = between(0x20, 0x10FFFF);
		if (cp_ok(c))
			return c;
	}
}

static const uint32_t cp_edges[] = {
	0x20, 0x7E, 0xA0, 0xFF, 0x100, 0x301, 0x7FF, 0x800, 0xFFF, 0x1000, 0x2028, 0x2029,
	0x200B, 0xD7FF, 0xE000, 0xF8FF, 0xFDD0, 0xFDEF, 0xFEFF, 0xFFFC, 0xFFFD, 0x10000,
	0x1F600, 0x1FFFD, 0x1FFFE, 0x1FFFF, 0x2FFFF, 0xE0001, 0xFFFFD, 0x10FFFD, 0x10FFFE,
	0x10FFFF,
};

/* Markup and look-alikes of the envelope's own bytes. */
static const char *const markup[] = {
	"<", ">", "&", "\"", "'", "]]>", "&amp;", "&lt;", "&gt;", "&quot;", "&apos;", "&#38;",
	"&#x3C;", "&#0;", "&#xD;", "&unknown;", "&", "<![CDATA[", "]]", "]]]>", "<!--", "-->",
	"<?xml version=\"1.0\"?>", "?>", "</wh:name>", "<wh:line1>", "</wh:city><wh:region>",
	"<wh:sku>", "</wh:line></wh:lines>", "xmlns:wh=\"urn:libwms:warehouse:1\"",
	"</soap:Body></soap:Envelope>", "<soap12:Header/>", "&&", "<<>>", "&amp;amp;", "%s%n",
	"\\", "\\0", " ", "  ", "wh:", "=\"\"", "'\"'", "<a b='c'>",
};

enum { FL_ASCII, FL_MARKUP, FL_BY_LENGTH, FL_UNIFORM, FL_EDGES, FL_MIXED, FL_SPACES, FL_COUNT };

/* One piece of text of flavour `fl`, at most `room` bytes, at d; returns
 * its length (at least 1: falls back to one ASCII character). */
static size_t piece(char *d, size_t room, int fl)
{
	char tmp[64];
	size_t n = 0;
	int tries;

	if (fl == FL_MIXED)
		fl = (int)below(FL_MIXED);
	for (tries = 0; tries < 4 && n == 0; tries++) {
		size_t len;
		switch (fl) {
		case FL_MARKUP: {
			const char *m = markup[below(sizeof(markup) / sizeof(markup[0]))];
			len = strlen(m);
			memcpy(tmp, m, len);
			break;
		}
		case FL_BY_LENGTH:
			len = utf8_put(tmp, cp_of_len(between(1, 4)));
			break;
		case FL_UNIFORM:
			len = utf8_put(tmp, cp_uniform());
			break;
		case FL_EDGES:
			len = utf8_put(tmp, cp_edges[below(sizeof(cp_edges) / sizeof(cp_edges[0]))]);
			break;
		case FL_SPACES:
			tmp[0] = ' ';
			len = 1;
			break;
		default:
			len = utf8_put(tmp, cp_of_len(1));
			break;
		}
		if (len <= room) {
			memcpy(d, tmp, len);
			n = len;
		}
	}
	if (n == 0)
		d[n++] = (char)cp_of_len(1);
	return n;
}

/* Text of exactly `target` bytes (NUL-terminated) of one flavour. */
static void text_of(char *d, size_t target, int fl)
{
	size_t len = 0;
	while (len < target)
		len += piece(d + len, target - len, fl);
	d[len] = '\0';
}

/* A valid text value, at most `cap` bytes (TEXT_MAX for any). */
static void text_random(char *d, size_t cap)
{
	int fl = (int)below(FL_COUNT);
	size_t target;
	char one[8];

	switch (below(20)) {
	case 0:
	case 1:
	case 2:
		target = cap; /* the limit, exactly */
		break;
	case 3:
		target = cap > 3 ? between((uint32_t)cap - 3, (uint32_t)cap - 1) : cap;
		break;
	case 4:
	case 5: /* one character, of any length */
		if (fl == FL_SPACES || fl == FL_MARKUP)
			fl = FL_BY_LENGTH;
		target = piece(one, sizeof(one), fl);
		memcpy(d, one, target);
		d[target] = '\0';
		return;
	default:
		target = between(1, one_in(3) ? (uint32_t)cap : (cap < 24 ? (uint32_t)cap : 24));
		break;
	}
	text_of(d, target, fl);
}

static const char id_chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._:-";

static const char *const tricky_ids[] = {
	"wh:sku", "sku", "quantity", "line", "1000000", "1", "STANDARD", "EXPRESS", "OVERNIGHT",
	"wh:line", "soap:Body", "-", ".", ":", "_", "...", "::", "urn:libwms:warehouse:1", "GB",
};

static void id_random(char *d, size_t cap)
{
	size_t len, i;
	int digits = one_in(8);
	if (one_in(12)) {
		const char *t = tricky_ids[below(sizeof(tricky_ids) / sizeof(tricky_ids[0]))];
		if (strlen(t) <= cap) {
			strcpy(d, t);
			return;
		}
	}
	switch (below(10)) {
	case 0:
		len = 1;
		break;
	case 1:
		len = cap;
		break;
	case 2:
		len = cap > 4 ? between((uint32_t)cap - 4, (uint32_t)cap) : cap;
		break;
	default:
		len = between(1, cap < 24 ? (uint32_t)cap : 24);
		break;
	}
	for (i = 0; i < len; i++)
		d[i] = digits ? (char)('0' + below(10)) : id_chars[below(sizeof(id_chars) - 1)];
	d[len] = '\0';
}

static uint32_t quantity_random(void)
{
	static const uint32_t edges[] = { 1, 2, 9, 10, 99, 100, 999, 1000, 99999, 100000, 999999,
					  1000000 };
	switch (below(8)) {
	case 0:
		return 1;
	case 1:
		return QTY_MAX;
	case 2:
		return edges[below(sizeof(edges) / sizeof(edges[0]))];
	case 3:
		return between(1, 9);
	default:
		return between(1, QTY_MAX);
	}
}

/* Value sizes: 0 any (to the limits), else at most this many bytes (the
 * limit cases keep some envelopes small, under what a workspace keeps). */
static size_t value_cap;

static size_t text_cap(void)
{
	return value_cap && value_cap < TEXT_MAX ? value_cap : TEXT_MAX;
}

static size_t id_cap(void)
{
	return value_cap && value_cap < WMS_ID_MAX ? value_cap : WMS_ID_MAX;
}

static void line_random(request *q, size_t i, unsigned keep)
{
	if (!(keep & K_QTYS))
		q->lines[i].quantity = quantity_random();
	if (!(keep & K_SKUS)) {
		if (one_in(12))
			snprintf(q->skus[i], sizeof(q->skus[i]), "%lu",
				 (unsigned long)q->lines[i].quantity);
		else
			id_random(q->skus[i], id_cap());
	}
}

/* Every value of the request, valid, in every slot (once, at the start). */
static void request_init(request *q)
{
	size_t i;
	memset(q, 0, sizeof(*q));
	for (i = 0; i < T_COUNT; i++)
		text_random(q->text[i], TEXT_MAX);
	id_random(q->order_id, WMS_ID_MAX);
	strcpy(q->country, "GB");
	for (i = 0; i < SLOTS; i++) {
		line_random(q, i, 0);
		q->sku_ptrs[i] = q->skus[i];
		q->lines[i].sku = q->skus[i];
	}
}

/* New values for shape s (the groups in `keep` as they were), and the
 * request's pointers set for it; an absent optional field is NULL or "". */
static void request_fill(request *q, const shape *s, unsigned keep)
{
	wms_address *a = &q->order.ship_to;
	size_t i;

	q->s = *s;
	if (!(keep & K_ID))
		id_random(q->order_id, id_cap());
	switch (s->op) {
	case WMS__OP_SUBMIT_ORDER:
		for (i = T_NAME; i <= T_POSTAL; i++)
			if (!(keep & (1u << i)))
				text_random(q->text[i], text_cap());
		if (!(keep & K_COUNTRY)) {
			q->country[0] = (char)('A' + below(26));
			q->country[1] = (char)('A' + below(26));
			q->country[2] = '\0';
		}
		if (!(keep & K_PRIORITY))
			q->order.priority = (wms_priority)below(3);
		for (i = 0; i < s->n; i++)
			line_random(q, i, keep);
		break;
	case WMS__OP_CANCEL_ORDER:
		if (!(keep & (1u << T_REASON)))
			text_random(q->text[T_REASON], text_cap());
		break;
	case WMS__OP_GET_STOCK_LEVEL:
		for (i = 0; i < s->n; i++)
			if (!(keep & K_SKUS))
				id_random(q->skus[i], id_cap());
		break;
	default:
		break;
	}
	q->order.version = WMS_ORDER_VERSION;
	q->order.order_id = q->order_id;
	a->name = q->text[T_NAME];
	a->line1 = q->text[T_LINE1];
	a->line2 = s->line2 ? q->text[T_LINE2] : one_in(2) ? NULL : "";
	a->city = q->text[T_CITY];
	a->region = s->region ? q->text[T_REGION] : one_in(2) ? NULL : "";
	a->postal_code = q->text[T_POSTAL];
	a->country = q->country;
	q->order.lines = q->lines;
	q->order.line_count = s->op == WMS__OP_SUBMIT_ORDER ? s->n : 1;
	q->r.op = s->op;
	q->r.order = &q->order;
	q->r.order_id = q->order_id;
	q->r.reason = s->reason ? q->text[T_REASON] : one_in(2) ? NULL : "";
	q->r.skus = q->sku_ptrs;
	q->r.sku_count = s->op == WMS__OP_GET_STOCK_LEVEL ? s->n : 1;
}

/* ---- shapes ---- */

static size_t lines_random(void)
{
	uint32_t r = below(100);
	if (r < 55)
		return between(1, 5);
	if (r < 78)
		return between(6, 30);
	if (r < 92)
		return between(76, 88); /* about the template limit */
	if (r < 97)
		return between(89, 300);
	if (r < 99)
		return between(301, 700);
	return one_in(3) ? WMS_MAX_LINES : between(701, WMS_MAX_LINES);
}

static size_t skus_random(void)
{
	uint32_t r = below(100);
	if (r < 60)
		return between(1, 8);
	if (r < 85)
		return between(9, 60);
	if (r < 95)
		return between(61, WMS_MAX_SKUS);
	return one_in(2) ? WMS_MAX_SKUS : 1;
}

static void shape_random(shape *s)
{
	static const wms__op ops[] = { WMS__OP_SUBMIT_ORDER, WMS__OP_SUBMIT_ORDER,
				       WMS__OP_GET_ORDER_STATUS, WMS__OP_CANCEL_ORDER,
				       WMS__OP_GET_STOCK_LEVEL };
	memset(s, 0, sizeof(*s));
	s->op = ops[below(5)];
	s->v = one_in(7) ? WMS_SOAP_12 : WMS_SOAP_11;
	s->line2 = (int)below(2);
	s->region = (int)below(2);
	s->reason = !one_in(3);
	if (s->op == WMS__OP_SUBMIT_ORDER)
		s->n = lines_random();
	else if (s->op == WMS__OP_GET_STOCK_LEVEL)
		s->n = skus_random();
}

/* A change in the middle of a run: one thing, or everything. */
static void shape_mutate(shape *s)
{
	size_t max = s->op == WMS__OP_SUBMIT_ORDER ? WMS_MAX_LINES : WMS_MAX_SKUS;
	switch (below(6)) {
	case 0:
		s->v = s->v == WMS_SOAP_11 ? WMS_SOAP_12 : WMS_SOAP_11;
		break;
	case 1:
		s->line2 = !s->line2;
		s->reason = !s->reason;
		break;
	case 2:
		s->region = !s->region;
		break;
	case 3:
		if (s->n > 1 && (s->n == max || one_in(2)))
			s->n--;
		else if (s->n && s->n < max)
			s->n++;
		break;
	case 4:
		if (s->op == WMS__OP_SUBMIT_ORDER)
			s->n = lines_random();
		else if (s->op == WMS__OP_GET_STOCK_LEVEL)
			s->n = skus_random();
		break;
	default:
		shape_random(s);
		break;
	}
}

/* ---- comparing ---- */

typedef struct stats {
	long requests;         /* byte-compared builds */
	long third;            /* of them, at least the third in a row of one shape */
	long by_op[WMS__OP_COUNT];
	long soap12;
	long over_limit;       /* shape past WMS__TEMPLATE_MAX_PUTS */
	long at_limit;         /* exactly WMS__TEMPLATE_MAX_PUTS */
	long third_at_limit;   /* third in a row, exactly at the limit */
	long mid_run_changes;
	long invalid;          /* refused by both builders */
	long invalid_mid_streak; /* ... between two builds of a shape built twice already */
	long parsed;           /* parsed back, validated and checked value by value */
	long max_len;
	shape last;            /* the last shape built on the workspace */
	long streak;           /* builds of it in a row */
} stats;

static void escape_into(char *d, size_t cap, const char *s, size_t from, size_t to)
{
	size_t o = 0, i;
	for (i = from; i < to && o + 5 < cap; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c >= 0x20 && c < 0x7F && c != '\\')
			d[o++] = (char)c;
		else
			o += (size_t)snprintf(d + o, cap - o, "\\x%02X", c);
	}
	d[o] = '\0';
}

static void bytes_equal(const wms__buf *fresh, const wms__buf *ws, const char *what, long idx,
			const request *q)
{
	size_t off = 0, min, from;
	char a[1200], b[1200];

	if (fresh->len == ws->len && memcmp(fresh->data, ws->data, fresh->len) == 0)
		return;
	min = fresh->len < ws->len ? fresh->len : ws->len;
	while (off < min && fresh->data[off] == ws->data[off])
		off++;
	from = off > 100 ? off - 100 : 0;
	escape_into(a, sizeof(a), fresh->data, from, off + 100 < fresh->len ? off + 100 : fresh->len);
	escape_into(b, sizeof(b), ws->data, from, off + 100 < ws->len ? off + 100 : ws->len);
	fail_msg("%s: request %ld (%s, SOAP %s, %zu puts, %zu lines/SKUs; seed %llu): the "
		 "workspace's envelope differs from a fresh tree's at byte %zu (%zu vs %zu bytes); "
		 "from byte %zu:\n  fresh:     %s\n  workspace: %s",
		 what, idx, wms__op_name(q->s.op), version_name(q->s.v), shape_puts(&q->s), q->s.n,
		 seed, off, fresh->len, ws->len, from, a, b);
}

/* ---- parsing back ---- */

typedef struct put {
	int depth;
	const char *name;
	const char *value; /* NULL: a container */
} put;

static put expected[MAX_PUTS_EXPECTED];
static char qty_text[SLOTS][12];

static const char *priority_text(wms_priority p)
{
	return p == WMS_PRIORITY_EXPRESS ? "EXPRESS" : p == WMS_PRIORITY_OVERNIGHT ? "OVERNIGHT"
										     : "STANDARD";
}

/* The elements the request must carry, in document order. */
static size_t expected_puts(const request *q)
{
	const wms_address *a = &q->order.ship_to;
	size_t n = 0, i;
#define PUT(d, nm, val) (expected[n].depth = (d), expected[n].name = (nm), expected[n++].value = (val))
	switch (q->s.op) {
	case WMS__OP_SUBMIT_ORDER:
		PUT(0, "clientOrderId", q->order_id);
		PUT(0, "shipTo", NULL);
		PUT(1, "name", a->name);
		PUT(1, "line1", a->line1);
		if (q->s.line2)
			PUT(1, "line2", a->line2);
		PUT(1, "city", a->city);
		if (q->s.region)
			PUT(1, "region", a->region);
		PUT(1, "postalCode", a->postal_code);
		PUT(1, "country", a->country);
		PUT(0, "priority", priority_text(q->order.priority));
		PUT(0, "lines", NULL);
		for (i = 0; i < q->s.n; i++) {
			snprintf(qty_text[i], sizeof(qty_text[i]), "%lu",
				 (unsigned long)q->lines[i].quantity);
			PUT(1, "line", NULL);
			PUT(2, "sku", q->lines[i].sku);
			PUT(2, "quantity", qty_text[i]);
		}
		break;
	case WMS__OP_GET_ORDER_STATUS:
		PUT(0, "clientOrderId", q->order_id);
		break;
	case WMS__OP_CANCEL_ORDER:
		PUT(0, "clientOrderId", q->order_id);
		if (q->s.reason)
			PUT(0, "reason", q->r.reason);
		break;
	case WMS__OP_GET_STOCK_LEVEL:
		for (i = 0; i < q->s.n; i++)
			PUT(0, "sku", q->skus[i]);
		break;
	default:
		break;
	}
#undef PUT
	return n;
}

static int is_wh(xmlNodePtr n, const char *name)
{
	return n->type == XML_ELEMENT_NODE && n->ns && n->ns->href && n->ns->prefix &&
	       !strcmp((const char *)n->ns->href, WMS__NS) &&
	       !strcmp((const char *)n->ns->prefix, WMS__NS_PREFIX) &&
	       !strcmp((const char *)n->name, name);
}

/* The element children of `parent`, depth-first, against expected[*i..n). */
static void walk(xmlNodePtr parent, int depth, size_t n, size_t *i, long idx)
{
	xmlNodePtr c, t;
	for (c = parent->children; c; c = c->next) {
		const put *p;
		if (c->type != XML_ELEMENT_NODE)
			fail_msg("request %ld: a node of type %d in <%s> (seed %llu)", idx, (int)c->type,
				 (const char *)parent->name, seed);
		if (*i >= n || expected[*i].depth != depth || !is_wh(c, expected[*i].name))
			fail_msg("request %ld: element %zu is <%s> at depth %d, expected %s (seed %llu)",
				 idx, *i, (const char *)c->name, depth,
				 *i < n ? expected[*i].name : "nothing", seed);
		p = &expected[(*i)++];
		if (!p->value) {
			walk(c, depth + 1, n, i, idx);
			continue;
		}
		for (t = c->children; t; t = t->next)
			if (t->type != XML_TEXT_NODE)
				fail_msg("request %ld: <%s> holds a node of type %d (seed %llu)", idx,
					 p->name, (int)t->type, seed);
		{
			xmlChar *got = xmlNodeGetContent(c);
			int same = got && !strcmp((const char *)got, p->value);
			if (!same) {
				char w[1400], g[1400];
				escape_into(w, sizeof(w), p->value, 0, strlen(p->value));
				escape_into(g, sizeof(g), got ? (const char *)got : "", 0,
					    got ? strlen((const char *)got) : 0);
				xmlFree(got);
				fail_msg("request %ld: <%s> reads back other than it was given (seed "
					 "%llu):\n  given: %s\n  read:  %s",
					 idx, p->name, seed, w, g);
			}
			xmlFree(got);
		}
	}
}

static void schema_error(void *ctx, xmlErrorPtr e)
{
	char *buf = ctx;
	if (!buf[0] && e && e->message)
		snprintf(buf, 512, "%s", e->message);
}

static xmlNodePtr next_element(xmlNodePtr n)
{
	for (; n; n = n->next)
		if (n->type == XML_ELEMENT_NODE)
			return n;
	return NULL;
}

/* Parse the envelope back: its frame, the payload valid against the
 * schema, and every value as given. */
static void parse_back(const wms__buf *b, const request *q, long idx, stats *st)
{
	static const char decl[] = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
	const char *env_ns = q->s.v == WMS_SOAP_12 ? WMS__SOAP12_NS : WMS__SOAP11_NS;
	const char *env_prefix = q->s.v == WMS_SOAP_12 ? "soap12" : "soap";
	xmlSchemaValidCtxtPtr vc;
	xmlNodePtr root, body, req;
	xmlDocPtr doc;
	char msg[512];
	size_t n, i = 0;
	int rc;

	assert_int_equal(strlen(b->data), b->len);
	assert_true(b->len > sizeof(decl) && !memcmp(b->data, decl, sizeof(decl) - 1));
	doc = xmlReadMemory(b->data, (int)b->len, NULL, NULL, XML_PARSE_NONET);
	if (!doc)
		fail_msg("request %ld (%s): the envelope does not parse (seed %llu)", idx,
			 wms__op_name(q->s.op), seed);
	assert_null(doc->intSubset);
	root = xmlDocGetRootElement(doc);
	assert_non_null(root);
	assert_string_equal((const char *)root->name, "Envelope");
	assert_non_null(root->ns);
	assert_string_equal((const char *)root->ns->href, env_ns);
	assert_string_equal((const char *)root->ns->prefix, env_prefix);
	body = next_element(root->children);
	assert_non_null(body);
	assert_string_equal((const char *)body->name, "Body");
	assert_true(body->ns == root->ns);
	assert_null(next_element(body->next));
	req = next_element(body->children);
	assert_non_null(req);
	assert_true(is_wh(req, wms__op_get(q->s.op)->request));
	assert_null(next_element(req->next));

	vc = xmlSchemaNewValidCtxt(schema);
	assert_non_null(vc);
	msg[0] = '\0';
	xmlSchemaSetValidStructuredErrors(vc, schema_error, msg);
	rc = xmlSchemaValidateOneElement(vc, req);
	xmlSchemaFreeValidCtxt(vc);
	if (rc != 0)
		fail_msg("request %ld (%s, %zu puts): the payload does not validate against "
			 "warehouse.xsd: %s (seed %llu)",
			 idx, wms__op_name(q->s.op), shape_puts(&q->s), msg, seed);

	n = expected_puts(q);
	assert_int_equal(n, shape_puts(&q->s));
	walk(req, 0, n, &i, idx);
	if (i != n)
		fail_msg("request %ld (%s): %zu elements read back, %zu given (seed %llu)", idx,
			 wms__op_name(q->s.op), i, n, seed);
	xmlFreeDoc(doc);
	st->parsed++;
}

/* Build q both ways, compare, and count. */
static void build_both(wms__xml_ws *ws, const request *q, const char *what, long idx, int parse,
		       stats *st)
{
	wms__buf fresh = { NULL, 0, 0 }, kept = { NULL, 0, 0 };
	wms_error e1, e2;
	wms_status r1, r2;
	size_t puts = shape_puts(&q->s);

	wms_error_clear(&e1);
	wms_error_clear(&e2);
	r1 = wms__build_request(&fresh, q->s.v, &q->r, NULL, &e1);
	r2 = wms__build_request_ws(ws, &kept, q->s.v, &q->r, NULL, &e2);
	if (r1 != WMS_OK || r2 != WMS_OK)
		fail_msg("%s: request %ld (%s, SOAP %s, %zu puts; seed %llu) was refused: fresh %s "
			 "(%s), workspace %s (%s)",
			 what, idx, wms__op_name(q->s.op), version_name(q->s.v), puts, seed,
			 wms_status_name(r1), e1.message, wms_status_name(r2), e2.message);
	bytes_equal(&fresh, &kept, what, idx, q);
	if (parse)
		parse_back(&kept, q, idx, st);

	if (st->requests && shape_same(&st->last, &q->s)) {
		st->streak++;
	} else {
		st->last = q->s;
		st->streak = 1;
	}
	st->requests++;
	st->by_op[q->s.op]++;
	st->soap12 += q->s.v == WMS_SOAP_12;
	st->over_limit += puts > WMS__TEMPLATE_MAX_PUTS;
	st->at_limit += puts == WMS__TEMPLATE_MAX_PUTS;
	if (st->streak >= 3) {
		st->third++;
		st->third_at_limit += puts == WMS__TEMPLATE_MAX_PUTS;
	}
	if ((long)kept.len > st->max_len)
		st->max_len = (long)kept.len;
	wms__buf_free(&fresh);
	wms__buf_free(&kept);
}

/* ---- invalid input ---- */

static char bad[TEXT_BUF + 64];

/* Valid text around something validation refuses. */
static void bad_around(const char *middle, size_t len)
{
	size_t a = between(0, 100), o;
	text_of(bad, a, (int)below(FL_COUNT));
	o = strlen(bad);
	memcpy(bad + o, middle, len);
	o += len;
	text_of(bad + o, one_in(3) ? 0 : between(1, 100), (int)below(FL_COUNT));
}

/* A text value validation refuses; `what` names it. */
static const char *bad_text(const char **what)
{
	static const char *const utf8[] = {
		"\x80", "\xbf", "\xc0\xaf", "\xc1\xbf", "\xe0\x80\xaf", "\xe0\x9f\xbf",
		"\xed\xa0\x80", "\xed\xbf\xbf", "\xf0\x8f\xbf\xbf", "\xf4\x90\x80\x80",
		"\xf5\x80\x80\x80", "\xf8\x88\x80\x80\x80", "\xfe", "\xff", "\xe2\x82", "\xc3",
		"\xf0\x9f\x98", "\xc3\xc3",
	};
	char c[4];
	switch (below(5)) {
	case 0:
		*what = "a control character";
		if (one_in(3)) { /* C1, two bytes */
			c[0] = (char)0xC2;
			c[1] = (char)between(0x80, 0x9F);
			bad_around(c, 2);
		} else {
			c[0] = one_in(8) ? (char)0x7F : (char)between(1, 0x1F);
			bad_around(c, 1);
		}
		break;
	case 1:
		*what = "257 bytes";
		text_of(bad, one_in(4) ? between(258, TEXT_BUF - 1) : TEXT_MAX + 1,
			(int)below(FL_COUNT));
		break;
	case 2:
	case 3: {
		const char *u = utf8[below(sizeof(utf8) / sizeof(utf8[0]))];
		*what = "bad UTF-8";
		bad_around(u, strlen(u));
		break;
	}
	default:
		*what = "U+FFFE or U+FFFF";
		bad_around(one_in(2) ? "\xef\xbf\xbe" : "\xef\xbf\xbf", 3);
		break;
	}
	return bad;
}

static const char *bad_id(const char **what)
{
	static const char *const chars[] = { " ", "/", "<", "&", "\xc3\xa9", "\t", "#", "+", "\x7f" };
	size_t i;
	switch (below(3)) {
	case 0:
		*what = "a 65-byte id";
		for (i = 0; i < WMS_ID_MAX + 1; i++)
			bad[i] = id_chars[below(sizeof(id_chars) - 1)];
		bad[i] = '\0';
		break;
	case 1:
		*what = "an empty id";
		bad[0] = '\0';
		break;
	default:
		*what = "a character ids cannot have";
		id_random(bad, 30);
		strcat(bad, chars[below(sizeof(chars) / sizeof(chars[0]))]);
		if (one_in(2))
			strcat(bad, "x");
		break;
	}
	return bad;
}

/* Both builders refuse q, alike, and hand out nothing. */
static void expect_refused(wms__xml_ws *ws, const request *q, const char *what, long idx)
{
	wms__buf fresh = { NULL, 0, 0 }, kept = { NULL, 0, 0 };
	wms_error e1, e2;
	wms_status r1, r2;
	wms_error_clear(&e1);
	wms_error_clear(&e2);
	r1 = wms__build_request(&fresh, q->s.v, &q->r, NULL, &e1);
	r2 = wms__build_request_ws(ws, &kept, q->s.v, &q->r, NULL, &e2);
	if (r1 != WMS_ERR_INVALID_ARG || r2 != WMS_ERR_INVALID_ARG)
		fail_msg("request %ld (%s, %s; seed %llu): fresh %s, workspace %s, expected "
			 "INVALID_ARG from both",
			 idx, wms__op_name(q->s.op), what, seed, wms_status_name(r1),
			 wms_status_name(r2));
	assert_null(fresh.data);
	assert_null(kept.data);
	assert_int_equal(kept.len, 0);
	assert_int_equal(e2.delivery, WMS_DELIVERY_NOT_SENT);
	if (strcmp(e1.message, e2.message) != 0)
		fail_msg("request %ld (%s): the builders refuse it differently: \"%s\" vs \"%s\"", idx,
			 what, e1.message, e2.message);
}

/* One invalid variant of q (the last request built), refused by both;
 * q is left as it was. */
static void invalid_probe(wms__xml_ws *ws, request *q, long idx, stats *st)
{
	wms__request r = q->r;
	wms_order order = q->order;
	const char *what = "";
	size_t i = q->s.n ? below((uint32_t)q->s.n) : 0, k;
	uint32_t qty = q->lines[i].quantity;

	switch (q->s.op) {
	case WMS__OP_SUBMIT_ORDER:
		switch (below(10)) {
		case 0:
		case 1:
		case 2:
		case 3: {
			const char *t = bad_text(&what);
			switch (below(7)) {
			case 0: q->order.ship_to.name = t; break;
			case 1: q->order.ship_to.line1 = t; break;
			case 2: q->order.ship_to.line2 = t; break;
			case 3: q->order.ship_to.city = t; break;
			case 4: q->order.ship_to.region = t; break;
			default: q->order.ship_to.postal_code = t; break;
			}
			break;
		}
		case 4:
			q->lines[i].sku = bad_id(&what);
			break;
		case 5:
			q->order.order_id = bad_id(&what);
			break;
		case 6:
			what = "a quantity out of range";
			q->lines[i].quantity = one_in(2) ? 0 : one_in(2) ? QTY_MAX + 1 : UINT32_MAX;
			break;
		case 7: {
			static const char *const countries[] = { "gb", "G", "GBR", "", "G1", "\xc3\x89S" };
			what = "a bad country";
			q->order.ship_to.country = countries[below(6)];
			break;
		}
		case 8:
			what = "a required field empty";
			q->order.ship_to.city = "";
			break;
		default:
			what = "a bad line count";
			q->order.line_count = one_in(2) ? 0 : WMS_MAX_LINES + 1;
			break;
		}
		break;
	case WMS__OP_CANCEL_ORDER:
		if (one_in(2))
			q->r.reason = bad_text(&what);
		else
			q->r.order_id = bad_id(&what);
		break;
	case WMS__OP_GET_STOCK_LEVEL:
		if (one_in(4)) {
			what = "a bad SKU count";
			q->r.sku_count = one_in(2) ? 0 : WMS_MAX_SKUS + 1;
		} else {
			q->sku_ptrs[i] = bad_id(&what);
		}
		break;
	default:
		q->r.order_id = bad_id(&what);
		break;
	}
	expect_refused(ws, q, what, idx);
	/* as it was */
	q->r = r;
	q->order = order;
	q->lines[i].quantity = qty;
	for (k = 0; k < SLOTS; k++) {
		q->sku_ptrs[k] = q->skus[k];
		q->lines[k].sku = q->skus[k];
	}
	st->invalid++;
	if (st->streak >= 2)
		st->invalid_mid_streak++;
}

/* ---- the limit ---- */

/* What the j-th request of a run keeps from the one before: mode 0
 * nothing; 1 the fields in `mask` in the first two (the pair a template
 * is learnt from) and nothing after; 2 those fields throughout; 3 all of
 * it in the first two; 4 all of it throughout (one request, repeated). */
static unsigned keep_for(int mode, int j, unsigned mask)
{
	if (j == 0)
		return 0;
	switch (mode) {
	case 1:
		return j == 1 ? mask : 0;
	case 2:
		return mask;
	case 3:
		return j == 1 ? (unsigned)K_ALL : 0;
	case 4:
		return K_ALL;
	default:
		return 0;
	}
}

/* Build shape s `times` in a row, values new as keep_for says. */
static void build_run(wms__xml_ws *ws, request *q, const shape *s, int times, const char *what,
		      long *idx, stats *st)
{
	unsigned mask = (unsigned)rnd() & K_ALL;
	int mode = (int)below(5), j;
	for (j = 0; j < times; j++) {
		request_fill(q, s, keep_for(mode, j, mask));
		build_both(ws, q, what, (*idx)++, 1, st);
	}
}

/* The template limit crossed both ways, twice and more, on `ws`: for each
 * optional-field set the most lines at or under WMS__TEMPLATE_MAX_PUTS and
 * one line more; the pair exactly at the limit and one put over it; the
 * largest stock requests. */
static void limit_cases(wms__xml_ws *ws, request *q, stats *st)
{
	shape pairs[8][2];
	size_t npairs = 0, k, m;
	long idx = 0;
	int found_at = 0, found_over = 0, opt, vi, round;
	const size_t max = WMS__TEMPLATE_MAX_PUTS;

	/* each optional-field set: the most lines under the limit, one more */
	for (opt = 0; opt < 4; opt++) {
		shape s;
		size_t base;
		memset(&s, 0, sizeof(s));
		s.op = WMS__OP_SUBMIT_ORDER;
		s.line2 = opt & 1;
		s.region = (opt >> 1) & 1;
		base = shape_puts(&s); /* no lines */
		s.n = (max - base) / 3;
		assert_true(s.n >= 1 && s.n + 1 <= WMS_MAX_LINES);
		pairs[npairs][0] = s;
		assert_true(shape_puts(&s) <= max);
		found_at |= shape_puts(&s) == max;
		s.n++;
		assert_true(shape_puts(&s) > max && shape_puts(&s) <= max + 3);
		found_over |= shape_puts(&s) == max + 1;
		pairs[npairs++][1] = s;
	}
	/* exactly at the limit, and exactly one put over */
	{
		shape at, over;
		int got_at = 0, got_over = 0;
		memset(&at, 0, sizeof(at));
		memset(&over, 0, sizeof(over));
		for (opt = 0; opt < 4; opt++) {
			shape s;
			memset(&s, 0, sizeof(s));
			s.op = WMS__OP_SUBMIT_ORDER;
			s.line2 = opt & 1;
			s.region = (opt >> 1) & 1;
			for (s.n = 1; s.n <= WMS_MAX_LINES; s.n++) {
				if (!got_at && shape_puts(&s) == max) {
					at = s;
					got_at = 1;
				}
				if (!got_over && shape_puts(&s) == max + 1) {
					over = s;
					got_over = 1;
				}
			}
		}
		assert_true(got_at && got_over && found_at && found_over);
		pairs[npairs][0] = at;
		pairs[npairs++][1] = over;
	}
	/* GetStockLevel: one put a SKU; the limit and one more if the SKU
	 * maximum allows, else the largest two */
	{
		shape s;
		memset(&s, 0, sizeof(s));
		s.op = WMS__OP_GET_STOCK_LEVEL;
		if (max + 1 <= WMS_MAX_SKUS) {
			s.n = max;
			pairs[npairs][0] = s;
			s.n = max + 1;
			pairs[npairs++][1] = s;
		} else {
			s.n = WMS_MAX_SKUS;
			pairs[npairs][0] = s;
			s.n = WMS_MAX_SKUS - 1;
			pairs[npairs++][1] = s;
		}
	}

	for (vi = 0; vi < 2; vi++) {
		for (k = 0; k < npairs; k++) {
			shape at = pairs[k][0], over = pairs[k][1];
			at.v = over.v = (wms_soap_version)vi;
			/* blocks of four (learn, use), small values then any */
			for (round = 0; round < 4; round++) {
				value_cap = round % 2 ? 0 : 12;
				build_run(ws, q, &at, 4, "at the template limit", &idx, st);
				build_run(ws, q, &over, 4, "past the template limit", &idx, st);
			}
			/* then one by one, and back to runs */
			for (m = 0; m < 6; m++) {
				value_cap = m % 3 ? 0 : 12;
				build_run(ws, q, m % 2 ? &over : &at, 1, "alternating at the limit",
					  &idx, st);
			}
			value_cap = 0;
			build_run(ws, q, &at, 3, "at the template limit", &idx, st);
			build_run(ws, q, &over, 3, "past the template limit", &idx, st);
		}
	}
	value_cap = 0;
	/* one SKU past the maximum: refused by both */
	{
		shape s;
		memset(&s, 0, sizeof(s));
		s.op = WMS__OP_GET_STOCK_LEVEL;
		s.n = WMS_MAX_SKUS;
		request_fill(q, &s, 0);
		q->r.sku_count = WMS_MAX_SKUS + 1;
		expect_refused(ws, q, "one SKU past WMS_MAX_SKUS", idx);
		q->r.sku_count = WMS_MAX_SKUS;
		build_both(ws, q, "after a refused stock request", idx++, 1, st);
	}
}

/* ---- tests ---- */

static long budget(void)
{
	const char *n = getenv("WMS_DIFF_REQUESTS");
	if (n && *n)
		return strtol(n, NULL, 0);
	switch (tk_build_kind()) {
	case TK_VALGRIND:
		return 8000; /* about 35 s */
	case TK_TSAN:
		return 20000;
	case TK_ASAN:
		return 50000; /* about 15 s; 100 000 take 30 */
	default:
		return 100000; /* about 6 s */
	}
}

static request *req_new(void)
{
	request *q = malloc(sizeof(*q));
	assert_non_null(q);
	request_init(q);
	return q;
}

static void limits_on_a_fresh_workspace(void **state)
{
	wms__xml_ws ws = { NULL, NULL };
	request *q = req_new();
	stats st;
	double t0 = util_now_ms();
	(void)state;

	memset(&st, 0, sizeof(st));
	rng = seed ^ 0x4c494d4954ull;
	limit_cases(&ws, q, &st);
	assert_true(st.at_limit >= 40 && st.over_limit >= 40);
	assert_true(st.third_at_limit >= 20);
	printf("limit cases: %ld builds (%ld exactly at %d puts, %ld past it, %ld third in a row), "
	       "all parsed back and validated, %.0f ms\n",
	       st.requests, st.at_limit, (int)WMS__TEMPLATE_MAX_PUTS, st.over_limit, st.third,
	       util_now_ms() - t0);
	assert_int_equal(st.parsed, st.requests);
	assert_non_null(ws.build);
	wms__build_ws_free(ws.build);
	free(q);
}

static void random_runs_build_the_same_bytes(void **state)
{
	wms__xml_ws ws = { NULL, NULL };
	request *q = req_new();
	stats st, lim;
	long total = budget(), runs = 0;
	double t0 = util_now_ms(), t1;
	int op;
	(void)state;

	memset(&st, 0, sizeof(st));
	memset(&lim, 0, sizeof(lim));
	rng = seed;
	while (st.requests < total) {
		shape s;
		int len = (int)between(1, 20), mode, j;
		unsigned mask = (unsigned)rnd() & K_ALL;
		uint32_t m = below(100);
		/* what the run keeps from one request to the next */
		mode = m < 50 ? 0 : m < 70 ? 1 : m < 85 ? 2 : m < 95 ? 3 : 4;
		shape_random(&s);
		runs++;
		for (j = 0; j < len && st.requests < total; j++) {
			if (j > 0 && one_in(30)) {
				shape_mutate(&s);
				st.mid_run_changes++;
			}
			request_fill(q, &s, keep_for(mode, j, mask));
			build_both(&ws, q, "random", st.requests, st.requests % 97 == 0, &st);
			if (one_in(150)) {
				/* refused, then the same request again: the exact bytes */
				invalid_probe(&ws, q, st.requests, &st);
				build_both(&ws, q, "after a refused request", st.requests, one_in(4),
					   &st);
			}
		}
	}
	t1 = util_now_ms();
	printf("seed %llu: %ld random requests in %ld runs (SubmitOrder %ld, GetOrderStatus %ld, "
	       "CancelOrder %ld, GetStockLevel %ld; SOAP 1.2 %ld), %ld at least the third in a row "
	       "of one shape (%.1f%%), %ld mid-run shape changes, %ld shapes past %d puts and %ld "
	       "at it, %ld refused (%ld amid a shape built twice), %ld parsed back, largest %ld "
	       "bytes; %.0f ms\n",
	       seed, st.requests, runs, st.by_op[WMS__OP_SUBMIT_ORDER],
	       st.by_op[WMS__OP_GET_ORDER_STATUS], st.by_op[WMS__OP_CANCEL_ORDER],
	       st.by_op[WMS__OP_GET_STOCK_LEVEL], st.soap12, st.third,
	       100.0 * (double)st.third / (double)st.requests, st.mid_run_changes, st.over_limit,
	       (int)WMS__TEMPLATE_MAX_PUTS, st.at_limit, st.invalid, st.invalid_mid_streak, st.parsed,
	       st.max_len, t1 - t0);
	assert_true(st.requests >= total);
	for (op = 0; total >= 5000 && op < WMS__OP_COUNT; op++)
		assert_true(st.by_op[op] > total / 10);
	if (total >= 5000) {
		assert_true(st.soap12 > total / 20);
		assert_true(st.third * 10 > st.requests * 6); /* over 60% */
		assert_true(st.mid_run_changes > total / 100);
		assert_true(st.invalid > total / 400);
		assert_true(st.invalid_mid_streak > st.invalid / 4);
		assert_true(st.parsed > total / 100);
		assert_true(st.over_limit > total / 100);
	}

	/* the well-used workspace across the limit, then freed (valgrind and
	 * the sanitizers see that nothing stays behind) */
	limit_cases(&ws, q, &lim);
	assert_int_equal(lim.parsed, lim.requests);
	assert_non_null(ws.build);
	wms__build_ws_free(ws.build);
	free(q);
}

static int setup(void **state)
{
	const char *s = getenv("WMS_DIFF_SEED");
	(void)state;
	seed = s && *s ? strtoull(s, NULL, 0) : DEFAULT_SEED;
	printf("test_build_diff: seed %llu (WMS_DIFF_SEED=%llu replays it)\n", seed, seed);
	schema = util_schema_load();
	return schema ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	xmlSchemaFree(schema);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(limits_on_a_fresh_workspace),
		cmocka_unit_test(random_runs_build_the_same_bytes),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
