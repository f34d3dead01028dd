/*
 * Handles made before fork(), in the child: wms_client (blocking calls over
 * plain HTTP and over TLS) and wms_async (libwms's own loop and a loop of
 * the caller's), on the libcurl transport against in-process servers. In
 * the child every call on them is refused (INVALID_ARG, NOT_SENT, saying
 * it was forked) with nothing sent, no breaker consulted and no fallback or
 * callback run; freeing them is prompt, runs no callback, closes the
 * child's copies of the sockets and sends nothing on them (no TLS
 * close_notify), so the parent's next call goes on the same connection;
 * and a client made in the child works (a connection of its own). Bad
 * arguments change nothing of this: the fork is what is said. Each of
 * these tests forks twice in a row on the same handles.
 *
 * Sockets libcurl closes without its close callback (calls left
 * connecting: a connect timeout, a call cancelled while it connects): in
 * the child, files that took their numbers are left what they are when
 * the handles are freed; in the parent, libwms holds no more after many
 * such calls than after a few.
 *
 * The servers are threads of the parent: the child never asks them
 * anything (their locks may have been held at the fork); the parent reads
 * their counts once the child has gone. Each fixture has a second server,
 * `other`, for the child's own client, so that the first one's counts are
 * the inherited client's alone.
 *
 * A child reports through its exit status only: 0, the number of the
 * check that failed (5 to 98; also on stderr, with the line), 1 from a
 * sanitizer's report, or under valgrind 99 for a memory error or a leak of
 * its own (child_exit.h). It runs no cmocka assertion, its fatal signals
 * are the default ones (cmocka's handlers would go on running tests in the
 * child), and an alarm ends it should anything hang. The parent always
 * reaps it, killing it past the alarm.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <libxml/parser.h>
#include <libxml/tree.h>

#include "wms/wms.h"
#include "wms/async.h"
#include "wms/call.h"
#include "wms/sys/alloc.h"
#include "child_exit.h"
#include "client_new.h"
#include "loopback.h"
#include "loopback_io.h"
#include "proc_fds.h"
#include "sample_order.h"
#include "tls_test.h"

/* Seconds a child may take before its alarm ends it; ms its frees may
 * take; ms the parent watches for a connection the child's free closed. */
#define CHILD_ALARM_S 10u
#define PROMPT_MS 1000u
#define SETTLE_MS 200u
/* How long the async servers hold each reply: the call is in flight at
 * the fork, its reply not yet written. */
#define REPLY_DELAY_MS 300u

/* The connect timeout of the client whose connects hang; the plain
 * connects that fill the backlog of the listener they hang on. */
#define HANG_CONNECT_MS 30u
#define HANG_FILLS 3
/* Pipes a child may open to take the free descriptor numbers up to past
 * the stale ones. */
#define MAX_PIPES 64

#define GENERIC_BODY "<GetShipmentStatus xmlns=\"urn:example:wms\"><id>1</id></GetShipmentStatus>"

static void pause_ms(long ms)
{
	struct timespec t = { ms / 1000, (ms % 1000) * 1000000L };
	(void)nanosleep(&t, NULL);
}

static unsigned slow(void)
{
	return tt_under_valgrind() ? 10u : 1u;
}

typedef struct fx {
	int tls;
	tls_pki pki;
	lb_server *lb, *lb_other;      /* plain: the parent's server and the child's */
	ts_server *ts, *ts_other;      /* TLS: the same */
	uint16_t port, other_port;
	const char *url, *other_url;
	long parent_pid;
	wms_client *c;
	wms_async *a;
	xmlDocPtr body;                /* wms_call's request element */
	unsigned fallbacks;            /* fallback runs */
	/* the parent's async calls */
	unsigned done;                 /* completion callbacks run */
	wms_status last;
	wms_async_call *inflight;
	/* the caller's loop (caller_loop): an epoll set of the test's */
	int caller_loop;
	int epfd;
	unsigned watches, timers;
	int armed;
	uint64_t due_ms;
	/* hang: a listener that never accepts, its backlog full */
	int hanging;
	int hang_fd, hang_fills[HANG_FILLS];
	char hang_url[64];
	int stale[2];                  /* numbers of sockets closed unannounced */
} fx;

/* ---- the child ----------------------------------------------------------- */

_Noreturn static void child_failed(int code, const char *what, int line, const char *msg)
{
	fprintf(stderr, "test_fork child %ld: check %d failed (line %d): %s%s%s\n", (long)getpid(),
		code, line, what, msg ? ": " : "", msg ? msg : "");
	child_exit(code);
	_exit(code); /* child_exit does not return */
}

