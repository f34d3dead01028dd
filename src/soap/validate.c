/* Validation of caller input before anything is built or sent. No allocation:
 * every rule is checked in place and the first broken one is reported with
 * the field's name, e.g. "lines[3].quantity: must be 1..1000000 (got 0)". */
#include <stdio.h>
#include <string.h>
#include "soap/soap.h"

#define TEXT_MAX 256u          /* address fields and the cancel reason, bytes */
#define QUANTITY_MAX 1000000u

static int id_char(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       c == '.' || c == '_' || c == ':' || c == '-';
}

/* Ids, references and SKUs: 1-64 bytes of [A-Za-z0-9._:-]. The rule s
 * breaks, ID_OK if none; *at is the offending byte's offset (ID_BAD_CHAR).
 * Apart from id_fail so that a list's items are checked without naming each
 * one ("lines[3].sku") unless it is wrong. */
enum { ID_OK, ID_NULL, ID_EMPTY, ID_LONG, ID_BAD_CHAR };

static int id_rule(const char *s, size_t *at)
{
	size_t i;
	if (!s)
		return ID_NULL;
	for (i = 0; s[i]; i++) {
		if (i == WMS_ID_MAX)
			return ID_LONG;
		if (!id_char((unsigned char)s[i])) {
			*at = i;
			return ID_BAD_CHAR;
		}
	}
	return i ? ID_OK : ID_EMPTY;
}

static wms_status id_fail(int rule, size_t at, const char *s, const char *field, wms_error *err)
{
	switch (rule) {
	case ID_NULL:
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "%s: required (got NULL)", field);
	case ID_LONG:
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "%s: must be 1-%d characters of [A-Za-z0-9._:-] (got %zu bytes)",
				 field, WMS_ID_MAX, strlen(s));
	case ID_BAD_CHAR:
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "%s: must be 1-%d characters of [A-Za-z0-9._:-] "
				 "(byte 0x%02X at offset %zu)",
				 field, WMS_ID_MAX, (unsigned)(unsigned char)s[at], at);
	case ID_EMPTY:
	default:
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "%s: must be 1-%d characters of [A-Za-z0-9._:-] (got an empty string)",
				 field, WMS_ID_MAX);
	}
}

static wms_status check_id(const char *s, const char *field, wms_error *err)
{
	size_t at = 0;
	int rule = id_rule(s, &at);
	return rule == ID_OK ? WMS_OK : id_fail(rule, at, s, field, err);
}

/* check_id for item i of a list, named "<list>[i]<suffix>" only if wrong. */
static wms_status check_item_id(const char *s, const char *list, size_t i, const char *suffix,
				wms_error *err)
{
	char field[64];
	size_t at = 0;
	int rule = id_rule(s, &at);
	if (rule == ID_OK)
		return WMS_OK;
	snprintf(field, sizeof(field), "%s[%zu]%s", list, i, suffix);
	return id_fail(rule, at, s, field, err);
}

/* Free text (address fields, reason): valid UTF-8, at most 256 bytes, no
 * control characters and nothing XML 1.0 cannot carry. `required` rejects
 * NULL and "". */
static wms_status check_text(const char *s, const char *field, int required, wms_error *err)
{
	size_t len, i, n;
	uint32_t cp = 0;
	if (!s || !*s) {
		if (!required)
			return WMS_OK;
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "%s: required (got %s)", field, s ? "an empty string" : "NULL");
	}
	len = strlen(s);
	if (len > TEXT_MAX)
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "%s: must be at most %u bytes (got %zu)", field, TEXT_MAX, len);
	for (i = 0; i < len; i += n) {
		unsigned char c = (unsigned char)s[i];
		n = 1;
		if (c >= 0x20 && c < 0x7F)
			continue; /* printable ASCII: most text, decoded without a call */
		n = wms__utf8_decode((const unsigned char *)s + i, &cp);
		if (!n)
			return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
					 "%s: invalid UTF-8 at byte %zu", field, i);
		if (cp < 0x20 || (cp >= 0x7F && cp <= 0x9F))
			return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
					 "%s: control character U+%04X at byte %zu", field,
					 (unsigned)cp, i);
		if (cp == 0xFFFE || cp == 0xFFFF)
			return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
					 "%s: character U+%04X at byte %zu is not allowed in XML",
					 field, (unsigned)cp, i);
	}
	return WMS_OK;
}

