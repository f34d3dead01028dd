/*
 * wms-sim: the HTTP side (libmicrohttpd), fault injection and the API of
 * wms_sim.h. Envelopes are in sim_soap.c, the warehouse in sim_store.c.
 *
 * Threads: libmicrohttpd runs one thread per connection, so a hanging or
 * slow request blocks nobody else; those wait on `wake` and leave when the
 * client goes away or the listener is being closed. A supervisor thread owns
 * the daemon after start: `refuse` stops it (every connection closes, new
 * connects are refused) and leaving `refuse` starts a new one on the same
 * port; scheduled windows are followed by the same thread.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <microhttpd.h>
#include <libxml/parser.h>
#include "sim_internal.h"
#include "util/json.h"
#include "util/num.h"
#include "wms_sim_config.h"

#define NS_PER_MS ((uint64_t)1000000)
#define MAX_BODY (8u * 1024u * 1024u)
#define MAX_WINDOWS 1024u
#define MAX_SCHEDULE_MS 1000000000000ull /* 31 years */
#define DEFAULT_SLOW_MS 1000u
#define DEFAULT_GARBAGE_BYTES 256u
#define DEFAULT_EVERY_NTH 2u
#define HANG_POLL_MS 20u
#define LISTENER_WAIT_MS 5000u
#define MAX_TRICKLE_MS 3600000u
#define MAX_CONTENT_TYPE 512u
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

static const char *const op_names[SIM_OP_COUNT] = { "SubmitOrder", "GetOrderStatus",
						    "CancelOrder", "GetStockLevel" };

const char *wms_sim__op_name(sim_op op)
{
	return op >= 0 && op < SIM_OP_COUNT ? op_names[op] : NULL;
}

sim_op wms_sim__op_from_name(const char *name, size_t len)
{
	int i;
	for (i = 0; i < SIM_OP_COUNT; i++)
		if (strlen(op_names[i]) == len && memcmp(op_names[i], name, len) == 0)
			return (sim_op)i;
	return SIM_OP_NONE;
}

static const char *const fault_names[WMS_SIM_FAULT_COUNT] = {
	"none", "hang", "refuse", "slow", "http-500", "http-503", "server-fault",
	"client-fault", "truncated", "garbage", "reset", "reply-lost", "every-nth"
};

const char *wms_sim_fault_name(wms_sim_fault f)
{
	return (unsigned)f < WMS_SIM_FAULT_COUNT ? fault_names[f] : "unknown";
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
		if (loose_equal(name, fault_names[i])) {
			*out = (wms_sim_fault)i;
			return WMS_SIM_OK;
		}
	return wms_sim__fail(WMS_SIM_ERR_INVALID_ARG,
			     "unknown fault '%.40s' (none, hang, refuse, slow, http-500, http-503, "
			     "server-fault, client-fault, truncated, garbage, reset, reply-lost, "
			     "every-nth)", name);
}

/* ---- the sim ---------------------------------------------------------------- */

typedef struct fault_slot {
	wms_sim_fault kind; /* NONE: not set */
	uint32_t param;
	uint64_t seen;       /* matching requests so far (every-nth) */
	uint64_t until_ns;   /* refuse: monotonic end, 0 = until cleared */
} fault_slot;

/* A scripted reply (wms_sim_set_reply), immutable once made; shared by
 * reference between its slot and the requests being answered with it. */
typedef struct script {
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
} script;

typedef struct reply_slot {
	script *sc;    /* NULL: none */
	uint32_t left; /* requests it still answers; 0: until cleared */
} reply_slot;

typedef struct window {
	uint64_t start_ms;
	uint64_t end_ms;
	wms_sim_fault kind;
	sim_op op;
	uint32_t param;
	uint64_t seen;
} window;

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
	fault_slot all;
	fault_slot per_op[SIM_OP_COUNT];
	reply_slot reply_all;
	reply_slot reply_op[SIM_OP_COUNT];
	uint64_t conns_accepted;
	uint64_t conns_open;
	window *windows;
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

static uint64_t mono_ns(void)
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
static void wait_until(wms_sim *s, uint64_t at_ns)
{
	struct timespec ts;
	deadline_ts(&ts, at_ns);
	pthread_cond_timedwait(&s->wake, &s->lock, &ts);
}

static uint64_t sim_now_locked(const wms_sim *s)
{
	return mono_ns() + s->clock_offset_ns;
}

static uint64_t sim_now(wms_sim *s)
{
	uint64_t t;
	pthread_mutex_lock(&s->lock);
	t = sim_now_locked(s);
	pthread_mutex_unlock(&s->lock);
	return t;
}

/* ---- fault lookup (lock held) --------------------------------------------- */

static uint32_t param_or_default(wms_sim_fault kind, uint32_t param)
{
	if (param)
		return param;
	switch (kind) {
	case WMS_SIM_FAULT_SLOW: return DEFAULT_SLOW_MS;
	case WMS_SIM_FAULT_GARBAGE: return DEFAULT_GARBAGE_BYTES;
	case WMS_SIM_FAULT_EVERY_NTH: return DEFAULT_EVERY_NTH;
	case WMS_SIM_FAULT_NONE:
	case WMS_SIM_FAULT_HANG:
	case WMS_SIM_FAULT_REFUSE:
	case WMS_SIM_FAULT_HTTP_500:
	case WMS_SIM_FAULT_HTTP_503:
	case WMS_SIM_FAULT_SERVER:
	case WMS_SIM_FAULT_CLIENT:
	case WMS_SIM_FAULT_TRUNCATED:
	case WMS_SIM_FAULT_RESET:
	case WMS_SIM_FAULT_REPLY_LOST:
		break;
	}
	return 0;
}

static void expire(wms_sim *s, uint64_t now)
{
	if (s->all.kind == WMS_SIM_FAULT_REFUSE && s->all.until_ns && now >= s->all.until_ns)
		memset(&s->all, 0, sizeof(s->all));
}

/* The first window covering now that applies to op (SIM_OP_NONE: only the
 * all-operations ones); -1 if none. */
static long window_at(const wms_sim *s, uint64_t now, sim_op op)
{
	uint64_t t;
	size_t i;
	if (!s->window_count)
		return -1;
	t = (now - s->schedule_t0_ns) / NS_PER_MS;
	for (i = 0; i < s->window_count; i++) {
		const window *w = &s->windows[i];
		if (t >= w->start_ms && t < w->end_ms && (w->op == SIM_OP_NONE || w->op == op))
			return (long)i;
	}
	return -1;
}

/* Every-nth counts the matching requests; its Nth ones become server faults. */
static wms_sim_fault resolve(wms_sim_fault kind, uint32_t param, uint64_t *seen, uint32_t *out)
{
	*out = param_or_default(kind, param);
	if (kind != WMS_SIM_FAULT_EVERY_NTH)
		return kind;
	*seen += 1;
	return *seen % *out == 0 ? WMS_SIM_FAULT_SERVER : WMS_SIM_FAULT_NONE;
}

/* The fault for one request of `op` (SIM_OP_NONE: names no operation). */
static wms_sim_fault take_fault(wms_sim *s, sim_op op, uint64_t now, uint32_t *param)
{
	long i;
	expire(s, now);
	*param = 0;
	i = window_at(s, now, op);
	if (i >= 0)
		return resolve(s->windows[i].kind, s->windows[i].param, &s->windows[i].seen, param);
	if (op != SIM_OP_NONE && s->per_op[op].kind != WMS_SIM_FAULT_NONE)
		return resolve(s->per_op[op].kind, s->per_op[op].param, &s->per_op[op].seen, param);
	if (s->all.kind != WMS_SIM_FAULT_NONE)
		return resolve(s->all.kind, s->all.param, &s->all.seen, param);
	return WMS_SIM_FAULT_NONE;
}

/* What applies now, without counting (for /stats). */
static wms_sim_fault peek_fault(const wms_sim *s, sim_op op, uint64_t now, uint32_t *param)
{
	long i = window_at(s, now, op);
	const fault_slot *slot = NULL;
	if (i >= 0) {
		*param = param_or_default(s->windows[i].kind, s->windows[i].param);
		return s->windows[i].kind;
	}
	if (op != SIM_OP_NONE && s->per_op[op].kind != WMS_SIM_FAULT_NONE)
		slot = &s->per_op[op];
	else if (s->all.kind != WMS_SIM_FAULT_NONE &&
		 !(s->all.until_ns && now >= s->all.until_ns))
		slot = &s->all;
	*param = slot ? param_or_default(slot->kind, slot->param) : 0;
	return slot ? slot->kind : WMS_SIM_FAULT_NONE;
}

static int refusing(const wms_sim *s, uint64_t now)
{
	long i = window_at(s, now, SIM_OP_NONE);
	if (i >= 0)
		return s->windows[i].kind == WMS_SIM_FAULT_REFUSE;
	return s->all.kind == WMS_SIM_FAULT_REFUSE && !(s->all.until_ns && now >= s->all.until_ns);
}

/* When the answer of refusing() may change next; 0: not by itself. */
static uint64_t next_change(const wms_sim *s, uint64_t now)
{
	uint64_t best = 0, t;
	size_t i;
	if (s->all.kind == WMS_SIM_FAULT_REFUSE && s->all.until_ns > now)
		best = s->all.until_ns;
	for (i = 0; i < s->window_count; i++) {
		const window *w = &s->windows[i];
		uint64_t edges[2];
		int k;
		if (w->op != SIM_OP_NONE)
			continue;
		edges[0] = s->schedule_t0_ns + w->start_ms * NS_PER_MS;
		edges[1] = s->schedule_t0_ns + w->end_ms * NS_PER_MS;
		for (k = 0; k < 2; k++) {
			t = edges[k];
			if (t > now && (!best || t < best))
				best = t;
		}
	}
	return best;
}

/* ---- scripted replies ------------------------------------------------------ */

static void script_free(script *sc)
{
	if (!sc)
		return;
	free(sc->content_type);
	free(sc->body);
	free(sc);
}

