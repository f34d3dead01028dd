/*
 * Fuzz harness: the reply parser, wms__parse_reply, for the four operations.
 *
 * Input: one selector byte, then the reply body.
 *   bits 0-1  operation (SubmitOrder, GetOrderStatus, CancelOrder, GetStockLevel)
 *   bits 2-4  Content-Type: see content_types[]; 7 = the body's first line
 *             (up to '\n') is the Content-Type, the rest the body
 *   bit 5     parse twice: same status, error and reply
 *   bit 6     parse again with out and err NULL: same status
 *   bit 7     size cap = the body's length (accepted), then one byte less
 *             (must be WMS_ERR_TOO_LARGE, before any parsing)
 * The rest (Content-Type line included) goes through the macros of
 * fuzz_expand.c first when it holds a 0x1E (fuzz.h, README.md): repeats
 * that reach the parser's limits (4097 names, 257 attributes, 100 001
 * elements...), encodings, and a primer, a reply parsed on the reused
 * workspace before this one. Expanded, a body is at most 2 MiB + 64 KiB
 * (FUZZ_REPLY_EXPAND_MAX).
 * Seed files are bodies: each is replayed under 4 operations x 5 types. The
 * built-in seeds put each limit the reply parser has on both sides of its
 * bound, with macros.
 */
#include <stdlib.h>
#include <string.h>
#include "fuzz.h"
#include "hostile_xml.h"

static const char *const content_types[7] = {
	NULL,
	"text/xml; charset=utf-8",
	"application/soap+xml; charset=utf-8; action=\"urn:libwms:warehouse:1/SubmitOrder\"",
	"text/xml; charset=ISO-8859-1",
	"text/html; charset=utf-8",
	"text/xml",
	"application/soap+xml;charset=\"UTF-16\"",
};

#define CT_FROM_INPUT 7
#define CT_MAX 256

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_count_allocations();
	wms__xml_init();
	fuzz_watch_libxml2_errors();
	return 0;
}

#define EXPAND_MAX FUZZ_REPLY_EXPAND_MAX

/* The same body as a generic call's reply (wms/call.h), the operation's
 * answer expected: whatever the typed parse accepted, it accepts too, and
 * hands back that element as a document; a refusal hands back nothing
 * and says why, with the typed parse's status when that one refused. */
static void generic_checked(wms__op op, wms_status typed, const char *body, size_t len,
			    const char *ct)
{
	struct _xmlDoc *doc = (struct _xmlDoc *)&doc;
	wms_error err;
	wms_status st;

	memset(&err, 0, sizeof(err));
	st = wms__parse_generic_ws(&doc, NULL, WMS__NS, wms__op_get(op)->response, body, len, ct,
				   0, 0, &err);
	fuzz_check_libxml2_quiet("wms__parse_generic_ws");
	if (st != WMS_OK) {
		FUZZ_CHECK(doc == NULL, "generic parse: %s with a document", wms_status_name(st));
		FUZZ_CHECK(err.status == st && err.message[0], "generic parse: %s without a message",
			   wms_status_name(st));
		/* the typed parse reads the answer's fields too: it may refuse
		 * what the generic one takes, never the other way round */
		FUZZ_CHECK(typed != WMS_OK || st == WMS_ERR_NOMEM,
			   "generic parse refused (%s: %s) what the typed parse accepted",
			   wms_status_name(st), err.message);
		FUZZ_CHECK(typed == WMS_OK || typed == st || st == WMS_ERR_NOMEM ||
				   typed == WMS_ERR_UNEXPECTED_REPLY,
			   "generic parse: %s where the typed parse said %s", wms_status_name(st),
			   wms_status_name(typed));
		return;
	}
	FUZZ_CHECK(doc != NULL && wms__xml_doc_root(doc) != NULL, "generic parse: OK without a root");
	wms__xml_doc_free(doc);
}

