/*
 * wms-sim's answer to one request on its connection: replies from a buffer
 * or cut short, hangs, pauses, resets and garbage, scripted replies on the
 * wire (paced, hanging, or with a Content-Length lie written raw), and a
 * SOAP call from its headers to its logged outcome, faults included.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <sys/socket.h>
#include <sys/types.h>
#include "sim_http.h"

#define HANG_POLL_MS 20u

/* ---- connection helpers -------------------------------------------------- */

static int conn_fd(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	return ci ? (int)ci->connect_fd : -1;
}

/* Whether the client has closed its end (or the connection broke). */
static int peer_gone(int fd)
{
	struct pollfd p;
	char ch;
	ssize_t n;

	if (fd < 0)
		return 0;
	p.fd = fd;
	p.events = POLLIN;
	p.revents = 0;
	if (poll(&p, 1, 0) <= 0)
		return 0;
	if (p.revents & (POLLERR | POLLHUP | POLLNVAL))
		return 1;
	n = recv(fd, &ch, 1, MSG_PEEK);
	return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

/* Abort the TCP connection now: the peer sees a reset, not a FIN. On
 * Linux, connect(AF_UNSPEC) disconnects an established socket with an RST
 * (libmicrohttpd's own close would send a FIN first); SO_LINGER 0 makes the
 * final close abortive on other systems. */
static void reset_connection(int fd)
{
	struct linger lg;
	struct sockaddr sa;
	if (fd < 0)
		return;
	lg.l_onoff = 1;
	lg.l_linger = 0;
	setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	memset(&sa, 0, sizeof(sa));
	sa.sa_family = AF_UNSPEC;
	(void)connect(fd, &sa, sizeof(sa));
}

/* hang: until the client goes, or the listener closes. */
static void hang(wms_sim *s, int fd)
{
	pthread_mutex_lock(&s->lock);
	while (!s->closing && !s->stopping && !peer_gone(fd))
		wms_sim__wait_until(s, wms_sim__mono_ns() + HANG_POLL_MS * NS_PER_MS);
	pthread_mutex_unlock(&s->lock);
}

/* slow: 1 once ms have passed, 0 if the listener closes first. */
static int pause_ms(wms_sim *s, uint32_t ms)
{
	uint64_t until = wms_sim__mono_ns() + (uint64_t)ms * NS_PER_MS;
	int ok;
	pthread_mutex_lock(&s->lock);
	while (!s->closing && !s->stopping && wms_sim__mono_ns() < until)
		wms_sim__wait_until(s, until);
	ok = !s->closing && !s->stopping;
	pthread_mutex_unlock(&s->lock);
	return ok;
}

enum MHD_Result wms_sim__respond(struct MHD_Connection *c, unsigned status, const char *ctype,
				 const void *data, size_t len, const char *hname,
				 const char *hvalue)
{
	struct MHD_Response *r;
	enum MHD_Result ret;

	r = MHD_create_response_from_buffer(len, (void *)(uintptr_t)data, MHD_RESPMEM_MUST_COPY);
	if (!r)
		return MHD_NO;
	if (ctype)
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
	if (hname)
		MHD_add_response_header(r, hname, hvalue);
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

enum MHD_Result wms_sim__respond_text(struct MHD_Connection *c, unsigned status,
				      const char *text)
{
	char line[512];
	int n = snprintf(line, sizeof(line), "%s\n", text);
	return wms_sim__respond(c, status, "text/plain; charset=utf-8", line,
				n < 0 ? 0 : (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1,
				NULL, NULL);
}

/* A reply whose Content-Length promises `len` bytes of which `cut` are sent;
 * then either a FIN (truncated) or an RST (reset). */
typedef struct partial {
	char *data;
	size_t len;
	size_t cut;
	int reset;
	int fd;
} partial;

static ssize_t partial_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	partial *p = cls;
	if (pos < p->cut) {
		size_t n = p->cut - (size_t)pos;
		if (n > max)
			n = max;
		memcpy(buf, p->data + pos, n);
		return (ssize_t)n;
	}
	if (p->reset) {
		/* Let the first half reach the client before the reset does. */
		struct timespec ts = { 0, 10 * 1000000L };
		nanosleep(&ts, NULL);
		reset_connection(p->fd);
	}
	return MHD_CONTENT_READER_END_WITH_ERROR;
}

static void partial_free(void *cls)
{
	partial *p = cls;
	free(p->data);
	free(p);
}

static enum MHD_Result respond_partial(struct MHD_Connection *c, sim_reply *rp, int reset)
{
	struct MHD_Response *r;
	enum MHD_Result ret;
	partial *p = calloc(1, sizeof(*p));

	if (!p)
		return MHD_NO;
	p->data = rp->body;
	p->len = rp->len;
	p->cut = rp->len / 2 ? rp->len / 2 : 1;
	p->reset = reset;
	p->fd = conn_fd(c);
	rp->body = NULL;
	r = MHD_create_response_from_callback(p->len, 4096, partial_read, p, partial_free);
	if (!r) {
		partial_free(p);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, rp->content_type);
	ret = MHD_queue_response(c, rp->status, r);
	MHD_destroy_response(r);
	return ret;
}

static const char html_500[] =
	"<html>\r\n<head><title>500 Internal Server Error</title></head>\r\n<body>\r\n"
	"<center><h1>500 Internal Server Error</h1></center>\r\n"
	"<hr><center>wms-sim</center>\r\n</body>\r\n</html>\r\n";
static const char html_503[] =
	"<html>\r\n<head><title>503 Service Temporarily Unavailable</title></head>\r\n<body>\r\n"
	"<center><h1>503 Service Temporarily Unavailable</h1></center>\r\n"
	"<hr><center>wms-sim</center>\r\n</body>\r\n</html>\r\n";

/* Random bytes no XML parser accepts: never '<', and the first byte is
 * neither whitespace nor part of a byte-order mark. */
static enum MHD_Result respond_garbage(wms_sim *s, struct MHD_Connection *c, uint32_t n)
{
	unsigned char *b = malloc(n ? n : 1);
	uint64_t x;
	uint32_t i;
	enum MHD_Result ret;

	if (!b)
		return MHD_NO;
	pthread_mutex_lock(&s->lock);
	x = s->garbage_seed = s->garbage_seed * 6364136223846793005ull + 1442695040888963407ull;
	pthread_mutex_unlock(&s->lock);
	for (i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		b[i] = (unsigned char)(x >> 24);
		if (i == 0)
			b[i] = (unsigned char)(0x80 + b[i] % 0x6f); /* 0x80-0xee */
		else if (b[i] == '<' || b[i] == 0)
			b[i] = 0xb7;
	}
	ret = wms_sim__respond(c, 200, "text/xml; charset=utf-8", b, n, NULL, NULL);
	free(b);
	return ret;
}

/* ---- scripted replies on the wire ------------------------------------------ */

/* Wait ms, unless the sim stops or the peer goes first: 1 when the time passed. */
static int wait_ms_or_gone(wms_sim *s, int fd, uint32_t ms)
{
	uint64_t until = wms_sim__mono_ns() + (uint64_t)ms * NS_PER_MS;
	int ok;
	pthread_mutex_lock(&s->lock);
	for (;;) {
		uint64_t now = wms_sim__mono_ns(), step = now + HANG_POLL_MS * NS_PER_MS;
		if (s->closing || s->stopping || peer_gone(fd)) {
			ok = 0;
			break;
		}
		if (now >= until) {
			ok = 1;
			break;
		}
		wms_sim__wait_until(s, step < until ? step : until);
	}
	pthread_mutex_unlock(&s->lock);
	return ok;
}

/* Until the client sends something more (a next request) or goes away, or
 * the sim stops. */
static void await_input(wms_sim *s, int fd)
{
	pthread_mutex_lock(&s->lock);
	while (!s->closing && !s->stopping) {
		struct pollfd p;
		p.fd = fd;
		p.events = POLLIN;
		p.revents = 0;
		if (fd < 0 || poll(&p, 1, 0) != 0)
			break;
		wms_sim__wait_until(s, wms_sim__mono_ns() + HANG_POLL_MS * NS_PER_MS);
	}
	pthread_mutex_unlock(&s->lock);
}

/* Where a scripted body stops: its end, or where it hangs. */
static size_t body_stop(const wms_sim__script *sc, size_t len)
{
	return sc->hang && sc->hang_after < len ? (size_t)sc->hang_after : len;
}

/* A body libmicrohttpd sends through a callback: trickled and/or hanging. */
typedef struct paced {
	wms_sim *s;
	char *data;
	size_t len;
	size_t stop; /* hang here (== len: never) */
	uint32_t trickle_ms;
	int fd;
} paced;

static ssize_t paced_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	paced *p = cls;
	size_t n;
	if (pos >= p->stop) {
		if (p->stop < p->len)
			hang(p->s, p->fd);
		return MHD_CONTENT_READER_END_WITH_ERROR;
	}
	n = p->stop - (size_t)pos;
	if (p->trickle_ms) {
		if (!wait_ms_or_gone(p->s, p->fd, p->trickle_ms))
			return MHD_CONTENT_READER_END_WITH_ERROR;
		n = 1;
	}
	if (n > max)
		n = max;
	memcpy(buf, p->data + pos, n);
	return (ssize_t)n;
}

static void paced_free(void *cls)
{
	paced *p = cls;
	free(p->data);
	free(p);
}

/* Every byte out, waiting while the socket is full. 0, or -1 (gone, stopping). */
static int raw_send(wms_sim *s, int fd, const char *p, size_t n)
{
#ifdef MSG_NOSIGNAL
	const int flags = MSG_NOSIGNAL;
#else
	const int flags = 0;
#endif
	while (n) {
		ssize_t w = send(fd, p, n, flags);
		if (w > 0) {
			p += w;
			n -= (size_t)w;
			continue;
		}
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
			struct pollfd pf;
			int stop;
			pthread_mutex_lock(&s->lock);
			stop = s->closing || s->stopping;
			pthread_mutex_unlock(&s->lock);
			if (stop)
				return -1;
			pf.fd = fd;
			pf.events = POLLOUT;
			pf.revents = 0;
			(void)poll(&pf, 1, (int)HANG_POLL_MS);
			continue;
		}
		return -1;
	}
	return 0;
}

