/* What an asynchronous call's completion callback saw (wms/async.h): one
 * struct and one callback per operation, for every test that starts async
 * calls. Each callback counts its runs (a completion runs exactly once). */
#ifndef TESTS_ASYNC_SEEN_H
#define TESTS_ASYNC_SEEN_H

#include <stddef.h>
#include <stdint.h>
#include <wms/wms.h>

typedef struct seen {
	int calls; /* how many times it ran: must end at 1 */
	wms_status st;
	wms_error err;
	int reply_null;
	wms_submit_reply submit;
	wms_status_reply status;
	wms_cancel_reply cancel;
	size_t stock_count;     /* the stock reply's, freed by the callback */
	int64_t stock_on_hand0; /* its first line's, -1 with none */
	int from_fallback;      /* the stock reply's */
	char doc_root[64];      /* a generic call's reply root, freed */
} seen;

void on_submit(wms_status st, const wms_submit_reply *r, const wms_error *err, void *p);
void on_status(wms_status st, const wms_status_reply *r, const wms_error *err, void *p);
void on_cancel(wms_status st, const wms_cancel_reply *r, const wms_error *err, void *p);
void on_stock(wms_status st, wms_stock_reply *r, const wms_error *err, void *p);
void on_call(wms_status st, struct _xmlDoc *doc, const wms_error *err, void *p);

#endif
