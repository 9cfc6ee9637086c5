/* SPDX-License-Identifier: Apache-2.0 */
/* What every bench program times with: milliseconds on CLOCK_MONOTONIC, and a qsort() order for
 * the runs' times (the median is the middle one). */
#pragma once

#include <time.h>

static inline double now_ms(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static inline int compare_double(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;
        return (x > y) - (x < y);
}
