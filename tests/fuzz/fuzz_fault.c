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
 * In template mode, when the four text fields are plain (printable ASCII,
 * no space, '<', '&' or ']') and the raw fields empty, the result must be
 * WMS_ERR_SOAP_FAULT with exactly those values: the code's prefix removed,
 * the reason (or, without one, the WmsFault message), the WmsFault code.
 */
#include <string.h>
#include "fuzz.h"

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

static int plain(const field *f)
{
	size_t i;
	for (i = 0; i < f->n; i++) {
		unsigned char c = (unsigned char)f->p[i];
		if (c <= 0x20 || c >= 0x7F || c == '<' || c == '&' || c == ']')
			return 0;
	}
	return 1;
}

/* What the parser must report for a plain field: at most size-1 bytes. */
static void expect(char *dst, size_t size, const char *s, size_t n)
{
	if (n > size - 1)
		n = size - 1;
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

static void one(const uint8_t *data, size_t size)
{
	static fuzz_bytes env;
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
	if (!(sel & 0x08u)) {
		fuzz_parse_checked(op, rest, len, ct, 0, 0, NULL);
		return;
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
#undef S
	};
	if (i >= sizeof(seeds) / sizeof(seeds[0]))
		return 0;
	fuzz_bytes_reset(out);
	fuzz_bytes_add(out, &seeds[i].sel, 1);
	fuzz_bytes_add(out, seeds[i].fields, seeds[i].len);
	return 1;
}
