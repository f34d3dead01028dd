/*
 * The libcurl transport against an in-process loopback server: wire format,
 * keep-alive, threads, and every failure the transport must classify, each
 * with its status, delivery and CURLcode.
 */
#define _GNU_SOURCE /* RTLD_NEXT */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>
#include <time.h>
#include <curl/curl.h>

#include "internal.h"
#include "transport/curl_int.h"
#include "wms/wms.h"
#include "wms/sys/transport.h"
#include "loopback.h"
#include "send_fault.h"
#include "transport_opts.h"

#define ACTION "urn:libwms:warehouse:1/GetOrderStatus"
#define CT_11 "text/xml; charset=utf-8"
#define CT_12 "application/soap+xml; charset=utf-8; action=\"" ACTION "\""
#define UA "libwms-test/0.1"

static const char request_11[] =
	"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
	"<soap:Envelope xmlns:soap=\"http://schemas.xmlsoap.org/soap/envelope/\" "
	"xmlns:wh=\"urn:libwms:warehouse:1\"><soap:Body><wh:GetOrderStatusRequest>"
	"<wh:clientOrderId>ORD-1001</wh:clientOrderId>"
	"</wh:GetOrderStatusRequest></soap:Body></soap:Envelope>";

static const char request_12[] =
	"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
	"<env:Envelope xmlns:env=\"http://www.w3.org/2003/05/soap-envelope\" "
	"xmlns:wh=\"urn:libwms:warehouse:1\"><env:Body><wh:GetOrderStatusRequest>"
	"<wh:clientOrderId>ORD-1001</wh:clientOrderId>"
	"</wh:GetOrderStatusRequest></env:Body></env:Envelope>";

static const char reply_ok[] =
	"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
	"<soap:Envelope xmlns:soap=\"http://schemas.xmlsoap.org/soap/envelope/\" "
	"xmlns:wh=\"urn:libwms:warehouse:1\"><soap:Body><wh:GetOrderStatusResponse>"
	"<wh:clientOrderId>ORD-1001</wh:clientOrderId><wh:wmsReference>WMS-77</wh:wmsReference>"
	"<wh:state>PICKING</wh:state><wh:updatedAt>2024-05-01T10:00:00Z</wh:updatedAt>"
	"</wh:GetOrderStatusResponse></soap:Body></soap:Envelope>";

static const char reply_fault[] =
	"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
	"<soap:Envelope xmlns:soap=\"http://schemas.xmlsoap.org/soap/envelope/\" "
	"xmlns:wh=\"urn:libwms:warehouse:1\"><soap:Body><soap:Fault>"
	"<faultcode>soap:Client</faultcode><faultstring>unknown order</faultstring>"
	"<detail><wh:WmsFault><wh:code>UNKNOWN_ORDER</wh:code></wh:WmsFault></detail>"
	"</soap:Fault></soap:Body></soap:Envelope>";

static const char html_502[] =
	"<html><head><title>502 Bad Gateway</title></head>"
	"<body><h1>Bad Gateway</h1></body></html>";

/* ---- a slow resolver -------------------------------------------------------- */

/* getaddrinfo() for the whole test program (libcurl's resolver thread calls
 * it): SLOW_HOST takes slow_dns_ms and then resolves as 127.0.0.1, as glibc
 * does when the first name server does not answer (5 s a try); every other
 * name goes to the C library's. */
#define SLOW_HOST "slow.test"
static atomic_uint slow_dns_ms;
static atomic_uint slow_dns_running;

int getaddrinfo(const char *node, const char *service, const struct addrinfo *hints,
		struct addrinfo **res)
{
	typedef int (*gai_fn)(const char *, const char *, const struct addrinfo *,
			      struct addrinfo **);
	static gai_fn _Atomic real;
	gai_fn next = atomic_load(&real);
	int rc;

	if (!next) {
		void *sym = dlsym(RTLD_NEXT, "getaddrinfo");
		/* POSIX: a function's address survives the trip through void *. */
		memcpy(&next, &sym, sizeof(next));
		if (!next)
			return EAI_SYSTEM;
		atomic_store(&real, next);
	}
	if (!node || strcmp(node, SLOW_HOST) != 0)
		return next(node, service, hints, res);
	atomic_fetch_add(&slow_dns_running, 1);
	{
		unsigned ms = atomic_load(&slow_dns_ms);
		struct timespec ts = { (time_t)(ms / 1000u), (long)(ms % 1000u) * 1000000L };
		while (nanosleep(&ts, &ts) != 0)
			;
	}
	rc = next("127.0.0.1", service, hints, res);
	atomic_fetch_sub(&slow_dns_running, 1);
	return rc;
}

/* ---- fixture ------------------------------------------------------------ */

typedef struct fx {
	wms_transport *tp; /* tt.tp: made anew when tt.want changes (retransport) */
	tt_transport tt;
	lb_server *srv;
	wms_http_request req;
	wms_http_response resp;
	wms_error err;
	lb_request last;
	char *reply;
	uint64_t elapsed_ms;
} fx;

static int under_valgrind(void)
{
	const char *v = getenv("WMS_UNDER_VALGRIND");
	return v && *v && strcmp(v, "0") != 0;
}

/* Allowed lateness past a deadline. */
static uint64_t slack_ms(void)
{
	return under_valgrind() ? 3000u : 100u;
}

static void base_request(wms_http_request *r)
{
	memset(r, 0, sizeof(*r));
	r->operation = "GetOrderStatus";
	r->soap_action = ACTION;
	r->soap_version = WMS_SOAP_11;
	r->content_type = CT_11;
	r->body = request_11;
	r->body_len = sizeof(request_11) - 1;
	r->connect_timeout_ms = 2000;
	r->timeout_ms = 5000;
	r->stall_timeout_ms = 5000;
	r->max_reply_bytes = 1024 * 1024;
}

/* A transport whose CA file is readable when it is made (the check) but
 * holds no certificate, and is gone by the handshake: libcurl cannot load
 * it (curl 77). The TLS suite has the same with a real CA file. */
static void vanishing_ca(fx *f, char *path, size_t size)
{
	int fd;
	snprintf(path, size, "/tmp/libwms-test-ca-XXXXXX");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	f->tt.want.ca_file = path;
	tt_transport_apply(&f->tt, &f->err);
	f->tp = f->tt.tp;
	assert_non_null(f->tp);
	unlink(path);
}

/* Make f->tp anew if f->tt.want changed: its options are fixed when it is
 * made. */
static void retransport(fx *f)
{
	wms_error err;
	if (tt_transport_apply(&f->tt, &err) != WMS_OK)
		fail_msg("wms_curl_transport_create: %s", err.message);
	f->tp = f->tt.tp;
}

static int setup(void **state)
{
	fx *f = calloc(1, sizeof(*f));
	if (!f)
		return -1;
	tt_transport_init(&f->tt);
	f->tt.want.user_agent = UA;
	if (tt_transport_apply(&f->tt, &f->err) != WMS_OK) {
		free(f);
		return -1;
	}
	f->tp = f->tt.tp;
	base_request(&f->req);
	f->resp.max_body = f->req.max_reply_bytes;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fx *f = *state;
	tt_transport_free(&f->tt);
	lb_stop(f->srv);
	wms_http_response_clear(&f->resp);
	lb_request_free(&f->last);
	free(f->reply);
	free(f);
	return 0;
}

static void start(fx *f, const lb_script *script)
{
	f->srv = lb_start(script);
	assert_non_null(f->srv);
	f->req.url = lb_url(f->srv);
}

/* A server that answers every request with `status` and `body`. */
static void start_reply(fx *f, int status, const char *reason, const char *ct,
			const char *body)
{
	lb_script s = { 0 };
	f->reply = lb_http_response(status, reason, ct, body);
	assert_non_null(f->reply);
	s.response = f->reply;
	start(f, &s);
}

static wms_status call(fx *f)
{
	uint64_t t0 = lb_now_ms();
	wms_status st;
	wms_error_clear(&f->err);
	st = f->tp->send(f->tp, &f->req, &f->resp, &f->err);
	f->elapsed_ms = lb_now_ms() - t0;
	return st;
}

static void assert_failed(fx *f, wms_status st, wms_status want, wms_delivery delivery,
			  int curl_code)
{
	if (getenv("WMS_TEST_VERBOSE"))
		print_message("  -> %s/%s curl %d %lums: %s\n", wms_status_name(st),
			      wms_delivery_name(f->err.delivery), f->err.curl_code,
			      (unsigned long)f->elapsed_ms, f->err.message);
	assert_int_equal(st, want);
	assert_int_equal(f->err.status, want);
	assert_int_equal(f->err.delivery, delivery);
	assert_int_equal(f->err.curl_code, curl_code);
	assert_true(f->err.message[0] != '\0');
	assert_null(strchr(f->err.message, '\n'));
}

/* The transport-neutral cause (wms_cause) that goes with the curl code. */
static void assert_cause(const fx *f, wms_cause want)
{
	if (f->err.cause != want)
		fail_msg("cause %s, want %s (curl %d: %s)", wms_cause_name(f->err.cause),
			 wms_cause_name(want), f->err.curl_code, f->err.message);
}

static void get_last(fx *f)
{
	lb_request_free(&f->last);
	assert_true(lb_last_request(f->srv, &f->last));
}

/* ---- replies ------------------------------------------------------------- */

static void test_ok_200(void **state)
{
	fx *f = *state;
	start_reply(f, 200, "OK", CT_11, reply_ok);
	assert_int_equal(call(f), WMS_OK);
	assert_int_equal(f->err.status, WMS_OK);
	assert_int_equal(f->err.curl_code, 0);
	assert_int_equal(f->resp.status, 200);
	assert_string_equal(f->resp.content_type, CT_11);
	assert_int_equal(f->resp.body_len, strlen(reply_ok));
	assert_string_equal(f->resp.body, reply_ok);
	assert_int_equal(f->resp.overflow, 0);
	get_last(f);
	assert_int_equal(f->last.body_len, f->req.body_len);
	assert_memory_equal(f->last.body, f->req.body, f->req.body_len);
}

static void test_slow_reply_inside_deadline(void **state)
{
	fx *f = *state;
	lb_script s = { 0 };
	f->reply = lb_http_response(200, "OK", CT_11, reply_ok);
	s.response = f->reply;
	s.delay_ms = 400;
	start(f, &s);
	f->req.timeout_ms = 3000;
	assert_int_equal(call(f), WMS_OK);
	assert_int_equal(f->resp.status, 200);
	assert_string_equal(f->resp.body, reply_ok);
	assert_true(f->elapsed_ms >= 350);
}

static void test_html_502_is_a_reply(void **state)
{
	fx *f = *state;
	start_reply(f, 502, "Bad Gateway", "text/html; charset=iso-8859-1", html_502);
	assert_int_equal(call(f), WMS_OK);
	assert_int_equal(f->resp.status, 502);
	assert_string_equal(f->resp.content_type, "text/html; charset=iso-8859-1");
	assert_string_equal(f->resp.body, html_502);
}

static void test_soap_fault_500_is_a_reply(void **state)
{
	fx *f = *state;
	start_reply(f, 500, "Internal Server Error", CT_11, reply_fault);
	assert_int_equal(call(f), WMS_OK);
	assert_int_equal(f->resp.status, 500);
	assert_string_equal(f->resp.content_type, CT_11);
	assert_string_equal(f->resp.body, reply_fault);
}

