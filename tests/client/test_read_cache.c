/*
 * The read cache (wms_read_cache_options): the last good answers of
 * GetOrderStatus and GetStockLevel, served on a call refused without being
 * sent (an open breaker, a full bulkhead).
 *
 * Most tests run on the fake transport with the breaker's fake clock
 * (client_fx), which the cache reads too, so ages are exact. The threaded
 * test uses a transport of its own that answers any order id or SKU it is
 * asked for.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "client_fx.h"
#include "count_alloc.h"
#include "wms/health.h"

static const char cancel_ok[] =
	ENV_OPEN "<CancelOrderResponse xmlns=\"urn:libwms:warehouse:1\">"
	"<clientOrderId>ORD-1</clientOrderId><state>CANCELLED</state>"
	"<alreadyCancelled>false</alreadyCancelled></CancelOrderResponse>" ENV_CLOSE;

/* ---- replies ----------------------------------------------------------- */

static void status_body(char *buf, size_t size, const char *id, const char *state)
{
	snprintf(buf, size,
		 ENV_OPEN "<GetOrderStatusResponse xmlns=\"urn:libwms:warehouse:1\">"
		 "<clientOrderId>%s</clientOrderId><wmsReference>WMS-000042</wmsReference>"
		 "<state>%s</state><updatedAt>2026-12-04T10:00:00Z</updatedAt>"
		 "</GetOrderStatusResponse>" ENV_CLOSE,
		 id, state);
}

/* Levels for `skus`, on hand = base + index. */
static void stock_body(char *buf, size_t size, const char *const *skus, size_t n, int base)
{
	size_t i, len;
	len = (size_t)snprintf(buf, size, ENV_OPEN
			       "<GetStockLevelResponse xmlns=\"urn:libwms:warehouse:1\">");
	for (i = 0; i < n; i++)
		len += (size_t)snprintf(buf + len, size - len,
					"<level><sku>%s</sku><onHand>%d</onHand><reserved>0</reserved>"
					"<available>%d</available></level>",
					skus[i], base + (int)i, base + (int)i);
	snprintf(buf + len, size - len, "</GetStockLevelResponse>" ENV_CLOSE);
}

static char body[64 * 1024];

static void script(fx *x, const char *text)
{
	memset(&x->t->next, 0, sizeof(x->t->next));
	x->t->next.status = 200;
	x->t->next.content_type = "text/xml";
	x->t->next.body = text;
}

static fx cache_client(uint32_t entries, uint32_t age_ms, uint32_t bytes, wms_breaker_scope scope)
{
	wms_client_options o = WMS_CLIENT_OPTIONS_INIT;
	o.breaker_options.open_duration_ms = 30000;
	o.breaker_scope = scope;
	o.read_cache.max_entries = entries;
	o.read_cache.max_age_ms = age_ms;
	o.read_cache.max_bytes = bytes;
	return setup_client_with(&o);
}

static wms_read_cache_snapshot cache_of(const fx *x)
{
	wms_read_cache_snapshot s;
	assert_int_equal(wms_client_read_cache_get(&s, x->c), WMS_OK);
	return s;
}

static void open_breakers(fx *x, int open)
{
	wms_breaker *b[8];
	size_t i, n = wms_client_breakers(b, 8, x->c);
	for (i = 0; i < n; i++)
		if (open)
			wms_breaker_force_open(b[i]);
		else
			wms_breaker_reset(b[i]);
}

/* A live GetOrderStatus answered `state`. */
static void read_live(fx *x, const char *id, const char *state)
{
	wms_status_reply r;
	wms_error err;
	status_body(body, sizeof(body), id, state);
	script(x, body);
	assert_int_equal(wms_get_order_status(&r, x->c, id, &err), WMS_OK);
	assert_int_equal(r.from_fallback, 0);
	assert_int_equal(r.fallback_age_ms, 0);
	assert_int_equal(err.fallback, 0);
}

/* GetOrderStatus with the breaker open: served from the cache, `age` ms old. */
static void read_cached(fx *x, const char *id, const char *state, uint64_t age)
{
	wms_status_reply r;
	wms_error err;
	char want[96];
	int sends = x->t->sends;
	memset(&r, 0x5a, sizeof(r));
	assert_int_equal(wms_get_order_status(&r, x->c, id, &err), WMS_OK);
	assert_int_equal(x->t->sends, sends);
	assert_string_equal(r.order_id, id);
	assert_string_equal(wms_order_state_name(r.state), state);
	assert_string_equal(r.updated_at, "2026-12-04T10:00:00Z");
	assert_int_equal(r.from_fallback, 1);
	assert_int_equal(r.fallback_age_ms, age);
	assert_int_equal(err.status, WMS_OK);
	assert_int_equal(err.fallback, 1);
	assert_int_equal(err.delivery, WMS_DELIVERY_NOT_SENT);
	assert_int_equal(err.attempts, 0);
	snprintf(want, sizeof(want), "(GetOrderStatus, %llu ms old)", (unsigned long long)age);
	assert_non_null(strstr(err.message, want));
}

static void read_refused(fx *x, const char *id)
{
	wms_status_reply r;
	wms_error err;
	int sends = x->t->sends;
	assert_int_equal(wms_get_order_status(&r, x->c, id, &err), WMS_ERR_CIRCUIT_OPEN);
	assert_int_equal(err.fallback, 0);
	assert_int_equal(x->t->sends, sends);
}

/* ---- the tests ---------------------------------------------------------- */

/* A status read stored, then served while the breaker is open, with its
 * age; another order id is a miss; once closed, the WMS answers again. */
