/*
 * libwms fuzz harnesses: what every harness provides and the checks they share.
 *
 * One harness source (fuzz_<name>.c) is linked two ways:
 *  - with libFuzzer's main (clang, -fsanitize=fuzzer), as fuzz-<name>;
 *  - with replay_main.c (any compiler), as fuzz-replay-<name>: the unit test
 *    that replays the seeds and tests/fuzz/regress/<name>/ on every build.
 * An invariant that does not hold aborts with a one-line explanation, so
 * libFuzzer records the input as a crash and the replay test fails.
 */
#ifndef WMS_FUZZ_H
#define WMS_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include "soap.h"

/* ---- what each harness defines -------------------------------------------- */

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A growable byte string for seed variants. */
typedef struct fuzz_bytes {
	uint8_t *data;
	size_t len;
	size_t cap;
} fuzz_bytes;

void fuzz_bytes_reset(fuzz_bytes *b);
void fuzz_bytes_add(fuzz_bytes *b, const void *data, size_t len);
void fuzz_bytes_free(fuzz_bytes *b);

/* Variant `i` of a seed file (e.g. the file behind a selector byte) into
 * `out`, reset first. 0 when there is no variant `i` (i = 0, 1, ... stops
 * at the first 0). */
int fuzz_seed_variant(size_t i, const uint8_t *seed, size_t n, fuzz_bytes *out);

/* Built-in seed `i` (inputs no file holds); 0 past the last one. */
int fuzz_builtin_seed(size_t i, fuzz_bytes *out);

/* ---- shared checks (fuzz_common.c) ---------------------------------------- */

/* The input being replayed, named in failure reports (replay_main sets it). */
extern const char *fuzz_input_name;

/* Set by replay_main from FUZZ_VERBOSE=1: harnesses describe each result. */
extern int fuzz_verbose;

#if defined(__GNUC__)
__attribute__((format(printf, 1, 2)))
#endif
void fuzz_note(const char *fmt, ...);

#if defined(__GNUC__)
__attribute__((noreturn, format(printf, 4, 5)))
#endif
void fuzz_fail(const char *file, int line, const char *cond, const char *fmt, ...);

/* FUZZ_CHECK(cond, "format", ...): abort with the explanation unless cond. */
#define FUZZ_CHECK(cond, ...) \
	((cond) ? (void)0 : fuzz_fail(__FILE__, __LINE__, #cond, __VA_ARGS__))

/* Route libwms's allocations through a counter (once, before any call). */
void fuzz_count_allocations(void);
/* libwms allocations not yet freed. */
long fuzz_live_allocations(void);

/*
 * Run `fn(data, size)` and check it left no libwms allocation behind. A
 * non-zero balance is run once more: a leak repeats, a one-time set-up does
 * not.
 */
void fuzz_run_leak_checked(void (*fn)(const uint8_t *, size_t), const uint8_t *data,
			   size_t size);

/*
 * libwms must never let libxml2 print (its default generic error handler
 * writes to stderr): install a generic handler that records what reaches
 * it, and check after each input that nothing did.
 */
void fuzz_watch_libxml2_errors(void);
void fuzz_check_libxml2_quiet(const char *what);

/* A NUL within the field's size, and no control character before it. */
int fuzz_field_ok(const char *field, size_t size);

/* `err` after a call that returned `st`: err->status == st, and a one-line,
 * non-empty message (no byte below 0x20) with every string field
 * NUL-terminated within its size. */
void fuzz_check_error(const wms_error *err, wms_status st, const char *what);

/* A reply id: 1-64 bytes without whitespace or control characters. */
int fuzz_id_ok(const char *id, size_t size);

/* Flags for fuzz_parse_checked. */
#define FUZZ_PARSE_TWICE 1u   /* parse again: same status, error and reply */
#define FUZZ_PARSE_NULL_OUT 2u /* parse again with out and err NULL: same status */

/*
 * wms__parse_reply(op, ...) with every invariant checked: the status is one
 * the parser documents (never NOMEM or INTERNAL without an allocation
 * failure), the error is consistent and one line, delivery is ANSWERED, a
 * failure leaves the reply zeroed (stock: NULL), a success holds valid ids,
 * states and booleans, and a SOAP fault fills its fields with one-line text.
 * The reply is freed. Returns the status; `err_out` (may be NULL) receives
 * the error.
 */
wms_status fuzz_parse_checked(wms__op op, const char *buf, size_t len, const char *content_type,
			      size_t max_bytes, unsigned flags, wms_error *err_out);

#endif