static void one(const uint8_t *data, size_t size)
{
	fuzz_bytes expanded = { NULL, 0, 0 }, primer = { NULL, 0, 0 };
	char ct_buf[CT_MAX + 1];
	const char *body, *ct;
	size_t len;
	unsigned sel, ct_index;
	wms__op op;
	wms_status st;

	if (size < 1)
		return;
	sel = data[0];
	op = (wms__op)(sel & 3u);
	ct_index = (sel >> 2) & 7u;
	body = (const char *)data + 1;
	len = size - 1;
	if (fuzz_expand(data + 1, size - 1, EXPAND_MAX, &expanded, &primer)) {
		body = (const char *)expanded.data;
		len = expanded.len;
		fuzz_set_primer(primer.len ? (const char *)primer.data : NULL, primer.len);
	}
	if (ct_index == CT_FROM_INPUT) {
		const char *nl = memchr(body, '\n', len);
		size_t n = nl ? (size_t)(nl - body) : len;
		if (n > CT_MAX)
			n = CT_MAX;
		memcpy(ct_buf, body, n);
		ct_buf[n] = '\0';
		ct = ct_buf;
		if (nl) {
			len -= (size_t)(nl + 1 - body);
			body = nl + 1;
		} else {
			body += len;
			len = 0;
		}
	} else {
		ct = content_types[ct_index];
	}
	st = fuzz_parse_checked(op, body, len, ct, (sel & 0x80u) && len ? len : 0,
				((sel & 0x20u) ? FUZZ_PARSE_TWICE : 0u) |
					((sel & 0x40u) ? FUZZ_PARSE_NULL_OUT : 0u),
				NULL);
	generic_checked(op, st, body, len, ct);
	if ((sel & 0x80u) && len > 1)
		fuzz_parse_checked(op, body, len, ct, len - 1, 0, NULL);
	fuzz_set_primer(NULL, 0);
	fuzz_bytes_free(&expanded);
	fuzz_bytes_free(&primer);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_run_leak_checked(one, data, size);
	return 0;
}

int fuzz_seed_variant(size_t i, const uint8_t *seed, size_t n, fuzz_bytes *out)
{
	uint8_t sel;
	if (i >= 4 * 5)
		return 0;
	sel = (uint8_t)((i & 3u) | ((i / 4) << 2));
	fuzz_bytes_reset(out);
	fuzz_bytes_add(out, &sel, 1);
	fuzz_bytes_add(out, seed, n);
	return 1;
}

/* ---- built-in seeds: each limit on both sides of its bound ------------------ */

static void add(fuzz_bytes *b, const char *s)
{
	fuzz_bytes_add(b, s, strlen(s));
}

/* `n` repetitions of `fragment` (0x1D: the index), as a macro. */
static void rep(fuzz_bytes *b, size_t n, const char *fragment)
{
	fuzz_macro_repeat(b, n);
	add(b, fragment);
	fuzz_bytes_add(b, "\x1f", 1);
}

enum where { AT_RESP_ATTRS, AT_RESP_BEFORE, AT_ENV_ATTRS, AT_HEADER, AT_ID, AT_DECL };

/* A SubmitOrderResponse (hx_submit_reply) carrying pre, n x frag, n x frag2
 * and post at `where`; encoded by macro OP `enc` (0: not), after `decl`. */
typedef struct shape {
	const char *what; /* the bound, for the reader */
	uint8_t sel;
	enum where where;
	const char *pre, *frag, *frag2, *post;
	size_t n;
	uint8_t enc;
	const char *decl;
} shape;

#define SUBMIT 0x00u   /* SubmitOrder, no Content-Type */
#define TWICE 0x20u    /* parse twice */
#define CAPPED 0x80u   /* size cap = the body, then one byte less */

