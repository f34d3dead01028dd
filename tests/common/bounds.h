/* What the tests that cross a limit on both sides share: a row's option
 * field, set by where it is in its struct, and text of an exact length
 * whose ends show any cut. Header only. */
#ifndef WMS_TESTS_BOUNDS_H
#define WMS_TESTS_BOUNDS_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

/* One field of an options struct, by where it is, and the value a row
 * gives it (size 0: no field). */
typedef struct option_field {
	size_t off, size;
	uint64_t value;
} option_field;

#define OPTION_FIELD(type, f, v) { offsetof(type, f), sizeof(((type *)0)->f), (v) }
#define NO_FIELD { 0, 0, 0 }

/* Sets the field of `opts` the row names (a 32- or 64-bit one; the value
 * must fit it). */
static inline void set_option_field(void *opts, const option_field *f)
{
	unsigned char *at = (unsigned char *)opts + f->off;
	if (f->size == sizeof(uint32_t)) {
		uint32_t v = (uint32_t)f->value;
		assert_int_equal(v, f->value); /* the row fits its field */
		memcpy(at, &v, sizeof(v));
	} else if (f->size == sizeof(uint64_t)) {
		memcpy(at, &f->value, sizeof(f->value));
	} else {
		assert_int_equal(f->size, 0);
	}
}

/* `n` (>= 2) bytes into buf (room for n + 1): `first`, then `fill`, then
 * `last`, NUL-terminated; a cut anywhere shows at the end. */
static inline void fill_text(char *buf, size_t n, char first, char fill, char last)
{
	memset(buf, fill, n);
	buf[0] = first;
	buf[n - 1] = last;
	buf[n] = '\0';
}

#endif