static void test_no_redirect_followed(void **state)
{
	fx *f = *state;
	lb_script s = { 0 };
	s.response = "HTTP/1.1 302 Found\r\nLocation: /elsewhere\r\nContent-Length: 0\r\n\r\n";
	start(f, &s);
	assert_int_equal(call(f), WMS_OK);
	assert_int_equal(f->resp.status, 302);
	assert_int_equal(f->resp.body_len, 0);
	assert_int_equal(lb_requests(f->srv), 1);
	get_last(f);
	assert_string_equal(f->last.target, "/wms");
}

/* The Content-Type is the final response's, never a 1xx's. */
static void test_informational_responses(void **state)
{
	fx *f = *state;
	lb_script s = { 0 };
	s.response = "HTTP/1.1 103 Early Hints\r\nContent-Type: text/html\r\nLink: </a>\r\n\r\n"
		     "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
	start(f, &s);
	assert_int_equal(call(f), WMS_OK);
	assert_int_equal(f->resp.status, 200);
	assert_null(f->resp.content_type);
	assert_string_equal(f->resp.body, "ok");
}

static void test_100_continue_then_reply(void **state)
{
	fx *f = *state;
	lb_script s = { 0 };
	char *final = lb_http_response(200, "OK", CT_11, reply_ok);
	assert_non_null(final);
	f->reply = malloc(strlen(final) + 64);
	assert_non_null(f->reply);
	sprintf(f->reply, "HTTP/1.1 100 Continue\r\n\r\n%s", final);
	free(final);
	s.response = f->reply;
	start(f, &s);
	assert_int_equal(call(f), WMS_OK);
	assert_int_equal(f->resp.status, 200);
	assert_string_equal(f->resp.content_type, CT_11);
	assert_string_equal(f->resp.body, reply_ok);
}

/* ---- what the server received ---------------------------------------------- */

static void assert_common_wire(fx *f)
{
	char v[512], cl[32];
	get_last(f);
	assert_string_equal(f->last.method, "POST");
	assert_string_equal(f->last.version, "HTTP/1.1");
	assert_string_equal(f->last.target, "/wms");
	snprintf(cl, sizeof(cl), "%zu", f->req.body_len);
	assert_int_equal(lb_header(&f->last, "Content-Length", v, sizeof(v)), 1);
	assert_string_equal(v, cl);
	assert_int_equal(lb_header(&f->last, "Transfer-Encoding", NULL, 0), 0);
	assert_int_equal(lb_header(&f->last, "Expect", NULL, 0), 0);
	assert_int_equal(lb_header(&f->last, "Accept", v, sizeof(v)), 1);
	assert_string_equal(v, "text/xml, application/soap+xml");
	assert_int_equal(lb_header(&f->last, "User-Agent", v, sizeof(v)), 1);
	assert_string_equal(v, UA);
	assert_int_equal(lb_header(&f->last, "Content-Type", v, sizeof(v)), 1);
	assert_string_equal(v, f->req.content_type);
	assert_int_equal(f->last.body_len, f->req.body_len);
	assert_memory_equal(f->last.body, f->req.body, f->req.body_len);
}

static void test_wire_soap11(void **state)
{
	fx *f = *state;
	char v[512];
	start_reply(f, 200, "OK", CT_11, reply_ok);
	assert_int_equal(call(f), WMS_OK);
	assert_common_wire(f);
	assert_int_equal(lb_header(&f->last, "SOAPAction", v, sizeof(v)), 1);
	assert_string_equal(v, "\"" ACTION "\"");
}

static void test_wire_soap12(void **state)
{
	fx *f = *state;
	start_reply(f, 200, "OK", "application/soap+xml; charset=utf-8", reply_ok);
	f->req.soap_version = WMS_SOAP_12;
	f->req.content_type = CT_12;
	f->req.body = request_12;
	f->req.body_len = sizeof(request_12) - 1;
	assert_int_equal(call(f), WMS_OK);
	assert_common_wire(f);
	assert_int_equal(lb_header(&f->last, "SOAPAction", NULL, 0), 0);
}

/* Correlation id and the transport's HTTP Basic credentials reach the
 * wire; the id changes per call while the cached headers stay right; the
 * password never reaches err. */
static void test_wire_correlation_and_basic(void **state)
{
	fx *f = *state;
	char v[512];
	start_reply(f, 200, "OK", CT_11, reply_ok);
	f->req.correlation_id = "wms-0badc0de-000001";
	f->tt.want.http_username = "fulfillment";
	f->tt.want.http_password = "pa55-w0rd";
	retransport(f);
	assert_int_equal(call(f), WMS_OK);
	assert_common_wire(f);
	assert_int_equal(lb_header(&f->last, "X-Correlation-Id", v, sizeof(v)), 1);
	assert_string_equal(v, "wms-0badc0de-000001");
	assert_int_equal(lb_header(&f->last, "Authorization", v, sizeof(v)), 1);
	/* base64("fulfillment:pa55-w0rd") */
	assert_string_equal(v, "Basic ZnVsZmlsbG1lbnQ6cGE1NS13MHJk");
	f->req.correlation_id = "wms-0badc0de-000002";
	assert_int_equal(call(f), WMS_OK);
	get_last(f);
	assert_int_equal(lb_header(&f->last, "X-Correlation-Id", v, sizeof(v)), 1);
	assert_string_equal(v, "wms-0badc0de-000002");
	/* a caller's own id longer than 60 bytes goes out cut to 60 */
	f->req.correlation_id = "0123456789abcdefghij0123456789ABCDEFGHIJ0123456789klmnopqrstTAIL";
	assert_int_equal(call(f), WMS_OK);
	get_last(f);
	assert_int_equal(lb_header(&f->last, "X-Correlation-Id", v, sizeof(v)), 1);
	assert_string_equal(v, "0123456789abcdefghij0123456789ABCDEFGHIJ0123456789klmnopqrst");
	f->req.correlation_id = "wms-0badc0de-000002";
	assert_int_equal(lb_header(&f->last, "SOAPAction", v, sizeof(v)), 1);
	assert_string_equal(v, "\"" ACTION "\"");
	/* a transport without credentials: no Authorization */
	f->tt.want.http_username = f->tt.want.http_password = NULL;
	retransport(f);
	assert_int_equal(call(f), WMS_OK);
	get_last(f);
	assert_int_equal(lb_header(&f->last, "Authorization", NULL, 0), 0);
}

/* An empty body must go out as Content-Length: 0, never read from stdin. */
static void test_wire_empty_body(void **state)
{
	fx *f = *state;
	char v[32];
	start_reply(f, 200, "OK", CT_11, reply_ok);
	f->req.body = NULL;
	f->req.body_len = 0;
	assert_int_equal(call(f), WMS_OK);
	get_last(f);
	assert_string_equal(f->last.method, "POST");
	assert_int_equal(lb_header(&f->last, "Content-Length", v, sizeof(v)), 1);
	assert_string_equal(v, "0");
	assert_int_equal(f->last.body_len, 0);
}

/* Zero timeouts mean the defaults, not curl's "no limit". */
static void test_zero_timeouts(void **state)
{
	fx *f = *state;
	start_reply(f, 200, "OK", CT_11, reply_ok);
	f->req.connect_timeout_ms = 0;
	f->req.timeout_ms = 0;
	f->req.stall_timeout_ms = 0;
	assert_int_equal(call(f), WMS_OK);
	assert_int_equal(f->resp.status, 200);
}

/* One pooled handle serves requests that differ in every per-request field:
 * each call must go out as if the handle were new (headers rebuilt when the
 * content type or action changes, the URL and deadlines followed); the user
 * agent and CA are the transport's, one made without them is at libcurl's
 * defaults. */
static void test_handle_follows_each_request(void **state)
{
	fx *f = *state;
	lb_script hold = { 0 }, tls = { 0 };
	lb_server *other, *silent, *notls;
	char v[512], url[64], ca[64];

	start_reply(f, 200, "OK", CT_11, reply_ok);
	assert_int_equal(call(f), WMS_OK);
	get_last(f);
	assert_int_equal(lb_header(&f->last, "SOAPAction", v, sizeof(v)), 1);
	assert_string_equal(v, "\"" ACTION "\"");

	/* SOAP 1.2: no SOAPAction, the action in the Content-Type */
	f->req.soap_version = WMS_SOAP_12;
	f->req.content_type = CT_12;
	assert_int_equal(call(f), WMS_OK);
	assert_common_wire(f);
	assert_int_equal(lb_header(&f->last, "SOAPAction", NULL, 0), 0);

	/* back to 1.1 with another action */
	f->req.soap_version = WMS_SOAP_11;
	f->req.content_type = CT_11;
	f->req.soap_action = "urn:libwms:warehouse:1/CancelOrder";
	assert_int_equal(call(f), WMS_OK);
	assert_common_wire(f);
	assert_int_equal(lb_header(&f->last, "SOAPAction", v, sizeof(v)), 1);
	assert_string_equal(v, "\"urn:libwms:warehouse:1/CancelOrder\"");

	/* a transport with another user agent, then one with none at all
	 * (libcurl sends none by default) */
	f->tt.want.user_agent = "libwms-other/2";
	retransport(f);
	assert_int_equal(call(f), WMS_OK);
	get_last(f);
	assert_int_equal(lb_header(&f->last, "User-Agent", v, sizeof(v)), 1);
	assert_string_equal(v, "libwms-other/2");
	f->tt.want.user_agent = "";
	retransport(f);
	assert_int_equal(call(f), WMS_OK);
	get_last(f);
	assert_int_equal(lb_header(&f->last, "User-Agent", NULL, 0), 0);
	/* and the default: libwms's own */
	f->tt.want.user_agent = NULL;
	retransport(f);
	assert_int_equal(call(f), WMS_OK);
	get_last(f);
	assert_int_equal(lb_header(&f->last, "User-Agent", v, sizeof(v)), 1);
	assert_string_equal(v, "libwms/" WMS_VERSION);
	assert_int_equal(lb_header(&f->last, "SOAPAction", v, sizeof(v)), 1);
	assert_string_equal(v, "\"urn:libwms:warehouse:1/CancelOrder\"");
	f->tt.want.user_agent = UA;
	retransport(f);
	f->req.soap_action = ACTION;

	/* another server */
	other = lb_start(&(lb_script){ .response = f->reply });
	assert_non_null(other);
	f->req.url = lb_url(other);
	assert_int_equal(call(f), WMS_OK);
	assert_int_equal(lb_requests(other), 1);
	assert_int_equal(lb_requests(f->srv), 6);
	lb_stop(other);

	/* deadlines follow the request: 300 ms, then 700 ms */
	hold.after = LB_HOLD;
	silent = lb_start(&hold);
	assert_non_null(silent);
	f->req.url = lb_url(silent);
	f->req.timeout_ms = 300;
	assert_failed(f, call(f), WMS_ERR_TIMEOUT, WMS_DELIVERY_UNKNOWN, CURLE_OPERATION_TIMEDOUT);
	assert_true(f->elapsed_ms >= 250 && f->elapsed_ms <= 300 + slack_ms());
	f->req.timeout_ms = 700;
	assert_failed(f, call(f), WMS_ERR_TIMEOUT, WMS_DELIVERY_UNKNOWN, CURLE_OPERATION_TIMEDOUT);
	assert_true(f->elapsed_ms >= 650 && f->elapsed_ms <= 700 + slack_ms());
	lb_stop(silent);
	f->req.timeout_ms = 5000;

	/* a CA file, then none: libcurl's default CA again (the handshake with a
	 * server that speaks no TLS fails, not the loading of the CA file) */
	tls.raw = 1;
	tls.after = LB_CLOSE;
	notls = lb_start(&tls);
	assert_non_null(notls);
	snprintf(url, sizeof(url), "https://127.0.0.1:%u/wms", (unsigned)lb_port(notls));
	f->req.url = url;
	vanishing_ca(f, ca, sizeof(ca));
	assert_failed(f, call(f), WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT, CURLE_SSL_CACERT_BADFILE);
	f->tt.want.ca_file = NULL;
	retransport(f);
	f->req.connect_timeout_ms = 30000; /* as in test_tls_handshake_failure */
	assert_failed(f, call(f), WMS_ERR_TLS, WMS_DELIVERY_NOT_SENT, CURLE_SSL_CONNECT_ERROR);
	f->req.connect_timeout_ms = 2000;
	lb_stop(notls);

	/* and the first server, as at the start */
	f->req.url = lb_url(f->srv);
	assert_int_equal(call(f), WMS_OK);
	assert_common_wire(f);
	assert_int_equal(lb_header(&f->last, "SOAPAction", v, sizeof(v)), 1);
	assert_string_equal(v, "\"" ACTION "\"");
}

