/*
 * Fuzz harness: the fixture loader and the replay transport, from memory
 * (wms__replay_transport_from_memory, src/transport/replay.h).
 *
 * Input: a fixture file, optionally followed by the marker "\0REQ\0" and a
 * request: one flags byte, then the request body.
 *   flags bits 0-1  the request's operation
 *         bit 2     SOAP 1.2 (else 1.1)
 *         bit 3     WMS_REPLAY_SEQUENCE (else ANY)
 *         bit 4     mask clientOrderId and Created in every fixture
 * Without a request part the flags are the input's length and the four
 * canned requests below are sent (they match the *-ok fixtures in tests/data/fixtures/good).
 * The whole input goes through the macros of fuzz_expand.c first when it
 * holds a 0x1E (fuzz.h, README.md), then is split at the marker: fixture
 * files and requests that cross the structural limits, request bodies of
 * thousands of lines for the diff's limits, reply bodies past the
 * replay's reply limit (1 MiB here; expansions stop at 2 MiB + 64 KiB: the
 * loader's own 64 MiB is crossed by a built-in seed). A primer is a reply body parsed
 * on the reused workspace before each replayed body.
 *
 * Checked: a fixture that does not load fails with WMS_ERR_FIXTURE naming
 * it, delivery NOT_SENT, one line; one that loads answers each request with
 * an HTTP reply (status 100-599, a Retry-After of whole seconds or
 * UINT32_MAX ms; its body then goes through the reply
 * parser with all of fuzz_parse_checked's invariants), a replayed fault
 * with its documented status and delivery, or WMS_ERR_FIXTURE - and then
 * the mismatch callback got a diff ending in a newline; hits counts the
 * answered requests; nothing leaks. The structural limits against what
 * libxml2 reads (fuzz_xml_facts): a fixture file or a request that crosses
 * one is refused naming it, as the library words it; a well-formed one
 * within them is not refused for one.
 */
#include <string.h>
#include "transport/replay.h"
#include "fuzz.h"
#include "hostile_xml.h"

#define NAME "fuzz.xml"
#define MARKER "\0REQ\0"
#define MARKER_LEN 5

typedef struct canned {
	wms__op op;
	wms__buf body;
} canned;

static canned requests[WMS__OP_COUNT];

static void build_canned(void)
{
	static const wms_order_line lines[] = { { "SKU-RED-1", 2 }, { "SKU-BLUE-7", 1 } };
	static const char *const skus[] = { "SKU-1", "SKU-4" };
	wms_order order = WMS_ORDER_INIT;
	wms_error err;
	wms_status st;
	int i;

	order.order_id = "ORD-1001";
	order.ship_to.name = "Ada Lovelace";
	order.ship_to.line1 = "12 Analytical Row";
	order.ship_to.city = "London";
	order.ship_to.postal_code = "N1 9GU";
	order.ship_to.country = "GB";
	order.priority = WMS_PRIORITY_EXPRESS;
	order.lines = lines;
	order.line_count = 2;
	for (i = 0; i < WMS__OP_COUNT; i++)
		requests[i].op = (wms__op)i;
	st = wms__build_submit_order(&requests[0].body, WMS_SOAP_11, &order, &err);
	if (st == WMS_OK)
		st = wms__build_get_order_status(&requests[1].body, WMS_SOAP_11, "ORD-1001", &err);
	if (st == WMS_OK)
		st = wms__build_cancel_order(&requests[2].body, WMS_SOAP_11, "ORD-1001", NULL, &err);
	if (st == WMS_OK)
		st = wms__build_get_stock_level(&requests[3].body, WMS_SOAP_11, skus, 2, &err);
	FUZZ_CHECK(st == WMS_OK, "building the canned requests: %s", err.message);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_count_allocations();
	wms__xml_init();
	build_canned();
	fuzz_watch_libxml2_errors();
	return 0;
}

typedef struct mismatch_log {
	int calls;
} mismatch_log;

static void on_mismatch(const char *diff, void *ctx)
{
	mismatch_log *log = ctx;
	size_t n = strlen(diff);
	log->calls++;
	FUZZ_CHECK(n > 0 && diff[n - 1] == '\n', "mismatch diff does not end in a newline");
}

