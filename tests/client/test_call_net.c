/*
 * The generic call (wms/call.h) over real sockets: over TLS with HTTP Basic
 * (the TLS test server checks the credential; the wire log never shows it),
 * and with its deadline against a WMS that hangs, before and after the
 * request left, with the delivery each case allows.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <libxml/tree.h>

#include "wms/wms.h"
#include "wms/call.h"
#include "build_kind.h"
#include "client_new.h"
#include "loopback.h"
#include "tls_test.h"

#define SHIP_NS "urn:example:wms:shipping"
#define HTTP_USER "fulfillment"
#define HTTP_PW "http-pw-Vb62-canary"
#define WSSE_PW "wsse-pw-Nc37-canary"

static const char ship_body[] =
	"<sh:GetShipmentStatus xmlns:sh=\"" SHIP_NS "\"><sh:shipmentId>SHP-7</sh:shipmentId>"
	"</sh:GetShipmentStatus>";

static const char ship_reply[] =
	"<?xml version=\"1.0\"?><s:Envelope xmlns:s=\"http://schemas.xmlsoap.org/soap/envelope/\">"
	"<s:Body><sh:GetShipmentStatusResponse xmlns:sh=\"" SHIP_NS "\">"
	"<sh:shipmentId>SHP-7</sh:shipmentId><sh:state>IN_TRANSIT</sh:state>"
	"</sh:GetShipmentStatusResponse></s:Body></s:Envelope>";

static tls_pki pki;

static int group_setup(void **state)
{
	(void)state;
	tt_no_proxy();
	return tls_pki_make(&pki);
}

static int group_teardown(void **state)
{
	(void)state;
	tls_pki_free(&pki);
	return 0;
}

static wms_call_options ship_call(int idempotent)
{
	wms_call_options o = WMS_CALL_OPTIONS_INIT;
	o.operation = "GetShipmentStatus";
	o.soap_action = "urn:example:wms/GetShipmentStatus";
	o.reply_namespace = SHIP_NS;
	o.reply_element = "GetShipmentStatusResponse";
	o.idempotent = idempotent;
	return o;
}

static wms_status ship(wms_client *c, int idempotent, xmlDocPtr *reply, wms_error *err)
{
	wms_call_options op = ship_call(idempotent);
	*reply = (xmlDocPtr)err; /* must come back set or NULL */
	return wms_call_bytes(reply, c, &op, ship_body, sizeof(ship_body) - 1, err);
}

/* The wire log, every field that is text, one line each. */
typedef struct sink {
	char text[32768];
	unsigned records;
} sink;

static void on_wire(const wms_wire_record *r, void *payload)
{
	sink *s = payload;
	size_t used = strlen(s->text);
	s->records++;
	snprintf(s->text + used, sizeof(s->text) - used, "%s\n%s\n%s\n%.*s\n",
		 r->correlation_id ? r->correlation_id : "", r->operation ? r->operation : "",
		 r->content_type ? r->content_type : "", (int)r->body_len, r->body);
}

/* ---- over TLS, with HTTP Basic ------------------------------------------ */

/* An https endpoint verified against the test CA, HTTP Basic checked by
 * the server and a WS-Security password: the call succeeds with the
 * reply's element, the server got the credential, the action and the
 * correlation id, over one handshake for two calls; no secret is in the
 * wire log or the error. The wrong password is a 401: ANSWERED, and
 * nothing the breaker counts as a failure. */
