/* Checks shared by the fuzz harnesses (see fuzz.h). */
#include <iconv.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <libxml/encoding.h>
#include <libxml/xmlerror.h>
#include "fuzz.h"
#include "internal.h"
#include "wms/sys/alloc.h"
#include "soap/limits.h"

const char *fuzz_input_name = NULL;
int fuzz_verbose = 0;
int fuzz_heavy_seeds = 0;

void fuzz_note(const char *fmt, ...)
{
	va_list ap;
	if (!fuzz_verbose)
		return;
	fprintf(stderr, "  %s: ", fuzz_input_name ? fuzz_input_name : "input");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

void fuzz_fail(const char *file, int line, const char *cond, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "fuzz invariant violated at %s:%d", file, line);
	if (fuzz_input_name)
		fprintf(stderr, " (input %s)", fuzz_input_name);
	fprintf(stderr, ": %s: ", cond);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	fflush(stderr);
	abort();
}

/* ---- byte strings ----------------------------------------------------------- */

void fuzz_bytes_reset(fuzz_bytes *b)
{
	b->len = 0;
}

void fuzz_bytes_reserve(fuzz_bytes *b, size_t extra)
{
	if (b->len + extra + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		uint8_t *p;
		while (cap < b->len + extra + 1)
			cap *= 2;
		p = realloc(b->data, cap);
		FUZZ_CHECK(p != NULL, "out of memory growing a seed buffer to %zu bytes", cap);
		b->data = p;
		b->cap = cap;
	}
}

void fuzz_bytes_add(fuzz_bytes *b, const void *data, size_t len)
{
	fuzz_bytes_reserve(b, len);
	if (len)
		memcpy(b->data + b->len, data, len);
	b->len += len;
	b->data[b->len] = 0;
}

void fuzz_bytes_free(fuzz_bytes *b)
{
	free(b->data);
	memset(b, 0, sizeof(*b));
}

/* ---- allocation balance ------------------------------------------------------ */

static long live;

static void *count_malloc(size_t n, void *ctx)
{
	void *p = malloc(n);
	(void)ctx;
	if (p)
		live++;
	return p;
}

static void *count_realloc(void *old, size_t n, void *ctx)
{
	void *p = realloc(old, n);
	(void)ctx;
	if (p && !old)
		live++;
	return p;
}

static void count_free(void *p, void *ctx)
{
	(void)ctx;
	if (p)
		live--;
	free(p);
}

void fuzz_count_allocations(void)
{
	static const wms_allocator a = { count_malloc, count_realloc, count_free, NULL };
	wms_status st = wms_set_allocator(&a);
	FUZZ_CHECK(st == WMS_OK, "wms_set_allocator: %s", wms_status_name(st));
}

long fuzz_live_allocations(void)
{
	return live;
}

void fuzz_run_leak_checked(void (*fn)(const uint8_t *, size_t), const uint8_t *data, size_t size)
{
	long before = live;
	fn(data, size);
	if (live != before) {
		before = live;
		fn(data, size);
		FUZZ_CHECK(live == before, "%ld libwms allocation(s) not freed per call", live - before);
	}
}

/* ---- libxml2's global error handlers ------------------------------------------ */

static int escaped;
static char escaped_msg[200];

static void note_escape(const char *msg)
{
	if (!escaped++) {
		size_t n;
		snprintf(escaped_msg, sizeof(escaped_msg), "%s", msg ? msg : "(no message)");
		n = strlen(escaped_msg);
		while (n && (escaped_msg[n - 1] == '\n' || escaped_msg[n - 1] == ' '))
			escaped_msg[--n] = '\0';
	}
}

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void on_generic(void *ctx, const char *fmt, ...)
{
	char msg[200];
	va_list ap;
	(void)ctx;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	note_escape(msg);
}

/* Only the generic handler: what reaches it is what libxml2 would print.
 * (A global structured handler would also receive the errors that
 * XML_PARSE_NOERROR silences, and change what libxml2 does.) */
void fuzz_watch_libxml2_errors(void)
{
	const char *off = getenv("FUZZ_ALLOW_LIBXML2_STDERR");
	if (off && *off == '1') /* while such a finding is open, to look for others */
		return;
	xmlSetGenericErrorFunc(NULL, on_generic);
	escaped = 0;
}

void fuzz_check_libxml2_quiet(const char *what)
{
	int n = escaped;
	escaped = 0;
	FUZZ_CHECK(n == 0, "%s: %d libxml2 message(s) escaped to its generic error handler "
		   "(stderr by default), the first: \"%s\"", what, n, escaped_msg);
}

/* ---- errors ------------------------------------------------------------------ */

/* One NUL-terminated line of well-formed UTF-8 (a field cut at its size is
 * cut on a whole character). */