/* Drop one reference. Lock not held. */
static void script_unref(wms_sim *s, script *sc)
{
	int last;
	if (!sc)
		return;
	pthread_mutex_lock(&s->lock);
	last = --sc->refs == 0;
	pthread_mutex_unlock(&s->lock);
	if (last)
		script_free(sc);
}

/* Check a wms_sim_reply and copy it into a script holding one reference. */
static wms_sim_status script_new(script **out, const wms_sim_reply *r)
{
	script *sc;

	*out = NULL;
	if (r->version != WMS_SIM_REPLY_VERSION)
		return wms_sim__fail(WMS_SIM_ERR_INVALID_ARG,
				     "reply version %u is not supported (this wms-sim knows %u)",
				     r->version, WMS_SIM_REPLY_VERSION);
	if (r->status && (r->status < 200 || r->status > 599))
		return wms_sim__fail(WMS_SIM_ERR_INVALID_ARG,
				     "reply status %u: want 200-599 (0 for the default)", r->status);
	if (r->content_type && r->no_content_type)
		return wms_sim__fail(WMS_SIM_ERR_INVALID_ARG,
				     "reply: content_type and no_content_type exclude each other");
	if (r->content_type &&
	    (strpbrk(r->content_type, "\r\n") || strlen(r->content_type) >= MAX_CONTENT_TYPE))
		return wms_sim__fail(WMS_SIM_ERR_INVALID_ARG,
				     "reply content_type: one header value, no CR or LF, under %u bytes",
				     MAX_CONTENT_TYPE);
	if (!r->body && r->body_len)
		return wms_sim__fail(WMS_SIM_ERR_INVALID_ARG, "reply body is NULL with body_len %zu",
				     r->body_len);
	if (r->trickle_ms > MAX_TRICKLE_MS)
		return wms_sim__fail(WMS_SIM_ERR_INVALID_ARG, "reply trickle_ms: at most %u",
				     MAX_TRICKLE_MS);
	if (r->times == UINT32_MAX)
		return wms_sim__fail(WMS_SIM_ERR_INVALID_ARG, "reply times: at most %u",
				     UINT32_MAX - 1u);
	sc = calloc(1, sizeof(*sc));
	if (!sc)
		return wms_sim__fail(WMS_SIM_ERR_NOMEM, "out of memory");
	sc->refs = 1;
	sc->status = r->status;
	sc->no_content_type = r->no_content_type;
	sc->perform = r->perform;
	sc->lie_length = r->lie_length;
	sc->content_length = r->content_length;
	sc->hang = r->hang;
	sc->hang_after = r->hang_after;
	sc->trickle_ms = r->trickle_ms;
	sc->close = r->close;
	if (r->content_type && !(sc->content_type = strdup(r->content_type)))
		goto nomem;
	if (r->body) {
		sc->body = malloc(r->body_len ? r->body_len : 1);
		if (!sc->body)
			goto nomem;
		if (r->body_len)
			memcpy(sc->body, r->body, r->body_len);
		sc->body_len = r->body_len;
	}
	*out = sc;
	return WMS_SIM_OK;
nomem:
	script_free(sc);
	return wms_sim__fail(WMS_SIM_ERR_NOMEM, "out of memory");
}

/* Put sc (its reference passes to the slot; NULL clears) in op's slot
 * (SIM_OP_NONE: the all-operations one). Returns the script it replaces, to
 * drop outside the lock. Lock held. */
static script *install_script(wms_sim *s, sim_op op, script *sc, uint32_t times)
{
	reply_slot *slot = op == SIM_OP_NONE ? &s->reply_all : &s->reply_op[op];
	script *old = slot->sc;
	slot->sc = sc;
	slot->left = sc ? times : 0;
	return old;
}

/* Empty every slot; old[] (SIM_OP_COUNT + 1) gets what they held. Lock held. */
static void uninstall_scripts(wms_sim *s, script **old)
{
	int i;
	for (i = 0; i < SIM_OP_COUNT; i++)
		old[i] = install_script(s, (sim_op)i, NULL, 0);
	old[SIM_OP_COUNT] = install_script(s, SIM_OP_NONE, NULL, 0);
}

static void unref_scripts(wms_sim *s, script **old)
{
	int i;
	for (i = 0; i <= SIM_OP_COUNT; i++)
		script_unref(s, old[i]);
}

/* The scripted reply for one request of op, with a reference for the
 * request; NULL if none. Counts it against `times`. Lock held. */
static script *take_script(wms_sim *s, sim_op op)
{
	reply_slot *slot = NULL;
	script *sc;
	if (op != SIM_OP_NONE && s->reply_op[op].sc)
		slot = &s->reply_op[op];
	else if (s->reply_all.sc)
		slot = &s->reply_all;
	if (!slot)
		return NULL;
	sc = slot->sc;
	if (slot->left && --slot->left == 0) {
		slot->sc = NULL; /* the slot's reference passes to the request */
		return sc;
	}
	sc->refs++;
	return sc;
}

/* ---- the daemon ------------------------------------------------------------ */

static enum MHD_Result on_access(void *cls, struct MHD_Connection *c, const char *url,
				 const char *method, const char *version, const char *upload,
				 size_t *upload_size, void **con_cls);
static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
			 enum MHD_RequestTerminationCode toe);
static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
			  enum MHD_ConnectionNotificationCode toe);

static void on_mhd_log(void *cls, const char *fmt, va_list ap)
#if defined(__GNUC__)
	__attribute__((format(printf, 2, 0)))
#endif
	;

static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
	wms_sim *s = cls;
	size_t n;
	pthread_mutex_lock(&s->log_lock);
	vsnprintf(s->mhd_message, sizeof(s->mhd_message), fmt, ap);
	n = strlen(s->mhd_message);
	while (n && (s->mhd_message[n - 1] == '\n' || s->mhd_message[n - 1] == '\r'))
		s->mhd_message[--n] = '\0';
	/* Our own faults close connections on purpose: not worth a line. */
	if (s->log && !strstr(s->mhd_message, "Application reported internal error") &&
	    !strstr(s->mhd_message, "application reported error generating data")) {
		fprintf(s->log, "wms-sim: libmicrohttpd: %s\n", s->mhd_message);
		fflush(s->log);
	}
	pthread_mutex_unlock(&s->log_lock);
}

static struct MHD_Daemon *start_daemon(wms_sim *s, uint16_t port, char *err, size_t errlen)
{
	struct sockaddr_in v4;
	struct sockaddr_in6 v6;
	struct sockaddr *sa;
	unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
			 MHD_USE_AUTO | MHD_USE_ERROR_LOG;
	struct MHD_Daemon *d;

	memset(&v4, 0, sizeof(v4));
	memset(&v6, 0, sizeof(v6));
	if (s->ipv6) {
		v6.sin6_family = AF_INET6;
		v6.sin6_port = htons(port);
		inet_pton(AF_INET6, s->bind, &v6.sin6_addr);
		sa = (struct sockaddr *)&v6;
		flags |= MHD_USE_IPv6;
	} else {
		v4.sin_family = AF_INET;
		v4.sin_port = htons(port);
		inet_pton(AF_INET, s->bind, &v4.sin_addr);
		sa = (struct sockaddr *)&v4;
	}
	pthread_mutex_lock(&s->log_lock);
	s->mhd_message[0] = '\0';
	pthread_mutex_unlock(&s->log_lock);
	errno = 0;
	d = MHD_start_daemon(flags, port, NULL, NULL, on_access, s,
			     MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, s,
			     MHD_OPTION_SOCK_ADDR, sa,
			     MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
			     MHD_OPTION_NOTIFY_CONNECTION, on_connection, s,
			     MHD_OPTION_END);
	if (!d) {
		int e = errno;
		pthread_mutex_lock(&s->log_lock);
		snprintf(err, errlen, "cannot listen on %.64s port %u: %.100s", s->bind, (unsigned)port,
			 s->mhd_message[0] ? s->mhd_message : e ? strerror(e) : "unknown error");
		pthread_mutex_unlock(&s->log_lock);
	}
	return d;
}

