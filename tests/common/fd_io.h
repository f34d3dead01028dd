/* Writing a whole buffer to a blocking descriptor, for test servers and
 * relays. Header only. */
#ifndef WMS_TESTS_FD_IO_H
#define WMS_TESTS_FD_IO_H

#include <errno.h>
#include <stddef.h>
#include <unistd.h>

/* All len bytes of buf to fd (a write cut short goes on; EINTR retried):
 * 0, or -1 when the descriptor fails or is closed. */
static inline int fd_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	while (len) {
		ssize_t n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

#endif
