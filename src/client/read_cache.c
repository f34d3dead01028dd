/*
 * The read cache (wms_read_cache_options): the last good answer of each
 * GetOrderStatus (keyed by order id) and GetStockLevel (keyed by the SKU
 * list, in order), served on a call refused without being sent.
 *
 * One mutex: the store on a good read takes it once for one hash lookup and
 * one copy (no allocation when the key is held already: the same key has
 * the same SKU count); the fallback path is rare. Entries sit on one list in
 * the order they were last stored or served; the oldest goes first when
 * max_entries or max_bytes would be passed. Expiry is lazy: a stale entry
 * is dropped when a lookup finds it, or evicted like any other.
 */
#include <string.h>
#include "client/client.h"

typedef struct entry {
	struct entry *chain;         /* next in its bucket */
	struct entry *newer, *older; /* the use order */
	uint64_t hash;
	uint64_t stored_ns;
	size_t key_len;
	size_t size;                 /* what max_bytes counts of it */
	wms__op op;
	wms_status_reply status;     /* GetOrderStatus */
	size_t count;                /* GetStockLevel: levels */
	wms_stock_level *levels;     /* right after the entry */
	char *key;                   /* after the levels: each part NUL-ended */
} entry;

struct wms__read_cache {
	pthread_mutex_t lock;
	uint32_t max_entries, max_age_ms;
	uint64_t max_bytes, max_age_ns;
	entry **buckets;
	size_t nbuckets;             /* a power of two */
	entry *newest, *oldest;
	uint64_t entries, bytes, hits, misses, expired, evictions;
};

#define FIRST_BUCKETS 64u

wms_status wms__read_cache_new(wms__read_cache **out, const wms_read_cache_options *o)
{
	wms__read_cache *rc;
	*out = NULL;
	if (!o->max_entries)
		return WMS_OK;
	rc = wms__calloc(1, sizeof(*rc));
	if (!rc)
		return WMS_ERR_NOMEM;
	rc->nbuckets = FIRST_BUCKETS;
	rc->buckets = wms__calloc(rc->nbuckets, sizeof(*rc->buckets));
	if (!rc->buckets) {
		wms__free(rc);
		return WMS_ERR_NOMEM;
	}
	if (pthread_mutex_init(&rc->lock, NULL) != 0) {
		wms__free(rc->buckets);
		wms__free(rc);
		return WMS_ERR_INTERNAL;
	}
	rc->max_entries = o->max_entries;
	rc->max_age_ms = o->max_age_ms ? o->max_age_ms : WMS_DEFAULT_READ_CACHE_AGE_MS;
	rc->max_age_ns = (uint64_t)rc->max_age_ms * 1000000u;
	rc->max_bytes = o->max_bytes ? o->max_bytes : WMS_DEFAULT_READ_CACHE_BYTES;
	*out = rc;
	return WMS_OK;
}

void wms__read_cache_free(wms__read_cache *rc)
{
	entry *e, *next;
	if (!rc)
		return;
	for (e = rc->newest; e; e = next) {
		next = e->older;
		wms__free(e);
	}
	wms__free(rc->buckets);
	pthread_mutex_destroy(&rc->lock);
	wms__free(rc);
}

/* ---- keys: read in place from the call, never built for a lookup -------- */

