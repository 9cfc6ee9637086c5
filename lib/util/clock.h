/* The monotonic clock in microseconds, read now. sd_event_now() gives the time the loop woke up
 * instead, which is the same at both ends of work done in one loop iteration. The process's CPU
 * time (all its threads, ended ones included) in microseconds, exact where /proc's utime and
 * stime come in 10 ms ticks. */
#pragma once

#include <stdint.h>
#include <time.h>

static inline uint64_t clock_monotonic_usec(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000000ULL + (uint64_t)ts.tv_nsec / 1000ULL;
}

static inline uint64_t clock_process_cpu_usec(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
        return (uint64_t)ts.tv_sec * 1000000ULL + (uint64_t)ts.tv_nsec / 1000ULL;
}
