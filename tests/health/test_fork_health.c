/*
 * The health server across fork() (the fork contract, point 6): a server
 * started in the parent, with a kept-alive connection open, is stopped in
 * two children forked one after the other; then in the parent. Twice,
 * the second time on the first one's port.
 *
 * In each child: the stop returns at once (the server's thread is the
 * parent's: nothing to join), the server counts no connection there (they
 * are the parent's), and afterwards the child holds no socket on the
 * server's port (listening or accepted) and no epoll set, while the
 * sockets that are not the server's are still open and unchanged: its copy
 * of the kept connection's client side (whose peer is the server's port),
 * and a listener, a connection and its accepted end of its own.
 * In the parent, with both children alive: the server still accepts and
 * answers, the kept connection still serves; once the parent stops it,
 * the kept connection's client sees its end, and the port can be listened
 * on again (no child holds a copy of the listening socket).
 *
 * A child uses no cmocka: it reports by its exit status (0, or which check
 * failed; valgrind's error exit 99 too) and carries an alarm, so that a
 * hang fails fast; it waits on a pipe until the parent has checked.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <cmocka.h>
#include "build_kind.h"
#include "child_exit.h"
#include "fd_io.h"
#include "health_server_int.h"
#include "proc_fds.h"
#include "wms/wms.h"
#include "wms/health_server.h"

#define CHILDREN 2

/* ---- time --------------------------------------------------------------- */

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* A plain build's budget, grown for valgrind and the sanitizers. */
static int budget_ms(int plain)
{
	return plain * (int)tk_slowdown();
}

/* ---- HTTP on raw sockets ------------------------------------------------ */

static int connect_to(uint16_t port)
{
	struct sockaddr_in a;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_port = htons(port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	return fd;
}

/* Read into buf until `done` says so, the peer closes, or the budget
 * passes (-1). The bytes read otherwise. */
static long read_until(int fd, char *buf, size_t size, int (*done)(const char *), int limit_ms)
{
	double t0 = now_ms();
	size_t len = 0;

	buf[0] = '\0';
	for (;;) {
		struct pollfd p = { fd, POLLIN, 0 };
		double left = limit_ms - (now_ms() - t0);
		ssize_t n;
		if (done && done(buf))
			return (long)len;
		if (left <= 0 || poll(&p, 1, (int)left + 1) != 1)
			return -1;
		n = recv(fd, buf + len, size - 1 - len, 0);
		if (n <= 0)
			return n == 0 ? (long)len : -1;
		len += (size_t)n;
		buf[len] = '\0';
		if (len == size - 1)
			return (long)len;
	}
}

static int head_done(const char *buf)
{
	return strstr(buf, "\r\n\r\n") != NULL;
}

/* The status of a reply ("HTTP/1.1 200 ..."), 0 when none. */
static int status_of(const char *buf)
{
	int code = 0;
	if (sscanf(buf, "HTTP/1.%*d %d", &code) != 1)
		return 0;
	return code;
}

/* GET /health on a connection of its own, closed by the server. */
static int get_health(uint16_t port)
{
	static const char req[] = "GET /health HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n";
	char buf[8192];
	int fd = connect_to(port), code;

	assert_int_equal(fd_write_all(fd, req, sizeof(req) - 1), 0);
	code = read_until(fd, buf, sizeof(buf), NULL, budget_ms(5000)) < 0 ? -1 : status_of(buf);
	close(fd);
	return code;
}

/* HEAD /health on the kept connection `fd`: its status (the connection
 * stays open). */
static int head_on(int fd)
{
	static const char req[] = "HEAD /health HTTP/1.1\r\nHost: t\r\n\r\n";
	char buf[4096];

	assert_int_equal(fd_write_all(fd, req, sizeof(req) - 1), 0);
	if (read_until(fd, buf, sizeof(buf), head_done, budget_ms(5000)) < 0)
		return -1;
	return status_of(buf);
}

/* Whether 127.0.0.1:port can be listened on (as a restart would:
 * SO_REUSEADDR, so connections in TIME_WAIT do not count). */
static int can_listen_on(uint16_t port)
{
	struct sockaddr_in a;
	int one = 1, ok, fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_port = htons(port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ok = bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 && listen(fd, 1) == 0;
	close(fd);
	return ok;
}

/* ---- what a process holds ----------------------------------------------- */

typedef struct held {
	int on_port;   /* sockets whose local port is the server's */
	int listening; /* ... of them listening */
	int epolls;    /* epoll sets */
} held;

typedef struct holding_walk {
	uint16_t port;
	held h;
} holding_walk;

static int held_seen(int fd, void *arg)
{
	holding_walk *w = arg;
	struct sockaddr_in a;
	socklen_t len = sizeof(a), vl;
	int v = 0;

	w->h.epolls += proc_fd_is_epoll(fd);
	memset(&a, 0, sizeof(a));
	if (getsockname(fd, (struct sockaddr *)&a, &len) == 0 && a.sin_family == AF_INET &&
	    ntohs(a.sin_port) == w->port) {
		w->h.on_port++;
		vl = sizeof(v);
		if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &v, &vl) == 0 && v)
			w->h.listening++;
	}
	return 0;
}

