/* SPDX-License-Identifier: Apache-2.0 */
/* The VF counters on the metrics endpoint (agent/metrics-vf.c) from the PF's RTM_GETLINK
 * reply as the kernel writes it (rtnl_fill_vfinfo: IFLA_VFINFO_LIST, each IFLA_VF_INFO with
 * its IFLA_VF_STATS nest), answered by the netlink double (netlink-double.h): the
 * sriov-network-metrics-exporter names (sriov_vf_*), every counter in its own family with the
 * value the driver reported, labels pf/vf/pciAddr/numa_node, zeros written (not left out) for
 * a driver without per-VF counters, and the pciAddr that joins them to sriov_kubepoddevice,
 * the pod holding the VF. */
/* glibc's net/if.h before any linux/ header (linux/libc-compat.h then defers to it) */
#include <net/if.h>

#include <errno.h>
#include <linux/if_arp.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "deviceplugin/podresources.h"
#include "fake-inventory.h"
#include "host/netlink-link.h"
#include "metrics-vf.h"
#include "metrics/exposition.h"
#include "model/inventory.h"
#include "netlink-double.h"
#include "util/macro.h"

#define PF_NAME "ens1f0"

struct fixture {
        struct nldouble d;
        struct nl_sock *sk;
        struct inventory inv;
};

static int setup(void **state)
{
        struct fixture *f = calloc(1, sizeof(*f));
        assert_non_null(f);
        nldouble_init(&f->d);
        /* an Ethernet PF with 3 VFs; the driver counts per VF (mlx5's ndo_get_vf_stats) */
        f->d.pf_type = ARPHRD_ETHER;
        f->d.pf_ifindex = 4;
        snprintf(f->d.pf_name, sizeof(f->d.pf_name), "%s", PF_NAME);
        f->d.pf_num_vfs = 3;
        f->d.vf_stats[0] = (struct nldouble_vf_stats){ .rx_packets = 11,
                                                       .tx_packets = 12,
                                                       .rx_bytes = 1300,
                                                       .tx_bytes = 1400,
                                                       .broadcast = 15,
                                                       .multicast = 16,
                                                       .rx_dropped = 17,
                                                       .tx_dropped = 18 };
        /* VF 1: nothing counted yet (or a driver such as igb that keeps no per-VF counters) */
        f->d.vf_stats[2] = (struct nldouble_vf_stats){ .rx_packets = 21,
                                                       .tx_packets = 22,
                                                       .rx_bytes = 18446744073709551615ULL,
                                                       .tx_bytes = 2400,
                                                       .broadcast = 25,
                                                       .multicast = 26,
                                                       .rx_dropped = 27,
                                                       .tx_dropped = 28 };
        f->sk = nldouble_socket();
        assert_non_null(f->sk);
        /* the last discovery knows VFs 0 and 1 (0000:3b:02.0, .1): VF 2 came after it */
        struct pf_info *pf =
            fake_add_pf(&f->inv, "0000:3b:00.0", PF_NAME, 0x15b3, 0x1017, 8, 2, 1500, "mlx5_core");
        pf->numa_node = 1;
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        struct fixture *f = *state;
        nl_socket_free(f->sk);
        nldouble_done(&f->d);
        inventory_done(&f->inv);
        free(f);
        return 0;
}

static char *finish(struct metrics_writer *w)
{
        char *text = NULL;
        size_t len = 0;
        assert_int_equal(metrics_writer_finish(w, &text, &len), 0);
        return text;
}

#define VF_LABELS(vf, pci)       "{pf=\"" PF_NAME "\",vf=\"" vf "\",pciAddr=\"" pci "\",numa_node=\"1\"} "
#define SAMPLE(name, vf, pci, v) "sriov_vf_" name VF_LABELS(vf, pci) v "\n"
/* a family's HELP, TYPE and samples for VFs 0, 1 (in the inventory) and 2 (not in it) */
#define FAMILY(name, help, v0, v1, v2)                                                             \
        "# HELP sriov_vf_" name " " help "\n# TYPE sriov_vf_" name                                 \
        " untyped\n" SAMPLE(name, "0", "0000:3b:02.0", v0) SAMPLE(name, "1", "0000:3b:02.1", v1)   \
            SAMPLE(name, "2", "", v2)

