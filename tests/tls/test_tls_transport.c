/*
 * The libcurl transport against a real TLS server (tls_server.c) with
 * certificates made at test time (tls_pki.c): default verification, CA file
 * and CA directory, host name and expiry, mutual TLS, public-key pinning.
 * Every failure is checked from both ends: the status, delivery and CURLcode
 * the transport returns, and what the server decrypted (no request byte may
 * arrive when the handshake or the checks after it fail).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <curl/curl.h>

#include "soap/soap.h" /* wms__parse_reply: the reply must parse, not only arrive */
#include "wms/sys/transport.h"
#include "tls_test.h"
#include "transport_opts.h"

#define ACTION "urn:libwms:warehouse:1/SubmitOrder"
#define CT_11 "text/xml; charset=utf-8"

/* A pin that matches no key: base64 of 32 zero bytes. */
#define WRONG_PIN "sha256//AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="

static const char request_body[] =
	"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
	"<soap:Envelope xmlns:soap=\"http://schemas.xmlsoap.org/soap/envelope/\" "
	"xmlns:wh=\"urn:libwms:warehouse:1\"><soap:Body><wh:SubmitOrderRequest>"
	"<wh:clientOrderId>ORD-TLS-1</wh:clientOrderId>"
	"</wh:SubmitOrderRequest></soap:Body></soap:Envelope>";

static tls_pki pki;

/* ---- fixture ------------------------------------------------------------ */

typedef struct fx {
	tt_transport tt; /* the transport, made anew when tt.want changes */
	ts_server *srv;
	wms_http_request req;
	wms_http_response resp;
	wms_error err;
	ts_request last;
	char url[96];
} fx;

static int group_setup(void **state)
{
	(void)state;
	return tls_pki_make(&pki);
}

static int group_teardown(void **state)
{
	(void)state;
	tls_pki_free(&pki);
	return 0;
}

static int setup(void **state)
{
	fx *f = calloc(1, sizeof(*f));
	if (!f)
		return -1;
	tt_transport_init(&f->tt);
	f->req.operation = "SubmitOrder";
	f->req.soap_action = ACTION;
	f->req.soap_version = WMS_SOAP_11;
	f->req.content_type = CT_11;
	f->req.body = request_body;
	f->req.body_len = sizeof(request_body) - 1;
	f->req.connect_timeout_ms = tt_connect_timeout_ms();
	f->req.timeout_ms = tt_timeout_ms();
	f->req.stall_timeout_ms = tt_timeout_ms();
	f->req.max_reply_bytes = 1024 * 1024;
	f->tt.want.user_agent = "libwms-tls-test/1";
	f->resp.max_body = f->req.max_reply_bytes;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fx *f = *state;
	tt_transport_free(&f->tt);
	ts_stop(f->srv);
	wms_http_response_clear(&f->resp);
	ts_request_free(&f->last);
	free(f);
	return 0;
}

/* A server presenting `cert`; client_ca: require a client certificate from
 * it; close_after: one request per connection. */
static void start_with(fx *f, const tls_cred *cert, const char *client_ca, int tls12_only,
		       int close_after)
{
	ts_options o;
	memset(&o, 0, sizeof(o));
	o.cert_file = cert->cert_file;
	o.key_file = cert->key_file;
	o.client_ca_file = client_ca;
	o.tls12_only = tls12_only;
	o.close_after_reply = close_after;
	f->srv = ts_start(&o);
	assert_non_null(f->srv);
	f->req.url = ts_url(f->srv);
}

static void start(fx *f, const tls_cred *cert, const char *client_ca, int tls12_only)
{
	start_with(f, cert, client_ca, tls12_only, 0);
}

