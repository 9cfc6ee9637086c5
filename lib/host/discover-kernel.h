/* SPDX-License-Identifier: Apache-2.0 */
/* What discovery asks the kernel itself on a live node (discover_options.query_kernel).
 *
 * sysfs has no VF VLANs and no eswitch mode, and its RDMA port files can lag what verbs see:
 * VLANs come from the PF's VF list over rtnetlink, the eswitch mode from devlink, port
 * attributes from libibverbs. All best effort: a query that fails leaves the value unknown
 * (vlan -1, eswitch_mode "") and never fails discovery. */
#pragma once

#include "host/netlink-link.h"
#include "model/inventory.h"

void host_discover_query_kernel(struct inventory *inv);

/* The VF's InfiniBand GUIDs (vf->has_ib_guids, ib_node_guid, ib_port_guid) from info, its entry
 * in the PF's VF info (NULL or without GUIDs: an Ethernet PF, or a kernel before 5.5: left
 * alone), preferring the port GUID its IPoIB netdev's address carries (vf->netdevs, as
 * discovery read them): the VF info reports 0 on mlx5 for a GUID not set through netlink since
 * the driver loaded. The VF info's values for a VF without an IPoIB netdev in this namespace
 * (vfio-pci, or in a pod). */
void host_discover_vf_guids(struct vf_info *vf, const struct netlink_vf_info *info);
