/* A scripted in-memory transport and a fake clock for client tests. */
#ifndef FAKE_TRANSPORT_H
#define FAKE_TRANSPORT_H

#include <stdint.h>
#include "wms/wms.h"
#include "wms/sys/transport.h"

#define MS 1000000ull

typedef struct step {
	wms_status fail;       /* != OK: a transport failure */
	wms_delivery delivery; /* for a failure */
	long status;
	const char *content_type;
	const char *body;
	uint32_t sleep_ms;     /* real time spent before answering */
} step;

typedef struct fake {
	wms_transport parent;
	step next;
	step seq[8]; /* when seq_len > 0: the n-th send plays seq[min(n, seq_len) - 1] */
	int seq_len;
	int sends;
	uint32_t last_timeout_ms;
	char last_action[128];
	char last_ctype[160];
	char last_body[8192];
	char last_correlation_id[64];
} fake;

typedef struct fx {
	wms_client *c;
	fake *t;
} fx;

extern uint64_t clock_now;

/* A client over a fresh fake transport; `o` may be NULL (defaults plus the
 * fake clock and a 30 s open duration). */
fx setup_client_with(wms_client_options *o);
fx setup_client(wms_soap_version v);
wms_transport *fake_transport_new(fake **out);

#endif
