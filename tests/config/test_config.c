/* Configuration from the SLA YAML file: the API, every key (table-driven
 * from inline YAML), apply() on top of options, the breaker made from it,
 * and the anomalies (limits, allocation failures, odd input). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>
#include "cfg_util.h"
#include "wms/config.h"
#include "wms/sys/alloc.h"
#include "count_alloc.h"

#define MS 1000000ull

/* ---- helpers ---------------------------------------------------------- */

static wms_status parse(wms_config **cfg, const char *yaml, wms_error *err)
{
	return wms_config_parse_yaml(cfg, yaml, strlen(yaml), "t.yaml", err);
}

/* Parse `yaml`, which must fail with WMS_ERR_CONFIG and exactly `message`. */
static void expect_error(const char *yaml, const char *message)
{
	wms_config *cfg = NULL;
	wms_error err;
	assert_int_equal(parse(&cfg, yaml, &err), WMS_ERR_CONFIG);
	assert_null(cfg);
	assert_int_equal(err.status, WMS_ERR_CONFIG);
	assert_int_equal(err.delivery, WMS_DELIVERY_NOT_SENT);
	if (strcmp(err.message, message) != 0)
		fail_msg("expected: %s\n      got: %s", message, err.message);
}

/* Parse `yaml`, which must fail with WMS_ERR_CONFIG, the message starting
 * with `prefix` and holding `part` (when not NULL). */
static void expect_error_like(const char *yaml, const char *prefix, const char *part)
{
	wms_config *cfg = NULL;
	wms_error err;
	assert_int_equal(parse(&cfg, yaml, &err), WMS_ERR_CONFIG);
	assert_null(cfg);
	assert_int_equal(err.delivery, WMS_DELIVERY_NOT_SENT);
	assert_null(strchr(err.message, '\n'));
	if (strncmp(err.message, prefix, strlen(prefix)) != 0)
		fail_msg("expected a message starting \"%s\": %s\n(yaml: %s)", prefix, err.message,
			 yaml);
	if (part && !strstr(err.message, part))
		fail_msg("expected \"%s\" in: %s\n(yaml: %s)", part, err.message, yaml);
}

/* Parse `yaml` (must succeed) and apply it to default client options. */
static wms_config *load_ok(const char *yaml, wms_client_options *o)
{
	wms_config *cfg = NULL;
	wms_error err;
	if (parse(&cfg, yaml, &err) != WMS_OK)
		fail_msg("%s\n(yaml: %s)", err.message, yaml);
	assert_non_null(cfg);
	if (o)
		assert_int_equal(wms_config_apply(cfg, o), WMS_OK);
	return cfg;
}

/* ---- a full file, field by field ---------------------------------------- */

static void full_file_applied(void **state)
{
	wms_config *cfg = NULL;
	wms_error err;
	wms_client_options o = WMS_CLIENT_OPTIONS_INIT;
	const wms_breaker_options *b = &o.breaker_options;
	(void)state;

	if (wms_config_load_yaml(&cfg, cfg_source_path("tests/data/config/good/full.yaml"), &err) != WMS_OK)
		fail_msg("%s", err.message);
	assert_int_equal(wms_config_apply(cfg, &o), WMS_OK);
	assert_int_equal(o.version, WMS_CLIENT_OPTIONS_VERSION);
	assert_string_equal(o.endpoint, "https://wms.test:8443/soap");
	assert_int_equal(o.soap_version, WMS_SOAP_12);
	assert_int_equal(o.connect_timeout_ms, 1500);
	assert_int_equal(o.timeout_ms, 8000);
	assert_int_equal(o.stall_timeout_ms, 4000);
	assert_int_equal(o.max_reply_bytes, 1048576);
	assert_int_equal(o.breaker_scope, WMS_BREAKER_SCOPE_PER_OPERATION);
	assert_int_equal(b->version, WMS_BREAKER_OPTIONS_VERSION);
	assert_int_equal(b->mode, WMS_BREAKER_MODE_COUNT_BASED);
	assert_string_equal(b->name, "wms-eu");
	assert_int_equal(b->failure_threshold, 7);
	assert_int_equal(b->failure_rate_threshold, 40);
	assert_int_equal(b->slow_call_rate_threshold, 90);
	assert_int_equal(b->slow_call_duration_ms, 3000);
	assert_int_equal(b->sliding_window_size, 20);
	assert_int_equal(b->minimum_number_of_calls, 10);
	assert_int_equal(b->open_duration_ms, 15000);
	assert_int_equal(b->permitted_calls_in_half_open, 3);
	assert_int_equal(b->max_wait_in_half_open_ms, 20000);
	assert_int_equal(b->open_duration_growth_pct, 150);
	assert_int_equal(b->max_open_duration_ms, 120000);
	assert_int_equal(b->open_duration_jitter_pct, 10);
	assert_null(b->callbacks.clock);
	assert_null(b->callbacks.on_state_change);
	assert_int_equal(o.retry.max_attempts, 4);
	assert_int_equal(o.retry.initial_backoff_ms, 50);
	assert_int_equal(o.retry.max_backoff_ms, 800);
	assert_int_equal(o.retry.backoff_multiplier_pct, 300);
	assert_int_equal(o.retry.not_sent_only, 1);
	/* Untouched: not in the schema. */
	assert_null(o.breaker);
	assert_null(o.transport);
	assert_null(o.curl.user_agent);
	assert_int_equal(o.max_idle_connections, 0);
	wms_config_free(cfg);
}

/* The shipped example loads, and a client with per-client breaker is made from it. */
static void example_file_loads(void **state)
{
	wms_config *cfg = NULL;
	wms_error err;
	wms_client_options o = WMS_CLIENT_OPTIONS_INIT;
	wms_client *c = NULL;
	wms_breaker_snapshot snap;
	(void)state;

	if (wms_config_load_yaml(&cfg, cfg_source_path("examples/fulfillment-sla.yaml"), &err) !=
	    WMS_OK)
		fail_msg("%s", err.message);
	assert_int_equal(wms_config_apply(cfg, &o), WMS_OK);
	assert_string_equal(o.endpoint, "http://wms.example.internal:8080/wms");
	assert_int_equal(o.soap_version, WMS_SOAP_11);
	assert_int_equal(o.timeout_ms, 10000);
	assert_int_equal(o.breaker_options.mode, WMS_BREAKER_MODE_CONSECUTIVE);
	assert_int_equal(o.breaker_options.failure_threshold, 5);
	assert_int_equal(o.breaker_options.open_duration_ms, 30000);
	assert_int_equal(o.breaker_options.max_open_duration_ms, 300000);
	assert_int_equal(o.retry.max_attempts, 3);
	assert_int_equal(o.retry.not_sent_only, 0);
	assert_int_equal(o.breaker_scope, WMS_BREAKER_SCOPE_PER_CLIENT);
	if (wms_client_new(&c, &o, &err) != WMS_OK)
		fail_msg("%s", err.message);
	wms_config_free(cfg); /* the client copied what it needs */
	assert_int_equal(wms_client_breakers(NULL, 0, c), 1);
	wms_breaker_snapshot_get(&snap, wms_client_breaker(c));
	assert_string_equal(snap.name, "wms");
	assert_int_equal(snap.state, WMS_BREAKER_STATE_CLOSED);
	wms_client_free(c);
}

/* The example file's comment shows a real message: keep it true. */
static void example_comment_message_is_real(void **state)
{
	size_t len = 0, i, line = 1;
	char *text = cfg_read_file(cfg_source_path("examples/fulfillment-sla.yaml"), &len);
	char *bad, *p, want[160];
	wms_config *cfg = NULL;
	wms_error err;
	(void)state;

	assert_non_null(text);
	p = strstr(text, "\n  failure_rate_threshold: 50 ");
	assert_non_null(p);
	for (i = 0; text + i <= p; i++)
		if (text[i] == '\n')
			line++;
	bad = malloc(len + 1);
	assert_non_null(bad);
	memcpy(bad, text, len + 1);
	memcpy(bad + (p - text) + strlen("\n  failure_rate_threshold: "), "150", 3);
	assert_int_equal(wms_config_parse_yaml(&cfg, bad, len, "fulfillment-sla.yaml", &err),
			 WMS_ERR_CONFIG);
	snprintf(want, sizeof(want),
		 "fulfillment-sla.yaml:%zu: circuit_breaker.failure_rate_threshold: must be 1..100 "
		 "(got 150)", line);
	assert_string_equal(err.message, want);
	assert_non_null(strstr(text, want)); /* the comment quotes it */
	free(bad);
	free(text);
}

/* ---- every key, table-driven --------------------------------------------- */

typedef enum ktype { K_INT, K_PCT, K_BOOL, K_ENUM, K_NAME, K_URL, K_REDIS, K_FLEET } ktype;

typedef struct key_case {
	/* "client", "circuit_breaker", "circuit_breaker.retry", "circuit_breaker.shared" */
	const char *block;
	const char *key;
	ktype type;
	unsigned long long lo, hi;
	/* good values and how cfg_describe() shows them once applied */
	const char *good[4];
	const char *shown[4];
} key_case;

static const key_case key_cases[] = {
	{ "client", "endpoint", K_URL, 0, 0,
	  { "http://wms.test/x", "'https://wms.test:8443/a?b=c'", "HTTPS://W" },
	  { "http://wms.test/x", "https://wms.test:8443/a?b=c", "HTTPS://W" } },
	{ "client", "soap_version", K_ENUM, 0, 0, { "\"1.1\"", "\"1.2\"", "1.2", "'1.1'" },
	  { "1.1", "1.2", "1.2", "1.1" } },
	{ "client", "connect_timeout_ms", K_INT, 1, 3600000, { "1", "2500", "3600000" },
	  { "1", "2500", "3600000" } },
	{ "client", "timeout_ms", K_INT, 1, 3600000, { "1", "9000", "3600000" },
	  { "1", "9000", "3600000" } },
	{ "client", "stall_timeout_ms", K_INT, 1, 3600000, { "1", "700", "3600000" },
	  { "1", "700", "3600000" } },
	{ "client", "max_reply_bytes", K_INT, 1, 1073741824, { "1", "65536", "1073741824" },
	  { "1", "65536", "1073741824" } },
	{ "client", "max_concurrent_calls", K_INT, 0, 65536, { "0", "1", "16", "65536" },
	  { "0", "1", "16", "65536" } },
	{ "client", "max_wait_for_slot_ms", K_INT, 0, 3600000, { "0", "1", "250", "3600000" },
	  { "0", "1", "250", "3600000" } },
	{ "client", "read_cache_max_entries", K_INT, 0, 1000000, { "0", "1", "500", "1000000" },
	  { "0", "1", "500", "1000000" } },
	{ "client", "read_cache_max_age_ms", K_INT, 1, 86400000, { "1", "60000", "86400000" },
	  { "1", "60000", "86400000" } },
	{ "client", "read_cache_max_bytes", K_INT, 65536, 1073741824,
	  { "65536", "1048576", "1073741824" }, { "65536", "1048576", "1073741824" } },
	{ "circuit_breaker", "mode", K_ENUM, 0, 0, { "consecutive", "count_based", "\"time_based\"" },
	  { "consecutive", "count_based", "time_based" } },
	{ "circuit_breaker", "scope", K_ENUM, 0, 0, { "per_client", "per_operation" },
	  { "per_client", "per_operation" } },
	{ "circuit_breaker", "name", K_NAME, 0, 0,
	  { "w", "'wms eu-1'", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "42" },
	  { "w", "wms eu-1", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "42" } },
	{ "circuit_breaker", "failure_threshold", K_INT, 1, 1000000, { "1", "5", "1000000" },
	  { "1", "5", "1000000" } },
	{ "circuit_breaker", "failure_rate_threshold", K_PCT, 1, 100, { "1", "50", "50.0", "100.00" },
	  { "1", "50", "50", "100" } },
	{ "circuit_breaker", "slow_call_rate_threshold", K_PCT, 1, 100, { "1", "75.0", "100" },
	  { "1", "75", "100" } },
	{ "circuit_breaker", "slow_call_duration_ms", K_INT, 1, 3600000, { "1", "1500", "3600000" },
	  { "1", "1500", "3600000" } },
	{ "circuit_breaker", "sliding_window_size", K_INT, 1, 100000, { "1", "10", "100000" },
	  { "1", "10", "100000" } },
	{ "circuit_breaker", "minimum_number_of_calls", K_INT, 1, 1000000, { "1", "20", "1000000" },
	  { "1", "20", "1000000" } },
	{ "circuit_breaker", "open_duration_ms", K_INT, 1, 86400000, { "1", "5000", "86400000" },
	  { "1", "5000", "86400000" } },
	{ "circuit_breaker", "permitted_calls_in_half_open", K_INT, 1, 100000, { "1", "3", "100000" },
	  { "1", "3", "100000" } },
	{ "circuit_breaker", "max_wait_in_half_open_ms", K_INT, 1, 86400000,
	  { "1", "1000", "86400000" }, { "1", "1000", "86400000" } },
	{ "circuit_breaker", "open_duration_growth_pct", K_INT, 100, 1000, { "100", "200", "1000" },
	  { "100", "200", "1000" } },
	{ "circuit_breaker", "max_open_duration_ms", K_INT, 1, 86400000,
	  { "30000", "600000", "86400000" }, { "30000", "600000", "86400000" } },
	{ "circuit_breaker", "open_duration_jitter_pct", K_INT, 0, 100, { "0", "25", "100" },
	  { "0", "25", "100" } },
	{ "circuit_breaker.retry", "max_attempts", K_INT, 1, 10, { "1", "3", "10" },
	  { "1", "3", "10" } },
	{ "circuit_breaker.retry", "initial_backoff_ms", K_INT, 1, 3600000, { "1", "100", "2000" },
	  { "1", "100", "2000" } },
	{ "circuit_breaker.retry", "max_backoff_ms", K_INT, 1, 3600000, { "100", "5000", "3600000" },
	  { "100", "5000", "3600000" } },
	{ "circuit_breaker.retry", "backoff_multiplier_pct", K_INT, 100, 1000, { "100", "150", "1000" },
	  { "100", "150", "1000" } },
	{ "circuit_breaker.retry", "not_sent_only", K_BOOL, 0, 1, { "true", "false" },
	  { "true", "false" } },
	{ "circuit_breaker.shared", "redis_url", K_REDIS, 0, 0,
	  { "redis://127.0.0.1:6379/0", "'unix:///run/redis.sock?db=15'",
	    "\"redis://u:p@[::1]:65535/15\"", "redis://h:1" },
	  { "redis://127.0.0.1:6379/0", "unix:///run/redis.sock?db=15", "redis://u:p@[::1]:65535/15",
	    "redis://h:1" } },
	{ "circuit_breaker.shared", "name", K_FLEET, 1, 64,
	  { "f", "'fleet-A.1_x'", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "42" },
	  { "f", "fleet-A.1_x", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "42" } },
	{ "circuit_breaker.shared", "command_timeout_ms", K_INT, 1, 10000, { "1", "100", "10000" },
	  { "1", "100", "10000" } },
	{ "circuit_breaker.shared", "heartbeat_ms", K_INT, 5, 10000, { "5", "50", "10000" },
	  { "5", "50", "10000" } },
	{ "circuit_breaker.shared", "key_ttl_s", K_INT, 60, 2592000, { "60", "86400", "2592000" },
	  { "60", "86400", "2592000" } },
	{ "circuit_breaker.shared", "queue_size", K_INT, 64, 1048576, { "64", "4096", "1048576" },
	  { "64", "4096", "1048576" } },
	{ "circuit_breaker.shared", "quorum", K_INT, 1, 64, { "1", "2", "64" }, { "1", "2", "64" } },
};

