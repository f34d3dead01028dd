/* What the bench's groups share (bench.c). */
#ifndef WMS_BENCH_H
#define WMS_BENCH_H

#include <stdint.h>

#define REPS 7

extern int quick;

/* Allocations made through libwms's allocator so far. */
uint64_t allocs(void);
uint64_t now_ns(void);
/* Sorts v. */
double median(double *v, int n);
void die(const char *what, const char *detail);
/* One "name value" line. */
void figure(const char *name, double value, int decimals);

/* bench_shared.c: the breaker shared through Redis. */
void bench_shared(void);

#endif
