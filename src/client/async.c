/*
 * The asynchronous calls (wms/async.h): call.c's steps, driven by an event
 * loop instead of a thread. A call is admitted (bulkhead, breaker) and its
 * envelope built on the stack of the start function, with the caller's
 * arguments borrowed, so a call refused there (bad arguments, breaker
 * open, bulkhead full) completes at once without allocating. An admitted
 * call copies what it still needs, then lives on a timer (its attempt's
 * guard, a retry's pause) and on the transport's engine (transport/
 * engine.h), which runs transfers from the loop; a transport without one
 * is called from the loop.
 */
#include <errno.h>
#include <sys/epoll.h>
#include <unistd.h>
#include <stdio.h>
#include <string.h>
#include "util/fork.h"
#include "client/client.h"
#include "transport/engine.h"
#include "util/heap.h"
#include "wms/async.h"

/* Calls in flight per context: the default and the most. */
#define DEFAULT_IN_FLIGHT 4096u
#define MAX_IN_FLIGHT 65536u
/* Finished calls' memory kept for the next ones. */
#define SPARE_MAX 256u
/* An attempt libcurl has not ended by its deadline is ended by the loop,
 * this long after (libcurl's own timeout should win, with its message). */
#define GUARD_SLACK_NS (50u * 1000000u)

enum kind { K_SUBMIT, K_STATUS, K_CANCEL, K_STOCK, K_CALL };

/* Where a call is between start and completion. */
enum stage {
	S_TRANSFER, /* on the engine (xfer set), its guard timer armed */
	S_SEND,     /* waiting for the loop to call a blocking transport */
	S_PAUSE,    /* between attempts (the permit recorded, none held) */
};

struct wms_async_call {
	wms_async *a;
	enum kind kind;
	enum stage stage;
	union {
		wms_submit_order_cb submit;
		wms_get_order_status_cb status;
		wms_cancel_order_cb cancel;
		wms_get_stock_level_cb stock;
		wms_call_cb call;
	} cb;
	void *payload;
	call k;
	generic_call g;
	wms_call_options gopts;
	struct _xmlDoc *gbody; /* a copy, when an attempt may rebuild */
	union {
		wms_submit_reply submit;
		wms_status_reply status;
		wms_cancel_reply cancel;
		wms_stock_reply *stock;
		struct _xmlDoc *doc;
	} out;
	wms_order order; /* k.order's copy */
	char *arena;     /* the copied strings and arrays: room, or an allocation */
	wms__attempts at;
	wms__buf body;
	wms_http_request req;
	wms_http_response resp;
	uint64_t attempt_deadline, wire_start;
	wms_status last; /* the last attempt's status, across a pause */
	wms__xfer *xfer;
	wms__timer timer;
	uint64_t seq; /* its start's number on the context (cancel_all's cut) */
	/* In a step of its own (an attempt's start or end, a retry's turn,
	 * the record of its cancel), which runs the client's callbacks (the
	 * wire log, the breaker's, error_filter, a transport of the
	 * caller's). A cancel while any step runs only marks a call (the
	 * completions, whose callbacks may free the client, never run inside
	 * a step): the call in its step is ended by the step, the others
	 * right after it (flush_marked). */
	int in_step;
	const char *cancel_why;
	wms_error err;
	struct wms_async_call *next, *prev; /* in flight; or the spares */
	/* the arena of a small call (never cleared: written before read) */
	_Alignas(void *) char room[512];
};

/* A watched socket: its events for libwms's poll loop, its slot for the
 * caller's. */
struct watch {
	int what;        /* WMS_POLL_*, 0: not watched */
	int in_set;      /* own loop: in the epoll set (it may be, unwatched) */
	void *sockp;     /* the caller's slot */
};

struct wms_async {
	wms_client *client; /* NULL once the client is gone */
	wms_async_options o;
	const wms__engine_ops *ops;
	wms__engine *engine;
	wms__heap timers;
	wms__timer engine_timer; /* libcurl's one timer */
	uint64_t armed_ns;       /* what the caller's timer is set to; 0: none */
	int armed;
	struct watch *watches; /* by fd */
	size_t watch_cap;
	int epfd; /* own loop: the watched sockets' epoll set; -1 with the caller's */
	struct wms_async_call *calls, *calls_tail, *spares; /* calls: oldest first */
	/* completed while a step ran, their callbacks not yet run (first
	 * first; see later_push) */
	struct wms_async_call *later, *later_tail;
	size_t in_flight, spare_count;
	unsigned depth; /* dispatches running (callbacks may re-enter) */
	unsigned in_loop_cb; /* the caller's watch or timer callback is running */
	unsigned steps;      /* calls in a step (nested: a step's callback starts one) */
	size_t marked;       /* calls marked cancelled, not yet completed */
	uint64_t seq;        /* calls started */
	int free_pending;
	int client_going; /* its client is being freed: no call starts */
	int loop_failed; /* a watch or timer callback returned -1 */
	/* the process it was made in (util/fork.h); forgotten: let go of in
	 * a child forked since (forget), no loop callback runs any more */
	unsigned long fork_gen;
	int forgotten;
	struct wms_async *next_in_client;
};

struct wms__engine *wms__async_engine(struct wms_async *a)
{
	return a->engine;
}

struct wms_async **wms__async_next(struct wms_async *a)
{
	return &a->next_in_client;
}

/* ---- options ------------------------------------------------------------- */

wms_status wms_async_options_init(wms_async_options *opts, unsigned version)
{
	if (!opts || version != WMS_ASYNC_OPTIONS_VERSION)
		return WMS_ERR_INVALID_ARG;
	memset(opts, 0, sizeof(*opts));
	opts->version = version;
	return WMS_OK;
}

/* ---- the loop: sockets and the timer -------------------------------------- */

static void update_timer(wms_async *a);
static void flush_marked(wms_async *a);
static void async_destroy(wms_async *a);
static void async_release(wms_async *a);

/* Enter and leave a dispatch: a free asked for from a callback waits for
 * the outermost one to end. Returns whether `a` is still there. */
static void enter(wms_async *a)
{
	a->depth++;
}

static int leave(wms_async *a)
{
	if (!a->free_pending)
		flush_marked(a);
	if (a->depth > 1) {
		a->depth--;
		return 1;
	}
	/* the outermost: the caller's timer is told what is due while the
	 * dispatch is still held (a free from its callback waits for this) */
	if (!a->free_pending)
		update_timer(a);
	a->depth--;
	if (a->free_pending) {
		async_destroy(a);
		return 0;
	}
	return 1;
}

static struct watch *watch_of(wms_async *a, int fd, int grow)
{
	if (fd < 0)
		return NULL;
	if ((size_t)fd >= a->watch_cap) {
		size_t cap = a->watch_cap ? a->watch_cap : 64;
		struct watch *grown;
		if (!grow)
			return NULL;
		while (cap <= (size_t)fd)
			cap *= 2;
		grown = wms__realloc(a->watches, cap * sizeof(*grown));
		if (!grown)
			return NULL;
		memset(grown + a->watch_cap, 0, (cap - a->watch_cap) * sizeof(*grown));
		a->watches = grown;
		a->watch_cap = cap;
	}
	return &a->watches[fd];
}

