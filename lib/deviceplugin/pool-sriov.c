/* SPDX-License-Identifier: Apache-2.0 */
/* SR-IOV pools from the desired state and the observed inventory (see pool.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "deviceplugin/health.h"
#include "deviceplugin/pool-set.h"
#include "deviceplugin/pool.h"
#include "util/array.h"
#include "util/log.h"
#include "util/strv.h"

/* Why a VF is not (yet) a usable device of its group; NULL when it is ready. */
static const char *vf_not_ready_reason(const struct vf_group *g, const struct vf_info *vf)
{
        bool vfio = strcmp(vf->driver, "vfio-pci") == 0;
        if (g->device_type == DEVICE_TYPE_VFIO_PCI) {
                if (!vfio)
                        return "not bound to vfio-pci";
                if (vf->iommu_group < 0)
                        return "no IOMMU group";
        } else {
                if (vf->driver[0] == 0)
                        return "no driver bound";
                if (vfio)
                        return "bound to vfio-pci but the group wants netdevice";
                if (vf->n_netdevs == 0)
                        return "no netdev";
        }
        if (g->is_rdma && vf->n_rdma == 0)
                return "no RDMA device";
        return NULL;
}

/* The CNI moves a VF's netdev (and, in exclusive RDMA netns mode, its RDMA device) into the
 * pod's network namespace: the host then sees the VF bound to its driver with no netdev. A VF
 * in that state that was advertised is still the pod's device, not a VF that is not ready. */
static bool vf_maybe_in_pod(const struct vf_group *g, const struct vf_info *vf)
{
        if (g->device_type == DEVICE_TYPE_VFIO_PCI || vf->driver[0] == 0 ||
            strcmp(vf->driver, "vfio-pci") == 0)
                return false;
        /* No netdev on the host; its RDMA device may have gone with it (exclusive mode). A
         * VF that still has its netdev is on the host, whatever else it lacks. */
        return vf->n_netdevs == 0;
}

static bool pf_healthy(const struct pf_info *pf, const struct dp_health_options *health)
{
        return dp_pf_down_reason(pf, health) == NULL;
}

/* "uverbs0" or "/dev/infiniband/uverbs0" → the host path; rdma_cm is only remembered: it is
 * node-wide, one device spec for any number of VFs. */
