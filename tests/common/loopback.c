/* The transport tests' loopback HTTP server (see loopback.h), and the one
 * serve loop of the test servers, over the I/O seam of loopback_io.h. */
#include "loopback.h"
#include "loopback_io.h"
#include "acceptor.h"
#include "http_wire.h"
#include "local_port.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define MAX_HEAD 8192
#define MAX_BODY (64u * 1024u * 1024u)

struct lb_server {
	lb_script script;
	lb_io io;
	void *io_ctx;
	char *response;
	char *unsolicited;
	acceptor acc;
	char url[64];
	pthread_mutex_t lock;
	pthread_cond_t changed; /* accepted or open moved (CLOCK_MONOTONIC) */
	unsigned accepted;
	unsigned open;
	unsigned requests;
	unsigned closed;
	int unsolicited_due;  /* the first answer has yet to be written */
	int unsolicited_sent;
	lb_request last;
	int have_last;
	/* lb_gate: requests numbered up to gate_end wait for request gate_end */
	unsigned gate_end;
	unsigned gate_timeout_ms;
	unsigned gate_missed;
};

uint64_t lb_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

int lb_wait(lb_server *s, int fd, short events, int timeout_ms)
{
	return acceptor_wait(&s->acc, fd, events, timeout_ms);
}

/* 1: fd readable; 0: time is up; -1: stopping, or an error. fd < 0 waits on
 * the stop pipe only; timeout_ms < 0 waits without limit. */
static int wait_readable(lb_server *s, int fd, int timeout_ms)
{
	return lb_wait(s, fd, POLLIN, timeout_ms);
}

static int stopping(lb_server *s)
{
	return wait_readable(s, -1, 0) < 0;
}

/* Sleep ms; 0 when the server is stopping. */
static int pause_ms(lb_server *s, unsigned ms)
{
	if (ms)
		wait_readable(s, -1, (int)ms);
	return !stopping(s);
}

/* The plain I/O: the socket as it is. */
static size_t plain_read(lb_conn *c, char *dst, size_t room, int idle)
{
	ssize_t n;
	(void)idle; /* no limit either way: the test stops the server */
	if (wait_readable(c->server, c->fd, -1) != 1)
		return 0;
	n = recv(c->fd, dst, room, 0);
	return n > 0 ? (size_t)n : 0;
}

