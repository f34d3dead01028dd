/*
 * The end of a forked child, for tests that fork while other threads of
 * the parent are inside libwms. Those threads do not exist in the child, so
 * valgrind's exit-time leak check would call the blocks only they point to
 * lost there, though nothing leaked. Under valgrind, child_leaks_begin()
 * notes the bytes lost right after the fork; child_exit(code) ends the
 * child with 99 if the child made a memory error, or if more bytes are
 * lost than at the fork (what the child's frees let go of, they freed),
 * else with `code`, through exec("/bin/sh -c 'exit CODE'") so that the
 * exit-time check does not run. Natively: _exit(code). child_begin and
 * child_reap are the rest of a forked child's life in a test.
 */
#ifndef WMS_TEST_CHILD_EXIT_H
#define WMS_TEST_CHILD_EXIT_H

#include <signal.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>
#include <sys/types.h>
#include <sys/wait.h>
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

/* Right after fork(), in the child (child_begin does it). */
static inline void child_leaks_begin(void)
{
	if (RUNNING_ON_VALGRIND)
		child_lost_at_fork = child_lost_now();
}

/* Right after fork(), in the child: the fatal signals back to their
 * defaults (a test framework's handlers would go on running tests in the
 * child), the bytes lost noted, and an alarm that ends a hang. */
static inline void child_begin(unsigned alarm_s)
{
	static const int fatal[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGSYS, SIGABRT };
	size_t i;
	for (i = 0; i < sizeof(fatal) / sizeof(fatal[0]); i++)
		signal(fatal[i], SIG_DFL);
	child_leaks_begin();
	alarm(alarm_s);
}

/* In the parent: wait for the child, killed past limit_s seconds. Its exit
 * code (0: all went well; otherwise `why` says what it means), or -1 when
 * it did not exit (killed by a signal, its alarm or this limit: `why`
 * says which). */
static inline int child_reap(pid_t pid, unsigned limit_s, char *why, size_t why_size)
{
	struct timespec now, end, nap = { 0, 2000000L };
	pid_t got;
	int status = 0;

	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += (time_t)limit_s;
	while ((got = waitpid(pid, &status, WNOHANG)) == 0) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec > end.tv_sec || (now.tv_sec == end.tv_sec && now.tv_nsec >= end.tv_nsec))
			break;
		nanosleep(&nap, NULL);
	}
	if (got == 0) {
		kill(pid, SIGKILL);
		(void)waitpid(pid, &status, 0);
		snprintf(why, why_size, "the child outlived %u s (killed)", limit_s);
		return -1;
	}
	if (got != pid) {
		snprintf(why, why_size, "waitpid: %ld", (long)got);
		return -1;
	}
	if (WIFSIGNALED(status)) {
		snprintf(why, why_size, "the child died of signal %d%s", WTERMSIG(status),
			 WTERMSIG(status) == SIGALRM ? " (its alarm: something hung)" : "");
		return -1;
	}
	if (WEXITSTATUS(status) != 0)
		snprintf(why, why_size, "the child exited %d: %s", WEXITSTATUS(status),
			 WEXITSTATUS(status) == 99  ? "valgrind found errors or leaks in it"
			 : WEXITSTATUS(status) == 1 ? "a sanitizer's report (its stderr)"
						    : "that check failed (its stderr says which)");
	return WEXITSTATUS(status);
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
