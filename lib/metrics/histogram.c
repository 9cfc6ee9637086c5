/* SPDX-License-Identifier: Apache-2.0 */
#include "metrics/histogram.h"

#include <math.h>

const double metrics_duration_bounds[] = { 0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5,
                                           1,     2.5,   5,    10,   30,  60 };
const size_t metrics_n_duration_bounds =
    sizeof(metrics_duration_bounds) / sizeof(metrics_duration_bounds[0]);

void metrics_histogram_init(struct metrics_histogram *h, const double *bounds, size_t n_bounds)
{
        *h = (struct metrics_histogram){
                .bounds = bounds,
                .n_bounds = n_bounds < METRICS_HISTOGRAM_MAX_BUCKETS
                                ? n_bounds
                                : METRICS_HISTOGRAM_MAX_BUCKETS,
        };
}

void metrics_histogram_observe(struct metrics_histogram *h, double value)
{
        if (isnan(value))
                return;
        size_t i = 0;
        while (i < h->n_bounds && value > h->bounds[i])
                i++;
        h->counts[i]++;
        h->count++;
        h->sum += value;
}
