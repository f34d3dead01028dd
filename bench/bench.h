/* What the bench's groups share (bench.c). */
#ifndef WMS_BENCH_H
#define WMS_BENCH_H

#include <stddef.h>
#include <stdint.h>
#include <curl/curl.h>
#include "wms/wms.h"
#include "util/buf.h"

#define REPS 7

extern int quick;

/* Allocations made through libwms's allocator so far. */
uint64_t allocs(void);
uint64_t now_ns(void);
/* CPU time of the calling thread. */
uint64_t thread_cpu_ns(void);
/* Sorts v. */
double median(double *v, int n);
void die(const char *what, const char *detail);
/* One "name value" line. */
void figure(const char *name, double value, int decimals);
/* "target_<name> <v> <op> <limit>[ <what>] met|NOT met"; op ">=" or "<=" */
void target(const char *name, double v, const char *op, double limit, const char *what);
/* A "VmRSS:" / "VmHWM:" line of /proc/self/status, in kB; -1 if absent. */
long status_kb(const char *field);

/* The bench server's one reply (SOAP 1.1) to every POST: a SubmitOrderResponse
 * with these values. submit_reply_len excludes the NUL. */
#define BENCH_REPLY_ORDER_ID "BENCH-1"
#define BENCH_REPLY_REFERENCE "WMS-0000001"
#define BENCH_REPLY_STATE "RECEIVED"
#define BENCH_REPLY_DUPLICATE "false"
extern const char submit_reply[];
extern const size_t submit_reply_len;

/* Orders as a service sends them: NORDERS of them, each differing from
 * the one before in every field but the order id (the bench server's canned
 * reply names BENCH-1, and the client checks the reply answers its order),
 * all of one length, so that the bytes on the wire keep one size. */
#define NORDERS 64
#define MAX_LINES 50

typedef struct bench_order {
	wms_order order;
	wms_order_line lines[MAX_LINES];
	char skus[MAX_LINES][16];
	char name[24], line1[24], city[16], postal[8];
} bench_order;

extern bench_order bench_orders[NORDERS];
/* (Re)makes bench_orders with n lines each (n <= MAX_LINES). */
void make_orders(unsigned n);

/* Raw libcurl: one easy handle posting `body` (the request libwms would
 * send, byte for byte) with libwms's headers; checks status and length. */
typedef struct raw_curl {
	CURL *easy;
	struct curl_slist *headers;
	wms__buf reply;
} raw_curl;

void raw_curl_init(raw_curl *rc, const char *url, const wms__buf *body);
void raw_curl_free(raw_curl *rc);
void raw_curl_call(raw_curl *rc);

/* bench_shared.c: the breaker shared through Redis. */
void bench_shared(void);

/* bench_peers.c: libwms beside gSOAP and raw libcurl, one thread and eight. */
void bench_peers(void);
void bench_memory(void);

/* bench_scale.c: 10, 100, 1000 calls in flight against a server that
 * answers after scale_delay_ms (--delay-ms): the asynchronous API from one
 * thread, blocking calls and gSOAP on N threads. Each client runs in a
 * process of its own (this binary: bench_scale_worker), the server in
 * another (bench_scale_server); both return main's exit status. */
extern unsigned scale_delay_ms;
void bench_scale(void);
int bench_scale_worker(int argc, char **argv);
int bench_scale_server(int argc, char **argv);

#endif
