/*
 * libwms - status codes and error detail.
 *
 * Every call returns a wms_status; 0 is success. Calls that talk to the WMS
 * also fill an optional caller-owned wms_error with the detail a service
 * needs to decide what to do next, above all `delivery`: whether the request
 * may have reached the WMS, and so whether it is safe to send again.
 */
#ifndef WMS_ERRORS_H
#define WMS_ERRORS_H

#include "common.h"

WMS_BEGIN_DECL

/**
 * Status codes. Append-only: values are never renumbered or reused; new
 * codes are added last. See README.md for what a caller should do on each.
 */
typedef enum wms_status {
	WMS_OK = 0,
	WMS_ERR_INVALID_ARG = 1,      /**< bad argument or option; nothing sent */
	WMS_ERR_NOMEM = 2,            /**< out of memory */
	WMS_ERR_CIRCUIT_OPEN = 3,     /**< breaker open: rejected at once, nothing sent */
	WMS_ERR_CONNECT = 4,          /**< DNS or TCP connect failed; nothing sent */
	WMS_ERR_TIMEOUT = 5,          /**< connect or total deadline, or stall guard, hit */
	WMS_ERR_TRANSPORT = 6,        /**< connection reset, send/receive error */
	WMS_ERR_HTTP = 7,             /**< non-2xx HTTP status without a SOAP Fault */
	WMS_ERR_SOAP_FAULT = 8,       /**< the WMS answered with a SOAP Fault */
	WMS_ERR_NOT_XML = 9,          /**< reply body is not XML (e.g. a proxy's HTML page) */
	WMS_ERR_TRUNCATED = 10,       /**< reply body ended early */
	WMS_ERR_UNEXPECTED_REPLY = 11,/**< well-formed XML, but not the reply to this operation */
	WMS_ERR_TOO_LARGE = 12,       /**< reply larger than max_reply_bytes */
	WMS_ERR_UNSAFE_XML = 13,      /**< reply carries a DOCTYPE / entity declarations: refused */
	WMS_ERR_TLS = 14,             /**< TLS handshake or certificate verification failed */
	WMS_ERR_FIXTURE = 15,         /**< replay: no match or bad fixture; recording: file not written */
	WMS_ERR_CONFIG = 16,          /**< configuration file invalid */
	WMS_ERR_INTERNAL = 17,        /**< a bug in libwms or a dependency; please report */
	WMS_ERR_BULKHEAD_FULL = 18,   /**< as many calls in flight as the bulkhead allows: rejected
					 at once (or after max_wait_for_slot_ms), nothing sent
					 (0.3.2) */
	WMS_ERR_CANCELLED = 19        /**< an asynchronous call cancelled (wms/async.h) before it
					 completed; delivery says whether the WMS may have it
					 (0.3.2) */
} wms_status;

/** Whether the request may have reached the WMS. */
typedef enum wms_delivery {
	/** Provably not delivered (breaker open, connect failed, bad argument): safe to resend. */
	WMS_DELIVERY_NOT_SENT = 0,
	/** The WMS may have received and acted on it (timeout after sending, reset
	 *  mid-reply, a reply that could not be read, an HTTP 5xx page from a proxy):
	 *  resend only with the same order id (idempotent), or query first. */
	WMS_DELIVERY_UNKNOWN = 1,
	/** The WMS answered definitively: success, a SOAP fault, or an HTTP status
	 *  other than 5xx (1xx, 3xx, 4xx). */
	WMS_DELIVERY_ANSWERED = 2
} wms_delivery;

/**
 * What failed underneath a transport's CONNECT, TIMEOUT, TRANSPORT, TLS or
 * TRUNCATED failure (and an INVALID_ARG from our own TLS files:
 * LOCAL_FILE), told the same way by every transport: a caller, a recorder
 * or a replay can tell a name that did not resolve from a refused
 * connection without reading one library's codes. NONE for everything
 * else, a TIMEOUT or TRUNCATED found while reading the reply included.
 * Append-only, like wms_status. Since 0.3.0.
 */
typedef enum wms_cause {
	WMS_CAUSE_NONE = 0,            /**< no transport failure */
	WMS_CAUSE_DNS = 1,             /**< the host (or proxy) name did not resolve */
	WMS_CAUSE_REFUSED = 2,         /**< connection refused, or the host unreachable */
	WMS_CAUSE_CONNECT_TIMEOUT = 3, /**< the deadline passed before a connection was made */
	WMS_CAUSE_TIMEOUT = 4,         /**< the deadline passed once connected */
	WMS_CAUSE_STALL = 5,           /**< the stall guard: too little was moving */
	WMS_CAUSE_RESET = 6,           /**< the connection was reset or closed mid-exchange */
	WMS_CAUSE_TLS_HANDSHAKE = 7,   /**< the TLS handshake failed */
	WMS_CAUSE_TLS_VERIFY = 8,      /**< the server's certificate, name or pin was not accepted */
	WMS_CAUSE_LOCAL_FILE = 9,      /**< our CA, certificate or key file could not be used */
	WMS_CAUSE_PROTOCOL = 10,       /**< what came back was not usable HTTP */
	WMS_CAUSE_OTHER = 11           /**< a transport failure none of the above */
} wms_cause;

