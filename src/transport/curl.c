/*
 * libwms - the libcurl transport (wms/sys/transport.h). One transport serves
 * any number of threads: each call takes an easy handle (with its own multi
 * handle and keep-alive connection) from a small LIFO pool, and a CURLSH
 * shares the DNS and TLS session caches. Why it is built so - the transfer
 * loop, handle reuse, stale idle connections, resends, the stall guard,
 * name resolution, global init - is in docs/internals/curl-transport.md;
 * the code keeps the one-line reason at each place. Nothing here logs.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <curl/curl.h>
#include "init.h"
#include "util/affine.h"
#include "util/fork.h"
#include "internal.h"
#include "wms/sys/transport.h"
#include "transport/curl_int.h"
#include "transport/engine.h"

_Static_assert(sizeof(curl_off_t) == sizeof(int64_t), "curl_off_t is 64 bits");

/* Idle easy handles (and so idle keep-alive connections) kept for reuse,
 * unless the options say otherwise (max_idle_connections). */
#define POOL_DEFAULT_IDLE 8
#define POOL_MAX_IDLE 1024u


/* ---- global init ------------------------------------------------------ */

static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static CURLcode global_rc = CURLE_FAILED_INIT;
static int global_routed;

int wms__curl_routed(void)
{
	return global_routed;
}

static void global_init(void)
{
	/* wms_global_init (global.c) may route libcurl through the seam. */
	if (!wms__alloc_route_libcurl()) {
		global_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
		return;
	}
	global_rc = curl_global_init_mem(CURL_GLOBAL_DEFAULT, wms__lib_malloc, wms__lib_free,
					 wms__lib_realloc, wms__lib_strdup, wms__lib_calloc);
	/* Already initialised by the application, libcurl ignores the functions
	 * and says CURLE_OK: see whether one of its allocations reaches them. */
	if (global_rc == CURLE_OK) {
		wms__alloc_probe_begin();
		curl_free(curl_easy_escape(NULL, "x", 1));
		global_routed = wms__alloc_probe_end();
	}
}

wms_status wms__curl_global_init(int *routed)
{
	*routed = 0;
	if (pthread_once(&global_once, global_init) != 0)
		return WMS_ERR_INTERNAL;
	if (global_rc != CURLE_OK)
		return global_rc == CURLE_OUT_OF_MEMORY ? WMS_ERR_NOMEM : WMS_ERR_INTERNAL;
	*routed = global_routed;
	return WMS_OK;
}

/* ---- share locks ------------------------------------------------------ */

/* In a child forked since the transport was made, only the transport's
 * free runs (every call is refused before it), on the child's one thread:
 * the locks are skipped, since another thread of the parent's may have held
 * one at the fork, and nobody would ever release it. */
static void share_lock(CURL *handle, curl_lock_data data, curl_lock_access access, void *userptr)
{
	struct curl_transport *t = userptr;
	(void)handle;
	(void)access;
	if ((int)data >= 0 && data < CURL_LOCK_DATA_LAST && !wms__forked_since(t->fork_gen))
		pthread_mutex_lock(&t->share_locks[data]);
}

static void share_unlock(CURL *handle, curl_lock_data data, void *userptr)
{
	struct curl_transport *t = userptr;
	(void)handle;
	if ((int)data >= 0 && data < CURL_LOCK_DATA_LAST && !wms__forked_since(t->fork_gen))
		pthread_mutex_unlock(&t->share_locks[data]);
}

/* ---- the sockets libcurl holds, and fork() ---------------------------- */

/* A child forked since the transport was made holds copies of the parent's
 * connections (util/fork.h). Letting go of them the usual way would reach
 * the parent's peer: OpenSSL's close_notify, libcurl's read to drain it.
 * So every socket libcurl opens is noted here (a connection's cost, not a
 * call's), and the child points those still open at /dev/null first.
 * libcurl 7.88 closes a socket that never finished connecting (a connect
 * timeout, the loser of happy eyeballs) without the close callback: its
 * note stays, and its number may be another file's later. A number
 * socket() hands out again drops the stale note (so notes never outnumber
 * open descriptors), and the child forgets only a descriptor that is still
 * the socket noted (its device and inode). */
static curl_socket_t on_open(void *clientp, curlsocktype purpose, struct curl_sockaddr *addr)
{
	struct curl_transport *t = clientp;
	struct wms__curl_sock note;
	struct stat st;
	curl_socket_t fd;
	size_t i;
	int type = addr->socktype;
	(void)purpose;
#ifdef SOCK_CLOEXEC
	type |= SOCK_CLOEXEC; /* nor does a program the caller execs inherit it */
#endif
	fd = socket(addr->family, type, addr->protocol);
	if (fd == CURL_SOCKET_BAD)
		return fd; /* errno is libcurl's to report */
	note.fd = fd;
	note.dev = note.ino = 0;
	if (fstat(fd, &st) == 0) {
		note.dev = (unsigned long long)st.st_dev;
		note.ino = (unsigned long long)st.st_ino;
	}
	pthread_mutex_lock(&t->socks_lock);
	for (i = 0; i < t->socks_count; i++)
		if (t->socks[i].fd == fd) {
			t->socks[i] = t->socks[--t->socks_count]; /* closed unannounced */
			break;
		}
	if (t->socks_count == t->socks_cap) {
		size_t cap = t->socks_cap ? 2 * t->socks_cap : 8;
		struct wms__curl_sock *grown = wms__realloc(t->socks, cap * sizeof(*grown));
		if (grown) {
			t->socks = grown;
			t->socks_cap = cap;
		}
	}
	/* without memory the socket goes unnoted: only a child's letting go
	 * of it is at stake, not the call */
	if (t->socks_count < t->socks_cap)
		t->socks[t->socks_count++] = note;
	pthread_mutex_unlock(&t->socks_lock);
	return fd;
}

void wms__curl_socket_closed(struct curl_transport *t, curl_socket_t fd)
{
	size_t i;
	int lock = !wms__forked_since(t->fork_gen);
	if (lock)
		pthread_mutex_lock(&t->socks_lock);
	for (i = 0; i < t->socks_count; i++)
		if (t->socks[i].fd == fd) {
			t->socks[i] = t->socks[--t->socks_count];
			break;
		}
	if (lock)
		pthread_mutex_unlock(&t->socks_lock);
}

void wms__curl_forget_sockets(struct curl_transport *t)
{
	struct stat st;
	size_t i;
	if (t->socks_forgotten || !wms__forked_since(t->fork_gen))
		return;
	t->socks_forgotten = 1;
	for (i = 0; i < t->socks_count; i++) {
		const struct wms__curl_sock *n = &t->socks[i];
		if (fstat(n->fd, &st) == 0 && S_ISSOCK(st.st_mode) &&
		    (unsigned long long)st.st_dev == n->dev && (unsigned long long)st.st_ino == n->ino)
			(void)wms__fd_forget(n->fd);
	}
}