/* ---- keep-alive -------------------------------------------------------------- */

static void test_keepalive_reuse(void **state)
{
	fx *f = *state;
	int i;
	start_reply(f, 200, "OK", CT_11, reply_ok);
	for (i = 0; i < 3; i++) {
		assert_int_equal(call(f), WMS_OK);
		assert_int_equal(f->resp.status, 200);
		assert_string_equal(f->resp.body, reply_ok);
	}
	assert_int_equal(lb_requests(f->srv), 3);
	assert_int_equal(lb_accepted(f->srv), 1);
}

/* The server closes each connection after replying without saying so. Once
 * its FIN is in, libcurl's check before reuse finds the idle connection dead
 * and opens a new one: nothing was sent on the dead one, nothing resent. */
static void test_idle_connection_closed_by_server(void **state)
{
	fx *f = *state;
	lb_script s = { 0 };
	unsigned i;
	f->reply = lb_http_response(200, "OK", CT_11, reply_ok);
	s.response = f->reply;
	s.after = LB_CLOSE;
	start(f, &s);
	for (i = 0; i < 3; i++) {
		assert_int_equal(call(f), WMS_OK);
		assert_string_equal(f->resp.body, reply_ok);
		assert_true(lb_wait_closed(f->srv, i + 1, 2000));
	}
	assert_int_equal(lb_requests(f->srv), 3);
	assert_int_equal(lb_accepted(f->srv), 3);
}

/* A server's keep-alive timeout: calls close together share the connection;
 * once it has been idle too long the server closes it and the next call,
 * on the same pooled handle, goes out on a new one. Each request arrives once. */
static void test_idle_timeout_between_calls(void **state)
{
	fx *f = *state;
	lb_script s = { 0 };
	unsigned i;
	f->reply = lb_http_response(200, "OK", CT_11, reply_ok);
	s.response = f->reply;
	s.after = LB_KEEP;
	s.idle_close_ms = under_valgrind() ? 2000u : 300u;
	start(f, &s);
	for (i = 0; i < 3; i++) {
		assert_int_equal(call(f), WMS_OK);
		assert_int_equal(call(f), WMS_OK);
		assert_string_equal(f->resp.body, reply_ok);
		assert_int_equal(lb_accepted(f->srv), i + 1);
		assert_true(lb_wait_closed(f->srv, i + 1, 2 * s.idle_close_ms + 2000));
	}
	assert_int_equal(call(f), WMS_OK);
	assert_int_equal(lb_requests(f->srv), 7);
	assert_int_equal(lb_accepted(f->srv), 4);
}

/* A server that writes to the idle connection unasked after the first
 * reply: "408 Request Timeout", "Connection: close", then closes it (FIN) or
 * leaves it open. Those bytes are no reply to anything: the next call must
 * not send its request there and take them for its answer. It goes out on a
 * new connection, gets its own reply, and the server reads exactly the
 * requests the calls made; the connection after it is reused as usual. */
#define REPLY_408 "HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"

static void unsolicited_on_idle(fx *f, int close_after)
{
	lb_script s = { 0 };
	f->reply = lb_http_response(200, "OK", CT_11, reply_ok);
	s.response = f->reply;
	s.unsolicited = REPLY_408;
	s.unsolicited_ms = 20;
	s.unsolicited_close = close_after;
	start(f, &s);
	assert_int_equal(call(f), WMS_OK);
	assert_int_equal(f->resp.status, 200);
	assert_true(lb_wait_unsolicited(f->srv, 2000));
	if (close_after)
		assert_true(lb_wait_closed(f->srv, 1, 2000));
	/* loopback: written is as good as arrived; a moment all the same */
	poll(NULL, 0, 20);

	assert_int_equal(call(f), WMS_OK);
	assert_int_equal(f->resp.status, 200);
	assert_string_equal(f->resp.content_type, CT_11);
	assert_string_equal(f->resp.body, reply_ok);
	assert_int_equal(lb_requests(f->srv), 2);
	assert_int_equal(lb_accepted(f->srv), 2);
	assert_common_wire(f);
	/* The stale connection was closed by the client (kept open, the
	 * server sees its FIN now). */
	assert_true(lb_wait_closed(f->srv, 1, 2000));

	assert_int_equal(call(f), WMS_OK);
	assert_string_equal(f->resp.body, reply_ok);
	assert_int_equal(lb_requests(f->srv), 3);
	assert_int_equal(lb_accepted(f->srv), 2);
}

static void test_unsolicited_408_then_close(void **state)
{
	unsolicited_on_idle(*state, 1);
}

static void test_unsolicited_408_kept_open(void **state)
{
	unsolicited_on_idle(*state, 0);
}

/* The same through a client: the second call is answered (ANSWERED, the
 * status reply of its own request), not failed as HTTP 408. */
static void test_client_unsolicited_408(void **state)
{
	fx *f = *state;
	lb_script s = { 0 };
	wms_client_options o = WMS_CLIENT_OPTIONS_INIT;
	wms_client *c = NULL;
	wms_status_reply r;
	wms_error e;
	int i;

	f->reply = lb_http_response(200, "OK", CT_11, reply_ok);
	s.response = f->reply;
	s.unsolicited = REPLY_408;
	s.unsolicited_ms = 20;
	s.unsolicited_close = 1;
	start(f, &s);
	o.endpoint = lb_url(f->srv);
	o.timeout_ms = 5000;
	assert_int_equal(wms_client_new(&c, &o, &e), WMS_OK);
	for (i = 0; i < 2; i++) {
		memset(&r, 0, sizeof(r));
		if (wms_get_order_status(&r, c, "ORD-1001", &e) != WMS_OK)
			fail_msg("call %d: %s (%s, HTTP %ld): %s", i + 1, wms_status_name(e.status),
				 wms_delivery_name(e.delivery), e.http_status, e.message);
		assert_int_equal(e.delivery, WMS_DELIVERY_ANSWERED);
		assert_string_equal(r.wms_reference, "WMS-77");
		if (i == 0) {
			assert_true(lb_wait_closed(f->srv, 1, 2000));
			poll(NULL, 0, 20);
		}
	}
	assert_int_equal(lb_requests(f->srv), 2);
	assert_int_equal(lb_accepted(f->srv), 2);
	wms_client_free(c);
}

#define NOT_RESENT "connection closed by the WMS after the request was sent, before any reply; " \
		   "not resent (it may have been received)"

/* A reused connection dies after the request was read and before any reply
 * byte. libcurl would send it again on a fresh connection by itself; the
 * transport refuses that resend before it connects: TRANSPORT, UNKNOWN, and
 * the server has exactly one copy. */
static void dropped_on_reuse(fx *f, int reset)
{
	lb_script s = { 0 };
	f->reply = lb_http_response(200, "OK", CT_11, reply_ok);
	s.response = f->reply;
	s.drop_reused = 1;
	s.drop_reset = reset;
	start(f, &s);
	assert_int_equal(call(f), WMS_OK);
	assert_failed(f, call(f), WMS_ERR_TRANSPORT, WMS_DELIVERY_UNKNOWN,
		      CURLE_ABORTED_BY_CALLBACK);
	assert_string_equal(f->err.message,
			    reset ? NOT_RESENT ": Recv failure: Connection reset by peer (curl 42)"
				  : NOT_RESENT " (curl 42)");
	assert_int_equal(f->err.http_status, 0);
	assert_int_equal(f->resp.status, 0);
	assert_int_equal(lb_requests(f->srv), 2);
	/* The next call is fine, on a new connection; the refused resend made
	 * none (connections are accepted in order: this one's came second). */
	assert_int_equal(call(f), WMS_OK);
	assert_string_equal(f->resp.body, reply_ok);
	assert_int_equal(lb_requests(f->srv), 3);
	assert_int_equal(lb_accepted(f->srv), 2);
}

static void test_reused_connection_closed_not_resent(void **state)
{
	dropped_on_reuse(*state, 0);
}

static void test_reused_connection_reset_not_resent(void **state)
{
	dropped_on_reuse(*state, 1);
}

/* The same on a fresh connection (the first call): libcurl never resends
 * there, and the verdict is the same, TRANSPORT and UNKNOWN. */
static void test_closed_without_reply(void **state)
{
	fx *f = *state;
	lb_script s = { 0 };
	s.after = LB_CLOSE; /* read the request, answer nothing */
	start(f, &s);
	assert_failed(f, call(f), WMS_ERR_TRANSPORT, WMS_DELIVERY_UNKNOWN, CURLE_GOT_NOTHING);
	assert_cause(f, WMS_CAUSE_RESET);
	assert_int_equal(lb_requests(f->srv), 1);
	assert_int_equal(lb_accepted(f->srv), 1);
}

static void test_fresh_connection_reset(void **state)
{
	fx *f = *state;
	lb_script s = { 0 };
	s.after = LB_RESET;
	start(f, &s);
	assert_failed(f, call(f), WMS_ERR_TRANSPORT, WMS_DELIVERY_UNKNOWN, CURLE_RECV_ERROR);
	assert_cause(f, WMS_CAUSE_RESET);
	assert_int_equal(lb_requests(f->srv), 1);
	assert_int_equal(lb_accepted(f->srv), 1);
}

/* The server closes the idle connection just as the next request arrives,
 * without reading it. The request was written: the client cannot tell this
 * from a server that read it and closed, so UNKNOWN all the same, and it is
 * not resent. */
