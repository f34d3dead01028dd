/* wmsctl: exit codes, error lines, and output that is safe to print. */
#include <string.h>
#include "util/json.h"
#include "wmsctl.h"

/* A fault the WMS raised about itself (resending may help), as opposed to
 * one rejecting the request: the library's own verdict. */
int ctl_fault_is_server(const wms_error *err)
{
	return wms_error_is_retryable(err);
}

int ctl_exit_code(wms_status st, const wms_error *err)
{
	switch (st) {
	case WMS_OK:
		return CTL_EXIT_OK;
	case WMS_ERR_NOMEM:
	case WMS_ERR_INTERNAL:
		return CTL_EXIT_INTERNAL;
	case WMS_ERR_INVALID_ARG:
	case WMS_ERR_CONFIG:
		return CTL_EXIT_USAGE;
	case WMS_ERR_CIRCUIT_OPEN:
	case WMS_ERR_BULKHEAD_FULL:
		return CTL_EXIT_CIRCUIT_OPEN;
	case WMS_ERR_CONNECT:
	case WMS_ERR_TLS:
		return CTL_EXIT_NOT_SENT;
	case WMS_ERR_TIMEOUT:
	case WMS_ERR_TRANSPORT:
		return CTL_EXIT_UNKNOWN;
	case WMS_ERR_CANCELLED:
		return err && err->delivery == WMS_DELIVERY_NOT_SENT ? CTL_EXIT_NOT_SENT
								     : CTL_EXIT_UNKNOWN;
	case WMS_ERR_SOAP_FAULT:
		/* Client, Sender, and the envelope-level codes (VersionMismatch,
		 * MustUnderstand, ...) all reject the request itself. */
		return ctl_fault_is_server(err) ? CTL_EXIT_SERVER : CTL_EXIT_REJECTED;
	case WMS_ERR_HTTP:
		return CTL_EXIT_SERVER;
	case WMS_ERR_NOT_XML:
	case WMS_ERR_TRUNCATED:
	case WMS_ERR_UNEXPECTED_REPLY:
	case WMS_ERR_TOO_LARGE:
	case WMS_ERR_UNSAFE_XML:
		return CTL_EXIT_BAD_REPLY;
	case WMS_ERR_FIXTURE:
		return CTL_EXIT_FIXTURE;
	}
	return CTL_EXIT_INTERNAL; /* a status newer than this wmsctl */
}

const char *ctl_breaker_outcome(wms_status st, const wms_error *err)
{
	switch (st) {
	case WMS_OK:
		return "ok";
	case WMS_ERR_CIRCUIT_OPEN:
	case WMS_ERR_BULKHEAD_FULL:
	case WMS_ERR_CANCELLED:
		return NULL;
	case WMS_ERR_SOAP_FAULT:
		return wms_error_outcome(err) == WMS_OUTCOME_FAILURE ? "fail" : "ignore";
	case WMS_ERR_HTTP:
		return err->http_status >= 500 ? "fail" : "ignore";
	case WMS_ERR_CONNECT:
	case WMS_ERR_TIMEOUT:
	case WMS_ERR_TRANSPORT:
	case WMS_ERR_TLS:
	case WMS_ERR_NOT_XML:
	case WMS_ERR_TRUNCATED:
	case WMS_ERR_UNEXPECTED_REPLY:
	case WMS_ERR_TOO_LARGE:
	case WMS_ERR_UNSAFE_XML:
		return "fail";
	case WMS_ERR_INVALID_ARG:
	case WMS_ERR_NOMEM:
	case WMS_ERR_FIXTURE:
	case WMS_ERR_CONFIG:
	case WMS_ERR_INTERNAL:
		/* libwms hands the permit back unrecorded, which the breaker
		 * treats exactly like an ignored outcome. */
		return "ignore";
	}
	return "ignore";
}

void ctl_put_safe(FILE *f, const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		fputc(c < 0x20 || c == 0x7f ? '?' : c, f);
	}
}

static char upper(char c)
{
	return c >= 'a' && c <= 'z' ? (char)(c - 'a' + 'A') : c;
}

void ctl_print_error(const char *command, wms_status st, const wms_error *err)
{
	const char *msg = err->message[0] ? err->message : wms_strerror(st);
	const char *p;

	fputs("wmsctl: ", stderr);
	for (p = command; *p; p++)
		fputc(upper(*p), stderr);
	fprintf(stderr, ": %s: ", wms_status_name(st));
	ctl_put_safe(stderr, msg);
	fprintf(stderr, " (delivery %s", wms_delivery_name(err->delivery));
	if (err->cause != WMS_CAUSE_NONE)
		fprintf(stderr, ", cause %s", wms_cause_name(err->cause));
	if (st == WMS_ERR_CIRCUIT_OPEN)
		fprintf(stderr, ", retry after %u ms", (unsigned)err->retry_after_ms);
	if (err->fault_code[0]) {
		fputs(", fault ", stderr);
		ctl_put_safe(stderr, err->fault_code);
	}
	if (err->wms_code[0]) {
		fputs(", wms_code ", stderr);
		ctl_put_safe(stderr, err->wms_code);
	}
	if (err->http_status)
		fprintf(stderr, ", http %ld", err->http_status);
	fputs(")\n", stderr);
}

static int put_file(void *payload, const char *p, size_t n)
{
	return fwrite(p, 1, n, payload) != n;
}

void ctl_put_json(FILE *f, const char *s)
{
	(void)wms__json_string_to(s, put_file, f); /* a short write shows in ferror(f) */
}
