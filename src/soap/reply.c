/* Reading a parsed reply into the reply structs: the SOAP Envelope and
 * Body, each operation's response with its typed values (ids, states,
 * booleans, xs:long, xs:dateTime), and SOAP 1.1 and 1.2 faults into
 * wms_error.
 *
 * Separate from the parse (soap/parse.c) because it knows the WSDL and
 * nothing of libxml2's parser: it walks the elements a parse recorded
 * (soap/parsed.h), matching each by namespace URI and local name, never by
 * prefix, and copies out everything that outlives the call.
 */
#include <stdio.h>
#include <string.h>
#include <libxml/xmlstring.h>
#include "soap/soap.h"
#include "soap/parsed.h"
#include "soap/sniff.h"

#define X(s) ((const xmlChar *)(s))
#define S(s) ((const char *)(s))

#define VALUE_MAX 256 /* longest text of a simple value looked at, white space
			* included (trimmed after) */

/* ---- public helpers declared in wms/client.h ------------------------------ */

const char *wms_order_state_name(wms_order_state state)
{
	switch (state) {
	case WMS_ORDER_STATE_RECEIVED: return "RECEIVED";
	case WMS_ORDER_STATE_ALLOCATED: return "ALLOCATED";
	case WMS_ORDER_STATE_PICKING: return "PICKING";
	case WMS_ORDER_STATE_PACKED: return "PACKED";
	case WMS_ORDER_STATE_SHIPPED: return "SHIPPED";
	case WMS_ORDER_STATE_CANCELLED: return "CANCELLED";
	case WMS_ORDER_STATE_UNKNOWN: return "UNKNOWN";
	}
	return "UNKNOWN";
}

void wms_stock_reply_free(wms_stock_reply *reply)
{
	if (!reply)
		return;
	wms__free(reply->levels);
	wms__free(reply);
}

/* ---- tree helpers ----------------------------------------------------------- */

/* `uri` NULL means "no namespace". */
static int is_el(const rel *n, const char *uri, const char *name)
{
	if (!n || strcmp(n->name, name) != 0)
		return 0;
	if (!uri)
		return !n->uri;
	return n->uri && !strcmp(n->uri, uri);
}

static const rel *child(const rel *parent, const char *uri, const char *name)
{
	const rel *c;
	if (!parent)
		return NULL;
	for (c = parent->children; c; c = c->next)
		if (is_el(c, uri, name))
			return c;
	return NULL;
}

static const char *ns_uri(const rel *n)
{
	return n->uri ? n->uri : "";
}

enum { TEXT_OK, TEXT_TOO_LONG, TEXT_HAS_ELEMENTS };

/* Concatenate the element's character data (text and CDATA; comments and
 * PIs are not recorded) into dst. Cut at a character boundary when it does
 * not fit. Child elements are ignored when `lenient`, an error otherwise. */
static int element_text(const rel *el, char *dst, size_t size, int lenient)
{
	const rseg *t;
	size_t len = 0, n;

	dst[0] = '\0';
	if (el->children && !lenient)
		return TEXT_HAS_ELEMENTS;
	for (t = el->text; t; t = t->next) {
		n = t->len;
		if (len + n >= size) {
			n = size - 1 - len;
			while (n > 0 && (t->p[n] & 0xC0) == 0x80)
				n--;
			memcpy(dst + len, t->p, n);
			dst[len + n] = '\0';
			return TEXT_TOO_LONG;
		}
		memcpy(dst + len, t->p, n);
		len += n;
		dst[len] = '\0';
	}
	return TEXT_OK;
}

/* Strip leading and trailing XML whitespace in place. */
static void trim(char *s)
{
	size_t n = strlen(s), start = 0;
	while (n && wms__xml_space((unsigned char)s[n - 1]))
		n--;
	while (start < n && wms__xml_space((unsigned char)s[start]))
		start++;
	memmove(s, s + start, n - start);
	s[n - start] = '\0';
}

/* Control characters and runs of whitespace become single spaces. */
static void flatten(char *s)
{
	char *w = s;
	int space = 0;
	trim(s);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c < 0x20 || c == 0x7F || c == ' ') {
			space = 1;
			continue;
		}
		if (space)
			*w++ = ' ';
		space = 0;
		*w++ = *s;
	}
	*w = '\0';
}

