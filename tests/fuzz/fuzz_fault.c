/*
 * Fuzz harness: the SOAP Fault path of the reply parser (wms__parse_reply),
 * with inputs biased to Fault envelopes.
 *
 * Input: one selector byte, then
 *   bit 3 clear (raw mode): a reply body, as in fuzz_reply.c;
 *   bit 3 set (template mode): up to six fields separated by NUL bytes -
 *     faultcode, faultstring (Reason/Text), WmsFault/code, WmsFault/message,
 *     raw XML after WmsFault in the detail, raw XML at the end of the Fault -
 *     put into a SOAP 1.1 or 1.2 Fault envelope.
 *   bits 0-1  operation
 *   bit 2     template mode: SOAP 1.2 (else 1.1)
 *   bits 4-6  Content-Type (content_types[]; 7: none in either mode)
 *   bit 7     template mode: a soap:Header before the Body
 * What follows the selector goes through the macros of fuzz_expand.c first
 * when it holds a 0x1E (fuzz.h, README.md), before it is split into fields:
 * fields of 128 or 256 bytes and more, and Fault envelopes that cross the
 * parser's limits, in a few bytes.
 * In template mode, when the four text fields are plain (UTF-8 characters
 * XML allows, no space or other control character, no '<', '&' or ']')
 * and the raw fields empty, the result must be WMS_ERR_SOAP_FAULT with
 * exactly those values, each cut to its field (WMS_ERROR_FIELD_MAX or
 * WMS_ERROR_MESSAGE_MAX bytes, NUL included) on a whole character: the
 * code's prefix removed, the reason (or, without one, the WmsFault
 * message), the WmsFault code.
 */
#include <string.h>
#include "fuzz.h"
#include "hostile_xml.h"

static const char *const content_types[8] = {
	NULL,
	"text/xml; charset=utf-8",
	"application/soap+xml; charset=utf-8",
	"text/xml; charset=ISO-8859-1",
	"text/html",
	"text/xml",
	"application/soap+xml",
	NULL,
};

enum { F_CODE, F_REASON, F_WMS_CODE, F_MESSAGE, F_DETAIL_XML, F_FAULT_XML, F_COUNT };

typedef struct field {
	const char *p;
	size_t n;
} field;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_count_allocations();
	wms__xml_init();
	fuzz_watch_libxml2_errors();
	return 0;
}

static void add(fuzz_bytes *b, const char *s)
{
	fuzz_bytes_add(b, s, strlen(s));
}

static void add_field(fuzz_bytes *b, const field *f)
{
	fuzz_bytes_add(b, f->p, f->n);
}

static void build(fuzz_bytes *b, const field *f, int soap12, int header)
{
	fuzz_bytes_reset(b);
	add(b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
	if (soap12) {
		add(b, "<env:Envelope xmlns:env=\"" WMS__SOAP12_NS "\" xmlns:wh=\"" WMS__NS "\">");
		if (header)
			add(b, "<env:Header><wh:trace>1</wh:trace></env:Header>");
		add(b, "<env:Body><env:Fault><env:Code><env:Value>");
		add_field(b, &f[F_CODE]);
		add(b, "</env:Value></env:Code><env:Reason><env:Text xml:lang=\"en\">");
		add_field(b, &f[F_REASON]);
		add(b, "</env:Text></env:Reason><env:Detail><wh:WmsFault><wh:code>");
	} else {
		add(b, "<soap:Envelope xmlns:soap=\"" WMS__SOAP11_NS "\" xmlns:wh=\"" WMS__NS "\">");
		if (header)
			add(b, "<soap:Header><wh:trace>1</wh:trace></soap:Header>");
		add(b, "<soap:Body><soap:Fault><faultcode>");
		add_field(b, &f[F_CODE]);
		add(b, "</faultcode><faultstring>");
		add_field(b, &f[F_REASON]);
		add(b, "</faultstring><detail><wh:WmsFault><wh:code>");
	}
	add_field(b, &f[F_WMS_CODE]);
	add(b, "</wh:code><wh:message>");
	add_field(b, &f[F_MESSAGE]);
	add(b, "</wh:message></wh:WmsFault>");
	add_field(b, &f[F_DETAIL_XML]);
	add(b, soap12 ? "</env:Detail>" : "</detail>");
	add_field(b, &f[F_FAULT_XML]);
	add(b, soap12 ? "</env:Fault></env:Body></env:Envelope>" : "</soap:Fault></soap:Body></soap:Envelope>");
}

/* The length of the UTF-8 character XML allows at s[0..n), 0 if there is
 * none (malformed, cut short, a surrogate, U+FFFE/U+FFFF, a control). */
static size_t xml_char(const unsigned char *s, size_t n)
{
	uint32_t c;
	size_t len, i;
	if (s[0] < 0x80)
		return s[0] > 0x20 && s[0] < 0x7F ? 1 : 0;
	if (s[0] >= 0xC2 && s[0] <= 0xDF)
		len = 2, c = s[0] & 0x1Fu;
	else if (s[0] >= 0xE0 && s[0] <= 0xEF)
		len = 3, c = s[0] & 0x0Fu;
	else if (s[0] >= 0xF0 && s[0] <= 0xF4)
		len = 4, c = s[0] & 0x07u;
	else
		return 0;
	if (len > n)
		return 0;
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xC0) != 0x80)
			return 0;
		c = c << 6 | (s[i] & 0x3Fu);
	}
	if ((len == 3 && c < 0x800) || (len == 4 && (c < 0x10000 || c > 0x10FFFF)) ||
	    (c >= 0xD800 && c <= 0xDFFF) || c == 0xFFFE || c == 0xFFFF || (c >= 0x80 && c <= 0x9F))
		return 0;
	return len;
}