static void status_served_when_open(void **state)
{
	fx x = cache_client(4, 0, 0, WMS_BREAKER_SCOPE_PER_CLIENT);
	wms_read_cache_snapshot s;
	wms_status_reply r;
	wms_error err;
	(void)state;

	read_live(&x, "ORD-1", "PICKING");
	clock_now += 1500 * MS;
	open_breakers(&x, 1);
	read_cached(&x, "ORD-1", "PICKING", 1500);
	assert_int_equal(wms_get_order_status(&r, x.c, "ORD-1", &err), WMS_OK);
	assert_string_equal(err.message,
			    "circuit breaker open: answered from the read cache (GetOrderStatus, "
			    "1500 ms old)");
	assert_true(err.retry_after_ms > 0); /* the breaker's hint is kept */
	read_refused(&x, "ORD-2");
	s = cache_of(&x);
	assert_int_equal(s.max_entries, 4);
	assert_int_equal(s.max_age_ms, WMS_DEFAULT_READ_CACHE_AGE_MS);
	assert_int_equal(s.max_bytes, WMS_DEFAULT_READ_CACHE_BYTES);
	assert_int_equal(s.entries, 1);
	assert_int_equal(s.hits, 2);
	assert_int_equal(s.misses, 1);
	/* closed again: the WMS's answer, which replaces the cached one */
	open_breakers(&x, 0);
	read_live(&x, "ORD-1", "PACKED");
	open_breakers(&x, 1);
	read_cached(&x, "ORD-1", "PACKED", 0);
	assert_int_equal(cache_of(&x).entries, 1);
	wms_client_free(x.c);
}

/* Per-operation breakers: the same cache, the same keys. */
static void per_operation_breakers(void **state)
{
	fx x = cache_client(4, 0, 0, WMS_BREAKER_SCOPE_PER_OPERATION);
	(void)state;
	read_live(&x, "ORD-1", "PICKING");
	wms_breaker_force_open(wms_client_breaker_for(x.c, "GetOrderStatus"));
	clock_now += 7 * MS;
	read_cached(&x, "ORD-1", "PICKING", 7);
	wms_client_free(x.c);
}

/* A stock read likewise; the SKU list's order is part of the key. */
static void stock_served_in_order_only(void **state)
{
	static const char *const ab[] = { "SKU-A", "SKU-B" };
	static const char *const ba[] = { "SKU-B", "SKU-A" };
	static const char *const a[] = { "SKU-A" };
	fx x = cache_client(4, 0, 0, WMS_BREAKER_SCOPE_PER_CLIENT);
	wms_stock_reply *r = NULL;
	wms_error err;
	(void)state;

	stock_body(body, sizeof(body), ab, 2, 10);
	script(&x, body);
	assert_int_equal(wms_get_stock_level(&r, x.c, ab, 2, &err), WMS_OK);
	assert_int_equal(r->from_fallback, 0);
	assert_int_equal(r->fallback_age_ms, 0);
	wms_stock_reply_free(r);
	clock_now += 250 * MS;
	open_breakers(&x, 1);
	assert_int_equal(wms_get_stock_level(&r, x.c, ab, 2, &err), WMS_OK);
	assert_int_equal(x.t->sends, 1);
	assert_int_equal(r->count, 2);
	assert_string_equal(r->levels[0].sku, "SKU-A");
	assert_int_equal(r->levels[0].on_hand, 10);
	assert_string_equal(r->levels[1].sku, "SKU-B");
	assert_int_equal(r->levels[1].available, 11);
	assert_int_equal(r->from_fallback, 1);
	assert_int_equal(r->fallback_age_ms, 250);
	assert_int_equal(err.fallback, 1);
	assert_int_equal(err.delivery, WMS_DELIVERY_NOT_SENT);
	assert_non_null(strstr(err.message, "(GetStockLevel, 250 ms old)"));
	wms_stock_reply_free(r);
	/* the other order, and a sub-list: misses */
	assert_int_equal(wms_get_stock_level(&r, x.c, ba, 2, &err), WMS_ERR_CIRCUIT_OPEN);
	assert_null(r);
	assert_int_equal(wms_get_stock_level(&r, x.c, a, 1, &err), WMS_ERR_CIRCUIT_OPEN);
	assert_null(r);
	/* arguments a good answer never had: a miss, nothing read past them */
	{
		const char *hole[] = { "SKU-A", NULL };
		assert_int_equal(wms_get_stock_level(&r, x.c, hole, 2, &err), WMS_ERR_CIRCUIT_OPEN);
		assert_null(r);
	}
	assert_int_equal(cache_of(&x).misses, 2); /* not a list it could hold: not counted */
	/* no list at all: refused before the breaker and the cache */
	assert_int_equal(wms_get_stock_level(&r, x.c, NULL, 2, &err), WMS_ERR_INVALID_ARG);
	assert_null(r);
	assert_int_equal(cache_of(&x).hits, 1);
	assert_int_equal(cache_of(&x).misses, 2);
	wms_client_free(x.c);
}

/* ---- a full bulkhead: one call held in the fake transport --------------- */

typedef struct held {
	wms_client *c;
	wms_status st;
} held;

static void *held_read(void *arg)
{
	held *h = arg;
	wms_status_reply r;
	h->st = wms_get_order_status(&r, h->c, "ORD-1", NULL);
	return NULL;
}

static void served_when_bulkhead_full(void **state)
{
	wms_client_options o = WMS_CLIENT_OPTIONS_INIT;
	wms_bulkhead_snapshot bs;
	wms_status_reply r;
	wms_error err;
	pthread_t t;
	held h;
	fx x;
	(void)state;

	o.read_cache.max_entries = 2;
	o.bulkhead.max_concurrent_calls = 1;
	x = setup_client_with(&o);
	for (int round = 1; round <= 2; round++) {
		int tries = 0;
		read_live(&x, "ORD-1", "PICKING");
		x.t->next.sleep_ms = 300; /* the next call holds the one slot */
		h.c = x.c;
		assert_int_equal(pthread_create(&t, NULL, held_read, &h), 0);
		do {
			struct timespec ts = { 0, 1000000 };
			nanosleep(&ts, NULL);
			assert_int_equal(wms_client_bulkhead_get(&bs, x.c, NULL), WMS_OK);
		} while (bs.in_flight == 0 && ++tries < 5000);
		assert_int_equal(bs.in_flight, 1);
		assert_int_equal(wms_get_order_status(&r, x.c, "ORD-1", &err), WMS_OK);
		assert_int_equal(r.from_fallback, 1);
		assert_int_equal(err.fallback, 1);
		assert_int_equal(err.delivery, WMS_DELIVERY_NOT_SENT);
		assert_non_null(strstr(err.message, "bulkhead full: answered from the read cache"));
		/* not held: ORD-2 is a miss, BULKHEAD_FULL as before */
		assert_int_equal(wms_get_order_status(&r, x.c, "ORD-2", &err),
				 WMS_ERR_BULKHEAD_FULL);
		pthread_join(t, NULL);
		assert_int_equal(h.st, WMS_OK);
		assert_int_equal(cache_of(&x).hits, (uint64_t)round);
		assert_int_equal(cache_of(&x).misses, (uint64_t)round);
	}
	wms_client_free(x.c);
}