static wms_status call(fx *f)
{
	wms_status st;
	wms_error_clear(&f->err);
	st = tt_transport_apply(&f->tt, &f->err);
	if (st == WMS_OK)
		st = f->tt.tp->send(f->tt.tp, &f->req, &f->resp, &f->err);
	if (getenv("WMS_TEST_VERBOSE"))
		print_message("  -> %s/%s curl %d: %s\n", wms_status_name(st),
			      wms_delivery_name(f->err.delivery), f->err.curl_code, f->err.message);
	return st;
}

/* A call that must succeed: the reply is the server's SubmitOrder answer,
 * it parses, and the server decrypted exactly what was sent. */
static void assert_ok(fx *f, wms_status st)
{
	wms_submit_reply reply;
	wms_error perr;
	if (st != WMS_OK)
		fail_msg("expected OK, got %s (curl %d): %s", wms_status_name(st), f->err.curl_code,
			 f->err.message);
	assert_int_equal(f->err.curl_code, 0);
	assert_int_equal(f->resp.status, 200);
	assert_non_null(f->resp.body);
	wms_error_clear(&perr);
	memset(&reply, 0, sizeof(reply));
	assert_int_equal(wms__parse_reply(WMS__OP_SUBMIT_ORDER, &reply, f->resp.body,
					  f->resp.body_len, f->resp.content_type,
					  f->req.max_reply_bytes, &perr),
			 WMS_OK);
	assert_string_equal(reply.order_id, "ORD-TLS-1");
	assert_string_equal(reply.wms_reference, "WMS-TLS-0001");
	assert_int_equal(reply.state, WMS_ORDER_STATE_RECEIVED);
	ts_request_free(&f->last);
	assert_true(ts_last_request(f->srv, &f->last));
	assert_int_equal(f->last.body_len, f->req.body_len);
	assert_memory_equal(f->last.body, f->req.body, f->req.body_len);
	assert_int_equal(strncmp(f->last.head, "POST /wms HTTP/1.1\r\n", 20), 0);
}

static void assert_failed(fx *f, wms_status st, wms_status want, int curl_code)
{
	if (st != want || f->err.curl_code != curl_code)
		fail_msg("expected %s (curl %d), got %s (curl %d): %s", wms_status_name(want),
			 curl_code, wms_status_name(st), f->err.curl_code, f->err.message);
	assert_int_equal(f->err.status, want);
	assert_int_equal(f->err.delivery, WMS_DELIVERY_NOT_SENT);
	assert_true(f->err.message[0] != '\0');
	assert_null(strchr(f->err.message, '\n'));
	assert_int_equal(f->resp.status, 0);
	assert_int_equal(f->resp.body_len, 0);
}

/* What the server saw once it has accepted `accepted` connections and is
 * done with all but `open` of them. */
static ts_stats settle_open(fx *f, unsigned accepted, unsigned open)
{
	ts_stats st;
	assert_true(ts_settle(f->srv, accepted, open, tt_settle_ms()));
	ts_stats_get(f->srv, &st);
	assert_int_equal(st.accepted, accepted);
	if (getenv("WMS_TEST_VERBOSE"))
		print_message("  server: %u conns, finished %u, handshakes %u, failures %u, "
			      "app %zu bytes, %zu after a failure, %u requests\n",
			      st.accepted, st.client_finished, st.handshakes, st.handshake_failures,
			      st.app_bytes, st.bytes_after_failure, st.requests);
	return st;
}

/* ... done with all of them. */
static ts_stats settle(fx *f, unsigned accepted)
{
	return settle_open(f, accepted, 0);
}

/* Refused in the handshake or right after it (`finished`: how many times
 * the client got through its side): not one byte of a request reached the
 * server, decrypted or not. */
static void assert_refused_in_handshake(fx *f, unsigned accepted, unsigned finished)
{
	ts_stats st = settle(f, accepted);
	assert_int_equal(st.client_finished, finished);
	assert_int_equal(st.handshake_failures, accepted - st.handshakes);
	assert_int_equal(st.app_bytes, 0);
	assert_int_equal(st.bytes_after_failure, 0);
	assert_int_equal(st.requests, 0);
}

