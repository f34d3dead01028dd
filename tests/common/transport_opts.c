#include <stdlib.h>
#include <string.h>
#include "transport_opts.h"

static int same(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

static int same_options(const wms_curl_transport_options *a, const wms_curl_transport_options *b)
{
	return same(a->user_agent, b->user_agent) && same(a->ca_file, b->ca_file) &&
	       same(a->ca_path, b->ca_path) && same(a->client_cert, b->client_cert) &&
	       same(a->client_key, b->client_key) &&
	       same(a->pinned_public_key, b->pinned_public_key) &&
	       same(a->http_username, b->http_username) &&
	       same(a->http_password, b->http_password) &&
	       a->max_idle_connections == b->max_idle_connections;
}

static const char *copy(const char *s)
{
	return s ? strdup(s) : NULL;
}

static void drop_copies(wms_curl_transport_options *o)
{
	free((void *)o->user_agent);
	free((void *)o->ca_file);
	free((void *)o->ca_path);
	free((void *)o->client_cert);
	free((void *)o->client_key);
	free((void *)o->pinned_public_key);
	free((void *)o->http_username);
	free((void *)o->http_password);
	memset(o, 0, sizeof(*o));
}

void tt_transport_init(tt_transport *t)
{
	static const wms_curl_transport_options init = WMS_CURL_TRANSPORT_OPTIONS_INIT;
	memset(t, 0, sizeof(*t));
	t->want = init;
}

wms_status tt_transport_apply(tt_transport *t, wms_error *err)
{
	const wms_curl_transport_options *w = &t->want;
	if (t->tp && same_options(w, &t->made))
		return WMS_OK;
	if (t->tp)
		t->tp->free(t->tp);
	t->tp = NULL;
	drop_copies(&t->made);
	t->made.version = w->version;
	t->made.user_agent = copy(w->user_agent);
	t->made.ca_file = copy(w->ca_file);
	t->made.ca_path = copy(w->ca_path);
	t->made.client_cert = copy(w->client_cert);
	t->made.client_key = copy(w->client_key);
	t->made.pinned_public_key = copy(w->pinned_public_key);
	t->made.http_username = copy(w->http_username);
	t->made.http_password = copy(w->http_password);
	t->made.max_idle_connections = w->max_idle_connections;
	return wms_curl_transport_create(&t->tp, w, err);
}

void tt_transport_free(tt_transport *t)
{
	if (t->tp)
		t->tp->free(t->tp);
	t->tp = NULL;
	drop_copies(&t->made);
}
