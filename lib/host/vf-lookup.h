/* SPDX-License-Identifier: Apache-2.0 */
/* Where a VF is, from its PCI address: its PF, its index on that PF, its netdev or driver.
 *
 * Used by the CNI plugin, which gets only the VF's PCI address (deviceID). Reads sysfs under
 * sysfs_root (NULL = "/sys") so tests run on generated trees. No logging: every failure is a
 * distinct errno the caller turns into a message naming the device. */
#pragma once

#include <net/if.h>
#include <stdbool.h>
#include <stddef.h>

struct vf_location {
        char pf_pci[32];
        char pf_ifname[IFNAMSIZ]; /* first name of the PF's net/ in sorted order (upstream's) */
        int vf_index;             /* N of the PF's virtfnN link pointing at the VF */
        char vf_ifname[IFNAMSIZ]; /* first name of the VF's net/, sorted; "" when it has none */
        char driver[64];          /* the VF's driver; "" when unbound */
};

/* 0, or -ENODEV (no such PCI device), -ENOTTY (the device is not a VF: no physfn link),
 * -ENOLINK (the PF has no netdev), -ENOENT (no virtfnN of the PF points at the VF),
 * -EINVAL (not a PCI address). */
int host_vf_locate(const char *sysfs_root, const char *vf_pci, struct vf_location *ret);

/* Drivers under which a VF is used from user space (no netdev): vfio-pci, uio_pci_generic,
 * igb_uio, as upstream sriov-cni lists them. */
bool host_driver_is_userspace(const char *driver);

/* The node's PFs that have VFs (a virtfn0 link under bus/pci/devices/<pf>), each with its
 * netdev as host_vf_locate() names it ("" when it has none in the host): fn(pf_pci, pf_ifname,
 * userdata) for each, in directory order, until it returns non-zero, which is returned. 0 when
 * every PF was seen; a negative errno when bus/pci/devices cannot be read. */
int host_pf_foreach(const char *sysfs_root,
                    int (*fn)(const char *pf_pci, const char *pf_ifname, void *userdata),
                    void *userdata);

/* The PCI address of VF vf_index of the PF pf_pci (its virtfnN link); -ENOENT when it has no
 * such VF. */
int host_vf_pci(const char *sysfs_root, const char *pf_pci, int vf_index, char *buf, size_t size);

/* Whether the VF's net/ directory currently names a netdev (in the host's namespace). */
bool host_vf_has_netdev(const char *sysfs_root, const char *vf_pci);