/* A Content-Length lie: libmicrohttpd always frames a reply honestly, so
 * the whole reply is written here, and the connection serves nothing more:
 * it is closed when the client sends anything else on it or goes away (or at
 * once with `close`). Unpaced, head and body leave in one write, as a server
 * sends a small reply. */
static enum MHD_Result serve_raw(wms_sim *s, int fd, const wms_sim__script *sc, unsigned status,
				 const char *ctype, const char *body, size_t len)
{
	const char *reason = MHD_get_reason_phrase_for(status);
	char head[MAX_CONTENT_TYPE + 160], *out;
	size_t pos, stop = body_stop(sc, len), first;
	int n = snprintf(head, sizeof(head), "HTTP/1.1 %u %s\r\n%s%s%sContent-Length: %" PRIu64
			 "\r\n\r\n",
			 status, reason && *reason ? reason : "Unknown", ctype ? "Content-Type: " : "",
			 ctype ? ctype : "", ctype ? "\r\n" : "", sc->content_length);

	if (n < 0 || (size_t)n >= sizeof(head))
		return MHD_NO;
	first = sc->trickle_ms ? 0 : stop;
	out = malloc((size_t)n + first + 1);
	if (!out)
		return MHD_NO;
	memcpy(out, head, (size_t)n);
	if (first)
		memcpy(out + n, body, first);
	if (raw_send(s, fd, out, (size_t)n + first) != 0) {
		free(out);
		return MHD_NO;
	}
	free(out);
	pos = first;
	while (pos < stop) {
		if (!wait_ms_or_gone(s, fd, sc->trickle_ms) || raw_send(s, fd, body + pos, 1) != 0)
			return MHD_NO;
		pos++;
	}
	/* Silent until the client speaks again or goes, unless told to close now. */
	if (!sc->close || stop < len)
		await_input(s, fd);
	return MHD_NO; /* libmicrohttpd closes the connection */
}

