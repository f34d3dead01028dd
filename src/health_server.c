/*
 * The embedded /health and /metrics endpoint (wms/health_server.h): a
 * libmicrohttpd daemon whose one thread renders breaker snapshots
 * (src/health.c) and nothing else. libmicrohttpd appears in this file only;
 * without it (WMS_HAVE_MHD 0) the functions exist and refuse to start.
 *
 * A server started before a fork() is the parent's in the child: its
 * thread is not there, and its sockets and epoll set are shared with the
 * parent. Stopped in the child it lets go of the child's copies and of
 * libwms's memory only (let_go_in_child).
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "health_server_int.h"
#include "internal.h"
#include "util/fork.h"
#include "wms/health.h"

#if WMS_HAVE_MHD
#include <microhttpd.h>
#endif

struct wms_health_server {
#if WMS_HAVE_MHD
	struct MHD_Daemon *daemon;
#endif
	wms_client **clients; /* rendered on each request: breakers a client
			       * makes later (generic operations) show too */
	size_t count;
	char *prefix;
	uint16_t port;
	/* the address the listening socket is bound to (its connections'
	 * local address: let_go_in_child) */
	struct sockaddr_storage bound;
	unsigned long fork_gen; /* started in this generation (util/fork.h) */
};

static wms_status bad_listen(wms_error *err, const char *where, const char *why)
{
	return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
			 "health server: listen address '%s': %s", where, why);
}

wms_status wms__health_listen_parse(struct sockaddr_storage *out, socklen_t *out_len,
				   const char *where, wms_error *err)
{
	char host[INET6_ADDRSTRLEN + 1];
	const char *port, *p;
	size_t host_len;
	unsigned long v = 0;
	int v6 = where[0] == '[';

	if (!*where)
		return bad_listen(err, where, "empty (ADDRESS:PORT)");
	if (v6) {
		const char *rb = strchr(where, ']');
		if (!rb || rb[1] != ':')
			return bad_listen(err, where, "an IPv6 address is [ADDRESS]:PORT");
		host_len = (size_t)(rb - where - 1);
		memcpy(host, where + 1, host_len < sizeof(host) ? host_len : 0);
		port = rb + 2;
	} else {
		const char *colon = strrchr(where, ':');
		if (!colon)
			return bad_listen(err, where, "no port (ADDRESS:PORT)");
		if (memchr(where, ':', (size_t)(colon - where)))
			return bad_listen(err, where, "an IPv6 address goes in brackets: [ADDRESS]:PORT");
		host_len = (size_t)(colon - where);
		memcpy(host, where, host_len < sizeof(host) ? host_len : 0);
		port = colon + 1;
	}
	if (host_len == 0 || host_len >= sizeof(host))
		return bad_listen(err, where, v6 ? "not an IPv6 address"
						  : "not an IPv4 address (no host names)");
	host[host_len] = '\0';
	/* at most 5 digits, so that "000065536" or a long run cannot wrap */
	for (p = port; *p >= '0' && *p <= '9' && p - port < 6; p++)
		v = v * 10 + (unsigned long)(*p - '0');
	if (p == port || *p || p - port > 5 || v > 65535)
		return bad_listen(err, where, "the port is not a number 0-65535");
	memset(out, 0, sizeof(*out));
	if (v6) {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)out;
		if (inet_pton(AF_INET6, host, &a->sin6_addr) != 1)
			return bad_listen(err, where, "not an IPv6 address");
		a->sin6_family = AF_INET6;
		a->sin6_port = htons((uint16_t)v);
		*out_len = sizeof(*a);
	} else {
		struct sockaddr_in *a = (struct sockaddr_in *)out;
		/* inet_pton takes only the dotted quad: no "localhost", no "127.1" */
		if (inet_pton(AF_INET, host, &a->sin_addr) != 1)
			return bad_listen(err, where, "not an IPv4 address (no host names)");
		a->sin_family = AF_INET;
		a->sin_port = htons((uint16_t)v);
		*out_len = sizeof(*a);
	}
	return WMS_OK;
}

static void server_free(wms_health_server *srv)
{
	if (!srv)
		return;
	wms__free(srv->clients);
	wms__free(srv->prefix);
	wms__free(srv);
}

