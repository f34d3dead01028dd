/*
 * The generic call (wms/call.h) against wms-sim over HTTP: GetShipmentStatus,
 * an operation of the WSDL that libwms has no typed call for, in SOAP 1.1 and
 * 1.2; with per-operation breakers it gets a breaker of its own that the
 * sim's faults open while SubmitOrder's stays closed, and a generic call
 * named after a typed operation shares that operation's breaker. A recorded
 * exchange replays through wms_call_bytes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <libxml/tree.h>
#include "itest.h"
#include "wms/call.h"
#include "wms/curl.h"
#include "wms/fixture.h"

#define WH_NS "urn:libwms:warehouse:1"
#define THRESHOLD 3u

typedef struct fx {
	wms_sim *sim;
	wms_client *c;
} fx;

static wms_client *per_op_client(const wms_sim *sim, wms_soap_version v, wms_transport *t)
{
	it_client_opts o;
	memset(&o, 0, sizeof(o));
	o.soap_version = v;
	o.failure_threshold = THRESHOLD;
	o.open_duration_ms = 600000; /* stays open for the test */
	o.breaker_scope = WMS_BREAKER_SCOPE_PER_OPERATION;
	o.transport = t;
	return it_client(sim, &o);
}

static int setup(void **state)
{
	fx *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	f->sim = it_sim_start(3600000u); /* states move only with wms_sim_advance_clock */
	f->c = per_op_client(f->sim, WMS_SOAP_11, NULL);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fx *f = *state;
	wms_client_free(f->c);
	wms_sim_stop(f->sim);
	free(f);
	return 0;
}

static wms_call_options ship_call(void)
{
	wms_call_options o = WMS_CALL_OPTIONS_INIT;
	o.operation = "GetShipmentStatus";
	o.soap_action = "urn:libwms:warehouse:1/GetShipmentStatus";
	o.reply_namespace = WH_NS;
	o.reply_element = "GetShipmentStatusResponse";
	o.idempotent = 1;
	return o;
}

/* GetShipmentStatus for one order; the status, the reply in *out. */
static wms_status ship_status(xmlDocPtr *out, wms_client *c, const char *order_id, wms_error *err)
{
	wms_call_options op = ship_call();
	char body[256];
	int n = snprintf(body, sizeof(body),
			 "<wh:GetShipmentStatusRequest xmlns:wh=\"" WH_NS "\"><wh:clientOrderId>%s"
			 "</wh:clientOrderId></wh:GetShipmentStatusRequest>", order_id);
	assert_true(n > 0 && (size_t)n < sizeof(body));
	return wms_call_bytes(out, c, &op, body, (size_t)n, err);
}

/* The text of the reply's child `name`, or NULL when it has none; freed with xmlFree. */
static char *field(xmlDocPtr reply, const char *name)
{
	xmlNodePtr root = xmlDocGetRootElement(reply), n;
	for (n = root ? root->children : NULL; n; n = n->next)
		if (n->type == XML_ELEMENT_NODE && strcmp((const char *)n->name, name) == 0 &&
		    n->ns && strcmp((const char *)n->ns->href, WH_NS) == 0)
			return (char *)xmlNodeGetContent(n);
	return NULL;
}

static void expect_field(xmlDocPtr reply, const char *name, const char *want)
{
	char *v = field(reply, name);
	if (!want) {
		if (v)
			fail_msg("<%s> is '%s', expected none", name, v);
		return;
	}
	if (!v)
		fail_msg("no <%s> in the reply", name);
	assert_string_equal(v, want);
	xmlFree(v);
}

static void expect_shipment(wms_client *c, const char *order_id, const char *state,
			    const char *carrier, const char *tracking)
{
	xmlDocPtr reply = NULL;
	xmlNodePtr root;
	wms_error err;

	if (ship_status(&reply, c, order_id, &err) != WMS_OK)
		fail_msg("%s: %s", wms_status_name(err.status), err.message);
	assert_int_equal(err.delivery, WMS_DELIVERY_ANSWERED);
	assert_string_equal(err.operation, "GetShipmentStatus");
	root = xmlDocGetRootElement(reply);
	assert_string_equal((const char *)root->name, "GetShipmentStatusResponse");
	assert_non_null(root->ns);
	assert_string_equal((const char *)root->ns->href, WH_NS);
	expect_field(reply, "clientOrderId", order_id);
	expect_field(reply, "state", state);
	expect_field(reply, "carrier", carrier);
	expect_field(reply, "trackingNumber", tracking);
	xmlFreeDoc(reply);
}

/* An order just submitted is NOT_SHIPPED; once the sim's clock has moved it
 * to SHIPPED, IN_TRANSIT with the carrier and tracking number its id gives
 * (examples/sim/README.md); an unknown one is the sim's UNKNOWN_ORDER fault.
 * SOAP 1.1 and 1.2; the operation has a breaker of its own. */
