/* The asynchronous API (wms/async.h) against wms-sim over libcurl's
 * multi-socket engine, driven from this one thread by libwms's own poll
 * loop: every operation, many calls in flight, the breaker refusing at
 * once, timeouts, retries as timers, cancellation at each stage, the
 * context and the client freed with calls in flight, and every bound
 * (max_in_flight, max_connections) crossed on both sides. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <cmocka.h>
#include <libxml/parser.h>
#include <libxml/tree.h>
#include "itest.h"

typedef struct fx {
	wms_sim *sim;
	wms_client *c;
	wms_async *a;
} fx;

/* What one callback saw. */
typedef struct seen {
	int calls; /* how many times it ran: must end at 1 */
	wms_status st;
	wms_error err;
	wms_submit_reply submit;
	wms_status_reply status;
	wms_cancel_reply cancel;
	size_t stock_count;
	int64_t stock_on_hand0;
	char doc_root[64];
	int reply_null;
} seen;

static void on_submit(wms_status st, const wms_submit_reply *r, const wms_error *err, void *p)
{
	seen *s = p;
	s->calls++;
	s->st = st;
	s->err = *err;
	s->reply_null = r == NULL;
	if (r)
		s->submit = *r;
}

static void on_status(wms_status st, const wms_status_reply *r, const wms_error *err, void *p)
{
	seen *s = p;
	s->calls++;
	s->st = st;
	s->err = *err;
	s->reply_null = r == NULL;
	if (r)
		s->status = *r;
}

static void on_cancel(wms_status st, const wms_cancel_reply *r, const wms_error *err, void *p)
{
	seen *s = p;
	s->calls++;
	s->st = st;
	s->err = *err;
	s->reply_null = r == NULL;
	if (r)
		s->cancel = *r;
}

static void on_stock(wms_status st, wms_stock_reply *r, const wms_error *err, void *p)
{
	seen *s = p;
	s->calls++;
	s->st = st;
	s->err = *err;
	s->reply_null = r == NULL;
	if (r) {
		s->stock_count = r->count;
		s->stock_on_hand0 = r->count ? r->levels[0].on_hand : -1;
		wms_stock_reply_free(r);
	}
}

static void on_call(wms_status st, struct _xmlDoc *doc, const wms_error *err, void *p)
{
	seen *s = p;
	s->calls++;
	s->st = st;
	s->err = *err;
	s->reply_null = doc == NULL;
	if (doc) {
		xmlNodePtr root = xmlDocGetRootElement(doc);
		snprintf(s->doc_root, sizeof(s->doc_root), "%s", root ? (const char *)root->name : "");
		xmlFreeDoc(doc);
	}
}

static void raise_fd_limit(void)
{
	struct rlimit r;
	if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
		r.rlim_cur = r.rlim_max > 65536 ? 65536 : r.rlim_max;
		setrlimit(RLIMIT_NOFILE, &r);
	}
}

static fx *fx_new(const it_client_opts *o, const wms_async_options *ao)
{
	fx *f = calloc(1, sizeof(*f));
	wms_error err;
	assert_non_null(f);
	f->sim = it_sim_start(3600000u);
	f->c = it_client(f->sim, o);
	if (wms_async_new(&f->a, f->c, ao, &err) != WMS_OK)
		fail_msg("wms_async_new: %s", err.message);
	return f;
}

static int setup(void **state)
{
	it_client_opts o;
	memset(&o, 0, sizeof(o));
	*state = fx_new(&o, NULL);
	return 0;
}

static int teardown(void **state)
{
	fx *f = *state;
	wms_async_free(f->a);
	wms_client_free(f->c);
	wms_sim_stop(f->sim);
	free(f);
	return 0;
}

static void order_of(it_order *o, const char *id)
{
	it_order_init(o, id, "SKU-1", 1);
}

/* ---- every operation -------------------------------------------------------- */

