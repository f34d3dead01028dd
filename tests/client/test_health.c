/* Health JSON and Prometheus text for a client's breakers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "bounds.h"
#include "client_fx.h"
#include "wms/health.h"
#include "wms/health_server.h"
#include "wms/breaker.h"

/* Five failures open the breaker; the sixth call is rejected. */
static void trip_submit(fx *x)
{
	fx_refused_submits(x, 6);
}

static void json_document(void **state)
{
	wms_client_options o = WMS_CLIENT_OPTIONS_INIT;
	char *doc = NULL;
	fx x;
	(void)state;
	o.breaker_scope = WMS_BREAKER_SCOPE_PER_OPERATION;
	o.breaker_options.name = "wms \"east\"";
	x = setup_client_with(&o);
	assert_int_equal(wms_client_health_json(&doc, x.c), WMS_OK);
	assert_non_null(strstr(doc, "{\"status\":\"UP\",\"breakers\":[{\"name\":\"wms \\\"east\\\".SubmitOrder\""));
	assert_non_null(strstr(doc, "\"failure_rate\":null"));
	wms_free(doc);
	trip_submit(&x);
	assert_int_equal(wms_client_health_json(&doc, x.c), WMS_OK);
	assert_non_null(strstr(doc, "\"status\":\"DEGRADED\""));
	assert_non_null(strstr(doc, "\"state\":\"OPEN\",\"state_value\":1"));
	assert_non_null(strstr(doc, "\"retry_after_ms\":30000"));
	assert_non_null(strstr(doc, "\"permitted\":5,\"rejected\":1,\"successes\":0,\"failures\":5"));
	wms_free(doc);
	wms_client_free(x.c);
}

static void all_open_is_down(void **state)
{
	char *doc = NULL;
	fx x = setup_client(WMS_SOAP_11);
	(void)state;
	trip_submit(&x);
	assert_int_equal(wms_client_health_json(&doc, x.c), WMS_OK);
	assert_non_null(strstr(doc, "\"status\":\"DOWN\""));
	wms_free(doc);
	wms_client_free(x.c);
}

static void prometheus_text(void **state)
{
	char *text = NULL;
	fx x = setup_client(WMS_SOAP_11);
	(void)state;
	trip_submit(&x);
	assert_int_equal(wms_client_health_prometheus(&text, x.c, NULL), WMS_OK);
	assert_non_null(strstr(text, "# TYPE fulfillment_circuit_breaker_state gauge\n"));
	assert_non_null(strstr(text, "fulfillment_circuit_breaker_state{breaker=\"wms\"} 1\n"));
	assert_non_null(strstr(text, "fulfillment_circuit_breaker_calls_total{breaker=\"wms\",kind=\"failures\"} 5\n"));
	assert_non_null(strstr(text, "fulfillment_circuit_breaker_failure_rate_percent{breaker=\"wms\"} NaN\n"));
	assert_non_null(strstr(text, "fulfillment_circuit_breaker_retry_after_seconds{breaker=\"wms\"} 30\n"));
	wms_free(text);
	assert_int_equal(wms_client_health_prometheus(&text, x.c, "bad prefix"), WMS_ERR_INVALID_ARG);
	assert_null(text);
	assert_int_equal(wms_client_health_prometheus(&text, x.c, "shop_wms"), WMS_OK);
	assert_non_null(strstr(text, "shop_wms_circuit_breaker_state{breaker=\"wms\"} 1\n"));
	wms_free(text);
	assert_int_equal(wms_health_json(NULL, NULL, 0), WMS_ERR_INVALID_ARG);
	assert_int_equal(wms_client_health_json(&text, NULL), WMS_ERR_INVALID_ARG);
	wms_client_free(x.c);
}

/* A prefix is at most 64 bytes: 64 is used whole (in the TYPE line and
 * the state sample), 65 is refused (INVALID_ARG, nothing handed out),
 * never cut to 64; twice, so a refusal leaves nothing behind that
 * changes the next answer. */
