/*
 * libwms - the libcurl transport's engine (transport/engine.h): transfers
 * run by one multi handle on the caller's event loop, through libcurl's
 * multi-socket interface. The handles are set up exactly as a blocking
 * send's (curl.c's prepare and finish); what differs is the loop: one
 * multi for every transfer of the engine. Single-threaded: the engine's
 * loop thread calls everything here.
 *
 * Connections. With max_connections, they are the multi's cache, which
 * libcurl caps. Without, they are kept in shards: each a share of
 * libcurl's holding a connection cache (and TLS sessions) for the
 * transfers it is given. libcurl 7.88 walks every connection of a
 * transfer's cache each time the transfer leaves the multi (to close
 * CONNECT_ONLY ones): with a thousand connections in one cache that walk
 * was a tenth of an asynchronous call's CPU. A shard holds a few dozen.
 * A transfer goes to the shard of the last connection left idle (a
 * stack of them, so a connection is reused as before), or, with none,
 * to the shard with the fewest transfers running (a new one while each
 * has SHARD_FULL running, up to SHARDS). libcurl looks for dead idle
 * connections only in the cache a transfer is set up in: a shard where
 * no transfer started or ended for wms__shard_idle_ns is closed with its
 * connections (the server has likely closed them; their sockets would
 * wait in CLOSE_WAIT until the next burst): at a start, and by the loop's
 * timer, which is libcurl's or, if sooner, the next idle shard's close
 * (on libwms's own loop also with no transfer running, so a service gone
 * quiet after a burst lets go of them too; a caller's loop is left with
 * no timer then, so that it can end).
 */
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <curl/curl.h>
#include "internal.h"
#include "transport/curl_int.h"
#include "transport/engine.h"

/* Idle handles kept for the next transfers: as many as were ever in
 * flight at once, up to this (a handle is ~20 KiB with its buffer). */
#define IDLE_MAX 4096u

/* Shards (see the top): at most SHARDS, a new one while every shard has
 * SHARD_FULL transfers running. */
#define SHARDS 16u
#define SHARD_FULL 32u
/* tokens name shards in a byte */
_Static_assert(SHARDS <= 256u, "a token is an unsigned char");
/* no deadline */
#define NO_DUE UINT64_MAX

uint64_t wms__shard_idle_ns = WMS__SHARD_IDLE_NS_DEFAULT;
uint64_t wms__shard_sweep_ns = WMS__SHARD_SWEEP_NS_DEFAULT;

struct wms__xfer {
	struct conn *k;
	const wms_http_request *req;
	wms_http_response *resp;
	wms_error *err;
	void *arg;
	/* ended, out of the multi, its report not yet made: on `ended`, with
	 * its status and how far it got */
	int retired;
	wms_status st;
	wms_delivery delivery;
	/* the sockets libcurl has the loop watch for it (two while happy
	 * eyeballs race an IPv6 and an IPv4 connect) */
	curl_socket_t socks[2];
	int nsocks;
	unsigned shard; /* its shard while running (shards only) */
	int kept;       /* ended well: its connection waits in its shard */
	/* it took its shard's token at the start, with e->actions then: until
	 * the next action libcurl has not looked at it, so an idle connection
	 * it was to take still waits */
	int took_token;
	uint64_t started_action;
	struct wms__xfer *next, *prev; /* running; or ended (next only) */
};