static int plain_write(lb_conn *c, const char *p, size_t len)
{
	while (len) {
		ssize_t n = send(c->fd, p, len, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return 0;
		p += n;
		len -= (size_t)n;
	}
	return 1;
}

/* A client that stops reading must not wedge the server: a blocked send()
 * does not see the stop pipe, so it gives up on its own. */
static int plain_prepare(void *ctx, int fd)
{
	struct timeval tv;
	(void)ctx;
	tv.tv_sec = 5;
	tv.tv_usec = 0;
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	return 1;
}

const lb_io lb_plain_io = { plain_prepare, NULL, plain_read, plain_write, NULL, NULL };

/* Read and discard until the peer closes or the server stops. */
static void hold(lb_conn *c)
{
	char scratch[4096];
	while (c->server->io.read(c, scratch, sizeof(scratch), 1))
		;
}

int lb_header(const lb_request *r, const char *name, char *val, size_t size)
{
	return hw_header(r->head, name, val, size);
}

static size_t read_some(void *ctx, char *dst, size_t room, int idle)
{
	lb_conn *c = ctx;
	return c->server->io.read(c, dst, room, idle);
}

/* Read one request into r; buf/len keep what was read past it.
 * 1: a request; 0: the peer closed, the server stops, or garbage. */
static int read_request(lb_conn *c, char *buf, size_t *len, lb_request *r)
{
	memset(r, 0, sizeof(*r));
	if (!hw_read_request(read_some, c, buf, MAX_HEAD, len, MAX_BODY, r->head,
			     sizeof(r->head), &r->body, &r->body_len))
		return 0;
	if (sscanf(r->head, "%15s %255s %15s", r->method, r->target, r->version) != 3) {
		free(r->body);
		r->body = NULL;
		return 0;
	}
	return 1;
}

/* Keep r as the last request (before answering: once the client has the
 * reply, the test may look); returns its number (1 for the first). */
static unsigned record(lb_server *s, lb_request *r)
{
	unsigned n;
	pthread_mutex_lock(&s->lock);
	free(s->last.body);
	s->last = *r;
	s->have_last = 1;
	n = ++s->requests;
	pthread_mutex_unlock(&s->lock);
	r->body = NULL;
	return n;
}

/* Request number `seq` has been read: if a gate holds it, wait until the
 * gate's last request has arrived too, or its time is up (counted). 0 when
 * the server is stopping. */
static int gate_wait(lb_server *s, unsigned seq)
{
	uint64_t end;
	unsigned gate_end;
	pthread_mutex_lock(&s->lock);
	gate_end = s->gate_end;
	end = lb_now_ms() + s->gate_timeout_ms;
	pthread_mutex_unlock(&s->lock);
	if (seq > gate_end)
		return 1;
	for (;;) {
		unsigned have = lb_requests(s);
		if (have >= gate_end)
			return 1;
		if (lb_now_ms() >= end) {
			pthread_mutex_lock(&s->lock);
			s->gate_missed++;
			pthread_mutex_unlock(&s->lock);
			return 1;
		}
		if (!pause_ms(s, 1))
			return 0;
	}
}

/* Write the answer (NULL: none), trickled as scripted; 0 if the peer went
 * away or the server stops. */
static int answer(lb_conn *c, const char *p, size_t len)
{
	lb_server *s = c->server;
	size_t i, from = s->script.trickle_from, until = s->script.trickle_until;
	if (!p)
		return 1;
	if (!s->script.trickle_ms)
		return s->io.write(c, p, len);
	if (!until || until > len)
		until = len;
	if (from > until)
		from = until;
	if (from && !s->io.write(c, p, from))
		return 0;
	for (i = from; i < until; i++) {
		if (i && !pause_ms(s, s->script.trickle_ms))
			return 0;
		if (!s->io.write(c, p + i, 1))
			return 0;
	}
	return until == len || s->io.write(c, p + until, len - until);
}

/* Whether this connection is the one to write the unsolicited bytes on: the
 * first to have answered, once. */
static int unsolicited_turn(lb_server *s)
{
	int mine;
	pthread_mutex_lock(&s->lock);
	mine = s->unsolicited_due;
	s->unsolicited_due = 0;
	pthread_mutex_unlock(&s->lock);
	return mine;
}

/* Write the unsolicited bytes; 0 if the connection is to be closed now
 * (unsolicited_close, the peer went away, or the server stops). */
static int unsolicited(lb_conn *c)
{
	lb_server *s = c->server;
	int ok = pause_ms(s, s->script.unsolicited_ms) &&
		 s->io.write(c, s->script.unsolicited, strlen(s->script.unsolicited));
	if (ok) {
		pthread_mutex_lock(&s->lock);
		s->unsolicited_sent = 1;
		pthread_mutex_unlock(&s->lock);
	}
	return ok && !s->script.unsolicited_close;
}

/* Requests on an opened connection until one ends it; what happens then.
 * The idle and unread waits look at the socket itself: scripts for the
 * plain I/O only. */
static lb_after serve_requests(lb_conn *c, char *buf)
{
	lb_server *s = c->server;
	size_t len = 0;
	unsigned nreq = 0, seq;
	lb_request r;

	for (;;) {
		const char *reply = NULL;
		size_t reply_len = 0;
		if (nreq && !len && s->script.idle_close_ms &&
		    wait_readable(s, c->fd, (int)s->script.idle_close_ms) != 1)
			return LB_CLOSE;
		if (nreq && !len && s->script.close_unread) {
			/* close() with unread data sends a reset */
			wait_readable(s, c->fd, -1);
			return LB_CLOSE;
		}
		if (!read_request(c, buf, &len, &r))
			return LB_CLOSE;
		nreq++;
		if (s->io.reply)
			reply = s->io.reply(c, &r, &reply_len);
		if (!reply) {
			reply = s->response;
			reply_len = s->script.response_len;
		}
		seq = record(s, &r);
		if (s->script.drop_reused && nreq > 1)
			return s->script.drop_reset ? LB_RESET : LB_CLOSE;
		if (!gate_wait(s, seq) || !pause_ms(s, s->script.delay_ms) ||
		    !answer(c, reply, reply_len))
			return LB_CLOSE;
		if (s->script.unsolicited && unsolicited_turn(s) && !unsolicited(c))
			return LB_CLOSE;
		if (s->script.after != LB_KEEP)
			return s->script.after;
	}
}

static void serve(void *ctx, int fd)
{
	lb_server *s = ctx;
	lb_conn c = { s, fd, s->io_ctx, NULL };
	int opened = !s->io.open || s->io.open(&c);
	char *buf = opened ? malloc(MAX_HEAD + 1) : NULL;
	lb_after after = LB_CLOSE;

	if (!buf)
		goto out;
	if (s->script.no_read) {
		/* Not even a read: the peer's sends back up once the buffers fill. */
		wait_readable(s, -1, -1);
		goto out;
	}
	if (s->script.raw) {
		if (s->io.read(&c, buf, MAX_HEAD, 1) > 0 && pause_ms(s, s->script.delay_ms) &&
		    answer(&c, s->response, s->script.response_len))
			after = s->script.after;
		goto out;
	}
	after = serve_requests(&c, buf);
out:
	if (after == LB_HOLD)
		hold(&c);
	if (opened && s->io.close)
		s->io.close(&c);
	if (after == LB_RESET) {
		struct linger lg;
		lg.l_onoff = 1;
		lg.l_linger = 0;
		setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	}
	close(fd);
	pthread_mutex_lock(&s->lock);
	s->closed++;
	s->open--;
	pthread_cond_broadcast(&s->changed);
	pthread_mutex_unlock(&s->lock);
	free(buf);
}

static int prepare(void *ctx, int fd)
{
	lb_server *s = ctx;
	return s->io.prepare(s->io_ctx, fd);
}

/* Accepted is what accept() returned, served or not; open, being served. */
static void admitted(void *ctx, int started)
{
	lb_server *s = ctx;
	s->accepted++;
	if (started)
		s->open++;
	pthread_cond_broadcast(&s->changed);
}

static int init_sync(lb_server *s)
{
	pthread_condattr_t ca;
	int ok;
	if (pthread_mutex_init(&s->lock, NULL) != 0)
		return 0;
	if (pthread_condattr_init(&ca) != 0) {
		pthread_mutex_destroy(&s->lock);
		return 0;
	}
	ok = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) == 0 &&
	     pthread_cond_init(&s->changed, &ca) == 0;
	pthread_condattr_destroy(&ca);
	if (!ok)
		pthread_mutex_destroy(&s->lock);
	return ok;
}

