/* gSOAP 2.8's C client for the warehouse WSDL, as the bench's peer
 * (bench_gsoap.c; built only when gSOAP is installed: BENCH_GSOAP). */
#ifndef WMS_BENCH_GSOAP_H
#define WMS_BENCH_GSOAP_H

#include "wms/wms.h"

typedef struct bench_gsoap bench_gsoap;

/* A gSOAP context bound to `url`, HTTP keep-alive, SOAP 1.1. Dies on failure. */
bench_gsoap *bench_gsoap_new(const char *url);
/* SubmitOrder with `order` mapped field for field onto gSOAP's request;
 * dies on any error or fault, and unless the reply is the bench server's
 * (bench.h: BENCH_REPLY_*) and names order->order_id. */
void bench_gsoap_submit_order(bench_gsoap *g, const wms_order *order);
/* NULL-safe; closes the connection. */
void bench_gsoap_free(bench_gsoap *g);
/* "2.8.124" */
const char *bench_gsoap_version(void);

#endif
