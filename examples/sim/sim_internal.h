/* wms-sim internals shared by wms_sim.c (the sim object, start and stop),
 * sim_faults.c, sim_scripts.c, the HTTP side (sim_http.c, sim_serve.c,
 * sim_control.c; their libmicrohttpd declarations are in sim_http.h),
 * sim_store.c (the order store) and sim_soap.c (envelopes). Never installed. */
#ifndef WMS_SIM_INTERNAL_H
#define WMS_SIM_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <libxml/tree.h>
#include <libxml/xmlschemas.h>
#include "util/alloc.h"
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
	SIM_OP_GET_STOCK_LEVEL = 3,
	SIM_OP_GET_SHIPMENT_STATUS = 4 /* no typed call in libwms: for wms_call */
} sim_op;

#define SIM_OP_COUNT 5

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

/* ---- the sim object (wms_sim.c and the files split from it) --------------- */

/* The simulator's state, and what those files call across each other.
 * "Lock held": the caller holds the sim's `lock`. */

#define NS_PER_MS ((uint64_t)1000000)
#define MAX_CONTENT_TYPE 512u

struct MHD_Daemon; /* <microhttpd.h>: only the HTTP side looks inside */

typedef struct wms_sim__fault_slot {
	wms_sim_fault kind; /* NONE: not set */
	uint32_t param;
	uint64_t seen;       /* matching requests so far (every-nth) */
	uint64_t until_ns;   /* refuse: monotonic end, 0 = until cleared */
} wms_sim__fault_slot;

/* A scripted reply (wms_sim_set_reply), immutable once made; shared by
 * reference between its slot and the requests being answered with it. */
typedef struct wms_sim__script {
	unsigned refs;        /* under the sim's lock */
	unsigned status;      /* 0: the default */
	char *content_type;   /* NULL: the default */
	int no_content_type;
	char *body;           /* NULL: the real answer */
	size_t body_len;
	int perform;
	int lie_length;
	uint64_t content_length;
	int hang;
	uint64_t hang_after;
	uint32_t trickle_ms;
	int close;
} wms_sim__script;

typedef struct wms_sim__reply_slot {
	wms_sim__script *sc; /* NULL: none */
	uint32_t left;       /* requests it still answers; 0: until cleared */
} wms_sim__reply_slot;

typedef struct wms_sim__window {
	uint64_t start_ms;
	uint64_t end_ms;
	wms_sim_fault kind;
	sim_op op;
	uint32_t param;
	uint64_t seen;
} wms_sim__window;

struct wms_sim {
	/* fixed after start */
	char bind[64];
	int ipv6;
	uint16_t port;
	char url[160];
	char base_url[150];
	char *wsdl;
	size_t wsdl_len;
	char *xsd;
	size_t xsd_len;
	sim_schema *schema;
	sim_store *store;
	FILE *log;
	uint64_t start_ns;

	pthread_mutex_t lock; /* everything below */
	pthread_cond_t wake;  /* any change: waiters re-check */
	struct MHD_Daemon *daemon;
	int listening;
	int closing;          /* the daemon is being stopped: hanging requests leave */
	int stopping;
	unsigned hold;        /* /control replies that a refuse must not cut */
	uint64_t requested;   /* listener changes asked for ... */
	uint64_t applied;     /* ... and carried out by the supervisor */
	int listen_failed;
	char listen_error[200];
	wms_sim__fault_slot all;
	wms_sim__fault_slot per_op[SIM_OP_COUNT];
	wms_sim__reply_slot reply_all;
	wms_sim__reply_slot reply_op[SIM_OP_COUNT];
	uint64_t conns_accepted;
	uint64_t conns_open;
	wms_sim__window *windows;
	size_t window_count;
	uint64_t schedule_t0_ns;
	uint64_t requests_total;
	uint64_t requests_op[SIM_OP_COUNT];
	uint64_t clock_offset_ns;
	uint64_t garbage_seed;
	pthread_t supervisor;
	int supervisor_started;

	pthread_mutex_t log_lock;
	char mhd_message[200]; /* libmicrohttpd's last message (start failures) */
};

/* wms_sim.c: the names, by sim_op and by wms_sim_fault. */
extern const char *const wms_sim__op_names[SIM_OP_COUNT];
extern const char *const wms_sim__fault_names[WMS_SIM_FAULT_COUNT];

/* wms_sim.c: the clock (mono_ns without the advanced offset; now with it,
 * taking the lock), a wait on `wake` with the lock held, and a whole file
 * read into memory (malloc'd and NUL-terminated; len excludes the NUL). */
uint64_t wms_sim__mono_ns(void);
void wms_sim__wait_until(wms_sim *s, uint64_t at_ns);
uint64_t wms_sim__now(wms_sim *s);
/* The file's bytes, NUL-terminated, in memory of the base tier's allocator:
 * free with wms__free. */
wms_sim_status wms_sim__read_file(const char *path, char **out, size_t *len);

/* sim_faults.c: fault lookup, all with the lock held. take_fault counts
 * the request (every-nth), peek_fault does not (for /stats). */
void wms_sim__expire(wms_sim *s, uint64_t now);
wms_sim_fault wms_sim__take_fault(wms_sim *s, sim_op op, uint64_t now, uint32_t *param);
wms_sim_fault wms_sim__peek_fault(const wms_sim *s, sim_op op, uint64_t now, uint32_t *param);
int wms_sim__refusing(const wms_sim *s, uint64_t now);
uint64_t wms_sim__next_change(const wms_sim *s, uint64_t now);
wms_sim_status wms_sim__set_fault_locked(wms_sim *s, const char *op, wms_sim_fault kind,
					 uint32_t param);
/* sim_faults.c: the schedule's text; installing it takes ownership of w. */
int wms_sim__parse_u64(const char *s, uint64_t *out);
wms_sim_status wms_sim__parse_schedule(const char *text, wms_sim__window **out, size_t *count);
void wms_sim__install_schedule(wms_sim *s, wms_sim__window *w, size_t n);

/* sim_scripts.c: scripts and their slots. script_new and script_free need
 * no lock, script_unref and unref_scripts take it; the rest want it held. */
void wms_sim__script_free(wms_sim__script *sc);
void wms_sim__script_unref(wms_sim *s, wms_sim__script *sc);
wms_sim_status wms_sim__script_new(wms_sim__script **out, const wms_sim_reply *r);
wms_sim__script *wms_sim__install_script(wms_sim *s, sim_op op, wms_sim__script *sc,
					 uint32_t times);
void wms_sim__uninstall_scripts(wms_sim *s, wms_sim__script **old);
void wms_sim__unref_scripts(wms_sim *s, wms_sim__script **old);
wms_sim__script *wms_sim__take_script(wms_sim *s, sim_op op);

/* sim_http.c: the listener brought in line with the faults (lock held). */
wms_sim_status wms_sim__sync_listener(wms_sim *s);

#endif