struct wms__engine {
	struct curl_transport *t;
	wms__engine_loop loop;
	CURLM *m;
	struct wms__xfer *running;
	struct wms__xfer *ended; /* out of the multi, to be reported */
	struct wms__xfer **idle; /* each with its conn, ready for reuse */
	size_t idle_count, idle_cap;
	/* the conn whose transfer owns each watched socket (stall guard) */
	struct conn **by_fd;
	size_t by_fd_cap;
	/* why the loop's watch or timer refused, for the transfers it fails */
	wms_status loop_failed;
	/* socket and timeout actions running (done callbacks come from them),
	 * and whether a callback destroyed the engine meanwhile (the client
	 * freed from a completion callback): its libcurl state is gone, the
	 * struct waits for the outermost action to end */
	unsigned busy;
	int dead;
	int timer_moved; /* libcurl called on_timer since we looked */
	/* libcurl's deadline, and the one the loop's timer is set to (the
	 * sooner of it and the next idle shard's close); NO_DUE: none */
	uint64_t curl_due_ns, armed_ns;
	/* socket and timeout actions begun: libcurl runs a transfer (takes a
	 * connection for it) only in one */
	uint64_t actions;
	/* the transfers' clock (struct call's), read as each action starts */
	uint64_t now_ns;
	/* connection shards (none with max_connections: the multi's cache):
	 * slots 0..nslots-1, NULL where a shard was closed; live of them */
	int sharded;
	unsigned nslots, live;
	CURLSH *shard[SHARDS];
	unsigned shard_running[SHARDS];
	uint64_t shard_used_ns[SHARDS]; /* its last transfer's start or end */
	/* a close that could not be done (a handle still held the shard) is
	 * not tried again before this: the timer never spins on it */
	uint64_t shard_retry_ns[SHARDS];
	uint64_t swept_ns;
	int shard_idled; /* a shard's last transfer ended since the timer was set */
	/* the shards of connections left idle, latest last */
	unsigned char *tokens;
	size_t ntokens, tokens_cap;
};

/* A loop callback's status, as libcurl wants it (-1 fails the multi call). */
static int note(struct wms__engine *e, wms_status st)
{
	if (st == WMS_OK)
		return 0;
	if (e->loop_failed == WMS_OK)
		e->loop_failed = st;
	return -1;
}

/* Note s as a socket of x's (watched), or as one no longer. */
static void note_sock(struct wms__xfer *x, curl_socket_t s, int watched)
{
	int i;
	for (i = 0; i < x->nsocks; i++)
		if (x->socks[i] == s) {
			if (!watched)
				x->socks[i] = x->socks[--x->nsocks];
			return;
		}
	if (watched && x->nsocks < 2)
		x->socks[x->nsocks++] = s;
}

static int on_socket(CURL *easy, curl_socket_t s, int what, void *userp, void *socketp)
{
	struct wms__engine *e = userp;
	struct conn *k = NULL;
	(void)socketp;
	if (s >= 0 && easy && curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **)&k) == CURLE_OK &&
	    k && k->xfer)
		note_sock(k->xfer, s, what != CURL_POLL_REMOVE);
	if (s >= 0) {
		if ((size_t)s >= e->by_fd_cap) {
			size_t cap = e->by_fd_cap ? e->by_fd_cap : 64;
			struct conn **grown;
			while (cap <= (size_t)s)
				cap *= 2;
			grown = wms__realloc(e->by_fd, cap * sizeof(*grown));
			if (grown) { /* without it, only the stall guard sees less */
				memset(grown + e->by_fd_cap, 0,
				       (cap - e->by_fd_cap) * sizeof(*grown));
				e->by_fd = grown;
				e->by_fd_cap = cap;
			}
		}
		if ((size_t)s < e->by_fd_cap)
			e->by_fd[s] = what == CURL_POLL_REMOVE ? NULL : k;
	}
	return note(e, e->loop.watch(e->loop.ctx, (int)s, what));
}

/* A transfer about to leave the multi before its end: its connection is
 * closed. libcurl 7.88 closes a socket that has not finished connecting
 * without the close callback, and says REMOVE only afterwards, when the
 * number may be another thread's new socket: the loop lets go of x's
 * sockets now, while they are still open (libcurl's REMOVE then finds
 * nothing watched). */
static void let_go(struct wms__engine *e, struct wms__xfer *x)
{
	while (x->nsocks) {
		curl_socket_t fd = x->socks[--x->nsocks];
		wms__curl_socket_closed(e->t, fd);
		if ((size_t)fd < e->by_fd_cap)
			e->by_fd[fd] = NULL;
		e->loop.closing(e->loop.ctx, (int)fd);
	}
}

/* The sockets of the engine's connections are closed here (libcurl keeps
 * this per connection, with the engine as its data, for the connection's
 * life, cache included), all but those 7.88 closes before they connect
 * (let_go): the loop lets go of a watch while the fd is still open, not
 * trusting libcurl's REMOVE to come first (it need not, for a socket
 * never connected); a REMOVE after this finds nothing watched. */