static int starts(const char *s, const char *prefix)
{
	return !strncmp(s, prefix, strlen(prefix));
}

/* A loader's refusal (the part after its fixed prefix) of the document's
 * XML declaration, before the scan (soap/tree.c words it "refused: " and
 * sniff.c's reason): an encoding libwms does not read, one over 40 bytes
 * long or none, a declaration too long to read. */
static int refused_for_encoding(const char *m)
{
	return m && starts(m, "refused: its XML declaration");
}

/* The loader's and the replay's refusals for a limit, against what libxml2
 * reads of the document: `tail` is the part of the message after its fixed
 * prefix when the message has one, else NULL; `prescan` says the refusal
 * came before the scan (size, an encoding libwms does not read). */
static void check_limit(const char *doc, size_t len, const char *msg, const char *tail,
			int prescan, const char *what_doc)
{
	fuzz_xml_facts f;
	char element[48];
	const char *what = tail ? fuzz_limit_tail(tail, element, sizeof(element)) : NULL;

	FUZZ_CHECK(!tail || what, "%s: a limit refusal in other words: \"%.200s\"", what_doc, msg);
	if (prescan)
		return; /* refused unread: nothing to compare */
	fuzz_xml_facts_read(&f, doc, len);
	fuzz_check_libxml2_quiet("the limits oracle");
	if (f.limit)
		FUZZ_CHECK(what || prescan,
			   "%s: <%s> crosses the limit of %u %s as libxml2 reads it, but: \"%.200s\"",
			   what_doc, f.element, f.max, f.limit, msg);
	if (f.limit && f.clean && what)
		FUZZ_CHECK((what == f.limit || what == f.limit2) && !strcmp(element, f.element),
			   "%s: well-formed, <%s> crosses %u %s, but: \"%.200s\"", what_doc, f.element,
			   f.max, f.limit, msg);
	if (!f.limit && f.clean)
		FUZZ_CHECK(!what, "%s: well-formed and within every limit as libxml2 reads it (%u "
			   "elements, %u deep), but: \"%.200s\"", what_doc, f.elements, f.depth, msg);
}

/* The replay's reply limit here: 1 MiB, so that a fixture crosses it in
 * less than the expansion cap. */
#define REPLY_MAX ((size_t)1 << 20)