#if WMS_HAVE_MHD

/* The clients whose breakers (and bulkheads) each document shows. */
static wms_status keep_clients(wms_health_server *srv, wms_client *const *clients, size_t count)
{
	srv->clients = wms__calloc(count ? count : 1, sizeof(*srv->clients));
	if (!srv->clients)
		return WMS_ERR_NOMEM;
	memcpy(srv->clients, clients, count * sizeof(*clients));
	srv->count = count;
	return WMS_OK;
}

/* A listening socket made here rather than by MHD: its errors can name the
 * address and errno, and getsockname tells a port of 0's pick. */
static wms_status open_listener(int *out, uint16_t *port, struct sockaddr_storage *bound,
				const struct sockaddr_storage *addr, socklen_t addr_len,
				const char *where, wms_error *err)
{
	socklen_t bound_len = sizeof(*bound);
	char why[128];
	int one = 1, fd, e;
	wms_status st = WMS_OK;

	*out = -1;
	fd = socket(addr->ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		e = errno;
		if (strerror_r(e, why, sizeof(why)) != 0)
			snprintf(why, sizeof(why), "error %d", e);
		return wms__fail(err, WMS_ERR_INTERNAL, WMS_DELIVERY_NOT_SENT,
				 "health server: cannot make a socket for %s: %s", where, why);
	}
	/* a restart may rebind at once over connections in TIME_WAIT; a port
	 * another socket listens on is still refused */
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (addr->ss_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(fd, (const struct sockaddr *)addr, addr_len) != 0 ||
	    listen(fd, 64) != 0 ||
	    getsockname(fd, (struct sockaddr *)bound, &bound_len) != 0) {
		e = errno;
		if (strerror_r(e, why, sizeof(why)) != 0)
			snprintf(why, sizeof(why), "error %d", e);
		st = wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
			       "health server: cannot listen on %s: %s", where, why);
		close(fd);
		return st;
	}
	*port = ntohs(bound->ss_family == AF_INET6 ? ((struct sockaddr_in6 *)bound)->sin6_port
						    : ((struct sockaddr_in *)bound)->sin_port);
	*out = fd;
	return st;
}

static const char text_type[] = "text/plain; charset=utf-8";

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned code, const char *type,
			     char *body, int owned, const char *allow)
{
	struct MHD_Response *r;
	enum MHD_Result ok = MHD_NO;

	r = owned ? MHD_create_response_from_buffer_with_free_callback(strlen(body), body,
									  wms__free)
		  : MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_PERSISTENT);
	if (!r) {
		if (owned)
			wms__free(body);
		return MHD_NO; /* MHD closes the connection */
	}
	if (MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type) == MHD_YES &&
	    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store") == MHD_YES &&
	    (!allow || MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, allow) == MHD_YES))
		ok = MHD_queue_response(conn, code, r);
	MHD_destroy_response(r);
	return ok;
}

static int has_body(struct MHD_Connection *conn)
{
	const char *len = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
						      MHD_HTTP_HEADER_CONTENT_LENGTH);
	return (len && strspn(len, "0") != strlen(len)) ||
	       MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
					   MHD_HTTP_HEADER_TRANSFER_ENCODING) != NULL;
}

/* A request with a body is answered on MHD's first call, from its headers:
 * the body is never read (it is refused, and MHD closes the connection).
 * Any other is answered on the second call, once MHD has the whole
 * request: answered on the first, libmicrohttpd (0.9.75) ends the
 * connection ("Connection: close") yet leaves its socket open, holding one
 * of the server's slots, until its thread next wakes, which can be another
 * connection's idle timeout seconds later; answered on the second, an
 * HTTP/1.1 connection is kept for the client's next request and closed
 * when idle (tests/health: default_idle_timeout_on_both_sides). A request
 * that says "Expect:" without a body is answered on the first call too:
 * on the second MHD would have sent "100 Continue" first, and with a
 * request behind it closed the connection without the answer. */
