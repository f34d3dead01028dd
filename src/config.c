/*
 * libwms - configuration from the SLA YAML file (libyaml, event API). The
 * schema, what is accepted so that nothing is guessed, and the messages:
 * docs/internals/config.md (examples/fulfillment-sla.yaml is a commented
 * example).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <yaml.h>
#include "internal.h"
#include "health_server_int.h" /* wms__health_listen_parse */
#include "util/num.h"
#include "breaker/redis_int.h"
#include "wms/config.h"

#define MAX_FILE_BYTES ((size_t)1 << 20)
#define MAX_NAME_BYTES 64
#define MAX_ENDPOINT_BYTES 2048
#define MAX_DEPTH 64 /* nesting in the skipped rest of the SLA */
#define ECHO_MAX 40 /* bytes of a bad value or key echoed in a message */

/* Library defaults used by the cross-field checks (breaker.h, client.h). */
#define DEFAULT_OPEN_DURATION_MS 30000u
#define DEFAULT_INITIAL_BACKOFF_MS 100u
#define DEFAULT_MAX_BACKOFF_MS 2000u

#if defined(__GNUC__)
#define PRINTF_LIKE(f, a) __attribute__((format(printf, f, a)))
#else
#define PRINTF_LIKE(f, a)
#endif

/* ---- the keys --------------------------------------------------------- */

enum key_id {
	KC_ENDPOINT,
	KC_SOAP_VERSION,
	KC_CONNECT_TIMEOUT,
	KC_TIMEOUT,
	KC_STALL_TIMEOUT,
	KC_MAX_REPLY,
	KC_MAX_CONCURRENT,
	KC_MAX_WAIT_SLOT,
	KC_HEALTH_LISTEN,
	KC_CACHE_ENTRIES,
	KC_CACHE_AGE,
	KC_CACHE_BYTES,
	KB_MODE,
	KB_SCOPE,
	KB_NAME,
	KB_FAILURE_THRESHOLD,
	KB_FAILURE_RATE,
	KB_SLOW_RATE,
	KB_SLOW_DURATION,
	KB_WINDOW,
	KB_MIN_CALLS,
	KB_OPEN_DURATION,
	KB_HALF_OPEN_CALLS,
	KB_MAX_WAIT_HALF_OPEN,
	KB_GROWTH,
	KB_MAX_OPEN,
	KB_JITTER,
	KB_RETRY,
	KR_MAX_ATTEMPTS,
	KR_INITIAL_BACKOFF,
	KR_MAX_BACKOFF,
	KR_MULTIPLIER,
	KR_NOT_SENT_ONLY,
	KB_SHARED,
	KS_REDIS_URL,
	KS_NAME,
	KS_COMMAND_TIMEOUT,
	KS_HEARTBEAT,
	KS_KEY_TTL,
	KS_QUEUE_SIZE,
	KS_QUORUM,
	KEY_COUNT
};
_Static_assert(KEY_COUNT <= 64, "wms_config.set has a bit per key");

enum block { B_CLIENT, B_BREAKER, B_RETRY, B_SHARED };

static const char *const block_path[] = { "client", "circuit_breaker", "circuit_breaker.retry",
					  "circuit_breaker.shared" };

enum vtype {
	T_UINT,    /* decimal integer lo..hi */
	T_PERCENT, /* T_UINT, or the same with a zero fraction */
	T_BOOL,
	T_ENUM,    /* one of `choices`; the value stored is the index */
	T_NAME,    /* 1..64 bytes of text */
	T_URL,     /* http:// or https:// */
	T_REDIS,   /* a Redis URL, checked by wms__redis_url_parse; never echoed */
	T_FLEET,   /* 1..64 of letters, digits, '.', '-', '_' (the shared name) */
	T_LISTEN,  /* ADDRESS:PORT for the health endpoint (wms_health_server_start) */
	T_MAP      /* a nested block (retry, shared) */
};

typedef struct key_def {
	enum key_id id;
	enum block block;
	const char *name;
	enum vtype type;
	uint64_t lo, hi;
	const char *const *choices;
	size_t nchoices;
} key_def;

static const char *const mode_choices[] = { "consecutive", "count_based", "time_based" };
static const wms_breaker_mode mode_values[] = { WMS_BREAKER_MODE_CONSECUTIVE, WMS_BREAKER_MODE_COUNT_BASED,
						WMS_BREAKER_MODE_TIME_BASED };
static const char *const scope_choices[] = { "per_client", "per_operation" };
static const wms_breaker_scope scope_values[] = { WMS_BREAKER_SCOPE_PER_CLIENT,
						  WMS_BREAKER_SCOPE_PER_OPERATION };
static const char *const soap_choices[] = { "1.1", "1.2" };
static const wms_soap_version soap_values[] = { WMS_SOAP_11, WMS_SOAP_12 };

#define ENUM(c) c, sizeof(c) / sizeof((c)[0])

