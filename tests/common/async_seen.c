/* See async_seen.h. */
#include <stdio.h>
#include <libxml/tree.h>
#include "async_seen.h"

static seen *saw(void *p, wms_status st, const wms_error *err, const void *reply)
{
	seen *s = p;
	s->calls++;
	s->st = st;
	s->err = *err;
	s->reply_null = reply == NULL;
	return s;
}

void on_submit(wms_status st, const wms_submit_reply *r, const wms_error *err, void *p)
{
	seen *s = saw(p, st, err, r);
	if (r)
		s->submit = *r;
}

void on_status(wms_status st, const wms_status_reply *r, const wms_error *err, void *p)
{
	seen *s = saw(p, st, err, r);
	if (r)
		s->status = *r;
}

void on_cancel(wms_status st, const wms_cancel_reply *r, const wms_error *err, void *p)
{
	seen *s = saw(p, st, err, r);
	if (r)
		s->cancel = *r;
}

void on_stock(wms_status st, wms_stock_reply *r, const wms_error *err, void *p)
{
	seen *s = saw(p, st, err, r);
	if (r) {
		s->stock_count = r->count;
		s->stock_on_hand0 = r->count ? r->levels[0].on_hand : -1;
		s->from_fallback = r->from_fallback;
		wms_stock_reply_free(r);
	}
}

void on_call(wms_status st, struct _xmlDoc *doc, const wms_error *err, void *p)
{
	seen *s = saw(p, st, err, doc);
	if (doc) {
		xmlNodePtr root = xmlDocGetRootElement(doc);
		snprintf(s->doc_root, sizeof(s->doc_root), "%s", root ? (const char *)root->name : "");
		xmlFreeDoc(doc);
	}
}