static void test_closed_as_request_arrives(void **state)
{
	fx *f = *state;
	lb_script s = { 0 };
	f->reply = lb_http_response(200, "OK", CT_11, reply_ok);
	s.response = f->reply;
	s.close_unread = 1;
	start(f, &s);
	assert_int_equal(call(f), WMS_OK);
	assert_failed(f, call(f), WMS_ERR_TRANSPORT, WMS_DELIVERY_UNKNOWN,
		      CURLE_ABORTED_BY_CALLBACK);
	assert_non_null(strstr(f->err.message, NOT_RESENT));
	assert_int_equal(lb_requests(f->srv), 1);
	assert_int_equal(call(f), WMS_OK);
	assert_int_equal(lb_requests(f->srv), 2);
	assert_int_equal(lb_accepted(f->srv), 2);
}

/* The send on the reused connection fails before a byte leaves (its reset
 * arrived just after libcurl found it alive): provably not sent, so libcurl's
 * one resend on a fresh connection goes ahead. Should that send fail too,
 * the call fails NOT_SENT: nothing is resent twice. */
static void test_send_failed_resent_once(void **state)
{
	fx *f = *state;
	unsigned failed = sf_failed();
	f->reply = lb_http_response(200, "OK", CT_11, reply_ok);
	start(f, &(lb_script){ .response = f->reply, .after = LB_KEEP });
	assert_int_equal(call(f), WMS_OK);

	sf_fail_posts(1);
	assert_int_equal(call(f), WMS_OK);
	assert_int_equal(sf_failed() - failed, 1);
	assert_string_equal(f->resp.body, reply_ok);
	assert_int_equal(lb_requests(f->srv), 2);
	assert_int_equal(lb_accepted(f->srv), 2);

	/* Two sends failed, and no third was tried (it would have succeeded). */
	sf_fail_posts(2);
	assert_failed(f, call(f), WMS_ERR_TRANSPORT, WMS_DELIVERY_NOT_SENT, CURLE_SEND_ERROR);
	assert_cause(f, WMS_CAUSE_RESET);
	assert_int_equal(sf_failed() - failed, 3);
	assert_int_equal(lb_requests(f->srv), 2);

	assert_int_equal(call(f), WMS_OK);
	assert_int_equal(lb_requests(f->srv), 3);
}

/* Call after call on one pooled handle: libcurl counts its resends per easy
 * handle, refused or not, and fails the sixth unless the handle is reset, so
 * the count must not build up across calls. Resends that go ahead ... */
static void test_many_resends_on_one_handle(void **state)
{
	fx *f = *state;
	unsigned i, failed = sf_failed();
	f->reply = lb_http_response(200, "OK", CT_11, reply_ok);
	start(f, &(lb_script){ .response = f->reply, .after = LB_KEEP });
	assert_int_equal(call(f), WMS_OK);
	for (i = 0; i < 8; i++) {
		sf_fail_posts(1);
		if (call(f) != WMS_OK)
			fail_msg("send failure %u: %s", i + 1, f->err.message);
		assert_string_equal(f->resp.body, reply_ok);
	}
	assert_int_equal(sf_failed() - failed, 8);
	assert_int_equal(lb_requests(f->srv), 9);
	assert_int_equal(lb_accepted(f->srv), 9);
}

/* ... and resends refused. */
static void test_many_refused_on_one_handle(void **state)
{
	fx *f = *state;
	char first[WMS_ERROR_MESSAGE_MAX];
	unsigned i;
	f->reply = lb_http_response(200, "OK", CT_11, reply_ok);
	start(f, &(lb_script){ .response = f->reply, .drop_reused = 1 });
	for (i = 0; i < 8; i++) {
		if (call(f) != WMS_OK)
			fail_msg("drop %u, first call: %s", i + 1, f->err.message);
		assert_failed(f, call(f), WMS_ERR_TRANSPORT, WMS_DELIVERY_UNKNOWN,
			      CURLE_ABORTED_BY_CALLBACK);
		if (i == 0)
			memcpy(first, f->err.message, sizeof(first));
		assert_string_equal(f->err.message, first);
	}
	assert_int_equal(call(f), WMS_OK);
	assert_int_equal(lb_requests(f->srv), 17);
	assert_int_equal(lb_accepted(f->srv), 9);
}

/* ---- threads -------------------------------------------------------------------- */

struct worker {
	wms_transport *tp;
	const char *url;
	int calls;
	unsigned timeout_ms; /* 0: base_request's; else the deadline and the stall guard */
	int ok;
	char first_error[WMS_ERROR_MESSAGE_MAX + 32];
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	wms_http_request req;
	int i;
	base_request(&req);
	req.url = w->url;
	if (w->timeout_ms)
		req.timeout_ms = req.stall_timeout_ms = w->timeout_ms;
	for (i = 0; i < w->calls; i++) {
		wms_http_response resp;
		wms_error err;
		wms_status st;
		memset(&resp, 0, sizeof(resp));
		resp.max_body = req.max_reply_bytes;
		wms_error_clear(&err);
		st = w->tp->send(w->tp, &req, &resp, &err);
		if (st == WMS_OK && resp.status == 200 && resp.body &&
		    strcmp(resp.body, reply_ok) == 0 && resp.content_type &&
		    strcmp(resp.content_type, CT_11) == 0)
			w->ok++;
		else if (!w->first_error[0])
			snprintf(w->first_error, sizeof(w->first_error), "%s: %s",
				 wms_status_name(st), err.message);
		wms_http_response_clear(&resp);
	}
	return NULL;
}

/* `threads` threads, `calls` calls each, one transport; all must succeed. */
static void run_workers(fx *f, int threads, int calls)
{
	pthread_t th[16];
	struct worker w[16];
	int i;
	assert_true(threads <= 16);
	start_reply(f, 200, "OK", CT_11, reply_ok);
	memset(w, 0, sizeof(w));
	for (i = 0; i < threads; i++) {
		w[i].tp = f->tp;
		w[i].url = lb_url(f->srv);
		w[i].calls = calls;
		assert_int_equal(pthread_create(&th[i], NULL, worker_main, &w[i]), 0);
	}
	for (i = 0; i < threads; i++)
		pthread_join(th[i], NULL);
	for (i = 0; i < threads; i++) {
		if (w[i].ok != calls)
			print_error("thread %d: %d/%d ok, first error: %s\n", i, w[i].ok, calls,
				    w[i].first_error);
		assert_int_equal(w[i].ok, calls);
	}
	assert_int_equal(lb_requests(f->srv), (unsigned)(threads * calls));
	/* At most one connection per concurrent caller: keep-alive held. */
	assert_in_range(lb_accepted(f->srv), 1, (unsigned)threads);
}

static void test_threads_share_one_transport(void **state)
{
	run_workers(*state, 8, 50);
}

/* More callers than idle slots: surplus handles are created, then dropped. */
static void test_threads_beyond_idle_pool(void **state)
{
	run_workers(*state, 12, 10);
}

/* One batch of n callers at once on f->tp, each with one call. The server
 * holds every reply until all n requests have arrived (lb_gate), so the n
 * calls overlap on any machine, under valgrind too: none can hand its handle
 * back for another caller of the batch to reuse. Then the server must have
 * accepted `accepted` connections in all and closed `closed`. */
