/* Client tests: a client over the fake transport (tests/common), with a
 * fake clock for its breaker. */
#ifndef CLIENT_FX_H
#define CLIENT_FX_H

#include "fake_transport.h"

#define MS 1000000ull

#define ENV_OPEN "<?xml version=\"1.0\"?><s:Envelope xmlns:s=\"http://schemas.xmlsoap.org/soap/envelope/\"><s:Body>"
#define ENV_CLOSE "</s:Body></s:Envelope>"

/* The WMS's answer to SubmitOrder of ORD-1. */
extern const char fx_submit_ok[];

typedef struct fx {
	wms_client *c;
	fake *t;
} fx;

extern uint64_t clock_now;

/* A client over a fresh fake transport; `o` may be NULL (defaults plus the
 * fake clock and a 30 s open duration). */
fx setup_client_with(wms_client_options *o);
fx setup_client(wms_soap_version v);

/* `calls` SubmitOrders of a valid one-line order that the fake transport
 * refuses (CONNECT): five open a default breaker, the next are rejected. */
void fx_refused_submits(fx *x, int calls);

#endif