static int plain(const field *f)
{
	const unsigned char *p = (const unsigned char *)f->p;
	size_t i = 0, n;
	while (i < f->n) {
		if (p[i] == '<' || p[i] == '&' || p[i] == ']' || !(n = xml_char(p + i, f->n - i)))
			return 0;
		i += n;
	}
	return 1;
}

/* What the parser must report for a plain field: at most size-1 bytes, cut
 * before a character that does not fit. */
static void expect(char *dst, size_t size, const char *s, size_t n)
{
	if (n > size - 1) {
		n = size - 1;
		while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
			n--;
	}
	memcpy(dst, s, n);
	dst[n] = '\0';
}

static void check_plain(const field *f, const wms_error *err, wms_status st)
{
	char code[WMS_ERROR_FIELD_MAX], reason[WMS_ERROR_MESSAGE_MAX], wms_code[WMS_ERROR_FIELD_MAX];
	const char *local;

	FUZZ_CHECK(st == WMS_ERR_SOAP_FAULT, "a plain Fault gave %s: %.200s", wms_status_name(st),
		   err->message);
	expect(code, sizeof(code), f[F_CODE].p, f[F_CODE].n);
	local = strchr(code, ':');
	local = local ? local + 1 : code;
	if (f[F_REASON].n)
		expect(reason, sizeof(reason), f[F_REASON].p, f[F_REASON].n);
	else
		expect(reason, sizeof(reason), f[F_MESSAGE].p, f[F_MESSAGE].n);
	expect(wms_code, sizeof(wms_code), f[F_WMS_CODE].p, f[F_WMS_CODE].n);
	FUZZ_CHECK(!strcmp(err->fault_code, local), "fault_code \"%s\", expected \"%s\"",
		   err->fault_code, local);
	FUZZ_CHECK(!strcmp(err->fault_string, reason), "fault_string \"%s\", expected \"%s\"",
		   err->fault_string, reason);
	FUZZ_CHECK(!strcmp(err->wms_code, wms_code), "wms_code \"%s\", expected \"%s\"",
		   err->wms_code, wms_code);
}

#define EXPAND_MAX FUZZ_REPLY_EXPAND_MAX

static void one(const uint8_t *data, size_t size)
{
	static fuzz_bytes env;
	fuzz_bytes expanded = { NULL, 0, 0 }, primer = { NULL, 0, 0 };
	const char *rest;
	unsigned sel;
	size_t len, k;
	wms__op op;
	wms_error err;
	wms_status st;
	field f[F_COUNT];
	const char *ct;
	int all_plain = 1;

	if (size < 1)
		return;
	sel = data[0];
	op = (wms__op)(sel & 3u);
	ct = content_types[(sel >> 4) & 7u];
	rest = (const char *)data + 1;
	len = size - 1;
	if (fuzz_expand(data + 1, size - 1, EXPAND_MAX, &expanded, &primer)) {
		rest = (const char *)expanded.data;
		len = expanded.len;
		fuzz_set_primer(primer.len ? (const char *)primer.data : NULL, primer.len);
	}
	if (!(sel & 0x08u)) {
		fuzz_parse_checked(op, rest, len, ct, 0, 0, NULL);
		goto done;
	}
	memset(f, 0, sizeof(f));
	for (k = 0; k < F_COUNT; k++) {
		const char *nul = memchr(rest, 0, len);
		f[k].p = rest;
		f[k].n = nul ? (size_t)(nul - rest) : len;
		if (!nul) {
			rest += len;
			len = 0;
			break;
		}
		len -= f[k].n + 1;
		rest = nul + 1;
	}
	if (len) /* bytes past the sixth field belong to it */
		f[F_FAULT_XML].n = (size_t)(rest + len - f[F_FAULT_XML].p);
	for (k = 0; k < F_COUNT; k++)
		if (!f[k].p)
			f[k].p = "";
	build(&env, f, (sel & 0x04u) != 0, (sel & 0x80u) != 0);
	st = fuzz_parse_checked(op, (const char *)env.data, env.len, ct, 0, 0, &err);
	for (k = 0; k < F_DETAIL_XML; k++)
		all_plain &= plain(&f[k]);
	/* The XML declaration names UTF-8: a header charset changes nothing. */
	if (all_plain && !f[F_DETAIL_XML].n && !f[F_FAULT_XML].n)
		check_plain(f, &err, st);
done:
	fuzz_set_primer(NULL, 0);
	fuzz_bytes_free(&expanded);
	fuzz_bytes_free(&primer);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_run_leak_checked(one, data, size);
	return 0;
}

