/* SPDX-License-Identifier: Apache-2.0 */
/* The desired node state: what the policies say each PF should look like.
 *
 * Produced by lib/policy (select + merge), consumed by lib/plan, lib/deviceplugin and lib/kube
 * (as the SriovNetworkNodeState spec). Field names follow that spec: interfaces[] with
 * pciAddress, name, numVfs, mtu, linkType, eSwitchMode, externallyManaged and vfGroups[]. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "model/inventory.h"

#define RESOURCE_NAME_MAX 64
#define POLICY_NAME_MAX   254 /* a DNS subdomain */

enum device_type {
        DEVICE_TYPE_NETDEVICE = 0,
        DEVICE_TYPE_VFIO_PCI,
};
const char *device_type_to_string(enum device_type t);             /* "netdevice", "vfio-pci" */
int device_type_from_string(const char *s, enum device_type *ret); /* 0 or -EINVAL */

enum eswitch_mode {
        ESWITCH_MODE_UNSET = 0,
        ESWITCH_MODE_LEGACY,
        ESWITCH_MODE_SWITCHDEV,
};
const char *eswitch_mode_to_string(enum eswitch_mode m); /* "", "legacy", "switchdev" */

struct vf_group {
        char resource_name[RESOURCE_NAME_MAX];
        enum device_type device_type;
        int vf_start, vf_end; /* inclusive range of VF indexes */
        char policy_name[POLICY_NAME_MAX];
        int mtu; /* 0 = leave as is */
        bool is_rdma;
        bool need_vhost_net;
        bool exclude_topology;
        char vdpa_type[16]; /* "", "virtio", "vhost" */
        int priority;       /* of the policy that contributed the group */
};

struct desired_interface {
        char pci_address[PCI_ADDR_MAX];
        char name[IFNAME_MAX]; /* PF netdev name, may be "" */
        int num_vfs;
        int mtu;                  /* 0 = leave as is */
        enum link_type link_type; /* UNKNOWN = leave as is */
        enum eswitch_mode eswitch_mode;
        bool externally_managed;
        struct vf_group *groups;
        size_t n_groups;
};

struct ib_guid_pool;
struct ib_guid_attachments;

struct desired_state {
        struct desired_interface *interfaces; /* sorted by PCI address */
        size_t n_interfaces, cap_interfaces;  /* cap_*: allocated, for util/array.h */
        /* The static IB GUID pool (plan/ib-guids.h), borrowed; NULL: GUIDs are derived */
        const struct ib_guid_pool *ib_guids;
        /* The GUIDs live CNI attachments gave their pods' VFs (plan/ib-guids.h), borrowed;
         * NULL: none. Such a VF's GUID is the pod's, not the pool's, while it lives. */
        const struct ib_guid_attachments *ib_attachments;
};

void desired_interface_done(struct desired_interface *iface);
void desired_state_done(struct desired_state *state);
const struct desired_interface *desired_find_interface(const struct desired_state *state,
                                                       const char *pci_address);
/* The group that VF index vf belongs to, or NULL (VFs outside every group are left alone). */
const struct vf_group *desired_interface_group_of_vf(const struct desired_interface *iface, int vf);
