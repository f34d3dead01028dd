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
#include "soap/soap.h"

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
/* Room for `extra` more bytes (and the NUL): data may move. */
void fuzz_bytes_reserve(fuzz_bytes *b, size_t extra);
void fuzz_bytes_free(fuzz_bytes *b);

/* Variant `i` of a seed file (e.g. the file behind a selector byte) into
 * `out`, reset first. 0 when there is no variant `i` (i = 0, 1, ... stops
 * at the first 0). */
int fuzz_seed_variant(size_t i, const uint8_t *seed, size_t n, fuzz_bytes *out);

/* Built-in seed `i` (inputs no file holds) into `out`: 1; -1 when it is a
 * heavy one (seconds under valgrind) and fuzz_heavy_seeds is 0; 0 past the
 * last one. */
int fuzz_builtin_seed(size_t i, fuzz_bytes *out);

/* Whether the heavy built-in seeds are made: replay_main sets it to 1
 * with --heavy, to 2 with --write-corpus (the coverage script and the
 * fuzzers' corpus have them; the regression tests, under valgrind too, do
 * not). A seed too large for a corpus is made only when it is 1. */
extern int fuzz_heavy_seeds;

/* ---- macros: structure-aware expansion (fuzz_expand.c) --------------------- */

/*
 *   0x1E OP ARG BODY 0x1F     (the full format: fuzz_expand.c, README.md)
 *
 * OP 0x00-0x9F repeats BODY fuzz_macro_count(OP, ARG) times, 0xA0-0xBF
 * encodes it (UTF-16, UCS-4, BOMs), 0xC0-0xDF makes it a primer (a document
 * fed first), 0xE0-0xFF stands for the byte ARG. In BODY, 0x1D is the
 * index of the innermost repeat, 0x1C that of the one around it.
 */
#define FUZZ_MACRO 0x1E
#define FUZZ_MACRO_END 0x1F
#define FUZZ_MACRO_INDEX 0x1D
#define FUZZ_MACRO_OUTER 0x1C
#define FUZZ_EXPAND_DEPTH 4

/* Repetitions of a repeat macro: a base near one of the library's bounds
 * (OP & 0x1F: 0, 40, 64, 128, 256, 512, ..., 4096, ..., 100000, ...) plus
 * ARG - 128, at least 0. */
size_t fuzz_macro_count(uint8_t op, uint8_t arg);

/*
 * Expand the macros in [data, data + size) into `out` (reset first) and any
 * top-level primer into `primer` (may be NULL: primers dropped; reset
 * first). 0, touching neither, when the input holds no 0x1E: it is its own
 * expansion and old inputs mean what they meant. Repeats stop short of
 * `cap` bytes of output (or of FUZZ_EXPAND_MAX, when set and smaller: the
 * fuzzers run faster on small inputs, and cross fewer limits).
 */
int fuzz_expand(const uint8_t *data, size_t size, size_t cap, fuzz_bytes *out, fuzz_bytes *primer);

/* Append the start of a repeat macro for exactly `count` repetitions (its
 * BODY and 0x1F follow), for built-in seeds; aborts when no base is within
 * reach of count. */
void fuzz_macro_repeat(fuzz_bytes *b, size_t count);
/* `count` copies of `fragment` (no index in it) in as many repeat macros,
 * BODY and 0x1F included, as it takes. */
void fuzz_macro_fill(fuzz_bytes *b, size_t count, const char *fragment);

/* Expansion caps go this far past the size limit of the harness's entry
 * point, so that both sides of it are reachable (past it, the input is
 * refused before it is parsed: cheap). */
#define FUZZ_EXPAND_SLACK (64u * 1024u)

/* Replies expand to 2 MiB and a little, short of the default 4 MiB
 * max_reply_bytes (the reply harness's bit 7 crosses the cap both ways at
 * any size): past the scan's second clock reading, and every reply parsed
 * up to six times costs no more than 2 MiB does. */
#define FUZZ_REPLY_EXPAND_MAX ((2u << 20) + FUZZ_EXPAND_SLACK)

/* ---- an oracle for the structural limits (fuzz_oracle.c) ------------------- */

/* The reply parser feeds libxml2 this much at a time (CHUNK_BYTES in
 * src/soap/parse.c), its deadline checked in between. */