static const key_def keys[] = {
	{ KC_ENDPOINT, B_CLIENT, "endpoint", T_URL, 0, 0, NULL, 0 },
	{ KC_SOAP_VERSION, B_CLIENT, "soap_version", T_ENUM, 0, 0, ENUM(soap_choices) },
	{ KC_CONNECT_TIMEOUT, B_CLIENT, "connect_timeout_ms", T_UINT, 1, 3600000, NULL, 0 },
	{ KC_TIMEOUT, B_CLIENT, "timeout_ms", T_UINT, 1, 3600000, NULL, 0 },
	{ KC_STALL_TIMEOUT, B_CLIENT, "stall_timeout_ms", T_UINT, 1, 3600000, NULL, 0 },
	{ KC_MAX_REPLY, B_CLIENT, "max_reply_bytes", T_UINT, 1, 1073741824, NULL, 0 },
	/* the bulkhead (wms_bulkhead_options): 0 is "off", as in the struct */
	{ KC_MAX_CONCURRENT, B_CLIENT, "max_concurrent_calls", T_UINT, 0, 65536, NULL, 0 },
	{ KC_MAX_WAIT_SLOT, B_CLIENT, "max_wait_for_slot_ms", T_UINT, 0, 3600000, NULL, 0 },
	{ KC_HEALTH_LISTEN, B_CLIENT, "health_listen", T_LISTEN, 0, 0, NULL, 0 },
	/* the read cache (wms_read_cache_options): entries 0 is "off" */
	{ KC_CACHE_ENTRIES, B_CLIENT, "read_cache_max_entries", T_UINT, 0, WMS_MAX_READ_CACHE_ENTRIES,
	  NULL, 0 },
	{ KC_CACHE_AGE, B_CLIENT, "read_cache_max_age_ms", T_UINT, 1, WMS_MAX_READ_CACHE_AGE_MS, NULL,
	  0 },
	{ KC_CACHE_BYTES, B_CLIENT, "read_cache_max_bytes", T_UINT, WMS_MIN_READ_CACHE_BYTES,
	  WMS_MAX_READ_CACHE_BYTES, NULL, 0 },
	{ KB_MODE, B_BREAKER, "mode", T_ENUM, 0, 0, ENUM(mode_choices) },
	{ KB_SCOPE, B_BREAKER, "scope", T_ENUM, 0, 0, ENUM(scope_choices) },
	{ KB_NAME, B_BREAKER, "name", T_NAME, 1, MAX_NAME_BYTES, NULL, 0 },
	{ KB_FAILURE_THRESHOLD, B_BREAKER, "failure_threshold", T_UINT, 1, 1000000, NULL, 0 },
	{ KB_FAILURE_RATE, B_BREAKER, "failure_rate_threshold", T_PERCENT, 1, 100, NULL, 0 },
	{ KB_SLOW_RATE, B_BREAKER, "slow_call_rate_threshold", T_PERCENT, 1, 100, NULL, 0 },
	{ KB_SLOW_DURATION, B_BREAKER, "slow_call_duration_ms", T_UINT, 1, 3600000, NULL, 0 },
	{ KB_WINDOW, B_BREAKER, "sliding_window_size", T_UINT, 1, 100000, NULL, 0 },
	{ KB_MIN_CALLS, B_BREAKER, "minimum_number_of_calls", T_UINT, 1, 1000000, NULL, 0 },
	{ KB_OPEN_DURATION, B_BREAKER, "open_duration_ms", T_UINT, 1, 86400000, NULL, 0 },
	{ KB_HALF_OPEN_CALLS, B_BREAKER, "permitted_calls_in_half_open", T_UINT, 1, 100000, NULL, 0 },
	{ KB_MAX_WAIT_HALF_OPEN, B_BREAKER, "max_wait_in_half_open_ms", T_UINT, 1, 86400000, NULL, 0 },
	{ KB_GROWTH, B_BREAKER, "open_duration_growth_pct", T_UINT, 100, 1000, NULL, 0 },
	{ KB_MAX_OPEN, B_BREAKER, "max_open_duration_ms", T_UINT, 1, 86400000, NULL, 0 },
	{ KB_JITTER, B_BREAKER, "open_duration_jitter_pct", T_UINT, 0, 100, NULL, 0 },
	{ KB_RETRY, B_BREAKER, "retry", T_MAP, 0, 0, NULL, 0 },
	{ KR_MAX_ATTEMPTS, B_RETRY, "max_attempts", T_UINT, 1, 10, NULL, 0 },
	{ KR_INITIAL_BACKOFF, B_RETRY, "initial_backoff_ms", T_UINT, 1, 3600000, NULL, 0 },
	{ KR_MAX_BACKOFF, B_RETRY, "max_backoff_ms", T_UINT, 1, 3600000, NULL, 0 },
	{ KR_MULTIPLIER, B_RETRY, "backoff_multiplier_pct", T_UINT, 100, 1000, NULL, 0 },
	{ KR_NOT_SENT_ONLY, B_RETRY, "not_sent_only", T_BOOL, 0, 1, NULL, 0 },
	{ KB_SHARED, B_BREAKER, "shared", T_MAP, 0, 0, NULL, 0 },
	/* the ranges of wms_shared_options (wms/shared.h) */
	{ KS_REDIS_URL, B_SHARED, "redis_url", T_REDIS, 0, 0, NULL, 0 },
	{ KS_NAME, B_SHARED, "name", T_FLEET, 1, MAX_NAME_BYTES, NULL, 0 },
	{ KS_COMMAND_TIMEOUT, B_SHARED, "command_timeout_ms", T_UINT, 1, 10000, NULL, 0 },
	{ KS_HEARTBEAT, B_SHARED, "heartbeat_ms", T_UINT, 5, 10000, NULL, 0 },
	{ KS_KEY_TTL, B_SHARED, "key_ttl_s", T_UINT, 60, 2592000, NULL, 0 },
	{ KS_QUEUE_SIZE, B_SHARED, "queue_size", T_UINT, 64, 1048576, NULL, 0 },
	{ KS_QUORUM, B_SHARED, "quorum", T_UINT, 1, 64, NULL, 0 },
};

struct wms_config {
	uint64_t set;              /* bit per key_id present in the file */
	uint64_t value[KEY_COUNT]; /* numbers, booleans (0/1), enum indexes */
	size_t line[KEY_COUNT];    /* 1-based line of each key */
	char *endpoint;
	char *name;
	char *redis_url;  /* may hold a password: wiped when freed */
	char *fleet_name; /* circuit_breaker.shared.name */
	char *health_listen; /* client.health_listen */
};

#define BIT(id) ((uint64_t)1 << (id))

static int is_set(const wms_config *cfg, enum key_id id)
{
	return (cfg->set & BIT(id)) != 0;
}

/* ---- top-level keys seen (duplicates), an open-addressing hash set ---- */

typedef struct keyslot {
	char *key; /* NULL: empty slot */
	size_t len;
	size_t line;
} keyslot;

typedef struct keyset {
	keyslot *slots;
	size_t cap; /* a power of two */
	size_t count;
} keyset;

static size_t hash_key(const char *s, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;
	size_t i;
	for (i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= 0x100000001b3ull;
	}
	return (size_t)h;
}

static keyslot *keyset_find(keyslot *slots, size_t cap, const char *key, size_t len)
{
	size_t i = hash_key(key, len) & (cap - 1);
	while (slots[i].key && !(slots[i].len == len && memcmp(slots[i].key, key, len) == 0))
		i = (i + 1) & (cap - 1);
	return &slots[i];
}

static wms_status keyset_grow(keyset *s)
{
	size_t cap = s->cap ? s->cap * 2 : 16, i;
	keyslot *slots = wms__calloc(cap, sizeof(*slots));
	if (!slots)
		return WMS_ERR_NOMEM;
	for (i = 0; i < s->cap; i++)
		if (s->slots[i].key)
			*keyset_find(slots, cap, s->slots[i].key, s->slots[i].len) = s->slots[i];
	wms__free(s->slots);
	s->slots = slots;
	s->cap = cap;
	return WMS_OK;
}

/* Add `key`; *first_line gets the line of an earlier occurrence, else 0. */
static wms_status keyset_add(keyset *s, const char *key, size_t len, size_t line,
			     size_t *first_line)
{
	keyslot *slot;
	*first_line = 0;
	if ((s->count + 1) * 2 > s->cap && keyset_grow(s) != WMS_OK)
		return WMS_ERR_NOMEM;
	slot = keyset_find(s->slots, s->cap, key, len);
	if (slot->key) {
		*first_line = slot->line;
		return WMS_OK;
	}
	slot->key = wms__strndup(key, len);
	if (!slot->key)
		return WMS_ERR_NOMEM;
	slot->len = len;
	slot->line = line;
	s->count++;
	return WMS_OK;
}

static void keyset_free(keyset *s)
{
	size_t i;
	for (i = 0; i < s->cap; i++)
		wms__free(s->slots[i].key);
	wms__free(s->slots);
	s->slots = NULL;
	s->cap = s->count = 0;
}

