/* A TCP socket on 127.0.0.1 with a port the kernel picks: the test servers'
 * listeners, listeners that never accept, ports nothing listens on, and a
 * connection to one of them.
 * Header only. */
#ifndef WMS_TESTS_LOCAL_PORT_H
#define WMS_TESTS_LOCAL_PORT_H

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* A socket bound to 127.0.0.1 on a port the kernel picked (*port), close on
 * exec, listening with `backlog` (< 0: bound only, not listening). The
 * descriptor, or -1 with errno set and nothing left open. */
static inline int local_listen(uint16_t *port, int backlog)
{
	struct sockaddr_in a;
	socklen_t len = sizeof(a);
	int one = 1, saved;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	*port = 0;
	if (fd < 0)
		return -1;
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
	    (backlog < 0 || listen(fd, backlog) == 0) &&
	    getsockname(fd, (struct sockaddr *)&a, &len) == 0) {
		*port = ntohs(a.sin_port);
		return fd;
	}
	saved = errno;
	close(fd);
	errno = saved;
	return -1;
}

/* A TCP connection to 127.0.0.1:port (close on exec): the descriptor, or
 * -1 with errno set and nothing left open. */
static inline int local_connect(uint16_t port)
{
	struct sockaddr_in a;
	int saved, fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_port = htons(port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0)
		return fd;
	saved = errno;
	close(fd);
	errno = saved;
	return -1;
}

/* A port on 127.0.0.1 that nothing listens on (the kernel's pick, bound and
 * let go at once): a connection to it is refused. 0 if none was had. */
static inline uint16_t local_closed_port(void)
{
	uint16_t port = 0;
	int fd = local_listen(&port, -1);

	if (fd < 0)
		return 0;
	close(fd);
	return port;
}

#endif
