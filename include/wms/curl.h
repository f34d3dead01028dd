/*
 * libwms - libcurl's transport: how the client reaches the WMS unless it is
 * given another transport (wms/sys/transport.h).
 *
 * It is configured once, when it is made: TLS files, pin, HTTP credentials,
 * user agent and pool size. No request carries them, so no other transport
 * ever sees them. The client makes one from wms_client_options.curl; make
 * one yourself to wrap it (e.g. in a recording transport, wms/fixture.h).
 */
#ifndef WMS_CURL_H
#define WMS_CURL_H

#include "common.h"
#include "errors.h"

WMS_BEGIN_DECL

typedef struct wms_transport wms_transport; /* see wms/sys/transport.h */

#define WMS_CURL_TRANSPORT_OPTIONS_VERSION 2

/** What libcurl's transport is configured with. Every string is copied. */
typedef struct wms_curl_transport_options {
	unsigned version;
	/** User-Agent header; NULL = "libwms/VERSION", "" = none. A control
	 *  byte but a tab (CR, LF, others below 0x20, DEL) is INVALID_ARG. */
	const char *user_agent;
	/** TLS: CA bundle file / directory; NULL = the system's. Verification
	 *  of the server's certificate and host name is always on. */
	const char *ca_file;
	const char *ca_path;
	/** Mutual TLS: client certificate and private key, PEM files (both or
	 *  neither). */
	const char *client_cert;
	const char *client_key;
	/** Public-key pinning in libcurl's CURLOPT_PINNEDPUBLICKEY syntax:
	 *  "sha256//BASE64[;sha256//BASE64...]" or a PEM/DER file. */
	const char *pinned_public_key;
	/** HTTP Basic credentials (both or neither). Never logged or put in a
	 *  message; the password's copy is wiped when the transport is freed.
	 *  No ':' in the user name (RFC 7617: the server splits there), no
	 *  control byte in either: INVALID_ARG. */
	const char *http_username;
	const char *http_password;
	/** Keep-alive connections kept idle for reuse; 0 = 8, at most 1024.
	 *  In the client's options, 0 = the client's max_idle_connections. */
	uint32_t max_idle_connections;
	/** Room for options to come (the group is embedded in the client's
	 *  options, so it grows into this, never past it); zero. */
	void *_reserved[8];
} wms_curl_transport_options;

#define WMS_CURL_TRANSPORT_OPTIONS_INIT { WMS_CURL_TRANSPORT_OPTIONS_VERSION, NULL, NULL, NULL, \
	NULL, NULL, NULL, NULL, NULL, 0, { NULL } }

WMS_EXTERN(wms_status) wms_curl_transport_options_init(wms_curl_transport_options *opts,
						       unsigned version);

/**
 * libcurl's transport, as the client builds it from its options when
 * options->transport is NULL. `opts` NULL: the defaults. The files are
 * checked now: INVALID_ARG, with `err` (optional) saying which and why, for
 * a path that cannot be read, a half pair, a bad value or an unknown
 * version.
 */
WMS_EXTERN(wms_status) wms_curl_transport_create(wms_transport **out,
						 const wms_curl_transport_options *opts,
						 wms_error *err);

/** wms_curl_transport_create() with the defaults (the 0.1 constructor). */
WMS_EXTERN(wms_status) wms_curl_transport_new(wms_transport **out);

WMS_END_DECL

#endif