/* YAML with `key: value` in its block, after `pad` comment lines; *line
 * gets the key's line. A "\n" in `value` starts a line indented under the key.
 * A shared block gets its required redis_url first (unless that is the key). */
static void make_yaml(char *buf, size_t size, const key_case *k, const char *value, int pad,
		      size_t *line)
{
	const char *indent = "  ";
	size_t n = 0;
	int i;

	buf[0] = '\0';
	for (i = 0; i < pad; i++)
		n += (size_t)snprintf(buf + n, size - n, "# padding line %d\n", i + 1);
	n += (size_t)snprintf(buf + n, size - n, "service: test\n");
	*line = (size_t)pad + 3;
	if (!strcmp(k->block, "client")) {
		n += (size_t)snprintf(buf + n, size - n, "client:\n");
	} else {
		n += (size_t)snprintf(buf + n, size - n, "circuit_breaker:\n");
		if (!strcmp(k->block, "circuit_breaker.retry")) {
			n += (size_t)snprintf(buf + n, size - n, "  retry:\n");
			indent = "    ";
			(*line)++;
		} else if (!strcmp(k->block, "circuit_breaker.shared")) {
			n += (size_t)snprintf(buf + n, size - n, "  shared:\n");
			indent = "    ";
			(*line)++;
			if (strcmp(k->key, "redis_url") != 0) {
				n += (size_t)snprintf(buf + n, size - n, "    redis_url: redis://r/0\n");
				(*line)++;
			}
		}
	}
	n += (size_t)snprintf(buf + n, size - n, "%s%s:%s", indent, k->key,
			      value[0] == '\n' ? "" : " ");
	for (; *value && n + 8 < size; value++) {
		if (*value == '\n')
			n += (size_t)snprintf(buf + n, size - n, "\n%s  ", indent);
		else
			buf[n++] = *value;
	}
	snprintf(buf + n, size - n, "\n# trailing comment\n");
	assert_true(n + 32 < size);
}

typedef struct bad_value {
	const char *value;
	const char *part; /* expected in the message after "<key>: " */
} bad_value;

static void check_bad(const key_case *k, const bad_value *bv, int pad)
{
	static char yaml[8192];
	char prefix[256];
	size_t line;

	make_yaml(yaml, sizeof(yaml), k, bv->value, pad, &line);
	snprintf(prefix, sizeof(prefix), "t.yaml:%zu: %s.%s: %s", line, k->block, k->key, bv->part);
	expect_error_like(yaml, prefix, NULL);
}

static void every_key_good_values(void **state)
{
	static char yaml[8192];
	size_t i, j, line;
	(void)state;

	for (i = 0; i < sizeof(key_cases) / sizeof(key_cases[0]); i++) {
		const key_case *k = &key_cases[i];
		for (j = 0; j < 4 && k->good[j]; j++) {
			wms_client_options o = WMS_CLIENT_OPTIONS_INIT;
			char dotted[128], got[256];
			wms_config *cfg;

			make_yaml(yaml, sizeof(yaml), k, k->good[j], (int)(i % 4), &line);
			cfg = load_ok(yaml, &o);
			snprintf(dotted, sizeof(dotted), "%s.%s", k->block, k->key);
			assert_int_equal(cfg_describe(&o, dotted, got, sizeof(got)), 0);
			if (strcmp(got, k->shown[j]) != 0)
				fail_msg("%s: %s read as %s, expected %s", dotted, k->good[j], got,
					 k->shown[j]);
			wms_config_free(cfg);
		}
	}
}

/* Bad types every key refuses. */
static const bad_value any_bad[] = {
	{ "{a: 1}", "must be " },
	{ "\na: 1", "must be " },
	{ "[1]", "must be " },
	{ "\n- 1", "must be " },
	{ "", "has no value" },
	{ "~", "has no value" },
	{ "null", "has no value" },
	{ "!!str x", "explicit YAML tags are not supported" },
	{ "&a x", "anchors (&a) are not supported" },
};

static const bad_value int_bad[] = {
	{ "five", "must be a decimal integer " },
	{ "5.5", "must be a " },
	{ "0x10", "must be a decimal integer " },
	{ "0o17", "must be a decimal integer " },
	{ "1e3", "must be a decimal integer " },
	{ "1_000", "must be a decimal integer " },
	{ "+5", "must be a decimal integer " },
	{ ".inf", "must be a decimal integer " },
	{ "true", "must be a decimal integer " },
	{ "\"5\"", "must be " },
	{ "'5'", "must be " },
	{ "|\n5", "must be " },
	{ "010", "must be a decimal integer without leading zeros (got 010)" },
	{ "-5", "must be " },
	{ "18446744073709551616", "must be " },
	{ "99999999999999999999999999999999", "must be " },
};

static const bad_value bool_bad[] = {
	{ "yes", "must be true or false (got yes)" },
	{ "no", "must be true or false (got no)" },
	{ "on", "must be true or false (got on)" },
	{ "1", "must be true or false (got 1)" },
	{ "0", "must be true or false (got 0)" },
	{ "True", "must be true or false (got True)" },
	{ "FALSE", "must be true or false (got FALSE)" },
	{ "\"true\"", "must be true or false (got \"true\")" },
};

static const bad_value name_bad[] = {
	{ "\"\"", "must not be empty" },
	{ "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
	  "must be 1..64 bytes long (got 65)" },
	{ "\"a\\x01b\"", "must not contain control characters" },
	{ "\"a\\tb\"", "must not contain control characters" },
};

static const bad_value url_bad[] = {
	{ "\"\"", "must not be empty" },
	{ "ftp://wms.test/", "must be an http:// or https:// URL (got a URL with scheme ftp)" },
	{ "http://", "must be an http:// or https:// URL (got nothing after http://)" },
	{ "wms.test:8080", "must be an http:// or https:// URL (got no scheme)" },
	{ "42", "must be an http:// or https:// URL (got no scheme)" },
	{ "\"http://wms test/\"", "must not contain spaces or control characters" },
	{ "\"http://wms.test/\\n\"", "must not contain spaces or control characters" },
};

static const bad_value redis_bad[] = {
	{ "\"\"", "must not be empty" },
	{ "42", "must start with redis:// or unix://" },
	{ "127.0.0.1:6379", "must start with redis:// or unix://" },
	{ "\"redis://h\\0x\"", "must not contain a NUL byte" },
};

static const bad_value fleet_bad[] = {
	{ "\"\"", "must not be empty" },
	{ "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
	  "must be 1..64 bytes long (got 65)" },
	{ "'a b'", "must hold only letters, digits, '.', '-' and '_' (got a b)" },
	{ "\"a\\tb\"", "must hold only letters, digits, '.', '-' and '_' (got a?b)" },
	{ "fleet/1", "must hold only letters, digits, '.', '-' and '_' (got fleet/1)" },
	{ "'{eu}'", "must hold only letters, digits, '.', '-' and '_' (got {eu})" },
	{ "\"caf\xc3\xa9\"", "must hold only letters, digits, '.', '-' and '_' (got caf\xc3\xa9)" },
};

static void every_key_bad_types(void **state)
{
	size_t i, j;
	(void)state;

	for (i = 0; i < sizeof(key_cases) / sizeof(key_cases[0]); i++) {
		const key_case *k = &key_cases[i];
		int pad = (int)(i % 5);
		for (j = 0; j < sizeof(any_bad) / sizeof(any_bad[0]); j++)
			check_bad(k, &any_bad[j], pad);
		switch (k->type) {
		case K_INT:
		case K_PCT:
			for (j = 0; j < sizeof(int_bad) / sizeof(int_bad[0]); j++)
				check_bad(k, &int_bad[j], pad);
			break;
		case K_BOOL:
			for (j = 0; j < sizeof(bool_bad) / sizeof(bool_bad[0]); j++)
				check_bad(k, &bool_bad[j], pad);
			break;
		case K_ENUM: {
			const bad_value e[] = { { "bogus", "must be one of " },
						{ "\"\"", "must be one of " },
						{ "CONSECUTIVE", "must be one of " },
						{ "1.0", "must be one of " },
						{ "per-client", "must be one of " } };
			for (j = 0; j < sizeof(e) / sizeof(e[0]); j++)
				check_bad(k, &e[j], pad);
			break;
		}
		case K_NAME:
			for (j = 0; j < sizeof(name_bad) / sizeof(name_bad[0]); j++)
				check_bad(k, &name_bad[j], pad);
			break;
		case K_URL:
			for (j = 0; j < sizeof(url_bad) / sizeof(url_bad[0]); j++)
				check_bad(k, &url_bad[j], pad);
			break;
		case K_REDIS:
			for (j = 0; j < sizeof(redis_bad) / sizeof(redis_bad[0]); j++)
				check_bad(k, &redis_bad[j], pad);
			break;
		case K_FLEET:
			for (j = 0; j < sizeof(fleet_bad) / sizeof(fleet_bad[0]); j++)
				check_bad(k, &fleet_bad[j], pad);
			break;
		}
	}
}

/* One below the lowest, one above the highest value, and overflow. */
static void every_key_out_of_range(void **state)
{
	size_t i;
	(void)state;

	for (i = 0; i < sizeof(key_cases) / sizeof(key_cases[0]); i++) {
		const key_case *k = &key_cases[i];
		char low[32], high[32], part_low[96], part_high[96], part_big[96];
		bad_value bv;

		if (k->type != K_INT && k->type != K_PCT)
			continue;
		if (k->lo > 0)
			snprintf(low, sizeof(low), "%llu", k->lo - 1);
		else
			snprintf(low, sizeof(low), "-1");
		snprintf(high, sizeof(high), "%llu", k->hi + 1);
		snprintf(part_low, sizeof(part_low), "must be %llu..%llu (got %s)", k->lo, k->hi, low);
		snprintf(part_high, sizeof(part_high), "must be %llu..%llu (got %s)", k->lo, k->hi,
			 high);
		snprintf(part_big, sizeof(part_big), "must be %llu..%llu (got 18446744073709551616)",
			 k->lo, k->hi);
		bv.value = low;
		bv.part = part_low;
		check_bad(k, &bv, (int)(i % 3));
		bv.value = high;
		bv.part = part_high;
		check_bad(k, &bv, (int)(i % 3));
		bv.value = "18446744073709551616";
		bv.part = part_big;
		check_bad(k, &bv, (int)(i % 3));
		if (k->type == K_PCT) {
			bv.value = "0.0";
			bv.part = "must be 1..100 (got 0.0)";
			check_bad(k, &bv, 0);
			bv.value = "100.5";
			bv.part = "must be a whole number 1..100 (got 100.5)";
			check_bad(k, &bv, 0);
			bv.value = "50%";
			bv.part = "must be a number 1..100 without a % sign (got 50%)";
			check_bad(k, &bv, 0);
			bv.value = "50.";
			bv.part = "must be a decimal integer 1..100 (got 50.)";
			check_bad(k, &bv, 0);
		}
	}
}

