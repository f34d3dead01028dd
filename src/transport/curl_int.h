/* The libcurl transport's insides shared by its two files: curl.c (the
 * transfer) and curl_errors.c (what a failure means). */
#ifndef WMS_TRANSPORT_CURL_INT_H
#define WMS_TRANSPORT_CURL_INT_H

#include <stdint.h>
#include <curl/curl.h>
#include "wms/sys/transport.h"

/* What the callbacks of one call share. */
struct call {
	CURL *h;
	wms_http_response *resp;
	/* First failure of a callback (TOO_LARGE, NOMEM), WMS_OK if none. */
	wms_status cb_status;
	/* Body bytes have arrived for the current response: later header lines
	 * are trailers and must not replace the Content-Type. */
	int in_body;
	/* Silence guard (see on_progress). */
	uint64_t stall_ns;
	uint64_t last_move_ns;
	curl_off_t moved;
	curl_off_t header_bytes;
	int connected;
	int stalled;
	/* Sockets opened, and whether a resend was refused (see on_sockopt). */
	int sockets;
	int resend_refused;
	/* The CURLcode came from the transfer (not from setting it up), and
	 * whether a libcurl allocation failed on this thread meanwhile (seen
	 * only with libcurl routed through the allocation seam). */
	int transferred;
	int lib_alloc_failed;
};

/* Set `err` for a failed transfer (or setopt): status, delivery, cause,
 * curl_code and a message without the URL's credentials; `sent`: the
 * whole request was written. Returns the status. */
wms_status wms__curl_fail(wms_error *err, CURLcode rc, int sent, const struct call *c,
			  const char *errbuf, const char *url, long http_status);

/* Whether libcurl's allocations go through the seam (wms_global_init). */
int wms__curl_routed(void);

#endif
