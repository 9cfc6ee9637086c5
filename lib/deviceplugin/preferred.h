/* SPDX-License-Identifier: Apache-2.0 */
/* GetPreferredAllocation: which `size` devices of `available` to give a container.
 *
 * The rule (also in docs/device-plugin.md):
 *  1. every must_include ID comes first, in the order given;
 *  2. the rest is taken from healthy available devices of the pool (IDs the pool does not know
 *     or reports unhealthy are only used when nothing else is left, in the order given);
 *  3. one NUMA node is preferred: the node most must_include devices are on, else the node
 *     that has the most candidates (ties: lowest node); other nodes only fill what it lacks;
 *  4. within a node, picks spread across PFs: each pick goes to the PF with the fewest devices
 *     chosen so far (ties: lowest PF address), taking its lowest device ID.
 * Whole-card RDMA pools have interchangeable IDs: must_include, then available in order.
 * Pure; the result never holds an ID twice and has min(size, |available ∪ must_include|) IDs. */
#pragma once

#include <stddef.h>

#include "deviceplugin/pool.h"

/* ret receives a new list of pointers into `available`/`must` strings (free only the array). */
int dp_preferred_allocation(const struct dp_pool *pool, char *const *available, size_t n_available,
                            char *const *must, size_t n_must, size_t size, const char ***ret,
                            size_t *ret_n);
