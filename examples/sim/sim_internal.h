/* wms-sim internals shared by wms_sim.c (HTTP, faults), sim_store.c (the
 * order store) and sim_soap.c (envelopes). Never installed. */
#ifndef WMS_SIM_INTERNAL_H
#define WMS_SIM_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <libxml/tree.h>
#include <libxml/xmlschemas.h>
#include "util/buf.h"
#include "wms_sim.h"

#define SIM_NS "urn:libwms:warehouse:1"
#define SIM_SOAP11_NS "http://schemas.xmlsoap.org/soap/envelope/"
#define SIM_SOAP12_NS "http://www.w3.org/2003/05/soap-envelope"
#define SIM_ACTION_BASE "urn:libwms:warehouse:1/"
#define SIM_ID_MAX 64

typedef enum sim_op {
	SIM_OP_NONE = -1,
	SIM_OP_SUBMIT_ORDER = 0,
	SIM_OP_GET_ORDER_STATUS = 1,
	SIM_OP_CANCEL_ORDER = 2,
	SIM_OP_GET_STOCK_LEVEL = 3
} sim_op;

#define SIM_OP_COUNT 4

/* "SubmitOrder", ...; NULL for SIM_OP_NONE. */
const char *wms_sim__op_name(sim_op op);
/* By operation name (exact); SIM_OP_NONE if unknown. */
sim_op wms_sim__op_from_name(const char *name, size_t len);

/* Record a one-line message for wms_sim_last_error() and return `st`. */
wms_sim_status wms_sim__fail(wms_sim_status st, const char *fmt, ...)
#if defined(__GNUC__)
	__attribute__((format(printf, 2, 3)))
#endif
	;

/* Buffers are the base tier's (wms__buf, src/util/buf.h). They allocate
 * through its seam: in a test binary that installs an allocator
 * (wms_set_allocator), the in-process simulator uses it too. */

/* ---- the order store (sim_store.c) ----------------------------------------- */

typedef struct sim_store sim_store;

/* A business rejection: becomes a SOAP Client fault with WmsFault code. */
typedef struct sim_reject {
	const char *code; /* "UNKNOWN_SKU", ... (static) */
	char message[256];
} sim_reject;

typedef struct sim_line {
	char sku[SIM_ID_MAX + 1];
	uint32_t quantity;
} sim_line;

typedef struct sim_submit {
	char order_id[SIM_ID_MAX + 1];
	const char *priority; /* static "STANDARD" / "EXPRESS" / "OVERNIGHT" */
	char name[257];
	char country[3];
	sim_line *lines;
	size_t line_count;
} sim_submit;

typedef struct sim_order_view {
	char order_id[SIM_ID_MAX + 1];
	char wms_reference[SIM_ID_MAX + 1];
	const char *state;
	char updated_at[40]; /* xs:dateTime, UTC, milliseconds */
	int duplicate;
	int already_cancelled;
} sim_order_view;

typedef struct sim_stock_view {
	char sku[SIM_ID_MAX + 1];
	int64_t on_hand;
	int64_t reserved;
	int64_t available;
} sim_stock_view;

/* now_ns: the sim's monotonic clock (virtual offset included). */
wms_sim_status wms_sim__store_new(sim_store **out, uint32_t sku_count, int64_t on_hand,
				  uint32_t tick_ms, uint64_t now_ns);
void wms_sim__store_free(sim_store *s);

/* Each returns 0, 1 with *rej filled (a business rejection), or -1 (no memory). */
int wms_sim__store_submit(sim_store *s, uint64_t now_ns, const sim_submit *req,
			  sim_order_view *out, sim_reject *rej);
int wms_sim__store_status(sim_store *s, uint64_t now_ns, const char *order_id,
			  sim_order_view *out, sim_reject *rej);
int wms_sim__store_cancel(sim_store *s, uint64_t now_ns, const char *order_id,
			  sim_order_view *out, sim_reject *rej);
/* out: n entries, in the order asked. */
int wms_sim__store_stock(sim_store *s, uint64_t now_ns, const char *const *skus, size_t n,
			 sim_stock_view *out, sim_reject *rej);

size_t wms_sim__store_count(sim_store *s);
int wms_sim__store_get(sim_store *s, uint64_t now_ns, const char *order_id,
		       wms_sim_order_info *out);
/* A snapshot of every order in creation order (malloc'd; free it). -1 on ENOMEM. */
int wms_sim__store_snapshot(sim_store *s, uint64_t now_ns, wms_sim_order_info **out,
			    size_t *count);
int wms_sim__store_stock_get(sim_store *s, uint64_t now_ns, const char *sku,
			     wms_sim_stock *out);
int wms_sim__store_set_stock(sim_store *s, uint64_t now_ns, const char *sku, int64_t on_hand);

/* ---- envelopes (sim_soap.c) ----------------------------------------------- */

typedef struct sim_schema sim_schema;

wms_sim_status wms_sim__schema_load(sim_schema **out, const char *xsd_path);
void wms_sim__schema_free(sim_schema *s);

/* A parsed request. */
typedef struct sim_request {
	xmlDocPtr doc;
	xmlNodePtr payload; /* the Body's element, or NULL */
	int soap12;         /* the envelope's version (a guess when not parsed) */
	sim_op op;          /* from the payload's element name */
	char error[256];    /* why it is no usable request; "" when it is */
} sim_request;

/* Parse (never fails hard: problems land in req->error). content_type may
 * be NULL; it only helps guess the version of an unparsable request. */
void wms_sim__request_parse(sim_request *req, const char *buf, size_t len,
			    const char *content_type);
void wms_sim__request_free(sim_request *req);

/* Validate the payload against the schema: 0, or 1 with msg filled. */
int wms_sim__request_validate(sim_schema *schema, const sim_request *req, char *msg,
			      size_t size);

/* A reply to send. */
typedef struct sim_reply {
	unsigned status;
	const char *content_type; /* static */
	char *body;               /* malloc'd */
	size_t len;
} sim_reply;

void wms_sim__reply_free(sim_reply *r);

/* Perform the (validated) request against the store and build the reply
 * (an answer or a Client fault). 0, or -1 when out of memory. */
int wms_sim__request_perform(const sim_request *req, sim_store *store, uint64_t now_ns,
			     sim_reply *out);

/* A SOAP fault: server = Server/Receiver, else Client/Sender. HTTP 500. */
int wms_sim__reply_fault(sim_reply *out, int soap12, int server, const char *wms_code,
			 const char *message, int retryable);

#endif
