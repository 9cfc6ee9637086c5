/* SPDX-License-Identifier: Apache-2.0 */
/* Builders for small in-memory inventories and pools, shared by the device-plugin unit tests. */
#pragma once

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deviceplugin/pool.h"
#include "model/desired.h"
#include "model/inventory.h"

/* Appends a PF "0000:BB:00.0" (the returned pointer is valid until the next fx_add_pf) with netdev
 * ifname (operstate up) and n VFs "0000:BB:01.i" bound to vf_driver with netdev "<ifname>v<i>",
 * IOMMU group 100+BB*16+i, on numa. */
static inline struct pf_info *fx_add_pf(struct inventory *inv, int bus, const char *ifname,
                                        const char *vf_driver, int n, int numa)
{
        inv->pfs = realloc(inv->pfs, (inv->n_pfs + 1) * sizeof(*inv->pfs));
        struct pf_info *pf = &inv->pfs[inv->n_pfs++];
        *pf = (struct pf_info){ .vendor = 0x15b3,
                                .device = 0x101b,
                                .numa_node = numa,
                                .iommu_group = bus,
                                .num_vfs = n,
                                .total_vfs = 16 };
        snprintf(pf->pci_address, sizeof(pf->pci_address), "0000:%02x:00.0", bus & 0xff);
        strcpy(pf->driver, "mlx5_core");
        pf->netdevs = calloc(1, sizeof(*pf->netdevs));
        netdev_info_init(&pf->netdevs[0]);
        snprintf(pf->netdevs[0].name, IFNAME_MAX, "%s", ifname);
        strcpy(pf->netdevs[0].operstate, "up");
        pf->netdevs[0].link_type = LINK_TYPE_ETH;
        pf->n_netdevs = 1;
        pf->vfs = calloc(n ? n : 1, sizeof(*pf->vfs));
        pf->n_vfs = n;
        for (int i = 0; i < n; i++) {
                struct vf_info *vf = &pf->vfs[i];
                *vf = (struct vf_info){ .vf_index = i,
                                        .numa_node = numa,
                                        .iommu_group = 100 + bus * 16 + i };
                snprintf(vf->pci_address, sizeof(vf->pci_address), "0000:%02x:01.%d", bus & 0xff,
                         i & 7);
                snprintf(vf->driver, sizeof(vf->driver), "%s", vf_driver);
                if (strcmp(vf_driver, "vfio-pci") != 0 && vf_driver[0]) {
                        vf->netdevs = calloc(1, sizeof(*vf->netdevs));
                        netdev_info_init(&vf->netdevs[0]);
                        snprintf(vf->netdevs[0].name, IFNAME_MAX, "%.10sv%d", ifname, i & 0xff);
                        vf->n_netdevs = 1;
                }
        }
        return pf;
}

/* Gives a device an RDMA device mlx5_<k> with uverbs<k>, umad<k>, issm<k> and rdma_cm, as
 * discovery reports it on a node with rdma_ucm loaded (fx_drop_rdma_cm: without). */
static inline void fx_add_rdma(struct rdma_device **list, size_t *n, int k)
{
        *list = realloc(*list, (*n + 1) * sizeof(**list));
        struct rdma_device *rd = &(*list)[(*n)++];
        *rd = (struct rdma_device){ 0 };
        snprintf(rd->name, sizeof(rd->name), "mlx5_%d", k);
        rd->char_devices = calloc(4, sizeof(char *));
        const char *kinds[] = { "uverbs", "umad", "issm" };
        for (int i = 0; i < 3; i++) {
                char path[64];
                snprintf(path, sizeof(path), "/dev/infiniband/%s%d", kinds[i], k);
                rd->char_devices[i] = strdup(path);
        }
        rd->char_devices[3] = strdup("/dev/infiniband/rdma_cm");
        rd->n_char_devices = 4;
}

/* The node has no /dev/infiniband/rdma_cm (rdma_ucm not loaded). */
static inline void fx_drop_rdma_cm(struct rdma_device *rd)
{
        for (size_t i = 0; i < rd->n_char_devices; i++)
                if (strcmp(rd->char_devices[i], "/dev/infiniband/rdma_cm") == 0) {
                        free(rd->char_devices[i]);
                        rd->char_devices[i] = rd->char_devices[--rd->n_char_devices];
                        return;
                }
}

/* Appends an interface for pf with one group. */
static inline struct vf_group *fx_add_group(struct desired_state *d, const char *pf_addr,
                                            const char *resource, enum device_type type, int first,
                                            int last)
{
        struct desired_interface *iface = NULL;
        for (size_t i = 0; i < d->n_interfaces; i++)
                if (strcmp(d->interfaces[i].pci_address, pf_addr) == 0)
                        iface = &d->interfaces[i];
        if (!iface) {
                d->interfaces = realloc(d->interfaces, (d->n_interfaces + 1) * sizeof(*iface));
                iface = &d->interfaces[d->n_interfaces++];
                *iface = (struct desired_interface){ 0 };
                snprintf(iface->pci_address, sizeof(iface->pci_address), "%s", pf_addr);
        }
        iface->groups = realloc(iface->groups, (iface->n_groups + 1) * sizeof(*iface->groups));
        struct vf_group *g = &iface->groups[iface->n_groups++];
        *g = (struct vf_group){ .device_type = type, .vf_start = first, .vf_end = last };
        snprintf(g->resource_name, sizeof(g->resource_name), "%s", resource);
        snprintf(g->policy_name, sizeof(g->policy_name), "policy-%s", resource);
        return g;
}
