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
#include "../curl.h"

WMS_BEGIN_DECL

/** One request, ready to put on the wire: only what changes per call (the
 *  user agent, TLS files, pin and credentials configure a transport once,
 *  when it is made, so no transport sees another's). Everything is
 *  borrowed for the duration of `send`. libwms makes it: it may grow at
 *  its end. */
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
	/** The reply's Retry-After, in milliseconds (delta-seconds, or an
	 *  HTTP-date less the time it was read), at most UINT32_MAX; 0 when
	 *  there was none or it could not be read. A transport sets it
	 *  directly. The client reads it on a 503 or 429 (README, "Errors and
	 *  what to do"). Since 0.3.2: it takes the first pointer's room, so
	 *  the struct keeps its size and layout on every ABI. */
	union {
		uint32_t retry_after_ms;
		void *_reserved0;
	};
	/** Room to grow (the client allocates it); zero. */
	void *_reserved[3];
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

#define WMS_TRANSPORT_VERSION 2

struct wms_transport {
	unsigned version;
	/**
	 * Send `req`, fill `resp`. Return WMS_OK whenever an HTTP reply was read,
	 * whatever its status; otherwise a status with err->delivery set:
	 * NOT_SENT only when the request provably did not leave (connect
	 * refused, DNS failure, nothing written), UNKNOWN otherwise; and
	 * err->cause set after wms_transport_fail() (which leaves it NONE) for a
	 * CONNECT, TIMEOUT, TRANSPORT or TLS failure: callers and the recording
	 * transport decide on it (a CONNECT without DNS records as "refused").
	 */
	wms_status (*send)(wms_transport *self, const wms_http_request *req,
			   wms_http_response *resp, wms_error *err);
	/** Release the transport. wms_client_free also calls it in a child
	 *  forked since the client was made (its send is never called there):
	 *  the connections it holds are then the parent's too, so let go of
	 *  them without writing to them (README, "Processes and fork()"). */
	void (*free)(wms_transport *self);
};

WMS_END_DECL

#endif