static wms_status unexpected(wms_error *err, const char *fmt, ...)
#if defined(__GNUC__)
	__attribute__((format(printf, 2, 3)))
#endif
	;

static wms_status unexpected(wms_error *err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	wms__vfail(err, WMS_ERR_UNEXPECTED_REPLY, WMS_DELIVERY_ANSWERED, fmt, ap);
	va_end(ap);
	return WMS_ERR_UNEXPECTED_REPLY;
}

/* ---- typed values ------------------------------------------------------------ */

/* The one child {wh}name of parent, which the schema allows once: NULL and
 * an error if it is missing or repeated. `where` names the parent. */
static const rel *single(const rel *parent, const char *where, const char *name, wms_error *err)
{
	const rel *el = child(parent, WMS__NS, name), *c;

	if (!el) {
		unexpected(err, "%s: missing {%s}%s", where, WMS__NS, name);
		return NULL;
	}
	/* A second one makes the reply say two things, and taking the first
	 * (or the last) would be a guess: refused, whatever either holds. */
	for (c = el->next; c; c = c->next) {
		if (is_el(c, WMS__NS, name)) {
			unexpected(err, "%s/%s: repeated, the schema allows one", where, name);
			return NULL;
		}
	}
	return el;
}

/* The trimmed text of the required single child {wh}name of parent, at
 * most size - 1 bytes, not empty. `where` names the parent in messages;
 * `type`, when not NULL, is the XML Schema type a bad value is said not to
 * be. */
static wms_status value(const rel *parent, const char *where, const char *name, char *dst,
			size_t size, const char *type, wms_error *err)
{
	char tmp[VALUE_MAX + 1];
	const rel *el = single(parent, where, name, err);
	int rc;

	if (!el)
		return WMS_ERR_UNEXPECTED_REPLY;
	rc = element_text(el, tmp, sizeof(tmp), 0);
	trim(tmp);
	if (type && (rc != TEXT_OK || strlen(tmp) >= size || !tmp[0]))
		return unexpected(err, "%s/%s: not an %s", where, name, type);
	if (rc == TEXT_HAS_ELEMENTS)
		return unexpected(err, "%s/%s: expected text, found child elements", where, name);
	if (rc == TEXT_TOO_LONG)
		return unexpected(err, "%s/%s: text longer than %d bytes, white space included "
				  "(the value is at most %zu)", where, name, VALUE_MAX, size - 1);
	if (strlen(tmp) >= size)
		return unexpected(err, "%s/%s: value longer than %zu bytes", where, name, size - 1);
	if (!tmp[0])
		return unexpected(err, "%s/%s: empty", where, name);
	memcpy(dst, tmp, strlen(tmp) + 1);
	return WMS_OK;
}

/* Ids in replies: 1-64 bytes, no whitespace or control characters. The
 * charset is not enforced: a WMS that widens it must not break every call. */
static wms_status id_value(const rel *parent, const char *where, const char *name,
			   char dst[WMS_ID_MAX + 1], wms_error *err)
{
	wms_status rc = value(parent, where, name, dst, WMS_ID_MAX + 1, NULL, err);
	const unsigned char *p;
	if (rc != WMS_OK)
		return rc;
	for (p = (const unsigned char *)dst; *p; p++)
		if (*p <= 0x20 || *p == 0x7F)
			return unexpected(err, "%s/%s: invalid identifier \"%.40s\"", where, name, dst);
	return WMS_OK;
}

static wms_status state_value(const rel *parent, const char *where, wms_order_state *out,
			      wms_error *err)
{
	static const wms_order_state states[] = {
		WMS_ORDER_STATE_RECEIVED, WMS_ORDER_STATE_ALLOCATED, WMS_ORDER_STATE_PICKING,
		WMS_ORDER_STATE_PACKED, WMS_ORDER_STATE_SHIPPED, WMS_ORDER_STATE_CANCELLED,
	};
	char v[WMS_ID_MAX + 1];
	wms_status rc = value(parent, where, "state", v, sizeof(v), NULL, err);
	size_t i;
	if (rc != WMS_OK)
		return rc;
	for (i = 0; i < sizeof(states) / sizeof(states[0]); i++) {
		if (!strcmp(v, wms_order_state_name(states[i]))) {
			*out = states[i];
			return WMS_OK;
		}
	}
	/* A state this version does not know yet is fine; a malformed one is not. */
	for (i = 0; v[i]; i++)
		if (!((v[i] >= 'A' && v[i] <= 'Z') || (i > 0 && ((v[i] >= '0' && v[i] <= '9') ||
								 v[i] == '_'))))
			return unexpected(err, "%s/state: invalid value \"%.40s\"", where, v);
	*out = WMS_ORDER_STATE_UNKNOWN;
	return WMS_OK;
}

