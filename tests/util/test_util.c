/*
 * The base tier on its own (src/util/): each helper at its bounds, on both
 * sides, twice where a second call could see what the first left.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <pthread.h>

#include "util/affine.h"
#include "util/alloc.h"
#include "util/base64.h"
#include "util/buf.h"
#include "util/heap.h"
#include "util/json.h"
#include "util/num.h"
#include "util/str.h"
#include "util/utf8.h"
#include "wms/sys/alloc.h"

static void numbers(void **state)
{
	static const struct {
		const char *s;
		uint64_t lo, hi;
		int rc;
		uint64_t v;
	} cases[] = {
		{ "0", 0, 10, WMS__NUM_OK, 0 },
		{ "10", 0, 10, WMS__NUM_OK, 10 },
		{ "11", 0, 10, WMS__NUM_RANGE, 0 },
		{ "4", 5, 10, WMS__NUM_RANGE, 0 },
		{ "5", 5, 10, WMS__NUM_OK, 5 },
		{ "007", 0, 10, WMS__NUM_OK, 7 }, /* leading zeros: the caller's */
		{ "4294967295", 0, UINT32_MAX, WMS__NUM_OK, UINT32_MAX },
		{ "4294967296", 0, UINT32_MAX, WMS__NUM_RANGE, 0 },
		{ "18446744073709551615", 0, UINT64_MAX, WMS__NUM_OK, UINT64_MAX },
		{ "18446744073709551616", 0, UINT64_MAX, WMS__NUM_RANGE, 0 },
		{ "99999999999999999999999", 0, UINT64_MAX, WMS__NUM_RANGE, 0 },
		{ "", 0, 10, WMS__NUM_NOT_DIGITS, 0 },
		{ "-1", 0, 10, WMS__NUM_NOT_DIGITS, 0 },
		{ "+1", 0, 10, WMS__NUM_NOT_DIGITS, 0 },
		{ " 1", 0, 10, WMS__NUM_NOT_DIGITS, 0 },
		{ "\t1", 0, 10, WMS__NUM_NOT_DIGITS, 0 },
		{ "1 ", 0, 10, WMS__NUM_NOT_DIGITS, 0 },
		{ "1x", 0, 10, WMS__NUM_NOT_DIGITS, 0 },
		{ "0x1", 0, 10, WMS__NUM_NOT_DIGITS, 0 },
	};
	size_t i;
	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint64_t v = 12345;
		int rc = wms__parse_uint_str(cases[i].s, cases[i].lo, cases[i].hi, &v);
		if (rc != cases[i].rc)
			fail_msg("\"%s\": %d, expected %d", cases[i].s, rc, cases[i].rc);
		assert_int_equal(v, rc == WMS__NUM_OK ? cases[i].v : 12345); /* untouched unless OK */
	}
	{
		uint64_t v;
		assert_int_equal(wms__parse_uint_str(NULL, 0, 1, &v), WMS__NUM_NOT_DIGITS);
		/* a length, not the NUL: "12" of "123" */
		assert_int_equal(wms__parse_uint("123", 2, 0, 100, &v), WMS__NUM_OK);
		assert_int_equal(v, 12);
		assert_int_equal(wms__parse_uint("123", 0, 0, 100, &v), WMS__NUM_NOT_DIGITS);
	}
}

/* wms__format_uint writes what snprintf's "%0*llu" writes: at each power of
 * ten on both sides, at 0 and 2^64-1, padded to nothing, to 6, to 20 (the
 * most) and past it (clamped); each value twice, into a buffer filled with a
 * different byte each time, and nothing written past the NUL. */