#define CK(code, cond) \
	do { \
		if (!(cond)) \
			child_failed((code), #cond, __LINE__, NULL); \
	} while (0)
#define CKM(code, cond, msg) \
	do { \
		if (!(cond)) \
			child_failed((code), #cond, __LINE__, (msg)); \
	} while (0)

typedef int (*child_fn)(fx *f);

_Noreturn static void in_child(child_fn fn, fx *f)
{
	child_begin(CHILD_ALARM_S * slow());
	child_exit(fn(f));
	_exit(1); /* child_exit does not return */
}

/* Fork, run fn in the child, wait for it (killed past its alarm): the test
 * fails unless it exited 0. */
static void run_in_child(child_fn fn, fx *f)
{
	char why[160];
	pid_t pid;

	f->parent_pid = (long)getpid();
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		in_child(fn, f);
	if (child_reap(pid, CHILD_ALARM_S * slow() + 5u, why, sizeof(why)) != 0)
		fail_msg("%s", why);
}

typedef struct conns_walk {
	uint16_t port;
	int n, first;
} conns_walk;

static int conn_seen(int fd, void *arg)
{
	conns_walk *w = arg;
	struct sockaddr_in peer;
	socklen_t len = sizeof(peer);
	if (getpeername(fd, (struct sockaddr *)&peer, &len) != 0 || peer.sin_family != AF_INET ||
	    ntohs(peer.sin_port) != w->port || ntohl(peer.sin_addr.s_addr) != INADDR_LOOPBACK)
		return 0;
	if (w->first < 0)
		w->first = fd;
	w->n++;
	return 0;
}

/* This process's TCP connections to 127.0.0.1:port, the client's side of
 * them (the in-process server's sides have that port as their own): how
 * many, and the first in *fd (-1 if none). */
static int conns_to(uint16_t port, int *fd)
{
	conns_walk w = { port, 0, -1 };
	if (fd)
		*fd = -1;
	if (proc_fds_each(conn_seen, &w) < 0)
		return -1;
	if (fd)
		*fd = w.first;
	return w.n;
}

static int epoll_seen(int fd, void *arg)
{
	*(int *)arg += proc_fd_is_epoll(fd);
	return 0;
}

/* This process's epoll sets. */
static int epoll_sets(void)
{
	int n = 0;
	return proc_fds_each(epoll_seen, &n) < 0 ? -1 : n;
}

typedef struct watch_walk {
	int fd, n;
} watch_walk;

static int watcher_seen(int fd, void *arg)
{
	watch_walk *w = arg;
	char path[64], line[256];
	FILE *info;
	if (!proc_fd_is_epoll(fd))
		return 0;
	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	if (!(info = fopen(path, "r")))
		return 0;
	while (fgets(line, sizeof(line), info)) {
		int tfd;
		if (sscanf(line, "tfd: %d", &tfd) == 1 && tfd == w->fd)
			w->n++;
	}
	fclose(info);
	return 0;
}

/* In how many of this process's epoll sets fd is (their /proc fdinfo
 * lists what each watches). */
static int epoll_watching(int fd)
{
	watch_walk w = { fd, 0 };
	return proc_fds_each(watcher_seen, &w) < 0 ? -1 : w.n;
}

/* The descriptor numbers below FD_MAP that are open (sockets only, or
 * all), marked in map; how many. */
#define FD_MAP 1024

typedef struct fd_map {
	int sockets_only, n;
	unsigned char open[FD_MAP];
} fd_map;

static int fd_marked(int fd, void *arg)
{
	fd_map *m = arg;
	struct stat st;
	if (fd >= FD_MAP || (m->sockets_only && (fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode))))
		return 0;
	m->open[fd] = 1;
	m->n++;
	return 0;
}

static void fds_mark(fd_map *m, int sockets_only)
{
	memset(m, 0, sizeof(*m));
	m->sockets_only = sockets_only;
	assert_int_equal(proc_fds_each(fd_marked, m), 0);
}

/* Whether fd is an IPv4 socket (not a socket pair libcurl wakes itself
 * up with). */
static int is_inet(int fd)
{
	struct sockaddr_in a;
	socklen_t len = sizeof(a);
	memset(&a, 0, sizeof(a));
	return getsockname(fd, (struct sockaddr *)&a, &len) == 0 && a.sin_family == AF_INET;
}

/* The lowest descriptor number not open: the next socket's. */
static int lowest_free_fd(void)
{
	fd_map m;
	int i;
	fds_mark(&m, 0);
	for (i = 0; i < FD_MAP && m.open[i]; i++)
		;
	return i;
}

/* The refusal of a handle made before the fork: codes code..code+4. */
static void refused(wms_status st, const wms_error *err, long parent, int code)
{
	char mine[32], theirs[32];
	snprintf(mine, sizeof(mine), "%ld", (long)getpid());
	snprintf(theirs, sizeof(theirs), "%ld", parent);
	CKM(code, st == WMS_ERR_INVALID_ARG, err->message);
	CKM(code + 1, err->delivery == WMS_DELIVERY_NOT_SENT, err->message);
	CKM(code + 2, strstr(err->message, "forked") != NULL, err->message);
	CKM(code + 3, strstr(err->message, mine) != NULL, err->message);
	CKM(code + 4, strstr(err->message, theirs) != NULL, err->message);
}

static wms_status fb_submit(wms_submit_reply *out, const wms_fallback_call *call, void *p)
{
	(void)out;
	((fx *)p)->fallbacks++;
	return call->error->status;
}

static wms_status fb_status(wms_status_reply *out, const wms_fallback_call *call, void *p)
{
	(void)out;
	((fx *)p)->fallbacks++;
	return call->error->status;
}

static wms_status fb_cancel(wms_cancel_reply *out, const wms_fallback_call *call, void *p)
{
	(void)out;
	((fx *)p)->fallbacks++;
	return call->error->status;
}

static wms_status fb_stock(wms_stock_reply **out, const wms_fallback_call *call, void *p)
{
	(void)out;
	((fx *)p)->fallbacks++;
	return call->error->status;
}

/* A client of `url`, with fallbacks counting their runs when asked. */
static wms_status client_make(wms_client **out, fx *f, const char *url, int fallbacks,
			      wms_error *err)
{
	wms_client_options o = WMS_CLIENT_OPTIONS_INIT;
	wms_fallbacks fb = WMS_FALLBACKS_INIT;
	o.endpoint = url;
	o.timeout_ms = 3000u * slow();
	o.connect_timeout_ms = 2000u * slow();
	if (f->tls)
		o.curl.ca_file = f->pki.ca.cert_file;
	if (fallbacks) {
		fb.submit_order = fb_submit;
		fb.get_order_status = fb_status;
		fb.cancel_order = fb_cancel;
		fb.get_stock_level = fb_stock;
		fb.payload = f;
		o.fallbacks = &fb;
	}
	return wms_client_new(out, &o, err);
}

/* Every blocking operation on the inherited client: codes 10..49. */
static void every_call_refused(fx *f)
{
	static const char *const skus[] = { "SKU-1" };
	wms_order o = sample_order();
	wms_call_options op = WMS_CALL_OPTIONS_INIT;
	wms_submit_reply sr;
	wms_status_reply str;
	wms_cancel_reply cr;
	wms_stock_reply *stock = NULL;
	xmlDocPtr doc = NULL;
	wms_error err;

	op.operation = "GetShipmentStatus";
	op.soap_action = "urn:example:wms/GetShipmentStatus";
	op.idempotent = 1;
	memset(&err, 0, sizeof(err));
	refused(wms_submit_order(&sr, f->c, &o, &err), &err, f->parent_pid, 10);
	memset(&err, 0, sizeof(err));
	refused(wms_get_order_status(&str, f->c, "ORD-1", &err), &err, f->parent_pid, 15);
	memset(&err, 0, sizeof(err));
	refused(wms_cancel_order(&cr, f->c, "ORD-1", "changed plans", &err), &err, f->parent_pid,
		20);
	memset(&err, 0, sizeof(err));
	refused(wms_get_stock_level(&stock, f->c, skus, 1, &err), &err, f->parent_pid, 25);
	CK(30, stock == NULL);
	memset(&err, 0, sizeof(err));
	refused(wms_call(&doc, f->c, &op, xmlDocGetRootElement(f->body), &err), &err,
		f->parent_pid, 31);
	CK(36, doc == NULL);
	memset(&err, 0, sizeof(err));
	refused(wms_call_bytes(&doc, f->c, &op, GENERIC_BODY, strlen(GENERIC_BODY), &err), &err,
		f->parent_pid, 37);
	CK(42, doc == NULL);
}

/* wms_call and wms_call_bytes with what would be refused for itself (a
 * malformed body, no body, a bad operation name): in a child, the fork is
 * what is said, before anything about the call. Codes code..code+17. */
static void bad_calls_refused(fx *f, int code)
{
	static const char bad_xml[] = "<GetShipmentStatus><id>1</GetShipmentStatus>";
	wms_call_options op = WMS_CALL_OPTIONS_INIT;
	xmlDocPtr doc = NULL;
	wms_error err;

	op.operation = "GetShipmentStatus";
	memset(&err, 0, sizeof(err));
	refused(wms_call_bytes(&doc, f->c, &op, bad_xml, sizeof(bad_xml) - 1, &err), &err,
		f->parent_pid, code);
	CK(code + 5, doc == NULL);
	memset(&err, 0, sizeof(err));
	refused(wms_call(&doc, f->c, &op, NULL, &err), &err, f->parent_pid, code + 6);
	CK(code + 11, doc == NULL);
	op.operation = "Get Shipment Status";
	memset(&err, 0, sizeof(err));
	refused(wms_call(&doc, f->c, &op, xmlDocGetRootElement(f->body), &err), &err,
		f->parent_pid, code + 12);
	CK(code + 17, doc == NULL);
}

/* wms_async_new on the inherited client: codes code..code+5. */
static void async_new_refused(fx *f, int code)
{
	wms_async *a = (wms_async *)(void *)f; /* a value it must overwrite */
	wms_error err;
	memset(&err, 0, sizeof(err));
	refused(wms_async_new(&a, f->c, NULL, &err), &err, f->parent_pid, code);
	CK(code + 5, a == NULL);
}

/* Codes code..code+5. */
static void same_breaker(const wms_breaker_snapshot *a, const wms_breaker_snapshot *b, int code)
{
	CK(code, a->state == b->state);
	CK(code + 1, a->permitted == b->permitted);
	CK(code + 2, a->rejected == b->rejected);
	CK(code + 3, a->successes == b->successes && a->failures == b->failures);
	CK(code + 4, a->transitions == b->transitions);
	CK(code + 5, a->window_calls == b->window_calls);
}

/* A client made in the child calls the other server on a connection of its
 * own: codes code..code+3. */
static void own_client_works(fx *f, int code)
{
	wms_order o = sample_order();
	wms_submit_reply r;
	wms_client *c = NULL;
	wms_error err;
	memset(&err, 0, sizeof(err));
	CKM(code, client_make(&c, f, f->other_url, 0, &err) == WMS_OK, err.message);
	CKM(code + 1, wms_submit_order(&r, c, &o, &err) == WMS_OK, err.message);
	CK(code + 2, strcmp(r.wms_reference, "WMS-000042") == 0);
	CK(code + 3, conns_to(f->other_port, NULL) == 1);
	wms_client_free(c);
}

/* The blocking client, twice over with its breaker closed (a call let
 * through would be sent) and twice open (a call let through would be
 * rejected by the breaker, counted, and run a fallback); then freed. */
static int blocking_child(fx *f)
{
	wms_breaker *b = wms_client_breaker(f->c);
	wms_breaker_snapshot s0, s1;
	uint64_t t0;
	int round;

	CK(5, conns_to(f->port, NULL) == 1); /* the parent's connection, inherited */
	CK(6, b != NULL);
	wms_breaker_snapshot_get(&s0, b);
	CK(7, s0.state == WMS_BREAKER_STATE_CLOSED && s0.permitted >= 1);
	for (round = 0; round < 4; round++) {
		if (round == 2) {
			/* the child's own copy of the breaker */
			wms_breaker_force_open(b);
			wms_breaker_snapshot_get(&s0, b);
		}
		every_call_refused(f);
		bad_calls_refused(f, 70);
		wms_breaker_snapshot_get(&s1, b);
		same_breaker(&s0, &s1, 50);
		CK(56, f->fallbacks == 0);
	}
	async_new_refused(f, 57);
	CK(63, conns_to(f->port, NULL) == 1);
	t0 = lb_now_ms();
	wms_client_free(f->c);
	CK(64, lb_now_ms() - t0 < PROMPT_MS * slow());
	CK(65, conns_to(f->port, NULL) == 0); /* the child's copy is closed */
	own_client_works(f, 66);
	return 0;
}

/* ---- the parent's servers ------------------------------------------------ */

typedef struct counts {
	unsigned accepted, handshakes, requests, open;
} counts;

static void counts_of(fx *f, int other, counts *n)
{
	if (f->tls) {
		ts_stats st;
		ts_stats_get(other ? f->ts_other : f->ts, &st);
		n->accepted = st.accepted;
		n->handshakes = st.handshakes;
		n->requests = st.requests;
		n->open = st.open;
	} else {
		lb_server *s = other ? f->lb_other : f->lb;
		n->accepted = n->handshakes = lb_accepted(s);
		n->requests = lb_requests(s);
		n->open = lb_open(s);
	}
}

/* The server's counts are these (accepted and handshakes `conns`). */
static void expect_counts(fx *f, int other, unsigned conns, unsigned requests, unsigned open)
{
	counts n;
	counts_of(f, other, &n);
	if (n.accepted != conns || n.handshakes != conns || n.requests != requests)
		fail_msg("%s server: %u connections, %u handshakes, %u requests; expected %u, %u, %u",
			 other ? "the child's" : "the parent's", n.accepted, n.handshakes, n.requests,
			 conns, conns, requests);
	if (open != ~0u && n.open != open)
		fail_msg("%s server: %u connections open, expected %u (a close_notify from the "
			 "child closes the parent's)", other ? "the child's" : "the parent's", n.open,
			 open);
}

/* The server keeps the parent's connection open for a while after the
 * child has gone: a close_notify the child's free sent would have it
 * close the connection. */
static void parent_conn_stays(fx *f)
{
	uint64_t end = lb_now_ms() + SETTLE_MS * slow();
	counts n;
	do {
		counts_of(f, 0, &n);
		if (n.open != 1)
			fail_msg("the server has %u connections open, not the parent's one: the child "
				 "closed it (a TLS close_notify?)", n.open);
		pause_ms(5);
	} while (lb_now_ms() < end);
}

static void parent_submit(fx *f)
{
	wms_order o = sample_order();
	wms_submit_reply r;
	wms_error err;
	if (wms_submit_order(&r, f->c, &o, &err) != WMS_OK)
		fail_msg("the parent's call: %s", err.message);
	assert_string_equal(r.wms_reference, "WMS-000042");
}

static char *submit_response(void)
{
	char *r = lb_http_response(200, "OK", "text/xml; charset=utf-8", sample_submit_ok);
	assert_non_null(r);
	return r;
}

static int setup_plain_delayed(void **state, unsigned delay_ms)
{
	fx *f = calloc(1, sizeof(*f));
	lb_script s;
	char *resp = submit_response();
	assert_non_null(f);
	f->epfd = -1;
	memset(&s, 0, sizeof(s));
	s.response = resp;
	s.after = LB_KEEP;
	s.delay_ms = delay_ms;
	f->lb = lb_start(&s);
	s.delay_ms = 0;
	f->lb_other = lb_start(&s);
	free(resp);
	assert_non_null(f->lb);
	assert_non_null(f->lb_other);
	f->port = lb_port(f->lb);
	f->other_port = lb_port(f->lb_other);
	f->url = lb_url(f->lb);
	f->other_url = lb_url(f->lb_other);
	f->body = xmlReadMemory(GENERIC_BODY, (int)strlen(GENERIC_BODY), NULL, NULL,
				XML_PARSE_NONET);
	assert_non_null(f->body);
	*state = f;
	return 0;
}

static int setup_plain(void **state)
{
	return setup_plain_delayed(state, 0);
}

static int setup_async(void **state)
{
	return setup_plain_delayed(state, REPLY_DELAY_MS);
}

static int setup_tls(void **state)
{
	fx *f = calloc(1, sizeof(*f));
	ts_options o;
	char *resp = submit_response();
	assert_non_null(f);
	f->tls = 1;
	f->epfd = -1;
	*state = f;
	assert_int_equal(tls_pki_make(&f->pki), 0);
	memset(&o, 0, sizeof(o));
	o.cert_file = f->pki.server.cert_file;
	o.key_file = f->pki.server.key_file;
	o.response = resp;
	f->ts = ts_start(&o);
	f->ts_other = ts_start(&o);
	free(resp);
	assert_non_null(f->ts);
	assert_non_null(f->ts_other);
	f->port = ts_port(f->ts);
	f->other_port = ts_port(f->ts_other);
	f->url = ts_url(f->ts);
	f->other_url = ts_url(f->ts_other);
	f->body = xmlReadMemory(GENERIC_BODY, (int)strlen(GENERIC_BODY), NULL, NULL,
				XML_PARSE_NONET);
	assert_non_null(f->body);
	return 0;
}

static int teardown(void **state)
{
	fx *f = *state;
	if (!f)
		return 0;
	wms_async_free(f->a);
	wms_client_free(f->c);
	lb_stop(f->lb);
	lb_stop(f->lb_other);
	ts_stop(f->ts);
	ts_stop(f->ts_other);
	if (f->tls)
		tls_pki_free(&f->pki);
	if (f->epfd >= 0)
		close(f->epfd);
	if (f->hanging) {
		int i;
		close(f->hang_fd);
		for (i = 0; i < HANG_FILLS; i++)
			close(f->hang_fills[i]);
	}
	xmlFreeDoc(f->body);
	free(f);
	return 0;
}

/* ---- blocking ------------------------------------------------------------ */

/* One call (its connection kept), then `forks` children one after another,
 * each checked; after each, the parent calls twice on the same connection.
 * The child's own client goes to the other server. */
static void blocking_forks(fx *f, unsigned forks)
{
	wms_error err;
	unsigned i;
	int fd;

	assert_int_equal(client_make(&f->c, f, f->url, 1, &err), WMS_OK);
	parent_submit(f);
	expect_counts(f, 0, 1, 1, 1);
	/* a program the parent execs does not inherit the connection */
	assert_int_equal(conns_to(f->port, &fd), 1);
	assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	for (i = 0; i < forks; i++) {
		run_in_child(blocking_child, f);
		/* nothing from the child's inherited client; one call of its own */
		expect_counts(f, 0, 1, 1 + 2 * i, 1);
		expect_counts(f, 1, i + 1, i + 1, ~0u);
		parent_conn_stays(f);
		parent_submit(f);
		parent_submit(f);
		expect_counts(f, 0, 1, 3 + 2 * i, 1);
	}
	assert_int_equal(f->fallbacks, 0);
}

/* Each test forks twice in a row on the same handles. */
static void blocking_plain(void **state)
{
	blocking_forks(*state, 2);
}

static void blocking_tls(void **state)
{
	blocking_forks(*state, 2);
}

/* ---- async --------------------------------------------------------------- */

static void note(fx *f, wms_status st)
{
	f->done++;
	f->last = st;
}

static void on_submit(wms_status st, const wms_submit_reply *r, const wms_error *err, void *p)
{
	(void)r;
	(void)err;
	note(p, st);
}

static void on_status(wms_status st, const wms_status_reply *r, const wms_error *err, void *p)
{
	(void)r;
	(void)err;
	note(p, st);
}

static void on_cancel(wms_status st, const wms_cancel_reply *r, const wms_error *err, void *p)
{
	(void)r;
	(void)err;
	note(p, st);
}

static void on_stock(wms_status st, wms_stock_reply *r, const wms_error *err, void *p)
{
	(void)err;
	wms_stock_reply_free(r);
	note(p, st);
}

static void on_call(wms_status st, xmlDocPtr r, const wms_error *err, void *p)
{
	(void)err;
	xmlFreeDoc(r);
	note(p, st);
}

static int loop_watch(wms_async *a, int fd, int what, void *payload, void **sockp)
{
	fx *f = payload;
	struct epoll_event ev;
	(void)a;
	f->watches++;
	if (what == WMS_POLL_REMOVE) {
		(void)epoll_ctl(f->epfd, EPOLL_CTL_DEL, fd, NULL);
		*sockp = NULL;
		return 0;
	}
	memset(&ev, 0, sizeof(ev));
	ev.events = ((what & WMS_POLL_IN) ? EPOLLIN : 0u) | ((what & WMS_POLL_OUT) ? EPOLLOUT : 0u);
	ev.data.fd = fd;
	/* a new slot may still be in the set under a reused number, and the
	 * other way round */
	if (epoll_ctl(f->epfd, *sockp ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, fd, &ev) != 0 &&
	    epoll_ctl(f->epfd, *sockp ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, fd, &ev) != 0)
		return -1;
	*sockp = f;
	return 0;
}

static int loop_timer(wms_async *a, long ms, void *payload)
{
	fx *f = payload;
	(void)a;
	f->timers++;
	f->armed = ms >= 0;
	f->due_ms = lb_now_ms() + (uint64_t)(ms > 0 ? ms : 0);
	return 0;
}

/* One wait of the loop, at most max_ms, and what is due run. */
static void loop_step(fx *f, int max_ms)
{
	struct epoll_event got[8];
	int i, n, wait = max_ms;
	if (!f->caller_loop) {
		assert_int_equal(wms_async_poll(f->a, max_ms), WMS_OK);
		return;
	}
	if (f->armed) {
		uint64_t now = lb_now_ms();
		wait = f->due_ms <= now ? 0 : f->due_ms - now < (uint64_t)max_ms ?
			(int)(f->due_ms - now) : max_ms;
	}
	n = epoll_wait(f->epfd, got, 8, wait);
	for (i = 0; i < n; i++) {
		int ev = ((got[i].events & (EPOLLIN | EPOLLHUP)) ? WMS_EV_IN : 0) |
			 ((got[i].events & EPOLLOUT) ? WMS_EV_OUT : 0) |
			 ((got[i].events & EPOLLERR) ? WMS_EV_ERR : 0);
		assert_int_equal(wms_async_socket_action(f->a, got[i].data.fd, ev), WMS_OK);
	}
	if (f->armed && lb_now_ms() >= f->due_ms) {
		f->armed = 0;
		assert_int_equal(wms_async_timeout(f->a), WMS_OK);
	}
}

/* Start a SubmitOrder on f->a; wait until the server has read it. */
static void start_submit(fx *f)
{
	wms_order o = sample_order();
	unsigned before = lb_requests(f->lb);
	uint64_t end = lb_now_ms() + 5000u * slow();
	f->inflight = NULL;
	assert_int_equal(wms_async_submit_order(&f->inflight, f->a, &o, on_submit, f), WMS_OK);
	assert_non_null(f->inflight);
	while (lb_requests(f->lb) == before) {
		if (lb_now_ms() > end)
			fail_msg("the request did not reach the server");
		loop_step(f, 5);
	}
}

/* Run the loop until `done` callbacks have run; the last one said OK. */
static void wait_done(fx *f, unsigned done)
{
	uint64_t end = lb_now_ms() + 6000u * slow();
	while (f->done < done) {
		if (lb_now_ms() > end)
			fail_msg("the parent's call did not complete (%u of %u)", f->done, done);
		loop_step(f, 20);
	}
	assert_int_equal(f->done, done);
	assert_int_equal(f->last, WMS_OK);
}

/* Every start function on the inherited context: codes code..code+5. */
static void starts_refused(fx *f, int code)
{
	static const char *const skus[] = { "SKU-1" };
	wms_order o = sample_order();
	wms_call_options op = WMS_CALL_OPTIONS_INIT;
	wms_async_call *h = NULL;
	op.operation = "GetShipmentStatus";
	op.idempotent = 1;
	CK(code, wms_async_submit_order(&h, f->a, &o, on_submit, f) == WMS_ERR_INVALID_ARG);
	CK(code + 1, wms_async_get_order_status(&h, f->a, "ORD-1", on_status, f) ==
			     WMS_ERR_INVALID_ARG);
	CK(code + 2, wms_async_cancel_order(&h, f->a, "ORD-1", NULL, on_cancel, f) ==
			     WMS_ERR_INVALID_ARG);
	CK(code + 3, wms_async_get_stock_level(&h, f->a, skus, 1, on_stock, f) ==
			     WMS_ERR_INVALID_ARG);
	CK(code + 4, wms_async_call_start(&h, f->a, &op, xmlDocGetRootElement(f->body), on_call,
					  f) == WMS_ERR_INVALID_ARG);
	CK(code + 5, h == NULL);
}

/* The starts whose arguments are bad (what a context of this process
 * completes through the callback, INVALID_ARG): on the inherited context,
 * refused as any start there, with no callback. Codes code..code+7. */
static void bad_starts_refused(fx *f, int code)
{
	wms_call_options op = WMS_CALL_OPTIONS_INIT;
	wms_async_call *h = NULL;
	op.operation = "GetShipmentStatus";
	CK(code, wms_async_submit_order(&h, f->a, NULL, on_submit, f) == WMS_ERR_INVALID_ARG);
	CK(code + 1, wms_async_get_order_status(&h, f->a, NULL, on_status, f) ==
			     WMS_ERR_INVALID_ARG);
	CK(code + 2, wms_async_cancel_order(&h, f->a, NULL, "changed plans", on_cancel, f) ==
			     WMS_ERR_INVALID_ARG);
	CK(code + 3, wms_async_get_stock_level(&h, f->a, NULL, 1, on_stock, f) ==
			     WMS_ERR_INVALID_ARG);
	CK(code + 4, wms_async_call_start(&h, f->a, NULL, xmlDocGetRootElement(f->body), on_call,
					  f) == WMS_ERR_INVALID_ARG);
	CK(code + 5, wms_async_call_start(&h, f->a, &op, NULL, on_call, f) == WMS_ERR_INVALID_ARG);
	op.operation = "Get Shipment Status";
	CK(code + 6, wms_async_call_start(&h, f->a, &op, xmlDocGetRootElement(f->body), on_call,
					  f) == WMS_ERR_INVALID_ARG);
	CK(code + 7, h == NULL);
}

typedef struct own_done {
	unsigned n;
	wms_status st;
} own_done;

static void on_own_submit(wms_status st, const wms_submit_reply *r, const wms_error *err,
			  void *p)
{
	own_done *d = p;
	(void)r;
	(void)err;
	d->n++;
	d->st = st;
}

/* A client and a context made in the child run a call to the other
 * server: codes code..code+4. */
static void own_async_works(fx *f, int code)
{
	wms_order o = sample_order();
	own_done d = { 0, WMS_OK };
	wms_client *c = NULL;
	wms_async *a = NULL;
	wms_error err;
	memset(&err, 0, sizeof(err));
	CKM(code, client_make(&c, f, f->other_url, 0, &err) == WMS_OK, err.message);
	CKM(code + 1, wms_async_new(&a, c, NULL, &err) == WMS_OK, err.message);
	CK(code + 2, wms_async_submit_order(NULL, a, &o, on_own_submit, &d) == WMS_OK);
	CK(code + 3, wms_async_run(a, (int)(5000u * slow())) == WMS_OK);
	CK(code + 4, d.n == 1 && d.st == WMS_OK);
	wms_async_free(a);
	wms_client_free(c);
}

/* The async context, a call of the parent's in flight on it: everything
 * refused twice, then both handles freed (the context first on libwms's
 * loop, the client first on the caller's) with no callback of any kind. */
static int async_child(fx *f)
{
	unsigned watches = f->watches, timers = f->timers, done = f->done;
	int round, fd = -1, sets;
	uint64_t t0;

	CK(5, f->inflight != NULL);
	CK(6, conns_to(f->port, &fd) == 1); /* the call's connection, inherited */
	CK(7, wms_async_in_flight(f->a) == 0); /* the parent's call, not this process's */
	for (round = 0; round < 2; round++) {
		starts_refused(f, 10);
		bad_starts_refused(f, 60);
		CK(68, f->done == done);
		CK(20, wms_async_cancel(f->a, f->inflight) == WMS_ERR_INVALID_ARG);
		CK(21, wms_async_cancel_all(f->a) == 0);
		CK(22, wms_async_socket_action(f->a, fd, WMS_EV_IN) == WMS_ERR_INVALID_ARG);
		CK(23, wms_async_timeout(f->a) == WMS_ERR_INVALID_ARG);
		if (!f->caller_loop) {
			CK(24, wms_async_poll(f->a, 0) == WMS_ERR_INVALID_ARG);
			CK(25, wms_async_run(f->a, 50) == WMS_ERR_INVALID_ARG);
		}
		CK(26, f->done == done);
		CK(27, f->watches == watches && f->timers == timers);
	}
	async_new_refused(f, 30);
	CK(36, f->done == done);
	CK(37, wms_async_in_flight(f->a) == 0);
	t0 = lb_now_ms();
	if (f->caller_loop) {
		wms_client_free(f->c);
		CK(40, f->done == done);
		CK(41, f->watches == watches && f->timers == timers);
		wms_async_free(f->a);
	} else {
		sets = epoll_sets();
		wms_async_free(f->a);
		CK(42, f->done == done);
		CK(43, epoll_sets() == sets - 1); /* the child's copy of its set */
		wms_client_free(f->c);
	}
	CK(44, lb_now_ms() - t0 < PROMPT_MS * slow());
	CK(45, f->done == done);
	CK(46, f->watches == watches && f->timers == timers);
	CK(47, conns_to(f->port, NULL) == 0); /* the child's copy is closed */
	own_async_works(f, 50);
	return 0;
}

/* `forks` times: a call in flight (its reply held by the server), a child
 * checked, then that call completes OK in the parent on its connection, and
 * the next call reuses it. */
static void async_forks(fx *f, int caller_loop, unsigned forks)
{
	wms_async_options ao = WMS_ASYNC_OPTIONS_INIT;
	wms_error err;
	unsigned i;
	int fd, fd2, watched;

	assert_int_equal(client_make(&f->c, f, f->url, 1, &err), WMS_OK);
	f->caller_loop = caller_loop;
	if (caller_loop) {
		f->epfd = epoll_create1(EPOLL_CLOEXEC);
		assert_true(f->epfd >= 0);
		ao.watch = loop_watch;
		ao.timer = loop_timer;
		ao.loop_payload = f;
	}
	if (wms_async_new(&f->a, f->c, &ao, &err) != WMS_OK)
		fail_msg("wms_async_new: %s", err.message);
	for (i = 0; i < forks; i++) {
		start_submit(f);
		assert_int_equal(f->done, 2 * i);
		/* the call's socket, watched by the loop: the child must not
		 * take it out of the set (shared with the parent), nor may the
		 * caller's loop be asked to */
		assert_int_equal(conns_to(f->port, &fd), 1);
		assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
		watched = epoll_watching(fd);
		assert_int_equal(watched, 1);
		assert_int_equal(wms_async_in_flight(f->a), 1);
		run_in_child(async_child, f);
		assert_int_equal(wms_async_in_flight(f->a), 1);
		assert_int_equal(conns_to(f->port, &fd2), 1);
		assert_int_equal(fd2, fd);
		if (epoll_watching(fd) != watched)
			fail_msg("the parent's socket left its epoll set: the child took it out");
		expect_counts(f, 0, 1, 2 * i + 1, 1);
		expect_counts(f, 1, i + 1, i + 1, ~0u);
		wait_done(f, 2 * i + 1);
		start_submit(f);
		wait_done(f, 2 * i + 2);
		expect_counts(f, 0, 1, 2 * i + 2, 1);
	}
	if (caller_loop)
		assert_true(f->watches > 0 && f->timers > 0);
	assert_int_equal(f->fallbacks, 0);
}

static void async_own_loop(void **state)
{
	async_forks(*state, 0, 2);
}

static void async_caller_loop(void **state)
{
	async_forks(*state, 1, 2);
}

/* ---- sockets libcurl closes unannounced -------------------------------- */

/* libcurl 7.88 closes a socket that never finished connecting (a connect
 * timeout, a transfer removed while connecting) without its close callback:
 * the transport's note of the socket outlives it, and its number is soon
 * another file's. Freed in a child, the client must point at /dev/null
 * only what is still the socket it opened; in the parent, notes must not
 * pile up as such calls go on. */

static int setup_hang(void **state)
{
	fx *f = calloc(1, sizeof(*f));
	struct sockaddr_in a;
	socklen_t len = sizeof(a);
	int i;

	assert_non_null(f);
	*state = f;
	f->epfd = -1;
	f->hanging = 1;
	f->hang_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(f->hang_fd >= 0);
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(f->hang_fd, (struct sockaddr *)&a, sizeof(a)), 0);
	/* never accepted from: once its queue is full, the kernel drops the
	 * SYNs of every further connect, which hangs until its timeout */
	assert_int_equal(listen(f->hang_fd, 0), 0);
	assert_int_equal(getsockname(f->hang_fd, (struct sockaddr *)&a, &len), 0);
	for (i = 0; i < HANG_FILLS; i++) {
		f->hang_fills[i] = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		assert_true(f->hang_fills[i] >= 0);
		if (connect(f->hang_fills[i], (struct sockaddr *)&a, sizeof(a)) != 0)
			assert_int_equal(errno, EINPROGRESS);
	}
	snprintf(f->hang_url, sizeof(f->hang_url), "http://127.0.0.1:%u/wms",
		 (unsigned)ntohs(a.sin_port));
	f->body = xmlReadMemory(GENERIC_BODY, (int)strlen(GENERIC_BODY), NULL, NULL,
				XML_PARSE_NONET);
	assert_non_null(f->body);
	return 0;
}