static wms_status bool_value(const rel *parent, const char *where, const char *name, int *out,
			     wms_error *err)
{
	char v[8];
	wms_status rc = value(parent, where, name, v, sizeof(v), "xs:boolean", err);
	if (rc != WMS_OK)
		return rc;
	if (!strcmp(v, "true") || !strcmp(v, "1"))
		*out = 1;
	else if (!strcmp(v, "false") || !strcmp(v, "0"))
		*out = 0;
	else
		return unexpected(err, "%s/%s: not an xs:boolean (\"%s\")", where, name, v);
	return WMS_OK;
}

static wms_status long_value(const rel *parent, const char *where, const char *name,
			     int64_t *out, wms_error *err)
{
	char v[32];
	const char *p = v;
	uint64_t mag = 0, limit;
	int neg = 0;
	wms_status rc = value(parent, where, name, v, sizeof(v), "xs:long", err);

	if (rc != WMS_OK)
		return rc;
	if (*p == '-' || *p == '+')
		neg = *p++ == '-';
	limit = neg ? (uint64_t)INT64_MAX + 1u : (uint64_t)INT64_MAX;
	if (!*p)
		goto bad;
	for (; *p; p++) {
		if (*p < '0' || *p > '9' || mag > (limit - (uint64_t)(*p - '0')) / 10u)
			goto bad;
		mag = mag * 10u + (uint64_t)(*p - '0');
	}
	if (neg)
		*out = mag ? -(int64_t)(mag - 1u) - 1 : 0;
	else
		*out = (int64_t)mag;
	return WMS_OK;
bad:
	return unexpected(err, "%s/%s: not an xs:long (\"%s\")", where, name, v);
}

static int digits(const char *p, int n)
{
	int i;
	for (i = 0; i < n; i++)
		if (p[i] < '0' || p[i] > '9')
			return 0;
	return 1;
}

static int num2(const char *p)
{
	return (p[0] - '0') * 10 + (p[1] - '0');
}

/* Whether an xs:dateTime is out of range, and in which field: NULL if it is
 * not. Its lexical form is
 *   -?YYYY-MM-DDThh:mm:ss(.s+)?(Z|[+-]hh:mm)?
 * and a malformed one gives "" ("not an xs:dateTime"). The ranges are XML
 * Schema's (Part 2, 3.2.7 and 3.3.7 in 1.1): a year of four digits or more,
 * no leading zero past four and not 0000 (1.0 has no year zero); month
 * 01-12; day 01 to the month's last (Gregorian leap years, the year's sign
 * aside); hour 00-23, or 24 for 24:00:00 (with a fraction, only zeros): the
 * end of that day; minute 00-59; second 00-59 with any fraction, so no leap
 * second (xs:dateTime has none, and neither has our timestamps); and a zone
 * of at most 14:00 either way, minutes 00-59. */