static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version,
				  const char *upload_data, size_t *upload_data_size,
				  void **req_cls)
{
	wms_health_server *srv = cls;
	int health = strcmp(url, "/health") == 0, down;
	char *doc = NULL;
	wms_status st;

	if (!*req_cls && !has_body(conn) &&
	    !MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_EXPECT)) {
		*req_cls = srv; /* any mark: the request was seen */
		return MHD_YES;
	}
	if (!health && strcmp(url, "/metrics") != 0)
		return reply(conn, MHD_HTTP_NOT_FOUND, text_type, (char *)"not found: /health or /metrics\n", 0, NULL);
	if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
		return reply(conn, MHD_HTTP_METHOD_NOT_ALLOWED, text_type,
			     (char *)"method not allowed: GET or HEAD\n", 0, "GET, HEAD");
	if (has_body(conn))
		return reply(conn, MHD_HTTP_BAD_REQUEST, text_type,
			     (char *)"a request body is not accepted\n", 0, NULL);
	st = health ? wms__health_clients_json(&doc, srv->clients, srv->count)
		    : wms__health_clients_prometheus(&doc, srv->clients, srv->count, srv->prefix);
	if (st != WMS_OK)
		return reply(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, text_type,
			     (char *)"cannot render the document\n", 0, NULL);
	if (!health)
		return reply(conn, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", doc, 1,
			     NULL);
	/* wms/health.h: the document opens with the overall status */
	down = strncmp(doc, "{\"status\":\"DOWN\"", 16) == 0;
	return reply(conn, down ? MHD_HTTP_SERVICE_UNAVAILABLE : MHD_HTTP_OK, "application/json",
		     doc, 1, NULL);
}

static wms_status start_daemon(wms_health_server *srv, int fd, const char *where,
			       unsigned max_connections, unsigned timeout_s, wms_error *err)
{
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD;

	flags |= MHD_is_feature_supported(MHD_FEATURE_EPOLL) == MHD_YES ? MHD_USE_EPOLL
									 : MHD_USE_POLL;
	srv->daemon = MHD_start_daemon(flags, 0, NULL, NULL, on_request, srv,
				       MHD_OPTION_LISTEN_SOCKET, (MHD_socket)fd,
				       MHD_OPTION_CONNECTION_LIMIT, max_connections,
				       MHD_OPTION_CONNECTION_TIMEOUT, timeout_s,
				       MHD_OPTION_END);
	if (!srv->daemon)
		return wms__fail(err, WMS_ERR_INTERNAL, WMS_DELIVERY_NOT_SENT,
				 "health server: libmicrohttpd cannot serve %s", where);
	return WMS_OK;
}

/* The prefix's printable ASCII start is shown, and a bad byte by its value
 * and offset: a newline or an escape of the caller's never reaches the
 * one-line message. */
static wms_status bad_prefix(wms_error *err, const char *p)
{
	size_t n = wms__metric_span(p, WMS__METRIC_PROMETHEUS), shown = 0;
	const int more = WMS__PROMETHEUS_PREFIX_MAX - 1; /* after the first byte */
	while (shown <= WMS__PROMETHEUS_PREFIX_MAX && (unsigned char)p[shown] >= 0x20 &&
	       (unsigned char)p[shown] < 0x7f)
		shown++;
	if (p[n])
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "health server: metric prefix '%.*s%s' is not "
				 "[a-zA-Z_:][a-zA-Z0-9_:]{0,%d} (byte 0x%02X at offset %zu)",
				 (int)shown, p, p[shown] ? "..." : "", more,
				 (unsigned)(unsigned char)p[n], n);
	return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
			 "health server: metric prefix '%.*s%s' is not "
			 "[a-zA-Z_:][a-zA-Z0-9_:]{0,%d} (%zu bytes)",
			 (int)shown, p, p[shown] ? "..." : "", more, n);
}

