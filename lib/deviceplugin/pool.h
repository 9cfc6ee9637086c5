/* SPDX-License-Identifier: Apache-2.0 */
/* Device pools: what one device-plugin resource advertises and hands out.
 *
 * A pool is a kubelet extended resource "<prefix>/<name>" with its devices. SR-IOV pools
 * (pool-sriov.c) hold one device per ready VF, ID = PCI address. Whole-card RDMA pools
 * (rdma-shared-config.c) hold rdmaHcaMax interchangeable IDs "0".."N-1" and one shared list of
 * the selected HCAs' char devices that every allocation gets. Pools are plain data, copied into
 * the plugin that serves them; building them is pure (no I/O). */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "model/desired.h"
#include "model/inventory.h"
#include "util/strv.h" /* the pools' ID and path lists */

#define DP_PREFIX_MAX              254
#define DP_RESOURCE_MAX            (DP_PREFIX_MAX + 1 + RESOURCE_NAME_MAX)
#define DP_DEVICE_ID_MAX           64 /* the kubelet allows 63 characters */
#define DP_RESOURCE_PREFIX_DEFAULT "openshift.io"

#define DP_HEALTHY   "Healthy"
#define DP_UNHEALTHY "Unhealthy"

enum dp_pool_kind {
        DP_POOL_SRIOV,
        DP_POOL_RDMA_SHARED,
};

struct dp_device {
        char id[DP_DEVICE_ID_MAX];
        bool healthy;
        int numa_node;                   /* -1: no topology advertised */
        char pf[PCI_ADDR_MAX];           /* SR-IOV: the VF's PF, for spreading */
        int iommu_group;                 /* -1 none */
        bool noiommu;                    /* vfio no-IOMMU group: host /dev/vfio/noiommu-<group> */
        char rdma_device[RDMA_NAME_MAX]; /* "" when none */
        char **char_devices;             /* host paths of the VF's RDMA char devices, not rdma_cm */
        size_t n_char_devices;
        bool rdma_cm; /* the node has /dev/infiniband/rdma_cm (class/misc/rdma_cm) */
};

struct dp_pool {
        char prefix[DP_PREFIX_MAX + 1];
        char name[RESOURCE_NAME_MAX];
        char resource[DP_RESOURCE_MAX + 1]; /* "<prefix>/<name>" */
        enum dp_pool_kind kind;
        enum device_type device_type;
        bool is_rdma, need_vhost_net, exclude_topology;
        struct dp_device *devices;     /* sorted by id (numerically for RDMA shared) */
        size_t n_devices, cap_devices; /* cap_*: allocated, for util/array.h */
        char **shared_char_devices;    /* RDMA shared: every selected HCA's char devices */
        size_t n_shared_char_devices;
        /* RDMA shared: the selected cards one by one (id = PCI address, the card's RDMA
         * device and char devices, rdma_cm, NUMA node, health), what DRA publishes as one
         * device each; the device plugin hands out the shared IDs above instead. */
        struct dp_device *cards;
        size_t n_cards, cap_cards;
};

struct dp_pool_set {
        struct dp_pool *pools;
        size_t n_pools, cap_pools;
};

void dp_device_done(struct dp_device *d);
void dp_pool_done(struct dp_pool *p);
void dp_pool_set_done(struct dp_pool_set *s);
int dp_pool_copy(const struct dp_pool *src, struct dp_pool *ret);
/* Moves every pool of src to the end of dst (src is left empty). -EEXIST if a resource name
 * appears twice (nothing moved). */
int dp_pool_set_take(struct dp_pool_set *dst, struct dp_pool_set *src);
/* Moves the pools whose name (the resourceName, without prefix) is one of names from s to the
 * end of ret; the others stay in s, in order. So one set is cut in two and no pool (no device)
 * is in both. -ENOMEM leaves both sets as they were. */
int dp_pool_set_split(struct dp_pool_set *s, char *const *names, size_t n_names,
                      struct dp_pool_set *ret);
/* Appends a copy of every pool of src to dst (on -ENOMEM dst holds the copies made so far). */
int dp_pool_set_append_copy(struct dp_pool_set *dst, const struct dp_pool_set *src);
const struct dp_pool *dp_pool_set_find(const struct dp_pool_set *s, const char *resource);
const struct dp_device *dp_pool_find_device(const struct dp_pool *p, const char *id);
/* Sets prefix, name and resource; -EINVAL when either is not a valid name. */
int dp_pool_set_names(struct dp_pool *p, const char *prefix, const char *name);

/* SR-IOV pools from the desired state's VF groups: one pool per distinct resourceName (groups
 * on several PFs sharing a name form one pool). A VF is a device when it is ready: bound to
 * vfio-pci (with an IOMMU group) for vfio-pci groups; bound to another driver with a netdev for
 * netdevice groups; with an RDMA device when isRdma. A VF whose PF is down is Unhealthy (health.h).
 * Topology is the VF's numa_node unless it is -1 or the group sets excludeTopology. Pools with
 * no ready VF are still returned (the resource exists with 0 devices). prefix NULL = default. */
int dp_pools_from_desired(const struct desired_state *desired, const struct inventory *inv,
                          const char *prefix, struct dp_pool_set *ret);
/* The same, remembering what was advertised (previous: the pools served now, or NULL). A VF
 * that was a device of the same resource and device type and is now bound to its (non-vfio)
 * driver with no netdev (or, for isRdma, no RDMA device) has had them moved into a pod's network
 * namespace by the CNI: it stays a device, as it was advertised, so the kubelet does not see a
 * device in use withdrawn. It leaves when the VF goes, is unbound or rebound, its netdev comes
 * back without what the group needs, or its group (resource, device type, isRdma, needVhostNet)
 * changes. */
int dp_pools_from_desired_keep(const struct desired_state *desired, const struct inventory *inv,
                               const char *prefix, const struct dp_pool_set *previous,
                               struct dp_pool_set *ret);
struct dp_health_options;
/* dp_pools_from_desired_keep() with health options (deviceplugin/health.h; NULL = defaults). A
 * device's health is its PF's: Unhealthy while the PF's driver is unbound and, unless link
 * health is off, while its link is down or its InfiniBand port is not ACTIVE. A VF that was
 * advertised and whose PCI function is gone while its PF is short of its VFs stays, Unhealthy.
 * A VF of health->vfs_in_pods in the state of a VF moved into a pod is a device even when
 * previous does not have it (an agent restart): built from what is seen, without the RDMA
 * devices the pod's namespace may hold. */
int dp_pools_from_desired_health(const struct desired_state *desired, const struct inventory *inv,
                                 const char *prefix, const struct dp_pool_set *previous,
                                 const struct dp_health_options *health, struct dp_pool_set *ret);
