/*
 * wms-sim's libmicrohttpd daemon: starting it on the sim's address, the
 * supervisor thread that stops and restarts it as `refuse` comes and goes,
 * and the request dispatch (a request's body, its route to the SOAP
 * endpoint, /stats, /control or the WSDL and schema, the connection counts).
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include "sim_http.h"

#define MAX_BODY (8u * 1024u * 1024u)
#define LISTENER_WAIT_MS 5000u

/* ---- the daemon ------------------------------------------------------------ */

static enum MHD_Result on_access(void *cls, struct MHD_Connection *c, const char *url,
				 const char *method, const char *version, const char *upload,
				 size_t *upload_size, void **con_cls);
static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
			 enum MHD_RequestTerminationCode toe);
static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
			  enum MHD_ConnectionNotificationCode toe);

static void on_mhd_log(void *cls, const char *fmt, va_list ap)
#if defined(__GNUC__)
	__attribute__((format(printf, 2, 0)))
#endif
	;

static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
	wms_sim *s = cls;
	size_t n;
	pthread_mutex_lock(&s->log_lock);
	vsnprintf(s->mhd_message, sizeof(s->mhd_message), fmt, ap);
	n = strlen(s->mhd_message);
	while (n && (s->mhd_message[n - 1] == '\n' || s->mhd_message[n - 1] == '\r'))
		s->mhd_message[--n] = '\0';
	/* Our own faults close connections on purpose: not worth a line. */
	if (s->log && !strstr(s->mhd_message, "Application reported internal error") &&
	    !strstr(s->mhd_message, "application reported error generating data")) {
		fprintf(s->log, "wms-sim: libmicrohttpd: %s\n", s->mhd_message);
		fflush(s->log);
	}
	pthread_mutex_unlock(&s->log_lock);
}

struct MHD_Daemon *wms_sim__start_daemon(wms_sim *s, uint16_t port, char *err, size_t errlen)
{
	struct sockaddr_in v4;
	struct sockaddr_in6 v6;
	struct sockaddr *sa;
	unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
			 MHD_USE_AUTO | MHD_USE_ERROR_LOG;
	struct MHD_Daemon *d;

	memset(&v4, 0, sizeof(v4));
	memset(&v6, 0, sizeof(v6));
	if (s->ipv6) {
		v6.sin6_family = AF_INET6;
		v6.sin6_port = htons(port);
		inet_pton(AF_INET6, s->bind, &v6.sin6_addr);
		sa = (struct sockaddr *)&v6;
		flags |= MHD_USE_IPv6;
	} else {
		v4.sin_family = AF_INET;
		v4.sin_port = htons(port);
		inet_pton(AF_INET, s->bind, &v4.sin_addr);
		sa = (struct sockaddr *)&v4;
	}
	pthread_mutex_lock(&s->log_lock);
	s->mhd_message[0] = '\0';
	pthread_mutex_unlock(&s->log_lock);
	errno = 0;
	d = MHD_start_daemon(flags, port, NULL, NULL, on_access, s,
			     MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, s,
			     MHD_OPTION_SOCK_ADDR, sa,
			     MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
			     MHD_OPTION_NOTIFY_CONNECTION, on_connection, s,
			     MHD_OPTION_END);
	if (!d) {
		int e = errno;
		pthread_mutex_lock(&s->log_lock);
		snprintf(err, errlen, "cannot listen on %.64s port %u: %.100s", s->bind, (unsigned)port,
			 s->mhd_message[0] ? s->mhd_message : e ? strerror(e) : "unknown error");
		pthread_mutex_unlock(&s->log_lock);
	}
	return d;
}

