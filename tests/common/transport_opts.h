/* Tests of libcurl's transport: its options are fixed when it is made, so a
 * test that changes them gets a new transport for its next call. */
#ifndef WMS_TEST_TRANSPORT_OPTS_H
#define WMS_TEST_TRANSPORT_OPTS_H

#include "wms/sys/transport.h"

typedef struct tt_transport {
	wms_transport *tp;
	wms_curl_transport_options want; /* what the next call's transport has */
	wms_curl_transport_options made; /* tp's (copies, owned) */
} tt_transport;

/* WMS_CURL_TRANSPORT_OPTIONS_INIT, nothing made yet. */
void tt_transport_init(tt_transport *t);

/* Make tp anew when `want` differs from what it was made with (or there is
 * none): WMS_OK, or what wms_curl_transport_create said (err filled). */
wms_status tt_transport_apply(tt_transport *t, wms_error *err);

/* Free tp (its connections close) and the copies. */
void tt_transport_free(tt_transport *t);

#endif
