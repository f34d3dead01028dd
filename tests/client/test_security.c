/* WS-Security UsernameToken, HTTP credentials, correlation ids and the
 * redacted wire log, over a scripted transport. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>
#include <libxml/parser.h>
#include <libxml/xpath.h>
#include <libxml/xpathInternals.h>
#include <openssl/evp.h>
#include "wms/sys/alloc.h"
#include "client_fx.h"
#include "count_alloc.h"

#define SECRET "s3cr3t-P4ss"

static const char submit_ok[] =
	"<s:Envelope xmlns:s=\"http://schemas.xmlsoap.org/soap/envelope/\"><s:Body>"
	"<SubmitOrderResponse xmlns=\"urn:libwms:warehouse:1\"><clientOrderId>ORD-1</clientOrderId>"
	"<wmsReference>WMS-7</wmsReference><state>RECEIVED</state><duplicate>false</duplicate>"
	"</SubmitOrderResponse></s:Body></s:Envelope>";

static const wms_order_line one_line[] = { { "SKU-1", 2 } };

static wms_status submit(fx *x, wms_error *err)
{
	wms_order o = WMS_ORDER_INIT;
	o.order_id = "ORD-1";
	o.ship_to.name = "Ada";
	o.ship_to.line1 = "1 Way";
	o.ship_to.city = "London";
	o.ship_to.postal_code = "N1";
	o.ship_to.country = "GB";
	o.lines = one_line;
	o.line_count = 1;
	return wms_submit_order(NULL, x->c, &o, err);
}

/* The text of the first element matching an XPath over the wsse/wsu namespaces. */
static char *xpath_text(const char *xml, const char *expr)
{
	xmlDocPtr doc = xmlReadMemory(xml, (int)strlen(xml), NULL, NULL, XML_PARSE_NONET);
	xmlXPathContextPtr ctx;
	xmlXPathObjectPtr obj;
	char *out = NULL;
	assert_non_null(doc);
	ctx = xmlXPathNewContext(doc);
	xmlXPathRegisterNs(ctx, BAD_CAST "wsse",
			   BAD_CAST "http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-wssecurity-secext-1.0.xsd");
	xmlXPathRegisterNs(ctx, BAD_CAST "wsu",
			   BAD_CAST "http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-wssecurity-utility-1.0.xsd");
	xmlXPathRegisterNs(ctx, BAD_CAST "s", BAD_CAST "http://schemas.xmlsoap.org/soap/envelope/");
	obj = xmlXPathEvalExpression(BAD_CAST expr, ctx);
	if (obj && obj->nodesetval && obj->nodesetval->nodeNr > 0) {
		xmlChar *t = xmlNodeGetContent(obj->nodesetval->nodeTab[0]);
		out = strdup((const char *)t);
		xmlFree(t);
	}
	xmlXPathFreeObject(obj);
	xmlXPathFreeContext(ctx);
	xmlFreeDoc(doc);
	return out;
}

static void digest_of(char out[64], const char *nonce64, const char *created, const char *pw)
{
	unsigned char nonce[64], md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	int n = EVP_DecodeBlock(nonce, (const unsigned char *)nonce64, (int)strlen(nonce64));
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	assert_int_equal(n, 18); /* 16 bytes, padded to a multiple of 3 by the decoder */
	EVP_DigestInit_ex(ctx, EVP_sha1(), NULL);
	EVP_DigestUpdate(ctx, nonce, 16);
	EVP_DigestUpdate(ctx, created, strlen(created));
	EVP_DigestUpdate(ctx, pw, strlen(pw));
	EVP_DigestFinal_ex(ctx, md, &mdlen);
	EVP_MD_CTX_free(ctx);
	EVP_EncodeBlock((unsigned char *)out, md, (int)mdlen);
}