static uint64_t fnv(uint64_t h, const char *s, size_t n)
{
	size_t i;
	for (i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
	return h;
}

/* The key's length (0: the call has none: not a read, or arguments a good
 * answer never had, since a lookup comes before they are checked) and its
 * hash. */
static size_t key_of(const call *k, uint64_t *hash)
{
	uint64_t h = 14695981039346656037ull ^ (uint64_t)k->op;
	size_t i, n, len = 0;

	if (k->op == WMS__OP_GET_ORDER_STATUS) {
		if (!k->order_id)
			return 0;
		n = strlen(k->order_id) + 1;
		*hash = fnv(h, k->order_id, n);
		return n;
	}
	if (k->op != WMS__OP_GET_STOCK_LEVEL || !k->skus || !k->sku_count ||
	    k->sku_count > WMS_MAX_SKUS)
		return 0;
	for (i = 0; i < k->sku_count; i++) {
		if (!k->skus[i])
			return 0;
		n = strlen(k->skus[i]) + 1;
		h = fnv(h, k->skus[i], n);
		len += n;
	}
	*hash = h;
	return len;
}

/* The key's parts one after another: the order id, or each SKU. */
static const char *key_part(const call *k, size_t i)
{
	return k->op == WMS__OP_GET_ORDER_STATUS ? k->order_id : k->skus[i];
}

static size_t key_parts(const call *k)
{
	return k->op == WMS__OP_GET_ORDER_STATUS ? 1 : k->sku_count;
}

static int key_equal(const entry *e, const call *k, uint64_t hash, size_t len)
{
	const char *p = e->key;
	size_t i, n;
	if (e->hash != hash || e->op != k->op || e->key_len != len)
		return 0;
	for (i = 0; i < key_parts(k); i++) {
		n = strlen(key_part(k, i)) + 1;
		if (memcmp(p, key_part(k, i), n) != 0)
			return 0;
		p += n;
	}
	return 1;
}

static entry **slot_of(wms__read_cache *rc, const call *k, uint64_t hash, size_t len)
{
	entry **p = &rc->buckets[hash & (rc->nbuckets - 1)];
	while (*p && !key_equal(*p, k, hash, len))
		p = &(*p)->chain;
	return p;
}

/* ---- the use order -------------------------------------------------------- */

static void unlist(wms__read_cache *rc, entry *e)
{
	if (e->newer)
		e->newer->older = e->older;
	else
		rc->newest = e->older;
	if (e->older)
		e->older->newer = e->newer;
	else
		rc->oldest = e->newer;
	e->newer = e->older = NULL;
}

static void list_first(wms__read_cache *rc, entry *e)
{
	e->older = rc->newest;
	e->newer = NULL;
	if (rc->newest)
		rc->newest->newer = e;
	rc->newest = e;
	if (!rc->oldest)
		rc->oldest = e;
}

/* Unlink and free the entry `*slot` points at. */
static void drop(wms__read_cache *rc, entry **slot)
{
	entry *e = *slot;
	*slot = e->chain;
	unlist(rc, e);
	rc->entries--;
	rc->bytes -= e->size;
	wms__free(e);
}

static void evict_oldest(wms__read_cache *rc)
{
	entry *e = rc->oldest;
	entry **p = &rc->buckets[e->hash & (rc->nbuckets - 1)];
	while (*p != e)
		p = &(*p)->chain;
	drop(rc, p);
	rc->evictions++;
}

/* Twice the buckets once there are as many entries as buckets (up to one
 * per allowed entry); without memory, the chains just grow longer. */
static void maybe_grow(wms__read_cache *rc)
{
	entry **nb, *e, *next;
	size_t i, n = rc->nbuckets * 2;
	if (rc->entries < rc->nbuckets || rc->nbuckets >= rc->max_entries)
		return;
	nb = wms__calloc(n, sizeof(*nb));
	if (!nb)
		return;
	for (i = 0; i < rc->nbuckets; i++)
		for (e = rc->buckets[i]; e; e = next) {
			next = e->chain;
			e->chain = nb[e->hash & (n - 1)];
			nb[e->hash & (n - 1)] = e;
		}
	wms__free(rc->buckets);
	rc->buckets = nb;
	rc->nbuckets = n;
}

static void copy_answer(entry *e, const call *k)
{
	if (k->op == WMS__OP_GET_ORDER_STATUS) {
		e->status = *(const wms_status_reply *)k->out;
		e->status.from_fallback = 0;
		e->status.fallback_age_ms = 0;
	} else {
		memcpy(e->levels, (*(wms_stock_reply *const *)k->out)->levels,
		       e->count * sizeof(*e->levels));
	}
}

void wms__read_cache_store(wms__read_cache *rc, const call *k, uint64_t now_ns)
{
	uint64_t hash;
	size_t len = key_of(k, &hash), count, size, i, n;
	entry **slot, *e;
	char *p;

	if (!len)
		return;
	count = k->op == WMS__OP_GET_STOCK_LEVEL ? k->sku_count : 0;
	size = sizeof(entry) + count * sizeof(wms_stock_level) + len;
	pthread_mutex_lock(&rc->lock);
	slot = slot_of(rc, k, hash, len);
	if ((e = *slot) != NULL) {
		/* the same key: the same SKU count, so the same size */
		copy_answer(e, k);
		e->stored_ns = now_ns;
		unlist(rc, e);
		list_first(rc, e);
		goto done;
	}
	if (size > rc->max_bytes)
		goto done;
	while (rc->oldest && (rc->entries >= rc->max_entries || rc->bytes + size > rc->max_bytes))
		evict_oldest(rc);
	e = wms__malloc(size);
	if (!e)
		goto done;
	memset(e, 0, sizeof(*e));
	e->hash = hash;
	e->op = k->op;
	e->key_len = len;
	e->size = size;
	e->count = count;
	e->levels = (wms_stock_level *)(void *)(e + 1);
	e->key = (char *)(e->levels + count);
	for (i = 0, p = e->key; i < key_parts(k); i++, p += n) {
		n = strlen(key_part(k, i)) + 1;
		memcpy(p, key_part(k, i), n);
	}
	copy_answer(e, k);
	e->stored_ns = now_ns;
	list_first(rc, e);
	rc->entries++;
	rc->bytes += size;
	/* the evictions above may have moved the slot's chain: look again */
	slot = &rc->buckets[hash & (rc->nbuckets - 1)];
	e->chain = *slot;
	*slot = e;
	maybe_grow(rc);
done:
	pthread_mutex_unlock(&rc->lock);
}

int wms__read_cache_serve(wms__read_cache *rc, const call *k, uint64_t now_ns, uint64_t *age_ms)
{
	uint64_t hash, age;
	size_t len = key_of(k, &hash);
	wms_stock_reply *r = NULL;
	entry **slot, *e;
	int served = 0;

	if (!len)
		return 0; /* a write, or arguments no good answer had: no lookup */
	pthread_mutex_lock(&rc->lock);
	if (!*(slot = slot_of(rc, k, hash, len)))
		goto done;
	e = *slot;
	age = now_ns > e->stored_ns ? now_ns - e->stored_ns : 0;
	if (age > rc->max_age_ns) {
		drop(rc, slot);
		rc->expired++;
		goto done;
	}
	*age_ms = age / 1000000u;
	if (k->op == WMS__OP_GET_ORDER_STATUS) {
		wms_status_reply *out = k->out;
		*out = e->status;
		out->from_fallback = 1;
		out->fallback_age_ms = *age_ms;
	} else {
		/* without memory for the copy, the cache has no answer */
		if (wms_stock_reply_new(&r, e->count) != WMS_OK)
			goto done;
		memcpy(r->levels, e->levels, e->count * sizeof(*e->levels));
		r->from_fallback = 1;
		r->fallback_age_ms = *age_ms;
		*(wms_stock_reply **)k->out = r;
	}
	unlist(rc, e);
	list_first(rc, e);
	served = 1;
done:
	if (served)
		rc->hits++;
	else
		rc->misses++;
	pthread_mutex_unlock(&rc->lock);
	return served;
}

void wms__read_cache_snapshot(wms_read_cache_snapshot *out, wms__read_cache *rc)
{
	memset(out, 0, sizeof(*out));
	if (!rc)
		return;
	pthread_mutex_lock(&rc->lock);
	out->max_entries = rc->max_entries;
	out->max_age_ms = rc->max_age_ms;
	out->max_bytes = rc->max_bytes;
	out->entries = rc->entries;
	out->bytes = rc->bytes;
	out->hits = rc->hits;
	out->misses = rc->misses;
	out->expired = rc->expired;
	out->evictions = rc->evictions;
	pthread_mutex_unlock(&rc->lock);
}
