/*
 * wmsctl's output helpers: the exit-code table, the call-log outcome (checked
 * against the library's own wms__default_outcome for every status, fault
 * code and HTTP status that matters), and JSON / terminal escaping.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "client/classify.h"
#include "wmsctl.h"

static const char *const fault_codes[] = { "", "Server", "Server.Busy", "Receiver", "Client",
					   "Client.Validation", "Sender", "VersionMismatch",
					   "MustUnderstand", "ServerX", "Serve" };
static const long http_statuses[] = { 0, 200, 302, 400, 404, 429, 499, 500, 502, 503, 599 };

#define N(a) (sizeof(a) / sizeof((a)[0]))

static void outcome_mirrors_library(void **state)
{
	(void)state;
	for (int st = WMS_OK; st <= WMS_ERR_BULKHEAD_FULL; st++) {
		for (size_t f = 0; f < N(fault_codes); f++) {
			for (size_t h = 0; h < N(http_statuses); h++) {
				wms_error err;
				int record = -1;
				wms_outcome lib;
				const char *want, *got;

				memset(&err, 0, sizeof(err));
				err.status = (wms_status)st;
				err.http_status = http_statuses[h];
				strcpy(err.fault_code, fault_codes[f]);
				lib = wms__default_outcome(&err, &record);
				got = ctl_breaker_outcome((wms_status)st, &err);
				if (st == WMS_ERR_CIRCUIT_OPEN || st == WMS_ERR_BULKHEAD_FULL) {
					assert_null(got); /* never made: not logged */
					continue;
				}
				/* a permit handed back counts like an ignored outcome */
				want = !record ? "ignore"
				       : lib == WMS_OUTCOME_SUCCESS ? "ok"
				       : lib == WMS_OUTCOME_FAILURE ? "fail" : "ignore";
				if (!got || strcmp(got, want) != 0)
					fail_msg("status %s fault '%s' http %ld: wmsctl says %s, libwms %s",
						 wms_status_name((wms_status)st), fault_codes[f],
						 http_statuses[h], got ? got : "(null)", want);
			}
		}
	}
}

static int code_for(wms_status st, const char *fault, long http)
{
	wms_error err;
	memset(&err, 0, sizeof(err));
	err.status = st;
	err.http_status = http;
	strcpy(err.fault_code, fault);
	return ctl_exit_code(st, &err);
}

static void exit_codes(void **state)
{
	(void)state;
	assert_int_equal(code_for(WMS_OK, "", 200), 0);
	assert_int_equal(code_for(WMS_ERR_NOMEM, "", 0), 1);
	assert_int_equal(code_for(WMS_ERR_INTERNAL, "", 0), 1);
	assert_int_equal(code_for(WMS_ERR_INVALID_ARG, "", 0), 2);
	assert_int_equal(code_for(WMS_ERR_CONFIG, "", 0), 2);
	assert_int_equal(code_for(WMS_ERR_CIRCUIT_OPEN, "", 0), 3);
	assert_int_equal(code_for(WMS_ERR_BULKHEAD_FULL, "", 0), 3);
	assert_int_equal(code_for(WMS_ERR_CONNECT, "", 0), 4);
	assert_int_equal(code_for(WMS_ERR_TLS, "", 0), 4);
	assert_int_equal(code_for(WMS_ERR_TIMEOUT, "", 0), 5);
	assert_int_equal(code_for(WMS_ERR_TRANSPORT, "", 0), 5);
	assert_int_equal(code_for(WMS_ERR_SOAP_FAULT, "Client", 500), 6);
	assert_int_equal(code_for(WMS_ERR_SOAP_FAULT, "Sender", 400), 6);
	assert_int_equal(code_for(WMS_ERR_SOAP_FAULT, "MustUnderstand", 500), 6);
	assert_int_equal(code_for(WMS_ERR_SOAP_FAULT, "ServerX", 500), 7); /* unknown code: the WMS's trouble */
	assert_int_equal(code_for(WMS_ERR_SOAP_FAULT, "", 500), 7);
	assert_int_equal(code_for(WMS_ERR_SOAP_FAULT, "DataEncodingUnknown", 500), 6);
	assert_int_equal(code_for(WMS_ERR_SOAP_FAULT, "Server", 500), 7);
	assert_int_equal(code_for(WMS_ERR_SOAP_FAULT, "Server.Overloaded", 500), 7);
	assert_int_equal(code_for(WMS_ERR_SOAP_FAULT, "Receiver", 500), 7);
	assert_int_equal(code_for(WMS_ERR_HTTP, "", 404), 7);
	assert_int_equal(code_for(WMS_ERR_HTTP, "", 502), 7);
	assert_int_equal(code_for(WMS_ERR_NOT_XML, "", 200), 8);
	assert_int_equal(code_for(WMS_ERR_TRUNCATED, "", 200), 8);
	assert_int_equal(code_for(WMS_ERR_UNEXPECTED_REPLY, "", 200), 8);
	assert_int_equal(code_for(WMS_ERR_TOO_LARGE, "", 200), 8);
	assert_int_equal(code_for(WMS_ERR_UNSAFE_XML, "", 200), 8);
	assert_int_equal(code_for(WMS_ERR_FIXTURE, "", 0), 9);
	assert_int_equal(code_for((wms_status)999, "", 0), 1);
}

/* What a printer wrote, as a NUL-terminated string (caller frees). */
static char *capture(void (*put)(FILE *, const char *), const char *in)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	put(f, in);
	assert_int_equal(fclose(f), 0);
	return buf;
}

static void expect_json(const char *in, const char *want)
{
	char *got = capture(ctl_put_json, in);
	assert_string_equal(got, want);
	free(got);
}

static void json_escaping(void **state)
{
	(void)state;
	expect_json("", "\"\"");
	expect_json("plain text", "\"plain text\"");
	expect_json("a \"quoted\" \\path\\", "\"a \\\"quoted\\\" \\\\path\\\\\"");
	expect_json("line\nnext\ttab\r\x01\x1f\x7f", "\"line\\nnext\\ttab\\u000d\\u0001\\u001f\\u007f\"");
	expect_json("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x93\xa6", "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x93\xa6\"");
	/* invalid UTF-8: each bad byte becomes U+FFFD, nothing is read past the end */
	expect_json("\xff", "\"\\ufffd\"");
	expect_json("ok\xc3", "\"ok\\ufffd\"");
	expect_json("\xe2\x82", "\"\\ufffd\\ufffd\"");
	expect_json("\xc0\xaf", "\"\\ufffd\\ufffd\"");             /* overlong '/' */
	expect_json("\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\"");   /* a surrogate */
	expect_json("\xf4\x90\x80\x80", "\"\\ufffd\\ufffd\\ufffd\\ufffd\""); /* > U+10FFFF */
	expect_json("\x80x", "\"\\ufffdx\"");
}

static void safe_text(void **state)
{
	char *got;

	(void)state;
	got = capture(ctl_put_safe, "WMS-1\x1b[31m\n\x7f" "end");
	assert_string_equal(got, "WMS-1?[31m??end");
	free(got);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(outcome_mirrors_library),
		cmocka_unit_test(exit_codes),
		cmocka_unit_test(json_escaping),
		cmocka_unit_test(safe_text),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