int fuzz_field_ok(const char *field, size_t size)
{
	const unsigned char *p = (const unsigned char *)field, *nul = memchr(field, 0, size);
	uint32_t c;
	size_t n;
	if (!nul)
		return 0;
	for (; p < nul; p += n)
		if (*p < 0x20 || !(n = wms__utf8_decode(p, &c)))
			return 0;
	return 1;
}

void fuzz_check_error(const wms_error *err, wms_status st, const char *what)
{
	FUZZ_CHECK(err->status == st, "%s: returned %s but err.status is %s", what,
		   wms_status_name(st), wms_status_name(err->status));
	FUZZ_CHECK(memchr(err->message, 0, sizeof(err->message)) != NULL,
		   "%s: err.message not NUL-terminated", what);
	FUZZ_CHECK(err->message[0] != '\0', "%s: %s with an empty message", what,
		   wms_status_name(st));
	FUZZ_CHECK(fuzz_field_ok(err->message, sizeof(err->message)),
		   "%s: err.message is not one line of UTF-8 text: \"%.256s\"", what, err->message);
	FUZZ_CHECK(fuzz_field_ok(err->fault_code, sizeof(err->fault_code)),
		   "%s: err.fault_code not one NUL-terminated line", what);
	FUZZ_CHECK(fuzz_field_ok(err->fault_string, sizeof(err->fault_string)),
		   "%s: err.fault_string not one NUL-terminated line", what);
	FUZZ_CHECK(fuzz_field_ok(err->wms_code, sizeof(err->wms_code)),
		   "%s: err.wms_code not one NUL-terminated line", what);
	FUZZ_CHECK(fuzz_field_ok(err->operation, sizeof(err->operation)),
		   "%s: err.operation not one NUL-terminated line", what);
}

int fuzz_id_ok(const char *id, size_t size)
{
	const unsigned char *p = (const unsigned char *)id, *nul = memchr(id, 0, size);
	if (!nul || nul == p || nul - p > WMS_ID_MAX)
		return 0;
	for (; p < nul; p++)
		if (*p <= 0x20 || *p == 0x7F)
			return 0;
	return 1;
}

/* ---- the reply parser ---------------------------------------------------------- */

typedef union reply_out {
	wms_submit_reply submit;
	wms_status_reply status;
	wms_cancel_reply cancel;
	wms_stock_reply *stock;
	unsigned char bytes[sizeof(wms_status_reply) + sizeof(wms_submit_reply)];
} reply_out;

static size_t out_size(wms__op op)
{
	switch (op) {
	case WMS__OP_SUBMIT_ORDER: return sizeof(wms_submit_reply);
	case WMS__OP_GET_ORDER_STATUS: return sizeof(wms_status_reply);
	case WMS__OP_CANCEL_ORDER: return sizeof(wms_cancel_reply);
	case WMS__OP_GET_STOCK_LEVEL: return sizeof(wms_stock_reply *);
	case WMS__OP_COUNT: break;
	}
	return 0;
}

static int state_ok(wms_order_state s)
{
	return s >= WMS_ORDER_STATE_UNKNOWN && s <= WMS_ORDER_STATE_CANCELLED;
}

static int bool_ok(int b)
{
	return b == 0 || b == 1;
}

static void check_reply_ok(wms__op op, const reply_out *o)
{
	size_t i;
	switch (op) {
	case WMS__OP_SUBMIT_ORDER:
		FUZZ_CHECK(fuzz_id_ok(o->submit.order_id, sizeof(o->submit.order_id)),
			   "SubmitOrder: bad clientOrderId");
		FUZZ_CHECK(fuzz_id_ok(o->submit.wms_reference, sizeof(o->submit.wms_reference)),
			   "SubmitOrder: bad wmsReference");
		FUZZ_CHECK(state_ok(o->submit.state), "SubmitOrder: state %d", (int)o->submit.state);
		FUZZ_CHECK(bool_ok(o->submit.duplicate), "SubmitOrder: duplicate %d",
			   o->submit.duplicate);
		FUZZ_CHECK(!o->submit.from_fallback, "SubmitOrder: from_fallback set by the parser");
		break;
	case WMS__OP_GET_ORDER_STATUS:
		FUZZ_CHECK(fuzz_id_ok(o->status.order_id, sizeof(o->status.order_id)),
			   "GetOrderStatus: bad clientOrderId");
		FUZZ_CHECK(fuzz_id_ok(o->status.wms_reference, sizeof(o->status.wms_reference)),
			   "GetOrderStatus: bad wmsReference");
		FUZZ_CHECK(state_ok(o->status.state), "GetOrderStatus: state %d", (int)o->status.state);
		FUZZ_CHECK(fuzz_field_ok(o->status.updated_at, sizeof(o->status.updated_at)) &&
				   (o->status.updated_at[0] == '-' ||
				    (o->status.updated_at[0] >= '0' && o->status.updated_at[0] <= '9')),
			   "GetOrderStatus: updatedAt \"%.40s\" is not an xs:dateTime",
			   o->status.updated_at);
		FUZZ_CHECK(!o->status.from_fallback, "GetOrderStatus: from_fallback set by the parser");
		break;
	case WMS__OP_CANCEL_ORDER:
		FUZZ_CHECK(fuzz_id_ok(o->cancel.order_id, sizeof(o->cancel.order_id)),
			   "CancelOrder: bad clientOrderId");
		FUZZ_CHECK(state_ok(o->cancel.state), "CancelOrder: state %d", (int)o->cancel.state);
		FUZZ_CHECK(bool_ok(o->cancel.already_cancelled), "CancelOrder: alreadyCancelled %d",
			   o->cancel.already_cancelled);
		FUZZ_CHECK(!o->cancel.from_fallback, "CancelOrder: from_fallback set by the parser");
		break;
	case WMS__OP_GET_STOCK_LEVEL:
		FUZZ_CHECK(o->stock != NULL, "GetStockLevel: WMS_OK without a reply");
		FUZZ_CHECK(o->stock->count >= 1 && o->stock->levels != NULL,
			   "GetStockLevel: WMS_OK with %zu levels", o->stock->count);
		FUZZ_CHECK(!o->stock->from_fallback, "GetStockLevel: from_fallback set by the parser");
		for (i = 0; i < o->stock->count; i++)
			FUZZ_CHECK(fuzz_id_ok(o->stock->levels[i].sku, sizeof(o->stock->levels[i].sku)),
				   "GetStockLevel: bad sku in level %zu", i);
		break;
	case WMS__OP_COUNT:
		break;
	}
}

