/*
 * libwms - a wms_async driven by a libuv loop (header only: include it in
 * the program that runs the loop, link with libuv: pkg-config libuv).
 *
 * wms_async_libuv_attach fills the watch, timer and loop_payload of a
 * wms_async_options so that the context made with them runs its calls on
 * `loop`: one uv_poll_t per socket libwms asks to watch (kept in the
 * socket's *sockp slot, created on its first watch, closed on
 * WMS_POLL_REMOVE) and one uv_timer_t for the context's timer. The loop
 * thread owns the context (wms/async.h, "Threads").
 *
 *     #include <wms/adapters/libuv.h>
 *
 *     uv_loop_t loop;
 *     wms_async_options o = WMS_ASYNC_OPTIONS_INIT;
 *     wms_async *a;
 *
 *     uv_loop_init(&loop);
 *     wms_async_libuv_attach(&o, &loop);            // 0, or a UV_E* code
 *     if (wms_async_new(&a, client, &o, &err) != WMS_OK) ...
 *     wms_async_submit_order(NULL, a, &order, done, payload);
 *     uv_run(&loop, UV_RUN_DEFAULT);   // returns once no call is in flight
 *                                      // (and nothing else of yours runs)
 *     wms_async_free(a);               // sockets: uv_close
 *     wms_async_libuv_detach(&o);      // the timer: uv_close
 *     uv_run(&loop, UV_RUN_DEFAULT);   // the close callbacks free memory
 *     uv_loop_close(&loop);            // 0: no handle of libwms's left
 *
 * Lifetimes. uv_close is asynchronous: a handle's memory is freed by its
 * close callback, which runs on the loop's next iteration. So:
 *   - wms_async_free (and wms_client_free, which lets go of its contexts'
 *     sockets) close the poll handles of every socket still watched; the
 *     adapter's timer stays until wms_async_libuv_detach.
 *   - wms_async_libuv_detach comes after wms_async_free has returned (or
 *     after wms_async_new failed): the context calls the timer callback
 *     until it is freed. It may be called from inside a loop callback,
 *     the completion callback that called wms_async_free included (the
 *     context, freed when that dispatch ends, then finds its timer
 *     closing and leaves it be).
 *   - Then the loop must run once more (uv_run, any mode that iterates)
 *     for the close callbacks, before uv_loop_close; otherwise the memory
 *     of the timer and of the last sockets is lost and uv_loop_close says
 *     UV_EBUSY.
 * One attach per context: the state it makes (the timer) serves one
 * wms_async. A socket's handle is stopped at WMS_POLL_REMOVE before libcurl
 * closes the descriptor, so a new socket given the same number gets a poll
 * handle of its own while the old one is still closing.
 *
 * A socket libuv reports failed (a poll status below 0: libuv stops the
 * handle) is handed to libwms as ready for what it was watched for (plus
 * WMS_EV_ERR when that includes writing), as libwms's own loop reads
 * poll(): libcurl does the I/O and reports the socket's own error (a reset
 * is "Connection reset by peer", not "select/poll returned error"); the
 * handle is started again if libwms still watches the socket.
 *
 * A timer of 0 ms is a uv timer of 0 (the next loop iteration), never a
 * call of wms_async_timeout from inside the timer callback.
 *
 * uv.h needs POSIX declarations: strict C (-std=c11) builds define
 * _POSIX_C_SOURCE (200809L) or use -std=gnu11.
 */
#ifndef WMS_ADAPTERS_LIBUV_H
#define WMS_ADAPTERS_LIBUV_H

#include <stdint.h>
#include <stdlib.h>
#include <uv.h>
#include "../async.h"

WMS_BEGIN_DECL

/* The adapter's state: the context's one timer. */
typedef struct wms_async_libuv_loop {
	uv_timer_t timer;
	uv_loop_t *loop;
	wms_async *async; /* learnt from the context's first timer callback */
} wms_async_libuv_loop;

/* One watched socket. */
typedef struct wms_async_libuv_socket {
	uv_poll_t poll;
	wms_async *async;
	int fd;
	int what; /* WMS_POLL_IN, _OUT, _INOUT */
} wms_async_libuv_socket;

static inline int wms_async_libuv_events(int what)
{
	return ((what & WMS_POLL_IN) ? UV_READABLE : 0) | ((what & WMS_POLL_OUT) ? UV_WRITABLE : 0);
}