/* ---- the parser ------------------------------------------------------- */

typedef struct parser {
	yaml_parser_t yp;
	yaml_event_t ev;
	int have_ev;
	const char *name;
	const unsigned char *buf;
	size_t len;
	wms_error *err;
	wms_config *cfg;
	keyset top;
	size_t end_line; /* see end_line() */
	/* Where we are, for anchor/alias errors: block path and key, or NULL. */
	const char *path;
	const char *key;
} parser;

/* Line breaks in b[0..len) as YAML counts them (CR LF, CR, LF, NEL, LS,
 * PS); *after gets the index just past the last one (0 if none). */
static size_t count_breaks(const unsigned char *b, size_t len, size_t *after)
{
	size_t i, lines = 0;

	*after = 0;
	for (i = 0; i < len; i++) {
		if (b[i] == '\r' || b[i] == '\n') {
			if (b[i] == '\r' && i + 1 < len && b[i + 1] == '\n')
				i++;
		} else if (b[i] == 0xC2 && i + 1 < len && b[i + 1] == 0x85) {
			i++;
		} else if (b[i] == 0xE2 && i + 2 < len && b[i + 1] == 0x80 &&
			   (b[i + 2] == 0xA8 || b[i + 2] == 0xA9)) {
			i += 2;
		} else {
			continue;
		}
		lines++;
		*after = i + 1;
	}
	return lines;
}

/* libyaml's 0-based line for the end of the input: it starts a line of its
 * own after a last line that has no break. */
static size_t end_line(const unsigned char *b, size_t len)
{
	size_t after, lines = count_breaks(b, len, &after);
	return after == len ? lines : lines + 1;
}

/* Whether a mark is libyaml's end of the input. */
static int at_end(const parser *p, yaml_mark_t mark)
{
	return p->end_line > 0 && mark.line >= p->end_line;
}

/* The 1-based line of a mark; the end of the input is on the last line. */
static size_t mark_line(const parser *p, yaml_mark_t mark)
{
	return at_end(p, mark) ? p->end_line : mark.line + 1;
}

/* Copy at most ECHO_MAX bytes of `s` for a message: control bytes become
 * '?', a cut never splits a UTF-8 sequence and is marked with "...". */
static void echo(char *dst, size_t size, const char *s, size_t n)
{
	size_t i, k = 0, lim = n;
	if (lim > ECHO_MAX)
		for (lim = ECHO_MAX; lim > 0 && ((unsigned char)s[lim] & 0xC0) == 0x80; lim--)
			;
	for (i = 0; i < lim && k + 4 < size; i++) {
		unsigned char c = (unsigned char)s[i];
		dst[k++] = (c < 0x20 || c == 0x7f) ? '?' : (char)c;
	}
	if (lim < n && k + 4 <= size) {
		memcpy(dst + k, "...", 3);
		k += 3;
	}
	dst[k] = '\0';
}

static wms_status fail_at(parser *p, size_t line, const char *path, const char *key,
			  const char *fmt, ...) PRINTF_LIKE(5, 6);

