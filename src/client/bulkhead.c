/* The bulkhead (wms_bulkhead_options in wms/client.h): at most `max` calls
 * hold a slot at once. Taking a free slot is one compare-and-swap; a call
 * that may wait sleeps on a condition variable, and a call leaving signals
 * it only when someone waits. Both sides are sequentially consistent on
 * `in_flight` and `waiting`, so a leaver either frees the slot before the
 * waiter's last look, or sees the waiter and signals under the lock the
 * waiter holds until it sleeps: no wake-up is lost. */
#include <errno.h>
#include <string.h>
#include <time.h>
#include "client/client.h"

wms_status wms__bulkhead_init(wms__bulkhead *b, const wms_bulkhead_options *o)
{
	pthread_condattr_t attr;
	int rc;

	b->max = o->max_concurrent_calls;
	b->wait_ms = o->max_wait_for_slot_ms;
	if (!b->max || !b->wait_ms)
		return WMS_OK; /* no one ever waits: no lock */
	if (pthread_condattr_init(&attr) != 0)
		return WMS_ERR_NOMEM;
	rc = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	if (rc == 0)
		rc = pthread_cond_init(&b->freed, &attr);
	pthread_condattr_destroy(&attr);
	if (rc != 0)
		return rc == ENOMEM || rc == EAGAIN ? WMS_ERR_NOMEM : WMS_ERR_INTERNAL;
	if ((rc = pthread_mutex_init(&b->lock, NULL)) != 0) {
		pthread_cond_destroy(&b->freed);
		return rc == ENOMEM || rc == EAGAIN ? WMS_ERR_NOMEM : WMS_ERR_INTERNAL;
	}
	b->ready = 1;
	return WMS_OK;
}

void wms__bulkhead_destroy(wms__bulkhead *b)
{
	if (!b->ready)
		return;
	pthread_mutex_destroy(&b->lock);
	pthread_cond_destroy(&b->freed);
	b->ready = 0;
}

static int take(wms__bulkhead *b)
{
	uint32_t n = atomic_load(&b->in_flight);
	while (n < b->max)
		if (atomic_compare_exchange_weak(&b->in_flight, &n, n + 1))
			return 1;
	return 0;
}

/* Wait for a slot until the deadline: 1 with one, 0 without. */
static int wait_for_slot(wms__bulkhead *b)
{
	struct timespec until;
	int got = 0, rc = 0;

	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += (time_t)(b->wait_ms / 1000u);
	until.tv_nsec += (long)(b->wait_ms % 1000u) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&b->lock);
	atomic_fetch_add(&b->waiting, 1);
	while (!(got = take(b)) && rc != ETIMEDOUT)
		rc = pthread_cond_timedwait(&b->freed, &b->lock, &until);
	atomic_fetch_sub(&b->waiting, 1);
	pthread_mutex_unlock(&b->lock);
	return got;
}

int wms__bulkhead_try(wms__bulkhead *b)
{
	if (!b->max)
		return 1;
	if (!take(b))
		return 0;
	atomic_fetch_add_explicit(&b->admitted, 1, memory_order_relaxed);
	return 1;
}

int wms__bulkhead_wait(wms__bulkhead *b)
{
	if (!b->max)
		return 1;
	if (b->wait_ms && wait_for_slot(b)) {
		atomic_fetch_add_explicit(&b->admitted, 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&b->waited, 1, memory_order_relaxed);
		return 1;
	}
	wms__bulkhead_refused(b);
	return 0;
}

void wms__bulkhead_refused(wms__bulkhead *b)
{
	atomic_fetch_add_explicit(&b->rejected, 1, memory_order_relaxed);
}

void wms__bulkhead_leave(wms__bulkhead *b)
{
	if (!b->max)
		return;
	atomic_fetch_sub(&b->in_flight, 1);
	if (atomic_load(&b->waiting)) {
		pthread_mutex_lock(&b->lock);
		pthread_cond_signal(&b->freed);
		pthread_mutex_unlock(&b->lock);
	}
}

void wms__bulkhead_snapshot(wms_bulkhead_snapshot *out, wms__bulkhead *b)
{
	memset(out, 0, sizeof(*out));
	out->max_concurrent_calls = b->max;
	out->max_wait_for_slot_ms = b->max ? b->wait_ms : 0;
	out->in_flight = atomic_load_explicit(&b->in_flight, memory_order_relaxed);
	out->waiting = atomic_load_explicit(&b->waiting, memory_order_relaxed);
	out->admitted = atomic_load_explicit(&b->admitted, memory_order_relaxed);
	out->waited = atomic_load_explicit(&b->waited, memory_order_relaxed);
	out->rejected = atomic_load_explicit(&b->rejected, memory_order_relaxed);
}