static void idle_batch(fx *f, int n, unsigned accepted, unsigned closed)
{
	/* generous: the gate only waits this long when a call never came */
	unsigned gate_ms = under_valgrind() ? 60000u : 20000u;
	pthread_t th[8];
	struct worker w[8];
	int i;
	assert_true(n <= 8);
	lb_gate(f->srv, (unsigned)n, gate_ms);
	memset(w, 0, sizeof(w));
	for (i = 0; i < n; i++) {
		w[i].tp = f->tp;
		w[i].url = lb_url(f->srv);
		w[i].calls = 1;
		w[i].timeout_ms = gate_ms + 10000u;
		assert_int_equal(pthread_create(&th[i], NULL, worker_main, &w[i]), 0);
	}
	for (i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	if (lb_gate_missed(f->srv))
		fail_msg("%u of %d requests waited %u ms for the rest of their batch: the "
			 "calls did not run at once", lb_gate_missed(f->srv), n, gate_ms);
	for (i = 0; i < n; i++)
		if (w[i].ok != 1)
			fail_msg("caller %d of %d: %s", i, n, w[i].first_error);
	assert_int_equal(lb_accepted(f->srv), accepted);
	if (!lb_wait_closed(f->srv, closed, 2000 + (unsigned)slack_ms()))
		fail_msg("%u connections closed, %u expected", lb_closed(f->srv), closed);
	assert_int_equal(lb_closed(f->srv), closed);
}

/* The idle pool keeps max_idle handles, and so connections: n callers at
 * once, on a new transport with a pool of `pool`, open n connections; once
 * they are done the n - pool beyond the pool are closed and the pool's are
 * kept. The same batch again reuses the kept ones (the rest are new) and
 * closes as many. Freeing the transport closes the kept ones. */
static void idle_pool_twice(fx *f, unsigned pool, unsigned n)
{
	unsigned over = n > pool ? n - pool : 0;
	lb_script s = { 0 };

	f->tt.want.max_idle_connections = pool;
	retransport(f);
	lb_stop(f->srv);
	s.response = f->reply;
	start(f, &s);
	idle_batch(f, (int)n, n, over);
	idle_batch(f, (int)n, n + over, 2 * over);
	tt_transport_free(&f->tt);
	f->tp = NULL;
	if (!lb_wait_closed(f->srv, n + over, 2000 + (unsigned)slack_ms()))
		fail_msg("%u connections closed after the transport was freed, %u expected",
			 lb_closed(f->srv), n + over);
	assert_int_equal(lb_closed(f->srv), n + over);
	retransport(f); /* for teardown */
}

/* A pool of two: at its size, one past it, and well past it (six). */
static void test_idle_pool_size(void **state)
{
	fx *f = *state;
	f->reply = lb_http_response(200, "OK", CT_11, reply_ok);
	assert_non_null(f->reply);
	idle_pool_twice(f, 2, 2);
	idle_pool_twice(f, 2, 3);
	idle_pool_twice(f, 2, 6);
}

/* ---- failures before anything is sent ---------------------------------------------- */

static void test_connect_refused(void **state)
{
	fx *f = *state;
	char url[64];
	uint16_t port = lb_closed_port();
	assert_true(port != 0);
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/wms", (unsigned)port);
	f->req.url = url;
	assert_failed(f, call(f), WMS_ERR_CONNECT, WMS_DELIVERY_NOT_SENT, CURLE_COULDNT_CONNECT);
	assert_cause(f, WMS_CAUSE_REFUSED);
	assert_int_equal(f->resp.status, 0);
	assert_int_equal(f->err.http_status, 0);
}

/* The process's proxy variables, as README's options table says: with
 * http_proxy set, a request for an http:// WMS goes to the proxy (the
 * absolute URI as its target), even when the WMS itself is down; with the
 * WMS's host in no_proxy it goes straight to the WMS (here refused, the
 * proxy not asked). Twice each on one transport. The teardown unsets both. */
static void test_proxy_from_the_environment(void **state)
{
	static char url[64]; /* the request keeps it past this frame (teardown) */
	fx *f = *state;
	char proxy[64];
	uint16_t port = lb_closed_port();
	unsigned before;
	int round;

	assert_true(port != 0);
	start_reply(f, 200, "OK", CT_11, reply_ok);
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/wms", (unsigned)port);
	snprintf(proxy, sizeof(proxy), "http://127.0.0.1:%u", (unsigned)lb_port(f->srv));
	f->req.url = url;
	for (round = 0; round < 2; round++) {
		assert_int_equal(setenv("http_proxy", proxy, 1), 0);
		unsetenv("no_proxy");
		assert_int_equal(call(f), WMS_OK);
		assert_string_equal(f->resp.body, reply_ok);
		get_last(f);
		assert_string_equal(f->last.target, url);
		assert_int_equal(setenv("no_proxy", "127.0.0.1", 1), 0);
		before = lb_requests(f->srv);
		assert_failed(f, call(f), WMS_ERR_CONNECT, WMS_DELIVERY_NOT_SENT,
			      CURLE_COULDNT_CONNECT);
		assert_int_equal(lb_requests(f->srv), before);
	}
}

static int teardown_proxy_env(void **state)
{
	unsetenv("http_proxy");
	unsetenv("no_proxy");
	return teardown(state);
}

/* The TCP connect never completes: the connect deadline, or the whole call's
 * when it is shorter, ends it; nothing was sent. */
static void test_connect_timeout(void **state)
{
	fx *f = *state;
	lb_blackhole b;
	char url[64];
	assert_int_equal(lb_blackhole_open(&b), 0);
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/wms", (unsigned)b.port);
	f->req.url = url;
	f->req.connect_timeout_ms = 300;
	f->req.timeout_ms = 5000;
	assert_failed(f, call(f), WMS_ERR_TIMEOUT, WMS_DELIVERY_NOT_SENT,
		      CURLE_OPERATION_TIMEDOUT);
	assert_cause(f, WMS_CAUSE_CONNECT_TIMEOUT);
	assert_true(f->elapsed_ms >= 250);
	assert_true(f->elapsed_ms <= 300 + slack_ms());

	f->req.connect_timeout_ms = 5000;
	f->req.timeout_ms = 300;
	assert_failed(f, call(f), WMS_ERR_TIMEOUT, WMS_DELIVERY_NOT_SENT,
		      CURLE_OPERATION_TIMEDOUT);
	assert_true(f->elapsed_ms <= 300 + slack_ms());
	lb_blackhole_close(&b);
}

static void test_unresolvable_host(void **state)
{
	fx *f = *state;
	f->req.url = "http://nonexistent.invalid/wms";
	assert_failed(f, call(f), WMS_ERR_CONNECT, WMS_DELIVERY_NOT_SENT,
		      CURLE_COULDNT_RESOLVE_HOST);
	assert_cause(f, WMS_CAUSE_DNS);
	assert_non_null(strstr(f->err.message, "nonexistent.invalid"));
}

/* A name whose lookup hangs (2 s here, 8 s under valgrind): the call ends at
 * its deadline, TIMEOUT and NOT_SENT (libcurl's "Resolving timed out", curl
 * 28), not when getaddrinfo() returns: libcurl leaves its resolver thread to
 * finish alone (CURLOPT_QUICK_EXIT). The test waits for that thread's lookup
 * to end, so nothing is left running, and the handle it leaves in the pool
 * serves the next call. */
static void test_slow_dns_ends_at_deadline(void **state)
{
	fx *f = *state;
	char url[96];
	unsigned dns_ms = under_valgrind() ? 8000u : 2000u;
	uint64_t t0;
	start_reply(f, 200, "OK", CT_11, reply_ok);
	snprintf(url, sizeof(url), "http://" SLOW_HOST ":%u/wms", (unsigned)lb_port(f->srv));
	atomic_store(&slow_dns_ms, dns_ms);
	f->req.url = url;
	f->req.connect_timeout_ms = 5000;
	f->req.timeout_ms = 300;
	assert_failed(f, call(f), WMS_ERR_TIMEOUT, WMS_DELIVERY_NOT_SENT,
		      CURLE_OPERATION_TIMEDOUT);
	assert_cause(f, WMS_CAUSE_CONNECT_TIMEOUT);
	assert_true(f->elapsed_ms <= 300 + slack_ms());
	assert_non_null(strstr(f->err.message, "Resolving"));
	assert_int_equal(lb_accepted(f->srv), 0);

	/* the resolver thread is still in getaddrinfo(); let it finish */
	t0 = lb_now_ms();
	while (atomic_load(&slow_dns_running) && lb_now_ms() - t0 < dns_ms + 5000u)
		poll(NULL, 0, 10);
	assert_int_equal(atomic_load(&slow_dns_running), 0);
	poll(NULL, 0, 50); /* and free what it holds */

	f->req.url = lb_url(f->srv);
	f->req.timeout_ms = 5000;
	assert_int_equal(call(f), WMS_OK);
	assert_string_equal(f->resp.body, reply_ok);
}

/* Credentials in the URL never reach the message. */
static void test_credentials_not_in_message(void **state)
{
	fx *f = *state;
	char url[96];
	uint16_t port = lb_closed_port();
	snprintf(url, sizeof(url), "http://alice:s3cr3t@127.0.0.1:%u/wms", (unsigned)port);
	f->req.url = url;
	assert_failed(f, call(f), WMS_ERR_CONNECT, WMS_DELIVERY_NOT_SENT, CURLE_COULDNT_CONNECT);
	assert_null(strstr(f->err.message, "s3cr3t"));
	f->req.url = "http://alice:s3cr3t@nonexistent.invalid/wms";
	assert_failed(f, call(f), WMS_ERR_CONNECT, WMS_DELIVERY_NOT_SENT,
		      CURLE_COULDNT_RESOLVE_HOST);
	assert_null(strstr(f->err.message, "s3cr3t"));
}

/* Credentials are masked where a copy of the URL would carry them, and
 * nowhere else: a short user name or password that also spells part of
 * libcurl's own words leaves the message whole (masking it there garbled
 * the message and, by where the stars fell, told the secret). Twice each. */
static void test_short_credentials_leave_the_message_whole(void **state)
{
	fx *f = *state;
	char url[96];
	uint16_t port = lb_closed_port();
	for (int twice = 0; twice < 2; twice++) {
		snprintf(url, sizeof(url), "http://or:or@127.0.0.1:%u/wms", (unsigned)port);
		f->req.url = url;
		assert_failed(f, call(f), WMS_ERR_CONNECT, WMS_DELIVERY_NOT_SENT,
			      CURLE_COULDNT_CONNECT);
		assert_non_null(strstr(f->err.message, "Couldn't connect to server"));
		assert_null(strstr(f->err.message, "***"));
		f->req.url = "http://a@/wms"; /* a user, no host */
		assert_failed(f, call(f), WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
			      CURLE_URL_MALFORMAT);
		assert_non_null(strstr(f->err.message, "bad/illegal format"));
		assert_null(strstr(f->err.message, "***"));
	}
}

/* The mask itself, on messages that do carry the URL (libcurl 7.88 writes
 * none, a later one may): user:password@ and password@ go, the rest of the
 * message and a bare match stay; a message is cut, never overrun. */
static void test_scrub_credentials(void **state)
{
	static const struct {
		const char *url, *msg, *want;
	} cases[] = {
		{ "http://alice:s3cr3t@wms.example/ws", "bad URL http://alice:s3cr3t@wms.example/ws",
		  "bad URL http://***@wms.example/ws" },
		{ "http://alice:s3cr3t@wms.example/ws", "as :s3cr3t@wms.example and s3cr3t",
		  "as :***@wms.example and s3cr3t" },
		{ "http://alice@wms.example/ws", "to alice@wms.example: alice refused",
		  "to ***@wms.example: alice refused" },
		{ "http://a:b@c@wms.example/ws", "at a:b@c@wms.example", "at ***@wms.example" },
		{ "http://wms.example/ws", "alice:s3cr3t@", "alice:s3cr3t@" },
		{ "http://or:or@127.0.0.1:1/ws", "Failed to connect to 127.0.0.1 port 1",
		  "Failed to connect to 127.0.0.1 port 1" },
		{ "http://x:y@h/w?q=u:p@z", "x:y@h u:p@z", "***@h u:p@z" },
		{ NULL, "left alone", "left alone" },
	};
	char msg[64];
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		for (int twice = 0; twice < 2; twice++) {
			snprintf(msg, sizeof(msg), "%s", cases[i].msg);
			wms__curl_scrub_credentials(msg, sizeof(msg), cases[i].url);
			if (strcmp(msg, cases[i].want) != 0)
				fail_msg("case %zu: \"%s\", want \"%s\"", i, msg, cases[i].want);
		}
	}
	/* a mask longer than what it hides is cut to the buffer, NUL-terminated */
	memset(msg, 'x', sizeof(msg) - 1);
	msg[sizeof(msg) - 1] = '\0';
	memcpy(msg + sizeof(msg) - 7, "u@host", 6);
	wms__curl_scrub_credentials(msg, sizeof(msg), "http://u@host/");
	assert_int_equal(strlen(msg), sizeof(msg) - 1);
	assert_string_equal(msg + sizeof(msg) - 7, "***@ho");
}

/* "Retry-After: DATE\r\n" with tm in HTTP-date's three forms: IMF-fixdate,
 * RFC 850, asctime. */
static void date_forms(char future[3][96], const struct tm *tm)
{
	/* RFC 850's two-digit year, which -Wformat-y2k will not have from %y */
	char day[40], rest[24];
	strftime(future[0], 96, "Retry-After: %a, %d %b %Y %H:%M:%S GMT\r\n", tm);
	strftime(day, sizeof(day), "%A, %d-%b-", tm);
	strftime(rest, sizeof(rest), " %H:%M:%S GMT\r\n", tm);
	snprintf(future[1], 96, "Retry-After: %s%02d%s", day, tm->tm_year % 100, rest);
	strftime(future[2], 96, "Retry-After: %a %b %e %H:%M:%S %Y\r\n", tm);
}

/* A reply's Retry-After, as resp->retry_after_ms (wms/sys/transport.h):
 * delta-seconds, an HTTP-date in each of its three forms (less now), and
 * what is not one (0), capped at UINT32_MAX; the last of two; reset by an
 * interim 1xx; never a trailer's. Each on a fresh server, twice in a row
 * on one transport (its handle and connection kept). */