/* Writes are never stored nor served, and not counted as lookups. */
static void never_for_writes(void **state)
{
	fx x = cache_client(4, 0, 0, WMS_BREAKER_SCOPE_PER_CLIENT);
	wms_order_line line = { "SKU-1", 1 };
	wms_order order = WMS_ORDER_INIT;
	wms_submit_reply sr;
	wms_cancel_reply cr;
	wms_read_cache_snapshot s;
	wms_error err;
	(void)state;

	order.order_id = "ORD-1";
	order.ship_to.name = "Ada";
	order.ship_to.line1 = "1 Loop St";
	order.ship_to.city = "Springfield";
	order.ship_to.postal_code = "12345";
	order.ship_to.country = "US";
	order.lines = &line;
	order.line_count = 1;
	script(&x, fx_submit_ok);
	assert_int_equal(wms_submit_order(&sr, x.c, &order, &err), WMS_OK);
	script(&x, cancel_ok);
	assert_int_equal(wms_cancel_order(&cr, x.c, "ORD-1", "test", &err), WMS_OK);
	assert_int_equal(cache_of(&x).entries, 0);
	read_live(&x, "ORD-1", "PICKING"); /* a read of the same id is no write's answer */
	open_breakers(&x, 1);
	assert_int_equal(wms_submit_order(&sr, x.c, &order, &err), WMS_ERR_CIRCUIT_OPEN);
	assert_int_equal(err.fallback, 0);
	assert_int_equal(wms_cancel_order(&cr, x.c, "ORD-1", "test", &err), WMS_ERR_CIRCUIT_OPEN);
	assert_int_equal(err.fallback, 0);
	s = cache_of(&x);
	assert_int_equal(s.entries, 1);
	assert_int_equal(s.hits + s.misses, 0);
	wms_client_free(x.c);
}

/* Older than max_age_ms: dropped and not served; at exactly max_age_ms
 * still served. Twice in a row on one client. */
static void expired_not_served(void **state)
{
	fx x = cache_client(4, 1000, 0, WMS_BREAKER_SCOPE_PER_CLIENT);
	wms_read_cache_snapshot s;
	(void)state;

	for (uint64_t round = 1; round <= 2; round++) {
		open_breakers(&x, 0);
		read_live(&x, "ORD-1", "PICKING");
		open_breakers(&x, 1);
		clock_now += 1000 * MS;
		read_cached(&x, "ORD-1", "PICKING", 1000);
		clock_now += 1; /* 1000 ms and 1 ns */
		read_refused(&x, "ORD-1");
		s = cache_of(&x);
		assert_int_equal(s.entries, 0);
		assert_int_equal(s.bytes, 0);
		assert_int_equal(s.expired, round);
		assert_int_equal(s.misses, 2 * round - 1);
		assert_int_equal(s.hits, round);
		read_refused(&x, "ORD-1"); /* gone: a plain miss now */
		assert_int_equal(cache_of(&x).expired, round);
		assert_int_equal(cache_of(&x).misses, 2 * round);
		clock_now += 1;
	}
	wms_client_free(x.c);
}

/* Store `id` with the breaker closed, leave it open. */
static void store(fx *x, const char *id)
{
	open_breakers(x, 0);
	read_live(x, id, "PICKING");
	open_breakers(x, 1);
}

/* Store `id` in a full cache of 3: exactly `gone` is evicted (the least
 * recently stored or served), `evictions` in all; `kept` are served, in
 * that order (which is the use order from then on). */
static void cross(fx *x, const char *id, const char *gone, const char *const kept[3],
		  uint64_t evictions)
{
	wms_read_cache_snapshot s;
	store(x, id);
	s = cache_of(x);
	assert_int_equal(s.entries, 3);
	assert_int_equal(s.evictions, evictions);
	read_refused(x, gone);
	for (int i = 0; i < 3; i++)
		read_cached(x, kept[i], "PICKING", 0);
}

/* max_entries 3: three kept, the fourth evicts exactly one, the least
 * recently stored or served; and again on the same client. */
static void max_entries_both_sides(void **state)
{
	static const char *const kept1[] = { "ORD-3", "ORD-4", "ORD-1" };
	static const char *const kept2[] = { "ORD-4", "ORD-1", "ORD-5" };
	fx x = cache_client(3, 0, 0, WMS_BREAKER_SCOPE_PER_CLIENT);
	wms_read_cache_snapshot s;
	(void)state;

	store(&x, "ORD-1");
	store(&x, "ORD-2");
	store(&x, "ORD-3");
	s = cache_of(&x);
	assert_int_equal(s.entries, 3);
	assert_int_equal(s.evictions, 0);
	read_cached(&x, "ORD-1", "PICKING", 0); /* ORD-1 used: ORD-2 is the oldest now */
	cross(&x, "ORD-4", "ORD-2", kept1, 1);
	cross(&x, "ORD-5", "ORD-3", kept2, 2); /* ORD-3 was the least recently used */
	/* storing a key held already evicts nothing */
	store(&x, "ORD-4");
	assert_int_equal(cache_of(&x).evictions, 2);
	wms_client_free(x.c);

	/* max_entries 1: each new id replaces the last */
	x = cache_client(1, 0, 0, WMS_BREAKER_SCOPE_PER_CLIENT);
	store(&x, "ORD-1");
	read_cached(&x, "ORD-1", "PICKING", 0);
	store(&x, "ORD-2");
	store(&x, "ORD-3");
	s = cache_of(&x);
	assert_int_equal(s.entries, 1);
	assert_int_equal(s.evictions, 2);
	read_refused(&x, "ORD-2");
	read_cached(&x, "ORD-3", "PICKING", 0);
	wms_client_free(x.c);
}