/* A key is unknown outside its own block. */
static void keys_belong_to_their_block(void **state)
{
	(void)state;
	expect_error("client:\n  mode: consecutive\n", "t.yaml:2: client.mode: unknown key");
	expect_error("circuit_breaker:\n  timeout_ms: 5\n",
		     "t.yaml:2: circuit_breaker.timeout_ms: unknown key");
	expect_error("circuit_breaker:\n  max_attempts: 3\n",
		     "t.yaml:2: circuit_breaker.max_attempts: unknown key");
	expect_error("circuit_breaker:\n  retry:\n    mode: consecutive\n",
		     "t.yaml:3: circuit_breaker.retry.mode: unknown key");
	expect_error("client:\n  retry: {}\n", "t.yaml:2: client.retry: unknown key");
	/* Keys are case-sensitive. */
	expect_error("circuit_breaker:\n  Mode: consecutive\n",
		     "t.yaml:2: circuit_breaker.Mode: unknown key");
	/* A long or odd key is echoed short and printable. */
	expect_error("client:\n  \"a\\tb\": 1\n", "t.yaml:2: client.a?b: unknown key");
	expect_error_like("client:\n  "
			  "kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk: 1\n",
			  "t.yaml:2: client.kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk...: unknown key",
			  NULL);
}

/* ---- the exact message format ------------------------------------------- */

static void message_format(void **state)
{
	(void)state;
	expect_error("# 1\n# 2\n# 3\n# 4\n# 5\n# 6\n# 7\n# 8\n# 9\n# 10\n# 11\n# 12\n"
		     "circuit_breaker:\n  failure_rate_threshold: 150\n",
		     "t.yaml:14: circuit_breaker.failure_rate_threshold: must be 1..100 (got 150)");
	expect_error("client:\n  timeout_ms: 0\n",
		     "t.yaml:2: client.timeout_ms: must be 1..3600000 (got 0)");
	expect_error("client:\n  timeout_ms: '5'\n",
		     "t.yaml:2: client.timeout_ms: must be an integer, not a quoted string (got \"5\")");
	expect_error("client:\n  timeout_ms: >\n    5\n",
		     "t.yaml:2: client.timeout_ms: must be an integer, not a block string (got \"5?\")");
	/* The name is the caller's; NULL gives a placeholder. */
	{
		wms_config *cfg = NULL;
		wms_error err;
		const char *y = "x: [\n";
		assert_int_equal(wms_config_parse_yaml(&cfg, y, strlen(y), NULL, &err), WMS_ERR_CONFIG);
		assert_memory_equal(err.message, "<yaml>:1: YAML syntax error: ", 29);
		/* err may be NULL: the status still says it. */
		assert_int_equal(wms_config_parse_yaml(&cfg, y, strlen(y), "n", NULL), WMS_ERR_CONFIG);
		assert_null(cfg);
	}
	/* A very long file name is cut to fit, one line, NUL-terminated. */
	{
		char name[600];
		wms_config *cfg = NULL;
		wms_error err;
		memset(name, 'n', sizeof(name) - 1);
		name[sizeof(name) - 1] = '\0';
		assert_int_equal(wms_config_parse_yaml(&cfg, "a: [", 4, name, &err), WMS_ERR_CONFIG);
		assert_int_equal(strlen(err.message), WMS_ERROR_MESSAGE_MAX - 1);
	}
}

/* ---- structure ---------------------------------------------------------- */

static void duplicates_refused(void **state)
{
	(void)state;
	expect_error("circuit_breaker:\n  mode: consecutive\n  mode: count_based\n",
		     "t.yaml:3: circuit_breaker.mode: duplicate key (first at line 2)");
	expect_error("client:\n  timeout_ms: 1\nclient:\n  timeout_ms: 2\n",
		     "t.yaml:3: client: duplicate key (first at line 1)");
	expect_error("service: a\nowner: b\nservice: c\n",
		     "t.yaml:3: service: duplicate key (first at line 1)");
	expect_error("circuit_breaker:\n  retry: {max_attempts: 2, max_attempts: 3}\n",
		     "t.yaml:2: circuit_breaker.retry.max_attempts: duplicate key (first at line 2)");
	/* Quoting does not make a key another key. */
	expect_error("client: {}\n\"client\": {}\n", "t.yaml:2: client: duplicate key (first at line 1)");
	/* In the skipped rest of the SLA, nested mappings are not checked. */
	{
		wms_config *cfg = load_ok("slo: {a: 1, a: 2}\n", NULL);
		wms_config_free(cfg);
	}
}

/* Many top-level keys: the duplicate check stays fast (hash set). */
static void many_top_level_keys(void **state)
{
	size_t cap = 60000 * 16, n = 0;
	char *y = malloc(cap);
	wms_config *cfg = NULL;
	wms_error err;
	int i;
	(void)state;

	assert_non_null(y);
	for (i = 0; i < 60000; i++)
		n += (size_t)snprintf(y + n, cap - n, "k%d: %d\n", i, i);
	assert_int_equal(wms_config_parse_yaml(&cfg, y, n, "t.yaml", &err), WMS_OK);
	wms_config_free(cfg);
	n += (size_t)snprintf(y + n, cap - n, "k31337: again\n");
	assert_int_equal(wms_config_parse_yaml(&cfg, y, n, "t.yaml", &err), WMS_ERR_CONFIG);
	assert_string_equal(err.message, "t.yaml:60001: k31337: duplicate key (first at line 31338)");
	free(y);
}

static void root_and_documents(void **state)
{
	wms_config *cfg = NULL;
	wms_error err;
	(void)state;

	assert_int_equal(wms_config_parse_yaml(&cfg, NULL, 0, "t.yaml", &err), WMS_ERR_CONFIG);
	assert_string_equal(err.message, "t.yaml:1: the file is empty (expected a mapping)");
	expect_error("", "t.yaml:1: the file is empty (expected a mapping)");
	expect_error("\n\n   \n", "t.yaml:3: the file is empty (expected a mapping)");
	expect_error("# only\n# comments\n", "t.yaml:2: the file is empty (expected a mapping)");
	expect_error("---\n", "t.yaml:1: the document is empty (expected a mapping)");
	expect_error("--- ~\n", "t.yaml:1: the document is empty (expected a mapping)");
	expect_error("null\n", "t.yaml:1: the document is empty (expected a mapping)");
	expect_error("42\n", "t.yaml:1: the root must be a mapping, not a scalar");
	expect_error("\"circuit_breaker\"\n", "t.yaml:1: the root must be a mapping, not a scalar");
	expect_error("- a\n- b\n", "t.yaml:1: the root must be a mapping, not a sequence");
	expect_error("a: 1\n---\nb: 2\n",
		     "t.yaml:2: a second YAML document: the file must hold exactly one");
	expect_error("a: 1\n...\n---\n",
		     "t.yaml:3: a second YAML document: the file must hold exactly one");
	expect_error("[a]: 1\n", "t.yaml:1: keys must be scalars, not a sequence");
	expect_error("? {a: b}\n: 1\n", "t.yaml:1: keys must be scalars, not a mapping");
	/* One document with explicit markers is fine. */
	cfg = load_ok("%YAML 1.1\n---\na: 1\n...\n", NULL);
	wms_config_free(cfg);
}

static void blocks_must_be_mappings(void **state)
{
	(void)state;
	expect_error("circuit_breaker:\n",
		     "t.yaml:1: circuit_breaker: has no value (expected a mapping; write {} for an "
		     "empty block)");
	expect_error("client: ~\n",
		     "t.yaml:1: client: has no value (expected a mapping; write {} for an empty "
		     "block)");
	expect_error("client: http://wms/\n", "t.yaml:1: client: must be a mapping, not a scalar");
	expect_error("circuit_breaker: [a]\n",
		     "t.yaml:1: circuit_breaker: must be a mapping, not a sequence");
	expect_error("circuit_breaker:\n  retry:\n",
		     "t.yaml:2: circuit_breaker.retry: has no value (expected a mapping; write {} "
		     "for an empty block)");
	expect_error("circuit_breaker:\n  retry: [1]\n",
		     "t.yaml:2: circuit_breaker.retry: must be a mapping, not a sequence");
	expect_error("circuit_breaker: !!map {}\n",
		     "t.yaml:1: circuit_breaker: explicit YAML tags are not supported");
	expect_error("circuit_breaker:\n  [a]: 1\n",
		     "t.yaml:2: circuit_breaker: keys must be scalars, not a sequence");
}

static void syntax_errors(void **state)
{
	(void)state;
	expect_error_like("circuit_breaker:\n  mode: consecutive\n mode: x\n",
			  "t.yaml:3: YAML syntax error: ", NULL);
	expect_error_like("a: 'unterminated\n", "t.yaml:1: YAML syntax error: ", "quoted scalar");
	expect_error_like("a: [1, 2\n", "t.yaml:1: YAML syntax error: ", "flow sequence");
	expect_error_like("a: 1\n\tb: 2\n", "t.yaml:2: YAML syntax error: ", NULL);
	expect_error_like("a: b: c\n", "t.yaml:1: YAML syntax error: ",
			  "mapping values are not allowed");
	expect_error_like("a: \"\\q\"\n", "t.yaml:1: YAML syntax error: ", "escape");
	expect_error_like("%YAML 2.0\n---\na: 1\n", "t.yaml:1: YAML syntax error: ", "incompatible");
	expect_error_like("a: !<tag:yaml.org,2002:str\n", "t.yaml:", "YAML syntax error: ");
	/* The end of the input is on the last line, whatever the line ends and text. */
	expect_error("a: [\n", "t.yaml:1: YAML syntax error: did not find expected node content, "
			       "while parsing a flow node at the end of the file");
	expect_error("\xc3\xa9t\xc3\xa9: [", "t.yaml:1: YAML syntax error: did not find expected "
					     "node content, while parsing a flow node at the end of the file");
	expect_error_like("a: 1\rb: 2\r\rc: [\r", "t.yaml:4: YAML syntax error: ", NULL);
	expect_error_like("a: 1\r\nb: 2\r\nc: {\r\n\r\n", "t.yaml:4: YAML syntax error: ", NULL);
	expect_error_like("a: 1\rb: 2\r\rc: \xff\r", "t.yaml:4: invalid input: ", "#FF");
	/* Not UTF-8, and control characters. */
	expect_error_like("a: 1\nb: caf\xe9\n", "t.yaml:2: invalid input: ", "UTF-8");
	expect_error_like("a: 1\nb: \xff x\n", "t.yaml:2: invalid input: ",
			  "invalid leading UTF-8 octet (#FF at byte 8)");
	expect_error_like("a: 1\n\nb: \x01\n", "t.yaml:3: invalid input: ",
			  "control characters are not allowed");
	{
		wms_config *cfg = NULL;
		wms_error err;
		assert_int_equal(wms_config_parse_yaml(&cfg, "a: 1\nb: \0\n", 10, "t.yaml", &err),
				 WMS_ERR_CONFIG);
		assert_memory_equal(err.message, "t.yaml:2: invalid input: ", 25);
	}
}

static void anchors_aliases_tags(void **state)
{
	wms_config *cfg;
	(void)state;
	expect_error("base: &b {a: 1}\n", "t.yaml:1: anchors (&b) are not supported");
	expect_error("circuit_breaker: &cb\n  mode: consecutive\n",
		     "t.yaml:1: circuit_breaker: anchors (&cb) are not supported");
	expect_error("circuit_breaker:\n  retry: &r {}\n",
		     "t.yaml:2: circuit_breaker.retry: anchors (&r) are not supported");
	expect_error("a:\n  - x\n  - *y\n",
		     "t.yaml:3: aliases (*y) are not supported: write the value out");
	expect_error("client:\n  timeout_ms: *t\n",
		     "t.yaml:2: client.timeout_ms: aliases (*t) are not supported: write the value "
		     "out");
	/* A merge key is just an unknown key in our blocks. */
	expect_error("circuit_breaker:\n  <<: *m\n", "t.yaml:2: circuit_breaker.<<: unknown key");
	/* Tags are refused in our blocks, and left alone in the rest of the SLA. */
	expect_error("client:\n  endpoint: !!str http://w/\n",
		     "t.yaml:2: client.endpoint: explicit YAML tags are not supported");
	/* an endpoint is never echoed: it may hold a user and password */
	for (int twice = 0; twice < 2; twice++) {
		expect_error("client:\n  endpoint: ftp://alice:s3cr3t@wms.test/\n",
			     "t.yaml:2: client.endpoint: must be an http:// or https:// URL (got a "
			     "URL with scheme ftp)");
		expect_error("client:\n  endpoint: alice:s3cr3t@wms.test/\n",
			     "t.yaml:2: client.endpoint: must be an http:// or https:// URL (got no "
			     "scheme)");
	}
	expect_error("circuit_breaker:\n  retry: !custom {}\n",
		     "t.yaml:2: circuit_breaker.retry: explicit YAML tags are not supported");
	cfg = load_ok("owner: !team fulfillment\nslo: !!map {a: 1}\n", NULL);
	wms_config_free(cfg);
}

