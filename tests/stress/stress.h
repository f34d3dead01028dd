/* Helpers of the stress suite (tests/stress): how hard to push in this
 * build, clocks, and a census of this process's descriptors and sockets. */
#ifndef WMS_STRESS_H
#define WMS_STRESS_H

#include <stddef.h>
#include <stdint.h>
#include "wms/wms.h"
#include "wms_sim.h"

/* What the code runs under (tests/common/build_kind.h's tk_kind, by value). */
typedef enum st_kind {
	ST_PLAIN = 0,
	ST_ASAN = 1,
	ST_TSAN = 2,
	ST_VALGRIND = 3
} st_kind;

st_kind st_build_kind(void);
/* "plain", "asan+ubsan", "tsan", "valgrind". */
const char *st_kind_name(st_kind kind);

/* A positive integer from the environment, or `def` when unset; a value
 * that is not a positive integer fails the test. */
unsigned long st_env_ulong(const char *name, unsigned long def);

/* Monotonic milliseconds (fractional). */
double st_now_ms(void);
void st_sleep_ms(uint32_t ms);

/* Entries in /proc/self/fd (the listing's own descriptor excluded). */
size_t st_fd_count(void);

/* This process's TCP sockets seen from /proc/self/net/tcp{,6}, matched by
 * inode to the descriptors in /proc/self/fd, relative to `port`:
 * listeners on it, the server ends of connections to it (local port ==
 * port) and client ends (remote port == port). */
typedef struct st_sockets {
	unsigned listeners;
	unsigned server_conns;
	unsigned client_conns;
	unsigned other;   /* TCP sockets of ours that touch another port */
	unsigned sockets; /* every socket descriptor (TCP or not) */
} st_sockets;

/* 0, or -1 when /proc could not be read (the test fails on it). */
int st_socket_census(st_sockets *out, uint16_t port);

/* A simulator on 127.0.0.1, a free port, a clock that never moves orders
 * on (so stock stays reserved) and `on_hand` of every SKU; fails the test
 * when it cannot start. */
wms_sim *st_sim_start(int64_t on_hand);

/* Set a live fault; fails the test when the sim refuses. */
void st_sim_fault(wms_sim *sim, wms_sim_fault kind);

/* A one-line order with a fixed ship-to. */
typedef struct st_order {
	wms_order order;
	wms_order_line line;
	char id[WMS_ID_MAX + 1];
	char sku[WMS_ID_MAX + 1];
} st_order;

void st_order_init(st_order *o, const char *order_id, unsigned sku_no, uint32_t qty);

/* xorshift32: deterministic per thread. */
uint32_t st_rand(uint32_t *state);

#endif