static int on_close(void *clientp, curl_socket_t fd)
{
	wms__curl_socket_closed(clientp, fd);
	return close(fd);
}

/* ---- handle pool ------------------------------------------------------ */

static void conn_forget(struct conn *k)
{
	wms__free(k->url);
	k->url = NULL;
	k->url_parsed = 0;
	k->connect_ms = k->total_ms = k->stall_s = 0;
	/* HTTPHEADER still points at the list: only free it once h is reset
	 * or gone, or the next set-up replaces it. */
	k->configured = 0;
}

/* The correlation node (link_correlation), part of k, off the cached
 * header list again. */
static void unlink_correlation(struct conn *k)
{
	if (k->corr_tail)
		k->corr_tail->next = NULL;
	k->corr_tail = NULL;
}

static void conn_free(struct conn *k)
{
	if (!k)
		return;
	/* The multi first: its connection cache closes through h's share. */
	if (k->m)
		curl_multi_cleanup(k->m);
	if (k->h)
		curl_easy_cleanup(k->h);
	conn_forget(k);
	/* a transfer let go of unfinished (an engine's, in a forked child)
	 * still has the correlation node, part of k, linked */
	unlink_correlation(k);
	curl_slist_free_all(k->headers);
#if LIBCURL_VERSION_NUM >= 0x073f00
	curl_url_cleanup(k->u); /* after h, which may point at it */
#endif
	wms__free(k);
}

static int on_socket(CURL *easy, curl_socket_t s, int what, void *userp, void *socketp);
static int on_timer(CURLM *multi, long timeout_ms, void *userp);

/* A multi handle for k: its event loop and connection cache. */
static CURLM *multi_new(struct conn *k)
{
	CURLM *m = curl_multi_init();
	if (m && (curl_multi_setopt(m, CURLMOPT_SOCKETFUNCTION, on_socket) != CURLM_OK ||
		  curl_multi_setopt(m, CURLMOPT_SOCKETDATA, (void *)k) != CURLM_OK ||
		  curl_multi_setopt(m, CURLMOPT_TIMERFUNCTION, on_timer) != CURLM_OK ||
		  curl_multi_setopt(m, CURLMOPT_TIMERDATA, (void *)k) != CURLM_OK ||
		  curl_multi_setopt(m, CURLMOPT_MAXCONNECTS, 1L) != CURLM_OK)) {
		curl_multi_cleanup(m);
		m = NULL;
	}
	return m;
}

static struct conn *conn_new(void)
{
	return wms__curl_conn_new(1);
}

struct conn *wms__curl_conn_new(int own_multi)
{
	struct conn *k = wms__calloc(1, sizeof(*k));
	if (!k)
		return NULL;
	k->idle_fd = CURL_SOCKET_BAD;
	k->h = curl_easy_init();
	if (own_multi)
		k->m = multi_new(k);
	if (!k->h || (own_multi && !k->m)) {
		conn_free(k);
		return NULL;
	}
	return k;
}

void wms__curl_conn_free(struct conn *k)
{
	conn_free(k);
}

/* Whether k's idle connection has something to read: bytes the server sent
 * unasked (a "408 Request Timeout" before it closes), its FIN or a reset.
 * Reused, the next call would take those bytes for its reply (see "Idle
 * connections with something to read"). */
static int conn_idle_readable(const struct conn *k)
{
	struct pollfd pfd;
	if (k->idle_unknown)
		return 1; /* a connection we cannot check: as if readable */
	if (k->idle_fd == CURL_SOCKET_BAD)
		return 0;
	pfd.fd = k->idle_fd;
	pfd.events = POLLIN;
	/* > 0: something to read, or POLLHUP/POLLERR/POLLNVAL; < 0: cannot
	 * tell, so not worth the risk. EINTR is no answer: even with a zero
	 * timeout poll() fails so when a signal is pending (a handler without
	 * SA_RESTART), and taken as "readable" it cost a good connection (a
	 * new handshake) per signal that landed here (test_signals). */
	for (;;) {
		int r;
		pfd.revents = 0;
		r = poll(&pfd, 1, 0);
		if (r >= 0 || errno != EINTR)
			return r != 0;
	}
}

/* Close k's connections: a new multi handle (a new, empty connection cache)
 * in place of the old. 0 on success; -1 (no memory) leaves k unusable. */
static int conn_close_connections(struct conn *k)
{
	CURLM *m = multi_new(k);
	/* The easy handle is in no multi between calls: the old one goes, and
	 * its connections with it. */
	curl_multi_cleanup(k->m);
	k->m = m;
	k->idle_fd = CURL_SOCKET_BAD;
	k->idle_unknown = 0;
	k->watch_count = 0;
	k->timer_set = 0;
	return m ? 0 : -1;
}

/* An idle handle whose connection is fit for reuse, or a new one; NULL: no
 * memory. */
static struct conn *pool_take(struct curl_transport *t)
{
	struct conn *k;
	for (;;) {
		pthread_mutex_lock(&t->pool_lock);
		k = wms__affine_take(t->idle, &t->idle_count);
		pthread_mutex_unlock(&t->pool_lock);
		if (!k)
			return conn_new();
		if (!conn_idle_readable(k) || conn_close_connections(k) == 0)
			return k;
		conn_free(k);
	}
}

/* Back to the pool, options kept (see "Handle reuse"). Nothing of the
 * finished call is read again: the next call sets the body and resp first. */
static void pool_give(struct curl_transport *t, struct conn *k)
{
	int kept = 0;
	k->c.resp = NULL;
	pthread_mutex_lock(&t->pool_lock);
	if (!k->broken && t->idle_count < t->idle_max) {
		wms__affine_give(t->idle, &t->idle_count, k);
		kept = 1;
	}
	pthread_mutex_unlock(&t->pool_lock);
	if (!kept)
		conn_free(k);
}

/* ---- callbacks ------------------------------------------------------- */

static size_t on_body(char *ptr, size_t size, size_t nmemb, void *userdata)
{
	struct call *c = userdata;
	size_t n = size * nmemb;
	wms_status st = wms_http_response_append(c->resp, ptr, n);
	if (st != WMS_OK) {
		if (c->cb_status == WMS_OK)
			c->cb_status = st;
#ifdef CURL_WRITEFUNC_ERROR
		return n ? 0 : CURL_WRITEFUNC_ERROR;
#else
		return n ? 0 : 1;
#endif
	}
	if (n)
		c->in_body = 1;
	return n;
}

/* A Retry-After value (RFC 9110 10.2.3) in milliseconds, at most
 * UINT32_MAX: delta-seconds, or an HTTP-date (curl_getdate reads its three
 * forms) less the wall clock now; 0 for a date past, an empty value or
 * anything else. */