/* ---- SOAP ------------------------------------------------------------------ */

/* The operation an action URI names; *present says whether there was one. */
static sim_op action_op(const char *value, size_t len)
{
	static const char base[] = SIM_ACTION_BASE;
	if (len > sizeof(base) - 1 && memcmp(value, base, sizeof(base) - 1) == 0)
		return wms_sim__op_from_name(value + sizeof(base) - 1, len - (sizeof(base) - 1));
	return SIM_OP_NONE;
}

/* SOAPAction (1.1) or the action parameter of the Content-Type (1.2),
 * unquoted, into out. 0 if absent. */
static int find_action(struct MHD_Connection *c, int soap12, const char *ctype, char *out,
		       size_t size)
{
	const char *v = NULL, *p;
	size_t len = 0;

	if (!soap12) {
		v = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "SOAPAction");
		if (!v)
			return 0;
		while (*v == ' ' || *v == '\t')
			v++;
		len = strlen(v);
		while (len && (v[len - 1] == ' ' || v[len - 1] == '\t'))
			len--;
	} else {
		for (p = ctype ? strchr(ctype, ';') : NULL; p; p = strchr(p + 1, ';')) {
			const char *k = p + 1;
			while (*k == ' ' || *k == '\t')
				k++;
			if (strncasecmp(k, "action", 6) != 0)
				continue;
			k += 6;
			while (*k == ' ' || *k == '\t')
				k++;
			if (*k != '=')
				continue;
			v = k + 1;
			while (*v == ' ' || *v == '\t')
				v++;
			len = *v == '"' ? strcspn(v + 1, "\"") + 2 : strcspn(v, "; \t");
			break;
		}
		if (!v)
			return 0;
	}
	if (len >= 2 && v[0] == '"' && v[len - 1] == '"') {
		v++;
		len -= 2;
	}
	if (len >= size)
		len = size - 1;
	memcpy(out, v, len);
	out[len] = '\0';
	return 1;
}

