/* send() with injected failures (see send_fault.h). */
#define _GNU_SOURCE
#include "send_fault.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>

static atomic_uint armed;
static atomic_uint failed;

void sf_fail_posts(unsigned n)
{
	atomic_store(&armed, n);
}

unsigned sf_failed(void)
{
	return atomic_load(&failed);
}

ssize_t send(int fd, const void *buf, size_t len, int flags)
{
	static ssize_t (*_Atomic real)(int, const void *, size_t, int);
	ssize_t (*next)(int, const void *, size_t, int) = atomic_load(&real);
	unsigned n = atomic_load(&armed);

	if (n && len >= 5 && memcmp(buf, "POST ", 5) == 0 &&
	    atomic_compare_exchange_strong(&armed, &n, n - 1)) {
		atomic_fetch_add(&failed, 1);
		errno = ECONNRESET;
		return -1;
	}
	if (!next) {
		void *sym = dlsym(RTLD_NEXT, "send");
		/* POSIX: a function's address survives the trip through void *. */
		memcpy(&next, &sym, sizeof(next));
		if (!next) {
			errno = ENOSYS;
			return -1;
		}
		atomic_store(&real, next);
	}
	return next(fd, buf, len, flags);
}