/* The own loop's epoll set follows the watches (level-triggered: what
 * poll() would report). A socket libcurl stops watching stays in the set
 * until it next reports an event (then it goes): a kept connection is
 * watched again by its next call, one MOD instead of a DEL and an ADD. An
 * fd closed meanwhile has left the set by itself, so a MOD that finds
 * nothing is an ADD. 0, or -1 (errno) when the kernel refuses. */
static int own_watch(wms_async *a, int fd, struct watch *w, int what)
{
	struct epoll_event ev;
	if (what == WMS_POLL_REMOVE) {
		w->what = 0;
		return 0;
	}
	memset(&ev, 0, sizeof(ev));
	ev.events = ((what & WMS_POLL_IN) ? EPOLLIN : 0u) | ((what & WMS_POLL_OUT) ? EPOLLOUT : 0u);
	ev.data.fd = fd;
	if (epoll_ctl(a->epfd, w->in_set ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, fd, &ev) != 0) {
		int e = errno;
		if (!((e == ENOENT && epoll_ctl(a->epfd, EPOLL_CTL_ADD, fd, &ev) == 0) ||
		      (e == EEXIST && epoll_ctl(a->epfd, EPOLL_CTL_MOD, fd, &ev) == 0))) {
			w->in_set = 0;
			return -1;
		}
	}
	w->in_set = 1;
	w->what = what;
	return 0;
}

/* An event on a socket nobody watches now: out of the set. */
static void own_unwatched(wms_async *a, int fd, struct watch *w)
{
	if (w->in_set)
		epoll_ctl(a->epfd, EPOLL_CTL_DEL, fd, NULL);
	w->in_set = 0;
}

static wms_status engine_watch(void *ctx, int fd, int what)
{
	wms_async *a = ctx;
	struct watch *w;
	int rc;
	if (a->forgotten)
		return WMS_OK; /* the epoll set and the caller's loop are the parent's too */
	w = watch_of(a, fd, what != WMS_POLL_REMOVE);
	if (!w)
		return what == WMS_POLL_REMOVE ? WMS_OK : WMS_ERR_NOMEM;
	if (!a->o.watch)
		return own_watch(a, fd, w, what) == 0	  ? WMS_OK
		       : errno == ENOMEM || errno == ENOSPC ? WMS_ERR_NOMEM
							   : WMS_ERR_INTERNAL;
	if (what == WMS_POLL_REMOVE && !w->what)
		return WMS_OK;
	a->in_loop_cb++;
	rc = a->o.watch(a, fd, what, a->o.loop_payload, &w->sockp);
	a->in_loop_cb--;
	if (what == WMS_POLL_REMOVE) {
		/* Taken as done, whatever it returned: libcurl lets go of the
		 * socket either way (and takes a refusal here for a dead multi,
		 * with no transfer ended), so libwms forgets it too. */
		w->what = 0;
		w->sockp = NULL;
		return WMS_OK;
	}
	if (rc != 0) {
		a->loop_failed = 1;
		return WMS_ERR_INTERNAL;
	}
	w->what = what;
	return WMS_OK;
}

/* A socket about to be closed: its watch goes now, while the fd is still
 * the one watched (a REMOVE from libcurl after the close, when the number
 * may be another socket's, then finds nothing watched). */
static void engine_closing(void *ctx, int fd)
{
	wms_async *a = ctx;
	struct watch *w = a->forgotten ? NULL : watch_of(a, fd, 0);
	if (!w)
		return;
	if (w->what)
		(void)engine_watch(ctx, fd, WMS_POLL_REMOVE);
	if (a->epfd >= 0)
		own_unwatched(a, fd, w);
}

static wms_status engine_timer(void *ctx, long timeout_ms)
{
	wms_async *a = ctx;
	if (timeout_ms < 0) {
		wms__heap_remove(&a->timers, &a->engine_timer);
		return WMS_OK;
	}
	return wms__heap_set(&a->timers, &a->engine_timer,
			     wms__now_ns() + (uint64_t)timeout_ms * 1000000u) == 0
		       ? WMS_OK
		       : WMS_ERR_NOMEM;
}

/* The caller's timer callback, always inside a dispatch (a free from it
 * waits for the dispatch to end). */
static int loop_timer(wms_async *a, long ms)
{
	int rc;
	a->in_loop_cb++;
	rc = a->o.timer(a, ms, a->o.loop_payload);
	a->in_loop_cb--;
	return rc;
}

/* Tell the caller's loop when the earliest timer is due (if it moved). */
static void update_timer(wms_async *a)
{
	wms__timer *t = wms__heap_top(&a->timers);
	long ms;
	uint64_t now;
	if (!a->o.timer || a->forgotten)
		return;
	if (!t) {
		if (a->armed) {
			a->armed = 0;
			if (loop_timer(a, -1) != 0)
				a->loop_failed = 1;
		}
		return;
	}
	if (a->armed && a->armed_ns == t->due_ns)
		return;
	now = wms__now_ns();
	ms = t->due_ns <= now ? 0 : (long)((t->due_ns - now + 999999u) / 1000000u);
	a->armed = 1;
	a->armed_ns = t->due_ns;
	if (loop_timer(a, ms) != 0) {
		a->loop_failed = 1;
		a->armed = 0; /* asked again at the next change */
	}
}

/* ---- one call's life ------------------------------------------------------ */

static void complete(struct wms_async_call *x, wms_status st);
static struct wms_async_call *call_new(wms_async *a);
static int attempt_start(struct wms_async_call *x);
static void cancel_call(struct wms_async_call *x, const char *why);

#define CALL_OF_TIMER(t) ((struct wms_async_call *)((char *)(t) - offsetof(struct wms_async_call, timer)))

/* Run the completion callback: the reply (WMS_OK only) and the error. */
static void deliver(enum kind kind, const void *cbp, void *payload, wms_status st, void *out,
		    const wms_error *err)
{
	int ok = st == WMS_OK;
	switch (kind) {
	case K_SUBMIT:
		(*(const wms_submit_order_cb *)cbp)(st, ok ? out : NULL, err, payload);
		break;
	case K_STATUS:
		(*(const wms_get_order_status_cb *)cbp)(st, ok ? out : NULL, err, payload);
		break;
	case K_CANCEL:
		(*(const wms_cancel_order_cb *)cbp)(st, ok ? out : NULL, err, payload);
		break;
	case K_STOCK: {
		wms_stock_reply **r = out;
		wms_stock_reply *mine = *r;
		*r = NULL;
		if (!ok) {
			wms_stock_reply_free(mine);
			mine = NULL;
		}
		(*(const wms_get_stock_level_cb *)cbp)(st, mine, err, payload);
		break;
	}
	case K_CALL: {
		struct _xmlDoc **d = out;
		struct _xmlDoc *mine = *d;
		*d = NULL;
		if (!ok) {
			wms__xml_doc_free(mine);
			mine = NULL;
		}
		(*(const wms_call_cb *)cbp)(st, mine, err, payload);
		break;
	}
	}
}

