/* The harness the public-API sweeps share (test_null_args.c: every pointer
 * argument NULL; test_bad_values.c: every bad value): soft checks, so that
 * every case of a function runs and prints before the test fails, the
 * counts, and the objects each sweep calls with. Installed headers only.
 * Include after <cmocka.h>. */
#ifndef WMS_TESTS_API_SWEEP_H
#define WMS_TESTS_API_SWEEP_H

#include <stddef.h>
#include <libxml/tree.h>
#include "wms/wms.h"

/* The program's own source file, named on each FAIL line: each defines it. */
extern const char sweep_file[];

extern int nfail;        /* failed checks in the running test (reset per test) */
extern unsigned n_funcs; /* functions swept */
extern unsigned n_cases; /* cases tried */

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
void check_(int ok, int line, const char *fmt, ...);
#define CHECK(cond, ...) check_(!!(cond), __LINE__, __VA_ARGS__)
#define FN(name) (n_funcs++, (void)(name))
#define END() assert_int_equal(nfail, 0)
/* A case whose whole check follows by hand. */
#define CASE() (n_cases++)

/* An error already holding something, so that one left untouched shows. */
void stale(wms_error *e);

/* A refusal: INVALID_ARG; with `e`, e->status equal, delivery NOT_SENT
 * (errors.h: "bad argument or option; nothing sent"), a new message,
 * naming `name` when not NULL. */
void bad_arg_(wms_status st, const wms_error *e, const char *name, const char *what, int line);
#define BAD_ARG(call, e, name) bad_arg_((call), (e), (name), #call, __LINE__)

/* A call that works (want: the status it gives with every argument good:
 * CONNECT against ENDPOINT); with `e`, e->status equal. */
void works_(wms_status st, wms_status want, const wms_error *e, const char *what, int line);
#define WORKS(call, want, e) works_((call), (want), (e), #call, __LINE__)

/* http://127.0.0.1:PORT/, refused at once: sweep_setup holds PORT, a port
 * the kernel picked, bound and never listening, for the whole group. */
extern char g_endpoint[];
#define ENDPOINT ((const char *)g_endpoint)

extern wms_client *g_client; /* on ENDPOINT, its breaker never opening */
extern wms_order g_order;    /* a good order, one line (g_lines) */
extern const wms_order_line g_lines[1];
extern const char *const g_skus[1];
extern const char g_body_xml[]; /* a generic call's body, and parsed: */
extern xmlDocPtr g_body_doc;
extern wms_call_options g_call; /* operation "Ping" */

/* Client options on `endpoint` that a sweep's calls never trip (a
 * threshold of 1000000), and a client made from them. */
wms_client_options sweep_client_options(const char *endpoint);
wms_client *sweep_client(const char *endpoint);
/* rel under the source tree ($WMS_SOURCE_ROOT, else API_SWEEP_SOURCE_ROOT). */
const char *source_path(char *buf, size_t size, const char *rel);
const xmlNode *body_node(void);

/* What an asynchronous call's callback saw: the on_* callbacks take a
 * `seen` as their payload (NULL: g_no_payload) and free any reply. */
typedef struct seen {
	int calls;
	wms_status st;
	int reply;
	int err_null;
	char msg[WMS_ERROR_MESSAGE_MAX];
} seen;
extern seen g_no_payload;
void on_submit(wms_status st, const wms_submit_reply *r, const wms_error *err, void *p);
void on_status(wms_status st, const wms_status_reply *r, const wms_error *err, void *p);
void on_cancel(wms_status st, const wms_cancel_reply *r, const wms_error *err, void *p);
void on_stock(wms_status st, wms_stock_reply *r, const wms_error *err, void *p);
void on_call(wms_status st, struct _xmlDoc *r, const wms_error *err, void *p);

/* async.h: "Any other status (`async` or `cb` NULL): no callback, nothing
 * started": INVALID_ARG and `s` untouched. */
void not_started_(wms_status st, const seen *s, wms_async *a, const char *what, int line);
#define NOT_STARTED(call, s, a) not_started_((call), (s), (a), #call, __LINE__)

/* async.h: "WMS_OK: `cb` runs exactly once"; a call that ends without I/O
 * (bad arguments) "completes at once"; the operations are "as their
 * blocking namesakes". Runs the loop until the call is done, then: one
 * callback with `want`, a non-NULL err (for INVALID_ARG a message naming
 * `name`); `s` is cleared for the next. */
void completes_(wms_status st, seen *s, wms_async *a, wms_status want, const char *name,
		const char *what, int line);
#define COMPLETES(call, s, a, want, name) completes_((call), (s), (a), (want), (name), #call, __LINE__)

/* An asynchronous context on libwms's own loop. */
wms_async *mk_async(wms_client *c);

/* The group's set-up (the endpoint's port, g_client, g_order with
 * `order_id`, the body, g_call) and tear-down, which prints "<what>: N
 * functions swept, N <cases>". */
void sweep_setup(const char *order_id);
void sweep_teardown(const char *what, const char *cases);

#endif