/* "<file>:<line>: <path>.<key>: <problem>" */
static wms_status fail_at(parser *p, size_t line, const char *path, const char *key,
			  const char *fmt, ...)
{
	char problem[WMS_ERROR_MESSAGE_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(problem, sizeof(problem), fmt, ap);
	va_end(ap);
	return wms__fail(p->err, WMS_ERR_CONFIG, WMS_DELIVERY_NOT_SENT, "%s:%zu: %s%s%s%s%s",
			 p->name, line, path ? path : "", path && key ? "." : "", key ? key : "",
			 path || key ? ": " : "", problem);
}

static wms_status nomem(parser *p)
{
	return wms__fail(p->err, WMS_ERR_NOMEM, WMS_DELIVERY_NOT_SENT, "%s: out of memory", p->name);
}

static wms_status syntax_error(parser *p)
{
	yaml_parser_t *y = &p->yp;
	size_t line, after;

	if (y->error == YAML_MEMORY_ERROR)
		return nomem(p);
	if (y->error == YAML_READER_ERROR) {
		/* No mark here, only a byte offset. */
		line = 1 + count_breaks(p->buf, y->problem_offset < p->len ? y->problem_offset : p->len,
					&after);
		if (y->problem_value != -1)
			return fail_at(p, line, NULL, NULL, "invalid input: %s (#%X at byte %zu)",
				       y->problem ? y->problem : "unreadable", (unsigned)y->problem_value,
				       y->problem_offset);
		return fail_at(p, line, NULL, NULL, "invalid input: %s (at byte %zu)",
			       y->problem ? y->problem : "unreadable", y->problem_offset);
	}
	if (y->error == YAML_SCANNER_ERROR || y->error == YAML_PARSER_ERROR) {
		const char *problem = y->problem ? y->problem : "invalid YAML";
		char where[64] = "";
		if (y->context && at_end(p, y->context_mark))
			snprintf(where, sizeof(where), "at the end of the file");
		else if (y->context)
			snprintf(where, sizeof(where), "at line %zu, column %zu",
				 mark_line(p, y->context_mark), y->context_mark.column + 1);
		if (y->context)
			return fail_at(p, mark_line(p, y->problem_mark), NULL, NULL,
				       "YAML syntax error: %s, %s %s", problem, y->context, where);
		if (at_end(p, y->problem_mark))
			return fail_at(p, mark_line(p, y->problem_mark), NULL, NULL,
				       "YAML syntax error: %s (at the end of the file)", problem);
		return fail_at(p, mark_line(p, y->problem_mark), NULL, NULL,
			       "YAML syntax error: %s (column %zu)", problem,
			       y->problem_mark.column + 1);
	}
	return wms__fail(p->err, WMS_ERR_INTERNAL, WMS_DELIVERY_NOT_SENT,
			 "%s: libyaml failed without saying why (error %d)", p->name, (int)y->error);
}

static const yaml_char_t *event_anchor(const yaml_event_t *ev)
{
	if (ev->type == YAML_SCALAR_EVENT)
		return ev->data.scalar.anchor;
	if (ev->type == YAML_SEQUENCE_START_EVENT)
		return ev->data.sequence_start.anchor;
	if (ev->type == YAML_MAPPING_START_EVENT)
		return ev->data.mapping_start.anchor;
	return NULL;
}

static const yaml_char_t *event_tag(const yaml_event_t *ev)
{
	if (ev->type == YAML_SCALAR_EVENT)
		return ev->data.scalar.tag;
	if (ev->type == YAML_SEQUENCE_START_EVENT)
		return ev->data.sequence_start.tag;
	if (ev->type == YAML_MAPPING_START_EVENT)
		return ev->data.mapping_start.tag;
	return NULL;
}

/* The next event into p->ev. Aliases and anchors are refused here, so
 * nowhere in the file can one node stand for another. */
static wms_status next(parser *p)
{
	const yaml_char_t *anchor;
	char what[ECHO_MAX + 8];

	if (p->have_ev) {
		yaml_event_delete(&p->ev);
		p->have_ev = 0;
	}
	if (!yaml_parser_parse(&p->yp, &p->ev))
		return syntax_error(p);
	p->have_ev = 1;
	if (p->ev.type == YAML_ALIAS_EVENT) {
		anchor = p->ev.data.alias.anchor;
		echo(what, sizeof(what), (const char *)anchor, strlen((const char *)anchor));
		return fail_at(p, mark_line(p, p->ev.start_mark), p->path, p->key,
			       "aliases (*%s) are not supported: write the value out", what);
	}
	anchor = event_anchor(&p->ev);
	if (anchor) {
		echo(what, sizeof(what), (const char *)anchor, strlen((const char *)anchor));
		return fail_at(p, mark_line(p, p->ev.start_mark), p->path, p->key,
			       "anchors (&%s) are not supported", what);
	}
	return WMS_OK;
}

static const char *node_kind(const yaml_event_t *ev)
{
	if (ev->type == YAML_MAPPING_START_EVENT)
		return "a mapping";
	if (ev->type == YAML_SEQUENCE_START_EVENT)
		return "a sequence";
	return "a scalar";
}

/* Consume the rest of the node whose first event is p->ev. The depth is
 * capped: libyaml's scanner does work proportional to the flow depth for
 * every token, so 1 MiB of '[' would take minutes. */
static wms_status skip_node(parser *p)
{
	size_t depth = 0;
	wms_status st;

	for (;;) {
		if (p->ev.type == YAML_MAPPING_START_EVENT || p->ev.type == YAML_SEQUENCE_START_EVENT) {
			if (++depth > MAX_DEPTH)
				return fail_at(p, mark_line(p, p->ev.start_mark), NULL, NULL,
					       "nested deeper than %d levels", MAX_DEPTH);
		} else if (p->ev.type == YAML_MAPPING_END_EVENT ||
			   p->ev.type == YAML_SEQUENCE_END_EVENT) {
			depth--;
		}
		if (depth == 0)
			return WMS_OK;
		st = next(p);
		if (st != WMS_OK)
			return st;
	}
}

static int is_plain(const yaml_event_t *ev)
{
	return ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
}

/* A plain scalar YAML reads as null: "", ~, null. */
static int is_null(const yaml_event_t *ev)
{
	const char *s;
	size_t n;
	if (ev->type != YAML_SCALAR_EVENT || !is_plain(ev))
		return 0;
	s = (const char *)ev->data.scalar.value;
	n = ev->data.scalar.length;
	return n == 0 || (n == 1 && s[0] == '~') ||
	       (n == 4 && (!memcmp(s, "null", 4) || !memcmp(s, "Null", 4) || !memcmp(s, "NULL", 4)));
}

static int all_digits(const char *s, size_t n)
{
	size_t i;
	if (!n)
		return 0;
	for (i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return 0;
	return 1;
}

static const char *type_name(const key_def *d)
{
	switch (d->type) {
	case T_UINT:
		return "an integer";
	case T_PERCENT:
		return "a number";
	case T_BOOL:
		return "true or false";
	case T_ENUM:
	case T_NAME:
	case T_FLEET:
	case T_LISTEN:
		return "a string";
	case T_URL:
	case T_REDIS:
		return "a URL";
	case T_MAP:
		return "a mapping";
	}
	return "a value";
}

static wms_status parse_number(parser *p, const key_def *d, const char *path, size_t line,
			       const char *s, size_t n, uint64_t *out)
{
	char got[ECHO_MAX + 8];
	uint64_t v = 0;
	size_t digits = n;
	int rc;

	echo(got, sizeof(got), s, n);
	if (d->type == T_PERCENT && n > 0 && s[n - 1] == '%')
		return fail_at(p, line, path, d->name,
			       "must be a number %llu..%llu without a %% sign (got %s)",
			       (unsigned long long)d->lo, (unsigned long long)d->hi, got);
	if (d->type == T_PERCENT) {
		const char *dot = memchr(s, '.', n);
		if (dot) {
			size_t f = (size_t)(dot - s) + 1;
			if (f == n || !all_digits(s + f, n - f))
				goto not_number;
			for (; f < n; f++)
				if (s[f] != '0')
					return fail_at(p, line, path, d->name,
						       "must be a whole number %llu..%llu (got %s)",
						       (unsigned long long)d->lo,
						       (unsigned long long)d->hi, got);
			digits = (size_t)(dot - s);
		}
	}
	if (digits > 1 && s[0] == '-' && all_digits(s + 1, digits - 1))
		goto out_of_range; /* negative */
	rc = wms__parse_uint(s, digits, d->lo, d->hi, &v);
	if (rc == WMS__NUM_NOT_DIGITS)
		goto not_number;
	if (digits > 1 && s[0] == '0')
		return fail_at(p, line, path, d->name,
			       "must be a decimal integer without leading zeros (got %s)", got);
	if (rc == WMS__NUM_RANGE)
		goto out_of_range;
	*out = v;
	return WMS_OK;
out_of_range:
	return fail_at(p, line, path, d->name, "must be %llu..%llu (got %s)",
		       (unsigned long long)d->lo, (unsigned long long)d->hi, got);
not_number:
	return fail_at(p, line, path, d->name, "must be a decimal integer %llu..%llu (got %s)",
		       (unsigned long long)d->lo, (unsigned long long)d->hi, got);
}

/* C0, DEL, and the C1 controls U+0080-U+009F (UTF-8 C2 80..C2 9F). */
static int has_control(const char *s, size_t n)
{
	size_t i;
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c < 0x20 || c == 0x7f)
			return 1;
		if (c == 0xC2 && i + 1 < n && (unsigned char)s[i + 1] >= 0x80 &&
		    (unsigned char)s[i + 1] <= 0x9F)
			return 1;
	}
	return 0;
}

static int has_space_or_control(const char *s, size_t n)
{
	size_t i;
	for (i = 0; i < n; i++)
		if ((unsigned char)s[i] <= 0x20 || s[i] == 0x7f)
			return 1;
	return 0;
}

static int starts_with_nocase(const char *s, size_t n, const char *prefix)
{
	size_t i, k = strlen(prefix);
	if (n < k)
		return 0;
	for (i = 0; i < k; i++) {
		char c = s[i];
		if (c >= 'A' && c <= 'Z')
			c = (char)(c - 'A' + 'a');
		if (c != prefix[i])
			return 0;
	}
	return 1;
}

/* Letters, digits, '.', '-', '_' (a shared breaker's fleet name). */
static int fleet_chars_ok(const char *s, size_t n)
{
	size_t i;
	for (i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '-' || c == '_'))
			return 0;
	}
	return 1;
}

/* wms__redis_url_parse's message without its "shared.redis_url" prefix:
 * the key is named by fail_at. */