static held holding(uint16_t port)
{
	holding_walk w;
	memset(&w, 0, sizeof(w));
	w.port = port;
	(void)proc_fds_each(held_seen, &w);
	return w.h;
}

/* A socket that is not the server's, with its local address: the child's
 * stop must leave it open and as it was. */
typedef struct bystander {
	int fd;
	struct sockaddr_in name;
} bystander;

static int bystander_note(bystander *b, int fd)
{
	socklen_t len = sizeof(b->name);
	b->fd = fd;
	memset(&b->name, 0, sizeof(b->name));
	return fd >= 0 && getsockname(fd, (struct sockaddr *)&b->name, &len) == 0 ? 0 : -1;
}

static int bystander_intact(const bystander *b)
{
	struct sockaddr_in now;
	socklen_t len = sizeof(now);
	memset(&now, 0, sizeof(now));
	return fcntl(b->fd, F_GETFD) != -1 &&
	       getsockname(b->fd, (struct sockaddr *)&now, &len) == 0 &&
	       now.sin_family == b->name.sin_family && now.sin_port == b->name.sin_port &&
	       now.sin_addr.s_addr == b->name.sin_addr.s_addr;
}

/* In the child: a listener of its own on another port, a connection to it
 * and that connection's accepted end (bys[1..3]). 0, or -1. */
static int other_sockets(bystander *bys)
{
	struct sockaddr_in a;
	socklen_t len = sizeof(a);
	int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), c;

	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(l, 4) != 0 ||
	    getsockname(l, (struct sockaddr *)&a, &len) != 0 || bystander_note(&bys[1], l) != 0)
		return -1;
	c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c < 0 || connect(c, (struct sockaddr *)&a, sizeof(a)) != 0 ||
	    bystander_note(&bys[2], c) != 0)
		return -1;
	return bystander_note(&bys[3], accept(l, NULL, NULL));
}

/* ---- the child ----------------------------------------------------------- */

enum {
	C_NOTHING_HELD = 10, /* before the stop: no listening socket on the port (no test) */
	C_CONNECTIONS,       /* the server counted connections in the child */
	C_SLOW_STOP,         /* the stop took long */
	C_SOCKETS_LEFT,      /* a socket on the port is still open in the child */
	C_EPOLL_LEFT,        /* an epoll set is still open in the child */
	C_PIPE,              /* the parent's word never came */
	C_OTHERS,            /* the child's sockets of its own could not be made */
	C_OTHERS_CLOSED,     /* a socket not the server's was closed or changed by the stop */
};

static const char *child_says(int code)
{
	switch (code) {
	case C_NOTHING_HELD: return "the child held no listening socket on the port before the stop";
	case C_CONNECTIONS: return "the server counted connections in the child";
	case C_SLOW_STOP: return "the stop in the child was slow";
	case C_SOCKETS_LEFT: return "a socket on the server's port is still open in the child";
	case C_EPOLL_LEFT: return "an epoll set is still open in the child";
	case C_PIPE: return "the parent's word never came";
	case C_OTHERS: return "the child's sockets of its own could not be made";
	case C_OTHERS_CLOSED: return "the stop in the child closed (or changed) a socket that is "
				     "not the server's: the kept connection's client side, or one "
				     "of the child's own on another port";
	case 99: return "valgrind found errors (or leaks) in the child";
	}
	return "?";
}

/* The stop sweeps the child's descriptors for the server's connections:
 * it spares the client side of the kept connection (its peer is the
 * server's port, not its own address) and the child's sockets on another
 * port (a listener, a connection and its accepted end). */
static int child_stops(wms_health_server *srv, uint16_t port, int kept)
{
	held h = holding(port);
	bystander bys[4];
	double t0;
	int i;

	if (h.listening != 1)
		return C_NOTHING_HELD;
	if (wms__health_server_connections(srv) != 0)
		return C_CONNECTIONS;
	if (bystander_note(&bys[0], kept) != 0 || other_sockets(bys) != 0)
		return C_OTHERS;
	t0 = now_ms();
	wms_health_server_stop(srv);
	if (now_ms() - t0 > budget_ms(1000))
		return C_SLOW_STOP;
	/* before anything opens a descriptor that could take a closed one's number */
	for (i = 0; i < 4; i++)
		if (!bystander_intact(&bys[i]))
			return C_OTHERS_CLOSED;
	h = holding(port);
	if (h.on_port)
		return C_SOCKETS_LEFT;
	if (h.epolls)
		return C_EPOLL_LEFT;
	return 0;
}

