/* Input validation: every rule rejects with INVALID_ARG, delivery NOT_SENT
 * and a message naming the field; the limits themselves are accepted. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include "soap/soap.h"

#define ID64 "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._"
#define TEXT256                                                                                   \
	"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"                        \
	"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"                        \
	"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"                        \
	"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

typedef struct fixture {
	wms_order order;
	wms_order_line lines[WMS_MAX_LINES + 1];
} fixture;

static fixture fx;

/* A valid two-line order. */
static void reset(void)
{
	wms_order o = WMS_ORDER_INIT;
	size_t i;
	memset(&fx, 0, sizeof(fx));
	for (i = 0; i < WMS_MAX_LINES + 1; i++) {
		fx.lines[i].sku = "SKU-1";
		fx.lines[i].quantity = 1;
	}
	o.order_id = "ORD-1";
	o.ship_to.name = "Ada Lovelace";
	o.ship_to.line1 = "1 Main St";
	o.ship_to.city = "London";
	o.ship_to.postal_code = "N1 9GU";
	o.ship_to.country = "GB";
	o.priority = WMS_PRIORITY_EXPRESS;
	o.lines = fx.lines;
	o.line_count = 2;
	fx.order = o;
}

static void expect_invalid(wms_status rc, const wms_error *err, const char *prefix)
{
	assert_int_equal(rc, WMS_ERR_INVALID_ARG);
	assert_int_equal(err->status, WMS_ERR_INVALID_ARG);
	assert_int_equal(err->delivery, WMS_DELIVERY_NOT_SENT);
	if (strncmp(err->message, prefix, strlen(prefix)) != 0)
		fail_msg("message \"%s\" does not start with \"%s\"", err->message, prefix);
	assert_null(strchr(err->message, '\n'));
}

static void valid_order_passes(void **state)
{
	wms_error err;
	(void)state;
	reset();
	wms_error_clear(&err);
	assert_int_equal(wms__validate_order(&fx.order, &err), WMS_OK);
	assert_int_equal(err.status, WMS_OK);
	/* err is optional */
	assert_int_equal(wms__validate_order(&fx.order, NULL), WMS_OK);
}

static void limits_are_accepted(void **state)
{
	static const char utf8[] = "Jos\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9d\x84\x9e"; /* 2/3/4-byte */
	wms_error err;
	(void)state;
	reset();
	fx.order.order_id = ID64;
	fx.order.ship_to.name = TEXT256;
	fx.order.ship_to.line1 = utf8;
	fx.order.ship_to.line2 = "";    /* optional: empty means absent */
	fx.order.ship_to.region = NULL; /* optional */
	fx.order.priority = WMS_PRIORITY_OVERNIGHT;
	fx.order.line_count = WMS_MAX_LINES;
	fx.lines[0].sku = "a";
	fx.lines[0].quantity = 1;
	fx.lines[WMS_MAX_LINES - 1].sku = ID64;
	fx.lines[WMS_MAX_LINES - 1].quantity = 1000000;
	assert_int_equal(wms__validate_order(&fx.order, &err), WMS_OK);
	fx.order.order_id = "a.b_c:d-E9";
	assert_int_equal(wms__validate_order(&fx.order, &err), WMS_OK);
}

/* One broken rule per case, applied to a valid order. */
typedef struct order_case {
	const char *name;
	void (*mutate)(wms_order *o);
	const char *message_prefix;
} order_case;