static int add_char_devices(struct dp_device *d, const struct rdma_device *rd)
{
        for (size_t i = 0; i < rd->n_char_devices; i++) {
                const char *c = rd->char_devices[i];
                const char *base = strrchr(c, '/') ? strrchr(c, '/') + 1 : c;
                if (strcmp(base, "rdma_cm") == 0) {
                        d->rdma_cm = true; /* handed out only where it exists */
                        continue;
                }
                if (base[0] == 0)
                        continue;
                char path[128];
                if (c[0] == '/')
                        snprintf(path, sizeof(path), "%s", c);
                else
                        snprintf(path, sizeof(path), "/dev/infiniband/%s", c);
                if (strv_contains(d->char_devices, d->n_char_devices, path))
                        continue;
                int r = strv_push_dup(&d->char_devices, &d->n_char_devices, path);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int pool_add_device(struct dp_pool *pool, const struct vf_group *g, const struct pf_info *pf,
                           const struct vf_info *vf, const struct dp_health_options *health)
{
        if (GROW_ARRAY(pool->devices, pool->cap_devices, pool->n_devices + 1) < 0)
                return -ENOMEM;
        struct dp_device *d = &pool->devices[pool->n_devices++];
        *d = (struct dp_device){
                .healthy = pf_healthy(pf, health),
                .numa_node = g->exclude_topology || vf->numa_node < 0 ? -1 : vf->numa_node,
                .iommu_group = vf->iommu_group,
                .noiommu = vf->iommu_noiommu,
        };
        snprintf(d->id, sizeof(d->id), "%s", vf->pci_address);
        snprintf(d->pf, sizeof(d->pf), "%s", pf->pci_address);
        if (g->is_rdma && vf->n_rdma > 0) {
                snprintf(d->rdma_device, sizeof(d->rdma_device), "%s", vf->rdma[0].name);
                for (size_t i = 0; i < vf->n_rdma; i++) {
                        int r = add_char_devices(d, &vf->rdma[i]);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

/* Keeps the device as it was last advertised (its RDMA char devices included: the pod uses
 * them), with today's health. */
static int pool_keep_device(struct dp_pool *pool, bool healthy, const struct dp_device *prev)
{
        if (GROW_ARRAY(pool->devices, pool->cap_devices, pool->n_devices + 1) < 0)
                return -ENOMEM;
        struct dp_device *d = &pool->devices[pool->n_devices];
        *d = *prev;
        d->char_devices = NULL;
        d->n_char_devices = 0;
        d->healthy = healthy;
        for (size_t i = 0; i < prev->n_char_devices; i++) {
                int r = strv_push_dup(&d->char_devices, &d->n_char_devices, prev->char_devices[i]);
                if (r < 0) {
                        dp_device_done(d);
                        return r;
                }
        }
        pool->n_devices++;
        return 0;
}

static struct dp_pool *find_or_add_pool(struct dp_pool_set *set, const char *prefix,
                                        const struct vf_group *g, int *ret_err)
{
        char resource[DP_RESOURCE_MAX + 1];
        snprintf(resource, sizeof(resource), "%s/%s", prefix, g->resource_name);
        for (size_t i = 0; i < set->n_pools; i++)
                if (strcmp(set->pools[i].resource, resource) == 0)
                        return &set->pools[i];

        if (GROW_ARRAY(set->pools, set->cap_pools, set->n_pools + 1) < 0) {
                *ret_err = -ENOMEM;
                return NULL;
        }
        struct dp_pool *p = &set->pools[set->n_pools];
        *p = (struct dp_pool){
                .kind = DP_POOL_SRIOV,
                .device_type = g->device_type,
                .is_rdma = g->is_rdma,
                .need_vhost_net = g->need_vhost_net,
                .exclude_topology = g->exclude_topology,
        };
        if (dp_pool_set_names(p, prefix, g->resource_name) < 0) {
                *ret_err = log_ctx_msg(LOG_ERR, EINVAL,
                                       &(const struct log_ctx){ .policy = g->policy_name },
                                       "resourceName \"%s\" or prefix \"%s\" is not valid for "
                                       "a device-plugin resource",
                                       g->resource_name, prefix);
                return NULL;
        }
        set->n_pools++;
        return p;
}

static int compare_devices(const void *a, const void *b)
{
        return strcmp(((const struct dp_device *)a)->id, ((const struct dp_device *)b)->id);
}

static bool pf_has_vf(const struct pf_info *pf, const char *pci)
{
        for (size_t i = 0; pf && i < pf->n_vfs; i++)
                if (strcmp(pf->vfs[i].pci_address, pci) == 0)
                        return true;
        return false;
}

/* A VF the pool advertised whose PCI function is gone while its PF is short of the VFs it
 * should have (a VF hot-removed, a PF reset in progress) or is gone itself: kept, Unhealthy,
 * so that the kubelet sees the device fail, not a device in use withdrawn. A VF count lowered
 * on purpose leaves the PF with what it should have: those VFs leave the pool. */
static int keep_gone_vfs(struct dp_pool *pool, const struct dp_pool *prev_pool,
                         const struct desired_interface *iface, const struct pf_info *pf)
{
        if (!prev_pool || prev_pool->kind != DP_POOL_SRIOV ||
            (pf && pf->n_vfs >= (size_t)iface->num_vfs))
                return 0;
        for (size_t i = 0; i < prev_pool->n_devices; i++) {
                const struct dp_device *prev = &prev_pool->devices[i];
                if (strcasecmp(prev->pf, iface->pci_address) != 0 || pf_has_vf(pf, prev->id) ||
                    dp_pool_find_device(pool, prev->id))
                        continue;
                log_ctx_msg(LOG_DEBUG, 0,
                            &(const struct log_ctx){ .pf = iface->pci_address,
                                                     .vf = prev->id,
                                                     .resource = pool->resource },
                            "VF Unhealthy: its PCI function is gone");
                int r = pool_keep_device(pool, false, prev);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int add_group(struct dp_pool_set *set, const char *prefix,
                     const struct desired_interface *iface, const struct vf_group *g,
                     const struct pf_info *pf, const struct dp_pool_set *previous,
                     const struct dp_health_options *health)
{
        int r = 0;
        struct dp_pool *pool = find_or_add_pool(set, prefix, g, &r);
        if (!pool)
                return r;
        if (pool->device_type != g->device_type)
                log_ctx_msg(
                    LOG_WARNING, 0,
                    &(const struct log_ctx){ .policy = g->policy_name, .resource = pool->resource },
                    "VF groups of one resource disagree on deviceType; using %s",
                    device_type_to_string(pool->device_type));
        if (!pf) /* PF not present: the resource exists with what others give (and, when the PF
                  * went away, its VFs as Unhealthy) */
                return keep_gone_vfs(pool,
                                     previous ? dp_pool_set_find(previous, pool->resource) : NULL,
                                     iface, NULL);
        for (int i = g->vf_start; i <= g->vf_end; i++) {
                const struct vf_info *vf = pf_find_vf(pf, i);
                if (!vf)
                        continue;
                const char *why = vf_not_ready_reason(g, vf);
                const struct dp_pool *prev_pool =
                    previous ? dp_pool_set_find(previous, pool->resource) : NULL;
                /* Only the same group (resource, device type, isRdma, needVhostNet) keeps it. */
                bool same_group = prev_pool && prev_pool->kind == DP_POOL_SRIOV &&
                                  prev_pool->device_type == pool->device_type &&
                                  prev_pool->is_rdma == pool->is_rdma &&
                                  prev_pool->need_vhost_net == pool->need_vhost_net;
                const struct dp_device *prev =
                    same_group ? dp_pool_find_device(prev_pool, vf->pci_address) : NULL;
                /* After an agent restart nothing was advertised: the CNI plugin's record
                 * of the VF it gave to a pod is the memory that remains (the caller's) */
                bool in_pod_by_record =
                    !prev && health &&
                    strv_contains(health->vfs_in_pods, health->n_vfs_in_pods, vf->pci_address);
                if (why && in_pod_by_record && vf_maybe_in_pod(g, vf)) {
                        log_ctx_msg(LOG_DEBUG, 0,
                                    &(const struct log_ctx){ .pf = pf->pci_address,
                                                             .vf = vf->pci_address,
                                                             .resource = pool->resource },
                                    "VF advertised: %s (the CNI plugin gave it to a pod, whose "
                                    "network namespace has its netdev)",
                                    why);
                        if (!dp_pool_find_device(pool, vf->pci_address) &&
                            (r = pool_add_device(pool, g, pf, vf, health)) < 0)
                                return r;
                        continue;
                }
                if (why && prev && vf_maybe_in_pod(g, vf)) {
                        log_ctx_msg(LOG_DEBUG, 0,
                                    &(const struct log_ctx){ .pf = pf->pci_address,
                                                             .vf = vf->pci_address,
                                                             .resource = pool->resource },
                                    "VF still advertised: %s (its netdev is in a pod's network "
                                    "namespace)",
                                    why);
                        if (dp_pool_find_device(pool, vf->pci_address))
                                continue;
                        r = pool_keep_device(pool, pf_healthy(pf, health), prev);
                        if (r < 0)
                                return r;
                        continue;
                }
                if (why) {
                        log_ctx_msg(LOG_DEBUG, 0,
                                    &(const struct log_ctx){ .pf = pf->pci_address,
                                                             .vf = vf->pci_address,
                                                             .resource = pool->resource },
                                    "VF not advertised: %s", why);
                        continue;
                }
                if (dp_pool_find_device(pool, vf->pci_address))
                        continue;
                r = pool_add_device(pool, g, pf, vf, health);
                if (r < 0)
                        return r;
        }
        return keep_gone_vfs(pool, previous ? dp_pool_set_find(previous, pool->resource) : NULL,
                             iface, pf);
}

int dp_pools_from_desired(const struct desired_state *desired, const struct inventory *inv,
                          const char *prefix, struct dp_pool_set *ret)
{
        return dp_pools_from_desired_keep(desired, inv, prefix, NULL, ret);
}

int dp_pools_from_desired_keep(const struct desired_state *desired, const struct inventory *inv,
                               const char *prefix, const struct dp_pool_set *previous,
                               struct dp_pool_set *ret)
{
        return dp_pools_from_desired_health(desired, inv, prefix, previous, NULL, ret);
}

int dp_pools_from_desired_health(const struct desired_state *desired, const struct inventory *inv,
                                 const char *prefix, const struct dp_pool_set *previous,
                                 const struct dp_health_options *health, struct dp_pool_set *ret)
{
        struct dp_pool_set set = { 0 };
        if (!prefix)
                prefix = DP_RESOURCE_PREFIX_DEFAULT;

        for (size_t i = 0; i < desired->n_interfaces; i++) {
                const struct desired_interface *iface = &desired->interfaces[i];
                const struct pf_info *pf = inventory_find_pf(inv, iface->pci_address);
                for (size_t j = 0; j < iface->n_groups; j++) {
                        int r =
                            add_group(&set, prefix, iface, &iface->groups[j], pf, previous, health);
                        if (r < 0) {
                                dp_pool_set_done(&set);
                                return r;
                        }
                }
        }
        for (size_t i = 0; i < set.n_pools; i++)
                if (set.pools[i].n_devices > 1)
                        qsort(set.pools[i].devices, set.pools[i].n_devices,
                              sizeof(struct dp_device), compare_devices);
        *ret = set;
        return 0;
}

static bool vf_present(const struct pf_info *pf, const char *pci)
{
        for (size_t i = 0; i < pf->n_vfs; i++)
                if (strcasecmp(pf->vfs[i].pci_address, pci) == 0)
                        return true;
        return false;
}

size_t dp_pools_mark_gone(struct dp_pool_set *set, const struct inventory *inv,
                          const struct dp_health_options *health)
{
        size_t marked = 0;

        for (size_t p = 0; p < set->n_pools; p++) {
                struct dp_pool *pool = &set->pools[p];
                if (pool->kind != DP_POOL_SRIOV)
                        continue;
                for (size_t i = 0; i < pool->n_devices; i++) {
                        struct dp_device *d = &pool->devices[i];
                        if (!d->healthy)
                                continue;
                        const struct pf_info *pf = inventory_find_pf(inv, d->pf);
                        if (!pf || !pf_healthy(pf, health) || !vf_present(pf, d->id)) {
                                d->healthy = false;
                                marked++;
                        }
                }
        }
        return marked;
}