static void child_main(wms_health_server *srv, uint16_t port, int kept, int to_parent,
		       int from_parent)
{
	char word = 0;
	int code;

	/* a crash ends the child (cmocka's handlers would run tests on in
	 * it), and a hang fails the test within seconds instead of hanging CI */
	child_begin(tk_build_kind() == TK_VALGRIND ? 240 : 20);
	code = child_stops(srv, port, kept);
	(void)!write(to_parent, "d", 1);
	/* alive (with whatever it still holds) until the parent has checked */
	if (code == 0 && read(from_parent, &word, 1) != 1)
		code = C_PIPE;
	child_exit(code);
}

/* ---- the parent ---------------------------------------------------------- */

typedef struct kid {
	pid_t pid;
	int to_parent, from_parent; /* the parent's ends */
} kid;

static kid kids[CHILDREN];

static void kid_fork(kid *k, wms_health_server *srv, uint16_t port, int kept)
{
	int up[2], down[2];
	struct pollfd p;

	assert_int_equal(pipe(up), 0);
	assert_int_equal(pipe(down), 0);
	fflush(stdout);
	fflush(stderr);
	k->pid = fork();
	assert_true(k->pid >= 0);
	if (k->pid == 0) {
		close(up[0]);
		close(down[1]);
		child_main(srv, port, kept, up[1], down[0]);
	}
	close(up[1]);
	close(down[0]);
	k->to_parent = up[0];
	k->from_parent = down[1];
	/* its stop done (or the child gone) */
	p.fd = k->to_parent;
	p.events = POLLIN;
	p.revents = 0;
	if (poll(&p, 1, budget_ms(30000)) != 1)
		fail_msg("a child did not report");
}

/* Let the child end and check how it did. */
static void kid_reap(kid *k)
{
	char why[160];
	int code;

	if (k->pid <= 0)
		return;
	(void)!write(k->from_parent, "c", 1);
	code = child_reap(k->pid, (unsigned)(budget_ms(30000) / 1000) + 1u, why, sizeof(why));
	k->pid = 0;
	close(k->to_parent);
	close(k->from_parent);
	if (code < 0)
		fail_msg("%s", why);
	if (code)
		fail_msg("child exit %d: %s", code, child_says(code));
}

/* After a failed assertion: no child outlives the test. */
static int kids_gone(void **state)
{
	int i;
	(void)state;
	for (i = 0; i < CHILDREN; i++)
		if (kids[i].pid > 0) {
			kill(kids[i].pid, SIGKILL);
			while (waitpid(kids[i].pid, NULL, 0) < 0 && errno == EINTR)
				;
			kids[i].pid = 0;
			close(kids[i].to_parent);
			close(kids[i].from_parent);
		}
	return 0;
}

static void one_round(wms_client *c, uint16_t *port)
{
	wms_health_server *srv = NULL;
	char where[32], buf[256];
	wms_error err;
	int kept, i;

	snprintf(where, sizeof(where), "127.0.0.1:%u", (unsigned)*port);
	/* a long idle timeout: the kept connection outlives a slow valgrind run */
	assert_int_equal(wms__health_server_start_limits(&srv, &c, 1, where, NULL, 16, 300, &err),
			 WMS_OK);
	if (!*port)
		*port = wms_health_server_port(srv);
	assert_int_equal(wms_health_server_port(srv), *port);
	assert_int_equal(get_health(*port), 200);
	kept = connect_to(*port);
	assert_int_equal(head_on(kept), 200);

	for (i = 0; i < CHILDREN; i++) {
		kid_fork(&kids[i], srv, *port, kept);
		/* the parent's server still accepts (its epoll set untouched),
		 * answers, and keeps its connection */
		assert_int_equal(get_health(*port), 200);
		assert_int_equal(head_on(kept), 200);
	}
	assert_int_equal(wms__health_server_connections(srv), 1);

	/* both children alive, the parent stops: the kept connection ends,
	 * and the port is free */
	wms_health_server_stop(srv);
	assert_int_not_equal(read_until(kept, buf, sizeof(buf), NULL, budget_ms(5000)), -1);
	close(kept);
	assert_true(can_listen_on(*port));
	for (i = 0; i < CHILDREN; i++)
		kid_reap(&kids[i]);
}

/* The client the server shows (nothing is called: no WMS behind it). In a
 * static, so that in a child (which ends without freeing the parent's
 * client) valgrind finds it reachable. */
static wms_client *client;

static void a_server_stopped_in_two_children_twice(void **state)
{
	wms_client_options o = WMS_CLIENT_OPTIONS_INIT;
	uint16_t port = 0;
	wms_error err;
	(void)state;

	o.endpoint = "http://127.0.0.1:9/wms";
	assert_int_equal(wms_client_new(&client, &o, &err), WMS_OK);
	one_round(client, &port);
	one_round(client, &port); /* on the first round's port */
	wms_client_free(client);
	client = NULL;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(a_server_stopped_in_two_children_twice, kids_gone),
	};
	/* a child that failed has closed its end of the pipe */
	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
