/* SPDX-License-Identifier: Apache-2.0 */
#include "host/discover-kernel.h"

#include <stdlib.h>
#include <string.h>

#include "host/devlink.h"
#include "host/netlink-link.h"
#include "host/rdma-verbs.h"
#include "util/ipoib.h"
#include "util/log.h"

void host_discover_vf_guids(struct vf_info *vf, const struct netlink_vf_info *info)
{
        if (!info || !info->has_guids)
                return;
        vf->has_ib_guids = true;
        vf->ib_node_guid = info->node_guid;
        vf->ib_port_guid = info->port_guid;
        for (size_t k = 0; k < vf->n_netdevs; k++) {
                uint64_t guid;
                if (vf->netdevs[k].link_type != LINK_TYPE_IB ||
                    ipoib_hwaddr_text_guid(vf->netdevs[k].mac, &guid) < 0)
                        continue;
                vf->ib_port_guid = guid;
                /* The agent (and the plugin) set both GUIDs to one value; a node GUID the VF
                 * info reports as 0 is one not set through netlink since the driver loaded,
                 * not a wrong one: judged by the port GUID the VF carries. */
                if (vf->ib_node_guid == 0)
                        vf->ib_node_guid = guid;
                return;
        }
}

static void query_vf_vlans(struct pf_info *pf)
{
        const char *ifname = pf_netdev_name(pf);
        struct netlink_vf_info *list = NULL;
        size_t n = 0;

        if (!ifname || pf->n_vfs == 0)
                return;
        int r = host_netlink_get_vf_list(ifname, &list, &n);
        if (r < 0) {
                log_pf(LOG_DEBUG, r, pf->pci_address, "VF VLANs of %s unknown", ifname);
                return;
        }
        for (size_t i = 0; i < pf->n_vfs; i++)
                for (size_t j = 0; j < n; j++)
                        if (list[j].vf == pf->vfs[i].vf_index) {
                                pf->vfs[i].vlan = list[j].vlan;
                                host_discover_vf_guids(&pf->vfs[i], &list[j]);
                        }
        free(list);
}

static void query_eswitch_mode(struct pf_info *pf)
{
        char mode[sizeof(pf->eswitch_mode)];

        if (host_devlink_get_eswitch_mode(pf->pci_address, mode, sizeof(mode)) >= 0)
                strcpy(pf->eswitch_mode, mode);
}

static void query_alt_names(struct pf_info *pf)
{
        pf->n_alt_names = 0;
        for (size_t i = 0; i < pf->n_netdevs && pf->n_alt_names < PF_ALT_NAMES_MAX; i++) {
                size_t n = 0;
                int r =
                    host_netlink_get_alt_names(pf->netdevs[i].name, pf->alt_names + pf->n_alt_names,
                                               PF_ALT_NAMES_MAX - pf->n_alt_names, &n);
                if (r < 0) {
                        log_pf(LOG_DEBUG, r, pf->pci_address, "alternative names of %s unknown",
                               pf->netdevs[i].name);
                        continue;
                }
                pf->n_alt_names += n;
        }
}

void host_discover_query_kernel(struct inventory *inv)
{
        for (size_t i = 0; i < inv->n_pfs; i++) {
                query_vf_vlans(&inv->pfs[i]);
                query_alt_names(&inv->pfs[i]);
                query_eswitch_mode(&inv->pfs[i]);
        }
        host_rdma_verbs_query_ports(inv);
}
