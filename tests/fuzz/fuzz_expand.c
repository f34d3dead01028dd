/*
 * Structure-aware expansion of fuzz inputs (fuzz.h, README.md "Macros").
 *
 * Random mutation never writes 257 attributes, 4097 distinct names or
 * 100 001 elements, so it never crosses the limits the library sets. A
 * macro says "repeat this fragment K times, with the repetition's index in
 * it", in a few bytes that mutation edits easily, K chosen from a table of
 * the library's bounds plus a small signed offset:
 *
 *   0x1E OP ARG BODY 0x1F
 *
 *   OP 0x00-0x9F  repeat BODY K times, K = BASE[OP & 0x1F] + ARG - 128
 *                 (at least 0)
 *   OP 0xA0-0xBF  encode BODY's expansion: OP & 7 picks UTF-16LE with a
 *                 BOM, UTF-16BE with a BOM, UTF-16LE, UTF-16BE (byte by byte,
 *                 0x01 standing for U+3D00: hx_utf16), UCS-4LE, UCS-4BE, a
 *                 UTF-8 BOM then BODY, UTF-16LE with a BOM from UTF-8 (non-BMP
 *                 characters as surrogate pairs; bytes that are not UTF-8 as
 *                 U+FFFD); ARG is ignored
 *   OP 0xC0-0xDF  primer: at the top level BODY's expansion is a separate
 *                 document the harness feeds first (the reply parser's
 *                 reused workspace parses it before the input); nested, it
 *                 is dropped; ARG is ignored
 *   OP 0xE0-0xFF  the byte ARG itself (no BODY, no 0x1F): how a literal
 *                 0x1C-0x1F gets through
 *
 * In a BODY, 0x1D stands for the index (0, 1, ... in decimal) of the
 * innermost repeat around it and 0x1C for the index of the repeat around
 * that one (0 when there is none); outside any repeat both are themselves.
 * 0x1F ends the innermost open macro (a 0x1F outside any is itself); a
 * macro left open ends with its enclosing BODY or the input. Macros nest
 * FUZZ_EXPAND_DEPTH deep; a 0x1E deeper than that is itself. Expansion is a
 * pure function of the input.
 *
 * Size: a repetition that would take its output past the cap is dropped
 * and ends its repeat (an encoding likewise, and its BODY is expanded only
 * as far as its encoding can fit), so the output stays within the cap plus
 * the input's own bytes; a repetition that expands to nothing ends its
 * repeat too (all of them would). Work, dropped bytes included, stops at
 * 8 times the cap: cost is linear in the cap.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fuzz.h"
#include "hostile_xml.h"

/* The counts a repeat's OP picks (OP & 0x1F), near which the library's
 * bounds lie; ARG - 128 moves them by -128..127. */
static const size_t base[32] = {
	0,        40,      64,      128,     256,      512,     1000,    1024,
	2000,     2048,    4096,    8192,    10000,    16384,   32768,   50000,
	65536,    100000,  131072,  262144,  524288,   1048576, 2097152, 4194304,
	67108864, 16,      32,      100,     200,      500,     3600,    20000,
};

size_t fuzz_macro_count(uint8_t op, uint8_t arg)
{
	size_t b = base[op & 0x1Fu];
	if (arg >= 128)
		return b + (size_t)(arg - 128);
	return b >= (size_t)(128 - arg) ? b - (size_t)(128 - arg) : 0;
}

typedef struct expander {
	const uint8_t *end; /* of the input */
	size_t cap;
	size_t work, budget; /* bytes expanded, dropped ones too; at most budget */
	fuzz_bytes *primer;
	size_t idx[FUZZ_EXPAND_DEPTH + 1]; /* indexes of the open repeats */
	int repeats;                        /* how many are open */
} expander;

/* Where the BODY starting at p ends: at its 0x1F (returned, not consumed)
 * or at `end`. Nested macros are skipped whole; `depth` is the nesting of
 * the macro whose BODY this is. */
static const uint8_t *body_end(const uint8_t *p, const uint8_t *end, int depth)
{
	while (p < end) {
		if (*p == FUZZ_MACRO_END)
			return p;
		if (*p == FUZZ_MACRO && depth < FUZZ_EXPAND_DEPTH && end - p >= 3) {
			uint8_t op = p[1];
			p += 3;
			if (op >= 0xE0)
				continue;
			p = body_end(p, end, depth + 1);
			if (p < end)
				p++; /* its 0x1F */
			continue;
		}
		p++;
	}
	return end;
}

/* Whether [p, end) expands to the same bytes for every index: no placeholder
 * and no macro in it. */
static int constant(const uint8_t *p, const uint8_t *end)
{
	for (; p < end; p++)
		if (*p == FUZZ_MACRO || *p == FUZZ_MACRO_INDEX || *p == FUZZ_MACRO_OUTER)
			return 0;
	return 1;
}