/* ---- 1. verification is on by default ------------------------------------- */

static void test_default_rejects_self_signed(void **state)
{
	fx *f = *state;
	wms_status st;
	start(f, &pki.self_signed, NULL, 0);
	/* libcurl's default CA bundle, the system's, cannot know it (on a
	 * system without a bundle the default itself fails to load: 77) */
	f->tt.want.ca_file = NULL;
	f->tt.want.ca_path = NULL;
	st = call(f);
	if (f->err.curl_code == CURLE_SSL_CACERT_BADFILE) {
		assert_failed(f, st, WMS_ERR_INVALID_ARG, CURLE_SSL_CACERT_BADFILE);
	} else {
		assert_failed(f, st, WMS_ERR_TLS, CURLE_PEER_FAILED_VERIFICATION);
		assert_non_null(strstr(f->err.message, "self"));
	}
	assert_refused_in_handshake(f, 1, 0);
	/* nor does another CA make it acceptable */
	f->tt.want.ca_file = pki.ca.cert_file;
	assert_failed(f, call(f), WMS_ERR_TLS, CURLE_PEER_FAILED_VERIFICATION);
	assert_int_equal(f->err.cause, WMS_CAUSE_TLS_VERIFY);
	assert_non_null(strstr(f->err.message, "self"));
	assert_refused_in_handshake(f, 2, 0);
	/* trusting the certificate itself does: only trust was missing */
	f->tt.want.ca_file = pki.self_signed.cert_file;
	assert_ok(f, call(f));
}

/* ---- 2, 3. CA file and CA directory ---------------------------------------- */

static void test_ca_file(void **state)
{
	fx *f = *state;
	ts_stats st;
	start(f, &pki.server, NULL, 0);
	f->tt.want.ca_file = pki.ca.cert_file;
	assert_ok(f, call(f));
	assert_ok(f, call(f));
	ts_stats_get(f->srv, &st);
	assert_int_equal(st.accepted, 1); /* keep-alive over TLS: one connection, one handshake */
	assert_int_equal(st.handshakes, 1);
	assert_int_equal(st.requests, 2);
	assert_int_equal(st.handshake_failures, 0);
	/* the certificate's DNS name works too (libcurl resolves localhost itself) */
	snprintf(f->url, sizeof(f->url), "https://localhost:%u/wms", (unsigned)ts_port(f->srv));
	f->req.url = f->url;
	assert_ok(f, call(f));
	ts_stats_get(f->srv, &st);
	assert_int_equal(st.accepted, 2);
	assert_int_equal(st.requests, 3);
}

static void test_ca_path(void **state)
{
	fx *f = *state;
	ts_stats st;
	start(f, &pki.server, NULL, 0);
	/* the CA under a name OpenSSL never looks up: as good as no CA */
	f->tt.want.ca_path = pki.ca_dir_unhashed;
	assert_failed(f, call(f), WMS_ERR_TLS, CURLE_PEER_FAILED_VERIFICATION);
	assert_int_equal(f->err.cause, WMS_CAUSE_TLS_VERIFY);
	assert_refused_in_handshake(f, 1, 0);
	f->tt.want.ca_path = pki.ca_dir;
	assert_ok(f, call(f));
	/* and back: neither the verified connection nor its TLS session may
	 * carry the old trust over */
	f->tt.want.ca_path = pki.ca_dir_unhashed;
	assert_failed(f, call(f), WMS_ERR_TLS, CURLE_PEER_FAILED_VERIFICATION);
	ts_stats_get(f->srv, &st);
	assert_int_equal(st.accepted, 3);
	assert_int_equal(st.requests, 1);
}

/* Trust is the transport's: a transport made with other trust (none, a
 * rogue CA) verifies the server on a connection of its own. */
