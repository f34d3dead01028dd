/* An in-process HTTP server for the end-to-end figures (libmicrohttpd). */
#ifndef BENCH_SERVER_H
#define BENCH_SERVER_H

#include <stddef.h>
#include <stdint.h>

typedef struct bench_server bench_server;

/* Listen on 127.0.0.1, an ephemeral port, answering every POST with `reply`
 * (status 200, text/xml; borrowed: must outlive the server). NULL on failure. */
bench_server *bench_server_start(const char *reply, size_t reply_len);
uint16_t bench_server_port(const bench_server *s);
/* POST requests answered so far. */
uint64_t bench_server_requests(bench_server *s);
/* TCP connections accepted so far. */
uint64_t bench_server_connections(bench_server *s);
void bench_server_stop(bench_server *s);

#endif
