/* The bench's HTTP server: libmicrohttpd, one thread per connection, so a
 * keep-alive client is answered by a thread blocked on its own socket. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <microhttpd.h>
#include "bench_server.h"

struct bench_server {
	struct MHD_Daemon *daemon;
	struct MHD_Response *reply;
	uint16_t port;
	_Atomic uint64_t requests;
	_Atomic uint64_t connections;
};

static int started_marker;

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version,
				  const char *upload_data, size_t *upload_data_size,
				  void **req_cls)
{
	bench_server *s = cls;

	(void)url;
	(void)version;
	(void)upload_data;
	if (!*req_cls) { /* headers only so far */
		*req_cls = &started_marker;
		return MHD_YES;
	}
	if (*upload_data_size) { /* body bytes: read and dropped */
		*upload_data_size = 0;
		return MHD_YES;
	}
	if (strcmp(method, "POST") != 0)
		return MHD_NO;
	atomic_fetch_add_explicit(&s->requests, 1, memory_order_relaxed);
	return MHD_queue_response(conn, MHD_HTTP_OK, s->reply);
}

static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_ctx,
			  enum MHD_ConnectionNotificationCode code)
{
	bench_server *s = cls;

	(void)conn;
	(void)socket_ctx;
	if (code == MHD_CONNECTION_NOTIFY_STARTED)
		atomic_fetch_add_explicit(&s->connections, 1, memory_order_relaxed);
}

bench_server *bench_server_start(const char *reply, size_t reply_len)
{
	struct sockaddr_in addr;
	const union MHD_DaemonInfo *info;
	bench_server *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->reply = MHD_create_response_from_buffer(reply_len, (void *)(uintptr_t)reply,
						   MHD_RESPMEM_PERSISTENT);
	if (!s->reply ||
	    MHD_add_response_header(s->reply, "Content-Type", "text/xml; charset=utf-8") != MHD_YES)
		goto fail;
	memset(&addr, 0, sizeof(addr));
	addr.sin_family = AF_INET;
	addr.sin_port = 0;
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	s->daemon = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD,
				     0, NULL, NULL, on_request, s,
				     MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
				     MHD_OPTION_NOTIFY_CONNECTION, on_connection, s,
				     MHD_OPTION_CONNECTION_TIMEOUT, 30u,
				     MHD_OPTION_END);
	if (!s->daemon)
		goto fail;
	info = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_BIND_PORT);
	if (!info || !info->port)
		goto fail;
	s->port = info->port;
	return s;
fail:
	bench_server_stop(s);
	return NULL;
}

uint16_t bench_server_port(const bench_server *s)
{
	return s->port;
}

uint64_t bench_server_requests(bench_server *s)
{
	return atomic_load(&s->requests);
}

uint64_t bench_server_connections(bench_server *s)
{
	return atomic_load(&s->connections);
}

void bench_server_stop(bench_server *s)
{
	if (!s)
		return;
	if (s->daemon)
		MHD_stop_daemon(s->daemon);
	if (s->reply)
		MHD_destroy_response(s->reply);
	free(s);
}
