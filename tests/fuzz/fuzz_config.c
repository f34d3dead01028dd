/*
 * Fuzz harness: the SLA configuration loader, wms_config_parse_yaml.
 *
 * Input: the YAML file, through the macros of fuzz_expand.c first when it
 * holds a 0x1E (fuzz.h, README.md): names and endpoints of 64 and 2048
 * bytes, nesting 64 deep, files of 1 MiB, in a few bytes. Checked: a
 * failure is WMS_ERR_CONFIG, delivery NOT_SENT, no config, one line
 * "fuzz.yaml:<line>: ..." with a line that exists in the input (a file
 * over 1 MiB: "fuzz.yaml: larger than 1 MiB (N bytes): not an SLA file",
 * and only then); a success is a config that wms_config_apply and
 * wms_config_breaker_options take, whose breaker options wms_breaker_new
 * accepts and whose client options wms_client_new accepts ("nothing falls
 * back silently": whatever the loader lets through, the library takes),
 * with an http(s) endpoint if any; nothing leaks. With FUZZ_VERBOSE=1 it
 * notes each numeric key accepted at a bound of its range ("bound KEY:
 * accepted at lo|hi (VALUE)"), for tests/fuzz/limit-coverage.sh.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "fuzz.h"
#include "wms/config.h"
#include "wms/sys/transport.h"

#define NAME "fuzz.yaml"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_count_allocations();
	return 0;
}

/* A transport that never sends: the client must not need the network here. */
static wms_status idle_send(wms_transport *self, const wms_http_request *req,
			    wms_http_response *resp, wms_error *err)
{
	(void)self;
	(void)req;
	(void)resp;
	return wms_transport_fail(err, WMS_ERR_CONNECT, WMS_DELIVERY_NOT_SENT, "fuzz: no network");
}

static void idle_free(wms_transport *self)
{
	(void)self;
}

static wms_transport idle = { WMS_TRANSPORT_VERSION, idle_send, idle_free };

/* Line breaks as YAML counts them, an upper bound for any line number. */
static size_t max_line(const uint8_t *d, size_t n)
{
	size_t i, lines = 1;
	for (i = 0; i < n; i++)
		if (d[i] == '\n' || d[i] == '\r' || d[i] == 0x85 || d[i] == 0xA8 || d[i] == 0xA9)
			lines++;
	return lines;
}

/* The loader refuses files past 1 MiB (MAX_FILE_BYTES, src/config.c). */
#define FILE_MAX ((size_t)1 << 20)
#define EXPAND_MAX (FILE_MAX + FUZZ_EXPAND_SLACK)

static void check_failure(const uint8_t *data, size_t size, wms_status st, const wms_error *err,
			  const wms_config *cfg)
{
	const char *p = err->message + strlen(NAME ":");
	char *end, big[128];
	unsigned long line;

	FUZZ_CHECK(st == WMS_ERR_CONFIG, "wms_config_parse_yaml returned %s: %.200s",
		   wms_status_name(st), err->message);
	FUZZ_CHECK(cfg == NULL, "failure with a config");
	fuzz_check_error(err, st, "wms_config_parse_yaml");
	FUZZ_CHECK(err->delivery == WMS_DELIVERY_NOT_SENT, "delivery %s",
		   wms_delivery_name(err->delivery));
	FUZZ_CHECK(!strncmp(err->message, NAME ":", strlen(NAME ":")),
		   "message does not start with the file name: \"%.200s\"", err->message);
	/* The one message without a line: the file is not read at all. */
	snprintf(big, sizeof(big), NAME ": larger than 1 MiB (%zu bytes): not an SLA file", size);
	FUZZ_CHECK((size > FILE_MAX) == !strcmp(err->message, big),
		   "a file of %zu bytes: \"%.200s\"", size, err->message);
	if (size > FILE_MAX)
		return;
	line = strtoul(p, &end, 10);
	FUZZ_CHECK(end != p && *end == ':' && line >= 1 && line <= max_line(data, size),
		   "message has no line of the input (%zu lines): \"%.200s\"", max_line(data, size),
		   err->message);
}

