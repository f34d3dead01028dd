/* The bench's HTTP server: libmicrohttpd, one thread per connection, so a
 * keep-alive client is answered by a thread blocked on its own socket; or
 * (bench_server_start_one_thread) one thread answering every connection
 * from an epoll loop.
 *
 * The one-thread server is for figures that compare single callers, each
 * on its own connection. With a thread per connection each caller has a
 * server thread of its own, and where the scheduler happens to put that
 * thread (on the caller's CPU or the other one, a wake-up across CPUs
 * costing far more on this VM) moved a caller's rate against an identical
 * caller's by up to 15 %: two libwms clients alternating in 50 ms rounds,
 * unpinned, gave medians of 0.940-1.151 over 8 runs; answered by one
 * thread, 0.979-1.029 (2026-12-06). Many callers at once (the 8-thread
 * figures) keep a thread per connection: one server thread among eight
 * busy callers on two CPUs would be the bottleneck.
 *
 * The delayed server (the scale group's WMS that takes its time) is the
 * same, its connection's thread sleeping out the delay before it answers:
 * a thousand calls in flight are a thousand server threads, asleep. That
 * was measured against an epoll server whose waiting connections were
 * suspended (MHD_suspend_connection, resumed by a timer thread), both
 * driven by one libcurl multi handle keeping 1000 calls in flight at
 * 100 ms, on the 2-core VM while other builds ran: threads 0.975-0.992 of
 * the ideal rate, epoll 0.81-0.98 (one thread answering a wave of resumed
 * connections is late when the box is busy; a thousand threads are
 * scheduled in parallel). Threads here poll() their socket: select()
 * stops at fd 1024. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <microhttpd.h>
#include "bench_server.h"

struct bench_server {
	struct MHD_Daemon *daemon;
	struct MHD_Response *reply;
	uint16_t port;
	_Atomic uint64_t requests;
	_Atomic uint64_t connections;
	uint64_t delay_ns; /* delayed server only */
	_Atomic uint64_t waiting, max_waiting;
};

static int started_marker;

/* Sleep until `delay_ns` from now (CLOCK_MONOTONIC, absolute: a signal
 * does not stretch it). */
static void sleep_out(uint64_t delay_ns)
{
	struct timespec ts;
	uint64_t due;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	due = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec + delay_ns;
	ts.tv_sec = (time_t)(due / 1000000000u);
	ts.tv_nsec = (long)(due % 1000000000u);
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

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
	if (s->delay_ns) {
		uint64_t w = atomic_fetch_add(&s->waiting, 1) + 1,
			 m = atomic_load(&s->max_waiting);
		while (w > m && !atomic_compare_exchange_weak(&s->max_waiting, &m, w))
			;
		sleep_out(s->delay_ns);
		atomic_fetch_sub(&s->waiting, 1);
	}
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

static bench_server *server_start(const char *reply, size_t reply_len, unsigned delay_ms,
				  int one_thread)
{
	struct sockaddr_in addr;
	const union MHD_DaemonInfo *info;
	bench_server *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->delay_ns = (uint64_t)delay_ms * 1000000u;
	s->reply = MHD_create_response_from_buffer(reply_len, (void *)(uintptr_t)reply,
						   MHD_RESPMEM_PERSISTENT);
	if (!s->reply ||
	    MHD_add_response_header(s->reply, "Content-Type", "text/xml; charset=utf-8") != MHD_YES)
		goto fail;
	memset(&addr, 0, sizeof(addr));
	addr.sin_family = AF_INET;
	addr.sin_port = 0;
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (one_thread)
		s->daemon = MHD_start_daemon(
			MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL, 0, NULL, NULL, on_request,
			s, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
			MHD_OPTION_NOTIFY_CONNECTION, on_connection, s,
			MHD_OPTION_CONNECTION_TIMEOUT, 30u, MHD_OPTION_END);
	else if (!delay_ms)
		s->daemon = MHD_start_daemon(
			MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL,
			NULL, on_request, s, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
			MHD_OPTION_NOTIFY_CONNECTION, on_connection, s,
			MHD_OPTION_CONNECTION_TIMEOUT, 30u, MHD_OPTION_END);
	else /* the connection limit's default is FD_SETSIZE - 4: far more here */
		s->daemon = MHD_start_daemon(
			MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
				MHD_USE_POLL,
			0, NULL, NULL, on_request, s, MHD_OPTION_SOCK_ADDR,
			(struct sockaddr *)&addr, MHD_OPTION_NOTIFY_CONNECTION, on_connection, s,
			MHD_OPTION_CONNECTION_LIMIT, 60000u, MHD_OPTION_LISTEN_BACKLOG_SIZE, 4096u,
			MHD_OPTION_CONNECTION_TIMEOUT, 30u, MHD_OPTION_END);
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

bench_server *bench_server_start(const char *reply, size_t reply_len)
{
	return server_start(reply, reply_len, 0, 0);
}

bench_server *bench_server_start_one_thread(const char *reply, size_t reply_len)
{
	return server_start(reply, reply_len, 0, 1);
}

bench_server *bench_server_start_delayed(const char *reply, size_t reply_len, unsigned delay_ms)
{
	return delay_ms ? server_start(reply, reply_len, delay_ms, 0) : NULL;
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

uint64_t bench_server_max_waiting(bench_server *s)
{
	return atomic_load(&s->max_waiting);
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