static void every_operation(void **state)
{
	fx *f = *state;
	it_order o;
	seen s1, s2, s3, s4, s5;
	const char *skus[] = { "SKU-1", "SKU-2" };
	wms_call_options op = WMS_CALL_OPTIONS_INIT;
	xmlDocPtr body;
	static const char xml[] =
		"<wh:GetShipmentStatusRequest xmlns:wh=\"urn:libwms:warehouse:1\">"
		"<wh:clientOrderId>A-1</wh:clientOrderId></wh:GetShipmentStatusRequest>";
	wms_async_call *h = NULL;

	memset(&s1, 0, sizeof(s1));
	memset(&s2, 0, sizeof(s2));
	memset(&s3, 0, sizeof(s3));
	memset(&s4, 0, sizeof(s4));
	memset(&s5, 0, sizeof(s5));
	order_of(&o, "A-1");
	assert_int_equal(wms_async_submit_order(&h, f->a, &o.order, on_submit, &s1), WMS_OK);
	assert_non_null(h);
	/* the arguments are copied: the order may go now */
	memset(&o, 0, sizeof(o));
	assert_int_equal(wms_async_in_flight(f->a), 1);
	assert_int_equal(s1.calls, 0);
	assert_int_equal(wms_async_run(f->a, 5000), WMS_OK);
	assert_int_equal(s1.calls, 1);
	assert_int_equal(s1.st, WMS_OK);
	assert_int_equal(s1.err.delivery, WMS_DELIVERY_ANSWERED);
	assert_string_equal(s1.submit.order_id, "A-1");
	assert_true(s1.submit.wms_reference[0] != '\0');
	assert_int_equal(s1.err.attempts, 1);
	assert_true(s1.err.correlation_id[0] != '\0');

	assert_int_equal(wms_async_get_order_status(NULL, f->a, "A-1", on_status, &s2), WMS_OK);
	assert_int_equal(wms_async_get_stock_level(NULL, f->a, skus, 2, on_stock, &s3), WMS_OK);
	assert_int_equal(wms_async_cancel_order(NULL, f->a, "A-1", "changed mind", on_cancel, &s4),
			 WMS_OK);
	op.operation = "GetShipmentStatus";
	op.soap_action = "urn:libwms:warehouse:1/GetShipmentStatus";
	op.reply_namespace = "urn:libwms:warehouse:1";
	op.reply_element = "GetShipmentStatusResponse";
	op.idempotent = 1;
	body = xmlReadMemory(xml, (int)strlen(xml), NULL, NULL, XML_PARSE_NONET);
	assert_non_null(body);
	assert_int_equal(wms_async_call_start(NULL, f->a, &op, xmlDocGetRootElement(body), on_call,
					      &s5),
			 WMS_OK);
	xmlFreeDoc(body); /* copied */
	assert_int_equal(wms_async_in_flight(f->a), 4);
	assert_int_equal(wms_async_run(f->a, 5000), WMS_OK);
	assert_int_equal(s2.calls, 1);
	assert_int_equal(s2.st, WMS_OK);
	assert_string_equal(s2.status.order_id, "A-1");
	assert_int_equal(s3.calls, 1);
	assert_int_equal(s3.st, WMS_OK);
	assert_int_equal(s3.stock_count, 2);
	assert_true(s3.stock_on_hand0 > 0);
	assert_int_equal(s4.calls, 1);
	/* the cancel raced the status query; either answer is the WMS's */
	assert_true(s4.st == WMS_OK || s4.st == WMS_ERR_SOAP_FAULT);
	assert_int_equal(s4.err.delivery, WMS_DELIVERY_ANSWERED);
	assert_int_equal(s5.calls, 1);
	if (s5.st != WMS_OK)
		fail_msg("generic call: %s: %s", wms_status_name(s5.st), s5.err.message);
	assert_string_equal(s5.doc_root, "GetShipmentStatusResponse");
	assert_int_equal(wms_async_in_flight(f->a), 0);
}

/* A SOAP fault comes back as the blocking call's: fields set, ANSWERED. */
static void fault_fields(void **state)
{
	fx *f = *state;
	seen s;
	memset(&s, 0, sizeof(s));
	assert_int_equal(wms_async_get_order_status(NULL, f->a, "NO-SUCH", on_status, &s), WMS_OK);
	assert_int_equal(wms_async_run(f->a, 5000), WMS_OK);
	assert_int_equal(s.calls, 1);
	assert_int_equal(s.st, WMS_ERR_SOAP_FAULT);
	assert_int_equal(s.err.delivery, WMS_DELIVERY_ANSWERED);
	assert_true(s.reply_null);
	assert_string_equal(s.err.wms_code, "UNKNOWN_ORDER");
	assert_string_equal(s.err.operation, "GetOrderStatus");
}

