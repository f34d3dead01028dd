/* The descriptors this process holds, from /proc/self/fd: one walker for
 * the tests that count sockets, epoll sets or open files (the fork tests).
 * Header only. */
#ifndef WMS_TESTS_PROC_FDS_H
#define WMS_TESTS_PROC_FDS_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* fn(fd, arg) for every open descriptor but the listing's own, until fn
 * returns non-zero (returned). 0 when the walk ran to its end, -1 when
 * /proc/self/fd cannot be read. Descriptors fn opens or closes may or may
 * not be seen. */
static inline int proc_fds_each(int (*fn)(int fd, void *arg), void *arg)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int rc = 0;

	if (!d)
		return -1;
	while (rc == 0 && (e = readdir(d)) != NULL) {
		int fd = atoi(e->d_name);
		if (e->d_name[0] < '0' || e->d_name[0] > '9' || fd == dirfd(d))
			continue;
		rc = fn(fd, arg);
	}
	closedir(d);
	return rc;
}

/* Whether fd is an epoll set. */
static inline int proc_fd_is_epoll(int fd)
{
	static const char want[] = "anon_inode:[eventpoll]";
	char path[64], to[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, to, sizeof(to) - 1);
	if (n <= 0)
		return 0;
	to[n] = '\0';
	return strcmp(to, want) == 0;
}

#endif
