/*
 * wms-sim's order store: orders keyed by client order id, a catalogue of
 * SKUs with stock on hand and reserved, and the rules of the warehouse.
 *
 * Time is lazy: an order's state is computed from its creation time on the
 * sim's clock (one step per tick), and the stock a shipped order consumes is
 * settled the first time anyone looks. One mutex guards everything.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "sim_internal.h"

#define SHIPPED_STEP 4

static const char *const step_names[] = { "RECEIVED", "ALLOCATED", "PICKING", "PACKED",
					  "SHIPPED" };

struct order {
	char id[SIM_ID_MAX + 1];
	char ref[SIM_ID_MAX + 1];
	const char *priority;
	char name[257];
	char country[3];
	sim_line *lines;
	size_t line_count;
	uint64_t created_ns;
	uint64_t cancelled_ns;
	int cancelled;
	int settled; /* shipped and its stock consumed */
	unsigned submits;
	struct order *next; /* hash chain */
};

struct sku {
	int64_t on_hand;
	int64_t reserved;
};

struct sim_store {
	pthread_mutex_t lock;
	uint64_t tick_ns;
	uint64_t start_ns;
	int64_t start_wall_ms;
	struct sku *skus;
	uint32_t sku_count;
	struct order **orders; /* creation order */
	size_t count;
	size_t cap;
	struct order **buckets;
	size_t nbuckets; /* a power of two */
	unsigned long next_ref;
};

/* ---- helpers ------------------------------------------------------------ */

static uint64_t hash_id(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	while (*s) {
		h ^= (unsigned char)*s++;
		h *= 1099511628211ull;
	}
	return h;
}

static struct order *find(const sim_store *s, const char *id)
{
	struct order *o = s->buckets[hash_id(id) & (s->nbuckets - 1)];
	while (o && strcmp(o->id, id) != 0)
		o = o->next;
	return o;
}

static int rehash(sim_store *s, size_t nbuckets)
{
	struct order **b = calloc(nbuckets, sizeof(*b));
	size_t i;
	if (!b)
		return -1;
	for (i = 0; i < s->count; i++) {
		struct order *o = s->orders[i];
		size_t k = hash_id(o->id) & (nbuckets - 1);
		o->next = b[k];
		b[k] = o;
	}
	free(s->buckets);
	s->buckets = b;
	s->nbuckets = nbuckets;
	return 0;
}

/* "SKU-<n>", 1 <= n <= sku_count, no leading zero: the catalogue index. */
static struct sku *find_sku(const sim_store *s, const char *sku)
{
	unsigned long n = 0;
	const char *p;
	if (strncmp(sku, "SKU-", 4) != 0 || sku[4] < '1' || sku[4] > '9')
		return NULL;
	for (p = sku + 4; *p; p++) {
		if (*p < '0' || *p > '9')
			return NULL;
		n = n * 10 + (unsigned long)(*p - '0');
		if (n > s->sku_count)
			return NULL;
	}
	return &s->skus[n - 1];
}

static int step_of(const sim_store *s, const struct order *o, uint64_t now)
{
	uint64_t n = now > o->created_ns ? (now - o->created_ns) / s->tick_ns : 0;
	return n > SHIPPED_STEP ? SHIPPED_STEP : (int)n;
}

/* Shipping consumes the reservation: once, the first time it is seen. */
static void settle(sim_store *s, struct order *o, uint64_t now)
{
	size_t i;
	if (o->cancelled || o->settled || step_of(s, o, now) < SHIPPED_STEP)
		return;
	for (i = 0; i < o->line_count; i++) {
		struct sku *k = find_sku(s, o->lines[i].sku);
		if (k) {
			k->on_hand -= o->lines[i].quantity;
			k->reserved -= o->lines[i].quantity;
		}
	}
	o->settled = 1;
}

static void settle_all(sim_store *s, uint64_t now)
{
	size_t i;
	for (i = 0; i < s->count; i++)
		settle(s, s->orders[i], now);
}

static const char *state_of(const sim_store *s, const struct order *o, uint64_t now)
{
	return o->cancelled ? "CANCELLED" : step_names[step_of(s, o, now)];
}

