/* SPDX-License-Identifier: Apache-2.0 */
/* Attributes every PCI function has, PF or VF, read from its sysfs directory.
 *
 * Internal to discovery. Each reader fills its field or leaves the "unknown" value documented
 * in model/inventory.h, appends what went wrong to *error, and returns 0, or -ENOMEM only. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "host/pci-names.h"
#include "host/rdma-sysfs.h"
#include "model/inventory.h"

/* What one discovery run shares between functions. */
struct discover_scan {
        int root_fd;    /* the sysfs root */
        int devices_fd; /* bus/pci/devices */
        struct rdma_scan rdma;
        struct pci_names *names;
};

int host_pci_function_read_ids(int fn_fd, uint16_t *vendor, uint16_t *device, char **error);
/* Driver name from the `driver` link; "" when unbound; error when the link dangles. */
int host_pci_function_read_driver(int fn_fd, char driver[DRIVER_MAX], char **error);
/* numa_node (-1 = no affinity, as the kernel prints it). */
int host_pci_function_read_numa(int fn_fd, int *numa_node, char **error);
/* The PCIe root the function hangs under: the first component of its real sysfs path below
 * <sysfs root>/devices ("pci0000:3a"), as k8s.io/dynamic-resource-allocation's deviceattribute
 * helper computes resource.kubernetes.io/pcieRoot; "" when it is not under it (unknown, not
 * an error of the VF). Returns 0. */
int host_pci_function_read_pcie_root(const struct discover_scan *scan, int fn_fd,
                                     char root[PCIE_ROOT_MAX]);
/* iommu_group link's number; -1 when the function has no group (IOMMU off). */
int host_pci_function_read_iommu_group(int fn_fd, int *group, char **error);
/* Netdevs, then RDMA devices (which may be tied to those netdevs). VF netdevs are read
 * without speed (see netdev-sysfs.h). */
int host_pci_function_read_net_rdma(const struct discover_scan *scan, int fn_fd,
                                    const char *pci_address, bool is_vf,
                                    struct netdev_info **netdevs, size_t *n_netdevs,
                                    struct rdma_device **rdma, size_t *n_rdma, char **error);

/* VFs of the PF in fn_fd, from its virtfnN links, sorted by index (vf-scan.c). */
int host_sriov_read_vfs(const struct discover_scan *scan, int pf_fd, struct pf_info *pf);