static const shape shapes[] = {
	{ "256 attributes on one element", SUBMIT, AT_RESP_ATTRS, "", " a\x1d=''", NULL, "", 256, 0, NULL },
	{ "257 attributes on one element", SUBMIT, AT_RESP_ATTRS, "", " a\x1d=''", NULL, "", 257, 0, NULL },
	{ "64 namespace declarations on one element", SUBMIT | CAPPED, AT_RESP_ATTRS, "",
	  " xmlns:p\x1d='urn:p\x1d'", NULL, "", 64, 0, NULL },
	{ "65 namespace declarations on one element", SUBMIT, AT_RESP_ATTRS, "",
	  " xmlns:p\x1d='urn:p\x1d'", NULL, "", 65, 0, NULL },
	/* the Envelope declares 2: 126 more make 128 in scope */
	{ "128 declarations in scope", SUBMIT, AT_RESP_BEFORE, "", "<d xmlns:p\x1d='u'>", "</d>", "", 126, 0, NULL },
	{ "129 declarations in scope", SUBMIT, AT_RESP_BEFORE, "", "<d xmlns:p\x1d='u'>", "</d>", "", 127, 0, NULL },
	/* Envelope, Body and the response: 253 more make 256 deep */
	{ "256 deep", SUBMIT | TWICE, AT_RESP_BEFORE, "", "<d>", "</d>", "", 253, 0, NULL },
	{ "257 deep", SUBMIT, AT_RESP_BEFORE, "", "<d>", "</d>", "", 254, 0, NULL },
	/* 7 elements of its own: 99 993 more make 100 000 */
	{ "heavy: 100000 elements", SUBMIT, AT_RESP_BEFORE, "", "<e/>", NULL, "", 99993, 0, NULL },
	{ "100001 elements", SUBMIT, AT_RESP_BEFORE, "", "<e/>", NULL, "", 99994, 0, NULL },
	/* 14 names of its own: 4082 more make 4096 */
	{ "4096 distinct names", SUBMIT, AT_RESP_BEFORE, "", "<e\x1d/>", NULL, "", 4082, 0, NULL },
	{ "4097 distinct names", SUBMIT, AT_RESP_BEFORE, "", "<e\x1d/>", NULL, "", 4083, 0, NULL },
	/* kept between parses: a dictionary of 512 names, 256 element slots,
	 * 16 384 bytes of text (the reply's own: 14 names, 8 elements with the
	 * document, 24 bytes) */
	{ "a dictionary of 512 names, kept", SUBMIT, AT_RESP_BEFORE, "", "<e\x1d/>", NULL, "", 498, 0, NULL },
	{ "a dictionary of 513 names, dropped", SUBMIT, AT_RESP_BEFORE, "", "<e\x1d/>", NULL, "", 499, 0, NULL },
	{ "256 element slots, kept", SUBMIT, AT_RESP_BEFORE, "", "<e/>", NULL, "", 248, 0, NULL },
	{ "257 element slots, dropped", SUBMIT, AT_RESP_BEFORE, "", "<e/>", NULL, "", 249, 0, NULL },
	{ "256 text runs, kept", SUBMIT, AT_RESP_BEFORE, "<a>", "<b>z</b>y", NULL, "</a>", 125, 0, NULL },
	{ "258 text runs, dropped", SUBMIT, AT_RESP_BEFORE, "<a>", "<b>z</b>y", NULL, "</a>", 126, 0, NULL },
	{ "16384 bytes of text, kept", SUBMIT, AT_RESP_BEFORE, "<t>", "x", NULL, "</t>", 16360, 0, NULL },
	{ "16385 bytes of text, dropped", SUBMIT, AT_RESP_BEFORE, "<t>", "x", NULL, "</t>", 16361, 0, NULL },
	/* ids: 64 bytes; values looked at: 256 bytes before trimming */
	{ "a 64-byte id", SUBMIT, AT_ID, "", "x", NULL, "", 64, 0, NULL },
	{ "a 65-byte id", SUBMIT, AT_ID, "", "x", NULL, "", 65, 0, NULL },
	{ "an id in 256 bytes of text", SUBMIT, AT_ID, "", " ", NULL, "ORD-1", 251, 0, NULL },
	{ "an id in 257 bytes of text", SUBMIT, AT_ID, "", " ", NULL, "ORD-1", 252, 0, NULL },
	/* the scan of the decoded text (not ASCII-compatible encodings) */
	{ "UTF-16LE (BOM): 256 attributes", SUBMIT, AT_RESP_ATTRS, "", " a\x1d=''", NULL, "", 256, 0xA0, NULL },
	{ "UTF-16LE (BOM): 257 attributes", SUBMIT, AT_RESP_ATTRS, "", " a\x1d=''", NULL, "", 257, 0xA0, NULL },
	/* U+3D00 (0x01) holds the byte of '=' in UTF-16 */
	{ "UTF-16BE: 256 attributes named with U+3D00", SUBMIT, AT_RESP_ATTRS, "", " a\x01\x1d=''", NULL, "",
	  256, 0xA3, "<?xml version=\"1.0\" encoding=\"UTF-16\"?>" },
	{ "UTF-16BE: 257 attributes named with U+3D00", SUBMIT, AT_RESP_ATTRS, "", " a\x01\x1d=''", NULL, "",
	  257, 0xA3, "<?xml version=\"1.0\" encoding=\"UTF-16\"?>" },
	{ "UTF-16BE (BOM): 65 declarations", SUBMIT, AT_RESP_ATTRS, "", " xmlns:p\x1d='u'", NULL, "", 65, 0xA1,
	  "<?xml version=\"1.0\" encoding=\"UTF-16\"?>" },
	{ "UTF-16LE: 129 in scope", SUBMIT, AT_RESP_BEFORE, "", "<d xmlns:p\x1d='u'>", "</d>", "", 127, 0xA2,
	  "<?xml version=\"1.0\" encoding=\"UTF-16\"?>" },
	{ "Shift_JIS: 256 attributes", SUBMIT, AT_RESP_ATTRS, "", " a\x1d=''", NULL, "", 256, 0,
	  "<?xml version=\"1.0\" encoding=\"Shift_JIS\"?>" },
	{ "Shift_JIS: 257 attributes", SUBMIT, AT_RESP_ATTRS, "", " a\x1d=''", NULL, "", 257, 0,
	  "<?xml version=\"1.0\" encoding=\"Shift_JIS\"?>" },
	{ "UTF-7: 65 declarations", SUBMIT, AT_RESP_ATTRS, "", " xmlns:p\x1d='u'", NULL, "", 65, 0,
	  "<?xml version=\"1.0\" encoding=\"UTF-7\"?>" },
	{ "UCS-4: refused", SUBMIT, AT_RESP_ATTRS, "", " a\x1d=''", NULL, "", 3, 0xA4, NULL },
	{ "UTF-8 BOM: 257 attributes", SUBMIT, AT_RESP_ATTRS, "", " a\x1d=''", NULL, "", 257, 0xA6, NULL },
	{ "257 attributes on the Envelope", SUBMIT, AT_ENV_ATTRS, "", " a\x1d=''", NULL, "", 257, 0, NULL },
	{ "4097 names in the Header", SUBMIT, AT_HEADER, "", "<h\x1d/>", NULL, "", 4100, 0, NULL },
	/* 300 deep: the parser stops at 257, the scan 8 levels further */
	{ "300 deep", SUBMIT, AT_RESP_BEFORE, "", "<d>", "</d>", "", 297, 0, NULL },
	/* the element a limit's message names, cut at 47 bytes */
	{ "257 attributes on a 60-byte name", SUBMIT, AT_RESP_BEFORE,
	  "<a23456789b123456789c123456789d123456789e123456789f123456789", " a\x1d=''", NULL, "/>", 257, 0,
	  NULL },
	/* names sniffing keeps: an encoding of 40 bytes, 41 (left to libxml2) */
	{ "an encoding name of 40 bytes", SUBMIT, AT_RESP_ATTRS, "", " a\x1d=''", NULL, "", 1, 0,
	  "<?xml version=\"1.0\" encoding=\"x123456789x123456789x123456789x123456789\"?>" },
	{ "an encoding name of 41 bytes", SUBMIT, AT_RESP_ATTRS, "", " a\x1d=''", NULL, "", 1, 0,
	  "<?xml version=\"1.0\" encoding=\"x123456789x123456789x123456789x123456789x\"?>" },
	{ "an id in 257 bytes of text, a character across the cut", SUBMIT, AT_ID, "", " ", NULL,
	  "\xc3\xa9", 255, 0, NULL },
	/* an opening declaration's "?>" within 511 bytes, or refused; with a
	 * charset too (libxml2 then reads it 45 bytes at a time) */
	{ "a declaration of 511 bytes", SUBMIT, AT_DECL, "<?xml version=\"1.0\"", " ", NULL, "?>", 490, 0,
	  NULL },
	{ "a declaration of 512 bytes", SUBMIT, AT_DECL, "<?xml version=\"1.0\"", " ", NULL, "?>", 491, 0,
	  NULL },
	{ "ISO-8859-1: a declaration of 511 bytes", SUBMIT | 0x0Cu, AT_DECL, "<?xml version=\"1.0\"", " ",
	  NULL, "?>", 490, 0, NULL },
	{ "ISO-8859-1: a declaration of 512 bytes", SUBMIT | 0x0Cu, AT_DECL, "<?xml version=\"1.0\"", " ",
	  NULL, "?>", 491, 0, NULL },
};

