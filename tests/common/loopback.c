/* The transport tests' loopback HTTP server (see loopback.h). */
#include "loopback.h"
#include "acceptor.h"
#include "http_wire.h"

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
	char *response;
	char *unsolicited;
	acceptor acc;
	char url[64];
	pthread_mutex_t lock;
	unsigned accepted;
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

/* 1: fd readable; 0: time is up; -1: stopping, or an error. fd < 0 waits on
 * the stop pipe only; timeout_ms < 0 waits without limit. */
static int wait_readable(lb_server *s, int fd, int timeout_ms)
{
	return acceptor_wait(&s->acc, fd, POLLIN, timeout_ms);
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

static int send_all(int fd, const char *p, size_t len)
{
	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return 0;
		p += n;
		len -= (size_t)n;
	}
	return 1;
}

/* Read and discard until the peer closes or the server stops. */
static void hold(lb_server *s, int fd)
{
	char scratch[4096];
	while (wait_readable(s, fd, -1) == 1)
		if (recv(fd, scratch, sizeof(scratch), 0) <= 0)
			return;
}

int lb_header(const lb_request *r, const char *name, char *val, size_t size)
{
	return hw_header(r->head, name, val, size);
}

struct reader {
	lb_server *s;
	int fd;
};

static size_t read_some(void *ctx, char *dst, size_t room, int idle)
{
	struct reader *rd = ctx;
	ssize_t n;
	(void)idle; /* no limit either way: the test stops the server */
	if (wait_readable(rd->s, rd->fd, -1) != 1)
		return 0;
	n = recv(rd->fd, dst, room, 0);
	return n > 0 ? (size_t)n : 0;
}

/* Read one request into r; buf/len keep what was read past it.
 * 1: a request; 0: the peer closed, the server stops, or garbage. */
static int read_request(lb_server *s, int fd, char *buf, size_t *len, lb_request *r)
{
	struct reader rd = { s, fd };
	memset(r, 0, sizeof(*r));
	if (!hw_read_request(read_some, &rd, buf, MAX_HEAD, len, MAX_BODY, r->head,
			     sizeof(r->head), &r->body, &r->body_len))
		return 0;
	if (sscanf(r->head, "%15s %255s %15s", r->method, r->target, r->version) != 3) {
		free(r->body);
		r->body = NULL;
		return 0;
	}
	return 1;
}

/* Keep r as the last request; returns its number (1 for the first). */
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

