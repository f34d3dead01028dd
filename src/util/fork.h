/* Which process a handle belongs to. Never installed.
 *
 * fork() copies a process with its sockets (the same connections, shared
 * with the parent) and only the thread that called it. A handle made before
 * the fork is the parent's: used in the child it would speak on the
 * parent's connections, and wait for threads that are not there. Each
 * handle keeps the generation it was made in (wms__fork_gen_now) and asks
 * wms__forked_since on its way in: a relaxed load and a compare, cheap
 * enough for every call. The generation moves in every child, in a
 * pthread_atfork handler registered the first time a generation is asked
 * for (so before any handle that keeps one exists). */
#ifndef WMS_UTIL_FORK_H
#define WMS_UTIL_FORK_H

#include <pthread.h>
#include <stdatomic.h>

extern _Atomic unsigned long wms__fork_gen;

/* The current generation; registers the child handler on first use. */
unsigned long wms__fork_gen_now(void);

/* Whether this process is a child forked since generation `gen`. */
static inline int wms__forked_since(unsigned long gen)
{
	return atomic_load_explicit(&wms__fork_gen, memory_order_relaxed) != gen;
}

/* In a child: make `fd` (the child's copy of a socket it shares with the
 * parent) refer to /dev/null instead, so that whatever a library still does
 * with it while letting go (a TLS close_notify, a read to drain it, a
 * close) reaches nothing of the parent's: the connection itself is left to
 * the parent. The close-on-exec flag is set. 0, or -1 (errno). */
int wms__fd_forget(int fd);

/* In a child: whether mutex m was free at the fork (left unlocked). A
 * thread of the parent's inside it may have left what it guards half
 * changed, and no thread will ever release it: then that is not walked. */
int wms__mutex_free_at_fork(pthread_mutex_t *m);

#endif