#define N_SHAPES (sizeof(shapes) / sizeof(shapes[0]))

static void build_shape(const shape *sh, fuzz_bytes *out)
{
	static const hx_parts none;
	fuzz_bytes s = { NULL, 0, 0 };
	hx_parts parts = none;
	hx_buf reply = { NULL, 0, 0 };
	const char *id = "ORD-1";

	add(&s, sh->pre);
	rep(&s, sh->n, sh->frag);
	if (sh->frag2)
		rep(&s, sh->n, sh->frag2);
	add(&s, sh->post);
	switch (sh->where) {
	case AT_RESP_ATTRS: parts.resp_attrs = (const char *)s.data; break;
	case AT_RESP_BEFORE: parts.resp_before = (const char *)s.data; break;
	case AT_ENV_ATTRS: parts.env_attrs = (const char *)s.data; break;
	case AT_HEADER: parts.header = (const char *)s.data; break;
	case AT_ID: id = (const char *)s.data; break;
	case AT_DECL: break;
	}
	parts.decl = sh->where == AT_DECL ? (const char *)s.data : sh->decl;
	hx_submit_reply(&reply, id, &parts);
	fuzz_bytes_reset(out);
	fuzz_bytes_add(out, &sh->sel, 1);
	if (sh->enc) {
		uint8_t m[3] = { FUZZ_MACRO, 0, 0x80 };
		m[1] = sh->enc;
		fuzz_bytes_add(out, m, 3);
	}
	fuzz_bytes_add(out, reply.data, reply.len);
	if (sh->enc)
		fuzz_bytes_add(out, "\x1f", 1);
	hx_free(&reply);
	fuzz_bytes_free(&s);
}