/* A client of the listener that never accepts, and a context on it
 * (libwms's loop). Its breaker never opens: every call connects. */
static void hang_client(fx *f)
{
	wms_client_options opts = WMS_CLIENT_OPTIONS_INIT;
	wms_order o = sample_order();
	wms_submit_reply r;
	wms_error err;
	wms_status st;
	opts.endpoint = f->hang_url;
	opts.connect_timeout_ms = HANG_CONNECT_MS * slow();
	opts.timeout_ms = 5000u * slow();
	opts.breaker_options.failure_threshold = 1000000u;
	if (wms_client_new(&f->c, &opts, &err) != WMS_OK)
		fail_msg("wms_client_new: %s", err.message);
	if (wms_async_new(&f->a, f->c, NULL, &err) != WMS_OK)
		fail_msg("wms_async_new: %s", err.message);
	/* the pooled handle made (its multi's wake-up sockets stay open) */
	if ((st = wms_submit_order(&r, f->c, &o, &err)) != WMS_ERR_TIMEOUT)
		fail_msg("a call to a listener that never accepts: %s (%s), expected a timeout",
			 wms_status_name(st), err.message);
}

/* An async call cancelled while it connects, then a blocking call that
 * times out connecting: libcurl closes both sockets (neither through the
 * close callback), so the process holds the sockets it held before. Their
 * numbers in f->stale (the blocking call's the lowest free one before it:
 * socket() hands out that one). The blocking call comes last: libwms
 * hears of the async call's socket from its own loop, and a later socket
 * under the same number would replace a stale note. */