/* 200 SKUs of 64 bytes: `which` makes the lists differ. */
static void big_list(char names[WMS_MAX_SKUS][WMS_ID_MAX + 1], const char *skus[WMS_MAX_SKUS],
		     char which)
{
	for (int i = 0; i < WMS_MAX_SKUS; i++) {
		memset(names[i], 'x', WMS_ID_MAX);
		names[i][WMS_ID_MAX] = '\0';
		snprintf(names[i], 8, "%c%05d", which, i);
		names[i][6] = 'x';
		skus[i] = names[i];
	}
}

static void read_big(fx *x, const char *const *skus, int live)
{
	wms_stock_reply *r = NULL;
	wms_error err;
	if (live) {
		open_breakers(x, 0);
		stock_body(body, sizeof(body), skus, WMS_MAX_SKUS, 100);
		script(x, body);
	}
	assert_int_equal(wms_get_stock_level(&r, x->c, skus, WMS_MAX_SKUS, &err), WMS_OK);
	assert_int_equal(r->count, WMS_MAX_SKUS);
	assert_string_equal(r->levels[WMS_MAX_SKUS - 1].sku, skus[WMS_MAX_SKUS - 1]);
	assert_int_equal(r->levels[WMS_MAX_SKUS - 1].on_hand, 100 + WMS_MAX_SKUS - 1);
	assert_int_equal(r->from_fallback, !live);
	wms_stock_reply_free(r);
	if (live)
		open_breakers(x, 1);
}

/* A reply at the 200-SKU limit is cached and served; with max_bytes at its
 * least one such entry fits, not two: the second evicts the first, and the
 * bytes never pass max_bytes. Twice in a row on one client. */
static void max_bytes_and_200_skus(void **state)
{
	static char na[WMS_MAX_SKUS][WMS_ID_MAX + 1], nb[WMS_MAX_SKUS][WMS_ID_MAX + 1];
	const char *a[WMS_MAX_SKUS], *b[WMS_MAX_SKUS];
	fx x = cache_client(10, 0, WMS_MIN_READ_CACHE_BYTES, WMS_BREAKER_SCOPE_PER_CLIENT);
	wms_read_cache_snapshot s;
	wms_stock_reply *r = NULL;
	(void)state;

	big_list(na, a, 'A');
	big_list(nb, b, 'B');
	read_big(&x, a, 1);
	s = cache_of(&x);
	assert_int_equal(s.entries, 1);
	/* one entry: its levels and its key at least */
	assert_true(s.bytes > WMS_MAX_SKUS * (sizeof(wms_stock_level) + WMS_ID_MAX + 1));
	assert_true(2 * s.bytes > WMS_MIN_READ_CACHE_BYTES);
	read_big(&x, a, 0);
	for (uint64_t round = 1; round <= 2; round++) {
		read_big(&x, round == 1 ? b : a, 1);
		s = cache_of(&x);
		assert_int_equal(s.entries, 1);
		assert_int_equal(s.evictions, round);
		assert_true(s.bytes <= WMS_MIN_READ_CACHE_BYTES);
		read_big(&x, round == 1 ? b : a, 0);
		assert_int_equal(wms_get_stock_level(&r, x.c, round == 1 ? a : b, WMS_MAX_SKUS, NULL),
				 WMS_ERR_CIRCUIT_OPEN);
		assert_null(r);
	}
	wms_client_free(x.c);
}

/* The cache first; the caller's fallback on a miss. */
static wms_status status_fallback(wms_status_reply *out, const wms_fallback_call *call,
				  void *payload)
{
	(*(int *)payload)++;
	snprintf(out->order_id, sizeof(out->order_id), "%s", call->order_id);
	out->state = WMS_ORDER_STATE_RECEIVED;
	return WMS_OK;
}

static void cache_before_fallback(void **state)
{
	wms_client_options o = WMS_CLIENT_OPTIONS_INIT;
	wms_fallbacks f = WMS_FALLBACKS_INIT;
	wms_status_reply r;
	wms_error err;
	int ran = 0;
	fx x;
	(void)state;

	f.get_order_status = status_fallback;
	f.payload = &ran;
	o.fallbacks = &f;
	o.read_cache.max_entries = 4;
	x = setup_client_with(&o);
	store(&x, "ORD-1");
	read_cached(&x, "ORD-1", "PICKING", 0);
	assert_int_equal(ran, 0);
	assert_int_equal(wms_get_order_status(&r, x.c, "ORD-2", &err), WMS_OK);
	assert_int_equal(ran, 1);
	assert_int_equal(r.from_fallback, 1);
	assert_int_equal(r.fallback_age_ms, 0);
	assert_string_equal(wms_order_state_name(r.state), "RECEIVED");
	assert_non_null(strstr(err.message, "answered by the GetOrderStatus fallback"));
	wms_client_free(x.c);
}

/* Off (the default): nothing stored, snapshot zero, the documents as
 * without the cache. */
static void off_stores_nothing(void **state)
{
	fx x = cache_client(0, 0, 0, WMS_BREAKER_SCOPE_PER_CLIENT);
	wms_read_cache_snapshot s, zero;
	wms_breaker *b = wms_client_breaker(x.c);
	char *doc, *plain;
	(void)state;

	memset(&zero, 0, sizeof(zero));
	store(&x, "ORD-1");
	read_refused(&x, "ORD-1");
	s = cache_of(&x);
	assert_memory_equal(&s, &zero, sizeof(s));
	for (int prom = 0; prom <= 1; prom++) {
		assert_int_equal(prom ? wms_client_health_prometheus(&doc, x.c, NULL)
				      : wms_client_health_json(&doc, x.c),
				 WMS_OK);
		assert_int_equal(prom ? wms_health_prometheus(&plain, &b, 1, NULL)
				      : wms_health_json(&plain, &b, 1),
				 WMS_OK);
		assert_string_equal(doc, plain);
		assert_null(strstr(doc, "read_cache"));
		wms_free(doc);
		wms_free(plain);
	}
	assert_int_equal(wms_client_read_cache_get(NULL, x.c), WMS_ERR_INVALID_ARG);
	assert_int_equal(wms_client_read_cache_get(&s, NULL), WMS_ERR_INVALID_ARG);
	wms_client_free(x.c);
}