static void *supervise(void *arg)
{
	wms_sim *s = arg;
	char err[200];

	pthread_mutex_lock(&s->lock);
	while (!s->stopping) {
		uint64_t now = mono_ns(), gen = s->requested, next;
		int want;

		expire(s, now);
		want = !refusing(s, now);
		if (want != s->listening && !s->hold) {
			if (!want) {
				struct MHD_Daemon *d = s->daemon;
				s->closing = 1;
				pthread_cond_broadcast(&s->wake);
				pthread_mutex_unlock(&s->lock);
				MHD_stop_daemon(d);
				pthread_mutex_lock(&s->lock);
				s->daemon = NULL;
				s->listening = 0;
				s->closing = 0;
				s->listen_failed = 0;
				continue;
			}
			pthread_mutex_unlock(&s->lock);
			{
				struct MHD_Daemon *d = start_daemon(s, s->port, err, sizeof(err));
				pthread_mutex_lock(&s->lock);
				if (d) {
					s->daemon = d;
					s->listening = 1;
					s->listen_failed = 0;
					continue;
				}
			}
			/* The port is taken meanwhile: say so, and retry. */
			s->listen_failed = 1;
			snprintf(s->listen_error, sizeof(s->listen_error), "%s", err);
			s->applied = gen;
			pthread_cond_broadcast(&s->wake);
			wait_until(s, mono_ns() + 50 * NS_PER_MS);
			continue;
		}
		if (want == s->listening)
			s->applied = gen;
		pthread_cond_broadcast(&s->wake);
		next = next_change(s, now);
		if (s->stopping)
			break;
		if (next)
			wait_until(s, next + NS_PER_MS / 2);
		else
			pthread_cond_wait(&s->wake, &s->lock);
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

/* Ask the supervisor to follow the faults, and wait until it has. Lock held. */
static wms_sim_status sync_listener(wms_sim *s)
{
	uint64_t gen = ++s->requested;
	uint64_t deadline = mono_ns() + LISTENER_WAIT_MS * NS_PER_MS;

	pthread_cond_broadcast(&s->wake);
	while (s->applied < gen && !s->stopping) {
		if (mono_ns() >= deadline)
			return wms_sim__fail(WMS_SIM_ERR_INTERNAL,
					     "the listener did not follow within %u ms",
					     LISTENER_WAIT_MS);
		wait_until(s, deadline);
	}
	if (s->listen_failed && !refusing(s, mono_ns()))
		return wms_sim__fail(WMS_SIM_ERR_LISTEN, "%s", s->listen_error);
	return WMS_SIM_OK;
}

/* ---- connection helpers -------------------------------------------------- */

static int conn_fd(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	return ci ? (int)ci->connect_fd : -1;
}

/* Whether the client has closed its end (or the connection broke). */
static int peer_gone(int fd)
{
	struct pollfd p;
	char ch;
	ssize_t n;

	if (fd < 0)
		return 0;
	p.fd = fd;
	p.events = POLLIN;
	p.revents = 0;
	if (poll(&p, 1, 0) <= 0)
		return 0;
	if (p.revents & (POLLERR | POLLHUP | POLLNVAL))
		return 1;
	n = recv(fd, &ch, 1, MSG_PEEK);
	return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

/* Abort the TCP connection now: the peer sees a reset, not a FIN. On
 * Linux, connect(AF_UNSPEC) disconnects an established socket with an RST
 * (libmicrohttpd's own close would send a FIN first); SO_LINGER 0 makes the
 * final close abortive on other systems. */
static void reset_connection(int fd)
{
	struct linger lg;
	struct sockaddr sa;
	if (fd < 0)
		return;
	lg.l_onoff = 1;
	lg.l_linger = 0;
	setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	memset(&sa, 0, sizeof(sa));
	sa.sa_family = AF_UNSPEC;
	(void)connect(fd, &sa, sizeof(sa));
}

/* hang: until the client goes, or the listener closes. */
static void hang(wms_sim *s, int fd)
{
	pthread_mutex_lock(&s->lock);
	while (!s->closing && !s->stopping && !peer_gone(fd))
		wait_until(s, mono_ns() + HANG_POLL_MS * NS_PER_MS);
	pthread_mutex_unlock(&s->lock);
}

/* slow: 1 once ms have passed, 0 if the listener closes first. */
static int pause_ms(wms_sim *s, uint32_t ms)
{
	uint64_t until = mono_ns() + (uint64_t)ms * NS_PER_MS;
	int ok;
	pthread_mutex_lock(&s->lock);
	while (!s->closing && !s->stopping && mono_ns() < until)
		wait_until(s, until);
	ok = !s->closing && !s->stopping;
	pthread_mutex_unlock(&s->lock);
	return ok;
}

static enum MHD_Result respond(struct MHD_Connection *c, unsigned status, const char *ctype,
			       const void *data, size_t len, const char *hname, const char *hvalue)
{
	struct MHD_Response *r;
	enum MHD_Result ret;

	r = MHD_create_response_from_buffer(len, (void *)(uintptr_t)data, MHD_RESPMEM_MUST_COPY);
	if (!r)
		return MHD_NO;
	if (ctype)
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
	if (hname)
		MHD_add_response_header(r, hname, hvalue);
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result respond_text(struct MHD_Connection *c, unsigned status, const char *text)
{
	char line[512];
	int n = snprintf(line, sizeof(line), "%s\n", text);
	return respond(c, status, "text/plain; charset=utf-8", line,
		       n < 0 ? 0 : (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1, NULL,
		       NULL);
}

/* A reply whose Content-Length promises `len` bytes of which `cut` are sent;
 * then either a FIN (truncated) or an RST (reset). */
typedef struct partial {
	char *data;
	size_t len;
	size_t cut;
	int reset;
	int fd;
} partial;

static ssize_t partial_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	partial *p = cls;
	if (pos < p->cut) {
		size_t n = p->cut - (size_t)pos;
		if (n > max)
			n = max;
		memcpy(buf, p->data + pos, n);
		return (ssize_t)n;
	}
	if (p->reset) {
		/* Let the first half reach the client before the reset does. */
		struct timespec ts = { 0, 10 * 1000000L };
		nanosleep(&ts, NULL);
		reset_connection(p->fd);
	}
	return MHD_CONTENT_READER_END_WITH_ERROR;
}

static void partial_free(void *cls)
{
	partial *p = cls;
	free(p->data);
	free(p);
}

static enum MHD_Result respond_partial(struct MHD_Connection *c, sim_reply *rp, int reset)
{
	struct MHD_Response *r;
	enum MHD_Result ret;
	partial *p = calloc(1, sizeof(*p));

	if (!p)
		return MHD_NO;
	p->data = rp->body;
	p->len = rp->len;
	p->cut = rp->len / 2 ? rp->len / 2 : 1;
	p->reset = reset;
	p->fd = conn_fd(c);
	rp->body = NULL;
	r = MHD_create_response_from_callback(p->len, 4096, partial_read, p, partial_free);
	if (!r) {
		partial_free(p);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, rp->content_type);
	ret = MHD_queue_response(c, rp->status, r);
	MHD_destroy_response(r);
	return ret;
}

static const char html_500[] =
	"<html>\r\n<head><title>500 Internal Server Error</title></head>\r\n<body>\r\n"
	"<center><h1>500 Internal Server Error</h1></center>\r\n"
	"<hr><center>wms-sim</center>\r\n</body>\r\n</html>\r\n";
static const char html_503[] =
	"<html>\r\n<head><title>503 Service Temporarily Unavailable</title></head>\r\n<body>\r\n"
	"<center><h1>503 Service Temporarily Unavailable</h1></center>\r\n"
	"<hr><center>wms-sim</center>\r\n</body>\r\n</html>\r\n";

/* Random bytes no XML parser accepts: never '<', and the first byte is
 * neither whitespace nor part of a byte-order mark. */
static enum MHD_Result respond_garbage(wms_sim *s, struct MHD_Connection *c, uint32_t n)
{
	unsigned char *b = malloc(n ? n : 1);
	uint64_t x;
	uint32_t i;
	enum MHD_Result ret;

	if (!b)
		return MHD_NO;
	pthread_mutex_lock(&s->lock);
	x = s->garbage_seed = s->garbage_seed * 6364136223846793005ull + 1442695040888963407ull;
	pthread_mutex_unlock(&s->lock);
	for (i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		b[i] = (unsigned char)(x >> 24);
		if (i == 0)
			b[i] = (unsigned char)(0x80 + b[i] % 0x6f); /* 0x80-0xee */
		else if (b[i] == '<' || b[i] == 0)
			b[i] = 0xb7;
	}
	ret = respond(c, 200, "text/xml; charset=utf-8", b, n, NULL, NULL);
	free(b);
	return ret;
}

/* ---- scripted replies on the wire ------------------------------------------ */

/* Wait ms, unless the sim stops or the peer goes first: 1 when the time passed. */
static int wait_ms_or_gone(wms_sim *s, int fd, uint32_t ms)
{
	uint64_t until = mono_ns() + (uint64_t)ms * NS_PER_MS;
	int ok;
	pthread_mutex_lock(&s->lock);
	for (;;) {
		uint64_t now = mono_ns(), step = now + HANG_POLL_MS * NS_PER_MS;
		if (s->closing || s->stopping || peer_gone(fd)) {
			ok = 0;
			break;
		}
		if (now >= until) {
			ok = 1;
			break;
		}
		wait_until(s, step < until ? step : until);
	}
	pthread_mutex_unlock(&s->lock);
	return ok;
}

/* Until the client sends something more (a next request) or goes away, or
 * the sim stops. */
static void await_input(wms_sim *s, int fd)
{
	pthread_mutex_lock(&s->lock);
	while (!s->closing && !s->stopping) {
		struct pollfd p;
		p.fd = fd;
		p.events = POLLIN;
		p.revents = 0;
		if (fd < 0 || poll(&p, 1, 0) != 0)
			break;
		wait_until(s, mono_ns() + HANG_POLL_MS * NS_PER_MS);
	}
	pthread_mutex_unlock(&s->lock);
}

/* Where a scripted body stops: its end, or where it hangs. */
static size_t body_stop(const script *sc, size_t len)
{
	return sc->hang && sc->hang_after < len ? (size_t)sc->hang_after : len;
}

/* A body libmicrohttpd sends through a callback: trickled and/or hanging. */
typedef struct paced {
	wms_sim *s;
	char *data;
	size_t len;
	size_t stop; /* hang here (== len: never) */
	uint32_t trickle_ms;
	int fd;
} paced;

static ssize_t paced_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	paced *p = cls;
	size_t n;
	if (pos >= p->stop) {
		if (p->stop < p->len)
			hang(p->s, p->fd);
		return MHD_CONTENT_READER_END_WITH_ERROR;
	}
	n = p->stop - (size_t)pos;
	if (p->trickle_ms) {
		if (!wait_ms_or_gone(p->s, p->fd, p->trickle_ms))
			return MHD_CONTENT_READER_END_WITH_ERROR;
		n = 1;
	}
	if (n > max)
		n = max;
	memcpy(buf, p->data + pos, n);
	return (ssize_t)n;
}

static void paced_free(void *cls)
{
	paced *p = cls;
	free(p->data);
	free(p);
}

/* Every byte out, waiting while the socket is full. 0, or -1 (gone, stopping). */
static int raw_send(wms_sim *s, int fd, const char *p, size_t n)
{
#ifdef MSG_NOSIGNAL
	const int flags = MSG_NOSIGNAL;
#else
	const int flags = 0;
#endif
	while (n) {
		ssize_t w = send(fd, p, n, flags);
		if (w > 0) {
			p += w;
			n -= (size_t)w;
			continue;
		}
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
			struct pollfd pf;
			int stop;
			pthread_mutex_lock(&s->lock);
			stop = s->closing || s->stopping;
			pthread_mutex_unlock(&s->lock);
			if (stop)
				return -1;
			pf.fd = fd;
			pf.events = POLLOUT;
			pf.revents = 0;
			(void)poll(&pf, 1, (int)HANG_POLL_MS);
			continue;
		}
		return -1;
	}
	return 0;
}

/* A Content-Length lie: libmicrohttpd always frames a reply honestly, so
 * the whole reply is written here, and the connection serves nothing more:
 * it is closed when the client sends anything else on it or goes away (or at
 * once with `close`). Unpaced, head and body leave in one write, as a server
 * sends a small reply. */
static enum MHD_Result serve_raw(wms_sim *s, int fd, const script *sc, unsigned status,
				 const char *ctype, const char *body, size_t len)
{
	const char *reason = MHD_get_reason_phrase_for(status);
	char head[MAX_CONTENT_TYPE + 160], *out;
	size_t pos, stop = body_stop(sc, len), first;
	int n = snprintf(head, sizeof(head), "HTTP/1.1 %u %s\r\n%s%s%sContent-Length: %" PRIu64
			 "\r\n\r\n",
			 status, reason && *reason ? reason : "Unknown", ctype ? "Content-Type: " : "",
			 ctype ? ctype : "", ctype ? "\r\n" : "", sc->content_length);

	if (n < 0 || (size_t)n >= sizeof(head))
		return MHD_NO;
	first = sc->trickle_ms ? 0 : stop;
	out = malloc((size_t)n + first + 1);
	if (!out)
		return MHD_NO;
	memcpy(out, head, (size_t)n);
	if (first)
		memcpy(out + n, body, first);
	if (raw_send(s, fd, out, (size_t)n + first) != 0) {
		free(out);
		return MHD_NO;
	}
	free(out);
	pos = first;
	while (pos < stop) {
		if (!wait_ms_or_gone(s, fd, sc->trickle_ms) || raw_send(s, fd, body + pos, 1) != 0)
			return MHD_NO;
		pos++;
	}
	/* Silent until the client speaks again or goes, unless told to close now. */
	if (!sc->close || stop < len)
		await_input(s, fd);
	return MHD_NO; /* libmicrohttpd closes the connection */
}

/* ---- SOAP ------------------------------------------------------------------ */

typedef struct req_ctx {
	wms__buf body;
	int too_large;
	int hold;
	int close_after; /* a scripted reply's `close`: shut the socket once it is out */
	int fd;
} req_ctx;

/* The operation an action URI names; *present says whether there was one. */
static sim_op action_op(const char *value, size_t len)
{
	static const char base[] = SIM_ACTION_BASE;
	if (len > sizeof(base) - 1 && memcmp(value, base, sizeof(base) - 1) == 0)
		return wms_sim__op_from_name(value + sizeof(base) - 1, len - (sizeof(base) - 1));
	return SIM_OP_NONE;
}

/* SOAPAction (1.1) or the action parameter of the Content-Type (1.2),
 * unquoted, into out. 0 if absent. */
static int find_action(struct MHD_Connection *c, int soap12, const char *ctype, char *out,
		       size_t size)
{
	const char *v = NULL, *p;
	size_t len = 0;

	if (!soap12) {
		v = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "SOAPAction");
		if (!v)
			return 0;
		while (*v == ' ' || *v == '\t')
			v++;
		len = strlen(v);
		while (len && (v[len - 1] == ' ' || v[len - 1] == '\t'))
			len--;
	} else {
		for (p = ctype ? strchr(ctype, ';') : NULL; p; p = strchr(p + 1, ';')) {
			const char *k = p + 1;
			while (*k == ' ' || *k == '\t')
				k++;
			if (strncasecmp(k, "action", 6) != 0)
				continue;
			k += 6;
			while (*k == ' ' || *k == '\t')
				k++;
			if (*k != '=')
				continue;
			v = k + 1;
			while (*v == ' ' || *v == '\t')
				v++;
			len = *v == '"' ? strcspn(v + 1, "\"") + 2 : strcspn(v, "; \t");
			break;
		}
		if (!v)
			return 0;
	}
	if (len >= 2 && v[0] == '"' && v[len - 1] == '"') {
		v++;
		len -= 2;
	}
	if (len >= size)
		len = size - 1;
	memcpy(out, v, len);
	out[len] = '\0';
	return 1;
}

static int client_fault(sim_reply *out, int soap12, const char *fmt, ...)
#if defined(__GNUC__)
	__attribute__((format(printf, 3, 4)))
#endif
	;

static int client_fault(sim_reply *out, int soap12, const char *fmt, ...)
{
	char msg[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return wms_sim__reply_fault(out, soap12, 0, "INVALID_REQUEST", msg, 0);
}

/* Everything a real WMS checks, then the operation itself. 0 or -1 (ENOMEM). */
static int process(wms_sim *s, const sim_request *rq, int has_action, const char *action,
		   const char *ctype, sim_reply *out)
{
	sim_op aop = has_action ? action_op(action, strlen(action)) : SIM_OP_NONE;
	char msg[256];
	const char *want_ct = rq->soap12 ? "application/soap+xml" : "text/xml";
	const char *ct = ctype ? ctype : "";

	while (*ct == ' ' || *ct == '\t')
		ct++;
	if (rq->error[0])
		return client_fault(out, rq->soap12, "%s", rq->error);
	if (!ctype)
		return client_fault(out, rq->soap12, "the Content-Type header is missing");
	if (strncasecmp(ct, want_ct, strlen(want_ct)) != 0 ||
	    (ct[strlen(want_ct)] && ct[strlen(want_ct)] != ';' && ct[strlen(want_ct)] != ' '))
		return client_fault(out, rq->soap12, "a SOAP %s envelope needs Content-Type %s (got %.60s)",
				    rq->soap12 ? "1.2" : "1.1", want_ct, ct);
	if (!rq->soap12 && !has_action)
		return client_fault(out, 0, "the SOAPAction header is missing");
	if (has_action && action[0] && aop == SIM_OP_NONE)
		return client_fault(out, rq->soap12, "unknown SOAP action '%.100s'", action);
	if (aop != SIM_OP_NONE && aop != rq->op)
		return client_fault(out, rq->soap12, "the SOAP action names %s but the Body carries %s",
				    wms_sim__op_name(aop), wms_sim__op_name(rq->op));
	if (wms_sim__request_validate(s->schema, rq, msg, sizeof(msg)) != 0)
		return client_fault(out, rq->soap12, "%s", msg);
	return wms_sim__request_perform(rq, s->store, sim_now(s), out);
}

static void log_request(wms_sim *s, sim_op op, int soap12, const char *outcome,
			wms_sim_fault fault, uint64_t t0)
{
	if (!s->log)
		return;
	pthread_mutex_lock(&s->log_lock);
	fprintf(s->log, "wms-sim: %s (SOAP %s) -> %s%s%s (%.2f ms)\n",
		op == SIM_OP_NONE ? "?" : wms_sim__op_name(op), soap12 ? "1.2" : "1.1", outcome,
		fault != WMS_SIM_FAULT_NONE ? ", fault " : "",
		fault != WMS_SIM_FAULT_NONE ? wms_sim_fault_name(fault) : "",
		(double)(mono_ns() - t0) / 1e6);
	fflush(s->log);
	pthread_mutex_unlock(&s->log_lock);
}

/* Answer with a scripted reply: its bytes, or the real answer reshaped. */
static enum MHD_Result serve_script(wms_sim *s, struct MHD_Connection *c, req_ctx *r,
				    const script *sc, const sim_request *rq, int has_action,
				    const char *action, const char *ctype, char *outcome,
				    size_t outcome_size)
{
	static const char soap11_type[] = "text/xml; charset=utf-8";
	static const char soap12_type[] = "application/soap+xml; charset=utf-8";
	struct MHD_Response *resp;
	sim_reply real;
	const char *ct;
	char *data = NULL;
	size_t len;
	unsigned status;
	int fd = conn_fd(c);
	enum MHD_Result ret = MHD_NO;

	memset(&real, 0, sizeof(real));
	if ((!sc->body || sc->perform) && process(s, rq, has_action, action, ctype, &real) != 0)
		goto done;
	if (sc->body) {
		status = sc->status ? sc->status : 200;
		ct = rq->soap12 ? soap12_type : soap11_type;
		len = sc->body_len;
		data = malloc(len ? len : 1);
		if (!data)
			goto done;
		memcpy(data, sc->body, len);
	} else {
		status = sc->status ? sc->status : real.status;
		ct = real.content_type;
		len = real.len;
		data = real.body;
		real.body = NULL;
		if (!data && !(data = malloc(1)))
			goto done;
	}
	if (sc->content_type)
		ct = sc->content_type;
	else if (sc->no_content_type)
		ct = NULL;

	snprintf(outcome, outcome_size, "scripted %u%s%s%s%s", status, sc->lie_length ? " lie" : "",
		 sc->hang ? " hang" : "", sc->trickle_ms ? " trickle" : "", sc->close ? " close" : "");
	if (sc->lie_length) {
		ret = serve_raw(s, fd, sc, status, ct, data, len);
		goto done;
	}
	if (sc->trickle_ms || body_stop(sc, len) < len) {
		paced *p = calloc(1, sizeof(*p));
		if (!p)
			goto done;
		p->s = s;
		p->data = data;
		p->len = len;
		p->stop = body_stop(sc, len);
		p->trickle_ms = sc->trickle_ms;
		p->fd = fd;
		data = NULL;
		resp = MHD_create_response_from_callback(len, 4096, paced_read, p, paced_free);
		if (!resp) {
			paced_free(p);
			goto done;
		}
	} else {
		resp = MHD_create_response_from_buffer(len, data, MHD_RESPMEM_MUST_COPY);
		if (!resp)
			goto done;
	}
	if (ct)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, ct);
	ret = MHD_queue_response(c, status, resp);
	MHD_destroy_response(resp);
	if (ret == MHD_YES && sc->close) {
		r->close_after = 1;
		r->fd = fd;
	}
done:
	free(data);
	wms_sim__reply_free(&real);
	return ret;
}

static enum MHD_Result serve_soap(wms_sim *s, struct MHD_Connection *c, req_ctx *r)
{
	const char *ctype = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
	sim_request rq;
	sim_reply rp;
	char action[160], outcome[64];
	int has_action;
	sim_op op;
	wms_sim_fault fault;
	uint32_t param;
	uint64_t t0 = mono_ns();
	script *sc = NULL;
	enum MHD_Result ret = MHD_NO;

	memset(&rp, 0, sizeof(rp));
	if (r->too_large) {
		pthread_mutex_lock(&s->lock);
		s->requests_total++;
		pthread_mutex_unlock(&s->lock);
		log_request(s, SIM_OP_NONE, 0, "413", WMS_SIM_FAULT_NONE, t0);
		return respond_text(c, 413, "request body larger than 8 MiB");
	}
	wms_sim__request_parse(&rq, r->body.data ? r->body.data : "", r->body.len, ctype);
	has_action = find_action(c, rq.soap12, ctype, action, sizeof(action));
	op = has_action ? action_op(action, strlen(action)) : SIM_OP_NONE;
	if (op == SIM_OP_NONE)
		op = rq.op;

	pthread_mutex_lock(&s->lock);
	s->requests_total++;
	if (op != SIM_OP_NONE)
		s->requests_op[op]++;
	fault = take_fault(s, op, mono_ns(), &param);
	if (fault == WMS_SIM_FAULT_NONE)
		sc = take_script(s, op);
	pthread_mutex_unlock(&s->lock);

	snprintf(outcome, sizeof(outcome), "%s", "closed");
	if (sc) {
		ret = serve_script(s, c, r, sc, &rq, has_action, action, ctype, outcome,
				   sizeof(outcome));
		goto done;
	}
	switch (fault) {
	case WMS_SIM_FAULT_HANG:
		hang(s, conn_fd(c));
		goto done; /* MHD_NO: close without a word */
	case WMS_SIM_FAULT_REFUSE:
		/* The listener is about to close: this one slipped in. */
		reset_connection(conn_fd(c));
		goto done;
	case WMS_SIM_FAULT_HTTP_500:
		ret = respond(c, 500, "text/html", html_500, sizeof(html_500) - 1, NULL, NULL);
		snprintf(outcome, sizeof(outcome), "500");
		goto done;
	case WMS_SIM_FAULT_HTTP_503:
		ret = respond(c, 503, "text/html", html_503, sizeof(html_503) - 1, "Retry-After",
			      "1");
		snprintf(outcome, sizeof(outcome), "503");
		goto done;
	case WMS_SIM_FAULT_SERVER:
		if (wms_sim__reply_fault(&rp, rq.soap12, 1, "INTERNAL",
					 "injected server fault (wms-sim)", 1) != 0)
			goto done;
		break;
	case WMS_SIM_FAULT_CLIENT:
		if (wms_sim__reply_fault(&rp, rq.soap12, 0, "INVALID_REQUEST",
					 "injected client fault (wms-sim)", 0) != 0)
			goto done;
		break;
	case WMS_SIM_FAULT_GARBAGE:
		ret = respond_garbage(s, c, param);
		snprintf(outcome, sizeof(outcome), "200 garbage");
		goto done;
	case WMS_SIM_FAULT_SLOW:
		if (!pause_ms(s, param))
			goto done;
		/* fall through */
	case WMS_SIM_FAULT_NONE:
	case WMS_SIM_FAULT_TRUNCATED:
	case WMS_SIM_FAULT_RESET:
	case WMS_SIM_FAULT_REPLY_LOST:
	case WMS_SIM_FAULT_EVERY_NTH:
		if (process(s, &rq, has_action, action, ctype, &rp) != 0)
			goto done;
		break;
	}

	if (fault == WMS_SIM_FAULT_REPLY_LOST) {
		reset_connection(conn_fd(c));
		snprintf(outcome, sizeof(outcome), "reset (performed)");
		goto done;
	}
	if (fault == WMS_SIM_FAULT_TRUNCATED || fault == WMS_SIM_FAULT_RESET) {
		ret = respond_partial(c, &rp, fault == WMS_SIM_FAULT_RESET);
		snprintf(outcome, sizeof(outcome), "%u cut", rp.status);
		goto done;
	}
	ret = respond(c, rp.status, rp.content_type, rp.body, rp.len, NULL, NULL);
	snprintf(outcome, sizeof(outcome), "%u", rp.status);
done:
	log_request(s, op, rq.soap12, outcome, fault, t0);
	script_unref(s, sc);
	wms_sim__reply_free(&rp);
	wms_sim__request_free(&rq);
	return ret;
}

/* ---- /stats and /control --------------------------------------------------- */

static int json_string(wms__buf *b, const char *v)
{
	return wms__json_string(b, v) != WMS_OK;
}

static int stats_json(wms_sim *s, wms__buf *b)
{
	uint64_t now = mono_ns(), total, per[SIM_OP_COUNT], t, accepted, open_now;
	wms_sim_fault f[SIM_OP_COUNT + 1];
	uint32_t param[SIM_OP_COUNT + 1];
	struct {
		int set, real;
		unsigned status;
		size_t bytes;
		uint32_t left;
	} rs[SIM_OP_COUNT + 1];
	size_t windows, orders = wms_sim__store_count(s->store);
	int listening, i, rc = 0, first = 1;

	pthread_mutex_lock(&s->lock);
	total = s->requests_total;
	memcpy(per, s->requests_op, sizeof(per));
	for (i = 0; i < SIM_OP_COUNT; i++)
		f[i] = peek_fault(s, (sim_op)i, now, &param[i]);
	f[SIM_OP_COUNT] = peek_fault(s, SIM_OP_NONE, now, &param[SIM_OP_COUNT]);
	windows = s->window_count;
	t = s->window_count ? (now - s->schedule_t0_ns) / NS_PER_MS : 0;
	listening = s->listening;
	accepted = s->conns_accepted;
	open_now = s->conns_open;
	for (i = 0; i <= SIM_OP_COUNT; i++) {
		const reply_slot *slot = i < SIM_OP_COUNT ? &s->reply_op[i] : &s->reply_all;
		rs[i].set = slot->sc != NULL;
		rs[i].real = slot->sc && !slot->sc->body;
		rs[i].status = slot->sc ? slot->sc->status : 0;
		rs[i].bytes = slot->sc ? slot->sc->body_len : 0;
		rs[i].left = slot->left;
	}
	pthread_mutex_unlock(&s->lock);

	rc |= wms__buf_append(b, "{\"url\":", 7);
	rc |= json_string(b, s->url);
	rc |= wms__buf_printf(b, ",\"listening\":%s,\"uptime_ms\":%" PRIu64
				  ",\"requests\":{\"total\":%" PRIu64,
				  listening ? "true" : "false", (now - s->start_ns) / NS_PER_MS,
				  total);
	for (i = 0; i < SIM_OP_COUNT; i++)
		rc |= wms__buf_printf(b, ",\"%s\":%" PRIu64, op_names[i], per[i]);
	rc |= wms__buf_printf(b, "},\"fault\":{\"kind\":\"%s\",\"param\":%" PRIu32 "}",
				  fault_names[f[SIM_OP_COUNT]], param[SIM_OP_COUNT]);
	rc |= wms__buf_append(b, ",\"faults\":{", 11);
	for (i = 0; i < SIM_OP_COUNT; i++) {
		if (f[i] == WMS_SIM_FAULT_NONE)
			continue;
		rc |= wms__buf_printf(b, "%s\"%s\":{\"kind\":\"%s\",\"param\":%" PRIu32 "}",
					  first ? "" : ",", op_names[i], fault_names[f[i]],
					  param[i]);
		first = 0;
	}
	rc |= wms__buf_append(b, "},\"replies\":{", 13);
	first = 1;
	for (i = 0; i <= SIM_OP_COUNT; i++) {
		if (!rs[i].set)
			continue;
		rc |= wms__buf_printf(b, "%s\"%s\":{\"status\":%u,\"body\":", first ? "" : ",",
					  i < SIM_OP_COUNT ? op_names[i] : "*", rs[i].status);
		if (rs[i].real)
			rc |= wms__buf_append(b, "\"real\"", 6);
		else
			rc |= wms__buf_printf(b, "%zu", rs[i].bytes);
		rc |= wms__buf_printf(b, ",\"left\":%" PRIu32 "}", rs[i].left);
		first = 0;
	}
	rc |= wms__buf_printf(b, "},\"connections\":{\"accepted\":%" PRIu64 ",\"open\":%" PRIu64
				  "},\"schedule\":{\"windows\":%zu,\"elapsed_ms\":%" PRIu64
				  "},\"orders\":%zu}\n",
				  accepted, open_now, windows, t, orders);
	return rc ? -1 : 0;
}

/* The parameters of POST /control, by name; values NUL-terminated, the
 * body's length kept (it may hold NULs). */
enum {
	CA_FAULT, CA_OP, CA_PARAM, CA_CLEAR, CA_ADVANCE, CA_SCHEDULE,
	CA_REPLY, /* the keys below go with reply= */
	CA_STATUS, CA_CONTENT_TYPE, CA_NO_CONTENT_TYPE, CA_BODY, CA_PERFORM, CA_CONTENT_LENGTH,
	CA_HANG_AFTER, CA_TRICKLE_MS, CA_CLOSE, CA_TIMES,
	CA_COUNT
};

static const char *const control_keys[CA_COUNT] = {
	"fault", "op", "param", "clear", "advance_ms", "schedule", "reply", "status",
	"content_type", "no_content_type", "body", "perform", "content_length", "hang_after",
	"trickle_ms", "close", "times"
};

typedef struct control_args {
	char *v[CA_COUNT];
	size_t body_len;
	char bad[64]; /* an unknown parameter */
} control_args;

static void control_set(control_args *a, const char *key, size_t klen, const char *val, size_t vlen)
{
	int i;
	for (i = 0; i < CA_COUNT; i++)
		if (strlen(control_keys[i]) == klen && memcmp(key, control_keys[i], klen) == 0)
			break;
	if (i == CA_COUNT) {
		if (!a->bad[0])
			snprintf(a->bad, sizeof(a->bad), "%.*s", (int)(klen < 40 ? klen : 40), key);
		return;
	}
	free(a->v[i]);
	a->v[i] = malloc(vlen + 1);
	if (a->v[i]) {
		memcpy(a->v[i], val, vlen);
		a->v[i][vlen] = '\0';
		if (i == CA_BODY)
			a->body_len = vlen;
	}
}

static enum MHD_Result on_query_arg(void *cls, enum MHD_ValueKind kind, const char *key,
				    const char *value)
{
	(void)kind;
	control_set(cls, key, strlen(key), value ? value : "", value ? strlen(value) : 0);
	return MHD_YES;
}

static int hexval(int ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	ch |= 0x20;
	return ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
}

/* application/x-www-form-urlencoded, decoded in place. */
static size_t url_decode(char *s, size_t len)
{
	size_t i, o = 0;
	for (i = 0; i < len; i++) {
		if (s[i] == '+') {
			s[o++] = ' ';
		} else if (s[i] == '%' && i + 2 < len && hexval(s[i + 1]) >= 0 &&
			   hexval(s[i + 2]) >= 0) {
			s[o++] = (char)(hexval(s[i + 1]) * 16 + hexval(s[i + 2]));
			i += 2;
		} else {
			s[o++] = s[i];
		}
	}
	return o;
}

static void parse_form(control_args *a, char *body, size_t len)
{
	size_t i = 0;
	while (i < len) {
		size_t end = i, eq;
		while (end < len && body[end] != '&')
			end++;
		for (eq = i; eq < end && body[eq] != '='; eq++)
			;
		if (end > i) {
			size_t kl = url_decode(body + i, eq - i), raw = eq < end ? end - eq - 1 : 0, vl;
			/* the raw trailing newline of `curl -d @file` and the like (an
			 * encoded %0A is meant and stays) */
			while (raw && (body[eq + raw] == '\n' || body[eq + raw] == '\r'))
				raw--;
			vl = raw ? url_decode(body + eq + 1, raw) : 0;
			control_set(a, body + i, kl, eq < end ? body + eq + 1 : "", vl);
		}
		i = end + 1;
	}
}

static int parse_u32(const char *s, uint32_t *out)
{
	uint64_t v;
	if (wms__parse_uint_str(s, 0, UINT32_MAX, &v) != WMS__NUM_OK)
		return -1;
	*out = (uint32_t)v;
	return 0;
}

static wms_sim_status set_fault_locked(wms_sim *s, const char *op, wms_sim_fault kind,
				       uint32_t param);
static wms_sim_status parse_schedule(const char *text, window **out, size_t *count);
static void install_schedule(wms_sim *s, window *w, size_t n);
static int parse_u64(const char *s, uint64_t *out);

/* A 0/1 flag: "1", "true", "yes" / "0", "false", "no". */
static int parse_flag(const char *v, int *out)
{
	if (!strcmp(v, "1") || !strcasecmp(v, "true") || !strcasecmp(v, "yes"))
		*out = 1;
	else if (!strcmp(v, "0") || !strcasecmp(v, "false") || !strcasecmp(v, "no"))
		*out = 0;
	else
		return -1;
	return 0;
}

/* reply=... and its keys into a script (reply=none: *out NULL). 0, or -1 with msg. */
static int control_reply(const control_args *a, script **out, uint32_t *times, char *msg,
			 size_t size)
{
	wms_sim_reply rp = WMS_SIM_REPLY_INIT;
	uint32_t u32;
	uint64_t u64;
	int i, flag;

	*out = NULL;
	*times = 0;
	if (!strcasecmp(a->v[CA_REPLY], "none")) {
		for (i = CA_REPLY + 1; i < CA_COUNT; i++)
			if (a->v[i]) {
				snprintf(msg, size, "reply=none takes no %s", control_keys[i]);
				return -1;
			}
		return 0;
	}
	if (parse_flag(a->v[CA_REPLY], &flag) != 0 || !flag) {
		snprintf(msg, size, "reply must be 1 (script a reply) or none (clear it)");
		return -1;
	}
	for (i = CA_STATUS; i < CA_COUNT; i++) {
		const char *v = a->v[i];
		if (!v)
			continue;
		switch (i) {
		case CA_CONTENT_TYPE:
			rp.content_type = v;
			continue;
		case CA_BODY:
			rp.body = v;
			rp.body_len = a->body_len;
			continue;
		case CA_NO_CONTENT_TYPE:
		case CA_PERFORM:
		case CA_CLOSE:
			if (parse_flag(v, &flag) != 0)
				goto bad_number;
			*(i == CA_NO_CONTENT_TYPE ? &rp.no_content_type
			  : i == CA_PERFORM ? &rp.perform : &rp.close) = flag;
			continue;
		case CA_CONTENT_LENGTH:
		case CA_HANG_AFTER:
			if (parse_u64(v, &u64) != 0)
				goto bad_number;
			if (i == CA_CONTENT_LENGTH) {
				rp.lie_length = 1;
				rp.content_length = u64;
			} else {
				rp.hang = 1;
				rp.hang_after = u64;
			}
			continue;
		default:
			if (parse_u32(v, &u32) != 0)
				goto bad_number;
			if (i == CA_STATUS)
				rp.status = u32;
			else if (i == CA_TRICKLE_MS)
				rp.trickle_ms = u32;
			else
				rp.times = u32;
			continue;
		}
bad_number:
		snprintf(msg, size, "%s: '%.40s' is not a %s", control_keys[i], v,
			 i == CA_NO_CONTENT_TYPE || i == CA_PERFORM || i == CA_CLOSE
				 ? "flag (1 or 0)" : "non-negative integer");
		return -1;
	}
	if (script_new(out, &rp) != WMS_SIM_OK) {
		snprintf(msg, size, "%s", wms_sim_last_error());
		return -1;
	}
	*times = rp.times;
	return 0;
}

static enum MHD_Result serve_control(wms_sim *s, struct MHD_Connection *c, req_ctx *r)
{
	control_args a;
	wms_sim_status st = WMS_SIM_OK;
	char msg[300] = "";
	wms__buf out = { NULL, 0, 0 };
	enum MHD_Result ret;
	window *w = NULL;
	size_t wn = 0;
	uint32_t param = 0, adv = 0, times = 0;
	wms_sim_fault kind = WMS_SIM_FAULT_NONE;
	script *sc = NULL, *old[2 * (SIM_OP_COUNT + 1)];
	const char *op;
	sim_op o = SIM_OP_NONE;
	int i;

	memset(&a, 0, sizeof(a));
	for (i = 0; i < 2 * (SIM_OP_COUNT + 1); i++)
		old[i] = NULL;
	MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, on_query_arg, &a);
	if (r->body.data)
		parse_form(&a, r->body.data, r->body.len);
	op = a.v[CA_OP] && *a.v[CA_OP] ? a.v[CA_OP] : NULL;
	if (a.bad[0]) {
		snprintf(msg, sizeof(msg), "unknown parameter '%s' (fault, op, param, clear, "
			 "advance_ms, schedule, reply, ...)", a.bad);
		goto bad;
	}
	if (!a.v[CA_REPLY])
		for (i = CA_REPLY + 1; i < CA_COUNT; i++)
			if (a.v[i]) {
				snprintf(msg, sizeof(msg), "%s goes with reply=1", control_keys[i]);
				goto bad;
			}
	if (!a.v[CA_FAULT] && !a.v[CA_CLEAR] && !a.v[CA_ADVANCE] && !a.v[CA_SCHEDULE] &&
	    !a.v[CA_REPLY]) {
		snprintf(msg, sizeof(msg), "nothing to do: fault=KIND [op=OP] [param=N], clear=1, "
			 "advance_ms=N, schedule=TEXT, reply=1 [...] or reply=none");
		goto bad;
	}
	/* Check everything before changing anything. */
	if ((a.v[CA_PARAM] && parse_u32(a.v[CA_PARAM], &param) != 0) ||
	    (a.v[CA_ADVANCE] && parse_u32(a.v[CA_ADVANCE], &adv) != 0)) {
		snprintf(msg, sizeof(msg), "param and advance_ms must be integers 0..4294967295");
		goto bad;
	}
	if (a.v[CA_FAULT] && wms_sim_fault_parse(&kind, a.v[CA_FAULT]) != WMS_SIM_OK) {
		snprintf(msg, sizeof(msg), "%s", wms_sim_last_error());
		goto bad;
	}
	if (op && ((o = wms_sim__op_from_name(op, strlen(op))) == SIM_OP_NONE ||
		   (a.v[CA_FAULT] && kind == WMS_SIM_FAULT_REFUSE) ||
		   (!a.v[CA_FAULT] && !a.v[CA_REPLY]))) {
		snprintf(msg, sizeof(msg), "op must name an operation (SubmitOrder, GetOrderStatus, "
			 "CancelOrder, GetStockLevel), go with fault= or reply=, and not with refuse");
		goto bad;
	}
	if (a.v[CA_REPLY] && control_reply(&a, &sc, &times, msg, sizeof(msg)) != 0)
		goto bad;
	if (a.v[CA_SCHEDULE] && parse_schedule(a.v[CA_SCHEDULE], &w, &wn) != WMS_SIM_OK) {
		snprintf(msg, sizeof(msg), "%s", wms_sim_last_error());
		goto bad;
	}

	pthread_mutex_lock(&s->lock);
	if (a.v[CA_CLEAR]) {
		memset(&s->all, 0, sizeof(s->all));
		memset(s->per_op, 0, sizeof(s->per_op));
		uninstall_scripts(s, old);
		install_schedule(s, NULL, 0);
	}
	if (a.v[CA_SCHEDULE]) {
		install_schedule(s, w, wn);
		w = NULL;
	}
	if (a.v[CA_FAULT])
		st = set_fault_locked(s, op, kind, param);
	if (st == WMS_SIM_OK && a.v[CA_REPLY]) {
		if (!sc && !op) {
			uninstall_scripts(s, old + SIM_OP_COUNT + 1);
		} else {
			old[SIM_OP_COUNT + 1] = install_script(s, o, sc, times);
			sc = NULL;
		}
	}
	if (a.v[CA_ADVANCE])
		s->clock_offset_ns += (uint64_t)adv * NS_PER_MS;
	if (st == WMS_SIM_OK && refusing(s, mono_ns()) == s->listening) {
		/* The reply goes out before the listener closes (on_completed). */
		r->hold = 1;
		s->hold++;
	}
	s->requested++;
	pthread_cond_broadcast(&s->wake);
	pthread_mutex_unlock(&s->lock);
	unref_scripts(s, old);
	unref_scripts(s, old + SIM_OP_COUNT + 1);
	if (st != WMS_SIM_OK) {
		snprintf(msg, sizeof(msg), "%s", wms_sim_last_error());
		goto bad;
	}
	if (stats_json(s, &out) != 0) {
		wms__buf_free(&out);
		ret = MHD_NO;
		goto done;
	}
	ret = respond(c, 200, "application/json", out.data, out.len, NULL, NULL);
	wms__buf_free(&out);
	goto done;
bad:
	ret = respond_text(c, 400, msg);
done:
	script_free(sc);
	free(w);
	for (i = 0; i < CA_COUNT; i++)
		free(a.v[i]);
	return ret;
}