static void password_digest(void **state)
{
	wms_client_options o = WMS_CLIENT_OPTIONS_INIT;
	char *nonce1, *created, *digest, expect[64];
	wms_error err;
	fx x;
	(void)state;
	o.wsse.mode = WMS_WSSE_PASSWORD_DIGEST;
	o.wsse.username = "fulfillment";
	o.wsse.password = SECRET;
	x = setup_client_with(&o);
	x.t->next.status = 200;
	x.t->next.content_type = "text/xml";
	x.t->next.body = submit_ok;
	assert_int_equal(submit(&x, &err), WMS_OK);
	assert_null(strstr(x.t->last_body, SECRET));
	assert_non_null(strstr(x.t->last_body, "s:mustUnderstand=\"1\"") ?
			strstr(x.t->last_body, "s:mustUnderstand=\"1\"") :
			strstr(x.t->last_body, "soap:mustUnderstand=\"1\""));
	nonce1 = xpath_text(x.t->last_body, "//wsse:Nonce");
	created = xpath_text(x.t->last_body, "//wsu:Created");
	digest = xpath_text(x.t->last_body, "//wsse:Password");
	assert_non_null(nonce1);
	assert_non_null(created);
	assert_non_null(digest);
	{
		char *user = xpath_text(x.t->last_body, "/s:Envelope/s:Header/wsse:Security/wsse:UsernameToken/wsse:Username[.='fulfillment']");
		assert_non_null(user);
		free(user);
	}
	digest_of(expect, nonce1, created, SECRET);
	assert_string_equal(digest, expect);
	assert_int_equal(strlen(created), 24); /* 2026-11-29T18:00:00.000Z */
	free(created);
	free(digest);
	/* a fresh nonce per message */
	assert_int_equal(submit(&x, &err), WMS_OK);
	digest = xpath_text(x.t->last_body, "//wsse:Nonce");
	assert_string_not_equal(digest, nonce1);
	free(digest);
	free(nonce1);
	wms_client_free(x.c);
}

static void password_text(void **state)
{
	wms_client_options o = WMS_CLIENT_OPTIONS_INIT;
	char *pw;
	fx x;
	(void)state;
	o.wsse.mode = WMS_WSSE_PASSWORD_TEXT;
	o.wsse.username = "fulfillment";
	o.wsse.password = SECRET;
	x = setup_client_with(&o);
	x.t->next.status = 200;
	x.t->next.content_type = "text/xml";
	x.t->next.body = submit_ok;
	assert_int_equal(submit(&x, NULL), WMS_OK);
	pw = xpath_text(x.t->last_body, "//wsse:Password[@Type='http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-username-token-profile-1.0#PasswordText']");
	assert_non_null(pw);
	assert_string_equal(pw, SECRET);
	assert_null(strstr(x.t->last_body, "Nonce"));
	free(pw);
	wms_client_free(x.c);
}

typedef struct wirelog {
	int n;
	char ids[4][64];
	wms_wire_direction dir[4];
	char text[8192];
	size_t max_len;
	size_t full_len[4];
} wirelog;

static void on_wire(const wms_wire_record *r, void *ctx)
{
	wirelog *w = ctx;
	size_t used = strlen(w->text);
	if (w->n < 4) {
		snprintf(w->ids[w->n], sizeof(w->ids[0]), "%s", r->correlation_id);
		w->dir[w->n] = r->direction;
		w->full_len[w->n] = r->full_len;
	}
	w->n++;
	if (r->body_len > w->max_len)
		w->max_len = r->body_len;
	snprintf(w->text + used, sizeof(w->text) - used, "%.*s\n", (int)r->body_len, r->body);
}