static void unlink_call(wms_async *a, struct wms_async_call *x)
{
	if (x->prev)
		x->prev->next = x->next;
	else
		a->calls = x->next;
	if (x->next)
		x->next->prev = x->prev;
	else
		a->calls_tail = x->prev;
	x->next = x->prev = NULL;
	a->in_flight--;
}

static void call_release(wms_async *a, struct wms_async_call *x)
{
	wms__buf_free(&x->body);
	wms__xml_doc_free(x->gbody);
	if (x->arena != x->room)
		wms__free(x->arena);
	x->gbody = NULL;
	x->arena = NULL;
	if (a->spare_count < SPARE_MAX) {
		x->next = a->spares;
		a->spares = x;
		a->spare_count++;
		return;
	}
	wms__free(x);
}

/* ---- completions held back while a step runs ---------------------------- */

/* No completion callback runs inside a step (a callback of the client's
 * running: the wire log, the breaker's, a fallback), since it may free the
 * client the step goes on using. A call started from such a callback may
 * complete at once (refused by the breaker, the bulkhead or max_in_flight,
 * bad arguments, its transport refusing it); its completion is kept here,
 * its reply with it, and run when no step runs (deliver_later, from
 * flush_marked: after the step, before the libwms function that ran it
 * returns). */
static void later_push(wms_async *a, struct wms_async_call *x)
{
	x->next = x->prev = NULL;
	if (a->later_tail)
		a->later_tail->next = x;
	else
		a->later = x;
	a->later_tail = x;
}

static void deliver_later(wms_async *a)
{
	struct wms_async_call *x;
	while (!a->steps && (x = a->later) != NULL) {
		void *out = x->kind == K_STOCK ? (void *)&x->out.stock
			    : x->kind == K_CALL ? (void *)&x->out.doc
						: (void *)&x->out;
		a->later = x->next;
		if (!a->later)
			a->later_tail = NULL;
		x->next = NULL;
		deliver(x->kind, &x->cb, x->payload, x->last, out, &x->err);
		call_release(a, x);
	}
}

/* Complete a call that never got a record (refused or failed at its start,
 * `out` the reply on the start function's stack): now, or - inside a step -
 * from a record that keeps the reply (moved, for the stock reply and the
 * generic call's document) until deliver_later. Without memory for the
 * record it runs now, as it would outside a step. */
static void finish_now(wms_async *a, enum kind kind, const void *cbp, void *payload,
		       wms_status st, void *out, const wms_error *err)
{
	struct wms_async_call *x;
	if (!a->steps || !(x = call_new(a))) {
		deliver(kind, cbp, payload, st, out, err);
		return;
	}
	x->a = NULL; /* completed: no handle names it */
	x->kind = kind;
	memcpy(&x->cb, cbp, sizeof(x->cb));
	x->payload = payload;
	x->last = st;
	x->err = *err;
	switch (kind) {
	case K_SUBMIT:
		x->out.submit = *(const wms_submit_reply *)out;
		break;
	case K_STATUS:
		x->out.status = *(const wms_status_reply *)out;
		break;
	case K_CANCEL:
		x->out.cancel = *(const wms_cancel_reply *)out;
		break;
	case K_STOCK:
		x->out.stock = *(wms_stock_reply **)out;
		*(wms_stock_reply **)out = NULL;
		break;
	case K_CALL:
		x->out.doc = *(struct _xmlDoc **)out;
		*(struct _xmlDoc **)out = NULL;
		break;
	}
	later_push(a, x);
}

/* The call ends with st: its slot given back, its callback run. */
static void complete(struct wms_async_call *x, wms_status st)
{
	wms_async *a = x->a;
	void *out = x->kind == K_STOCK ? (void *)&x->out.stock
		    : x->kind == K_CALL ? (void *)&x->out.doc
					: (void *)&x->out;
	wms__heap_remove(&a->timers, &x->timer);
	unlink_call(a, x);
	if (x->cancel_why)
		a->marked--;
	wms__call_end(a->client, &x->k, &x->at, st);
	/* completed: its handle names no context (a cancel of it from its own
	 * callback is INVALID_ARG, not a second completion) */
	x->a = NULL;
	if (a->steps) {
		/* a start from a step's callback completed (its transport
		 * refused it at once): the callback runs after the step */
		x->last = st;
		later_push(a, x);
		return;
	}
	deliver(x->kind, &x->cb, x->payload, st, out, &x->err);
	call_release(a, x);
}

static void step_begin(struct wms_async_call *x)
{
	if (!x->in_step) {
		x->in_step = 1;
		x->a->steps++;
	}
}

static void step_end(struct wms_async_call *x)
{
	if (x->in_step) {
		x->in_step = 0;
		x->a->steps--;
	}
}

/* What the transport brought back for the attempt (st: its status): 1 when
 * the call goes on (a retry's pause), 0 when it has completed. */
static int attempt_done(struct wms_async_call *x, wms_status st)
{
	wms_client *c = x->a->client;
	wms__xml_ws *ws = wms__xml_pool_take(c->xml_pool);
	uint64_t pause = 0;
	int again;

	step_begin(x);
	wms__heap_remove(&x->a->timers, &x->timer);
	x->xfer = NULL;
	x->stage = S_PAUSE; /* no permit held once it is recorded */
	st = wms__call_reply(c, ws, &x->k, &x->req, &x->resp, st, x->attempt_deadline,
			     x->wire_start, &x->err);
	wms__xml_pool_give(c->xml_pool, ws);
	again = wms__call_after(c, &x->k, &x->at, st, &x->err, &pause);
	step_end(x);
	if (x->cancel_why) {
		/* cancelled from a callback this step ran: the attempt is over
		 * and recorded, its delivery kept (cancel_call's S_PAUSE) */
		cancel_call(x, x->cancel_why);
		return 0;
	}
	if (!again) {
		complete(x, st);
		return 0;
	}
	x->last = st;
	/* room for the timer was reserved when the call was admitted */
	wms__heap_set(&x->a->timers, &x->timer, wms__now_ns() + pause);
	return 1;
}

static void engine_done(void *ctx, void *arg, wms_status st)
{
	(void)attempt_done(arg, st);
	flush_marked(ctx);
}

/* 1 when the call is in flight after it, 0 when it has completed. */
static int attempt_start(struct wms_async_call *x)
{
	wms_async *a = x->a;
	wms_client *c = a->client;
	wms_status st;

	step_begin(x);
	memset(&x->resp, 0, sizeof(x->resp));
	x->resp.max_body = c->max_reply_bytes;
	wms__call_request(c, &x->k, &x->body, x->at.timeout_ms, &x->err, &x->req);
	x->attempt_deadline = wms__now_ns() + (uint64_t)x->at.timeout_ms * 1000000u;
	x->wire_start = wms__call_sending(c, &x->req, &x->err);
	/* its permit held, its request built and logged, not yet sent */
	x->stage = S_SEND;
	step_end(x);
	if (x->cancel_why) {
		cancel_call(x, x->cancel_why);
		return 0;
	}
	if (!a->engine) {
		/* a blocking transport: called from the loop, as soon as it runs */
		wms__heap_set(&a->timers, &x->timer, wms__now_ns()); /* in start order */
		return 1;
	}
	x->stage = S_TRANSFER;
	st = a->ops->start(a->engine, &x->req, &x->resp, &x->err, x, &x->xfer);
	if (st != WMS_OK) {
		x->xfer = NULL;
		return attempt_done(x, st);
	}
	wms__heap_set(&a->timers, &x->timer, x->attempt_deadline + GUARD_SLACK_NS);
	return 1;
}

