/*
 * libwms - any operation of the WMS's WSDL, through the same protections.
 *
 * The four typed operations (wms/client.h) cover libwms's own WSDL. A WMS
 * has more, with element names of its own: wms_call() sends any of them
 * through the client's breaker, bulkhead, retries, deadlines, WS-Security,
 * HTTP auth, TLS, wire log (redacted), correlation ids and fixtures, and
 * reads the reply under the same limits as a typed call's. The request body
 * is a libxml2 element the caller built (or bytes libwms parses with no
 * network, no entities and no DOCTYPE); the reply is the SOAP Body's
 * element as a document of its own, which the caller frees with
 * xmlFreeDoc(). A SOAP fault is WMS_ERR_SOAP_FAULT with the fault fields
 * set, exactly as for a typed call.
 *
 *     wms_call_options op = WMS_CALL_OPTIONS_INIT;
 *     op.operation = "GetShipmentStatus";
 *     op.soap_action = "urn:example:wms/GetShipmentStatus";
 *     op.reply_namespace = "urn:example:wms";
 *     op.reply_element = "GetShipmentStatusResponse";
 *     op.idempotent = 1;
 *     xmlDocPtr reply;
 *     if (wms_call_bytes(&reply, client, &op, body, strlen(body), &err) == WMS_OK) {
 *         ... xmlDocGetRootElement(reply) ...
 *         xmlFreeDoc(reply);
 *     }
 *
 * libxml2's types are named here by their struct tags, so including this
 * header needs no libxml2 headers; code that builds or reads the trees
 * includes <libxml/tree.h> itself. Since 0.3.2.
 */
#ifndef WMS_CALL_H
#define WMS_CALL_H

#include <stddef.h>
#include "common.h"
#include "errors.h"
#include "client.h"

WMS_BEGIN_DECL

struct _xmlDoc;  /* xmlDoc */
struct _xmlNode; /* xmlNode */

#define WMS_CALL_OPTIONS_VERSION 1

/** The operation a generic call invokes. */
typedef struct wms_call_options {
	unsigned version;
	/** Required: the operation's name, 1-64 bytes of [A-Za-z0-9._-]: in
	 *  the wire log, the error's `operation` (its first 31 bytes: a
	 *  char[32]), fixtures, and the breaker's
	 *  key with per-operation breakers (a name of the four typed
	 *  operations shares that operation's breaker; any other gets its own
	 *  on its first call, which wms_client_breaker_for and
	 *  wms_client_bulkhead_get then find by the name). With one breaker per
	 *  client every operation goes through the client's breaker and
	 *  bulkhead (wms_client_breaker), which those two find by typed
	 *  names only. */
	const char *operation;
	/** The SOAP action (SOAP 1.1 SOAPAction header, SOAP 1.2 action
	 *  parameter), as the WSDL's soapAction; NULL = "". At most 512 bytes,
	 *  no control characters or '"'. */
	const char *soap_action;
	/** The reply's Body element expected: its namespace URI (NULL: any, ""
	 *  for none) and local name (NULL: any single element; "" names none:
	 *  WMS_ERR_INVALID_ARG). Anything else is WMS_ERR_UNEXPECTED_REPLY. */
	const char *reply_namespace;
	const char *reply_element;
	/** Non-zero when sending the request twice does no harm (a read, or a
	 *  write keyed by an idempotency key). Retries (wms_retry_options)
	 *  resend a request whose delivery is UNKNOWN only then; otherwise only
	 *  one that provably did not leave (NOT_SENT). */
	int idempotent;
	/** Room to grow; zero. */
	void *_reserved[4];
} wms_call_options;

#define WMS_CALL_OPTIONS_INIT { WMS_CALL_OPTIONS_VERSION, NULL, NULL, NULL, NULL, 0, { NULL } }

WMS_EXTERN(wms_status) wms_call_options_init(wms_call_options *opts, unsigned version);

/* The most distinct generic operations one client with per-operation
 * breakers keeps a breaker for (the typed four not counted); a call for
 * one more is WMS_ERR_INVALID_ARG, nothing sent. */
#define WMS_MAX_CALL_OPERATIONS 32

/**
 * Call `call->operation` with `body` (an element node, copied: the caller
 * keeps it) as the SOAP Body's content. On WMS_OK, `*out` is a new
 * document whose root element is a copy of the reply's Body element, with
 * every namespace declaration in scope there declared on it (the
 * Envelope's included: a QName in a value keeps its prefix); free it with
 * xmlFreeDoc(). On any
 * other status `*out` is NULL and `err` says why, with the same fields and
 * delivery as a typed call (fault_code, fault_string, wms_code for
 * WMS_ERR_SOAP_FAULT). The typed calls' fallbacks do not apply.
 */
WMS_EXTERN(wms_status) wms_call(struct _xmlDoc **out, wms_client *client,
				const wms_call_options *call, const struct _xmlNode *body,
				wms_error *err);

/** The same with the body as bytes of XML (one element, UTF-8 or as its
 *  declaration says), parsed with no network, no entity expansion and no
 *  DOCTYPE, within libwms's structural limits: INVALID_ARG saying why
 *  otherwise, nothing sent. */
WMS_EXTERN(wms_status) wms_call_bytes(struct _xmlDoc **out, wms_client *client,
				      const wms_call_options *call, const char *body, size_t len,
				      wms_error *err);

WMS_END_DECL

#endif
