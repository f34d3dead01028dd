/*
 * wms-sim: the sim object and the rest of the API of wms_sim.h: names and
 * errors, the clock, the counters and the order ledger, start and stop. The
 * HTTP side is in sim_http.c (the daemon, dispatch), sim_serve.c (answering
 * a request) and sim_control.c (/stats, /control); fault injection is in
 * sim_faults.c, scripted replies in sim_scripts.c, envelopes in sim_soap.c,
 * the warehouse in sim_store.c.
 *
 * Threads: libmicrohttpd runs one thread per connection, so a hanging or
 * slow request blocks nobody else; those wait on `wake` and leave when the
 * client goes away or the listener is being closed. A supervisor thread owns
 * the daemon after start: `refuse` stops it (every connection closes, new
 * connects are refused) and leaving `refuse` starts a new one on the same
 * port; scheduled windows are followed by the same thread.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <libxml/parser.h>
#include "sim_http.h"
#include "wms_sim_config.h"

#define WSDL_PLACEHOLDER "http://localhost:8080/wms"

/* ---- errors and buffers ---------------------------------------------------- */

static _Thread_local char last_error[256];

wms_sim_status wms_sim__fail(wms_sim_status st, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(last_error, sizeof(last_error), fmt, ap);
	va_end(ap);
	return st;
}

const char *wms_sim_last_error(void)
{
	return last_error;
}

const char *wms_sim_status_name(wms_sim_status st)
{
	switch (st) {
	case WMS_SIM_OK: return "OK";
	case WMS_SIM_ERR_INVALID_ARG: return "INVALID_ARG";
	case WMS_SIM_ERR_NOMEM: return "NOMEM";
	case WMS_SIM_ERR_IO: return "IO";
	case WMS_SIM_ERR_PARSE: return "PARSE";
	case WMS_SIM_ERR_LISTEN: return "LISTEN";
	case WMS_SIM_ERR_INTERNAL: return "INTERNAL";
	}
	return "UNKNOWN_STATUS";
}

/* ---- names ---------------------------------------------------------------- */

const char *const wms_sim__op_names[SIM_OP_COUNT] = { "SubmitOrder", "GetOrderStatus",
						      "CancelOrder", "GetStockLevel",
						      "GetShipmentStatus" };

const char *wms_sim__op_name(sim_op op)
{
	return op >= 0 && op < SIM_OP_COUNT ? wms_sim__op_names[op] : NULL;
}

sim_op wms_sim__op_from_name(const char *name, size_t len)
{
	int i;
	for (i = 0; i < SIM_OP_COUNT; i++)
		if (strlen(wms_sim__op_names[i]) == len &&
		    memcmp(wms_sim__op_names[i], name, len) == 0)
			return (sim_op)i;
	return SIM_OP_NONE;
}

const char *const wms_sim__fault_names[WMS_SIM_FAULT_COUNT] = {
	"none", "hang", "refuse", "slow", "http-500", "http-503", "server-fault",
	"client-fault", "truncated", "garbage", "reset", "reply-lost", "every-nth"
};

const char *wms_sim_fault_name(wms_sim_fault f)
{
	return (unsigned)f < WMS_SIM_FAULT_COUNT ? wms_sim__fault_names[f] : "unknown";
}

/* Compare ignoring case, '-' and '_' ("HTTP_500", "http500", "http-500"). */
static int loose_equal(const char *a, const char *b)
{
	for (;;) {
		while (*a == '-' || *a == '_')
			a++;
		while (*b == '-' || *b == '_')
			b++;
		if (!*a || !*b)
			return !*a && !*b;
		if ((*a | 0x20) != (*b | 0x20))
			return 0;
		a++;
		b++;
	}
}

wms_sim_status wms_sim_fault_parse(wms_sim_fault *out, const char *name)
{
	int i;
	if (!out || !name)
		return wms_sim__fail(WMS_SIM_ERR_INVALID_ARG, "fault name is NULL");
	for (i = 0; i < WMS_SIM_FAULT_COUNT; i++)
		if (loose_equal(name, wms_sim__fault_names[i])) {
			*out = (wms_sim_fault)i;
			return WMS_SIM_OK;
		}
	return wms_sim__fail(WMS_SIM_ERR_INVALID_ARG,
			     "unknown fault '%.40s' (none, hang, refuse, slow, http-500, http-503, "
			     "server-fault, client-fault, truncated, garbage, reset, reply-lost, "
			     "every-nth)", name);
}

/* ---- the sim ---------------------------------------------------------------- */

uint64_t wms_sim__mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void deadline_ts(struct timespec *ts, uint64_t at_ns)
{
	ts->tv_sec = (time_t)(at_ns / 1000000000ull);
	ts->tv_nsec = (long)(at_ns % 1000000000ull);
}