static uint32_t retry_after_ms(const char *v, size_t n)
{
	char date[64];
	uint64_t secs = 0;
	time_t when, now;
	size_t i;

	while (n && (*v == ' ' || *v == '\t')) {
		v++;
		n--;
	}
	while (n && (v[n - 1] == '\r' || v[n - 1] == '\n' || v[n - 1] == ' ' || v[n - 1] == '\t'))
		n--;
	for (i = 0; i < n && v[i] >= '0' && v[i] <= '9'; i++)
		if (secs <= UINT32_MAX)
			secs = secs * 10u + (uint64_t)(v[i] - '0');
	if (i == n && n)
		return secs > UINT32_MAX / 1000u ? UINT32_MAX : (uint32_t)(secs * 1000u);
	if (i || !n || n >= sizeof(date))
		return 0;
	memcpy(date, v, n);
	date[n] = '\0';
	when = curl_getdate(date, NULL);
	now = time(NULL);
	if (when == (time_t)-1 || when <= now)
		return 0;
	secs = (uint64_t)(when - now); /* curl_getdate reads years to 2^31 */
	return secs > UINT32_MAX / 1000u ? UINT32_MAX : (uint32_t)(secs * 1000u);
}

static size_t on_header(char *ptr, size_t size, size_t nmemb, void *userdata)
{
	static const char ct[] = "content-type:", ra[] = "retry-after:";
	struct call *c = userdata;
	size_t n = size * nmemb;
	wms_status st;

	c->header_bytes += (curl_off_t)n;
	/* the blank line ending the headers: what follows the body are
	 * trailers, though no body byte came (an empty chunked body) */
	if ((n == 2 && ptr[0] == '\r' && ptr[1] == '\n') || (n == 1 && ptr[0] == '\n')) {
		c->in_body = 1;
		return n;
	}
	if (n >= 5 && strncmp(ptr, "HTTP/", 5) == 0) {
		/* A new status line (after a 1xx, or a retry): forget the last one's. */
		wms__free(c->resp->content_type);
		c->resp->content_type = NULL;
		c->resp->retry_after_ms = 0;
		c->in_body = 0;
		return n;
	}
	/* a trailer is not the reply's word on when to come back */
	if (!c->in_body && n >= sizeof(ra) - 1 && strncasecmp(ptr, ra, sizeof(ra) - 1) == 0) {
		c->resp->retry_after_ms = retry_after_ms(ptr + sizeof(ra) - 1, n - (sizeof(ra) - 1));
		return n;
	}
	if (c->in_body || n < sizeof(ct) - 1 || strncasecmp(ptr, ct, sizeof(ct) - 1) != 0)
		return n;
	st = wms_http_response_set_content_type(c->resp, ptr + sizeof(ct) - 1,
						 n - (sizeof(ct) - 1));
	if (st != WMS_OK) {
		if (c->cb_status == WMS_OK)
			c->cb_status = st;
		return 0;
	}
	return n;
}

/*
 * The stall guard, part two. CURLOPT_LOW_SPEED_* judges curl's transfer
 * speed, which libcurl averages over a window of about five seconds: measured
 * on 7.88, a reply that goes silent after a few bytes with LOW_SPEED_TIME 1
 * is only aborted after ~7 s, and with the defaults (5 s stall, 10 s deadline)
 * the deadline always wins. So this callback also aborts when nothing has
 * moved for stall_timeout_ms once the connection is up (server think time
 * included). "Moved": body bytes either way, a complete header line (curl
 * hands headers over by the line), or any bytes arriving: the transfer loop
 * moves last_move_ns whenever its poll() sees a socket readable, so a header
 * line that trickles in slower than one line per stall_timeout_ms is not a
 * stall. libcurl calls this at least once a second.
 */
static int on_progress(void *userdata, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
		       curl_off_t ulnow)
{
	struct call *c = userdata;
	curl_off_t moved = dlnow + ulnow + c->header_bytes;
	uint64_t now;
	(void)dltotal;
	(void)ultotal;
	/* Movement is stamped with the clock read now; a check for silence
	 * (most of the ten or so calls libcurl makes a transfer) with the
	 * loop's (see struct call), at most one libcurl action old: it can
	 * only see the silence later than it began, never earlier. */
	if (!c->connected) {
		curl_off_t pre = 0;
		if (moved > 0 ||
		    (curl_easy_getinfo(c->h, CURLINFO_PRETRANSFER_TIME_T, &pre) == CURLE_OK &&
		     pre > 0))
			c->connected = 1;
		c->last_move_ns = wms__now_ns();
		c->moved = moved;
		return 0;
	}
	if (moved != c->moved) {
		c->moved = moved;
		c->last_move_ns = wms__now_ns();
		return 0;
	}
	/* (older than last_move_ns when the movement was in this action) */
	now = *c->clock;
	if (now > c->last_move_ns && now - c->last_move_ns >= c->stall_ns) {
		c->stalled = 1;
		return 1;
	}
	return 0;
}

/* Every new socket of a transfer, before it connects (see "Resends"). Bytes
 * of this transfer already written mean the socket is libcurl's resend of a
 * request that may have been received: refused, the transfer fails with
 * CURLE_ABORTED_BY_CALLBACK and the WMS sees no second copy. */
static int on_sockopt(void *clientp, curl_socket_t fd, curlsocktype purpose)
{
	struct conn *k = clientp;
	long written = 0;
	(void)fd;
	(void)purpose;
	k->c.sockets++;
	if (curl_easy_getinfo(k->h, CURLINFO_REQUEST_SIZE, &written) != CURLE_OK || written <= 0)
		return CURL_SOCKOPT_OK;
	k->c.resend_refused = 1;
	wms__strlcpy(k->died, k->errbuf, sizeof(k->died));
	return CURL_SOCKOPT_ERROR;
}

/* The connection is up (or reused) and the request is about to be written:
 * from here on a byte of it may have left (see curl_async.c's cancel). */
#if LIBCURL_VERSION_NUM >= 0x075000
static int on_prereq(void *clientp, char *conn_primary_ip, char *conn_local_ip,
		     int conn_primary_port, int conn_local_port)
{
	struct call *c = clientp;
	(void)conn_primary_ip;
	(void)conn_local_ip;
	(void)conn_primary_port;
	(void)conn_local_port;
	c->requesting = 1;
	return CURL_PREREQFUNC_OK;
}
#endif

/* ---- the transfer loop --------------------------------------------------- */

static int on_socket(CURL *easy, curl_socket_t s, int what, void *userp, void *socketp)
{
	struct conn *k = userp;
	size_t i;
	(void)easy;
	(void)socketp;
	for (i = 0; i < k->watch_count && k->watch_fd[i] != s; i++)
		;
	if (what == CURL_POLL_REMOVE) {
		if (i < k->watch_count) {
			k->watch_count--;
			k->watch_fd[i] = k->watch_fd[k->watch_count];
			k->watch_what[i] = k->watch_what[k->watch_count];
		}
		return 0;
	}
	if (i == k->watch_count) {
		if (k->watch_count == WATCH_MAX)
			return -1; /* the multi call fails: CURLM_ABORTED_BY_CALLBACK */
		k->watch_fd[k->watch_count++] = s;
	}
	k->watch_what[i] = what;
	return 0;
}

