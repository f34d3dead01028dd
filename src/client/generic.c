/* wms_call (wms/call.h): any operation through the client's call path
 * (call.c's perform), its options checked here first. */
#include <string.h>
#include "client/client.h"

wms_status wms_call_options_init(wms_call_options *opts, unsigned version)
{
	if (!opts || version != WMS_CALL_OPTIONS_VERSION)
		return WMS_ERR_INVALID_ARG;
	memset(opts, 0, sizeof(*opts));
	opts->version = version;
	return WMS_OK;
}

static int name_char(unsigned char ch)
{
	return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
	       ch == '.' || ch == '_' || ch == '-';
}

#define ACTION_MAX 512

/* What a call's options must be before anything is made or sent. */
static wms_status check_call(const wms_call_options *o, wms_error *err)
{
	size_t i, n;

	if (o->version != WMS_CALL_OPTIONS_VERSION)
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "call options version %u is not supported (this libwms knows %u)",
				 o->version, WMS_CALL_OPTIONS_VERSION);
	n = o->operation ? strnlen(o->operation, 65) : 0;
	if (n == 0 || n > 64)
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "call.operation must be 1-64 bytes of [A-Za-z0-9._-]%s",
				 n ? " (too long)" : "");
	for (i = 0; i < n; i++)
		if (!name_char((unsigned char)o->operation[i]))
			return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
					 "call.operation must be 1-64 bytes of [A-Za-z0-9._-] "
					 "(byte %zu is not)", i + 1);
	if (o->soap_action) {
		n = strnlen(o->soap_action, ACTION_MAX + 1);
		if (n > ACTION_MAX)
			return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
					 "call.soap_action is longer than %d bytes", ACTION_MAX);
		for (i = 0; i < n; i++) {
			unsigned char ch = (unsigned char)o->soap_action[i];
			if (ch < 0x20 || ch == 0x7f || ch == '"')
				return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
						 "call.soap_action must not hold control characters "
						 "or '\"' (byte %zu)", i + 1);
		}
	}
	if (o->reply_element && !*o->reply_element)
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "call.reply_element is empty (NULL accepts any element)");
	return WMS_OK;
}

/* What both calls check first: err cleared, *out NULL, the arguments
 * there and the options sound. */
static wms_status begin(struct _xmlDoc **out, wms_client *c, const wms_call_options *opts,
			wms_error *err)
{
	wms_error_clear(err);
	if (out)
		*out = NULL;
	wms_status st;
	if (!out || !c || !opts)
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT, "%s is NULL",
				 !out ? "out" : !c ? "client" : "call");
	/* a client of the process this one was forked from: said before
	 * anything about the call or its body */
	if ((st = wms__client_check_process(c, err)) != WMS_OK)
		return st;
	return check_call(opts, err);
}

wms_status wms__generic_prepare(generic_call *g, wms_client *c, const wms_call_options *opts,
				const struct _xmlNode *body, struct _xmlDoc **out, wms_error *err)
{
	wms_status st;
	if ((st = begin(out, c, opts, err)) != WMS_OK)
		return st;
	if (!body)
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT, "body is NULL");
	memset(g, 0, sizeof(*g));
	g->opts = opts;
	g->body = body;
	g->out = out;
	return wms__generic_content_type(g->content_type, sizeof(g->content_type), c->soap_version,
					 opts->soap_action, err);
}

wms_status wms_call(struct _xmlDoc **out, wms_client *c, const wms_call_options *opts,
		    const struct _xmlNode *body, wms_error *err)
{
	generic_call g;
	call k;
	wms_error local;
	wms_status st;

	if (!err)
		err = &local;
	if ((st = wms__generic_prepare(&g, c, opts, body, out, err)) != WMS_OK)
		return st;
	memset(&k, 0, sizeof(k));
	k.op = WMS__OP_COUNT;
	k.g = &g;
	if ((st = wms__client_call_slot(c, opts->operation, &k.slot, err)) != WMS_OK)
		return st;
	return wms__perform(c, &k, err);
}

wms_status wms_call_bytes(struct _xmlDoc **out, wms_client *c, const wms_call_options *opts,
			  const char *body, size_t len, wms_error *err)
{
	struct _xmlDoc *doc = NULL;
	wms_error local;
	wms_status st;

	if (!err)
		err = &local;
	/* the options first: a bad call is said before the body is read */
	if ((st = begin(out, c, opts, err)) != WMS_OK)
		return st;
	if ((st = wms__generic_body_parse(&doc, body, len, err)) != WMS_OK)
		return st;
	st = wms_call(out, c, opts, wms__xml_doc_root(doc), err);
	wms__xml_doc_free(doc);
	return st;
}
