/* The health server's seams for tests (src/health_server.c). */
#ifndef WMS_HEALTH_SERVER_INT_H
#define WMS_HEALTH_SERVER_INT_H

#include <sys/socket.h>
#include "wms/health_server.h"

/* Parse "ADDRESS:PORT" (wms_health_server_start's listen_addr, never NULL
 * here) into `*out`; the error names the string and what is wrong. */
wms_status wms__health_listen_parse(struct sockaddr_storage *out, socklen_t *out_len,
				   const char *where, wms_error *err);

/* wms_health_server_start with other limits than the header's (tests cross
 * them without 16 sockets or 5 s waits). */
wms_status wms__health_server_start_limits(wms_health_server **out, wms_client *const *clients,
					   size_t count, const char *where,
					   const char *metric_prefix, unsigned max_connections,
					   unsigned timeout_s, wms_error *err);

/* Connections the server holds open now (MHD's count). */
unsigned wms__health_server_connections(const wms_health_server *srv);

#endif