/* A reply of `total` bytes, padded in a text element, with `mid` (may be
 * "") at offset `at` of the body when at is not 0 (mid and the rest of the
 * reply must fit after it). */
static void sized(fuzz_bytes *out, uint8_t sel, size_t total, const char *mid, size_t at)
{
	static const hx_parts none;
	fuzz_bytes pad = { NULL, 0, 0 }, x = { NULL, 0, 0 };
	hx_parts parts = none;
	hx_buf reply = { NULL, 0, 0 };
	size_t fixed, before;

	parts.resp_before = "<t></t>";
	hx_submit_reply(&reply, "ORD-1", &parts);
	fixed = reply.len + strlen(mid);
	before = (size_t)(strstr(reply.data, "<t>") - reply.data) + 3;
	hx_free(&reply);
	add(&pad, "<t>");
	if (at) {
		fuzz_macro_fill(&pad, at - before, "x");
		add(&pad, mid);
		fuzz_macro_fill(&pad, total - fixed - (at - before), "x");
	} else {
		fuzz_macro_fill(&pad, total - fixed, "x");
	}
	add(&pad, "</t>");
	parts.resp_before = (const char *)pad.data;
	hx_submit_reply(&reply, "ORD-1", &parts);
	fuzz_bytes_reset(out);
	fuzz_bytes_add(out, &sel, 1);
	fuzz_bytes_add(out, reply.data, reply.len);
	/* (FUZZ_EXPAND_MAX, when set, may cut it short: a faster run wanted) */
	FUZZ_CHECK(fuzz_expand(out->data + 1, out->len - 1, EXPAND_MAX, &x, NULL) &&
			   (x.len == total || getenv("FUZZ_EXPAND_MAX")),
		   "seed of %zu bytes expands to %zu", total, x.len);
	hx_free(&reply);
	fuzz_bytes_free(&pad);
	fuzz_bytes_free(&x);
}

