/* SPDX-License-Identifier: Apache-2.0 */
/* Discovery: builds the observed inventory of SR-IOV network PFs and their VFs.
 *
 * Reads only under sysfs_root (default "/sys"), so tests run on generated trees. Every PCI
 * function of class 0x02xx with `sriov_totalvfs` is a PF; non-network PFs (NVMe, ...) are
 * ignored. A device whose attributes are garbled keeps what could be read plus an `error`
 * string, and the scan goes on. Returns 0 or a negative errno (only for failures that make
 * the whole scan impossible, such as a missing bus/pci/devices directory, or -ENOMEM).
 *
 * PFs are read by up to one thread per CPU (at most 8); the inventory is the same as a
 * sequential scan's (PFs sorted by PCI address, VFs by index). Names found in sysfs are checked
 * before they are used in a path (netdev, RDMA and char device names, ibdev and parent
 * contents, virtfn targets); offenders are reported in the device's error, never followed.
 * With query_kernel (live /sys only) VF VLANs, the eswitch mode and verbs port attributes are
 * added, best effort (lib/host/discover-kernel.h). */
#pragma once

#include <stdbool.h>

#include "model/inventory.h"

struct discover_options {
        const char *sysfs_root; /* NULL = "/sys" */
        bool query_kernel;      /* also ask netlink/libibverbs (VF VLANs, port attributes);
                                 * false for generated trees */
        bool pci_names;         /* also look up vendor/device names in pci.ids: libpci parses
                                 * the whole 1.3 MB database for it, 5 ms of CPU per discovery
                                 * (as much as 200 VFs), and only `discover`'s text shows them */
};

/* Whether sysfs_root is the live /sys, i.e. a kernel stands behind it that netlink, devlink and
 * libibverbs would describe too. NULL (the default root) is. Otherwise it is when it is the very
 * directory mounted at /sys (same device and inode): "/sys/", "//sys" and a bind mount of /sys
 * are, a generated tree or a copy is not, whatever its name. A string compare with "/sys" got
 * the first two wrong, and each caller had its own variant of it. Declared here, beside the
 * query_kernel it decides; defined in pci-scan.c. */
bool host_sysfs_root_is_live(const char *sysfs_root);

int host_discover(const struct discover_options *opts, struct inventory *ret);