/* The call's one timer is due. */
static void call_timer(struct wms_async_call *x)
{
	wms_async *a = x->a;
	wms_client *c = a->client;
	wms_status st;

	switch (x->stage) {
	case S_SEND: {
		/* Its turn came after the blocking sends queued before it: it
		 * gets what is left of its attempt's time, and none is sent
		 * once that is gone. */
		uint64_t now = wms__now_ns();
		step_begin(x); /* the transport may be the caller's */
		if (now >= x->attempt_deadline) {
			wms_transport_fail(&x->err, WMS_ERR_TIMEOUT, WMS_DELIVERY_NOT_SENT,
					   "no reply within %u ms (timeout_ms), nothing sent: the "
					   "transport was busy with the calls before it",
					   (unsigned)x->at.timeout_ms);
			x->err.cause = WMS_CAUSE_TIMEOUT;
			/* The WMS was not asked: the breaker is told nothing (the
			 * permit goes back, as for a cancel), no retry is made
			 * (the attempt's time is gone); its request record ends. */
			wms_breaker_release(x->at.b, &x->at.permit);
			x->stage = S_PAUSE; /* no permit held */
			wms__call_unanswered(c, &x->req, WMS_ERR_TIMEOUT, &x->err, x->wire_start);
			step_end(x);
			if (x->cancel_why)
				cancel_call(x, x->cancel_why);
			else
				complete(x, WMS_ERR_TIMEOUT);
			return;
		}
		x->req.timeout_ms = (uint32_t)((x->attempt_deadline - now + 999999u) / 1000000u);
		if (x->req.connect_timeout_ms > x->req.timeout_ms)
			x->req.connect_timeout_ms = x->req.timeout_ms;
		st = c->transport->send(c->transport, &x->req, &x->resp, &x->err);
		(void)attempt_done(x, st);
		return;
	}
	case S_TRANSFER: {
		/* libcurl let the deadline pass (a transfer queued for a
		 * connection, say): the loop ends it */
		wms_delivery d = a->ops->cancel(a->engine, x->xfer);
		x->xfer = NULL;
		wms_transport_fail(&x->err, WMS_ERR_TIMEOUT, d,
				   "no reply within %u ms (timeout_ms)%s", (unsigned)x->at.timeout_ms,
				   d == WMS_DELIVERY_NOT_SENT ? ", nothing sent" : "");
		x->err.cause = WMS_CAUSE_TIMEOUT;
		(void)attempt_done(x, WMS_ERR_TIMEOUT);
		return;
	}
	case S_PAUSE: {
		wms__xml_ws *ws = wms__xml_pool_take(c->xml_pool);
		int again;
		st = x->last;
		step_begin(x);
		again = wms__call_again(c, ws, &x->k, &x->body, &x->at, &st, &x->err);
		wms__xml_pool_give(c->xml_pool, ws);
		step_end(x);
		if (x->cancel_why) {
			/* cancelled from a callback of the breaker's: the next
			 * attempt is not made, its permit goes back */
			if (again) {
				wms_breaker_release(x->at.b, &x->at.permit);
				x->at.attempt--;
				x->err.attempts = x->at.attempt;
			}
			cancel_call(x, x->cancel_why);
			return;
		}
		if (again)
			(void)attempt_start(x);
		else
			complete(x, st);
		return;
	}
	}
}

/* Everything due now: libcurl's timer, the calls' timers. */
static void run_timers(wms_async *a)
{
	uint64_t now = wms__now_ns();
	wms__timer *t;
	while (!a->free_pending && (t = wms__heap_top(&a->timers)) != NULL && t->due_ns <= now) {
		wms__heap_remove(&a->timers, t);
		if (t == &a->engine_timer) {
			a->ops->timeout(a->engine);
		} else {
			call_timer(CALL_OF_TIMER(t));
			flush_marked(a);
		}
	}
}

/* ---- cancellation ----------------------------------------------------------- */

static void mark(struct wms_async_call *x, const char *why)
{
	if (!x->cancel_why) {
		x->cancel_why = why;
		x->a->marked++;
	}
}

static void cancel_call(struct wms_async_call *x, const char *why)
{
	wms_async *a = x->a;
	wms_delivery d = WMS_DELIVERY_NOT_SENT;
	int held = 0;
	size_t n;

	if (x->in_step || a->steps) {
		/* a step is running a callback: only marked (its own step or
		 * flush_marked ends it) */
		mark(x, why);
		return;
	}
	switch (x->stage) {
	case S_TRANSFER:
		d = a->ops->cancel(a->engine, x->xfer);
		x->xfer = NULL;
		held = 1;
		break;
	case S_SEND:
		held = 1; /* the request never went to the transport */
		break;
	case S_PAUSE:
		break;
	}
	/* a cancelled attempt says nothing of the WMS: its permit goes back */
	if (held)
		wms_breaker_release(x->at.b, &x->at.permit);
	if (x->stage != S_PAUSE) {
		d = wms__merge_delivery(x->at.attempt > 1 ? x->at.delivery : WMS_DELIVERY_NOT_SENT,
					d);
	} else {
		d = x->at.delivery;
	}
	n = 0;
	x->err.status = WMS_ERR_CANCELLED;
	x->err.delivery = d;
	x->err.cause = WMS_CAUSE_NONE;
	x->err.curl_code = 0;
	x->err.http_status = 0;
	x->err.fault_code[0] = x->err.fault_string[0] = x->err.wms_code[0] = '\0';
	n = (size_t)snprintf(x->err.message, sizeof(x->err.message), "%s (attempt %u, %s)", why,
			     (unsigned)x->at.attempt,
			     d == WMS_DELIVERY_NOT_SENT ? "nothing sent"
							: "the WMS may have the request");
	(void)n;
	if (held) {
		/* the record runs the wire log, which may cancel: marked and in
		 * a step meanwhile, nothing cancels this call a second time */
		mark(x, why);
		step_begin(x);
		wms__call_unanswered(a->client, &x->req, WMS_ERR_CANCELLED, &x->err, x->wire_start);
		step_end(x);
	}
	wms_http_response_clear(&x->resp);
	complete(x, WMS_ERR_CANCELLED);
}

/* The calls marked while a step ran, cancelled now that none runs (their
 * callbacks may free the client: never inside a step). */
static void flush_marked(wms_async *a)
{
	struct wms_async_call *x = a->calls;
	while (a->marked && !a->steps && x) {
		if (x->cancel_why) {
			cancel_call(x, x->cancel_why);
			x = a->calls; /* callbacks ran: from the start again */
		} else {
			x = x->next;
		}
	}
	deliver_later(a);
}

wms_status wms_async_cancel(wms_async *a, wms_async_call *x)
{
	if (!a || !x || x->a != a || a->in_loop_cb || wms__forked_since(a->fork_gen))
		return WMS_ERR_INVALID_ARG;
	enter(a);
	cancel_call(x, "cancelled by the caller");
	leave(a);
	return WMS_OK;
}