static const char *datetime_error(const char *s)
{
	static const int mdays[12] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	const char *p = s, *frac = NULL;
	int year = 0, y400 = 0, nonzero = 0, bad_year, month, day, hour, minute, second, i, last;
	int zone_h = 0, zone_m = 0;

	if (*p == '-')
		p++;
	while (p[year] >= '0' && p[year] <= '9') {
		y400 = (y400 * 10 + (p[year] - '0')) % 400;
		nonzero |= p[year] != '0';
		year++;
	}
	if (year < 4)
		return "";
	bad_year = (year > 4 && p[0] == '0') || !nonzero;
	p += year;
	if (!(p[0] == '-' && digits(p + 1, 2) && p[3] == '-' && digits(p + 4, 2) && p[6] == 'T' &&
	      digits(p + 7, 2) && p[9] == ':' && digits(p + 10, 2) && p[12] == ':' &&
	      digits(p + 13, 2)))
		return "";
	month = num2(p + 1);
	day = num2(p + 4);
	hour = num2(p + 7);
	minute = num2(p + 10);
	second = num2(p + 13);
	p += 15;
	if (*p == '.') {
		if (!digits(++p, 1))
			return "";
		for (frac = p; *p >= '0' && *p <= '9'; p++)
			;
	}
	if (*p == 'Z') {
		p++;
	} else if ((*p == '+' || *p == '-') && digits(p + 1, 2) && p[3] == ':' && digits(p + 4, 2)) {
		zone_h = num2(p + 1);
		zone_m = num2(p + 4);
		p += 6;
	}
	if (*p != '\0')
		return "";
	if (bad_year)
		return "year out of range";
	if (month < 1 || month > 12)
		return "month out of range";
	last = mdays[month - 1];
	if (month == 2 && y400 % 4 == 0 && (y400 % 100 != 0 || y400 == 0))
		last = 29;
	if (day < 1 || day > last)
		return "day out of range";
	if (hour == 24) {
		int zero = minute == 0 && second == 0;
		for (i = 0; zero && frac && frac[i] >= '0' && frac[i] <= '9'; i++)
			zero = frac[i] == '0';
		if (!zero)
			return "hour out of range";
	} else if (hour > 23) {
		return "hour out of range";
	}
	if (minute > 59)
		return "minute out of range";
	if (second > 59)
		return "second out of range";
	if (zone_h > 14 || zone_m > 59 || (zone_h == 14 && zone_m != 0))
		return "time zone out of range";
	return NULL;
}

/* ---- the four replies ------------------------------------------------------ */

static wms_status parse_submit(const rel *r, wms_submit_reply *out, wms_error *err)
{
	const char *w = wms__op_get(WMS__OP_SUBMIT_ORDER)->response;
	wms_status rc;
	if ((rc = id_value(r, w, "clientOrderId", out->order_id, err)) != WMS_OK ||
	    (rc = id_value(r, w, "wmsReference", out->wms_reference, err)) != WMS_OK ||
	    (rc = state_value(r, w, &out->state, err)) != WMS_OK ||
	    (rc = bool_value(r, w, "duplicate", &out->duplicate, err)) != WMS_OK)
		return rc;
	return WMS_OK;
}

static wms_status parse_status(const rel *r, wms_status_reply *out, wms_error *err)
{
	const char *w = wms__op_get(WMS__OP_GET_ORDER_STATUS)->response, *bad;
	wms_status rc;
	if ((rc = id_value(r, w, "clientOrderId", out->order_id, err)) != WMS_OK ||
	    (rc = id_value(r, w, "wmsReference", out->wms_reference, err)) != WMS_OK ||
	    (rc = state_value(r, w, &out->state, err)) != WMS_OK ||
	    (rc = value(r, w, "updatedAt", out->updated_at, sizeof(out->updated_at), NULL, err)) !=
		    WMS_OK)
		return rc;
	if ((bad = datetime_error(out->updated_at)) != NULL)
		return unexpected(err, "%s/updatedAt: %s (\"%s\")", w,
				  *bad ? bad : "not an xs:dateTime", out->updated_at);
	return WMS_OK;
}

static wms_status parse_cancel(const rel *r, wms_cancel_reply *out, wms_error *err)
{
	const char *w = wms__op_get(WMS__OP_CANCEL_ORDER)->response;
	wms_status rc;
	if ((rc = id_value(r, w, "clientOrderId", out->order_id, err)) != WMS_OK ||
	    (rc = state_value(r, w, &out->state, err)) != WMS_OK ||
	    (rc = bool_value(r, w, "alreadyCancelled", &out->already_cancelled, err)) != WMS_OK)
		return rc;
	return WMS_OK;
}

