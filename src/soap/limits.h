/* Structural limits on the XML libwms reads (replies, fixture files),
 * checked on the bytes before libxml2 sees them. libxml2 2.9 compares every
 * attribute of an element with every other, every namespace declaration
 * with every other, and looks each prefix up through every declaration in
 * scope: costs quadratic in what one start tag carries, paid before any
 * SAX callback could object. The scan is linear and knows no libxml2. */
#ifndef WMS_XML_LIMITS_H
#define WMS_XML_LIMITS_H

#include <stddef.h>
#include <stdint.h>

/* libxml2's own depth limit (xmlParserMaxDepth without XML_PARSE_HUGE), which
 * only its tree builder enforces: the reply parser, which builds no tree,
 * enforces it itself. */
#define WMS__XML_MAX_DEPTH 256
/* An XML declaration or processing instruction that opens a body ends
 * within this many characters, "<?" and "?>" included: libxml2 2.9's push
 * parser, given an encoding, reads one 45 bytes at a time (90 in UTF-16)
 * until its "?>", looking back through all it holds for a '>' each time
 * (quadratic: 2 MiB without "?>" took 13 s). */
#define WMS__XML_MAX_OPENING_PI 511
#define WMS__XML_STR_(x) #x
#define WMS__XML_STR(x) WMS__XML_STR_(x) /* a limit's value, as a string */
#define WMS__XML_MAX_ELEMENTS 100000u /* elements in one document */
#define WMS__XML_MAX_ATTRS 256u       /* attributes on one element */
#define WMS__XML_MAX_NS_DECLS 64u     /* namespace declarations on one element */
#define WMS__XML_MAX_NS_SCOPE 128u    /* namespace declarations in scope at once */
#define WMS__XML_MAX_NAMES 4096u      /* distinct names in one document (checked while parsing) */

/* What a scan found: `limit` NULL when the document keeps every limit. */
/* The encodings a reply or fixture may declare (soap/parse.c,
 * encoding_read), for messages and docs. */
#define WMS__ENCODINGS_READ                                                                   \
	"UTF-8, UTF-16, US-ASCII, ISO-8859-1 to -16, windows-1250 to -1258, Shift_JIS and EUC-JP"

typedef struct wms__xml_scan {
	const char *limit; /* "attributes on one element", ... (static); after
			    * wms__xml_check_limits' NOT_XML, why */
	int malformed;     /* not a limit: markup libxml2 rejects, and at a cost
			    * (`limit` says what) */
	unsigned max;      /* that limit's value */
	size_t offset;     /* where the start tag that crossed it begins */
	char element[48];  /* its name, printable ASCII ('.' for anything else), cut */
	int decoded;       /* offset counts bytes of the body decoded to UTF-8
			    * (set by wms__xml_check_limits and the reply
			    * parser, not by wms__xml_scan_limits) */
} wms__xml_scan;

enum {
	WMS__XML_SCAN_OK = 0,    /* every limit kept */
	WMS__XML_SCAN_LIMIT = 1, /* one crossed: see `out` */
	WMS__XML_SCAN_LATE = 2,  /* the deadline passed; out->offset: where the scan stopped */
	WMS__XML_SCAN_MALFORMED = 3 /* see out->malformed */
};

/* The scan looks at the clock after each this many bytes (never before). */
#define WMS__XML_SCAN_CLOCK_BYTES (1u << 20)

/*
 * Scan [buf, buf + len) as XML in an encoding where every byte below 0x80 is
 * the ASCII character (UTF-8, US-ASCII, ISO-8859-*, windows-125*): count
 * elements, attributes and namespace declarations per start tag, and the
 * declarations in scope. Comments, CDATA sections and processing
 * instructions are skipped; the scan stops at a DOCTYPE (libxml2 reads
 * nothing past one: the parsers refuse it). On XML that is not well-formed
 * it may count more than libxml2 would, never less: the parsers stop
 * libxml2 at its first fatal error (the reply parser's push parser stops
 * there and is fed no more; the tree parser, soap/tree.c, ends the parse
 * from its error handler and gives libxml2 no more input), and up to that
 * point the two read the same markup. A comment holding "--" (not
 * well-formed) is reported as malformed: libxml2's tree parser copies the
 * comment read so far for each one, a cost quadratic in the comment. `deadline_ns` (wms__now_ns() time, 0: none) is looked at
 * every WMS__XML_SCAN_CLOCK_BYTES. Returns a WMS__XML_SCAN_* value.
 */
int wms__xml_scan_limits(wms__xml_scan *out, const char *buf, size_t len, uint64_t deadline_ns);

/* What a scan that crossed a limit or found markup libxml2 rejects found,
 * for a message, into dst: "<e> crosses libwms's limit of 256 attributes on
 * one element", or "'--' inside a comment (byte 88)". */
void wms__xml_scan_describe(const wms__xml_scan *scan, char *dst, size_t size);

#endif