static int stock_equal(const wms_stock_reply *a, const wms_stock_reply *b)
{
	size_t i;
	if (!a || !b)
		return a == b;
	if (a->count != b->count)
		return 0;
	for (i = 0; i < a->count; i++)
		if (strcmp(a->levels[i].sku, b->levels[i].sku) != 0 ||
		    a->levels[i].on_hand != b->levels[i].on_hand ||
		    a->levels[i].reserved != b->levels[i].reserved ||
		    a->levels[i].available != b->levels[i].available)
			return 0;
	return 1;
}

static int reply_equal(wms__op op, const reply_out *a, const reply_out *b)
{
	switch (op) {
	case WMS__OP_SUBMIT_ORDER:
		return !strcmp(a->submit.order_id, b->submit.order_id) &&
		       !strcmp(a->submit.wms_reference, b->submit.wms_reference) &&
		       a->submit.state == b->submit.state && a->submit.duplicate == b->submit.duplicate;
	case WMS__OP_GET_ORDER_STATUS:
		return !strcmp(a->status.order_id, b->status.order_id) &&
		       !strcmp(a->status.wms_reference, b->status.wms_reference) &&
		       a->status.state == b->status.state &&
		       !strcmp(a->status.updated_at, b->status.updated_at);
	case WMS__OP_CANCEL_ORDER:
		return !strcmp(a->cancel.order_id, b->cancel.order_id) &&
		       a->cancel.state == b->cancel.state &&
		       a->cancel.already_cancelled == b->cancel.already_cancelled;
	case WMS__OP_GET_STOCK_LEVEL:
		return stock_equal(a->stock, b->stock);
	case WMS__OP_COUNT:
		break;
	}
	return 0;
}

static void release(wms__op op, reply_out *o)
{
	if (op == WMS__OP_GET_STOCK_LEVEL) {
		wms_stock_reply_free(o->stock);
		o->stock = NULL;
	}
}

typedef wms_status (*parse_fn)(wms__op op, void *out, const char *buf, size_t len,
				const char *content_type, size_t max_bytes, wms_error *err);

/* The parser without its fast path, where soap/parse.c has one: every reply
 * must get the same answer from both. Weak, so the harnesses build without. */
wms_status wms__parse_reply_libxml2(wms__op op, void *out, const char *buf, size_t len,
				    const char *content_type, size_t max_bytes, wms_error *err)
#if defined(__GNUC__)
	__attribute__((weak))
#endif
	;

static wms__xml_ws reused_ws;

/* What the next parses feed the reused workspace first (fuzz_set_primer). */
static const char *primer_buf;
static size_t primer_len;

void fuzz_set_primer(const char *buf, size_t len)
{
	primer_buf = buf;
	primer_len = buf ? len : 0;
}

static wms_status parse_reused(wms__op op, void *out, const char *buf, size_t len,
			       const char *content_type, size_t max_bytes, wms_error *err)
{
	return wms__parse_reply_ws(&reused_ws, op, out, buf, len, content_type, max_bytes, 0, err);
}

/* A deadline an hour away: never reached, the same answer as without. */
static wms_status parse_reused_early(wms__op op, void *out, const char *buf, size_t len,
				     const char *content_type, size_t max_bytes, wms_error *err)
{
	return wms__parse_reply_ws(&reused_ws, op, out, buf, len, content_type, max_bytes,
				   wms__now_ns() + 3600u * 1000000000ull, err);
}

