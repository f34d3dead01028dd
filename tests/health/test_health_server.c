/*
 * The embedded /health and /metrics endpoint over real HTTP (libcurl) on
 * 127.0.0.1, for clients on the fake transport (nothing reaches a WMS).
 * Every server a test starts, the test stops.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <cmocka.h>
#include <curl/curl.h>
#include "client_fx.h"
#include "health_server_int.h"
#include "wms/health_server.h"
#include "wms/call.h"
#include "soap/soap.h" /* wms__xml_doc_free */

/* ---- HTTP with libcurl ------------------------------------------------- */

typedef struct http_reply {
	long code;
	char ctype[128];
	char allow[64];
	char body[16384];
	size_t len;
} http_reply;

static size_t on_body(char *data, size_t size, size_t n, void *ctx)
{
	http_reply *r = ctx;
	size_t take = size * n;
	if (take > sizeof(r->body) - 1 - r->len)
		take = sizeof(r->body) - 1 - r->len;
	memcpy(r->body + r->len, data, take);
	r->len += take;
	r->body[r->len] = '\0';
	return size * n;
}

static size_t on_header(char *data, size_t size, size_t n, void *ctx)
{
	http_reply *r = ctx;
	size_t len = size * n;
	if (len > 6 && strncasecmp(data, "Allow:", 6) == 0) {
		size_t v = len - 6;
		while (v && (data[6 + v - 1] == '\r' || data[6 + v - 1] == '\n'))
			v--;
		snprintf(r->allow, sizeof(r->allow), "%.*s", (int)v, data + 6);
	}
	return len;
}

/* METHOD http://127.0.0.1:PORT/PATH, with `body` (NULL: none). */
static http_reply http(const char *method, uint16_t port, const char *path, const char *body)
{
	http_reply r;
	char url[128];
	char *ctype = NULL;
	CURL *h = curl_easy_init();

	memset(&r, 0, sizeof(r));
	assert_non_null(h);
	snprintf(url, sizeof(url), "http://127.0.0.1:%u%s", (unsigned)port, path);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_TIMEOUT, 60L);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &r);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, &r);
	if (strcmp(method, "HEAD") == 0)
		curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
	else
		curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
	if (body)
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
	assert_int_equal(curl_easy_perform(h), CURLE_OK);
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &r.code);
	curl_easy_getinfo(h, CURLINFO_CONTENT_TYPE, &ctype);
	if (ctype)
		snprintf(r.ctype, sizeof(r.ctype), "%s", ctype);
	curl_easy_cleanup(h);
	return r;
}

/* ---- raw sockets -------------------------------------------------------- */

