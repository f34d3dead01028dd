/* The TLS tests' HTTPS server (see tls_server.h): the loopback server
 * (loopback.c, its one serve loop) over OpenSSL, through loopback_io.h. */
#include "tls_server.h"
#include "loopback_io.h"
#include "http_wire.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

const char ts_submit_reply[] =
	"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
	"<soap:Envelope xmlns:soap=\"http://schemas.xmlsoap.org/soap/envelope/\" "
	"xmlns:wh=\"urn:libwms:warehouse:1\"><soap:Body><wh:SubmitOrderResponse>"
	"<wh:clientOrderId>ORD-TLS-1</wh:clientOrderId><wh:wmsReference>WMS-TLS-0001</wh:wmsReference>"
	"<wh:state>RECEIVED</wh:state><wh:duplicate>false</wh:duplicate>"
	"</wh:SubmitOrderResponse></soap:Body></soap:Envelope>\n";

static const char unauthorized_reply[] =
	"HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Basic realm=\"wms\"\r\n"
	"Content-Type: text/plain\r\nContent-Length: 13\r\n\r\nunauthorized\n";

_Static_assert(sizeof(((ts_request *)0)->head) == sizeof(((lb_request *)0)->head) &&
		       sizeof(((ts_request *)0)->peer_cn) == sizeof(((lb_request *)0)->peer_cn),
	       "ts_request holds an lb_request's head and peer_cn");

struct ts_server {
	lb_server *lb;              /* the server; what follows is TLS's */
	SSL_CTX *ctx;
	char *expect_auth;
	char url[64];
	pthread_mutex_t lock;       /* st's TLS counts */
	ts_stats st;                /* accepted, open and requests are lb's */
};

static int under_valgrind(void)
{
	const char *v = getenv("WMS_UNDER_VALGRIND");
	return v && *v && strcmp(v, "0") != 0;
}

/* Bound on each wait for the peer mid-handshake or mid-request, and on an
 * idle keep-alive connection: the thread never waits on a client for ever. */
static int io_timeout_ms(void)
{
	return under_valgrind() ? 60000 : 10000;
}

static int idle_timeout_ms(void)
{
	return under_valgrind() ? 300000 : 60000;
}

static void add(ts_server *s, size_t *counter, size_t n)
{
	pthread_mutex_lock(&s->lock);
	*counter += n;
	pthread_mutex_unlock(&s->lock);
}

static void bump(ts_server *s, unsigned *counter)
{
	pthread_mutex_lock(&s->lock);
	(*counter)++;
	pthread_mutex_unlock(&s->lock);
}

/* After an SSL call returned r <= 0: wait for what OpenSSL wants. 0 when the
 * call failed for good (or the wait did). */
static int ssl_wait(lb_conn *c, int r, int timeout_ms)
{
	switch (SSL_get_error(c->state, r)) {
	case SSL_ERROR_WANT_READ:
		return lb_wait(c->server, c->fd, POLLIN, timeout_ms) > 0;
	case SSL_ERROR_WANT_WRITE:
		return lb_wait(c->server, c->fd, POLLOUT, timeout_ms) > 0;
	default:
		return 0;
	}
}

/* Counts the client's Finished: whether the client got through its side of
 * the handshake (a pin mismatch is only found after that). */
static void on_msg(int write_p, int version, int content_type, const void *buf, size_t len,
		   SSL *ssl, void *arg)
{
	(void)version;
	(void)ssl;
	if (!write_p && content_type == SSL3_RT_HANDSHAKE && len > 0 &&
	    ((const unsigned char *)buf)[0] == SSL3_MT_FINISHED)
		bump(arg, &((ts_server *)arg)->st.client_finished);
}

/* Decrypted bytes, at most room; 0 on EOF, error, stop or timeout. Between
 * requests the connection may idle; mid-request it may not. */
static size_t tls_read(lb_conn *c, char *dst, size_t room, int idle)
{
	for (;;) {
		int r;
		ERR_clear_error();
		r = SSL_read(c->state, dst, room > 65536 ? 65536 : (int)room);
		if (r > 0) {
			add(c->ctx, &((ts_server *)c->ctx)->st.app_bytes, (size_t)r);
			return (size_t)r;
		}
		if (!ssl_wait(c, r, idle ? idle_timeout_ms() : io_timeout_ms()))
			return 0;
	}
}