static int on_timer(CURLM *multi, long timeout_ms, void *userp)
{
	struct conn *k = userp;
	(void)multi;
	k->timer_set = timeout_ms >= 0;
	k->timer_moved = 1;
	if (k->timer_set)
		k->timer_due_ns = wms__now_ns() + (uint64_t)timeout_ms * 1000000u;
	return 0;
}

/* Milliseconds until libcurl's timer is due, at most 1000 (as in
 * curl_easy_perform: the progress callback runs at least once a second). */
static int wait_ms(const struct conn *k)
{
	uint64_t now, left;
	if (!k->timer_set)
		return 1000;
	now = wms__now_ns();
	if (k->timer_due_ns <= now)
		return 0;
	left = (k->timer_due_ns - now + 999999u) / 1000000u;
	return left < 1000u ? (int)left : 1000;
}

/* What poll() saw, in libcurl's terms (as its own Curl_socket_check says it). */
static int events_of(int what, short revents)
{
	int ev = 0;
	if (what & CURL_POLL_IN) {
		if (revents & (POLLIN | POLLERR | POLLHUP))
			ev |= CURL_CSELECT_IN;
		if (revents & (POLLPRI | POLLNVAL))
			ev |= CURL_CSELECT_ERR;
	}
	if (what & CURL_POLL_OUT) {
		if (revents & POLLOUT)
			ev |= CURL_CSELECT_OUT;
		if (revents & (POLLERR | POLLHUP | POLLNVAL))
			ev |= CURL_CSELECT_ERR;
	}
	return ev;
}

/* What m's cache keeps for the next call, once a transfer is over and before
 * the handle leaves m (CURLINFO_ACTIVESOCKET needs it there). libcurl keeps
 * at most one connection (CURLMOPT_MAXCONNECTS 1: one handed back to a cache
 * of two closes the older), so a kept one is the only one. None kept: if
 * this transfer used the cached connection (no new socket, request bytes
 * written), libcurl has closed it and nothing is cached; otherwise (it
 * opened a socket of its own, or failed before connecting) the cached one,
 * if any, is the one noted before, untouched: it stays the one to check. A
 * stale note is harmless: a closed descriptor polls as POLLNVAL, which drops
 * nothing that is still there. */
static void note_idle(struct conn *k)
{
	curl_socket_t fd = CURL_SOCKET_BAD;
	long written = 0;
	if (curl_easy_getinfo(k->h, CURLINFO_ACTIVESOCKET, &fd) != CURLE_OK)
		fd = CURL_SOCKET_BAD;
	if (fd != CURL_SOCKET_BAD) {
		k->idle_fd = fd;
		k->idle_unknown = 0;
		return;
	}
	if (k->c.sockets)
		return;
	if (curl_easy_getinfo(k->h, CURLINFO_REQUEST_SIZE, &written) != CURLE_OK)
		k->idle_unknown = 1; /* cannot tell: the next reuse closes the cache */
	else if (written > 0)
		k->idle_fd = CURL_SOCKET_BAD; /* it was used and is gone */
}

/* curl_easy_perform(k->h), through k's multi handle with the readiness our
 * poll() reports (see "The transfer loop"). Returns the transfer's result. */
static CURLcode transfer(struct conn *k)
{
	struct pollfd fds[WATCH_MAX];
	int what[WATCH_MAX];
	int running = 0, pending, done = 0, ms, r;
	CURLcode rc = CURLE_OK;
	CURLMcode mc;
	CURLMsg *msg;
	size_t i, n;

	/* on_progress's clock for silence (struct call's now_ns): read here, and again
	 * each time the loop wakes, before it hands libcurl anything */
	k->c.now_ns = wms__now_ns();
	mc = curl_multi_add_handle(k->m, k->h);
	if (mc != CURLM_OK) {
		k->broken = 1;
		return mc == CURLM_OUT_OF_MEMORY ? CURLE_OUT_OF_MEMORY : CURLE_FAILED_INIT;
	}
	mc = curl_multi_socket_action(k->m, CURL_SOCKET_TIMEOUT, 0, &running);
	while (mc == CURLM_OK && running) {
		ms = wait_ms(k);
		if (ms == 0) {
			k->timer_moved = 0;
			k->c.now_ns = wms__now_ns();
			mc = curl_multi_socket_action(k->m, CURL_SOCKET_TIMEOUT, 0, &running);
			/* Not yet due by libcurl's clock, and not re-armed: look
			 * again in a millisecond rather than spin. */
			if (!k->timer_moved && k->timer_set)
				k->timer_due_ns = wms__now_ns() + 1000000u;
			continue;
		}
		n = k->watch_count;
		for (i = 0; i < n; i++) {
			what[i] = k->watch_what[i];
			fds[i].fd = k->watch_fd[i];
			fds[i].events = (short)(((what[i] & CURL_POLL_IN) ? POLLIN : 0) |
						((what[i] & CURL_POLL_OUT) ? POLLOUT : 0));
			fds[i].revents = 0;
		}
		r = poll(fds, (nfds_t)n, ms);
		k->c.now_ns = wms__now_ns();
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
#if LIBCURL_VERSION_NUM >= 0x075400
			rc = CURLE_UNRECOVERABLE_POLL;
#else
			rc = CURLE_RECV_ERROR;
#endif
			k->broken = 1;
			goto remove;
		}
		if (r == 0) {
			mc = curl_multi_socket_action(k->m, CURL_SOCKET_TIMEOUT, 0, &running);
			continue;
		}
		/* Bytes in (a header line trickling in, say) are movement for
		 * the stall guard, whole header lines or not (see on_progress). */
		for (i = 0; i < n; i++)
			if (fds[i].revents & POLLIN) {
				k->c.last_move_ns = k->c.now_ns;
				break;
			}
		/* The watch list may change under these calls: fds is a copy. */
		for (i = 0; i < n && mc == CURLM_OK; i++)
			if (fds[i].revents)
				mc = curl_multi_socket_action(k->m, fds[i].fd,
							      events_of(what[i], fds[i].revents),
							      &running);
	}
	while ((msg = curl_multi_info_read(k->m, &pending)) != NULL) {
		if (msg->msg == CURLMSG_DONE && msg->easy_handle == k->h) {
			rc = msg->data.result;
			done = 1;
			k->c.transferred = 1;
		}
	}
	if (!done) {
		/* As curl_easy_perform maps a failed multi call. */
		rc = mc == CURLM_OUT_OF_MEMORY ? CURLE_OUT_OF_MEMORY : CURLE_BAD_FUNCTION_ARGUMENT;
		k->broken = 1;
	}
remove:
	note_idle(k);
	if (curl_multi_remove_handle(k->m, k->h) != CURLM_OK)
		k->broken = 1;
	return rc;
}

/* ---- helpers ---------------------------------------------------------- */

static int has_crlf(const char *s)
{
	return s && strpbrk(s, "\r\n") != NULL;
}

