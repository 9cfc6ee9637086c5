/* SPDX-License-Identifier: Apache-2.0 */
/* The observed node: what discovery (lib/host) found under the sysfs root.
 *
 * Pure data shared by every layer: host fills it, policy/plan/deviceplugin/kube read it.
 * Fixed-size strings for the short kernel names (PCI addresses, netdev and driver names) keep
 * the structs flat; lists are arrays with counts. A function whose data could not be read fully
 * keeps what was read and carries a human-readable `error` (the scan goes on). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PCI_ADDR_MAX 16 /* "0000:3b:02.1" + NUL, rounded */
#define IFNAME_MAX   16 /* IFNAMSIZ */
#define DRIVER_MAX   64
#define MAC_MAX      64 /* IB hardware addresses are 20 bytes: 59 chars; we keep the text form */
#define RDMA_NAME_MAX 64
#define ALTIFNAME_MAX 128 /* ALTIFNAMSIZ */
#define PCIE_ROOT_MAX 32 /* "pci0000:3a", the host bridge under /sys/devices */
#define PF_ALT_NAMES_MAX 8 /* kept per PF; udev gives one or two (enp59s0f0np0) */

enum link_type {
        LINK_TYPE_UNKNOWN = 0,
        LINK_TYPE_ETH,
        LINK_TYPE_IB,
};
const char *link_type_to_string(enum link_type t); /* "ETH", "IB", "" */

struct rdma_device {
        char name[RDMA_NAME_MAX];  /* mlx5_3, rxe0 */
        char node_guid[24];        /* "0000:0000:0000:0000" form as sysfs prints it */
        char link_layer[16];       /* "Ethernet", "InfiniBand" (port 1) */
        char port_state[24];       /* "4: ACTIVE" (port 1) */
        char **char_devices;       /* "/dev/infiniband/uverbs0", "umad0", "issm0", "rdma_cm" */
        size_t n_char_devices;
};

struct netdev_info {
        char name[IFNAME_MAX];
        char mac[MAC_MAX];
        int mtu;                   /* -1 unknown */
        char operstate[16];        /* "up", "down", ...; PF netdevs only ("" on VFs) */
        bool admin_up;             /* IFF_UP in `flags` */
        int speed_mbps;            /* -1 unknown; PF netdevs only (-1 on VFs) */
        enum link_type link_type;  /* from `type`: 1 ether, 32 infiniband */
};

struct vf_info {
        char pci_address[PCI_ADDR_MAX];
        int vf_index;              /* N of the PF's virtfnN link */
        uint16_t vendor, device;
        char driver[DRIVER_MAX];   /* "" when unbound */
        int numa_node;             /* -1 when unknown */
        /* First component under /sys/devices of the VF's sysfs path ("pci0000:3a"), as DRA's
         * resource.kubernetes.io/pcieRoot has it; "" when unknown. */
        char pcie_root[PCIE_ROOT_MAX];
        int iommu_group;           /* -1 when none */
        bool iommu_noiommu;        /* vfio no-IOMMU group: /dev/vfio/noiommu-<group> */
        struct netdev_info *netdevs; /* usually one */
        size_t n_netdevs;
        int vlan;                  /* admin VLAN from the PF's VF info; 0 none, -1 unknown */
        /* InfiniBand PFs: the VF's node and port GUID from the PF's VF info (netlink only) */
        bool has_ib_guids;
        uint64_t ib_node_guid, ib_port_guid;
        struct rdma_device *rdma;
        size_t n_rdma;
        char *error;               /* NULL, or what could not be read */
};

struct pf_info {
        char pci_address[PCI_ADDR_MAX];
        uint16_t vendor, device, subsystem_vendor, subsystem_device;
        char *vendor_name, *device_name; /* from pci.ids via libpci; may be NULL */
        uint32_t class_code;       /* 0x020000 */
        char driver[DRIVER_MAX];
        int numa_node;
        /* The PCIe root as vf_info has it ("pci0000:3a"); "" when unknown. */
        char pcie_root[PCIE_ROOT_MAX];
        int iommu_group;
        int total_vfs, num_vfs;
        uint16_t vf_device;        /* sriov_vf_device */
        struct netdev_info *netdevs;
        size_t n_netdevs;
        char eswitch_mode[16];     /* "legacy", "switchdev", "" unknown */
        /* Alternative names of the PF's netdevs (IFLA_ALT_IFNAME, e.g. udev's predictable
         * enp59s0f0np0); netlink only, so empty under a generated sysfs root. */
        char alt_names[PF_ALT_NAMES_MAX][ALTIFNAME_MAX];
        size_t n_alt_names;
        struct rdma_device *rdma;
        size_t n_rdma;
        struct vf_info *vfs;       /* sorted by vf_index */
        size_t n_vfs;
        char *error;
};

struct inventory {
        struct pf_info *pfs;       /* sorted by PCI address */
        size_t n_pfs;
        /* Network functions with an RDMA device that are neither SR-IOV PFs nor VFs of one
         * (a ConnectX with SR-IOV off in firmware, a VF passed through to a VM), read like PFs
         * without VFs (total_vfs/num_vfs -1). Only whole-card RDMA pools look at them. */
        struct pf_info *rdma_nics; /* sorted by PCI address */
        size_t n_rdma_nics, cap_rdma_nics; /* cap_*: allocated, for util/array.h */
};

void rdma_device_done(struct rdma_device *d);
void netdev_info_init(struct netdev_info *n);
void vf_info_done(struct vf_info *vf);
void pf_info_done(struct pf_info *pf);
void inventory_done(struct inventory *inv);

/* Lookups; NULL when absent. */
const struct pf_info *inventory_find_pf(const struct inventory *inv, const char *pci_address);
const struct pf_info *inventory_find_pf_by_netdev(const struct inventory *inv, const char *ifname);
const struct vf_info *pf_find_vf(const struct pf_info *pf, int vf_index);
/* First netdev's name, or NULL. */
const char *pf_netdev_name(const struct pf_info *pf);
const char *vf_netdev_name(const struct vf_info *vf);
