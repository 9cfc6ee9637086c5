/* SPDX-License-Identifier: Apache-2.0 */
/* RDMA devices of PCI functions, read from sysfs.
 *
 * Two ways an RDMA device belongs to a function: it sits under the function's PCI directory
 * (`infiniband/mlx5_N`, as ConnectX does), or it is a virtual device whose `parent` attribute
 * names one of the function's netdevs (Soft-RoCE `rxe`). For each device: node GUID, port 1 state
 * and link layer, and its char devices as /dev paths: uverbsN (infiniband_verbs), umadN and issmN
 * (infiniband_mad), and /dev/infiniband/rdma_cm when class/misc/rdma_cm exists.
 *
 * rdma_scan holds what is read once per discovery (rxe ties, rdma_cm, class-level char devices,
 * the PCI functions of RDMA devices) so that per-function lookups stay cheap. The char devices
 * come from one walk of class/infiniband_verbs and class/infiniband_mad (a readlinkat per entry
 * names the PCI function it sits under): a function with one RDMA device owns all of its own, so
 * no `ibdev` is read for it; only a function with several reads its entries' `ibdev` (two listings
 * and three reads per function before: 28 % of a full rediscovery on cx6 trees). It reads each
 * class/infiniband link once: a target under a PCI function is a card's device, and names the
 * function's devices without a listing of its infiniband/ (3 of 43 system calls per cx6 function;
 * listed still where the walk was not whole), anything else (devices/virtual/...) may have a
 * `parent` netdev. Opening <name>/parent of every entry instead failed for each of the 1000+ PCI
 * ones after a walk through the link: 2-10 ms on 8x128. Names read from files (ibdev, parent) are
 * checked before they are used in paths; bad ones are reported, never followed. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "model/inventory.h"

struct rdma_tie {
        char rdma_name[RDMA_NAME_MAX];
        char netdev[IFNAME_MAX];
};

struct rdma_char_device {
        char ibdev[RDMA_NAME_MAX];
        char path[RDMA_NAME_MAX + 32]; /* "/dev/infiniband/uverbs3" */
};

/* A class/infiniband, class/infiniband_verbs or class/infiniband_mad entry under a PCI
 * function: the function and the entry's name. */
struct rdma_function_entry {
        char pci_address[PCI_ADDR_MAX];
        char name[RDMA_NAME_MAX]; /* "mlx5_3"; "uverbs3", "umad3", "issm3" */
};

struct rdma_scan {
        int root_fd;
        bool has_rdma_cm;
        struct rdma_tie *ties;   /* class/infiniband/<name>/parent */
        size_t n_ties, cap_ties; /* cap_*: allocated, for util/array.h */
        /* The RDMA devices of PCI functions (`<function>/infiniband/<name>`), from the
         * class/infiniband links' targets (one readlinkat each), sorted by PCI address, then
         * name: where discovery looks for RDMA NICs that are not SR-IOV, and, when valid (the
         * class was walked whole), each function's devices without listing its `infiniband/`
         * (a function with none is not even opened there). */
        struct rdma_function_entry *function_devices;
        size_t n_function_devices, cap_function_devices;
        bool function_devices_valid;
        struct rdma_char_device *class_char_devices; /* only read when ties exist */
        size_t n_class_char_devices, cap_class_char_devices;
        /* Sorted by PCI address, then name. Valid only when both classes could be walked
         * (or are absent: their modules not loaded); otherwise each function lists its own. */
        struct rdma_function_entry *function_char_devices;
        size_t n_function_char_devices, cap_function_char_devices;
        bool function_char_devices_valid;
};

/* Reads the per-scan facts under root_fd (the sysfs root). Hostile or unreadable entries are
 * logged and skipped: they belong to no PCI function that could carry the error. */
int host_rdma_scan_init(struct rdma_scan *scan, int root_fd);
void host_rdma_scan_done(struct rdma_scan *scan);

/* RDMA devices of one function (fn_dir_fd, at pci_address), including those tied to its netdevs.
 * Problems are appended to *error; returns 0 or -ENOMEM. */
int host_rdma_sysfs_read_function(const struct rdma_scan *scan, int fn_dir_fd,
                                  const char *pci_address, const struct netdev_info *netdevs,
                                  size_t n_netdevs, struct rdma_device **ret, size_t *ret_n,
                                  char **error);