static void test_retry_after_header(void **state)
{
	fx *f = *state;
	char future[3][96], wrap[3][96], head[512];
	time_t t;
	struct tm tm;
	const struct {
		const char *headers; /* Retry-After lines and the like, each ending \r\n */
		uint64_t lo, hi;     /* what retry_after_ms may read */
		int chunked;         /* the body chunked (2: empty), "Retry-After: 9" a trailer */
	} cases[] = {
		{ "Retry-After: 7\r\n", 7000, 7000, 0 },
		{ "retry-after:0\r\n", 0, 0, 0 },
		{ "Retry-After:   30  \r\n", 30000, 30000, 0 },
		{ "Retry-After: 4294967\r\n", 4294967000u, 4294967000u, 0 },
		{ "Retry-After: 4294968\r\n", UINT32_MAX, UINT32_MAX, 0 },
		{ "Retry-After: 99999999999999999999999\r\n", UINT32_MAX, UINT32_MAX, 0 },
		{ "Retry-After: -5\r\n", 0, 0, 0 },
		{ "Retry-After: 5s\r\n", 0, 0, 0 },
		{ "Retry-After: soon\r\n", 0, 0, 0 },
		{ "Retry-After:\r\n", 0, 0, 0 },
		{ "Retry-After: Sun, 06 Nov 1994 08:49:37 GMT\r\n", 0, 0, 0 }, /* past */
		{ future[0], 100000, 121000, 0 },
		{ future[1], 100000, 121000, 0 },
		{ future[2], 100000, 121000, 0 },
		{ "Retry-After: 3\r\nRetry-After: 4\r\n", 4000, 4000, 0 },
		{ "", 0, 0, 1 },
		{ "Retry-After: 2\r\n", 2000, 2000, 1 },
		{ "", 0, 0, 2 },
		{ "Retry-After: 2\r\n", 2000, 2000, 2 },
		/* far past UINT32_MAX ms, and past what 2^64 ms would hold */
		{ "Retry-After: Fri, 31 Dec 9999 23:59:59 GMT\r\n", UINT32_MAX, UINT32_MAX, 0 },
		{ wrap[0], UINT32_MAX, UINT32_MAX, 0 },
	};
	static const char body[] = "<html>busy</html>";

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		lb_script sc = { 0 };
		/* the dates 120 s from now, as each case starts */
		t = time(NULL) + 120;
		gmtime_r(&t, &tm);
		date_forms(future, &tm);
		/* just past 2^64 ms from now: a product in ms would wrap to a
		 * few seconds */
		t = time(NULL) + (time_t)(UINT64_MAX / 1000u + 1u) + 5;
		gmtime_r(&t, &tm);
		date_forms(wrap, &tm);
		if (cases[i].chunked == 2)
			snprintf(head, sizeof(head),
				 "HTTP/1.1 503 Service Unavailable\r\n%sContent-Type: text/html\r\n"
				 "Transfer-Encoding: chunked\r\nTrailer: Retry-After\r\n\r\n"
				 "0\r\nRetry-After: 9\r\n\r\n",
				 cases[i].headers);
		else if (cases[i].chunked)
			snprintf(head, sizeof(head),
				 "HTTP/1.1 503 Service Unavailable\r\n%sContent-Type: text/html\r\n"
				 "Transfer-Encoding: chunked\r\nTrailer: Retry-After\r\n\r\n"
				 "%zx\r\n%s\r\n0\r\nRetry-After: 9\r\n\r\n",
				 cases[i].headers, sizeof(body) - 1, body);
		else
			snprintf(head, sizeof(head),
				 "HTTP/1.1 503 Service Unavailable\r\n%sContent-Type: text/html\r\n"
				 "Content-Length: %zu\r\n\r\n%s",
				 cases[i].headers, sizeof(body) - 1, body);
		sc.response = head;
		if (f->srv)
			lb_stop(f->srv);
		start(f, &sc);
		for (int twice = 0; twice < 2; twice++) {
			wms_http_response_clear(&f->resp);
			assert_int_equal(call(f), WMS_OK);
			assert_int_equal(f->resp.status, 503);
			assert_int_equal(f->resp.body_len, cases[i].chunked == 2 ? 0 : sizeof(body) - 1);
			if (f->resp.retry_after_ms < cases[i].lo || f->resp.retry_after_ms > cases[i].hi)
				fail_msg("case %zu (%s): read %llu, want %llu..%llu", i,
					 cases[i].headers, (unsigned long long)f->resp.retry_after_ms,
					 (unsigned long long)cases[i].lo,
					 (unsigned long long)cases[i].hi);
		}
	}
	/* a 100 Continue's is not the final reply's */
	lb_stop(f->srv);
	snprintf(head, sizeof(head),
		 "HTTP/1.1 100 Continue\r\nRetry-After: 5\r\n\r\n"
		 "HTTP/1.1 503 Service Unavailable\r\nContent-Length: %zu\r\n\r\n%s",
		 sizeof(body) - 1, body);
	{
		lb_script sc = { 0 };
		sc.response = head;
		start(f, &sc);
	}
	for (int twice = 0; twice < 2; twice++) {
		wms_http_response_clear(&f->resp);
		assert_int_equal(call(f), WMS_OK);
		assert_int_equal(f->resp.status, 503);
		assert_int_equal(f->resp.retry_after_ms, 0);
	}
}

static void test_unsupported_scheme(void **state)
{
	fx *f = *state;
	char url[64];
	start_reply(f, 200, "OK", CT_11, reply_ok);
	/* ftp to a live port: refused by libcurl before any connect. */
	snprintf(url, sizeof(url), "ftp://127.0.0.1:%u/wms", (unsigned)lb_port(f->srv));
	f->req.url = url;
	assert_failed(f, call(f), WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
		      CURLE_UNSUPPORTED_PROTOCOL);
	assert_cause(f, WMS_CAUSE_NONE);
	f->req.url = "file:///etc/hostname";
	assert_failed(f, call(f), WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
		      CURLE_UNSUPPORTED_PROTOCOL);
	assert_int_equal(f->resp.body_len, 0);
	assert_int_equal(lb_accepted(f->srv), 0);
}

static void test_malformed_url(void **state)
{
	fx *f = *state;
	f->req.url = "http://[::1/wms";
	assert_failed(f, call(f), WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
		      CURLE_URL_MALFORMAT);
}

/* The transport hands libcurl each URL parsed once (CURLOPT_CURLU) and keeps
 * it on the handle while the URL stays the same. A handle that carried one
 * URL goes where the next request says, twice in a row each way: to another
 * server, back, and a malformed URL after a good one is refused (not sent
 * to the URL the handle carried before). */
static void test_url_changes_on_one_handle(void **state)
{
	fx *f = *state;
	lb_script s2 = { 0 };
	lb_server *srv2;
	char url1[96], url2[96];

	start_reply(f, 200, "OK", CT_11, reply_ok);
	s2.response = f->reply;
	srv2 = lb_start(&s2);
	assert_non_null(srv2);
	snprintf(url1, sizeof(url1), "%s", lb_url(f->srv));
	snprintf(url2, sizeof(url2), "%s", lb_url(srv2));
	for (int round = 0; round < 2; round++) {
		f->req.url = url1;
		assert_int_equal(call(f), WMS_OK);
		assert_int_equal(call(f), WMS_OK);
		f->req.url = url2;
		assert_int_equal(call(f), WMS_OK);
		assert_int_equal(call(f), WMS_OK);
		f->req.url = "http://[::1/wms";
		assert_failed(f, call(f), WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
			      CURLE_URL_MALFORMAT);
		assert_failed(f, call(f), WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
			      CURLE_URL_MALFORMAT);
	}
	assert_int_equal(lb_requests(f->srv), 4);
	assert_int_equal(lb_requests(srv2), 4);
	lb_stop(srv2);
}

/* A URL curl_url_set takes but libcurl refuses at the transfer
 * (a NUL percent-encoded in the user name: Curl_urldecode REJECT_ZERO; a
 * host name that is not valid UTF-8: the IDN conversion fails) is curl 3,
 * CURLE_URL_MALFORMAT, as it was with the string: INVALID_ARG, not NOMEM
 * ("out of memory: libcurl could not copy the URL"). */
static void test_parsed_url_refused_at_transfer_is_not_nomem(void **state)
{
	fx *f = *state;
	char url[128];
	start_reply(f, 200, "OK", CT_11, reply_ok);
	snprintf(url, sizeof(url), "http://al%%00ice:s3cr3t@127.0.0.1:%u/wms",
		 (unsigned)lb_port(f->srv));
	f->req.url = url;
	wms_status st1 = call(f);
	assert_null(strstr(f->err.message, "s3cr3t"));
	assert_null(strstr(f->err.message, "out of memory"));
	snprintf(url, sizeof(url), "http://ex\xff\xfe" "ample.invalid:%u/wms",
		 (unsigned)lb_port(f->srv));
	f->req.url = url;
	wms_status st = call(f);
	assert_failed(f, st, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT, CURLE_URL_MALFORMAT);
	assert_int_equal(st1, WMS_ERR_INVALID_ARG);
	assert_int_equal(lb_accepted(f->srv), 0);
}

static void test_invalid_arguments(void **state)
{
	fx *f = *state;
	wms_transport *t = f->tp;
	start_reply(f, 200, "OK", CT_11, reply_ok);

	assert_int_equal(wms_curl_transport_new(NULL), WMS_ERR_INVALID_ARG);
	assert_int_equal(t->send(t, NULL, &f->resp, &f->err), WMS_ERR_INVALID_ARG);
	assert_int_equal(f->err.delivery, WMS_DELIVERY_NOT_SENT);
	assert_int_equal(t->send(t, &f->req, NULL, &f->err), WMS_ERR_INVALID_ARG);

	f->req.content_type = "text/xml\r\nX-Injected: 1";
	assert_failed(f, call(f), WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT, 0);
	assert_cause(f, WMS_CAUSE_NONE);
	f->req.content_type = CT_11;
	f->req.soap_action = "urn:x\nX-Injected: 1";
	assert_failed(f, call(f), WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT, 0);
	f->req.soap_action = ACTION;
	f->req.body = NULL;
	assert_failed(f, call(f), WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT, 0);
	f->req.body = request_11;
	f->req.url = NULL;
	assert_failed(f, call(f), WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT, 0);
	f->req.url = lb_url(f->srv);
	f->req.content_type = NULL;
	assert_failed(f, call(f), WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT, 0);
	assert_int_equal(lb_accepted(f->srv), 0);

	/* The transport still works afterwards. */
	f->req.content_type = CT_11;
	assert_int_equal(call(f), WMS_OK);
	assert_int_equal(f->resp.status, 200);
}

/* What the transport is made with is checked when it is made: each bad
 * value refused with a message naming it, nothing made, and the bounds on
 * both sides. */