static void prometheus_prefix_of_64_bytes_at_most(void **state)
{
	char p64[65], p65[66], want[160], *text = NULL;
	fx x = setup_client(WMS_SOAP_11);
	int round;
	(void)state;
	fill_text(p64, 64, 'p', 'x', 'z');
	fill_text(p65, 65, 'p', 'x', 'z');
	trip_submit(&x);
	for (round = 0; round < 2; round++) {
		assert_int_equal(wms_client_health_prometheus(&text, x.c, p64), WMS_OK);
		snprintf(want, sizeof(want), "# TYPE %s_circuit_breaker_state gauge\n", p64);
		assert_non_null(strstr(text, want));
		snprintf(want, sizeof(want), "\n%s_circuit_breaker_state{breaker=\"wms\"} 1\n", p64);
		assert_non_null(strstr(text, want));
		wms_free(text);
		text = (char *)&text; /* must be set to NULL on refusal */
		assert_int_equal(wms_client_health_prometheus(&text, x.c, p65), WMS_ERR_INVALID_ARG);
		assert_null(text);
	}
	wms_client_free(x.c);
}

/* The Prometheus prefix's check is shared with the client's metric_prefix
 * (one function, two sets): here, every byte 0x01-0xFF at offset 0, 1 and
 * 2 of a 3-byte prefix against the test's own copy of the set, twice each:
 * [A-Za-z_:] anywhere, a digit past the first byte, nothing else ('.' and
 * '-', which the client's dotted names take, included). */