static void expand(expander *x, const uint8_t *p, const uint8_t *end, int depth, fuzz_bytes *out,
		   size_t cap);

static void put_index(fuzz_bytes *out, size_t i)
{
	char d[24];
	int n = snprintf(d, sizeof(d), "%zu", i);
	fuzz_bytes_add(out, d, (size_t)n);
}

/* `count` repetitions of [p, end) into out, within `cap` bytes of out. */
static void repeat(expander *x, const uint8_t *p, const uint8_t *end, int depth, size_t count,
		   fuzz_bytes *out, size_t cap)
{
	size_t i, start;

	if (!count)
		return;
	if (constant(p, end)) {
		/* One copy, then doubling: the same bytes, fast. */
		size_t one = (size_t)(end - p), have = 1, n;
		if (!one || out->len + one > cap)
			return;
		start = out->len;
		fuzz_bytes_add(out, p, one);
		while (have < count && out->len + one <= cap) {
			n = have <= count - have ? have : count - have;
			if (out->len + n * one > cap)
				n = (cap - out->len) / one;
			/* its own bytes: room first, data may move */
			fuzz_bytes_reserve(out, n * one);
			memcpy(out->data + out->len, out->data + start, n * one);
			out->len += n * one;
			out->data[out->len] = 0;
			have += n;
		}
		return;
	}
	x->idx[x->repeats++] = 0;
	for (i = 0; i < count && x->work <= x->budget; i++) {
		start = out->len;
		x->idx[x->repeats - 1] = i;
		expand(x, p, end, depth, out, cap);
		x->work += out->len - start;
		if (out->len == start)
			break;
		if (out->len > cap) {
			out->len = start;
			out->data[start] = 0;
			break;
		}
	}
	x->repeats--;
}

/* UTF-8 to UTF-16LE, non-BMP characters as surrogate pairs; a byte that
 * does not start a valid sequence becomes U+FFFD. `s` is NUL-terminated
 * (a fuzz_bytes), as wms__utf8_decode needs. */
static void utf8_to_utf16le(fuzz_bytes *out, const uint8_t *s, size_t n)
{
	size_t i = 0, k;
	while (i < n) {
		uint32_t c;
		uint8_t u[4];
		k = wms__utf8_decode(s + i, &c);
		if (!k || i + k > n) {
			c = 0xFFFD;
			k = 1;
		}
		i += k;
		if (c >= 0x10000) {
			uint32_t v = c - 0x10000, hi = 0xD800 | (v >> 10), lo = 0xDC00 | (v & 0x3FF);
			u[0] = (uint8_t)hi;
			u[1] = (uint8_t)(hi >> 8);
			u[2] = (uint8_t)lo;
			u[3] = (uint8_t)(lo >> 8);
			fuzz_bytes_add(out, u, 4);
		} else {
			u[0] = (uint8_t)c;
			u[1] = (uint8_t)(c >> 8);
			fuzz_bytes_add(out, u, 2);
		}
	}
}

/* [p, end) expanded, then encoded `how`, into out within `cap` bytes: the
 * BODY's own expansion stops where its encoding could no longer fit. */
static void encode(expander *x, const uint8_t *p, const uint8_t *end, int depth, unsigned how,
		   fuzz_bytes *out, size_t cap)
{
	static const size_t factor[8] = { 2, 2, 2, 2, 4, 4, 1, 2 }, extra[8] = { 2, 2, 0, 0, 0, 0, 3, 2 };
	fuzz_bytes body = { NULL, 0, 0 }, enc = { NULL, 0, 0 };
	size_t i, room = cap > out->len + extra[how] ? cap - out->len - extra[how] : 0;

	if (!room)
		return;
	expand(x, p, end, depth, &body, room / factor[how]);
	x->work += body.len;
	switch (how) {
	case 0:
	case 1:
	case 2:
	case 3: {
		hx_buf h = { NULL, 0, 0 };
		hx_utf16(&h, body.data ? (const char *)body.data : "", body.len, how & 1, how < 2);
		fuzz_bytes_add(&enc, h.data, h.len);
		hx_free(&h);
		break;
	}
	case 4:
	case 5:
		for (i = 0; i < body.len; i++) {
			uint8_t u[4] = { 0, 0, 0, 0 };
			u[how == 4 ? 0 : 3] = body.data[i];
			fuzz_bytes_add(&enc, u, 4);
		}
		break;
	case 6:
		fuzz_bytes_add(&enc, "\xef\xbb\xbf", 3);
		fuzz_bytes_add(&enc, body.data, body.len);
		break;
	default:
		fuzz_bytes_add(&enc, "\xff\xfe", 2);
		utf8_to_utf16le(&enc, body.data, body.len);
		break;
	}
	if (out->len + enc.len <= cap)
		fuzz_bytes_add(out, enc.data, enc.len);
	fuzz_bytes_free(&body);
	fuzz_bytes_free(&enc);
}

