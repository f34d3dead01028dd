/* README.md's tables held to the code, read from README.md at run time
 * (argv[1], else $WMS_README, else $WMS_SOURCE_ROOT/README.md): the status
 * codes' names and numbers against wms_status; every numeric and enum
 * default of the client, breaker and wms_call_options tables against what
 * the library resolves when the option is left at its _INIT value; and the
 * bounds those tables state against what wms_client_new and wms_breaker_new
 * accept and refuse. Editing the README or the code alone fails a test,
 * naming the row. No number of the README is written here.
 *
 * The resolved values are read where the library keeps them: the client's
 * fields (client/client.h), its libcurl transport's (transport/curl_int.h),
 * the snapshots of its bulkhead and read cache, and the breaker's options as
 * a store is given them when it links (wms/sys/breaker_store.h: "defaults
 * applied"). Every client is made with endpoint http://127.0.0.1:PORT/ (a
 * port held bound, never listening) and
 * checked to have sent nothing (no wire-log record, no breaker permit, no
 * connection in the transport's pool). */
#include <ctype.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
/* curl_int.h and client/client.h each define a `struct call`; the transport's
 * is renamed here (a tag has no linkage: the layout read is the same). */
#define call readme_test_curl_call
#include "transport/curl_int.h"
#undef call
#include "client/client.h"
#include "wms/wms.h"
#include "wms/sys/breaker_store.h"
#include "local_port.h" /* tests/common */

/* http://127.0.0.1:PORT/ with PORT bound by main and never listening: a
 * client made on it that sent anything would be refused, never answered. */
static char endpoint[64];
#define ENDPOINT ((const char *)endpoint)

/* ---- README.md and its tables ------------------------------------------ */

static const char *readme_path;
static char *readme;

static int load_readme(const char *path)
{
	FILE *f = fopen(path, "rb");
	long n;
	if (!f)
		return 0;
	if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0 ||
	    !(readme = malloc((size_t)n + 1)) || fread(readme, 1, (size_t)n, f) != (size_t)n) {
		fclose(f);
		return 0;
	}
	readme[n] = '\0';
	fclose(f);
	return 1;
}

/* A table: its header row's start, unique in README. */
typedef struct table {
	const char *label;  /* for messages */
	const char *header; /* the header row's first bytes */
} table;

static const table client_table = { "wms_client_options", "| option | default | meaning |" };
static const table breaker_table = { "wms_breaker_options",
				      "| option | default | range | meaning |" };
static const table status_table = { "status", "| status | delivery | breaker |" };
static const table call_table = { "wms_call_options",
				   "| `wms_call_options` | default | meaning |" };

static const char *next_line(const char *p)
{
	const char *nl = strchr(p, '\n');
	return nl ? nl + 1 : p + strlen(p);
}

static const char *table_start(const table *t)
{
	const char *p, *found = NULL;
	int n = 0;
	for (p = readme; *p; p = next_line(p))
		if (strncmp(p, t->header, strlen(t->header)) == 0) {
			found = p;
			n++;
		}
	if (n != 1)
		fail_msg("%s: the %s table (header \"%s\") is there %d times, not once",
			 readme_path, t->label, t->header, n);
	return found;
}

#define MAX_CELLS 8
#define CELL_MAX 2048

typedef struct row {
	int n;
	char cell[MAX_CELLS][CELL_MAX];
} row;

/* One table line into cells, trimmed; a '|' inside `code` does not split. */
static void split_row(const char *line, row *r)
{
	const char *p = line + 1, *end = next_line(line);
	int code = 0;
	size_t len = 0;
	memset(r, 0, sizeof(*r));
	for (; p < end && *p != '\n'; p++) {
		if (*p == '`')
			code = !code;
		if (*p == '|' && !code) {
			char *c = r->cell[r->n];
			while (len && c[len - 1] == ' ')
				c[--len] = '\0';
			if (++r->n == MAX_CELLS)
				return;
			len = 0;
			continue;
		}
		if (len == 0 && *p == ' ')
			continue;
		if (len < CELL_MAX - 1)
			r->cell[r->n][len++] = *p;
	}
}

/* The body rows of a table, header and separator skipped. */
static const char *first_body_row(const table *t)
{
	return next_line(next_line(table_start(t)));
}

/* The row whose first cell names `name` (as `name`); exactly one. */
static void get_row(const table *t, const char *name, row *out)
{
	char tok[256];
	const char *p;
	int n = 0;
	row r;
	snprintf(tok, sizeof(tok), "`%s`", name);
	for (p = first_body_row(t); *p == '|'; p = next_line(p)) {
		split_row(p, &r);
		if (strstr(r.cell[0], tok)) {
			if (!n++)
				*out = r;
		}
	}
	if (n != 1)
		fail_msg("%s: the %s table has %d rows for `%s`, not one", readme_path, t->label, n,
			 name);
	if (out->n < 3)
		fail_msg("%s: the %s table's row `%s` has %d cells", readme_path, t->label, name,
			 out->n);
}

/* ---- numbers as README writes them ------------------------------------- */

/* Digits, then groups of three after a space ("86 400 000"), then an
 * optional " KiB", " MiB" or " GiB". */