/* A byte below 0x20, or DEL; with tab_ok, a tab is not one. */
static int has_control_in(const char *s, int tab_ok)
{
	for (; s && *s; s++)
		if (((unsigned char)*s < 0x20 && !(tab_ok && *s == '\t')) || *s == 0x7f)
			return 1;
	return 0;
}

static int has_control(const char *s)
{
	return has_control_in(s, 0);
}

static int has_control_but_tab(const char *s)
{
	return has_control_in(s, 1);
}

/* Whether line is exactly prefix + value + suffix. */
static int line_is(const char *line, const char *prefix, const char *value, const char *suffix)
{
	size_t a = strlen(prefix), b = strlen(value);
	return strncmp(line, prefix, a) == 0 && strncmp(line + a, value, b) == 0 &&
	       strcmp(line + a + b, suffix) == 0;
}

static wms_status add_header(struct curl_slist **list, const char *prefix, const char *value,
			     const char *suffix)
{
	struct curl_slist *l;
	char *line = wms__join3(prefix, value, suffix);
	if (!line)
		return WMS_ERR_NOMEM;
	l = curl_slist_append(*list, line);
	wms__free(line);
	if (!l)
		return WMS_ERR_NOMEM;
	*list = l;
	return WMS_OK;
}

/* The request headers, in this order: Content-Type, SOAPAction (1.1 only),
 * an empty Expect (no 100-continue round trip) and Accept. Content-Length
 * comes from POSTFIELDSIZE_LARGE: never chunked. */
static wms_status build_headers(struct curl_slist **out, const wms_http_request *req)
{
	struct curl_slist *headers = NULL;
	wms_status st = add_header(&headers, "Content-Type: ", req->content_type, "");
	if (st == WMS_OK && req->soap_version == WMS_SOAP_11)
		st = add_header(&headers, "SOAPAction: \"",
				req->soap_action ? req->soap_action : "", "\"");
	if (st == WMS_OK)
		st = add_header(&headers, "Expect:", "", "");
	if (st == WMS_OK)
		st = add_header(&headers, "Accept: ", "text/xml, application/soap+xml", "");
	if (st != WMS_OK) {
		curl_slist_free_all(headers);
		headers = NULL;
	}
	*out = headers;
	return st;
}

/* Whether k's header list is the one build_headers would make for req. */
static int headers_match(const struct conn *k, const wms_http_request *req)
{
	const struct curl_slist *l = k->headers;
	int soap11 = req->soap_version == WMS_SOAP_11;
	if (!l || k->headers_soap11 != soap11 ||
	    !line_is(l->data, "Content-Type: ", req->content_type, ""))
		return 0;
	return !soap11 || (l->next && line_is(l->next->data, "SOAPAction: \"",
					       req->soap_action ? req->soap_action : "", "\""));
}

/* Remember `value` as what `*slot` says h carries. A failed copy only costs
 * a full set-up on the next call. */
static void remember(struct conn *k, char **slot, const char *value)
{
	char *copy = value ? wms__strdup(value) : NULL;
	wms__free(*slot);
	*slot = copy;
	if (value && !copy)
		k->configured = 0;
}

/* Whether the whole request (head and body) was written to the socket. Body
 * bytes only count once written (CURLINFO_SIZE_UPLOAD_T); a request whose
 * body did not fully leave cannot be acted on by an HTTP server. */
static int request_fully_sent(CURL *h, size_t body_len)
{
	curl_off_t up = 0;
	long head = 0;
	if (curl_easy_getinfo(h, CURLINFO_REQUEST_SIZE, &head) != CURLE_OK || head <= 0)
		return 0;
	if (curl_easy_getinfo(h, CURLINFO_SIZE_UPLOAD_T, &up) != CURLE_OK || up < 0)
		return 0;
	return (curl_off_t)body_len <= up;
}


/* ---- the send call ----------------------------------------------------- */

#define SETOPT(opt, val)                                   \
	do {                                               \
		rc = curl_easy_setopt(h, opt, val);        \
		if (rc != CURLE_OK)                        \
			goto done;                         \
	} while (0)

/* Every option that is the same for all calls - the transport's own (TLS
 * files, pin, credentials, user agent) among them - on a handle just reset
 * (or new). */