static void cross_field_checks(void **state)
{
	wms_config *cfg;
	wms_client_options o = WMS_CLIENT_OPTIONS_INIT;
	(void)state;

	/* The window range depends on the mode, in either order. */
	expect_error("circuit_breaker:\n  mode: time_based\n  sliding_window_size: 3601\n",
		     "t.yaml:3: circuit_breaker.sliding_window_size: must be 1..3600 (seconds) in "
		     "time_based mode (got 3601)");
	expect_error("circuit_breaker:\n  sliding_window_size: 100000\n  mode: time_based\n",
		     "t.yaml:2: circuit_breaker.sliding_window_size: must be 1..3600 (seconds) in "
		     "time_based mode (got 100000)");
	expect_error("circuit_breaker:\n  mode: count_based\n  sliding_window_size: 100001\n",
		     "t.yaml:3: circuit_breaker.sliding_window_size: must be 1..100000 (got "
		     "100001)");
	cfg = load_ok("circuit_breaker:\n  mode: time_based\n  sliding_window_size: 3600\n", &o);
	assert_int_equal(o.breaker_options.sliding_window_size, 3600);
	wms_config_free(cfg);
	cfg = load_ok("circuit_breaker:\n  mode: count_based\n  sliding_window_size: 100000\n", &o);
	wms_config_free(cfg);

	/* max_open_duration_ms >= open_duration_ms (or its default 30000). */
	expect_error("circuit_breaker:\n  max_open_duration_ms: 1000\n  open_duration_ms: 2000\n",
		     "t.yaml:2: circuit_breaker.max_open_duration_ms: must be >= open_duration_ms "
		     "2000 (got 1000)");
	expect_error("circuit_breaker:\n  max_open_duration_ms: 29999\n",
		     "t.yaml:2: circuit_breaker.max_open_duration_ms: must be >= the default "
		     "open_duration_ms 30000 (got 29999)");
	cfg = load_ok("circuit_breaker:\n  open_duration_ms: 2000\n  max_open_duration_ms: 2000\n",
		      NULL);
	wms_config_free(cfg);
	cfg = load_ok("circuit_breaker:\n  open_duration_ms: 86400000\n", NULL);
	wms_config_free(cfg);

	/* max_backoff_ms >= initial_backoff_ms (defaults 100 and 2000). */
	expect_error("circuit_breaker:\n  retry:\n    max_backoff_ms: 99\n",
		     "t.yaml:3: circuit_breaker.retry.max_backoff_ms: must be >= the default "
		     "initial_backoff_ms 100 (got 99)");
	expect_error("circuit_breaker:\n  retry:\n    initial_backoff_ms: 2001\n",
		     "t.yaml:3: circuit_breaker.retry.initial_backoff_ms: must be <= the default "
		     "max_backoff_ms 2000 (got 2001)");
	expect_error("circuit_breaker:\n  retry:\n    max_backoff_ms: 10\n    initial_backoff_ms: 20\n",
		     "t.yaml:3: circuit_breaker.retry.max_backoff_ms: must be >= initial_backoff_ms "
		     "20 (got 10)");
	cfg = load_ok("circuit_breaker:\n  retry:\n    initial_backoff_ms: 5000\n"
		      "    max_backoff_ms: 5000\n", NULL);
	wms_config_free(cfg);
}

/* ---- circuit_breaker.shared --------------------------------------------- */

/* Each numeric key of the block at both ends of its range (applied into
 * version 3 options), and refused just past each end, message exact. */
static void shared_keys_at_their_bounds(void **state)
{
	static const struct {
		const char *key;
		unsigned long long lo, hi;
		size_t field; /* offsetof(wms_shared_options, ...) */
	} ks[] = {
		{ "command_timeout_ms", 1, 10000, offsetof(wms_shared_options, command_timeout_ms) },
		{ "heartbeat_ms", 5, 10000, offsetof(wms_shared_options, heartbeat_ms) },
		{ "key_ttl_s", 60, 2592000, offsetof(wms_shared_options, key_ttl_s) },
		{ "queue_size", 64, 1048576, offsetof(wms_shared_options, queue_size) },
		{ "quorum", 1, 64, offsetof(wms_shared_options, quorum) },
	};
	size_t i;
	int end;
	(void)state;

	for (i = 0; i < sizeof(ks) / sizeof(ks[0]); i++) {
		for (end = 0; end < 2; end++) {
			unsigned long long ok = end ? ks[i].hi : ks[i].lo;
			unsigned long long bad = end ? ks[i].hi + 1 : ks[i].lo - 1;
			wms_client_options o = WMS_CLIENT_OPTIONS_INIT;
			char yaml[256], want[256];
			wms_config *cfg;
			uint32_t got;

			snprintf(yaml, sizeof(yaml),
				 "circuit_breaker:\n  shared:\n    redis_url: redis://r/0\n    %s: %llu\n",
				 ks[i].key, ok);
			cfg = load_ok(yaml, &o);
			memcpy(&got, (const char *)&o.shared + ks[i].field, sizeof(got));
			assert_int_equal(got, ok);
			wms_config_free(cfg);

			snprintf(yaml, sizeof(yaml),
				 "service: x\ncircuit_breaker:\n  shared:\n    %s: %llu\n"
				 "    redis_url: redis://r/0\n",
				 ks[i].key, bad);
			snprintf(want, sizeof(want),
				 "t.yaml:4: circuit_breaker.shared.%s: must be %llu..%llu (got %llu)",
				 ks[i].key, ks[i].lo, ks[i].hi, bad);
			expect_error(yaml, want);
		}
	}
	/* The name: 1 and 64 bytes; "" and 65 refused. */
	{
		wms_client_options o = WMS_CLIENT_OPTIONS_INIT;
		char name[66], yaml[256];
		wms_config *cfg = load_ok("circuit_breaker: {shared: {redis_url: 'redis://r', name: x}}\n",
					  &o);
		assert_string_equal(o.shared.name, "x");
		wms_config_free(cfg);
		memset(name, 'a', sizeof(name));
		memcpy(name, "Az09.-_", 7);
		name[64] = '\0';
		snprintf(yaml, sizeof(yaml),
			 "circuit_breaker:\n  shared:\n    redis_url: redis://r\n    name: %s\n", name);
		cfg = load_ok(yaml, &o);
		assert_int_equal(strlen(o.shared.name), 64);
		assert_string_equal(o.shared.name, name);
		wms_config_free(cfg);
		name[64] = 'a';
		name[65] = '\0';
		snprintf(yaml, sizeof(yaml),
			 "circuit_breaker:\n  shared:\n    redis_url: redis://r\n    name: %s\n", name);
		expect_error(yaml, "t.yaml:4: circuit_breaker.shared.name: must be 1..64 bytes long (got 65)");
	}
	expect_error("circuit_breaker:\n  shared:\n    redis_url: redis://r\n    name: ''\n",
		     "t.yaml:4: circuit_breaker.shared.name: must not be empty");
	expect_error("circuit_breaker:\n  shared:\n    redis_url: redis://r\n    name: wms:eu\n",
		     "t.yaml:4: circuit_breaker.shared.name: must hold only letters, digits, '.', "
		     "'-' and '_' (got wms:eu)");
	expect_error("circuit_breaker:\n  shared:\n    redis_url: redis://r\n    name: 7.5\n"
		     "    heartbeat_ms: '50'\n",
		     "t.yaml:5: circuit_breaker.shared.heartbeat_ms: must be an integer, not a quoted "
		     "string (got \"50\")");
}

/* The block's structure: required redis_url, unknown and duplicate keys,
 * keys out of their block, the block as a value. */
static void shared_block_structure(void **state)
{
	(void)state;
	expect_error("service: x\ncircuit_breaker:\n  mode: consecutive\n  shared:\n"
		     "    name: fleet\n    heartbeat_ms: 50\n",
		     "t.yaml:4: circuit_breaker.shared: redis_url is required in this block "
		     "(redis://HOST[:PORT][/DB] or unix:///PATH)");
	expect_error("circuit_breaker:\n  shared: {}\n",
		     "t.yaml:2: circuit_breaker.shared: redis_url is required in this block "
		     "(redis://HOST[:PORT][/DB] or unix:///PATH)");
	expect_error("circuit_breaker:\n  shared:\n",
		     "t.yaml:2: circuit_breaker.shared: has no value (expected a mapping; write {} "
		     "for an empty block)");
	expect_error("circuit_breaker:\n  shared: redis://r/0\n",
		     "t.yaml:2: circuit_breaker.shared: must be a mapping, not a scalar");
	expect_error("circuit_breaker:\n  shared: [redis://r/0]\n",
		     "t.yaml:2: circuit_breaker.shared: must be a mapping, not a sequence");
	expect_error("circuit_breaker:\n  shared: !!map {redis_url: redis://r}\n",
		     "t.yaml:2: circuit_breaker.shared: explicit YAML tags are not supported");
	expect_error("circuit_breaker:\n  shared: &s {redis_url: redis://r}\n",
		     "t.yaml:2: circuit_breaker.shared: anchors (&s) are not supported");
	expect_error("circuit_breaker:\n  shared:\n    redis_url: redis://r\n    password: x\n",
		     "t.yaml:4: circuit_breaker.shared.password: unknown key");
	expect_error("circuit_breaker:\n  shared:\n    redis_url: redis://r\n    mode: consecutive\n",
		     "t.yaml:4: circuit_breaker.shared.mode: unknown key");
	expect_error("circuit_breaker:\n  shared:\n    Redis_url: redis://r\n",
		     "t.yaml:3: circuit_breaker.shared.Redis_url: unknown key");
	expect_error("circuit_breaker:\n  shared:\n    redis_url: redis://r\n    retry: {}\n",
		     "t.yaml:4: circuit_breaker.shared.retry: unknown key");
	expect_error("circuit_breaker:\n  shared:\n    redis_url: redis://r\n    shared: {}\n",
		     "t.yaml:4: circuit_breaker.shared.shared: unknown key");
	expect_error("circuit_breaker:\n  shared:\n    redis_url: redis://r\n    [a]: 1\n",
		     "t.yaml:4: circuit_breaker.shared: keys must be scalars, not a sequence");
	/* The block's keys belong to it alone. */
	expect_error("circuit_breaker:\n  redis_url: redis://r\n",
		     "t.yaml:2: circuit_breaker.redis_url: unknown key");
	expect_error("circuit_breaker:\n  heartbeat_ms: 50\n",
		     "t.yaml:2: circuit_breaker.heartbeat_ms: unknown key");
	expect_error("client:\n  shared: {redis_url: redis://r}\n", "t.yaml:2: client.shared: unknown key");
	expect_error("circuit_breaker:\n  retry:\n    shared: {}\n",
		     "t.yaml:3: circuit_breaker.retry.shared: unknown key");
	expect_error("shared:\n  redis_url: redis://r\ncircuit_breaker:\n  shared:\n    name: x\n",
		     "t.yaml:4: circuit_breaker.shared: redis_url is required in this block "
		     "(redis://HOST[:PORT][/DB] or unix:///PATH)");
	/* Duplicates: the block and its keys. */
	expect_error("circuit_breaker:\n  shared: {redis_url: redis://r}\n  shared: {redis_url: redis://s}\n",
		     "t.yaml:3: circuit_breaker.shared: duplicate key (first at line 2)");
	expect_error("circuit_breaker:\n  shared:\n    redis_url: redis://r\n    queue_size: 64\n"
		     "    queue_size: 128\n",
		     "t.yaml:5: circuit_breaker.shared.queue_size: duplicate key (first at line 4)");
	expect_error("circuit_breaker:\n  shared:\n    redis_url: 'redis://:s3cret@r'\n"
		     "    redis_url: 'redis://:s3cret@r'\n",
		     "t.yaml:4: circuit_breaker.shared.redis_url: duplicate key (first at line 3)");
	expect_error("circuit_breaker:\n  shared: {redis_url: redis://r, name: a, name: b}\n",
		     "t.yaml:2: circuit_breaker.shared.name: duplicate key (first at line 2)");
	/* Every mode is shared, in either order. */
	{
		static const char *const ok[] = {
			"circuit_breaker:\n  mode: count_based\n  shared:\n    redis_url: redis://r\n",
			"circuit_breaker:\n  shared: {redis_url: redis://r}\n  mode: time_based\n",
		};
		size_t i;
		for (i = 0; i < 2; i++)
			wms_config_free(load_ok(ok[i], NULL));
	}
	{
		wms_config *cfg = load_ok("circuit_breaker:\n  mode: consecutive\n  shared:\n"
					  "    redis_url: redis://r\n",
					  NULL);
		wms_config_free(cfg);
	}
	/* The breaker's name and the fleet's are two keys. */
	{
		wms_client_options o = WMS_CLIENT_OPTIONS_INIT;
		wms_config *cfg = load_ok("circuit_breaker:\n  name: eu\n  shared:\n"
					  "    redis_url: redis://r\n    name: fleet\n",
					  &o);
		assert_string_equal(o.breaker_options.name, "eu");
		assert_string_equal(o.shared.name, "fleet");
		wms_config_free(cfg);
	}
}