static int tls_write(lb_conn *c, const char *p, size_t len)
{
	while (len) {
		int r;
		ERR_clear_error();
		r = SSL_write(c->state, p, len > 65536 ? 65536 : (int)len);
		if (r > 0) {
			p += r;
			len -= (size_t)r;
			continue;
		}
		if (!ssl_wait(c, r, io_timeout_ms()))
			return 0;
	}
	return 1;
}

/* Raw bytes that still arrive after a failed handshake, until the peer
 * closes: what the client sent although the server never accepted it. */
static void drain(lb_conn *c)
{
	char scratch[4096];
	while (lb_wait(c->server, c->fd, POLLIN, io_timeout_ms()) > 0) {
		ssize_t n = recv(c->fd, scratch, sizeof(scratch), 0);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			return;
		add(c->ctx, &((ts_server *)c->ctx)->st.bytes_after_failure, (size_t)n);
	}
}

/* The handshake; a failed one is counted and drained. */
static int tls_open(lb_conn *c)
{
	ts_server *s = c->ctx;
	SSL *ssl = SSL_new(s->ctx);
	int tried = ssl && SSL_set_fd(ssl, c->fd) == 1, ok = 0;

	c->state = ssl;
	if (tried) {
		for (;;) {
			int r;
			ERR_clear_error();
			r = SSL_accept(ssl);
			if (r == 1) {
				ok = 1;
				break;
			}
			if (!ssl_wait(c, r, io_timeout_ms()))
				break;
		}
	}
	if (!ok) {
		bump(s, &s->st.handshake_failures);
		if (tried)
			drain(c);
		SSL_free(ssl);
		ERR_clear_error();
		return 0;
	}
	if (SSL_session_reused(ssl))
		bump(s, &s->st.resumed);
	bump(s, &s->st.handshakes);
	return 1;
}

static void tls_close(lb_conn *c)
{
	ERR_clear_error();
	SSL_shutdown(c->state); /* close_notify, best effort: the peer may be gone */
	SSL_free(c->state);
	ERR_clear_error();
}

/* The peer's CN on the request; a 401 when its Authorization is not the
 * expected one. */
static const char *tls_reply(lb_conn *c, lb_request *r, size_t *len)
{
	ts_server *s = c->ctx;
	X509 *peer = SSL_get0_peer_certificate(c->state);
	char auth[512];

	if (peer && X509_NAME_get_text_by_NID(X509_get_subject_name(peer), NID_commonName,
					      r->peer_cn, sizeof(r->peer_cn)) < 0)
		r->peer_cn[0] = '\0';
	if (!s->expect_auth || (lb_header(r, "Authorization", auth, sizeof(auth)) == 1 &&
				strcmp(auth, s->expect_auth) == 0))
		return NULL;
	bump(s, &s->st.unauthorized);
	*len = sizeof(unauthorized_reply) - 1;
	return unauthorized_reply;
}

/* Every wait is a poll(): the socket must not block on its own. */
static int tls_prepare(void *ctx, int fd)
{
	(void)ctx;
	return fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) == 0;
}

static SSL_CTX *make_ctx(ts_server *s, const ts_options *o)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
	static const unsigned char sid_ctx[] = "libwms-tls-test";

	if (!ctx || !SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) ||
	    (o->tls12_only && !SSL_CTX_set_max_proto_version(ctx, TLS1_2_VERSION)) ||
	    SSL_CTX_use_certificate_chain_file(ctx, o->cert_file) != 1 ||
	    SSL_CTX_use_PrivateKey_file(ctx, o->key_file, SSL_FILETYPE_PEM) != 1 ||
	    SSL_CTX_check_private_key(ctx) != 1 ||
	    /* resumption with client verification needs a session id context */
	    SSL_CTX_set_session_id_context(ctx, sid_ctx, sizeof(sid_ctx) - 1) != 1)
		goto fail;
	if (o->client_ca_file) {
		STACK_OF(X509_NAME) *names = SSL_load_client_CA_file(o->client_ca_file);
		if (!names || SSL_CTX_load_verify_locations(ctx, o->client_ca_file, NULL) != 1) {
			sk_X509_NAME_pop_free(names, X509_NAME_free);
			goto fail;
		}
		SSL_CTX_set_client_CA_list(ctx, names);
		/* FAIL_IF_NO_PEER_CERT: a client without a certificate is refused
		 * in the handshake, not merely asked (what MHD would do). */
		SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
	}
	SSL_CTX_set_msg_callback(ctx, on_msg);
	SSL_CTX_set_msg_callback_arg(ctx, s);
	return ctx;