static int has_arg(struct MHD_Connection *c, const char *key)
{
	return MHD_lookup_connection_value_n(c, MHD_GET_ARGUMENT_KIND, key, strlen(key), NULL,
					     NULL) == MHD_YES;
}

static const char help_text[] =
	"wms-sim: a WMS simulator for libwms\n"
	"  POST /wms          SOAP 1.1 or 1.2 (urn:libwms:warehouse:1)\n"
	"  GET  /wms?wsdl     the WSDL;  GET /wms?xsd or /warehouse.xsd: the schema\n"
	"  GET  /stats        counters and faults (JSON)\n"
	"  POST /control      fault=KIND [op=OP] [param=N] | fault=none | clear=1 |\n"
	"                     advance_ms=N | schedule=TEXT |\n"
	"                     reply=1 [op=OP] [status=N] [content_type=T] [no_content_type=1]\n"
	"                     [body=BYTES] [perform=1] [content_length=N] [hang_after=N]\n"
	"                     [trickle_ms=N] [close=1] [times=N] | reply=none [op=OP]\n";

static enum MHD_Result route(wms_sim *s, struct MHD_Connection *c, const char *url,
			     const char *method, req_ctx *r)
{
	int get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
	int post = strcmp(method, "POST") == 0;

	if (strcmp(url, "/wms") == 0 || strcmp(url, "/wms/") == 0) {
		if (post)
			return serve_soap(s, c, r);
		if (get && has_arg(c, "wsdl"))
			return respond(c, 200, "text/xml; charset=utf-8", s->wsdl, s->wsdl_len, NULL,
				       NULL);
		if (get && has_arg(c, "xsd"))
			return respond(c, 200, "text/xml; charset=utf-8", s->xsd, s->xsd_len, NULL,
				       NULL);
		if (get)
			return respond_text(c, 400, "GET /wms serves ?wsdl and ?xsd; SOAP calls are POSTs");
		return respond(c, 405, "text/plain; charset=utf-8", "use POST\n", 9, "Allow",
			       "GET, POST");
	}
	if (strcmp(url, "/warehouse.xsd") == 0 && get)
		return respond(c, 200, "text/xml; charset=utf-8", s->xsd, s->xsd_len, NULL, NULL);
	if (strcmp(url, "/stats") == 0 && get) {
		wms__buf b = { NULL, 0, 0 };
		enum MHD_Result ret = MHD_NO;
		if (stats_json(s, &b) == 0)
			ret = respond(c, 200, "application/json", b.data, b.len, NULL, NULL);
		wms__buf_free(&b);
		return ret;
	}
	if (strcmp(url, "/control") == 0) {
		if (post)
			return serve_control(s, c, r);
		return respond(c, 405, "text/plain; charset=utf-8", "use POST\n", 9, "Allow", "POST");
	}
	if (strcmp(url, "/") == 0 && get)
		return respond(c, 200, "text/plain; charset=utf-8", help_text, sizeof(help_text) - 1,
			       NULL, NULL);
	return respond_text(c, 404, "not found (try GET /)");
}

