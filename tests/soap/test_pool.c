/* The pool of XML workspaces a client keeps (src/soap/pool.c), shared by
 * the client's calling threads: of the workspaces given back it keeps at
 * most max_idle (0: 8) and frees the others; a taker gets an idle one, or
 * a new one.
 *
 * What the pool holds is seen through libwms's own allocations: a counting
 * allocator (count_alloc) is installed before anything else, so its live
 * blocks are the pool's and its workspaces'. A workspace taken from the
 * pool costs no allocation, a new one exactly one. Every workspace taken
 * has a request built in it before it goes back, in the other SOAP version
 * than the last time (the builder drops an envelope of the other version),
 * so each one given back holds the same: one envelope, as a probe
 * workspace shows (per_ws); a workspace the pool frees takes it along. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "count_alloc.h"
#include "soap/soap.h"

static count_alloc counter;
static long per_ws; /* blocks a workspace given back holds */

static long live(void)
{
	return atomic_load(&counter.live);
}

static long calls(void)
{
	return atomic_load(&counter.calls);
}

/* GetOrderStatus built in ws, version v; 0 when it went wrong (for the
 * threads, which report instead of asserting). */
static int build_in(wms__xml_ws *ws, wms_soap_version v)
{
	wms__request r = { WMS__OP_GET_ORDER_STATUS, NULL, "ORD-1", NULL, NULL, 0 };
	wms__buf out = { NULL, 0, 0 };
	int ok = wms__build_request_ws(ws, &out, v, &r, NULL, NULL) == WMS_OK &&
		 strstr(out.data, "<wh:clientOrderId>ORD-1</wh:clientOrderId>") != NULL;
	wms__buf_free(&out);
	return ok;
}

/* What one workspace given back holds: a probe's blocks, built once. */
static int measure_per_ws(void **state)
{
	wms__xml_ws *ws;
	long before = live();
	(void)state;
	if (!(ws = wms__calloc(1, sizeof(*ws))) || !build_in(ws, WMS_SOAP_11))
		return -1;
	per_ws = live() - before;
	wms__build_ws_free(ws->build);
	wms__free(ws);
	return live() == before && per_ws > 1 ? 0 : -1;
}

/* The checks of a round, saying which: `made` workspaces made for n taken
 * with `idle` in the pool; `got` blocks live beside the pool's own. */
static void expect_made(long made, size_t n, size_t idle, size_t max, size_t rd)
{
	if (made != (long)(n - idle))
		fail_msg("max %zu, round %zu: %ld workspaces made for %zu taken at once, %zu idle", max,
			 rd, made, n, idle);
}

static void expect_live(long got, long want, size_t max, size_t rd, const char *when)
{
	if (got != want)
		fail_msg("max %zu, round %zu, %s: %ld blocks live, %ld expected (%ld a workspace)", max,
			 rd, when, got, want, per_ws);
}

/* Rounds of n = max, max + 1, max, max + 1 workspaces taken at once on one
 * pool: a round takes new ones only for what the pool lacks (all of them
 * first, then one past max each time), and once all are back the pool
 * holds exactly max of them - the one past max freed with its envelope. */
static const int round_extra[] = { 0, 1, 0, 1 };
#define ROUNDS (sizeof(round_extra) / sizeof(round_extra[0]))

/* One thread at a time: the workspaces kept are the ones the next round
 * takes (the first max given back, the last one freed). */
static void rounds_one_thread(size_t max_idle, size_t max)
{
	wms__xml_ws *ws[9], *kept[9];
	wms__xml_pool *pool;
	size_t i, j, idle = 0;
	long before = live(), base;

	assert_true(max + 1 <= sizeof(ws) / sizeof(ws[0]));
	assert_int_equal(wms__xml_pool_new(&pool, max_idle), WMS_OK);
	base = live();
	for (size_t rd = 0; rd < ROUNDS; rd++) {
		size_t n = max + (size_t)round_extra[rd];
		long c = calls();
		for (i = 0; i < n; i++)
			assert_non_null(ws[i] = wms__xml_pool_take(pool));
		expect_made(calls() - c, n, idle, max, rd);
		/* the first `idle` taken are the ones kept last round, no other */
		for (i = 0; i < n; i++)
			for (j = 0; j < i; j++)
				assert_ptr_not_equal(ws[i], ws[j]);
		for (i = 0; i < idle; i++) {
			for (j = 0; j < idle && kept[j] != ws[i]; j++)
				;
			assert_true(j < idle);
		}
		for (i = 0; i < n; i++)
			assert_true(build_in(ws[i], (wms_soap_version)(rd % 2)));
		expect_live(live() - base, (long)n * per_ws, max, rd, "all taken");
		for (i = 0; i < n; i++) {
			wms__xml_pool_give(pool, ws[i]);
			/* what is given back past max goes, with what it holds */
			expect_live(live() - base, (long)n * per_ws - (i < max ? 0 : per_ws), max, rd,
				    i < max ? "given back up to max" : "given back past max");
		}
		memcpy(kept, ws, max * sizeof(*ws));
		idle = max;
	}
	wms__xml_pool_free(pool);
	assert_int_equal(live(), before); /* every workspace freed with the pool */
}