static int client_fault(sim_reply *out, int soap12, const char *fmt, ...)
#if defined(__GNUC__)
	__attribute__((format(printf, 3, 4)))
#endif
	;

static int client_fault(sim_reply *out, int soap12, const char *fmt, ...)
{
	char msg[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return wms_sim__reply_fault(out, soap12, 0, "INVALID_REQUEST", msg, 0);
}

/* Everything a real WMS checks, then the operation itself. 0 or -1 (ENOMEM). */
static int process(wms_sim *s, const sim_request *rq, int has_action, const char *action,
		   const char *ctype, sim_reply *out)
{
	sim_op aop = has_action ? action_op(action, strlen(action)) : SIM_OP_NONE;
	char msg[256];
	const char *want_ct = rq->soap12 ? "application/soap+xml" : "text/xml";
	const char *ct = ctype ? ctype : "";

	while (*ct == ' ' || *ct == '\t')
		ct++;
	if (rq->error[0])
		return client_fault(out, rq->soap12, "%s", rq->error);
	if (!ctype)
		return client_fault(out, rq->soap12, "the Content-Type header is missing");
	if (strncasecmp(ct, want_ct, strlen(want_ct)) != 0 ||
	    (ct[strlen(want_ct)] && ct[strlen(want_ct)] != ';' && ct[strlen(want_ct)] != ' '))
		return client_fault(out, rq->soap12, "a SOAP %s envelope needs Content-Type %s (got %.60s)",
				    rq->soap12 ? "1.2" : "1.1", want_ct, ct);
	if (!rq->soap12 && !has_action)
		return client_fault(out, 0, "the SOAPAction header is missing");
	if (has_action && action[0] && aop == SIM_OP_NONE)
		return client_fault(out, rq->soap12, "unknown SOAP action '%.100s'", action);
	if (aop != SIM_OP_NONE && aop != rq->op)
		return client_fault(out, rq->soap12, "the SOAP action names %s but the Body carries %s",
				    wms_sim__op_name(aop), wms_sim__op_name(rq->op));
	if (wms_sim__request_validate(s->schema, rq, msg, sizeof(msg)) != 0)
		return client_fault(out, rq->soap12, "%s", msg);
	return wms_sim__request_perform(rq, s->store, wms_sim__now(s), out);
}

static void log_request(wms_sim *s, sim_op op, int soap12, const char *outcome,
			wms_sim_fault fault, uint64_t t0)
{
	if (!s->log)
		return;
	pthread_mutex_lock(&s->log_lock);
	fprintf(s->log, "wms-sim: %s (SOAP %s) -> %s%s%s (%.2f ms)\n",
		op == SIM_OP_NONE ? "?" : wms_sim__op_name(op), soap12 ? "1.2" : "1.1", outcome,
		fault != WMS_SIM_FAULT_NONE ? ", fault " : "",
		fault != WMS_SIM_FAULT_NONE ? wms_sim_fault_name(fault) : "",
		(double)(wms_sim__mono_ns() - t0) / 1e6);
	fflush(s->log);
	pthread_mutex_unlock(&s->log_lock);
}

/* Answer with a scripted reply: its bytes, or the real answer reshaped. */
static enum MHD_Result serve_script(wms_sim *s, struct MHD_Connection *c, wms_sim__req_ctx *r,
				    const wms_sim__script *sc, const sim_request *rq,
				    int has_action, const char *action, const char *ctype,
				    char *outcome, size_t outcome_size)
{
	static const char soap11_type[] = "text/xml; charset=utf-8";
	static const char soap12_type[] = "application/soap+xml; charset=utf-8";
	struct MHD_Response *resp;
	sim_reply real;
	const char *ct;
	char *data = NULL;
	size_t len;
	unsigned status;
	int fd = conn_fd(c);
	enum MHD_Result ret = MHD_NO;

	memset(&real, 0, sizeof(real));
	if ((!sc->body || sc->perform) && process(s, rq, has_action, action, ctype, &real) != 0)
		goto done;
	if (sc->body) {
		status = sc->status ? sc->status : 200;
		ct = rq->soap12 ? soap12_type : soap11_type;
		len = sc->body_len;
		data = malloc(len ? len : 1);
		if (!data)
			goto done;
		memcpy(data, sc->body, len);
	} else {
		status = sc->status ? sc->status : real.status;
		ct = real.content_type;
		len = real.len;
		data = real.body;
		real.body = NULL;
		if (!data && !(data = malloc(1)))
			goto done;
	}
	if (sc->content_type)
		ct = sc->content_type;
	else if (sc->no_content_type)
		ct = NULL;

	snprintf(outcome, outcome_size, "scripted %u%s%s%s%s", status, sc->lie_length ? " lie" : "",
		 sc->hang ? " hang" : "", sc->trickle_ms ? " trickle" : "", sc->close ? " close" : "");
	if (sc->lie_length) {
		ret = serve_raw(s, fd, sc, status, ct, data, len);
		goto done;
	}
	if (sc->trickle_ms || body_stop(sc, len) < len) {
		paced *p = calloc(1, sizeof(*p));
		if (!p)
			goto done;
		p->s = s;
		p->data = data;
		p->len = len;
		p->stop = body_stop(sc, len);
		p->trickle_ms = sc->trickle_ms;
		p->fd = fd;
		data = NULL;
		resp = MHD_create_response_from_callback(len, 4096, paced_read, p, paced_free);
		if (!resp) {
			paced_free(p);
			goto done;
		}
	} else {
		resp = MHD_create_response_from_buffer(len, data, MHD_RESPMEM_MUST_COPY);
		if (!resp)
			goto done;
	}
	if (ct)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, ct);
	ret = MHD_queue_response(c, status, resp);
	MHD_destroy_response(resp);
	if (ret == MHD_YES && sc->close) {
		r->close_after = 1;
		r->fd = fd;
	}
done:
	free(data);
	wms_sim__reply_free(&real);
	return ret;
}