/* The numeric keys, their ranges (src/config.c) and where they land. */
typedef struct num_key {
	const char *key;
	uint64_t lo, hi;
	int block; /* 0 client, 1 circuit_breaker, 2 retry, 3 shared */
	size_t off; /* of the uint32_t (size_t for max_reply_bytes) in its options */
} num_key;

#define CO(f) 0, offsetof(wms_client_options, f)
#define BO(f) 1, offsetof(wms_breaker_options, f)
#define RO(f) 2, offsetof(wms_retry_options, f)
#define SO(f) 3, offsetof(wms_shared_options, f)
static const num_key num_keys[] = {
	{ "client.connect_timeout_ms", 1, 3600000, CO(connect_timeout_ms) },
	{ "client.timeout_ms", 1, 3600000, CO(timeout_ms) },
	{ "client.stall_timeout_ms", 1, 3600000, CO(stall_timeout_ms) },
	{ "client.max_reply_bytes", 1, 1073741824, CO(max_reply_bytes) },
	/* client keys that land in its groups (bulkhead, read_cache); a 0
	 * (no cap, no wait, no cache) is their default, as jitter's is */
	{ "client.max_concurrent_calls", 0, 65536, CO(bulkhead.max_concurrent_calls) },
	{ "client.max_wait_for_slot_ms", 0, 3600000, CO(bulkhead.max_wait_for_slot_ms) },
	{ "client.read_cache_max_entries", 0, 1000000, CO(read_cache.max_entries) },
	{ "client.read_cache_max_age_ms", 1, 86400000, CO(read_cache.max_age_ms) },
	{ "client.read_cache_max_bytes", 65536, 1073741824, CO(read_cache.max_bytes) },
	{ "circuit_breaker.failure_threshold", 1, 1000000, BO(failure_threshold) },
	{ "circuit_breaker.failure_rate_threshold", 1, 100, BO(failure_rate_threshold) },
	{ "circuit_breaker.slow_call_rate_threshold", 1, 100, BO(slow_call_rate_threshold) },
	{ "circuit_breaker.slow_call_duration_ms", 1, 3600000, BO(slow_call_duration_ms) },
	{ "circuit_breaker.sliding_window_size", 1, 100000, BO(sliding_window_size) },
	{ "circuit_breaker.minimum_number_of_calls", 1, 1000000, BO(minimum_number_of_calls) },
	{ "circuit_breaker.open_duration_ms", 1, 86400000, BO(open_duration_ms) },
	{ "circuit_breaker.permitted_calls_in_half_open", 1, 100000, BO(permitted_calls_in_half_open) },
	{ "circuit_breaker.max_wait_in_half_open_ms", 1, 86400000, BO(max_wait_in_half_open_ms) },
	{ "circuit_breaker.open_duration_growth_pct", 100, 1000, BO(open_duration_growth_pct) },
	{ "circuit_breaker.max_open_duration_ms", 1, 86400000, BO(max_open_duration_ms) },
	{ "circuit_breaker.open_duration_jitter_pct", 0, 100, BO(open_duration_jitter_pct) },
	{ "circuit_breaker.retry.max_attempts", 1, 10, RO(max_attempts) },
	{ "circuit_breaker.retry.initial_backoff_ms", 1, 3600000, RO(initial_backoff_ms) },
	{ "circuit_breaker.retry.max_backoff_ms", 1, 3600000, RO(max_backoff_ms) },
	{ "circuit_breaker.retry.backoff_multiplier_pct", 100, 1000, RO(backoff_multiplier_pct) },
	{ "circuit_breaker.shared.command_timeout_ms", 1, 10000, SO(command_timeout_ms) },
	{ "circuit_breaker.shared.heartbeat_ms", 5, 10000, SO(heartbeat_ms) },
	{ "circuit_breaker.shared.key_ttl_s", 60, 2592000, SO(key_ttl_s) },
	{ "circuit_breaker.shared.queue_size", 64, 1048576, SO(queue_size) },
	{ "circuit_breaker.shared.quorum", 1, 64, SO(quorum) },
};
#undef CO
#undef BO
#undef RO
#undef SO