static wms_status parse_stock(const rel *r, wms_stock_reply **out, wms_error *err)
{
	wms_stock_reply *reply = NULL;
	const rel *c;
	char where[64];
	size_t count = 0, i = 0;
	wms_status rc = WMS_OK;

	*out = NULL;
	for (c = r->children; c; c = c->next)
		if (is_el(c, WMS__NS, "level"))
			count++;
	if (!count)
		return unexpected(err, "GetStockLevelResponse: missing {%s}level", WMS__NS);
	if (!(reply = wms__calloc(1, sizeof(*reply))) ||
	    !(reply->levels = wms__calloc(count, sizeof(*reply->levels)))) {
		rc = wms__fail(err, WMS_ERR_NOMEM, WMS_DELIVERY_ANSWERED,
			       "parsing the GetStockLevel reply: out of memory");
		goto done;
	}
	reply->count = count;
	for (c = r->children; c; c = c->next) {
		wms_stock_level *l;
		if (!is_el(c, WMS__NS, "level"))
			continue;
		l = &reply->levels[i];
		snprintf(where, sizeof(where), "GetStockLevelResponse/level[%zu]", i);
		if ((rc = id_value(c, where, "sku", l->sku, err)) != WMS_OK ||
		    (rc = long_value(c, where, "onHand", &l->on_hand, err)) != WMS_OK ||
		    (rc = long_value(c, where, "reserved", &l->reserved, err)) != WMS_OK ||
		    (rc = long_value(c, where, "available", &l->available, err)) != WMS_OK)
			goto done;
		i++;
	}
done:
	if (rc != WMS_OK)
		wms_stock_reply_free(reply);
	else
		*out = reply;
	return rc;
}

/* ---- faults ------------------------------------------------------------------ */

/* The local part of a QName such as "soap:Server.Overloaded". */
static const char *local_part(const char *qname)
{
	const char *colon = strchr(qname, ':');
	return colon ? colon + 1 : qname;
}

/* SOAP 1.2 Reason: the English Text if there is one, else the first. */
static const rel *reason_text(const rel *reason)
{
	const rel *c, *first = NULL;
	if (!reason)
		return NULL;
	for (c = reason->children; c; c = c->next) {
		if (!is_el(c, WMS__SOAP12_NS, "Text"))
			continue;
		if (c->lang_en)
			return c;
		if (!first)
			first = c;
	}
	return first;
}

/* The one child `name` of parent that is the WMS's: in its namespace or,
 * as node-soap writes a fault detail by default (and stacks that take the
 * schema as elementFormDefault="unqualified"), in none; never one of
 * another namespace. NULL when there is none, and *repeated set when
 * there are two: which one the WMS meant would be a guess. */
static const rel *wms_child(const rel *parent, const char *name, int *repeated)
{
	const rel *c, *found = NULL;
	if (!parent)
		return NULL;
	for (c = parent->children; c; c = c->next) {
		if (!is_el(c, WMS__NS, name) && !is_el(c, NULL, name))
			continue;
		if (found) {
			*repeated = 1;
			return NULL;
		}
		found = c;
	}
	return found;
}

static void text_into(const rel *el, char *dst, size_t size)
{
	dst[0] = '\0';
	if (el)
		element_text(el, dst, size, 1);
	flatten(dst);
}

/* Reads names and text from the parse's arrays and dictionary, which
 * release() keeps until this returns; everything it reports is copied into
 * err's fields. */