static void wire_log_is_redacted_and_correlated(void **state)
{
	wms_client_options o = WMS_CLIENT_OPTIONS_INIT;
	wirelog w;
	wms_error err;
	fx x;
	(void)state;
	memset(&w, 0, sizeof(w));
	o.wsse.mode = WMS_WSSE_PASSWORD_TEXT;
	o.wsse.username = "fulfillment";
	o.wsse.password = SECRET;
	o.callbacks.on_wire = on_wire;
	o.callbacks.payload = &w;
	x = setup_client_with(&o);
	x.t->next.status = 200;
	x.t->next.content_type = "text/xml";
	x.t->next.body = submit_ok;
	assert_int_equal(submit(&x, &err), WMS_OK);
	assert_int_equal(w.n, 2);
	assert_int_equal(w.dir[0], WMS_WIRE_REQUEST);
	assert_int_equal(w.dir[1], WMS_WIRE_REPLY);
	assert_string_equal(w.ids[0], w.ids[1]);
	assert_string_equal(w.ids[0], err.correlation_id);
	assert_string_equal(x.t->last_correlation_id, err.correlation_id);
	assert_non_null(strstr(w.text, ">REDACTED</wsse:Password>"));
	assert_null(strstr(w.text, SECRET));
	assert_non_null(strstr(w.text, "WMS-7")); /* the reply is there */
	assert_null(strstr(err.message, SECRET));
	/* ids differ per call */
	{
		char first[64];
		snprintf(first, sizeof(first), "%s", err.correlation_id);
		assert_int_equal(submit(&x, &err), WMS_OK);
		assert_string_not_equal(first, err.correlation_id);
	}
	wms_client_free(x.c);
}

static void wire_log_is_bounded(void **state)
{
	wms_client_options o = WMS_CLIENT_OPTIONS_INIT;
	wirelog w;
	fx x;
	(void)state;
	memset(&w, 0, sizeof(w));
	o.callbacks.on_wire = on_wire;
	o.callbacks.payload = &w;
	o.wire_log_max_bytes = 64;
	x = setup_client_with(&o);
	x.t->next.status = 200;
	x.t->next.content_type = "text/xml";
	x.t->next.body = submit_ok;
	assert_int_equal(submit(&x, NULL), WMS_OK);
	assert_int_equal(w.max_len, 64);
	assert_true(w.full_len[0] > 64 && w.full_len[1] == strlen(submit_ok));
	wms_client_free(x.c);
}

/* Redacting the wire log costs what the reply's size does, whatever it
 * holds (a review's finding: each Password or Nonce start searched the
 * rest of the body for its '>' and its "</": 1 MiB of them took 1 s, 75
 * times a reply of 1 MiB that holds none).
 * Median of 3 against a reply of the same size that holds none, in the
 * same run. */
