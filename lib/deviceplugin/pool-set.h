/* SPDX-License-Identifier: Apache-2.0 */
/* Every pool the agent serves, in one call: SR-IOV pools from the desired state plus the
 * whole-card RDMA pools of an optional k8s-rdma-shared-dev-plugin config. A resource name that
 * both produce is an error (-EEXIST, logged) and nothing is returned. */
#pragma once

#include "deviceplugin/health.h"
#include "deviceplugin/pool.h"
#include "deviceplugin/rdma-shared-config.h"

/* prefix NULL = "openshift.io"; rdma NULL = no whole-card pools; previous = the pools served
 * now (see dp_pools_from_desired_keep), NULL = none; health NULL = link health on
 * (deviceplugin/health.h). */
int dp_pools_build(const struct desired_state *desired, const struct inventory *inv,
                   const char *prefix, const struct rdma_shared_config *rdma,
                   const struct dp_pool_set *previous, const struct dp_health_options *health,
                   struct dp_pool_set *ret);

/* While a reconcile applies changes (seconds: VF creation, driver probes), the pools served keep
 * their devices; this marks those of the SR-IOV pools Unhealthy whose VF is not in inv any more
 * or whose PF is gone or down (health NULL = link health on). Nothing is added or removed, and no
 * device becomes Healthy: that is for the pools built when the reconcile ends. Returns how many
 * devices it marked. */
size_t dp_pools_mark_gone(struct dp_pool_set *set, const struct inventory *inv,
                          const struct dp_health_options *health);