static void test_trust_change_opens_a_new_connection(void **state)
{
	fx *f = *state;
	ts_stats st;
	start(f, &pki.server, NULL, 0);
	f->tt.want.ca_file = pki.ca.cert_file;
	/* twice: the handle's state after a call on a reused connection */
	assert_ok(f, call(f));
	assert_ok(f, call(f));
	f->tt.want.ca_file = NULL;
	assert_failed(f, call(f), WMS_ERR_TLS, CURLE_PEER_FAILED_VERIFICATION);
	f->tt.want.ca_file = pki.rogue_ca.cert_file;
	assert_failed(f, call(f), WMS_ERR_TLS, CURLE_PEER_FAILED_VERIFICATION);
	ts_stats_get(f->srv, &st);
	assert_int_equal(st.accepted, 3);
	assert_int_equal(st.requests, 2);
}

/* A CA file that was there when the transport was made (and checked),
 * then went: the next call on a new connection fails to load it (INVALID_ARG,
 * curl 77) and sends nothing. */
static void test_ca_file_gone_after_made(void **state)
{
	fx *f = *state;
	char path[TLS_PKI_PATH_MAX + 32], buf[4096];
	FILE *in, *out;
	size_t n;
	wms_status st;
	ts_stats before, after;
	start_with(f, &pki.server, NULL, 0, 1); /* a connection per request */
	snprintf(path, sizeof(path), "%s/gone-ca.pem", pki.dir);
	in = fopen(pki.ca.cert_file, "rb");
	out = fopen(path, "wb");
	assert_non_null(in);
	assert_non_null(out);
	while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
		assert_int_equal(fwrite(buf, 1, n, out), n);
	fclose(in);
	assert_int_equal(fclose(out), 0);
	f->tt.want.ca_file = path;
	assert_ok(f, call(f));
	assert_int_equal(unlink(path), 0);
	ts_stats_get(f->srv, &before);
	st = call(f);
	assert_failed(f, st, WMS_ERR_INVALID_ARG, CURLE_SSL_CACERT_BADFILE);
	assert_int_equal(f->err.cause, WMS_CAUSE_LOCAL_FILE);
	ts_stats_get(f->srv, &after);
	assert_int_equal(after.requests, before.requests);
	assert_int_equal(after.handshakes, before.handshakes);
}

/* ---- 4. host name and validity --------------------------------------------- */

static void test_wrong_host_name(void **state)
{
	fx *f = *state;
	start(f, &pki.wrong_host, NULL, 0);
	f->tt.want.ca_file = pki.ca.cert_file;
	assert_failed(f, call(f), WMS_ERR_TLS, CURLE_PEER_FAILED_VERIFICATION);
	assert_non_null(strstr(f->err.message, "127.0.0.1"));
	/* the chain is fine, so the handshake completes; libcurl checks the
	 * name after it and drops the connection before writing the request */
	assert_refused_in_handshake(f, 1, 1);
}

static void test_expired_certificate(void **state)
{
	fx *f = *state;
	start(f, &pki.expired, NULL, 0);
	f->tt.want.ca_file = pki.ca.cert_file;
	assert_failed(f, call(f), WMS_ERR_TLS, CURLE_PEER_FAILED_VERIFICATION);
	assert_non_null(strstr(f->err.message, "expired"));
	assert_refused_in_handshake(f, 1, 0);
}

/* ---- 5. mutual TLS ----------------------------------------------------------- */

/*
 * A server that requires a client certificate refuses a missing or untrusted
 * one. Under TLS 1.2 it says so inside the handshake: TLS, nothing sent.
 * Under TLS 1.3 the client has finished its side of the handshake before
 * the server judges the certificate (RFC 8446: the alert arrives at the
 * client's first read), so libcurl has already written the request: the
 * transport reports what it saw, TRANSPORT (curl 56) with delivery UNKNOWN,
 * and the server shows why: the encrypted request arrived after the failed
 * handshake, and it was never decrypted.
 */
