/* The test servers' listener and threads (see acceptor.h). */
#include "acceptor.h"
#include "local_port.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

struct acceptor_conn {
	pthread_t thread;
	int fd;
	acceptor *a;
	struct acceptor_conn *next;
};

int acceptor_wait(const acceptor *a, int fd, short events, int timeout_ms)
{
	struct pollfd p[2];
	int n;
	p[0].fd = a->wake[0];
	p[0].events = POLLIN;
	p[1].fd = fd;
	p[1].events = events;
	for (;;) {
		p[0].revents = p[1].revents = 0;
		n = poll(p, fd >= 0 ? 2 : 1, timeout_ms);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || p[0].revents)
			return -1;
		return n > 0;
	}
}

static void *conn_main(void *arg)
{
	struct acceptor_conn *c = arg;
	c->a->ops.serve(c->a->ctx, c->fd);
	return NULL;
}

/* Locked around the thread start and the count when the server asks. */
static int start_conn(acceptor *a, struct acceptor_conn *c)
{
	int started;
	if (a->ops.lock)
		pthread_mutex_lock(a->ops.lock);
	started = pthread_create(&c->thread, NULL, conn_main, c) == 0;
	if (!started)
		close(c->fd);
	if (a->ops.admitted)
		a->ops.admitted(a->ctx, started);
	if (a->ops.lock)
		pthread_mutex_unlock(a->ops.lock);
	return started;
}

static void *accept_main(void *arg)
{
	acceptor *a = arg;
	while (acceptor_wait(a, a->listen_fd, POLLIN, -1) > 0) {
		struct acceptor_conn *c;
		int fd = accept(a->listen_fd, NULL, NULL);
		if (fd < 0)
			continue;
		c = calloc(1, sizeof(*c));
		if (!c || (a->ops.prepare && !a->ops.prepare(a->ctx, fd))) {
			free(c);
			close(fd);
			continue;
		}
		c->fd = fd;
		c->a = a;
		if (!start_conn(a, c)) {
			free(c);
			continue;
		}
		c->next = a->conns;
		a->conns = c;
	}
	return NULL;
}

static int open_listener(acceptor *a)
{
	/* Room for a test's whole burst of connects (test_alloc_routed's 200
	 * async calls at once): with 64, under load (TSan, the suites beside)
	 * the accept queue overflowed, the kernel dropped the SYNs and the
	 * clients' retries (1, 3, 7, 15, 31 s) ran past the test's wait */
	a->listen_fd = local_listen(&a->port, 1024);
	return a->listen_fd >= 0;
}

static void close_fds(acceptor *a)
{
	if (a->listen_fd >= 0)
		close(a->listen_fd);
	if (a->wake[0] >= 0) {
		close(a->wake[0]);
		close(a->wake[1]);
	}
	a->listen_fd = a->wake[0] = a->wake[1] = -1;
}

int acceptor_start(acceptor *a, const acceptor_ops *ops, void *ctx)
{
	int err;
	memset(a, 0, sizeof(*a));
	a->ops = *ops;
	a->ctx = ctx;
	a->listen_fd = -1;
	a->wake[0] = a->wake[1] = -1;
	if (pipe(a->wake) != 0 || !open_listener(a))
		goto fail;
	err = pthread_create(&a->thread, NULL, accept_main, a);
	if (err == 0)
		return 0;
	errno = err;
fail:
	err = errno; /* for the caller's message, past close() */
	close_fds(a);
	errno = err;
	return -1;
}

void acceptor_stop(acceptor *a)
{
	struct acceptor_conn *c, *next;
	ssize_t w;
	do
		w = write(a->wake[1], "x", 1);
	while (w < 0 && errno == EINTR);
	pthread_join(a->thread, NULL);
	for (c = a->conns; c; c = next) {
		next = c->next;
		pthread_join(c->thread, NULL);
		free(c);
	}
	a->conns = NULL;
	close_fds(a);
}