static void test_vf_counters_as_the_kernel_reports_them(void **state)
{
        struct fixture *f = *state;
        struct metrics_writer w = { 0 };
        assert_int_equal(agent_metrics_write_vf_counters(&w, &f->inv, f->sk), 0);
        _cleanup_free_ char *text = finish(&w);
        static const char *const families[] = {
                FAMILY("rx_bytes", "Bytes received by the VF (IFLA_VF_STATS).", "1300", "0",
                       "18446744073709551615"),
                FAMILY("tx_bytes", "Bytes sent by the VF (IFLA_VF_STATS).", "1400", "0", "2400"),
                FAMILY("rx_packets", "Packets received by the VF (IFLA_VF_STATS).", "11", "0",
                       "21"),
                FAMILY("tx_packets", "Packets sent by the VF (IFLA_VF_STATS).", "12", "0", "22"),
                FAMILY("rx_dropped", "Received packets the VF dropped (IFLA_VF_STATS).", "17", "0",
                       "27"),
                FAMILY("tx_dropped", "Packets to send the VF dropped (IFLA_VF_STATS).", "18", "0",
                       "28"),
                FAMILY("rx_broadcast", "Broadcast packets received by the VF.", "15", "0", "25"),
                FAMILY("rx_multicast", "Multicast packets received by the VF.", "16", "0", "26"),
        };
        char want[8192] = "";
        for (size_t i = 0; i < ELEMENTSOF(families); i++)
                strcat(want, families[i]);
        assert_string_equal(text, want);
        /* one request for the PF, by name, asking for the VFs with their stats */
        assert_int_equal(f->d.n_requests, 1);
        struct nlattr *tb[IFLA_MAX + 1];
        struct nlmsghdr *req = (struct nlmsghdr *)f->d.request;
        assert_int_equal(req->nlmsg_type, RTM_GETLINK);
        assert_int_equal(nlmsg_parse(req, sizeof(struct ifinfomsg), tb, IFLA_MAX, NULL), 0);
        assert_string_equal(nla_get_string(tb[IFLA_IFNAME]), PF_NAME);
        assert_int_equal(nla_get_u32(tb[IFLA_EXT_MASK]), RTEXT_FILTER_VF);
}

/* A PF the kernel does not know (renamed or gone since the last discovery) and a PF without a
 * netdev are left out; the other PFs' VFs are written. */
static void test_a_pf_the_kernel_cannot_answer_for_is_left_out(void **state)
{
        struct fixture *f = *state;
        fake_add_pf(&f->inv, "0000:5e:00.0", "ens2f0", 0x15b3, 0x1017, 8, 2, 1500, "mlx5_core");
        fake_add_pf(&f->inv, "0000:af:00.0", NULL, 0x15b3, 0x1017, 8, 2, 1500, "mlx5_core");
        struct metrics_writer w = { 0 };
        assert_int_equal(agent_metrics_write_vf_counters(&w, &f->inv, f->sk), 0);
        _cleanup_free_ char *text = finish(&w);
        assert_non_null(strstr(text, "sriov_vf_rx_packets" VF_LABELS("0", "0000:3b:02.0") "11\n"));
        assert_null(strstr(text, "ens2f0"));
        assert_int_equal(f->d.n_requests, 2); /* ens1f0, ens2f0 (ENODEV); none for no netdev */

        /* no PF answers: no family at all (not families without samples) */
        snprintf(f->d.pf_name, sizeof(f->d.pf_name), "renamed0");
        struct metrics_writer w2 = { 0 };
        assert_int_equal(agent_metrics_write_vf_counters(&w2, &f->inv, f->sk), 0);
        _cleanup_free_ char *empty = finish(&w2);
        assert_string_equal(empty, "");
}

/* What a dashboard joins: sriov_vf_* and sriov_kubepoddevice share pciAddr, so
 * `sriov_vf_rx_dropped * on(pciAddr) group_left(pod, namespace) sriov_kubepoddevice` names
 * the pod that holds the VF. A whole-card RDMA ID (no PCI address) is not attributed. */
static void test_the_pod_holding_a_vf_joins_on_pciaddr(void **state)
{
        struct fixture *f = *state;
        char resource[] = "openshift.io/mlxnet", vf0[] = "0000:3b:02.0", ns[] = "ml",
             pod[] = "train-1", container[] = "trainer", rdma[] = "rdma/rdma_hca", card[] = "3";
        struct dp_device_holder holders[] = {
                { .resource = resource,
                  .id = vf0,
                  .namespace_ = ns,
                  .pod = pod,
                  .container = container },
                { .resource = rdma,
                  .id = card,
                  .namespace_ = ns,
                  .pod = pod,
                  .container = container },
        };
        const struct dp_usage usage = { .holders = holders, .n_holders = ELEMENTSOF(holders) };
        struct metrics_writer w = { 0 };
        assert_int_equal(agent_metrics_write_vf_counters(&w, &f->inv, f->sk), 0);
        agent_metrics_write_pod_devices(&w, &usage);
        _cleanup_free_ char *text = finish(&w);

        const char *join = "sriov_kubepoddevice{pciAddr=\"0000:3b:02.0\","
                           "dev_type=\"openshift.io/mlxnet\",pod=\"train-1\",namespace=\"ml\","
                           "container=\"trainer\"} 1\n";
        assert_non_null(strstr(text, "# TYPE sriov_kubepoddevice gauge\n"));
        assert_non_null(strstr(text, join));
        assert_non_null(strstr(text, "sriov_agent_pod_device{resource=\"openshift.io/mlxnet\","
                                     "pci_address=\"0000:3b:02.0\",namespace=\"ml\","
                                     "pod=\"train-1\",container=\"trainer\"} 1\n"));
        assert_non_null(strstr(text, "sriov_vf_rx_dropped" VF_LABELS("0", "0000:3b:02.0") "17\n"));
        assert_null(strstr(text, "rdma/rdma_hca"));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_vf_counters_as_the_kernel_reports_them, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_a_pf_the_kernel_cannot_answer_for_is_left_out,
                                                setup, teardown),
                cmocka_unit_test_setup_teardown(test_the_pod_holding_a_vf_joins_on_pciaddr, setup,
                                                teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