static void call_refused(fx *f, int tls12_only, const char *alert, unsigned accepted,
			 unsigned open)
{
	ts_stats before, after;
	wms_status st;
	ts_stats_get(f->srv, &before);
	st = call(f);
	if (tls12_only) {
		assert_failed(f, st, WMS_ERR_TLS, CURLE_SSL_CONNECT_ERROR);
		assert_int_equal(f->err.cause, WMS_CAUSE_TLS_HANDSHAKE);
	} else {
		if (st != WMS_ERR_TRANSPORT || f->err.curl_code != CURLE_RECV_ERROR)
			fail_msg("expected TRANSPORT (curl 56), got %s (curl %d): %s",
				 wms_status_name(st), f->err.curl_code, f->err.message);
		assert_int_equal(f->err.delivery, WMS_DELIVERY_UNKNOWN);
	}
	assert_non_null(strstr(f->err.message, alert));
	after = settle_open(f, accepted, open);
	assert_int_equal(after.handshake_failures, before.handshake_failures + 1);
	assert_int_equal(after.handshakes, before.handshakes);
	assert_int_equal(after.requests, before.requests);
	assert_int_equal(after.app_bytes, before.app_bytes);
	if (tls12_only) /* at most the rest of the client's handshake flight */
		assert_true(after.bytes_after_failure - before.bytes_after_failure <
			    f->req.body_len);
	else /* the request, encrypted: it left the client */
		assert_true(after.bytes_after_failure - before.bytes_after_failure >
			    f->req.body_len);
}

static void mtls_cases(fx *f, int tls12_only)
{
	const char *none = tls12_only ? "handshake failure" : "certificate required";
	ts_stats st;
	start(f, &pki.server, pki.client_ca.cert_file, tls12_only);
	f->tt.want.ca_file = pki.ca.cert_file;

	call_refused(f, tls12_only, none, 1, 0);

	/* the client CA's certificate: one connection for both calls */
	f->tt.want.client_cert = pki.client.cert_file;
	f->tt.want.client_key = pki.client.key_file;
	assert_ok(f, call(f));
	assert_string_equal(f->last.peer_cn, "fulfillment-client");
	assert_ok(f, call(f));

	/* a transport made without it (the certificate is the transport's:
	 * the authenticated connection and its TLS session went with the
	 * other one) */
	f->tt.want.client_cert = NULL;
	f->tt.want.client_key = NULL;
	call_refused(f, tls12_only, none, 3, 0);

	/* the same name from a CA the server does not trust */
	f->tt.want.client_cert = pki.rogue_client.cert_file;
	f->tt.want.client_key = pki.rogue_client.key_file;
	call_refused(f, tls12_only, "unknown ca", 4, 0);

	st = settle_open(f, 4, 0);
	assert_int_equal(st.handshakes, 1);
	assert_int_equal(st.requests, 2);
}

static void test_mtls_tls12(void **state)
{
	mtls_cases(*state, 1);
}

static void test_mtls_tls13(void **state)
{
	mtls_cases(*state, 0);
}

/* Client certificate or key files that cannot be used: INVALID_ARG (an
 * option to fix, which says nothing about the WMS), the message names the
 * file, and the handshake never starts: a missing one when the transport is
 * made, one that is there but unusable when libcurl loads it. */
