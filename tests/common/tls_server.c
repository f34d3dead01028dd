/* The TLS tests' HTTPS server (see tls_server.h). */
#include "tls_server.h"
#include "acceptor.h"
#include "http_wire.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#define MAX_HEAD 8192
#define MAX_BODY (4u * 1024u * 1024u)

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

struct ts_server {
	SSL_CTX *ctx;
	char *response;
	size_t response_len;
	char *expect_auth;
	int close_after;
	acceptor acc;
	char url[64];
	pthread_mutex_t lock;
	pthread_cond_t changed;    /* accepted or open moved (CLOCK_MONOTONIC) */
	ts_stats st;
	ts_request last;
	int have_last;
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

/* 1: fd ready for `events`; 0: time is up; -1: stopping, or an error. */
static int wait_fd(ts_server *s, int fd, short events, int timeout_ms)
{
	return acceptor_wait(&s->acc, fd, events, timeout_ms);
}

/* After an SSL call returned r <= 0: wait for what OpenSSL wants. 0 when the
 * call failed for good (or the wait did). */
static int ssl_wait(ts_server *s, SSL *ssl, int fd, int r, int timeout_ms)
{
	switch (SSL_get_error(ssl, r)) {
	case SSL_ERROR_WANT_READ:
		return wait_fd(s, fd, POLLIN, timeout_ms) > 0;
	case SSL_ERROR_WANT_WRITE:
		return wait_fd(s, fd, POLLOUT, timeout_ms) > 0;
	default:
		return 0;
	}
}

static void bump(ts_server *s, unsigned *counter)
{
	pthread_mutex_lock(&s->lock);
	(*counter)++;
	pthread_cond_broadcast(&s->changed);
	pthread_mutex_unlock(&s->lock);
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

/* Decrypted bytes, at most room; 0 on EOF, error, stop or timeout. */
static size_t ssl_read_some(ts_server *s, SSL *ssl, int fd, char *buf, size_t room,
			    int timeout_ms)
{
	for (;;) {
		int r;
		ERR_clear_error();
		r = SSL_read(ssl, buf, room > 65536 ? 65536 : (int)room);
		if (r > 0) {
			pthread_mutex_lock(&s->lock);
			s->st.app_bytes += (size_t)r;
			pthread_mutex_unlock(&s->lock);
			return (size_t)r;
		}
		if (!ssl_wait(s, ssl, fd, r, timeout_ms))
			return 0;
	}
}

static int ssl_write_all(ts_server *s, SSL *ssl, int fd, const char *p, size_t len)
{
	while (len) {
		int r;
		ERR_clear_error();
		r = SSL_write(ssl, p, len > 65536 ? 65536 : (int)len);
		if (r > 0) {
			p += r;
			len -= (size_t)r;
			continue;
		}
		if (!ssl_wait(s, ssl, fd, r, io_timeout_ms()))
			return 0;
	}
	return 1;
}

int ts_header(const ts_request *r, const char *name, char *val, size_t size)
{
	return hw_header(r->head, name, val, size);
}

struct reader {
	ts_server *s;
	SSL *ssl;
	int fd;
};

/* Between requests the connection may idle; mid-request it may not. */
static size_t read_some(void *ctx, char *dst, size_t room, int idle)
{
	struct reader *rd = ctx;
	return ssl_read_some(rd->s, rd->ssl, rd->fd, dst, room,
			     idle ? idle_timeout_ms() : io_timeout_ms());
}

/* One request into r; buf/len keep what was read past it. 1: a request; 0:
 * the peer closed, the server stops, a timeout, or garbage. */
static int read_request(ts_server *s, SSL *ssl, int fd, char *buf, size_t *len, ts_request *r)
{
	struct reader rd = { s, ssl, fd };
	memset(r, 0, sizeof(*r));
	return hw_read_request(read_some, &rd, buf, MAX_HEAD, len, MAX_BODY, r->head,
			       sizeof(r->head), &r->body, &r->body_len);
}

/* Raw bytes that still arrive after a failed handshake, until the peer
 * closes: what the client sent although the server never accepted it. */
static void drain(ts_server *s, int fd)
{
	char scratch[4096];
	while (wait_fd(s, fd, POLLIN, io_timeout_ms()) > 0) {
		ssize_t n = recv(fd, scratch, sizeof(scratch), 0);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			return;
		pthread_mutex_lock(&s->lock);
		s->st.bytes_after_failure += (size_t)n;
		pthread_mutex_unlock(&s->lock);
	}
}

static void serve(void *ctx, int fd)
{
	ts_server *s = ctx;
	char *buf = malloc(MAX_HEAD + 1), peer_cn[128] = "";
	SSL *ssl = SSL_new(s->ctx);
	size_t len = 0;
	int ok = 0;

	if (!buf || !ssl || SSL_set_fd(ssl, fd) != 1) {
		bump(s, &s->st.handshake_failures);
		goto out;
	}
	for (;;) {
		int r;
		ERR_clear_error();
		r = SSL_accept(ssl);
		if (r == 1) {
			ok = 1;
			break;
		}
		if (!ssl_wait(s, ssl, fd, r, io_timeout_ms()))
			break;
	}
	if (!ok) {
		bump(s, &s->st.handshake_failures);
		drain(s, fd);
		goto out;
	}
	{
		X509 *peer = SSL_get0_peer_certificate(ssl);
		if (peer && X509_NAME_get_text_by_NID(X509_get_subject_name(peer), NID_commonName,
						      peer_cn, sizeof(peer_cn)) < 0)
			peer_cn[0] = '\0';
	}
	if (SSL_session_reused(ssl))
		bump(s, &s->st.resumed);
	bump(s, &s->st.handshakes);
	for (;;) {
		ts_request r;
		char auth[512];
		int denied;
		if (!read_request(s, ssl, fd, buf, &len, &r))
			break;
		snprintf(r.peer_cn, sizeof(r.peer_cn), "%s", peer_cn);
		denied = s->expect_auth &&
			 (ts_header(&r, "Authorization", auth, sizeof(auth)) != 1 ||
			  strcmp(auth, s->expect_auth) != 0);
		/* Recorded before answering: once the client has the reply, the
		 * test may look. */
		pthread_mutex_lock(&s->lock);
		free(s->last.body);
		s->last = r;
		s->have_last = 1;
		s->st.requests++;
		if (denied)
			s->st.unauthorized++;
		pthread_mutex_unlock(&s->lock);
		if (!(denied ? ssl_write_all(s, ssl, fd, unauthorized_reply,
					     sizeof(unauthorized_reply) - 1)
			     : ssl_write_all(s, ssl, fd, s->response, s->response_len)) ||
		    s->close_after)
			break;
	}
	ERR_clear_error();
	SSL_shutdown(ssl); /* close_notify, best effort: the peer may be gone */
out:
	SSL_free(ssl);
	close(fd);
	free(buf);
	ERR_clear_error();
	pthread_mutex_lock(&s->lock);
	s->st.open--;
	pthread_cond_broadcast(&s->changed);
	pthread_mutex_unlock(&s->lock);
}

/* Every wait is a poll(): the socket must not block on its own. */
static int prepare(void *ctx, int fd)
{
	(void)ctx;
	return fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) == 0;
}

/* Only a connection being served counts: open goes down when it ends. */
static void admitted(void *ctx, int started)
{
	ts_server *s = ctx;
	if (!started)
		return;
	s->st.accepted++;
	s->st.open++;
	pthread_cond_broadcast(&s->changed);
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
	acceptor_ops ops = { serve, prepare, admitted, NULL };
	pthread_condattr_t ca;
	ts_server *s = calloc(1, sizeof(*s));
	int have_lock = 0;
	char *reply = NULL;

	if (!s)
		return NULL;
	/* OpenSSL writes with write(2): a client that went away must not
	 * kill the test program. */
	signal(SIGPIPE, SIG_IGN);
	s->close_after = o->close_after_reply;
	if (!o->response) {
		size_t n = sizeof(ts_submit_reply) - 1;
		reply = malloc(n + 128);
		if (!reply)
			goto fail;
		snprintf(reply, n + 128,
			 "HTTP/1.1 200 OK\r\nContent-Type: text/xml; charset=utf-8\r\n%s"
			 "Content-Length: %zu\r\n\r\n%s",
			 o->close_after_reply ? "Connection: close\r\n" : "", n, ts_submit_reply);
	}
	s->response = strdup(o->response ? o->response : reply);
	free(reply);
	if (!s->response || (o->expect_authorization &&
			     !(s->expect_auth = strdup(o->expect_authorization))))
		goto fail;
	s->response_len = strlen(s->response);
	s->ctx = make_ctx(s, o);
	if (!s->ctx)
		goto fail;
	if (pthread_mutex_init(&s->lock, NULL) != 0)
		goto fail;
	have_lock = 1;
	if (pthread_condattr_init(&ca) != 0)
		goto fail;
	if (pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) != 0 ||
	    pthread_cond_init(&s->changed, &ca) != 0) {
		pthread_condattr_destroy(&ca);
		goto fail;
	}
	pthread_condattr_destroy(&ca);
	have_lock = 2;
	ops.lock = &s->lock;
	if (acceptor_start(&s->acc, &ops, s) != 0)
		goto fail;
	snprintf(s->url, sizeof(s->url), "https://127.0.0.1:%u/wms", (unsigned)s->acc.port);
	return s;
fail:
	fprintf(stderr, "tls_server: cannot start: %s\n", strerror(errno));
	if (have_lock == 2)
		pthread_cond_destroy(&s->changed);
	if (have_lock)
		pthread_mutex_destroy(&s->lock);
	SSL_CTX_free(s->ctx);
	free(s->expect_auth);
	free(s->response);
	free(s);
	return NULL;
}