static void format_uint_as_snprintf(void **state)
{
	static const unsigned pads[] = { 0, 1, 6, 19, 20, 21, 64 };
	uint64_t vals[64];
	size_t nv = 0, i, j;
	uint64_t p = 1;
	int round;
	(void)state;
	vals[nv++] = 0;
	vals[nv++] = UINT64_MAX;
	vals[nv++] = UINT64_MAX - 1;
	for (i = 0; i < 19; i++, p *= 10) {
		vals[nv++] = p;
		vals[nv++] = p - 1;
		vals[nv++] = p + 1;
	}
	vals[nv++] = p; /* 10^19 */
	vals[nv++] = p - 1;
	for (i = 0; i < nv; i++)
		for (j = 0; j < sizeof(pads) / sizeof(pads[0]); j++)
			for (round = 0; round < 2; round++) {
				char got[WMS__UINT_TEXT_MAX + 8], want[64];
				unsigned pad = pads[j] > 20 ? 20 : pads[j];
				size_t n;
				memset(got, round ? '7' : 'x', sizeof(got));
				n = wms__format_uint(got, vals[i], pads[j]);
				snprintf(want, sizeof(want), "%0*llu", (int)pad,
					 (unsigned long long)vals[i]);
				assert_string_equal(got, want);
				assert_int_equal(n, strlen(want));
				assert_true(n < WMS__UINT_TEXT_MAX);
				assert_int_equal(got[WMS__UINT_TEXT_MAX], round ? '7' : 'x');
			}
}

static void expect_json(const char *in, const char *want)
{
	wms__buf b = { 0 };
	int round;
	for (round = 0; round < 2; round++) {
		b.len = 0;
		assert_int_equal(wms__json_string(&b, in), WMS_OK);
		if (strcmp(b.data, want))
			fail_msg("json of \"%s\": %s, expected %s", in, b.data, want);
	}
	wms__buf_free(&b);
}

static int stop_after(void *payload, const char *p, size_t n)
{
	int *left = payload;
	(void)p;
	(void)n;
	return --*left <= 0 ? 7 : 0;
}

static void json_strings(void **state)
{
	int left;
	(void)state;
	expect_json("", "\"\"");
	expect_json("plain", "\"plain\"");
	expect_json("q\"b\\", "\"q\\\"b\\\\\"");
	expect_json("a\nb\tc\r\x01\x1f\x7f", "\"a\\nb\\tc\\u000d\\u0001\\u001f\\u007f\"");
	expect_json("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x93\xa6", "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x93\xa6\"");
	expect_json("\xff", "\"\\ufffd\"");
	expect_json("ok\xc3", "\"ok\\ufffd\"");
	expect_json("\xc0\xaf", "\"\\ufffd\\ufffd\"");           /* overlong */
	expect_json("\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\""); /* a surrogate */
	expect_json("\xf4\x90\x80\x80", "\"\\ufffd\\ufffd\\ufffd\\ufffd\""); /* past U+10FFFF */
	expect_json("\xf4\x8f\xbf\xbf", "\"\xf4\x8f\xbf\xbf\"");              /* U+10FFFF */
	/* a sink that stops: its status comes back, nothing more is put */
	left = 3;
	assert_int_equal(wms__json_string_to("abcdef", stop_after, &left), 7);
	assert_int_equal(left, 0);
	left = 1;
	assert_int_equal(wms__json_string_to("", stop_after, &left), 7);
}

static void utf8_and_strings(void **state)
{
	char dst[4];
	uint32_t cp = 0;
	(void)state;
	assert_int_equal(wms__utf8_decode((const unsigned char *)"\xdf\xbf", &cp), 2);
	assert_int_equal(cp, 0x7FF);
	assert_int_equal(wms__utf8_decode((const unsigned char *)"\xe0\x9f\xbf", &cp), 0); /* overlong */
	assert_int_equal(wms__utf8_decode((const unsigned char *)"\xe0\xa0\x80", &cp), 3);
	assert_int_equal(cp, 0x800);
	assert_int_equal(wms__utf8_decode((const unsigned char *)"\xc3", &cp), 0); /* cut at the NUL */
	assert_int_equal(wms__utf8_whole("ab\xc3\xa9", 3), 2);
	assert_int_equal(wms__utf8_whole("ab\xc3\xa9", 4), 4);
	assert_true(wms__utf8_text_ok("caf\xc3\xa9"));
	assert_false(wms__utf8_text_ok("a\x7f"));
	assert_false(wms__utf8_text_ok("a\xc2\x85")); /* C1 */
	/* a field of 4: 3 bytes fit, a character across the cut goes */
	wms__strlcpy(dst, "abc", sizeof(dst));
	assert_string_equal(dst, "abc");
	wms__strlcpy(dst, "abcd", sizeof(dst));
	assert_string_equal(dst, "abc");
	wms__strlcpy(dst, "ab\xc3\xa9", sizeof(dst));
	assert_string_equal(dst, "ab");
	wms__strlcpy(dst, NULL, sizeof(dst));
	assert_string_equal(dst, "");
	{
		static const char hay[] = "xxabxab";
		assert_ptr_equal(wms__find(hay, hay + 7, "ab", 2), hay + 2);
		assert_ptr_equal(wms__find(hay + 3, hay + 7, "ab", 2), hay + 5);
		assert_null(wms__find(hay, hay + 3, "ab", 2)); /* "xxa": the b is past the end */
		assert_null(wms__find(hay + 6, hay + 7, "ab", 2));
		assert_ptr_equal(wms__find(hay, hay + 7, "", 0), hay);
	}
}