lb_server *lb_start_io(const lb_script *script, const lb_io *io, void *io_ctx)
{
	acceptor_ops ops = { serve, prepare, admitted, NULL };
	lb_server *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->script = *script;
	s->io = *io;
	s->io_ctx = io_ctx;
	s->unsolicited_due = script->unsolicited != NULL;
	if (script->response) {
		if (!s->script.response_len)
			s->script.response_len = strlen(script->response);
		s->response = malloc(s->script.response_len + 1);
		if (!s->response)
			goto fail;
		memcpy(s->response, script->response, s->script.response_len);
		s->response[s->script.response_len] = '\0';
	}
	s->script.response = s->response;
	if (script->unsolicited && !(s->unsolicited = strdup(script->unsolicited)))
		goto fail;
	s->script.unsolicited = s->unsolicited;
	if (!init_sync(s))
		goto fail;
	ops.lock = &s->lock;
	if (acceptor_start(&s->acc, &ops, s) != 0) {
		pthread_cond_destroy(&s->changed);
		pthread_mutex_destroy(&s->lock);
		goto fail;
	}
	snprintf(s->url, sizeof(s->url), "http://127.0.0.1:%u/wms", (unsigned)s->acc.port);
	return s;
fail:
	free(s->unsolicited);
	free(s->response);
	free(s);
	return NULL;
}

lb_server *lb_start(const lb_script *script)
{
	return lb_start_io(script, &lb_plain_io, NULL);
}