static int on_close(void *clientp, curl_socket_t fd)
{
	struct wms__engine *e = clientp;
	wms__curl_socket_closed(e->t, fd);
	if (fd >= 0 && (size_t)fd < e->by_fd_cap)
		e->by_fd[fd] = NULL;
	e->loop.closing(e->loop.ctx, (int)fd);
	return close(fd);
}

/* When shard j is due to close: its idle time after its last transfer,
 * or a refused close's retry if later; NO_DUE while it has a transfer
 * running (or is no shard). */
static uint64_t shard_close_at(const struct wms__engine *e, unsigned j)
{
	uint64_t at = e->shard_used_ns[j] + wms__shard_idle_ns;
	if (!e->shard[j] || e->shard_running[j])
		return NO_DUE;
	return at < e->shard_retry_ns[j] ? e->shard_retry_ns[j] : at;
}

/* When the next shard is due to close (NO_DUE: none is). */
static uint64_t sweep_due(const struct wms__engine *e)
{
	uint64_t due = NO_DUE, at;
	unsigned j;
	for (j = 0; j < e->nslots; j++)
		if ((at = shard_close_at(e, j)) < due)
			due = at;
	return due;
}

/* Set the loop's timer to libcurl's deadline, or to the next idle shard's
 * close if that is sooner (left as it is if that is what it is set to):
 * the loop's status. A caller's loop gets the close only while transfers
 * run (with none, the timer is cleared: its loop may stop). */
static wms_status arm(struct wms__engine *e, uint64_t now)
{
	wms_status st;
	uint64_t due = e->curl_due_ns;
	long ms;
	if (e->sharded && (e->running || e->loop.idle_timer)) {
		uint64_t s = sweep_due(e);
		if (s < due)
			due = s;
	}
	if (due == e->armed_ns)
		return WMS_OK;
	ms = due == NO_DUE ? -1 : due <= now ? 0 : (long)((due - now + 999999u) / 1000000u);
	st = e->loop.timer(e->loop.ctx, ms);
	e->armed_ns = st == WMS_OK ? due : 0; /* (0: set again at the next change) */
	return st;
}

/* libcurl's deadline moved to timeout_ms from now (-1: none): a libcurl
 * callback's status. */
static int curl_due(struct wms__engine *e, long timeout_ms)
{
	uint64_t now = wms__now_ns();
	e->curl_due_ns = timeout_ms < 0 ? NO_DUE : now + (uint64_t)timeout_ms * 1000000u;
	return note(e, arm(e, now));
}

/* A shard's last transfer ended: the timer comes for its close too (or,
 * on a caller's loop with no transfer left, goes). Out of libcurl's
 * callbacks: a timer the loop refuses (its heap's room, reserved for each
 * call admitted) leaves the close to the next start's sweep. */
static void arm_idled(struct wms__engine *e)
{
	if (!e->shard_idled)
		return;
	e->shard_idled = 0;
	(void)arm(e, wms__now_ns());
}

static int on_timer(CURLM *multi, long timeout_ms, void *userp)
{
	struct wms__engine *e = userp;
	(void)multi;
	e->timer_moved = 1;
	return curl_due(e, timeout_ms);
}

static wms_status engine_create(wms_transport *self, const wms__engine_loop *loop,
				uint32_t max_connections, wms__engine **out)
{
	struct wms__engine *e = wms__calloc(1, sizeof(*e));
	CURLM *m;
	*out = NULL;
	if (!e)
		return WMS_ERR_NOMEM;
	e->t = (struct curl_transport *)self;
	e->loop = *loop;
	m = curl_multi_init();
	if (!m) {
		wms__free(e);
		return WMS_ERR_NOMEM;
	}
	e->m = m;
	if (curl_multi_setopt(m, CURLMOPT_SOCKETFUNCTION, on_socket) != CURLM_OK ||
	    curl_multi_setopt(m, CURLMOPT_SOCKETDATA, (void *)e) != CURLM_OK ||
	    curl_multi_setopt(m, CURLMOPT_TIMERFUNCTION, on_timer) != CURLM_OK ||
	    curl_multi_setopt(m, CURLMOPT_TIMERDATA, (void *)e) != CURLM_OK ||
	    /* HTTP/1.1 only (as the handles are set up): one call per
	     * connection at a time, kept for the next */
	    curl_multi_setopt(m, CURLMOPT_PIPELINING, (long)CURLPIPE_NOTHING) != CURLM_OK ||
	    (max_connections &&
	     curl_multi_setopt(m, CURLMOPT_MAX_TOTAL_CONNECTIONS, (long)max_connections) !=
		     CURLM_OK) ||
	    /* Connections kept (each cache's). libcurl's default keeps four
	     * for each handle in the multi: as the calls in flight dipped it
	     * closed kept connections, to open them again in the next burst.
	     * Uncapped, IDLE_MAX in each shard's cache (libcurl 7.88 holds
	     * each cache to it on its own), as many as the handles kept idle
	     * in all: connections past those are never more than a burst's,
	     * and go with their shard once it is idle. */
	    curl_multi_setopt(m, CURLMOPT_MAXCONNECTS,
			      (long)(max_connections ? max_connections : IDLE_MAX)) != CURLM_OK) {
		curl_multi_cleanup(m);
		wms__free(e);
		return WMS_ERR_INTERNAL;
	}
	e->sharded = max_connections == 0;
	e->curl_due_ns = e->armed_ns = NO_DUE;
	*out = e;
	return WMS_OK;
}

