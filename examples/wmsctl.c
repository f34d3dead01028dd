/*
 * wmsctl - talk to the WMS through libwms from a shell: submit an order,
 * query its status, cancel it, read stock levels, put a measured load on
 * the endpoint through one client and one breaker, print the breakers'
 * health, replay a call log through a breaker to tune it (breaker-sim), or
 * call any operation of the WMS's WSDL (call).
 * `wmsctl --help` lists the commands and the exit codes scripts can rely on.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "example_common.h"
#include "util/num.h"
#include "wmsctl.h"

#define CMD_SUBMIT 0x01u
#define CMD_STATUS 0x02u
#define CMD_CANCEL 0x04u
#define CMD_STOCK 0x08u
#define CMD_LOAD 0x10u
#define CMD_HEALTH 0x20u
#define CMD_SIM 0x40u
#define CMD_CALL 0x80u
#define CMD_BREAKER 0x100u
#define CMD_NET 0xbfu /* the commands that talk to the WMS */
#define CMD_ALL 0x1ffu

static const char exit_codes_text[] =
	"Exit codes:\n"
	"  0  success\n"
	"  1  internal error, out of memory, or the output could not be written\n"
	"  2  usage error or invalid argument (nothing sent)\n"
	"  3  CIRCUIT_OPEN or BULKHEAD_FULL: refused, nothing sent; retry later (with\n"
	"     a shared breaker: the fleet's is open or forced open; otherwise each run\n"
	"     starts with a closed breaker and no cap)\n"
	"  4  CONNECT or TLS: not sent; safe to resend\n"
	"  5  TIMEOUT or TRANSPORT: delivery unknown; resend with the same order id\n"
	"  6  SOAP fault Client/Sender: the WMS rejected the request; do not resend as is\n"
	"  7  SOAP fault Server/Receiver, or an HTTP error from the endpoint\n"
	"  8  bad reply: NOT_XML, TRUNCATED, UNEXPECTED_REPLY, TOO_LARGE, UNSAFE_XML\n"
	"  9  FIXTURE: --fixtures has no recorded exchange matching the request\n"
	"  10  health: DEGRADED, some breakers are not closed (the document is printed)\n"
	"  11  health: DOWN, every breaker is open (the document is printed)\n"
	"  load and breaker-sim exit 0 whenever they ran, whatever the calls did\n"
	"  (2 on usage errors, a bad SLA file, a bad call log, or a --health-listen\n"
	"  address that is malformed or cannot be bound).\n";

static const char sim_exit_text[] =
	"Exit codes:\n"
	"  0  replayed (whatever the breaker did)\n"
	"  1  out of memory, or the output could not be written\n"
	"  2  usage error, a bad SLA file, a call log that cannot be read or has a bad\n"
	"     line (nothing is printed on stdout then)\n";

static const char breaker_exit_text[] =
	"Exit codes:\n"
	"  0  changed: every breaker named reads the state asked, read back from Redis\n"
	"  1  the state read back differs (another change won, or this one was lost on\n"
	"     its way), out of memory, or the output could not be written\n"
	"  2  usage error, a bad SLA file, no shared block, an unknown --breaker\n"
	"  4  Redis did not answer within --store-wait-ms: nothing was changed (or,\n"
	"     when it was lost midway, the change may not have reached it); safe to\n"
	"     run again\n";

static const char common_text[] =
	"Common options (a flag overrides the SLA file, which overrides the default):\n"
	"  --config FILE             the SLA file (examples/fulfillment-sla.yaml): its\n"
	"                            client block and circuit_breaker block (retry and\n"
	"                            shared included: a shared block shares the breaker\n"
	"                            through Redis)\n"
	"  --endpoint URL            the WMS endpoint, http:// or https:// (default: the\n"
	"                            SLA file's client.endpoint, else $WMS_ENDPOINT;\n"
	"                            not needed with --fixtures)\n"
	"  --timeout-ms N            deadline of the whole call, 1-3600000 (default 10000)\n"
	"  --connect-timeout-ms N    connect deadline, 1-3600000 (default 2000)\n"
	"  --soap12, --soap11        speak SOAP 1.2 or 1.1 (default 1.1)\n"
	"  --fixtures DIR            answer from the recorded exchanges in DIR/*.xml\n"
	"                            (replay transport: nothing goes on the network)\n"
	"  --store-wait-ms N         with a shared breaker, wait up to N ms (1-3600000,\n"
	"                            default 5000) for it to join Redis before the first\n"
	"                            call, so the call sees the fleet's state; when Redis\n"
	"                            refuses or does not answer, this process's own\n"
	"                            breaker decides (said on stderr)\n"
	"  -h, --help                this help\n";

static const char order_text[] =
	"Order options:\n"
	"  --sku SKU --qty N         an order line; repeat the pair for more lines\n"
	"                            (the i-th --qty belongs to the i-th --sku; N 1-1000000)\n"
	"  --priority P              standard (default), express or overnight\n"
	"  --ship-to-name S          ship-to address; every field has a default so the\n"
	"  --ship-to-line1 S         minimal form works: \"wmsctl\", \"1 Dock Road\",\n"
	"  --ship-to-line2 S         (none), \"Springfield\", (none), \"00000\", \"US\"\n"
	"  --ship-to-city S\n"
	"  --ship-to-region S\n"
	"  --ship-to-postal-code S\n"
	"  --ship-to-country CC      ISO 3166-1 alpha-2\n";

typedef struct command {
	const char *name;
	unsigned bit;
	int (*run)(const ctl_config *cfg);
	const char *synopsis;
	const char *detail;
} command;

static int run_submit(const ctl_config *cfg);
static int run_status(const ctl_config *cfg);
static int run_cancel(const ctl_config *cfg);
static int run_stock(const ctl_config *cfg);
static int run_health(const ctl_config *cfg);