void lb_stop(lb_server *s)
{
	if (!s)
		return;
	acceptor_stop(&s->acc);
	pthread_cond_destroy(&s->changed);
	pthread_mutex_destroy(&s->lock);
	free(s->last.body);
	free(s->unsolicited);
	free(s->response);
	free(s);
}

uint16_t lb_port(const lb_server *s)
{
	return s->acc.port;
}

const char *lb_url(const lb_server *s)
{
	return s->url;
}

/* One of the server's counts, read under its lock. */
static unsigned counter(lb_server *s, const unsigned *count)
{
	unsigned n;
	pthread_mutex_lock(&s->lock);
	n = *count;
	pthread_mutex_unlock(&s->lock);
	return n;
}

unsigned lb_accepted(lb_server *s)
{
	return counter(s, &s->accepted);
}

unsigned lb_requests(lb_server *s)
{
	return counter(s, &s->requests);
}

unsigned lb_closed(lb_server *s)
{
	return counter(s, &s->closed);
}

unsigned lb_open(lb_server *s)
{
	return counter(s, &s->open);
}

int lb_settle(lb_server *s, unsigned accepted, unsigned open, unsigned timeout_ms)
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
	while (!(done = s->accepted >= accepted && s->open <= open) && rc == 0)
		rc = pthread_cond_timedwait(&s->changed, &s->lock, &until);
	pthread_mutex_unlock(&s->lock);
	return done;
}

void lb_gate(lb_server *s, unsigned n, unsigned timeout_ms)
{
	pthread_mutex_lock(&s->lock);
	s->gate_end = s->requests + n;
	s->gate_timeout_ms = timeout_ms;
	pthread_mutex_unlock(&s->lock);
}

unsigned lb_gate_missed(lb_server *s)
{
	return counter(s, &s->gate_missed);
}

int lb_wait_unsolicited(lb_server *s, unsigned timeout_ms)
{
	uint64_t end = lb_now_ms() + timeout_ms;
	for (;;) {
		int sent;
		pthread_mutex_lock(&s->lock);
		sent = s->unsolicited_sent;
		pthread_mutex_unlock(&s->lock);
		if (sent)
			return 1;
		if (lb_now_ms() >= end)
			return 0;
		poll(NULL, 0, 1);
	}
}

int lb_wait_closed(lb_server *s, unsigned n, unsigned timeout_ms)
{
	uint64_t end = lb_now_ms() + timeout_ms;
	while (lb_closed(s) < n) {
		if (lb_now_ms() >= end)
			return 0;
		poll(NULL, 0, 1);
	}
	return 1;
}

int lb_last_request(lb_server *s, lb_request *out)
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

void lb_request_free(lb_request *r)
{
	if (r) {
		free(r->body);
		r->body = NULL;
	}
}

char *lb_http_response(int status, const char *reason, const char *content_type,
		       const char *body)
{
	size_t blen = strlen(body);
	size_t size = blen + (content_type ? strlen(content_type) : 0) + strlen(reason) + 128;
	char *s = malloc(size);
	if (!s)
		return NULL;
	snprintf(s, size, "HTTP/1.1 %d %s\r\n%s%s%sContent-Length: %zu\r\n\r\n%s", status,
		 reason, content_type ? "Content-Type: " : "", content_type ? content_type : "",
		 content_type ? "\r\n" : "", blen, body);
	return s;
}

int lb_connect(uint16_t port)
{
	return local_connect(port);
}

uint16_t lb_closed_port(void)
{
	return local_closed_port();
}

int lb_blackhole_open(lb_blackhole *b)
{
	uint16_t port = 0;
	b->parked_fd = -1;
	b->port = 0;
	/* the parked connection fills the backlog of 0 */
	if ((b->listen_fd = local_listen(&port, 0)) < 0 ||
	    (b->parked_fd = local_connect(port)) < 0)
		goto fail;
	b->port = port;
	return 0;
fail:
	lb_blackhole_close(b);
	return -1;
}

void lb_blackhole_close(lb_blackhole *b)
{
	if (b->parked_fd >= 0)
		close(b->parked_fd);
	if (b->listen_fd >= 0)
		close(b->listen_fd);
	b->parked_fd = b->listen_fd = -1;
}
