/* The bench's CPU placements (bench.c); needs _GNU_SOURCE before any
 * system header, as its includers define. */
#ifndef WMS_BENCH_CPU_H
#define WMS_BENCH_CPU_H

#include <sched.h>

/* The CPUs this thread may run on (*saved) and the first two of them
 * (*second -1 when there is one). */
void bench_two_cpus(cpu_set_t *saved, int *first, int *second);

#endif