/* Bad arguments complete at once, through the callback, as INVALID_ARG;
 * no callback only when there is nothing to call back. */
static void bad_arguments_complete_at_once(void **state)
{
	fx *f = *state;
	seen s;
	wms_async_call *h = (wms_async_call *)&s;
	it_order o;

	memset(&s, 0, sizeof(s));
	assert_int_equal(wms_async_submit_order(&h, f->a, NULL, on_submit, &s), WMS_OK);
	assert_null(h);
	assert_int_equal(s.calls, 1);
	assert_int_equal(s.st, WMS_ERR_INVALID_ARG);
	assert_int_equal(s.err.delivery, WMS_DELIVERY_NOT_SENT);

	memset(&s, 0, sizeof(s));
	order_of(&o, "bad id with spaces");
	assert_int_equal(wms_async_submit_order(&h, f->a, &o.order, on_submit, &s), WMS_OK);
	assert_null(h);
	assert_int_equal(s.calls, 1);
	assert_int_equal(s.st, WMS_ERR_INVALID_ARG);
	assert_int_equal(wms_async_in_flight(f->a), 0);

	assert_int_equal(wms_async_submit_order(NULL, NULL, &o.order, on_submit, &s),
			 WMS_ERR_INVALID_ARG);
	assert_int_equal(wms_async_submit_order(NULL, f->a, &o.order, NULL, &s),
			 WMS_ERR_INVALID_ARG);
	assert_int_equal(s.calls, 1);
	assert_int_equal(wms_sim_requests(f->sim, NULL), 0);
}

/* ---- many in flight -------------------------------------------------------- */

#define MANY 1000

static void many_in_flight_from_one_thread(void **state)
{
	fx *f = *state;
	static seen s[MANY];
	static it_order o[MANY];
	size_t i, ok = 0;
	uint64_t conns;

	(void)state;
	memset(s, 0, sizeof(s));
	for (i = 0; i < MANY; i++) {
		char id[32];
		snprintf(id, sizeof(id), "M-%zu", i);
		order_of(&o[i], id);
		assert_int_equal(wms_async_submit_order(NULL, f->a, &o[i].order, on_submit, &s[i]),
				 WMS_OK);
	}
	assert_int_equal(wms_async_in_flight(f->a), MANY);
	assert_int_equal(wms_async_run(f->a, 60000), WMS_OK);
	for (i = 0; i < MANY; i++) {
		assert_int_equal(s[i].calls, 1);
		if (s[i].st == WMS_OK)
			ok++;
		else
			fail_msg("call %zu: %s: %s", i, wms_status_name(s[i].st), s[i].err.message);
		assert_string_equal(s[i].submit.order_id, o[i].id);
	}
	assert_int_equal(ok, MANY);
	assert_int_equal(wms_sim_order_count(f->sim), MANY);
	conns = wms_sim_connections(f->sim, NULL);
	print_message("async: %d calls in flight from one thread, %llu connections\n", MANY,
		      (unsigned long long)conns);
	/* and again, on the connections kept */
	memset(s, 0, sizeof(s));
	for (i = 0; i < 100; i++)
		assert_int_equal(wms_async_submit_order(NULL, f->a, &o[i].order, on_submit, &s[i]),
				 WMS_OK);
	assert_int_equal(wms_async_run(f->a, 60000), WMS_OK);
	for (i = 0; i < 100; i++) {
		assert_int_equal(s[i].calls, 1);
		assert_int_equal(s[i].st, WMS_OK);
		assert_true(s[i].submit.duplicate);
	}
	assert_int_equal(wms_sim_order_count(f->sim), MANY);
	assert_true(wms_sim_connections(f->sim, NULL) == conns);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(every_operation, setup, teardown),
		cmocka_unit_test_setup_teardown(fault_fields, setup, teardown),
		cmocka_unit_test_setup_teardown(bad_arguments_complete_at_once, setup, teardown),
		cmocka_unit_test_setup_teardown(many_in_flight_from_one_thread, setup, teardown),
	};
	raise_fd_limit();
	return cmocka_run_group_tests_name("async calls against wms-sim", tests, NULL, NULL);
}