#define WMS_ERROR_MESSAGE_MAX 256
#define WMS_ERROR_FIELD_MAX 128

/**
 * Error detail, filled by the call it is passed to. Caller-owned; needs no
 * free. Fields that do not apply are zero / empty strings.
 */
typedef struct wms_error {
	wms_status status;
	wms_delivery delivery;
	/** One line, no trailing newline, never contains credentials; UTF-8
	 *  when what it quotes was, and a long one is cut on a whole character. */
	char message[WMS_ERROR_MESSAGE_MAX];
	/** HTTP status of the reply, 0 if none was received. */
	long http_status;
	/** libcurl's CURLcode for its transport's failures, 0 otherwise: for
	 *  a report. To decide, read `cause`, which every transport sets. */
	int curl_code;
	/** SOAP fault code as sent, namespace prefix removed: "Server", "Client",
	 *  "Receiver", "Sender", ... */
	char fault_code[WMS_ERROR_FIELD_MAX];
	char fault_string[WMS_ERROR_MESSAGE_MAX];
	/** The WMS's machine-readable code from the fault detail, e.g. "UNKNOWN_SKU". */
	char wms_code[WMS_ERROR_FIELD_MAX];
	/** For WMS_ERR_CIRCUIT_OPEN: milliseconds until the breaker lets a probe
	 *  through (0 while trial calls are in flight). A breaker forced open gives
	 *  its open_duration_ms, a hint only: no probe goes until it is reset or
	 *  forced closed. Also set when retries stopped because the breaker
	 *  opened; `status` is then the last attempt's. For
	 *  WMS_ERR_BULKHEAD_FULL: the client's timeout_ms, by when every call
	 *  now in flight has ended (an upper bound; a slot may free sooner).
	 *  For a reply with HTTP status 503 or 429 (WMS_ERR_HTTP, or a fault
	 *  sent with it): its Retry-After in milliseconds (delta-seconds or an
	 *  HTTP-date), 0 if it had none (the breaker's hint instead when the
	 *  call opened it and that is later); a retry waits at least that
	 *  long, and none is made that would not fit in timeout_ms. Since
	 *  0.3.2. */
	uint32_t retry_after_ms;
	/** Name of the operation, e.g. "SubmitOrder"; empty if none. A generic
	 *  call's name (up to 64 bytes) is cut to its first 31 here: the wire
	 *  log and the breaker's key have it whole. */
	char operation[32];
	/** Attempts made (retries inside the breaker); 0 when none was permitted. */
	uint32_t attempts;
	/** Non-zero when a fallback answered instead of the WMS (status is the
	 *  fallback's, delivery NOT_SENT). */
	int fallback;
	/** The call's correlation id: in the wire log and the X-Correlation-Id
	 *  request header, so the WMS's logs can be matched. */
	char correlation_id[40];
	/** What failed underneath a transport failure; NONE otherwise. Since 0.3.0. */
	wms_cause cause;
	/** Room to grow (caller-allocated); zero. */
	uint32_t _reserved32;
	uint64_t _reserved[8];
} wms_error;

/** A static, one-line description of a status. Never NULL. */
WMS_EXTERN(const char *) wms_strerror(wms_status status);

/** The enum name without its prefix: "OK", "CIRCUIT_OPEN", "TIMEOUT", ... */
WMS_EXTERN(const char *) wms_status_name(wms_status status);

/** "NONE", "DNS", "REFUSED", ...: the enum name without its prefix; "?" for
 *  a value this version does not know. Since 0.3.0. */
WMS_EXTERN(const char *) wms_cause_name(wms_cause cause);

/** "NOT_SENT", "UNKNOWN" or "ANSWERED". */
WMS_EXTERN(const char *) wms_delivery_name(wms_delivery delivery);

/** Reset an error to "no error". NULL-safe. */
WMS_EXTERN(void) wms_error_clear(wms_error *err);

/**
 * Whether it is safe to send the same request again as is: nothing was
 * delivered, or the operation is idempotent on its order id (all the WMS
 * operations are) and the failure is no rejection of the request itself.
 * False for OK, INVALID_ARG, CONFIG, FIXTURE and INTERNAL, for a Client/Sender
 * or envelope-level fault, for an HTTP status other than 5xx, 408 and 429,
 * and for a value that is no wms_status (and a NULL err); true for every
 * other status. It does not say whether resending will
 * help: it is true for TLS, TOO_LARGE, UNSAFE_XML and UNEXPECTED_REPLY, where
 * the fix is on the caller's side.
 */
WMS_EXTERN(int) wms_error_is_retryable(const wms_error *err);

WMS_END_DECL

#endif