static void shipment_status(void **state)
{
	fx *f = *state;
	wms_breaker_snapshot snap;
	xmlDocPtr reply = NULL;
	wms_error err;
	wms_breaker *b;

	assert_int_equal(it_submit(f->c, "SHIP-1", "SKU-1", 1, NULL, &err), WMS_OK);
	for (int v = 0; v < 2; v++) {
		wms_client *c = v ? per_op_client(f->sim, WMS_SOAP_12, NULL) : f->c;
		expect_shipment(c, "SHIP-1", "NOT_SHIPPED", NULL, NULL);
		if (c != f->c)
			wms_client_free(c);
	}
	wms_sim_advance_clock(f->sim, 5u * 3600000u); /* RECEIVED ... SHIPPED */
	for (int v = 0; v < 2; v++) {
		wms_client *c = v ? per_op_client(f->sim, WMS_SOAP_12, NULL) : f->c;
		expect_shipment(c, "SHIP-1", "IN_TRANSIT", "UPS", "UPS-738255E6CF205DA5");
		if (c != f->c)
			wms_client_free(c);
	}
	assert_int_equal(ship_status(&reply, f->c, "SHIP-NOPE", &err), WMS_ERR_SOAP_FAULT);
	assert_null(reply);
	assert_string_equal(err.wms_code, "UNKNOWN_ORDER");
	assert_int_equal(err.delivery, WMS_DELIVERY_ANSWERED);
	assert_int_equal(err.http_status, 500);
	assert_int_equal(wms_sim_requests(f->sim, "GetShipmentStatus"), 5);

	b = wms_client_breaker_for(f->c, "GetShipmentStatus");
	assert_non_null(b);
	wms_breaker_snapshot_get(&snap, b);
	assert_string_equal(snap.name, "wms.GetShipmentStatus");
	/* two answers and a Client fault, which is no failure of the WMS */
	assert_int_equal(snap.successes, 2);
	assert_int_equal(snap.failures, 0);
	assert_ptr_not_equal(b, wms_client_breaker_for(f->c, "SubmitOrder"));
}

/* The sim failing GetShipmentStatus alone (Server faults, then an outage of
 * HTML 503 pages) opens that operation's breaker after THRESHOLD failures;
 * later calls never reach the sim; SubmitOrder's breaker stays CLOSED and
 * its calls go through. */
static void own_breaker_opens(void **state)
{
	static const wms_sim_fault faults[] = { WMS_SIM_FAULT_SERVER, WMS_SIM_FAULT_HTTP_503 };
	fx *f = *state;
	xmlDocPtr reply = NULL;
	wms_error err;
	char id[32];

	for (size_t k = 0; k < sizeof(faults) / sizeof(faults[0]); k++) {
		wms_client *c = per_op_client(f->sim, WMS_SOAP_11, NULL);
		wms_breaker *ship, *submit;
		uint64_t before = wms_sim_requests(f->sim, "GetShipmentStatus");

		assert_int_equal(wms_sim_set_fault(f->sim, "GetShipmentStatus", faults[k], 0),
				 WMS_SIM_OK);
		snprintf(id, sizeof(id), "OUT-%zu", k);
		assert_int_equal(it_submit(c, id, "SKU-2", 1, NULL, &err), WMS_OK);
		for (unsigned i = 0; i < THRESHOLD; i++) {
			wms_status st = ship_status(&reply, c, id, &err);
			assert_int_equal(st, k == 0 ? WMS_ERR_SOAP_FAULT : WMS_ERR_HTTP);
			assert_null(reply);
		}
		assert_int_equal(ship_status(&reply, c, id, &err), WMS_ERR_CIRCUIT_OPEN);
		assert_int_equal(err.delivery, WMS_DELIVERY_NOT_SENT);
		assert_int_equal(wms_sim_requests(f->sim, "GetShipmentStatus") - before, THRESHOLD);
		ship = wms_client_breaker_for(c, "GetShipmentStatus");
		submit = wms_client_breaker_for(c, "SubmitOrder");
		assert_int_equal(wms_breaker_state_get(ship), WMS_BREAKER_STATE_OPEN);
		assert_int_equal(wms_breaker_state_get(submit), WMS_BREAKER_STATE_CLOSED);
		snprintf(id, sizeof(id), "OUT-%zu-b", k);
		assert_int_equal(it_submit(c, id, "SKU-2", 1, NULL, &err), WMS_OK);
		assert_int_equal(wms_breaker_state_get(submit), WMS_BREAKER_STATE_CLOSED);
		wms_client_free(c);
		wms_sim_clear_faults(f->sim);
	}
}

/* A generic call named "GetOrderStatus" is guarded by the typed call's
 * breaker: no breaker is added, both calls count on it, and the generic
 * calls' failures open it for the typed call too. */