static void health_documents(void **state)
{
	fx x = cache_client(4, 5000, 0, WMS_BREAKER_SCOPE_PER_CLIENT);
	wms_read_cache_snapshot s;
	char *doc, want[512];
	(void)state;

	store(&x, "ORD-1");
	read_cached(&x, "ORD-1", "PICKING", 0);
	read_refused(&x, "ORD-2");
	s = cache_of(&x);
	assert_int_equal(wms_client_health_json(&doc, x.c), WMS_OK);
	snprintf(want, sizeof(want),
		 "],\"read_cache\":{\"max_entries\":4,\"max_age_ms\":5000,\"max_bytes\":16777216,"
		 "\"entries\":1,\"bytes\":%llu,\"hits\":1,\"misses\":1,\"expired\":0,"
		 "\"evictions\":0}}\n",
		 (unsigned long long)s.bytes);
	assert_non_null(strstr(doc, want));
	assert_string_equal(doc + strlen(doc) - strlen(want), want);
	wms_free(doc);
	assert_int_equal(wms_client_health_prometheus(&doc, x.c, "svc"), WMS_OK);
	snprintf(want, sizeof(want),
		 "# TYPE svc_read_cache_entries gauge\nsvc_read_cache_entries 1\n"
		 "# HELP svc_read_cache_bytes Bytes the read cache's entries take (max_bytes "
		 "bounds them).\n# TYPE svc_read_cache_bytes gauge\nsvc_read_cache_bytes %llu\n",
		 (unsigned long long)s.bytes);
	assert_non_null(strstr(doc, want));
	assert_non_null(strstr(doc, "svc_read_cache_lookups_total{kind=\"hit\"} 1\n"
				    "svc_read_cache_lookups_total{kind=\"miss\"} 1\n"
				    "svc_read_cache_lookups_total{kind=\"expired\"} 0\n"));
	assert_non_null(strstr(doc, "svc_read_cache_evictions_total 0\n"));
	wms_free(doc);
	wms_client_free(x.c);
}

/* Every bound on both sides, the field named; a version 3 struct's bytes
 * past its end are never read. */
static void option_bounds(void **state)
{
	static const struct {
		uint32_t entries, age, bytes;
		const char *field; /* NULL: accepted */
	} cases[] = {
		{ 0, 0, 0, NULL },
		{ 1, 1, WMS_MIN_READ_CACHE_BYTES, NULL },
		{ WMS_MAX_READ_CACHE_ENTRIES, WMS_MAX_READ_CACHE_AGE_MS, WMS_MAX_READ_CACHE_BYTES, NULL },
		{ WMS_MAX_READ_CACHE_ENTRIES + 1, 0, 0, "read_cache.max_entries must be at most 1000000 (got 1000001)" },
		{ 1, WMS_MAX_READ_CACHE_AGE_MS + 1, 0, "read_cache.max_age_ms must be at most 86400000 (got 86400001)" },
		{ 1, 0, WMS_MIN_READ_CACHE_BYTES - 1, "read_cache.max_bytes must be 0 or 65536-1073741824 (got 65535)" },
		{ 1, 0, WMS_MAX_READ_CACHE_BYTES + 1, "read_cache.max_bytes must be 0 or 65536-1073741824 (got 1073741825)" },
		/* off, and still checked */
		{ 0, WMS_MAX_READ_CACHE_AGE_MS + 1, 0, "read_cache.max_age_ms must be at most 86400000 (got 86400001)" },
	};
	wms_client_options *v3;
	wms_client *c;
	wms_error err;
	size_t i;
	fake *t;
	(void)state;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		wms_client_options o = WMS_CLIENT_OPTIONS_INIT;
		o.endpoint = "http://wms.invalid/wms";
		o.transport = fake_transport_new(&t);
		o.read_cache.max_entries = cases[i].entries;
		o.read_cache.max_age_ms = cases[i].age;
		o.read_cache.max_bytes = cases[i].bytes;
		c = NULL;
		if (!cases[i].field) {
			wms_read_cache_snapshot s;
			assert_int_equal(wms_client_new(&c, &o, &err), WMS_OK);
			s = (wms_client_read_cache_get(&s, c), s);
			assert_int_equal(s.max_entries, cases[i].entries);
			if (cases[i].entries)
				assert_int_equal(s.max_age_ms, cases[i].age ? cases[i].age
									: WMS_DEFAULT_READ_CACHE_AGE_MS);
			wms_client_free(c);
		} else {
			assert_int_equal(wms_client_new(&c, &o, &err), WMS_ERR_INVALID_ARG);
			assert_null(c);
			assert_string_equal(err.message, cases[i].field);
		}
	}
	v3 = malloc(sizeof(*v3));
	memset(v3, 0xff, sizeof(*v3));
	assert_int_equal(wms_client_options_init(v3, 3), WMS_OK);
	v3->endpoint = "http://wms.invalid/wms";
	v3->transport = fake_transport_new(&t);
	assert_int_equal(wms_client_new(&c, v3, &err), WMS_OK);
	assert_int_equal(wms_client_read_cache_get(&(wms_read_cache_snapshot){ 0 }, c), WMS_OK);
	wms_client_free(c);
	free(v3);
}

/* ---- allocation failures ------------------------------------------------- */

static count_alloc A;

/* A client holding `prefill` entries, made and filled with nothing failing. */
static fx filled_client(int prefill)
{
	fx x;
	char id[16];
	count_alloc_arm(&A, 0, 0);
	x = cache_client(100, 0, 0, WMS_BREAKER_SCOPE_PER_CLIENT);
	for (int i = 0; i < prefill; i++) {
		snprintf(id, sizeof(id), "ORD-%d", 100 + i);
		read_live(&x, id, "PICKING");
	}
	return x;
}

/* Fail each allocation of a read that stores a new entry in turn: the call
 * answers as the WMS did (or NOMEM from the call itself, never from the
 * store); a failed store keeps nothing and leaks nothing. The 64th entry
 * also grows the hash table: failing that keeps the entry. A stock answer
 * the cache cannot copy out is a miss. */
