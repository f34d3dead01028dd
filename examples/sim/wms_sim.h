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
 * clear=1, advance_ms=N, schedule=TEXT).
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
 * "CancelOrder", "GetStockLevel") or, with op NULL, of all of them. An
 * operation's own fault wins over the all-operations one; a scheduled window
 * wins over both. WMS_SIM_FAULT_NONE with an op clears that op's fault; with
 * op NULL it clears every live fault (the schedule stays). param: see the
 * fault; 0 = its default. Setting or clearing `refuse` returns once the
 * listener is closed or listening again (WMS_SIM_ERR_LISTEN if the port could
 * not be bound again).
 */
wms_sim_status wms_sim_set_fault(wms_sim *sim, const char *op, wms_sim_fault kind,
				 uint32_t param);

/** Clear every live fault and the schedule; listening again when this returns. */
void wms_sim_clear_faults(wms_sim *sim);

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