static const char *url_problem(const char *m)
{
	static const char prefix[] = "shared.redis_url";
	if (strncmp(m, prefix, sizeof(prefix) - 1) != 0)
		return m;
	m += sizeof(prefix) - 1;
	if (m[0] == ':' && m[1] == ' ')
		return m + 2;
	return m[0] == ' ' ? m + 1 : m;
}

static void wipe(void *p, size_t n)
{
	volatile unsigned char *v = p;
	while (n--)
		*v++ = 0;
}

/* circuit_breaker.shared.redis_url: checked as the store will read it. The
 * value may hold a password, so it is never echoed, and the parser's
 * message never repeats it. */
static wms_status parse_redis_url(parser *p, const key_def *d, const char *path, size_t line,
				  const char *s, size_t n)
{
	wms__redis_addr addr;
	wms_error e;
	char *url;
	wms_status st;

	if (n == 0)
		return fail_at(p, line, path, d->name, "must not be empty");
	if (memchr(s, '\0', n))
		return fail_at(p, line, path, d->name, "must not contain a NUL byte");
	url = wms__strndup(s, n);
	if (!url)
		return nomem(p);
	wms_error_clear(&e);
	st = wms__redis_url_parse(&addr, url, &e);
	wipe(&addr, sizeof(addr));
	if (st != WMS_OK) {
		wms__free_secret(url);
		if (st == WMS_ERR_NOMEM)
			return nomem(p);
		return fail_at(p, line, path, d->name, "%s",
			       e.message[0] ? url_problem(e.message) : "is not a valid Redis URL");
	}
	p->cfg->redis_url = url;
	return WMS_OK;
}

/* What a URL's first bytes say of it, for a message: "a URL with scheme
 * SCHEME" when it starts SCHEME:// (letters, digits, + - .), "nothing
 * after SCHEME://", else "no scheme". Nothing past the "://": a user and
 * password may follow. */
