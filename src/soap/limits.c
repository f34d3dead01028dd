/* The structural limits of src/soap/limits.h, counted on the bytes. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "internal.h"
#include "soap/limits.h"

/* Byte classes: XML white space, and what ends a tag's or an attribute's
 * name. A table: the scan runs on every reply, and most of its bytes are
 * names. */
enum { SP = 1, END = 2 };
static const unsigned char cls[256] = {
	[' '] = SP | END, ['\t'] = SP | END, ['\r'] = SP | END, ['\n'] = SP | END,
	['='] = END, ['>'] = END, ['/'] = END, ['"'] = END, ['\''] = END, ['<'] = END,
};

static int space(char c)
{
	return cls[(unsigned char)c] & SP;
}

static int name_end(char c)
{
	return cls[(unsigned char)c] & END;
}

static int hit(wms__xml_scan *out, const char *limit, unsigned max, const char *buf,
	       const char *tag, const char *end)
{
	const char *p = tag + 1;
	size_t n = 0;

	out->limit = limit;
	out->max = max;
	out->offset = (size_t)(tag - buf);
	while (p < end && !name_end(*p) && n + 1 < sizeof(out->element)) {
		unsigned char c = (unsigned char)*p++;
		out->element[n++] = c > 0x20 && c < 0x7F ? (char)c : '.';
	}
	out->element[n] = '\0';
	return WMS__XML_SCAN_LIMIT;
}

/* wms__find in [p, end), a window of WMS__XML_SCAN_CLOCK_BYTES at a time
 * with the deadline checked between windows: a comment, PI or CDATA
 * section as long as the body is searched under the call's deadline too.
 * NULL when not found, or (*late set to where it was) when the deadline
 * passed first. */
static const char *find_timed(const char *p, const char *end, const char *s, size_t n,
			      uint64_t deadline_ns, const char **late)
{
	while (p < end) {
		const char *w = (size_t)(end - p) > WMS__XML_SCAN_CLOCK_BYTES
					? p + WMS__XML_SCAN_CLOCK_BYTES
					: end;
		/* a match starting in [p, w) may end up to n - 1 bytes past w */
		const char *q = wms__find(p, (size_t)(end - w) >= n - 1 ? w + n - 1 : end, s, n);
		if (q || w == end)
			return q;
		p = w;
		if (deadline_ns && wms__now_ns() >= deadline_ns) {
			*late = p;
			return NULL;
		}
	}
	return NULL;
}

/* An element, with its namespace declarations, enters the scope. */
static int open_element(unsigned char *ns_of, size_t *depth, unsigned *scope, unsigned ns)
{
	if ((*scope += ns) > WMS__XML_MAX_NS_SCOPE)
		return 0;
	ns_of[(*depth)++] = (unsigned char)ns;
	return 1;
}

/* The first '<' at or after `from` (`end` if none). The scan only moves
 * forward, so the last one found is kept: every search for a '>' or a
 * quote stops at it, and no byte is searched twice for a '<' (a search
 * through the rest of the body at each end tag was quadratic). */
static const char *next_lt(const char **seen, const char *from, const char *end)
{
	if (!*seen || *seen < from) {
		*seen = memchr(from, '<', (size_t)(end - from));
		if (!*seen)
			*seen = end;
	}
	return *seen;
}

/* One function of about 150 lines, on purpose: one pass over the bytes,
 * each markup kind a branch of one loop sharing the scan's position, depth
 * and namespace scope; the per-tag work is in the helpers above. */
