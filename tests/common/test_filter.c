/* Every cmocka test program of the tree runs only the tests whose names
 * match WMS_TEST_FILTER (a glob, e.g. to loop one test under valgrind or
 * TSan) and skips those matching WMS_TEST_SKIP. Linked into each test
 * program (tests/meson.build's unit_deps), it sets cmocka's filters before
 * main runs, so no program repeats it. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <setjmp.h>
#include <cmocka.h>

__attribute__((constructor)) static void filters_from_env(void)
{
	const char *only = getenv("WMS_TEST_FILTER"), *skip = getenv("WMS_TEST_SKIP");
	if (only && *only)
		cmocka_set_test_filter(only);
	if (skip && *skip)
		cmocka_set_skip_filter(skip);
}