static int tcp_connect(uint16_t port)
{
	struct sockaddr_in a;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_port = htons(port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	return fd;
}

/* A socket listening on 127.0.0.1 on a port the kernel picked. */
static int tcp_listen(uint16_t *port)
{
	struct sockaddr_in a;
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(fd, 4), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	*port = ntohs(a.sin_port);
	return fd;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { (time_t)(ms / 1000u), (long)(ms % 1000u) * 1000000L };
	nanosleep(&ts, NULL);
}

/* Until the server holds `n` connections (bounded: a minute, for valgrind). */
static void wait_connections(const wms_health_server *srv, unsigned n)
{
	int i;
	for (i = 0; i < 6000 && wms__health_server_connections(srv) != n; i++)
		sleep_ms(10);
	assert_int_equal(wms__health_server_connections(srv), n);
}

/* Read until the peer closes (or a minute passes); returns the bytes read. */
static size_t read_all(int fd, char *buf, size_t size)
{
	size_t len = 0;
	struct pollfd p = { fd, POLLIN, 0 };
	while (len < size - 1 && poll(&p, 1, 60000) == 1) {
		ssize_t n = recv(fd, buf + len, size - 1 - len, 0);
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	return len;
}

static const char get_health[] = "GET /health HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n";

/* ---- fixtures ---------------------------------------------------------- */

static wms_health_server *start(wms_client *const *clients, size_t n, const char *prefix)
{
	wms_health_server *srv = NULL;
	wms_error err;
	assert_int_equal(wms_health_server_start(&srv, clients, n, "127.0.0.1:0", prefix, &err),
			 WMS_OK);
	assert_non_null(srv);
	assert_int_not_equal(wms_health_server_port(srv), 0);
	return srv;
}

static fx client_named(const char *name, wms_breaker_scope scope)
{
	wms_client_options o = WMS_CLIENT_OPTIONS_INIT;
	o.breaker_options.open_duration_ms = 30000;
	o.breaker_options.name = name;
	o.breaker_scope = scope;
	return setup_client_with(&o);
}

/* A server for one client ("wms", one breaker), stopped by the teardown. */
typedef struct served {
	fx x;
	wms_health_server *srv;
	uint16_t port;
} served;

static int serve_one(void **state)
{
	served *s = test_calloc(1, sizeof(*s));
	s->x = client_named("wms", WMS_BREAKER_SCOPE_PER_CLIENT);
	s->srv = start(&s->x.c, 1, NULL);
	s->port = wms_health_server_port(s->srv);
	*state = s;
	return 0;
}

static int unserve(void **state)
{
	served *s = *state;
	wms_health_server_stop(s->srv);
	wms_client_free(s->x.c);
	test_free(s);
	return 0;
}

/* ---- the documents ----------------------------------------------------- */

static void health_of_a_closed_breaker(void **state)
{
	served *s = *state;
	http_reply r;

	r = http("GET", s->port, "/health", NULL);
	assert_int_equal(r.code, 200);
	assert_string_equal(r.ctype, "application/json");
	assert_non_null(strstr(r.body, "{\"status\":\"UP\",\"breakers\":[{\"name\":\"wms\","
				       "\"state\":\"CLOSED\""));
	/* HEAD: the same status and headers, no body */
	r = http("HEAD", s->port, "/health", NULL);
	assert_int_equal(r.code, 200);
	assert_string_equal(r.ctype, "application/json");
	assert_int_equal(r.len, 0);
}

static void open_breaker_is_down_503_and_metrics_show_it(void **state)
{
	served *s = *state;
	uint16_t port = s->port;
	http_reply r;

	r = http("GET", port, "/metrics", NULL);
	assert_int_equal(r.code, 200);
	assert_string_equal(r.ctype, "text/plain; version=0.0.4; charset=utf-8");
	assert_non_null(strstr(r.body, "fulfillment_circuit_breaker_state{breaker=\"wms\"} 0\n"));

	fx_refused_submits(&s->x, 5); /* the default threshold: open */
	r = http("GET", port, "/health", NULL);
	assert_int_equal(r.code, 503);
	assert_string_equal(r.ctype, "application/json");
	assert_non_null(strstr(r.body, "{\"status\":\"DOWN\""));
	assert_non_null(strstr(r.body, "\"state\":\"OPEN\",\"state_value\":1"));
	r = http("GET", port, "/metrics", NULL);
	assert_int_equal(r.code, 200);
	assert_non_null(strstr(r.body, "# TYPE fulfillment_circuit_breaker_state gauge\n"));
	assert_non_null(strstr(r.body, "fulfillment_circuit_breaker_state{breaker=\"wms\"} 1\n"));
	r = http("HEAD", port, "/health", NULL);
	assert_int_equal(r.code, 503);
	assert_int_equal(r.len, 0);

	wms_breaker_force_open(wms_client_breaker(s->x.c));
	r = http("GET", port, "/health", NULL);
	assert_int_equal(r.code, 503);
	assert_non_null(strstr(r.body, "\"state\":\"FORCED_OPEN\""));
	wms_breaker_force_closed(wms_client_breaker(s->x.c));
	r = http("GET", port, "/health", NULL);
	assert_int_equal(r.code, 200);
}

static void metric_prefix_is_the_callers(void **state)
{
	fx x = client_named("wms", WMS_BREAKER_SCOPE_PER_CLIENT);
	wms_health_server *srv = start(&x.c, 1, "shop");
	http_reply r;
	(void)state;

	wms_breaker_force_open(wms_client_breaker(x.c));
	r = http("GET", wms_health_server_port(srv), "/metrics", NULL);
	assert_int_equal(r.code, 200);
	assert_non_null(strstr(r.body, "shop_circuit_breaker_state{breaker=\"wms\"} 4\n"));
	assert_null(strstr(r.body, "fulfillment_"));
	wms_health_server_stop(srv);
	wms_client_free(x.c);
}

static void one_operation_open_is_degraded_200(void **state)
{
	fx x = client_named("wms", WMS_BREAKER_SCOPE_PER_OPERATION);
	wms_health_server *srv = start(&x.c, 1, NULL);
	http_reply r;
	(void)state;

	wms_breaker_force_open(wms_client_breaker_for(x.c, "SubmitOrder"));
	r = http("GET", wms_health_server_port(srv), "/health", NULL);
	assert_int_equal(r.code, 200);
	assert_non_null(strstr(r.body, "{\"status\":\"DEGRADED\""));
	assert_non_null(strstr(r.body, "\"name\":\"wms.SubmitOrder\",\"state\":\"FORCED_OPEN\""));
	assert_non_null(strstr(r.body, "\"name\":\"wms.GetStockLevel\",\"state\":\"CLOSED\""));
	wms_health_server_stop(srv);
	wms_client_free(x.c);
}

static void two_clients_in_one_document(void **state)
{
	fx a = client_named("east", WMS_BREAKER_SCOPE_PER_CLIENT);
	fx b = client_named("west", WMS_BREAKER_SCOPE_PER_OPERATION);
	wms_client *both[2];
	wms_health_server *srv;
	http_reply r;
	const char *east, *west;
	(void)state;

	both[0] = a.c;
	both[1] = b.c;
	srv = start(both, 2, NULL);
	wms_breaker_force_open(wms_client_breaker(a.c));
	r = http("GET", wms_health_server_port(srv), "/health", NULL);
	assert_int_equal(r.code, 200); /* one of five open: DEGRADED */
	assert_non_null(strstr(r.body, "{\"status\":\"DEGRADED\""));
	east = strstr(r.body, "\"name\":\"east\",\"state\":\"FORCED_OPEN\"");
	west = strstr(r.body, "\"name\":\"west.SubmitOrder\",\"state\":\"CLOSED\"");
	assert_non_null(east);
	assert_non_null(west);
	assert_true(east < west); /* in the order given */
	assert_null(strstr(r.body, "]}\n{")); /* one document, not two */
	r = http("GET", wms_health_server_port(srv), "/metrics", NULL);
	assert_non_null(strstr(r.body, "fulfillment_circuit_breaker_state{breaker=\"east\"} 4\n"));
	assert_non_null(strstr(r.body,
			       "fulfillment_circuit_breaker_state{breaker=\"west.CancelOrder\"} 0\n"));
	assert_int_equal(strstr(r.body, "# TYPE fulfillment_circuit_breaker_state gauge") -
				 r.body,
			 strstr(r.body, "# TYPE") - r.body); /* one header per metric */
	wms_health_server_stop(srv);
	wms_client_free(a.c);
	wms_client_free(b.c);
}

/* ---- what else is refused ---------------------------------------------- */

static void other_methods_paths_and_bodies_are_refused(void **state)
{
	served *s = *state;
	uint16_t port = s->port;
	http_reply r;

	r = http("POST", port, "/health", "x=1");
	assert_int_equal(r.code, 405);
	assert_string_equal(r.allow, " GET, HEAD");
	r = http("PUT", port, "/metrics", NULL);
	assert_int_equal(r.code, 405);
	assert_string_equal(r.allow, " GET, HEAD");
	r = http("DELETE", port, "/health", NULL);
	assert_int_equal(r.code, 405);
	r = http("GET", port, "/other", NULL);
	assert_int_equal(r.code, 404);
	r = http("GET", port, "/", NULL);
	assert_int_equal(r.code, 404);
	r = http("GET", port, "/health/", NULL);
	assert_int_equal(r.code, 404);
	r = http("POST", port, "/other", "x=1");
	assert_int_equal(r.code, 404);
	/* a GET that carries a body */
	r = http("GET", port, "/health", "{\"a\":1}");
	assert_int_equal(r.code, 400);
	/* and the server still answers */
	r = http("GET", port, "/health", NULL);
	assert_int_equal(r.code, 200);
}

/* ---- listen addresses -------------------------------------------------- */

static void bad_listen_strings_are_refused(void **state)
{
	static const struct {
		const char *listen, *why;
	} bad[] = {
		{ "", "empty" },
		{ "127.0.0.1", "no port" },
		{ "127.0.0.1:", "the port is not a number 0-65535" },
		{ "127.0.0.1:65536", "the port is not a number 0-65535" },
		{ "127.0.0.1:99999999999999999999", "the port is not a number 0-65535" },
		{ "127.0.0.1:http", "the port is not a number 0-65535" },
		{ "127.0.0.1:-1", "the port is not a number 0-65535" },
		{ "127.0.0.1:+80", "the port is not a number 0-65535" },
		{ "127.0.0.1: 80", "the port is not a number 0-65535" },
		{ "localhost:9464", "not an IPv4 address (no host names)" },
		{ "wms.example:9464", "not an IPv4 address (no host names)" },
		{ "127.1:9464", "not an IPv4 address (no host names)" },
		{ "256.0.0.1:9464", "not an IPv4 address (no host names)" },
		{ ":9464", "not an IPv4 address (no host names)" },
		{ "::1:9464", "an IPv6 address goes in brackets" },
		{ "[::1]", "an IPv6 address is [ADDRESS]:PORT" },
		{ "[::1]9464", "an IPv6 address is [ADDRESS]:PORT" },
		{ "[localhost]:9464", "not an IPv6 address" },
		{ "[]:9464", "not an IPv6 address" },
		{ "[127.0.0.1]:9464", "not an IPv6 address" },
	};
	fx x = client_named("wms", WMS_BREAKER_SCOPE_PER_CLIENT);
	size_t i;
	(void)state;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		wms_health_server *srv = (wms_health_server *)&x; /* must be reset to NULL */
		char want[160];
		wms_error err;
		assert_int_equal(wms_health_server_start(&srv, &x.c, 1, bad[i].listen, NULL, &err),
				 WMS_ERR_INVALID_ARG);
		assert_null(srv);
		snprintf(want, sizeof(want), "health server: listen address '%s': %s",
			 bad[i].listen, bad[i].why);
		if (strncmp(err.message, want, strlen(want)) != 0)
			fail_msg("'%s': got \"%s\", want \"%s...\"", bad[i].listen, err.message,
				 want);
		assert_int_equal(err.delivery, WMS_DELIVERY_NOT_SENT);
	}
	wms_client_free(x.c);
}

static void good_listen_strings_parse_at_the_bounds(void **state)
{
	static const struct {
		const char *listen;
		int family;
		unsigned port;
	} good[] = {
		{ "127.0.0.1:0", AF_INET, 0 },
		{ "127.0.0.1:65535", AF_INET, 65535 },
		{ "0.0.0.0:9464", AF_INET, 9464 },
		{ "10.1.2.3:00080", AF_INET, 80 },
		{ "[::1]:0", AF_INET6, 0 },
		{ "[::]:65535", AF_INET6, 65535 },
		{ "[fe80::1]:1", AF_INET6, 1 },
	};
	size_t i;
	(void)state;

	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		struct sockaddr_storage a;
		socklen_t len = 0;
		wms_error err;
		assert_int_equal(wms__health_listen_parse(&a, &len, good[i].listen, &err), WMS_OK);
		assert_int_equal(a.ss_family, good[i].family);
		if (good[i].family == AF_INET) {
			assert_int_equal(len, sizeof(struct sockaddr_in));
			assert_int_equal(ntohs(((struct sockaddr_in *)&a)->sin_port), good[i].port);
		} else {
			assert_int_equal(len, sizeof(struct sockaddr_in6));
			assert_int_equal(ntohs(((struct sockaddr_in6 *)&a)->sin6_port), good[i].port);
		}
	}
}