static CURLcode setup(struct curl_transport *t, struct conn *k)
{
	CURL *h = k->h;
	CURLcode rc = CURLE_OK;

	unsigned long failed = wms__alloc_lib_failures();

	/* curl_easy_reset cannot report that it ran out of memory, and 7.88 then
	 * leaves later defaults (the receive buffer size) at zero: a transfer on
	 * that handle reads nothing of a reply. With libcurl routed through the
	 * seam such a failure is seen, and the set-up fails as NOMEM. */
	curl_easy_reset(h);
	conn_forget(k);
	curl_slist_free_all(k->headers);
	k->headers = NULL;
	if (wms__alloc_lib_failures() != failed) {
		rc = CURLE_OUT_OF_MEMORY;
		goto done;
	}

	SETOPT(CURLOPT_SHARE, k->share ? k->share : t->share);
	SETOPT(CURLOPT_PRIVATE, (void *)k); /* an engine finds k by its handle */
#if LIBCURL_VERSION_NUM >= 0x075500
	SETOPT(CURLOPT_PROTOCOLS_STR, "http,https");
#else
	SETOPT(CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
	SETOPT(CURLOPT_FOLLOWLOCATION, 0L);
	SETOPT(CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
	SETOPT(CURLOPT_NOSIGNAL, 1L);
	SETOPT(CURLOPT_MAXCONNECTS, 1L);
	SETOPT(CURLOPT_LOW_SPEED_LIMIT, 1L);
	SETOPT(CURLOPT_SSL_VERIFYPEER, 1L);
	SETOPT(CURLOPT_SSL_VERIFYHOST, 2L);
	if (t->ca_file)
		SETOPT(CURLOPT_CAINFO, t->ca_file);
	if (t->ca_path)
		SETOPT(CURLOPT_CAPATH, t->ca_path);
	if (t->user_agent)
		SETOPT(CURLOPT_USERAGENT, t->user_agent);
	if (t->client_cert) {
		SETOPT(CURLOPT_SSLCERT, t->client_cert);
		SETOPT(CURLOPT_SSLCERTTYPE, "PEM");
	}
	if (t->client_key) {
		SETOPT(CURLOPT_SSLKEY, t->client_key);
		SETOPT(CURLOPT_SSLKEYTYPE, "PEM");
	}
	if (t->pinned_public_key)
		SETOPT(CURLOPT_PINNEDPUBLICKEY, t->pinned_public_key);
	if (t->http_username && t->http_password) {
		SETOPT(CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
		SETOPT(CURLOPT_USERNAME, t->http_username);
		SETOPT(CURLOPT_PASSWORD, t->http_password);
	}
	SETOPT(CURLOPT_WRITEFUNCTION, on_body);
	SETOPT(CURLOPT_WRITEDATA, &k->c);
	SETOPT(CURLOPT_HEADERFUNCTION, on_header);
	SETOPT(CURLOPT_HEADERDATA, &k->c);
	SETOPT(CURLOPT_XFERINFOFUNCTION, on_progress);
	SETOPT(CURLOPT_XFERINFODATA, &k->c);
	SETOPT(CURLOPT_NOPROGRESS, 0L);
	SETOPT(CURLOPT_SOCKOPTFUNCTION, on_sockopt);
	SETOPT(CURLOPT_SOCKOPTDATA, (void *)k);
	SETOPT(CURLOPT_OPENSOCKETFUNCTION, on_open);
	SETOPT(CURLOPT_OPENSOCKETDATA, (void *)t);
	SETOPT(CURLOPT_CLOSESOCKETFUNCTION, on_close);
	SETOPT(CURLOPT_CLOSESOCKETDATA, (void *)t);
#if LIBCURL_VERSION_NUM >= 0x075000
	SETOPT(CURLOPT_PREREQFUNCTION, on_prereq);
	SETOPT(CURLOPT_PREREQDATA, &k->c);
#endif
#if LIBCURL_VERSION_NUM >= 0x075700
	/* Do not join a resolver thread still in getaddrinfo() (see "Name
	 * resolution"); older libcurl has no such option and joins it. */
	SETOPT(CURLOPT_QUICK_EXIT, 1L);
#endif
	SETOPT(CURLOPT_ERRORBUFFER, k->errbuf);
	k->configured = 1;
done:
	return rc;
}

/* Give h the URL. libcurl 7.88 parses a CURLOPT_URL string again on every
 * transfer (curl_url_set and the part copies: about 10 000 instructions of
 * a call's 130 000, measured with callgrind against the bench's server);
 * handed a parsed URL (CURLOPT_CURLU) it only copies it. It is parsed here
 * once per change of URL, with the flags libcurl itself parses CURLOPT_URL
 * with (WMS__CURL_URL_FLAGS), so the same URLs mean the same. A URL
 * it refuses, or a handle that cannot be made, goes as the string, and
 * libcurl reports it at the transfer as before. */
static CURLcode set_url(struct conn *k, const char *url)
{
#if LIBCURL_VERSION_NUM >= 0x073f00
	if (!k->u)
		k->u = curl_url();
	CURLcode rc;
	k->url_parsed = 0;
	if (k->u && curl_url_set(k->u, CURLUPART_URL, url, WMS__CURL_URL_FLAGS) == CURLUE_OK) {
		rc = curl_easy_setopt(k->h, CURLOPT_CURLU, k->u);
		k->url_parsed = rc == CURLE_OK;
		return rc;
	}
	/* A parsed URL wins over a string: drop the one h may carry. */
	rc = curl_easy_setopt(k->h, CURLOPT_CURLU, NULL);
	if (rc != CURLE_OK)
		return rc;
#endif
	return curl_easy_setopt(k->h, CURLOPT_URL, url);
}

/* Make k's handle carry req: only what differs from its last call is set. */
static CURLcode configure(struct curl_transport *t, struct conn *k, const wms_http_request *req,
			  long connect_ms, long total_ms, long stall_s)
{
	CURL *h = k->h;
	CURLcode rc = CURLE_OK;

	if (!k->configured) {
		rc = setup(t, k);
		if (rc != CURLE_OK)
			goto done;
	}
	if (!k->url || strcmp(k->url, req->url) != 0) {
		rc = set_url(k, req->url);
		if (rc != CURLE_OK)
			goto done;
		remember(k, &k->url, req->url);
	}
	if (k->connect_ms != connect_ms) {
		SETOPT(CURLOPT_CONNECTTIMEOUT_MS, connect_ms);
		k->connect_ms = connect_ms;
	}
	if (k->total_ms != total_ms) {
		SETOPT(CURLOPT_TIMEOUT_MS, total_ms);
		k->total_ms = total_ms;
	}
	if (k->stall_s != stall_s) {
		SETOPT(CURLOPT_LOW_SPEED_TIME, stall_s);
		k->stall_s = stall_s;
	}
	SETOPT(CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)req->body_len);
	/* Never NULL: a NULL POSTFIELDS makes curl read the body from stdin. */
	SETOPT(CURLOPT_POSTFIELDS, req->body ? req->body : "");
done:
	if (rc != CURLE_OK)
		k->configured = 0; /* whatever h carries now, the next call starts over */
	return rc;
}

#undef SETOPT

/* What the transport refuses before it takes a handle. */
wms_status wms__curl_check_request(const wms_http_request *req, wms_error *err)
{
	if (!req->url || !req->url[0])
		return wms_transport_fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
					  "request has no URL");
	if (!req->content_type || !req->content_type[0])
		return wms_transport_fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
					  "request has no content type");
	if (!req->body && req->body_len)
		return wms_transport_fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
					  "request body is NULL with a non-zero length");
	if ((uint64_t)req->body_len > (uint64_t)INT64_MAX)
		return wms_transport_fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
					  "request body too large");
	if (has_crlf(req->url) || has_crlf(req->content_type) || has_crlf(req->soap_action))
		return wms_transport_fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
					  "URL or header value contains CR or LF");
	return WMS_OK;
}

/* The handle's header list for `req`: the cached one when it still fits. */
static wms_status set_headers(struct conn *k, const wms_http_request *req, const struct call *c,
			      wms_error *err)
{
	struct curl_slist *headers = NULL;
	CURLcode rc;
	wms_status st;
	if (headers_match(k, req))
		return WMS_OK;
	st = build_headers(&headers, req);
	if (st != WMS_OK)
		return wms_transport_fail(err, st, WMS_DELIVERY_NOT_SENT,
					  "cannot build request headers");
	rc = curl_easy_setopt(k->h, CURLOPT_HTTPHEADER, headers);
	if (rc != CURLE_OK) {
		curl_slist_free_all(headers);
		k->configured = 0;
		return wms__curl_fail(err, rc, 0, c, NULL, req->url, 0);
	}
	curl_slist_free_all(k->headers);
	k->headers = headers;
	k->headers_soap11 = req->soap_version == WMS_SOAP_11;
	return WMS_OK;
}

/* This call's X-Correlation-Id: it changes every call, so it is a node of
 * our own, linked after the cached list for this transfer only. */
static void link_correlation(struct conn *k, const wms_http_request *req)
{
	struct curl_slist *tail = k->headers;
	k->corr_tail = NULL;
	while (tail && tail->next)
		tail = tail->next;
	if (tail && req->correlation_id && *req->correlation_id && !has_crlf(req->correlation_id)) {
		/* "X-Correlation-Id: " and at most 60 bytes of the id (as "%.60s"
		 * would, without a printf per call) */
		static const char name[] = "X-Correlation-Id: ";
		size_t n = strnlen(req->correlation_id, 60);
		memcpy(k->corr_line, name, sizeof(name) - 1);
		memcpy(k->corr_line + sizeof(name) - 1, req->correlation_id, n);
		k->corr_line[sizeof(name) - 1 + n] = '\0';
		k->corr_node.data = k->corr_line;
		k->corr_node.next = NULL;
		tail->next = &k->corr_node;
		k->corr_tail = tail;
	}
}