/* A deadline long past: the first chunk is parsed, then the parse stops. */
static wms_status parse_reused_late(wms__op op, void *out, const char *buf, size_t len,
				    const char *content_type, size_t max_bytes, wms_error *err)
{
	return wms__parse_reply_ws(&reused_ws, op, out, buf, len, content_type, max_bytes, 1, err);
}

/* One parse into fresh, poisoned storage. */
static wms_status parse_once(parse_fn fn, wms__op op, reply_out *o, wms_error *err,
			     const char *buf, size_t len, const char *ct, size_t max_bytes)
{
	memset(o, 0xA5, sizeof(*o));
	memset(err, 0, sizeof(*err));
	return fn(op, o, buf, len, ct, max_bytes, err);
}

/* The reply parser's refusal for its names (WMS__XML_MAX_NAMES). */
static int names_refusal(const wms_error *err)
{
	return !strncmp(err->message, "reply refused: more than ", 25) &&
	       strstr(err->message, " distinct names in it (libwms's limit)");
}

/* FUZZ_ALLOW_NAMES_HISTORY=1: while the finding "names counted against a
 * kept dictionary" is open (README.md), a reused workspace may answer a
 * reply near WMS__XML_MAX_NAMES otherwise than a fresh one. */
static int names_history_allowed(const wms_error *a, const wms_error *b)
{
	static int allow = -1;
	if (allow < 0) {
		const char *v = getenv("FUZZ_ALLOW_NAMES_HISTORY");
		allow = v && *v == '1';
	}
	return allow && (names_refusal(a) != names_refusal(b));
}

/* A second parse (`how`) must agree with the first in every detail. */
static void compare(wms__op op, const char *how, wms_status st, const reply_out *o,
		    const wms_error *err, wms_status st2, const reply_out *o2, const wms_error *err2)
{
	if (names_history_allowed(err, err2)) {
		fuzz_note("%s: %s, else %s (FUZZ_ALLOW_NAMES_HISTORY)", how, wms_status_name(st2),
			  wms_status_name(st));
		return;
	}
	FUZZ_CHECK(st2 == st, "%s: %s, else %s (%.100s / %.100s)", how, wms_status_name(st2),
		   wms_status_name(st), err2->message, err->message);
	FUZZ_CHECK(!strcmp(err->message, err2->message) && !strcmp(err->fault_code, err2->fault_code) &&
			   !strcmp(err->fault_string, err2->fault_string) &&
			   !strcmp(err->wms_code, err2->wms_code) && err->delivery == err2->delivery,
		   "%s: \"%.100s\", else \"%.100s\"", how, err2->message, err->message);
	FUZZ_CHECK(st != WMS_OK || reply_equal(op, o, o2), "%s: a different %s reply", how,
		   wms__op_name(op));
}

/* What a workspace keeps between parses stays within soap.h's bounds. */
static void check_kept(const char *how)
{
	size_t names, els, text;
	int kept = (int)wms__parse_ws_kept(&reused_ws, &names, &els, &text);
	FUZZ_CHECK(!kept || names <= WMS__PARSE_KEEP_NAMES,
		   "%s: the workspace kept a parser context with %zu names (KEEP_NAMES %d)", how,
		   names, WMS__PARSE_KEEP_NAMES);
	FUZZ_CHECK(els <= WMS__PARSE_KEEP_ELS && text <= WMS__PARSE_KEEP_TEXT,
		   "%s: the workspace kept arrays of %zu elements and %zu bytes of text (KEEP_ELS %d, "
		   "KEEP_TEXT %d)", how, els, text, WMS__PARSE_KEEP_ELS, WMS__PARSE_KEEP_TEXT);
	fuzz_note("%s: the workspace keeps %s (%zu names), arrays of %zu elements, %zu bytes of text",
		  how, kept ? "its parser context" : "no parser context", names, els, text);
}

