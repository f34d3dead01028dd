/*
 * wms-sim - a WMS simulator: the other end of libwms, for integration tests,
 * the demo and people trying libwms without a warehouse.
 *
 * A real HTTP server (libmicrohttpd, one thread per connection) serving every
 * operation of wsdl/warehouse.wsdl over SOAP 1.1 and 1.2 with an in-memory
 * order store, plus fault injection, live or on a schedule. Run it as the
 * `wms-sim` program, or inside a process:
 *
 *     wms_sim *sim;
 *     wms_sim_options o = WMS_SIM_OPTIONS_INIT;      // 127.0.0.1, a free port
 *     if (wms_sim_start(&sim, &o) != WMS_SIM_OK)
 *         fprintf(stderr, "wms-sim: %s\n", wms_sim_last_error());
 *     copts.endpoint = wms_sim_url(sim);             // http://127.0.0.1:PORT/wms
 *     wms_sim_set_fault(sim, "SubmitOrder", WMS_SIM_FAULT_HANG, 0);
 *     ...
 *     printf("%llu calls\n", (unsigned long long)wms_sim_requests(sim, NULL));
 *     wms_sim_stop(sim);
 *
 * Every function is thread-safe. HTTP endpoints besides POST /wms:
 * GET /wms?wsdl, GET /wms?xsd (or /warehouse.xsd), GET /stats (JSON) and
 * POST /control (form or query: fault=KIND&op=OP&param=N, fault=none,
 * clear=1, advance_ms=N, schedule=TEXT, reply=1&body=BYTES&..., reply=none).
 */
#ifndef WMS_SIM_H
#define WMS_SIM_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct wms_sim wms_sim;

typedef enum wms_sim_status {
	WMS_SIM_OK = 0,
	WMS_SIM_ERR_INVALID_ARG = 1, /**< bad argument or option */
	WMS_SIM_ERR_NOMEM = 2,       /**< out of memory */
	WMS_SIM_ERR_IO = 3,          /**< a file could not be read */
	WMS_SIM_ERR_PARSE = 4,       /**< schedule, WSDL or XSD invalid */
	WMS_SIM_ERR_LISTEN = 5,      /**< cannot bind or listen on the address */
	WMS_SIM_ERR_INTERNAL = 6     /**< a thread or libmicrohttpd failure */
} wms_sim_status;

/** "OK", "INVALID_ARG", ... */
const char *wms_sim_status_name(wms_sim_status status);

/** One line explaining the last failed wms_sim_* call on this thread; "" if none. */
const char *wms_sim_last_error(void);

/**
 * Faults. Whether the operation itself is carried out is part of each one's
 * meaning: a client that saw DELIVERY_UNKNOWN must find out by querying or
 * resending with the same order id.
 */
typedef enum wms_sim_fault {
	WMS_SIM_FAULT_NONE = 0,     /**< "none": healthy */
	WMS_SIM_FAULT_HANG = 1,     /**< "hang": read the request, never answer (until the
				     *   client gives up or the sim stops); not performed */
	WMS_SIM_FAULT_REFUSE = 2,   /**< "refuse": stop listening, connects are refused and idle
				     *   connections closed; every operation at once (no op);
				     *   param: ms until it listens again (0 = until cleared) */
	WMS_SIM_FAULT_SLOW = 3,     /**< "slow": wait param ms (default 1000), then perform and
				     *   answer normally */
	WMS_SIM_FAULT_HTTP_500 = 4, /**< "http-500": 500 with an HTML page; not performed */
	WMS_SIM_FAULT_HTTP_503 = 5, /**< "http-503": 503 with an HTML page; not performed */
	WMS_SIM_FAULT_SERVER = 6,   /**< "server-fault": SOAP Server (1.1) / Receiver (1.2) fault,
				     *   WmsFault INTERNAL, HTTP 500; not performed */
	WMS_SIM_FAULT_CLIENT = 7,   /**< "client-fault": SOAP Client / Sender fault, WmsFault
				     *   INVALID_REQUEST, HTTP 500; not performed */
	WMS_SIM_FAULT_TRUNCATED = 8, /**< "truncated": performed; Content-Length promises the
				      *   whole reply, half of it is sent, then the connection closes */
	WMS_SIM_FAULT_GARBAGE = 9,  /**< "garbage": 200 with param (default 256) random non-XML
				     *   bytes; not performed */
	WMS_SIM_FAULT_RESET = 10,   /**< "reset": performed; half the reply, then a TCP reset */
	WMS_SIM_FAULT_REPLY_LOST = 11, /**< "reply-lost": performed (the order is committed),
					*   then a TCP reset before any reply byte */
	WMS_SIM_FAULT_EVERY_NTH = 12 /**< "every-nth": the param-th (default 2), 2*param-th, ...
				      *   matching request gets a server fault; others are healthy */
} wms_sim_fault;

#define WMS_SIM_FAULT_COUNT 13

/** "none", "hang", "refuse", "slow", "http-500", "http-503", "server-fault",
 *  "client-fault", "truncated", "garbage", "reset", "reply-lost", "every-nth". */