/* The checks and the start, once `out` is known good. */
static wms_status start_server(wms_health_server **out, wms_client *const *clients, size_t count,
			       const char *where, const char *metric_prefix,
			       unsigned max_connections, unsigned timeout_s, wms_error *err)
{
	wms_health_server *srv = NULL;
	struct sockaddr_storage addr;
	socklen_t addr_len = 0;
	char *probe = NULL;
	wms_status st;
	size_t i;
	int fd = -1;

	if (!clients || !count)
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "health server: no clients to serve");
	for (i = 0; i < count; i++)
		if (!clients[i])
			return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
					 "health server: clients[%zu] is NULL", i);
	if (!max_connections || !timeout_s)
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "health server: connection limit and timeout must be above 0");
	/* a prefix wms_health_prometheus refuses is refused now, not per scrape */
	st = wms_health_prometheus(&probe, NULL, 0, metric_prefix);
	wms__free(probe);
	if (st == WMS_ERR_INVALID_ARG)
		return bad_prefix(err, metric_prefix);
	if (st != WMS_OK)
		return wms__fail(err, st, WMS_DELIVERY_NOT_SENT, "health server: %s",
				 wms_strerror(st));
	if (!where)
		where = WMS_HEALTH_SERVER_DEFAULT_LISTEN;
	st = wms__health_listen_parse(&addr, &addr_len, where, err);
	if (st)
		return st;

	srv = wms__calloc(1, sizeof(*srv));
	if (!srv || (metric_prefix && !(srv->prefix = wms__strdup(metric_prefix))) ||
	    keep_clients(srv, clients, count) != WMS_OK) {
		st = wms__fail(err, WMS_ERR_NOMEM, WMS_DELIVERY_NOT_SENT, "health server: %s",
			       wms_strerror(WMS_ERR_NOMEM));
		goto done;
	}
	srv->fork_gen = wms__fork_gen_now();
	st = open_listener(&fd, &srv->port, &srv->bound, &addr, addr_len, where, err);
	if (st)
		goto done;
	/* From here MHD owns fd: it closes it on stop, and (we cannot tell
	 * which) may or may not on a failed start, so a failed start leaks
	 * it rather than risk closing a descriptor another thread reused. */
	st = start_daemon(srv, fd, where, max_connections, timeout_s, err);
	if (st)
		goto done;
	*out = srv;
	srv = NULL;
done:
	server_free(srv);
	return st;
}

/* ---- in a child ------------------------------------------------------- */

/* libmicrohttpd daemons let go of in a child (let_go_in_child): never
 * stopped there, kept reachable from here for the child's life. */
typedef struct kept_daemon {
	struct MHD_Daemon *daemon;
	struct kept_daemon *next;
} kept_daemon;

static _Atomic(kept_daemon *) kept_daemons;

static int same_port(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return 0;
	if (a->ss_family == AF_INET) {
		const struct sockaddr_in *x = (const struct sockaddr_in *)a;
		const struct sockaddr_in *y = (const struct sockaddr_in *)b;
		return x->sin_port == y->sin_port &&
		       (y->sin_addr.s_addr == htonl(INADDR_ANY) ||
			x->sin_addr.s_addr == y->sin_addr.s_addr);
	}
	if (a->ss_family == AF_INET6) {
		const struct sockaddr_in6 *x = (const struct sockaddr_in6 *)a;
		const struct sockaddr_in6 *y = (const struct sockaddr_in6 *)b;
		return x->sin6_port == y->sin6_port &&
		       (IN6_IS_ADDR_UNSPECIFIED(&y->sin6_addr) ||
			IN6_ARE_ADDR_EQUAL(&x->sin6_addr, &y->sin6_addr));
	}
	return 0;
}

/* Whether `fd` is a connection accepted on the listening socket bound to
 * `bound`: a stream socket, not listening, whose local address is that
 * one (any of the family's, for a listener on the wildcard). While the
 * listener is open (the parent's copy is) no other socket can have that
 * port: connect() never picks it, and bind() is refused. */
static int accepted_on(int fd, const struct sockaddr_storage *bound)
{
	struct sockaddr_storage local;
	socklen_t len = sizeof(int), alen = sizeof(local);
	int listening = 1, type = 0;

	if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0 || listening)
		return 0;
	len = sizeof(int);
	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 || type != SOCK_STREAM)
		return 0;
	memset(&local, 0, sizeof(local));
	return getsockname(fd, (struct sockaddr *)&local, &alen) == 0 && same_port(&local, bound);
}

/* The child's copies of the connections the server held at the fork, by
 * their local address (libmicrohttpd names no connection's socket). Held
 * here, a connection the parent closes would stay open: its client would
 * wait for an end that does not come until this process exits. Closing a
 * copy sends nothing while the parent holds the connection. Without
 * /proc, they stay open. */