#define FUZZ_PARSE_CHUNK (64u * 1024u)
/* Before that, the scan decodes a body whose encoding is not
 * ASCII-compatible in slices this large (SLICE in decode_utf8,
 * src/soap/sniff.c), looking at the clock between its steps, and every
 * WMS__XML_SCAN_CLOCK_BYTES (1 MiB) of the text it scans. */
#define FUZZ_DECODE_SLICE (256u * 1024u)

enum { FUZZ_STOP_DEPTH = 1, FUZZ_STOP_NAMES = 2 };

/* What libxml2 reads of a document, counted from its SAX events. */
typedef struct fuzz_xml_facts {
	int clean;          /* read to its end: well-formed, namespace-well-formed, no
			     * error, no DOCTYPE, not stopped */
	int doctype;
	const char *limit;  /* the first limit of soap/limits.h's scan a start tag
			     * crossed (the scan's wording), NULL if none */
	unsigned max;
	const char *limit2; /* another one the same tag crossed (attributes and
			     * declarations: the scan may report either) */
	unsigned max2;
	char element[48];   /* that tag's name, as the scan names it */
	int stop;           /* where the reply parser stops by itself: FUZZ_STOP_DEPTH
			     * (WMS__XML_MAX_DEPTH), FUZZ_STOP_NAMES (WMS__XML_MAX_NAMES
			     * distinct names on a fresh parser), 0 */
	int stop_first;     /* that stop comes before any scan limit is crossed */
	unsigned depth, elements, names; /* deepest, how many, dictionary growth */
} fuzz_xml_facts;

/* Read [buf, buf + len) as the reply parser does with no encoding given. */
void fuzz_xml_facts_read(fuzz_xml_facts *f, const char *buf, size_t len);

/*
 * If `s` (the part of a message after its fixed prefix, e.g. after "reply
 * refused: ") says a document crossed one of the scan's limits - "<NAME>
 * crosses libwms's limit of N WHAT" - check that N and WHAT are one of
 * soap/limits.h's pairs and nothing follows, and return WHAT (NAME into
 * `element`, cut to fit); NULL when it says no such thing.
 */
const char *fuzz_limit_tail(const char *s, char *element, size_t size);

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
 * Then:
 *  - the limits: a refusal for one is said as the library says it, and
 *    agrees with what libxml2 itself reads (fuzz_xml_facts: a limit crossed
 *    there is refused, one within every limit and well-formed is not, the
 *    limit named is the one crossed) when no encoding is forced on it;
 *  - the same answer on the reused workspace (after the primer, if any),
 *    twice in a row, what it keeps within WMS__PARSE_KEEP_*; past a
 *    deadline, a body over one chunk answers the same or TIMEOUT (never a
 *    reply that parses; the message says where it stopped), and the
 *    workspace answers as before afterwards;
 *  - with the flags, parsed again and with out and err NULL.
 * The reply is freed. Returns the status; `err_out` (may be NULL) receives
 * the error.
 */
wms_status fuzz_parse_checked(wms__op op, const char *buf, size_t len, const char *content_type,
			      size_t max_bytes, unsigned flags, wms_error *err_out);

/* While these open findings are (README.md), whether to skip a document
 * over one chunk: with FUZZ_ALLOW_SLOW_DECODE=1 ("the scan's decoding is
 * quadratic in undecodable bytes"), one whose Content-Type charset or an
 * encoding it declares anywhere libxml2 reads through ICU (a decoder iconv
 * lacks); with FUZZ_ALLOW_SLOW_SCAN=1 ("end tags without '>' make the scan
 * quadratic"), one whose end tags would have the scan read over 64 MiB;
 * and, when `tree` (the fixture loader reads it: libxml2's tree parser),
 * with FUZZ_ALLOW_SLOW_COMMENT=1 ("a comment's '--' copied for each one"),
 * one whose "--" times its length pass 2^30, at any size. */
int fuzz_open_finding_skipped(const char *buf, size_t len, const char *content_type, int tree);

/* A document (a primer macro's) that fuzz_parse_checked parses on the
 * reused workspace before each input until it is cleared (NULL). */
void fuzz_set_primer(const char *buf, size_t len);

#endif
