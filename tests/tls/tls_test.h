/* What both TLS test programs share: the certificates and the bounds. */
#ifndef WMS_TEST_TLS_TEST_H
#define WMS_TEST_TLS_TEST_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tls_pki.h"
#include "tls_server.h"

static inline int tt_under_valgrind(void)
{
	const char *v = getenv("WMS_UNDER_VALGRIND");
	return v && *v && strcmp(v, "0") != 0;
}

/* Deadlines for one call: a handshake under valgrind takes a while, and
 * nothing here measures time, so they only have to bound it. */
static inline uint32_t tt_timeout_ms(void)
{
	return tt_under_valgrind() ? 30000u : 5000u;
}

static inline uint32_t tt_connect_timeout_ms(void)
{
	return tt_under_valgrind() ? 20000u : 3000u;
}

/* How long a test waits for the server to finish with a connection the
 * client dropped. */
static inline unsigned tt_settle_ms(void)
{
	return tt_under_valgrind() ? 60000u : 5000u;
}

/* Loopback only: a proxy from the environment must not get in the way. */
static inline void tt_no_proxy(void)
{
	unsetenv("http_proxy");
	unsetenv("HTTP_PROXY");
	unsetenv("https_proxy");
	unsetenv("HTTPS_PROXY");
	unsetenv("all_proxy");
	unsetenv("ALL_PROXY");
}

#endif