static double submit_ms(fx *x, const char *body)
{
	double t[3];
	int i, j;
	x->t->next.status = 200;
	x->t->next.content_type = "text/xml";
	x->t->next.body = body;
	for (i = 0; i < 3; i++) {
		struct timespec a, b;
		clock_gettime(CLOCK_MONOTONIC, &a);
		assert_int_not_equal(submit(x, NULL), WMS_OK);
		clock_gettime(CLOCK_MONOTONIC, &b);
		t[i] = (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6;
		for (j = i; j > 0 && t[j] < t[j - 1]; j--) {
			double v = t[j];
			t[j] = t[j - 1];
			t[j - 1] = v;
		}
	}
	return t[1];
}

static void wire_log_redaction_is_linear(void **state)
{
	static const char *const units[] = { "<wsse:Password>", "<wsse:Nonce ", "<wsse:Password " };
	enum { SIZE = 1 << 20 };
	wms_client_options o = WMS_CLIENT_OPTIONS_INIT;
	char *plain = malloc(SIZE + 1), *bad = malloc(SIZE + 1);
	wirelog w;
	size_t u, n, k;
	fx x;
	(void)state;
	assert_non_null(plain);
	assert_non_null(bad);
	memset(&w, 0, sizeof(w));
	o.callbacks.on_wire = on_wire;
	o.callbacks.payload = &w;
	o.max_reply_bytes = 2 * SIZE;
	/* every reply here is refused: the breaker must not open, or what is
	 * timed is its rejection, not the redaction */
	o.breaker_options.failure_threshold = 1000000;
	x = setup_client_with(&o);
	memset(plain, 'x', SIZE);
	plain[0] = '<';
	plain[SIZE] = '\0';
	for (u = 0; u < sizeof(units) / sizeof(units[0]); u++) {
		double t_bad, t_plain;
		n = strlen(units[u]);
		for (k = 0; k + n <= SIZE; k += n)
			memcpy(bad + k, units[u], n);
		memset(bad + k, ' ', SIZE - k);
		bad[SIZE] = '\0';
		t_plain = submit_ms(&x, plain);
		t_bad = submit_ms(&x, bad);
		if (getenv("WMS_TEST_VERBOSE"))
			print_message("  %s x %zu: %.2f ms, plain %.2f ms\n", units[u], SIZE / n, t_bad,
				      t_plain);
		if (t_bad > 8 * t_plain + 5)
			fail_msg("%s x %zu: %.1f ms, 1 MiB of 'x' %.1f ms", units[u], SIZE / n, t_bad,
				 t_plain);
	}
	/* Well-formed: about 30 000 secrets the redactor finds and replaces,
	 * against as many elements of the same size that are not secrets. */
	{
		static const char head[] =
			"<r xmlns:wsse=\"http://docs.oasis-open.org/wss/2004/01/"
			"oasis-200401-wss-wssecurity-secext-1.0.xsd\">";
		static const char *const kinds[] = { "<wsse:Passwore>x</wsse:Passwore>",
						     "<wsse:Password>x</wsse:Password>" };
		char *body[2];
		double t[2];
		for (u = 0; u < 2; u++) {
			size_t len = strlen(kinds[u]), at = sizeof(head) - 1;
			body[u] = u ? bad : plain;
			memcpy(body[u], head, at);
			for (; at + len + 4 < SIZE; at += len)
				memcpy(body[u] + at, kinds[u], len);
			memcpy(body[u] + at, "</r>", 5);
			w.n = 0;
			w.text[0] = '\0';
			t[u] = submit_ms(&x, body[u]);
		}
		if (getenv("WMS_TEST_VERBOSE"))
			print_message("  well-formed, secrets %.2f ms, none %.2f ms\n", t[1], t[0]);
		/* the secrets' reply, as logged */
		assert_non_null(strstr(w.text, "<wsse:Password>REDACTED</wsse:Password>"));
		assert_null(strstr(w.text, "<wsse:Password>x<"));
		if (t[1] > 8 * t[0] + 5)
			fail_msg("1 MiB with %zu secrets: %.1f ms, with none %.1f ms",
				 (SIZE - sizeof(head)) / strlen(kinds[1]), t[1], t[0]);
	}
	assert_int_equal(w.n, 2 * 3); /* the last body's 3 calls, each logged twice */
	wms_client_free(x.c);
	free(plain);
	free(bad);
}

static void credentials_are_validated(void **state)
{
	wms_client_options o = WMS_CLIENT_OPTIONS_INIT;
	wms_client *c = NULL;
	wms_error err;
	(void)state;
	o.endpoint = "https://wms.invalid/";
	o.curl.http_username = "u";
	assert_int_equal(wms_client_new(&c, &o, &err), WMS_ERR_INVALID_ARG);
	o.curl.http_username = NULL;
	o.wsse.mode = WMS_WSSE_PASSWORD_DIGEST;
	o.wsse.username = "u";
	assert_int_equal(wms_client_new(&c, &o, &err), WMS_ERR_INVALID_ARG);
	assert_non_null(strstr(err.message, "wsse"));
	o.wsse.mode = (wms_wsse_mode)9;
	o.wsse.password = "p";
	assert_int_equal(wms_client_new(&c, &o, &err), WMS_ERR_INVALID_ARG);
	/* what the envelope cannot carry is refused at creation */
	o.wsse.mode = WMS_WSSE_PASSWORD_DIGEST;
	o.wsse.username = "bob\x01";
	assert_int_equal(wms_client_new(&c, &o, &err), WMS_ERR_INVALID_ARG);
	assert_non_null(strstr(err.message, "wsse.username"));
	o.wsse.username = "u";
	o.wsse.mode = WMS_WSSE_PASSWORD_TEXT;
	o.wsse.password = "p\xff";
	assert_int_equal(wms_client_new(&c, &o, &err), WMS_ERR_INVALID_ARG);
	assert_non_null(strstr(err.message, "wsse.password"));
	assert_null(strstr(err.message, "at byte"));
	o.wsse.mode = WMS_WSSE_PASSWORD_DIGEST; /* a digest only hashes it: fine */
	assert_int_equal(wms_client_new(&c, &o, &err), WMS_OK);
	wms_client_free(c);
	c = NULL;
	o.wsse.mode = WMS_WSSE_NONE;
	o.curl.client_cert = "cert.pem";
	assert_int_equal(wms_client_new(&c, &o, &err), WMS_ERR_INVALID_ARG);
	assert_null(c);
}

/* The user agent, TLS files, pin and HTTP credentials configure the
 * libcurl transport when the client makes it: with a transport of the
 * caller's, each of them is refused (that transport was configured when it
 * was made), and the transport is freed all the same. Without one, the
 * files are checked as the client makes its transport. */
static void tls_options_are_the_transports(void **state)
{
	static const char *const fields[] = { "curl.user_agent", "curl.ca_file", "curl.ca_path",
					      "curl.client_cert", "curl.client_key",
					      "curl.pinned_public_key", "curl.http_username",
					      "curl.http_password", "curl.max_idle_connections",
					      "curl.version" };
	wms_client_options o = WMS_CLIENT_OPTIONS_INIT;
	wms_client *c = NULL;
	wms_error err;
	size_t i;
	fake *t;
	(void)state;
	for (i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		o = (wms_client_options)WMS_CLIENT_OPTIONS_INIT;
		switch (i) {
		case 0: o.curl.user_agent = "ua/1"; break;
		case 1: o.curl.ca_file = "/etc/ssl/certs/ca-certificates.crt"; break;
		case 2: o.curl.ca_path = "/etc/ssl/certs"; break;
		case 3: o.curl.client_cert = "/etc/wms/client.pem"; break;
		case 4: o.curl.client_key = "/etc/wms/client.key"; break;
		case 5: o.curl.pinned_public_key = "sha256//AAAA"; break;
		case 6: o.curl.http_username = "basic-user"; break;
		case 7: o.curl.http_password = "basic-" SECRET; break;
		case 8: o.curl.max_idle_connections = 4; break;
		case 9: o.curl.version = 0; break; /* a group not made with its _INIT */
		}
		o.transport = fake_transport_new(&t);
		assert_int_equal(wms_client_new(&c, &o, &err), WMS_ERR_INVALID_ARG);
		assert_null(c);
		if (!strstr(err.message, fields[i]) ||
		    !strstr(err.message, "configures the default transport"))
			fail_msg("%s: %s", fields[i], err.message);
		assert_null(strstr(err.message, SECRET));
	}
	/* the pool the client gives its transport: 1024 at most, both sides */
	o = (wms_client_options)WMS_CLIENT_OPTIONS_INIT;
	o.endpoint = "https://wms.invalid/";
	for (i = 0; i < 2; i++) {
		o.max_idle_connections = 1024;
		assert_int_equal(wms_client_new(&c, &o, &err), WMS_OK);
		wms_client_free(c);
		c = NULL;
		o.max_idle_connections = 1025;
		assert_int_equal(wms_client_new(&c, &o, &err), WMS_ERR_INVALID_ARG);
		assert_non_null(strstr(err.message, "max_idle_connections"));
	}
	o.max_idle_connections = 0;
	o.curl.client_cert = "/nonexistent/libwms/client.pem";
	o.curl.client_key = "/nonexistent/libwms/client.key";
	assert_int_equal(wms_client_new(&c, &o, &err), WMS_ERR_INVALID_ARG);
	assert_non_null(strstr(err.message, "curl.client_cert: cannot read"));
	assert_null(c);
	/* a message that names a field names the client's */
	o.curl.client_cert = o.curl.client_key = NULL;
	o.curl.max_idle_connections = 1025;
	assert_int_equal(wms_client_new(&c, &o, &err), WMS_ERR_INVALID_ARG);
	assert_non_null(strstr(err.message, "curl.max_idle_connections must be at most 1024"));
	o.curl.max_idle_connections = 0;
	o.curl.http_username = "u";
	assert_int_equal(wms_client_new(&c, &o, &err), WMS_ERR_INVALID_ARG);
	assert_non_null(strstr(err.message, "curl.http_username and http_password go together"));
	assert_null(c);
}

/* ---- memory running out between attempts ---------------------------------- */

/* Counts live blocks; fails the fail_at-th allocation made after the first
 * send and before the second (the retry's envelope build). */
static count_alloc R;
static const fake *retry_t;

static int between_the_sends(void *ctx)
{
	(void)ctx;
	return retry_t && retry_t->sends == 1;
}

/* With WS-Security every retry builds its envelope anew. When that build
 * runs out of memory, the call reports the attempts actually made: the
 * merged delivery (UNKNOWN after a first attempt that may have arrived),
 * attempts = 1, status NOMEM (README: UNKNOWN when memory ran out after
 * the request was sent), the first attempt's status in the message. */
static void retry_rebuild_out_of_memory(void **state)
{
	const wms_allocator al = count_alloc_hooks(&R);
	static const struct {
		wms_status fail;
		wms_delivery delivery;
	} first[] = { { WMS_ERR_TIMEOUT, WMS_DELIVERY_UNKNOWN },
		      { WMS_ERR_CONNECT, WMS_DELIVERY_NOT_SENT } };
	size_t f;
	(void)state;

	assert_int_equal(wms_set_allocator(&al), WMS_OK);
	for (f = 0; f < 2; f++) {
		long n, total = -1;
		for (n = 0; n <= total || total < 0; n++) {
			wms_client_options o = WMS_CLIENT_OPTIONS_INIT;
			wms_breaker_snapshot snap;
			wms_error err;
			wms_status st;
			char want[64];
			fx x;

			memset(&R, 0, sizeof(R));
			R.counts = between_the_sends;
			R.fail_at = n; /* 0: the clean run, which counts */
			o.wsse.mode = WMS_WSSE_PASSWORD_DIGEST;
			o.wsse.username = "fulfillment";
			o.wsse.password = SECRET;
			o.retry.max_attempts = 3;
			o.retry.initial_backoff_ms = 1;
			o.retry.max_backoff_ms = 1;
			x = setup_client_with(&o);
			x.t->seq[0].fail = first[f].fail;
			x.t->seq[0].delivery = first[f].delivery;
			x.t->seq[1].status = 200;
			x.t->seq[1].content_type = "text/xml";
			x.t->seq[1].body = submit_ok;
			x.t->seq_len = 2;
			retry_t = x.t;
			st = submit(&x, &err);
			retry_t = NULL;
			wms_breaker_snapshot_get(&snap, wms_client_breaker(x.c));
			if (n == 0) {
				assert_int_equal(st, WMS_OK);
				assert_int_equal(x.t->sends, 2);
				assert_int_equal(err.attempts, 2);
				total = R.calls;
				assert_true(total > 0); /* the rebuild allocates */
			} else {
				assert_int_equal(st, WMS_ERR_NOMEM);
				assert_int_equal(err.status, WMS_ERR_NOMEM);
				assert_int_equal(err.delivery, first[f].delivery);
				assert_int_equal(x.t->sends, 1);
				assert_int_equal(err.attempts, 1);
				assert_true(wms_error_is_retryable(&err));
				assert_string_equal(err.operation, "SubmitOrder");
				assert_true(err.correlation_id[0] != '\0');
				assert_non_null(strstr(err.message, "out of memory"));
				snprintf(want, sizeof(want), "attempt 1: %s)",
					 wms_status_name(first[f].fail));
				assert_non_null(strstr(err.message, want));
				/* the unsent attempt's permit went back unused */
				assert_int_equal(snap.permitted, 1);
				assert_int_equal(snap.failures, 1);
				assert_int_equal(snap.rejected, 0);
			}
			wms_client_free(x.c);
			assert_int_equal(R.live, 0);
		}
	}
	assert_int_equal(wms_set_allocator(NULL), WMS_OK);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(password_digest),
		cmocka_unit_test(password_text),
		cmocka_unit_test(wire_log_is_redacted_and_correlated),
		cmocka_unit_test(wire_log_redaction_is_linear),
		cmocka_unit_test(wire_log_is_bounded),
		cmocka_unit_test(credentials_are_validated),
		cmocka_unit_test(tls_options_are_the_transports),
		cmocka_unit_test(retry_rebuild_out_of_memory),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
