/* SPDX-License-Identifier: Apache-2.0 */
/* plan_simulate(): the effect of a plan on an inventory, in memory, for tests and benchmarks. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/plan.h"

static struct pf_info *find_pf(struct inventory *inv, const char *pci)
{
        for (size_t i = 0; i < inv->n_pfs; i++)
                if (strcmp(inv->pfs[i].pci_address, pci) == 0)
                        return &inv->pfs[i];
        return NULL;
}

static struct vf_info *find_vf(struct pf_info *pf, int index)
{
        for (size_t i = 0; i < pf->n_vfs; i++)
                if (pf->vfs[i].vf_index == index)
                        return &pf->vfs[i];
        return NULL;
}

static int give_netdev(struct vf_info *vf, int mtu)
{
        if (vf->n_netdevs == 0) {
                vf->netdevs = calloc(1, sizeof(*vf->netdevs));
                if (!vf->netdevs)
                        return -ENOMEM;
                netdev_info_init(&vf->netdevs[0]);
                vf->n_netdevs = 1;
                vf->netdevs[0].admin_up = true;
        }
        vf->netdevs[0].mtu = mtu;
        return 0;
}

/* Fresh VFs, as the kernel creates them: probed by the default driver, MTU 1500. */
static int set_num_vfs(struct pf_info *pf, int n)
{
        struct vf_info *vfs = NULL;

        if (n > 0) {
                vfs = calloc((size_t)n, sizeof(*vfs));
                if (!vfs)
                        return -ENOMEM;
        }
        for (size_t i = 0; i < pf->n_vfs; i++)
                vf_info_done(&pf->vfs[i]);
        free(pf->vfs);
        pf->vfs = vfs;
        pf->n_vfs = 0;
        pf->num_vfs = n;
        for (int i = 0; i < n; i++) {
                struct vf_info *vf = &vfs[pf->n_vfs++];
                *vf = (struct vf_info){ .vf_index = i, .numa_node = -1, .iommu_group = -1 };
                snprintf(vf->driver, sizeof(vf->driver), "%s", PLAN_SIM_DEFAULT_DRIVER);
                if (give_netdev(vf, 1500) < 0)
                        return -ENOMEM;
        }
        return 0;
}

static int bind_driver(struct vf_info *vf, const char *driver)
{
        if (*driver) {
                snprintf(vf->driver, sizeof(vf->driver), "%s", driver);
                free(vf->netdevs);
                vf->netdevs = NULL;
                vf->n_netdevs = 0;
                return 0;
        }
        snprintf(vf->driver, sizeof(vf->driver), "%s", PLAN_SIM_DEFAULT_DRIVER);
        return give_netdev(vf, 1500);
}

static int apply_action(const struct action *a, struct inventory *inv)
{
        struct pf_info *pf = find_pf(inv, a->pf);
        struct netdev_info *nd;
        struct vf_info *vf;

        if (!pf)
                return 0;
        nd = pf->n_netdevs > 0 ? &pf->netdevs[0] : NULL;
        switch (a->kind) {
        case ACTION_SET_NUM_VFS:
        case ACTION_RESET_PF:
                return set_num_vfs(pf, a->value);
        case ACTION_SET_ESWITCH_MODE:
                snprintf(pf->eswitch_mode, sizeof(pf->eswitch_mode), "%.15s", a->text);
                return 0;
        case ACTION_SET_PF_MTU:
        case ACTION_RESTORE_PF_MTU:
                if (nd)
                        nd->mtu = a->value;
                return 0;
        case ACTION_PF_LINK_UP:
                if (nd)
                        nd->admin_up = true;
                return 0;
        case ACTION_BIND_DRIVER:
                vf = find_vf(pf, a->vf_index);
                return vf ? bind_driver(vf, a->text) : 0;
        case ACTION_SET_VF_MTU:
                vf = find_vf(pf, a->vf_index);
                return vf ? give_netdev(vf, a->value) : 0;
        case ACTION_SET_VF_GUID:
                vf = find_vf(pf, a->vf_index);
                if (vf) {
                        vf->has_ib_guids = true;
                        vf->ib_node_guid = vf->ib_port_guid = a->guid;
                }
                return 0;
        default:
                return 0;
        }
}

int plan_simulate(const struct plan *p, struct inventory *inv)
{
        for (size_t i = 0; i < p->n_actions; i++) {
                int r = apply_action(&p->actions[i], inv);
                if (r < 0)
                        return r;
        }
        return 0;
}
