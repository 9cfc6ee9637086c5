/* SPDX-License-Identifier: Apache-2.0 */
#include "deviceplugin/health.h"

#include <string.h>

static bool no_carrier(const struct netdev_info *n)
{
        return strcmp(n->operstate, "down") == 0 || strcmp(n->operstate, "lowerlayerdown") == 0;
}

/* sysfs prints "4: ACTIVE"; an empty state was not read (a device that does not open). */
static bool ib_port_inactive(const struct rdma_device *d)
{
        return strcmp(d->link_layer, "InfiniBand") == 0 && d->port_state[0] != 0 &&
               strstr(d->port_state, "ACTIVE") == NULL;
}

const char *dp_function_down_reason(const char *driver, const struct netdev_info *netdevs,
                                    size_t n_netdevs, const struct rdma_device *rdma, size_t n_rdma,
                                    const struct dp_health_options *o)
{
        if (!driver || driver[0] == 0)
                return "driver unbound";
        if (o && o->ignore_link)
                return NULL;
        for (size_t i = 0; i < n_netdevs; i++)
                if (no_carrier(&netdevs[i]))
                        return "link down";
        for (size_t i = 0; i < n_rdma; i++)
                if (ib_port_inactive(&rdma[i]))
                        return "InfiniBand port not ACTIVE";
        return NULL;
}

const char *dp_pf_down_reason(const struct pf_info *pf, const struct dp_health_options *o)
{
        return dp_function_down_reason(pf->driver, pf->netdevs, pf->n_netdevs, pf->rdma, pf->n_rdma,
                                       o);
}
