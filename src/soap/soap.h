/* SOAP envelopes: building requests and parsing replies (libxml2 only here).
 * The parser works on bytes - (buf, len) - and never does I/O. */
#ifndef WMS_SOAP_H
#define WMS_SOAP_H

#include "wms/client.h"
#include "internal.h"

/* The service namespace and SOAP action base (wsdl/warehouse.wsdl). */
#define WMS__NS "urn:libwms:warehouse:1"
#define WMS__NS_PREFIX "wh"
#define WMS__SOAP11_NS "http://schemas.xmlsoap.org/soap/envelope/"
#define WMS__SOAP12_NS "http://www.w3.org/2003/05/soap-envelope"

typedef enum wms__op {
	WMS__OP_SUBMIT_ORDER = 0,
	WMS__OP_GET_ORDER_STATUS = 1,
	WMS__OP_CANCEL_ORDER = 2,
	WMS__OP_GET_STOCK_LEVEL = 3,
	WMS__OP_COUNT
} wms__op;

/* libxml2 state kept between calls, used by one thread at a time: the
 * parser's (a parser context and the parse's arrays) and the builder's
 * (envelope trees). Each part is made on first use; a part that cannot be
 * made costs only speed. A client keeps a pool of workspaces. */
typedef struct wms__parse_ws wms__parse_ws; /* soap/parse.c */
typedef struct wms__build_ws wms__build_ws; /* soap/build.c */
/* The most puts (elements written inside the request element) a request
 * shape may have for a workspace to keep its template (soap/build.c, "The
 * template"); larger shapes are serialised from the tree every time. */
#define WMS__TEMPLATE_MAX_PUTS 256
typedef struct wms__xml_ws {
	wms__parse_ws *parse;
	wms__build_ws *build;
} wms__xml_ws;
void wms__parse_ws_free(wms__parse_ws *ws); /* NULL-safe */
void wms__build_ws_free(wms__build_ws *ws); /* NULL-safe */

/* A thread-safe stack of idle workspaces (soap/pool.c). take gives NULL when
 * it has none idle and cannot make one: callers go on without. */
typedef struct wms__xml_pool wms__xml_pool;
wms_status wms__xml_pool_new(wms__xml_pool **out, size_t max_idle); /* 0 = 8 */
void wms__xml_pool_free(wms__xml_pool *pool); /* NULL-safe; every workspace given back */
wms__xml_ws *wms__xml_pool_take(wms__xml_pool *pool);
void wms__xml_pool_give(wms__xml_pool *pool, wms__xml_ws *ws); /* ws NULL-safe */

/* One operation (soap/ops.c): what the builder and the parser know of it. */
typedef struct wms__op_info {
	const char *name;            /* "SubmitOrder" */
	const char *action;          /* "urn:libwms:warehouse:1/SubmitOrder" (unquoted) */
	const char *request;         /* the Body's child sent: "SubmitOrderRequest" */
	const char *response;        /* the Body's child expected: "SubmitOrderResponse" */
	const char *content_type_12; /* SOAP 1.2's Content-Type, action included */
} wms__op_info;

/* The table's entry for `op`; for an op out of range, one of empty strings. */
const wms__op_info *wms__op_get(wms__op op);
/* Its name and action ("" for an op out of range). */
const char *wms__op_name(wms__op op);
const char *wms__op_action(wms__op op);

/* Validation of caller input (no allocation): WMS_ERR_INVALID_ARG naming the
 * field and the rule, delivery NOT_SENT. */
wms_status wms__validate_order(const wms_order *order, wms_error *err);
wms_status wms__validate_order_id(const char *order_id, wms_error *err);
wms_status wms__validate_skus(const char *const *skus, size_t n, wms_error *err);

/* Build a request envelope with libxml2. `out` receives UTF-8 bytes
 * (wms__buf_free them). Inputs must have been validated. */
wms_status wms__build_submit_order(wms__buf *out, wms_soap_version v, const wms_order *order,
				   wms_error *err);
wms_status wms__build_get_order_status(wms__buf *out, wms_soap_version v,
				       const char *order_id, wms_error *err);
wms_status wms__build_cancel_order(wms__buf *out, wms_soap_version v, const char *order_id,
				   const char *reason, wms_error *err);
wms_status wms__build_get_stock_level(wms__buf *out, wms_soap_version v,
				      const char *const *skus, size_t n, wms_error *err);

/* The arguments of one operation. */
typedef struct wms__request {
	wms__op op;
	const wms_order *order;        /* SubmitOrder */
	const char *order_id;          /* GetOrderStatus, CancelOrder */
	const char *reason;            /* CancelOrder, optional */
	const char *const *skus;       /* GetStockLevel */
	size_t sku_count;
} wms__request;