static const command commands[] = {
	{ "submit", CMD_SUBMIT, run_submit,
	  "wmsctl submit --endpoint URL --order-id ID --sku SKU --qty N [--sku SKU --qty N ...]\n"
	  "              [--priority P] [--ship-to-... S] [common options]",
	  "Submit an order; print the WMS reference on stdout (one line). Resubmitting\n"
	  "the same order id never creates a second order.\n" },
	{ "status", CMD_STATUS, run_status,
	  "wmsctl status --endpoint URL --order-id ID [common options]",
	  "Print \"ORDER_ID WMS_REFERENCE STATE UPDATED_AT\" (one line).\n" },
	{ "cancel", CMD_CANCEL, run_cancel,
	  "wmsctl cancel --endpoint URL --order-id ID [--reason R] [common options]",
	  "Cancel an order; print \"ORDER_ID STATE ALREADY_CANCELLED\" (0 or 1), one line.\n" },
	{ "stock", CMD_STOCK, run_stock,
	  "wmsctl stock --endpoint URL --sku SKU [--sku SKU ...] [common options]",
	  "Print \"SKU ON_HAND RESERVED AVAILABLE\", one line per SKU, in the order asked.\n" },
	{ "load", CMD_LOAD, ctl_run_load,
	  "wmsctl load --endpoint URL --count N --interval-ms M [--concurrency C]\n"
	  "            [--timeout-ms N] [--breaker-threshold N] [--open-ms N]\n"
	  "            [--call-log FILE] [--order-prefix P] [--health-listen ADDR:PORT]\n"
	  "            [--config FILE] [order options] [common options]",
	  "Submit N orders from one client (one breaker: SubmitOrder's with the SLA\n"
	  "file's scope per_operation), one every M ms (a fixed\n"
	  "schedule: a late call does not push the later ones back), ids P-1 ... P-N\n"
	  "(default P = load-<pid>); one call at a time, or up to C at once with\n"
	  "--concurrency. One JSON object per call on stdout:\n"
	  "  {\"seq\":1,\"t_ms\":0,\"status\":\"OK\",\"delivery\":\"ANSWERED\",\"breaker\":\"CLOSED\",\n"
	  "   \"latency_ms\":0.41}\n"
	  "(failed calls add \"message\", CIRCUIT_OPEN ones \"retry_after_ms\"; \"fault_code\",\n"
	  "\"wms_code\" and \"http_status\" follow when set), then "
	  "one summary object:\n"
	  "  {\"summary\":{\"calls\",\"ok\",\"failed\",\"rejected\",\"by_status\",\"transitions\",\n"
	  "   \"wall_ms\",\"time_waiting_ms\"}} (rejected = CIRCUIT_OPEN; transitions as the\n"
	  "breaker reported them; a shared breaker adds \"store\", its store's state at the\n"
	  "end: CONNECTING, CONNECTED or DEGRADED). Ctrl-C stops early, still with the\n"
	  "summary. Without --sku the order has one line SKU-1 x 1.\n"
	  "  --count N                 orders to submit, 1-10000000\n"
	  "  --interval-ms M           between call starts, 0-3600000\n"
	  "  --concurrency C           up to C calls in flight at once, 1-65536, all from\n"
	  "                            one thread (the asynchronous API, wms/async.h, on\n"
	  "                            libwms's own poll loop): a call starts when it is\n"
	  "                            due and fewer than C are in flight. Lines come as\n"
	  "                            calls complete (seq is the start order); the\n"
	  "                            summary adds \"concurrency\" (C), \"max_in_flight\"\n"
	  "                            (the most calls in flight at once) and \"threads\"\n"
	  "                            (the most threads the process had, sampled every\n"
	  "                            20 ms from /proc/self/status: this one, plus\n"
	  "                            libcurl's short-lived resolver threads for a host\n"
	  "                            name and --health-listen's server);\n"
	  "                            \"time_waiting_ms\" is the time the schedule held a\n"
	  "                            call back while fewer than C were in flight. Ctrl-C cancels\n"
	  "                            the calls in flight: their lines say CANCELLED, with\n"
	  "                            delivery UNKNOWN if the WMS may have the order.\n"
	  "                            Not with --call-log (breaker-sim replays calls one\n"
	  "                            after another). Default: one blocking call at a time\n"
	  "  --breaker-threshold N     failure_threshold: consecutive failures that open\n"
	  "                            the breaker, 1-1000000 (default 5)\n"
	  "  --open-ms N               open_duration_ms: how long it stays open,\n"
	  "                            1-86400000 (default 30000)\n"
	  "  --call-log FILE           write \"t_ms,outcome,duration_ms\" per call made;\n"
	  "                            outcome ok|fail|ignore as the breaker counted it\n"
	  "                            (CIRCUIT_OPEN calls were never made: not written;\n"
	  "                            with retries, one line per call, not per attempt).\n"
	  "                            `wmsctl breaker-sim --config F FILE` replays it\n"
	  "  --order-prefix P          order id prefix\n"
	  "  --health-listen ADDR:PORT serve the breakers' health for the length of the run\n"
	  "                            (from before the first call to after the summary):\n"
	  "                            GET http://ADDR:PORT/health (JSON; 503 when it is\n"
	  "                            open) and /metrics (Prometheus text), e.g.\n"
	  "                            127.0.0.1:9464 or [::1]:9464 (an IP address and a\n"
	  "                            port 1-65535; no host names); stderr says where.\n"
	  "                            Default: the SLA file's client.health_listen.\n"
	  "                            Exit 2, nothing sent, if it is malformed or cannot\n"
	  "                            be bound (in use, not this host's address)\n" },
	{ "health", CMD_HEALTH, run_health,
	  "wmsctl health --endpoint URL [--config FILE] [--probe [--sku SKU]] [--prometheus]\n"
	  "              [common options]",
	  "Build the client as configured (the SLA file's scope per_operation gives four\n"
	  "breakers, one per operation), optionally make one probe call through it, then\n"
	  "print the health document of every breaker: JSON (default)\n"
	  "  {\"status\":\"UP\",\"breakers\":[{\"name\":\"wms\",\"state\":\"CLOSED\",...}]}\n"
	  "or Prometheus text (--prometheus). The document is always printed; the exit\n"
	  "code is the overall status: 0 UP (every breaker closed), 10 DEGRADED,\n"
	  "11 DOWN (every breaker open). If the probe failed and the status is still UP\n"
	  "(one failure seldom opens a breaker), the probe's exit code (as for `stock`)\n"
	  "is returned instead, with its error on stderr.\n"
	  "  --probe                   first make one GetStockLevel call (SKU-1)\n"
	  "  --sku SKU                 the probe's SKU\n"
	  "  --prometheus              Prometheus text exposition instead of JSON\n" },
	{ "breaker-sim", CMD_SIM, ctl_run_breaker_sim,
	  "wmsctl breaker-sim [--config FILE.yaml] [--breaker-threshold N] [--open-ms N]\n"
	  "                   [CALLS | -]",
	  "Replay a call log through a breaker configured from the SLA file's\n"
	  "circuit_breaker block (no file or no block: the library defaults) on a\n"
	  "simulated clock, to see what it would have done. CALLS (a file; - or none:\n"
	  "stdin) is CSV, one call a line, as `wmsctl load --call-log` writes it:\n"
	  "  t_ms,outcome[,duration_ms]\n"
	  "outcome ok | fail | ignore: what the WMS would do if called (a rejected call\n"
	  "is not made). t_ms: whole milliseconds, never decreasing; duration_ms: 0 to\n"
	  "3600000, up to 6 decimals, default 0. Blank lines and # comments are skipped;\n"
	  "anything else is an error naming the line (exit 2), before any output.\n"
	  "\n"
	  "The model (seed 002's lab: Resilience4j fed the calls in order): for each\n"
	  "call the clock is set to t_ms and the breaker is asked; a permitted call's\n"
	  "outcome is recorded at once, at t_ms, its start moved back by duration_ms so\n"
	  "that a call longer than slow_call_duration_ms counts as slow (rate modes). A\n"
	  "call at exactly the end of the open duration is let through. The caller's\n"
	  "waiting time is the sum of the permitted calls' durations (a rejected call\n"
	  "costs 0); without a breaker it would have been the sum of all of them. Calls\n"
	  "never overlap, so max_wait_in_half_open_ms plays no part; scope and retry\n"
	  "are not simulated; open_duration_jitter_pct above 0 makes runs differ.\n"
	  "\n"
	  "Output: one JSON object per call, with the state after the call,\n"
	  "  {\"t_ms\":16000,\"permitted\":false,\"state\":\"OPEN\"}\n"
	  "then one summary object:\n"
	  "  {\"summary\":{\"transitions\":[\"CLOSED\",\"OPEN\",...],\"transition_times_ms\":[15000,...],\n"
	  "   \"permitted\",\"rejected\",\"successes\",\"failures\",\"ignored\",\"slow\",\n"
	  "   \"waiting_ms\",\"waiting_ms_without_breaker\",\"calls\"}}\n"
	  "transitions lists the states entered, starting with CLOSED;\n"
	  "transition_times_ms[i] is when transitions[i + 1] was entered. Seed 002's\n"
	  "presets are in examples/lab/ (README.md there).\n"
	  "  --config FILE             the SLA file (its circuit_breaker block)\n"
	  "  --breaker-threshold N     failure_threshold, overrides the file\n"
	  "  --open-ms N               open_duration_ms, overrides the file\n" },
	{ "breaker", CMD_BREAKER, ctl_run_breaker,
	  "wmsctl breaker force-open|force-closed|disable|reset --config FILE\n"
	  "               [--breaker NAME] [--store-wait-ms N]",
	  "Change the fleet's shared breakers by hand: the SLA file's circuit_breaker\n"
	  "block with its shared block (Redis). Every replica of the service sharing\n"
	  "them follows at once:\n"
	  "  force-open     every call refused (CIRCUIT_OPEN, nothing sent) until the\n"
	  "                 next change by hand: a planned WMS outage\n"
	  "  force-closed   closed now (the window cleared); failures open it again\n"
	  "  disable        every call let through, outcomes only counted, until the\n"
	  "                 next change by hand\n"
	  "  reset          the same as force-closed for the fleet (this process's own\n"
	  "                 counters are zeroed too)\n"
	  "The change is made once the breakers have joined Redis, sent before wmsctl\n"
	  "exits, then read back over a connection of its own; the health document as\n"
	  "read back is printed (one line of JSON, as `wmsctl health` prints it).\n"
	  "  --breaker NAME            change this one (default: every breaker the SLA\n"
	  "                            file gives the client: \"wms\", or wms.SubmitOrder,\n"
	  "                            wms.GetOrderStatus, ... with scope per_operation)\n"
	  "  --store-wait-ms N         how long to wait for Redis, each time (1-3600000,\n"
	  "                            default 5000)\n"
	  "  --config FILE             the SLA file (required)\n" },
	{ "call", CMD_CALL, ctl_run_call,
	  "wmsctl call --endpoint URL --operation NAME --action URI --body FILE.xml\n"
	  "            [--idempotent] [--reply-element NAME] [--reply-namespace URI]\n"
	  "            [common options]",
	  "Call any operation of the WMS's WSDL, one libwms does not model, through the\n"
	  "same client as the other commands (breaker, retries, deadlines, WS-Security\n"
	  "from the SLA file, --fixtures). FILE.xml is the SOAP Body's element (libwms\n"
	  "writes the envelope), at most 1 MiB (1048576 bytes), parsed with no network,\n"
	  "entities or DOCTYPE. The reply's Body element is printed on stdout as an XML\n"
	  "document, indented. A body that is missing, too large, empty or not XML is\n"
	  "exit 2, nothing sent.\n"
	  "  --operation NAME          the operation, 1-64 of [A-Za-z0-9._-]: in errors,\n"
	  "                            fixtures, and the breaker's name with scope\n"
	  "                            per_operation (wms.NAME)\n"
	  "  --action URI              the WSDL's soapAction for it (default: none)\n"
	  "  --body FILE.xml           the request element\n"
	  "  --idempotent              sending it twice does no harm (a read): retries may\n"
	  "                            resend it when its delivery is unknown\n"
	  "  --reply-element NAME      the reply element expected (default: any one)\n"
	  "  --reply-namespace URI     its namespace (default: any; \"\" for none); any\n"
	  "                            other reply is UNEXPECTED_REPLY, exit 8\n"
	  "Example, on wms-sim (examples/sim):\n"
	  "  wmsctl call --endpoint URL --operation GetShipmentStatus \\\n"
	  "    --action urn:libwms:warehouse:1/GetShipmentStatus --body ship.xml --idempotent\n" },
};

