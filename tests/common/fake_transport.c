#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>
#include "fake_transport.h"

static wms_status fake_send(wms_transport *t, const wms_http_request *req,
			    wms_http_response *resp, wms_error *err)
{
	fake *f = (fake *)t;
	const step *s;
	f->sends++;
	s = f->seq_len ? &f->seq[(f->sends < f->seq_len ? f->sends : f->seq_len) - 1] : &f->next;
	f->last_timeout_ms = req->timeout_ms;
	snprintf(f->last_action, sizeof(f->last_action), "%s", req->soap_action);
	snprintf(f->last_ctype, sizeof(f->last_ctype), "%s", req->content_type);
	snprintf(f->last_body, sizeof(f->last_body), "%.*s", (int)req->body_len, req->body);
	snprintf(f->last_correlation_id, sizeof(f->last_correlation_id), "%s",
		 req->correlation_id ? req->correlation_id : "");
	assert_true(req->timeout_ms > 0 && req->connect_timeout_ms > 0);
	assert_true(req->connect_timeout_ms <= req->timeout_ms);
	if (s->sleep_ms) {
		struct timespec ts = { (time_t)(s->sleep_ms / 1000u),
				       (long)(s->sleep_ms % 1000u) * 1000000L };
		nanosleep(&ts, NULL);
	}
	if (s->fail != WMS_OK) {
		wms_status st = wms_transport_fail(err, s->fail, s->delivery, "scripted failure");
		if (err)
			err->cause = s->cause;
		return st;
	}
	resp->status = s->status;
	resp->retry_after_ms = s->retry_after_ms;
	if (s->content_type) {
		wms_status st = wms_http_response_set_content_type(resp, s->content_type,
								   strlen(s->content_type));
		if (st != WMS_OK)
			return wms_transport_fail(err, st, WMS_DELIVERY_UNKNOWN, "fake: out of memory");
	}
	return wms_http_response_append(resp, s->body ? s->body : "",
					s->body_len ? s->body_len : s->body ? strlen(s->body) : 0);
}

static void fake_free(wms_transport *t)
{
	fake *f = (fake *)t;
	if (f->freed)
		(*f->freed)++;
	test_free(t);
}

wms_transport *fake_transport_new(fake **out)
{
	fake *f = test_calloc(1, sizeof(*f));
	f->parent.version = WMS_TRANSPORT_VERSION;
	f->parent.send = fake_send;
	f->parent.free = fake_free;
	*out = f;
	return &f->parent;
}