/* Cancel the calls started up to number `upto` (oldest first; one started
 * from a callback meanwhile is left alone: a callback that starts a call
 * for each one that ends would never let this end). While a step runs,
 * each is only marked (flush_marked, or its own step, ends it). Counts the
 * calls not marked before. */
static size_t cancel_every(wms_async *a, const char *why, uint64_t upto)
{
	struct wms_async_call *x = a->calls;
	size_t n = 0;
	while (x && x->seq <= upto) {
		if (x->cancel_why && (x->in_step || a->steps)) {
			x = x->next; /* marked already: its step or the flush ends it */
			continue;
		}
		if (!x->cancel_why)
			n++;
		if (x->in_step || a->steps) {
			mark(x, why); /* no callback runs: x stays linked */
			x = x->next;
			continue;
		}
		cancel_call(x, x->cancel_why ? x->cancel_why : why);
		x = a->calls; /* callbacks ran: from the oldest again */
	}
	return n;
}

size_t wms_async_cancel_all(wms_async *a)
{
	size_t n;
	if (!a || a->in_loop_cb || wms__forked_since(a->fork_gen))
		return 0;
	enter(a);
	n = cancel_every(a, "cancelled by the caller", a->seq);
	leave(a);
	return n;
}

size_t wms_async_in_flight(const wms_async *a)
{
	/* in a child forked since, the calls in flight are the parent's */
	return a && !wms__forked_since(a->fork_gen) ? a->in_flight : 0;
}

/* ---- starting a call -------------------------------------------------------- */

/* Lengths of what a call copies; its strings are checked already (the
 * envelope was built from them). */
static size_t str_room(const char *s)
{
	return s ? strlen(s) + 1 : 0;
}

static char *put_str(char **p, const char *s)
{
	char *d;
	size_t n;
	if (!s)
		return NULL;
	n = strlen(s) + 1;
	d = *p;
	memcpy(d, s, n);
	*p += n;
	return d;
}

#define ALIGN_UP(n) (((n) + (sizeof(void *) - 1)) & ~(sizeof(void *) - 1))

/* Copy into x what the call still reads after its first envelope: the
 * order (a rebuild, WS-Security's), ids and SKUs (correlation, the read
 * cache), the generic call's options (and body, when rebuilt). */
static wms_status copy_args(struct wms_async_call *x, enum kind kind, const call *k,
			    int rebuilds)
{
	size_t need = 0, i;
	char *p;
	const wms_order *o = k->order;

	if (o) {
		const wms_address *s = &o->ship_to;
		need += ALIGN_UP(o->line_count * sizeof(wms_order_line));
		need += str_room(o->order_id) + str_room(s->name) + str_room(s->line1) +
			str_room(s->line2) + str_room(s->city) + str_room(s->region) +
			str_room(s->postal_code) + str_room(s->country);
		for (i = 0; i < o->line_count; i++)
			need += str_room(o->lines[i].sku);
	}
	if (k->skus) {
		need = ALIGN_UP(need) + ALIGN_UP(k->sku_count * sizeof(char *));
		for (i = 0; i < k->sku_count; i++)
			need += str_room(k->skus[i]);
	}
	need += str_room(k->order_id) + str_room(k->reason);
	if (k->g) {
		const wms_call_options *g = k->g->opts;
		need += str_room(g->operation) + str_room(g->soap_action) +
			str_room(g->reply_namespace) + str_room(g->reply_element);
	}
	x->kind = kind;
	x->k = *k;
	x->k.out = kind == K_STOCK ? (void *)&x->out.stock : (void *)&x->out;
	if (!need)
		return WMS_OK;
	/* a one-line order's copy fits the call's own room: no allocation */
	x->arena = need <= sizeof(x->room) ? x->room : wms__malloc(need);
	if (!x->arena)
		return WMS_ERR_NOMEM;
	p = x->arena;
	if (o) {
		wms_order_line *lines = (wms_order_line *)(void *)p;
		x->order = *o;
		p += ALIGN_UP(o->line_count * sizeof(wms_order_line));
		for (i = 0; i < o->line_count; i++) {
			lines[i].quantity = o->lines[i].quantity;
			lines[i].sku = put_str(&p, o->lines[i].sku);
		}
		x->order.lines = o->line_count ? lines : NULL;
		x->order.order_id = put_str(&p, o->order_id);
		x->order.ship_to.name = put_str(&p, o->ship_to.name);
		x->order.ship_to.line1 = put_str(&p, o->ship_to.line1);
		x->order.ship_to.line2 = put_str(&p, o->ship_to.line2);
		x->order.ship_to.city = put_str(&p, o->ship_to.city);
		x->order.ship_to.region = put_str(&p, o->ship_to.region);
		x->order.ship_to.postal_code = put_str(&p, o->ship_to.postal_code);
		x->order.ship_to.country = put_str(&p, o->ship_to.country);
		x->k.order = &x->order;
	}
	if (k->skus) {
		const char **skus;
		p = x->arena + ALIGN_UP((size_t)(p - x->arena));
		skus = (const char **)(void *)p;
		p += ALIGN_UP(k->sku_count * sizeof(char *));
		for (i = 0; i < k->sku_count; i++)
			skus[i] = put_str(&p, k->skus[i]);
		x->k.skus = skus;
	}
	x->k.order_id = put_str(&p, k->order_id);
	x->k.reason = put_str(&p, k->reason);
	if (k->g) {
		const wms_call_options *g = k->g->opts;
		x->gopts = *g;
		x->gopts.operation = put_str(&p, g->operation);
		x->gopts.soap_action = put_str(&p, g->soap_action);
		x->gopts.reply_namespace = put_str(&p, g->reply_namespace);
		x->gopts.reply_element = put_str(&p, g->reply_element);
		x->g = *k->g;
		x->g.opts = &x->gopts;
		x->g.out = &x->out.doc;
		x->g.body = NULL;
		if (rebuilds) {
			wms_status st = wms__generic_body_copy(&x->gbody, k->g->body);
			if (st != WMS_OK)
				return st;
			x->g.body = wms__xml_doc_root(x->gbody);
		}
		x->k.g = &x->g;
	}
	return WMS_OK;
}

static struct wms_async_call *call_new(wms_async *a)
{
	struct wms_async_call *x = a->spares;
	if (x) {
		a->spares = x->next;
		a->spare_count--;
	} else if (!(x = wms__malloc(sizeof(*x)))) {
		return NULL;
	}
	memset(x, 0, offsetof(struct wms_async_call, err));
	wms__timer_init(&x->timer);
	x->next = x->prev = NULL;
	x->a = a;
	return x;
}

/*
 * Start a call of `kind` with `k` (the caller's arguments, borrowed) and
 * `out` (a reply on the start function's stack). Refused or failing
 * before the first transfer: completed at once (deliver, from the stack,
 * no allocation).
 */