static wms_status parse_fault(const rel *fault, wms_error *err)
{
	char code[WMS_ERROR_FIELD_MAX], sub[WMS_ERROR_FIELD_MAX] = "";
	char text[WMS_ERROR_MESSAGE_MAX], wms_code[WMS_ERROR_FIELD_MAX];
	const rel *detail, *wf, *wf_code, *wf_message;
	const char *c, *s;
	int repeated = 0;

	if (is_el(fault, WMS__SOAP12_NS, "Fault")) {
		const rel *code_el = child(fault, WMS__SOAP12_NS, "Code");
		text_into(child(code_el, WMS__SOAP12_NS, "Value"), code, sizeof(code));
		text_into(child(child(code_el, WMS__SOAP12_NS, "Subcode"), WMS__SOAP12_NS, "Value"),
			  sub, sizeof(sub));
		text_into(reason_text(child(fault, WMS__SOAP12_NS, "Reason")), text, sizeof(text));
		detail = child(fault, WMS__SOAP12_NS, "Detail");
	} else {
		/* SOAP 1.1 fault children are unqualified; some stacks qualify them. */
		const rel *fc = child(fault, NULL, "faultcode");
		const rel *fs = child(fault, NULL, "faultstring");
		text_into(fc ? fc : child(fault, WMS__SOAP11_NS, "faultcode"), code, sizeof(code));
		text_into(fs ? fs : child(fault, WMS__SOAP11_NS, "faultstring"), text, sizeof(text));
		detail = child(fault, NULL, "detail");
		if (!detail)
			detail = child(fault, WMS__SOAP11_NS, "detail");
	}
	/* Only a detail entry (SOAP 1.1 4.4, SOAP 1.2 Part 1 5.4.5.1): a
	 * WmsFault anywhere deeper is some other element's business. */
	wf = wms_child(detail, "WmsFault", &repeated);
	wf_code = wms_child(wf, "code", &repeated);
	wf_message = wms_child(wf, "message", &repeated);
	if (repeated)
		wf_code = wf_message = NULL;
	text_into(wf_code, wms_code, sizeof(wms_code));
	if (!text[0])
		text_into(wf_message, text, sizeof(text));

	c = local_part(code);
	s = local_part(sub);
	if (err) {
		wms__strlcpy(err->fault_code, c, sizeof(err->fault_code));
		wms__strlcpy(err->fault_string, text, sizeof(err->fault_string));
		wms__strlcpy(err->wms_code, wms_code, sizeof(err->wms_code));
	}
	return wms__fail(err, WMS_ERR_SOAP_FAULT, WMS_DELIVERY_ANSWERED,
			 "SOAP fault %s%s%s%s: %s%s%s%s%s", *c ? c : "(no code)", *s ? " (" : "", s,
			 *s ? ")" : "", *text ? text : "(no reason given)", *wms_code ? " [" : "",
			 wms_code, *wms_code ? "]" : "",
			 repeated ? " (WmsFault detail not read: repeated)" : "");
}

/* ---- entry point ------------------------------------------------------------ */

/* The answer in a parsed reply: the Body's one element, checked to be
 * {want_ns}want_name (want_ns NULL: any namespace, "" none; want_name
 * NULL: any element). A SOAP fault's fields go into err
 * (WMS_ERR_SOAP_FAULT); anything else is refused with a message. */