/* Seed files are Fault bodies: raw mode, 4 operations x 3 Content-Types. */
int fuzz_seed_variant(size_t i, const uint8_t *seed, size_t n, fuzz_bytes *out)
{
	static const uint8_t cts[3] = { 0, 1, 3 };
	uint8_t sel;
	if (i >= 12)
		return 0;
	sel = (uint8_t)((i & 3u) | (cts[i / 4] << 4));
	fuzz_bytes_reset(out);
	fuzz_bytes_add(out, &sel, 1);
	fuzz_bytes_add(out, seed, n);
	return 1;
}

/* A field of `pre`, then n x `frag` (a constant fragment), as macros. */
static void long_field(fuzz_bytes *b, const char *pre, size_t n, const char *frag)
{
	fuzz_bytes_add(b, pre, strlen(pre));
	fuzz_macro_fill(b, n, frag);
}

/* Template-mode fields at their bounds: code, reason, WmsFault code and
 * message around 128 and 256 bytes, in 1- to 4-byte characters. */
static const struct long_seed {
	uint8_t sel;
	int field;        /* which field is long */
	const char *pre;  /* its start */
	size_t n;         /* then n x frag */
	const char *frag;
} long_seeds[] = {
	{ 0x08, F_REASON, "", 255, "r" },              /* fault_string: 255 bytes fit */
	{ 0x08, F_REASON, "", 256, "r" },              /* 256: cut to 255 */
	{ 0x0c, F_REASON, "", 127, "\xc3\xa9" },       /* 254 bytes */
	{ 0x0c, F_REASON, "x", 127, "\xc3\xa9" },      /* 255 */
	{ 0x0c, F_REASON, "xx", 127, "\xc3\xa9" },     /* 256: the last cut whole */
	{ 0x08, F_REASON, "", 85, "\xe2\x82\xac" },    /* 255 bytes of 3-byte characters */
	{ 0x08, F_REASON, "", 86, "\xe2\x82\xac" },    /* 258: cut to 255 */
	{ 0x08, F_REASON, "x", 85, "\xe2\x82\xac" },   /* 256: cut to 253 */
	{ 0x0c, F_REASON, "", 64, "\xf0\x9f\x98\x80" }, /* 256 bytes of 4-byte ones: 252 */
	{ 0x0c, F_REASON, "xxx", 63, "\xf0\x9f\x98\x80" }, /* 255 */
	{ 0x08, F_MESSAGE, "", 255, "m" },             /* no reason: the message, 255 */
	{ 0x0c, F_MESSAGE, "", 128, "\xc3\xa9" },      /* 256: cut */
	{ 0x08, F_CODE, "soap:", 122, "c" },           /* faultcode: 127 bytes fit */
	{ 0x08, F_CODE, "soap:", 123, "c" },           /* 128: cut to 127 */
	{ 0x0c, F_CODE, "env:", 62, "\xc3\xa9" },      /* 128: cut to 126 */
	{ 0x0c, F_CODE, "e", 42, "\xe2\x82\xac" },     /* 127 */
	{ 0x08, F_CODE, "", 128, "c" },                /* no prefix, 128 */
	{ 0x08, F_WMS_CODE, "", 127, "W" },            /* WmsFault code: 127 fit */
	{ 0x08, F_WMS_CODE, "", 128, "W" },            /* 128: cut */
	{ 0x0c, F_WMS_CODE, "W", 63, "\xc3\xa9" },     /* 127 */
	{ 0x0c, F_WMS_CODE, "WW", 63, "\xc3\xa9" },    /* 128: cut to 126 */
};

#define N_LONG (sizeof(long_seeds) / sizeof(long_seeds[0]))