static void buffers(void **state)
{
	wms__buf b = { 0 };
	size_t i;
	(void)state;
	/* past the first 256 bytes and on, twice on one buffer */
	for (i = 0; i < 2; i++) {
		size_t n;
		b.len = 0;
		for (n = 0; n < 255; n++)
			assert_int_equal(wms__buf_append(&b, "x", 1), WMS_OK);
		assert_int_equal(b.cap, i == 0 ? 256 : 2048); /* 255 and the NUL; kept */
		assert_int_equal(wms__buf_append(&b, "y", 1), WMS_OK);
		assert_int_equal(b.cap, i == 0 ? 512 : 2048);
		assert_int_equal(b.len, 256);
		assert_int_equal(b.data[256], '\0');
		assert_int_equal(wms__buf_printf(&b, "%0*d", 1000, 7), WMS_OK);
		assert_int_equal(b.len, 1256);
		assert_int_equal(b.data[1255], '7');
		assert_int_equal(b.cap, 2048);
	}
	assert_int_equal(wms__buf_reserve(&b, SIZE_MAX), WMS_ERR_NOMEM);
	assert_int_equal(b.len, 1256);
	wms__buf_free(&b);
	assert_null(b.data);
	wms__buf_free(&b);
	wms__buf_free(NULL);
}

/* RFC 4648's vectors both ways, white space skipped, each refusal with
 * its offset, and the encoder's room at its bound. */
static void base64(void **state)
{
	static const char *const plain[] = { "", "f", "fo", "foo", "foob", "fooba", "foobar" };
	static const char *const coded[] = { "", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=",
					     "Zm9vYmFy" };
	static const struct {
		const char *in;
		wms__base64_error why;
		size_t at;
	} bad[] = {
		{ "Z===", WMS__B64_MISPLACED_PAD, 1 }, { "=AAA", WMS__B64_MISPLACED_PAD, 0 },
		{ "Zg===", WMS__B64_MISPLACED_PAD, 4 }, { "Zg=A", WMS__B64_BAD_CHAR, 3 },
		{ "Zg==Zg==", WMS__B64_BAD_CHAR, 4 }, { "Zm9v!", WMS__B64_BAD_CHAR, 4 },
		{ "Zm-v", WMS__B64_BAD_CHAR, 2 }, { "Zm9", WMS__B64_LENGTH, 3 },
		{ "Zg=", WMS__B64_LENGTH, 3 },
	};
	wms__buf b = { 0 };
	char out[16];
	size_t i, at;
	wms__base64_error why;
	(void)state;
	for (i = 0; i < sizeof(plain) / sizeof(plain[0]); i++) {
		size_t n = strlen(plain[i]);
		assert_int_equal(wms__base64_len(n), strlen(coded[i]));
		/* room for the text and its NUL, not one byte less */
		assert_int_equal(wms__base64_encode(out, strlen(coded[i]), plain[i], n),
				 WMS_ERR_INVALID_ARG);
		assert_int_equal(wms__base64_encode(out, strlen(coded[i]) + 1, plain[i], n), WMS_OK);
		assert_string_equal(out, coded[i]);
		b.len = 0;
		assert_int_equal(wms__base64_decode(&b, coded[i], strlen(coded[i]), &why, &at), WMS_OK);
		assert_int_equal(b.len, n);
		assert_memory_equal(b.data ? b.data : "", plain[i], n);
	}
	/* appended, white space anywhere */
	b.len = 0;
	assert_int_equal(wms__buf_append(&b, "<", 1), WMS_OK);
	assert_int_equal(wms__base64_decode(&b, " Zm9v\r\nYm\tFy \n", 14, &why, &at), WMS_OK);
	assert_string_equal(b.data, "<foobar");
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		b.len = 0;
		assert_int_equal(wms__base64_decode(&b, bad[i].in, strlen(bad[i].in), &why, &at),
				 WMS_ERR_INVALID_ARG);
		if (why != bad[i].why || at != bad[i].at)
			fail_msg("\"%s\": error %d at %zu, expected %d at %zu", bad[i].in, (int)why, at,
				 (int)bad[i].why, bad[i].at);
		assert_int_equal(b.len, 0);
	}
	wms__buf_free(&b);
}