static wms_status answer_of(const rel **out, const rel *doc, int html_type, const char *want_ns,
			    const char *want_name, wms_error *err)
{
	const rel *root = doc->children, *body = NULL, *first, *c;
	const char *soap_ns;
	int soap11;

	*out = NULL;
	if (!root)
		return wms__fail(err, WMS_ERR_NOT_XML, WMS_DELIVERY_ANSWERED, "reply has no root element");
	/* Either version, whichever the request was: the Envelope's namespace
	 * says which one this is, and everything below is read in it alone. A
	 * node that will not take the request's version answers in SOAP 1.1
	 * (VersionMismatch: SOAP 1.1 4.4.1, SOAP 1.2 Part 1 appendix A), and
	 * refusing that would hide the one fault that says what is wrong. */
	if ((soap11 = is_el(root, WMS__SOAP11_NS, "Envelope")) != 0)
		soap_ns = WMS__SOAP11_NS;
	else if (is_el(root, WMS__SOAP12_NS, "Envelope"))
		soap_ns = WMS__SOAP12_NS;
	else if (html_type || !xmlStrcasecmp(X(root->name), X("html")))
		/* A SOAP envelope mislabelled text/html is still read (above). */
		return wms__fail(err, WMS_ERR_NOT_XML, WMS_DELIVERY_ANSWERED,
				 "reply is an HTML page, not a SOAP envelope");
	else
		return unexpected(err, "expected a SOAP 1.1 or 1.2 Envelope, found {%s}%s",
				  ns_uri(root), root->name);
	for (c = root->children; c; c = c->next) {
		if (is_el(c, soap_ns, "Header"))
			continue;
		if (is_el(c, soap_ns, "Body"))
			body = c;
		break;
	}
	if (!body)
		return unexpected(err, "expected {%s}Body in the SOAP Envelope, found %s%s%s%s",
				  soap_ns, c ? "{" : "nothing", c ? ns_uri(c) : "", c ? "}" : "",
				  c ? S(c->name) : "");
	/* The Body comes last (SOAP 1.2 5.1; the qualified trailers SOAP 1.1
	 * still allowed after it are sent by no stack we talk to): a second
	 * Body, a fault or anything else after the answer makes the reply
	 * ambiguous. */
	if ((c = body->next) != NULL) {
		if (is_el(c, soap_ns, "Body"))
			return unexpected(err, "Envelope/Body: repeated, SOAP allows one");
		return unexpected(err, "Envelope: {%s}%s after the Body, which must come last",
				  ns_uri(c), S(c->name));
	}
	first = body->children;
	if (!first)
		return unexpected(err, "expected %s%s%s%s in the SOAP Body, found an empty Body",
				  want_name && want_ns ? "{" : "", want_name && want_ns ? want_ns : "",
				  want_name && want_ns ? "}" : "", want_name ? want_name : "an element");
	/* document/literal: one Body child. A second one (another answer, a
	 * fault after the answer) makes the reply ambiguous: refuse it. */
	if ((c = first->next) != NULL)
		return unexpected(err, "expected one element in the SOAP Body, found {%s}%s after {%s}%s",
				  ns_uri(c), S(c->name), ns_uri(first), S(first->name));
	if (is_el(first, soap_ns, "Fault"))
		return parse_fault(first, err);
	/* The other version's Fault is no fault of this Envelope's. */
	if (is_el(first, soap11 ? WMS__SOAP12_NS : WMS__SOAP11_NS, "Fault"))
		return unexpected(err, "Body/Fault: a SOAP %s {%s}Fault in a SOAP %s Envelope",
				  soap11 ? "1.2" : "1.1", ns_uri(first), soap11 ? "1.1" : "1.2");
	if ((want_name && strcmp(S(first->name), want_name) != 0) ||
	    (want_ns && strcmp(ns_uri(first), want_ns) != 0))
		return unexpected(err, "expected {%s}%s in the SOAP Body, found {%s}%s",
				  want_ns ? want_ns : "*", want_name ? want_name : "*", ns_uri(first),
				  S(first->name));
	*out = first;
	return WMS_OK;
}

wms_status wms__check_generic(const rel *doc, int html_type, const char *want_ns,
			      const char *want_name, wms_error *err)
{
	const rel *first;
	return answer_of(&first, doc, html_type, want_ns, want_name, err);
}

wms_status wms__check_reply(wms__op op, void *out, const rel *doc, int html_type, wms_error *err)
{
	const rel *first;
	union {
		wms_submit_reply submit;
		wms_status_reply status;
		wms_cancel_reply cancel;
	} r;
	wms_status rc;

	if ((int)op < 0 || op >= WMS__OP_COUNT)
		return wms__fail(err, WMS_ERR_INTERNAL, WMS_DELIVERY_ANSWERED, "bad operation %d",
				 (int)op);
	if ((rc = answer_of(&first, doc, html_type, WMS__NS, wms__op_get(op)->response, err)) !=
	    WMS_OK)
		return rc;

	memset(&r, 0, sizeof(r));
	switch (op) {
	case WMS__OP_SUBMIT_ORDER:
		if ((rc = parse_submit(first, &r.submit, err)) == WMS_OK && out)
			memcpy(out, &r.submit, sizeof(r.submit));
		return rc;
	case WMS__OP_GET_ORDER_STATUS:
		if ((rc = parse_status(first, &r.status, err)) == WMS_OK && out)
			memcpy(out, &r.status, sizeof(r.status));
		return rc;
	case WMS__OP_CANCEL_ORDER:
		if ((rc = parse_cancel(first, &r.cancel, err)) == WMS_OK && out)
			memcpy(out, &r.cancel, sizeof(r.cancel));
		return rc;
	case WMS__OP_GET_STOCK_LEVEL: {
		wms_stock_reply *stock = NULL;
		rc = parse_stock(first, &stock, err);
		if (out)
			*(wms_stock_reply **)out = stock;
		else
			wms_stock_reply_free(stock);
		return rc;
	}
	case WMS__OP_COUNT:
		break;
	}
	return wms__fail(err, WMS_ERR_INTERNAL, WMS_DELIVERY_ANSWERED, "bad operation %d", (int)op);
}