const char *wms_sim_fault_name(wms_sim_fault fault);

/** Parse a fault name (case-insensitive; '_' may stand for '-'; "http500" works too). */
wms_sim_status wms_sim_fault_parse(wms_sim_fault *out, const char *name);

#define WMS_SIM_OPTIONS_VERSION 1

/** Simulator options. Zero / NULL means the default for every field. */
typedef struct wms_sim_options {
	unsigned version;
	/** Address to listen on, an IPv4 or IPv6 literal. Default "127.0.0.1". */
	const char *bind;
	/** TCP port; 0 = a free one (read it back with wms_sim_port()). */
	uint16_t port;
	/** Orders advance RECEIVED -> ALLOCATED -> PICKING -> PACKED -> SHIPPED one
	 *  step per tick. Default 1000 ms. */
	uint32_t tick_ms;
	/** Catalogue: SKU-1 .. SKU-<sku_count>. Default 100. */
	uint32_t sku_count;
	/** Stock on hand per catalogue SKU at start. Default 10000. */
	int64_t on_hand;
	/** Files served and used for validation. Default: the source tree's
	 *  wsdl/ directory, else the installed copy (DATADIR/libwms/wsdl). */
	const char *wsdl_path;
	const char *xsd_path;
	/** A fault schedule (see wms_sim_set_schedule) loaded at start. */
	const char *schedule_path;
	/** One line per request (and libmicrohttpd's own messages); NULL = silent. */
	FILE *log;
} wms_sim_options;

#define WMS_SIM_OPTIONS_INIT { WMS_SIM_OPTIONS_VERSION, NULL, 0, 0, 0, 0, NULL, NULL, NULL, NULL }

/** Start a simulator: listening when this returns. NULL options: all defaults. */
wms_sim_status wms_sim_start(wms_sim **out, const wms_sim_options *opts);

/** Stop: ends hanging and slow requests, closes every connection, joins every
 *  thread and frees everything. NULL-safe. */
void wms_sim_stop(wms_sim *sim);

/** The port listened on (stays the same across `refuse`). */
uint16_t wms_sim_port(const wms_sim *sim);
/** The SOAP endpoint, "http://127.0.0.1:PORT/wms". Owned by the sim. */
const char *wms_sim_url(const wms_sim *sim);
/** The server root, "http://127.0.0.1:PORT" (for /stats and /control). */
const char *wms_sim_base_url(const wms_sim *sim);

/* ---- faults ---------------------------------------------------------------- */

/**
 * Set the live fault of one operation ("SubmitOrder", "GetOrderStatus",
 * "CancelOrder", "GetStockLevel", "GetShipmentStatus") or, with op NULL, of
 * all of them. An
 * operation's own fault wins over the all-operations one; a scheduled window
 * wins over both. WMS_SIM_FAULT_NONE with an op clears that op's fault; with
 * op NULL it clears every live fault (the schedule stays). param: see the
 * fault; 0 = its default. Setting or clearing `refuse` returns once the
 * listener is closed or listening again (WMS_SIM_ERR_LISTEN if the port could
 * not be bound again).
 */
wms_sim_status wms_sim_set_fault(wms_sim *sim, const char *op, wms_sim_fault kind,
				 uint32_t param);

/** Clear every live fault, every scripted reply and the schedule; listening
 *  again when this returns. */
void wms_sim_clear_faults(wms_sim *sim);

/* ---- scripted replies ------------------------------------------------------- */

#define WMS_SIM_REPLY_VERSION 1

/**
 * An exact reply to send instead of the simulator's own: any status, any
 * Content-Type (or none), any body bytes, and ways to break the framing and
 * the pace. Zero / NULL means the default for every field but `version`.
 *
 * With `body` NULL the operation is carried out and its real answer is sent,
 * changed only by the fields that are set (e.g. trickled, or with the
 * connection closed afterwards). With `body` set (even to zero bytes) those
 * bytes are the body and the operation is not carried out unless `perform`.
 */
typedef struct wms_sim_reply {
	unsigned version;
	/** HTTP status, 200-599. 0: 200 (with body NULL: the real answer's). */
	unsigned status;
	/** Content-Type value (no CR/LF). NULL: the SOAP type of the request's
	 *  version ("text/xml; charset=utf-8" / "application/soap+xml;
	 *  charset=utf-8"); with body NULL, the real answer's. */
	const char *content_type;
	/** Send no Content-Type header at all (content_type must be NULL). */
	int no_content_type;
	/** The body: exactly these bytes (NULs and invalid UTF-8 included). Copied. */
	const void *body;
	size_t body_len;
	/** With body set: carry the operation out first (the store changes), then
	 *  send the scripted bytes. */
	int perform;
	/** Send `Content-Length: content_length` whatever the body's length (a
	 *  lie). Such a reply is written by wms-sim itself, not by libmicrohttpd:
	 *  once it is out, the connection serves no other request: it is closed
	 *  when the client sends anything more on it or goes away (at once with
	 *  `close`). */
	int lie_length;
	uint64_t content_length;
	/** Send the first `hang_after` body bytes (0: headers only), then nothing
	 *  more, until the client goes away or the sim stops. Must be below the
	 *  body's length to matter. */
	int hang;
	uint64_t hang_after;
	/** One body byte every trickle_ms milliseconds (the headers at once);
	 *  0: all at once. At most 3600000. */
	uint32_t trickle_ms;
	/** Close the connection once the reply is out, without a `Connection:
	 *  close` header: the client's idle keep-alive connection dies under it. */
	int close;
	/** Answer this many requests with it, then drop it; 0: until cleared. */
	uint32_t times;
} wms_sim_reply;