void *wms_sim__supervise(void *arg)
{
	wms_sim *s = arg;
	char err[200];

	pthread_mutex_lock(&s->lock);
	while (!s->stopping) {
		uint64_t now = wms_sim__mono_ns(), gen = s->requested, next;
		int want;

		wms_sim__expire(s, now);
		want = !wms_sim__refusing(s, now);
		if (want != s->listening && !s->hold) {
			if (!want) {
				struct MHD_Daemon *d = s->daemon;
				s->closing = 1;
				pthread_cond_broadcast(&s->wake);
				pthread_mutex_unlock(&s->lock);
				MHD_stop_daemon(d);
				pthread_mutex_lock(&s->lock);
				s->daemon = NULL;
				s->listening = 0;
				s->closing = 0;
				s->listen_failed = 0;
				continue;
			}
			pthread_mutex_unlock(&s->lock);
			{
				struct MHD_Daemon *d =
					wms_sim__start_daemon(s, s->port, err, sizeof(err));
				pthread_mutex_lock(&s->lock);
				if (d) {
					s->daemon = d;
					s->listening = 1;
					s->listen_failed = 0;
					continue;
				}
			}
			/* The port is taken meanwhile: say so, and retry. */
			s->listen_failed = 1;
			snprintf(s->listen_error, sizeof(s->listen_error), "%s", err);
			s->applied = gen;
			pthread_cond_broadcast(&s->wake);
			wms_sim__wait_until(s, wms_sim__mono_ns() + 50 * NS_PER_MS);
			continue;
		}
		if (want == s->listening)
			s->applied = gen;
		pthread_cond_broadcast(&s->wake);
		next = wms_sim__next_change(s, now);
		if (s->stopping)
			break;
		if (next)
			wms_sim__wait_until(s, next + NS_PER_MS / 2);
		else
			pthread_cond_wait(&s->wake, &s->lock);
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

/* Ask the supervisor to follow the faults, and wait until it has. Lock held. */
wms_sim_status wms_sim__sync_listener(wms_sim *s)
{
	uint64_t gen = ++s->requested;
	uint64_t deadline = wms_sim__mono_ns() + LISTENER_WAIT_MS * NS_PER_MS;

	pthread_cond_broadcast(&s->wake);
	while (s->applied < gen && !s->stopping) {
		if (wms_sim__mono_ns() >= deadline)
			return wms_sim__fail(WMS_SIM_ERR_INTERNAL,
					     "the listener did not follow within %u ms",
					     LISTENER_WAIT_MS);
		wms_sim__wait_until(s, deadline);
	}
	if (s->listen_failed && !wms_sim__refusing(s, wms_sim__mono_ns()))
		return wms_sim__fail(WMS_SIM_ERR_LISTEN, "%s", s->listen_error);
	return WMS_SIM_OK;
}

/* ---- request dispatch -------------------------------------------------------- */

static int has_arg(struct MHD_Connection *c, const char *key)
{
	return MHD_lookup_connection_value_n(c, MHD_GET_ARGUMENT_KIND, key, strlen(key), NULL,
					     NULL) == MHD_YES;
}

static const char help_text[] =
	"wms-sim: a WMS simulator for libwms\n"
	"  POST /wms          SOAP 1.1 or 1.2 (urn:libwms:warehouse:1)\n"
	"  GET  /wms?wsdl     the WSDL;  GET /wms?xsd or /warehouse.xsd: the schema\n"
	"  GET  /stats        counters and faults (JSON)\n"
	"  POST /control      fault=KIND [op=OP] [param=N] | fault=none | clear=1 |\n"
	"                     advance_ms=N | schedule=TEXT |\n"
	"                     reply=1 [op=OP] [status=N] [content_type=T] [no_content_type=1]\n"
	"                     [body=BYTES] [perform=1] [content_length=N] [hang_after=N]\n"
	"                     [trickle_ms=N] [close=1] [times=N] | reply=none [op=OP]\n";

static enum MHD_Result route(wms_sim *s, struct MHD_Connection *c, const char *url,
			     const char *method, wms_sim__req_ctx *r)
{
	int get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
	int post = strcmp(method, "POST") == 0;

	if (strcmp(url, "/wms") == 0 || strcmp(url, "/wms/") == 0) {
		if (post)
			return wms_sim__serve_soap(s, c, r);
		if (get && has_arg(c, "wsdl"))
			return wms_sim__respond(c, 200, "text/xml; charset=utf-8", s->wsdl,
						s->wsdl_len, NULL, NULL);
		if (get && has_arg(c, "xsd"))
			return wms_sim__respond(c, 200, "text/xml; charset=utf-8", s->xsd,
						s->xsd_len, NULL, NULL);
		if (get)
			return wms_sim__respond_text(
				c, 400, "GET /wms serves ?wsdl and ?xsd; SOAP calls are POSTs");
		return wms_sim__respond(c, 405, "text/plain; charset=utf-8", "use POST\n", 9,
					"Allow", "GET, POST");
	}
	if (strcmp(url, "/warehouse.xsd") == 0 && get)
		return wms_sim__respond(c, 200, "text/xml; charset=utf-8", s->xsd, s->xsd_len, NULL,
					NULL);
	if (strcmp(url, "/stats") == 0 && get) {
		wms__buf b = { NULL, 0, 0 };
		enum MHD_Result ret = MHD_NO;
		if (wms_sim__stats_json(s, &b) == 0)
			ret = wms_sim__respond(c, 200, "application/json", b.data, b.len, NULL,
					       NULL);
		wms__buf_free(&b);
		return ret;
	}
	if (strcmp(url, "/control") == 0) {
		if (post)
			return wms_sim__serve_control(s, c, r);
		return wms_sim__respond(c, 405, "text/plain; charset=utf-8", "use POST\n", 9,
					"Allow", "POST");
	}
	if (strcmp(url, "/") == 0 && get)
		return wms_sim__respond(c, 200, "text/plain; charset=utf-8", help_text,
					sizeof(help_text) - 1, NULL, NULL);
	return wms_sim__respond_text(c, 404, "not found (try GET /)");
}

static enum MHD_Result on_access(void *cls, struct MHD_Connection *c, const char *url,
				 const char *method, const char *version, const char *upload,
				 size_t *upload_size, void **con_cls)
{
	wms_sim *s = cls;
	wms_sim__req_ctx *r = *con_cls;
	(void)version;

	if (!r) {
		r = calloc(1, sizeof(*r));
		if (!r)
			return MHD_NO;
		*con_cls = r;
		return MHD_YES;
	}
	if (*upload_size) {
		if (!r->too_large &&
		    (r->body.len + *upload_size > MAX_BODY ||
		     wms__buf_append(&r->body, upload, *upload_size) != 0)) {
			r->too_large = 1;
			wms__buf_free(&r->body);
		}
		*upload_size = 0;
		return MHD_YES;
	}
	return route(s, c, url, method, r);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	wms_sim *s = cls;
	wms_sim__req_ctx *r = *con_cls;
	(void)c;
	if (!r)
		return;
	/* The reply is out: close under the client's idle keep-alive connection.
	 * libmicrohttpd reads end-of-file next and closes its side. */
	if (r->close_after && toe == MHD_REQUEST_TERMINATED_COMPLETED_OK)
		shutdown(r->fd, SHUT_RDWR);
	if (r->hold) {
		pthread_mutex_lock(&s->lock);
		s->hold--;
		pthread_cond_broadcast(&s->wake);
		pthread_mutex_unlock(&s->lock);
	}
	wms__buf_free(&r->body);
	free(r);
	*con_cls = NULL;
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
			  enum MHD_ConnectionNotificationCode toe)
{
	wms_sim *s = cls;
	(void)c;
	(void)socket_context;
	pthread_mutex_lock(&s->lock);
	if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
		s->conns_accepted++;
		s->conns_open++;
	} else if (toe == MHD_CONNECTION_NOTIFY_CLOSED && s->conns_open) {
		s->conns_open--;
	}
	pthread_mutex_unlock(&s->lock);
}
