/*
 * A libwms built without the health server (-Dhealth_server=disabled):
 * wms_health_server_start exists and refuses, whatever it is asked, with
 * INVALID_ARG and a message that says why; the other two functions are
 * safe. In a build with the server this runs against
 * health_server_without_mhd.c, the same source compiled as that build
 * compiles it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "wms/wms.h"
#include "wms/health_server.h"

static void start_refuses_saying_why(void **state)
{
	static const char *const listen[] = { "127.0.0.1:0", NULL, "[::1]:0", "not an address" };
	wms_client_options o = WMS_CLIENT_OPTIONS_INIT;
	wms_client *c = NULL;
	wms_error err;
	(void)state;

	o.endpoint = "http://127.0.0.1:1/wms"; /* nothing is sent */
	assert_int_equal(wms_client_new(&c, &o, &err), WMS_OK);
	for (size_t i = 0; i < sizeof(listen) / sizeof(listen[0]); i++) {
		wms_health_server *srv = (wms_health_server *)&err; /* must come back NULL */
		memset(&err, 0, sizeof(err));
		assert_int_equal(wms_health_server_start(&srv, &c, 1, listen[i], NULL, &err),
				 WMS_ERR_INVALID_ARG);
		assert_null(srv);
		assert_int_equal(err.status, WMS_ERR_INVALID_ARG);
		assert_int_equal(err.delivery, WMS_DELIVERY_NOT_SENT);
		assert_string_equal(err.message, "built without the health server (libmicrohttpd)");
	}
	/* err may be NULL; out may not */
	{
		wms_health_server *srv = NULL;
		assert_int_equal(wms_health_server_start(&srv, &c, 1, NULL, NULL, NULL),
				 WMS_ERR_INVALID_ARG);
		assert_null(srv);
		assert_int_equal(wms_health_server_start(NULL, &c, 1, NULL, NULL, &err),
				 WMS_ERR_INVALID_ARG);
		assert_string_equal(err.message, "health server: out is NULL");
	}
	assert_int_equal(wms_health_server_port(NULL), 0);
	wms_health_server_stop(NULL);
	wms_client_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(start_refuses_saying_why),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