static void test_mtls_unusable_files(void **state)
{
	fx *f = *state;
	char missing[TLS_PKI_PATH_MAX + 32];
	start(f, &pki.server, pki.client_ca.cert_file, 0);
	f->tt.want.ca_file = pki.ca.cert_file;
	snprintf(missing, sizeof(missing), "%s/no-such-cert.pem", pki.dir);

	f->tt.want.client_cert = missing;
	f->tt.want.client_key = pki.client.key_file;
	assert_failed(f, call(f), WMS_ERR_INVALID_ARG, 0);
	assert_non_null(strstr(f->err.message, "client_cert: cannot read"));
	assert_non_null(strstr(f->err.message, missing));

	f->tt.want.client_cert = pki.client.cert_file;
	f->tt.want.client_key = missing;
	assert_failed(f, call(f), WMS_ERR_INVALID_ARG, 0);
	assert_non_null(strstr(f->err.message, "client_key: cannot read"));
	assert_non_null(strstr(f->err.message, missing));

	/* a key where the certificate belongs */
	f->tt.want.client_cert = pki.client.key_file;
	f->tt.want.client_key = pki.client.key_file;
	assert_failed(f, call(f), WMS_ERR_INVALID_ARG, CURLE_SSL_CERTPROBLEM);
	assert_int_equal(f->err.cause, WMS_CAUSE_LOCAL_FILE);
	assert_non_null(strstr(f->err.message, pki.client.key_file));

	/* a key that is not the certificate's */
	f->tt.want.client_cert = pki.client.cert_file;
	f->tt.want.client_key = pki.rogue_client.key_file;
	assert_failed(f, call(f), WMS_ERR_INVALID_ARG, CURLE_SSL_CERTPROBLEM);
	assert_non_null(strstr(f->err.message, pki.rogue_client.key_file));

	/* libcurl connected for the last two, then gave up before its
	 * ClientHello; the first two never made a transport */
	assert_refused_in_handshake(f, 2, 0);

	/* and a transport with the right pair works */
	f->tt.want.client_key = pki.client.key_file;
	assert_ok(f, call(f));
}

/* ---- TLS sessions ------------------------------------------------------------ */

/*
 * The transport shares libcurl's TLS session cache between its handles, so a
 * new connection resumes an earlier session: the server's checks are not
 * repeated then (a resumed TLS 1.3 session keeps the client's identity
 * without asking for the certificate again). A session must therefore only
 * be offered under the options it was made with: the options, and the
 * cache, are the transport's, so a transport made with other trust, pin or
 * certificate starts with none (these checks hold by that construction,
 * and keep holding if the cache is ever shared wider). The server here
 * closes after every answer, so every call is a new handshake the cache
 * could shortcut.
 */
static void test_session_resumed_only_under_same_options(void **state)
{
	fx *f = *state;
	ts_stats st;
	start_with(f, &pki.server, NULL, 0, 1);
	f->tt.want.ca_file = pki.ca.cert_file;
	assert_ok(f, call(f));
	assert_ok(f, call(f));
	st = settle(f, 2);
	assert_int_equal(st.handshakes, 2);
	assert_int_equal(st.resumed, 1); /* resumption does happen ... */

	/* ... but not by a transport made without that trust: a resumed
	 * session would carry the old verification result */
	f->tt.want.ca_file = NULL;
	assert_failed(f, call(f), WMS_ERR_TLS, CURLE_PEER_FAILED_VERIFICATION);
	f->tt.want.ca_file = pki.rogue_ca.cert_file;
	assert_failed(f, call(f), WMS_ERR_TLS, CURLE_PEER_FAILED_VERIFICATION);
	/* a pin is checked on a resumed session too */
	f->tt.want.ca_file = pki.ca.cert_file;
	f->tt.want.pinned_public_key = WRONG_PIN;
	assert_failed(f, call(f), WMS_ERR_TLS, CURLE_SSL_PINNEDPUBKEYNOTMATCH);
	assert_int_equal(f->err.cause, WMS_CAUSE_TLS_VERIFY);
	st = settle(f, 5);
	assert_int_equal(st.requests, 2);
}

