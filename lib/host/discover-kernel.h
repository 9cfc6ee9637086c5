/* SPDX-License-Identifier: Apache-2.0 */
/* What discovery asks the kernel itself on a live node (discover_options.query_kernel).
 *
 * sysfs has no VF VLANs and no eswitch mode, and its RDMA port files can lag what verbs see:
 * VLANs come from the PF's VF list over rtnetlink, the eswitch mode from devlink, port
 * attributes from libibverbs. All best effort: a query that fails leaves the value unknown
 * (vlan -1, eswitch_mode "") and never fails discovery. */
#pragma once

#include "model/inventory.h"

void host_discover_query_kernel(struct inventory *inv);