static void over_tls_with_http_auth(void **state)
{
	char auth[256], v[256], *http_reply;
	const char *secrets[3];
	wms_client_options o = WMS_CLIENT_OPTIONS_INIT;
	wms_breaker_snapshot snap;
	ts_options so;
	ts_server *srv;
	ts_request last;
	ts_stats st;
	xmlDocPtr reply;
	wms_client *c;
	wms_error err;
	sink wire;
	(void)state;

	memset(&wire, 0, sizeof(wire));
	assert_int_equal(ts_basic_authorization(auth, sizeof(auth), HTTP_USER, HTTP_PW), 0);
	http_reply = lb_http_response(200, "OK", "text/xml; charset=utf-8", ship_reply);
	memset(&so, 0, sizeof(so));
	so.cert_file = pki.server.cert_file;
	so.key_file = pki.server.key_file;
	so.expect_authorization = auth;
	so.response = http_reply;
	srv = ts_start(&so);
	assert_non_null(srv);

	o.endpoint = ts_url(srv);
	o.timeout_ms = tt_timeout_ms();
	o.connect_timeout_ms = tt_connect_timeout_ms();
	o.curl.ca_file = pki.ca.cert_file;
	o.curl.http_username = HTTP_USER;
	o.curl.http_password = HTTP_PW;
	o.wsse.mode = WMS_WSSE_PASSWORD_TEXT;
	o.wsse.username = "svc";
	o.wsse.password = WSSE_PW;
	o.callbacks.on_wire = on_wire;
	o.callbacks.payload = &wire;
	c = must_client_new(&o);
	for (int round = 0; round < 2; round++) {
		xmlNodePtr root;
		assert_int_equal(ship(c, 1, &reply, &err), WMS_OK);
		assert_int_equal(err.delivery, WMS_DELIVERY_ANSWERED);
		root = xmlDocGetRootElement(reply);
		assert_string_equal((const char *)root->name, "GetShipmentStatusResponse");
		assert_string_equal((const char *)root->ns->href, SHIP_NS);
		xmlFreeDoc(reply);
		assert_true(ts_last_request(srv, &last));
		assert_int_equal(ts_header(&last, "Authorization", v, sizeof(v)), 1);
		assert_string_equal(v, auth);
		assert_int_equal(ts_header(&last, "SOAPAction", v, sizeof(v)), 1);
		assert_string_equal(v, "\"urn:example:wms/GetShipmentStatus\"");
		assert_int_equal(ts_header(&last, "X-Correlation-Id", v, sizeof(v)), 1);
		assert_string_equal(v, err.correlation_id);
		/* the secrets did travel, inside TLS */
		assert_non_null(strstr(last.body, WSSE_PW));
		assert_non_null(strstr(last.body, "<sh:shipmentId>SHP-7</sh:shipmentId>"));
		ts_request_free(&last);
	}
	ts_stats_get(srv, &st);
	assert_int_equal(st.handshakes, 1);
	assert_int_equal(st.requests, 2);
	assert_int_equal(st.unauthorized, 0);
	wms_client_free(c);

	/* the wrong password: the server's 401 */
	o.curl.http_password = "not-" HTTP_PW;
	c = must_client_new(&o);
	assert_int_equal(ship(c, 1, &reply, &err), WMS_ERR_HTTP);
	assert_null(reply);
	assert_int_equal(err.http_status, 401);
	assert_int_equal(err.delivery, WMS_DELIVERY_ANSWERED);
	assert_int_equal(wms_error_outcome(&err), WMS_OUTCOME_IGNORED);
	wms_breaker_snapshot_get(&snap, wms_client_breaker(c));
	assert_int_equal(snap.failures, 0);
	assert_int_equal(snap.ignored, 1);
	wms_client_free(c);
	ts_stats_get(srv, &st);
	assert_int_equal(st.unauthorized, 1);

	/* six records (three calls), none with a secret in any form */
	assert_int_equal(wire.records, 6);
	assert_non_null(strstr(wire.text, "GetShipmentStatus\n"));
	assert_non_null(strstr(wire.text, "REDACTED"));
	secrets[0] = HTTP_PW;
	secrets[1] = WSSE_PW;
	secrets[2] = auth + 6; /* base64(user:password) */
	for (int i = 0; i < 3; i++) {
		if (strstr(wire.text, secrets[i]))
			fail_msg("a secret (%.6s...) is in the wire log", secrets[i]);
		assert_null(strstr(err.message, secrets[i]));
	}
	ts_stop(srv);
	free(http_reply);
}

/* ---- the deadline against a hanging WMS --------------------------------- */

/* The call's deadline, and how far past it a return may come: curl's
 * timer, the thread's wake-up on a busy 2-core machine; scaled under
 * valgrind and the sanitizers (build_kind.h). */
static uint32_t deadline_ms(void)
{
	return tk_build_kind() == TK_PLAIN ? 300u : 2000u;
}

static uint64_t margin_ms(void)
{
	return 200ull * tk_slowdown();
}