/* Every URL form the store refuses is refused when the file is read, with
 * the parser's reason under the dotted key. */
static void shared_redis_url_forms(void **state)
{
	static const struct {
		const char *value;
		const char *problem;
	} bad[] = {
		{ "rediss://r:6380/0", "rediss:// (TLS) is not supported: hiredis 0.14 has no TLS; use a "
				       "unix socket or a trusted network" },
		{ "r:6379/0", "must start with redis:// or unix://" },
		{ "//r:6379", "must start with redis:// or unix://" },
		{ "http://r:6379", "must start with redis:// or unix://" },
		{ "REDIS://r", "must start with redis:// or unix://" },
		{ "redis://r:0", "the port must be a number 1-65535" },
		{ "redis://r:65536/0", "the port must be a number 1-65535" },
		{ "redis://r:/0", "the port must be a number 1-65535" },
		{ "redis://r:06379", "the port must be a number 1-65535" },
		{ "redis://r/16", "the database must be a number 0-15" },
		{ "redis://r:6379/x", "the database must be a number 0-15" },
		{ "unix:///run/redis.sock?db=16", "the database must be a number 0-15" },
		{ "unix://run/redis.sock", "unix:// needs an absolute path (unix:///run/redis.sock)" },
		{ "unix://", "unix:// needs an absolute path (unix:///run/redis.sock)" },
		{ "unix:///run/r.sock?timeout=1", "the only query a unix:// URL takes is ?db=N" },
		{ "redis://", "the host is empty or holds a blank or control byte" },
		{ "'redis://r s'", "the host is empty or holds a blank or control byte" },
		{ "redis://user@r", "credentials are USER:PASSWORD@ or :PASSWORD@" },
		{ "redis://user:@r", "the password is empty" },
		{ "redis://[::1", "a bracketed IPv6 host is [ADDR]" },
	};
	size_t i;
	(void)state;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char yaml[512], want[512];
		snprintf(yaml, sizeof(yaml), "# %zu\ncircuit_breaker:\n  shared:\n    redis_url: %s\n", i,
			 bad[i].value);
		snprintf(want, sizeof(want), "t.yaml:4: circuit_breaker.shared.redis_url: %s",
			 bad[i].problem);
		expect_error(yaml, want);
	}
	/* Its length: a URL of 1024 bytes is parsed (its password is too long),
	 * one of 1025 is refused unparsed. */
	{
		char yaml[1200];
		size_t n, len;
		for (len = 1024; len <= 1025; len++) {
			n = (size_t)snprintf(yaml, sizeof(yaml),
					     "circuit_breaker:\n  shared:\n    redis_url: 'redis://:");
			memset(yaml + n, 'p', len - 11); /* "redis://:" + "@r" */
			n += len - 11;
			memcpy(yaml + n, "@r'\n", 5);
			expect_error(yaml, len == 1024 ? "t.yaml:3: circuit_breaker.shared.redis_url: the "
							 "user or password is too long"
						       : "t.yaml:3: circuit_breaker.shared.redis_url: is "
							 "longer than 1024 bytes");
		}
	}
	/* The forms the store takes. */
	{
		static const char *const good[] = {
			"redis://r", "redis://r:1/0", "redis://r:65535/15", "redis://10.0.0.5:6379/0",
			"redis://[::1]:6379", "'redis://:pw@r'", "'redis://user:p@ss/w@rd@r:7000/3'",
			"unix:///run/redis.sock", "unix:///run/redis.sock?db=15",
		};
		for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
			char yaml[256];
			wms_config *cfg;
			snprintf(yaml, sizeof(yaml), "circuit_breaker:\n  shared:\n    redis_url: %s\n",
				 good[i]);
			cfg = load_ok(yaml, NULL);
			wms_config_free(cfg);
		}
	}
}

/* A URL with a password, wrong elsewhere: the message names the problem
 * and the key, never the password (nor the URL). */
static void shared_redis_url_password_never_shown(void **state)
{
	static const struct {
		const char *value;
		const char *problem;
	} bad[] = {
		{ "'redis://user:s3cret@r:99999/0'", "the port must be a number 1-65535" },
		{ "'redis://:s3cret@r:0'", "the port must be a number 1-65535" },
		{ "'redis://:s3cret@r/16'", "the database must be a number 0-15" },
		{ "'redis://:s3cret@/0'", "the host is empty or holds a blank or control byte" },
		{ "'redis://:s3cret@[::1'", "a bracketed IPv6 host is [ADDR]" },
		{ "'rediss://:s3cret@r'", "rediss:// (TLS) is not supported: hiredis 0.14 has no TLS; "
					  "use a unix socket or a trusted network" },
		{ "'s3cret@r:6379'", "must start with redis:// or unix://" },
		{ "\"redis://:s3cret\\0@r\"", "must not contain a NUL byte" },
		{ "{url: 'redis://:s3cret@r'}", "must be a URL, not a mapping" },
		{ "['redis://:s3cret@r']", "must be a URL, not a sequence" },
		{ "!!str 'redis://:s3cret@r'", "explicit YAML tags are not supported" },
	};
	size_t i;
	(void)state;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char yaml[512], want[512];
		wms_config *cfg = NULL;
		wms_error err;

		snprintf(yaml, sizeof(yaml), "circuit_breaker:\n  shared:\n    name: fleet\n"
			 "    redis_url: %s\n", bad[i].value);
		snprintf(want, sizeof(want), "t.yaml:4: circuit_breaker.shared.redis_url: %s",
			 bad[i].problem);
		expect_error(yaml, want);
		assert_int_equal(parse(&cfg, yaml, &err), WMS_ERR_CONFIG);
		assert_null(strstr(err.message, "s3cret"));
		assert_null(strstr(err.message, "@r"));
	}
	/* Nor in a syntax error on its line, nor from a file. */
	{
		wms_config *cfg = NULL;
		wms_error err;
		assert_int_equal(parse(&cfg, "circuit_breaker:\n  shared:\n    redis_url: 'redis://:s3cret@r\n",
				       &err), WMS_ERR_CONFIG);
		assert_memory_equal(err.message, "t.yaml:", 7);
		assert_null(strstr(err.message, "s3cret"));
	}
}

/* Apply: version 3 options get the block; version 2 ones have no room for
 * it and refuse it with nothing written; they still take every other key. */
static void shared_apply(void **state)
{
	const char *full = "client:\n  timeout_ms: 5000\n"
			   "circuit_breaker:\n  failure_threshold: 3\n  shared:\n"
			   "    redis_url: 'redis://:pw@10.0.0.5:6379/2'\n    name: fulfillment\n"
			   "    command_timeout_ms: 250\n    heartbeat_ms: 40\n    key_ttl_s: 3600\n"
			   "    queue_size: 1024\n";
	wms_client_options o = WMS_CLIENT_OPTIONS_INIT;
	wms_shared_options so = WMS_SHARED_OPTIONS_INIT;
	wms_config *cfg;
	(void)state;

	cfg = load_ok(full, &o);
	assert_int_equal(o.version, WMS_CLIENT_OPTIONS_VERSION);
	assert_int_equal(o.shared.version, WMS_SHARED_OPTIONS_VERSION);
	assert_string_equal(o.shared.redis_url, "redis://:pw@10.0.0.5:6379/2");
	assert_string_equal(o.shared.name, "fulfillment");
	assert_int_equal(o.shared.command_timeout_ms, 250);
	assert_int_equal(o.shared.heartbeat_ms, 40);
	assert_int_equal(o.shared.key_ttl_s, 3600);
	assert_int_equal(o.shared.queue_size, 1024);
	assert_null(o.shared._reserved[0]);
	assert_int_equal(o.timeout_ms, 5000);
	assert_int_equal(o.breaker_options.failure_threshold, 3);
	/* Borrowed from cfg: the same strings wms_config_shared_options gives. */
	assert_int_equal(wms_config_shared_options(cfg, &so), WMS_OK);
	assert_ptr_equal(so.redis_url, o.shared.redis_url);
	assert_ptr_equal(so.name, o.shared.name);

	/* Version 2: the block is refused and nothing is written; the bytes
	 * past the version 2 end (where `shared` would be) are never touched. */
	{
		wms_client_options *o2 = malloc(sizeof(*o2));
		unsigned char *before = malloc(sizeof(*o2));
		const size_t v2_end = offsetof(wms_client_options, shared);
		size_t i;
		wms_config *plain;

		assert_non_null(o2);
		assert_non_null(before);
		memset(o2, 0x5a, sizeof(*o2));
		assert_int_equal(wms_client_options_init(o2, 2), WMS_OK);
		o2->timeout_ms = 111;
		memcpy(before, o2, sizeof(*o2));
		assert_int_equal(wms_config_apply(cfg, o2), WMS_ERR_INVALID_ARG);
		assert_memory_equal(before, o2, sizeof(*o2));
		plain = load_ok("client:\n  timeout_ms: 5000\ncircuit_breaker:\n  failure_threshold: 3\n"
				"  name: v2\n",
				NULL);
		assert_int_equal(wms_config_apply(plain, o2), WMS_OK);
		assert_int_equal(o2->version, 2);
		assert_int_equal(o2->timeout_ms, 5000);
		assert_int_equal(o2->breaker_options.failure_threshold, 3);
		assert_string_equal(o2->breaker_options.name, "v2");
		for (i = v2_end; i < sizeof(*o2); i++)
			assert_int_equal(((unsigned char *)o2)[i], 0x5a);
		wms_config_free(plain);
		free(before);
		free(o2);
	}
	/* Version 3 with `shared` not initialised, and unknown versions: refused,
	 * nothing written. */
	{
		wms_client_options o3 = WMS_CLIENT_OPTIONS_INIT, copy;
		o3.shared.version = 0;
		copy = o3;
		assert_int_equal(wms_config_apply(cfg, &o3), WMS_ERR_INVALID_ARG);
		assert_memory_equal(&copy, &o3, sizeof(o3));
		o3.shared.version = WMS_SHARED_OPTIONS_VERSION;
		o3.version = 1;
		copy = o3;
		assert_int_equal(wms_config_apply(cfg, &o3), WMS_ERR_INVALID_ARG);
		assert_memory_equal(&copy, &o3, sizeof(o3));
		o3.version = WMS_CLIENT_OPTIONS_VERSION + 1;
		copy = o3;
		assert_int_equal(wms_config_apply(cfg, &o3), WMS_ERR_INVALID_ARG);
		assert_memory_equal(&copy, &o3, sizeof(o3));
		/* Without a shared block, `shared` is not looked at. */
		{
			wms_config *plain = load_ok("circuit_breaker: {failure_threshold: 4}\n", NULL);
			o3.version = 3;
			o3.shared.version = 0;
			assert_int_equal(wms_config_apply(plain, &o3), WMS_OK);
			assert_int_equal(o3.breaker_options.failure_threshold, 4);
			assert_int_equal(o3.shared.version, 0);
			assert_null(o3.shared.redis_url);
			wms_config_free(plain);
		}
	}
	wms_config_free(cfg);

	/* Keys absent from the block leave the options alone. */
	o = (wms_client_options)WMS_CLIENT_OPTIONS_INIT;
	o.shared.name = "before";
	o.shared.heartbeat_ms = 77;
	o.shared.queue_size = 128;
	cfg = load_ok("circuit_breaker:\n  shared:\n    redis_url: unix:///run/redis.sock\n"
		      "    queue_size: 64\n",
		      &o);
	assert_string_equal(o.shared.redis_url, "unix:///run/redis.sock");
	assert_string_equal(o.shared.name, "before");
	assert_int_equal(o.shared.heartbeat_ms, 77);
	assert_int_equal(o.shared.queue_size, 64);
	assert_int_equal(o.shared.command_timeout_ms, 0);
	assert_int_equal(o.shared.key_ttl_s, 0);
	wms_config_free(cfg);
}

/* A version 2 program's options are offsetof(wms_client_options, shared)
 * bytes and nothing after them is its own: apply refuses a shared block
 * for them (WMS_ERR_INVALID_ARG, a version 2 struct has no room for it)
 * and writes nothing; without the block it applies the rest. Neither
 * writes (nor reads) a byte past the version 2 end: a canary right after
 * it, and a heap block of exactly that size (valgrind, ASan). */
#define V2_SIZE offsetof(wms_client_options, shared)
typedef struct v2_with_canary {
	_Alignas(max_align_t) unsigned char opts[V2_SIZE];
	unsigned char canary[sizeof(wms_shared_options) + 64];
} v2_with_canary;

