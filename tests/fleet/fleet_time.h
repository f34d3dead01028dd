/* Time in the fleet tests: the monotonic clock in ms, a sleep that
 * finishes, and budgets scaled for valgrind (build_kind.h). */
#ifndef WMS_TEST_FLEET_TIME_H
#define WMS_TEST_FLEET_TIME_H

#include <errno.h>
#include <time.h>
#include "build_kind.h"

static inline double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static inline void sleep_ms(unsigned ms)
{
	struct timespec ts = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static inline int valgrind(void)
{
	return tk_build_kind() == TK_VALGRIND;
}

/* A wait's limit: valgrind runs everything ten times slower, and more. */
static inline double limit(double ms)
{
	return valgrind() ? ms * 10 + 3000 : ms;
}

#endif