/* Send one request; returns whether the transport answered it (a hit). */
static int send_one(wms_transport *t, mismatch_log *log, wms__op op, wms_soap_version v,
		    const char *body, size_t len)
{
	wms_http_request req;
	wms_http_response resp;
	wms_error err;
	wms_status st;
	int calls = log->calls;

	memset(&req, 0, sizeof(req));
	memset(&resp, 0, sizeof(resp));
	memset(&err, 0, sizeof(err));
	req.url = "http://wms.invalid/wms";
	req.operation = wms__op_name(op);
	req.soap_action = wms__op_action(op);
	req.soap_version = v;
	req.content_type = wms__op_content_type(op, v);
	req.body = body;
	req.body_len = len;
	req.connect_timeout_ms = 2000;
	req.timeout_ms = 10000;
	req.stall_timeout_ms = 5000;
	req.max_reply_bytes = REPLY_MAX;
	resp.max_body = REPLY_MAX;

	st = t->send(t, &req, &resp, &err);
	fuzz_check_libxml2_quiet("replay send");
	fuzz_note("send %s: %s %s", wms__op_name(op), wms_status_name(st), st ? err.message : "");
	{
		static const char cannot[] = " request body cannot be matched: ";
		const char *m = st == WMS_ERR_FIXTURE ? strstr(err.message, cannot) : NULL;
		m = m ? m + strlen(cannot) : NULL;
		check_limit(body, len, st == WMS_ERR_FIXTURE ? err.message : "",
			    m && *m == '<' ? m : NULL,
			    refused_for_encoding(m), "the request");
	}
	switch (st) {
	case WMS_OK:
		FUZZ_CHECK(resp.status >= 100 && resp.status <= 599, "replayed HTTP status %ld",
			   resp.status);
		FUZZ_CHECK(resp.body ? resp.body[resp.body_len] == '\0' : resp.body_len == 0,
			   "replayed body not NUL-terminated");
		/* whole seconds, or the cap */
		FUZZ_CHECK(resp.retry_after_ms == UINT32_MAX ||
				   (resp.retry_after_ms < UINT32_MAX && resp.retry_after_ms % 1000u == 0),
			   "replayed Retry-After of %llu ms",
			   (unsigned long long)resp.retry_after_ms);
		fuzz_parse_checked(op, resp.body, resp.body_len, resp.content_type, 0, 0, NULL);
		break;
	case WMS_ERR_TIMEOUT:
		fuzz_check_error(&err, st, "replay send");
		FUZZ_CHECK(err.delivery != WMS_DELIVERY_ANSWERED, "replayed timeout ANSWERED");
		break;
	case WMS_ERR_CONNECT:
		fuzz_check_error(&err, st, "replay send");
		FUZZ_CHECK(err.delivery == WMS_DELIVERY_NOT_SENT, "replayed %s with delivery %s",
			   wms_status_name(st), wms_delivery_name(err.delivery));
		break;
	case WMS_ERR_TRANSPORT:
		/* reset: UNKNOWN; reset-before-send: NOT_SENT, and says so */
		fuzz_check_error(&err, st, "replay send");
		FUZZ_CHECK(err.delivery == WMS_DELIVERY_UNKNOWN ||
				   (err.delivery == WMS_DELIVERY_NOT_SENT &&
				    strstr(err.message, "before the request left")),
			   "replayed reset with delivery %s: %s", wms_delivery_name(err.delivery),
			   err.message);
		break;
	case WMS_ERR_FIXTURE:
		fuzz_check_error(&err, st, "replay send");
		FUZZ_CHECK(err.delivery == WMS_DELIVERY_NOT_SENT, "no match, delivery %s",
			   wms_delivery_name(err.delivery));
		FUZZ_CHECK(log->calls - calls <= 1, "%d mismatch reports for one request",
			   log->calls - calls);
		break;
	case WMS_ERR_TOO_LARGE:
		fuzz_check_error(&err, st, "replay send");
		FUZZ_CHECK(resp.body_len <= resp.max_body, "TOO_LARGE with %zu bytes kept", resp.body_len);
		break;
	case WMS_ERR_INVALID_ARG:
	case WMS_ERR_NOMEM:
	case WMS_ERR_CIRCUIT_OPEN:
	case WMS_ERR_BULKHEAD_FULL:
	case WMS_ERR_HTTP:
	case WMS_ERR_SOAP_FAULT:
	case WMS_ERR_NOT_XML:
	case WMS_ERR_TRUNCATED:
	case WMS_ERR_UNEXPECTED_REPLY:
	case WMS_ERR_UNSAFE_XML:
	case WMS_ERR_TLS:
	case WMS_ERR_CONFIG:
	case WMS_ERR_INTERNAL:
	default:
		fuzz_fail(__FILE__, __LINE__, "documented status", "replay send returned %s: %.200s",
			  wms_status_name(st), err.message);
	}
	if (st != WMS_ERR_FIXTURE)
		FUZZ_CHECK(log->calls == calls, "mismatch reported for an answered request");
	wms_http_response_clear(&resp);
	return st != WMS_ERR_FIXTURE;
}

/* The loader refuses files past 64 MiB (FIXTURE_FILE_MAX, src/fixture/format.c).
 * Expansions stop where replies' do instead, past the replay's 1 MiB reply
 * limit: 64 MiB ones cost a second each (a built-in seed, --heavy, crosses
 * it). */
#define FIXTURE_MAX (64u * 1024u * 1024u)
#define EXPAND_MAX FUZZ_REPLY_EXPAND_MAX

