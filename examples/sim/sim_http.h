/* wms-sim's HTTP side, shared by sim_http.c (the daemon, dispatch),
 * sim_serve.c (answering a request), sim_control.c (/stats, /control) and
 * wms_sim.c (start and stop): the declarations that speak libmicrohttpd.
 * The only header that includes <microhttpd.h>. Never installed. */
#ifndef WMS_SIM_HTTP_H
#define WMS_SIM_HTTP_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <microhttpd.h>
#include "sim_internal.h"

/* One request's state, from its first call to on_access to on_completed. */
typedef struct wms_sim__req_ctx {
	wms__buf body;
	int too_large;
	int hold;
	int close_after; /* a scripted reply's `close`: shut the socket once it is out */
	int fd;
} wms_sim__req_ctx;

/* sim_http.c: a daemon listening on s's address and port, or NULL with err. */
struct MHD_Daemon *wms_sim__start_daemon(wms_sim *s, uint16_t port, char *err, size_t errlen);
/* sim_http.c: the supervisor thread's body (arg: the sim). */
void *wms_sim__supervise(void *arg);

/* sim_serve.c: a reply from a copy of data (hname: one extra header, or NULL). */
enum MHD_Result wms_sim__respond(struct MHD_Connection *c, unsigned status, const char *ctype,
				 const void *data, size_t len, const char *hname,
				 const char *hvalue);
/* sim_serve.c: a one-line text/plain reply. */
enum MHD_Result wms_sim__respond_text(struct MHD_Connection *c, unsigned status,
				      const char *text);
/* sim_serve.c: POST /wms. */
enum MHD_Result wms_sim__serve_soap(wms_sim *s, struct MHD_Connection *c, wms_sim__req_ctx *r);

/* sim_control.c: the /stats document into b. 0, or -1 when out of memory. */
int wms_sim__stats_json(wms_sim *s, wms__buf *b);
/* sim_control.c: POST /control. */
enum MHD_Result wms_sim__serve_control(wms_sim *s, struct MHD_Connection *c,
				       wms_sim__req_ctx *r);

#endif
