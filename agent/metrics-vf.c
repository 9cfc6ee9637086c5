/* SPDX-License-Identifier: Apache-2.0 */
/* sriov-network-metrics-exporter's families (metrics-vf.h): what its dashboards query, with
 * the names and labels it gives them. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deviceplugin/podresources.h"
#include "host/netlink-link.h"
#include "metrics-vf.h"
#include "metrics/exposition.h"
#include "model/inventory.h"
#include "util/macro.h"

/* VF counters of every PF, gathered first: each family's samples must be contiguous. */
struct vf_sample {
        const struct pf_info *pf;
        const struct vf_info *vf; /* NULL when the VF is not in the last discovery */
        struct netlink_vf_info stats;
};

static int gather_vf_stats(const struct inventory *inv, struct nl_sock *rtnl,
                           struct vf_sample **ret, size_t *ret_n)
{
        struct vf_sample *items = NULL;
        size_t n = 0;
        for (size_t i = 0; i < inv->n_pfs; i++) {
                const struct pf_info *pf = &inv->pfs[i];
                const char *ifname = pf_netdev_name(pf);
                _cleanup_free_ struct netlink_vf_info *vfs = NULL;
                size_t n_vfs = 0;
                if (pf->n_vfs == 0 || !ifname)
                        continue;
                if (host_netlink_get_vf_stats(rtnl, ifname, &vfs, &n_vfs) < 0 ||
                    n_vfs == 0) /* logged */
                        continue;
                /* one growth per PF, by the VFs the kernel listed */
                struct vf_sample *grown = reallocarray(items, n + n_vfs, sizeof(*items));
                if (!grown) {
                        free(items);
                        return -ENOMEM;
                }
                items = grown;
                for (size_t j = 0; j < n_vfs; j++) {
                        if (!vfs[j].have_stats)
                                continue;
                        items[n++] = (struct vf_sample){ .pf = pf,
                                                         .vf = pf_find_vf(pf, vfs[j].vf),
                                                         .stats = vfs[j] };
                }
        }
        *ret = items;
        *ret_n = n;
        return 0;
}

int agent_metrics_write_vf_counters(struct metrics_writer *w, const struct inventory *inv,
                                    struct nl_sock *rtnl)
{
        /* Untyped as sriov-network-metrics-exporter exposes them: counters by nature, but
         * without the _total suffix. */
        static const struct {
                const char *name, *help;
                size_t offset;
        } families[] = {
#define F(field, name, help) { "sriov_vf_" name, help, offsetof(struct netlink_vf_info, field) }
                F(rx_bytes, "rx_bytes", "Bytes received by the VF (IFLA_VF_STATS)."),
                F(tx_bytes, "tx_bytes", "Bytes sent by the VF (IFLA_VF_STATS)."),
                F(rx_packets, "rx_packets", "Packets received by the VF (IFLA_VF_STATS)."),
                F(tx_packets, "tx_packets", "Packets sent by the VF (IFLA_VF_STATS)."),
                F(rx_dropped, "rx_dropped", "Received packets the VF dropped (IFLA_VF_STATS)."),
                F(tx_dropped, "tx_dropped", "Packets to send the VF dropped (IFLA_VF_STATS)."),
                F(broadcast, "rx_broadcast", "Broadcast packets received by the VF."),
                F(multicast, "rx_multicast", "Multicast packets received by the VF."),
#undef F
        };
        _cleanup_free_ struct vf_sample *items = NULL;
        size_t n = 0;
        int r = gather_vf_stats(inv, rtnl, &items, &n);
        if (r < 0 || n == 0)
                return r;
        for (size_t f = 0; f < ELEMENTSOF(families); f++) {
                metrics_family(w, families[f].name, METRICS_UNTYPED, families[f].help);
                for (size_t i = 0; i < n; i++) {
                        char vf[16], numa[16];
                        snprintf(vf, sizeof(vf), "%d", items[i].stats.vf);
                        snprintf(numa, sizeof(numa), "%d", items[i].pf->numa_node);
                        uint64_t v;
                        memcpy(&v, (const char *)&items[i].stats + families[f].offset, sizeof(v));
                        metrics_sample_u64(
                            w, families[f].name,
                            METRICS_LABELS(
                                { "pf", pf_netdev_name(items[i].pf) }, { "vf", vf },
                                { "pciAddr", items[i].vf ? items[i].vf->pci_address : "" },
                                { "numa_node", numa }),
                            v);
                }
        }
        return 0;
}

void agent_metrics_write_pod_devices(struct metrics_writer *w, const struct dp_usage *usage)
{
        metrics_family(w, "sriov_agent_pod_device", METRICS_GAUGE,
                       "A PCI device held by a pod's container (1), from the kubelet's "
                       "PodResources; join on pci_address.");
        for (size_t i = 0; usage && i < usage->n_holders; i++) {
                const struct dp_device_holder *h = &usage->holders[i];
                if (!strchr(h->id, ':'))
                        continue;
                metrics_sample(w, "sriov_agent_pod_device",
                               METRICS_LABELS({ "resource", h->resource }, { "pci_address", h->id },
                                              { "namespace", h->namespace_ }, { "pod", h->pod },
                                              { "container", h->container }),
                               1);
        }
        /* upstream's join metric: one series per device a container holds (PCI IDs, as
         * upstream; whole-card RDMA IDs are interchangeable numbers, not attributable) */
        metrics_family(w, "sriov_kubepoddevice", METRICS_GAUGE,
                       "A device held by a pod's container (1), from the kubelet's "
                       "PodResources; join on pciAddr.");
        for (size_t i = 0; usage && i < usage->n_holders; i++) {
                const struct dp_device_holder *h = &usage->holders[i];
                if (!strchr(h->id, ':'))
                        continue;
                metrics_sample(w, "sriov_kubepoddevice",
                               METRICS_LABELS({ "pciAddr", h->id }, { "dev_type", h->resource },
                                              { "pod", h->pod }, { "namespace", h->namespace_ },
                                              { "container", h->container }),
                               1);
        }
}
