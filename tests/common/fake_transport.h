/* The tests' one fake transport: scripted in memory, step by step, and what
 * it was last sent. (tests/client/client_fx.h puts a client and a fake
 * clock on it.) cmocka tests only: it allocates with test_calloc. */
#ifndef FAKE_TRANSPORT_H
#define FAKE_TRANSPORT_H

#include <stdint.h>
#include "wms/wms.h"
#include "wms/sys/transport.h"

typedef struct step {
	wms_status fail;       /* != OK: a transport failure */
	wms_delivery delivery; /* for a failure */
	wms_cause cause;       /* for a failure */
	long status;
	const char *content_type;
	const char *body;      /* NULL: none */
	size_t body_len;       /* 0: strlen(body) */
	uint32_t sleep_ms;     /* real time spent before answering */
	uint32_t retry_after_ms; /* the reply's Retry-After, as a transport read it */
} step;

typedef struct fake {
	wms_transport parent;
	step next;
	step seq[8]; /* when seq_len > 0: the n-th send plays seq[min(n, seq_len) - 1] */
	int seq_len;
	int sends;
	int *freed;  /* optional: incremented when the transport is freed */
	uint32_t last_timeout_ms;
	char last_action[128];
	char last_ctype[160];
	char last_body[8192];
	char last_correlation_id[64];
} fake;

/* A fake with `next` zeroed (an empty 0-status reply until scripted). */
wms_transport *fake_transport_new(fake **out);

#endif
