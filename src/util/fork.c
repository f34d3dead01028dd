/* Which process a handle belongs to: see fork.h. */
#include "util/fork.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

_Atomic unsigned long wms__fork_gen;

static pthread_once_t once = PTHREAD_ONCE_INIT;

/* Runs in the child, alone: only an atomic add (async-signal-safe). */
static void in_child(void)
{
	atomic_fetch_add_explicit(&wms__fork_gen, 1, memory_order_relaxed);
}

static void register_handler(void)
{
	/* Fails only without memory: handles then cannot tell a child, as
	 * before this existed. */
	(void)pthread_atfork(NULL, NULL, in_child);
}

unsigned long wms__fork_gen_now(void)
{
	pthread_once(&once, register_handler);
	return atomic_load_explicit(&wms__fork_gen, memory_order_relaxed);
}

int wms__fd_forget(int fd)
{
	int nul, rc, e;
	if (fd < 0) {
		errno = EBADF;
		return -1;
	}
	nul = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (nul < 0)
		return -1;
	if (nul == fd) {
		/* fd was not open: nothing to let go of, and no /dev/null left
		 * open under its number */
		close(nul);
		errno = EBADF;
		return -1;
	}
	rc = dup2(nul, fd);
	e = errno;
	if (rc >= 0)
		(void)fcntl(fd, F_SETFD, FD_CLOEXEC);
	close(nul);
	errno = e;
	return rc < 0 ? -1 : 0;
}

int wms__mutex_free_at_fork(pthread_mutex_t *m)
{
	if (pthread_mutex_trylock(m) != 0)
		return 0;
	pthread_mutex_unlock(m);
	return 1;
}