/* Wait on `wake` until at_ns (monotonic) at the latest. Lock held. */
void wms_sim__wait_until(wms_sim *s, uint64_t at_ns)
{
	struct timespec ts;
	deadline_ts(&ts, at_ns);
	pthread_cond_timedwait(&s->wake, &s->lock, &ts);
}

static uint64_t sim_now_locked(const wms_sim *s)
{
	return wms_sim__mono_ns() + s->clock_offset_ns;
}

uint64_t wms_sim__now(wms_sim *s)
{
	uint64_t t;
	pthread_mutex_lock(&s->lock);
	t = sim_now_locked(s);
	pthread_mutex_unlock(&s->lock);
	return t;
}

/* ---- counters and ledger ---------------------------------------------------- */

uint64_t wms_sim_connections(wms_sim *s, uint64_t *open_now)
{
	uint64_t n;
	if (open_now)
		*open_now = 0;
	if (!s)
		return 0;
	pthread_mutex_lock(&s->lock);
	n = s->conns_accepted;
	if (open_now)
		*open_now = s->conns_open;
	pthread_mutex_unlock(&s->lock);
	return n;
}

uint64_t wms_sim_requests(wms_sim *s, const char *op)
{
	uint64_t n = 0;
	sim_op o;
	if (!s)
		return 0;
	o = op ? wms_sim__op_from_name(op, strlen(op)) : SIM_OP_NONE;
	pthread_mutex_lock(&s->lock);
	if (!op)
		n = s->requests_total;
	else if (o != SIM_OP_NONE)
		n = s->requests_op[o];
	pthread_mutex_unlock(&s->lock);
	return n;
}

size_t wms_sim_order_count(wms_sim *s)
{
	return s ? wms_sim__store_count(s->store) : 0;
}

int wms_sim_order_get(wms_sim_order_info *out, wms_sim *s, const char *order_id)
{
	wms_sim_order_info tmp;
	if (!s || !order_id)
		return 0;
	return wms_sim__store_get(s->store, wms_sim__now(s), order_id, out ? out : &tmp);
}

size_t wms_sim_order_foreach(wms_sim *s, wms_sim_order_fn fn, void *ctx)
{
	wms_sim_order_info *v = NULL;
	size_t n = 0, i, calls = 0;
	if (!s || !fn)
		return 0;
	if (wms_sim__store_snapshot(s->store, wms_sim__now(s), &v, &n) != 0)
		return 0;
	for (i = 0; i < n; i++) {
		calls++;
		if (fn(&v[i], ctx))
			break;
	}
	free(v);
	return calls;
}

int wms_sim_stock_get(wms_sim_stock *out, wms_sim *s, const char *sku)
{
	wms_sim_stock tmp;
	if (!s || !sku)
		return 0;
	return wms_sim__store_stock_get(s->store, wms_sim__now(s), sku, out ? out : &tmp);
}

wms_sim_status wms_sim_set_stock(wms_sim *s, const char *sku, int64_t on_hand)
{
	if (!s || !sku || on_hand < 0)
		return wms_sim__fail(WMS_SIM_ERR_INVALID_ARG,
				     "sim and sku are required and on_hand must be >= 0");
	if (!wms_sim__store_set_stock(s->store, wms_sim__now(s), sku, on_hand))
		return wms_sim__fail(WMS_SIM_ERR_INVALID_ARG, "%.64s is not in the catalogue", sku);
	return WMS_SIM_OK;
}

void wms_sim_advance_clock(wms_sim *s, uint32_t ms)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	s->clock_offset_ns += (uint64_t)ms * NS_PER_MS;
	pthread_mutex_unlock(&s->lock);
}

uint16_t wms_sim_port(const wms_sim *s)
{
	return s ? s->port : 0;
}

const char *wms_sim_url(const wms_sim *s)
{
	return s ? s->url : NULL;
}

const char *wms_sim_base_url(const wms_sim *s)
{
	return s ? s->base_url : NULL;
}

/* ---- start and stop ---------------------------------------------------------- */

wms_sim_status wms_sim__read_file(const char *path, char **out, size_t *len)
{
	FILE *f = fopen(path, "rb");
	wms__buf b = { NULL, 0, 0 };
	char chunk[8192];
	size_t n;

	*out = NULL;
	*len = 0;
	if (!f)
		return wms_sim__fail(WMS_SIM_ERR_IO, "cannot open %s: %s", path, strerror(errno));
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
		if (wms__buf_append(&b, chunk, n) != 0) {
			fclose(f);
			wms__buf_free(&b);
			return wms_sim__fail(WMS_SIM_ERR_NOMEM, "out of memory reading %s", path);
		}
	}
	if (ferror(f)) {
		fclose(f);
		wms__buf_free(&b);
		return wms_sim__fail(WMS_SIM_ERR_IO, "cannot read %s", path);
	}
	fclose(f);
	if (!b.data && wms__buf_append(&b, "", 0) != 0)
		return wms_sim__fail(WMS_SIM_ERR_NOMEM, "out of memory reading %s", path);
	*out = b.data;
	*len = b.len;
	return WMS_SIM_OK;
}