static void ipv6_loopback_serves(void **state)
{
	fx x = client_named("wms", WMS_BREAKER_SCOPE_PER_CLIENT);
	wms_health_server *srv = NULL;
	wms_error err;
	(void)state;

	/* a host without IPv6 cannot bind [::1]: then the message says so */
	if (wms_health_server_start(&srv, &x.c, 1, "[::1]:0", NULL, &err) != WMS_OK) {
		assert_non_null(strstr(err.message, "cannot listen on [::1]:0: "));
		wms_client_free(x.c);
		skip();
	}
	assert_int_not_equal(wms_health_server_port(srv), 0);
	wms_health_server_stop(srv);
	wms_client_free(x.c);
}

static void a_port_in_use_is_named(void **state)
{
	fx x = client_named("wms", WMS_BREAKER_SCOPE_PER_CLIENT);
	wms_health_server *srv = NULL;
	char where[64], want[128];
	uint16_t port;
	int holder = tcp_listen(&port);
	wms_error err;
	(void)state;

	snprintf(where, sizeof(where), "127.0.0.1:%u", (unsigned)port);
	assert_int_equal(wms_health_server_start(&srv, &x.c, 1, where, NULL, &err),
			 WMS_ERR_INVALID_ARG);
	assert_null(srv);
	snprintf(want, sizeof(want), "health server: cannot listen on %s: %s", where,
		 strerror(EADDRINUSE));
	assert_string_equal(err.message, want);
	close(holder);
	wms_client_free(x.c);
}

