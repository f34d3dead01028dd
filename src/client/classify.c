/* Classification: how a finished call counts for the breaker, and which
 * failures are tried again. Every such rule of the client is here. */
#include "client/client.h"

wms_outcome wms__default_outcome(const wms_error *err, int *record)
{
	*record = 1;
	switch (err->status) {
	case WMS_OK:
		return WMS_OUTCOME_SUCCESS;
	case WMS_ERR_SOAP_FAULT:
		/* Server/Receiver: the WMS is in trouble. Client/Sender and the
		 * envelope-level codes reject the request itself. */
		if (wms__fault_is_request_error(err->fault_code))
			return WMS_OUTCOME_IGNORED;
		return WMS_OUTCOME_FAILURE; /* Server, Receiver, and a fault too broken to say */
	case WMS_ERR_HTTP:
		return err->http_status >= 500 ? WMS_OUTCOME_FAILURE : WMS_OUTCOME_IGNORED;
	case WMS_ERR_CONNECT:
	case WMS_ERR_TIMEOUT:
	case WMS_ERR_TRANSPORT:
	case WMS_ERR_TLS:
	case WMS_ERR_NOT_XML:
	case WMS_ERR_TRUNCATED:
	case WMS_ERR_UNEXPECTED_REPLY:
	case WMS_ERR_TOO_LARGE:
	case WMS_ERR_UNSAFE_XML:
		return WMS_OUTCOME_FAILURE;
	case WMS_ERR_INVALID_ARG:
	case WMS_ERR_NOMEM:
	case WMS_ERR_CIRCUIT_OPEN:
	case WMS_ERR_BULKHEAD_FULL:
	case WMS_ERR_CANCELLED:
	case WMS_ERR_FIXTURE:
	case WMS_ERR_CONFIG:
	case WMS_ERR_INTERNAL:
		break;
	}
	/* Our own trouble, not the WMS's: hand the permit back. */
	*record = 0;
	return WMS_OUTCOME_IGNORED;
}

wms_outcome wms_error_outcome(const wms_error *err)
{
	int record;
	if (!err)
		return WMS_OUTCOME_IGNORED;
	return wms__default_outcome(err, &record);
}

wms_outcome wms__call_outcome(const wms_error *err, wms_error_filter_fn filter, void *payload,
			      int *record)
{
	wms_outcome outcome = wms__default_outcome(err, record);

	if (*record && filter) {
		outcome = filter(err, outcome, payload);
		if (outcome != WMS_OUTCOME_SUCCESS && outcome != WMS_OUTCOME_FAILURE)
			outcome = WMS_OUTCOME_IGNORED;
	}
	return outcome;
}

int wms__retryable(const wms_retry_options *r, wms_status st, wms_outcome outcome, int recorded,
		   wms_delivery delivery)
{
	if (st == WMS_OK || outcome != WMS_OUTCOME_FAILURE || !recorded)
		return 0;
	return !(r->not_sent_only && delivery != WMS_DELIVERY_NOT_SENT);
}
