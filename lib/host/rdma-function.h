/* SPDX-License-Identifier: Apache-2.0 */
/* The RDMA device of one PCI function (a VF), by name, as the CNI plugin needs it to move the
 * device into a pod's network namespace: `infiniband/<name>` under the function (ConnectX
 * before Linux 5.11), or under one of the function's auxiliary devices
 * (`<function>/mlx5_core.rdma.N/infiniband/<name>`, and likewise `bnxt_en.rdma.N`,
 * `ice.roce.N`: any subdirectory with an `infiniband/` of its own). Names read from the
 * directories are checked before use. Soft-RoCE devices belong to no function. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* The function's RDMA device name into name (the first by name when there are several).
 * -ENOENT: none; -ENODEV: no such function; -EINVAL: bad address. Nothing is logged. */
int host_rdma_device_of_function(const char *sysfs_root, const char *pci_address, char *name,
                                 size_t size);

/* Whether the function has an auxiliary device an RDMA driver binds to (a subdirectory named
 * `<driver>.rdma.N`, `<driver>.roce.N` or `<driver>.iwarp.N`: mlx5_core.rdma.0, bnxt_en.rdma.0,
 * ice.roce.0), with or without its `infiniband/` yet: while its driver is being re-bound the
 * device is briefly absent, and "no RDMA device" would then be the wrong answer. */
bool host_rdma_function_has_rdma_aux(const char *sysfs_root, const char *pci_address);

/* The character devices the RDMA device ibdev owns now, as /dev paths: the uverbsN of
 * class/infiniband_verbs and the umadN / issmN of class/infiniband_mad whose `ibdev` names it
 * (these classes are not per network namespace: the host sees them also for a device moved into
 * a pod's). One of each kind at most (port 1), "" when it has none. -EINVAL bad name. */
struct host_rdma_char_devices {
        char uverbs[48], umad[48], issm[48];
};
int host_rdma_char_devices_of(const char *sysfs_root, const char *ibdev,
                              struct host_rdma_char_devices *ret);
