/*
 * The loopback server's connection-I/O seam (see loopback.h): the one serve
 * loop (accept, read a request, record it, answer, keep alive or close) runs
 * over these calls. lb_start() uses plain socket I/O; tls_server.c wraps the
 * same server with OpenSSL. Only for test servers built on loopback.c.
 */
#ifndef WMS_TEST_LOOPBACK_IO_H
#define WMS_TEST_LOOPBACK_IO_H

#include "loopback.h"

/* One connection, owned by the serve loop. */
typedef struct lb_conn {
	lb_server *server;
	int fd;
	void *ctx;    /* lb_start_io's io_ctx */
	void *state;  /* the I/O's own, set by open() */
} lb_conn;

typedef struct lb_io {
	/* Readies an accepted socket (options, O_NONBLOCK); 0 drops it. */
	int (*prepare)(void *ctx, int fd);
	/* Optional: opens the connection (a handshake); 0: it failed and is
	 * closed unserved, close() not called. */
	int (*open)(lb_conn *c);
	/* Up to room bytes; idle: between requests. 0: closed, stopping, timed
	 * out or failed. */
	size_t (*read)(lb_conn *c, char *dst, size_t room, int idle);
	/* All len bytes; 0 when that failed. */
	int (*write)(lb_conn *c, const char *p, size_t len);
	/* Optional: ends an opened connection before its socket is closed. */
	void (*close)(lb_conn *c);
	/* Optional: a request was read in full, not yet recorded: fill in what
	 * the connection knows of it (r->peer_cn) and return the answer to
	 * write instead of the scripted one (*len its length), or NULL. */
	const char *(*reply)(lb_conn *c, lb_request *r, size_t *len);
} lb_io;

/* lb_start()'s plain socket I/O: a server of a test's own may copy it and
 * set `reply` (or write through its `write`). */
extern const lb_io lb_plain_io;

/* lb_start() over `io` (copied; io_ctx reaches each lb_conn). */
lb_server *lb_start_io(const lb_script *script, const lb_io *io, void *io_ctx);

/* Wait for `events` on fd or the server's stop (fd < 0: the stop only;
 * timeout_ms < 0: without limit). 1: ready; 0: time is up; -1: stopping,
 * or an error. */
int lb_wait(lb_server *s, int fd, short events, int timeout_ms);

/* Connections being served (accepted, started, not yet closed). */
unsigned lb_open(lb_server *s);
/* Wait up to timeout_ms until at least `accepted` connections were accepted
 * and at most `open` are being served; 1 if it got there. */
int lb_settle(lb_server *s, unsigned accepted, unsigned open, unsigned timeout_ms);

#endif
