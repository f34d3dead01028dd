/*
 * libwms - pluggable transports (less stable than the rest of the API).
 *
 * A transport moves one SOAP request to the WMS and brings back the HTTP
 * reply. The client owns it and calls `send` from any number of threads at
 * once, so an implementation must be thread-safe. The default transport is
 * libcurl's; wms/fixture.h has a replay transport for tests.
 *
 * An implementation embeds `wms_transport` as the first member of its own
 * struct:
 *
 *     struct my_transport { wms_transport parent; ... };
 *     t->parent.version = WMS_TRANSPORT_VERSION;
 *     t->parent.send = my_send;
 *     t->parent.free = my_free;
 */
#ifndef WMS_SYS_TRANSPORT_H
#define WMS_SYS_TRANSPORT_H

#include "../common.h"
#include "../errors.h"
#include "../client.h"

WMS_BEGIN_DECL

/** One request, ready to put on the wire. Everything is borrowed for the
 *  duration of `send`. */
typedef struct wms_http_request {
	const char *url;
	/** Operation name, e.g. "SubmitOrder". */
	const char *operation;
	/** The SOAP action URI, unquoted. */
	const char *soap_action;
	wms_soap_version soap_version;
	/** The full Content-Type header value to send. */
	const char *content_type;
	const char *body;
	size_t body_len;
	uint32_t connect_timeout_ms;
	/** The whole call's deadline; a transport must never exceed it. */
	uint32_t timeout_ms;
	uint32_t stall_timeout_ms;
	size_t max_reply_bytes;
	/** Unused since 0.2.0, always NULL from the client: the user agent, TLS
	 *  files, pin and HTTP credentials configure a transport once, when it is
	 *  made (wms_curl_transport_options), so no transport sees them on a
	 *  request. Kept so that the struct's layout does not change. */
	const char *user_agent;
	const char *ca_file;
	const char *ca_path;
	const char *client_cert;
	const char *client_key;
	const char *pinned_public_key;
	const char *http_username;
	const char *http_password;
	/** Sent as the X-Correlation-Id header. */
	const char *correlation_id;
} wms_http_request;

/** The reply a transport fills, through the helpers below only. */
typedef struct wms_http_response {
	long status;
	char *content_type; /* owned; NULL if none */
	char *body;         /* owned; always NUL-terminated when non-NULL */
	size_t body_len;
	size_t max_body;    /* set by the client from max_reply_bytes */
	/** Set when the body hit max_body (the rest was discarded). */
	int overflow;
} wms_http_response;

/** Append reply bytes. WMS_ERR_TOO_LARGE past max_body (sets overflow). */
WMS_EXTERN(wms_status) wms_http_response_append(wms_http_response *resp, const void *data,
						size_t len);
/** Set (or replace) the Content-Type. */
WMS_EXTERN(wms_status) wms_http_response_set_content_type(wms_http_response *resp,
							  const char *value, size_t len);
/** Drop everything (the client calls this; a transport may, on retry). */
WMS_EXTERN(void) wms_http_response_clear(wms_http_response *resp);

/**
 * Set `err` for a transport failure: status, delivery and a one-line message.
 * Returns `status` for convenience: `return wms_transport_fail(err, ...);`
 */
WMS_EXTERN(wms_status) wms_transport_fail(wms_error *err, wms_status status,
					  wms_delivery delivery, const char *fmt, ...)
#if defined(__GNUC__)
	__attribute__((format(printf, 4, 5)))
#endif
	;

#define WMS_TRANSPORT_VERSION 1

struct wms_transport {
	unsigned version;
	/**
	 * Send `req`, fill `resp`. Return WMS_OK whenever an HTTP reply was read,
	 * whatever its status; otherwise a status with err->delivery set:
	 * NOT_SENT only when the request provably did not leave (connect
	 * refused, DNS failure, nothing written), UNKNOWN otherwise.
	 */
	wms_status (*send)(wms_transport *self, const wms_http_request *req,
			   wms_http_response *resp, wms_error *err);
	/** Release the transport. */
	void (*free)(wms_transport *self);
};

/* ---- libcurl's transport -------------------------------------------------- */

#define WMS_CURL_TRANSPORT_OPTIONS_VERSION 1

/** What libcurl's transport is configured with, once, when it is made. Every
 *  string is copied. */
typedef struct wms_curl_transport_options {
	unsigned version;
	/** User-Agent header; NULL = "libwms/VERSION", "" = none. */
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
	 *  message; the password's copy is wiped when the transport is freed. */
	const char *http_username;
	const char *http_password;
	/** Keep-alive connections kept idle for reuse; 0 = 8, at most 1024. */
	uint32_t max_idle_connections;
} wms_curl_transport_options;

#define WMS_CURL_TRANSPORT_OPTIONS_INIT \
	{ WMS_CURL_TRANSPORT_OPTIONS_VERSION, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0 }

WMS_EXTERN(wms_status) wms_curl_transport_options_init(wms_curl_transport_options *opts,
						       unsigned version);

/**
 * libcurl's transport, as the client builds it from its options when
 * options->transport is NULL. `opts` NULL: the defaults. The files are
 * checked now: INVALID_ARG, with `err` (optional) saying which and why, for
 * a path that cannot be read, a half pair, or a bad value.
 */
WMS_EXTERN(wms_status) wms_curl_transport_create(wms_transport **out,
						 const wms_curl_transport_options *opts,
						 wms_error *err);

/** wms_curl_transport_create() with the defaults (the 0.1 constructor). */
WMS_EXTERN(wms_status) wms_curl_transport_new(wms_transport **out);

WMS_END_DECL

#endif