/* Expand [p, end), the BODY of a macro `depth` deep (0: the input), into
 * out; repeats and encodings within `cap` bytes of out. */
static void expand(expander *x, const uint8_t *p, const uint8_t *end, int depth, fuzz_bytes *out,
		   size_t cap)
{
	while (p < end && x->work <= x->budget) {
		const uint8_t *lit = p, *b, *be;
		uint8_t op, arg;

		while (p < end && *p != FUZZ_MACRO && !(x->repeats && (*p == FUZZ_MACRO_INDEX ||
								       *p == FUZZ_MACRO_OUTER)))
			p++;
		if (p > lit)
			fuzz_bytes_add(out, lit, (size_t)(p - lit));
		if (p == end)
			return;
		if (*p != FUZZ_MACRO) {
			put_index(out, *p == FUZZ_MACRO_INDEX ? x->idx[x->repeats - 1]
					: x->repeats > 1 ? x->idx[x->repeats - 2] : 0);
			p++;
			continue;
		}
		if (depth >= FUZZ_EXPAND_DEPTH || end - p < 3) {
			fuzz_bytes_add(out, p, 1);
			p++;
			continue;
		}
		op = p[1];
		arg = p[2];
		p += 3;
		if (op >= 0xE0) {
			fuzz_bytes_add(out, &arg, 1);
			continue;
		}
		b = p;
		be = body_end(b, end, depth + 1);
		p = be < end ? be + 1 : end;
		if (op < 0xA0) {
			repeat(x, b, be, depth + 1, fuzz_macro_count(op, arg), out, cap);
		} else if (op < 0xC0) {
			encode(x, b, be, depth + 1, op & 7u, out, cap);
		} else if (depth == 0 && x->primer) {
			size_t before = x->primer->len;
			expand(x, b, be, depth + 1, x->primer, x->cap);
			if (x->primer->len > x->cap) {
				x->primer->len = before;
				x->primer->data[before] = 0;
			}
		}
	}
}

int fuzz_expand(const uint8_t *data, size_t size, size_t cap, fuzz_bytes *out, fuzz_bytes *primer)
{
	static size_t env_cap = (size_t)-1;
	expander x;

	if (env_cap == (size_t)-1) {
		const char *v = getenv("FUZZ_EXPAND_MAX");
		env_cap = v && *v ? (size_t)strtoull(v, NULL, 10) : 0;
	}
	if (env_cap && env_cap < cap)
		cap = env_cap;

	if (primer)
		fuzz_bytes_reset(primer);
	if (!size || !memchr(data, FUZZ_MACRO, size))
		return 0;
	memset(&x, 0, sizeof(x));
	x.end = data + size;
	x.cap = cap;
	/* Repetitions dropped at the cap cost work too: past this much, the
	 * expansion ends where it is. */
	x.budget = 8 * cap + size;
	x.primer = primer;
	fuzz_bytes_reset(out);
	fuzz_bytes_add(out, "", 0); /* data is never NULL, even when empty */
	if (primer)
		fuzz_bytes_add(primer, "", 0);
	expand(&x, data, data + size, 0, out, cap);
	return 1;
}

void fuzz_macro_repeat(fuzz_bytes *b, size_t count)
{
	uint8_t m[3];
	size_t i, best = 0;
	/* The largest base at or below count within reach (OP 0x20-0x3F, ARG
	 * 0x01-0xFF: never a NUL, so a seed stays a C string). */
	for (i = 0; i < sizeof(base) / sizeof(base[0]); i++)
		if (base[i] <= count && count - base[i] <= 127 && base[i] >= base[best])
			best = i;
	if (base[best] > count || count - base[best] > 127)
		for (i = 0; i < sizeof(base) / sizeof(base[0]); i++)
			if (base[i] > count && base[i] - count <= 127)
				best = i;
	FUZZ_CHECK((base[best] <= count && count - base[best] <= 127) ||
			   (base[best] > count && base[best] - count <= 127),
		   "no repeat macro makes %zu repetitions", count);
	m[0] = FUZZ_MACRO;
	m[1] = (uint8_t)(0x20u | best); /* the same base as OP `best`, and no NUL */
	m[2] = (uint8_t)(base[best] <= count ? 128 + (count - base[best]) : 128 - (base[best] - count));
	fuzz_bytes_add(b, m, 3);
}

void fuzz_macro_fill(fuzz_bytes *b, size_t count, const char *fragment)
{
	while (count) {
		size_t i, best = 0, n;
		for (i = 0; i < sizeof(base) / sizeof(base[0]); i++)
			if (base[i] <= count && base[i] > base[best])
				best = i;
		n = count - base[best] > 127 ? base[best] + 127 : count;
		fuzz_macro_repeat(b, n);
		fuzz_bytes_add(b, fragment, strlen(fragment));
		fuzz_bytes_add(b, "\x1f", 1);
		count -= n;
	}
}
