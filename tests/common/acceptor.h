/*
 * Under the in-process test servers (loopback.c, which tls_server.h wraps): a
 * listener on 127.0.0.1 with a kernel-chosen port, an accept thread, one
 * thread per connection, and a stop pipe that every wait of every thread
 * polls, so that stopping never hangs on a connection that is blocked.
 * What a connection says is the server's business: it supplies serve().
 */
#ifndef WMS_TEST_ACCEPTOR_H
#define WMS_TEST_ACCEPTOR_H

#include <pthread.h>
#include <stdint.h>

typedef struct acceptor_ops {
	/* Serves one connection on its own thread; owns fd and closes it. */
	void (*serve)(void *ctx, int fd);
	/* Optional: readies an accepted fd (socket options); 0 drops it. */
	int (*prepare)(void *ctx, int fd);
	/* Optional: counts a connection, called with *lock held so that the
	 * counts are in place before serve() can touch them. started 0: its
	 * thread could not be started and fd is already closed. */
	void (*admitted)(void *ctx, int started);
	pthread_mutex_t *lock;      /* the server's, or NULL */
} acceptor_ops;

struct acceptor_conn;

/* Embedded in the server; the fields are the acceptor's. */
typedef struct acceptor {
	acceptor_ops ops;
	void *ctx;
	int listen_fd;
	int wake[2];                /* written once at stop, never drained */
	uint16_t port;
	pthread_t thread;
	struct acceptor_conn *conns; /* the accept thread's until it is joined */
} acceptor;

/* Listen and start accepting. 0, or -1 with errno set and nothing left
 * open. */
int acceptor_start(acceptor *a, const acceptor_ops *ops, void *ctx);
/* Wake every wait, join the accept thread and every connection thread,
 * close the listener and the pipe. */
void acceptor_stop(acceptor *a);

/* Wait for `events` on fd (fd < 0: on the stop pipe only; timeout_ms < 0:
 * without limit). 1: ready; 0: time is up; -1: stopping, or an error. */
int acceptor_wait(const acceptor *a, int fd, short events, int timeout_ms);

#endif