void ts_stop(ts_server *s)
{
	if (!s)
		return;
	acceptor_stop(&s->acc);
	pthread_cond_destroy(&s->changed);
	pthread_mutex_destroy(&s->lock);
	SSL_CTX_free(s->ctx);
	free(s->last.body);
	free(s->expect_auth);
	free(s->response);
	free(s);
}

uint16_t ts_port(const ts_server *s)
{
	return s->acc.port;
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
}

int ts_settle(ts_server *s, unsigned accepted, unsigned open, unsigned timeout_ms)
{
	struct timespec until;
	int done, rc = 0;
	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += (time_t)(timeout_ms / 1000u);
	until.tv_nsec += (long)(timeout_ms % 1000u) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&s->lock);
	while (!(done = s->st.accepted >= accepted && s->st.open <= open) && rc == 0)
		rc = pthread_cond_timedwait(&s->changed, &s->lock, &until);
	pthread_mutex_unlock(&s->lock);
	return done;
}

int ts_last_request(ts_server *s, ts_request *out)
{
	int have;
	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&s->lock);
	have = s->have_last;
	if (have) {
		*out = s->last;
		if (!(out->body = hw_dup(s->last.body, s->last.body_len)))
			have = 0;
	}
	pthread_mutex_unlock(&s->lock);
	return have;
}

void ts_request_free(ts_request *r)
{
	if (r) {
		free(r->body);
		r->body = NULL;
	}
}