static void test_session_keeps_no_client_identity(void **state)
{
	fx *f = *state;
	ts_stats st;
	start_with(f, &pki.server, pki.client_ca.cert_file, 0, 1);
	f->tt.want.ca_file = pki.ca.cert_file;
	f->tt.want.client_cert = pki.client.cert_file;
	f->tt.want.client_key = pki.client.key_file;
	assert_ok(f, call(f));
	assert_ok(f, call(f));
	assert_string_equal(f->last.peer_cn, "fulfillment-client");
	st = settle(f, 2);
	assert_int_equal(st.resumed, 1);

	/* a transport without the certificate must not offer the
	 * authenticated session */
	f->tt.want.client_cert = NULL;
	f->tt.want.client_key = NULL;
	call_refused(f, 0, "certificate required", 3, 0);
	st = settle(f, 3);
	assert_int_equal(st.resumed, 1);
	assert_int_equal(st.requests, 2);
}

/* ---- 6. public-key pinning ------------------------------------------------ */

static void test_pin_sha256(void **state)
{
	fx *f = *state;
	char pins[sizeof(WRONG_PIN) + sizeof(pki.server_pin) + 1];
	size_t first;
	ts_stats st;
	start(f, &pki.server, NULL, 0);
	f->tt.want.ca_file = pki.ca.cert_file;
	f->tt.want.pinned_public_key = pki.server_pin;
	assert_ok(f, call(f));
	first = strlen(f->last.head) + f->last.body_len;
	/* again, on the same connection: the handle as a reused connection leaves it */
	assert_ok(f, call(f));
	first += strlen(f->last.head) + f->last.body_len;

	/* a transport made with a wrong pin (the pin is the transport's: the
	 * pinned connection went with the other one): a new connection, refused */
	f->tt.want.pinned_public_key = WRONG_PIN;
	assert_failed(f, call(f), WMS_ERR_TLS, CURLE_SSL_PINNEDPUBKEYNOTMATCH);
	assert_int_equal(f->err.cause, WMS_CAUSE_TLS_VERIFY);
	/* libcurl compares the key once the handshake is done, then drops the
	 * connection before the request: the server saw both handshakes
	 * finish and nothing but the first two requests */
	st = settle_open(f, 2, 0);
	assert_int_equal(st.client_finished, 2);
	assert_int_equal(st.requests, 2);
	assert_int_equal(st.app_bytes, first);

	/* one of several pins matching is enough */
	snprintf(pins, sizeof(pins), "%s;%s", WRONG_PIN, pki.server_pin);
	f->tt.want.pinned_public_key = pins;
	assert_ok(f, call(f));
	/* and the matching pin alone again */
	f->tt.want.pinned_public_key = pki.server_pin;
	assert_ok(f, call(f));
	st = settle_open(f, 4, 1);
	assert_int_equal(st.requests, 4);
}

static void test_pin_files(void **state)
{
	fx *f = *state;
	ts_stats st;
	start(f, &pki.server, NULL, 0);
	f->tt.want.ca_file = pki.ca.cert_file;
	f->tt.want.pinned_public_key = pki.server_pubkey_pem;
	assert_ok(f, call(f));
	f->tt.want.pinned_public_key = pki.server_pubkey_der;
	assert_ok(f, call(f));
	f->tt.want.pinned_public_key = pki.other_pubkey_pem;
	assert_failed(f, call(f), WMS_ERR_TLS, CURLE_SSL_PINNEDPUBKEYNOTMATCH);
	ts_stats_get(f->srv, &st);
	assert_int_equal(st.requests, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_default_rejects_self_signed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ca_file, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ca_path, setup, teardown),
		cmocka_unit_test_setup_teardown(test_trust_change_opens_a_new_connection, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_ca_file_gone_after_made, setup, teardown),
		cmocka_unit_test_setup_teardown(test_wrong_host_name, setup, teardown),
		cmocka_unit_test_setup_teardown(test_expired_certificate, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mtls_tls12, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mtls_tls13, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mtls_unusable_files, setup, teardown),
		cmocka_unit_test_setup_teardown(test_session_resumed_only_under_same_options,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_session_keeps_no_client_identity, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_pin_sha256, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pin_files, setup, teardown),
	};
	tt_no_proxy();
	return cmocka_run_group_tests_name("tls_transport", tests, group_setup, group_teardown);
}