static enum MHD_Result on_access(void *cls, struct MHD_Connection *c, const char *url,
				 const char *method, const char *version, const char *upload,
				 size_t *upload_size, void **con_cls)
{
	wms_sim *s = cls;
	req_ctx *r = *con_cls;
	(void)version;

	if (!r) {
		r = calloc(1, sizeof(*r));
		if (!r)
			return MHD_NO;
		*con_cls = r;
		return MHD_YES;
	}
	if (*upload_size) {
		if (!r->too_large &&
		    (r->body.len + *upload_size > MAX_BODY ||
		     wms__buf_append(&r->body, upload, *upload_size) != 0)) {
			r->too_large = 1;
			wms__buf_free(&r->body);
		}
		*upload_size = 0;
		return MHD_YES;
	}
	return route(s, c, url, method, r);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	wms_sim *s = cls;
	req_ctx *r = *con_cls;
	(void)c;
	if (!r)
		return;
	/* The reply is out: close under the client's idle keep-alive connection.
	 * libmicrohttpd reads end-of-file next and closes its side. */
	if (r->close_after && toe == MHD_REQUEST_TERMINATED_COMPLETED_OK)
		shutdown(r->fd, SHUT_RDWR);
	if (r->hold) {
		pthread_mutex_lock(&s->lock);
		s->hold--;
		pthread_cond_broadcast(&s->wake);
		pthread_mutex_unlock(&s->lock);
	}
	wms__buf_free(&r->body);
	free(r);
	*con_cls = NULL;
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
			  enum MHD_ConnectionNotificationCode toe)
{
	wms_sim *s = cls;
	(void)c;
	(void)socket_context;
	pthread_mutex_lock(&s->lock);
	if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
		s->conns_accepted++;
		s->conns_open++;
	} else if (toe == MHD_CONNECTION_NOTIFY_CLOSED && s->conns_open) {
		s->conns_open--;
	}
	pthread_mutex_unlock(&s->lock);
}