/* The statuses and fields a parse may give (TIMEOUT only with a deadline). */
static void check_result(wms__op op, wms_status st, const reply_out *o, const wms_error *err,
			 size_t len, size_t cap, int late, const char *how)
{
	static const unsigned char zero[sizeof(reply_out)];
	char want[128];

	switch (st) {
	case WMS_OK:
		FUZZ_CHECK(err->status == WMS_OK && !err->message[0],
			   "%s: WMS_OK but err is filled in (%s: %.200s)", how,
			   wms_status_name(err->status), err->message);
		check_reply_ok(op, o);
		break;
	case WMS_ERR_TIMEOUT:
		/* Past a deadline the parse stops after its first chunk; the scan
		 * before it looks at the clock every 1 MiB of text, and between the
		 * steps of decoding (an encoding not ASCII-compatible: 256 KiB
		 * slices, and again while a decoder takes part of what is left). */
		FUZZ_CHECK(late, "%s: TIMEOUT without a deadline: %.200s", how, err->message);
		snprintf(want, sizeof(want),
			 "reading the reply ran past the call's deadline: stopped after %u of %zu bytes",
			 FUZZ_PARSE_CHUNK, len);
		if (strcmp(err->message, want) != 0) {
			snprintf(want, sizeof(want),
				 "reading the reply ran past the call's deadline: stopped checking its "
				 "structure (%zu bytes)", len);
			FUZZ_CHECK(!strcmp(err->message, want), "%s: TIMEOUT for %zu bytes: \"%.200s\"",
				   how, len, err->message);
		}
		FUZZ_CHECK(len > FUZZ_PARSE_CHUNK, "%s: TIMEOUT for %zu bytes, one chunk", how, len);
		/* fall through */
	case WMS_ERR_SOAP_FAULT:
	case WMS_ERR_NOT_XML:
	case WMS_ERR_TRUNCATED:
	case WMS_ERR_UNEXPECTED_REPLY:
	case WMS_ERR_TOO_LARGE:
	case WMS_ERR_UNSAFE_XML:
		fuzz_check_error(err, st, how);
		FUZZ_CHECK(err->delivery == WMS_DELIVERY_ANSWERED, "%s: %s with delivery %s", how,
			   wms_status_name(st), wms_delivery_name(err->delivery));
		FUZZ_CHECK(!memcmp(o, zero, out_size(op)), "%s: %s left a partly filled %s reply behind",
			   how, wms_status_name(st), wms__op_name(op));
		FUZZ_CHECK(!err->http_status && !err->curl_code && !err->operation[0] &&
				   !err->attempts && !err->fallback && !err->retry_after_ms,
			   "%s: the parser touched error fields that are not its own", how);
		if (st == WMS_ERR_SOAP_FAULT)
			FUZZ_CHECK(!strncmp(err->message, "SOAP fault ", 11), "%s: fault message \"%.200s\"",
				   how, err->message);
		else
			FUZZ_CHECK(!err->fault_code[0] && !err->fault_string[0] && !err->wms_code[0],
				   "%s: %s with SOAP fault fields set", how, wms_status_name(st));
		break;
	case WMS_ERR_INVALID_ARG:
	case WMS_ERR_NOMEM:
	case WMS_ERR_CIRCUIT_OPEN:
	case WMS_ERR_BULKHEAD_FULL:
	case WMS_ERR_CONNECT:
	case WMS_ERR_TRANSPORT:
	case WMS_ERR_HTTP:
	case WMS_ERR_TLS:
	case WMS_ERR_FIXTURE:
	case WMS_ERR_CONFIG:
	case WMS_ERR_INTERNAL:
	default:
		fuzz_fail(__FILE__, __LINE__, "documented status", "%s(%s) returned %s: %.200s", how,
			  wms__op_name(op), wms_status_name(st), err->message);
	}
	FUZZ_CHECK((len > cap) == (st == WMS_ERR_TOO_LARGE), "%s: %zu bytes against a cap of %zu gave %s",
		   how, len, cap, wms_status_name(st));
}

/* ---- the limits, as the parser reports them ----------------------------------- */

enum {
	R_OTHER,
	R_PRESCAN, /* refused before the scan: size, empty, text, HTML, encodings */
	R_LIMIT,   /* the scan: "reply refused: <x> crosses libwms's limit of ..." */
	R_NAMES,   /* the parser: more than WMS__XML_MAX_NAMES distinct names */
	R_DEPTH,   /* the parser: deeper than WMS__XML_MAX_DEPTH */
	R_HTML     /* refused as an HTML page (text/html) after parsing: hides which */
};

static int starts(const char *s, const char *prefix)
{
	return !strncmp(s, prefix, strlen(prefix));
}

/* Which kind of refusal a parse's result is; `what` gets the limit's
 * wording for R_LIMIT. Messages are told apart by their fixed starts only:
 * what follows may come from the reply. */