/* Write the scripted answer; 0 if the peer went away or the server stops. */
static int answer(lb_server *s, int fd)
{
	size_t i, from = s->script.trickle_from, until = s->script.trickle_until;
	size_t len = s->script.response_len;
	if (!s->response)
		return 1;
	if (!s->script.trickle_ms)
		return send_all(fd, s->response, len);
	if (!until || until > len)
		until = len;
	if (from > until)
		from = until;
	if (from && !send_all(fd, s->response, from))
		return 0;
	for (i = from; i < until; i++) {
		if (i && !pause_ms(s, s->script.trickle_ms))
			return 0;
		if (!send_all(fd, s->response + i, 1))
			return 0;
	}
	return until == len || send_all(fd, s->response + until, len - until);
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
static int unsolicited(lb_server *s, int fd)
{
	int ok = pause_ms(s, s->script.unsolicited_ms) &&
		 send_all(fd, s->script.unsolicited, strlen(s->script.unsolicited));
	if (ok) {
		pthread_mutex_lock(&s->lock);
		s->unsolicited_sent = 1;
		pthread_mutex_unlock(&s->lock);
	}
	return ok && !s->script.unsolicited_close;
}

static void serve(void *ctx, int fd)
{
	lb_server *s = ctx;
	char *buf = malloc(MAX_HEAD + 1);
	size_t len = 0;
	unsigned nreq = 0, seq;
	lb_after after = LB_CLOSE;
	lb_request r;

	if (!buf)
		goto out;
	if (s->script.no_read) {
		/* Not even a read: the peer's sends back up once the buffers fill. */
		wait_readable(s, -1, -1);
		goto out;
	}
	if (s->script.raw) {
		if (wait_readable(s, fd, -1) == 1 && recv(fd, buf, MAX_HEAD, 0) > 0 &&
		    pause_ms(s, s->script.delay_ms) && answer(s, fd))
			after = s->script.after;
		goto out;
	}
	for (;;) {
		if (nreq && !len && s->script.idle_close_ms &&
		    wait_readable(s, fd, (int)s->script.idle_close_ms) != 1)
			break;
		if (nreq && !len && s->script.close_unread) {
			/* close() with unread data sends a reset */
			wait_readable(s, fd, -1);
			break;
		}
		if (!read_request(s, fd, buf, &len, &r))
			break;
		nreq++;
		seq = record(s, &r);
		if (s->script.drop_reused && nreq > 1) {
			after = s->script.drop_reset ? LB_RESET : LB_CLOSE;
			break;
		}
		if (!gate_wait(s, seq) || !pause_ms(s, s->script.delay_ms) || !answer(s, fd))
			break;
		if (s->script.unsolicited && unsolicited_turn(s) && !unsolicited(s, fd))
			break;
		if (s->script.after != LB_KEEP) {
			after = s->script.after;
			break;
		}
	}
out:
	if (after == LB_HOLD)
		hold(s, fd);
	if (after == LB_RESET) {
		struct linger lg;
		lg.l_onoff = 1;
		lg.l_linger = 0;
		setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	}
	close(fd);
	pthread_mutex_lock(&s->lock);
	s->closed++;
	pthread_mutex_unlock(&s->lock);
	free(buf);
}

/* A client that stops reading must not wedge the server: a blocked send()
 * does not see the stop pipe, so it gives up on its own. */
static int prepare(void *ctx, int fd)
{
	struct timeval tv;
	(void)ctx;
	tv.tv_sec = 5;
	tv.tv_usec = 0;
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	return 1;
}

/* Accepted is what accept() returned, served or not. */
static void admitted(void *ctx, int started)
{
	(void)started;
	((lb_server *)ctx)->accepted++;
}

lb_server *lb_start(const lb_script *script)
{
	acceptor_ops ops = { serve, prepare, admitted, NULL };
	lb_server *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->script = *script;
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
	if (pthread_mutex_init(&s->lock, NULL) != 0)
		goto fail;
	ops.lock = &s->lock;
	if (acceptor_start(&s->acc, &ops, s) != 0) {
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

void lb_stop(lb_server *s)
{
	if (!s)
		return;
	acceptor_stop(&s->acc);
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

unsigned lb_accepted(lb_server *s)
{
	unsigned n;
	pthread_mutex_lock(&s->lock);
	n = s->accepted;
	pthread_mutex_unlock(&s->lock);
	return n;
}

unsigned lb_requests(lb_server *s)
{
	unsigned n;
	pthread_mutex_lock(&s->lock);
	n = s->requests;
	pthread_mutex_unlock(&s->lock);
	return n;
}

unsigned lb_closed(lb_server *s)
{
	unsigned n;
	pthread_mutex_lock(&s->lock);
	n = s->closed;
	pthread_mutex_unlock(&s->lock);
	return n;
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
	unsigned n;
	pthread_mutex_lock(&s->lock);
	n = s->gate_missed;
	pthread_mutex_unlock(&s->lock);
	return n;
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

uint16_t lb_closed_port(void)
{
	struct sockaddr_in addr;
	socklen_t alen = sizeof(addr);
	uint16_t port = 0;
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0)
		return 0;
	memset(&addr, 0, sizeof(addr));
	addr.sin_family = AF_INET;
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(fd, (struct sockaddr *)&addr, sizeof(addr)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&addr, &alen) == 0)
		port = ntohs(addr.sin_port);
	close(fd);
	return port;
}

int lb_blackhole_open(lb_blackhole *b)
{
	struct sockaddr_in addr;
	socklen_t alen = sizeof(addr);
	b->listen_fd = socket(AF_INET, SOCK_STREAM, 0);
	b->parked_fd = socket(AF_INET, SOCK_STREAM, 0);
	b->port = 0;
	if (b->listen_fd < 0 || b->parked_fd < 0)
		goto fail;
	memset(&addr, 0, sizeof(addr));
	addr.sin_family = AF_INET;
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(b->listen_fd, (struct sockaddr *)&addr, sizeof(addr)) != 0 ||
	    listen(b->listen_fd, 0) != 0 ||
	    getsockname(b->listen_fd, (struct sockaddr *)&addr, &alen) != 0 ||
	    connect(b->parked_fd, (struct sockaddr *)&addr, sizeof(addr)) != 0)
		goto fail;
	b->port = ntohs(addr.sin_port);
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