/* The first readable of the given path, the source tree's and the installed one. */
static const char *pick_path(const char *given, const char *source, const char *installed)
{
	if (given)
		return given;
	if (access(source, R_OK) == 0)
		return source;
	if (access(installed, R_OK) == 0)
		return installed;
	return source;
}

/* The WSDL as served: its placeholder address replaced by this sim's URL. */
static wms_sim_status load_wsdl(wms_sim *s, const char *path)
{
	char *text;
	size_t len, plen = sizeof(WSDL_PLACEHOLDER) - 1, ulen = strlen(s->url);
	wms__buf b = { NULL, 0, 0 };
	const char *p, *hit;
	wms_sim_status st = wms_sim__read_file(path, &text, &len);

	if (st != WMS_SIM_OK)
		return st;
	for (p = text; (hit = strstr(p, WSDL_PLACEHOLDER)) != NULL; p = hit + plen)
		if (wms__buf_append(&b, p, (size_t)(hit - p)) != 0 ||
		    wms__buf_append(&b, s->url, ulen) != 0)
			goto nomem;
	if (wms__buf_append(&b, p, len - (size_t)(p - text)) != 0)
		goto nomem;
	wms__free(text);
	s->wsdl = b.data;
	s->wsdl_len = b.len;
	return WMS_SIM_OK;
nomem:
	wms__free(text);
	wms__buf_free(&b);
	return wms_sim__fail(WMS_SIM_ERR_NOMEM, "out of memory");
}

static void sim_free(wms_sim *s)
{
	int i;
	for (i = 0; i < SIM_OP_COUNT; i++)
		wms_sim__script_free(s->reply_op[i].sc);
	wms_sim__script_free(s->reply_all.sc);
	wms_sim__schema_free(s->schema);
	wms_sim__store_free(s->store);
	wms__free(s->wsdl); /* wms__buf data: the base tier's allocator */
	wms__free(s->xsd);
	free(s->windows);
	pthread_cond_destroy(&s->wake);
	pthread_mutex_destroy(&s->lock);
	pthread_mutex_destroy(&s->log_lock);
	free(s);
}

static wms_sim_status check_options(const wms_sim_options *o, const char **bind, int *ipv6)
{
	struct in6_addr a6;
	struct in_addr a4;
	if (o->version != WMS_SIM_OPTIONS_VERSION)
		return wms_sim__fail(WMS_SIM_ERR_INVALID_ARG,
				     "options version %u is not supported (this wms-sim knows %u)",
				     o->version, WMS_SIM_OPTIONS_VERSION);
	*bind = o->bind ? o->bind : "127.0.0.1";
	*ipv6 = 0;
	if (strlen(*bind) >= 64)
		return wms_sim__fail(WMS_SIM_ERR_INVALID_ARG, "bind address too long");
	if (inet_pton(AF_INET6, *bind, &a6) == 1)
		*ipv6 = 1;
	else if (inet_pton(AF_INET, *bind, &a4) != 1)
		return wms_sim__fail(WMS_SIM_ERR_INVALID_ARG,
				     "bind: '%s' is not an IPv4 or IPv6 address", *bind);
	if (o->on_hand < 0)
		return wms_sim__fail(WMS_SIM_ERR_INVALID_ARG, "on_hand must be >= 0");
	if (o->sku_count > 1000000)
		return wms_sim__fail(WMS_SIM_ERR_INVALID_ARG, "sku_count must be at most 1000000");
	return WMS_SIM_OK;
}