static void long_seed(const struct long_seed *l, fuzz_bytes *out)
{
	static const char *const plain_fields[F_DETAIL_XML] = { "soap:Server", "warehouse-closed",
								"CLOSED", "try-later" };
	int k;
	fuzz_bytes_reset(out);
	fuzz_bytes_add(out, &l->sel, 1);
	for (k = 0; k < F_DETAIL_XML; k++) {
		if (k)
			fuzz_bytes_add(out, "", 1); /* the NUL between fields */
		if (k == l->field)
			long_field(out, l->pre, l->n, l->frag);
		else if (!(l->field == F_MESSAGE && k == F_REASON))
			fuzz_bytes_add(out, plain_fields[k], strlen(plain_fields[k]));
	}
	fuzz_bytes_add(out, "\0\0", 2); /* the raw fields, empty */
}

/* Raw Faults (hx_fault_reply) that cross the parser's limits. */
static void limit_seed(size_t i, fuzz_bytes *out)
{
	static const hx_parts none;
	hx_parts parts = none;
	hx_buf reply = { NULL, 0, 0 };
	fuzz_bytes a = { NULL, 0, 0 };
	const char *detail = NULL;
	int soap12 = (int)(i & 1);
	uint8_t sel = 0, enc[3] = { FUZZ_MACRO, 0xA0, 0x80 };

	switch (i) {
	case 0: /* 256 and 257 attributes on the Fault */
	case 1:
		fuzz_macro_repeat(&a, 256 + i);
		fuzz_bytes_add(&a, " a\x1d=''\x1f", 8);
		parts.resp_attrs = (const char *)a.data;
		break;
	case 2: /* 4096 and 4097 distinct names in the detail (15 of its own) */
	case 3:
		fuzz_macro_repeat(&a, 4081 + (i - 2));
		fuzz_bytes_add(&a, "<n\x1d/>\x1f", 6);
		detail = (const char *)a.data;
		break;
	case 4: /* 64 and 65 declarations on the detail's element, in UTF-16LE */
	case 5:
		fuzz_bytes_add(&a, "<d", 2);
		fuzz_macro_repeat(&a, 64 + (i - 4));
		fuzz_bytes_add(&a, " xmlns:p\x1d='u'\x1f/>", 17);
		detail = (const char *)a.data;
		break;
	default:
		break;
	}
	hx_fault_reply(&reply, soap12, detail, &parts);
	fuzz_bytes_reset(out);
	fuzz_bytes_add(out, &sel, 1);
	if (i >= 4)
		fuzz_bytes_add(out, enc, 3);
	fuzz_bytes_add(out, reply.data, reply.len);
	if (i >= 4)
		fuzz_bytes_add(out, "\x1f", 1);
	hx_free(&reply);
	fuzz_bytes_free(&a);
}

#define N_LIMIT 6

/* Template-mode seeds: a selector, then NUL-separated fields. */
int fuzz_builtin_seed(size_t i, fuzz_bytes *out)
{
	static const struct {
		uint8_t sel;
		const char *fields;
		size_t len;
	} seeds[] = {
#define S(sel, lit) { sel, lit, sizeof(lit) - 1 }
		S(0x08, "soap:Client\0Unknown SKU\0UNKNOWN_SKU\0SKU-9 is not stocked\0\0"),
		S(0x09, "soap:Server.Overloaded\0\0OVERLOADED\0try later\0<wh:retryable>true</wh:retryable>\0"),
		S(0x0e, "env:Receiver\0Internal error\0INTERNAL\0\0\0<env:Role>urn:x</env:Role>"),
		S(0x8f, "env:Sender\0\0DUPLICATE_MISMATCH\0order differs\0\0"),
		S(0x1a, "Client\0caf\xc3\xa9 ferm\xc3\xa9\0NOT_CANCELLABLE\0\0\0"),
		S(0x3b, "a:b:c\0  spaced\r\n\treason  \0X\0\0\0"),
		S(0x0c, "env:Sender\0<![CDATA[cdata <reason>]]>\0CODE&amp;1\0&#10;\0\0"),
		/* node-soap's unqualified WmsFault after the template's own: two,
		 * so neither code is read */
		S(0x08, "soap:Client\0refused\0UNKNOWN_SKU\0\0<WmsFault><code>OTHER</code></WmsFault>\0"),
		S(0x0c, "env:Sender\0\0UNKNOWN_SKU\0msg\0<WmsFault><code>X</code><message>m</message>"
			"</WmsFault>\0"),
#undef S
	};
	size_t n = sizeof(seeds) / sizeof(seeds[0]);
	if (i < n) {
		fuzz_bytes_reset(out);
		fuzz_bytes_add(out, &seeds[i].sel, 1);
		fuzz_bytes_add(out, seeds[i].fields, seeds[i].len);
		return 1;
	}
	i -= n;
	if (i < N_LONG) {
		long_seed(&long_seeds[i], out);
		return 1;
	}
	i -= N_LONG;
	if (i < N_LIMIT) {
		limit_seed(i, out);
		return 1;
	}
	return 0;
}