static void format_time(const sim_store *s, uint64_t t_ns, char *out, size_t size)
{
	int64_t ms = s->start_wall_ms + (int64_t)((t_ns - s->start_ns) / NS_PER_MS);
	time_t secs = (time_t)(ms / 1000);
	struct tm tm;
	char date[32];
	if (!gmtime_r(&secs, &tm) || !strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%S", &tm)) {
		snprintf(out, size, "1970-01-01T00:00:00Z");
		return;
	}
	snprintf(out, size, "%s.%03dZ", date, (int)(ms % 1000));
}

static void view(const sim_store *s, const struct order *o, uint64_t now, sim_order_view *out)
{
	uint64_t changed;
	memset(out, 0, sizeof(*out));
	memcpy(out->order_id, o->id, sizeof(out->order_id));
	memcpy(out->wms_reference, o->ref, sizeof(out->wms_reference));
	out->state = state_of(s, o, now);
	changed = o->cancelled ? o->cancelled_ns
			       : o->created_ns + (uint64_t)step_of(s, o, now) * s->tick_ns;
	format_time(s, changed, out->updated_at, sizeof(out->updated_at));
}

static void reject(sim_reject *rej, const char *code, const char *fmt, ...)
#if defined(__GNUC__)
	__attribute__((format(printf, 3, 4)))
#endif
	;

static void reject(sim_reject *rej, const char *code, const char *fmt, ...)
{
	va_list ap;
	rej->code = code;
	va_start(ap, fmt);
	vsnprintf(rej->message, sizeof(rej->message), fmt, ap);
	va_end(ap);
}

static int same_lines(const struct order *o, const sim_submit *req)
{
	size_t i;
	if (o->line_count != req->line_count)
		return 0;
	for (i = 0; i < o->line_count; i++)
		if (strcmp(o->lines[i].sku, req->lines[i].sku) != 0 ||
		    o->lines[i].quantity != req->lines[i].quantity)
			return 0;
	return 1;
}

/* ---- lifetime ----------------------------------------------------------- */

wms_sim_status wms_sim__store_new(sim_store **out, uint32_t sku_count, int64_t on_hand,
				  uint32_t tick_ms, uint64_t now_ns)
{
	sim_store *s = calloc(1, sizeof(*s));
	struct timespec ts;
	uint32_t i;

	*out = NULL;
	if (!s)
		return wms_sim__fail(WMS_SIM_ERR_NOMEM, "out of memory");
	if (pthread_mutex_init(&s->lock, NULL) != 0) {
		free(s);
		return wms_sim__fail(WMS_SIM_ERR_INTERNAL, "cannot create a mutex");
	}
	s->tick_ns = (uint64_t)tick_ms * NS_PER_MS;
	s->start_ns = now_ns;
	clock_gettime(CLOCK_REALTIME, &ts);
	s->start_wall_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
	s->sku_count = sku_count;
	s->skus = calloc(sku_count, sizeof(*s->skus));
	s->nbuckets = 64;
	s->buckets = calloc(s->nbuckets, sizeof(*s->buckets));
	if (!s->skus || !s->buckets) {
		wms_sim__store_free(s);
		return wms_sim__fail(WMS_SIM_ERR_NOMEM, "out of memory");
	}
	for (i = 0; i < sku_count; i++)
		s->skus[i].on_hand = on_hand;
	*out = s;
	return WMS_SIM_OK;
}

