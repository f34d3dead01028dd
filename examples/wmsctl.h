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
	CTL_EXIT_FIXTURE = 9,      /* replay: no recorded exchange matched */
	CTL_EXIT_DEGRADED = 10,    /* health: some breakers are not closed */
	CTL_EXIT_DOWN = 11         /* health: every breaker is open */
};

/* Everything the command line can say; unset fields are zero. */
typedef struct ctl_config {
	const char *command;      /* "submit", ... */
	/* every command */
	const char *config_path;  /* --config: the SLA file */
	wms_config *sla;          /* ... loaded by main, freed by main */
	/* every command that talks to the WMS */
	const char *endpoint;     /* --endpoint, else the SLA file's, else $WMS_ENDPOINT */
	const char *fixtures;
	uint32_t timeout_ms;
	uint32_t connect_timeout_ms;
	int soap12;
	int soap11;
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
	const char *health_listen; /* --health-listen ADDR:PORT: serve /health, /metrics */
	uint32_t concurrency;      /* --concurrency N: up to N calls in flight from one
				      thread (wms/async.h); 0: one blocking call at a time */
	/* health */
	int probe;
	int prometheus;
	/* breaker-sim */
	const char *calls;        /* the call log: a path, "-" or NULL for stdin */
	/* call */
	const char *operation;
	const char *action;
	const char *body_path;
	const char *reply_element;
	const char *reply_namespace; /* "" allowed: the reply element has no namespace */
	int idempotent;
	/* breaker */
	const char *breaker_action; /* force-open | force-closed | disable | reset */
	const char *breaker;      /* --breaker NAME: one of the client's breakers */
	/* with a shared breaker: how long to wait for the store to join Redis */
	uint32_t store_wait_ms;   /* --store-wait-ms; 0: CTL_STORE_WAIT_MS */
	int no_wms;               /* the command calls no WMS: no endpoint needed */
} ctl_config;

#define CTL_STORE_WAIT_MS 5000u

/* wmsctl.c */
/* A client for cfg. Settings are layered: `bo` (the command's breaker
 * defaults: name, hooks; NULL = none), then the SLA file (cfg->sla), then
 * the command-line flags. */
int ctl_make_client(wms_client **out, const ctl_config *cfg, const wms_breaker_options *bo);
/* Fill `order` (and `lines`, sku_count long) from the configuration. */
void ctl_fill_order(wms_order *order, wms_order_line *lines, const ctl_config *cfg);
/* End a one-shot command: print its error, or flush its output; the exit code. */
int ctl_finish(const ctl_config *cfg, wms_status st, const wms_error *err);

/* wmsctl_call.c: any operation (wms_call_bytes) */
#define CTL_CALL_BODY_MAX (1024u * 1024u) /* --body: 1 MiB, said in `call --help` */
int ctl_run_call(const ctl_config *cfg);

/* wmsctl_breaker.c: the fleet's shared breakers changed by hand */
int ctl_run_breaker(const ctl_config *cfg);
/* The index of an action ("force-open", ...), -1 for none. */
int ctl_breaker_action(const char *name);
/* A transport that sends nothing (a command that calls no WMS); NULL when
 * out of memory. */
wms_transport *ctl_no_wms_transport(void);

/* wmsctl_load.c */
int ctl_run_load(const ctl_config *cfg);

/* wmsctl_tuner.c: breaker-sim */
typedef struct ctl_sim_call {
	uint64_t t_ms;
	uint64_t duration_ns; /* how long the call would take if made */
	wms_outcome outcome;
} ctl_sim_call;

/* The largest t_ms and duration_ms a call log may hold (no call outlasts
 * the longest deadline libwms allows). */
#define CTL_SIM_MAX_T_MS 1000000000000ull /* about 31 years */
#define CTL_SIM_MAX_DURATION_MS WMS_MAX_TIMEOUT_MS

int ctl_run_breaker_sim(const ctl_config *cfg);
/* The breaker flags (--breaker-threshold, --open-ms) over `bo`. */
void ctl_breaker_flags(wms_breaker_options *bo, const ctl_config *cfg);
/* One line of a call log (`len` bytes, no newline): 1 = a call in *out,
 * 0 = blank or comment, -1 = bad, with the reason in `why`. */
int ctl_sim_parse_line(ctl_sim_call *out, const char *line, size_t len, char *why,
		       size_t why_size);
/* Read a whole call log. Errors go to `errf` as "wmsctl: breaker-sim: NAME:
 * line N: ..."; returns an exit code (0, 1 out of memory / read error, 2 bad). */
int ctl_sim_read(ctl_sim_call **out, size_t *count, FILE *in, const char *name, FILE *errf);
/* Replay calls through a breaker made from `bo` (its clock and event hook
 * are replaced), printing JSON lines to `out`. Returns an exit code. */
int ctl_sim_replay(FILE *out, const ctl_sim_call *calls, size_t count,
		   const wms_breaker_options *bo, FILE *errf);

/* wmsctl_out.c */
/* The exit code for a failed call (status != OK). */
int ctl_exit_code(wms_status st, const wms_error *err);
/* Whether a SOAP fault code is Server/Receiver (optionally dotted: "Server.Busy"). */
int ctl_fault_is_server(const wms_error *err);
/* "wmsctl: SUBMIT: TIMEOUT: message (delivery UNKNOWN, ...)" on stderr. */
void ctl_print_error(const char *command, wms_status st, const wms_error *err);
/* Print a value from the WMS with control characters replaced (no terminal escapes). */
void ctl_put_safe(FILE *f, const char *s);
/* A JSON string literal, quotes included; invalid UTF-8 becomes U+FFFD. */
void ctl_put_json(FILE *f, const char *s);
/* "ok", "fail" or "ignore": how libwms's default filter classifies the
 * outcome for the breaker (mirrors src/client/classify.c). NULL for CIRCUIT_OPEN:
 * no call was made. */
const char *ctl_breaker_outcome(wms_status st, const wms_error *err);

#endif
