/* SPDX-License-Identifier: MIT */
/*
 * timing.h: the clock and the sort the C benchmarks share (engine_loop.c,
 * spawn_cgroup.c): monotonic milliseconds, and doubles in qsort order.
 */
#ifndef SBX_BENCH_TIMING_H
#define SBX_BENCH_TIMING_H

#include <time.h>

static inline double bench_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static inline int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

#endif
