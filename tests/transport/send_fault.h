/*
 * Client-side send faults for the transport tests: this file defines send()
 * for the whole test program (libcurl's calls reach it first) and passes
 * every call on to the C library's, except that it can make the next few
 * sends that start an HTTP POST fail at once with ECONNRESET, nothing
 * written: a reused connection whose reset arrived just after libcurl found
 * it alive. The loopback server never sends a POST, so it is not affected.
 */
#ifndef WMS_TEST_SEND_FAULT_H
#define WMS_TEST_SEND_FAULT_H

/* Fail the next n POST sends (0 disarms). */
void sf_fail_posts(unsigned n);
/* POST sends failed so far. */
unsigned sf_failed(void);

#endif