static void nomem_store_and_serve(void **state)
{
	static const char *const skus[] = { "SKU-A", "SKU-B" };
	const wms_allocator al = count_alloc_hooks(&A);
	long total, n;
	int not_stored = 0;
	(void)state;

	assert_int_equal(wms_set_allocator(&al), WMS_OK);
	for (int grow = 0; grow <= 1; grow++) {
		fx x;
		/* a clean run: how many allocations one new entry's read makes */
		memset(&A, 0, sizeof(A));
		x = filled_client(grow ? 63 : 0);
		count_alloc_arm(&A, 0, 0);
		read_live(&x, "ORD-1", "PICKING");
		total = A.calls;
		wms_client_free(x.c);
		assert_int_equal(A.live, 0);
		for (n = 1; n <= total; n++) {
			wms_read_cache_snapshot before, after;
			wms_status_reply r;
			wms_error err;
			wms_status st;
			x = filled_client(grow ? 63 : 0);
			before = cache_of(&x);
			status_body(body, sizeof(body), "ORD-1", "PICKING");
			script(&x, body);
			count_alloc_arm(&A, n, 0);
			st = wms_get_order_status(&r, x.c, "ORD-1", &err);
			count_alloc_arm(&A, 0, 0);
			after = cache_of(&x);
			if (st != WMS_OK) {
				assert_int_equal(st, WMS_ERR_NOMEM);
				assert_int_equal(after.entries, before.entries);
			} else if (after.entries == before.entries) {
				not_stored++; /* the entry's own allocation failed */
				assert_string_equal(r.order_id, "ORD-1");
				assert_int_equal(r.from_fallback, 0);
			}
			/* the table's growth comes last: failing it keeps the entry */
			if (grow && n == total) {
				assert_int_equal(st, WMS_OK);
				assert_int_equal(after.entries, before.entries + 1);
			}
			wms_client_free(x.c);
			assert_int_equal(A.live, 0);
		}
	}
	assert_int_equal(not_stored, 2);

	/* serving a stock answer: no memory for the copy, a miss */
	{
		fx x;
		wms_stock_reply *r = NULL;
		memset(&A, 0, sizeof(A));
		x = cache_client(4, 0, 0, WMS_BREAKER_SCOPE_PER_CLIENT);
		stock_body(body, sizeof(body), skus, 2, 1);
		script(&x, body);
		assert_int_equal(wms_get_stock_level(&r, x.c, skus, 2, NULL), WMS_OK);
		wms_stock_reply_free(r);
		open_breakers(&x, 1);
		for (n = 1; n <= 2; n++) {
			count_alloc_arm(&A, n, 0);
			assert_int_equal(wms_get_stock_level(&r, x.c, skus, 2, NULL),
					 WMS_ERR_CIRCUIT_OPEN);
			assert_null(r);
		}
		count_alloc_arm(&A, 0, 0);
		assert_int_equal(wms_get_stock_level(&r, x.c, skus, 2, NULL), WMS_OK);
		assert_int_equal(r->from_fallback, 1);
		wms_stock_reply_free(r);
		assert_int_equal(cache_of(&x).misses, 2);
		wms_client_free(x.c);
		assert_int_equal(A.live, 0);
	}
	assert_int_equal(wms_set_allocator(NULL), WMS_OK);
}

/* ---- the hash table ------------------------------------------------------- */

/* The table starts with 64 buckets and doubles each time it holds as many
 * entries as buckets, up to one bucket per allowed entry (the first power of
 * two at or past max_entries); past that, entries are evicted and the table
 * stays. It is not in the snapshot's bytes, so the test reads it from an
 * allocator that counts bytes: what the client holds less the entries'
 * bytes, against what it held with no entries and its first 64 buckets.
 *
 * Entries are numbered in the order stored: ORD-n a GetOrderStatus, every
 * third SKU-n a GetStockLevel of that one SKU (on hand n). */

#define TABLE_PAST 65 /* stored past max_entries in each round */

typedef struct table_fill {
	fx x;
	uint32_t max;
	int first;           /* the first stored this round (those before expired) */
	int stored;          /* stored in all */
	uint64_t evicted;    /* evictions before this round */
	uint64_t most;       /* the most entries held at once */
	long base;           /* bytes held with no entries and 64 buckets */
} table_fill;

/* Static: installed with headers before the client is made; a failed test
 * leaves it installed until count_alloc_teardown. */
static count_alloc T;

/* The buckets a table should have once it has held `most` entries. */
static long want_buckets(uint64_t most, uint32_t max)
{
	long b = 64;
	while (most >= (uint64_t)b && (uint64_t)b < max)
		b *= 2;
	return b;
}

static int nth_is_stock(int n)
{
	return n % 3 == 2;
}

static void nth_key(char *buf, size_t size, int n)
{
	snprintf(buf, size, "%s-%05d", nth_is_stock(n) ? "SKU" : "ORD", n);
}

/* The table holds as many bytes as its buckets, now and after every store. */
static void assert_table(table_fill *f)
{
	wms_read_cache_snapshot s = cache_of(&f->x);
	long grown, want;
	if (s.entries > f->most)
		f->most = s.entries;
	grown = atomic_load(&T.live_bytes) - (long)s.bytes - f->base;
	want = (want_buckets(f->most, f->max) - 64) * (long)sizeof(void *);
	if (grown != want)
		fail_msg("max_entries %u, %d stored (%llu held, %llu at most): the table grew by "
			 "%ld bytes, want %ld (%ld buckets)",
			 f->max, f->stored, (unsigned long long)s.entries,
			 (unsigned long long)f->most, grown, want, want_buckets(f->most, f->max));
}

/* Store the next one, the breaker closed. */
static void store_next(table_fill *f)
{
	int n = f->stored++;
	char key[16];
	nth_key(key, sizeof(key), n);
	if (nth_is_stock(n)) {
		const char *skus[1] = { key };
		wms_stock_reply *r = NULL;
		stock_body(body, sizeof(body), skus, 1, n);
		script(&f->x, body);
		assert_int_equal(wms_get_stock_level(&r, f->x.c, skus, 1, NULL), WMS_OK);
		assert_int_equal(r->from_fallback, 0);
		wms_stock_reply_free(r);
	} else {
		read_live(&f->x, key, "PICKING");
	}
}

/* The breaker open: the n-th served from the cache (nothing sent, its own
 * answer) when `kept`, else refused. */