wms_status wms__validate_text(const char *s, const char *field, int secret, wms_error *err)
{
	wms_error local;
	wms_status rc;
	if (!secret)
		return check_text(s, field, 1, err);
	rc = check_text(s, field, 1, &local);
	if (rc != WMS_OK)
		return wms__fail(err, rc, WMS_DELIVERY_NOT_SENT,
				 "%s: must be 1-%u bytes of UTF-8 text without control characters",
				 field, TEXT_MAX);
	return WMS_OK;
}

static wms_status check_address(const wms_address *a, wms_error *err)
{
	wms_status rc;
	if ((rc = check_text(a->name, "ship_to.name", 1, err)) != WMS_OK ||
	    (rc = check_text(a->line1, "ship_to.line1", 1, err)) != WMS_OK ||
	    (rc = check_text(a->line2, "ship_to.line2", 0, err)) != WMS_OK ||
	    (rc = check_text(a->city, "ship_to.city", 1, err)) != WMS_OK ||
	    (rc = check_text(a->region, "ship_to.region", 0, err)) != WMS_OK ||
	    (rc = check_text(a->postal_code, "ship_to.postal_code", 1, err)) != WMS_OK)
		return rc;
	if (!a->country)
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "ship_to.country: required (got NULL)");
	if (!(a->country[0] >= 'A' && a->country[0] <= 'Z' && a->country[1] >= 'A' &&
	      a->country[1] <= 'Z' && a->country[2] == '\0')) {
		char shown[12];
		size_t i;
		/* Echo at most 8 bytes, printable ASCII only. */
		for (i = 0; i < 8 && a->country[i]; i++) {
			unsigned char c = (unsigned char)a->country[i];
			shown[i] = (c >= 0x20 && c < 0x7F && c != '"') ? (char)c : '?';
		}
		strcpy(shown + i, a->country[i] ? "..." : "");
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "ship_to.country: must be 2 uppercase letters, ISO 3166-1 alpha-2 "
				 "(got \"%s\")", shown);
	}
	return WMS_OK;
}

wms_status wms__validate_order(const wms_order *order, wms_error *err)
{
	wms_status rc;
	size_t i;

	if (!order)
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "order: required (got NULL)");
	if (order->version != WMS_ORDER_VERSION)
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "order.version: must be WMS_ORDER_VERSION (%d) (got %u)",
				 WMS_ORDER_VERSION, order->version);
	if ((rc = check_id(order->order_id, "order_id", err)) != WMS_OK)
		return rc;
	if ((rc = check_address(&order->ship_to, err)) != WMS_OK)
		return rc;
	switch (order->priority) {
	case WMS_PRIORITY_STANDARD:
	case WMS_PRIORITY_EXPRESS:
	case WMS_PRIORITY_OVERNIGHT:
		break;
	default:
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "priority: must be STANDARD, EXPRESS or OVERNIGHT (got %d)",
				 (int)order->priority);
	}
	if (order->line_count < 1 || order->line_count > WMS_MAX_LINES)
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "line_count: must be 1..%d (got %zu)", WMS_MAX_LINES,
				 order->line_count);
	if (!order->lines)
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "lines: required (got NULL with line_count %zu)", order->line_count);
	for (i = 0; i < order->line_count; i++) {
		const wms_order_line *l = &order->lines[i];
		if ((rc = check_item_id(l->sku, "lines", i, ".sku", err)) != WMS_OK)
			return rc;
		if (l->quantity < 1 || l->quantity > QUANTITY_MAX)
			return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
					 "lines[%zu].quantity: must be 1..%u (got %lu)", i,
					 QUANTITY_MAX, (unsigned long)l->quantity);
	}
	return WMS_OK;
}

wms_status wms__validate_order_id(const char *order_id, wms_error *err)
{
	return check_id(order_id, "order_id", err);
}

wms_status wms__validate_skus(const char *const *skus, size_t n, wms_error *err)
{
	wms_status rc;
	size_t i;
	if (n < 1 || n > WMS_MAX_SKUS)
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "sku_count: must be 1..%d (got %zu)", WMS_MAX_SKUS, n);
	if (!skus)
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "skus: required (got NULL with sku_count %zu)", n);
	for (i = 0; i < n; i++) {
		if ((rc = check_item_id(skus[i], "skus", i, "", err)) != WMS_OK)
			return rc;
	}
	return WMS_OK;
}

wms_status wms__validate_reason(const char *reason, wms_error *err)
{
	return check_text(reason, "reason", 0, err);
}