static int refusal(wms_status st, const wms_error *err, const char **what, char *element,
		   size_t size)
{
	static const char names_msg[] = "reply refused: more than %u distinct names in it (libwms's limit)";
	char want[128];
	const char *m = err->message;

	*what = NULL;
	if (st == WMS_ERR_TOO_LARGE)
		return R_PRESCAN;
	if (st == WMS_ERR_SOAP_FAULT || st == WMS_OK)
		return R_OTHER;
	if (starts(m, "reply refused: <")) {
		*what = fuzz_limit_tail(m + strlen("reply refused: "), element, size);
		FUZZ_CHECK(*what && st == WMS_ERR_UNEXPECTED_REPLY,
			   "a limit refusal as %s: \"%.200s\"", wms_status_name(st), m);
		return R_LIMIT;
	}
	if (starts(m, "reply refused: more than")) {
		snprintf(want, sizeof(want), names_msg, WMS__XML_MAX_NAMES);
		FUZZ_CHECK(st == WMS_ERR_UNEXPECTED_REPLY && !strcmp(m, want),
			   "the names limit as %s: \"%.200s\"", wms_status_name(st), m);
		return R_NAMES;
	}
	snprintf(want, sizeof(want), "reply is not well-formed XML: Excessive depth in document: %d (line ",
		 WMS__XML_MAX_DEPTH);
	if (st == WMS_ERR_NOT_XML && starts(m, want))
		return R_DEPTH;
	if (st == WMS_ERR_NOT_XML &&
	    (starts(m, "reply body is empty") || starts(m, "reply is not XML (starts with") ||
	     !strcmp(m, "reply is an HTML page, not XML") || starts(m, "reply is in UCS-4") ||
	     starts(m, "reply refused: its XML declaration") ||
	     (starts(m, "reply is not well-formed XML: ") &&
	      strstr(m, ", but the XML declaration says encoding \""))))
		return R_PRESCAN;
	if (st == WMS_ERR_NOT_XML && !strcmp(m, "reply is an HTML page (text/html), not XML"))
		return R_HTML;
	return R_OTHER;
}

/* [s, s + strlen(lit)) equals `lit` (lower-case ASCII), ignoring case. */
static int is_ci(const char *s, const char *lit)
{
	for (; *lit; s++, lit++)
		if (!*s || (*s >= 'A' && *s <= 'Z' ? *s + 32 : *s) != *lit)
			return 0;
	return 1;
}

/* Whether the parser reads the body with no encoding forced on it: a
 * Content-Type without "charset", or with one "charset=utf-8" (which it
 * does not pass on). Conservative: anything else is taken to force one. */
static int no_forced_encoding(const char *ct)
{
	const char *p, *c = NULL;
	if (!ct)
		return 1;
	for (p = ct; *p; p++) {
		if (is_ci(p, "charset")) {
			if (c)
				return 0;
			c = p;
		}
	}
	return !c || (is_ci(c, "charset=utf-8") && (!c[13] || c[13] == ';' || c[13] == ' '));
}

/* The parser's answer against what libxml2 reads (fuzz_oracle.c). */
static void check_limits(const char *buf, size_t len, const char *ct, wms_status st,
			 const wms_error *err)
{
	fuzz_xml_facts f;
	const char *what;
	char element[48];
	int r = refusal(st, err, &what, element, sizeof(element));

	if (!no_forced_encoding(ct) || r == R_PRESCAN)
		return; /* read another way, or not at all: nothing to compare */
	/* A body over 256 KiB that is not XML costs the oracle a parse for
	 * little: read only what says more (a reply, a fault, a refusal). */
	if (len > FUZZ_DECODE_SLICE && r == R_OTHER &&
	    (st == WMS_ERR_NOT_XML || st == WMS_ERR_TRUNCATED || st == WMS_ERR_UNSAFE_XML))
		return;
	fuzz_xml_facts_read(&f, buf, len);
	fuzz_note("libxml2 reads %u elements, %u deep, %u new names%s%s%s%s", f.elements, f.depth,
		  f.names, f.clean ? ", cleanly" : "", f.limit ? "; crosses: " : "",
		  f.limit ? f.limit : "", f.stop == FUZZ_STOP_DEPTH ? "; too deep"
					   : f.stop == FUZZ_STOP_NAMES ? "; too many names" : "");
	if (f.limit) {
		/* The scan counts at least what libxml2 reads. */
		FUZZ_CHECK(r == R_PRESCAN || r == R_LIMIT,
			   "<%s> crosses the limit of %u %s as libxml2 reads it, but the reply gave "
			   "%s: %.200s", f.element, f.max, f.limit, wms_status_name(st), err->message);
		/* On well-formed XML it counts exactly that. */
		if (f.clean && r == R_LIMIT)
			FUZZ_CHECK((what == f.limit || what == f.limit2) && !strcmp(element, f.element),
				   "well-formed: <%s> crosses %u %s%s%s, but the reply says \"%.200s\"",
				   f.element, f.max, f.limit, f.limit2 ? " and " : "",
				   f.limit2 ? f.limit2 : "", err->message);
	} else if (f.clean) {
		FUZZ_CHECK(r != R_LIMIT && r != R_NAMES && r != R_DEPTH,
			   "well-formed and within every limit as libxml2 reads it (%u elements, %u "
			   "deep, %u names), but: %.200s", f.elements, f.depth, f.names, err->message);
	}
	if (!f.limit && f.stop == FUZZ_STOP_DEPTH)
		FUZZ_CHECK(r == R_DEPTH || r == R_HTML || r == R_LIMIT || r == R_PRESCAN,
			   "deeper than %d as libxml2 reads it, but: %s %.200s", WMS__XML_MAX_DEPTH,
			   wms_status_name(st), err->message);
	if (!f.limit && f.stop == FUZZ_STOP_NAMES)
		FUZZ_CHECK(r == R_NAMES || r == R_LIMIT || r == R_PRESCAN,
			   "more than %u distinct names as libxml2 reads it, but: %s %.200s",
			   WMS__XML_MAX_NAMES, wms_status_name(st), err->message);
	FUZZ_CHECK(r != R_NAMES || f.stop == FUZZ_STOP_NAMES,
		   "refused for its names, but libxml2 reads %u new names", f.names);
	FUZZ_CHECK(r != R_DEPTH || f.stop == FUZZ_STOP_DEPTH,
		   "refused for its depth, but libxml2 reads it %u deep", f.depth);
}