static wms_client *hanging_client(const char *endpoint, uint32_t attempts)
{
	wms_client_options o = WMS_CLIENT_OPTIONS_INIT;
	o.endpoint = endpoint;
	o.timeout_ms = deadline_ms();
	o.connect_timeout_ms = deadline_ms();
	o.retry.max_attempts = attempts;
	o.retry.initial_backoff_ms = 1;
	o.retry.max_backoff_ms = 1;
	return must_client_new(&o);
}

/* One generic call, timed: TIMEOUT with `delivery`, no sooner than the
 * deadline and no later than the deadline plus the margin. */
static void expect_timeout(wms_client *c, int idempotent, wms_delivery delivery)
{
	xmlDocPtr reply;
	wms_error err;
	uint64_t t0 = lb_now_ms(), took;
	wms_status st = ship(c, idempotent, &reply, &err);
	took = lb_now_ms() - t0;
	print_message("  TIMEOUT after %llu ms (deadline %u ms, bound %llu ms), %s, %u attempt(s)\n",
		      (unsigned long long)took, deadline_ms(),
		      (unsigned long long)(deadline_ms() + margin_ms()),
		      wms_delivery_name(err.delivery), err.attempts);
	assert_int_equal(st, WMS_ERR_TIMEOUT);
	assert_null(reply);
	assert_int_equal(err.delivery, delivery);
	assert_string_equal(err.operation, "GetShipmentStatus");
	assert_true(took + 5 >= deadline_ms()); /* the clock's granularity */
	if (took > deadline_ms() + margin_ms())
		fail_msg("TIMEOUT after %llu ms for a %u ms deadline",
			 (unsigned long long)took, deadline_ms());
}

/* The WMS reads the request and never answers: TIMEOUT at the deadline,
 * delivery UNKNOWN (it has the request), one failure for the breaker, one
 * request to the WMS. */
static void deadline_after_the_request_left(void **state)
{
	lb_script script;
	wms_breaker_snapshot snap;
	lb_server *srv;
	wms_client *c;
	(void)state;

	memset(&script, 0, sizeof(script)); /* response NULL: read, answer nothing */
	srv = lb_start(&script);
	assert_non_null(srv);
	c = hanging_client(lb_url(srv), 3);
	expect_timeout(c, 0, WMS_DELIVERY_UNKNOWN);
	assert_int_equal(lb_requests(srv), 1); /* not idempotent: never resent */
	wms_breaker_snapshot_get(&snap, wms_client_breaker(c));
	assert_int_equal(snap.failures, 1);
	assert_int_equal(snap.permitted, 1);
	/* idempotent, 3 attempts allowed: the deadline is the call's, not an
	 * attempt's, so the call still ends at it */
	expect_timeout(c, 1, WMS_DELIVERY_UNKNOWN);
	assert_int_equal(lb_requests(srv), 2);
	wms_client_free(c);
	lb_stop(srv);
}

/* The WMS accepts the connection and reads nothing: the request may sit
 * in its socket buffer, so UNKNOWN too. */
static void deadline_unread(void **state)
{
	lb_script script;
	lb_server *srv;
	wms_client *c;
	(void)state;

	memset(&script, 0, sizeof(script));
	script.no_read = 1;
	srv = lb_start(&script);
	assert_non_null(srv);
	c = hanging_client(lb_url(srv), 1);
	expect_timeout(c, 0, WMS_DELIVERY_UNKNOWN);
	assert_int_equal(lb_accepted(srv), 1);
	wms_client_free(c);
	lb_stop(srv);
}

/* The connection never completes (a full accept queue): nothing left, so
 * NOT_SENT, still within the deadline. */
static void deadline_before_connecting(void **state)
{
	lb_blackhole bh;
	char url[64];
	wms_client *c;
	(void)state;

	assert_int_equal(lb_blackhole_open(&bh), 0);
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/wms", (unsigned)bh.port);
	c = hanging_client(url, 1);
	expect_timeout(c, 0, WMS_DELIVERY_NOT_SENT);
	wms_client_free(c);
	lb_blackhole_close(&bh);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(over_tls_with_http_auth),
		cmocka_unit_test(deadline_after_the_request_left),
		cmocka_unit_test(deadline_unread),
		cmocka_unit_test(deadline_before_connecting),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
