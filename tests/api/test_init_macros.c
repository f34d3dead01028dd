/* Every public _INIT macro against its struct: positional values that no
 * longer line up with the fields (a version landing in another field, a
 * group's _INIT in the wrong slot) show as bytes that differ from the
 * struct zeroed with its version fields set, which is also what each
 * *_options_init() function must give. Static objects: their padding is
 * zero too (C11 6.7.9p10), so whole objects compare with memcmp. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include "wms/wms.h"
#include "wms/sys/alloc.h"

#define SAME(a, b) assert_memory_equal(&(a), &(b), sizeof(a))

static void groups_are_zero(void **state)
{
	static const wms_retry_options retry = WMS_RETRY_OPTIONS_INIT;
	static const wms_wsse_options wsse = WMS_WSSE_OPTIONS_INIT;
	static const wms_client_callbacks ccb = WMS_CLIENT_CALLBACKS_INIT;
	static const wms_breaker_callbacks bcb = WMS_BREAKER_CALLBACKS_INIT;
	static const wms_fallbacks fb = WMS_FALLBACKS_INIT;
	static wms_retry_options zr;
	static wms_wsse_options zw;
	static wms_client_callbacks zc;
	static wms_breaker_callbacks zb;
	static wms_fallbacks zf;
	(void)state;
	SAME(retry, zr);
	SAME(wsse, zw);
	SAME(ccb, zc);
	SAME(bcb, zb);
	SAME(fb, zf);
}

static void breaker_options(void **state)
{
	static const wms_breaker_options init = WMS_BREAKER_OPTIONS_INIT;
	static wms_breaker_options want, by_fn;
	(void)state;
	want.version = WMS_BREAKER_OPTIONS_VERSION;
	SAME(init, want);
	assert_int_equal(wms_breaker_options_init(&by_fn, WMS_BREAKER_OPTIONS_VERSION), WMS_OK);
	SAME(by_fn, want);
}

static void curl_options(void **state)
{
	static const wms_curl_transport_options init = WMS_CURL_TRANSPORT_OPTIONS_INIT;
	static wms_curl_transport_options want, by_fn;
	(void)state;
	want.version = WMS_CURL_TRANSPORT_OPTIONS_VERSION;
	SAME(init, want);
	assert_int_equal(wms_curl_transport_options_init(&by_fn, WMS_CURL_TRANSPORT_OPTIONS_VERSION),
			 WMS_OK);
	SAME(by_fn, want);
}

static void client_options(void **state)
{
	static const wms_client_options init = WMS_CLIENT_OPTIONS_INIT;
	static wms_client_options want, by_fn;
	(void)state;
	want.version = WMS_CLIENT_OPTIONS_VERSION;
	want.breaker_options.version = WMS_BREAKER_OPTIONS_VERSION;
	want.curl.version = WMS_CURL_TRANSPORT_OPTIONS_VERSION;
	want.shared.version = WMS_SHARED_OPTIONS_VERSION;
	SAME(init, want);
	assert_int_equal(wms_client_options_init(&by_fn, WMS_CLIENT_OPTIONS_VERSION), WMS_OK);
	SAME(by_fn, want);
	/* a program built with version 2 has no `shared`: not a byte of it is written */
	memset(&by_fn, 0xA5, sizeof(by_fn));
	assert_int_equal(wms_client_options_init(&by_fn, 2), WMS_OK);
	assert_int_equal(by_fn.version, 2);
	assert_int_equal(((const unsigned char *)&by_fn.shared)[0], 0xA5);
	assert_int_equal(((const unsigned char *)&by_fn)[sizeof(by_fn) - 1], 0xA5);
	/* and the non-zero defaults of the enums are their zero values */
	assert_int_equal(init.soap_version, WMS_SOAP_11);
	assert_int_equal(init.breaker_scope, WMS_BREAKER_SCOPE_PER_CLIENT);
	assert_int_equal(init.breaker_options.mode, WMS_BREAKER_MODE_CONSECUTIVE);
	assert_int_equal(init.wsse.mode, WMS_WSSE_NONE);
}

static void other_options(void **state)
{
	static const wms_order order = WMS_ORDER_INIT;
	static const wms_replay_options replay = WMS_REPLAY_OPTIONS_INIT;
	static const wms_record_options record = WMS_RECORD_OPTIONS_INIT;
	static const wms_global_options global = WMS_GLOBAL_OPTIONS_INIT;
	static const wms_shared_options shared = WMS_SHARED_OPTIONS_INIT;
	static wms_shared_options zs, fs;
	static wms_order zo;
	static wms_replay_options zr, fr;
	static wms_record_options zc, fc;
	static wms_global_options zg, fg;
	(void)state;
	zo.version = WMS_ORDER_VERSION;
	SAME(order, zo);
	assert_int_equal(order.priority, WMS_PRIORITY_STANDARD);
	zr.version = WMS_REPLAY_OPTIONS_VERSION;
	SAME(replay, zr);
	assert_int_equal(wms_replay_options_init(&fr, WMS_REPLAY_OPTIONS_VERSION), WMS_OK);
	SAME(fr, zr);
	zc.version = WMS_RECORD_OPTIONS_VERSION;
	SAME(record, zc);
	assert_int_equal(wms_record_options_init(&fc, WMS_RECORD_OPTIONS_VERSION), WMS_OK);
	SAME(fc, zc);
	zg.version = WMS_GLOBAL_OPTIONS_VERSION;
	SAME(global, zg);
	assert_int_equal(wms_global_options_init(&fg, WMS_GLOBAL_OPTIONS_VERSION), WMS_OK);
	SAME(fg, zg);
	zs.version = WMS_SHARED_OPTIONS_VERSION;
	SAME(shared, zs);
	assert_int_equal(wms_shared_options_init(&fs, WMS_SHARED_OPTIONS_VERSION), WMS_OK);
	SAME(fs, zs);
}

/* The version macros agree with each other, with wms_version() and with
 * the project's version in meson.build (WMS_PROJECT_VERSION, from
 * tests/api/meson.build), which names the package and the pkg-config file. */
static void version_macros_agree(void **state)
{
	char v[32];
	(void)state;
	snprintf(v, sizeof(v), "%d.%d.%d", WMS_VERSION_MAJOR, WMS_VERSION_MINOR, WMS_VERSION_PATCH);
	assert_string_equal(v, WMS_VERSION);
	assert_string_equal(wms_version(), WMS_VERSION);
	assert_string_equal(WMS_VERSION, WMS_PROJECT_VERSION);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(groups_are_zero),
		cmocka_unit_test(breaker_options),
		cmocka_unit_test(curl_options),
		cmocka_unit_test(client_options),
		cmocka_unit_test(other_options),
		cmocka_unit_test(version_macros_agree),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
