/*
 * The end of a forked child, for tests that fork while other threads of
 * the parent are inside libwms. Those threads do not exist in the child, so
 * valgrind's exit-time leak check would call the blocks only they point to
 * lost there, though nothing leaked. Under valgrind, child_leaks_begin()
 * notes the bytes lost right after the fork; child_exit(code) ends the
 * child with 99 if the child made a memory error, or if more bytes are
 * lost than at the fork (what the child's frees let go of, they freed),
 * else with `code`, through exec("/bin/sh -c 'exit CODE'") so that the
 * exit-time check does not run. Natively: _exit(code).
 */
#ifndef WMS_TEST_CHILD_EXIT_H
#define WMS_TEST_CHILD_EXIT_H

#include <stdio.h>
#include <unistd.h>
#include <valgrind/memcheck.h>
#include <valgrind/valgrind.h>

static unsigned long child_lost_at_fork;

static inline unsigned long child_lost_now(void)
{
	unsigned long leaked = 0, dubious = 0, reachable = 0, suppressed = 0;
	VALGRIND_DO_QUICK_LEAK_CHECK;
	VALGRIND_COUNT_LEAK_BLOCKS(leaked, dubious, reachable, suppressed);
	(void)reachable;
	(void)suppressed;
	return leaked + dubious;
}

/* Right after fork(), in the child. */
static inline void child_leaks_begin(void)
{
	if (RUNNING_ON_VALGRIND)
		child_lost_at_fork = child_lost_now();
}

static inline void child_exit(int code)
{
	char cmd[32];
	if (!RUNNING_ON_VALGRIND)
		_exit(code);
	if (VALGRIND_COUNT_ERRORS > 0 || child_lost_now() > child_lost_at_fork)
		code = 99;
	snprintf(cmd, sizeof(cmd), "exit %d", code);
	execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
	_exit(code);
}

#endif
