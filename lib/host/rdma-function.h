/* SPDX-License-Identifier: Apache-2.0 */
/* The RDMA device of one PCI function (a VF), by name, as the CNI plugin needs it to move the
 * device into a pod's network namespace: `infiniband/<name>` under the function (ConnectX
 * before Linux 5.11), or under one of the function's auxiliary devices
 * (`<function>/mlx5_core.rdma.N/infiniband/<name>`, and likewise `bnxt_en.rdma.N`,
 * `ice.roce.N`: any subdirectory with an `infiniband/` of its own). Names read from the
 * directories are checked before use. Soft-RoCE devices belong to no function. */
#pragma once

#include <stddef.h>

/* The function's RDMA device name into name (the first by name when there are several).
 * -ENOENT: none; -ENODEV: no such function; -EINVAL: bad address. Nothing is logged. */
int host_rdma_device_of_function(const char *sysfs_root, const char *pci_address, char *name,
                                 size_t size);