static wms_status start(wms_async_call **handle, wms_async *a, enum kind kind, call *k,
			void *out, const void *cbp, void *payload)
{
	wms_client *c;
	struct wms_async_call *x = NULL;
	wms__attempts at;
	wms__buf body = { 0 };
	wms__xml_ws *ws;
	wms_error err;
	wms_status st;
	int admitted;

	if (handle)
		*handle = NULL;
	if (!a || !cbp || a->in_loop_cb || wms__forked_since(a->fork_gen))
		return WMS_ERR_INVALID_ARG;
	c = a->client;
	wms_error_clear(&err);
	enter(a);
	if (!c || a->client_going || a->free_pending) {
		wms__fail(&err, WMS_ERR_CANCELLED, WMS_DELIVERY_NOT_SENT,
			  !c || a->client_going ? "the client was freed"
						 : "the async context is being freed");
		finish_now(a, kind, cbp, payload, WMS_ERR_CANCELLED, out, &err);
		goto done;
	}
	if (k->g && (st = wms__client_call_slot(c, k->g->opts->operation, &k->slot, &err)) !=
			    WMS_OK) {
		finish_now(a, kind, cbp, payload, st, out, &err);
		goto done;
	}
	/* The admission runs the breaker's callbacks and the fallbacks, as a
	 * step does: a cancel from them only marks (completions, which may
	 * free the client, wait for leave()). */
	a->steps++;
	admitted = wms__call_admit(c, k, 0, &at, &st, &err);
	a->steps--;
	if (!admitted) {
		finish_now(a, kind, cbp, payload, st, out, &err);
		goto done;
	}
	if (a->free_pending) {
		/* freed from a callback the admission ran (the breaker's) */
		wms_breaker_release(at.b, &at.permit);
		wms__bulkhead_leave(at.bh);
		wms__fail(&err, WMS_ERR_CANCELLED, WMS_DELIVERY_NOT_SENT,
			  "the async context is being freed");
		finish_now(a, kind, cbp, payload, WMS_ERR_CANCELLED, out, &err);
		goto done;
	}
	if (a->in_flight >= a->o.max_in_flight) {
		/* the breaker spoke first (open, it refused); a full context
		 * refuses as the client's bulkhead does: the permit and slot
		 * go back unrecorded */
		wms_breaker_release(at.b, &at.permit);
		wms__bulkhead_leave(at.bh);
		wms__fail(&err, WMS_ERR_BULKHEAD_FULL, WMS_DELIVERY_NOT_SENT,
			  "%u calls in flight on this async context (max_in_flight), call "
			  "rejected without sending",
			  (unsigned)a->o.max_in_flight);
		err.retry_after_ms = c->timeout_ms;
		/* a read may be answered from the cache or the fallback, as
		 * when the client's own bulkhead refuses it */
		a->steps++;
		st = wms__call_refused(c, k, &err);
		a->steps--;
		finish_now(a, kind, cbp, payload, st, out, &err);
		goto done;
	}
	ws = wms__xml_pool_take(c->xml_pool);
	st = wms__call_first(c, ws, k, &body, &at, &err);
	wms__xml_pool_give(c->xml_pool, ws);
	if (st == WMS_OK && (wms__heap_reserve(&a->timers, a->timers.count + 2) != 0 ||
			     !(x = call_new(a)))) {
		wms_breaker_release(at.b, &at.permit);
		st = wms__fail(&err, WMS_ERR_NOMEM, WMS_DELIVERY_NOT_SENT, "out of memory");
	}
	if (st == WMS_OK &&
	    (st = copy_args(x, kind, k, c->wsse.mode != WMS_WSSE_NONE && c->retry.max_attempts > 1)) !=
		    WMS_OK) {
		wms_breaker_release(at.b, &at.permit);
		wms__fail(&err, st, WMS_DELIVERY_NOT_SENT,
			  st == WMS_ERR_NOMEM ? "out of memory" : "cannot copy the call's body");
	}
	if (st != WMS_OK) {
		if (x)
			call_release(a, x);
		wms__buf_free(&body);
		wms__call_end(c, k, &at, st);
		finish_now(a, kind, cbp, payload, st, out, &err);
		goto done;
	}
	memcpy(&x->cb, cbp, sizeof(x->cb));
	x->payload = payload;
	x->at = at;
	x->body = body;
	x->err = err;
	x->seq = ++a->seq;
	x->next = NULL;
	x->prev = a->calls_tail;
	if (a->calls_tail)
		a->calls_tail->next = x;
	else
		a->calls = x;
	a->calls_tail = x;
	a->in_flight++;
	/* it may complete at once (the transport refused the request) */
	if (attempt_start(x) && handle)
		*handle = x;
done:
	leave(a);
	return WMS_OK;
}

/* ---- the operations ----------------------------------------------------------- */

/* A required argument NULL (the order, an order id, the SKUs): as the
 * blocking call, INVALID_ARG through the callback, before the breaker is
 * asked, so a fallback never stands in for a call that names nothing. When
 * there is no callback or the call comes from inside libcurl, start()
 * refuses it as any call then. */
#define NULL_ARG_NOW(a, cb) ((a) && (cb) && !(a)->in_loop_cb && !wms__forked_since((a)->fork_gen))

static wms_status null_arg(wms_async_call **out, wms_async *a, enum kind kind, const void *cbp,
			   void *payload, void *reply, const char *what)
{
	wms_error err;
	wms_error_clear(&err);
	wms__fail(&err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT, "%s is NULL", what);
	if (out)
		*out = NULL;
	finish_now(a, kind, cbp, payload, WMS_ERR_INVALID_ARG, reply, &err);
	return WMS_OK;
}

wms_status wms_async_submit_order(wms_async_call **out, wms_async *a, const wms_order *order,
				  wms_submit_order_cb cb, void *payload)
{
	wms_submit_reply reply;
	call k;
	memset(&k, 0, sizeof(k));
	memset(&reply, 0, sizeof(reply));
	k.op = WMS__OP_SUBMIT_ORDER;
	k.order = order;
	k.out = &reply;
	if (NULL_ARG_NOW(a, cb) && !order)
		return null_arg(out, a, K_SUBMIT, &cb, payload, &reply, "order");
	return start(out, a, K_SUBMIT, &k, &reply, cb ? (const void *)&cb : NULL, payload);
}

wms_status wms_async_get_order_status(wms_async_call **out, wms_async *a, const char *order_id,
				      wms_get_order_status_cb cb, void *payload)
{
	wms_status_reply reply;
	call k;
	memset(&k, 0, sizeof(k));
	memset(&reply, 0, sizeof(reply));
	k.op = WMS__OP_GET_ORDER_STATUS;
	k.order_id = order_id;
	k.out = &reply;
	if (NULL_ARG_NOW(a, cb) && !order_id)
		return null_arg(out, a, K_STATUS, &cb, payload, &reply, "order_id");
	return start(out, a, K_STATUS, &k, &reply, cb ? (const void *)&cb : NULL, payload);
}

wms_status wms_async_cancel_order(wms_async_call **out, wms_async *a, const char *order_id,
				  const char *reason, wms_cancel_order_cb cb, void *payload)
{
	wms_cancel_reply reply;
	call k;
	memset(&k, 0, sizeof(k));
	memset(&reply, 0, sizeof(reply));
	k.op = WMS__OP_CANCEL_ORDER;
	k.order_id = order_id;
	k.reason = reason;
	k.out = &reply;
	if (NULL_ARG_NOW(a, cb) && !order_id)
		return null_arg(out, a, K_CANCEL, &cb, payload, &reply, "order_id");
	return start(out, a, K_CANCEL, &k, &reply, cb ? (const void *)&cb : NULL, payload);
}