/* A reply after `decl`, encoded by macro OP `enc` (0: not), whose text
 * holds `mid` at character `at` of what the scan decodes (counted from
 * just after decl, in units of `unit` bytes: 1 for ASCII-compatible
 * encodings, 2 for UTF-16), and more text after it. */
static void straddle(fuzz_bytes *out, const char *decl, uint8_t enc, const char *mid, size_t at,
		     size_t unit)
{
	static const hx_parts none;
	hx_parts parts = none;
	hx_buf reply = { NULL, 0, 0 };
	fuzz_bytes pad = { NULL, 0, 0 };
	size_t before;

	parts.decl = decl;
	parts.resp_before = "<t></t>";
	hx_submit_reply(&reply, "ORD-1", &parts);
	before = (size_t)(strstr(reply.data, "<t>") - reply.data) + 3 - strlen(decl);
	hx_free(&reply);
	(void)unit;
	add(&pad, "<t>");
	fuzz_macro_fill(&pad, at - before, "x");
	add(&pad, mid);
	fuzz_macro_fill(&pad, 4096, "y");
	add(&pad, "</t>");
	parts.resp_before = (const char *)pad.data;
	hx_submit_reply(&reply, "ORD-1", &parts);
	fuzz_bytes_reset(out);
	fuzz_bytes_add(out, "", 1); /* SubmitOrder, no Content-Type */
	if (enc) {
		uint8_t m[3] = { FUZZ_MACRO, 0, 0x80 };
		m[1] = enc;
		fuzz_bytes_add(out, m, 3);
	}
	fuzz_bytes_add(out, reply.data, reply.len);
	if (enc)
		add(out, "\x1f");
	hx_free(&reply);
	fuzz_bytes_free(&pad);
}

