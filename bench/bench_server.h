/* An in-process HTTP server for the end-to-end figures (libmicrohttpd). */
#ifndef BENCH_SERVER_H
#define BENCH_SERVER_H

#include <stddef.h>
#include <stdint.h>

typedef struct bench_server bench_server;

/* Listen on 127.0.0.1, an ephemeral port, answering every POST with `reply`
 * (status 200, text/xml; borrowed: must outlive the server). NULL on failure. */
bench_server *bench_server_start(const char *reply, size_t reply_len);
/* The same answers from one thread serving every connection (an epoll
 * loop): for comparing single callers, each on its own connection, without
 * each having a server thread of its own that the scheduler places
 * (bench_server.c says why). */
bench_server *bench_server_start_one_thread(const char *reply, size_t reply_len);
/* The same reply, `delay_ms` (> 0) after each request's body has arrived:
 * a WMS that takes its time. A thread per connection sleeps out the delay
 * (bench_server.c says why); connections are limited by RLIMIT_NOFILE, not
 * by select()'s FD_SETSIZE. */
bench_server *bench_server_start_delayed(const char *reply, size_t reply_len,
					 unsigned delay_ms);
uint16_t bench_server_port(const bench_server *s);
/* POST requests answered so far. */
uint64_t bench_server_requests(bench_server *s);
/* TCP connections accepted so far. */
uint64_t bench_server_connections(bench_server *s);
/* Delayed server: requests waiting at once, at most, so far (0 otherwise). */
uint64_t bench_server_max_waiting(bench_server *s);
void bench_server_stop(bench_server *s);

#endif