static void m_version(wms_order *o) { o->version = 2; }
static void m_id_null(wms_order *o) { o->order_id = NULL; }
static void m_id_empty(wms_order *o) { o->order_id = ""; }
static void m_id_long(wms_order *o) { o->order_id = ID64 "x"; }
static void m_id_space(wms_order *o) { o->order_id = "ORD 1"; }
static void m_id_slash(wms_order *o) { o->order_id = "ORD/1"; }
static void m_id_utf8(wms_order *o) { o->order_id = "ORD-\xc3\xa9"; }
static void m_name_null(wms_order *o) { o->ship_to.name = NULL; }
static void m_name_empty(wms_order *o) { o->ship_to.name = ""; }
static void m_name_long(wms_order *o) { o->ship_to.name = TEXT256 "x"; }
static void m_line1_null(wms_order *o) { o->ship_to.line1 = NULL; }
static void m_line2_ctrl(wms_order *o) { o->ship_to.line2 = "Flat 2\nStairs"; }
static void m_city_empty(wms_order *o) { o->ship_to.city = ""; }
static void m_city_bad_utf8(wms_order *o) { o->ship_to.city = "Z\xfcrich"; } /* Latin-1 */
static void m_city_overlong(wms_order *o) { o->ship_to.city = "A\xc0\xaf" "B"; }
static void m_city_surrogate(wms_order *o) { o->ship_to.city = "A\xed\xa0\x80"; }
static void m_city_truncated_seq(wms_order *o) { o->ship_to.city = "A\xe6\x97"; }
static void m_region_tab(wms_order *o) { o->ship_to.region = "North\tWest"; }
static void m_region_c1(wms_order *o) { o->ship_to.region = "North\xc2\x85"; }
static void m_region_del(wms_order *o) { o->ship_to.region = "North\x7f"; }
static void m_region_fffe(wms_order *o) { o->ship_to.region = "x\xef\xbf\xbe"; }
static void m_postal_null(wms_order *o) { o->ship_to.postal_code = NULL; }
static void m_country_null(wms_order *o) { o->ship_to.country = NULL; }
static void m_country_lower(wms_order *o) { o->ship_to.country = "gb"; }
static void m_country_three(wms_order *o) { o->ship_to.country = "GBR"; }
static void m_country_one(wms_order *o) { o->ship_to.country = "G"; }
static void m_country_junk(wms_order *o) { o->ship_to.country = "G\x01\"BRITAIN"; }
static void m_priority(wms_order *o) { o->priority = (wms_priority)3; }
static void m_priority_neg(wms_order *o) { o->priority = (wms_priority)-1; }
static void m_no_lines(wms_order *o) { o->line_count = 0; }
static void m_too_many_lines(wms_order *o) { o->line_count = WMS_MAX_LINES + 1; }
static void m_lines_null(wms_order *o) { o->lines = NULL; }
static void m_qty_zero(wms_order *o) { fx.lines[1].quantity = 0; (void)o; }
static void m_qty_big(wms_order *o) { fx.lines[0].quantity = 1000001; (void)o; }
static void m_sku_null(wms_order *o) { fx.lines[1].sku = NULL; (void)o; }
static void m_sku_empty(wms_order *o) { fx.lines[0].sku = ""; (void)o; }
static void m_sku_long(wms_order *o) { fx.lines[1].sku = ID64 "9"; (void)o; }
static void m_sku_bad_char(wms_order *o) { fx.lines[1].sku = "SKU#1"; (void)o; }

static const order_case order_cases[] = {
	{ "version", m_version, "order.version: must be WMS_ORDER_VERSION (1) (got 2)" },
	{ "order_id NULL", m_id_null, "order_id: required (got NULL)" },
	{ "order_id empty", m_id_empty, "order_id: must be 1-64 characters" },
	{ "order_id 65 bytes", m_id_long, "order_id: must be 1-64 characters of [A-Za-z0-9._:-] (got 65 bytes)" },
	{ "order_id space", m_id_space, "order_id: must be 1-64 characters of [A-Za-z0-9._:-] (byte 0x20 at offset 3)" },
	{ "order_id slash", m_id_slash, "order_id: must be 1-64" },
	{ "order_id non-ASCII", m_id_utf8, "order_id: must be 1-64" },
	{ "name NULL", m_name_null, "ship_to.name: required (got NULL)" },
	{ "name empty", m_name_empty, "ship_to.name: required (got an empty string)" },
	{ "name 257 bytes", m_name_long, "ship_to.name: must be at most 256 bytes (got 257)" },
	{ "line1 NULL", m_line1_null, "ship_to.line1: required" },
	{ "line2 newline", m_line2_ctrl, "ship_to.line2: control character U+000A at byte 6" },
	{ "city empty", m_city_empty, "ship_to.city: required" },
	{ "city Latin-1", m_city_bad_utf8, "ship_to.city: invalid UTF-8 at byte 1" },
	{ "city overlong", m_city_overlong, "ship_to.city: invalid UTF-8 at byte 1" },
	{ "city surrogate", m_city_surrogate, "ship_to.city: invalid UTF-8 at byte 1" },
	{ "city cut sequence", m_city_truncated_seq, "ship_to.city: invalid UTF-8 at byte 1" },
	{ "region tab", m_region_tab, "ship_to.region: control character U+0009" },
	{ "region C1", m_region_c1, "ship_to.region: control character U+0085" },
	{ "region DEL", m_region_del, "ship_to.region: control character U+007F" },
	{ "region U+FFFE", m_region_fffe, "ship_to.region: character U+FFFE" },
	{ "postal_code NULL", m_postal_null, "ship_to.postal_code: required" },
	{ "country NULL", m_country_null, "ship_to.country: required" },
	{ "country lower", m_country_lower, "ship_to.country: must be 2 uppercase letters" },
	{ "country 3", m_country_three,
	  "ship_to.country: must be 2 uppercase letters, ISO 3166-1 alpha-2 (got \"GBR\")" },
	{ "country 1", m_country_one, "ship_to.country: must be 2 uppercase letters" },
	{ "country junk", m_country_junk,
	  "ship_to.country: must be 2 uppercase letters, ISO 3166-1 alpha-2 (got \"G??BRITA...\")" },
	{ "priority 3", m_priority, "priority: must be STANDARD, EXPRESS or OVERNIGHT (got 3)" },
	{ "priority -1", m_priority_neg, "priority: must be" },
	{ "no lines", m_no_lines, "line_count: must be 1..1000 (got 0)" },
	{ "1001 lines", m_too_many_lines, "line_count: must be 1..1000 (got 1001)" },
	{ "lines NULL", m_lines_null, "lines: required" },
	{ "quantity 0", m_qty_zero, "lines[1].quantity: must be 1..1000000 (got 0)" },
	{ "quantity 1000001", m_qty_big, "lines[0].quantity: must be 1..1000000 (got 1000001)" },
	{ "sku NULL", m_sku_null, "lines[1].sku: required (got NULL)" },
	{ "sku empty", m_sku_empty, "lines[0].sku: must be 1-64" },
	{ "sku 65 bytes", m_sku_long, "lines[1].sku: must be 1-64 characters of [A-Za-z0-9._:-] (got 65 bytes)" },
	{ "sku '#'", m_sku_bad_char, "lines[1].sku: must be 1-64 characters of [A-Za-z0-9._:-] (byte 0x23 at offset 3)" },
};