static void calls_left_connecting(fx *f)
{
	wms_order o = sample_order();
	wms_submit_reply r;
	wms_error err;
	wms_status st;
	unsigned done = f->done;
	fd_map before, now;
	uint64_t end = lb_now_ms() + 5000u * slow();
	int i;

	fds_mark(&before, 1);
	f->inflight = NULL;
	assert_int_equal(wms_async_submit_order(&f->inflight, f->a, &o, on_submit, f), WMS_OK);
	assert_non_null(f->inflight);
	for (;;) { /* until its socket is made, connecting */
		fds_mark(&now, 1);
		for (i = 0; i < FD_MAP && !(now.open[i] && !before.open[i] && is_inet(i)); i++)
			;
		if (i < FD_MAP)
			break;
		if (lb_now_ms() > end)
			fail_msg("the async call opened no socket");
		assert_int_equal(wms_async_poll(f->a, 1), WMS_OK);
	}
	f->stale[0] = i;
	assert_int_equal(f->done, done);
	assert_int_equal(wms_async_cancel(f->a, f->inflight), WMS_OK);
	while (f->done == done) {
		if (lb_now_ms() > end)
			fail_msg("the cancelled call did not complete");
		assert_int_equal(wms_async_poll(f->a, 1), WMS_OK);
	}
	assert_int_equal(f->last, WMS_ERR_CANCELLED);
	fds_mark(&now, 1);
	assert_memory_equal(now.open, before.open, sizeof(now.open));

	f->stale[1] = lowest_free_fd();
	st = wms_submit_order(&r, f->c, &o, &err);
	if (st != WMS_ERR_TIMEOUT)
		fail_msg("a call to a listener that never accepts: %s (%s), expected a timeout",
			 wms_status_name(st), err.message);
	fds_mark(&now, 1);
	assert_memory_equal(now.open, before.open, sizeof(now.open));
}