/* The built-in seeds: the Content-Type parser (0-3), then each bound. */
int fuzz_builtin_seed(size_t i, fuzz_bytes *out)
{
	/* The Content-Type parser, through selector value 7 << 2. */
	static const char *const cts[] = {
		"text/xml; Charset=\"iso-8859-1\"; action=x\n",
		"text/html\n",
		"TEXT/HTML;charset=utf-8\n",
		"application/soap+xml; charset=; action=\"a;charset=latin1\"\n",
	};
	static const char body[] =
		"<?xml version=\"1.0\"?><soap:Envelope xmlns:soap=\"http://schemas.xmlsoap.org/soap/"
		"envelope/\" xmlns:wh=\"urn:libwms:warehouse:1\"><soap:Body><wh:CancelOrderResponse>"
		"<wh:clientOrderId>ORD-\xe9</wh:clientOrderId><wh:state>CANCELLED</wh:state>"
		"<wh:alreadyCancelled>false</wh:alreadyCancelled></wh:CancelOrderResponse></soap:Body>"
		"</soap:Envelope>";
	uint8_t sel = (uint8_t)(WMS__OP_CANCEL_ORDER | (CT_FROM_INPUT << 2));
	size_t n_cts = sizeof(cts) / sizeof(cts[0]);

	if (i < n_cts) {
		fuzz_bytes_reset(out);
		fuzz_bytes_add(out, &sel, 1);
		fuzz_bytes_add(out, cts[i], strlen(cts[i]));
		fuzz_bytes_add(out, body, sizeof(body) - 1);
		return 1;
	}
	i -= n_cts;
	if (i < N_SHAPES) {
		if (!fuzz_heavy_seeds && !strncmp(shapes[i].what, "heavy: ", 7))
			return -1;
		build_shape(&shapes[i], out);
		return 1;
	}
	i -= N_SHAPES;
	switch (i) {
	case 0: /* one chunk exactly; two, a UTF-8 character cut between them */
		sized(out, SUBMIT, FUZZ_PARSE_CHUNK, "", 0);
		return 1;
	case 1:
		sized(out, SUBMIT, FUZZ_PARSE_CHUNK + 1000, "\xc3\xa9", FUZZ_PARSE_CHUNK - 1);
		return 1;
	case 2: /* the cap at 2 MiB (bit 7), then one byte less: refused unread */
		if (!fuzz_heavy_seeds)
			return -1;
		sized(out, SUBMIT | CAPPED, 2u << 20, "", 0);
		return 1;
	case 3: { /* the Content-Type's charset is not ASCII-compatible */
		static const hx_parts none;
		hx_parts parts = none;
		hx_buf reply = { NULL, 0, 0 };
		fuzz_bytes a = { NULL, 0, 0 };
		uint8_t s = (uint8_t)(WMS__OP_SUBMIT_ORDER | (CT_FROM_INPUT << 2));
		rep(&a, 257, " a\x1d=''");
		parts.resp_attrs = (const char *)a.data;
		hx_submit_reply(&reply, "ORD-1", &parts);
		fuzz_bytes_reset(out);
		fuzz_bytes_add(out, &s, 1);
		add(out, "text/xml; charset=Shift_JIS\n");
		fuzz_bytes_add(out, reply.data, reply.len);
		hx_free(&reply);
		fuzz_bytes_free(&a);
		return 1;
	}
	case 4: /* a charset name of 63 bytes, 64 (not kept: ignored) */
	case 5: {
		static const hx_parts none;
		hx_buf reply = { NULL, 0, 0 };
		uint8_t s = (uint8_t)(WMS__OP_SUBMIT_ORDER | (CT_FROM_INPUT << 2));
		hx_submit_reply(&reply, "ORD-1", &none);
		fuzz_bytes_reset(out);
		fuzz_bytes_add(out, &s, 1);
		add(out, "text/xml; charset=");
		fuzz_macro_fill(out, 63 + (i - 4), "c");
		add(out, "\n");
		fuzz_bytes_add(out, reply.data, reply.len);
		hx_free(&reply);
		return 1;
	}
	case 6: /* heavy: tags past 1 MiB, where the scan looks at the clock */
		if (!fuzz_heavy_seeds)
			return -1;
		sized(out, SUBMIT, (1u << 20) + 4096, "<u/>", (1u << 20) + 100);
		return 1;
	case 7: /* heavy: UTF-16 over two 256 KiB slices, a surrogate pair across them */
		if (!fuzz_heavy_seeds)
			return -1;
		straddle(out, "", 0xA7, "\xf0\x9f\x98\x80", FUZZ_DECODE_SLICE / 2 - 1, 2);
		return 1;
	case 8: /* heavy: Shift_JIS over two slices, a two-byte character across them */
		if (!fuzz_heavy_seeds)
			return -1;
		straddle(out, "<?xml version=\"1.0\" encoding=\"Shift_JIS\"?>", 0, "\x82\xa0",
			 FUZZ_DECODE_SLICE - 1, 1);
		return 1;
	default:
		return 0;
	}
}