wms_status wms_async_get_stock_level(wms_async_call **out, wms_async *a,
				     const char *const *skus, size_t sku_count,
				     wms_get_stock_level_cb cb, void *payload)
{
	wms_stock_reply *reply = NULL;
	call k;
	memset(&k, 0, sizeof(k));
	k.op = WMS__OP_GET_STOCK_LEVEL;
	k.skus = skus;
	k.sku_count = sku_count;
	k.out = &reply;
	if (NULL_ARG_NOW(a, cb) && !skus)
		return null_arg(out, a, K_STOCK, &cb, payload, &reply, "skus");
	return start(out, a, K_STOCK, &k, &reply, cb ? (const void *)&cb : NULL, payload);
}

wms_status wms_async_call_start(wms_async_call **out, wms_async *a, const wms_call_options *opts,
				const struct _xmlNode *body, wms_call_cb cb, void *payload)
{
	struct _xmlDoc *reply = NULL;
	generic_call g;
	wms_error err;
	wms_status st;
	call k;

	if (out)
		*out = NULL;
	if (!a || !cb || a->in_loop_cb || wms__forked_since(a->fork_gen))
		return WMS_ERR_INVALID_ARG;
	memset(&g, 0, sizeof(g));
	memset(&k, 0, sizeof(k));
	wms_error_clear(&err);
	/* a context whose client is gone (or going) cancels it in start() */
	if (!a->client || a->client_going || a->free_pending)
		return start(out, a, K_CALL, &k, &reply, (const void *)&cb, payload);
	/* what wms_call checks first, said through the callback as it says it */
	st = wms__generic_prepare(&g, a->client, opts, body, &reply, &err);
	if (st != WMS_OK) {
		finish_now(a, K_CALL, &cb, payload, st, &reply, &err);
		return WMS_OK;
	}
	k.op = WMS__OP_COUNT;
	k.g = &g;
	return start(out, a, K_CALL, &k, &reply, (const void *)&cb, payload);
}

/* ---- the caller's loop ------------------------------------------------------- */

/* INTERNAL once for each time a watch or timer callback of the caller's
 * failed since the last report (the calls on that socket were ended with
 * it already), then OK again. */
static wms_status loop_status(wms_async *a)
{
	if (!a->loop_failed)
		return WMS_OK;
	a->loop_failed = 0;
	return WMS_ERR_INTERNAL;
}

wms_status wms_async_socket_action(wms_async *a, int fd, int events)
{
	if (!a || a->in_loop_cb || wms__forked_since(a->fork_gen))
		return WMS_ERR_INVALID_ARG;
	if (!a->engine)
		return WMS_OK;
	enter(a);
	flush_marked(a); /* marked before a completion callback ran this */
	/* (its callbacks may have freed the client: the engine is gone) */
	if (a->engine)
		a->ops->socket(a->engine, fd, events);
	/* (a->engine may be gone now: the client freed from a callback) */
	if (!a->free_pending)
		run_timers(a);
	if (!leave(a))
		return WMS_OK;
	return loop_status(a);
}

wms_status wms_async_timeout(wms_async *a)
{
	if (!a || a->in_loop_cb || wms__forked_since(a->fork_gen))
		return WMS_ERR_INVALID_ARG;
	enter(a);
	flush_marked(a);
	a->armed = 0;
	run_timers(a);
	if (!leave(a))
		return WMS_OK;
	return loop_status(a);
}

/* ---- libwms's own loop --------------------------------------------------------- */

static int poll_wait_ms(wms_async *a, int timeout_ms)
{
	wms__timer *t = wms__heap_top(&a->timers);
	uint64_t now, left;
	if (!t)
		return timeout_ms;
	now = wms__now_ns();
	if (t->due_ns <= now)
		return 0;
	left = (t->due_ns - now + 999999u) / 1000000u;
	if (left > (uint64_t)INT32_MAX)
		left = INT32_MAX;
	return timeout_ms >= 0 && (uint64_t)timeout_ms < left ? timeout_ms : (int)left;
}

/* What epoll saw, in libcurl's terms (as curl.c's transfer loop reads
 * poll()'s). */
static int events_of(int what, uint32_t got)
{
	int ev = 0;
	if (what & WMS_POLL_IN) {
		if (got & (EPOLLIN | EPOLLERR | EPOLLHUP | EPOLLRDHUP))
			ev |= WMS_EV_IN;
		if (got & EPOLLPRI)
			ev |= WMS_EV_ERR;
	}
	if (what & WMS_POLL_OUT) {
		if (got & EPOLLOUT)
			ev |= WMS_EV_OUT;
		if (got & (EPOLLERR | EPOLLHUP))
			ev |= WMS_EV_ERR;
	}
	return ev;
}

/* Events taken from the kernel per wait (more wait for the next). */
#define EVENTS_PER_WAIT 256

/* One wait and what it brought, inside a dispatch the caller entered. */
static wms_status poll_step(wms_async *a, int timeout_ms)
{
	struct epoll_event got[EVENTS_PER_WAIT];
	wms_status st = WMS_OK;
	int i, n;

	/* calls marked while a step ran, still here when a completion callback
	 * of their flush runs the loop: ended first, as this wait's work */
	if (a->marked || a->later) {
		flush_marked(a);
		return WMS_OK;
	}
	n = epoll_wait(a->epfd, got, EVENTS_PER_WAIT, poll_wait_ms(a, timeout_ms));
	if (n < 0 && errno != EINTR)
		st = WMS_ERR_INTERNAL;
	for (i = 0; i < n && !a->free_pending; i++) {
		/* its watch now, which an earlier action may have changed */
		struct watch *w = watch_of(a, got[i].data.fd, 0);
		int ev;
		if (!w)
			continue;
		if (!w->what) {
			own_unwatched(a, got[i].data.fd, w);
			continue;
		}
		if (!a->engine)
			break; /* the client was freed from a callback */
		ev = events_of(w->what, got[i].events);
		if (ev)
			a->ops->socket(a->engine, got[i].data.fd, ev);
	}
	if (!a->free_pending)
		run_timers(a);
	return st;
}

wms_status wms_async_poll(wms_async *a, int timeout_ms)
{
	wms_status st;
	if (!a || a->o.watch || a->in_loop_cb || wms__forked_since(a->fork_gen))
		return WMS_ERR_INVALID_ARG;
	enter(a);
	st = poll_step(a, timeout_ms);
	if (!leave(a))
		return WMS_OK;
	return st;
}

/* One dispatch for the whole run: a callback that frees the context (or
 * its client) is seen here, and the context goes when the run ends. */