/* WS-Security UsernameToken settings (mode NONE: no header). */
typedef struct wms__wsse {
	wms_wsse_mode mode;
	const char *username;
	const char *password;
} wms__wsse;

/* Build any request, with a WS-Security header when wsse asks for one (a
 * fresh nonce and created each time: build once per message sent). */
wms_status wms__build_request(wms__buf *out, wms_soap_version v, const wms__request *r,
			      const wms__wsse *wsse, wms_error *err);
/* The same with a workspace (NULL: none). */
wms_status wms__build_request_ws(wms__xml_ws *ws, wms__buf *out, wms_soap_version v,
				 const wms__request *r, const wms__wsse *wsse, wms_error *err);

/* Parse a reply body for `op`. `content_type` may be NULL. Sets on err:
 *  - WMS_ERR_SOAP_FAULT: fault_code (prefix stripped), fault_string, wms_code;
 *  - WMS_ERR_NOT_XML: not XML at all (e.g. an HTML page);
 *  - WMS_ERR_TRUNCATED: XML that ends early;
 *  - WMS_ERR_UNSAFE_XML: a DOCTYPE / entity declaration (refused, never expanded);
 *  - WMS_ERR_UNEXPECTED_REPLY: well-formed, but not this operation's reply;
 *  - WMS_ERR_TOO_LARGE: len > max_bytes.
 * Delivery is left to the caller. `out` is the operation's reply type:
 * wms_submit_reply, wms_status_reply, wms_cancel_reply, or wms_stock_reply **
 * for GetStockLevel. */
wms_status wms__parse_reply(wms__op op, void *out, const char *buf, size_t len,
			    const char *content_type, size_t max_bytes, wms_error *err);

/* wms__parse_reply with a workspace (NULL: a temporary one) and a deadline
 * on wms__now_ns()'s clock (0: none): past it, parsing stops between two
 * chunks of the body with WMS_ERR_TIMEOUT. The structural limits of
 * soap/limits.h are crossed with WMS_ERR_UNEXPECTED_REPLY, a UCS-4 body is
 * WMS_ERR_NOT_XML. */
wms_status wms__parse_reply_ws(wms__xml_ws *ws, wms__op op, void *out, const char *buf,
			       size_t len, const char *content_type, size_t max_bytes,
			       uint64_t deadline_ns, wms_error *err);

/* ---- soap/generic.c: a generic call (wms/call.h) ----------------------------- */

struct _xmlDoc;
struct _xmlNode;

/* The request envelope around a copy of `body` (an element), with a
 * WS-Security header when wsse asks for one; within soap/limits.h's
 * structural limits, or INVALID_ARG. */
wms_status wms__build_generic(wms__buf *out, wms_soap_version v, const struct _xmlNode *body,
			      const wms__wsse *wsse, wms_error *err);
/* A caller's body given as bytes: one element, parsed by wms__xml_safe_parse;
 * INVALID_ARG saying why not. */
wms_status wms__generic_body_parse(struct _xmlDoc **out, const char *buf, size_t len,
				   wms_error *err);
/* The Content-Type of a generic request: SOAP 1.1 "text/xml;
 * charset=utf-8", 1.2 with the action parameter. INVALID_ARG if it does
 * not fit `size`. */
wms_status wms__generic_content_type(char *dst, size_t size, wms_soap_version v,
				     const char *action, wms_error *err);
/* The answer of a reply the parser has checked whole: the Body's element,
 * copied into a document of its own (*out). */
wms_status wms__generic_answer(struct _xmlDoc **out, const char *buf, size_t len,
			       const char *encoding, wms_error *err);
/* xmlFreeDoc and xmlDocGetRootElement, for the files that do not speak
 * libxml2. NULL-safe. */
void wms__xml_doc_free(struct _xmlDoc *doc);
/* A document whose root is a copy of `body` (an element), every namespace
 * in scope declared: WMS_OK, NOMEM, or INVALID_ARG for a node an envelope
 * cannot carry. */
wms_status wms__generic_body_copy(struct _xmlDoc **out, const struct _xmlNode *body);
struct _xmlNode *wms__xml_doc_root(struct _xmlDoc *doc);
/* wms__parse_reply_ws for a generic call's reply: the same checks and
 * errors, the Body's element {want_ns}want_name (NULL: any) handed back
 * as a document in *out (NULL on failure). */