int wms__xml_scan_limits(wms__xml_scan *out, const char *buf, size_t len, uint64_t deadline_ns)
{
	/* Namespace declarations of each open element, to leave the scope with
	 * it; a little deeper than the parsers go (they stop at their depth
	 * limit, with an error), so the scan stops where it is full. */
	unsigned char ns_of[WMS__XML_MAX_DEPTH + 8];
	const char *p = buf, *end = buf + len, *lt = NULL;
	size_t depth = 0, elements = 0, clock_at = WMS__XML_SCAN_CLOCK_BYTES;
	unsigned scope = 0;
	const char *late = NULL;
	/* Once a start tag has gone past the depth, libxml2 has stopped there
	 * or before (on that depth, or on an earlier fatal error: in
	 * well-formed XML the scan's depth is libxml2's): nothing after it is
	 * the first cause, even where the scan, reading on for the limits
	 * from inside a comment it skipped, counts the depth down again. */
	int past_depth = 0;

	memset(out, 0, sizeof(*out));
	while (p < end && (p = next_lt(&lt, p, end)) < end) {
		const char *tag = p++;
		unsigned attrs = 0, ns = 0;
		int is_ns = 0;

		if (deadline_ns && (size_t)(tag - buf) >= clock_at) {
			if (wms__now_ns() >= deadline_ns) {
				out->offset = (size_t)(tag - buf);
				return WMS__XML_SCAN_LATE;
			}
			clock_at = (size_t)(tag - buf) + WMS__XML_SCAN_CLOCK_BYTES;
		}

		if (p == end)
			break;
		if (*p == '/') {
			/* An end tag: libxml2 closes the element even when it is
			 * malformed, and goes on at a '<' before any '>'. */
			const char *stop = next_lt(&lt, p, end);
			const char *gt = memchr(p, '>', (size_t)(stop - p));
			if (depth)
				scope -= ns_of[--depth];
			p = gt ? gt + 1 : stop;
			continue;
		}
		if (*p == '?') {
			if (!(p = find_timed(p + 1, end, "?>", 2, deadline_ns, &late)))
				break;
			p += 2;
			continue;
		}
		if (*p == '!') {
			if (end - p >= 3 && p[1] == '-' && p[2] == '-') {
				const char *dd = find_timed(p + 3, end, "--", 2, deadline_ns, &late);
				if (!dd)
					break;
				/* Past the depth, the parsers have stopped before
				 * this comment: it is not reported (the scan reads
				 * on, for the limits). */
				if (dd + 2 < end && dd[2] != '>' && past_depth) {
					p = dd + 2;
					continue;
				}
				if (dd + 2 < end && dd[2] != '>') {
					out->malformed = 1;
					out->limit = "'--' inside a comment";
					out->offset = (size_t)(dd - buf);
					return WMS__XML_SCAN_MALFORMED;
				}
				p = dd + 2 < end ? dd + 3 : end;
				continue;
			}
			if (end - p >= 8 && !memcmp(p, "![CDATA[", 8)) {
				if (!(p = find_timed(p + 8, end, "]]>", 3, deadline_ns, &late)))
					break;
				p += 3;
				continue;
			}
			break; /* a DOCTYPE (refused) or not XML: libxml2 goes no further */
		}
		/* A start tag: its name, then attributes up to '>' or "/>". A '<'
		 * before either (in a value too, where it is not allowed) ends it
		 * as libxml2 does: the element stays open and markup goes on at
		 * that '<'. */
		if (++elements > WMS__XML_MAX_ELEMENTS)
			return hit(out, "elements in one document", WMS__XML_MAX_ELEMENTS, buf, tag, end);
		while (p < end && !name_end(*p))
			p++;
		for (;;) {
			while (p < end && space(*p))
				p++;
			if (p == end)
				return WMS__XML_SCAN_OK; /* cut short: never parsed as a start tag */
			if (*p == '<' || *p == '>' || (*p == '/' && p + 1 < end && p[1] == '>')) {
				int empty = *p == '/';
				if (*p != '<')
					p += empty ? 2 : 1;
				if (depth == sizeof(ns_of))
					return WMS__XML_SCAN_OK; /* past where the parsers stop */
				if (!open_element(ns_of, &depth, &scope, ns))
					return hit(out, "namespace declarations in scope",
						   WMS__XML_MAX_NS_SCOPE, buf, tag, end);
				if (depth > WMS__XML_MAX_DEPTH)
					past_depth = 1;
				if (empty)
					scope -= ns_of[--depth];
				break;
			}
			if (*p == '"' || *p == '\'') {
				const char *stop = next_lt(&lt, p + 1, end);
				const char *q = memchr(p + 1, *p, (size_t)(stop - p - 1));
				if (q)
					p = q + 1;
				else if (stop < end)
					p = stop; /* ends the tag, above */
				else
					return WMS__XML_SCAN_OK; /* a value never closed: libxml2 stops in it */
			} else if (*p == '=') {
				/* One '=' per attribute outside its value. */
				if (is_ns) {
					if (++ns > WMS__XML_MAX_NS_DECLS)
						return hit(out, "namespace declarations on one element",
							   WMS__XML_MAX_NS_DECLS, buf, tag, end);
				} else if (++attrs > WMS__XML_MAX_ATTRS) {
					return hit(out, "attributes on one element", WMS__XML_MAX_ATTRS,
						   buf, tag, end);
				}
				is_ns = 0;
				p++;
			} else {
				/* An attribute's name (or a stray byte: not well-formed). */
				const char *n = p;
				while (p < end && !name_end(*p))
					p++;
				if (p == n)
					p++; /* a lone '/' */
				/* "xmlns:" then a byte no NCName starts with (a digit,
				 * '-', '.', ':'): libxml2 reads the whole as an
				 * attribute's name, not a declaration. */
				is_ns = (p - n == 5 && !memcmp(n, "xmlns", 5)) ||
					(p - n > 6 && !memcmp(n, "xmlns:", 6) &&
					 !(n[6] >= '0' && n[6] <= '9') && n[6] != '-' && n[6] != '.' &&
					 n[6] != ':');
			}
		}
	}
	if (late) {
		out->offset = (size_t)(late - buf);
		return WMS__XML_SCAN_LATE;
	}
	return WMS__XML_SCAN_OK;
}

void wms__xml_scan_describe(const wms__xml_scan *scan, char *dst, size_t size)
{
	if (scan->malformed)
		snprintf(dst, size, "%s (byte %zu%s)", scan->limit, scan->offset,
			 scan->decoded ? " of the text decoded to UTF-8" : "");
	else
		snprintf(dst, size, "<%s> crosses libwms's limit of %u %s", scan->element, scan->max,
			 scan->limit);
}