/* ---- an open finding, to look past (README.md) ----------------------------- */

/* The name in `s` (after "charset=" or "encoding="): quotes dropped, up to
 * `;`, a space or the closing quote. */
static void name_after(const char *s, const char *end, char *dst, size_t size)
{
	size_t n = 0;
	char quote = 0;
	if (s < end && (*s == '"' || *s == '\''))
		quote = *s++;
	while (s < end && n + 1 < size && *s != quote && (quote || (*s != ';' && *s != ' ')))
		dst[n++] = *s++;
	dst[n] = '\0';
}

/* Whether libxml2 reads `name` through ICU: a decoder, and not iconv's. */
static int read_by_icu(const char *name)
{
	xmlCharEncodingHandlerPtr h;
	wms__xml_quiet quiet;
	iconv_t cd;
	if (!name[0])
		return 0;
	wms__xml_quiet_begin(&quiet);
	h = xmlFindCharEncodingHandler(name);
	wms__xml_quiet_end(&quiet);
	if (!h)
		return 0;
	xmlCharEncCloseFunc(h);
	if ((cd = iconv_open("UTF-8", name)) != (iconv_t)-1) {
		iconv_close(cd);
		return 0;
	}
	return 1;
}

/* What the structure scan's end tags cost: each looks for its '>' through
 * the rest of the body, stopping at the next one. Bytes read in all (also
 * "<\0/" for UTF-16, which the scan reads decoded). */
static size_t end_tag_work(const char *buf, size_t len)
{
	const char *p = buf, *end = buf + len, *gt = buf;
	size_t work = 0;
	while (p + 2 < end && (p = memchr(p, '<', (size_t)(end - p - 2))) != NULL) {
		if (p[1] == '/' || (p[1] == 0 && p[2] == '/')) {
			if (gt && gt <= p)
				gt = memchr(p, '>', (size_t)(end - p)); /* moves forward only */
			work += (size_t)((gt ? gt : end) - p);
		}
		p++;
	}
	return work;
}

static int allowed(const char *var)
{
	const char *v = getenv(var);
	return v && *v == '1';
}

/* How many "--" the document holds. */
static size_t double_hyphens(const char *buf, size_t len)
{
	const char *p = buf, *end = buf + len;
	size_t n = 0;
	while (p + 1 < end && (p = memchr(p, '-', (size_t)(end - p - 1))) != NULL) {
		if (p[1] == '-')
			n++;
		p++;
	}
	return n;
}

int fuzz_open_finding_skipped(const char *buf, size_t len, const char *ct, int tree)
{
	static int allow = -1, allow_scan = -1, allow_comment = -1;
	const char *p, *end;
	char name[64];
	if (allow < 0) {
		allow = allowed("FUZZ_ALLOW_SLOW_DECODE");
		allow_scan = allowed("FUZZ_ALLOW_SLOW_SCAN");
		allow_comment = allowed("FUZZ_ALLOW_SLOW_COMMENT");
	}
	/* libxml2's tree parser copies a comment for every "--" in it */
	if (tree && allow_comment && (double)double_hyphens(buf, len) * (double)len > 1073741824.0) {
		fuzz_note("skipped: %zu bytes, %zu of them \"--\" (FUZZ_ALLOW_SLOW_COMMENT)", len,
			  double_hyphens(buf, len));
		return 1;
	}
	if (len <= FUZZ_PARSE_CHUNK)
		return 0;
	if (allow_scan && end_tag_work(buf, len) > ((size_t)64 << 20)) {
		fuzz_note("skipped: %zu bytes whose end tags look far for their '>' (FUZZ_ALLOW_SLOW_SCAN)",
			  len);
		return 1;
	}
	if (!allow)
		return 0;
	for (p = ct; p && *p; p++) {
		if (is_ci(p, "charset=")) {
			name_after(p + 8, p + strlen(p), name, sizeof(name));
			if (read_by_icu(name))
				goto skip;
		}
	}
	/* every declaration: a fixture carries its request's, and a reply's */
	end = buf + len;
	for (p = buf; p + 9 < end && (p = memchr(p, 'e', (size_t)(end - p - 9))) != NULL; p++) {
		if (!memcmp(p, "encoding=", 9)) {
			name_after(p + 9, end, name, sizeof(name));
			if (read_by_icu(name))
				goto skip;
		}
	}
	return 0;
skip:
	fuzz_note("skipped: %zu bytes in %s, which libxml2 reads through ICU (FUZZ_ALLOW_SLOW_DECODE)",
		  len, name);
	return 1;
}