static void test_options_checked_when_made(void **state)
{
	static const struct {
		const char *what, *ca_file, *ca_path, *cert, *key, *pin, *user, *pass, *ua;
		uint32_t idle;
	} bad[] = {
		{ "ca_file: cannot read", "/nonexistent/libwms-test-ca.pem", 0, 0, 0, 0, 0, 0, 0, 0 },
		{ "ca_file: empty path", "", 0, 0, 0, 0, 0, 0, 0, 0 },
		{ "is a directory", "/tmp", 0, 0, 0, 0, 0, 0, 0, 0 },
		{ "ca_path: cannot search", 0, "/nonexistent/libwms-ca.d", 0, 0, 0, 0, 0, 0, 0 },
		{ "is not a directory", 0, "/dev/null", 0, 0, 0, 0, 0, 0, 0 },
		{ "client_cert and client_key go together", 0, 0, "/dev/null", 0, 0, 0, 0, 0, 0 },
		{ "client_key: cannot read", 0, 0, "/dev/null", "/nonexistent/k.pem", 0, 0, 0, 0, 0 },
		{ "pinned_public_key: cannot read", 0, 0, 0, 0, "/nonexistent/pin.der", 0, 0, 0, 0 },
		{ "http_username and http_password go together", 0, 0, 0, 0, 0, "u", 0, 0, 0 },
		{ "http_username must not contain ':'", 0, 0, 0, 0, 0, "svc:ops", "s3cr3t", 0, 0 },
		{ "http_username must not contain ':'", 0, 0, 0, 0, 0, ":", "s3cr3t", 0, 0 },
		{ "http_username contains a control character", 0, 0, 0, 0, 0, "svc\tops", "s3cr3t",
		  0, 0 },
		{ "http_password contains a control character", 0, 0, 0, 0, 0, "svc", "s3cr3t\x7f", 0,
		  0 },
		{ "http_password contains a control character", 0, 0, 0, 0, 0, "svc", "\x01", 0, 0 },
		{ "user_agent contains a control character", 0, 0, 0, 0, 0, 0, 0,
		  "ua\r\nX-Injected: 1", 0 },
		{ "user_agent contains a control character", 0, 0, 0, 0, 0, 0, 0, "ua\n", 0 },
		{ "user_agent contains a control character", 0, 0, 0, 0, 0, 0, 0, "ua\x01", 0 },
		{ "user_agent contains a control character", 0, 0, 0, 0, 0, 0, 0, "\x1f", 0 },
		{ "user_agent contains a control character", 0, 0, 0, 0, 0, 0, 0, "ua\x7f", 0 },
		{ "max_idle_connections must be at most 1024 (got 1025)", 0, 0, 0, 0, 0, 0, 0, 0,
		  1025 },
	};
	wms_curl_transport_options o = WMS_CURL_TRANSPORT_OPTIONS_INIT;
	wms_transport *t = (wms_transport *)&o; /* set to NULL on every refusal */
	wms_error err;
	size_t i;
	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		wms_curl_transport_options b = WMS_CURL_TRANSPORT_OPTIONS_INIT;
		b.ca_file = bad[i].ca_file;
		b.ca_path = bad[i].ca_path;
		b.client_cert = bad[i].cert;
		b.client_key = bad[i].key;
		b.pinned_public_key = bad[i].pin;
		b.http_username = bad[i].user;
		b.http_password = bad[i].pass;
		b.user_agent = bad[i].ua;
		b.max_idle_connections = bad[i].idle;
		assert_int_equal(wms_curl_transport_create(&t, &b, &err), WMS_ERR_INVALID_ARG);
		assert_null(t);
		assert_int_equal(err.delivery, WMS_DELIVERY_NOT_SENT);
		if (!strstr(err.message, bad[i].what))
			fail_msg("case %zu: \"%s\", expected \"%s\"", i, err.message, bad[i].what);
		assert_null(strstr(err.message, "s3cr3t"));
	}
	o.version = WMS_CURL_TRANSPORT_OPTIONS_VERSION + 1;
	assert_int_equal(wms_curl_transport_create(&t, &o, &err), WMS_ERR_INVALID_ARG);
	assert_non_null(strstr(err.message, "version 3"));
	o.version = 1; /* 0.2's layout */
	assert_int_equal(wms_curl_transport_create(&t, &o, &err), WMS_ERR_INVALID_ARG);
	assert_non_null(strstr(err.message, "version 1"));
	assert_int_equal(wms_curl_transport_create(NULL, NULL, &err), WMS_ERR_INVALID_ARG);
	assert_int_equal(wms_curl_transport_options_init(&o, WMS_CURL_TRANSPORT_OPTIONS_VERSION + 1),
			 WMS_ERR_INVALID_ARG);
	assert_int_equal(wms_curl_transport_options_init(&o, WMS_CURL_TRANSPORT_OPTIONS_VERSION),
			 WMS_OK);
	/* the bounds that pass: 1024 idle, a pin given inline, both halves of
	 * each pair; twice on one options struct */
	o.max_idle_connections = 1024;
	o.pinned_public_key = "sha256//AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=";
	o.http_username = "u~ser é"; /* any other byte: a space, UTF-8 */
	o.http_password = "p:q \x80"; /* a password may hold a colon */
	o.user_agent = "ua\t~ \x80 \x20"; /* a tab, the last visible byte, past DEL */
	o.client_cert = o.client_key = "/dev/null";
	for (i = 0; i < 2; i++) {
		assert_int_equal(wms_curl_transport_create(&t, &o, &err), WMS_OK);
		assert_non_null(t);
		t->free(t);
	}
	assert_int_equal(wms_curl_transport_create(&t, NULL, NULL), WMS_OK);
	t->free(t);
}

/* https:// to a server that speaks plain HTTP: the handshake fails. */
static void test_tls_handshake_failure(void **state)
{
	fx *f = *state;
	lb_script s = { 0 };
	char url[64];
	s.raw = 1;
	s.response = "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
	s.after = LB_CLOSE;
	start(f, &s);
	snprintf(url, sizeof(url), "https://127.0.0.1:%u/wms", (unsigned)lb_port(f->srv));
	f->req.url = url;
	/* libcurl's connect timeout covers the handshake, and loading the CA
	 * bundle before it takes seconds under valgrind on a busy machine (it
	 * once ran past 2 s there): time enough that only the handshake can
	 * fail. */
	f->req.connect_timeout_ms = 30000;
	f->req.timeout_ms = f->req.stall_timeout_ms = 60000;
	assert_failed(f, call(f), WMS_ERR_TLS, WMS_DELIVERY_NOT_SENT, CURLE_SSL_CONNECT_ERROR);
	assert_cause(f, WMS_CAUSE_TLS_HANDSHAKE);
	assert_int_equal(lb_requests(f->srv), 0);
}

static void test_tls_bad_ca_file(void **state)
{
	fx *f = *state;
	lb_script s = { 0 };
	char url[64], ca[64];
	s.raw = 1;
	s.after = LB_CLOSE;
	start(f, &s);
	snprintf(url, sizeof(url), "https://127.0.0.1:%u/wms", (unsigned)lb_port(f->srv));
	f->req.url = url;
	vanishing_ca(f, ca, sizeof(ca));
	assert_failed(f, call(f), WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT, CURLE_SSL_CACERT_BADFILE);
	assert_cause(f, WMS_CAUSE_LOCAL_FILE);
}

/* ---- failures after the request left ---------------------------------------------- */

static void test_never_answers(void **state)
{
	fx *f = *state;
	lb_script s = { 0 };
	s.after = LB_HOLD;
	start(f, &s);
	f->req.timeout_ms = 300;
	assert_failed(f, call(f), WMS_ERR_TIMEOUT, WMS_DELIVERY_UNKNOWN,
		      CURLE_OPERATION_TIMEDOUT);
	assert_cause(f, WMS_CAUSE_TIMEOUT);
	assert_true(f->elapsed_ms >= 250);
	assert_true(f->elapsed_ms <= 300 + slack_ms());
	assert_int_equal(lb_requests(f->srv), 1);
}

/* The server never reads: the body cannot all leave, so it provably was not
 * delivered. */
static void test_timeout_before_body_sent(void **state)
{
	fx *f = *state;
	lb_script s = { 0 };
	size_t big = 16u * 1024u * 1024u;
	char *body = malloc(big);
	assert_non_null(body);
	memset(body, 'x', big);
	s.no_read = 1;
	start(f, &s);
	f->req.body = body;
	f->req.body_len = big;
	f->req.timeout_ms = 500;
	assert_failed(f, call(f), WMS_ERR_TIMEOUT, WMS_DELIVERY_NOT_SENT,
		      CURLE_OPERATION_TIMEDOUT);
	assert_cause(f, WMS_CAUSE_TIMEOUT);
	assert_true(f->elapsed_ms <= 500 + slack_ms());
	f->req.body = request_11;
	free(body);
}

/* The whole reply at 1 byte every 500 ms: the header never completes, the
 * deadline ends it (the 5 s stall guard would come later). */
static void test_trickle(void **state)
{
	fx *f = *state;
	lb_script s = { 0 };
	f->reply = lb_http_response(200, "OK", CT_11, reply_ok);
	s.response = f->reply;
	s.trickle_ms = 500;
	start(f, &s);
	f->req.timeout_ms = 1500;
	f->req.stall_timeout_ms = 5000;
	assert_failed(f, call(f), WMS_ERR_TIMEOUT, WMS_DELIVERY_UNKNOWN,
		      CURLE_OPERATION_TIMEDOUT);
	assert_true(f->elapsed_ms >= 1400);
	assert_true(f->elapsed_ms <= 1500 + slack_ms());
}

/* Header at once, then the body at 1 byte every 500 ms: slow but moving, so
 * the 1 s stall guard must not fire; the deadline does. */
static void test_trickle_body_is_not_a_stall(void **state)
{
	fx *f = *state;
	lb_script s = { 0 };
	static const char head[] =
		"HTTP/1.1 200 OK\r\nContent-Type: " CT_11 "\r\nContent-Length: 40\r\n\r\n";
	static const char reply[] =
		"HTTP/1.1 200 OK\r\nContent-Type: " CT_11 "\r\nContent-Length: 40\r\n\r\n"
		"0123456789012345678901234567890123456789";
	s.response = reply;
	s.trickle_from = sizeof(head) - 1;
	s.trickle_ms = 500;
	start(f, &s);
	/* Wide enough for 4+ body bytes under valgrind too. */
	f->req.timeout_ms = 2500;
	f->req.stall_timeout_ms = 1000;
	assert_failed(f, call(f), WMS_ERR_TIMEOUT, WMS_DELIVERY_UNKNOWN,
		      CURLE_OPERATION_TIMEDOUT);
	assert_true(f->elapsed_ms >= 2400);
	assert_true(f->elapsed_ms <= 2500 + slack_ms());
	assert_int_equal(f->resp.status, 200);
	assert_true(f->resp.body_len >= 3);
}

/* Part of the body, then silence: the stall guard fires long before the deadline. */
static void test_stall_guard(void **state)
{
	fx *f = *state;
	lb_script s = { 0 };
	s.response = "HTTP/1.1 200 OK\r\nContent-Type: text/xml\r\nContent-Length: 1000\r\n\r\n"
		     "<?xml version=\"1.0\"?>";
	s.after = LB_HOLD;
	start(f, &s);
	f->req.timeout_ms = 10000;
	f->req.stall_timeout_ms = 1000;
	assert_failed(f, call(f), WMS_ERR_TIMEOUT, WMS_DELIVERY_UNKNOWN,
		      CURLE_ABORTED_BY_CALLBACK);
	assert_cause(f, WMS_CAUSE_STALL);
	assert_non_null(strstr(f->err.message, "stall"));
	assert_true(f->elapsed_ms >= 900);
	assert_true(f->elapsed_ms < (under_valgrind() ? 9000u : 4000u));
	assert_int_equal(f->resp.status, 200);
}

/* A status line and headers at 4 bytes a second, the whole reply in ~2.5 s:
 * a header line takes longer than the 1.5 s stall guard to arrive but bytes
 * keep coming, so that is no stall: the reply is read in full. */
static void test_trickled_header_line_is_not_a_stall(void **state)
{
	fx *f = *state;
	lb_script s = { 0 };
	static const char head[] = "HTTP/1.1 200 OK\r\nContent-Type: " CT_11 "\r\nX-Slow: ";
	static const char slow[] = "0123456789";
	static const char reply[] = "HTTP/1.1 200 OK\r\nContent-Type: " CT_11 "\r\nX-Slow: "
				    "0123456789\r\nContent-Length: 2\r\n\r\nok";
	s.response = reply;
	s.trickle_from = sizeof(head) - 1;
	s.trickle_until = sizeof(head) - 1 + sizeof(slow) - 1;
	s.trickle_ms = 250;
	start(f, &s);
	f->req.timeout_ms = 4000;
	f->req.stall_timeout_ms = 1500;
	if (call(f) != WMS_OK)
		fail_msg("%s curl %d after %lu ms: %s", wms_status_name(f->err.status),
			 f->err.curl_code, (unsigned long)f->elapsed_ms, f->err.message);
	assert_int_equal(f->resp.status, 200);
	assert_string_equal(f->resp.content_type, CT_11);
	assert_string_equal(f->resp.body, "ok");
	/* the silence between whole header lines was longer than the guard's */
	assert_true(f->elapsed_ms > f->req.stall_timeout_ms);
	assert_true(f->elapsed_ms <= 4000 + slack_ms());
}