static void every_order_rule_rejects(void **state)
{
	size_t i;
	(void)state;
	for (i = 0; i < sizeof(order_cases) / sizeof(order_cases[0]); i++) {
		wms_error err;
		wms_status rc;
		reset();
		wms_error_clear(&err);
		order_cases[i].mutate(&fx.order);
		rc = wms__validate_order(&fx.order, &err);
		if (rc != WMS_ERR_INVALID_ARG)
			fail_msg("case \"%s\": got %s", order_cases[i].name, wms_status_name(rc));
		expect_invalid(rc, &err, order_cases[i].message_prefix);
		/* and without an error struct */
		assert_int_equal(wms__validate_order(&fx.order, NULL), WMS_ERR_INVALID_ARG);
	}
}

static void null_order_rejects(void **state)
{
	wms_error err;
	(void)state;
	wms_error_clear(&err);
	expect_invalid(wms__validate_order(NULL, &err), &err, "order: required");
}

static void order_id_rules(void **state)
{
	wms_error err;
	(void)state;
	assert_int_equal(wms__validate_order_id("ORD-1", &err), WMS_OK);
	assert_int_equal(wms__validate_order_id(ID64, &err), WMS_OK);
	expect_invalid(wms__validate_order_id(NULL, &err), &err, "order_id: required");
	expect_invalid(wms__validate_order_id("", &err), &err, "order_id: must be 1-64");
	expect_invalid(wms__validate_order_id(ID64 "Z", &err), &err, "order_id: must be 1-64");
	expect_invalid(wms__validate_order_id("a<b", &err), &err,
		       "order_id: must be 1-64 characters of [A-Za-z0-9._:-] (byte 0x3C at offset 1)");
}

static void sku_rules(void **state)
{
	const char *skus[WMS_MAX_SKUS + 1];
	const char *bad[] = { "A", "B", "C D" };
	const char *with_null[] = { "A", NULL };
	wms_error err;
	size_t i;
	(void)state;
	for (i = 0; i < WMS_MAX_SKUS + 1; i++)
		skus[i] = ID64;
	assert_int_equal(wms__validate_skus(skus, 1, &err), WMS_OK);
	assert_int_equal(wms__validate_skus(skus, WMS_MAX_SKUS, &err), WMS_OK);
	expect_invalid(wms__validate_skus(skus, 0, &err), &err, "sku_count: must be 1..200 (got 0)");
	expect_invalid(wms__validate_skus(skus, WMS_MAX_SKUS + 1, &err), &err,
		       "sku_count: must be 1..200 (got 201)");
	expect_invalid(wms__validate_skus(NULL, 2, &err), &err, "skus: required");
	expect_invalid(wms__validate_skus(bad, 3, &err), &err, "skus[2]: must be 1-64");
	expect_invalid(wms__validate_skus(with_null, 2, &err), &err, "skus[1]: required (got NULL)");
}

static void reason_rules(void **state)
{
	wms_error err;
	(void)state;
	assert_int_equal(wms__validate_reason(NULL, &err), WMS_OK);
	assert_int_equal(wms__validate_reason("", &err), WMS_OK);
	assert_int_equal(wms__validate_reason("Customer changed their mind \xe2\x80\x94 refund", &err),
			 WMS_OK);
	assert_int_equal(wms__validate_reason(TEXT256, &err), WMS_OK);
	expect_invalid(wms__validate_reason(TEXT256 "!", &err), &err,
		       "reason: must be at most 256 bytes (got 257)");
	expect_invalid(wms__validate_reason("a\rb", &err), &err, "reason: control character U+000D");
	expect_invalid(wms__validate_reason("\xff", &err), &err, "reason: invalid UTF-8 at byte 0");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(valid_order_passes),
		cmocka_unit_test(limits_are_accepted),
		cmocka_unit_test(every_order_rule_rejects),
		cmocka_unit_test(null_order_rejects),
		cmocka_unit_test(order_id_rules),
		cmocka_unit_test(sku_rules),
		cmocka_unit_test(reason_rules),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