/* Where a numeric key lands in `co`. */
static char *field_of(wms_client_options *co, const num_key *k)
{
	char *base = k->block == 0   ? (char *)co
		     : k->block == 1 ? (char *)&co->breaker_options
		     : k->block == 2 ? (char *)&co->retry
				     : (char *)&co->shared;
	return base + k->off;
}

static uint64_t value_of(wms_client_options *co, const num_key *k)
{
	if (k->off == offsetof(wms_client_options, max_reply_bytes) && k->block == 0) {
		size_t z;
		memcpy(&z, field_of(co, k), sizeof(z));
		return z;
	}
	{
		uint32_t u;
		memcpy(&u, field_of(co, k), sizeof(u));
		return u;
	}
}

/* Note the numeric keys accepted at a bound, with the value, which
 * limit-coverage.sh checks against src/config.c's range (a stale range
 * here cannot count). A lower bound of 0 is also each option's "unset":
 * the config is applied again over options whose 0-bounded fields hold a
 * value no key can take (UINT32_MAX), so a field that reads 0 there was
 * set to 0 by the file. */
static void note_bounds(const wms_config *cfg, wms_client_options *co)
{
	wms_client_options marked = WMS_CLIENT_OPTIONS_INIT;
	const uint32_t unset = UINT32_MAX;
	size_t i;
	if (!fuzz_verbose)
		return;
	for (i = 0; i < sizeof(num_keys) / sizeof(num_keys[0]); i++)
		if (num_keys[i].lo == 0)
			memcpy(field_of(&marked, &num_keys[i]), &unset, sizeof(unset));
	FUZZ_CHECK(wms_config_apply(cfg, &marked) == WMS_OK, "wms_config_apply over marked options");
	for (i = 0; i < sizeof(num_keys) / sizeof(num_keys[0]); i++) {
		const num_key *k = &num_keys[i];
		uint64_t v = value_of(co, k);
		if (k->lo == 0 && value_of(&marked, k) == 0)
			fuzz_note("bound %s: accepted at lo (0)", k->key);
		else if (v && (v == k->lo || v == k->hi))
			fuzz_note("bound %s: accepted at %s (%llu)", k->key, v == k->lo ? "lo" : "hi",
				  (unsigned long long)v);
	}
}

static void check_success(const wms_config *cfg)
{
	wms_client_options co = WMS_CLIENT_OPTIONS_INIT;
	wms_breaker_options bo = WMS_BREAKER_OPTIONS_INIT;
	wms_client_options bad = WMS_CLIENT_OPTIONS_INIT;
	wms_breaker *b = NULL;
	wms_client *c = NULL;
	wms_error err;
	wms_status st;

	FUZZ_CHECK(cfg != NULL, "WMS_OK without a config");
	st = wms_config_apply(cfg, &co);
	FUZZ_CHECK(st == WMS_OK, "wms_config_apply: %s", wms_status_name(st));
	bad.version = 0;
	FUZZ_CHECK(wms_config_apply(cfg, &bad) == WMS_ERR_INVALID_ARG && bad.endpoint == NULL,
		   "wms_config_apply took uninitialised options");
	st = wms_config_breaker_options(cfg, &bo);
	FUZZ_CHECK(st == WMS_OK, "wms_config_breaker_options: %s", wms_status_name(st));
	FUZZ_CHECK(!co.endpoint || ((!strncasecmp(co.endpoint, "http://", 7) ||
				     !strncasecmp(co.endpoint, "https://", 8)) &&
				    strlen(co.endpoint) <= 2048),
		   "accepted endpoint \"%.100s\"", co.endpoint);
	FUZZ_CHECK(!bo.name || (bo.name[0] && strlen(bo.name) <= 64 &&
				fuzz_field_ok(bo.name, strlen(bo.name) + 1)),
		   "accepted breaker name \"%.100s\"", bo.name);

	note_bounds(cfg, &co);
	st = wms_breaker_new(&b, &bo);
	FUZZ_CHECK(st == WMS_OK, "the config's breaker options: wms_breaker_new gives %s",
		   wms_status_name(st));
	wms_breaker_free(b);

	memset(&err, 0, sizeof(err));
	co.transport = &idle;
	/* A shared block's store would connect to the fuzzer's host: the
	 * harness never uses the network, so its URL (already checked at load)
	 * becomes a socket that does not exist; every other shared option is
	 * still checked by wms_client_new. */
	if (co.shared.redis_url)
		co.shared.redis_url = "unix:///nonexistent/wms-fuzz.sock";
	st = wms_client_new(&c, &co, &err);
	FUZZ_CHECK(st == WMS_OK, "the config's client options: wms_client_new gives %s: %.200s",
		   wms_status_name(st), err.message);
	wms_client_free(c);
}