wms_status fuzz_parse_checked(wms__op op, const char *buf, size_t len, const char *ct,
			      size_t max_bytes, unsigned flags, wms_error *err_out)
{
	reply_out o, o2;
	wms_error err, err2;
	wms_status st, st2;
	size_t cap = max_bytes ? max_bytes : WMS_DEFAULT_MAX_REPLY_BYTES;

	if (len <= cap && fuzz_open_finding_skipped(buf, len, ct, 0)) {
		if (err_out)
			memset(err_out, 0, sizeof(*err_out));
		return WMS_OK;
	}
	st = parse_once(wms__parse_reply, op, &o, &err, buf, len, ct, max_bytes);
	fuzz_check_libxml2_quiet("wms__parse_reply");
	check_result(op, st, &o, &err, len, cap, 0, "wms__parse_reply");
	check_limits(buf, len, ct, st, &err);
	fuzz_check_libxml2_quiet("the limits oracle");

	if (wms__parse_reply_libxml2) {
		st2 = parse_once(wms__parse_reply_libxml2, op, &o2, &err2, buf, len, ct, max_bytes);
		compare(op, "without the fast path", st, &o, &err, st2, &o2, &err2);
		if (st2 == WMS_OK)
			release(op, &o2);
	}
	/* A client's parses share a workspace that every earlier input has
	 * passed through (kept or dropped parser context, grown arrays): none of
	 * that may change an answer. The input twice in a row on it: the second
	 * time it finds what the first left (the primer, a document of the
	 * input's own, goes first). */
	if (primer_buf) {
		st2 = parse_once(parse_reused, op, &o2, &err2, primer_buf, primer_len, ct, 0);
		check_result(op, st2, &o2, &err2, primer_len, WMS_DEFAULT_MAX_REPLY_BYTES, 0, "the primer");
		if (st2 == WMS_OK)
			release(op, &o2);
		check_kept("after the primer");
	}
	st2 = parse_once(parse_reused, op, &o2, &err2, buf, len, ct, max_bytes);
	compare(op, "through a reused workspace", st, &o, &err, st2, &o2, &err2);
	if (st2 == WMS_OK)
		release(op, &o2);
	check_kept("reused");
	/* Past its deadline a parse reads the first chunk and stops: the same
	 * answer when that was all of it or enough to decide, else TIMEOUT (never
	 * for a reply that parses). It reads one chunk, cheap: a body over one
	 * has it before its second parse on the workspace, which must answer as
	 * before after it. */
	if (len > FUZZ_PARSE_CHUNK && len <= cap) {
		st2 = parse_once(parse_reused_late, op, &o2, &err2, buf, len, ct, max_bytes);
		check_result(op, st2, &o2, &err2, len, cap, 1, "past the deadline");
		if (st2 != WMS_ERR_TIMEOUT)
			compare(op, "past the deadline", st, &o, &err, st2, &o2, &err2);
		FUZZ_CHECK(st != WMS_OK || st2 == WMS_ERR_TIMEOUT,
			   "past the deadline, a %zu-byte reply that parses gave %s", len,
			   wms_status_name(st2));
		if (st2 == WMS_OK)
			release(op, &o2);
		check_kept("past the deadline");
	}
	st2 = parse_once(parse_reused_early, op, &o2, &err2, buf, len, ct, max_bytes);
	compare(op, "again on the reused workspace (a deadline an hour away)", st, &o, &err, st2, &o2,
		&err2);
	if (st2 == WMS_OK)
		release(op, &o2);
	check_kept("reused again");
	if (flags & FUZZ_PARSE_TWICE) {
		st2 = parse_once(wms__parse_reply, op, &o2, &err2, buf, len, ct, max_bytes);
		compare(op, "parsed again", st, &o, &err, st2, &o2, &err2);
		if (st2 == WMS_OK)
			release(op, &o2);
	}
	if (flags & FUZZ_PARSE_NULL_OUT) {
		st2 = wms__parse_reply(op, NULL, buf, len, ct, max_bytes, NULL);
		FUZZ_CHECK(st2 == st, "with out and err NULL: %s, else %s", wms_status_name(st2),
			   wms_status_name(st));
	}
	fuzz_check_libxml2_quiet("the reused workspace");
	fuzz_note("%s (%zu bytes, %s): %s %s", wms__op_name(op), len, ct ? ct : "no Content-Type",
		  wms_status_name(st), st == WMS_OK ? "" : err.message);
	if (st == WMS_OK)
		release(op, &o);
	if (err_out)
		*err_out = err;
	return st;
}
