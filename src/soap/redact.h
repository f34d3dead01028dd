/* The one redactor of secrets in SOAP messages, for the wire log and the
 * recording transport: which elements hold secrets, found by libxml2 with
 * their namespaces, and their content replaced, every other byte kept. */
#ifndef WMS_SOAP_REDACT_H
#define WMS_SOAP_REDACT_H

#include <stddef.h>
#include "wms/errors.h"
#include "util/buf.h"

#define WMS__REDACTED "REDACTED"

/* What a redaction found. */
typedef struct wms__secrets {
	unsigned passwords; /* elements named Password, in any namespace */
	unsigned nonces;    /* Nonce elements in the WS-Security namespace */
	int wsse;           /* an element in the WS-Security namespace */
} wms__secrets;

/*
 * Copy `body` into `out` with the content of every secret element replaced
 * by REDACTED: each element named Password (in any namespace: neither a
 * fixture nor a log needs one) and each Nonce in the WS-Security namespace.
 * Every other byte stays as it was. WMS_OK; WMS_ERR_NOT_XML when the body
 * is not XML libwms reads (not well-formed, over one of soap/limits.h's
 * limits, a DOCTYPE, an encoding it does not read), so that its secrets
 * cannot be located: `out` is then left empty and `why` says why;
 * WMS_ERR_NOMEM. `found` (optional) says what was replaced.
 */
wms_status wms__redact_secrets(wms__buf *out, const char *body, size_t len, wms__secrets *found,
			       char *why, size_t why_size);

/*
 * For a log: wms__redact_secrets, and for a body that is not XML (a proxy's
 * HTML page, a truncated reply) the body as it is when it holds neither
 * "Password" nor "Nonce" nor a NUL byte (no secret element can hide in
 * it), else a one-line note that it was withheld. WMS_OK or WMS_ERR_NOMEM.
 */
wms_status wms__redact_for_log(wms__buf *out, const char *body, size_t len);

#endif