/* ---- schedule -------------------------------------------------------------- */

static int parse_u64(const char *s, uint64_t *out)
{
	return wms__parse_uint_str(s, 0, UINT64_MAX, out) != WMS__NUM_OK ? -1 : 0;
}

static wms_sim_status parse_schedule(const char *text, window **out, size_t *count)
{
	window *v = NULL;
	size_t n = 0, lineno = 0;
	const char *p = text ? text : "";
	wms_sim_status st = WMS_SIM_OK;

	*out = NULL;
	*count = 0;
	while (*p) {
		char line[512], *tok, *save = NULL, *hash;
		size_t len = strcspn(p, "\n");
		window w;
		int field = 0;

		lineno++;
		if (len >= sizeof(line)) {
			st = wms_sim__fail(WMS_SIM_ERR_PARSE, "schedule line %zu: longer than %zu bytes",
					   lineno, sizeof(line) - 1);
			goto fail;
		}
		memcpy(line, p, len);
		line[len] = '\0';
		p += len + (p[len] == '\n');
		hash = strchr(line, '#');
		if (hash)
			*hash = '\0';
		memset(&w, 0, sizeof(w));
		w.op = SIM_OP_NONE;
		for (tok = strtok_r(line, " \t\r", &save); tok; tok = strtok_r(NULL, " \t\r", &save)) {
			uint64_t num;
			if (field == 0 || field == 1) {
				if (parse_u64(tok, &num) != 0 || num > MAX_SCHEDULE_MS) {
					st = wms_sim__fail(WMS_SIM_ERR_PARSE,
							   "schedule line %zu: %s_ms '%.30s' is not a "
							   "number of milliseconds (at most %llu)",
							   lineno, field ? "end" : "start", tok,
							   (unsigned long long)MAX_SCHEDULE_MS);
					goto fail;
				}
				*(field ? &w.end_ms : &w.start_ms) = num;
			} else if (field == 2) {
				if (wms_sim_fault_parse(&w.kind, tok) != WMS_SIM_OK) {
					char why[256];
					snprintf(why, sizeof(why), "%s", wms_sim_last_error());
					st = wms_sim__fail(WMS_SIM_ERR_PARSE, "schedule line %zu: %s",
							   lineno, why);
					goto fail;
				}
			} else if (strncmp(tok, "op=", 3) == 0) {
				w.op = wms_sim__op_from_name(tok + 3, strlen(tok + 3));
				if (w.op == SIM_OP_NONE) {
					st = wms_sim__fail(WMS_SIM_ERR_PARSE,
							   "schedule line %zu: unknown operation '%.40s'",
							   lineno, tok + 3);
					goto fail;
				}
			} else if (strncmp(tok, "param=", 6) == 0) {
				if (parse_u64(tok + 6, &num) != 0 || num > UINT32_MAX) {
					st = wms_sim__fail(WMS_SIM_ERR_PARSE,
							   "schedule line %zu: param '%.30s' is not a "
							   "number 0..4294967295",
							   lineno, tok + 6);
					goto fail;
				}
				w.param = (uint32_t)num;
			} else {
				st = wms_sim__fail(WMS_SIM_ERR_PARSE,
						   "schedule line %zu: unexpected '%.40s' (want "
						   "start_ms end_ms fault [op=OP] [param=N])",
						   lineno, tok);
				goto fail;
			}
			field++;
		}
		if (field == 0)
			continue; /* blank or comment */
		if (field < 3) {
			st = wms_sim__fail(WMS_SIM_ERR_PARSE,
					   "schedule line %zu: want start_ms end_ms fault [op=OP] "
					   "[param=N]",
					   lineno);
			goto fail;
		}
		if (w.end_ms <= w.start_ms) {
			st = wms_sim__fail(WMS_SIM_ERR_PARSE,
					   "schedule line %zu: end_ms must be after start_ms", lineno);
			goto fail;
		}
		if (w.kind == WMS_SIM_FAULT_REFUSE && w.op != SIM_OP_NONE) {
			st = wms_sim__fail(WMS_SIM_ERR_PARSE,
					   "schedule line %zu: refuse closes the listener for every "
					   "operation (drop op=)",
					   lineno);
			goto fail;
		}
		if (n == MAX_WINDOWS) {
			st = wms_sim__fail(WMS_SIM_ERR_PARSE, "schedule: more than %u windows",
					   MAX_WINDOWS);
			goto fail;
		}
		if (n % 16 == 0) {
			window *nv = realloc(v, (n + 16) * sizeof(*v));
			if (!nv) {
				st = wms_sim__fail(WMS_SIM_ERR_NOMEM, "out of memory");
				goto fail;
			}
			v = nv;
		}
		v[n++] = w;
	}
	*out = v;
	*count = n;
	return WMS_SIM_OK;
fail:
	free(v);
	return st;
}

