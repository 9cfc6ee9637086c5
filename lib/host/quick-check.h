/* SPDX-License-Identifier: Apache-2.0 */
/* The periodic check's cheap first look: has the node changed since the last discovery?
 *
 * A full discovery reads ~30-45 sysfs files per VF; this reads what changes when VFs are
 * created, removed, bound, renamed or reconfigured: each known PF's sriov_numvfs, and for the PF
 * and each of its VFs the driver (the VFs' from one listing of each driver's directory), the
 * netdev names and their MTU (~3 system calls per VF), the
 * PF's admin state (a VF's decides nothing and is not read), each PF's operstate and the port state
 * of its RDMA devices and of whole-card RDMA NICs (the devices' health), and which RDMA devices
 * exist for our functions and netdevs (one listing of class/infiniband: an rxe device added on a VF
 * makes an isRdma VF ready). New PFs and the rest are left to the full discovery, which the caller
 * still runs regularly (and on every link event). */
#pragma once

#include "model/inventory.h"

/* 1 when every fact above matches `last` (a host_discover() of the same sysfs_root, NULL =
 * "/sys"), 0 when something differs or `last` itself had errors, negative errno when the tree
 * cannot be read (treat as changed). */
int host_quick_check(const char *sysfs_root, const struct inventory *last);