/* A new shard: a share holding a connection cache and TLS sessions (no
 * lock: the engine's thread alone uses it; names resolve through the
 * multi's cache). NULL without memory. */
static CURLSH *shard_new(void)
{
	CURLSH *sh = curl_share_init();
	if (sh && (curl_share_setopt(sh, CURLSHOPT_SHARE, CURL_LOCK_DATA_CONNECT) != CURLSHE_OK ||
		   curl_share_setopt(sh, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION) !=
			   CURLSHE_OK)) {
		curl_share_cleanup(sh);
		sh = NULL;
	}
	return sh;
}

/* The shard for a new transfer: the latest idle connection's (*token
 * set: the caller takes the token off once the transfer is running), or
 * the least busy, or a new one while every shard is full. -1 without
 * memory for a first shard. */
static int shard_pick(struct wms__engine *e, int *token)
{
	unsigned i, best = SHARDS, empty = SHARDS;
	*token = e->ntokens > 0;
	if (*token)
		return e->tokens[e->ntokens - 1];
	for (i = 0; i < e->nslots || (empty == SHARDS && i < SHARDS); i++) {
		if (!e->shard[i]) {
			if (empty == SHARDS)
				empty = i;
		} else if (best == SHARDS || e->shard_running[i] < e->shard_running[best]) {
			best = i;
		}
	}
	if ((best == SHARDS || e->shard_running[best] >= SHARD_FULL) && empty < SHARDS &&
	    (e->shard[empty] = shard_new()) != NULL) {
		e->shard_running[empty] = 0;
		e->shard_retry_ns[empty] = 0;
		e->live++;
		if (empty >= e->nslots)
			e->nslots = empty + 1;
		return (int)empty;
	}
	return best < SHARDS ? (int)best : -1;
}

/* Close shard j (no transfer running in it): its tokens go, the idle
 * handles set up for it let go of it (and those not set up, whose last
 * set-up may have failed before it gave them their new shard), and its
 * cache closes its connections (on_close: the loop hears of each). 0, or
 * -1 if a handle still holds it. */
static int shard_close(struct wms__engine *e, unsigned j)
{
	size_t i, n = 0;
	for (i = 0; i < e->ntokens; i++)
		if (e->tokens[i] != j)
			e->tokens[n++] = e->tokens[i];
	e->ntokens = n;
	for (i = 0; i < e->idle_count; i++) {
		struct conn *k = e->idle[i]->k;
		if (k->share == e->shard[j] || !k->configured) {
			k->share = NULL;
			k->configured = 0;
			if (curl_easy_setopt(k->h, CURLOPT_SHARE, NULL) != CURLE_OK)
				k->broken = 1;
		}
	}
	/* still in use (kept, to be closed by a later sweep) only while a
	 * handle holds it: one that would not let go above, or one on
	 * `ended` whose report is being made (a completion callback running
	 * longer than the idle time) */
	if (curl_share_cleanup(e->shard[j]) != CURLSHE_OK)
		return -1;
	e->shard[j] = NULL;
	e->live--;
	while (e->nslots && !e->shard[e->nslots - 1])
		e->nslots--;
	return 0;
}