#define N_COMMANDS (sizeof(commands) / sizeof(commands[0]))

/* ---- options ----------------------------------------------------------- */

typedef enum opt_kind {
	K_FLAG,     /* int, set to 1 */
	K_STR,      /* const char *, any non-empty text */
	K_TEXT,     /* const char *, any text, "" included */
	K_ID,       /* const char *, 1-64 of [A-Za-z0-9._:-] */
	K_U32,      /* uint32_t in [min, max] */
	K_SKU,      /* appended to skus */
	K_QTY,      /* appended to qtys */
	K_PRIORITY, /* wms_priority */
	K_HELP,
	K_END       /* "--": what follows is positional */
} opt_kind;

typedef struct option {
	const char *name;
	opt_kind kind;
	unsigned cmds;
	size_t off;
	uint32_t min, max;
} option;

#define OFF(f) offsetof(ctl_config, f)
#define ORDER_CMDS (CMD_SUBMIT | CMD_LOAD)

static const option options[] = {
	{ "--config", K_STR, CMD_ALL, OFF(config_path), 0, 0 },
	{ "--endpoint", K_STR, CMD_NET, OFF(endpoint), 0, 0 },
	{ "--fixtures", K_STR, CMD_NET, OFF(fixtures), 0, 0 },
	{ "--timeout-ms", K_U32, CMD_NET, OFF(timeout_ms), 1, WMS_MAX_TIMEOUT_MS },
	{ "--connect-timeout-ms", K_U32, CMD_NET, OFF(connect_timeout_ms), 1, WMS_MAX_TIMEOUT_MS },
	{ "--soap12", K_FLAG, CMD_NET, OFF(soap12), 0, 0 },
	{ "--soap11", K_FLAG, CMD_NET, OFF(soap11), 0, 0 },
	{ "--help", K_HELP, CMD_ALL, 0, 0, 0 },
	{ "-h", K_HELP, CMD_ALL, 0, 0, 0 },
	{ "--", K_END, CMD_ALL, 0, 0, 0 },
	{ "--order-id", K_ID, CMD_SUBMIT | CMD_STATUS | CMD_CANCEL, OFF(order_id), 0, 0 },
	{ "--sku", K_SKU, ORDER_CMDS | CMD_STOCK | CMD_HEALTH, 0, 0, 0 },
	{ "--qty", K_QTY, ORDER_CMDS, 0, 1, 1000000 },
	{ "--priority", K_PRIORITY, ORDER_CMDS, OFF(priority), 0, 0 },
	{ "--ship-to-name", K_STR, ORDER_CMDS, OFF(ship_to.name), 0, 0 },
	{ "--ship-to-line1", K_STR, ORDER_CMDS, OFF(ship_to.line1), 0, 0 },
	{ "--ship-to-line2", K_STR, ORDER_CMDS, OFF(ship_to.line2), 0, 0 },
	{ "--ship-to-city", K_STR, ORDER_CMDS, OFF(ship_to.city), 0, 0 },
	{ "--ship-to-region", K_STR, ORDER_CMDS, OFF(ship_to.region), 0, 0 },
	{ "--ship-to-postal-code", K_STR, ORDER_CMDS, OFF(ship_to.postal_code), 0, 0 },
	{ "--ship-to-country", K_STR, ORDER_CMDS, OFF(ship_to.country), 0, 0 },
	{ "--reason", K_STR, CMD_CANCEL, OFF(reason), 0, 0 },
	{ "--count", K_U32, CMD_LOAD, OFF(count), 1, 10000000 },
	{ "--interval-ms", K_U32, CMD_LOAD, OFF(interval_ms), 0, 3600000 },
	{ "--breaker-threshold", K_U32, CMD_LOAD | CMD_SIM, OFF(breaker_threshold), 1, 1000000 },
	{ "--open-ms", K_U32, CMD_LOAD | CMD_SIM, OFF(open_ms), 1, 86400000 },
	{ "--call-log", K_STR, CMD_LOAD, OFF(call_log), 0, 0 },
	{ "--order-prefix", K_ID, CMD_LOAD, OFF(order_prefix), 0, 0 },
	{ "--health-listen", K_STR, CMD_LOAD, OFF(health_listen), 0, 0 },
	{ "--concurrency", K_U32, CMD_LOAD, OFF(concurrency), 1, 65536 },
	{ "--probe", K_FLAG, CMD_HEALTH, OFF(probe), 0, 0 },
	{ "--prometheus", K_FLAG, CMD_HEALTH, OFF(prometheus), 0, 0 },
	{ "--operation", K_STR, CMD_CALL, OFF(operation), 0, 0 },
	{ "--action", K_STR, CMD_CALL, OFF(action), 0, 0 },
	{ "--body", K_STR, CMD_CALL, OFF(body_path), 0, 0 },
	{ "--idempotent", K_FLAG, CMD_CALL, OFF(idempotent), 0, 0 },
	{ "--reply-element", K_STR, CMD_CALL, OFF(reply_element), 0, 0 },
	{ "--reply-namespace", K_TEXT, CMD_CALL, OFF(reply_namespace), 0, 0 },
	{ "--breaker", K_STR, CMD_BREAKER, OFF(breaker), 0, 0 },
	{ "--store-wait-ms", K_U32, CMD_NET | CMD_BREAKER, OFF(store_wait_ms), 1,
	  WMS_MAX_TIMEOUT_MS },
};