typedef struct pipe_end {
	int fd;
	dev_t dev;
	ino_t ino;
} pipe_end;

static int still_that_pipe(const pipe_end *e)
{
	struct stat st;
	return fstat(e->fd, &st) == 0 && S_ISFIFO(st.st_mode) && st.st_dev == e->dev &&
	       st.st_ino == e->ino;
}

/* The sockets of the inherited handles' last calls were closed without a
 * word: their numbers are free here. Pipes take every free number up to
 * past those (so those too); freeing the handles must leave each pipe a
 * pipe, carrying its own bytes. Codes 5..13. */
static int stale_child(fx *f)
{
	static pipe_end ends[MAX_PIPES][2];
	int n, i, j, past = (f->stale[0] > f->stale[1] ? f->stale[0] : f->stale[1]) + 8;
	struct stat st;

	for (i = 0; i < 2; i++)
		CK(5, fcntl(f->stale[i], F_GETFD) == -1); /* free here too */
	for (n = 0; n < MAX_PIPES; n++) {
		int p[2];
		CK(6, pipe(p) == 0);
		CK(7, fcntl(p[0], F_SETFL, O_NONBLOCK) == 0);
		for (j = 0; j < 2; j++) {
			CK(8, fstat(p[j], &st) == 0);
			ends[n][j].fd = p[j];
			ends[n][j].dev = st.st_dev;
			ends[n][j].ino = st.st_ino;
		}
		if (p[0] > past && p[1] > past)
			break;
	}
	CK(9, n < MAX_PIPES);
	for (i = 0; i < 2; i++) /* the stale numbers are pipes' now */
		CK(10, fstat(f->stale[i], &st) == 0 && S_ISFIFO(st.st_mode));
	wms_async_free(f->a);
	wms_client_free(f->c);
	for (i = 0; i <= n; i++) {
		char sent = (char)('a' + i % 26), got = 0;
		CK(11, still_that_pipe(&ends[i][0]) && still_that_pipe(&ends[i][1]));
		CK(12, write(ends[i][1].fd, &sent, 1) == 1);
		CK(13, read(ends[i][0].fd, &got, 1) == 1 && got == sent);
		close(ends[i][0].fd);
		close(ends[i][1].fd);
	}
	return 0;
}

