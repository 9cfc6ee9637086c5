/* SPDX-License-Identifier: Apache-2.0 */
#include "host/discover-kernel.h"

#include <stdlib.h>
#include <string.h>

#include "host/devlink.h"
#include "host/netlink-link.h"
#include "host/rdma-verbs.h"
#include "util/log.h"

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
                                pf->vfs[i].has_ib_guids = list[j].has_guids;
                                pf->vfs[i].ib_node_guid = list[j].node_guid;
                                pf->vfs[i].ib_port_guid = list[j].port_guid;
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