/* Every shard due to close (shard_close_at), closed; looked at once a
 * second (wms__shard_sweep_ns) at most, unless the timer says one is due
 * (`due`). A close refused is tried again a sweep period later. */
static void shard_sweep(struct wms__engine *e, uint64_t now, int due)
{
	unsigned j;
	if (!due && now - e->swept_ns < wms__shard_sweep_ns)
		return;
	e->swept_ns = now;
	for (j = 0; j < e->nslots; j++)
		if (shard_close_at(e, j) <= now && shard_close(e, j) != 0)
			e->shard_retry_ns[j] = now + wms__shard_sweep_ns;
}

/* A connection of shard j left idle: the next transfer goes there. A
 * token goes with each transfer that ended well and comes off with each
 * start, so tokens and running transfers together never outnumber the
 * most transfers ever running at once (the context's max_in_flight). One
 * that finds no memory is dropped: a token only says where a connection
 * may be waiting. */
static void shard_token(struct wms__engine *e, unsigned j)
{
	if (e->ntokens == e->tokens_cap) {
		size_t cap = e->tokens_cap ? e->tokens_cap * 2 : 64;
		unsigned char *grown = wms__realloc(e->tokens, cap);
		if (!grown)
			return;
		e->tokens = grown;
		e->tokens_cap = cap;
	}
	e->tokens[e->ntokens++] = (unsigned char)j;
}

static void xfer_free(struct wms__xfer *x)
{
	if (!x)
		return;
	wms__curl_conn_free(x->k);
	wms__free(x);
}

static void engine_destroy(wms__engine *e)
{
	size_t i;
	if (!e || e->dead)
		return;
	/* in a child forked since: the connections are the parent's, let go
	 * of without a byte (the transport's sockets, this engine's among
	 * them, point at /dev/null first); the async context left the loop
	 * alone, and its calls went without callbacks */
	wms__curl_forget_sockets(e->t);
	/* the caller cancelled every transfer; any left go unreported */
	while (e->running) {
		struct wms__xfer *x = e->running;
		e->running = x->next;
		curl_multi_remove_handle(e->m, x->k->h);
		x->k->xfer = NULL;
		xfer_free(x);
	}
	while (e->ended) {
		struct wms__xfer *x = e->ended;
		e->ended = x->next;
		xfer_free(x);
	}
	/* handles out of the multi before it goes; its cache closes the
	 * connections (REMOVE for each watched socket) */
	curl_multi_cleanup(e->m);
	for (i = 0; i < e->idle_count; i++)
		xfer_free(e->idle[i]);
	/* the shards last, every handle gone: their caches close their
	 * connections (through on_close, so the loop still hears of it) */
	for (i = 0; i < e->nslots; i++)
		if (e->shard[i])
			curl_share_cleanup(e->shard[i]);
	e->nslots = e->live = 0;
	wms__free(e->tokens);
	e->tokens = NULL;
	e->ntokens = e->tokens_cap = 0;
	wms__free(e->idle);
	wms__free(e->by_fd);
	e->m = NULL;
	e->idle = NULL;
	e->idle_count = 0;
	e->by_fd = NULL;
	e->by_fd_cap = 0;
	if (e->busy) {
		e->dead = 1;
		return;
	}
	wms__free(e);
}

static struct wms__xfer *take(struct wms__engine *e)
{
	struct wms__xfer *x;
	if (e->idle_count)
		return e->idle[--e->idle_count];
	x = wms__calloc(1, sizeof(*x));
	if (!x)
		return NULL;
	x->k = wms__curl_conn_new(0);
	if (!x->k) {
		wms__free(x);
		return NULL;
	}
	return x;
}

static void give(struct wms__engine *e, struct wms__xfer *x)
{
	x->req = NULL;
	x->resp = NULL;
	x->err = NULL;
	x->arg = NULL;
	x->nsocks = 0;
	x->kept = 0;
	x->took_token = 0;
	x->k->c.resp = NULL;
	if (!x->k->broken && e->idle_count < IDLE_MAX) {
		if (e->idle_count == e->idle_cap) {
			size_t cap = e->idle_cap ? e->idle_cap * 2 : 16;
			struct wms__xfer **grown = wms__realloc(e->idle, cap * sizeof(*grown));
			if (grown) {
				e->idle = grown;
				e->idle_cap = cap;
			}
		}
		if (e->idle_count < e->idle_cap) {
			e->idle[e->idle_count++] = x;
			return;
		}
	}
	xfer_free(x);
}

