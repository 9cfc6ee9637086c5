/* SPDX-License-Identifier: Apache-2.0 */
#include "host/rdma-verbs.h"

#include <stdio.h>
#include <string.h>

#include <infiniband/verbs.h>

#include "util/log.h"

/* sysfs prints "4: ACTIVE"; produce the same form so both sources read alike. */
static const char *const port_state_names[] = {
        [IBV_PORT_NOP] = "NOP",       [IBV_PORT_DOWN] = "DOWN",
        [IBV_PORT_INIT] = "INIT",     [IBV_PORT_ARMED] = "ARMED",
        [IBV_PORT_ACTIVE] = "ACTIVE", [IBV_PORT_ACTIVE_DEFER] = "ACTIVE_DEFER",
};

static struct rdma_device *find_rdma(struct inventory *inv, const char *name)
{
        for (size_t i = 0; i < inv->n_pfs; i++) {
                struct pf_info *pf = &inv->pfs[i];
                for (size_t j = 0; j < pf->n_rdma; j++)
                        if (strcmp(pf->rdma[j].name, name) == 0)
                                return &pf->rdma[j];
                for (size_t v = 0; v < pf->n_vfs; v++)
                        for (size_t j = 0; j < pf->vfs[v].n_rdma; j++)
                                if (strcmp(pf->vfs[v].rdma[j].name, name) == 0)
                                        return &pf->vfs[v].rdma[j];
        }
        return NULL;
}

static void query_port(struct ibv_device *ibdev, struct rdma_device *dev)
{
        struct ibv_context *ctx = ibv_open_device(ibdev);
        if (!ctx) {
                log_debug("RDMA device %s does not open; keeping sysfs port attributes", dev->name);
                return;
        }
        struct ibv_port_attr attr;
        if (ibv_query_port(ctx, 1, &attr) == 0) {
                unsigned state = attr.state;
                if (state < sizeof(port_state_names) / sizeof(port_state_names[0]) &&
                    port_state_names[state])
                        snprintf(dev->port_state, sizeof(dev->port_state), "%u: %s", state,
                                 port_state_names[state]);
                snprintf(dev->link_layer, sizeof(dev->link_layer), "%s",
                         attr.link_layer == IBV_LINK_LAYER_ETHERNET ? "Ethernet" : "InfiniBand");
        }
        ibv_close_device(ctx);
}

void host_rdma_verbs_query_ports(struct inventory *inv)
{
        int n = 0;
        struct ibv_device **list = ibv_get_device_list(&n);
        if (!list) {
                log_debug("libibverbs lists no RDMA devices");
                return;
        }
        for (int i = 0; i < n; i++) {
                struct rdma_device *dev = find_rdma(inv, ibv_get_device_name(list[i]));
                if (dev)
                        query_port(list[i], dev);
        }
        ibv_free_device_list(list);
}