#define WMS_SIM_REPLY_INIT { WMS_SIM_REPLY_VERSION, 0, NULL, 0, NULL, 0, 0, 0, 0, 0, 0, 0, 0, 0 }

/**
 * Script the reply of one operation ("SubmitOrder", ...) or, with op NULL, of
 * every operation; r NULL clears it (with op NULL: every scripted reply).
 * `r` and its strings and body are copied. Precedence: a fault in force
 * (schedule window or live) wins; then the operation's own scripted reply;
 * then the all-operations one. Requests that name no known operation get only
 * the all-operations one. WMS_SIM_ERR_INVALID_ARG for an unknown version or
 * operation, a status outside 200-599, a Content-Type with CR or LF, or
 * content_type together with no_content_type.
 */
wms_sim_status wms_sim_set_reply(wms_sim *sim, const char *op, const wms_sim_reply *r);

/** How many more requests the scripted reply of `op` (NULL: the
 *  all-operations one) will answer: UINT32_MAX for "until cleared", 0 when
 *  there is none. */
uint32_t wms_sim_reply_left(wms_sim *sim, const char *op);

/**
 * Replace the schedule with `text`: one window per line,
 *     start_ms end_ms fault [op=OPERATION] [param=N]
 * '#' starts a comment. Times count from this call (for
 * wms_sim_options.schedule_path and `wms-sim --schedule`, from the start of
 * the sim). Outside every window the live faults apply. NULL or "" clears it.
 * WMS_SIM_ERR_PARSE names the line and the problem.
 */
wms_sim_status wms_sim_set_schedule(wms_sim *sim, const char *text);
/** The same, read from a file. */
wms_sim_status wms_sim_load_schedule(wms_sim *sim, const char *path);

/* ---- what happened ------------------------------------------------------- */

/** SOAP requests received (POST /wms that reached the handler, faulted ones
 *  included) for one operation, or for all with op NULL (requests naming no
 *  known operation are only in that total). */
uint64_t wms_sim_requests(wms_sim *sim, const char *op);

/** TCP connections accepted since the start; *open_now (optional) gets how
 *  many are open now. */
uint64_t wms_sim_connections(wms_sim *sim, uint64_t *open_now);

/** Orders in the store. */
size_t wms_sim_order_count(wms_sim *sim);

/** A stored order, as of now (state computed from the sim's clock). */
typedef struct wms_sim_order_info {
	char order_id[65];
	char wms_reference[65];
	const char *state;    /**< "RECEIVED", ..., "SHIPPED", "CANCELLED" (static) */
	const char *priority; /**< "STANDARD", "EXPRESS", "OVERNIGHT" (static) */
	size_t line_count;
	uint64_t total_quantity;
	/** SubmitOrder calls that named this order id (1 + duplicates). */
	unsigned submits;
	char ship_to_name[257];
	char country[3];
} wms_sim_order_info;

/** 1 and *out filled when the order exists, 0 otherwise. */
int wms_sim_order_get(wms_sim_order_info *out, wms_sim *sim, const char *order_id);

/** Return non-zero to stop the iteration. */
typedef int (*wms_sim_order_fn)(const wms_sim_order_info *order, void *ctx);

/** Call fn for every order in creation order, over a snapshot taken first
 *  (fn may call any wms_sim_* function). Returns the number of calls made. */
size_t wms_sim_order_foreach(wms_sim *sim, wms_sim_order_fn fn, void *ctx);

typedef struct wms_sim_stock {
	int64_t on_hand;
	int64_t reserved;
	int64_t available; /**< on_hand - reserved */
} wms_sim_stock;

/** 1 and *out filled for a catalogue SKU, 0 otherwise. */
int wms_sim_stock_get(wms_sim_stock *out, wms_sim *sim, const char *sku);

/** Set a catalogue SKU's stock on hand (reservations stay).
 *  WMS_SIM_ERR_INVALID_ARG for an unknown SKU or a negative amount. */
wms_sim_status wms_sim_set_stock(wms_sim *sim, const char *sku, int64_t on_hand);

/** Move the sim's clock forward (order states advance as if `ms` had passed;
 *  the fault schedule keeps real time). */
void wms_sim_advance_clock(wms_sim *sim, uint32_t ms);

#ifdef __cplusplus
}
#endif

#endif