static void unlink_running(struct wms__engine *e, struct wms__xfer *x)
{
	if (x->prev)
		x->prev->next = x->next;
	else
		e->running = x->next;
	if (x->next)
		x->next->prev = x->prev;
	x->next = x->prev = NULL;
}

/* Out of the running list and the multi, finished with rc (what libcurl
 * said; CURLE_OK for a transfer ended before it did): its status. The
 * caller gives it back. */
static wms_status retire(struct wms__engine *e, struct wms__xfer *x, CURLcode rc)
{
	struct conn *k = x->k;
	k->xfer = NULL;
	unlink_running(e, x);
	if (e->sharded) {
		/* a shard is idle from its last transfer's end, not its start
		 * (e->now_ns: this action's clock; a cancel's may be older) */
		if (--e->shard_running[x->shard] == 0)
			e->shard_idled = 1; /* its close is a time for the timer */
		if (e->now_ns > e->shard_used_ns[x->shard])
			e->shard_used_ns[x->shard] = e->now_ns;
	}
	/* removed mid-transfer, its connection is closed, never reused */
	if (curl_multi_remove_handle(e->m, k->h) != CURLM_OK)
		k->broken = 1;
	return wms__curl_finish(k, x->req, rc, x->resp, x->err);
}

static wms_status engine_start(wms__engine *e, const wms_http_request *req,
			       wms_http_response *resp, wms_error *err, void *arg, wms__xfer **out)
{
	struct wms__xfer *x;
	wms_status st;
	CURLMcode mc;
	int token = 0;
	uint64_t now = 0;

	*out = NULL;
	if ((st = wms__curl_check_request(req, err)) != WMS_OK)
		return st;
	wms_http_response_clear(resp);
	if (e->sharded) {
		/* before take(): the handle it would take lets go of an idle
		 * shard too (a shard a handle holds cannot close) */
		now = wms__now_ns();
		shard_sweep(e, now, 0);
	}
	x = take(e);
	if (!x)
		return wms_transport_fail(err, WMS_ERR_NOMEM, WMS_DELIVERY_NOT_SENT,
					  "cannot create a libcurl handle");
	if (e->sharded) {
		int j = shard_pick(e, &token);
		if (j < 0) {
			give(e, x);
			return wms_transport_fail(err, WMS_ERR_NOMEM, WMS_DELIVERY_NOT_SENT,
						  "cannot create a connection cache");
		}
		x->shard = (unsigned)j;
		if (x->k->share != e->shard[j]) {
			/* a handle set up for another shard: set up afresh */
			x->k->share = e->shard[j];
			x->k->configured = 0;
		}
	}
	st = wms__curl_prepare(e->t, x->k, req, resp, err);
	x->k->c.clock = &e->now_ns;
	/* (a handle set up afresh lost these: set every time, as cheap) */
	if (st == WMS_OK &&
	    (curl_easy_setopt(x->k->h, CURLOPT_CLOSESOCKETFUNCTION, on_close) != CURLE_OK ||
	     curl_easy_setopt(x->k->h, CURLOPT_CLOSESOCKETDATA, (void *)e) != CURLE_OK))
		st = wms_transport_fail(err, WMS_ERR_INTERNAL, WMS_DELIVERY_NOT_SENT,
					"cannot set the socket close callback");
	if (st != WMS_OK) {
		give(e, x);
		return st;
	}
	x->req = req;
	x->resp = resp;
	x->err = err;
	x->arg = arg;
	mc = curl_multi_add_handle(e->m, x->k->h);
	if (mc != CURLM_OK) {
		wms__curl_finish(x->k, req, CURLE_OK, resp, err);
		x->k->broken = 1;
		give(e, x);
		return wms_transport_fail(err, mc == CURLM_OUT_OF_MEMORY ? WMS_ERR_NOMEM
									 : WMS_ERR_INTERNAL,
					  WMS_DELIVERY_NOT_SENT, "cannot start the transfer (%s)",
					  curl_multi_strerror(mc));
	}
	x->k->xfer = x;
	if (e->sharded) {
		e->ntokens -= token != 0; /* its connection is this transfer's now */
		x->took_token = token;
		x->started_action = e->actions;
		e->shard_running[x->shard]++;
		e->shard_used_ns[x->shard] = now;
	}
	x->next = e->running;
	x->prev = NULL;
	if (e->running)
		e->running->prev = x;
	e->running = x;
	*out = x;
	return WMS_OK;
}

