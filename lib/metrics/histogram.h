/* SPDX-License-Identifier: Apache-2.0 */
/* A fixed-bucket histogram to count durations in (pure): the layers that time something
 * (an Allocate, a reconcile) keep one, the metrics endpoint writes it out. No allocation. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#define METRICS_HISTOGRAM_MAX_BUCKETS 16

struct metrics_histogram {
        const double *bounds; /* upper bounds, ascending, excluding +Inf; static storage */
        size_t n_bounds;      /* ≤ METRICS_HISTOGRAM_MAX_BUCKETS */
        uint64_t
            counts[METRICS_HISTOGRAM_MAX_BUCKETS + 1]; /* per bucket, not cumulative; last: +Inf */
        uint64_t count;
        double sum;
};

/* bounds must outlive h; more than METRICS_HISTOGRAM_MAX_BUCKETS are cut. */
void metrics_histogram_init(struct metrics_histogram *h, const double *bounds, size_t n_bounds);
void metrics_histogram_observe(struct metrics_histogram *h, double value);

/* Bounds in seconds for the agent's durations: 1 ms to 60 s. */
extern const double metrics_duration_bounds[];
extern const size_t metrics_n_duration_bounds;
