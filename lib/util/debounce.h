/* SPDX-License-Identifier: Apache-2.0 */
/* Leading-edge rate limit for reconciles.
 *
 * A change after a quiet period (one VF's link coming up, an operator's SIGHUP) is handled at
 * once; changes that follow within `window` of the last start are collapsed into one run at the
 * end of that window. So an isolated event costs no waiting, and a burst (the 128 link events
 * of a sriov_numvfs write) still costs at most one reconcile start per window. */
#pragma once

#include <stdint.h>

/* Delay before the next run, given the monotonic times now and of the last start (0 = never). */
static inline uint64_t debounce_delay(uint64_t now, uint64_t last_start, uint64_t window)
{
        if (last_start == 0 || now < last_start || now - last_start >= window)
                return 0;
        return window - (now - last_start);
}
