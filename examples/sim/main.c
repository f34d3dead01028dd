/*
 * wms-sim: the WMS simulator as a program (the API is in wms_sim.h).
 *
 *     wms-sim --port 0                      # prints: wms-sim listening on http://127.0.0.1:PORT/wms
 *     curl -d fault=hang -d op=SubmitOrder http://127.0.0.1:PORT/control
 *     kill -USR1 PID                        # every fault and the schedule cleared
 *     kill -TERM PID                        # clean stop
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <libxml/parser.h>
#include "util/num.h"
#include "wms_sim.h"

#define SIM_VERSION "0.3.2"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: wms-sim [options]\n"
		"  --port N            TCP port; 0 picks a free one (default 8080)\n"
		"  --bind ADDR         IPv4 or IPv6 address (default 127.0.0.1)\n"
		"  --tick-ms N         order states advance one step per N ms (default 1000)\n"
		"  --skus N            catalogue SKU-1..SKU-N (default 100)\n"
		"  --on-hand N         stock per SKU at start (default 10000)\n"
		"  --fault KIND        start with this fault: none, hang, refuse, slow, http-500,\n"
		"                      http-503, server-fault, client-fault, truncated, garbage,\n"
		"                      reset, reply-lost, every-nth\n"
		"  --fault-op OP       ... for one operation only (SubmitOrder, GetOrderStatus,\n"
		"                      CancelOrder, GetStockLevel)\n"
		"  --fault-param N     slow: delay ms; garbage: bytes; every-nth: N;\n"
		"                      refuse: duration ms (0 = until cleared)\n"
		"  --schedule FILE     fault windows, one per line: start_ms end_ms fault\n"
		"                      [op=OP] [param=N]; times from the start\n"
		"  --wsdl FILE         WSDL served at /wms?wsdl\n"
		"  --xsd FILE          schema requests are validated against\n"
		"  --quiet             no request log on stderr\n"
		"  --help, --version\n"
		"Prints 'wms-sim listening on URL' on stdout once listening.\n"
		"HTTP: POST /wms (SOAP 1.1/1.2), GET /wms?wsdl, GET /stats,\n"
		"POST /control (fault=KIND&op=OP&param=N, fault=none, clear=1, advance_ms=N,\n"
		"schedule=TEXT, reply=1&status=N&body=BYTES&... for a scripted reply, reply=none).\n"
		"Signals: SIGINT/SIGTERM stop, SIGUSR1 clears every fault, script and the schedule.\n"
		"Exit: 0 stopped cleanly, 1 could not start, 2 usage error.\n");
}

static int number(const char *flag, const char *v, unsigned long max, unsigned long *out)
{
	uint64_t u;
	if (!v || !*v || *v == '-' || *v == '+') {
		fprintf(stderr, "wms-sim: %s wants a number\n", flag);
		return -1;
	}
	if (wms__parse_uint_str(v, 0, max, &u) != WMS__NUM_OK) {
		fprintf(stderr, "wms-sim: %s: '%s' is not a number 0..%lu\n", flag, v, max);
		return -1;
	}
	*out = (unsigned long)u;
	return 0;
}

int main(int argc, char **argv)
{
	wms_sim_options o = WMS_SIM_OPTIONS_INIT;
	wms_sim_fault fault = WMS_SIM_FAULT_NONE;
	const char *fault_op = NULL;
	unsigned long n, fault_param = 0;
	int quiet = 0, i, sig = 0, have_fault = 0;
	sigset_t set;
	wms_sim *sim = NULL;
	wms_sim_status st;

	o.port = 8080;
	for (i = 1; i < argc; i++) {
		const char *a = argv[i], *v = NULL, *eq;
		char flag[32];

		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			usage(stdout);
			return 0;
		}
		if (strcmp(a, "--version") == 0) {
			printf("wms-sim " SIM_VERSION "\n");
			return 0;
		}
		if (strcmp(a, "--quiet") == 0 || strcmp(a, "-q") == 0) {
			quiet = 1;
			continue;
		}
		eq = strchr(a, '=');
		if (strncmp(a, "--", 2) != 0 || (eq ? (size_t)(eq - a) : strlen(a)) >= sizeof(flag)) {
			fprintf(stderr, "wms-sim: unknown argument '%s'\n", a);
			usage(stderr);
			return 2;
		}
		snprintf(flag, sizeof(flag), "%.*s", (int)(eq ? (size_t)(eq - a) : strlen(a)), a);
		if (eq)
			v = eq + 1;
		else if (i + 1 < argc)
			v = argv[++i];
		if (!v) {
			fprintf(stderr, "wms-sim: %s wants a value\n", flag);
			return 2;
		}
		if (strcmp(flag, "--port") == 0) {
			if (number(flag, v, 65535, &n))
				return 2;
			o.port = (uint16_t)n;
		} else if (strcmp(flag, "--bind") == 0) {
			o.bind = v;
		} else if (strcmp(flag, "--tick-ms") == 0) {
			if (number(flag, v, 86400000ul, &n))
				return 2;
			if (n == 0) {
				fprintf(stderr, "wms-sim: --tick-ms must be at least 1\n");
				return 2;
			}
			o.tick_ms = (uint32_t)n;
		} else if (strcmp(flag, "--skus") == 0) {
			if (number(flag, v, 1000000ul, &n))
				return 2;
			if (n == 0) {
				fprintf(stderr, "wms-sim: --skus must be at least 1\n");
				return 2;
			}
			o.sku_count = (uint32_t)n;
		} else if (strcmp(flag, "--on-hand") == 0) {
			if (number(flag, v, 1000000000ul, &n))
				return 2;
			o.on_hand = (int64_t)n;
		} else if (strcmp(flag, "--fault") == 0) {
			if (wms_sim_fault_parse(&fault, v) != WMS_SIM_OK) {
				fprintf(stderr, "wms-sim: --fault: %s\n", wms_sim_last_error());
				return 2;
			}
			have_fault = 1;
		} else if (strcmp(flag, "--fault-op") == 0) {
			fault_op = v;
		} else if (strcmp(flag, "--fault-param") == 0) {
			if (number(flag, v, 4294967295ul, &fault_param))
				return 2;
		} else if (strcmp(flag, "--schedule") == 0) {
			o.schedule_path = v;
		} else if (strcmp(flag, "--wsdl") == 0) {
			o.wsdl_path = v;
		} else if (strcmp(flag, "--xsd") == 0) {
			o.xsd_path = v;
		} else {
			fprintf(stderr, "wms-sim: unknown option '%s'\n", flag);
			usage(stderr);
			return 2;
		}
	}
	if ((fault_op || fault_param) && !have_fault) {
		fprintf(stderr, "wms-sim: --fault-op and --fault-param go with --fault\n");
		return 2;
	}
	if (!quiet)
		o.log = stderr;

	/* Every thread inherits this mask; main alone takes the signals. */
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &set, NULL);

	st = wms_sim_start(&sim, &o);
	if (st != WMS_SIM_OK) {
		fprintf(stderr, "wms-sim: %s\n", wms_sim_last_error());
		return 1;
	}
	if (have_fault) {
		st = wms_sim_set_fault(sim, fault_op, fault, (uint32_t)fault_param);
		if (st != WMS_SIM_OK) {
			fprintf(stderr, "wms-sim: --fault: %s\n", wms_sim_last_error());
			wms_sim_stop(sim);
			return st == WMS_SIM_ERR_INVALID_ARG ? 2 : 1;
		}
	}
	printf("wms-sim listening on %s\n", wms_sim_url(sim));
	fflush(stdout);

	for (;;) {
		if (sigwait(&set, &sig) != 0)
			continue;
		if (sig != SIGUSR1)
			break;
		wms_sim_clear_faults(sim);
		if (!quiet)
			fprintf(stderr, "wms-sim: SIGUSR1: faults, scripts and schedule cleared\n");
	}
	if (!quiet)
		fprintf(stderr, "wms-sim: %s: stopping after %llu requests, %zu orders\n",
			sig == SIGINT ? "SIGINT" : "SIGTERM",
			(unsigned long long)wms_sim_requests(sim, NULL), wms_sim_order_count(sim));
	wms_sim_stop(sim);
	xmlCleanupParser();
	return 0;
}