wms_sim_status wms_sim_start(wms_sim **out, const wms_sim_options *opts)
{
	wms_sim_options defaults = WMS_SIM_OPTIONS_INIT;
	const wms_sim_options *o = opts ? opts : &defaults;
	wms_sim *s = NULL;
	pthread_condattr_t ca;
	const char *bind = NULL, *host;
	char err[256];
	wms_sim_status st;
	int ipv6 = 0;

	if (!out)
		return wms_sim__fail(WMS_SIM_ERR_INVALID_ARG, "out is NULL");
	*out = NULL;
	st = check_options(o, &bind, &ipv6);
	if (st != WMS_SIM_OK)
		return st;
	xmlInitParser();

	s = calloc(1, sizeof(*s));
	if (!s)
		return wms_sim__fail(WMS_SIM_ERR_NOMEM, "out of memory");
	if (pthread_mutex_init(&s->lock, NULL) != 0) {
		free(s);
		return wms_sim__fail(WMS_SIM_ERR_INTERNAL, "cannot create a mutex");
	}
	if (pthread_mutex_init(&s->log_lock, NULL) != 0) {
		pthread_mutex_destroy(&s->lock);
		free(s);
		return wms_sim__fail(WMS_SIM_ERR_INTERNAL, "cannot create a mutex");
	}
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	if (pthread_cond_init(&s->wake, &ca) != 0) {
		pthread_condattr_destroy(&ca);
		pthread_mutex_destroy(&s->lock);
		pthread_mutex_destroy(&s->log_lock);
		free(s);
		return wms_sim__fail(WMS_SIM_ERR_INTERNAL, "cannot create a condition variable");
	}
	pthread_condattr_destroy(&ca);

	snprintf(s->bind, sizeof(s->bind), "%s", bind);
	s->ipv6 = ipv6;
	s->log = o->log;
	s->start_ns = wms_sim__mono_ns();
	s->garbage_seed = s->start_ns;
	st = wms_sim__store_new(&s->store, o->sku_count ? o->sku_count : 100,
				o->on_hand ? o->on_hand : 10000, o->tick_ms ? o->tick_ms : 1000,
				s->start_ns);
	if (st != WMS_SIM_OK)
		goto fail;
	st = wms_sim__schema_load(&s->schema, pick_path(o->xsd_path, WMS_SIM_SOURCE_XSD,
							   WMS_SIM_INSTALLED_XSD));
	if (st != WMS_SIM_OK)
		goto fail;
	st = wms_sim__read_file(pick_path(o->xsd_path, WMS_SIM_SOURCE_XSD, WMS_SIM_INSTALLED_XSD),
				&s->xsd, &s->xsd_len);
	if (st != WMS_SIM_OK)
		goto fail;

	s->daemon = wms_sim__start_daemon(s, o->port, err, sizeof(err));
	if (!s->daemon) {
		st = wms_sim__fail(WMS_SIM_ERR_LISTEN, "%s", err);
		goto fail;
	}
	s->listening = 1;
	{
		const union MHD_DaemonInfo *di = MHD_get_daemon_info(s->daemon,
								    MHD_DAEMON_INFO_BIND_PORT);
		s->port = di ? di->port : o->port;
	}
	host = s->bind;
	if (strcmp(host, "0.0.0.0") == 0)
		host = "127.0.0.1";
	else if (strcmp(host, "::") == 0)
		host = "::1";
	snprintf(s->base_url, sizeof(s->base_url), "http://%s%s%s:%u", ipv6 ? "[" : "", host,
		 ipv6 ? "]" : "", (unsigned)s->port);
	snprintf(s->url, sizeof(s->url), "%s/wms", s->base_url);
	st = load_wsdl(s, pick_path(o->wsdl_path, WMS_SIM_SOURCE_WSDL, WMS_SIM_INSTALLED_WSDL));
	if (st != WMS_SIM_OK)
		goto fail;
	if (o->schedule_path) {
		char *text;
		size_t len;
		wms_sim__window *w;
		size_t n;
		st = wms_sim__read_file(o->schedule_path, &text, &len);
		if (st != WMS_SIM_OK)
			goto fail;
		st = wms_sim__parse_schedule(text, &w, &n);
		wms__free(text);
		if (st != WMS_SIM_OK) {
			snprintf(err, sizeof(err), "%s", wms_sim_last_error());
			st = wms_sim__fail(st, "%s: %s", o->schedule_path, err);
			goto fail;
		}
		wms_sim__install_schedule(s, w, n);
		s->schedule_t0_ns = s->start_ns;
	}
	if (pthread_create(&s->supervisor, NULL, wms_sim__supervise, s) != 0) {
		st = wms_sim__fail(WMS_SIM_ERR_INTERNAL, "cannot start the supervisor thread");
		goto fail;
	}
	s->supervisor_started = 1;
	/* A schedule may start with refuse: be in that state on return. */
	pthread_mutex_lock(&s->lock);
	st = wms_sim__sync_listener(s);
	pthread_mutex_unlock(&s->lock);
	if (st != WMS_SIM_OK) {
		wms_sim_stop(s);
		return st;
	}
	*out = s;
	return WMS_SIM_OK;
fail:
	if (s->daemon)
		MHD_stop_daemon(s->daemon);
	sim_free(s);
	return st;
}

void wms_sim_stop(wms_sim *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	s->stopping = 1;
	s->closing = 1;
	pthread_cond_broadcast(&s->wake);
	pthread_mutex_unlock(&s->lock);
	if (s->supervisor_started)
		pthread_join(s->supervisor, NULL);
	if (s->daemon)
		MHD_stop_daemon(s->daemon);
	s->daemon = NULL;
	sim_free(s);
}