static void stale_sockets_in_a_child(void **state)
{
	fx *f = *state;
	int i;
	hang_client(f);
	for (i = 0; i < 2; i++) {
		calls_left_connecting(f);
		run_in_child(stale_child, f);
	}
	assert_int_equal(f->fallbacks, 0);
}

/* libwms's live bytes: each block carries its size. */
static atomic_long live_bytes;

typedef union sized {
	size_t n;
	max_align_t align;
} sized;

static void *sized_malloc(size_t n, void *payload)
{
	sized *b = malloc(sizeof(*b) + n);
	(void)payload;
	if (!b)
		return NULL;
	b->n = n;
	atomic_fetch_add(&live_bytes, (long)n);
	return b + 1;
}

static void *sized_realloc(void *p, size_t n, void *payload)
{
	sized *b, *g;
	size_t was;
	if (!p)
		return sized_malloc(n, payload);
	b = (sized *)p - 1;
	was = b->n;
	if (!(g = realloc(b, sizeof(*g) + n)))
		return NULL;
	g->n = n;
	atomic_fetch_add(&live_bytes, (long)n - (long)was);
	return g + 1;
}

static void sized_free(void *p, void *payload)
{
	sized *b;
	(void)payload;
	if (!p)
		return;
	b = (sized *)p - 1;
	atomic_fetch_sub(&live_bytes, (long)b->n);
	free(b);
}