static void bad_arguments(void **state)
{
	fx x = client_named("wms", WMS_BREAKER_SCOPE_PER_CLIENT);
	wms_client *with_null[2];
	wms_health_server *srv = NULL;
	wms_error err;
	(void)state;

	assert_int_equal(wms_health_server_start(NULL, &x.c, 1, "127.0.0.1:0", NULL, &err),
			 WMS_ERR_INVALID_ARG);
	assert_int_equal(wms_health_server_start(&srv, NULL, 1, "127.0.0.1:0", NULL, &err),
			 WMS_ERR_INVALID_ARG);
	assert_string_equal(err.message, "health server: no clients to serve");
	assert_int_equal(wms_health_server_start(&srv, &x.c, 0, "127.0.0.1:0", NULL, &err),
			 WMS_ERR_INVALID_ARG);
	with_null[0] = x.c;
	with_null[1] = NULL;
	assert_int_equal(wms_health_server_start(&srv, with_null, 2, "127.0.0.1:0", NULL, &err),
			 WMS_ERR_INVALID_ARG);
	assert_string_equal(err.message, "health server: clients[1] is NULL");
	assert_int_equal(wms_health_server_start(&srv, &x.c, 1, "127.0.0.1:0", "9lives", &err),
			 WMS_ERR_INVALID_ARG);
	assert_non_null(strstr(err.message, "metric prefix '9lives'"));
	assert_null(srv);
	/* err may be NULL */
	assert_int_equal(wms_health_server_start(&srv, &x.c, 1, "nope", NULL, NULL),
			 WMS_ERR_INVALID_ARG);
	assert_int_equal(wms_health_server_port(NULL), 0);
	wms_client_free(x.c);
}