/* Through OpenSSL's codec a chunk at a time: at one chunk and one byte
 * past it, each way, the same as a byte-by-byte reference. */
static void base64_across_a_chunk(void **state)
{
	static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t sizes[] = { WMS__BASE64_CHUNK - 1, WMS__BASE64_CHUNK, WMS__BASE64_CHUNK + 1,
			   2 * WMS__BASE64_CHUNK + 2 };
	size_t s, i, at;
	wms__base64_error why;
	(void)state;
	for (s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		size_t n = sizes[s], tl = wms__base64_len(n);
		unsigned char *in = malloc(n);
		char *text = malloc(tl + 1), *ref = malloc(tl + 1);
		wms__buf b = { 0 };
		assert_non_null(in);
		assert_non_null(text);
		assert_non_null(ref);
		for (i = 0; i < n; i++)
			in[i] = (unsigned char)(i * 2654435761u >> 13);
		for (i = 0; i < n; i += 3) { /* the reference: RFC 4648 by hand */
			unsigned v = (unsigned)in[i] << 16 | (i + 1 < n ? (unsigned)in[i + 1] << 8 : 0) |
				     (i + 2 < n ? in[i + 2] : 0);
			ref[i / 3 * 4] = tab[v >> 18 & 63];
			ref[i / 3 * 4 + 1] = tab[v >> 12 & 63];
			ref[i / 3 * 4 + 2] = i + 1 < n ? tab[v >> 6 & 63] : '=';
			ref[i / 3 * 4 + 3] = i + 2 < n ? tab[v & 63] : '=';
		}
		ref[tl] = '\0';
		assert_int_equal(wms__base64_encode(text, tl + 1, in, n), WMS_OK);
		assert_int_equal(strlen(text), tl);
		if (memcmp(text, ref, tl + 1) != 0)
			fail_msg("%zu bytes: the text differs from the reference", n);
		assert_int_equal(wms__base64_decode(&b, text, tl, &why, &at), WMS_OK);
		assert_int_equal(b.len, n);
		if (memcmp(b.data, in, n) != 0)
			fail_msg("%zu bytes: decoded differ", n);
		wms__buf_free(&b);
		free(in);
		free(text);
		free(ref);
	}
}

/* ---- thread-affine stacks ------------------------------------------------ */

typedef struct affine_arg {
	wms__affine_slot *slots;
	size_t *count;
	void *item; /* give this, or */
	void *taken; /* what a take returned */
	int take;
} affine_arg;

static void *affine_thread(void *p)
{
	affine_arg *a = p;
	if (a->take)
		a->taken = wms__affine_take(a->slots, a->count);
	else
		wms__affine_give(a->slots, a->count, a->item);
	return NULL;
}