fail:
	{
		char e[256] = "";
		ERR_error_string_n(ERR_get_error(), e, sizeof(e));
		fprintf(stderr, "tls_server: cannot set up TLS with %s: %s\n", o->cert_file, e);
	}
	ERR_clear_error();
	SSL_CTX_free(ctx);
	return NULL;
}

ts_server *ts_start(const ts_options *o)
{
	static const lb_io io = { tls_prepare, tls_open, tls_read, tls_write, tls_close, tls_reply };
	lb_script script;
	ts_server *s = calloc(1, sizeof(*s));
	int have_lock = 0;
	char *reply = NULL;

	if (!s)
		return NULL;
	/* OpenSSL writes with write(2): a client that went away must not
	 * kill the test program. */
	signal(SIGPIPE, SIG_IGN);
	memset(&script, 0, sizeof(script));
	script.response = o->response;
	script.after = o->close_after_reply ? LB_CLOSE : LB_KEEP;
	if (!o->response) {
		size_t n = sizeof(ts_submit_reply) - 1;
		reply = malloc(n + 128);
		if (!reply)
			goto fail;
		snprintf(reply, n + 128,
			 "HTTP/1.1 200 OK\r\nContent-Type: text/xml; charset=utf-8\r\n%s"
			 "Content-Length: %zu\r\n\r\n%s",
			 o->close_after_reply ? "Connection: close\r\n" : "", n, ts_submit_reply);
		script.response = reply;
	}
	if (o->expect_authorization && !(s->expect_auth = strdup(o->expect_authorization)))
		goto fail;
	s->ctx = make_ctx(s, o);
	if (!s->ctx)
		goto fail;
	if (pthread_mutex_init(&s->lock, NULL) != 0)
		goto fail;
	have_lock = 1;
	s->lb = lb_start_io(&script, &io, s);
	if (!s->lb)
		goto fail;
	free(reply);
	snprintf(s->url, sizeof(s->url), "https://127.0.0.1:%u/wms", (unsigned)lb_port(s->lb));
	return s;
fail:
	fprintf(stderr, "tls_server: cannot start: %s\n", strerror(errno));
	if (have_lock)
		pthread_mutex_destroy(&s->lock);
	SSL_CTX_free(s->ctx);
	free(s->expect_auth);
	free(reply);
	free(s);
	return NULL;
}

void ts_stop(ts_server *s)
{
	if (!s)
		return;
	lb_stop(s->lb);
	pthread_mutex_destroy(&s->lock);
	SSL_CTX_free(s->ctx);
	free(s->expect_auth);
	free(s);
}

uint16_t ts_port(const ts_server *s)
{
	return lb_port(s->lb);
}

const char *ts_url(const ts_server *s)
{
	return s->url;
}

void ts_stats_get(ts_server *s, ts_stats *out)
{
	pthread_mutex_lock(&s->lock);
	*out = s->st;
	pthread_mutex_unlock(&s->lock);
	out->accepted = lb_accepted(s->lb);
	out->open = lb_open(s->lb);
	out->requests = lb_requests(s->lb);
}

int ts_settle(ts_server *s, unsigned accepted, unsigned open, unsigned timeout_ms)
{
	return lb_settle(s->lb, accepted, open, timeout_ms);
}

int ts_header(const ts_request *r, const char *name, char *val, size_t size)
{
	return hw_header(r->head, name, val, size);
}

int ts_last_request(ts_server *s, ts_request *out)
{
	lb_request r;
	memset(out, 0, sizeof(*out));
	if (!lb_last_request(s->lb, &r))
		return 0;
	memcpy(out->head, r.head, sizeof(out->head));
	memcpy(out->peer_cn, r.peer_cn, sizeof(out->peer_cn));
	out->body = r.body;
	out->body_len = r.body_len;
	return 1;
}

void ts_request_free(ts_request *r)
{
	if (r) {
		free(r->body);
		r->body = NULL;
	}
}

int ts_basic_authorization(char *out, size_t size, const char *user, const char *pw)
{
	char plain[128];
	unsigned char b64[256];
	int n = snprintf(plain, sizeof(plain), "%s:%s", user, pw);
	if (n <= 0 || (size_t)n >= sizeof(plain) ||
	    EVP_EncodeBlock(b64, (const unsigned char *)plain, n) <= 0)
		return -1;
	n = snprintf(out, size, "Basic %s", (const char *)b64);
	return n > 0 && (size_t)n < size ? 0 : -1;
}