/* NOT_SENT only while nothing of the request can have left: libcurl has
 * not yet come to writing it (name resolution, connect, TLS handshake, a
 * wait for a connection). The handle's getinfo cannot say so on its own:
 * until libcurl takes up a re-added handle it reports the last transfer's
 * sizes and times. */
static wms_delivery delivery_so_far(const struct conn *k)
{
#if LIBCURL_VERSION_NUM >= 0x075000
	return k->c.requesting ? WMS_DELIVERY_UNKNOWN : WMS_DELIVERY_NOT_SENT;
#else
	/* (no CURLOPT_PREREQFUNCTION before 7.80: a handle's stale figures
	 * can only make this say UNKNOWN where NOT_SENT was true) */
	curl_off_t pre = 0;
	long head = 0;
	if (curl_easy_getinfo(k->h, CURLINFO_REQUEST_SIZE, &head) == CURLE_OK && head > 0)
		return WMS_DELIVERY_UNKNOWN;
	if (curl_easy_getinfo(k->h, CURLINFO_PRETRANSFER_TIME_T, &pre) != CURLE_OK || pre > 0)
		return WMS_DELIVERY_UNKNOWN;
	return WMS_DELIVERY_NOT_SENT;
#endif
}

static wms_delivery engine_cancel(wms__engine *e, wms__xfer *x)
{
	wms_delivery d;
	if (x->retired) {
		/* ended already, its report not yet made: it is not */
		struct wms__xfer **p = &e->ended;
		while (*p != x)
			p = &(*p)->next;
		*p = x->next;
		x->next = NULL;
		x->retired = 0;
		d = x->delivery;
		if (e->sharded && x->kept) /* its connection waits all the same */
			shard_token(e, x->shard);
		give(e, x);
		return d;
	}
	d = delivery_so_far(x->k);
	/* libcurl never ran it: the connection it took the token of waits */
	if (e->sharded && x->took_token && x->started_action == e->actions)
		shard_token(e, x->shard);
	let_go(e, x);
	(void)retire(e, x, CURLE_OK);
	x->k->configured = 0;
	give(e, x);
	arm_idled(e);
	return d;
}

/* Onto the end of the `ended` list. */
static void end_xfer(struct wms__engine *e, struct wms__xfer ***tail, struct wms__xfer *x,
		     wms_status st)
{
	x->st = st;
	/* A transfer that ended well was answered: its request left whole. A
	 * failed one says in err (wms__curl_finish) how far it got. What is
	 * kept here is what a cancel between now and the report says. */
	x->delivery = st == WMS_OK ? WMS_DELIVERY_UNKNOWN : x->err->delivery;
	x->retired = 1;
	x->next = NULL;
	**tail = x;
	*tail = &x->next;
	(void)e;
}

/* Every transfer libcurl says is done: finished, out of the multi, ended. */
static void collect_done(struct wms__engine *e, struct wms__xfer ***tail)
{
	CURLMsg *msg;
	int pending;
	while ((msg = curl_multi_info_read(e->m, &pending)) != NULL) {
		CURLcode rc;
		struct conn *k = NULL;
		struct wms__xfer *x;
		if (msg->msg != CURLMSG_DONE)
			continue;
		if (curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&k) != CURLE_OK ||
		    !k || !(x = k->xfer))
			continue;
		rc = msg->data.result;
		k->c.transferred = 1;
		end_xfer(e, tail, x, retire(e, x, rc));
		x->kept = rc == CURLE_OK && !k->broken;
	}
}

/* A multi call failed (no memory, a socket the loop would not watch, or
 * libcurl's own trouble): it may have left any running transfer half-done,
 * with no timer to finish it. Each transfer running now is ended, as the
 * blocking loop ends its one transfer, and its handle is not reused. */