static void one(const uint8_t *data, size_t size)
{
	fuzz_bytes expanded = { NULL, 0, 0 };
	static char poison;
	wms_config *cfg = (wms_config *)(void *)&poison; /* the loader must overwrite it */
	wms_error err;
	wms_status st;

	if (fuzz_expand(data, size, EXPAND_MAX, &expanded, NULL)) {
		data = expanded.data;
		size = expanded.len;
	}
	memset(&err, 0xA5, sizeof(err));
	st = wms_config_parse_yaml(&cfg, (const char *)data, size, NAME, &err);
	fuzz_note("%s %s", wms_status_name(st), st ? err.message : "");
	if (st == WMS_OK)
		check_success(cfg);
	else
		check_failure(data, size, st, &err, cfg);
	wms_config_free(cfg);
	fuzz_bytes_free(&expanded);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_run_leak_checked(one, data, size);
	return 0;
}

int fuzz_seed_variant(size_t i, const uint8_t *seed, size_t n, fuzz_bytes *out)
{
	if (i > 0)
		return 0;
	fuzz_bytes_reset(out);
	fuzz_bytes_add(out, seed, n);
	return 1;
}

static void add(fuzz_bytes *b, const char *s)
{
	fuzz_bytes_add(b, s, strlen(s));
}

/* A numeric key at lo-1, lo, hi, hi+1 (`which` 0-3), with what the
 * cross-field checks need beside it. */
static void bound_seed(const num_key *k, int which, fuzz_bytes *out)
{
	static const char *const blocks[] = {
		"client:\n  ", "circuit_breaker:\n  ", "circuit_breaker:\n  retry:\n    ",
		"circuit_breaker:\n  shared:\n    redis_url: \"unix:///run/redis.sock\"\n    "
	};
	const char *key = strrchr(k->key, '.') + 1;
	char line[160];
	uint64_t v = which < 2 ? k->lo : k->hi;

	fuzz_bytes_reset(out);
	add(out, blocks[k->block]);
	if (!strcmp(key, "max_open_duration_ms"))
		add(out, "open_duration_ms: 1\n  ");
	else if (!strcmp(key, "initial_backoff_ms"))
		add(out, "max_backoff_ms: 3600000\n    ");
	else if (!strcmp(key, "max_backoff_ms"))
		add(out, "initial_backoff_ms: 1\n    ");
	if (which == 0 && v == 0)
		snprintf(line, sizeof(line), "%s: -1\n", key);
	else
		snprintf(line, sizeof(line), "%s: %llu\n", key,
			 (unsigned long long)(which == 0 ? v - 1 : which == 3 ? v + 1 : v));
	add(out, line);
}

#define N_NUM (sizeof(num_keys) / sizeof(num_keys[0]))

/* `n` copies of `frag` as macros. */
static void fill(fuzz_bytes *b, size_t n, const char *frag)
{
	fuzz_macro_fill(b, n, frag);
}