#define N_OPTIONS (sizeof(options) / sizeof(options[0]))

static void print_usage(FILE *f, const command *cmd)
{
	if (cmd) {
		fprintf(f, "usage: %s\n\n%s\n", cmd->synopsis, cmd->detail);
		if (cmd->bit & ORDER_CMDS)
			fprintf(f, "%s\n", order_text);
		if (cmd->bit & CMD_NET)
			fprintf(f, "%s\n%s", common_text, exit_codes_text);
		else
			fputs(cmd->bit & CMD_BREAKER ? breaker_exit_text : sim_exit_text, f);
		return;
	}
	fputs("usage: wmsctl COMMAND [options]    (wmsctl COMMAND --help for details)\n"
	      "       wmsctl --version | --help [COMMAND] | help [COMMAND]\n\nCommands:\n", f);
	for (size_t i = 0; i < N_COMMANDS; i++)
		fprintf(f, "  %s\n", commands[i].synopsis);
	fprintf(f, "\n%s\n%s", common_text, exit_codes_text);
}

/* Any usage error: one line saying what is wrong, the short usage, exit 2. */
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static int usage_error(const command *cmd, const char *fmt, ...)
{
	va_list ap;

	fputs("wmsctl: ", stderr);
	if (cmd)
		fprintf(stderr, "%s: ", cmd->name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	if (cmd)
		fprintf(stderr, "usage: %s\n(wmsctl %s --help for details)\n", cmd->synopsis,
			cmd->name);
	else
		fputs("usage: wmsctl COMMAND [options]; wmsctl --help lists the commands\n", stderr);
	return CTL_EXIT_USAGE;
}

static int parse_u32(uint32_t *out, const char *s, uint32_t min, uint32_t max)
{
	uint64_t v;
	if (wms__parse_uint_str(s, min, max, &v) != WMS__NUM_OK)
		return -1;
	*out = (uint32_t)v;
	return 0;
}

static int valid_id(const char *s)
{
	size_t n = strlen(s);

	if (n < 1 || n > WMS_ID_MAX)
		return 0;
	return strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._:-") == n;
}

static const option *find_option(const char *name, size_t len)
{
	for (size_t i = 0; i < N_OPTIONS; i++)
		if (strlen(options[i].name) == len && strncmp(options[i].name, name, len) == 0)
			return &options[i];
	return NULL;
}

/* Parse argv[0..argc) (after the command name) into cfg. Returns -1 when the
 * caller should print help and exit 0, else an exit code (0: go on). */
static int parse_args(ctl_config *cfg, const command *cmd, int argc, char **argv)
{
	char seen[N_OPTIONS] = { 0 };
	int i, only_positional = 0;

	for (i = 0; i < argc; i++) {
		const char *arg = argv[i], *eq = strchr(arg, '=');
		const char *val = NULL;
		size_t len = eq && strncmp(arg, "--", 2) == 0 ? (size_t)(eq - arg) : strlen(arg);
		const option *o = only_positional ? NULL : find_option(arg, len);
		uint32_t u;
		char *field;

		if (!o) {
			/* breaker-sim's CALLS: a path, or - for stdin */
			if ((cmd->bit & CMD_SIM) && !cfg->calls &&
			    (only_positional || arg[0] != '-' || strcmp(arg, "-") == 0)) {
				if (!*arg)
					return usage_error(cmd, "the call log's name is empty");
				cfg->calls = arg;
				continue;
			}
			/* breaker's ACTION */
			if ((cmd->bit & CMD_BREAKER) && !cfg->breaker_action && !only_positional &&
			    arg[0] != '-') {
				cfg->breaker_action = arg;
				continue;
			}
			if (only_positional || arg[0] != '-')
				return usage_error(cmd, "unexpected argument '%s'", arg);
			return usage_error(cmd, "unknown option '%s'", arg);
		}
		if (!(o->cmds & cmd->bit))
			return usage_error(cmd, "%s does not apply to %s", o->name, cmd->name);
		if (o->kind == K_HELP)
			return -1;
		if (o->kind == K_END) {
			if (eq)
				return usage_error(cmd, "unknown option '%s'", arg);
			only_positional = 1;
			continue;
		}
		if (o->kind == K_FLAG) {
			if (eq && len != strlen(arg))
				return usage_error(cmd, "%s takes no value", o->name);
			*(int *)((char *)cfg + o->off) = 1;
			continue;
		}
		if (eq && len != strlen(arg)) {
			val = eq + 1;
		} else {
			if (i + 1 >= argc)
				return usage_error(cmd, "%s needs a value", o->name);
			val = argv[++i];
		}
		if (o->kind != K_SKU && o->kind != K_QTY) {
			if (seen[o - options])
				return usage_error(cmd, "%s given twice", o->name);
			seen[o - options] = 1;
		}
		field = (char *)cfg + o->off;
		switch (o->kind) {
		case K_STR:
			if (!*val)
				return usage_error(cmd, "%s: the value is empty", o->name);
			/* fall through */
		case K_TEXT:
			*(const char **)field = val;
			break;
		case K_ID:
			if (!valid_id(val))
				return usage_error(cmd, "%s '%s': ids are 1-64 characters of "
						   "[A-Za-z0-9._:-]", o->name, val);
			*(const char **)field = val;
			break;
		case K_SKU:
			if (!valid_id(val))
				return usage_error(cmd, "--sku '%s': SKUs are 1-64 characters of "
						   "[A-Za-z0-9._:-]", val);
			cfg->skus[cfg->sku_count++] = val;
			break;
		case K_QTY:
			if (parse_u32(&u, val, o->min, o->max))
				return usage_error(cmd, "--qty '%s': must be a whole number 1-1000000",
						   val);
			cfg->qtys[cfg->qty_count++] = u;
			break;
		case K_U32:
			if (parse_u32(&u, val, o->min, o->max))
				return usage_error(cmd, "%s '%s': must be a whole number %" PRIu32
						   "-%" PRIu32, o->name, val, o->min, o->max);
			*(uint32_t *)field = u;
			if (o->off == OFF(interval_ms))
				cfg->have_interval = 1;
			break;
		case K_PRIORITY:
			if (strcasecmp(val, "standard") == 0)
				cfg->priority = WMS_PRIORITY_STANDARD;
			else if (strcasecmp(val, "express") == 0)
				cfg->priority = WMS_PRIORITY_EXPRESS;
			else if (strcasecmp(val, "overnight") == 0)
				cfg->priority = WMS_PRIORITY_OVERNIGHT;
			else
				return usage_error(cmd, "--priority '%s': standard, express or "
						   "overnight", val);
			break;
		case K_FLAG:
		case K_HELP:
		case K_END:
			break;
		}
	}
	return 0;
}

/* What each command needs once everything is parsed. */
static int check_args(ctl_config *cfg, const command *cmd)
{
	if (cmd->bit & CMD_BREAKER) {
		wms_client_options file = WMS_CLIENT_OPTIONS_INIT;
		if (!cfg->breaker_action)
			return usage_error(cmd, "say what to do: force-open, force-closed, disable "
					   "or reset");
		if (ctl_breaker_action(cfg->breaker_action) < 0)
			return usage_error(cmd, "'%s': force-open, force-closed, disable or reset",
					   cfg->breaker_action);
		if (!cfg->sla)
			return usage_error(cmd, "--config is required (an SLA file with a "
					   "circuit_breaker.shared block)");
		wms_config_apply(cfg->sla, &file);
		/* a change made in this process alone would end with it */
		if (!file.shared.redis_url)
			return usage_error(cmd, "%s has no circuit_breaker.shared block: without "
					   "Redis there is no fleet's breaker to change",
					   cfg->config_path);
		return 0;
	}
	if (!(cmd->bit & CMD_NET))
		return 0;
	if (!cfg->endpoint && cfg->sla) {
		wms_client_options file = WMS_CLIENT_OPTIONS_INIT;
		wms_config_apply(cfg->sla, &file);
		cfg->endpoint = file.endpoint; /* borrowed from cfg->sla */
	}
	if (!cfg->endpoint && !cfg->fixtures)
		cfg->endpoint = getenv("WMS_ENDPOINT");
	if ((!cfg->endpoint || !*cfg->endpoint) && !cfg->fixtures)
		return usage_error(cmd, "--endpoint is required (or --fixtures DIR, or an SLA "
				   "file with client.endpoint)");
	if (cfg->soap11 && cfg->soap12)
		return usage_error(cmd, "--soap11 and --soap12 exclude each other");
	if ((cmd->bit & CMD_HEALTH) && cfg->sku_count && !cfg->probe)
		return usage_error(cmd, "--sku names the probe's SKU: it needs --probe");
	if ((cmd->bit & CMD_HEALTH) && cfg->sku_count > 1)
		return usage_error(cmd, "the probe asks for one SKU");
	if ((cmd->bit & (CMD_SUBMIT | CMD_STATUS | CMD_CANCEL)) && !cfg->order_id)
		return usage_error(cmd, "--order-id is required");
	if ((cmd->bit & CMD_CALL) && (!cfg->operation || !cfg->body_path))
		return usage_error(cmd, "%s is required", !cfg->operation ? "--operation" : "--body");
	if ((cmd->bit & (CMD_SUBMIT | CMD_STOCK)) && !cfg->sku_count)
		return usage_error(cmd, "at least one --sku is required");
	if ((cmd->bit & ORDER_CMDS) && cfg->qty_count != cfg->sku_count)
		return usage_error(cmd, "give one --qty for each --sku");
	if ((cmd->bit & ORDER_CMDS) && cfg->sku_count > WMS_MAX_LINES)
		return usage_error(cmd, "at most 1000 order lines");
	if ((cmd->bit & CMD_STOCK) && cfg->sku_count > WMS_MAX_SKUS)
		return usage_error(cmd, "at most 200 SKUs per query");
	if (cmd->bit & CMD_LOAD) {
		if (!cfg->count)
			return usage_error(cmd, "--count is required");
		if (!cfg->have_interval)
			return usage_error(cmd, "--interval-ms is required");
		/* ids are PREFIX-SEQ: keep room for "-" and the widest sequence number */
		if (cfg->order_prefix) {
			char widest[16];
			int digits = snprintf(widest, sizeof(widest), "%" PRIu32, cfg->count);
			if (strlen(cfg->order_prefix) + 1 + (size_t)digits > WMS_ID_MAX)
				return usage_error(cmd, "--order-prefix '%s' is too long for "
						   "--count (ids are at most 64 characters)",
						   cfg->order_prefix);
		}
		/* breaker-sim replays calls that never overlap */
		if (cfg->concurrency && cfg->call_log)
			return usage_error(cmd, "--call-log records calls made one after another "
					   "(breaker-sim's model): not with --concurrency");
		/* the flag first, else the SLA file's client.health_listen */
		if (!cfg->health_listen && cfg->sla)
			cfg->health_listen = wms_config_health_listen(cfg->sla);
		/* the library takes port 0 (any free port); a person could not find it */
		if (cfg->health_listen) {
			const char *port = strrchr(cfg->health_listen, ':');
			if (port && port[1] && strspn(port + 1, "0") == strlen(port + 1))
				return usage_error(cmd, "--health-listen '%s': give a port "
						   "1-65535", cfg->health_listen);
		}
	}
	return 0;
}

/* ---- the client -------------------------------------------------------- */

int ctl_make_client(wms_client **out, const ctl_config *cfg, const wms_breaker_options *bo)
{
	wms_client_options opts = WMS_CLIENT_OPTIONS_INIT;
	wms_transport *transport = NULL;
	wms_error err;
	wms_status st;

	wms_error_clear(&err);
	if (cfg->no_wms) {
		transport = ctl_no_wms_transport();
		if (!transport) {
			fputs("wmsctl: out of memory\n", stderr);
			return CTL_EXIT_INTERNAL;
		}
	} else if (cfg->fixtures) {
		wms_replay_options ro = WMS_REPLAY_OPTIONS_INIT;
		ro.directory = cfg->fixtures;
		ro.order = WMS_REPLAY_ANY;
		st = wms_replay_transport_new(&transport, &ro, &err);
		if (st != WMS_OK) {
			ctl_print_error(cfg->command, st, &err);
			/* a directory that does not load is a bad argument, not a mismatch */
			return st == WMS_ERR_FIXTURE ? CTL_EXIT_USAGE : ctl_exit_code(st, &err);
		}
	}
	if (bo)
		opts.breaker_options = *bo;
	/* cfg->sla lives until main returns: its borrowed strings outlive wms_client_new */
	if (cfg->sla)
		wms_config_apply(cfg->sla, &opts);
	if (cfg->endpoint)
		opts.endpoint = cfg->endpoint;
	if (cfg->soap12)
		opts.soap_version = WMS_SOAP_12;
	else if (cfg->soap11)
		opts.soap_version = WMS_SOAP_11;
	if (cfg->timeout_ms)
		opts.timeout_ms = cfg->timeout_ms;
	if (cfg->connect_timeout_ms)
		opts.connect_timeout_ms = cfg->connect_timeout_ms;
	ctl_breaker_flags(&opts.breaker_options, cfg);
	opts.transport = transport; /* owned by the client from here on */
	if (!transport) /* a replay transport sends nothing: no user agent */
		opts.curl.user_agent = "wmsctl/" WMS_VERSION;
	st = wms_client_new(out, &opts, &err);
	if (st != WMS_OK) {
		ctl_print_error(cfg->command, st, &err);
		return ctl_exit_code(st, &err);
	}
	/* a one-shot call decided by a breaker still making its first
	 * connection would ignore the fleet's state (the breaker command
	 * waits on its own terms) */
	if (opts.shared.redis_url && !cfg->no_wms &&
	    !ex_wait_store(*out, cfg->store_wait_ms ? cfg->store_wait_ms : CTL_STORE_WAIT_MS, 0))
		fprintf(stderr, "wmsctl: %s: the shared breaker has not joined Redis: this "
			"process's own breaker decides\n", cfg->command);
	return CTL_EXIT_OK;
}


void ctl_fill_order(wms_order *order, wms_order_line *lines, const ctl_config *cfg)
{
	const wms_address *a = &cfg->ship_to;

	for (size_t i = 0; i < cfg->sku_count; i++) {
		lines[i].sku = cfg->skus[i];
		lines[i].quantity = cfg->qtys[i];
	}
	order->version = WMS_ORDER_VERSION;
	order->order_id = cfg->order_id;
	order->priority = cfg->priority;
	order->lines = lines;
	order->line_count = cfg->sku_count;
	order->ship_to.name = a->name ? a->name : "wmsctl";
	order->ship_to.line1 = a->line1 ? a->line1 : "1 Dock Road";
	order->ship_to.line2 = a->line2;
	order->ship_to.city = a->city ? a->city : "Springfield";
	order->ship_to.region = a->region;
	order->ship_to.postal_code = a->postal_code ? a->postal_code : "00000";
	order->ship_to.country = a->country ? a->country : "US";
}

int ctl_finish(const ctl_config *cfg, wms_status st, const wms_error *err)
{
	if (st != WMS_OK) {
		ctl_print_error(cfg->command, st, err);
		return ctl_exit_code(st, err);
	}
	if (fflush(stdout) != 0 || ferror(stdout)) {
		perror("wmsctl: writing the output");
		return CTL_EXIT_INTERNAL;
	}
	return CTL_EXIT_OK;
}

/* ---- commands ---------------------------------------------------------- */

static int run_submit(const ctl_config *cfg)
{
	wms_order order = WMS_ORDER_INIT;
	wms_order_line *lines = NULL;
	wms_submit_reply reply;
	wms_client *client = NULL;
	wms_error err;
	wms_status st;
	int rc;

	rc = ctl_make_client(&client, cfg, NULL);
	if (rc != CTL_EXIT_OK)
		goto done;
	lines = calloc(cfg->sku_count, sizeof(*lines));
	if (!lines) {
		fputs("wmsctl: submit: out of memory\n", stderr);
		rc = CTL_EXIT_INTERNAL;
		goto done;
	}
	ctl_fill_order(&order, lines, cfg);
	st = wms_submit_order(&reply, client, &order, &err);
	if (st == WMS_OK) {
		ctl_put_safe(stdout, reply.wms_reference);
		fputc('\n', stdout);
	}
	rc = ctl_finish(cfg, st, &err);
done:
	free(lines);
	wms_client_free(client);
	return rc;
}

static int run_status(const ctl_config *cfg)
{
	wms_status_reply reply;
	wms_client *client = NULL;
	wms_error err;
	wms_status st;
	int rc;

	rc = ctl_make_client(&client, cfg, NULL);
	if (rc != CTL_EXIT_OK)
		goto done;
	st = wms_get_order_status(&reply, client, cfg->order_id, &err);
	if (st == WMS_OK) {
		ctl_put_safe(stdout, reply.order_id);
		fputc(' ', stdout);
		ctl_put_safe(stdout, reply.wms_reference);
		printf(" %s ", wms_order_state_name(reply.state));
		ctl_put_safe(stdout, reply.updated_at);
		fputc('\n', stdout);
	}
	rc = ctl_finish(cfg, st, &err);
done:
	wms_client_free(client);
	return rc;
}

static int run_cancel(const ctl_config *cfg)
{
	wms_cancel_reply reply;
	wms_client *client = NULL;
	wms_error err;
	wms_status st;
	int rc;

	rc = ctl_make_client(&client, cfg, NULL);
	if (rc != CTL_EXIT_OK)
		goto done;
	st = wms_cancel_order(&reply, client, cfg->order_id, cfg->reason, &err);
	if (st == WMS_OK) {
		ctl_put_safe(stdout, reply.order_id);
		printf(" %s %d\n", wms_order_state_name(reply.state), reply.already_cancelled ? 1 : 0);
	}
	rc = ctl_finish(cfg, st, &err);
done:
	wms_client_free(client);
	return rc;
}

static int run_stock(const ctl_config *cfg)
{
	wms_stock_reply *reply = NULL;
	wms_client *client = NULL;
	wms_error err;
	wms_status st;
	int rc;

	rc = ctl_make_client(&client, cfg, NULL);
	if (rc != CTL_EXIT_OK)
		goto done;
	st = wms_get_stock_level(&reply, client, cfg->skus, cfg->sku_count, &err);
	if (st == WMS_OK) {
		for (size_t i = 0; i < reply->count; i++) {
			const wms_stock_level *l = &reply->levels[i];
			ctl_put_safe(stdout, l->sku);
			printf(" %" PRId64 " %" PRId64 " %" PRId64 "\n", l->on_hand, l->reserved,
			       l->available);
		}
	}
	rc = ctl_finish(cfg, st, &err);
done:
	wms_stock_reply_free(reply);
	wms_client_free(client);
	return rc;
}

/* The overall status of the client's breakers, as wms/health.h defines it. */
static int health_exit_code(wms_client *client)
{
	wms_breaker *b[EX_MAX_BREAKERS];
	size_t n = wms_client_breakers(b, EX_MAX_BREAKERS, client), up = 0, down = 0;

	if (n > EX_MAX_BREAKERS)
		n = EX_MAX_BREAKERS;
	for (size_t i = 0; i < n; i++) {
		switch (wms_breaker_state_get(b[i])) {
		case WMS_BREAKER_STATE_CLOSED:
		case WMS_BREAKER_STATE_DISABLED:
			up++;
			break;
		case WMS_BREAKER_STATE_OPEN:
		case WMS_BREAKER_STATE_FORCED_OPEN:
			down++;
			break;
		case WMS_BREAKER_STATE_HALF_OPEN:
			break;
		}
	}
	if (up == n)
		return CTL_EXIT_OK;
	return down == n ? CTL_EXIT_DOWN : CTL_EXIT_DEGRADED;
}

static int run_health(const ctl_config *cfg)
{
	wms_stock_reply *reply = NULL;
	wms_client *client = NULL;
	char *doc = NULL;
	int rc, probe_rc = CTL_EXIT_OK;
	wms_error err;
	wms_status st;

	rc = ctl_make_client(&client, cfg, NULL);
	if (rc != CTL_EXIT_OK)
		goto done;
	if (cfg->probe) {
		const char *sku = cfg->sku_count ? cfg->skus[0] : "SKU-1";
		st = wms_get_stock_level(&reply, client, &sku, 1, &err);
		if (st != WMS_OK) {
			ctl_print_error(cfg->command, st, &err);
			probe_rc = ctl_exit_code(st, &err);
		}
	}
	st = cfg->prometheus ? wms_client_health_prometheus(&doc, client, NULL)
			     : wms_client_health_json(&doc, client);
	if (st != WMS_OK) {
		fprintf(stderr, "wmsctl: health: cannot render the document: %s\n",
			wms_strerror(st));
		rc = CTL_EXIT_INTERNAL;
		goto done;
	}
	fputs(doc, stdout);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		perror("wmsctl: writing the output");
		rc = CTL_EXIT_INTERNAL;
		goto done;
	}
	rc = health_exit_code(client);
	if (rc == CTL_EXIT_OK)
		rc = probe_rc;
done:
	wms_free(doc);
	wms_stock_reply_free(reply);
	wms_client_free(client);
	return rc;
}

