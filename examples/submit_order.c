/* Submit one order and act on the outcome. Usage: submit_order [ENDPOINT] */
#include <stdio.h>
#include <wms/wms.h>

int main(int argc, char **argv)
{
	wms_client_options opts = WMS_CLIENT_OPTIONS_INIT;
	wms_order_line lines[] = { { "SKU-123", 2 } };
	wms_order order = WMS_ORDER_INIT;
	wms_submit_reply reply;
	wms_client *client;
	wms_error err;
	wms_status st;

	opts.endpoint = argc > 1 ? argv[1] : "http://127.0.0.1:8080/wms";
	opts.timeout_ms = 5000;                       /* the whole call, connect included */
	opts.breaker_options.failure_threshold = 5;   /* 5 failures in a row open it ... */
	opts.breaker_options.open_duration_ms = 30000; /* ... for 30 s, then one probe */
	if (wms_client_new(&client, &opts, &err) != WMS_OK)
		return fprintf(stderr, "client: %s\n", err.message), 2;

	order.order_id = "ORD-1001"; /* the idempotency key: keep it across retries */
	order.ship_to = (wms_address){ "Ada Lovelace", "12 Analytical Way", NULL, "London", NULL,
				       "N1 9GU", "GB" };
	order.lines = lines;
	order.line_count = 1;
	st = wms_submit_order(&reply, client, &order, &err);
	if (st == WMS_OK)
		printf("accepted as %s (%s)%s\n", reply.wms_reference,
		       wms_order_state_name(reply.state), reply.duplicate ? ", already known" : "");
	else if (st == WMS_ERR_CIRCUIT_OPEN) /* nothing sent: keep the order, retry later */
		printf("WMS unavailable: retry in %u ms\n", (unsigned)err.retry_after_ms);
	else if (err.delivery == WMS_DELIVERY_UNKNOWN) /* it may have arrived: same id again */
		printf("%s: resend ORD-1001 (never a new id)\n", wms_status_name(st));
	else
		printf("%s: %s%s%s\n", wms_status_name(st), err.message, err.wms_code[0] ? " / " : "",
		       err.wms_code); /* wms_error_is_retryable(&err) says if resending is safe */
	wms_client_free(client);
	return st == WMS_OK ? 0 : 1;
}