wms_status wms__curl_prepare(struct curl_transport *t, struct conn *k,
			     const wms_http_request *req, wms_http_response *resp, wms_error *err)
{
	struct call *c = &k->c;
	long connect_ms, total_ms, stall_s;
	uint32_t stall_ms;
	CURLcode rc;
	wms_status st;

	wms_http_response_clear(resp);
	/* A value of 0 must never reach curl (it means "no timeout" there). */
	connect_ms = req->connect_timeout_ms ? (long)req->connect_timeout_ms
					     : (long)WMS_DEFAULT_CONNECT_TIMEOUT_MS;
	total_ms = req->timeout_ms ? (long)req->timeout_ms : (long)WMS_DEFAULT_TIMEOUT_MS;
	stall_ms = req->stall_timeout_ms ? req->stall_timeout_ms : WMS_DEFAULT_STALL_TIMEOUT_MS;
	stall_s = (long)((stall_ms + 999u) / 1000u);
	if (stall_s < 1)
		stall_s = 1;

	memset(c, 0, sizeof(*c));
	c->clock = &c->now_ns; /* the async engine points it at its own */
	c->h = k->h;
	c->resp = resp;
	c->stall_ns = (uint64_t)stall_ms * 1000000u;
	k->errbuf[0] = '\0';
	k->corr_tail = NULL;

	rc = configure(t, k, req, connect_ms, total_ms, stall_s);
	if (rc != CURLE_OK)
		return wms__curl_fail(err, rc, 0, c, NULL, req->url, 0);
	c->url_parsed = k->url_parsed;
	if ((st = set_headers(k, req, c, err)) != WMS_OK)
		return st;
	link_correlation(k, req);
	c->last_move_ns = wms__now_ns();
	k->lib_failures = wms__alloc_lib_failures();
	return WMS_OK;
}

wms_status wms__curl_finish(struct conn *k, const wms_http_request *req, CURLcode rc,
			    wms_http_response *resp, wms_error *err)
{
	struct call *c = &k->c;
	long http_status = 0;

	c->lib_alloc_failed = wms__alloc_lib_failures() != k->lib_failures;
	unlink_correlation(k);
	/* libcurl's per-handle count of resends (see "Handle reuse"): a call that
	 * opened a socket or failed may have moved it, the next starts afresh. */
	if (rc != CURLE_OK || c->sockets)
		k->configured = 0;
	if (curl_easy_getinfo(k->h, CURLINFO_RESPONSE_CODE, &http_status) != CURLE_OK)
		http_status = 0;
	resp->status = http_status;
	if (rc == CURLE_OK)
		return WMS_OK;
	return wms__curl_fail(err, rc, request_fully_sent(k->h, req->body_len), c,
			      c->resend_refused ? k->died : k->errbuf, req->url, http_status);
}

static wms_status curl_send(wms_transport *self, const wms_http_request *req,
			    wms_http_response *resp, wms_error *err)
{
	struct curl_transport *t = (struct curl_transport *)self;
	struct conn *k;
	wms_status st;

	if (!t || !req || !resp)
		return wms_transport_fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
					  "transport, request and response are required");
	if ((st = wms__curl_check_request(req, err)) != WMS_OK)
		return st;
	wms_http_response_clear(resp);
	k = pool_take(t);
	if (!k)
		return wms_transport_fail(err, WMS_ERR_NOMEM, WMS_DELIVERY_NOT_SENT,
					  "cannot create a libcurl handle");
	st = wms__curl_prepare(t, k, req, resp, err);
	if (st == WMS_OK)
		st = wms__curl_finish(k, req, transfer(k), resp, err);
	pool_give(t, k);
	return st;
}

/* ---- lifetime ------------------------------------------------------------ */

/* In a child forked since: whether t can be walked and freed, every lock
 * of its free at the fork. */
static int intact_in_child(struct curl_transport *t)
{
	size_t i;
	if (!wms__mutex_free_at_fork(&t->pool_lock))
		return 0;
	for (i = 0; i < CURL_LOCK_DATA_LAST; i++)
		if (!wms__mutex_free_at_fork(&t->share_locks[i]))
			return 0;
	return 1;
}

static void curl_transport_free(wms_transport *self)
{
	struct curl_transport *t = (struct curl_transport *)self;
	size_t i;
	if (!t)
		return;
	if (wms__forked_since(t->fork_gen)) {
		/* the parent's connections first let go of (the notes, unless
		 * another thread was changing them at the fork) */
		if (wms__mutex_free_at_fork(&t->socks_lock))
			wms__curl_forget_sockets(t);
		/* a pool or cache another thread was changing at the fork is
		 * not walked: the transport stays allocated in the child */
		if (!intact_in_child(t))
			return;
	}
	/* Every handle must leave the share before the share can go. */
	for (i = 0; i < t->idle_count; i++)
		conn_free(t->idle[i].item);
	t->idle_count = 0;
	if (t->share)
		curl_share_cleanup(t->share);
	if (t->share_locks_ready)
		for (i = 0; i < CURL_LOCK_DATA_LAST; i++)
			pthread_mutex_destroy(&t->share_locks[i]);
	if (t->pool_lock_ready)
		pthread_mutex_destroy(&t->pool_lock);
	if (t->socks_lock_ready)
		pthread_mutex_destroy(&t->socks_lock);
	wms__free(t->socks);
	wms__free(t->idle);
	wms__free(t->user_agent);
	wms__free(t->ca_file);
	wms__free(t->ca_path);
	wms__free(t->client_cert);
	wms__free(t->client_key);
	wms__free(t->pinned_public_key);
	wms__free(t->http_username);
	wms__free_secret(t->http_password);
	wms__free(t);
}

const wms__engine_ops *wms__transport_engine(const wms_transport *t)
{
	return t && t->free == curl_transport_free ? wms__curl_engine() : NULL;
}

wms_status wms_curl_transport_options_init(wms_curl_transport_options *opts, unsigned version)
{
	if (!opts || version != WMS_CURL_TRANSPORT_OPTIONS_VERSION)
		return WMS_ERR_INVALID_ARG;
	memset(opts, 0, sizeof(*opts));
	opts->version = version;
	return WMS_OK;
}

/* A readable file (dir 0) or searchable directory (dir 1), or NULL: libcurl
 * reads them on every new connection, so a path that is wrong today is
 * said now, not as a TLS failure on the first call. */
static wms_status check_path(wms_error *err, const char *what, const char *path, int dir)
{
	struct stat sb;
	char why[128];

	if (!path)
		return WMS_OK;
	if (!*path)
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "%s: empty path (leave it NULL for none)", what);
	if (stat(path, &sb) == 0 && (dir ? !S_ISDIR(sb.st_mode) : S_ISDIR(sb.st_mode)))
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "%s: \"%s\" is %s", what, path, dir ? "not a directory" : "a directory");
	if (access(path, dir ? R_OK | X_OK : R_OK) != 0) {
		int e = errno;
		if (strerror_r(e, why, sizeof(why)) != 0)
			snprintf(why, sizeof(why), "error %d", e);
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "%s: cannot %s \"%s\": %s", what, dir ? "search" : "read", path, why);
	}
	return WMS_OK;
}