enum MHD_Result wms_sim__serve_soap(wms_sim *s, struct MHD_Connection *c, wms_sim__req_ctx *r)
{
	const char *ctype = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
	sim_request rq;
	sim_reply rp;
	char action[160], outcome[64];
	int has_action;
	sim_op op;
	wms_sim_fault fault;
	uint32_t param;
	uint64_t t0 = wms_sim__mono_ns();
	wms_sim__script *sc = NULL;
	enum MHD_Result ret = MHD_NO;

	memset(&rp, 0, sizeof(rp));
	if (r->too_large) {
		pthread_mutex_lock(&s->lock);
		s->requests_total++;
		pthread_mutex_unlock(&s->lock);
		log_request(s, SIM_OP_NONE, 0, "413", WMS_SIM_FAULT_NONE, t0);
		return wms_sim__respond_text(c, 413, "request body larger than 8 MiB");
	}
	wms_sim__request_parse(&rq, r->body.data ? r->body.data : "", r->body.len, ctype);
	has_action = find_action(c, rq.soap12, ctype, action, sizeof(action));
	op = has_action ? action_op(action, strlen(action)) : SIM_OP_NONE;
	if (op == SIM_OP_NONE)
		op = rq.op;

	pthread_mutex_lock(&s->lock);
	s->requests_total++;
	if (op != SIM_OP_NONE)
		s->requests_op[op]++;
	fault = wms_sim__take_fault(s, op, wms_sim__mono_ns(), &param);
	if (fault == WMS_SIM_FAULT_NONE)
		sc = wms_sim__take_script(s, op);
	pthread_mutex_unlock(&s->lock);

