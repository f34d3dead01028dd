/*
 * Fuzz harness: the reply parser, wms__parse_reply, for the four operations.
 *
 * Input: one selector byte, then the reply body.
 *   bits 0-1  operation (SubmitOrder, GetOrderStatus, CancelOrder, GetStockLevel)
 *   bits 2-4  Content-Type: see content_types[]; 7 = the body's first line
 *             (up to '\n') is the Content-Type, the rest the body
 *   bit 5     parse twice: same status, error and reply
 *   bit 6     parse again with out and err NULL: same status
 *   bit 7     size cap = the body's length (accepted), then one byte less
 *             (must be WMS_ERR_TOO_LARGE, before any parsing)
 * Seed files are bodies: each is replayed under 4 operations x 5 types.
 */
#include <string.h>
#include "fuzz.h"

static const char *const content_types[7] = {
	NULL,
	"text/xml; charset=utf-8",
	"application/soap+xml; charset=utf-8; action=\"urn:libwms:warehouse:1/SubmitOrder\"",
	"text/xml; charset=ISO-8859-1",
	"text/html; charset=utf-8",
	"text/xml",
	"application/soap+xml;charset=\"UTF-16\"",
};

#define CT_FROM_INPUT 7
#define CT_MAX 256

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_count_allocations();
	wms__xml_init();
	fuzz_watch_libxml2_errors();
	return 0;
}

static void one(const uint8_t *data, size_t size)
{
	char ct_buf[CT_MAX + 1];
	const char *body, *ct;
	size_t len;
	unsigned sel, ct_index;
	wms__op op;

	if (size < 1)
		return;
	sel = data[0];
	op = (wms__op)(sel & 3u);
	ct_index = (sel >> 2) & 7u;
	body = (const char *)data + 1;
	len = size - 1;
	if (ct_index == CT_FROM_INPUT) {
		const char *nl = memchr(body, '\n', len);
		size_t n = nl ? (size_t)(nl - body) : len;
		if (n > CT_MAX)
			n = CT_MAX;
		memcpy(ct_buf, body, n);
		ct_buf[n] = '\0';
		ct = ct_buf;
		if (nl) {
			len -= (size_t)(nl + 1 - body);
			body = nl + 1;
		} else {
			body += len;
			len = 0;
		}
	} else {
		ct = content_types[ct_index];
	}
	fuzz_parse_checked(op, body, len, ct, (sel & 0x80u) && len ? len : 0,
			   ((sel & 0x20u) ? FUZZ_PARSE_TWICE : 0u) |
				   ((sel & 0x40u) ? FUZZ_PARSE_NULL_OUT : 0u),
			   NULL);
	if ((sel & 0x80u) && len > 1)
		fuzz_parse_checked(op, body, len, ct, len - 1, 0, NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_run_leak_checked(one, data, size);
	return 0;
}

int fuzz_seed_variant(size_t i, const uint8_t *seed, size_t n, fuzz_bytes *out)
{
	uint8_t sel;
	if (i >= 4 * 5)
		return 0;
	sel = (uint8_t)((i & 3u) | ((i / 4) << 2));
	fuzz_bytes_reset(out);
	fuzz_bytes_add(out, &sel, 1);
	fuzz_bytes_add(out, seed, n);
	return 1;
}

int fuzz_builtin_seed(size_t i, fuzz_bytes *out)
{
	/* The Content-Type parser, through selector value 7 << 2. */
	static const char *const cts[] = {
		"text/xml; Charset=\"iso-8859-1\"; action=x\n",
		"text/html\n",
		"TEXT/HTML;charset=utf-8\n",
		"application/soap+xml; charset=; action=\"a;charset=latin1\"\n",
	};
	static const char body[] =
		"<?xml version=\"1.0\"?><soap:Envelope xmlns:soap=\"http://schemas.xmlsoap.org/soap/"
		"envelope/\" xmlns:wh=\"urn:libwms:warehouse:1\"><soap:Body><wh:CancelOrderResponse>"
		"<wh:clientOrderId>ORD-\xe9</wh:clientOrderId><wh:state>CANCELLED</wh:state>"
		"<wh:alreadyCancelled>false</wh:alreadyCancelled></wh:CancelOrderResponse></soap:Body>"
		"</soap:Envelope>";
	uint8_t sel = (uint8_t)(WMS__OP_CANCEL_ORDER | (CT_FROM_INPUT << 2));
	if (i >= sizeof(cts) / sizeof(cts[0]))
		return 0;
	fuzz_bytes_reset(out);
	fuzz_bytes_add(out, &sel, 1);
	fuzz_bytes_add(out, cts[i], strlen(cts[i]));
	fuzz_bytes_add(out, body, sizeof(body) - 1);
	return 1;
}
