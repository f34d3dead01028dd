/* A relay for a test: a unix socket of its own, each connection to it
 * joined byte for byte to a target unix socket (a redis-server's), in one
 * thread. Armed with a pattern, it holds the first connection whose client
 * sends it: that chunk still goes to the target (which acts on it), but
 * nothing the target answers goes back until rl_release(), which closes
 * the held connection on both sides: a command run whose reply was lost. */
#ifndef WMS_TEST_RELAY_H
#define WMS_TEST_RELAY_H

#include <stddef.h>

typedef struct relay relay;

/* Listen at DIR/relay.sock, joined to `target`; NULL on failure. */
relay *rl_start(const char *target, const char *dir);
/* "unix://" and the relay's path, for wms_shared_options.redis_url. */
const char *rl_url(const relay *r);
/* Hold the next connection whose client sends `pattern` (at most 63
 * bytes, within one read). Not while an earlier arming is still waiting
 * for its pattern (the relay's thread reads it). */
void rl_arm(relay *r, const char *pattern, size_t len);
/* 1 once a connection is held, 0 if none is after `limit_ms`. */
int rl_wait_held(relay *r, double limit_ms);
/* Close the held connection (both sides). */
void rl_release(relay *r);
/* Stop the thread, close everything, remove the socket. NULL-safe. */
void rl_stop(relay *r);

#endif