/* The whole reply at 4 bytes a second, status line included: never complete
 * in time. Moving all along, so the deadline ends it (curl 28), not the
 * 1 s stall guard (curl 42, long before). */
static void test_trickled_headers_end_at_deadline(void **state)
{
	fx *f = *state;
	lb_script s = { 0 };
	f->reply = lb_http_response(200, "OK", CT_11, reply_ok);
	s.response = f->reply;
	s.trickle_ms = 250;
	start(f, &s);
	f->req.timeout_ms = 2500;
	f->req.stall_timeout_ms = 1000;
	assert_failed(f, call(f), WMS_ERR_TIMEOUT, WMS_DELIVERY_UNKNOWN,
		      CURLE_OPERATION_TIMEDOUT);
	assert_null(strstr(f->err.message, "stall"));
	assert_true(f->elapsed_ms >= 2400);
	assert_true(f->elapsed_ms <= 2500 + slack_ms());
}

/* A 200 reply with a Set-Cookie line of n bytes. */
static char *reply_with_long_header(size_t n)
{
	static const char pre[] = "HTTP/1.1 200 OK\r\nContent-Type: " CT_11 "\r\nSet-Cookie: a=";
	size_t body = strlen(reply_ok), size = sizeof(pre) + n + body + 64;
	char *r = malloc(size);
	int len;
	if (!r)
		return NULL;
	memcpy(r, pre, sizeof(pre) - 1);
	memset(r + sizeof(pre) - 1, 'a', n);
	len = snprintf(r + sizeof(pre) - 1 + n, size - (sizeof(pre) - 1 + n),
		       "\r\nContent-Length: %zu\r\n\r\n%s", body, reply_ok);
	if (len < 0) {
		free(r);
		return NULL;
	}
	return r;
}

/* A reply header line over libcurl's limit (CURL_MAX_HTTP_HEADER, 100 KB):
 * libcurl reports "out of memory" (27), but nothing ran out of memory. It is
 * a reply the transport cannot take, like any mid-reply failure: TRANSPORT,
 * UNKNOWN, and a failure for the client's breaker. */
static void test_header_line_over_limit(void **state)
{
	fx *f = *state;
	lb_script s = { 0 };
	wms_client_options o = WMS_CLIENT_OPTIONS_INIT;
	wms_client *c = NULL;
	wms_status_reply r;
	wms_error e;
	int i;

	f->reply = reply_with_long_header(200u * 1024u);
	assert_non_null(f->reply);
	s.response = f->reply;
	start(f, &s);
	assert_failed(f, call(f), WMS_ERR_TRANSPORT, WMS_DELIVERY_UNKNOWN, CURLE_OUT_OF_MEMORY);
	assert_cause(f, WMS_CAUSE_PROTOCOL);
	assert_non_null(strstr(f->err.message, "header line"));
	assert_int_equal(wms_error_outcome(&f->err), WMS_OUTCOME_FAILURE);
	assert_int_equal(lb_requests(f->srv), 1);

	/* through a client: each one counts, and the breaker opens at 2 */
	o.endpoint = lb_url(f->srv);
	o.timeout_ms = 5000;
	o.breaker_options.failure_threshold = 2;
	assert_int_equal(wms_client_new(&c, &o, &e), WMS_OK);
	for (i = 0; i < 2; i++) {
		assert_int_equal(wms_get_order_status(&r, c, "ORD-1001", &e), WMS_ERR_TRANSPORT);
		assert_int_equal(e.delivery, WMS_DELIVERY_UNKNOWN);
		assert_int_equal(e.curl_code, CURLE_OUT_OF_MEMORY);
	}
	assert_int_equal(wms_get_order_status(&r, c, "ORD-1001", &e), WMS_ERR_CIRCUIT_OPEN);
	assert_int_equal(lb_requests(f->srv), 3);
	wms_client_free(c);
}

static void test_reset_mid_reply(void **state)
{
	fx *f = *state;
	lb_script s = { 0 };
	s.response = "HTTP/1.1 200 OK\r\nContent-Type: text/xml\r\nContent-Length: 1000\r\n\r\n"
		     "<?xml version=\"1.0\"?><soap:Envelope";
	s.after = LB_RESET;
	start(f, &s);
	assert_failed(f, call(f), WMS_ERR_TRANSPORT, WMS_DELIVERY_UNKNOWN, CURLE_RECV_ERROR);
	assert_cause(f, WMS_CAUSE_RESET);
	assert_int_equal(f->err.http_status, 200);
}

static void test_content_length_longer_than_body(void **state)
{
	fx *f = *state;
	lb_script s = { 0 };
	s.response = "HTTP/1.1 200 OK\r\nContent-Type: text/xml\r\nContent-Length: 1000\r\n\r\n"
		     "<?xml version=\"1.0\"?><soap:Envelope";
	s.after = LB_CLOSE;
	start(f, &s);
	assert_failed(f, call(f), WMS_ERR_TRUNCATED, WMS_DELIVERY_UNKNOWN, CURLE_PARTIAL_FILE);
	assert_cause(f, WMS_CAUSE_RESET);
	assert_int_equal(f->resp.status, 200);
	assert_int_equal(f->err.http_status, 200);
}

static void test_reply_too_large(void **state)
{
	fx *f = *state;
	size_t n = 64 * 1024;
	char *big = malloc(n + 1);
	assert_non_null(big);
	memset(big, 'a', n);
	big[n] = '\0';
	start_reply(f, 200, "OK", CT_11, big);
	free(big);
	f->resp.max_body = 1024;
	assert_failed(f, call(f), WMS_ERR_TOO_LARGE, WMS_DELIVERY_UNKNOWN, CURLE_WRITE_ERROR);
	assert_cause(f, WMS_CAUSE_NONE);
	assert_int_equal(f->resp.overflow, 1);
	assert_true(f->resp.body_len <= 1024);
	assert_non_null(strstr(f->err.message, "1024"));

	/* A reply exactly at the limit is fine (and the pool recovered). */
	f->resp.max_body = n;
	assert_int_equal(call(f), WMS_OK);
	assert_int_equal(f->resp.body_len, n);
	assert_int_equal(f->resp.overflow, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_ok_200, setup, teardown),
		cmocka_unit_test_setup_teardown(test_slow_reply_inside_deadline, setup, teardown),
		cmocka_unit_test_setup_teardown(test_html_502_is_a_reply, setup, teardown),
		cmocka_unit_test_setup_teardown(test_soap_fault_500_is_a_reply, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_redirect_followed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_informational_responses, setup, teardown),
		cmocka_unit_test_setup_teardown(test_100_continue_then_reply, setup, teardown),
		cmocka_unit_test_setup_teardown(test_wire_soap11, setup, teardown),
		cmocka_unit_test_setup_teardown(test_wire_soap12, setup, teardown),
		cmocka_unit_test_setup_teardown(test_wire_correlation_and_basic, setup, teardown),
		cmocka_unit_test_setup_teardown(test_wire_empty_body, setup, teardown),
		cmocka_unit_test_setup_teardown(test_zero_timeouts, setup, teardown),
		cmocka_unit_test_setup_teardown(test_handle_follows_each_request, setup, teardown),
		cmocka_unit_test_setup_teardown(test_keepalive_reuse, setup, teardown),
		cmocka_unit_test_setup_teardown(test_idle_connection_closed_by_server, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_idle_timeout_between_calls, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unsolicited_408_then_close, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unsolicited_408_kept_open, setup, teardown),
		cmocka_unit_test_setup_teardown(test_client_unsolicited_408, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reused_connection_closed_not_resent, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_reused_connection_reset_not_resent, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_closed_without_reply, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fresh_connection_reset, setup, teardown),
		cmocka_unit_test_setup_teardown(test_closed_as_request_arrives, setup, teardown),
		cmocka_unit_test_setup_teardown(test_send_failed_resent_once, setup, teardown),
		cmocka_unit_test_setup_teardown(test_many_resends_on_one_handle, setup, teardown),
		cmocka_unit_test_setup_teardown(test_many_refused_on_one_handle, setup, teardown),
		cmocka_unit_test_setup_teardown(test_threads_share_one_transport, setup, teardown),
		cmocka_unit_test_setup_teardown(test_threads_beyond_idle_pool, setup, teardown),
		cmocka_unit_test_setup_teardown(test_idle_pool_size, setup, teardown),
		cmocka_unit_test_setup_teardown(test_connect_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_connect_timeout, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unresolvable_host, setup, teardown),
		cmocka_unit_test_setup_teardown(test_slow_dns_ends_at_deadline, setup, teardown),
		cmocka_unit_test_setup_teardown(test_credentials_not_in_message, setup, teardown),
		cmocka_unit_test_setup_teardown(test_short_credentials_leave_the_message_whole, setup,
						teardown),
		cmocka_unit_test(test_scrub_credentials),
		cmocka_unit_test_setup_teardown(test_retry_after_header, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unsupported_scheme, setup, teardown),
		cmocka_unit_test_setup_teardown(test_malformed_url, setup, teardown),
		cmocka_unit_test_setup_teardown(test_url_changes_on_one_handle, setup, teardown),
		cmocka_unit_test_setup_teardown(test_parsed_url_refused_at_transfer_is_not_nomem, setup, teardown),
		cmocka_unit_test_setup_teardown(test_invalid_arguments, setup, teardown),
		cmocka_unit_test(test_options_checked_when_made),
		cmocka_unit_test_setup_teardown(test_proxy_from_the_environment, setup,
						teardown_proxy_env),
		cmocka_unit_test_setup_teardown(test_tls_handshake_failure, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tls_bad_ca_file, setup, teardown),
		cmocka_unit_test_setup_teardown(test_never_answers, setup, teardown),
		cmocka_unit_test_setup_teardown(test_timeout_before_body_sent, setup, teardown),
		cmocka_unit_test_setup_teardown(test_trickle, setup, teardown),
		cmocka_unit_test_setup_teardown(test_trickle_body_is_not_a_stall, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_stall_guard, setup, teardown),
		cmocka_unit_test_setup_teardown(test_trickled_header_line_is_not_a_stall, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_trickled_headers_end_at_deadline, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_header_line_over_limit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reset_mid_reply, setup, teardown),
		cmocka_unit_test_setup_teardown(test_content_length_longer_than_body, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_reply_too_large, setup, teardown),
	};
	/* Loopback only: a proxy from the environment must not get in the way. */
	unsetenv("http_proxy");
	unsetenv("HTTP_PROXY");
	unsetenv("https_proxy");
	unsetenv("HTTPS_PROXY");
	unsetenv("all_proxy");
	unsetenv("ALL_PROXY");
	unsetenv("no_proxy");
	unsetenv("NO_PROXY");
	return cmocka_run_group_tests_name("transport_curl", tests, NULL, NULL);
}
