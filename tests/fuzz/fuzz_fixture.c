/*
 * Fuzz harness: the fixture loader and the replay transport, from memory
 * (wms__replay_transport_from_memory, src/fixture_internal.h).
 *
 * Input: a fixture file, optionally followed by the marker "\0REQ\0" and a
 * request: one flags byte, then the request body.
 *   flags bits 0-1  the request's operation
 *         bit 2     SOAP 1.2 (else 1.1)
 *         bit 3     WMS_REPLAY_SEQUENCE (else ANY)
 *         bit 4     mask clientOrderId and Created in every fixture
 * Without a request part the flags are the input's length and the four
 * canned requests below are sent (they match the *-ok fixtures in tests/fixtures/good).
 *
 * Checked: a fixture that does not load fails with WMS_ERR_FIXTURE naming
 * it, delivery NOT_SENT, one line; one that loads answers each request with
 * an HTTP reply (status 100-599; its body then goes through the reply
 * parser with all of fuzz_parse_checked's invariants), a replayed fault
 * with its documented status and delivery, or WMS_ERR_FIXTURE - and then
 * the mismatch callback got a diff ending in a newline; hits counts the
 * answered requests; nothing leaks.
 */
#include <string.h>
#include "fixture_internal.h"
#include "fuzz.h"

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
	req.max_reply_bytes = WMS_DEFAULT_MAX_REPLY_BYTES;
	resp.max_body = WMS_DEFAULT_MAX_REPLY_BYTES;

	st = t->send(t, &req, &resp, &err);
	fuzz_check_libxml2_quiet("replay send");
	fuzz_note("send %s: %s %s", wms__op_name(op), wms_status_name(st), st ? err.message : "");
	switch (st) {
	case WMS_OK:
		FUZZ_CHECK(resp.status >= 100 && resp.status <= 599, "replayed HTTP status %ld",
			   resp.status);
		FUZZ_CHECK(resp.body ? resp.body[resp.body_len] == '\0' : resp.body_len == 0,
			   "replayed body not NUL-terminated");
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

static void one(const uint8_t *data, size_t size)
{
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
	ro.mismatch_ctx = &log;

	memset(&err, 0, sizeof(err));
	st = wms__replay_transport_from_memory(&t, fixture, fixture_len, NAME, &ro, &err);
	fuzz_check_libxml2_quiet("loading the fixture");
	fuzz_note("load: %s %s", wms_status_name(st), st ? err.message : "");
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
		return;
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

/* A fixture followed by a request of its own, to reach the diff code. */
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
	if (i >= 2)
		return 0;
	fuzz_bytes_reset(out);
	fuzz_bytes_add(out, fixture, sizeof(fixture) - 1);
	fuzz_bytes_add(out, MARKER, MARKER_LEN);
	fuzz_bytes_add(out, &flags[i], 1);
	fuzz_bytes_add(out, reqs[i], strlen(reqs[i]));
	return 1;
}