/* ---- main -------------------------------------------------------------- */

static const command *find_command(const char *name)
{
	for (size_t i = 0; i < N_COMMANDS; i++)
		if (strcmp(commands[i].name, name) == 0)
			return &commands[i];
	return NULL;
}

int main(int argc, char **argv)
{
	ctl_config cfg;
	const command *cmd;
	int rc;

	if (argc < 2)
		return usage_error(NULL, "no command given");
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		cmd = argc > 2 ? find_command(argv[2]) : NULL;
		if (argc > 2 && !cmd)
			return usage_error(NULL, "unknown command '%s'", argv[2]);
		print_usage(stdout, cmd);
		return CTL_EXIT_OK;
	}
	if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0) {
		printf("wmsctl %s (libwms %s)\n", WMS_VERSION, wms_version());
		return CTL_EXIT_OK;
	}
	cmd = find_command(argv[1]);
	if (!cmd)
		return usage_error(NULL, "unknown %s '%s'",
				   argv[1][0] == '-' ? "option" : "command", argv[1]);

	memset(&cfg, 0, sizeof(cfg));
	cfg.command = cmd->name;
	cfg.priority = WMS_PRIORITY_STANDARD;
	/* no option repeats more often than argv is long */
	cfg.skus = calloc((size_t)argc, sizeof(*cfg.skus));
	cfg.qtys = calloc((size_t)argc, sizeof(*cfg.qtys));
	if (!cfg.skus || !cfg.qtys) {
		fputs("wmsctl: out of memory\n", stderr);
		rc = CTL_EXIT_INTERNAL;
		goto done;
	}
	rc = parse_args(&cfg, cmd, argc - 2, argv + 2);
	if (rc < 0) {
		print_usage(stdout, cmd);
		rc = CTL_EXIT_OK;
		goto done;
	}
	if (rc == CTL_EXIT_OK && cfg.config_path) {
		wms_error err;
		wms_status st = wms_config_load_yaml(&cfg.sla, cfg.config_path, &err);
		if (st != WMS_OK) {
			/* the message names the file, the line and the key */
			fprintf(stderr, "wmsctl: %s: ", cmd->name);
			ctl_put_safe(stderr, err.message[0] ? err.message : wms_strerror(st));
			fputc('\n', stderr);
			rc = ctl_exit_code(st, &err);
		}
	}
	if (rc == CTL_EXIT_OK)
		rc = check_args(&cfg, cmd);
	if (rc == CTL_EXIT_OK)
		rc = cmd->run(&cfg);
done:
	wms_config_free(cfg.sla);
	free(cfg.skus);
	free(cfg.qtys);
	return rc;
}
