/* SPDX-License-Identifier: Apache-2.0 */
/* The families sriov-network-metrics-exporter has, under its names and labels so that its
 * dashboards keep working: each VF's counters from the PF (IFLA_VF_STATS) and the join metric
 * naming the pod that holds a device (from the kubelet's PodResources). */
#pragma once

struct dp_usage;
struct inventory;
struct metrics_writer;
struct nl_sock;

/* sriov_vf_* for the VFs of every PF of inv with a netdev, asked on rtnl (an rtnetlink socket,
 * host_netlink_open(NETLINK_ROUTE, HOST_NETLINK_VF_LIST_RCVBUF)). A PF the kernel cannot
 * answer for is left out (logged); nothing is written when no PF answers. Labels pf, vf,
 * pciAddr (the VF's, from inv; "" for a VF inv does not know), numa_node. */
int agent_metrics_write_vf_counters(struct metrics_writer *w, const struct inventory *inv,
                                    struct nl_sock *rtnl);

/* sriov_agent_pod_device and sriov_kubepoddevice: one series per PCI device a container holds
 * (usage NULL: the families without samples). */
void agent_metrics_write_pod_devices(struct metrics_writer *w, const struct dp_usage *usage);