/* Calls left connecting, one after another in the parent: what libwms
 * holds does not grow with them (its notes of sockets closed unannounced
 * dropped as their numbers come back). */
static void connect_timeouts_grow_nothing(void **state)
{
	wms_allocator al = { sized_malloc, sized_realloc, sized_free, NULL };
	fx *f = *state;
	long settled;
	int i;

	assert_int_equal(wms_set_allocator(&al), WMS_OK);
	hang_client(f);
	for (i = 0; i < 2; i++)
		calls_left_connecting(f);
	settled = atomic_load(&live_bytes);
	for (i = 0; i < 16; i++)
		calls_left_connecting(f);
	if (atomic_load(&live_bytes) > settled)
		fail_msg("libwms holds %ld bytes after 18 calls left connecting, %ld after 2",
			 atomic_load(&live_bytes), settled);
	wms_async_free(f->a);
	wms_client_free(f->c);
	f->a = NULL;
	f->c = NULL;
	assert_int_equal(wms_set_allocator(NULL), WMS_OK);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(blocking_plain, setup_plain, teardown),
		cmocka_unit_test_setup_teardown(blocking_tls, setup_tls, teardown),
		cmocka_unit_test_setup_teardown(async_own_loop, setup_async, teardown),
		cmocka_unit_test_setup_teardown(async_caller_loop, setup_async, teardown),
		cmocka_unit_test_setup_teardown(stale_sockets_in_a_child, setup_hang, teardown),
		cmocka_unit_test_setup_teardown(connect_timeouts_grow_nothing, setup_hang, teardown),
	};
	tt_no_proxy();
	return cmocka_run_group_tests_name("fork", tests, NULL, NULL);
}