static void typed_name_shares_breaker(void **state)
{
	static const char body[] = "<GetOrderStatusRequest xmlns=\"" WH_NS "\"><clientOrderId>"
				   "SHARE-1</clientOrderId></GetOrderStatusRequest>";
	fx *f = *state;
	wms_call_options op = WMS_CALL_OPTIONS_INIT;
	wms_breaker *list[16], *typed;
	wms_breaker_snapshot snap;
	wms_status_reply sr;
	xmlDocPtr reply = NULL;
	wms_error err;
	size_t n = wms_client_breakers(list, 16, f->c);

	op.operation = "GetOrderStatus";
	op.soap_action = "urn:libwms:warehouse:1/GetOrderStatus";
	op.reply_namespace = WH_NS;
	op.reply_element = "GetOrderStatusResponse";
	op.idempotent = 1;
	assert_int_equal(it_submit(f->c, "SHARE-1", "SKU-3", 1, NULL, &err), WMS_OK);
	assert_int_equal(wms_get_order_status(&sr, f->c, "SHARE-1", &err), WMS_OK);
	assert_int_equal(wms_call_bytes(&reply, f->c, &op, body, strlen(body), &err), WMS_OK);
	expect_field(reply, "wmsReference", sr.wms_reference);
	xmlFreeDoc(reply);
	assert_int_equal(wms_client_breakers(list, 16, f->c), n);
	typed = wms_client_breaker_for(f->c, "GetOrderStatus");
	wms_breaker_snapshot_get(&snap, typed);
	assert_string_equal(snap.name, "wms.GetOrderStatus");
	assert_int_equal(snap.successes, 2);

	assert_int_equal(wms_sim_set_fault(f->sim, "GetOrderStatus", WMS_SIM_FAULT_SERVER, 0),
			 WMS_SIM_OK);
	for (unsigned i = 0; i < THRESHOLD; i++)
		assert_int_equal(wms_call_bytes(&reply, f->c, &op, body, strlen(body), &err),
				 WMS_ERR_SOAP_FAULT);
	assert_int_equal(wms_breaker_state_get(typed), WMS_BREAKER_STATE_OPEN);
	assert_int_equal(wms_get_order_status(&sr, f->c, "SHARE-1", &err), WMS_ERR_CIRCUIT_OPEN);
	assert_int_equal(wms_breaker_state_get(wms_client_breaker_for(f->c, "GetShipmentStatus")),
			 WMS_BREAKER_STATE_CLOSED);
	wms_sim_clear_faults(f->sim);
}

static int name_file(char *buf, size_t size, unsigned index, const char *operation,
		     void *payload)
{
	(void)index;
	(void)operation;
	(void)payload;
	return snprintf(buf, size, "shipment.xml") < (int)size ? 0 : -1;
}

/* Recorded from the sim with the record transport, the exchange replays
 * through wms_call_bytes with no sim; another body is WMS_ERR_FIXTURE with
 * a diff naming the difference. */
static void record_and_replay(void **state)
{
	fx *f = *state;
	wms_record_options ro = WMS_RECORD_OPTIONS_INIT;
	wms_replay_options po = WMS_REPLAY_OPTIONS_INIT;
	wms_transport *curl = NULL, *rec = NULL, *replay = NULL;
	/* registered for it_tmp_cleanup; the recording replaces it */
	char *dir = strdup(it_tmp_file("shipment.xml", ""));
	xmlDocPtr reply = NULL;
	wms_client *c;
	wms_error err;

	assert_non_null(dir);
	*strrchr(dir, '/') = '\0';
	assert_int_equal(it_submit(f->c, "REC-1", "SKU-4", 1, NULL, &err), WMS_OK);
	assert_int_equal(wms_curl_transport_new(&curl), WMS_OK);
	ro.directory = dir;
	ro.name = name_file;
	assert_int_equal(wms_record_transport_new(&rec, curl, &ro, &err), WMS_OK);
	c = per_op_client(f->sim, WMS_SOAP_11, rec);
	expect_shipment(c, "REC-1", "NOT_SHIPPED", NULL, NULL);
	assert_int_equal(wms_record_transport_written(rec), 1);
	wms_client_free(c);

	po.directory = dir;
	assert_int_equal(wms_replay_transport_new(&replay, &po, &err), WMS_OK);
	c = per_op_client(f->sim, WMS_SOAP_11, replay);
	wms_sim_stop(f->sim); /* nothing answers but the file */
	f->sim = NULL;
	expect_shipment(c, "REC-1", "NOT_SHIPPED", NULL, NULL);
	assert_int_equal(wms_replay_transport_hits(replay), 1);
	assert_int_equal(ship_status(&reply, c, "REC-2", &err), WMS_ERR_FIXTURE);
	assert_int_equal(err.delivery, WMS_DELIVERY_NOT_SENT);
	assert_non_null(strstr(err.message, "GetShipmentStatus request matches no fixture"));
	assert_non_null(strstr(err.message, "-\"REC-1\" +\"REC-2\""));
	assert_null(reply);
	wms_client_free(c);
	free(dir);
	it_tmp_cleanup();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(shipment_status, setup, teardown),
		cmocka_unit_test_setup_teardown(own_breaker_opens, setup, teardown),
		cmocka_unit_test_setup_teardown(typed_name_shares_breaker, setup, teardown),
		cmocka_unit_test_setup_teardown(record_and_replay, setup, teardown),
	};
	return cmocka_run_group_tests_name("generic call against wms-sim", tests, NULL, NULL);
}
