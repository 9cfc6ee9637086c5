/* SPDX-License-Identifier: Apache-2.0 */
/* Whether a network function can carry traffic now, from what discovery read: the health the
 * kubelet is told in ListAndWatch. A function is down when its driver is unbound (unbinding,
 * or a driver reset in progress), and, unless link health is off, when a netdev of it has no
 * carrier (operstate down or lowerlayerdown) or an InfiniBand port of it is not ACTIVE
 * (class/infiniband/<dev>/ports/1/state). The reasons are fixed strings: the agent logs and
 * reports a change of reason once. Pure. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "model/inventory.h"

struct dp_health_options {
        bool ignore_link; /* upstream's behaviour: only gone or unbound devices count */
        /* VFs (PCI addresses) the sriov CNI plugin's records say it gave to a pod: for the pool
         * builder (pool.h), the memory of a VF moved into a pod that outlives an agent restart */
        char *const *vfs_in_pods;
        size_t n_vfs_in_pods;
};

/* NULL when the function is up, else why not ("driver unbound", "link down", "InfiniBand port
 * not ACTIVE"). o NULL = the defaults (link counts). */
const char *dp_function_down_reason(const char *driver, const struct netdev_info *netdevs,
                                    size_t n_netdevs, const struct rdma_device *rdma, size_t n_rdma,
                                    const struct dp_health_options *o);
const char *dp_pf_down_reason(const struct pf_info *pf, const struct dp_health_options *o);