wms_status wms__curl_transport_check(const wms_curl_transport_options *o, wms_error *err)
{
	wms_status st;

	if (o->version != WMS_CURL_TRANSPORT_OPTIONS_VERSION)
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "curl transport options version %u is not supported (this libwms "
				 "knows %u)", o->version, WMS_CURL_TRANSPORT_OPTIONS_VERSION);
	if (o->max_idle_connections > POOL_MAX_IDLE)
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "max_idle_connections must be at most %u (got %u)", POOL_MAX_IDLE,
				 (unsigned)o->max_idle_connections);
	/* a header's value: a tab, visible bytes and any byte past DEL (RFC
	 * 9110 field-value); CR or LF would start a header of their own */
	if (has_control_but_tab(o->user_agent))
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "user_agent contains a control character (CR, LF or another "
				 "byte below 0x20 but a tab, or DEL)");
	if (!o->http_username != !o->http_password)
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "http_username and http_password go together");
	/* Basic authentication (RFC 7617): the server splits user:password at
	 * the first colon, so a user name with one would log in as someone
	 * else; neither may hold a control character. Neither is echoed. */
	if (o->http_username && strchr(o->http_username, ':'))
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "http_username must not contain ':' (Basic authentication "
				 "splits user and password at the first one)");
	if (has_control(o->http_username) || has_control(o->http_password))
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "%s contains a control character",
				 has_control(o->http_username) ? "http_username" : "http_password");
	if (!o->client_cert != !o->client_key)
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "client_cert and client_key go together");
	if ((st = check_path(err, "ca_file", o->ca_file, 0)) != WMS_OK ||
	    (st = check_path(err, "ca_path", o->ca_path, 1)) != WMS_OK ||
	    (st = check_path(err, "client_cert", o->client_cert, 0)) != WMS_OK ||
	    (st = check_path(err, "client_key", o->client_key, 0)) != WMS_OK ||
	    (o->pinned_public_key && strncmp(o->pinned_public_key, "sha256//", 8) != 0 &&
	     (st = check_path(err, "pinned_public_key", o->pinned_public_key, 0)) != WMS_OK))
		return st;
	return WMS_OK;
}

static int copy_opt(char **dst, const char *src)
{
	return !src || (*dst = wms__strdup(src)) != NULL;
}

wms_status wms_curl_transport_new(wms_transport **out)
{
	return wms_curl_transport_create(out, NULL, NULL);
}

wms_status wms_curl_transport_create(wms_transport **out, const wms_curl_transport_options *opts,
				     wms_error *err)
{
	static const wms_curl_transport_options defaults = WMS_CURL_TRANSPORT_OPTIONS_INIT;
	struct curl_transport *t = NULL;
	wms_status st = WMS_OK;
	CURLSHcode shc;
	size_t i;

	wms_error_clear(err);
	if (!out)
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT, "out is NULL");
	*out = NULL;
	if (!opts)
		opts = &defaults;
	if ((st = wms__curl_transport_check(opts, err)) != WMS_OK)
		return st;
	if (pthread_once(&global_once, global_init) != 0 || global_rc != CURLE_OK)
		return wms__fail(err, WMS_ERR_INTERNAL, WMS_DELIVERY_NOT_SENT,
				 "libcurl's global init failed");

	t = wms__calloc(1, sizeof(*t));
	if (!t)
		return wms__fail(err, WMS_ERR_NOMEM, WMS_DELIVERY_NOT_SENT, "out of memory");
	/* first: a transport freed on a failure below is this process's (its
	 * free does not take it for a parent's, locks never initialised) */
	t->fork_gen = wms__fork_gen_now();
	t->idle_max = opts->max_idle_connections ? opts->max_idle_connections : POOL_DEFAULT_IDLE;
	if (!(t->idle = wms__calloc(t->idle_max, sizeof(*t->idle))) ||
	    !copy_opt(&t->user_agent, !opts->user_agent     ? "libwms/" WMS_VERSION
				      : *opts->user_agent ? opts->user_agent
							  : NULL) ||
	    !copy_opt(&t->ca_file, opts->ca_file) ||
	    !copy_opt(&t->ca_path, opts->ca_path) || !copy_opt(&t->client_cert, opts->client_cert) ||
	    !copy_opt(&t->client_key, opts->client_key) ||
	    !copy_opt(&t->pinned_public_key, opts->pinned_public_key) ||
	    !copy_opt(&t->http_username, opts->http_username) ||
	    !copy_opt(&t->http_password, opts->http_password)) {
		curl_transport_free(&t->parent);
		return wms__fail(err, WMS_ERR_NOMEM, WMS_DELIVERY_NOT_SENT, "out of memory");
	}
	t->parent.version = WMS_TRANSPORT_VERSION;
	t->parent.send = curl_send;
	t->parent.free = curl_transport_free;

	if (pthread_mutex_init(&t->pool_lock, NULL) != 0) {
		st = WMS_ERR_INTERNAL;
		goto done;
	}
	t->pool_lock_ready = 1;
	if (pthread_mutex_init(&t->socks_lock, NULL) != 0) {
		st = WMS_ERR_INTERNAL;
		goto done;
	}
	t->socks_lock_ready = 1;
	for (i = 0; i < CURL_LOCK_DATA_LAST; i++) {
		if (pthread_mutex_init(&t->share_locks[i], NULL) != 0) {
			while (i--)
				pthread_mutex_destroy(&t->share_locks[i]);
			st = WMS_ERR_INTERNAL;
			goto done;
		}
	}
	t->share_locks_ready = 1;

	t->share = curl_share_init();
	if (!t->share) {
		st = WMS_ERR_NOMEM;
		goto done;
	}
	/* Sharing the TLS session cache allocates it. */
	if ((shc = curl_share_setopt(t->share, CURLSHOPT_USERDATA, (void *)t)) != CURLSHE_OK ||
	    (shc = curl_share_setopt(t->share, CURLSHOPT_LOCKFUNC, share_lock)) != CURLSHE_OK ||
	    (shc = curl_share_setopt(t->share, CURLSHOPT_UNLOCKFUNC, share_unlock)) != CURLSHE_OK ||
	    (shc = curl_share_setopt(t->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS)) != CURLSHE_OK ||
	    (shc = curl_share_setopt(t->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION)) !=
		    CURLSHE_OK) {
		st = shc == CURLSHE_NOMEM ? WMS_ERR_NOMEM : WMS_ERR_INTERNAL;
		goto done;
	}
	*out = &t->parent;
	t = NULL;
done:
	if (t) {
		curl_transport_free(&t->parent);
		wms__fail(err, st, WMS_DELIVERY_NOT_SENT, "cannot create the HTTP transport");
	}
	return st;
}