/* Lock held. Takes ownership of w. */
static void install_schedule(wms_sim *s, window *w, size_t n)
{
	free(s->windows);
	s->windows = w;
	s->window_count = n;
	s->schedule_t0_ns = mono_ns();
}

wms_sim_status wms_sim_set_schedule(wms_sim *s, const char *text)
{
	window *w;
	size_t n;
	wms_sim_status st;

	if (!s)
		return wms_sim__fail(WMS_SIM_ERR_INVALID_ARG, "sim is NULL");
	st = parse_schedule(text, &w, &n);
	if (st != WMS_SIM_OK)
		return st;
	pthread_mutex_lock(&s->lock);
	install_schedule(s, w, n);
	st = sync_listener(s);
	pthread_mutex_unlock(&s->lock);
	return st;
}

static wms_sim_status read_file(const char *path, char **out, size_t *len)
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

wms_sim_status wms_sim_load_schedule(wms_sim *s, const char *path)
{
	char *text;
	size_t len;
	wms_sim_status st;

	if (!s || !path)
		return wms_sim__fail(WMS_SIM_ERR_INVALID_ARG, "sim and path are required");
	st = read_file(path, &text, &len);
	if (st != WMS_SIM_OK)
		return st;
	if (strlen(text) != len) {
		free(text);
		return wms_sim__fail(WMS_SIM_ERR_PARSE, "schedule %s contains a NUL byte", path);
	}
	st = wms_sim_set_schedule(s, text);
	free(text);
	if (st != WMS_SIM_OK && st != WMS_SIM_ERR_NOMEM) {
		char msg[256];
		snprintf(msg, sizeof(msg), "%s", wms_sim_last_error());
		st = wms_sim__fail(st, "%s: %s", path, msg);
	}
	return st;
}