static void affine_other_thread(wms__affine_slot *slots, size_t *count, void *item, int take,
				void **taken)
{
	pthread_t t;
	affine_arg a = { slots, count, item, NULL, take };
	assert_int_equal(pthread_create(&t, NULL, affine_thread, &a), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	if (taken)
		*taken = a.taken;
}

static void affine_stacks(void **state)
{
	wms__affine_slot slots[4];
	size_t count = 0;
	int a1, a2, b1, b2;
	void *got = NULL;
	int round;
	(void)state;

	assert_null(wms__affine_take(slots, &count));
	assert_int_equal(count, 0);
	assert_true(wms__thread_tag() == wms__thread_tag());
	/* twice on one stack: the preference is kept after a full cycle */
	for (round = 0; round < 2; round++) {
		/* this thread gives a1, a2; another b1, b2 on top */
		wms__affine_give(slots, &count, &a1);
		wms__affine_give(slots, &count, &a2);
		affine_other_thread(slots, &count, &b1, 0, NULL);
		affine_other_thread(slots, &count, &b2, 0, NULL);
		assert_int_equal(count, 4);
		/* this thread: its own, most recent first, under the other's */
		assert_ptr_equal(wms__affine_take(slots, &count), &a2);
		assert_int_equal(count, 3);
		/* the rest kept their order: b2 still on top, a1 at the bottom */
		assert_ptr_equal(slots[0].item, &a1);
		assert_ptr_equal(slots[1].item, &b1);
		assert_ptr_equal(slots[2].item, &b2);
		assert_ptr_equal(wms__affine_take(slots, &count), &a1);
		/* none of its own left: the top, then the next */
		assert_ptr_equal(wms__affine_take(slots, &count), &b2);
		/* a thread with none of its own (a new one) gets the top */
		affine_other_thread(slots, &count, NULL, 1, &got);
		assert_ptr_equal(got, &b1);
		assert_int_equal(count, 0);
		affine_other_thread(slots, &count, NULL, 1, &got);
		assert_null(got);
	}
}

/* ---- the timers' heap ---------------------------------------------------- */

static uint64_t heap_rng = 88172645463325252u;
static uint64_t heap_rand(void)
{
	heap_rng ^= heap_rng << 13;
	heap_rng ^= heap_rng >> 7;
	heap_rng ^= heap_rng << 17;
	return heap_rng;
}

/* Every slot no earlier than its parent, names its node, which knows its
 * index and time; the nodes marked in are exactly the ones in it. */
static void heap_check(const wms__heap *h, wms__timer *nodes, const int *in, size_t n)
{
	size_t i, members = 0;
	assert_true(h->count <= h->cap);
	for (i = 0; i < h->count; i++) {
		assert_int_equal(h->items[i].t->index, i);
		assert_true(h->items[i].t->due_ns == h->items[i].due_ns);
		if (i > 0)
			assert_true(h->items[(i - 1) / 4].due_ns <= h->items[i].due_ns);
	}
	for (i = 0; i < n; i++) {
		if (in[i]) {
			members++;
			assert_true(nodes[i].index < h->count);
			assert_ptr_equal(h->items[nodes[i].index].t, &nodes[i]);
		} else {
			assert_int_equal(nodes[i].index, WMS__TIMER_UNSET);
		}
	}
	assert_int_equal(members, h->count);
	if (h->count) {
		uint64_t min = UINT64_MAX;
		for (i = 0; i < n; i++)
			if (in[i] && nodes[i].due_ns < min)
				min = nodes[i].due_ns;
		assert_true(wms__heap_top(h)->due_ns == min);
	} else {
		assert_null(wms__heap_top(h));
	}
}

/* Random sets (new, earlier, later, the same time), removals (of the top,
 * of any, of one not in) and drains, over sizes on both sides of a full
 * level of four and of the first allocation (16), with ties; twice on one
 * heap. */
static void heap_against_a_model(void **state)
{
	static const size_t sizes[] = { 1, 2, 4, 5, 6, 16, 17, 21, 22, 85, 86, 1000 };
	(void)state;
	for (size_t z = 0; z < sizeof(sizes) / sizeof(sizes[0]); z++) {
		size_t n = sizes[z];
		wms__timer *nodes = calloc(n, sizeof(*nodes));
		int *in = calloc(n, sizeof(*in));
		wms__heap h = { 0 };
		assert_non_null(nodes);
		assert_non_null(in);
		for (size_t i = 0; i < n; i++)
			wms__timer_init(&nodes[i]);
		for (int round = 0; round < 2; round++) {
			uint64_t span = round ? 8 : UINT64_MAX; /* round 1: ties */
			for (size_t step = 0; step < 20 * n + 50; step++) {
				size_t i = heap_rand() % n;
				unsigned op = (unsigned)(heap_rand() % 8);
				if (op < 4) {
					uint64_t due = op == 3 && in[i] ? nodes[i].due_ns
						     : heap_rand() % span;
					assert_int_equal(wms__heap_set(&h, &nodes[i], due), 0);
					in[i] = 1;
				} else if (op < 6) {
					wms__heap_remove(&h, &nodes[i]); /* in or not */
					in[i] = 0;
				} else if (h.count) {
					wms__timer *t = wms__heap_top(&h);
					wms__heap_remove(&h, t);
					in[t - nodes] = 0;
				}
				heap_check(&h, nodes, in, n);
			}
			/* drained in order */
			uint64_t last = 0;
			while (h.count) {
				wms__timer *t = wms__heap_top(&h);
				assert_true(t->due_ns >= last);
				last = t->due_ns;
				wms__heap_remove(&h, t);
				in[t - nodes] = 0;
				heap_check(&h, nodes, in, n);
			}
		}
		wms__heap_free(&h);
		assert_null(h.items);
		free(nodes);
		free(in);
	}
}

static int heap_fail_realloc;
static void *heap_malloc(size_t size, void *payload)
{
	(void)payload;
	return malloc(size);
}
static void *heap_realloc(void *p, size_t size, void *payload)
{
	(void)payload;
	return heap_fail_realloc ? NULL : realloc(p, size);
}
static void heap_free(void *p, void *payload)
{
	(void)payload;
	free(p);
}

/* Growth past the first 16 and past a reserve: a set that cannot grow says
 * -1 and leaves the node out and the heap whole; reserve(n) is room for n,
 * so sets up to it cannot fail; twice, the heap freed between. */
static void heap_growth_fails_cleanly(void **state)
{
	wms_allocator a = { heap_malloc, heap_realloc, heap_free, NULL };
	wms__timer nodes[40];
	int in[40] = { 0 };
	wms__heap h = { 0 };
	(void)state;
	assert_int_equal(wms_set_allocator(&a), WMS_OK);
	for (size_t i = 0; i < 40; i++)
		wms__timer_init(&nodes[i]);
	for (int round = 0; round < 2; round++) {
		heap_fail_realloc = 1;
		assert_int_equal(wms__heap_set(&h, &nodes[0], 5), -1);
		heap_check(&h, nodes, in, 40);
		heap_fail_realloc = 0;
		assert_int_equal(wms__heap_reserve(&h, 16), 0);
		heap_fail_realloc = 1;
		for (size_t i = 0; i < 16; i++) {
			assert_int_equal(wms__heap_set(&h, &nodes[i], 100 - i), 0);
			in[i] = 1;
		}
		assert_int_equal(h.cap, 16);
		assert_int_equal(wms__heap_set(&h, &nodes[16], 1), -1); /* the 17th */
		heap_check(&h, nodes, in, 40);
		assert_int_equal(wms__heap_set(&h, &nodes[3], 1), 0); /* a move: no room needed */
		assert_int_equal(wms__heap_reserve(&h, 17), -1);
		assert_int_equal(wms__heap_reserve(&h, 16), 0);
		heap_fail_realloc = 0;
		assert_int_equal(wms__heap_reserve(&h, 33), 0);
		assert_int_equal(h.cap, 64);
		heap_fail_realloc = 1;
		for (size_t i = 16; i < 33; i++) {
			assert_int_equal(wms__heap_set(&h, &nodes[i], i), 0);
			in[i] = 1;
		}
		heap_check(&h, nodes, in, 40);
		heap_fail_realloc = 0;
		for (size_t i = 0; i < 40; i++) {
			wms__heap_remove(&h, &nodes[i]);
			in[i] = 0;
		}
		heap_check(&h, nodes, in, 40);
		wms__heap_free(&h); /* the second round grows it again */
		assert_null(h.items);
		assert_int_equal(h.cap, 0);
	}
	assert_int_equal(wms_set_allocator(NULL), WMS_OK);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(numbers),
		cmocka_unit_test(format_uint_as_snprintf),
		cmocka_unit_test(json_strings),
		cmocka_unit_test(utf8_and_strings),
		cmocka_unit_test(buffers),
		cmocka_unit_test(base64),
		cmocka_unit_test(base64_across_a_chunk),
		cmocka_unit_test(affine_stacks),
		cmocka_unit_test(heap_against_a_model),
		cmocka_unit_test(heap_growth_fails_cleanly),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