wms_status wms__parse_generic_ws(struct _xmlDoc **out, wms__xml_ws *ws, const char *want_ns,
				 const char *want_name, const char *buf, size_t len,
				 const char *content_type, size_t max_bytes, uint64_t deadline_ns,
				 wms_error *err);

/* Past these, a workspace gives back what a parse grew, after the parse,
 * so that one large reply does not pin memory in a client's pool: element
 * (and text run) arrays past KEEP_ELS entries, a text array past KEEP_TEXT
 * bytes, a parser context whose dictionary (every name it has met: a WMS
 * that invents element names) holds more than KEEP_NAMES. */
#define WMS__PARSE_KEEP_ELS 256
#define WMS__PARSE_KEEP_TEXT 16384
#define WMS__PARSE_KEEP_NAMES 512

/* What a workspace kept from its last parse, for tests: 1 if a parser
 * context, with the names in its dictionary, and the capacities of the
 * element and text arrays. */
size_t wms__parse_ws_kept(const wms__xml_ws *ws, size_t *names, size_t *els, size_t *text);

/* The structural limits of soap/limits.h, checked on a document that
 * libxml2 will read without a forced encoding, as it will read it (decoded
 * first when its encoding is not ASCII-compatible): for readers other than
 * the reply parser (fixture files, requests matched against them). WMS_OK,
 * with out->limit set when one is crossed; WMS_ERR_NOT_XML for UCS-4,
 * EBCDIC, or a byte order mark and declaration that disagree; NOMEM. */
struct wms__xml_scan;
wms_status wms__xml_check_limits(struct wms__xml_scan *out, const char *buf, size_t len);

/* soap/tree.c: parse `len` bytes into a tree with no network, no entity
 * substitution, no DTD loading and no DOCTYPE at all, within the
 * structural limits of soap/limits.h (checked before libxml2 reads a
 * byte); `encoding` NULL: as the document says. NULL with `why` set on
 * failure: the parse stops at libxml2's first fatal error, which `why`
 * names. The tree's names live in the document's dictionary. */
struct _xmlDoc *wms__xml_safe_parse(const char *buf, size_t len, const char *url,
				    const char *encoding, char *why, size_t why_size);

/* The WS-Security (UsernameToken) namespace: built in soap/build.c, its
 * secrets redacted by soap/redact.c. */
#define WMS__WSSE_NS \
	"http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-wssecurity-secext-1.0.xsd"

/* Once per process (thread-safe): libxml2's global set-up. */
void wms__xml_init(void);

/* ---- soap/ops.c, soap/validate.c, soap/wsse.c ---------------------------- */

/* The full Content-Type header value for `op` in SOAP version `v`:
 * 1.1 "text/xml; charset=utf-8", 1.2 "application/soap+xml; charset=utf-8;
 * action=\"urn:libwms:warehouse:1/<Operation>\"". Static; "" for a bad op. */
const char *wms__op_content_type(wms__op op, wms_soap_version v);

/* CancelOrder's optional reason: NULL or "" (omitted), else 1-256 bytes of
 * UTF-8 without control characters. WMS_ERR_INVALID_ARG, delivery NOT_SENT. */
wms_status wms__validate_reason(const char *reason, wms_error *err);
/* Text an envelope will carry (WS-Security user name, password as text):
 * valid UTF-8, XML 1.0 characters only, at most 256 bytes. A `secret`'s
 * message says what is wrong but never where or which character. */
wms_status wms__validate_text(const char *s, const char *field, int secret, wms_error *err);

/* For the duration of one libxml2 call sequence on this thread, catch the
 * errors libxml2 raises outside any parser context (encoding conversion,
 * output I/O) instead of letting them reach stderr. libxml2 keeps these
 * handlers per thread; _end restores what was there. */
typedef struct wms__xml_quiet {
	void (*saved_structured)(void);
	void *saved_structured_ctx;
	void (*saved_generic)(void);
	void *saved_generic_ctx;
	void *slot[4]; /* where this thread's four handler variables live */
	int errors;     /* errors caught since _begin */
	int first_code; /* libxml2's xmlParserErrors code of the first one */
	int nomem;      /* one of them was XML_ERR_NO_MEMORY */
} wms__xml_quiet;

void wms__xml_quiet_begin(wms__xml_quiet *q);
void wms__xml_quiet_end(wms__xml_quiet *q);
/* Count an error as if it had reached the handler _begin installed: for a
 * parser context's own structured handler, which takes the context's
 * errors before the thread's handler would (soap/tree.c). */
struct _xmlError;
void wms__xml_quiet_note(wms__xml_quiet *q, const struct _xmlError *error);

#endif
