/* What a test runs under, to scale its time budgets: a sanitizer is known
 * at compile time, valgrind from WMS_UNDER_VALGRIND=1 (set by `meson test
 * --setup=valgrind`). One copy for every suite. */
#ifndef WMS_TEST_BUILD_KIND_H
#define WMS_TEST_BUILD_KIND_H

#include <stdlib.h>
#include <string.h>

#if defined(__SANITIZE_THREAD__)
#define TK_TSAN_BUILD 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TK_TSAN_BUILD 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define TK_ASAN_BUILD 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TK_ASAN_BUILD 1
#endif
#endif

typedef enum tk_kind { TK_PLAIN = 0, TK_ASAN = 1, TK_TSAN = 2, TK_VALGRIND = 3 } tk_kind;

static inline tk_kind tk_build_kind(void)
{
	const char *v = getenv("WMS_UNDER_VALGRIND");
	if (v && *v && strcmp(v, "0") != 0)
		return TK_VALGRIND;
#if defined(TK_TSAN_BUILD)
	return TK_TSAN;
#elif defined(TK_ASAN_BUILD)
	return TK_ASAN;
#else
	return TK_PLAIN;
#endif
}

/* How many times a plain build's time budget a test may grant: valgrind
 * runs code 20-50 times slower and one thread at a time, TSan several
 * times slower, ASan about twice. A bound written as plain_ms *
 * tk_slowdown() holds its meaning in a plain build and does not flake
 * under the tools. */
static inline unsigned tk_slowdown(void)
{
	switch (tk_build_kind()) {
	case TK_VALGRIND:
		return 50;
	case TK_TSAN:
		return 10;
	case TK_ASAN:
		return 3;
	default:
		return 1;
	}
}

#endif