static void serve_nth(table_fill *f, int n, int kept)
{
	wms_status want = kept ? WMS_OK : WMS_ERR_CIRCUIT_OPEN, st;
	int sends = f->x.t->sends;
	wms_stock_reply *sr = NULL;
	wms_status_reply r;
	wms_error err;
	char key[16];
	const char *skus[1] = { key };

	nth_key(key, sizeof(key), n);
	st = nth_is_stock(n) ? wms_get_stock_level(&sr, f->x.c, skus, 1, &err)
			     : wms_get_order_status(&r, f->x.c, key, &err);
	if (st != want)
		fail_msg("max_entries %u, %d stored: %s %s, want %s", f->max, f->stored, key,
			 wms_strerror(st), kept ? "served from the cache" : "refused");
	assert_int_equal(f->x.t->sends, sends);
	assert_int_equal(err.fallback, kept);
	if (!kept) {
		assert_null(sr);
		return;
	}
	assert_int_equal(err.delivery, WMS_DELIVERY_NOT_SENT);
	if (nth_is_stock(n)) {
		assert_int_equal(sr->count, 1);
		assert_string_equal(sr->levels[0].sku, key);
		assert_int_equal(sr->levels[0].on_hand, n);
		assert_int_equal(sr->from_fallback, 1);
		wms_stock_reply_free(sr);
	} else {
		assert_string_equal(r.order_id, key);
		assert_string_equal(wms_order_state_name(r.state), "PICKING");
		assert_int_equal(r.from_fallback, 1);
	}
}

/* Every one stored so far, oldest first: the last max_entries of this round
 * served, all others refused. Served in the order stored, the use order
 * stays the order stored. */
static void serve_all(table_fill *f)
{
	wms_read_cache_snapshot before = cache_of(&f->x), after;
	int in_round = f->stored - f->first;
	int kept = in_round < (int)f->max ? in_round : (int)f->max;
	open_breakers(&f->x, 1);
	for (int n = 0; n < f->stored; n++)
		serve_nth(f, n, n >= f->stored - kept);
	open_breakers(&f->x, 0);
	after = cache_of(&f->x);
	assert_int_equal(after.entries, kept);
	assert_int_equal(after.hits - before.hits, kept);
	assert_int_equal(after.misses - before.misses, f->stored - kept);
	assert_int_equal(after.evictions, f->evicted + (uint64_t)(in_round - kept));
	assert_int_equal(after.expired, before.expired);
	assert_table(f);
}

/* All held go stale: each looked up is dropped; the table stays. */
static void expire_all(table_fill *f)
{
	wms_read_cache_snapshot before = cache_of(&f->x), after;
	clock_now += (WMS_DEFAULT_READ_CACHE_AGE_MS + 1) * MS;
	open_breakers(&f->x, 1);
	for (int n = f->first; n < f->stored; n++)
		serve_nth(f, n, 0);
	open_breakers(&f->x, 0);
	after = cache_of(&f->x);
	assert_int_equal(after.entries, 0);
	assert_int_equal(after.bytes, 0);
	assert_int_equal(after.expired - before.expired, before.entries);
	assert_int_equal(after.misses - before.misses, f->stored - f->first);
	f->evicted = after.evictions;
	f->first = f->stored;
}

/* Where a round looks up everything: each side of each doubling and of
 * max_entries, and its end. */
static int table_checkpoint(int k, uint32_t max)
{
	static const int at[] = { 63, 64, 65, 127, 128, 129, 255, 256, 257 };
	for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++)
		if (k == at[i])
			return 1;
	return k + 1 == (int)max || k == (int)max || k == (int)max + 1 ||
	       k == (int)max + TABLE_PAST;
}

/* Filled through the first and second doubling (where max_entries allows)
 * to max_entries and TABLE_PAST past it: every entry still held is served
 * from the cache after each doubling, evicted ones are refused, and the
 * table stops at one bucket per allowed entry however many more are
 * stored. All expired, then again on the same client: the table neither
 * grows nor shrinks. max_entries 200 (two doublings, the table past it at
 * 256), 256 (two doublings, then exactly one bucket per entry) and 64 (no
 * doubling at all). */
static void table_grows_to_max_entries(void **state)
{
	static const uint32_t maxes[] = { 200, 256, 64 };
	(void)state;

	for (size_t m = 0; m < sizeof(maxes) / sizeof(maxes[0]); m++) {
		wms_allocator hooks;
		table_fill f;
		memset(&T, 0, sizeof(T));
		T.headers = 1; /* sizes: nothing allocated before is freed in the test */
		hooks = count_alloc_hooks(&T);
		assert_int_equal(wms_set_allocator(&hooks), WMS_OK);
		memset(&f, 0, sizeof(f));
		f.max = maxes[m];
		f.x = cache_client(f.max, 0, 0, WMS_BREAKER_SCOPE_PER_CLIENT);
		/* each request's kind twice, so that the client holds what it
		 * keeps between calls; then none left */
		for (int i = 0; i < 6; i++)
			store_next(&f);
		expire_all(&f);
		f.base = atomic_load(&T.live_bytes);
		for (int round = 1; round <= 2; round++) {
			for (int k = 1; k <= (int)f.max + TABLE_PAST; k++) {
				store_next(&f);
				assert_table(&f);
				if (table_checkpoint(k, f.max))
					serve_all(&f);
			}
			assert_int_equal(cache_of(&f.x).entries, f.max);
			expire_all(&f);
			assert_table(&f);
		}
		wms_client_free(f.x.c);
		assert_int_equal(atomic_load(&T.live), 0);
		assert_int_equal(wms_set_allocator(NULL), WMS_OK);
	}
}

/* ---- threads ---------------------------------------------------------------- */

/* A transport that answers the order id or SKU it was asked for, after a
 * short pause; thread-safe (it keeps nothing). */
