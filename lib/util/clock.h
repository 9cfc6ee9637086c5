/* The monotonic clock in microseconds, read now. sd_event_now() gives the time the loop woke up
 * instead, which is the same at both ends of work done in one loop iteration. */
#pragma once

#include <stdint.h>
#include <time.h>

static inline uint64_t clock_monotonic_usec(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000000ULL + (uint64_t)ts.tv_nsec / 1000ULL;
}