static const char *url_scheme(char *dst, size_t size, const char *s, size_t n)
{
	size_t i = 0;
	while (i < n && i < 16 &&
	       ((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		(s[i] >= '0' && s[i] <= '9') || s[i] == '+' || s[i] == '-' || s[i] == '.'))
		i++;
	if (i == 0 || n - i < 3 || memcmp(s + i, "://", 3) != 0)
		return "no scheme";
	snprintf(dst, size, n - i == 3 ? "nothing after %.*s://" : "a URL with scheme %.*s",
		 (int)i, s);
	return dst;
}

/* Store the value of key `d` (line `line`) from p->ev. */
static wms_status parse_value(parser *p, const key_def *d, const char *path, size_t line)
{
	const yaml_event_t *ev = &p->ev;
	wms_config *cfg = p->cfg;
	const char *s;
	char got[ECHO_MAX + 8];
	char **slot;
	size_t n, i;
	int plain;
	uint64_t v = 0;
	wms_status st;

	if (ev->type != YAML_SCALAR_EVENT)
		return fail_at(p, line, path, d->name, "must be %s, not %s", type_name(d),
			       node_kind(ev));
	if (ev->data.scalar.tag)
		return fail_at(p, line, path, d->name, "explicit YAML tags are not supported");
	if (is_null(ev))
		return fail_at(p, line, path, d->name, "has no value (expected %s)", type_name(d));
	s = (const char *)ev->data.scalar.value;
	n = ev->data.scalar.length;
	plain = is_plain(ev);
	echo(got, sizeof(got), s, n);

	switch (d->type) {
	case T_UINT:
	case T_PERCENT:
		if (!plain) {
			int quoted = ev->data.scalar.style == YAML_SINGLE_QUOTED_SCALAR_STYLE ||
				     ev->data.scalar.style == YAML_DOUBLE_QUOTED_SCALAR_STYLE;
			return fail_at(p, line, path, d->name, "must be %s, not a %s string (got \"%s\")",
				       type_name(d), quoted ? "quoted" : "block", got);
		}
		st = parse_number(p, d, path, line, s, n, &v);
		if (st != WMS_OK)
			return st;
		break;
	case T_BOOL:
		if (plain && n == 4 && !memcmp(s, "true", 4))
			v = 1;
		else if (plain && n == 5 && !memcmp(s, "false", 5))
			v = 0;
		else
			return fail_at(p, line, path, d->name, "must be true or false (got %s%s%s)",
				       plain ? "" : "\"", got, plain ? "" : "\"");
		break;
	case T_ENUM:
		for (i = 0; i < d->nchoices; i++)
			if (strlen(d->choices[i]) == n && !memcmp(s, d->choices[i], n))
				break;
		if (i == d->nchoices) {
			char list[128] = "";
			size_t k;
			for (k = 0; k < d->nchoices; k++) {
				if (k)
					strncat(list, ", ", sizeof(list) - strlen(list) - 1);
				strncat(list, d->choices[k], sizeof(list) - strlen(list) - 1);
			}
			return fail_at(p, line, path, d->name, "must be one of %s (got %s)", list, got);
		}
		v = i;
		break;
	case T_NAME:
	case T_URL:
		if (n == 0)
			return fail_at(p, line, path, d->name, "must not be empty");
		if (d->type == T_NAME && n > MAX_NAME_BYTES)
			return fail_at(p, line, path, d->name, "must be 1..%d bytes long (got %zu)",
				       MAX_NAME_BYTES, n);
		if (d->type == T_NAME && has_control(s, n))
			return fail_at(p, line, path, d->name, "must not contain control characters");
		if (d->type == T_URL) {
			if (n > MAX_ENDPOINT_BYTES)
				return fail_at(p, line, path, d->name,
					       "must be at most %d bytes long (got %zu)",
					       MAX_ENDPOINT_BYTES, n);
			/* the value is not echoed: it may hold a user and password */
			wipe(got, sizeof(got));
			if (!(starts_with_nocase(s, n, "http://") && n > 7) &&
			    !(starts_with_nocase(s, n, "https://") && n > 8))
				return fail_at(p, line, path, d->name,
					       "must be an http:// or https:// URL (got %s)",
					       url_scheme(got, sizeof(got), s, n));
			/* libcurl's own parse waits for wms_client_new: the file
			 * may feed a custom transport, and reading it must not
			 * start libcurl before wms_global_init */
			if (has_space_or_control(s, n))
				return fail_at(p, line, path, d->name,
					       "must not contain spaces or control characters");
		}
		slot = d->type == T_NAME ? &cfg->name : &cfg->endpoint;
		*slot = wms__strndup(s, n);
		if (!*slot)
			return nomem(p);
		break;
	case T_REDIS:
		wipe(got, sizeof(got)); /* echoed nowhere: it may hold the password */
		st = parse_redis_url(p, d, path, line, s, n);
		if (st != WMS_OK)
			return st;
		break;
	case T_FLEET:
		if (n == 0)
			return fail_at(p, line, path, d->name, "must not be empty");
		if (n > d->hi)
			return fail_at(p, line, path, d->name, "must be %llu..%llu bytes long (got %zu)",
				       (unsigned long long)d->lo, (unsigned long long)d->hi, n);
		if (!fleet_chars_ok(s, n))
			return fail_at(p, line, path, d->name,
				       "must hold only letters, digits, '.', '-' and '_' (got %s)", got);
		cfg->fleet_name = wms__strndup(s, n);
		if (!cfg->fleet_name)
			return nomem(p);
		break;
	case T_LISTEN: {
		/* the health server's own parser says what is wrong; a port of 0
		 * (any free one) is no address anyone could be told */
		struct sockaddr_storage addr;
		socklen_t addr_len;
		wms_error why;
		char *copy = wms__strndup(s, n);
		if (!copy)
			return nomem(p);
		if (n == 0 || strlen(copy) != n ||
		    wms__health_listen_parse(&addr, &addr_len, copy, &why) != WMS_OK ||
		    (addr.ss_family == AF_INET ? ((struct sockaddr_in *)&addr)->sin_port
					       : ((struct sockaddr_in6 *)&addr)->sin6_port) == 0) {
			wms__free(copy);
			return fail_at(p, line, path, d->name,
				       "must be ADDRESS:PORT, a dotted IPv4 address or [IPv6] and a "
				       "port 1-65535 (got %s)", got);
		}
		cfg->health_listen = copy;
		break;
	}
	case T_MAP:
		return wms__fail(p->err, WMS_ERR_INTERNAL, WMS_DELIVERY_NOT_SENT,
				 "config: a block read as a value");
	}
	cfg->value[d->id] = v;
	return WMS_OK;
}

static const key_def *find_key(enum block block, const char *s, size_t n)
{
	size_t i;
	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (keys[i].block == block && strlen(keys[i].name) == n && !memcmp(keys[i].name, s, n))
			return &keys[i];
	return NULL;
}

/* The block mapping that follows the key on line `keyline`: client,
 * circuit_breaker, circuit_breaker.retry or circuit_breaker.shared. */
static wms_status parse_block(parser *p, enum block block, size_t keyline)
{
	const char *path = block_path[block];
	/* A nested block's key names itself: "circuit_breaker.retry" is parent + key. */
	int nested = block == B_RETRY || block == B_SHARED;
	const char *parent = nested ? block_path[B_BREAKER] : NULL;
	const char *self = nested ? path + strlen(parent) + 1 : path;
	wms_config *cfg = p->cfg;
	wms_status st;

	p->path = parent;
	p->key = self;
	st = next(p);
	if (st != WMS_OK)
		return st;
	if (is_null(&p->ev))
		return fail_at(p, keyline, parent, self,
			       "has no value (expected a mapping; write {} for an empty block)");
	if (p->ev.type != YAML_MAPPING_START_EVENT)
		return fail_at(p, keyline, parent, self, "must be a mapping, not %s",
			       node_kind(&p->ev));
	if (event_tag(&p->ev))
		return fail_at(p, keyline, parent, self, "explicit YAML tags are not supported");
	for (;;) {
		const key_def *d;
		size_t line;
		char got[ECHO_MAX + 8];

		p->path = parent;
		p->key = self;
		st = next(p);
		if (st != WMS_OK)
			return st;
		if (p->ev.type == YAML_MAPPING_END_EVENT)
			return WMS_OK;
		line = mark_line(p, p->ev.start_mark);
		if (p->ev.type != YAML_SCALAR_EVENT)
			return fail_at(p, line, path, NULL, "keys must be scalars, not %s",
				       node_kind(&p->ev));
		if (p->ev.data.scalar.tag)
			return fail_at(p, line, path, NULL, "explicit YAML tags are not supported");
		d = find_key(block, (const char *)p->ev.data.scalar.value, p->ev.data.scalar.length);
		if (!d) {
			echo(got, sizeof(got), (const char *)p->ev.data.scalar.value,
			     p->ev.data.scalar.length);
			return fail_at(p, line, path, got, "unknown key");
		}
		if (is_set(cfg, d->id))
			return fail_at(p, line, path, d->name, "duplicate key (first at line %zu)",
				       cfg->line[d->id]);
		cfg->set |= BIT(d->id);
		cfg->line[d->id] = line;
		if (d->type == T_MAP) {
			st = parse_block(p, d->id == KB_SHARED ? B_SHARED : B_RETRY, line);
			if (st != WMS_OK)
				return st;
			continue;
		}
		p->path = path;
		p->key = d->name;
		st = next(p);
		if (st != WMS_OK)
			return st;
		st = parse_value(p, d, path, line);
		if (st != WMS_OK)
			return st;
	}
}

static wms_status parse_document(parser *p)
{
	wms_status st;
	size_t line, first;

	if ((st = next(p)) != WMS_OK) /* STREAM-START */
		return st;
	if ((st = next(p)) != WMS_OK)
		return st;
	if (p->ev.type == YAML_STREAM_END_EVENT)
		return fail_at(p, mark_line(p, p->ev.start_mark), NULL, NULL,
			       "the file is empty (expected a mapping)");
	if ((st = next(p)) != WMS_OK) /* the root node */
		return st;
	if (is_null(&p->ev))
		return fail_at(p, mark_line(p, p->ev.start_mark), NULL, NULL,
			       "the document is empty (expected a mapping)");
	if (p->ev.type != YAML_MAPPING_START_EVENT)
		return fail_at(p, mark_line(p, p->ev.start_mark), NULL, NULL,
			       "the root must be a mapping, not %s", node_kind(&p->ev));
	for (;;) {
		const char *k;
		size_t n;

		p->path = p->key = NULL;
		if ((st = next(p)) != WMS_OK)
			return st;
		if (p->ev.type == YAML_MAPPING_END_EVENT)
			break;
		line = mark_line(p, p->ev.start_mark);
		if (p->ev.type != YAML_SCALAR_EVENT)
			return fail_at(p, line, NULL, NULL, "keys must be scalars, not %s",
				       node_kind(&p->ev));
		k = (const char *)p->ev.data.scalar.value;
		n = p->ev.data.scalar.length;
		if (keyset_add(&p->top, k, n, line, &first) != WMS_OK)
			return nomem(p);
		if (first) {
			char got[ECHO_MAX + 8];
			echo(got, sizeof(got), k, n);
			return fail_at(p, line, NULL, got, "duplicate key (first at line %zu)", first);
		}
		if (n == 6 && !memcmp(k, "client", 6)) {
			st = parse_block(p, B_CLIENT, line);
		} else if (n == 15 && !memcmp(k, "circuit_breaker", 15)) {
			st = parse_block(p, B_BREAKER, line);
		} else {
			/* The rest of the SLA: any value, only well-formed. */
			st = next(p);
			if (st == WMS_OK)
				st = skip_node(p);
		}
		if (st != WMS_OK)
			return st;
	}
	p->path = p->key = NULL;
	if ((st = next(p)) != WMS_OK) /* DOCUMENT-END */
		return st;
	if ((st = next(p)) != WMS_OK)
		return st;
	if (p->ev.type == YAML_DOCUMENT_START_EVENT)
		return fail_at(p, mark_line(p, p->ev.start_mark), NULL, NULL,
			       "a second YAML document: the file must hold exactly one");
	return WMS_OK;
}

/* Checks between keys, once the whole file is read. */
static wms_status cross_check(parser *p)
{
	const wms_config *c = p->cfg;
	const char *cb = block_path[B_BREAKER], *rt = block_path[B_RETRY];

	if (is_set(c, KB_SHARED) && !is_set(c, KS_REDIS_URL))
		return fail_at(p, c->line[KB_SHARED], cb, "shared",
			       "redis_url is required in this block (redis://HOST[:PORT][/DB] or "
			       "unix:///PATH)");

	if (is_set(c, KB_WINDOW) && is_set(c, KB_MODE) &&
	    mode_values[c->value[KB_MODE]] == WMS_BREAKER_MODE_TIME_BASED && c->value[KB_WINDOW] > 3600)
		return fail_at(p, c->line[KB_WINDOW], cb, "sliding_window_size",
			       "must be 1..3600 (seconds) in time_based mode (got %llu)",
			       (unsigned long long)c->value[KB_WINDOW]);
	if (is_set(c, KB_MAX_OPEN)) {
		uint64_t open = is_set(c, KB_OPEN_DURATION) ? c->value[KB_OPEN_DURATION]
							    : DEFAULT_OPEN_DURATION_MS;
		if (c->value[KB_MAX_OPEN] < open)
			return fail_at(p, c->line[KB_MAX_OPEN], cb, "max_open_duration_ms",
				       "must be >= %sopen_duration_ms %llu (got %llu)",
				       is_set(c, KB_OPEN_DURATION) ? "" : "the default ",
				       (unsigned long long)open,
				       (unsigned long long)c->value[KB_MAX_OPEN]);
	}
	if (is_set(c, KR_INITIAL_BACKOFF) || is_set(c, KR_MAX_BACKOFF)) {
		uint64_t lo = is_set(c, KR_INITIAL_BACKOFF) ? c->value[KR_INITIAL_BACKOFF]
							    : DEFAULT_INITIAL_BACKOFF_MS;
		uint64_t hi = is_set(c, KR_MAX_BACKOFF) ? c->value[KR_MAX_BACKOFF]
							: DEFAULT_MAX_BACKOFF_MS;
		if (hi < lo && is_set(c, KR_MAX_BACKOFF))
			return fail_at(p, c->line[KR_MAX_BACKOFF], rt, "max_backoff_ms",
				       "must be >= %sinitial_backoff_ms %llu (got %llu)",
				       is_set(c, KR_INITIAL_BACKOFF) ? "" : "the default ",
				       (unsigned long long)lo, (unsigned long long)hi);
		if (hi < lo)
			return fail_at(p, c->line[KR_INITIAL_BACKOFF], rt, "initial_backoff_ms",
				       "must be <= the default max_backoff_ms %llu (got %llu)",
				       (unsigned long long)hi, (unsigned long long)lo);
	}
	return WMS_OK;
}

/* ---- the API ---------------------------------------------------------- */

wms_status wms_config_parse_yaml(wms_config **out, const char *yaml, size_t len, const char *name,
				 wms_error *err)
{
	parser p;
	wms_status st;

	wms_error_clear(err);
	if (!out)
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT, "out is NULL");
	*out = NULL;
	if (!yaml && len)
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT, "yaml is NULL");
	memset(&p, 0, sizeof(p));
	p.name = name ? name : "<yaml>";
	p.buf = (const unsigned char *)(yaml ? yaml : "");
	p.len = len;
	p.err = err;
	p.end_line = end_line(p.buf, len);
	if (len > MAX_FILE_BYTES)
		return wms__fail(err, WMS_ERR_CONFIG, WMS_DELIVERY_NOT_SENT,
				 "%s: larger than 1 MiB (%zu bytes): not an SLA file", p.name, len);
	p.cfg = wms__calloc(1, sizeof(*p.cfg));
	if (!p.cfg)
		return nomem(&p);
	if (!yaml_parser_initialize(&p.yp)) {
		wms__free(p.cfg);
		return nomem(&p);
	}
	yaml_parser_set_input_string(&p.yp, p.buf, len);
	st = parse_document(&p);
	if (st == WMS_OK)
		st = cross_check(&p);
	if (p.have_ev)
		yaml_event_delete(&p.ev);
	yaml_parser_delete(&p.yp);
	keyset_free(&p.top);
	if (st != WMS_OK) {
		wms_config_free(p.cfg);
		return st;
	}
	*out = p.cfg;
	return WMS_OK;
}