static wms_status echo_send(wms_transport *self, const wms_http_request *req,
			    wms_http_response *resp, wms_error *err)
{
	char in[4096], what[WMS_ID_MAX + 1], out[2048];
	const char *p, *tag;
	size_t n = req->body_len < sizeof(in) - 1 ? req->body_len : sizeof(in) - 1;
	struct timespec ts = { 0, 200000 };
	(void)self;
	(void)err;
	memcpy(in, req->body, n);
	in[n] = '\0';
	tag = strcmp(req->operation, "GetOrderStatus") == 0 ? "clientOrderId>" : "sku>";
	p = strstr(in, tag);
	if (!p)
		return WMS_ERR_INTERNAL;
	p += strlen(tag);
	n = strcspn(p, "<");
	assert_true(n <= WMS_ID_MAX);
	memcpy(what, p, n);
	what[n] = '\0';
	if (*tag == 'c') {
		status_body(out, sizeof(out), what, "PICKING");
	} else {
		const char *one = what;
		stock_body(out, sizeof(out), &one, 1, 5);
	}
	nanosleep(&ts, NULL);
	resp->status = 200;
	if (wms_http_response_set_content_type(resp, "text/xml", 8) != WMS_OK)
		return WMS_ERR_NOMEM;
	return wms_http_response_append(resp, out, strlen(out));
}

static void echo_free(wms_transport *self)
{
	free(self);
}

#define THREADS 8
#define ROUNDS 300

static atomic_int stop;

typedef struct reader {
	wms_client *c;
	int id;
	pthread_t thread;
	int ok, live, cached, bad;
} reader;

static void *reader_run(void *arg)
{
	reader *k = arg;
	char id[16], sku[16];
	const char *skus[1] = { sku };
	snprintf(id, sizeof(id), "ORD-%d", k->id);
	snprintf(sku, sizeof(sku), "SKU-%d", k->id);
	for (int i = 0; !atomic_load(&stop) || i < ROUNDS; i++) {
		wms_error err;
		int from;
		if (i % 2) {
			wms_status_reply r;
			if (wms_get_order_status(&r, k->c, id, &err) != WMS_OK ||
			    strcmp(r.order_id, id) != 0) {
				k->bad++;
				continue;
			}
			from = r.from_fallback;
		} else {
			wms_stock_reply *r = NULL;
			if (wms_get_stock_level(&r, k->c, skus, 1, &err) != WMS_OK ||
			    strcmp(r->levels[0].sku, sku) != 0) {
				wms_stock_reply_free(r);
				k->bad++;
				continue;
			}
			from = r->from_fallback;
			wms_stock_reply_free(r);
		}
		k->ok++;
		if (from != err.fallback)
			k->bad++;
		if (from)
			k->cached++;
		else
			k->live++;
	}
	return NULL;
}

/* 8 threads reading (their answers stored) while the breaker flips open
 * and closed and a bulkhead of 4 turns some away: every call is answered,
 * by the WMS or from the cache, never with another thread's answer. */
static void threads_store_and_serve(void **state)
{
	wms_client_options o = WMS_CLIENT_OPTIONS_INIT;
	wms_transport *t = calloc(1, sizeof(*t));
	wms_read_cache_snapshot s;
	reader k[THREADS];
	wms_client *c;
	wms_error err;
	int cached = 0, live = 0;
	(void)state;

	t->version = WMS_TRANSPORT_VERSION;
	t->send = echo_send;
	t->free = echo_free;
	o.endpoint = "http://wms.invalid/wms";
	o.transport = t;
	o.read_cache.max_entries = 2 * THREADS;
	o.bulkhead.max_concurrent_calls = 4;
	assert_int_equal(wms_client_new(&c, &o, &err), WMS_OK);
	/* each thread's two keys stored before any refusal */
	for (int i = 0; i < THREADS; i++) {
		char id[16], sku[16];
		const char *skus[1] = { sku };
		wms_status_reply r;
		wms_stock_reply *sr = NULL;
		snprintf(id, sizeof(id), "ORD-%d", i);
		snprintf(sku, sizeof(sku), "SKU-%d", i);
		assert_int_equal(wms_get_order_status(&r, c, id, NULL), WMS_OK);
		assert_int_equal(wms_get_stock_level(&sr, c, skus, 1, NULL), WMS_OK);
		wms_stock_reply_free(sr);
	}
	for (int i = 0; i < THREADS; i++) {
		memset(&k[i], 0, sizeof(k[i]));
		k[i].c = c;
		k[i].id = i;
		assert_int_equal(pthread_create(&k[i].thread, NULL, reader_run, &k[i]), 0);
	}
	atomic_store(&stop, 0);
	for (int flip = 0; flip < 200; flip++) {
		struct timespec ts = { 0, 1000000 };
		if (flip % 2)
			wms_breaker_reset(wms_client_breaker(c));
		else
			wms_breaker_force_open(wms_client_breaker(c));
		nanosleep(&ts, NULL);
	}
	wms_breaker_reset(wms_client_breaker(c));
	atomic_store(&stop, 1);
	for (int i = 0; i < THREADS; i++) {
		pthread_join(k[i].thread, NULL);
		assert_int_equal(k[i].bad, 0);
		assert_true(k[i].ok >= ROUNDS);
		cached += k[i].cached;
		live += k[i].live;
	}
	s = cache_of(&(fx){ c, NULL });
	assert_int_equal(s.entries, 2 * THREADS);
	assert_int_equal(s.hits, (uint64_t)cached);
	assert_int_equal(s.misses, 0);
	assert_int_equal(s.evictions, 0);
	assert_true(cached > 0);
	assert_true(live > 2 * THREADS); /* stored while others were served */
	print_message("threads: %d live, %d from the cache\n", live, cached);
	wms_client_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(status_served_when_open),
		cmocka_unit_test(per_operation_breakers),
		cmocka_unit_test(stock_served_in_order_only),
		cmocka_unit_test(served_when_bulkhead_full),
		cmocka_unit_test(never_for_writes),
		cmocka_unit_test(expired_not_served),
		cmocka_unit_test(max_entries_both_sides),
		cmocka_unit_test(max_bytes_and_200_skus),
		cmocka_unit_test(cache_before_fallback),
		cmocka_unit_test(off_stores_nothing),
		cmocka_unit_test(health_documents),
		cmocka_unit_test(option_bounds),
		cmocka_unit_test(nomem_store_and_serve),
		cmocka_unit_test_teardown(table_grows_to_max_entries, count_alloc_teardown),
		cmocka_unit_test(threads_store_and_serve),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