static void one(const uint8_t *data, size_t size)
{
	fuzz_bytes expanded = { NULL, 0, 0 }, primer = { NULL, 0, 0 };
	static const char *const masks[] = { "clientOrderId", "Created" };
	const uint8_t *req = NULL;
	const char *fixture = (const char *)data;
	size_t fixture_len = size, req_len = 0, hits = 0, unused, k;
	wms_replay_options ro = WMS_REPLAY_OPTIONS_INIT;
	wms_transport *t = NULL;
	mismatch_log log = { 0 };
	wms_error err;
	wms_status st;
	unsigned flags;
	int i;

	if (fuzz_expand(data, size, EXPAND_MAX, &expanded, &primer)) {
		data = expanded.data;
		size = expanded.len;
		fixture = (const char *)data;
		fixture_len = size;
		fuzz_set_primer(primer.len ? (const char *)primer.data : NULL, primer.len);
	}
	for (k = 0; k + MARKER_LEN <= size; k++) {
		if (data[k] == 0 && !memcmp(data + k, MARKER, MARKER_LEN)) {
			fixture_len = k;
			req = data + k + MARKER_LEN;
			req_len = size - k - MARKER_LEN;
			break;
		}
	}
	flags = req && req_len ? req[0] : (unsigned)size;
	ro.order = (flags & 0x08u) ? WMS_REPLAY_SEQUENCE : WMS_REPLAY_ANY;
	if (flags & 0x10u) {
		ro.masked_elements = masks;
		ro.masked_count = 2;
	}
	ro.on_mismatch = on_mismatch;
	ro.payload = &log;

	if (fuzz_open_finding_skipped(fixture, fixture_len, NULL, 1) ||
	    (req && req_len > 1 && fuzz_open_finding_skipped((const char *)req + 1, req_len - 1, NULL, 1)))
		goto done;
	memset(&err, 0, sizeof(err));
	st = wms__replay_transport_from_memory(&t, fixture, fixture_len, NAME, &ro, &err);
	fuzz_check_libxml2_quiet("loading the fixture");
	fuzz_note("load: %s %s", wms_status_name(st), st ? err.message : "");
	{
		static const char top[] = "fixture " NAME ": ";
		const char *m = st != WMS_OK && starts(err.message, top) ? err.message + strlen(top) : NULL;
		check_limit(fixture, fixture_len, st != WMS_OK ? err.message : "",
			    m && *m == '<' ? m : NULL,
			    m && (starts(m, "larger than") || refused_for_encoding(m)),
			    "the fixture file");
		FUZZ_CHECK((fixture_len > FIXTURE_MAX) == (m && starts(m, "larger than")),
			   "a fixture of %zu bytes: \"%.200s\"", fixture_len, err.message);
	}
	if (st != WMS_OK) {
		FUZZ_CHECK(st == WMS_ERR_FIXTURE, "loading gave %s: %.200s", wms_status_name(st),
			   err.message);
		FUZZ_CHECK(t == NULL, "failed load left a transport");
		fuzz_check_error(&err, st, "fixture load");
		FUZZ_CHECK(err.delivery == WMS_DELIVERY_NOT_SENT, "load failure with delivery %s",
			   wms_delivery_name(err.delivery));
		FUZZ_CHECK(!strncmp(err.message, "fixture " NAME, strlen("fixture " NAME)),
			   "load failure does not name the fixture: \"%.200s\"", err.message);
		FUZZ_CHECK(log.calls == 0, "mismatch reported while loading");
		goto done;
	}
	FUZZ_CHECK(t != NULL && t->send && t->free, "WMS_OK without a usable transport");
	FUZZ_CHECK(wms_replay_transport_hits(t) == 0 && wms_replay_transport_unused(t) == 1,
		   "fresh transport: hits %zu, unused %zu", wms_replay_transport_hits(t),
		   wms_replay_transport_unused(t));
	if (req && req_len) {
		hits += (size_t)send_one(t, &log, (wms__op)(flags & 3u),
					 (flags & 0x04u) ? WMS_SOAP_12 : WMS_SOAP_11,
					 (const char *)req + 1, req_len - 1);
	} else {
		for (i = 0; i < WMS__OP_COUNT; i++)
			hits += (size_t)send_one(t, &log, requests[i].op, WMS_SOAP_11,
						 requests[i].body.data, requests[i].body.len);
	}
	unused = wms_replay_transport_unused(t);
	FUZZ_CHECK(wms_replay_transport_hits(t) == hits, "hits %zu, but %zu requests were answered",
		   wms_replay_transport_hits(t), hits);
	FUZZ_CHECK(unused == (hits ? 0u : 1u), "unused %zu after %zu hits", unused, hits);
	t->free(t);
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

int fuzz_seed_variant(size_t i, const uint8_t *seed, size_t n, fuzz_bytes *out)
{
	if (i > 0)
		return 0;
	fuzz_bytes_reset(out);
	fuzz_bytes_add(out, seed, n);
	return 1;
}

/* ---- built-in seeds ------------------------------------------------------ */

static void add(fuzz_bytes *b, const char *s)
{
	fuzz_bytes_add(b, s, strlen(s));
}

/* A CancelOrder request for "A" with `inner` after its clientOrderId. */
static void cancel_request(fuzz_bytes *b, const char *inner)
{
	add(b, "<e:Envelope xmlns:e=\"" WMS__SOAP11_NS "\"><e:Body><c:CancelOrderRequest xmlns:c=\""
	       WMS__NS "\"><c:clientOrderId>A</c:clientOrderId>");
	add(b, inner);
	add(b, "</c:CancelOrderRequest></e:Body></e:Envelope>");
}

/* What a seed's fixture and request carry; strings may hold macros. */
typedef struct fx_shape {
	const char *what;      /* for the reader; "heavy: ..." costs seconds under valgrind */
	const char *root;      /* on <fixture> */
	const char *req_attrs; /* on <request> */
	const char *inner;     /* in the fixture's request, after clientOrderId, or (after a
				* '|') in <request> before its <body> */
	const char *answer;    /* the <reply> or <fault> element */
	const char *sent;      /* the request sent's inner part; NULL: no request part */
} fx_shape;

#define REPLY "<reply status=\"200\"><header name=\"Content-Type\">text/xml</header>" \
	      "<body encoding=\"base64\">PGE+PC9hPg==</body></reply>"
#define RA(v) "<reply status=\"503\"><header name=\"Retry-After\">" v "</header></reply>"
#define REP256 "\x1e\x24\x80"
#define REP257 "\x1e\x24\x81"
#define N63 "\x1e\x22\x7f"
#define N64 "\x1e\x22\x80"
#define N65 "\x1e\x22\x81"
#define E "\x1f"
#define A1000 "\x1e\x26\x80"
#define A1001 "\x1e\x26\x81"
#define LONG40 "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define LONGB40 "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"

static const fx_shape fx_shapes[] = {
	{ "256 attributes on <fixture>", " xmlns:x='urn:x'" REP256 " x:a\x1d=''" E, "", "", REPLY, NULL },
	{ "257 attributes on <fixture>", " xmlns:x='urn:x'" REP257 " x:a\x1d=''" E, "", "", REPLY, NULL },
	/* the default declaration is one */
	{ "64 declarations on <fixture>", N63 " xmlns:p\x1d='u'" E, "", "", REPLY, NULL },
	{ "65 declarations on <fixture>", N64 " xmlns:p\x1d='u'" E, "", "", REPLY, NULL },
	{ "128 in scope", N63 " xmlns:p\x1d='u'" E, N64 " xmlns:q\x1d='u'" E, "", REPLY, NULL },
	{ "129 in scope", N63 " xmlns:p\x1d='u'" E, N64 " xmlns:q\x1d='u'" E, "|<x xmlns:r='u'/>", REPLY, NULL },
	/* the request's own 4 elements (the bound itself: fuzz_reply.c's seeds;
	 * 100 000 here costs seconds under valgrind) */
	{ "a request of 100001 elements", "", "", "\x1e\x31\x7d<e/>" E, REPLY, NULL },
	{ "a request of 257 attributes", "", "", "<x" REP257 " a\x1d=''" E "/>", REPLY, NULL },
	{ "a request sent with 257 attributes", "", "", "", REPLY, "<x" REP257 " a\x1d=''" E "/>" },
	{ "a request sent with 65 declarations", "", "", "", REPLY, "<x" N65 " xmlns:p\x1d='u'" E "/>" },
	/* Myers: 2000 edits found, 2001 too many (the whole middle replaced) */
	{ "a diff of 2000 edits", "", "", A1000 "<a\x1d/>" E, REPLY, A1000 "<b\x1d/>" E },
	{ "a diff of 2001 edits", "", "", A1000 "<a\x1d/>" E, REPLY, A1001 "<b\x1d/>" E },
	/* the diff text: 64 KiB, then cut */
	{ "a diff of 55 KB", "", "", "\x1e\x3c\x80<" LONG40 LONG40 LONG40 "\x1d/>" E, REPLY,
	  "\x1e\x3c\x80<" LONGB40 LONGB40 LONGB40 "\x1d/>" E },
	{ "a diff of 80 KB, cut", "", "", "\x1e\x3c\xe4<" LONG40 LONG40 LONG40 "\x1d/>" E, REPLY,
	  "\x1e\x3c\xe4<" LONGB40 LONGB40 LONGB40 "\x1d/>" E },
	/* hunks: 6 lines between two changes keep one, 7 make two */
	{ "one hunk", "", "", "<x/>\x1e\x20\x86<s/>" E "<y/>", REPLY, "<X/>\x1e\x20\x86<s/>" E "<Y/>" },
	{ "two hunks", "", "", "<x/>\x1e\x20\x87<s/>" E "<y/>", REPLY, "<X/>\x1e\x20\x87<s/>" E "<Y/>" },
	/* the summary's first line cut at 60 bytes; indentation past 16 levels */
	{ "a long first difference", "", "", "<" LONG40 LONG40 "/>", REPLY, "<" LONGB40 LONGB40 "/>" },
	{ "20 levels deep", "", "", "\x1e\x39\x84<d>" E "<x/>\x1e\x39\x84</d>" E, REPLY,
	  "\x1e\x39\x84<d>" E "<y/>\x1e\x39\x84</d>" E },
	/* libxml2's own depth limit in the tree the loader builds: 257 deep */
	{ "a request 257 deep", "", "", "\x1e\x24\x7e<d>" E "\x1e\x24\x7e</d>" E, REPLY, NULL },
	{ "a request 258 deep", "", "", "\x1e\x24\x7f<d>" E "\x1e\x24\x7f</d>" E, REPLY, NULL },
	/* the numbers: status 100-599, delays 0-3600000 */
	{ "status 99", "", "", "", "<reply status=\"99\"/>", NULL },
	{ "status 100", "", "", "", "<reply status=\"100\"/>", NULL },
	{ "status 599", "", "", "", "<reply status=\"599\"/>", NULL },
	{ "status 600", "", "", "", "<reply status=\"600\"/>", NULL },
	{ "delay-ms 3600000", "", "", "", "<reply status=\"200\" delay-ms=\"3600000\"/>", NULL },
	{ "delay-ms 3600001", "", "", "", "<reply status=\"200\" delay-ms=\"3600001\"/>", NULL },
	{ "after-ms 3600000", "", "", "", "<fault kind=\"reset\" after-ms=\"3600000\"/>", NULL },
	{ "after-ms 3600001", "", "", "", "<fault kind=\"reset\" after-ms=\"3600001\"/>", NULL },
	/* Retry-After: 10 digits, 11; the UINT32_MAX ms cap under and over; an
	 * HTTP-date (refused); each sent, so that the replay answers */
	{ "Retry-After of 10 digits", "", "", "", RA("9999999999"), "" },
	{ "Retry-After of 11 digits", "", "", "", RA("00000000001"), "" },
	{ "Retry-After 4294967 s", "", "", "", RA("4294967"), "" },
	{ "Retry-After 4294968 s", "", "", "", RA("4294968"), "" },
	{ "Retry-After an HTTP-date", "", "", "", RA("Wed, 21 Oct 2026 07:28:00 GMT"), "" },
	/* a reply past the response's 1 MiB: TOO_LARGE */
	{ "heavy: a reply body of 1 MiB + 1", "", "", "",
	  "<reply status=\"200\"><body>\x1e\x35\x81x" E "</body></reply>", "" },
};

#define N_FX (sizeof(fx_shapes) / sizeof(fx_shapes[0]))

static void build_fx(const fx_shape *sh, fuzz_bytes *out)
{
	uint8_t flags = WMS__OP_CANCEL_ORDER;
	fuzz_bytes_reset(out);
	add(out, "<fixture xmlns=\"urn:libwms:fixture:1\"");
	add(out, sh->root);
	add(out, "><request operation=\"CancelOrder\"");
	add(out, sh->req_attrs);
	add(out, ">");
	if (sh->inner[0] == '|')
		add(out, sh->inner + 1);
	add(out, "<body><![CDATA[");
	cancel_request(out, sh->inner[0] == '|' ? "" : sh->inner);
	add(out, "]]></body></request>");
	add(out, sh->answer);
	add(out, "</fixture>");
	if (sh->sent) {
		fuzz_bytes_add(out, MARKER, MARKER_LEN);
		fuzz_bytes_add(out, &flags, 1);
		cancel_request(out, sh->sent);
	}
}

/* The built-in seeds: a fixture and a request of its own, to reach the
 * diff code (0-1), then each limit the loader and the replay have. */
int fuzz_builtin_seed(size_t i, fuzz_bytes *out)
{
	static const char fixture[] =
		"<fixture xmlns=\"urn:libwms:fixture:1\"><request operation=\"CancelOrder\">"
		"<mask>reason</mask><body><![CDATA[<e:Envelope xmlns:e=\"" WMS__SOAP11_NS "\">"
		"<e:Body><c:CancelOrderRequest xmlns:c=\"" WMS__NS "\"><c:clientOrderId>A</c:clientOrderId>"
		"<c:reason>x</c:reason></c:CancelOrderRequest></e:Body></e:Envelope>]]></body></request>"
		"<reply status=\"200\"><header name=\"Content-Type\">text/xml</header><body encoding=\"base64\">"
		"PGE+PC9hPg==</body></reply></fixture>";
	static const char *const reqs[] = {
		"<e:Envelope xmlns:e=\"" WMS__SOAP11_NS "\"><e:Body><c:CancelOrderRequest xmlns:c=\""
		WMS__NS "\"><c:clientOrderId>A</c:clientOrderId><c:reason>y</c:reason>"
		"</c:CancelOrderRequest></e:Body></e:Envelope>",
		"<e:Envelope xmlns:e=\"" WMS__SOAP11_NS "\"><e:Body><c:CancelOrderRequest xmlns:c=\""
		WMS__NS "\"><c:clientOrderId>B</c:clientOrderId></c:CancelOrderRequest></e:Body>"
		"</e:Envelope>",
	};
	static const uint8_t flags[] = { WMS__OP_CANCEL_ORDER, WMS__OP_CANCEL_ORDER | 0x08u };
	fuzz_bytes utf16 = { NULL, 0, 0 };
	if (i < 2) {
		fuzz_bytes_reset(out);
		fuzz_bytes_add(out, fixture, sizeof(fixture) - 1);
		fuzz_bytes_add(out, MARKER, MARKER_LEN);
		fuzz_bytes_add(out, &flags[i], 1);
		fuzz_bytes_add(out, reqs[i], strlen(reqs[i]));
		return 1;
	}
	i -= 2;
	if (i < N_FX) {
		if (!fuzz_heavy_seeds && !strncmp(fx_shapes[i].what, "heavy: ", 7))
			return -1;
		build_fx(&fx_shapes[i], out);
		return 1;
	}
	i -= N_FX;
	switch (i) {
	case 0: /* 256 and 257 attributes on <fixture> in UTF-16LE */
	case 1:
		build_fx(&fx_shapes[i], &utf16);
		fuzz_bytes_reset(out);
		add(out, "\x1e\xa0\x80");
		fuzz_bytes_add(out, utf16.data, utf16.len);
		add(out, "\x1f");
		fuzz_bytes_free(&utf16);
		return 1;
	case 2: /* a UTF-8 BOM, then a declaration that agrees with it, and one
		 * that does not (refused before it is parsed) */
	case 3:
		fuzz_bytes_reset(out);
		add(out, i == 2 ? "\xef\xbb\xbf<?xml version=\"1.0\" encoding=\"UTF-8\"?>"
				: "\xef\xbb\xbf<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?>");
		add(out, fixture);
		return 1;
	case 4: /* heavy: a file past 64 MiB, refused unread; its bytes as they
		 * are (past the expansion cap), so only replayed, never written
		 * to a corpus */
		if (fuzz_heavy_seeds != 1)
			return -1;
		fuzz_bytes_reset(out);
		add(out, "<fixture xmlns=\"urn:libwms:fixture:1\">");
		fuzz_bytes_reserve(out, FIXTURE_MAX);
		memset(out->data + out->len, ' ', FIXTURE_MAX);
		out->len += FIXTURE_MAX;
		add(out, "</fixture>");
		return 1;
	default:
		return 0;
	}
}