	snprintf(outcome, sizeof(outcome), "%s", "closed");
	if (sc) {
		ret = serve_script(s, c, r, sc, &rq, has_action, action, ctype, outcome,
				   sizeof(outcome));
		goto done;
	}
	switch (fault) {
	case WMS_SIM_FAULT_HANG:
		hang(s, conn_fd(c));
		goto done; /* MHD_NO: close without a word */
	case WMS_SIM_FAULT_REFUSE:
		/* The listener is about to close: this one slipped in. */
		reset_connection(conn_fd(c));
		goto done;
	case WMS_SIM_FAULT_HTTP_500:
		ret = wms_sim__respond(c, 500, "text/html", html_500, sizeof(html_500) - 1, NULL,
				       NULL);
		snprintf(outcome, sizeof(outcome), "500");
		goto done;
	case WMS_SIM_FAULT_HTTP_503:
		ret = wms_sim__respond(c, 503, "text/html", html_503, sizeof(html_503) - 1,
				       "Retry-After", "1");
		snprintf(outcome, sizeof(outcome), "503");
		goto done;
	case WMS_SIM_FAULT_SERVER:
		if (wms_sim__reply_fault(&rp, rq.soap12, 1, "INTERNAL",
					 "injected server fault (wms-sim)", 1) != 0)
			goto done;
		break;
	case WMS_SIM_FAULT_CLIENT:
		if (wms_sim__reply_fault(&rp, rq.soap12, 0, "INVALID_REQUEST",
					 "injected client fault (wms-sim)", 0) != 0)
			goto done;
		break;
	case WMS_SIM_FAULT_GARBAGE:
		ret = respond_garbage(s, c, param);
		snprintf(outcome, sizeof(outcome), "200 garbage");
		goto done;
	case WMS_SIM_FAULT_SLOW:
		if (!pause_ms(s, param))
			goto done;
		/* fall through */
	case WMS_SIM_FAULT_NONE:
	case WMS_SIM_FAULT_TRUNCATED:
	case WMS_SIM_FAULT_RESET:
	case WMS_SIM_FAULT_REPLY_LOST:
	case WMS_SIM_FAULT_EVERY_NTH:
		if (process(s, &rq, has_action, action, ctype, &rp) != 0)
			goto done;
		break;
	}

	if (fault == WMS_SIM_FAULT_REPLY_LOST) {
		reset_connection(conn_fd(c));
		snprintf(outcome, sizeof(outcome), "reset (performed)");
		goto done;
	}
	if (fault == WMS_SIM_FAULT_TRUNCATED || fault == WMS_SIM_FAULT_RESET) {
		ret = respond_partial(c, &rp, fault == WMS_SIM_FAULT_RESET);
		snprintf(outcome, sizeof(outcome), "%u cut", rp.status);
		goto done;
	}
	ret = wms_sim__respond(c, rp.status, rp.content_type, rp.body, rp.len, NULL, NULL);
	snprintf(outcome, sizeof(outcome), "%u", rp.status);
done:
	log_request(s, op, rq.soap12, outcome, fault, t0);
	wms_sim__script_unref(s, sc);
	wms_sim__reply_free(&rp);
	wms_sim__request_free(&rq);
	return ret;
}