/* ---- lifetimes --------------------------------------------------------- */

static void stop_is_null_safe(void **state)
{
	(void)state;
	wms_health_server_stop(NULL);
}

static void start_stop_twice_on_one_port(void **state)
{
	fx x = client_named("wms", WMS_BREAKER_SCOPE_PER_CLIENT);
	wms_health_server *srv = start(&x.c, 1, NULL);
	uint16_t port = wms_health_server_port(srv);
	char where[64];
	wms_error err;
	(void)state;

	/* a connection served and closed leaves a TIME_WAIT on the port */
	assert_int_equal(http("GET", port, "/health", NULL).code, 200);
	wms_health_server_stop(srv);
	snprintf(where, sizeof(where), "127.0.0.1:%u", (unsigned)port);
	srv = NULL;
	assert_int_equal(wms_health_server_start(&srv, &x.c, 1, where, NULL, &err), WMS_OK);
	assert_int_equal(wms_health_server_port(srv), port);
	assert_int_equal(http("GET", port, "/health", NULL).code, 200);
	wms_health_server_stop(srv);
	wms_client_free(x.c);
}

/* ---- limits ------------------------------------------------------------ */

/* WMS_HEALTH_SERVER_MAX_CONNECTIONS silent connections are held; one more is
 * not served (MHD leaves it in the backlog) until one of them goes. */
