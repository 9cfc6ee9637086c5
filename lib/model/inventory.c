/* SPDX-License-Identifier: Apache-2.0 */
#include "model/inventory.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

const char *link_type_to_string(enum link_type t)
{
        switch (t) {
        case LINK_TYPE_ETH:
                return "ETH";
        case LINK_TYPE_IB:
                return "IB";
        default:
                return "";
        }
}

void rdma_device_done(struct rdma_device *d)
{
        for (size_t i = 0; i < d->n_char_devices; i++)
                free(d->char_devices[i]);
        free(d->char_devices);
        *d = (struct rdma_device){ 0 };
}

void netdev_info_init(struct netdev_info *n)
{
        *n = (struct netdev_info){ .mtu = -1, .speed_mbps = -1 };
}

static void rdma_list_free(struct rdma_device *list, size_t n)
{
        for (size_t i = 0; i < n; i++)
                rdma_device_done(&list[i]);
        free(list);
}

void vf_info_done(struct vf_info *vf)
{
        free(vf->netdevs);
        rdma_list_free(vf->rdma, vf->n_rdma);
        free(vf->error);
        *vf = (struct vf_info){ 0 };
}

void pf_info_done(struct pf_info *pf)
{
        free(pf->vendor_name);
        free(pf->device_name);
        free(pf->netdevs);
        rdma_list_free(pf->rdma, pf->n_rdma);
        for (size_t i = 0; i < pf->n_vfs; i++)
                vf_info_done(&pf->vfs[i]);
        free(pf->vfs);
        free(pf->error);
        *pf = (struct pf_info){ 0 };
}

void inventory_done(struct inventory *inv)
{
        for (size_t i = 0; i < inv->n_pfs; i++)
                pf_info_done(&inv->pfs[i]);
        free(inv->pfs);
        for (size_t i = 0; i < inv->n_rdma_nics; i++)
                pf_info_done(&inv->rdma_nics[i]);
        free(inv->rdma_nics);
        *inv = (struct inventory){ 0 };
}

const struct pf_info *inventory_find_pf(const struct inventory *inv, const char *pci_address)
{
        for (size_t i = 0; i < inv->n_pfs; i++)
                if (strcasecmp(inv->pfs[i].pci_address, pci_address) == 0)
                        return &inv->pfs[i];
        return NULL;
}

const struct pf_info *inventory_find_pf_by_netdev(const struct inventory *inv, const char *ifname)
{
        for (size_t i = 0; i < inv->n_pfs; i++)
                for (size_t j = 0; j < inv->pfs[i].n_netdevs; j++)
                        if (strcmp(inv->pfs[i].netdevs[j].name, ifname) == 0)
                                return &inv->pfs[i];
        return NULL;
}

const struct vf_info *pf_find_vf(const struct pf_info *pf, int vf_index)
{
        for (size_t i = 0; i < pf->n_vfs; i++)
                if (pf->vfs[i].vf_index == vf_index)
                        return &pf->vfs[i];
        return NULL;
}

const char *pf_netdev_name(const struct pf_info *pf)
{
        return pf->n_netdevs > 0 ? pf->netdevs[0].name : NULL;
}

const char *vf_netdev_name(const struct vf_info *vf)
{
        return vf->n_netdevs > 0 ? vf->netdevs[0].name : NULL;
}