wms_status wms_config_load_yaml(wms_config **out, const char *path, wms_error *err)
{
	FILE *f = NULL;
	wms__buf buf = { NULL, 0, 0 };
	char chunk[16384];
	char why[128];
	size_t n;
	wms_status st;

	wms_error_clear(err);
	if (!out)
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT, "out is NULL");
	*out = NULL;
	if (!path)
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT, "path is NULL");
	f = fopen(path, "rb");
	if (!f) {
		if (strerror_r(errno, why, sizeof(why)) != 0)
			snprintf(why, sizeof(why), "error %d", errno);
		st = wms__fail(err, WMS_ERR_CONFIG, WMS_DELIVERY_NOT_SENT, "%s: cannot open: %s",
			       path, why);
		goto done;
	}
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
		if (buf.len + n > MAX_FILE_BYTES) {
			st = wms__fail(err, WMS_ERR_CONFIG, WMS_DELIVERY_NOT_SENT,
				       "%s: larger than 1 MiB: not an SLA file", path);
			goto done;
		}
		st = wms__buf_append(&buf, chunk, n);
		if (st != WMS_OK) {
			st = wms__fail(err, WMS_ERR_NOMEM, WMS_DELIVERY_NOT_SENT, "%s: out of memory",
				       path);
			goto done;
		}
	}
	if (ferror(f)) {
		if (strerror_r(errno, why, sizeof(why)) != 0)
			snprintf(why, sizeof(why), "error %d", errno);
		st = wms__fail(err, WMS_ERR_CONFIG, WMS_DELIVERY_NOT_SENT, "%s: cannot read: %s",
			       path, why);
		goto done;
	}
	st = wms_config_parse_yaml(out, buf.data, buf.len, path, err);
done:
	if (f)
		fclose(f);
	wms__buf_free(&buf);
	return st;
}

