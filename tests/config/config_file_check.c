/*
 * One SLA file under tests/data/config/good or tests/data/config/bad, named on the
 * command line (meson registers one test per file):
 *   config_file_check good FILE   loads; every "# expect: KEY = VALUE" line
 *                                 holds in the applied client options, and
 *                                 a breaker and a client can be made from them
 *   config_file_check bad FILE    fails with WMS_ERR_CONFIG, delivery NOT_SENT,
 *                                 a one-line message "FILE:N: ..." where N is
 *                                 "# expect-line: N" and "# expect: TEXT" is in it
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "cfg_util.h"
#include "wms/config.h"

static const char *mode_arg, *path_arg;

/* Calls fn(line) for every "# <tag>: ..." line of the file, with the text after it. */
static int for_each_expect(const char *text, const char *tag,
			   void (*fn)(const char *value, size_t n, void *ctx), void *ctx)
{
	char prefix[64];
	const char *p = text;
	int count = 0;

	snprintf(prefix, sizeof(prefix), "# %s: ", tag);
	while (p && *p) {
		const char *end = strchr(p, '\n');
		size_t n = end ? (size_t)(end - p) : strlen(p);
		if (n && p[n - 1] == '\r')
			n--;
		if (n >= strlen(prefix) && !strncmp(p, prefix, strlen(prefix))) {
			fn(p + strlen(prefix), n - strlen(prefix), ctx);
			count++;
		}
		p = end ? end + 1 : NULL;
	}
	return count;
}

static void check_good_value(const char *v, size_t n, void *ctx)
{
	const wms_client_options *o = ctx;
	char line[512], got[512];
	char *eq;

	assert_true(n < sizeof(line));
	memcpy(line, v, n);
	line[n] = '\0';
	eq = strstr(line, " = ");
	assert_non_null(eq);
	*eq = '\0';
	if (cfg_describe(o, line, got, sizeof(got)) != 0)
		fail_msg("unknown key in expectation: %s", line);
	if (strcmp(got, eq + 3) != 0)
		fail_msg("%s: expected %s, got %s", line, eq + 3, got);
}

static void check_good(void)
{
	wms_config *cfg = NULL;
	wms_error err;
	wms_client_options o = WMS_CLIENT_OPTIONS_INIT;
	wms_breaker_options bo = WMS_BREAKER_OPTIONS_INIT;
	wms_breaker *b = NULL;
	wms_client *c = NULL;
	size_t len = 0;
	char *text = cfg_read_file(path_arg, &len);

	assert_non_null(text);
	if (wms_config_load_yaml(&cfg, path_arg, &err) != WMS_OK)
		fail_msg("%s", err.message);
	assert_int_equal(err.status, WMS_OK);
	assert_string_equal(err.message, "");
	assert_int_equal(wms_config_apply(cfg, &o), WMS_OK);
	assert_true(for_each_expect(text, "expect", check_good_value, &o) > 0);
	/* What the file allows, the breaker and the client accept. */
	assert_int_equal(wms_config_breaker_options(cfg, &bo), WMS_OK);
	assert_int_equal(wms_breaker_new(&b, &bo), WMS_OK);
	wms_breaker_free(b);
	if (!o.endpoint)
		o.endpoint = "http://127.0.0.1:9/wms";
	if (wms_client_new(&c, &o, &err) != WMS_OK)
		fail_msg("wms_client_new: %s", err.message);
	wms_client_free(c);
	wms_config_free(cfg);
	free(text);
}

typedef struct bad_expect {
	char text[256];
	long line;
	int have_line, have_text;
} bad_expect;

static void get_line(const char *v, size_t n, void *ctx)
{
	bad_expect *e = ctx;
	char buf[32];
	assert_true(n < sizeof(buf));
	memcpy(buf, v, n);
	buf[n] = '\0';
	e->line = strtol(buf, NULL, 10);
	e->have_line = 1;
}

static void get_text(const char *v, size_t n, void *ctx)
{
	bad_expect *e = ctx;
	assert_true(n < sizeof(e->text));
	memcpy(e->text, v, n);
	e->text[n] = '\0';
	e->have_text = 1;
}

static void check_bad(void)
{
	wms_config *cfg = (wms_config *)&cfg; /* must be reset to NULL */
	wms_error err;
	bad_expect e;
	char prefix[4200];
	size_t len = 0;
	char *text = cfg_read_file(path_arg, &len);

	assert_non_null(text);
	memset(&e, 0, sizeof(e));
	for_each_expect(text, "expect-line", get_line, &e);
	for_each_expect(text, "expect", get_text, &e);
	assert_true(e.have_line && e.have_text);
	assert_true(e.line >= 1);

	assert_int_equal(wms_config_load_yaml(&cfg, path_arg, &err), WMS_ERR_CONFIG);
	assert_null(cfg);
	printf("# %s\n", err.message);
	assert_int_equal(err.status, WMS_ERR_CONFIG);
	assert_int_equal(err.delivery, WMS_DELIVERY_NOT_SENT);
	assert_null(strchr(err.message, '\n'));
	snprintf(prefix, sizeof(prefix), "%s:%ld: ", path_arg, e.line);
	if (strncmp(err.message, prefix, strlen(prefix)) != 0)
		fail_msg("expected the message to start with \"%s\": %s", prefix, err.message);
	if (!strstr(err.message, e.text))
		fail_msg("expected \"%s\" in: %s", e.text, err.message);

	/* The same bytes from memory give the same message under another name. */
	assert_int_equal(wms_config_parse_yaml(&cfg, text, len, "mem.yaml", &err), WMS_ERR_CONFIG);
	assert_null(cfg);
	snprintf(prefix, sizeof(prefix), "mem.yaml:%ld: ", e.line);
	assert_memory_equal(err.message, prefix, strlen(prefix));
	assert_non_null(strstr(err.message, e.text));
	free(text);
}

static void file_check(void **state)
{
	(void)state;
	if (!strcmp(mode_arg, "good"))
		check_good();
	else
		check_bad();
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = { cmocka_unit_test(file_check) };
	if (argc != 3 || (strcmp(argv[1], "good") && strcmp(argv[1], "bad"))) {
		fprintf(stderr, "usage: %s good|bad FILE\n", argv[0]);
		return 2;
	}
	mode_arg = argv[1];
	path_arg = argv[2];
	return cmocka_run_group_tests_name(path_arg, tests, NULL, NULL);
}