static void shared_apply_v2_exact_size(void **state)
{
	const char *with_shared = "client:\n  timeout_ms: 5000\n"
				  "circuit_breaker:\n  failure_threshold: 3\n  shared:\n"
				  "    redis_url: 'redis://:pw@10.0.0.5:6379/2'\n    name: fulfillment\n"
				  "    command_timeout_ms: 250\n    heartbeat_ms: 40\n"
				  "    key_ttl_s: 3600\n    queue_size: 1024\n";
	const char *without = "client:\n  timeout_ms: 5000\n"
			      "circuit_breaker:\n  failure_threshold: 3\n  name: v2\n"
			      "  retry:\n    max_attempts: 2\n";
	wms_config *shared_cfg = load_ok(with_shared, NULL);
	wms_config *plain_cfg = load_ok(without, NULL);
	unsigned char before[V2_SIZE];
	unsigned char expect[sizeof(((v2_with_canary *)0)->canary)];
	int round;
	(void)state;

	/* the version 2 end is where `shared` starts, version 3's last member */
	assert_int_equal(V2_SIZE + sizeof(wms_shared_options),
			 offsetof(wms_client_options, bulkhead));
	assert_int_equal(offsetof(v2_with_canary, canary), V2_SIZE);
	for (round = 0; round < 2; round++) {
		v2_with_canary *block = malloc(sizeof(*block));
		wms_client_options *o;
		size_t i;

		assert_non_null(block);
		memset(block, 0xa5, sizeof(*block));
		if (round == 1) {
			/* what follows the caller's struct happens to look like an
			 * initialised `shared`: only the version 2 decides */
			unsigned v = WMS_SHARED_OPTIONS_VERSION;
			memcpy(block->canary + offsetof(wms_shared_options, version), &v, sizeof(v));
		}
		memcpy(expect, block->canary, sizeof(expect));
		o = (wms_client_options *)(void *)block->opts;
		assert_int_equal(wms_client_options_init(o, 2), WMS_OK);
		assert_memory_equal(expect, block->canary, sizeof(expect));
		o->timeout_ms = 111;
		memcpy(before, block->opts, V2_SIZE);
		assert_int_equal(wms_config_apply(shared_cfg, o), WMS_ERR_INVALID_ARG);
		assert_memory_equal(before, block->opts, V2_SIZE);
		assert_int_equal(wms_config_apply(plain_cfg, o), WMS_OK);
		assert_int_equal(o->version, 2);
		assert_int_equal(o->timeout_ms, 5000);
		assert_int_equal(o->breaker_options.failure_threshold, 3);
		assert_string_equal(o->breaker_options.name, "v2");
		assert_int_equal(o->retry.max_attempts, 2);
		/* once more with the block: still refused, still nothing written */
		memcpy(before, block->opts, V2_SIZE);
		assert_int_equal(wms_config_apply(shared_cfg, o), WMS_ERR_INVALID_ARG);
		assert_memory_equal(before, block->opts, V2_SIZE);
		for (i = 0; i < sizeof(expect); i++)
			if (block->canary[i] != expect[i])
				fail_msg("byte %zu past the version 2 end written", i);
		free(block);
	}
	/* A heap block of exactly the version 2 size: a byte read or written
	 * past it is an error under valgrind and ASan. */
	for (round = 0; round < 2; round++) {
		/* the size through a volatile: the compiler may not see the
		 * (deliberately) short block behind o->timeout_ms */
		volatile size_t size = V2_SIZE;
		wms_client_options *o = malloc(size);
		assert_non_null(o);
		assert_int_equal(wms_client_options_init(o, 2), WMS_OK);
		memcpy(before, o, V2_SIZE);
		assert_int_equal(wms_config_apply(shared_cfg, o), WMS_ERR_INVALID_ARG);
		assert_memory_equal(before, o, V2_SIZE);
		assert_int_equal(wms_config_apply(plain_cfg, o), WMS_OK);
		assert_int_equal(o->timeout_ms, 5000);
		assert_int_equal(o->breaker_options.failure_threshold, 3);
		free(o);
	}
	wms_config_free(shared_cfg);
	wms_config_free(plain_cfg);
}

static void shared_options_function(void **state)
{
	wms_shared_options so = WMS_SHARED_OPTIONS_INIT, copy;
	wms_config *cfg = load_ok("circuit_breaker:\n  failure_threshold: 2\n  shared:\n"
				  "    redis_url: redis://r:7000/1\n    heartbeat_ms: 5\n"
				  "    key_ttl_s: 2592000\n",
				  NULL);
	wms_config *none = load_ok("circuit_breaker: {failure_threshold: 2}\n", NULL);
	(void)state;

	/* Arguments. */
	assert_int_equal(wms_config_shared_options(NULL, &so), WMS_ERR_INVALID_ARG);
	assert_int_equal(wms_config_shared_options(cfg, NULL), WMS_ERR_INVALID_ARG);
	so.version = 0;
	so.command_timeout_ms = 9;
	copy = so;
	assert_int_equal(wms_config_shared_options(cfg, &so), WMS_ERR_INVALID_ARG);
	assert_memory_equal(&copy, &so, sizeof(so));
	so.version = WMS_SHARED_OPTIONS_VERSION + 1;
	copy = so;
	assert_int_equal(wms_config_shared_options(cfg, &so), WMS_ERR_INVALID_ARG);
	assert_memory_equal(&copy, &so, sizeof(so));

	/* Present keys copied, absent ones left alone. */
	assert_int_equal(wms_shared_options_init(&so, WMS_SHARED_OPTIONS_VERSION), WMS_OK);
	so.name = "mine";
	so.command_timeout_ms = 9;
	assert_int_equal(wms_config_shared_options(cfg, &so), WMS_OK);
	assert_int_equal(so.version, WMS_SHARED_OPTIONS_VERSION);
	assert_string_equal(so.redis_url, "redis://r:7000/1");
	assert_string_equal(so.name, "mine");
	assert_int_equal(so.command_timeout_ms, 9);
	assert_int_equal(so.heartbeat_ms, 5);
	assert_int_equal(so.key_ttl_s, 2592000);
	assert_int_equal(so.queue_size, 0);

	/* No block: OK, nothing written. */
	copy = so;
	assert_int_equal(wms_config_shared_options(none, &so), WMS_OK);
	assert_memory_equal(&copy, &so, sizeof(so));
	wms_config_free(none);
	wms_config_free(cfg);
}

/* A client made from a file with a shared block shares its breaker: the
 * store is made at once (Redis need not answer; here nothing listens). */
static void shared_client_from_file(void **state)
{
	wms_client_options o = WMS_CLIENT_OPTIONS_INIT;
	wms_config *cfg = load_ok("client:\n  endpoint: http://127.0.0.1:9/wms\n"
				  "circuit_breaker:\n  name: cfg-shared\n  shared:\n"
				  "    redis_url: unix:///nonexistent/libwms-test-config.sock\n"
				  "    name: cfgtest\n    command_timeout_ms: 20\n    heartbeat_ms: 10\n",
				  &o);
	wms_client *c = NULL;
	wms_error err;
	wms_breaker_snapshot snap;
	(void)state;

	if (wms_client_new(&c, &o, &err) != WMS_OK)
		fail_msg("%s", err.message);
	wms_config_free(cfg); /* the client (its store) copied what it needs */
	wms_breaker_snapshot_get(&snap, wms_client_breaker(c));
	assert_string_equal(snap.name, "cfg-shared");
	assert_int_not_equal(snap.store_state, WMS_STORE_STATE_NONE);
	wms_client_free(c);
}

/* The example file documents the block commented out: uncommented, it
 * loads and gives the library's defaults. */
static void example_shared_block_is_real(void **state)
{
	size_t len = 0, k = 0;
	char *text = cfg_read_file(cfg_source_path("examples/fulfillment-sla.yaml"), &len);
	char *out, *p, *line;
	wms_client_options o = WMS_CLIENT_OPTIONS_INIT;
	wms_config *cfg = NULL;
	wms_error err;
	int in_block = 0, lines = 0;
	(void)state;

	assert_non_null(text);
	out = malloc(len + 1);
	assert_non_null(out);
	for (line = text; *line; line = p) {
		size_t n;
		p = strchr(line, '\n');
		p = p ? p + 1 : line + strlen(line);
		n = (size_t)(p - line);
		if (!strncmp(line, "  # shared:", 11))
			in_block = 1;
		else if (in_block && strncmp(line, "  #   ", 6) != 0)
			in_block = 0;
		if (in_block) {
			/* "  # x" -> "  x" */
			memcpy(out + k, "  ", 2);
			memcpy(out + k + 2, line + 4, n - 4);
			k += n - 2;
			lines++;
		} else {
			memcpy(out + k, line, n);
			k += n;
		}
	}
	out[k] = '\0';
	assert_true(lines >= 7);
	if (wms_config_parse_yaml(&cfg, out, k, "fulfillment-sla.yaml", &err) != WMS_OK)
		fail_msg("%s", err.message);
	assert_int_equal(wms_config_apply(cfg, &o), WMS_OK);
	assert_non_null(o.shared.redis_url);
	assert_memory_equal(o.shared.redis_url, "redis://", 8);
	assert_string_equal(o.shared.name, "wms");
	assert_int_equal(o.shared.command_timeout_ms, 100);
	assert_int_equal(o.shared.heartbeat_ms, 50);
	assert_int_equal(o.shared.key_ttl_s, 86400);
	assert_int_equal(o.shared.queue_size, 4096);
	wms_config_free(cfg);
	free(out);
	free(text);
}

/* ---- apply ------------------------------------------------------------ */

static void apply_on_top_of_values(void **state)
{
	wms_client_options o = WMS_CLIENT_OPTIONS_INIT;
	wms_config *cfg;
	(void)state;

	o.endpoint = "http://before/";
	o.soap_version = WMS_SOAP_12;
	o.connect_timeout_ms = 111;
	o.timeout_ms = 222;
	o.stall_timeout_ms = 333;
	o.max_reply_bytes = 444;
	o.max_idle_connections = 3;
	o.curl.user_agent = "ua";
	o.breaker_scope = WMS_BREAKER_SCOPE_PER_OPERATION;
	o.breaker_options.mode = WMS_BREAKER_MODE_TIME_BASED;
	o.breaker_options.name = "before";
	o.breaker_options.failure_threshold = 9;
	o.breaker_options.failure_rate_threshold = 11;
	o.breaker_options.open_duration_ms = 12345;
	o.breaker_options.open_duration_jitter_pct = 40;
	o.breaker_options.max_open_duration_ms = 99999;
	o.retry.max_attempts = 7;
	o.retry.initial_backoff_ms = 70;
	o.retry.not_sent_only = 1;

	/* Values equal to the zero of the field still override: they were written. */
	cfg = load_ok("client:\n  soap_version: '1.1'\n  timeout_ms: 5000\n"
		      "circuit_breaker:\n  mode: consecutive\n  scope: per_client\n"
		      "  open_duration_jitter_pct: 0\n  failure_threshold: 4\n"
		      "  retry:\n    not_sent_only: false\n    max_attempts: 2\n",
		      &o);
	/* overridden */
	assert_int_equal(o.soap_version, WMS_SOAP_11);
	assert_int_equal(o.timeout_ms, 5000);
	assert_int_equal(o.breaker_options.mode, WMS_BREAKER_MODE_CONSECUTIVE);
	assert_int_equal(o.breaker_scope, WMS_BREAKER_SCOPE_PER_CLIENT);
	assert_int_equal(o.breaker_options.open_duration_jitter_pct, 0);
	assert_int_equal(o.breaker_options.failure_threshold, 4);
	assert_int_equal(o.retry.not_sent_only, 0);
	assert_int_equal(o.retry.max_attempts, 2);
	/* left alone */
	assert_string_equal(o.endpoint, "http://before/");
	assert_int_equal(o.connect_timeout_ms, 111);
	assert_int_equal(o.stall_timeout_ms, 333);
	assert_int_equal(o.max_reply_bytes, 444);
	assert_int_equal(o.max_idle_connections, 3);
	assert_string_equal(o.curl.user_agent, "ua");
	assert_string_equal(o.breaker_options.name, "before");
	assert_int_equal(o.breaker_options.failure_rate_threshold, 11);
	assert_int_equal(o.breaker_options.open_duration_ms, 12345);
	assert_int_equal(o.breaker_options.max_open_duration_ms, 99999);
	assert_int_equal(o.retry.initial_backoff_ms, 70);
	wms_config_free(cfg);

	/* An empty config changes nothing at all. */
	{
		wms_client_options before = o, after = o;
		cfg = load_ok("service: x\nclient: {}\ncircuit_breaker: {retry: {}}\n", &after);
		assert_memory_equal(&before, &after, sizeof(before));
		wms_config_free(cfg);
	}
	/* Applying twice is the same as once; strings are borrowed from cfg. */
	cfg = load_ok("client: {endpoint: 'http://after/'}\ncircuit_breaker: {name: after}\n", &o);
	assert_int_equal(wms_config_apply(cfg, &o), WMS_OK);
	assert_string_equal(o.endpoint, "http://after/");
	assert_string_equal(o.breaker_options.name, "after");
	wms_config_free(cfg);
}