void wms_sim__store_free(sim_store *s)
{
	size_t i;
	if (!s)
		return;
	for (i = 0; i < s->count; i++) {
		free(s->orders[i]->lines);
		free(s->orders[i]);
	}
	free(s->orders);
	free(s->buckets);
	free(s->skus);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

/* ---- operations --------------------------------------------------------- */

static int add_order(sim_store *s, const sim_submit *req, uint64_t now, struct order **out)
{
	struct order *o;
	size_t k;

	if (s->count == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 64;
		struct order **v = realloc(s->orders, cap * sizeof(*v));
		if (!v)
			return -1;
		s->orders = v;
		s->cap = cap;
	}
	if (s->count >= s->nbuckets && rehash(s, s->nbuckets * 2) != 0)
		return -1;
	o = calloc(1, sizeof(*o));
	if (!o)
		return -1;
	o->lines = malloc(req->line_count * sizeof(*o->lines));
	if (!o->lines) {
		free(o);
		return -1;
	}
	memcpy(o->lines, req->lines, req->line_count * sizeof(*o->lines));
	o->line_count = req->line_count;
	memcpy(o->id, req->order_id, sizeof(o->id));
	snprintf(o->ref, sizeof(o->ref), "WMS-%06lu", ++s->next_ref);
	o->priority = req->priority;
	memcpy(o->name, req->name, sizeof(o->name));
	memcpy(o->country, req->country, sizeof(o->country));
	o->created_ns = now;
	o->submits = 1;
	k = hash_id(o->id) & (s->nbuckets - 1);
	o->next = s->buckets[k];
	s->buckets[k] = o;
	s->orders[s->count++] = o;
	*out = o;
	return 0;
}

int wms_sim__store_submit(sim_store *s, uint64_t now, const sim_submit *req, sim_order_view *out,
			  sim_reject *rej)
{
	struct order *o;
	size_t i, j;
	int rc = 0;

	pthread_mutex_lock(&s->lock);
	o = find(s, req->order_id);
	if (o) {
		if (!same_lines(o, req)) {
			reject(rej, "DUPLICATE_MISMATCH",
			       "order %s exists (%s) with different lines", o->id, o->ref);
			rc = 1;
			goto done;
		}
		o->submits++;
		settle(s, o, now);
		view(s, o, now, out);
		out->duplicate = 1;
		goto done;
	}
	/* Reserve line by line; roll back on the first that cannot be served. */
	for (i = 0; i < req->line_count; i++) {
		const sim_line *l = &req->lines[i];
		struct sku *k = find_sku(s, l->sku);
		if (!k) {
			reject(rej, "UNKNOWN_SKU", "lines[%zu].sku: %s is not in the catalogue", i,
			       l->sku);
			rc = 1;
		} else if (k->on_hand - k->reserved < (int64_t)l->quantity) {
			reject(rej, "INSUFFICIENT_STOCK",
			       "lines[%zu]: %" PRIu32 " of %s requested, %" PRId64 " available", i,
			       l->quantity, l->sku, k->on_hand - k->reserved);
			rc = 1;
		} else {
			k->reserved += l->quantity;
			continue;
		}
		for (j = 0; j < i; j++)
			find_sku(s, req->lines[j].sku)->reserved -= req->lines[j].quantity;
		goto done;
	}
	if (add_order(s, req, now, &o) != 0) {
		for (j = 0; j < req->line_count; j++)
			find_sku(s, req->lines[j].sku)->reserved -= req->lines[j].quantity;
		rc = -1;
		goto done;
	}
	view(s, o, now, out);
done:
	pthread_mutex_unlock(&s->lock);
	return rc;
}

int wms_sim__store_status(sim_store *s, uint64_t now, const char *order_id, sim_order_view *out,
			  sim_reject *rej)
{
	struct order *o;
	int rc = 0;
	pthread_mutex_lock(&s->lock);
	o = find(s, order_id);
	if (!o) {
		reject(rej, "UNKNOWN_ORDER", "no order with clientOrderId %s", order_id);
		rc = 1;
	} else {
		settle(s, o, now);
		view(s, o, now, out);
	}
	pthread_mutex_unlock(&s->lock);
	return rc;
}

int wms_sim__store_cancel(sim_store *s, uint64_t now, const char *order_id, sim_order_view *out,
			  sim_reject *rej)
{
	struct order *o;
	size_t i;
	int rc = 0, already = 0;

	pthread_mutex_lock(&s->lock);
	o = find(s, order_id);
	if (!o) {
		reject(rej, "UNKNOWN_ORDER", "no order with clientOrderId %s", order_id);
		rc = 1;
		goto done;
	}
	settle(s, o, now);
	if (o->cancelled) {
		already = 1;
	} else if (step_of(s, o, now) > 1) {
		reject(rej, "NOT_CANCELLABLE",
		       "order %s is %s: only RECEIVED or ALLOCATED orders can be cancelled", o->id,
		       state_of(s, o, now));
		rc = 1;
		goto done;
	} else {
		o->cancelled = 1;
		o->cancelled_ns = now;
		for (i = 0; i < o->line_count; i++)
			find_sku(s, o->lines[i].sku)->reserved -= o->lines[i].quantity;
	}
	view(s, o, now, out);
	out->already_cancelled = already;
done:
	pthread_mutex_unlock(&s->lock);
	return rc;
}

int wms_sim__store_stock(sim_store *s, uint64_t now, const char *const *skus, size_t n,
			 sim_stock_view *out, sim_reject *rej)
{
	size_t i;
	int rc = 0;
	pthread_mutex_lock(&s->lock);
	settle_all(s, now);
	for (i = 0; i < n; i++) {
		const struct sku *k = find_sku(s, skus[i]);
		if (!k) {
			reject(rej, "UNKNOWN_SKU", "sku[%zu]: %s is not in the catalogue", i, skus[i]);
			rc = 1;
			break;
		}
		snprintf(out[i].sku, sizeof(out[i].sku), "%s", skus[i]);
		out[i].on_hand = k->on_hand;
		out[i].reserved = k->reserved;
		out[i].available = k->on_hand - k->reserved;
	}
	pthread_mutex_unlock(&s->lock);
	return rc;
}

/* ---- ledger access for tests -------------------------------------------- */

static void info_of(const sim_store *s, const struct order *o, uint64_t now,
		    wms_sim_order_info *out)
{
	size_t i;
	memset(out, 0, sizeof(*out));
	memcpy(out->order_id, o->id, sizeof(out->order_id));
	memcpy(out->wms_reference, o->ref, sizeof(out->wms_reference));
	out->state = state_of(s, o, now);
	out->priority = o->priority;
	out->line_count = o->line_count;
	for (i = 0; i < o->line_count; i++)
		out->total_quantity += o->lines[i].quantity;
	out->submits = o->submits;
	memcpy(out->ship_to_name, o->name, sizeof(out->ship_to_name));
	memcpy(out->country, o->country, sizeof(out->country));
}

size_t wms_sim__store_count(sim_store *s)
{
	size_t n;
	pthread_mutex_lock(&s->lock);
	n = s->count;
	pthread_mutex_unlock(&s->lock);
	return n;
}

int wms_sim__store_get(sim_store *s, uint64_t now, const char *order_id, wms_sim_order_info *out)
{
	struct order *o;
	pthread_mutex_lock(&s->lock);
	o = find(s, order_id);
	if (o) {
		settle(s, o, now);
		info_of(s, o, now, out);
	}
	pthread_mutex_unlock(&s->lock);
	return o != NULL;
}

int wms_sim__store_snapshot(sim_store *s, uint64_t now, wms_sim_order_info **out, size_t *count)
{
	wms_sim_order_info *v = NULL;
	size_t i;
	int rc = 0;

	pthread_mutex_lock(&s->lock);
	settle_all(s, now);
	if (s->count) {
		v = malloc(s->count * sizeof(*v));
		if (!v) {
			rc = -1;
			goto done;
		}
		for (i = 0; i < s->count; i++)
			info_of(s, s->orders[i], now, &v[i]);
	}
	*out = v;
	*count = s->count;
done:
	pthread_mutex_unlock(&s->lock);
	return rc;
}

int wms_sim__store_stock_get(sim_store *s, uint64_t now, const char *sku, wms_sim_stock *out)
{
	const struct sku *k;
	pthread_mutex_lock(&s->lock);
	settle_all(s, now);
	k = find_sku(s, sku);
	if (k) {
		out->on_hand = k->on_hand;
		out->reserved = k->reserved;
		out->available = k->on_hand - k->reserved;
	}
	pthread_mutex_unlock(&s->lock);
	return k != NULL;
}

int wms_sim__store_set_stock(sim_store *s, uint64_t now, const char *sku, int64_t on_hand)
{
	struct sku *k;
	pthread_mutex_lock(&s->lock);
	settle_all(s, now);
	k = find_sku(s, sku);
	if (k)
		k->on_hand = on_hand;
	pthread_mutex_unlock(&s->lock);
	return k != NULL;
}
