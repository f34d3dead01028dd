/* The pool of libxml2 workspaces a client keeps (src/soap/soap.h): a stack
 * that gives a caller the workspace its own thread used last, or else the
 * one used last by any (util/affine.h): a workspace's buffers stay on the
 * thread that grew them, and its memory is warm.
 *
 * Lifetimes: a workspace taken belongs to one thread, the caller's, until
 * it is given back; nothing else reads it meanwhile. It is given back only
 * after the call is done with everything the parse and build left in it
 * (soap/parse.c and soap/build.c say what: the reply and the error are
 * copied out before), so the next taker may reset or free any of it. The
 * pool frees idle workspaces only: at wms__xml_pool_free, once every
 * workspace is back, and any given back past max_idle. */
#include <pthread.h>
#include "soap/soap.h"
#include "util/affine.h"

struct wms__xml_pool {
	pthread_mutex_t lock;
	wms__affine_slot *idle; /* more concurrent callers make and free their own */
	size_t count, max;
};

static void ws_free(wms__xml_ws *ws)
{
	if (!ws)
		return;
	wms__parse_ws_free(ws->parse);
	wms__build_ws_free(ws->build);
	wms__free(ws);
}

wms_status wms__xml_pool_new(wms__xml_pool **out, size_t max_idle)
{
	wms__xml_pool *p = wms__calloc(1, sizeof(*p));
	*out = NULL;
	if (!p)
		return WMS_ERR_NOMEM;
	p->max = max_idle ? max_idle : 8;
	if (!(p->idle = wms__calloc(p->max, sizeof(*p->idle)))) {
		wms__free(p);
		return WMS_ERR_NOMEM;
	}
	if (pthread_mutex_init(&p->lock, NULL) != 0) {
		wms__free(p->idle);
		wms__free(p);
		return WMS_ERR_INTERNAL;
	}
	*out = p;
	return WMS_OK;
}

void wms__xml_pool_free(wms__xml_pool *pool)
{
	size_t i;
	if (!pool)
		return;
	for (i = 0; i < pool->count; i++)
		ws_free(pool->idle[i].item);
	pthread_mutex_destroy(&pool->lock);
	wms__free(pool->idle);
	wms__free(pool);
}

wms__xml_ws *wms__xml_pool_take(wms__xml_pool *pool)
{
	wms__xml_ws *ws = NULL;
	pthread_mutex_lock(&pool->lock);
	ws = wms__affine_take(pool->idle, &pool->count);
	pthread_mutex_unlock(&pool->lock);
	return ws ? ws : wms__calloc(1, sizeof(*ws));
}

void wms__xml_pool_give(wms__xml_pool *pool, wms__xml_ws *ws)
{
	if (!ws)
		return;
	pthread_mutex_lock(&pool->lock);
	if (pool->count < pool->max) {
		wms__affine_give(pool->idle, &pool->count, ws);
		ws = NULL;
	}
	pthread_mutex_unlock(&pool->lock);
	ws_free(ws);
}
