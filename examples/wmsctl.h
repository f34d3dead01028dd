/* wmsctl internals shared between its files. */
#ifndef WMSCTL_H
#define WMSCTL_H

#include <stdint.h>
#include <stdio.h>
#include <wms/wms.h>

/* Exit codes: the contract with scripts (printed by `wmsctl --help`). */
enum {
	CTL_EXIT_OK = 0,
	CTL_EXIT_INTERNAL = 1,     /* internal error, out of memory, output failed */
	CTL_EXIT_USAGE = 2,        /* usage error or invalid argument */
	CTL_EXIT_CIRCUIT_OPEN = 3, /* breaker open: nothing sent */
	CTL_EXIT_NOT_SENT = 4,     /* CONNECT / TLS: not sent */
	CTL_EXIT_UNKNOWN = 5,      /* TIMEOUT / TRANSPORT: delivery unknown */
	CTL_EXIT_REJECTED = 6,     /* SOAP fault, Client/Sender: the WMS rejected the request */
	CTL_EXIT_SERVER = 7,       /* SOAP fault Server/Receiver, or an HTTP error */
	CTL_EXIT_BAD_REPLY = 8,    /* NOT_XML, TRUNCATED, UNEXPECTED_REPLY, TOO_LARGE, UNSAFE_XML */
	CTL_EXIT_FIXTURE = 9       /* replay: no recorded exchange matched */
};

/* Everything the command line can say; unset fields are zero. */
typedef struct ctl_config {
	const char *command;      /* "submit", ... */
	/* every command */
	const char *endpoint;
	const char *fixtures;
	uint32_t timeout_ms;
	uint32_t connect_timeout_ms;
	int soap12;
	/* orders */
	const char *order_id;
	const char **skus;        /* argc-sized arrays */
	size_t sku_count;
	uint32_t *qtys;
	size_t qty_count;
	wms_priority priority;
	wms_address ship_to;
	const char *reason;
	/* load */
	uint32_t count;
	uint32_t interval_ms;
	int have_interval;
	uint32_t breaker_threshold;
	uint32_t open_ms;
	const char *call_log;
	const char *order_prefix;
} ctl_config;

/* wmsctl.c */
int ctl_make_client(wms_client **out, const ctl_config *cfg, const wms_breaker_options *bo);
/* Fill `order` (and `lines`, sku_count long) from the configuration. */
void ctl_fill_order(wms_order *order, wms_order_line *lines, const ctl_config *cfg);

/* wmsctl_load.c */
int ctl_run_load(const ctl_config *cfg);

/* wmsctl_out.c */
/* The exit code for a failed call (status != OK). */
int ctl_exit_code(wms_status st, const wms_error *err);
/* Whether a SOAP fault code is Server/Receiver (optionally dotted: "Server.Busy"). */
int ctl_fault_is_server(const char *fault_code);
/* "wmsctl: SUBMIT: TIMEOUT: message (delivery UNKNOWN, ...)" on stderr. */
void ctl_print_error(const char *command, wms_status st, const wms_error *err);
/* Print a value from the WMS with control characters replaced (no terminal escapes). */
void ctl_put_safe(FILE *f, const char *s);
/* A JSON string literal, quotes included; invalid UTF-8 becomes U+FFFD. */
void ctl_put_json(FILE *f, const char *s);
/* "ok", "fail" or "ignore": how libwms's default filter classifies the
 * outcome for the breaker (mirrors src/client.c). NULL for CIRCUIT_OPEN:
 * no call was made. */
const char *ctl_breaker_outcome(wms_status st, const wms_error *err);

#endif