static void api_arguments(void **state)
{
	wms_config *cfg = NULL;
	wms_error err;
	wms_client_options o = WMS_CLIENT_OPTIONS_INIT;
	wms_breaker_options bo = WMS_BREAKER_OPTIONS_INIT;
	(void)state;

	assert_int_equal(wms_config_parse_yaml(NULL, "a: 1", 4, "t", &err), WMS_ERR_INVALID_ARG);
	assert_int_equal(err.delivery, WMS_DELIVERY_NOT_SENT);
	assert_string_equal(err.message, "out is NULL");
	assert_int_equal(wms_config_parse_yaml(&cfg, NULL, 4, "t", &err), WMS_ERR_INVALID_ARG);
	assert_null(cfg);
	assert_int_equal(wms_config_load_yaml(NULL, "x", &err), WMS_ERR_INVALID_ARG);
	assert_int_equal(wms_config_load_yaml(&cfg, NULL, &err), WMS_ERR_INVALID_ARG);
	assert_string_equal(err.message, "path is NULL");

	cfg = load_ok("circuit_breaker: {failure_threshold: 3}\n", NULL);
	assert_int_equal(wms_config_apply(NULL, &o), WMS_ERR_INVALID_ARG);
	assert_int_equal(wms_config_apply(cfg, NULL), WMS_ERR_INVALID_ARG);
	assert_int_equal(wms_config_breaker_options(NULL, &bo), WMS_ERR_INVALID_ARG);
	assert_int_equal(wms_config_breaker_options(cfg, NULL), WMS_ERR_INVALID_ARG);
	/* Options must be initialised (a known version); nothing is written otherwise. */
	o.version = 99;
	o.breaker_options.failure_threshold = 8;
	assert_int_equal(wms_config_apply(cfg, &o), WMS_ERR_INVALID_ARG);
	assert_int_equal(o.breaker_options.failure_threshold, 8);
	o.version = WMS_CLIENT_OPTIONS_VERSION;
	o.breaker_options.version = 0;
	assert_int_equal(wms_config_apply(cfg, &o), WMS_ERR_INVALID_ARG);
	assert_int_equal(o.breaker_options.failure_threshold, 8);
	bo.version = WMS_BREAKER_OPTIONS_VERSION + 1;
	assert_int_equal(wms_config_breaker_options(cfg, &bo), WMS_ERR_INVALID_ARG);
	assert_int_equal(bo.failure_threshold, 0);
	bo.version = WMS_BREAKER_OPTIONS_VERSION;
	assert_int_equal(wms_config_breaker_options(cfg, &bo), WMS_OK);
	assert_int_equal(bo.failure_threshold, 3);
	wms_config_free(cfg);
	wms_config_free(NULL);

	/* Success clears a stale error. */
	err.status = WMS_ERR_TIMEOUT;
	snprintf(err.message, sizeof(err.message), "stale");
	assert_int_equal(parse(&cfg, "a: 1\n", &err), WMS_OK);
	assert_int_equal(err.status, WMS_OK);
	assert_string_equal(err.message, "");
	wms_config_free(cfg);
}

/* ---- files -------------------------------------------------------------- */

/* A scratch directory under the build tree. */
static const char *scratch_dir(void)
{
	static char dir[4096];
	const char *root = getenv("WMS_BUILD_ROOT");
	snprintf(dir, sizeof(dir), "%s/config-scratch-XXXXXX", root ? root : "/tmp");
	assert_non_null(mkdtemp(dir));
	return dir;
}

static void write_file(const char *path, const char *data, size_t len)
{
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
}

static void file_errors(void **state)
{
	const char *dir = scratch_dir();
	char path[4200], want[4400];
	wms_config *cfg = (wms_config *)&cfg;
	wms_error err;
	size_t big = ((size_t)1 << 20), n;
	char *data;
	(void)state;

	/* Missing file: the path and strerror. */
	snprintf(path, sizeof(path), "%s/missing.yaml", dir);
	assert_int_equal(wms_config_load_yaml(&cfg, path, &err), WMS_ERR_CONFIG);
	assert_null(cfg);
	assert_int_equal(err.delivery, WMS_DELIVERY_NOT_SENT);
	snprintf(want, sizeof(want), "%s: cannot open: No such file or directory", path);
	assert_string_equal(err.message, want);

	/* A directory. */
	assert_int_equal(wms_config_load_yaml(&cfg, dir, &err), WMS_ERR_CONFIG);
	snprintf(want, sizeof(want), "%s: cannot read: Is a directory", dir);
	assert_string_equal(err.message, want);

	/* Exactly 1 MiB is read; one byte more is refused, from a file or memory. */
	data = malloc(big + 2);
	assert_non_null(data);
	memset(data, '#', big);
	n = (size_t)snprintf(data, big, "circuit_breaker: {failure_threshold: 9}\n");
	data[n] = '#';
	data[big - 1] = '\n';
	snprintf(path, sizeof(path), "%s/big.yaml", dir);
	write_file(path, data, big);
	assert_int_equal(wms_config_load_yaml(&cfg, path, &err), WMS_OK);
	{
		wms_breaker_options bo = WMS_BREAKER_OPTIONS_INIT;
		assert_int_equal(wms_config_breaker_options(cfg, &bo), WMS_OK);
		assert_int_equal(bo.failure_threshold, 9);
	}
	wms_config_free(cfg);
	data[big] = '\n';
	write_file(path, data, big + 1);
	assert_int_equal(wms_config_load_yaml(&cfg, path, &err), WMS_ERR_CONFIG);
	assert_null(cfg);
	snprintf(want, sizeof(want), "%s: larger than 1 MiB: not an SLA file", path);
	assert_string_equal(err.message, want);
	assert_int_equal(wms_config_parse_yaml(&cfg, data, big + 1, "m.yaml", &err), WMS_ERR_CONFIG);
	assert_string_equal(err.message, "m.yaml: larger than 1 MiB (1048577 bytes): not an SLA file");
	assert_int_equal(unlink(path), 0);

	/* An empty file. */
	snprintf(path, sizeof(path), "%s/empty.yaml", dir);
	write_file(path, "", 0);
	assert_int_equal(wms_config_load_yaml(&cfg, path, &err), WMS_ERR_CONFIG);
	snprintf(want, sizeof(want), "%s:1: the file is empty (expected a mapping)", path);
	assert_string_equal(err.message, want);
	assert_int_equal(unlink(path), 0);

	/* Unreadable (unless we are root, who reads everything). */
	snprintf(path, sizeof(path), "%s/secret.yaml", dir);
	write_file(path, "a: 1\n", 5);
	if (geteuid() != 0) {
		assert_int_equal(chmod(path, 0), 0);
		assert_int_equal(wms_config_load_yaml(&cfg, path, &err), WMS_ERR_CONFIG);
		snprintf(want, sizeof(want), "%s: cannot open: Permission denied", path);
		assert_string_equal(err.message, want);
	}
	assert_int_equal(unlink(path), 0);
	assert_int_equal(rmdir(dir), 0);
	free(data);
}

/* Nesting in the skipped part is capped: libyaml's scanner costs grow with
 * the square of the flow depth, and 1 MiB of '[' must not hang. */
static void deep_nesting(void **state)
{
	size_t big = ((size_t)1 << 20) - 8, n, i, depth;
	char *y = malloc(big + 64);
	wms_config *cfg = NULL;
	wms_error err;
	(void)state;

	assert_non_null(y);
	for (depth = 63; depth <= 64; depth++) {
		n = (size_t)snprintf(y, 16, "x: ");
		for (i = 0; i < depth; i++)
			y[n++] = '[';
		for (i = 0; i < depth; i++)
			y[n++] = ']';
		n += (size_t)snprintf(y + n, 64, "\ncircuit_breaker: {name: deep}\n");
		assert_int_equal(wms_config_parse_yaml(&cfg, y, n, "t.yaml", &err), WMS_OK);
		wms_config_free(cfg);
	}
	/* Block style counts the same. */
	n = (size_t)snprintf(y, 16, "x:\n");
	for (i = 0; i < 70; i++)
		n += (size_t)snprintf(y + n, 256, "%*s- a\n%*s-\n", (int)i, "", (int)i, "");
	expect_error_like(y, "t.yaml:", "nested deeper than 64 levels");
	/* 1 MiB of '[': refused at once, with a line. */
	n = (size_t)snprintf(y, 16, "\nx: ");
	memset(y + n, '[', big - n);
	assert_int_equal(wms_config_parse_yaml(&cfg, y, big, "t.yaml", &err), WMS_ERR_CONFIG);
	assert_string_equal(err.message, "t.yaml:2: nested deeper than 64 levels");
	/* Unclosed but shallow: a syntax error at the end. */
	assert_int_equal(wms_config_parse_yaml(&cfg, y, 10, "t.yaml", &err), WMS_ERR_CONFIG);
	assert_memory_equal(err.message, "t.yaml:2: YAML syntax error: ", 29);
	free(y);
}

/* ---- allocation failures ------------------------------------------------ */

static count_alloc A;

/* Fail the N-th allocation for every N until loading succeeds: each
 * failure is WMS_ERR_NOMEM and leaves nothing allocated. */
static void allocation_failures(void **state)
{
	const wms_allocator al = count_alloc_hooks(&A);
	const char *full = cfg_source_path("tests/data/config/good/full.yaml");
	char path[4096];
	int pass;
	(void)state;

	snprintf(path, sizeof(path), "%s", full);
	for (pass = 0; pass < 2; pass++) {
		long n;
		int failures = 0;
		for (n = 1; n < 10000; n++) {
			wms_config *cfg = NULL;
			wms_error err;
			wms_status st;
			memset(&A, 0, sizeof(A));
			A.fail_at = n;
			assert_int_equal(wms_set_allocator(&al), WMS_OK);
			if (pass == 0)
				st = wms_config_load_yaml(&cfg, path, &err);
			else
				st = parse(&cfg, "a0: 1\na1: 1\na2: 1\na3: 1\na4: 1\na5: 1\na6: 1\n"
						 "a7: 1\na8: 1\na9: 1\nb0: 1\nb1: 1\n"
						 "circuit_breaker: {name: x, shared: {redis_url: "
						 "'redis://:pw@r/1', name: f}}\nclient: {endpoint: "
						 "'http://x/'}\n",
					   &err);
			if (st == WMS_OK) {
				assert_non_null(cfg);
				wms_config_free(cfg);
				assert_int_equal(wms_set_allocator(NULL), WMS_OK);
				assert_int_equal(A.live, 0);
				break;
			}
			assert_int_equal(wms_set_allocator(NULL), WMS_OK);
			assert_int_equal(st, WMS_ERR_NOMEM);
			assert_int_equal(err.status, WMS_ERR_NOMEM);
			assert_null(cfg);
			assert_int_equal(A.live, 0);
			failures++;
		}
		assert_true(failures >= 3);
		assert_true(n < 10000);
	}
}

/* ---- the breaker and the client made from the file ---------------------- */

static uint64_t fake_now(void *ctx)
{
	return *(uint64_t *)ctx;
}

static wms_status call(wms_breaker *b, wms_outcome outcome, uint32_t *retry_after)
{
	wms_breaker_permit p;
	wms_status st = wms_breaker_acquire(&p, b, retry_after);
	if (st == WMS_OK)
		wms_breaker_record(b, &p, outcome);
	return st;
}

