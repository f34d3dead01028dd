/* A client from options, or the test fails saying why (cmocka). Header
 * only, for cmocka tests that expect wms_client_new to succeed. */
#ifndef WMS_TEST_CLIENT_NEW_H
#define WMS_TEST_CLIENT_NEW_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "wms/client.h"

static inline wms_client *must_client_new(const wms_client_options *o)
{
	wms_client *c = NULL;
	wms_error err;
	if (wms_client_new(&c, o, &err) != WMS_OK)
		fail_msg("wms_client_new: %s", err.message);
	return c;
}

#endif