static int parse_qty(const char **pp, uint64_t *out)
{
	static const struct {
		const char *unit;
		unsigned shift;
	} units[] = { { " KiB", 10 }, { " MiB", 20 }, { " GiB", 30 } };
	const char *p = *pp;
	uint64_t v = 0;
	size_t i;
	if (!isdigit((unsigned char)*p))
		return 0;
	for (; isdigit((unsigned char)*p); p++) {
		if (v > UINT64_MAX / 10 - 9)
			return 0;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	while (p[0] == ' ' && isdigit((unsigned char)p[1]) && isdigit((unsigned char)p[2]) &&
	       isdigit((unsigned char)p[3]) && !isdigit((unsigned char)p[4])) {
		if (v > UINT64_MAX / 1000 - 999)
			return 0;
		v = v * 1000 + (uint64_t)((p[1] - '0') * 100 + (p[2] - '0') * 10 + (p[3] - '0'));
		p += 4;
	}
	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (strncmp(p, units[i].unit, 4) == 0 && !isalnum((unsigned char)p[4])) {
			if (v > UINT64_MAX >> units[i].shift)
				return 0;
			v <<= units[i].shift;
			p += 4;
			break;
		}
	*pp = p;
	*out = v;
	return 1;
}

/* The number a cell starts with ("4 MiB", "0 (off)", "1 attempt"). */
static uint64_t leading_qty(const table *t, const char *name, const row *r, int col)
{
	const char *p = r->cell[col];
	uint64_t v;
	if (!parse_qty(&p, &v))
		fail_msg("%s: %s table, row `%s`: \"%s\" does not start with a number", readme_path,
			 t->label, name, r->cell[col]);
	return v;
}

/* The number right after `prefix` in a cell ("max 1024"). */
static uint64_t qty_after(const table *t, const char *name, const char *cell, const char *prefix)
{
	const char *p = strstr(cell, prefix);
	uint64_t v;
	if (!p)
		fail_msg("%s: %s table, row `%s`: no \"%s<number>\" in \"%s\"", readme_path,
			 t->label, name, prefix, cell);
	p += strlen(prefix);
	if (!parse_qty(&p, &v))
		fail_msg("%s: %s table, row `%s`: \"%s\" is not followed by a number in \"%s\"",
			 readme_path, t->label, name, prefix, cell);
	return v;
}

/* The first "LO–HI" (en dash, '-' or " to ") at or after `from`; *end past it. */
static int find_range(const char *from, uint64_t *lo, uint64_t *hi, const char **end)
{
	static const char *const seps[] = { "\xE2\x80\x93", "-", " to " };
	const char *p = from, *q;
	size_t i;
	while (*p) {
		if (!isdigit((unsigned char)*p) || (p > from && isalnum((unsigned char)p[-1]))) {
			p++;
			continue;
		}
		q = p;
		if (!parse_qty(&q, lo)) {
			p++;
			continue;
		}
		for (i = 0; i < sizeof(seps) / sizeof(seps[0]); i++) {
			const char *h = q + strlen(seps[i]);
			if (strncmp(q, seps[i], strlen(seps[i])) == 0 && parse_qty(&h, hi)) {
				if (end)
					*end = h;
				return 1;
			}
		}
		p = q;
	}
	return 0;
}

static void range_in(const table *t, const char *name, const char *cell, uint64_t *lo,
		     uint64_t *hi, const char **end)
{
	if (!find_range(cell, lo, hi, end))
		fail_msg("%s: %s table, row `%s`: no range (\"LO\xE2\x80\x93HI\" or \"LO to HI\") in "
			 "\"%s\"",
			 readme_path, t->label, name, cell);
}

/* The first `code` of a cell, without its backticks. */
static void first_code(const table *t, const char *name, const char *cell, char *out, size_t size)
{
	const char *a = strchr(cell, '`'), *b = a ? strchr(a + 1, '`') : NULL;
	if (!b || (size_t)(b - a - 1) >= size)
		fail_msg("%s: %s table, row `%s`: no `name` in \"%s\"", readme_path, t->label, name,
			 cell);
	memcpy(out, a + 1, (size_t)(b - a - 1));
	out[b - a - 1] = '\0';
}

typedef struct named {
	const char *name;
	int value;
} named;

static int enum_value(const table *t, const char *name, const char *cell, const named *values)
{
	char code[128];
	first_code(t, name, cell, code, sizeof(code));
	for (; values->name; values++)
		if (strcmp(values->name, code) == 0)
			return values->value;
	fail_msg("%s: %s table, row `%s`: default `%s` is no value of its enum", readme_path,
		 t->label, name, code);
	return -1;
}

/* ---- what disagrees: every mismatch of a test said, then it fails ------- */

static int mismatches;

__attribute__((format(printf, 1, 2))) static void mismatch(const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	print_error("%s: %s\n", readme_path, msg);
	mismatches++;
}

static void same(const table *t, const char *name, const char *what, uint64_t readme_value,
		 uint64_t code_value)
{
	if (readme_value != code_value)
		mismatch("%s table, row `%s`: README says %s %llu, the library uses %llu", t->label,
			 name, what, (unsigned long long)readme_value,
			 (unsigned long long)code_value);
}

static int setup(void **state)
{
	(void)state;
	mismatches = 0;
	return 0;
}

static void no_mismatch(void)
{
	if (mismatches)
		fail_msg("%d mismatch(es) between %s and the code (above)", mismatches,
			 readme_path);
}

/* ---- 1. status codes ----------------------------------------------------- */

/* Every member of wms_status, in order. listed() switches over them with no
 * default: -Wswitch (-Wall, an error with werror) fails the build when the
 * enum gains a member this list lacks. */
#define STATUSES(X)                                                                     \
	X(WMS_OK) X(WMS_ERR_INVALID_ARG) X(WMS_ERR_NOMEM) X(WMS_ERR_CIRCUIT_OPEN)       \
	X(WMS_ERR_CONNECT) X(WMS_ERR_TIMEOUT) X(WMS_ERR_TRANSPORT) X(WMS_ERR_HTTP)      \
	X(WMS_ERR_SOAP_FAULT) X(WMS_ERR_NOT_XML) X(WMS_ERR_TRUNCATED)                   \
	X(WMS_ERR_UNEXPECTED_REPLY) X(WMS_ERR_TOO_LARGE) X(WMS_ERR_UNSAFE_XML)          \
	X(WMS_ERR_TLS) X(WMS_ERR_FIXTURE) X(WMS_ERR_CONFIG) X(WMS_ERR_INTERNAL)         \
	X(WMS_ERR_BULKHEAD_FULL) X(WMS_ERR_CANCELLED)
#define STATUS_ROW(s) { #s, s },
#define STATUS_CASE(s) case s:

static const struct {
	const char *name;
	wms_status value;
} statuses[] = { STATUSES(STATUS_ROW) };
#define N_STATUSES (sizeof(statuses) / sizeof(statuses[0]))

static int listed(wms_status s)
{
	switch (s) {
	STATUSES(STATUS_CASE)
		return 1;
	}
	return 0;
}

static const char *outcome_name(wms_outcome o)
{
	return o == WMS_OUTCOME_SUCCESS ? "success" : o == WMS_OUTCOME_FAILURE ? "failure" : "ignored";
}

/* wms_error_outcome for an error of status `st` (an HTTP status, a fault
 * code as errors.h keeps it: "namespace prefix removed") against what README's breaker column expects of it. */
static void outcome_is(const char *name, wms_status st, int http, const char *fault,
		       wms_outcome want, const char *cell)
{
	wms_error e;
	wms_outcome got;
	wms_error_clear(&e);
	e.status = st;
	e.http_status = http;
	if (fault)
		snprintf(e.fault_code, sizeof(e.fault_code), "%s", fault);
	got = wms_error_outcome(&e);
	if (got != want)
		mismatch("status table, row `%s` (HTTP %d, fault %s): README's breaker column \"%s\" "
			 "means %s, wms_error_outcome says %s",
			 name, http, fault ? fault : "none", cell, outcome_name(want),
			 outcome_name(got));
}

/* The breaker column: "success", "failure", "not counted" / "rejected"
 * (the breaker records nothing: IGNORED), "—" (no call made), or, for HTTP
 * and SOAP faults, the two cases they name. */
static void breaker_column_matches(const char *name, wms_status st, const char *cell)
{
	if (strcmp(cell, "success") == 0)
		outcome_is(name, st, 0, NULL, WMS_OUTCOME_SUCCESS, cell);
	else if (strcmp(cell, "failure") == 0)
		outcome_is(name, st, 0, NULL, WMS_OUTCOME_FAILURE, cell);
	else if (strcmp(cell, "not counted") == 0 || strcmp(cell, "rejected") == 0)
		outcome_is(name, st, 0, NULL, WMS_OUTCOME_IGNORED, cell);
	else if (st == WMS_ERR_HTTP && strstr(cell, "5xx failure") && strstr(cell, "not counted")) {
		outcome_is(name, st, 503, NULL, WMS_OUTCOME_FAILURE, cell);
		outcome_is(name, st, 404, NULL, WMS_OUTCOME_IGNORED, cell);
		outcome_is(name, st, 302, NULL, WMS_OUTCOME_IGNORED, cell);
	} else if (st == WMS_ERR_SOAP_FAULT && strstr(cell, "Server/Receiver: failure") &&
		   strstr(cell, "Client/Sender and envelope-level: not counted")) {
		outcome_is(name, st, 500, "Server", WMS_OUTCOME_FAILURE, cell);
		outcome_is(name, st, 500, "Receiver", WMS_OUTCOME_FAILURE, cell);
		outcome_is(name, st, 500, "Client", WMS_OUTCOME_IGNORED, cell);
		outcome_is(name, st, 500, "Sender", WMS_OUTCOME_IGNORED, cell);
		outcome_is(name, st, 500, "VersionMismatch", WMS_OUTCOME_IGNORED, cell);
	} else if (strcmp(cell, "\xE2\x80\x94") != 0) /* an em dash: no call was made */
		mismatch("status table, row `%s`: breaker column \"%s\" is none of success, "
			 "failure, not counted, rejected, \xE2\x80\x94 or the HTTP and fault cases",
			 name, cell);
}

static void status_codes_match_readme(void **state)
{
	const char *p;
	size_t i, seen[N_STATUSES] = { 0 };
	row r;
	(void)state;
	/* the list is the enum: values 0..n-1, nothing past them */
	for (i = 0; i < N_STATUSES; i++) {
		if ((size_t)statuses[i].value != i)
			mismatch("%s is %d, not %zu: the enum has a gap", statuses[i].name,
				 (int)statuses[i].value, i);
		assert_true(listed(statuses[i].value));
	}
	assert_false(listed((wms_status)N_STATUSES));
	assert_string_equal(wms_status_name((wms_status)N_STATUSES),
			    wms_status_name((wms_status)1000));
	for (p = first_body_row(&status_table); *p == '|'; p = next_line(p)) {
		char name[64];
		const char *q;
		uint64_t n;
		split_row(p, &r);
		q = r.cell[0];
		if (sscanf(q, "`%63[A-Z_0-9]`", name) != 1 || !(q = strstr(q, "` (")) ||
		    (q += 3, !parse_qty(&q, &n)) || strcmp(q, ")") != 0) {
			mismatch("status table: row \"%s\" is not \"`WMS_...` (N)\"", r.cell[0]);
			continue;
		}
		for (i = 0; i < N_STATUSES && strcmp(statuses[i].name, name) != 0; i++)
			;
		if (i == N_STATUSES) {
			mismatch("status table: row `%s` (%llu) names a status wms_status does not have",
				 name, (unsigned long long)n);
			continue;
		}
		seen[i]++;
		if (n != (uint64_t)statuses[i].value)
			mismatch("status table: README says `%s` (%llu), the enum has %d", name,
				 (unsigned long long)n, (int)statuses[i].value);
		breaker_column_matches(name, statuses[i].value, r.cell[2]);
	}
	for (i = 0; i < N_STATUSES; i++)
		if (seen[i] != 1)
			mismatch("status table: %zu rows for `%s` (%d), not one", seen[i],
				 statuses[i].name, (int)statuses[i].value);
	no_mismatch();
}

/* wms_status_name is the enum's name without WMS_ERR_ / WMS_; it and
 * wms_strerror are non-empty and distinct for each status. */
static void status_names_distinct(void **state)
{
	size_t i, j;
	(void)state;
	for (i = 0; i < N_STATUSES; i++) {
		const char *full = statuses[i].name;
		const char *want = strncmp(full, "WMS_ERR_", 8) == 0 ? full + 8 : full + 4;
		const char *name = wms_status_name(statuses[i].value);
		const char *text = wms_strerror(statuses[i].value);
		assert_non_null(name);
		assert_non_null(text);
		if (strcmp(name, want) != 0)
			mismatch("wms_status_name(%s) is \"%s\", not \"%s\"", full, name, want);
		if (!*text)
			mismatch("wms_strerror(%s) is empty", full);
		if (strcmp(text, wms_strerror((wms_status)1000)) == 0)
			mismatch("wms_strerror(%s) is the unknown status's text", full);
		for (j = 0; j < i; j++) {
			if (strcmp(name, wms_status_name(statuses[j].value)) == 0)
				mismatch("wms_status_name: %s and %s are both \"%s\"", full,
					 statuses[j].name, name);
			if (strcmp(text, wms_strerror(statuses[j].value)) == 0)
				mismatch("wms_strerror: %s and %s are both \"%s\"", full,
					 statuses[j].name, text);
		}
	}
	no_mismatch();
}

/* ---- clients made without sending --------------------------------------- */

static int wire_records;

static void count_wire(const wms_wire_record *record, void *payload)
{
	(void)record;
	(void)payload;
	wire_records++;
}

static const struct curl_transport *curl_of(const wms_client *c)
{
	/* the client's own libcurl transport: its wms_transport comes first */
	return (const struct curl_transport *)(const void *)c->transport;
}

static void nothing_sent(wms_client *c)
{
	wms_breaker_snapshot s;
	assert_int_equal(wire_records, 0);
	wms_breaker_snapshot_get(&s, wms_client_breaker(c));
	assert_int_equal(s.permitted, 0);
	assert_int_equal(s.rejected, 0);
	assert_int_equal(curl_of(c)->idle_count, 0);
}

typedef void (*setter)(wms_client_options *o, uint64_t v);

/* A client from WMS_CLIENT_OPTIONS_INIT, the endpoint, the wire-log counter
 * and what `set` changes; checked to have sent nothing. */
static wms_status make_client(wms_client **out, setter set, uint64_t v, wms_error *err)
{
	wms_client_options o = WMS_CLIENT_OPTIONS_INIT;
	wms_status st;
	o.endpoint = ENDPOINT;
	o.callbacks.on_wire = count_wire;
	if (set)
		set(&o, v);
	wire_records = 0;
	st = wms_client_new(out, &o, err);
	if (st == WMS_OK)
		nothing_sent(*out);
	else
		assert_null(*out);
	return st;
}

static wms_client *client_with(setter set, uint64_t v)
{
	wms_client *c = NULL;
	wms_error err;
	wms_status st = make_client(&c, set, v, &err);
	if (st != WMS_OK)
		fail_msg("wms_client_new: %s (%s)", wms_status_name(st), err.message);
	return c;
}

#define SETTER(fn, field, type)                                 \
	static void fn(wms_client_options *o, uint64_t v)       \
	{                                                       \
		o->field = (type)v;                             \
	}
SETTER(set_connect_timeout, connect_timeout_ms, uint32_t)
SETTER(set_timeout, timeout_ms, uint32_t)
SETTER(set_stall_timeout, stall_timeout_ms, uint32_t)
SETTER(set_max_reply, max_reply_bytes, size_t)
SETTER(set_max_idle, max_idle_connections, uint32_t)
SETTER(set_curl_max_idle, curl.max_idle_connections, uint32_t)
SETTER(set_cache_entries, read_cache.max_entries, uint32_t)
SETTER(set_cache_age, read_cache.max_age_ms, uint32_t)
SETTER(set_cache_bytes, read_cache.max_bytes, uint32_t)
SETTER(set_bulkhead_calls, bulkhead.max_concurrent_calls, uint32_t)
SETTER(set_bulkhead_wait, bulkhead.max_wait_for_slot_ms, uint32_t)
SETTER(set_retry_attempts, retry.max_attempts, uint32_t)
SETTER(set_retry_mult, retry.backoff_multiplier_pct, uint32_t)
SETTER(set_retry_max_backoff, retry.max_backoff_ms, uint32_t)
SETTER(set_failure_threshold, breaker_options.failure_threshold, uint32_t)

static void set_retry_initial_500(wms_client_options *o, uint64_t v)
{
	o->retry.max_backoff_ms = 500; /* initial_backoff_ms against it */
	o->retry.initial_backoff_ms = (uint32_t)v;
}

/* ---- 2. the client's defaults -------------------------------------------- */

static uint64_t get_connect_timeout(wms_client *c) { return c->connect_timeout_ms; }
static uint64_t get_timeout(wms_client *c) { return c->timeout_ms; }
static uint64_t get_stall_timeout(wms_client *c) { return c->stall_timeout_ms; }
static uint64_t get_max_reply(wms_client *c) { return c->max_reply_bytes; }
static uint64_t get_wire_max(wms_client *c) { return c->wire_max; }
/* The libcurl pool's size. The XML workspace pool takes the same option,
 * with its own fallback of 8 inside src/soap/pool.c, whose struct is opaque
 * (not read here). */
static uint64_t get_curl_idle(wms_client *c) { return curl_of(c)->idle_max; }
static uint64_t get_retry_attempts(wms_client *c) { return c->retry.max_attempts; }

static uint64_t get_cache_entries(wms_client *c)
{
	wms_read_cache_snapshot s;
	assert_int_equal(wms_client_read_cache_get(&s, c), WMS_OK);
	return s.max_entries;
}

static uint64_t get_bulkhead_calls(wms_client *c)
{
	wms_bulkhead_snapshot s;
	assert_int_equal(wms_client_bulkhead_get(&s, c, NULL), WMS_OK);
	return s.max_concurrent_calls;
}

static uint64_t get_bulkhead_wait(wms_client *c)
{
	wms_bulkhead_snapshot s;
	assert_int_equal(wms_client_bulkhead_get(&s, c, NULL), WMS_OK);
	return s.max_wait_for_slot_ms;
}

static const named soap_versions[] = { { "WMS_SOAP_11", WMS_SOAP_11 },
				       { "WMS_SOAP_12", WMS_SOAP_12 },
				       { NULL, 0 } };
static const named breaker_scopes[] = {
	{ "WMS_BREAKER_SCOPE_PER_CLIENT", WMS_BREAKER_SCOPE_PER_CLIENT },
	{ "WMS_BREAKER_SCOPE_PER_OPERATION", WMS_BREAKER_SCOPE_PER_OPERATION },
	{ NULL, 0 }
};
static const named wsse_modes[] = { { "WMS_WSSE_NONE", WMS_WSSE_NONE },
				    { "WMS_WSSE_PASSWORD_TEXT", WMS_WSSE_PASSWORD_TEXT },
				    { "WMS_WSSE_PASSWORD_DIGEST", WMS_WSSE_PASSWORD_DIGEST },
				    { NULL, 0 } };
static const named breaker_modes[] = {
	{ "WMS_BREAKER_MODE_CONSECUTIVE", WMS_BREAKER_MODE_CONSECUTIVE },
	{ "WMS_BREAKER_MODE_COUNT_BASED", WMS_BREAKER_MODE_COUNT_BASED },
	{ "WMS_BREAKER_MODE_TIME_BASED", WMS_BREAKER_MODE_TIME_BASED },
	{ NULL, 0 }
};

static void client_defaults_match_readme(void **state)
{
	static const struct {
		const char *name;
		uint64_t (*get)(wms_client *c);
	} numbers[] = {
		{ "connect_timeout_ms", get_connect_timeout },
		{ "timeout_ms", get_timeout },
		{ "stall_timeout_ms", get_stall_timeout },
		{ "max_reply_bytes", get_max_reply },
		{ "max_idle_connections", get_curl_idle },
		{ "retry", get_retry_attempts },              /* "1 attempt" */
		{ "read_cache.max_entries", get_cache_entries }, /* "0 (off)" */
		{ "wire_log_max_bytes", get_wire_max },
		{ "bulkhead.max_concurrent_calls", get_bulkhead_calls },
		{ "bulkhead.max_wait_for_slot_ms", get_bulkhead_wait },
	};
	const table *t = &client_table;
	wms_client *c;
	wms_read_cache_snapshot rc;
	wms_transport *tr;
	char code[128], want[256];
	const char *p;
	uint64_t age, bytes;
	size_t i;
	row r;
	(void)state;

	/* everything at its _INIT value */
	c = client_with(NULL, 0);
	for (i = 0; i < sizeof(numbers) / sizeof(numbers[0]); i++) {
		get_row(t, numbers[i].name, &r);
		same(t, numbers[i].name, "default", leading_qty(t, numbers[i].name, &r, 1),
		     numbers[i].get(c));
	}
	/* the retry group's backoff, left at 0: what the client resolves */
	get_row(t, "retry", &r);
	same(t, "retry", "default initial_backoff_ms",
	     qty_after(t, "retry", r.cell[2], "`initial_backoff_ms` = "), c->retry.initial_backoff_ms);
	same(t, "retry", "default max_backoff_ms",
	     qty_after(t, "retry", r.cell[2], "`max_backoff_ms` = "), c->retry.max_backoff_ms);
	same(t, "retry", "default backoff_multiplier_pct",
	     qty_after(t, "retry", r.cell[2], "`backoff_multiplier_pct` = "),
	     c->retry.backoff_multiplier_pct);
	get_row(t, "soap_version", &r);
	same(t, "soap_version", "default",
	     (uint64_t)enum_value(t, "soap_version", r.cell[1], soap_versions),
	     (uint64_t)c->soap_version);
	get_row(t, "wsse.mode", &r);
	same(t, "wsse.mode", "default", (uint64_t)enum_value(t, "wsse.mode", r.cell[1], wsse_modes),
	     (uint64_t)c->wsse.mode);
	get_row(t, "breaker_scope", &r);
	same(t, "breaker_scope", "default (as breakers made)",
	     enum_value(t, "breaker_scope", r.cell[1], breaker_scopes) ==
			     WMS_BREAKER_SCOPE_PER_OPERATION
		     ? WMS__OP_COUNT
		     : 1,
	     (uint64_t)atomic_load(&c->breaker_count));
	get_row(t, "metric_prefix", &r);
	first_code(t, "metric_prefix", r.cell[1], code, sizeof(code));
	snprintf(want, sizeof(want), "%s.circuit_breaker_state", code);
	if (strcmp(c->state_metric, want) != 0)
		mismatch("client table, row `metric_prefix`: README says `%s` (gauge %s), the library "
			 "names the gauge %s",
			 code, want, c->state_metric);
	get_row(t, "curl.user_agent", &r);
	first_code(t, "curl.user_agent", r.cell[1], code, sizeof(code));
	if (!(p = strstr(code, "VERSION")))
		fail_msg("%s: client table, row `curl.user_agent`: no VERSION in `%s`", readme_path,
			 code);
	snprintf(want, sizeof(want), "%.*s%s%s", (int)(p - code), code, wms_version(), p + 7);
	if (!curl_of(c)->user_agent || strcmp(curl_of(c)->user_agent, want) != 0)
		mismatch("client table, row `curl.user_agent`: README says `%s` (%s), the library "
			 "sends %s",
			 code, want, curl_of(c)->user_agent ? curl_of(c)->user_agent : "none");
	wms_client_free(c);

	/* curl.max_idle_connections follows the client's max_idle_connections */
	get_row(t, "curl.max_idle_connections", &r);
	first_code(t, "curl.max_idle_connections", r.cell[1], code, sizeof(code));
	if (strcmp(code, "max_idle_connections") != 0)
		fail_msg("%s: client table, row `curl.max_idle_connections`: default `%s` is not "
			 "`max_idle_connections`",
			 readme_path, code);
	c = client_with(set_max_idle, 3);
	same(t, "curl.max_idle_connections", "default (= max_idle_connections, set to 3)", 3,
	     curl_of(c)->idle_max);
	wms_client_free(c);

	/* the read cache made (max_entries 1), its age and bytes at _INIT */
	get_row(t, "read_cache.max_age_ms", &r);
	p = r.cell[1];
	if (!parse_qty(&p, &age) || strncmp(p, ", ", 2) != 0 || (p += 2, !parse_qty(&p, &bytes)))
		fail_msg("%s: client table, row `read_cache.max_age_ms`, `read_cache.max_bytes`: "
			 "\"%s\" is not \"AGE, BYTES\"",
			 readme_path, r.cell[1]);
	c = client_with(set_cache_entries, 1);
	assert_int_equal(wms_client_read_cache_get(&rc, c), WMS_OK);
	same(t, "read_cache.max_age_ms", "default", age, rc.max_age_ms);
	same(t, "read_cache.max_bytes", "default", bytes, rc.max_bytes);
	wms_client_free(c);

	/* the libcurl transport made on its own: "(`max_idle_connections`
	 * defaults to N there)", in the paragraph after the table */
	if (!(p = strstr(readme, "(`max_idle_connections` defaults to ")))
		fail_msg("%s: no \"(`max_idle_connections` defaults to N there)\" for "
			 "wms_curl_transport_new",
			 readme_path);
	age = qty_after(t, "(wms_curl_transport_new)", p, "defaults to ");
	assert_int_equal(wms_curl_transport_new(&tr), WMS_OK);
	same(t, "(wms_curl_transport_new)", "max_idle_connections defaults to", age,
	     ((const struct curl_transport *)(const void *)tr)->idle_max);
	tr->free(tr);
	no_mismatch();
}

/* ---- 2b. the client's bounds -------------------------------------------- */

static void accepts(const char *name, setter set, uint64_t v)
{
	wms_client *c = NULL;
	wms_error err;
	wms_status st = make_client(&c, set, v, &err);
	if (st != WMS_OK)
		mismatch("client table, row `%s`: README allows %llu, wms_client_new says %s (%s)",
			 name, (unsigned long long)v, wms_status_name(st), err.message);
	wms_client_free(c);
}

/* Refused with INVALID_ARG, the message naming `field`. */
static void refuses(const char *name, const char *field, setter set, uint64_t v)
{
	wms_client *c = NULL;
	wms_error err;
	wms_status st = make_client(&c, set, v, &err);
	if (st != WMS_ERR_INVALID_ARG)
		mismatch("client table, row `%s`: README does not allow %llu, wms_client_new says %s",
			 name, (unsigned long long)v, wms_status_name(st));
	else if (!strstr(err.message, field))
		mismatch("client table, row `%s`: %llu refused, but the message does not name %s: %s",
			 name, (unsigned long long)v, field, err.message);
	wms_client_free(c);
}

/* max accepted, max + 1 refused */
static void bounded(const char *name, const char *field, setter set, uint64_t max)
{
	accepts(name, set, max);
	refuses(name, field, set, max + 1);
}

static void client_bounds_match_readme(void **state)
{
	static const struct {
		const char *name; /* the row, and the field the message names */
		setter set;
	} maxes[] = {
		{ "connect_timeout_ms", set_connect_timeout },
		{ "timeout_ms", set_timeout },
		{ "stall_timeout_ms", set_stall_timeout },
		{ "max_reply_bytes", set_max_reply },
		{ "max_idle_connections", set_max_idle },
		{ "curl.max_idle_connections", set_curl_max_idle },
		{ "read_cache.max_entries", set_cache_entries },
		{ "bulkhead.max_concurrent_calls", set_bulkhead_calls },
		{ "bulkhead.max_wait_for_slot_ms", set_bulkhead_wait },
	};
	const table *t = &client_table;
	uint64_t lo, hi;
	size_t i;
	row r;
	(void)state;

	for (i = 0; i < sizeof(maxes) / sizeof(maxes[0]); i++) {
		get_row(t, maxes[i].name, &r);
		bounded(maxes[i].name, maxes[i].name, maxes[i].set,
			qty_after(t, maxes[i].name, r.cell[2], "max "));
	}

	/* "the oldest answer served (max A); the bytes all entries may take (LO to HI)" */
	get_row(t, "read_cache.max_age_ms", &r);
	bounded("read_cache.max_age_ms", "read_cache.max_age_ms", set_cache_age,
		qty_after(t, "read_cache.max_age_ms", r.cell[2], "(max "));
	range_in(t, "read_cache.max_bytes", r.cell[2], &lo, &hi, NULL);
	accepts("read_cache.max_bytes", set_cache_bytes, lo);
	refuses("read_cache.max_bytes", "read_cache.max_bytes", set_cache_bytes, lo - 1);
	bounded("read_cache.max_bytes", "read_cache.max_bytes", set_cache_bytes, hi);

	/* "`max_attempts` max A, `backoff_multiplier_pct` LO–HI,
	 *  `initial_backoff_ms` ≤ `max_backoff_ms` ≤ B" */
	get_row(t, "retry", &r);
	bounded("retry", "retry.max_attempts", set_retry_attempts,
		qty_after(t, "retry", r.cell[2], "`max_attempts` max "));
	if (!strstr(r.cell[2], "`backoff_multiplier_pct` "))
		fail_msg("%s: client table, row `retry`: no `backoff_multiplier_pct` in \"%s\"",
			 readme_path, r.cell[2]);
	range_in(t, "retry", strstr(r.cell[2], "`backoff_multiplier_pct` "), &lo, &hi, NULL);
	accepts("retry", set_retry_mult, lo);
	refuses("retry", "retry.backoff_multiplier_pct", set_retry_mult, lo - 1);
	bounded("retry", "retry.backoff_multiplier_pct", set_retry_mult, hi);
	bounded("retry", "retry.max_backoff_ms", set_retry_max_backoff,
		qty_after(t, "retry", r.cell[2], "`max_backoff_ms` \xE2\x89\xA4 "));
	if (!strstr(r.cell[2], "`initial_backoff_ms` \xE2\x89\xA4 `max_backoff_ms`"))
		fail_msg("%s: client table, row `retry`: no \"`initial_backoff_ms` \xE2\x89\xA4 "
			 "`max_backoff_ms`\" in \"%s\"",
			 readme_path, r.cell[2]);
	bounded("retry", "retry.initial_backoff_ms", set_retry_initial_500, 500);
	no_mismatch();
}

/* ---- the breaker's options as resolved ---------------------------------- */

/* A store that only keeps what a linking breaker resolved. */
static wms_breaker_options captured;
static int links;

static wms_status cap_link(wms_breaker_store *s, wms_breaker *b, const wms_breaker_options *o,
			   wms_breaker_link **out, wms_error *err)
{
	(void)b;
	(void)err;
	captured = *o;
	captured.name = NULL; /* the breaker's copy: not kept past the client */
	links++;
	*out = (wms_breaker_link *)(void *)s;
	return WMS_OK;
}
static int cap_acquire(wms_breaker_link *l, wms_breaker_permit *p, uint32_t *r)
{
	(void)l, (void)p, (void)r;
	return WMS_STORE_LOCAL;
}
static void cap_record(wms_breaker_link *l, const wms_breaker_permit *p, wms_outcome o, int slow)
{
	(void)l, (void)p, (void)o, (void)slow;
}
static void cap_release(wms_breaker_link *l, const wms_breaker_permit *p) { (void)l, (void)p; }
static void cap_manual(wms_breaker_link *l, wms_breaker_state to, int reset)
{
	(void)l, (void)to, (void)reset;
}
static int cap_state(wms_breaker_link *l)
{
	(void)l;
	return WMS_STORE_LOCAL;
}
static void cap_snapshot(wms_breaker_link *l, wms_breaker_snapshot *out) { (void)l, (void)out; }
static void cap_unlink(wms_breaker_link *l) { (void)l; }

static const wms_breaker_store_ops cap_ops = { cap_link, cap_acquire, cap_record, cap_release,
					       cap_manual, cap_state, cap_snapshot, cap_unlink,
					       NULL, { NULL } };
static wms_breaker_store cap_store = { WMS_BREAKER_STORE_VERSION, &cap_ops, { NULL } };

static int cap_mode = -1;          /* -1: left at _INIT */
static uint32_t cap_open_duration; /* 0: left at _INIT */

static void set_captured_breaker(wms_client_options *o, uint64_t v)
{
	(void)v;
	o->breaker_options.store = &cap_store; /* the observer; no number changed */
	if (cap_mode >= 0)
		o->breaker_options.mode = (wms_breaker_mode)cap_mode;
	o->breaker_options.open_duration_ms = cap_open_duration;
}

/* The client's breaker options as its breaker resolved them. */
static wms_breaker_options resolved(int mode, uint32_t open_duration_ms)
{
	wms_client *c;
	cap_mode = mode;
	cap_open_duration = open_duration_ms;
	links = 0;
	c = client_with(set_captured_breaker, 0);
	assert_int_equal(links, 1);
	wms_client_free(c);
	return captured;
}

#define BF(f) { #f, offsetof(wms_breaker_options, f) }
static const struct {
	const char *name;
	size_t off; /* every one a uint32_t */
} breaker_fields[] = {
	BF(failure_threshold),        BF(open_duration_ms),
	BF(failure_rate_threshold),   BF(slow_call_rate_threshold),
	BF(slow_call_duration_ms),    BF(sliding_window_size),
	BF(minimum_number_of_calls),  BF(permitted_calls_in_half_open),
	BF(max_wait_in_half_open_ms), BF(open_duration_growth_pct),
	BF(max_open_duration_ms),     BF(open_duration_jitter_pct),
};
#define N_BREAKER_FIELDS (sizeof(breaker_fields) / sizeof(breaker_fields[0]))

static uint32_t bget(const wms_breaker_options *o, size_t i)
{
	uint32_t v;
	memcpy(&v, (const char *)o + breaker_fields[i].off, sizeof(v));
	return v;
}

static void bset(wms_breaker_options *o, size_t i, uint32_t v)
{
	memcpy((char *)o + breaker_fields[i].off, &v, sizeof(v));
}

static void breaker_defaults_match_readme(void **state)
{
	const table *t = &breaker_table;
	wms_breaker_options def, count, time, capped;
	uint64_t calls, seconds, factor, cap;
	const char *p;
	size_t i;
	row r;
	(void)state;

	def = resolved(-1, 0);
	count = resolved(WMS_BREAKER_MODE_COUNT_BASED, 0);
	time = resolved(WMS_BREAKER_MODE_TIME_BASED, 0);

	get_row(t, "mode", &r);
	same(t, "mode", "default", (uint64_t)enum_value(t, "mode", r.cell[1], breaker_modes),
	     (uint64_t)def.mode);
	for (i = 0; i < N_BREAKER_FIELDS; i++) {
		const char *name = breaker_fields[i].name;
		if (strcmp(name, "sliding_window_size") == 0 ||
		    strcmp(name, "max_open_duration_ms") == 0)
			continue; /* below */
		get_row(t, name, &r);
		/* the consecutive mode always allows 1 trial: the default shows
		 * in a rate mode */
		same(t, name, "default", leading_qty(t, name, &r, 1),
		     bget(strcmp(name, "permitted_calls_in_half_open") == 0 ? &count : &def, i));
	}

	/* "N calls / S s" */
	get_row(t, "sliding_window_size", &r);
	p = r.cell[1];
	if (!parse_qty(&p, &calls) || strncmp(p, " calls / ", 9) != 0 ||
	    (p += 9, !parse_qty(&p, &seconds)) || strcmp(p, " s") != 0)
		fail_msg("%s: breaker table, row `sliding_window_size`: \"%s\" is not \"N calls / "
			 "S s\"",
			 readme_path, r.cell[1]);
	same(t, "sliding_window_size", "default (count-based, calls)", calls,
	     count.sliding_window_size);
	same(t, "sliding_window_size", "default (time-based, seconds)", seconds,
	     time.sliding_window_size);

	/* "F × open duration, at most CAP" */
	get_row(t, "max_open_duration_ms", &r);
	p = r.cell[1];
	if (!parse_qty(&p, &factor) || strncmp(p, " \xC3\x97 open duration", 16) != 0)
		fail_msg("%s: breaker table, row `max_open_duration_ms`: \"%s\" is not \"F \xC3\x97 "
			 "open duration, at most CAP\"",
			 readme_path, r.cell[1]);
	cap = qty_after(t, "max_open_duration_ms", r.cell[1], "at most ");
	same(t, "max_open_duration_ms", "default (factor x open_duration_ms)",
	     factor * def.open_duration_ms < cap ? factor * def.open_duration_ms : cap,
	     def.max_open_duration_ms);
	if (cap > UINT32_MAX)
		fail_msg("%s: breaker table, row `max_open_duration_ms`: cap %llu", readme_path,
			 (unsigned long long)cap);
	capped = resolved(-1, (uint32_t)cap); /* factor x cap is past the cap */
	same(t, "max_open_duration_ms", "default with open_duration_ms at the cap", cap,
	     capped.max_open_duration_ms);
	no_mismatch();
}

/* ---- the breaker's ranges ------------------------------------------------ */

static void breaker_takes(const char *name, int mode, size_t field, uint64_t v, int ok)
{
	wms_breaker_options o = WMS_BREAKER_OPTIONS_INIT;
	wms_breaker *b = NULL;
	wms_status st;
	if (v > UINT32_MAX)
		return; /* no uint32_t to pass */
	o.mode = (wms_breaker_mode)mode;
	bset(&o, field, (uint32_t)v);
	st = wms_breaker_new(&b, &o);
	if ((st == WMS_OK) != ok || (!ok && st != WMS_ERR_INVALID_ARG))
		mismatch("breaker table, row `%s`: README %s %llu, wms_breaker_new says %s", name,
			 ok ? "allows" : "does not allow", (unsigned long long)v,
			 wms_status_name(st));
	wms_breaker_free(b);
}

/* lo and hi accepted, lo - 1 (unless 0: the default) and hi + 1 refused */
static void breaker_range(const char *name, int mode, size_t field, uint64_t lo, uint64_t hi)
{
	breaker_takes(name, mode, field, lo, 1);
	if (lo >= 2)
		breaker_takes(name, mode, field, lo - 1, 0);
	breaker_takes(name, mode, field, hi, 1);
	breaker_takes(name, mode, field, hi + 1, 0);
}

static void breaker_ranges_match_readme(void **state)
{
	const table *t = &breaker_table;
	wms_client *c = NULL;
	wms_error err;
	uint64_t lo, hi;
	const char *p;
	size_t i;
	row r;
	(void)state;

	for (i = 0; i < N_BREAKER_FIELDS; i++) {
		const char *name = breaker_fields[i].name;
		get_row(t, name, &r);
		if (r.n < 4)
			fail_msg("%s: breaker table, row `%s`: no range cell", readme_path, name);
		if (strcmp(r.cell[2], "any") == 0) {
			breaker_takes(name, WMS_BREAKER_MODE_CONSECUTIVE, i, UINT32_MAX, 1);
		} else if (strcmp(name, "sliding_window_size") == 0) {
			/* "LO–HI calls / LO–HI s" */
			range_in(t, name, r.cell[2], &lo, &hi, &p);
			breaker_range(name, WMS_BREAKER_MODE_COUNT_BASED, i, lo, hi);
			range_in(t, name, p, &lo, &hi, NULL);
			breaker_range(name, WMS_BREAKER_MODE_TIME_BASED, i, lo, hi);
		} else if (strcmp(name, "max_open_duration_ms") == 0) {
			/* "`open_duration_ms`–HI": from the open duration resolved */
			if (strncmp(r.cell[2], "`open_duration_ms`\xE2\x80\x93", 21) != 0)
				fail_msg("%s: breaker table, row `%s`: \"%s\" is not "
					 "\"`open_duration_ms`\xE2\x80\x93HI\"",
					 readme_path, name, r.cell[2]);
			p = r.cell[2] + 21;
			if (!parse_qty(&p, &hi))
				fail_msg("%s: breaker table, row `%s`: no HI in \"%s\"", readme_path,
					 name, r.cell[2]);
			lo = resolved(-1, 0).open_duration_ms;
			breaker_range(name, WMS_BREAKER_MODE_CONSECUTIVE, i, lo, hi);
		} else {
			range_in(t, name, r.cell[2], &lo, &hi, NULL);
			breaker_range(name, WMS_BREAKER_MODE_CONSECUTIVE, i, lo, hi);
		}
	}

	/* the client refuses the same (README: "and wms_client_new") */
	get_row(t, "failure_threshold", &r);
	range_in(t, "failure_threshold", r.cell[2], &lo, &hi, NULL);
	if (make_client(&c, set_failure_threshold, hi + 1, &err) != WMS_ERR_INVALID_ARG)
		mismatch("breaker table, row `failure_threshold`: wms_client_new takes %llu",
			 (unsigned long long)(hi + 1));
	else if (!strstr(err.message, "breaker_options"))
		mismatch("breaker_options out of range: the message does not say so: %s",
			 err.message);
	wms_client_free(c);
	no_mismatch();
}

/* ---- wms_call_options ----------------------------------------------------- */

static void call_options_match_readme(void **state)
{
	static const wms_call_options init = WMS_CALL_OPTIONS_INIT;
	static const struct {
		const char *name;
		const char *const *value;
	} pointers[] = {
		{ "soap_action", &init.soap_action },
		{ "reply_namespace", &init.reply_namespace },
		{ "reply_element", &init.reply_element },
	};
	const table *t = &call_table;
	wms_client *c;
	wms_error err;
	struct _xmlDoc *reply = NULL;
	size_t i;
	row r;
	(void)state;

	for (i = 0; i < sizeof(pointers) / sizeof(pointers[0]); i++) {
		get_row(t, pointers[i].name, &r);
		if (strncmp(r.cell[1], "NULL", 4) != 0)
			fail_msg("%s: wms_call_options table, row `%s`: default \"%s\" is not NULL...",
				 readme_path, pointers[i].name, r.cell[1]);
		if (*pointers[i].value != NULL)
			mismatch("wms_call_options table, row `%s`: README says NULL, "
				 "WMS_CALL_OPTIONS_INIT does not",
				 pointers[i].name);
	}
	get_row(t, "idempotent", &r);
	same(t, "idempotent", "default", leading_qty(t, "idempotent", &r, 1),
	     (uint64_t)init.idempotent);

	/* "required": left at _INIT, the call is refused, nothing sent */
	get_row(t, "operation", &r);
	if (strcmp(r.cell[1], "required") != 0)
		fail_msg("%s: wms_call_options table, row `operation`: default \"%s\" is not "
			 "\"required\"",
			 readme_path, r.cell[1]);
	c = client_with(NULL, 0);
	if (init.operation != NULL ||
	    wms_call_bytes(&reply, c, &init, "<a/>", 4, &err) != WMS_ERR_INVALID_ARG ||
	    !strstr(err.message, "operation"))
		mismatch("wms_call_options table, row `operation`: required, but a call without one "
			 "is not refused naming it");
	assert_null(reply);
	nothing_sent(c);
	wms_client_free(c);
	no_mismatch();
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(status_codes_match_readme, setup),
		cmocka_unit_test_setup(status_names_distinct, setup),
		cmocka_unit_test_setup(client_defaults_match_readme, setup),
		cmocka_unit_test_setup(client_bounds_match_readme, setup),
		cmocka_unit_test_setup(breaker_defaults_match_readme, setup),
		cmocka_unit_test_setup(breaker_ranges_match_readme, setup),
		cmocka_unit_test_setup(call_options_match_readme, setup),
	};
	static char path[4096];
	const char *root = getenv("WMS_SOURCE_ROOT");
	uint16_t port;
	int rc, port_fd = local_listen(&port, -1);

	if (port_fd < 0) {
		perror("test_readme_defaults: a port on 127.0.0.1");
		return 1;
	}
	snprintf(endpoint, sizeof(endpoint), "http://127.0.0.1:%u/", (unsigned)port);
	if (argc > 1)
		readme_path = argv[1];
	else if ((readme_path = getenv("WMS_README")) == NULL && root) {
		snprintf(path, sizeof(path), "%s/README.md", root);
		readme_path = path;
	}
	if (!readme_path || !load_readme(readme_path)) {
		fprintf(stderr, "test_readme_defaults: cannot read README.md (%s): give its path as "
				"the argument, or set WMS_README or WMS_SOURCE_ROOT\n",
			readme_path ? readme_path : "no path");
		return 1;
	}
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	free(readme);
	close(port_fd);
	return rc;
}