static void fail_running(struct wms__engine *e, CURLMcode mc, struct wms__xfer ***tail)
{
	wms_status st = mc == CURLM_OUT_OF_MEMORY ? WMS_ERR_NOMEM
			: e->loop_failed	  ? e->loop_failed
						  : WMS_ERR_INTERNAL;
	const char *why = st == WMS_ERR_NOMEM ? "out of memory in the transfer loop"
			  : e->loop_failed    ? "the event loop refused to watch a socket"
					      : "libcurl's transfer loop failed";
	struct wms__xfer *x;
	e->loop_failed = WMS_OK;
	while ((x = e->running) != NULL) {
		wms_delivery d = delivery_so_far(x->k);
		let_go(e, x);
		(void)retire(e, x, CURLE_OK);
		x->k->broken = 1;
		wms_transport_fail(x->err, st, d, "%s (%s)", why, curl_multi_strerror(mc));
		end_xfer(e, tail, x, st);
	}
}

/* The end of an action that made mc. What it finished, and, if it failed,
 * everything still running, leave the multi before the first report: the
 * reports may start transfers (a multi whose callback failed takes none
 * while one of its old transfers is alive) and cancel ones not yet
 * reported. Then the engine is freed if a callback destroyed it. */
static void action_end(struct wms__engine *e, CURLMcode mc)
{
	struct wms__xfer *x, **tail = &e->ended;
	while (*tail)
		tail = &(*tail)->next;
	collect_done(e, &tail);
	if (mc != CURLM_OK)
		fail_running(e, mc, &tail);
	arm_idled(e);
	while (!e->dead && (x = e->ended) != NULL) {
		void *arg = x->arg;
		wms_status st = x->st;
		e->ended = x->next;
		x->next = NULL;
		x->retired = 0;
		/* the token as the handle goes back: both stacks' tops then
		 * name the same shard, and the next start reuses the handle
		 * set up for it */
		if (e->sharded && x->kept)
			shard_token(e, x->shard);
		give(e, x);
		e->loop.done(e->loop.ctx, arg, st);
	}
	if (--e->busy == 0 && e->dead)
		wms__free(e);
}

static void engine_socket(wms__engine *e, int fd, int events)
{
	int running = 0;
	e->now_ns = wms__now_ns();
	/* bytes in are movement for the stall guard, whole header lines or not */
	if ((events & CURL_CSELECT_IN) && fd >= 0 && (size_t)fd < e->by_fd_cap && e->by_fd[fd])
		e->by_fd[fd]->c.last_move_ns = e->now_ns;
	e->busy++;
	e->actions++;
	action_end(e, curl_multi_socket_action(e->m, (curl_socket_t)fd, events, &running));
}

static void engine_timeout(wms__engine *e)
{
	int running = 0;
	CURLMcode mc;
	e->busy++;
	e->actions++;
	e->timer_moved = 0;
	e->armed_ns = NO_DUE; /* the loop fired it and forgot it */
	e->now_ns = wms__now_ns();
	if (e->sharded)
		shard_sweep(e, e->now_ns, 1);
	mc = curl_multi_socket_action(e->m, CURL_SOCKET_TIMEOUT, 0, &running);
	/* The loop fired the timer and forgot it. libcurl calls on_timer only
	 * when its deadline changes: fired before it was due by libcurl's
	 * whole-millisecond clock, it acted on nothing and said nothing, and
	 * 7.88 does not always say -1 when its last deadline goes. So unless
	 * it spoke, the timer is what curl_multi_timeout says now (at least
	 * 1 ms: never a spin). */
	if (!e->timer_moved && mc == CURLM_OK) {
		long ms = -1;
		if (curl_multi_timeout(e->m, &ms) == CURLM_OK)
			(void)curl_due(e, ms < 0 ? -1 : ms < 1 ? 1 : ms);
	}
	action_end(e, mc);
}

unsigned wms__curl_engine_shards(const wms__engine *e, unsigned *running, unsigned n)
{
	unsigned i;
	for (i = 0; i < n && i < e->nslots; i++)
		running[i] = e->shard[i] ? e->shard_running[i] : 0;
	return e->live;
}

size_t wms__curl_engine_idle_tokens(const wms__engine *e)
{
	return e->ntokens;
}

static const wms__engine_ops curl_engine = {
	engine_create, engine_destroy, engine_start, engine_cancel, engine_socket, engine_timeout,
};

const wms__engine_ops *wms__curl_engine(void)
{
	return &curl_engine;
}