static void connection_limit_both_sides(void **state)
{
	enum { LIMIT = WMS_HEALTH_SERVER_MAX_CONNECTIONS };
	fx x = client_named("wms", WMS_BREAKER_SCOPE_PER_CLIENT);
	wms_health_server *srv = NULL;
	int held[LIMIT], extra, i;
	struct pollfd p;
	char buf[4096];
	wms_error err;
	(void)state;

	/* the limit of the header; a timeout that cannot close them mid-test */
	assert_int_equal(wms__health_server_start_limits(&srv, &x.c, 1, "127.0.0.1:0", NULL,
							 LIMIT, 3600, &err),
			 WMS_OK);
	for (i = 0; i < LIMIT; i++)
		held[i] = tcp_connect(wms_health_server_port(srv));
	wait_connections(srv, LIMIT); /* all LIMIT accepted */
	extra = tcp_connect(wms_health_server_port(srv)); /* the kernel's backlog takes it */
	assert_int_equal(send(extra, get_health, strlen(get_health), MSG_NOSIGNAL),
			 (ssize_t)strlen(get_health));
	/* not answered, not closed, not counted while the others are held */
	p.fd = extra;
	p.events = POLLIN;
	p.revents = 0;
	assert_int_equal(poll(&p, 1, 300), 0);
	assert_int_equal(wms__health_server_connections(srv), LIMIT);
	/* one goes: the waiting one is served */
	close(held[0]);
	assert_true(read_all(extra, buf, sizeof(buf)) > 0);
	assert_memory_equal(buf, "HTTP/1.1 200 ", 13);
	assert_non_null(strstr(buf, "\"state\":\"CLOSED\""));
	close(extra);
	for (i = 1; i < LIMIT; i++)
		close(held[i]);
	wms_health_server_stop(srv);
	wms_client_free(x.c);
}

/* A connection that says nothing is closed after the timeout; one that asks
 * in time is answered (every other test). 1 s here, for speed. */
static void idle_connection_is_closed_after_the_timeout(void **state)
{
	fx x = client_named("wms", WMS_BREAKER_SCOPE_PER_CLIENT);
	wms_health_server *srv = NULL;
	char buf[64];
	wms_error err;
	int idle;
	(void)state;

	assert_int_equal(wms__health_server_start_limits(&srv, &x.c, 1, "127.0.0.1:0", NULL, 4, 1,
							 &err),
			 WMS_OK);
	idle = tcp_connect(wms_health_server_port(srv));
	wait_connections(srv, 1);
	/* closed by the server without a word: EOF (or a reset) */
	assert_true(read_all(idle, buf, sizeof(buf)) == 0);
	wait_connections(srv, 0);
	close(idle);
	assert_int_equal(http("GET", wms_health_server_port(srv), "/health", NULL).code, 200);
	wms_health_server_stop(srv);
	wms_client_free(x.c);
}

/* Stopping with connections open closes them and joins MHD's thread. */
static void stop_with_connections_open(void **state)
{
	fx x = client_named("wms", WMS_BREAKER_SCOPE_PER_CLIENT);
	wms_health_server *srv = start(&x.c, 1, NULL);
	char buf[64];
	int a, b;
	(void)state;

	a = tcp_connect(wms_health_server_port(srv));
	b = tcp_connect(wms_health_server_port(srv));
	assert_int_equal(send(b, "GET /hea", 8, MSG_NOSIGNAL), 8); /* half a request */
	wait_connections(srv, 2);
	wms_health_server_stop(srv);
	assert_int_equal(read_all(a, buf, sizeof(buf)), 0);
	assert_int_equal(read_all(b, buf, sizeof(buf)), 0);
	close(a);
	close(b);
	wms_client_free(x.c);
}