/* ---- faults API ------------------------------------------------------------ */

/* Lock held. */
static wms_sim_status set_fault_locked(wms_sim *s, const char *op, wms_sim_fault kind,
				       uint32_t param)
{
	sim_op o = SIM_OP_NONE;
	fault_slot *slot;

	if ((unsigned)kind >= WMS_SIM_FAULT_COUNT)
		return wms_sim__fail(WMS_SIM_ERR_INVALID_ARG, "unknown fault %d", (int)kind);
	if (op) {
		o = wms_sim__op_from_name(op, strlen(op));
		if (o == SIM_OP_NONE)
			return wms_sim__fail(WMS_SIM_ERR_INVALID_ARG,
					     "unknown operation '%.40s' (SubmitOrder, GetOrderStatus, "
					     "CancelOrder, GetStockLevel)", op);
		if (kind == WMS_SIM_FAULT_REFUSE)
			return wms_sim__fail(WMS_SIM_ERR_INVALID_ARG,
					     "refuse closes the listener for every operation: no op");
	}
	if (kind == WMS_SIM_FAULT_NONE && !op) {
		memset(&s->all, 0, sizeof(s->all));
		memset(s->per_op, 0, sizeof(s->per_op));
		return WMS_SIM_OK;
	}
	slot = op ? &s->per_op[o] : &s->all;
	memset(slot, 0, sizeof(*slot));
	slot->kind = kind;
	slot->param = param;
	if (kind == WMS_SIM_FAULT_REFUSE && param)
		slot->until_ns = mono_ns() + (uint64_t)param * NS_PER_MS;
	return WMS_SIM_OK;
}

wms_sim_status wms_sim_set_fault(wms_sim *s, const char *op, wms_sim_fault kind, uint32_t param)
{
	wms_sim_status st;
	if (!s)
		return wms_sim__fail(WMS_SIM_ERR_INVALID_ARG, "sim is NULL");
	pthread_mutex_lock(&s->lock);
	st = set_fault_locked(s, op, kind, param);
	if (st == WMS_SIM_OK)
		st = sync_listener(s);
	pthread_mutex_unlock(&s->lock);
	return st;
}

void wms_sim_clear_faults(wms_sim *s)
{
	script *old[SIM_OP_COUNT + 1];
	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	memset(&s->all, 0, sizeof(s->all));
	memset(s->per_op, 0, sizeof(s->per_op));
	uninstall_scripts(s, old);
	install_schedule(s, NULL, 0);
	(void)sync_listener(s);
	pthread_mutex_unlock(&s->lock);
	unref_scripts(s, old);
}

/* ---- scripted replies API ---------------------------------------------------- */

/* op NULL: SIM_OP_NONE (all); -1 and a message for an unknown name. */
static int reply_op(const char *op, sim_op *out)
{
	*out = op ? wms_sim__op_from_name(op, strlen(op)) : SIM_OP_NONE;
	if (op && *out == SIM_OP_NONE) {
		wms_sim__fail(WMS_SIM_ERR_INVALID_ARG,
			      "unknown operation '%.40s' (SubmitOrder, GetOrderStatus, CancelOrder, "
			      "GetStockLevel)", op);
		return -1;
	}
	return 0;
}

wms_sim_status wms_sim_set_reply(wms_sim *s, const char *op, const wms_sim_reply *r)
{
	script *sc = NULL, *old[SIM_OP_COUNT + 1];
	wms_sim_status st;
	sim_op o;
	int i;

	if (!s)
		return wms_sim__fail(WMS_SIM_ERR_INVALID_ARG, "sim is NULL");
	if (reply_op(op, &o) != 0)
		return WMS_SIM_ERR_INVALID_ARG;
	if (r && (st = script_new(&sc, r)) != WMS_SIM_OK)
		return st;
	for (i = 0; i <= SIM_OP_COUNT; i++)
		old[i] = NULL;
	pthread_mutex_lock(&s->lock);
	if (!r && !op)
		uninstall_scripts(s, old);
	else
		old[0] = install_script(s, o, sc, r ? r->times : 0);
	pthread_mutex_unlock(&s->lock);
	unref_scripts(s, old);
	return WMS_SIM_OK;
}

uint32_t wms_sim_reply_left(wms_sim *s, const char *op)
{
	const reply_slot *slot;
	uint32_t n;
	sim_op o;
	if (!s || reply_op(op, &o) != 0)
		return 0;
	pthread_mutex_lock(&s->lock);
	slot = o == SIM_OP_NONE ? &s->reply_all : &s->reply_op[o];
	n = !slot->sc ? 0 : slot->left ? slot->left : UINT32_MAX;
	pthread_mutex_unlock(&s->lock);
	return n;
}

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

/* ---- counters and ledger ---------------------------------------------------- */

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
	return wms_sim__store_get(s->store, sim_now(s), order_id, out ? out : &tmp);
}

size_t wms_sim_order_foreach(wms_sim *s, wms_sim_order_fn fn, void *ctx)
{
	wms_sim_order_info *v = NULL;
	size_t n = 0, i, calls = 0;
	if (!s || !fn)
		return 0;
	if (wms_sim__store_snapshot(s->store, sim_now(s), &v, &n) != 0)
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
	return wms_sim__store_stock_get(s->store, sim_now(s), sku, out ? out : &tmp);
}

wms_sim_status wms_sim_set_stock(wms_sim *s, const char *sku, int64_t on_hand)
{
	if (!s || !sku || on_hand < 0)
		return wms_sim__fail(WMS_SIM_ERR_INVALID_ARG,
				     "sim and sku are required and on_hand must be >= 0");
	if (!wms_sim__store_set_stock(s->store, sim_now(s), sku, on_hand))
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
	wms_sim_status st = read_file(path, &text, &len);

	if (st != WMS_SIM_OK)
		return st;
	for (p = text; (hit = strstr(p, WSDL_PLACEHOLDER)) != NULL; p = hit + plen)
		if (wms__buf_append(&b, p, (size_t)(hit - p)) != 0 ||
		    wms__buf_append(&b, s->url, ulen) != 0)
			goto nomem;
	if (wms__buf_append(&b, p, len - (size_t)(p - text)) != 0)
		goto nomem;
	free(text);
	s->wsdl = b.data;
	s->wsdl_len = b.len;
	return WMS_SIM_OK;
nomem:
	free(text);
	wms__buf_free(&b);
	return wms_sim__fail(WMS_SIM_ERR_NOMEM, "out of memory");
}

static void sim_free(wms_sim *s)
{
	int i;
	for (i = 0; i < SIM_OP_COUNT; i++)
		script_free(s->reply_op[i].sc);
	script_free(s->reply_all.sc);
	wms_sim__schema_free(s->schema);
	wms_sim__store_free(s->store);
	free(s->wsdl);
	free(s->xsd);
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
	s->start_ns = mono_ns();
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
	st = read_file(pick_path(o->xsd_path, WMS_SIM_SOURCE_XSD, WMS_SIM_INSTALLED_XSD), &s->xsd,
		       &s->xsd_len);
	if (st != WMS_SIM_OK)
		goto fail;

	s->daemon = start_daemon(s, o->port, err, sizeof(err));
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
		window *w;
		size_t n;
		st = read_file(o->schedule_path, &text, &len);
		if (st != WMS_SIM_OK)
			goto fail;
		st = parse_schedule(text, &w, &n);
		free(text);
		if (st != WMS_SIM_OK) {
			snprintf(err, sizeof(err), "%s", wms_sim_last_error());
			st = wms_sim__fail(st, "%s: %s", o->schedule_path, err);
			goto fail;
		}
		install_schedule(s, w, n);
		s->schedule_t0_ns = s->start_ns;
	}
	if (pthread_create(&s->supervisor, NULL, supervise, s) != 0) {
		st = wms_sim__fail(WMS_SIM_ERR_INTERNAL, "cannot start the supervisor thread");
		goto fail;
	}
	s->supervisor_started = 1;
	/* A schedule may start with refuse: be in that state on return. */
	pthread_mutex_lock(&s->lock);
	st = sync_listener(s);
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