wms_status wms_config_breaker_options(const wms_config *cfg, wms_breaker_options *opts)
{
	if (!cfg || !opts || opts->version != WMS_BREAKER_OPTIONS_VERSION)
		return WMS_ERR_INVALID_ARG;
	if (is_set(cfg, KB_NAME))
		opts->name = cfg->name;
	if (is_set(cfg, KB_MODE))
		opts->mode = mode_values[cfg->value[KB_MODE]];
#define COPY(id, field)                                          \
	do {                                                     \
		if (is_set(cfg, id))                             \
			opts->field = (uint32_t)cfg->value[id];  \
	} while (0)
	COPY(KB_FAILURE_THRESHOLD, failure_threshold);
	COPY(KB_FAILURE_RATE, failure_rate_threshold);
	COPY(KB_SLOW_RATE, slow_call_rate_threshold);
	COPY(KB_SLOW_DURATION, slow_call_duration_ms);
	COPY(KB_WINDOW, sliding_window_size);
	COPY(KB_MIN_CALLS, minimum_number_of_calls);
	COPY(KB_OPEN_DURATION, open_duration_ms);
	COPY(KB_HALF_OPEN_CALLS, permitted_calls_in_half_open);
	COPY(KB_MAX_WAIT_HALF_OPEN, max_wait_in_half_open_ms);
	COPY(KB_GROWTH, open_duration_growth_pct);
	COPY(KB_MAX_OPEN, max_open_duration_ms);
	COPY(KB_JITTER, open_duration_jitter_pct);
#undef COPY
	return WMS_OK;
}

wms_status wms_config_shared_options(const wms_config *cfg, wms_shared_options *opts)
{
	if (!cfg || !opts || opts->version != WMS_SHARED_OPTIONS_VERSION)
		return WMS_ERR_INVALID_ARG;
	if (is_set(cfg, KS_REDIS_URL))
		opts->redis_url = cfg->redis_url;
	if (is_set(cfg, KS_NAME))
		opts->name = cfg->fleet_name;
	if (is_set(cfg, KS_COMMAND_TIMEOUT))
		opts->command_timeout_ms = (uint32_t)cfg->value[KS_COMMAND_TIMEOUT];
	if (is_set(cfg, KS_HEARTBEAT))
		opts->heartbeat_ms = (uint32_t)cfg->value[KS_HEARTBEAT];
	if (is_set(cfg, KS_KEY_TTL))
		opts->key_ttl_s = (uint32_t)cfg->value[KS_KEY_TTL];
	if (is_set(cfg, KS_QUEUE_SIZE))
		opts->queue_size = (uint32_t)cfg->value[KS_QUEUE_SIZE];
	if (is_set(cfg, KS_QUORUM))
		opts->quorum = (uint32_t)cfg->value[KS_QUORUM];
	return WMS_OK;
}

const char *wms_config_health_listen(const wms_config *cfg)
{
	return cfg ? cfg->health_listen : NULL;
}

wms_status wms_config_apply(const wms_config *cfg, wms_client_options *opts)
{
	wms_status st;

	if (!cfg || !opts || opts->version < 2 || opts->version > WMS_CLIENT_OPTIONS_VERSION)
		return WMS_ERR_INVALID_ARG;
	/* Everything is checked before anything is written. Version 2 options
	 * end before `shared`: never touched, and a shared block cannot go in. */
	if (opts->breaker_options.version != WMS_BREAKER_OPTIONS_VERSION)
		return WMS_ERR_INVALID_ARG;
	if (is_set(cfg, KB_SHARED) &&
	    (opts->version == 2 || opts->shared.version != WMS_SHARED_OPTIONS_VERSION))
		return WMS_ERR_INVALID_ARG;
	/* Versions 2 and 3 end before `bulkhead` and `read_cache`. */
	if ((is_set(cfg, KC_MAX_CONCURRENT) || is_set(cfg, KC_MAX_WAIT_SLOT) ||
	     is_set(cfg, KC_CACHE_ENTRIES) || is_set(cfg, KC_CACHE_AGE) ||
	     is_set(cfg, KC_CACHE_BYTES)) &&
	    opts->version < 4)
		return WMS_ERR_INVALID_ARG;
	if (is_set(cfg, KB_SHARED)) {
		st = wms_config_shared_options(cfg, &opts->shared);
		if (st != WMS_OK)
			return st;
	}
	st = wms_config_breaker_options(cfg, &opts->breaker_options);
	if (st != WMS_OK)
		return st;
	if (is_set(cfg, KB_SCOPE))
		opts->breaker_scope = scope_values[cfg->value[KB_SCOPE]];
	if (is_set(cfg, KC_ENDPOINT))
		opts->endpoint = cfg->endpoint;
	if (is_set(cfg, KC_SOAP_VERSION))
		opts->soap_version = soap_values[cfg->value[KC_SOAP_VERSION]];
	if (is_set(cfg, KC_CONNECT_TIMEOUT))
		opts->connect_timeout_ms = (uint32_t)cfg->value[KC_CONNECT_TIMEOUT];
	if (is_set(cfg, KC_TIMEOUT))
		opts->timeout_ms = (uint32_t)cfg->value[KC_TIMEOUT];
	if (is_set(cfg, KC_STALL_TIMEOUT))
		opts->stall_timeout_ms = (uint32_t)cfg->value[KC_STALL_TIMEOUT];
	if (is_set(cfg, KC_MAX_REPLY))
		opts->max_reply_bytes = (size_t)cfg->value[KC_MAX_REPLY];
	if (is_set(cfg, KC_MAX_CONCURRENT))
		opts->bulkhead.max_concurrent_calls = (uint32_t)cfg->value[KC_MAX_CONCURRENT];
	if (is_set(cfg, KC_MAX_WAIT_SLOT))
		opts->bulkhead.max_wait_for_slot_ms = (uint32_t)cfg->value[KC_MAX_WAIT_SLOT];
	if (is_set(cfg, KC_CACHE_ENTRIES))
		opts->read_cache.max_entries = (uint32_t)cfg->value[KC_CACHE_ENTRIES];
	if (is_set(cfg, KC_CACHE_AGE))
		opts->read_cache.max_age_ms = (uint32_t)cfg->value[KC_CACHE_AGE];
	if (is_set(cfg, KC_CACHE_BYTES))
		opts->read_cache.max_bytes = (uint32_t)cfg->value[KC_CACHE_BYTES];
	if (is_set(cfg, KR_MAX_ATTEMPTS))
		opts->retry.max_attempts = (uint32_t)cfg->value[KR_MAX_ATTEMPTS];
	if (is_set(cfg, KR_INITIAL_BACKOFF))
		opts->retry.initial_backoff_ms = (uint32_t)cfg->value[KR_INITIAL_BACKOFF];
	if (is_set(cfg, KR_MAX_BACKOFF))
		opts->retry.max_backoff_ms = (uint32_t)cfg->value[KR_MAX_BACKOFF];
	if (is_set(cfg, KR_MULTIPLIER))
		opts->retry.backoff_multiplier_pct = (uint32_t)cfg->value[KR_MULTIPLIER];
	if (is_set(cfg, KR_NOT_SENT_ONLY))
		opts->retry.not_sent_only = (int)cfg->value[KR_NOT_SENT_ONLY];
	return WMS_OK;
}

void wms_config_free(wms_config *cfg)
{
	if (!cfg)
		return;
	wms__free(cfg->endpoint);
	wms__free(cfg->name);
	wms__free_secret(cfg->redis_url);
	wms__free(cfg->fleet_name);
	wms__free(cfg->health_listen);
	wms__free(cfg);
}