static void breaker_count_based_from_file(void **state)
{
	wms_config *cfg = load_ok("service: fulfillment-gateway\n"
				  "circuit_breaker:\n"
				  "  mode: count_based\n"
				  "  name: cfg-count\n"
				  "  sliding_window_size: 10\n"
				  "  minimum_number_of_calls: 10\n"
				  "  failure_rate_threshold: 50\n"
				  "  open_duration_ms: 5000\n"
				  "  permitted_calls_in_half_open: 2\n",
				  NULL);
	wms_breaker_options bo = WMS_BREAKER_OPTIONS_INIT;
	wms_breaker *b = NULL;
	wms_breaker_snapshot snap;
	uint64_t now = 1000 * MS;
	uint32_t retry_after = 0;
	int i;
	(void)state;

	assert_int_equal(wms_config_breaker_options(cfg, &bo), WMS_OK);
	bo.callbacks.clock = fake_now;
	bo.callbacks.payload = &now;
	assert_int_equal(wms_breaker_new(&b, &bo), WMS_OK);
	wms_config_free(cfg); /* the breaker copied the name */

	/* 9 calls (4 failures) are under the minimum: closed. */
	for (i = 0; i < 5; i++)
		assert_int_equal(call(b, WMS_OUTCOME_SUCCESS, NULL), WMS_OK);
	for (i = 0; i < 4; i++)
		assert_int_equal(call(b, WMS_OUTCOME_FAILURE, NULL), WMS_OK);
	assert_int_equal(wms_breaker_state_get(b), WMS_BREAKER_STATE_CLOSED);
	/* The 10th, a failure: 5 of 10 = 50 % opens it. */
	assert_int_equal(call(b, WMS_OUTCOME_FAILURE, NULL), WMS_OK);
	assert_int_equal(wms_breaker_state_get(b), WMS_BREAKER_STATE_OPEN);
	wms_breaker_snapshot_get(&snap, b);
	assert_string_equal(snap.name, "cfg-count");
	assert_int_equal(snap.failures, 5);
	/* Open for open_duration_ms = 5000. */
	assert_int_equal(call(b, WMS_OUTCOME_SUCCESS, &retry_after), WMS_ERR_CIRCUIT_OPEN);
	assert_int_equal(retry_after, 5000);
	now += 4999 * MS;
	assert_int_equal(call(b, WMS_OUTCOME_SUCCESS, &retry_after), WMS_ERR_CIRCUIT_OPEN);
	assert_int_equal(retry_after, 1);
	now += 1 * MS;
	/* Two trial calls (permitted_calls_in_half_open: 2) close it. */
	assert_int_equal(call(b, WMS_OUTCOME_SUCCESS, NULL), WMS_OK);
	assert_int_equal(wms_breaker_state_get(b), WMS_BREAKER_STATE_HALF_OPEN);
	assert_int_equal(call(b, WMS_OUTCOME_SUCCESS, NULL), WMS_OK);
	assert_int_equal(wms_breaker_state_get(b), WMS_BREAKER_STATE_CLOSED);
	wms_breaker_free(b);
}

/* Same window, 4 of 10 is under 50 %: stays closed. */
static void breaker_count_based_below_threshold(void **state)
{
	wms_config *cfg = load_ok("circuit_breaker:\n  mode: count_based\n"
				  "  sliding_window_size: 10\n  minimum_number_of_calls: 10\n"
				  "  failure_rate_threshold: 50.0\n",
				  NULL);
	wms_breaker_options bo = WMS_BREAKER_OPTIONS_INIT;
	wms_breaker *b = NULL;
	uint64_t now = 1000 * MS;
	int i;
	(void)state;

	assert_int_equal(wms_config_breaker_options(cfg, &bo), WMS_OK);
	bo.callbacks.clock = fake_now;
	bo.callbacks.payload = &now;
	assert_int_equal(wms_breaker_new(&b, &bo), WMS_OK);
	for (i = 0; i < 6; i++)
		assert_int_equal(call(b, WMS_OUTCOME_SUCCESS, NULL), WMS_OK);
	for (i = 0; i < 4; i++)
		assert_int_equal(call(b, WMS_OUTCOME_FAILURE, NULL), WMS_OK);
	assert_int_equal(wms_breaker_state_get(b), WMS_BREAKER_STATE_CLOSED);
	/* The 11th pushes the oldest success out: 5 of 10. */
	assert_int_equal(call(b, WMS_OUTCOME_FAILURE, NULL), WMS_OK);
	assert_int_equal(wms_breaker_state_get(b), WMS_BREAKER_STATE_OPEN);
	wms_breaker_free(b);
	wms_config_free(cfg);
}

static void breaker_consecutive_from_file(void **state)
{
	wms_config *cfg = load_ok("circuit_breaker:\n  failure_threshold: 3\n"
				  "  open_duration_ms: 1000\n  open_duration_growth_pct: 200\n"
				  "  max_open_duration_ms: 3000\n",
				  NULL);
	wms_breaker_options bo = WMS_BREAKER_OPTIONS_INIT;
	wms_breaker *b = NULL;
	uint64_t now = 1000 * MS;
	uint32_t ra = 0;
	(void)state;

	assert_int_equal(wms_config_breaker_options(cfg, &bo), WMS_OK);
	wms_config_free(cfg);
	assert_null(bo.name); /* not in the file: the breaker's default */
	bo.callbacks.clock = fake_now;
	bo.callbacks.payload = &now;
	assert_int_equal(wms_breaker_new(&b, &bo), WMS_OK);
	assert_int_equal(call(b, WMS_OUTCOME_FAILURE, NULL), WMS_OK);
	assert_int_equal(call(b, WMS_OUTCOME_FAILURE, NULL), WMS_OK);
	assert_int_equal(wms_breaker_state_get(b), WMS_BREAKER_STATE_CLOSED);
	assert_int_equal(call(b, WMS_OUTCOME_FAILURE, NULL), WMS_OK);
	assert_int_equal(wms_breaker_state_get(b), WMS_BREAKER_STATE_OPEN);
	assert_int_equal(call(b, WMS_OUTCOME_SUCCESS, &ra), WMS_ERR_CIRCUIT_OPEN);
	assert_int_equal(ra, 1000);
	/* The probe fails: reopened for 2000 (growth 200 %), then capped at 3000. */
	now += 1000 * MS;
	assert_int_equal(call(b, WMS_OUTCOME_FAILURE, NULL), WMS_OK);
	assert_int_equal(call(b, WMS_OUTCOME_SUCCESS, &ra), WMS_ERR_CIRCUIT_OPEN);
	assert_int_equal(ra, 2000);
	now += 2000 * MS;
	assert_int_equal(call(b, WMS_OUTCOME_FAILURE, NULL), WMS_OK);
	assert_int_equal(call(b, WMS_OUTCOME_SUCCESS, &ra), WMS_ERR_CIRCUIT_OPEN);
	assert_int_equal(ra, 3000);
	wms_breaker_free(b);
}

/* scope: per_operation and the name reach the client's breakers. */
static void client_from_file(void **state)
{
	wms_client_options o = WMS_CLIENT_OPTIONS_INIT;
	wms_config *cfg = load_ok("client:\n  endpoint: http://127.0.0.1:9/wms\n"
				  "circuit_breaker:\n  scope: per_operation\n  name: eu\n"
				  "  mode: time_based\n  sliding_window_size: 30\n",
				  &o);
	wms_client *c = NULL;
	wms_error err;
	wms_breaker_snapshot snap;
	(void)state;

	if (wms_client_new(&c, &o, &err) != WMS_OK)
		fail_msg("%s", err.message);
	wms_config_free(cfg);
	assert_int_equal(wms_client_breakers(NULL, 0, c), 4);
	wms_breaker_snapshot_get(&snap, wms_client_breaker_for(c, "GetStockLevel"));
	assert_string_equal(snap.name, "eu.GetStockLevel");
	wms_client_free(c);
}

/* `yaml` holds keys only version 4 options have room for: a version 3
 * struct is refused, nothing written, nothing read past its end. */
static void refused_for_version_3(const char *yaml)
{
	unsigned char *mem = malloc(sizeof(wms_client_options));
	unsigned char *before = malloc(sizeof(wms_client_options));
	wms_client_options *v3 = (wms_client_options *)(void *)mem;
	wms_config *cfg = load_ok(yaml, NULL);

	memset(mem, 0x5a, sizeof(wms_client_options));
	assert_int_equal(wms_client_options_init(v3, 3), WMS_OK);
	memcpy(before, mem, sizeof(wms_client_options));
	assert_int_equal(wms_config_apply(cfg, v3), WMS_ERR_INVALID_ARG);
	assert_memory_equal(mem, before, sizeof(wms_client_options));
	wms_config_free(cfg);
	/* without the keys, version 3 applies and stays within its bytes */
	cfg = load_ok("client:\n  timeout_ms: 5000\n", NULL);
	assert_int_equal(wms_config_apply(cfg, v3), WMS_OK);
	assert_int_equal(v3->timeout_ms, 5000);
	assert_memory_equal(mem + offsetof(wms_client_options, bulkhead),
			    before + offsetof(wms_client_options, bulkhead),
			    sizeof(wms_client_options) - offsetof(wms_client_options, bulkhead));
	wms_config_free(cfg);
	free(mem);
	free(before);
}

/* The bulkhead keys go into version 4 options. */
static void bulkhead_apply_needs_version_4(void **state)
{
	const char *yaml = "client:\n  timeout_ms: 5000\n  max_concurrent_calls: 8\n"
			   "  max_wait_for_slot_ms: 20\n";
	wms_client_options o = WMS_CLIENT_OPTIONS_INIT;
	wms_config *cfg = load_ok(yaml, &o);
	(void)state;

	assert_int_equal(o.bulkhead.max_concurrent_calls, 8);
	assert_int_equal(o.bulkhead.max_wait_for_slot_ms, 20);
	assert_int_equal(o.timeout_ms, 5000);
	wms_config_free(cfg);
	refused_for_version_3(yaml);
}

/* The read cache keys, each alone, likewise. */
static void read_cache_apply_needs_version_4(void **state)
{
	static const char *const yamls[] = { "client:\n  read_cache_max_entries: 100\n",
					     "client:\n  read_cache_max_age_ms: 5000\n",
					     "client:\n  read_cache_max_bytes: 65536\n" };
	size_t i;
	(void)state;

	for (i = 0; i < sizeof(yamls) / sizeof(yamls[0]); i++) {
		wms_client_options o = WMS_CLIENT_OPTIONS_INIT;
		wms_config *cfg = load_ok(yamls[i], &o);
		assert_int_equal(o.read_cache.max_entries + o.read_cache.max_age_ms +
					 o.read_cache.max_bytes,
				 i == 0 ? 100 : i == 1 ? 5000 : 65536);
		wms_config_free(cfg);
		refused_for_version_3(yamls[i]);
	}
}

/* client.health_listen: an address a person can be told, checked when the
 * file is read by the health server's own parser; absent: NULL. */
static void health_listen_key(void **state)
{
	static const char *const good[] = { "127.0.0.1:9464", "'[::1]:1'", "0.0.0.0:65535",
					    "\"10.1.2.3:8080\"" };
	static const char *const shown[] = { "127.0.0.1:9464", "[::1]:1", "0.0.0.0:65535",
					     "10.1.2.3:8080" };
	static const char *const bad[] = { "localhost:9464", "127.0.0.1:0",  "127.0.0.1:65536",
					   "127.0.0.1",      "'::1:9464'",   "'[::1]'",
					   "127.1:80",       "\"\"",        "'127.0.0.1:80 '" };
	char yaml[256], want[256];
	wms_config *cfg;
	(void)state;

	cfg = load_ok("client:\n  timeout_ms: 5\n", NULL);
	assert_null(wms_config_health_listen(cfg));
	wms_config_free(cfg);
	assert_null(wms_config_health_listen(NULL));
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		snprintf(yaml, sizeof(yaml), "client:\n  health_listen: %s\n", good[i]);
		cfg = load_ok(yaml, NULL);
		assert_string_equal(wms_config_health_listen(cfg), shown[i]);
		wms_config_free(cfg);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(yaml, sizeof(yaml), "client:\n  health_listen: %s\n", bad[i]);
		snprintf(want, sizeof(want), "t.yaml:2: client.health_listen: %s",
			 strcmp(bad[i], "\"\"") == 0 ? "" : "must be ADDRESS:PORT");
		expect_error_like(yaml, want, NULL);
	}
	expect_error_like("client:\n  health_listen: 9464\n",
			  "t.yaml:2: client.health_listen: must be ADDRESS:PORT", "(got 9464)");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(full_file_applied),
		cmocka_unit_test(example_file_loads),
		cmocka_unit_test(example_comment_message_is_real),
		cmocka_unit_test(every_key_good_values),
		cmocka_unit_test(every_key_bad_types),
		cmocka_unit_test(every_key_out_of_range),
		cmocka_unit_test(keys_belong_to_their_block),
		cmocka_unit_test(message_format),
		cmocka_unit_test(duplicates_refused),
		cmocka_unit_test(many_top_level_keys),
		cmocka_unit_test(root_and_documents),
		cmocka_unit_test(blocks_must_be_mappings),
		cmocka_unit_test(syntax_errors),
		cmocka_unit_test(anchors_aliases_tags),
		cmocka_unit_test(cross_field_checks),
		cmocka_unit_test(shared_keys_at_their_bounds),
		cmocka_unit_test(shared_block_structure),
		cmocka_unit_test(shared_redis_url_forms),
		cmocka_unit_test(shared_redis_url_password_never_shown),
		cmocka_unit_test(shared_apply),
		cmocka_unit_test(bulkhead_apply_needs_version_4),
		cmocka_unit_test(health_listen_key),
		cmocka_unit_test(read_cache_apply_needs_version_4),
		cmocka_unit_test(shared_apply_v2_exact_size),
		cmocka_unit_test(shared_options_function),
		cmocka_unit_test(shared_client_from_file),
		cmocka_unit_test(example_shared_block_is_real),
		cmocka_unit_test(apply_on_top_of_values),
		cmocka_unit_test(api_arguments),
		cmocka_unit_test(file_errors),
		cmocka_unit_test(deep_nesting),
		cmocka_unit_test(allocation_failures),
		cmocka_unit_test(breaker_count_based_from_file),
		cmocka_unit_test(breaker_count_based_below_threshold),
		cmocka_unit_test(breaker_consecutive_from_file),
		cmocka_unit_test(client_from_file),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
