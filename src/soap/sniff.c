/* A reply's bytes, looked at before libxml2 reads one of them: what the
 * body is (empty, text, an HTML page, XML) and in which encoding, whether
 * its byte order mark, XML declaration and Content-Type agree, and the
 * structural limits of soap/limits.h, scanned as libxml2 will read the
 * body (decoded first when its encoding is not ASCII-compatible).
 *
 * Separate from the parse (soap/parse.c) because none of it needs a parser
 * context: it works on plain bytes, and fixture files and requests matched
 * against them (wms__xml_check_limits) go through the same checks without
 * the reply parser.
 */
#include <string.h>
#include <libxml/encoding.h>
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/xmlerror.h>
#include "soap/soap.h"
#include "soap/limits.h"
#include "soap/sniff.h"

#define X(s) ((const xmlChar *)(s))

/* ---- small byte helpers (locale-independent) ------------------------------ */

int wms__xml_space(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static unsigned char lower(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') ? (unsigned char)(c - 'A' + 'a') : c;
}

/* Whether [p, end) starts with `lit` (lower-case ASCII), ignoring case. */
int wms__starts_ci(const char *p, const char *end, const char *lit)
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
	while (p < end && wms__xml_space((unsigned char)*p))
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
			if (!strncmp(decl, "<?xml", 5) && wms__xml_space((unsigned char)decl[5]) && q) {
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
		    wms__xml_space((unsigned char)p[5])) {
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
	if (wms__starts_ci(p, end, "<!doctype")) {
		q = skip_space(p + 9, end);
		if (wms__starts_ci(q, end, "html") &&
		    (q + 4 == end || wms__xml_space((unsigned char)q[4]) || q[4] == '>'))
			r->kind = SNIFF_HTML;
	} else if (wms__starts_ci(p, end, "<html") &&
		   (p + 5 == end || wms__xml_space((unsigned char)p[5]) || p[5] == '>' ||
		    p[5] == '/')) {
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
int wms__media_is_html(const char *ct)
{
	const char *end;
	if (!ct)
		return 0;
	end = ct + strlen(ct);
	ct = skip_space(ct, end);
	return wms__starts_ci(ct, end, "text/html") &&
	       (ct + 9 == end || ct[9] == ';' || wms__xml_space((unsigned char)ct[9]));
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
		if (!wms__starts_ci(p, end, "charset"))
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
			while (p < end && *p != ';' && !wms__xml_space((unsigned char)*p))
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
		return wms__fail(err, WMS_ERR_UNEXPECTED_REPLY, WMS_DELIVERY_ANSWERED,
				 "reply refused: %s", what);
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

/* ---- a reply, before the parser ---------------------------------------------- */

wms_status wms__sniff_reply(const char *buf, size_t len, const char *content_type,
			    uint64_t deadline_ns, char charset[WMS__SNIFF_CHARSET_MAX],
			    const char **encoding, wms_error *err)
{
	char start[40];
	const char *why;
	sniff_result sn;

	*encoding = NULL;
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
	if (!sn.bom && !sn.declared_enc &&
	    media_charset(content_type, charset, WMS__SNIFF_CHARSET_MAX) &&
	    xmlStrcasecmp(X(charset), X("utf-8")) && xmlStrcasecmp(X(charset), X("utf8")) &&
	    encoding_read(charset)) {
		wms__xml_quiet quiet;
		xmlCharEncodingHandlerPtr h;
		wms__xml_quiet_begin(&quiet);
		h = xmlFindCharEncodingHandler(charset);
		wms__xml_quiet_end(&quiet);
		if (h) {
			xmlCharEncCloseFunc(h);
			*encoding = charset;
		}
	}
	return check_limits(buf, len, &sn, *encoding, deadline_ns, err);
}
