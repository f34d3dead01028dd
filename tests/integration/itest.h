/* Shared helpers of the integration suite: libwms's real curl transport
 * against wms-sim (examples/sim) started in-process on a free port. */
#ifndef WMS_ITEST_H
#define WMS_ITEST_H

#include <stddef.h>
#include <stdint.h>
#include "wms/wms.h"
#include "wms_sim.h"

/* Non-zero under `meson test --setup=valgrind` (WMS_UNDER_VALGRIND=1). */
int it_valgrind(void);
/* Extra milliseconds allowed on a timing bound: 0 plain, generous under valgrind. */
uint32_t it_slack_ms(void);

/* Monotonic milliseconds (fractional). */
double it_now_ms(void);
void it_sleep_ms(uint32_t ms);
/* Sleep until it_now_ms() reaches t (no sleep when it has). */
void it_sleep_until_ms(double t);

/* Start a sim on 127.0.0.1:0 with this tick (0 = the default); fails the test otherwise. */
wms_sim *it_sim_start(uint32_t tick_ms);

/* Wait until the sim has no connection open (its FIN of a `close` reply went
 * out before): a client's next call then finds its idle connection closed
 * instead of racing the close. Fails the test after 2 s (plus slack). */
void it_wait_sim_closed(wms_sim *sim);
/* The sim's open connections, once they are `want` or `ms` (plus slack)
 * went by (the sim sees a close when its thread reads the end). */
uint64_t it_sim_open_becomes(wms_sim *sim, uint64_t want, uint32_t ms);

typedef struct it_client_opts {
	wms_soap_version soap_version;
	uint32_t timeout_ms;        /* 0: 2000 */
	uint32_t stall_timeout_ms;  /* 0: the client's default (5000) */
	uint32_t failure_threshold; /* 0: 1000 (the breaker stays out of the way) */
	uint32_t open_duration_ms;  /* 0: 300 */
	wms_breaker_event_fn on_state_change;
	void *payload;
	wms_breaker_scope breaker_scope; /* 0: one breaker for the client */
	wms_transport *transport;        /* NULL: libcurl's; owned by the client */
} it_client_opts;

/* A client with the curl transport pointed at the sim. */
wms_client *it_client(const wms_sim *sim, const it_client_opts *o);

/* A one-line order (SKU-1 x qty) or the given lines, with a fixed ship-to. */
typedef struct it_order {
	wms_order order;
	wms_order_line lines[4];
	char id[WMS_ID_MAX + 1];
} it_order;

void it_order_init(it_order *o, const char *order_id, const char *sku, uint32_t qty);

/* With it_async_mode(1), it_submit goes through an async context of the
 * client (libwms's own loop, run until the call completes), one per
 * client, kept with its connections until it_client_free. */
void it_async_mode(int on);
/* wms_client_free, the client's async context first. */
void it_client_free(wms_client *c);

/* Submit and return the status; out and err may be NULL. */
wms_status it_submit(wms_client *c, const char *order_id, const char *sku, uint32_t qty,
		     wms_submit_reply *out, wms_error *err);

/* GET or POST (form body) with libcurl; returns the HTTP status, 0 on a
 * transport failure. *body (optional) gets a malloc'd NUL-terminated body. */
long it_http(const char *method, const char *url, const char *content_type,
	     const char *extra_header, const char *body, char **out_body);

/* A file in a fresh temporary directory (removed by it_tmp_cleanup). */
const char *it_tmp_file(const char *name, const char *content);
void it_tmp_cleanup(void);

#endif