static inline void wms_async_libuv_on_poll(uv_poll_t *handle, int status, int events)
{
	wms_async_libuv_socket *s = (wms_async_libuv_socket *)handle->data;
	int ev = 0;
	if (status < 0) {
		/* the socket failed (libuv has stopped the handle): what it was
		 * watched for, so that libcurl does the I/O and meets the error
		 * itself, as on libwms's own loop (WMS_EV_ERR alone would end the
		 * transfer as "select/poll returned error", the cause lost) */
		if (s->what & WMS_POLL_IN)
			ev |= WMS_EV_IN;
		if (s->what & WMS_POLL_OUT)
			ev |= WMS_EV_OUT | WMS_EV_ERR;
	} else {
		if (events & UV_READABLE)
			ev |= WMS_EV_IN;
		if (events & UV_WRITABLE)
			ev |= WMS_EV_OUT;
	}
	/* may close this handle (WMS_POLL_REMOVE): freed later, by on_closed */
	(void)wms_async_socket_action(s->async, s->fd, ev);
	/* still watched, as libwms believes, though libuv stopped it */
	if (status < 0 && !uv_is_closing((uv_handle_t *)handle) &&
	    !uv_is_active((uv_handle_t *)handle))
		(void)uv_poll_start(handle, wms_async_libuv_events(s->what),
				    wms_async_libuv_on_poll);
}

static inline void wms_async_libuv_on_socket_closed(uv_handle_t *handle)
{
	free(handle->data);
}

static inline int wms_async_libuv_watch(wms_async *async, int fd, int what, void *payload,
					void **sockp)
{
	wms_async_libuv_loop *l = (wms_async_libuv_loop *)payload;
	wms_async_libuv_socket *s = (wms_async_libuv_socket *)*sockp;

	if (what == WMS_POLL_REMOVE) {
		if (s) {
			*sockp = NULL;
			uv_poll_stop(&s->poll);
			uv_close((uv_handle_t *)&s->poll, wms_async_libuv_on_socket_closed);
		}
		return 0;
	}
	if (!s) {
		s = (wms_async_libuv_socket *)malloc(sizeof(*s));
		if (!s)
			return -1;
		if (uv_poll_init_socket(l->loop, &s->poll, (uv_os_sock_t)fd) != 0) {
			free(s);
			return -1;
		}
		s->poll.data = s;
		s->async = async;
		s->fd = fd;
		*sockp = s;
	}
	s->what = what;
	return uv_poll_start(&s->poll, wms_async_libuv_events(what), wms_async_libuv_on_poll) == 0
		       ? 0
		       : -1;
}

static inline void wms_async_libuv_on_timer(uv_timer_t *handle)
{
	wms_async_libuv_loop *l = (wms_async_libuv_loop *)handle->data;
	if (l->async)
		(void)wms_async_timeout(l->async);
}

static inline int wms_async_libuv_timer(wms_async *async, long timeout_ms, void *payload)
{
	wms_async_libuv_loop *l = (wms_async_libuv_loop *)payload;
	if (uv_is_closing((const uv_handle_t *)&l->timer))
		return timeout_ms < 0 ? 0 : -1; /* detached too early */
	l->async = async;
	if (timeout_ms < 0)
		return uv_timer_stop(&l->timer) == 0 ? 0 : -1;
	return uv_timer_start(&l->timer, wms_async_libuv_on_timer, (uint64_t)timeout_ms, 0) == 0
		       ? 0
		       : -1;
}

static inline void wms_async_libuv_on_timer_closed(uv_handle_t *handle)
{
	free(handle->data);
}

/**
 * Make `opts` run a context on `loop`: sets opts->watch, opts->timer and
 * opts->loop_payload (the adapter's state, with its uv_timer_t initialised
 * on `loop`), leaves the rest. 0, UV_EINVAL (a NULL argument) or UV_ENOMEM;
 * opts is unchanged then.
 */
static inline int wms_async_libuv_attach(wms_async_options *opts, uv_loop_t *loop)
{
	wms_async_libuv_loop *l;
	int rc;
	if (!opts || !loop)
		return UV_EINVAL;
	l = (wms_async_libuv_loop *)calloc(1, sizeof(*l));
	if (!l)
		return UV_ENOMEM;
	if ((rc = uv_timer_init(loop, &l->timer)) != 0) {
		free(l);
		return rc;
	}
	l->timer.data = l;
	l->loop = loop;
	opts->watch = wms_async_libuv_watch;
	opts->timer = wms_async_libuv_timer;
	opts->loop_payload = l;
	return 0;
}

/**
 * Let go of what wms_async_libuv_attach made: its timer is closed (its
 * memory freed by the close callback, when the loop next runs) and opts'
 * watch, timer and loop_payload are set to NULL. `opts` is what
 * wms_async_libuv_attach filled (in this or another source file: the
 * functions are each file's own, so they are not compared). After
 * wms_async_free (or a failed wms_async_new); NULL-safe, and a no-op once
 * loop_payload is NULL (a second detach).
 */
static inline void wms_async_libuv_detach(wms_async_options *opts)
{
	wms_async_libuv_loop *l;
	if (!opts || !opts->loop_payload)
		return;
	l = (wms_async_libuv_loop *)opts->loop_payload;
	l->async = NULL;
	uv_close((uv_handle_t *)&l->timer, wms_async_libuv_on_timer_closed);
	opts->watch = NULL;
	opts->timer = NULL;
	opts->loop_payload = NULL;
}

WMS_END_DECL

#endif
