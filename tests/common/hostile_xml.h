/*
 * Generators of replies that cross libwms's structural limits
 * (src/soap/limits.h): many distinct names, many attributes, many namespace
 * declarations, on the elements of a SOAP reply where a WMS, a proxy or an
 * attacker could put them. Shared by the parser's unit tests, the hostile
 * replies through a client, and the fuzz harnesses' generators, so that all
 * of them reach the limits the same way. Allocation failures abort: these
 * are test tools.
 */
#ifndef WMS_TEST_HOSTILE_XML_H
#define WMS_TEST_HOSTILE_XML_H

#include <stddef.h>

typedef struct hx_buf {
	char *data; /* NUL-terminated */
	size_t len, cap;
} hx_buf;

void hx_put(hx_buf *b, const char *fmt, ...)
#if defined(__GNUC__)
	__attribute__((format(printf, 2, 3)))
#endif
	;
void hx_bytes(hx_buf *b, const void *p, size_t n);
/* Whole copies of `unit` until b holds at least `upto` bytes (as a loop of
 * hx_put(b, unit) would, without a printf per copy: megabytes of them are
 * slow under valgrind). */
void hx_fill(hx_buf *b, const char *unit, size_t upto);
void hx_free(hx_buf *b);

/* n attributes ` NAMEi=''` with distinct names (name "a" gives a0, a1...). */
void hx_attrs(hx_buf *b, unsigned n, const char *name);
/* n namespace declarations ` xmlns:pI='urn:hx:I'`, I from `first`. */
void hx_ns_decls(hx_buf *b, unsigned n, unsigned first);
/* n empty elements: `<e0/><e1/>...` (distinct) or `<e/><e/>...`. */
void hx_elements(hx_buf *b, unsigned n, int distinct);

#define HX_SOAP11 "http://schemas.xmlsoap.org/soap/envelope/"
#define HX_SOAP12 "http://www.w3.org/2003/05/soap-envelope"
#define HX_WH "urn:libwms:warehouse:1"

/* What goes into a reply besides its fixed parts (NULL: nothing). */
typedef struct hx_parts {
	const char *decl;        /* before the Envelope, e.g. an XML declaration */
	const char *env_attrs;   /* on the Envelope, after its two declarations */
	const char *header;      /* the Header's content (a Header only if set) */
	const char *body_attrs;  /* on the Body */
	const char *resp_attrs;  /* on the response (or Fault) element */
	const char *resp_before; /* its first children, before the fields */
} hx_parts;

/* A SOAP 1.1 SubmitOrderResponse for `id` (wmsReference "WMS-H1"). */
void hx_submit_reply(hx_buf *out, const char *id, const hx_parts *parts);
/* A Server fault, SOAP 1.1 or 1.2, whose detail holds `detail_before`
 * (parts->resp_before is ignored) and then WmsFault code "INTERNAL". */
void hx_fault_reply(hx_buf *out, int soap12, const char *detail_before, const hx_parts *parts);

/* What to generate, n times, each with fresh names. */
typedef enum hx_what {
	HX_ATTRS,    /* ` aI=''` */
	HX_NS_DECLS, /* ` xmlns:pI='urn:hx:I'` */
	HX_NAMES,    /* `<eI/>`: distinct empty elements */
	HX_ELEMENTS  /* `<e/>`: one name, n elements */
} hx_what;

/* Where a reply carries it: attributes and declarations on, elements in. */
typedef enum hx_where {
	HX_RESPONSE, /* the SubmitOrderResponse (elements before its fields) */
	HX_ENVELOPE, /* the Envelope (attributes and declarations only) */
	HX_BODY,     /* the Body (attributes and declarations only) */
	HX_HEADER,   /* an element h:Trace in a SOAP Header */
	HX_FAULT11,  /* a SOAP 1.1 Server fault's detail: an element d there */
	HX_FAULT12   /* the same in SOAP 1.2 (a Receiver fault) */
} hx_where;

void hx_gen(hx_buf *b, hx_what what, unsigned n);

/* A reply for `id` (or a fault: HX_FAULT11/12) with n of `what` at `where`. */
void hx_reply(hx_buf *out, const char *id, hx_what what, unsigned n, hx_where where);

/* ASCII text as UTF-16 (big or little endian), with a BOM or without. The
 * byte 0x01 stands for U+3D00, a CJK letter whose UTF-16 holds the byte of
 * '=': names that only a scan of the decoded text reads right. */
void hx_utf16(hx_buf *out, const char *ascii, size_t len, int big_endian, int bom);

#endif