wms_status wms_async_run(wms_async *a, int timeout_ms)
{
	uint64_t end = timeout_ms >= 0 ? wms__now_ns() + (uint64_t)timeout_ms * 1000000u : 0;
	wms_status st = WMS_OK;
	if (!a || a->o.watch || a->in_loop_cb || wms__forked_since(a->fork_gen))
		return WMS_ERR_INVALID_ARG;
	enter(a);
	while (a->in_flight && !a->free_pending) {
		int left = -1;
		if (timeout_ms >= 0) {
			uint64_t now = wms__now_ns();
			if (now >= end) {
				st = WMS_ERR_TIMEOUT;
				break;
			}
			left = (int)((end - now + 999999u) / 1000000u);
		}
		if ((st = poll_step(a, left)) != WMS_OK)
			break;
	}
	if (!leave(a))
		return WMS_OK;
	return st;
}

/* ---- lifetime ------------------------------------------------------------------ */

wms_status wms_async_new(wms_async **out, wms_client *c, const wms_async_options *opts,
			 wms_error *err)
{
	static const wms_async_options defaults = WMS_ASYNC_OPTIONS_INIT;
	wms__engine_loop loop;
	wms_async *a;
	wms_status st;

	wms_error_clear(err);
	if (!out)
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT, "out is NULL");
	*out = NULL;
	if (!c)
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT, "client is NULL");
	if ((st = wms__client_check_process(c, err)) != WMS_OK)
		return st;
	if (!opts)
		opts = &defaults;
	if (opts->version != WMS_ASYNC_OPTIONS_VERSION)
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "async options version %u is not supported (this libwms knows %u)",
				 opts->version, WMS_ASYNC_OPTIONS_VERSION);
	if (!opts->watch != !opts->timer)
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "watch and timer go together (both NULL: libwms's own loop)");
	if (opts->max_in_flight > MAX_IN_FLIGHT || opts->max_connections > MAX_IN_FLIGHT)
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "max_in_flight and max_connections must be at most %u (got %u, %u)",
				 MAX_IN_FLIGHT, (unsigned)opts->max_in_flight,
				 (unsigned)opts->max_connections);
	a = wms__calloc(1, sizeof(*a));
	if (!a)
		return wms__fail(err, WMS_ERR_NOMEM, WMS_DELIVERY_NOT_SENT, "out of memory");
	a->o = *opts;
	if (!a->o.max_in_flight)
		a->o.max_in_flight = DEFAULT_IN_FLIGHT;
	a->client = c;
	a->fork_gen = c->fork_gen;
	a->epfd = -1;
	wms__timer_init(&a->engine_timer);
	if (!a->o.watch && (a->epfd = epoll_create1(EPOLL_CLOEXEC)) < 0) {
		int e = errno;
		wms__free(a);
		return wms__fail(err, e == ENOMEM ? WMS_ERR_NOMEM : WMS_ERR_INTERNAL,
				 WMS_DELIVERY_NOT_SENT, "cannot create the event loop's epoll set (errno %d)",
				 e);
	}
	a->ops = wms__transport_engine(c->transport);
	if (a->ops) {
		loop.watch = engine_watch;
		loop.timer = engine_timer;
		loop.done = engine_done;
		loop.closing = engine_closing;
		loop.ctx = a;
		loop.idle_timer = !a->o.watch;
		st = a->ops->create(c->transport, &loop, a->o.max_connections, &a->engine);
		if (st != WMS_OK) {
			if (a->epfd >= 0)
				close(a->epfd);
			wms__free(a);
			return wms__fail(err, st, WMS_DELIVERY_NOT_SENT,
					 "cannot create the transport's event engine");
		}
	}
	wms__client_async_add(c, a);
	*out = a;
	return WMS_OK;
}

/* Every call cancelled (their callbacks run), the engine gone: its sockets
 * let go (watch callbacks with REMOVE), the client left. */
static void detach(wms_async *a, const char *why)
{
	/* held throughout: a free from one of the callbacks (completion,
	 * watch, timer) waits for the caller of this */
	a->depth++;
	cancel_every(a, why, UINT64_MAX);
	deliver_later(a);
	if (a->engine) {
		a->ops->destroy(a->engine);
		a->engine = NULL;
	}
	wms__heap_remove(&a->timers, &a->engine_timer);
	update_timer(a);
	a->depth--;
}

/* In a child forked since `a` was made, its calls and connections are the
 * parent's: each call goes without its callback (the parent runs it), the
 * engine without a byte sent on its connections (the curl engine sees the
 * fork itself), and nothing is asked of the epoll set (shared with the
 * parent) or of the caller's loop: forgotten, no loop callback runs. */
static void forget(wms_async *a)
{
	struct wms_async_call *x;
	if (a->forgotten)
		return;
	a->forgotten = 1;
	if (a->engine) {
		a->ops->destroy(a->engine);
		a->engine = NULL;
	}
	while ((x = a->calls) != NULL) {
		unlink_call(a, x);
		wms_http_response_clear(&x->resp);
		call_release(a, x);
	}
	a->marked = 0;
	while ((x = a->later) != NULL) {
		a->later = x->next;
		if (x->kind == K_STOCK)
			wms_stock_reply_free(x->out.stock);
		else if (x->kind == K_CALL)
			wms__xml_doc_free(x->out.doc);
		call_release(a, x);
	}
	a->later_tail = NULL;
}

void wms__async_client_forgotten(wms_async *a)
{
	forget(a);
	a->client_going = 1;
	a->client = NULL; /* the caller still frees `a` */
}

void wms__async_client_gone(wms_async *a)
{
	a->client_going = 1;
	detach(a, "cancelled: the client was freed");
	a->client = NULL;
	/* freed from a callback of this very detach: nothing else will */
	if (a->free_pending && a->depth == 0)
		async_release(a);
}

static void async_release(wms_async *a)
{
	struct wms_async_call *x;
	while ((x = a->spares) != NULL) {
		a->spares = x->next;
		wms__free(x);
	}
	wms__heap_free(&a->timers);
	wms__free(a->watches);
	if (a->epfd >= 0)
		close(a->epfd);
	wms__free(a);
}

void wms_async_free(wms_async *a)
{
	if (!a || a->free_pending)
		return;
	if (wms__forked_since(a->fork_gen)) {
		forget(a);
		if (a->client)
			wms__client_async_remove(a->client, a);
		async_release(a);
		return;
	}
	if (a->depth) {
		/* from one of its callbacks: the outermost dispatch frees it;
		 * its calls are cancelled now, unless libcurl is running (a
		 * watch or timer callback): then by that dispatch's end */
		a->free_pending = 1;
		if (!a->in_loop_cb)
			cancel_every(a, "cancelled: the async context was freed", UINT64_MAX);
		return;
	}
	async_destroy(a);
}

/* The context goes. free_pending first: a callback run by the detach that
 * starts a call has it cancelled at once, one that frees the context again
 * does nothing. The client is left after the detach, and only if a
 * callback did not free it meanwhile (which detached this context and
 * forgot it). */
static void async_destroy(wms_async *a)
{
	a->free_pending = 1;
	/* held: a callback freeing the client must not release the context
	 * (wms__async_client_gone at depth 0) under this */
	a->depth++;
	deliver_later(a);
	a->depth--;
	if (a->client)
		detach(a, "cancelled: the async context was freed");
	if (a->client)
		wms__client_async_remove(a->client, a);
	async_release(a);
}