static void prometheus_prefix_bytes(void **state)
{
	static const char first[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_:";
	char want[64], *text;
	fx x = setup_client(WMS_SOAP_11);
	int b, at, round;
	(void)state;
	for (b = 1; b <= 0xFF; b++)
		for (at = 0; at < 3; at++) {
			char p[4] = "pqz";
			int ok = strchr(first, b) || (at > 0 && b >= '0' && b <= '9');
			p[at] = (char)b;
			for (round = 0; round < 2; round++) {
				text = (char *)&text; /* must be set to NULL on refusal */
				if (!ok) {
					assert_int_equal(wms_client_health_prometheus(&text, x.c, p),
							 WMS_ERR_INVALID_ARG);
					assert_null(text);
					continue;
				}
				assert_int_equal(wms_client_health_prometheus(&text, x.c, p), WMS_OK);
				snprintf(want, sizeof(want), "# TYPE %s_circuit_breaker_state gauge\n",
					 p);
				assert_non_null(strstr(text, want));
				wms_free(text);
			}
		}
	wms_client_free(x.c);
}

/* wms_health_server_start echoed a refused prefix whole in its message: a
 * newline or an escape of the caller's went into a one-line message. Now
 * its printable ASCII start (at most 65 bytes, "..." when cut) and the
 * first bad byte by value and offset, or its length when it is only too
 * long; twice each, no server made. Refused before anything is bound, so
 * no socket is opened; skipped in a build without the server. */
static void health_server_prefix_message(void **state)
{
	static const char *const rows[][2] = {
		{ "shop\nwms", "'shop...' is not [a-zA-Z_:][a-zA-Z0-9_:]{0,63} "
			       "(byte 0x0A at offset 4)" },
		{ "\x1b[2J", "'...' is not [a-zA-Z_:][a-zA-Z0-9_:]{0,63} (byte 0x1B at offset 0)" },
		{ "9lives", "'9lives' is not [a-zA-Z_:][a-zA-Z0-9_:]{0,63} "
			    "(byte 0x39 at offset 0)" },
		{ "shop.wms", "'shop.wms' is not [a-zA-Z_:][a-zA-Z0-9_:]{0,63} "
			      "(byte 0x2E at offset 4)" },
		{ "caf\xc3\xa9", "'caf...' is not [a-zA-Z_:][a-zA-Z0-9_:]{0,63} "
				 "(byte 0xC3 at offset 3)" },
		{ "", "'' is not [a-zA-Z_:][a-zA-Z0-9_:]{0,63} (0 bytes)" },
	};
	char p65[66], p300[301], msg[WMS_ERROR_MESSAGE_MAX];
	wms_health_server *srv;
	wms_error err;
	fx x = setup_client(WMS_SOAP_11);
	const size_t nrows = sizeof(rows) / sizeof(rows[0]);
	size_t i, k;
	int round;
	(void)state;
	fill_text(p65, 65, 'p', 'x', 'z');
	fill_text(p300, 300, 'p', 'x', 'z');
	for (i = 0; i < nrows + 2; i++) /* the rows, then 65 and 300 bytes */
		for (round = 0; round < 2; round++) {
			const char *prefix = i < nrows ? rows[i][0] : i == nrows ? p65 : p300;
			srv = (wms_health_server *)&srv; /* must be set to NULL */
			assert_int_equal(wms_health_server_start(&srv, &x.c, 1, "127.0.0.1:0", prefix,
								 &err),
					 WMS_ERR_INVALID_ARG);
			assert_null(srv);
			if (strstr(err.message, "built without the health server"))
				skip();
			if (i < nrows)
				snprintf(msg, sizeof(msg), "health server: metric prefix %s", rows[i][1]);
			else
				snprintf(msg, sizeof(msg),
					 "health server: metric prefix '%.65s%s' is not "
					 "[a-zA-Z_:][a-zA-Z0-9_:]{0,63} (%s bytes)",
					 prefix, i == nrows ? "" : "...", i == nrows ? "65" : "300");
			assert_string_equal(err.message, msg);
			for (k = 0; err.message[k]; k++)
				assert_true((unsigned char)err.message[k] >= 0x20 &&
					    (unsigned char)err.message[k] < 0x7f);
		}
	wms_client_free(x.c);
}

/* A count-based breaker at 1 failure of 3 (33.33 %): its rates as the
 * documents print them, under whatever LC_NUMERIC is in force. */
static void rates_documents(char **json, char **prom)
{
	wms_breaker_options o = WMS_BREAKER_OPTIONS_INIT;
	wms_breaker *b;
	wms_breaker_permit p;
	int i;
	o.mode = WMS_BREAKER_MODE_COUNT_BASED;
	o.sliding_window_size = 10;
	o.minimum_number_of_calls = 3;
	o.failure_rate_threshold = 90;
	o.name = "rates";
	assert_int_equal(wms_breaker_new(&b, &o), WMS_OK);
	for (i = 0; i < 3; i++) {
		assert_int_equal(wms_breaker_acquire(&p, b, NULL), WMS_OK);
		wms_breaker_record(b, &p, i ? WMS_OUTCOME_SUCCESS : WMS_OUTCOME_FAILURE);
	}
	assert_int_equal(wms_health_json(json, &b, 1), WMS_OK);
	assert_int_equal(wms_health_prometheus(prom, &b, 1, NULL), WMS_OK);
	wms_breaker_free(b);
}

/* JSON and Prometheus numbers use '.', also when the application runs
 * under a locale whose decimal separator is ',' (de_DE, built for the test
 * with localedef; skipped where its definitions are not installed). */
static void numbers_ignore_the_locale(void **state)
{
	char dir[] = "/tmp/wms-locale-XXXXXX", cmd[256], probe[16], *json = NULL, *prom = NULL;
	int active;
	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(cmd, sizeof(cmd), "localedef -i de_DE -f UTF-8 %s/de_DE.UTF-8 >/dev/null 2>&1",
		 dir);
	if (system(cmd) == -1) /* its status may be 1 for mere warnings */
		skip();
	setenv("LOCPATH", dir, 1);
	active = setlocale(LC_NUMERIC, "de_DE.UTF-8") != NULL;
	snprintf(probe, sizeof(probe), "%.1f", 1.5);
	if (active && strcmp(probe, "1,5") != 0)
		active = 0;
	if (active) {
		rates_documents(&json, &prom);
		setlocale(LC_NUMERIC, "C");
	}
	unsetenv("LOCPATH");
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
	if (!active)
		skip(); /* no de_DE definitions here: nothing to show */
	assert_non_null(strstr(json, "\"failure_rate\":33.33,"));
	assert_null(strstr(json, "33,33"));
	assert_non_null(strstr(prom, "failure_rate_percent{breaker=\"rates\"} 33.3"));
	assert_null(strstr(prom, "33,3"));
	wms_free(json);
	wms_free(prom);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(json_document),
		cmocka_unit_test(all_open_is_down),
		cmocka_unit_test(prometheus_text),
		cmocka_unit_test(prometheus_prefix_of_64_bytes_at_most),
		cmocka_unit_test(prometheus_prefix_bytes),
		cmocka_unit_test(health_server_prefix_message),
		cmocka_unit_test(numbers_ignore_the_locale),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