int fuzz_builtin_seed(size_t i, fuzz_bytes *out)
{
	static const char *const seeds[] = {
		"client: {endpoint: \"HTTPS://wms.example/x\", soap_version: 1.2}\n"
		"circuit_breaker: {mode: time_based, sliding_window_size: 3600, retry: {}}\n",
		"circuit_breaker:\n  open_duration_ms: 86400000\n  max_open_duration_ms: 86400000\n"
		"  retry:\n    initial_backoff_ms: 3600000\n    max_backoff_ms: 3600000\n",
		"service: x\nrest: [1, {a: [b, c]}, !!binary aGk=]\n---\n",
		/* the cross-field checks on both sides */
		"circuit_breaker: {mode: time_based, sliding_window_size: 3601}\n",
		"circuit_breaker: {open_duration_ms: 500, max_open_duration_ms: 500}\n",
		"circuit_breaker: {open_duration_ms: 500, max_open_duration_ms: 499}\n",
		"circuit_breaker: {max_open_duration_ms: 30000}\n",
		"circuit_breaker: {max_open_duration_ms: 29999}\n",
		"circuit_breaker: {retry: {initial_backoff_ms: 700, max_backoff_ms: 700}}\n",
		"circuit_breaker: {retry: {initial_backoff_ms: 700, max_backoff_ms: 699}}\n",
		"circuit_breaker: {retry: {initial_backoff_ms: 2000}}\n",
		"circuit_breaker: {retry: {initial_backoff_ms: 2001}}\n",
		"circuit_breaker: {retry: {max_backoff_ms: 100}}\n",
		"circuit_breaker: {retry: {max_backoff_ms: 99}}\n",
		/* percentages, and numbers past 64 bits */
		"circuit_breaker: {failure_rate_threshold: 50.0, slow_call_rate_threshold: 100.00}\n",
		"circuit_breaker: {failure_rate_threshold: 50.5}\n",
		"circuit_breaker: {slow_call_rate_threshold: 50%}\n",
		"client: {timeout_ms: 18446744073709551615}\n",
		"client: {timeout_ms: 18446744073709551616}\n",
	};
	size_t n = sizeof(seeds) / sizeof(seeds[0]);

	if (i < n) {
		fuzz_bytes_reset(out);
		add(out, seeds[i]);
		return 1;
	}
	i -= n;
	if (i < 4 * N_NUM) {
		bound_seed(&num_keys[i / 4], (int)(i % 4), out);
		return 1;
	}
	i -= 4 * N_NUM;
	fuzz_bytes_reset(out);
	switch (i) {
	case 0: /* a breaker name of 64 bytes, 65 */
	case 1:
		add(out, "circuit_breaker: {name: ");
		fill(out, 64 + i, "n");
		add(out, "}\n");
		return 1;
	case 2: /* an endpoint of 2048 bytes, 2049 */
	case 3:
		add(out, "client: {endpoint: \"http://wms.example/");
		fill(out, 2048 + (i - 2) - strlen("http://wms.example/"), "p");
		add(out, "\"}\n");
		return 1;
	case 4: /* nesting 64 deep in the rest of the SLA, 65 */
	case 5:
		add(out, "rest: ");
		fill(out, 64 + (i - 4), "[");
		fill(out, 64 + (i - 4), "]");
		add(out, "\n");
		return 1;
	case 6: /* a bad value echoed: 40 bytes whole, 41 cut, 41 with a
		 * character across the cut */
	case 7:
		add(out, "client: {soap_version: ");
		fill(out, 40 + (i - 6), "v");
		add(out, "}\n");
		return 1;
	case 8:
		add(out, "client: {soap_version: ");
		fill(out, 39, "v");
		add(out, "\xc3\xa9}\n");
		return 1;
	case 9: /* a file of 1 MiB, and one byte more: refused unread */
	case 10:
		add(out, "service: x\n#");
		fill(out, FILE_MAX + (i - 9) - strlen("service: x\n#") - 1, "c");
		add(out, "\n");
		return 1;
	default:
		return 0;
	}
}