static void pool_keeps_at_most_max_idle(void **state)
{
	(void)state;
	rounds_one_thread(1, 1);
	rounds_one_thread(3, 3);
	rounds_one_thread(0, 8); /* the default, as a client without max_idle_connections */
}

/* The same from one thread per workspace, all holding theirs at once
 * (a barrier) before they build and give back together. */
typedef struct taker {
	wms__xml_pool *pool;
	pthread_barrier_t *taken, *go;
	wms_soap_version v;
	wms__xml_ws *ws;
	int ok;
} taker;

static void *take_build_give(void *arg)
{
	taker *t = arg;
	t->ws = wms__xml_pool_take(t->pool);
	pthread_barrier_wait(t->taken);
	pthread_barrier_wait(t->go); /* the main thread has counted */
	t->ok = t->ws && build_in(t->ws, t->v);
	wms__xml_pool_give(t->pool, t->ws);
	return NULL;
}

static void rounds_threads(size_t max_idle, size_t max)
{
	pthread_t th[9];
	taker t[9];
	pthread_barrier_t taken, go;
	wms__xml_pool *pool;
	size_t i, j, idle = 0;
	long before = live(), base;

	assert_true(max + 1 <= sizeof(th) / sizeof(th[0]));
	assert_int_equal(wms__xml_pool_new(&pool, max_idle), WMS_OK);
	base = live();
	for (size_t rd = 0; rd < ROUNDS; rd++) {
		size_t n = max + (size_t)round_extra[rd];
		long c = calls();
		assert_int_equal(pthread_barrier_init(&taken, NULL, (unsigned)n + 1), 0);
		assert_int_equal(pthread_barrier_init(&go, NULL, (unsigned)n + 1), 0);
		for (i = 0; i < n; i++) {
			t[i] = (taker){ pool, &taken, &go, (wms_soap_version)(rd % 2), NULL, 0 };
			assert_int_equal(pthread_create(&th[i], NULL, take_build_give, &t[i]), 0);
		}
		pthread_barrier_wait(&taken);
		/* n out at once: new ones only for what the pool lacked */
		expect_made(calls() - c, n, idle, max, rd);
		for (i = 0; i < n; i++)
			for (j = 0; j < i; j++)
				assert_ptr_not_equal(t[i].ws, t[j].ws);
		pthread_barrier_wait(&go);
		for (i = 0; i < n; i++) {
			assert_int_equal(pthread_join(th[i], NULL), 0);
			assert_true(t[i].ok);
		}
		pthread_barrier_destroy(&taken);
		pthread_barrier_destroy(&go);
		/* given back at once, in whatever order: max kept, the rest freed */
		expect_live(live() - base, (long)max * per_ws, max, rd, "all given back");
		idle = max;
	}
	wms__xml_pool_free(pool);
	assert_int_equal(live(), before);
}

static void pool_keeps_at_most_max_idle_across_threads(void **state)
{
	(void)state;
	rounds_threads(3, 3);
	rounds_threads(0, 8);
}

int main(void)
{
	static const struct CMUnitTest tests[] = {
		cmocka_unit_test(pool_keeps_at_most_max_idle),
		cmocka_unit_test(pool_keeps_at_most_max_idle_across_threads),
	};
	wms_allocator hooks;
	/* before anything allocates: every block counted out is counted back */
	hooks = count_alloc_hooks(&counter);
	if (wms_set_allocator(&hooks) != WMS_OK)
		return 1;
	return cmocka_run_group_tests(tests, measure_per_ws, NULL);
}