/* The served documents are rendered per request from the clients: a
 * bulkhead shows, and so does a generic operation's breaker made after
 * the server started. */
static void bulkheads_and_later_breakers_show(void **state)
{
	wms_client_options o = WMS_CLIENT_OPTIONS_INIT;
	wms_call_options op = WMS_CALL_OPTIONS_INIT;
	struct _xmlDoc *reply = NULL;
	wms_health_server *srv;
	wms_error err;
	http_reply r;
	fx x;
	(void)state;

	o.breaker_scope = WMS_BREAKER_SCOPE_PER_OPERATION;
	o.breaker_options.name = "wh";
	o.bulkhead.max_concurrent_calls = 7;
	x = setup_client_with(&o);
	srv = start(&x.c, 1, "shop");
	r = http("GET", wms_health_server_port(srv), "/health", NULL);
	assert_int_equal(r.code, 200);
	assert_non_null(strstr(r.body, "\"name\":\"wh.SubmitOrder\""));
	assert_non_null(strstr(r.body, "\"bulkhead\":{\"max_concurrent_calls\":7,"));
	assert_null(strstr(r.body, "wh.GetShipmentStatus"));
	x.t->next.status = 200;
	x.t->next.body = "<s:Envelope xmlns:s=\"http://schemas.xmlsoap.org/soap/envelope/\">"
			 "<s:Body><r/></s:Body></s:Envelope>";
	op.operation = "GetShipmentStatus";
	assert_int_equal(wms_call_bytes(&reply, x.c, &op, "<q/>", 4, &err), WMS_OK);
	wms__xml_doc_free(reply);
	r = http("GET", wms_health_server_port(srv), "/health", NULL);
	assert_non_null(strstr(r.body, "\"name\":\"wh.GetShipmentStatus\""));
	r = http("GET", wms_health_server_port(srv), "/metrics", NULL);
	assert_non_null(strstr(r.body, "shop_circuit_breaker_state{breaker=\"wh.GetShipmentStatus\"} 0"));
	assert_non_null(strstr(r.body, "shop_bulkhead_max_concurrent_calls{breaker=\"wh.SubmitOrder\"} 7"));
	assert_non_null(strstr(r.body, "shop_bulkhead_calls_total{breaker=\"wh.GetShipmentStatus\",kind=\"admitted\"} 1"));
	wms_health_server_stop(srv);
	wms_client_free(x.c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(health_of_a_closed_breaker, serve_one, unserve),
		cmocka_unit_test_setup_teardown(open_breaker_is_down_503_and_metrics_show_it, serve_one, unserve),
		cmocka_unit_test(metric_prefix_is_the_callers),
		cmocka_unit_test(one_operation_open_is_degraded_200),
		cmocka_unit_test(two_clients_in_one_document),
		cmocka_unit_test_setup_teardown(other_methods_paths_and_bodies_are_refused, serve_one, unserve),
		cmocka_unit_test(bad_listen_strings_are_refused),
		cmocka_unit_test(good_listen_strings_parse_at_the_bounds),
		cmocka_unit_test(ipv6_loopback_serves),
		cmocka_unit_test(a_port_in_use_is_named),
		cmocka_unit_test(bad_arguments),
		cmocka_unit_test(stop_is_null_safe),
		cmocka_unit_test(start_stop_twice_on_one_port),
		cmocka_unit_test(connection_limit_both_sides),
		cmocka_unit_test(idle_connection_is_closed_after_the_timeout),
		cmocka_unit_test(stop_with_connections_open),
		cmocka_unit_test(bulkheads_and_later_breakers_show),
	};
	int rc;
	curl_global_init(CURL_GLOBAL_DEFAULT);
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	curl_global_cleanup();
	return rc;
}
