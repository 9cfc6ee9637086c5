/* SPDX-License-Identifier: Apache-2.0 */
/* Inventories built in code for policy/plan unit tests (no sysfs needed).
 * Header-only helpers; abort on allocation failure (tests only). */
#pragma once

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/inventory.h"

static inline void *fake_xcalloc(size_t n, size_t size)
{
        void *p = calloc(n ? n : 1, size);
        if (!p)
                abort();
        return p;
}

/* Adds a PF with one netdev (MTU, admin up) and num_vfs VFs bound to vf_driver (each with a
 * netdev of MTU 1500 unless the driver is vfio-pci). Returns the PF. */
static inline struct pf_info *fake_add_pf(struct inventory *inv, const char *pci,
                                          const char *ifname, uint16_t vendor, uint16_t device,
                                          int total_vfs, int num_vfs, int mtu,
                                          const char *vf_driver)
{
        struct pf_info *pfs = realloc(inv->pfs, (inv->n_pfs + 1) * sizeof(*pfs));
        struct pf_info *pf;

        if (!pfs)
                abort();
        inv->pfs = pfs;
        pf = &pfs[inv->n_pfs++];
        *pf = (struct pf_info){ .vendor = vendor,
                                .device = device,
                                .total_vfs = total_vfs,
                                .num_vfs = num_vfs,
                                .numa_node = -1,
                                .iommu_group = -1,
                                .class_code = 0x020000 };
        snprintf(pf->pci_address, sizeof(pf->pci_address), "%s", pci);
        snprintf(pf->driver, sizeof(pf->driver), "%s", vendor == 0x15b3 ? "mlx5_core" : "ice");
        snprintf(pf->eswitch_mode, sizeof(pf->eswitch_mode), "legacy");
        if (ifname) {
                pf->netdevs = fake_xcalloc(1, sizeof(*pf->netdevs));
                netdev_info_init(&pf->netdevs[0]);
                snprintf(pf->netdevs[0].name, sizeof(pf->netdevs[0].name), "%s", ifname);
                pf->netdevs[0].mtu = mtu;
                pf->netdevs[0].admin_up = true;
                pf->netdevs[0].link_type = LINK_TYPE_ETH;
                pf->n_netdevs = 1;
        }
        pf->vfs = fake_xcalloc((size_t)num_vfs, sizeof(*pf->vfs));
        for (int i = 0; i < num_vfs; i++) {
                struct vf_info *vf = &pf->vfs[pf->n_vfs++];
                *vf = (struct vf_info){ .vf_index = i, .numa_node = -1, .iommu_group = -1 };
                snprintf(vf->pci_address, sizeof(vf->pci_address), "%.8s%02x.%d", pci,
                         (2 + i / 8) & 0xff, i % 8);
                snprintf(vf->driver, sizeof(vf->driver), "%s", vf_driver ? vf_driver : "");
                if (vf_driver && strcmp(vf_driver, "vfio-pci") != 0 && *vf_driver) {
                        vf->netdevs = fake_xcalloc(1, sizeof(*vf->netdevs));
                        netdev_info_init(&vf->netdevs[0]);
                        /* Test names are short; a checked return keeps -O3 quiet. */
                        if (snprintf(vf->netdevs[0].name, sizeof(vf->netdevs[0].name), "%.8sv%d",
                                     ifname ? ifname : "vf", i) < 0)
                                abort();
                        vf->netdevs[0].mtu = 1500;
                        vf->n_netdevs = 1;
                }
        }
        return pf;
}