static void close_connections_in_child(const struct sockaddr_storage *bound)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int own;

	if (!d)
		return;
	own = dirfd(d);
	while ((e = readdir(d)) != NULL) {
		char *end;
		long fd = strtol(e->d_name, &end, 10);
		if (end == e->d_name || *end || fd < 0 || fd > INT32_MAX || fd == own)
			continue;
		if (accepted_on((int)fd, bound))
			close((int)fd);
	}
	closedir(d);
}

/* wms_health_server_stop in a child forked since the start. The daemon's
 * thread is the parent's and does not exist here, and its sockets and
 * epoll set are shared with the parent: MHD_stop_daemon would join a
 * thread that is not there, take locks that thread may have held, and shut
 * down the parent's connections; anything that takes the listener out of
 * the epoll set (as MHD_quiesce_daemon does) would stop the parent
 * accepting. Only the child's copies of the listening socket, the epoll
 * set and the connections are closed, so that the parent's stop frees the
 * port and ends its connections; MHD's wake-up eventfd (which it does not
 * name) stays open, unused. The daemon's memory stays allocated, reachable
 * from kept_daemons. */
static void let_go_in_child(wms_health_server *srv)
{
	const union MHD_DaemonInfo *info;
	kept_daemon *k;
	MHD_socket lfd = MHD_INVALID_SOCKET;
	int efd = -1;

	info = MHD_get_daemon_info(srv->daemon, MHD_DAEMON_INFO_LISTEN_FD);
	if (info)
		lfd = info->listen_fd;
	info = MHD_get_daemon_info(srv->daemon, MHD_DAEMON_INFO_EPOLL_FD);
	if (info)
		efd = info->epoll_fd; /* -1 without epoll */
	close_connections_in_child(&srv->bound);
	if (lfd != MHD_INVALID_SOCKET)
		close(lfd);
	if (efd >= 0)
		close(efd);
	k = wms__malloc(sizeof(*k));
	if (!k)
		return; /* out of memory: the daemon's memory is lost, not freed */
	k->daemon = srv->daemon;
	k->next = atomic_load(&kept_daemons);
	while (!atomic_compare_exchange_weak(&kept_daemons, &k->next, k))
		;
}

#endif /* WMS_HAVE_MHD */

wms_status wms__health_server_start_limits(wms_health_server **out, wms_client *const *clients,
					   size_t count, const char *where,
					   const char *metric_prefix, unsigned max_connections,
					   unsigned timeout_s, wms_error *err)
{
	wms_error_clear(err);
	if (!out)
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "health server: out is NULL");
	*out = NULL;
#if WMS_HAVE_MHD
	return start_server(out, clients, count, where, metric_prefix, max_connections, timeout_s,
			    err);
#else
	return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
			 "built without the health server (libmicrohttpd)");
#endif
}

wms_status wms_health_server_start(wms_health_server **out, wms_client *const *clients,
				   size_t count, const char *listen_addr,
				   const char *metric_prefix, wms_error *err)
{
	return wms__health_server_start_limits(out, clients, count, listen_addr, metric_prefix,
					       WMS_HEALTH_SERVER_MAX_CONNECTIONS,
					       WMS_HEALTH_SERVER_TIMEOUT_S, err);
}

uint16_t wms_health_server_port(const wms_health_server *srv)
{
	return srv ? srv->port : 0;
}

unsigned wms__health_server_connections(const wms_health_server *srv)
{
#if WMS_HAVE_MHD
	const union MHD_DaemonInfo *info;
	/* in a child the connections are the parent's: none is this one's */
	if (!srv || wms__forked_since(srv->fork_gen))
		return 0;
	info = MHD_get_daemon_info(srv->daemon, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
	return info ? info->num_connections : 0;
#else
	(void)srv;
	return 0;
#endif
}

void wms_health_server_stop(wms_health_server *srv)
{
	if (!srv)
		return;
#if WMS_HAVE_MHD
	if (wms__forked_since(srv->fork_gen))
		let_go_in_child(srv);
	else
		MHD_stop_daemon(srv->daemon);
#endif
	server_free(srv);
}
