/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for SR-IOV pools built from desired state + inventory (lib/deviceplugin/pool*.c). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "deviceplugin/health.h"
#include "deviceplugin/pool-set.h"
#include "dp-fixture.h"

static const struct dp_pool *find(const struct dp_pool_set *s, const char *res)
{
        const struct dp_pool *p = dp_pool_set_find(s, res);
        assert_non_null(p);
        return p;
}

static void test_ready_vfs_by_device_type(void **state)
{
        struct inventory inv = { 0 };
        fx_add_pf(&inv, 0x3b, "ens1f0", "mlx5_core", 4, 0);
        fx_add_pf(&inv, 0x5e, "ens2f0", "vfio-pci", 3, 1);
        struct pf_info *net = &inv.pfs[0];
        /* VF 1: no netdev yet; VF 2: wrongly bound to vfio-pci; VF 3: unbound */
        net->vfs[1].n_netdevs = 0;
        strcpy(net->vfs[2].driver, "vfio-pci");
        net->vfs[3].driver[0] = 0;
        struct desired_state d = { 0 };
        fx_add_group(&d, "0000:3b:00.0", "sriov_net", DEVICE_TYPE_NETDEVICE, 0, 3);
        fx_add_group(&d, "0000:5e:00.0", "sriov_dpdk", DEVICE_TYPE_VFIO_PCI, 0, 1);

        struct dp_pool_set s = { 0 };
        assert_int_equal(dp_pools_from_desired(&d, &inv, NULL, &s), 0);
        assert_int_equal(s.n_pools, 2);
        const struct dp_pool *p = find(&s, "openshift.io/sriov_net");
        assert_string_equal(p->prefix, "openshift.io");
        assert_string_equal(p->name, "sriov_net");
        assert_int_equal(p->n_devices, 1);
        assert_string_equal(p->devices[0].id, "0000:3b:01.0");
        assert_true(p->devices[0].healthy);
        assert_int_equal(p->devices[0].numa_node, 0);
        assert_string_equal(p->devices[0].pf, "0000:3b:00.0");

        p = find(&s, "openshift.io/sriov_dpdk");
        assert_int_equal(p->device_type, DEVICE_TYPE_VFIO_PCI);
        assert_int_equal(p->n_devices, 2); /* VF 2 is outside the range */
        assert_string_equal(p->devices[1].id, "0000:5e:01.1");
        assert_int_equal(p->devices[1].iommu_group, 100 + 0x5e * 16 + 1);
        assert_int_equal(p->devices[1].numa_node, 1);
        dp_pool_set_done(&s);

        /* vfio without an IOMMU group is not ready */
        inv.pfs[1].vfs[0].iommu_group = -1;
        assert_int_equal(dp_pools_from_desired(&d, &inv, "example.com", &s), 0);
        p = find(&s, "example.com/sriov_dpdk");
        assert_int_equal(p->n_devices, 1);
        dp_pool_set_done(&s);
        desired_state_done(&d);
        inventory_done(&inv);
}

static void test_rdma_topology_health(void **state)
{
        struct inventory inv = { 0 };
        struct pf_info *pf = fx_add_pf(&inv, 0x3b, "ens1f0", "mlx5_core", 3, 1);
        fx_add_rdma(&pf->vfs[0].rdma, &pf->vfs[0].n_rdma, 1);
        fx_add_rdma(&pf->vfs[2].rdma, &pf->vfs[2].n_rdma, 3);
        pf->vfs[2].numa_node = -1;
        struct desired_state d = { 0 };
        struct vf_group *g =
            fx_add_group(&d, "0000:3b:00.0", "rdma_vfs", DEVICE_TYPE_NETDEVICE, 0, 2);
        g->is_rdma = true;

        struct dp_pool_set s = { 0 };
        assert_int_equal(dp_pools_from_desired(&d, &inv, NULL, &s), 0);
        const struct dp_pool *p = find(&s, "openshift.io/rdma_vfs");
        assert_int_equal(p->n_devices, 2); /* VF 1 has no RDMA device */
        assert_string_equal(p->devices[0].rdma_device, "mlx5_1");
        assert_int_equal(p->devices[0].n_char_devices, 3);
        assert_string_equal(p->devices[0].char_devices[0], "/dev/infiniband/uverbs1");
        assert_int_equal(p->devices[0].numa_node, 1);
        assert_int_equal(p->devices[1].numa_node, -1); /* numa_node -1: no topology */
        dp_pool_set_done(&s);

        /* excludeTopology drops it; PF link down makes every VF Unhealthy */
        g->exclude_topology = true;
        strcpy(pf->netdevs[0].operstate, "down");
        assert_int_equal(dp_pools_from_desired(&d, &inv, NULL, &s), 0);
        p = find(&s, "openshift.io/rdma_vfs");
        assert_int_equal(p->devices[0].numa_node, -1);
        assert_false(p->devices[0].healthy);
        assert_false(p->devices[1].healthy);
        dp_pool_set_done(&s);
        desired_state_done(&d);
        inventory_done(&inv);
}

static void test_groups_on_two_pfs_share_a_pool(void **state)
{
        struct inventory inv = { 0 };
        fx_add_pf(&inv, 0x3b, "ens1f0", "mlx5_core", 2, 0);
        fx_add_pf(&inv, 0x5e, "ens2f0", "mlx5_core", 2, 1);
        struct desired_state d = { 0 };
        fx_add_group(&d, "0000:5e:00.0", "shared", DEVICE_TYPE_NETDEVICE, 0, 1);
        fx_add_group(&d, "0000:3b:00.0", "shared", DEVICE_TYPE_NETDEVICE, 0, 1);
        fx_add_group(&d, "0000:99:00.0", "absent_pf", DEVICE_TYPE_NETDEVICE, 0, 1);
        struct dp_pool_set s = { 0 };
        assert_int_equal(dp_pools_from_desired(&d, &inv, NULL, &s), 0);
        assert_int_equal(s.n_pools, 2);
        const struct dp_pool *p = find(&s, "openshift.io/shared");
        assert_int_equal(p->n_devices, 4);
        assert_string_equal(p->devices[0].id, "0000:3b:01.0"); /* sorted */
        assert_string_equal(p->devices[3].id, "0000:5e:01.1");
        assert_int_equal(find(&s, "openshift.io/absent_pf")->n_devices, 0);

        /* copy and take */
        struct dp_pool copy;
        assert_int_equal(dp_pool_copy(p, &copy), 0);
        assert_int_equal(copy.n_devices, 4);
        assert_string_equal(copy.devices[2].id, p->devices[2].id);
        dp_pool_done(&copy);
        struct dp_pool_set all = { 0 }, again = { 0 };
        assert_int_equal(dp_pool_set_take(&all, &s), 0);
        assert_int_equal(all.n_pools, 2);
        assert_int_equal(s.n_pools, 0);
        assert_int_equal(dp_pools_from_desired(&d, &inv, NULL, &again), 0);
        assert_int_equal(dp_pool_set_take(&all, &again), -EEXIST);
        dp_pool_set_done(&again);
        dp_pool_set_done(&all);
        desired_state_done(&d);
        inventory_done(&inv);
}

/* The node's choice of device plugin or DRA per resource: the set is cut in two, every pool
 * lands on exactly one side, devices and all. */
static void test_split_between_device_plugin_and_dra(void **state)
{
        struct inventory inv = { 0 };
        fx_add_pf(&inv, 0x3b, "ens1f0", "mlx5_core", 2, 0);
        fx_add_pf(&inv, 0x5e, "ens2f0", "mlx5_core", 2, 1);
        struct desired_state d = { 0 };
        fx_add_group(&d, "0000:3b:00.0", "gpu_nic", DEVICE_TYPE_NETDEVICE, 0, 1);
        fx_add_group(&d, "0000:5e:00.0", "plain", DEVICE_TYPE_NETDEVICE, 0, 1);
        struct dp_pool_set dp = { 0 }, dra = { 0 }, copies = { 0 };
        assert_int_equal(dp_pools_from_desired(&d, &inv, NULL, &dp), 0);
        char *names[] = { (char *)"gpu_nic", (char *)"not_on_this_node" };

        assert_int_equal(dp_pool_set_split(&dp, names, 2, &dra), 0);
        assert_int_equal(dp.n_pools, 1);
        assert_string_equal(dp.pools[0].resource, "openshift.io/plain");
        assert_int_equal(dra.n_pools, 1);
        assert_string_equal(dra.pools[0].resource, "openshift.io/gpu_nic");
        assert_int_equal(dra.pools[0].n_devices, 2);
        assert_string_equal(dra.pools[0].devices[0].id, "0000:3b:01.0");

        /* nothing named: nothing moves */
        assert_int_equal(dp_pool_set_split(&dp, NULL, 0, &dra), 0);
        assert_int_equal(dp.n_pools, 1);
        assert_int_equal(dra.n_pools, 1);

        assert_int_equal(dp_pool_set_append_copy(&copies, &dra), 0);
        assert_int_equal(dp_pool_set_append_copy(&copies, &dp), 0);
        assert_int_equal(copies.n_pools, 2);
        assert_string_equal(copies.pools[1].devices[1].id, dp.pools[0].devices[1].id);
        assert_ptr_not_equal(copies.pools[0].devices, dra.pools[0].devices);
        dp_pool_set_done(&copies);
        dp_pool_set_done(&dra);
        dp_pool_set_done(&dp);
        desired_state_done(&d);
        inventory_done(&inv);
}

static void test_invalid_names(void **state)
{
        struct inventory inv = { 0 };
        struct desired_state d = { 0 };
        fx_add_group(&d, "0000:3b:00.0", "../x", DEVICE_TYPE_NETDEVICE, 0, 0);
        struct dp_pool_set s = { 0 };
        assert_int_equal(dp_pools_from_desired(&d, &inv, NULL, &s), -EINVAL);
        assert_int_equal(s.n_pools, 0);
        desired_state_done(&d);
        fx_add_group(&d, "0000:3b:00.0", "ok", DEVICE_TYPE_NETDEVICE, 0, 0);
        assert_int_equal(dp_pools_from_desired(&d, &inv, "Bad/Prefix", &s), -EINVAL);
        desired_state_done(&d);
        struct dp_pool p = { 0 };
        assert_int_equal(dp_pool_set_names(&p, "openshift.io", "sriov-net_1"), 0);
        assert_string_equal(p.resource, "openshift.io/sriov-net_1");
        assert_int_equal(dp_pool_set_names(&p, "..", "x"), -EINVAL);
        assert_int_equal(dp_pool_set_names(&p, "a.io", ""), -EINVAL);
        assert_int_equal(dp_pool_set_names(&p, "a.io", "a b"), -EINVAL);
}

static void test_build_with_rdma_shared(void **state)
{
        struct inventory inv = { 0 };
        fx_add_pf(&inv, 0x3b, "ens1f0", "mlx5_core", 2, 0);
        fx_add_rdma(&inv.pfs[0].rdma, &inv.pfs[0].n_rdma, 0);
        struct desired_state d = { 0 };
        fx_add_group(&d, "0000:3b:00.0", "sriov_a", DEVICE_TYPE_NETDEVICE, 0, 1);
        struct rdma_shared_config c = { 0 };
        assert_int_equal(
            rdma_shared_config_parse("{\"configList\":[{\"resourceName\":\"hca\","
                                     "\"rdmaHcaMax\":2,\"selectors\":{\"vendors\":[\"15b3\"]}}]}",
                                     "t", &c, NULL),
            0);
        struct dp_pool_set s = { 0 };
        assert_int_equal(dp_pools_build(&d, &inv, NULL, &c, NULL, NULL, &s), 0);
        assert_int_equal(s.n_pools, 2);
        assert_int_equal(dp_pool_set_find(&s, "openshift.io/sriov_a")->n_devices, 2);
        assert_int_equal(dp_pool_set_find(&s, "rdma/hca")->n_devices, 2);
        dp_pool_set_done(&s);
        rdma_shared_config_done(&c);

        /* the same resource from both sides is refused */
        assert_int_equal(rdma_shared_config_parse("{\"configList\":[{\"resourceName\":\"sriov_a\","
                                                  "\"resourcePrefix\":\"openshift.io\","
                                                  "\"devices\":[\"ens1f0\"]}]}",
                                                  "t", &c, NULL),
                         0);
        assert_int_equal(dp_pools_build(&d, &inv, NULL, &c, NULL, NULL, &s), -EEXIST);
        assert_int_equal(s.n_pools, 0);
        rdma_shared_config_done(&c);
        desired_state_done(&d);
        inventory_done(&inv);
}

/* Issue 15.2: the CNI moved a VF's netdev into a pod; the VF stays in its pool (with its RDMA
 * char devices) until the VF itself goes or its group changes. */
static void test_vf_in_pod_keeps_its_slot(void **state)
{
        struct inventory inv = { 0 };
        struct pf_info *pf = fx_add_pf(&inv, 0x3b, "ens1f0", "mlx5_core", 3, 0);
        for (int i = 0; i < 3; i++)
                fx_add_rdma(&pf->vfs[i].rdma, &pf->vfs[i].n_rdma, 10 + i);
        struct desired_state d = { 0 };
        fx_add_group(&d, "0000:3b:00.0", "sriov_rdma", DEVICE_TYPE_NETDEVICE, 0, 2)->is_rdma = true;

        struct dp_pool_set served = { 0 }, s = { 0 };
        assert_int_equal(dp_pools_from_desired_keep(&d, &inv, NULL, NULL, &served), 0);
        assert_int_equal(find(&served, "openshift.io/sriov_rdma")->n_devices, 3);

        /* VF 1 in a pod: no netdev on the host; in exclusive RDMA mode no RDMA device either. */
        struct vf_info *vf = &inv.pfs[0].vfs[1];
        size_t n_netdevs = vf->n_netdevs, n_rdma = vf->n_rdma;
        vf->n_netdevs = 0;
        vf->n_rdma = 0;
        assert_int_equal(dp_pools_from_desired_keep(&d, &inv, NULL, &served, &s), 0);
        const struct dp_pool *p = find(&s, "openshift.io/sriov_rdma");
        assert_int_equal(p->n_devices, 3);
        const struct dp_device *dev = dp_pool_find_device(p, "0000:3b:01.1");
        assert_non_null(dev);
        assert_true(dev->healthy);
        assert_string_equal(dev->rdma_device, "mlx5_11");
        assert_int_equal(dev->n_char_devices, 3); /* the pod's char devices, as advertised */
        /* and again from that result: it stays as long as it is in the pod */
        dp_pool_set_done(&served);
        served = s;
        s = (struct dp_pool_set){ 0 };
        inv.pfs[0].netdevs[0].operstate[0] = 0;
        strcpy(inv.pfs[0].netdevs[0].operstate, "down");
        assert_int_equal(dp_pools_from_desired_keep(&d, &inv, NULL, &served, &s), 0);
        dev = dp_pool_find_device(find(&s, "openshift.io/sriov_rdma"), "0000:3b:01.1");
        assert_non_null(dev);
        assert_false(dev->healthy); /* health is today's */
        dp_pool_set_done(&s);
        strcpy(inv.pfs[0].netdevs[0].operstate, "up");

        /* Never advertised (no memory of it): not ready, as before. */
        assert_int_equal(dp_pools_from_desired_keep(&d, &inv, NULL, NULL, &s), 0);
        assert_int_equal(find(&s, "openshift.io/sriov_rdma")->n_devices, 2);
        dp_pool_set_done(&s);

        /* The VF unbound from its driver: it leaves. */
        char driver[sizeof(vf->driver)];
        strcpy(driver, vf->driver);
        vf->driver[0] = 0;
        assert_int_equal(dp_pools_from_desired_keep(&d, &inv, NULL, &served, &s), 0);
        assert_null(dp_pool_find_device(find(&s, "openshift.io/sriov_rdma"), "0000:3b:01.1"));
        dp_pool_set_done(&s);
        strcpy(vf->driver, driver);

        /* Its policy changes the resource name: the new resource does not inherit it. */
        snprintf(d.interfaces[0].groups[0].resource_name, RESOURCE_NAME_MAX, "other");
        assert_int_equal(dp_pools_from_desired_keep(&d, &inv, NULL, &served, &s), 0);
        assert_int_equal(find(&s, "openshift.io/other")->n_devices, 2);
        dp_pool_set_done(&s);
        snprintf(d.interfaces[0].groups[0].resource_name, RESOURCE_NAME_MAX, "sriov_rdma");

        /* Its policy changes isRdma: the VF is judged afresh (the pool is a different one). */
        d.interfaces[0].groups[0].is_rdma = false;
        assert_int_equal(dp_pools_from_desired_keep(&d, &inv, NULL, &served, &s), 0);
        assert_null(dp_pool_find_device(find(&s, "openshift.io/sriov_rdma"), "0000:3b:01.1"));
        dp_pool_set_done(&s);
        d.interfaces[0].groups[0].is_rdma = true;

        /* Netdev back on the host but no RDMA device: not in a pod, simply not ready. */
        vf->n_netdevs = n_netdevs;
        assert_int_equal(dp_pools_from_desired_keep(&d, &inv, NULL, &served, &s), 0);
        assert_null(dp_pool_find_device(find(&s, "openshift.io/sriov_rdma"), "0000:3b:01.1"));
        dp_pool_set_done(&s);
        vf->n_netdevs = 0;

        /* The VF gone (numVfs lowered): it leaves. */
        inv.pfs[0].n_vfs = 1;
        assert_int_equal(dp_pools_from_desired_keep(&d, &inv, NULL, &served, &s), 0);
        assert_int_equal(find(&s, "openshift.io/sriov_rdma")->n_devices, 1);
        dp_pool_set_done(&s);
        inv.pfs[0].n_vfs = 3;

        /* Back in the host namespace: ready again, built from what is seen. */
        vf->n_netdevs = n_netdevs;
        vf->n_rdma = n_rdma;
        assert_int_equal(dp_pools_from_desired_keep(&d, &inv, NULL, &served, &s), 0);
        assert_int_equal(find(&s, "openshift.io/sriov_rdma")->n_devices, 3);
        dp_pool_set_done(&s);
        dp_pool_set_done(&served);
        desired_state_done(&d);
        inventory_done(&inv);
}

static bool all_healthy(const struct dp_pool *p, bool want)
{
        for (size_t i = 0; i < p->n_devices; i++)
                if (p->devices[i].healthy != want)
                        return false;
        return p->n_devices > 0;
}

static bool sriov_healthy(const struct desired_state *d, const struct inventory *inv,
                          const struct dp_health_options *o)
{
        struct dp_pool_set s = { 0 };
        assert_int_equal(dp_pools_from_desired_health(d, inv, NULL, NULL, o, &s), 0);
        bool up = all_healthy(find(&s, "openshift.io/sriov_ib"), true);
        bool down = all_healthy(find(&s, "openshift.io/sriov_ib"), false);
        dp_pool_set_done(&s);
        assert_true(up != down); /* every VF of one PF shares its PF's health */
        return up;
}

/* What makes a PF's VFs Unhealthy (deviceplugin/health.h), and what --link-health off keeps
 * out: no carrier, an InfiniBand port not ACTIVE, an unbound PF driver (not a link matter). */
static void test_pf_health_sources(void **state)
{
        const struct dp_health_options no_link = { .ignore_link = true };
        struct inventory inv = { 0 };
        struct pf_info *pf = fx_add_pf(&inv, 0x3b, "ib0", "mlx5_core", 2, 0);
        fx_add_rdma(&pf->rdma, &pf->n_rdma, 0);
        strcpy(pf->rdma[0].link_layer, "InfiniBand");
        strcpy(pf->rdma[0].port_state, "4: ACTIVE");
        struct desired_state d = { 0 };
        fx_add_group(&d, "0000:3b:00.0", "sriov_ib", DEVICE_TYPE_NETDEVICE, 0, 1);

        assert_null(dp_pf_down_reason(pf, NULL));
        assert_true(sriov_healthy(&d, &inv, NULL));

        strcpy(pf->netdevs[0].operstate, "lowerlayerdown");
        assert_string_equal(dp_pf_down_reason(pf, NULL), "link down");
        assert_false(sriov_healthy(&d, &inv, NULL));
        assert_true(sriov_healthy(&d, &inv, &no_link));
        strcpy(pf->netdevs[0].operstate, "up");

        strcpy(pf->rdma[0].port_state, "1: DOWN");
        assert_string_equal(dp_pf_down_reason(pf, NULL), "InfiniBand port not ACTIVE");
        assert_false(sriov_healthy(&d, &inv, NULL));
        assert_true(sriov_healthy(&d, &inv, &no_link));
        /* RoCE: the port state follows the netdev, whose carrier already counts */
        strcpy(pf->rdma[0].link_layer, "Ethernet");
        assert_null(dp_pf_down_reason(pf, NULL));
        strcpy(pf->rdma[0].link_layer, "InfiniBand");
        strcpy(pf->rdma[0].port_state, "4: ACTIVE");

        pf->driver[0] = 0; /* unbound, or a driver reset in progress */
        assert_string_equal(dp_pf_down_reason(pf, NULL), "driver unbound");
        assert_false(sriov_healthy(&d, &inv, NULL));
        assert_false(sriov_healthy(&d, &inv, &no_link));
        strcpy(pf->driver, "mlx5_core");
        assert_true(sriov_healthy(&d, &inv, NULL));

        desired_state_done(&d);
        inventory_done(&inv);
}

/* A VF whose PCI function disappears while its PF should have it stays in the pool, Unhealthy
 * (the kubelet sees a failed device, not an allocated one withdrawn); so do all VFs of a PF
 * that disappears. A VF count lowered by the policy drops the VFs beyond it. */
static void test_vf_gone_is_unhealthy(void **state)
{
        struct inventory inv = { 0 };
        fx_add_pf(&inv, 0x3b, "ens1f0", "mlx5_core", 3, 0);
        struct desired_state d = { 0 };
        fx_add_group(&d, "0000:3b:00.0", "sriov_net", DEVICE_TYPE_NETDEVICE, 0, 2);
        d.interfaces[0].num_vfs = 3;

        struct dp_pool_set served = { 0 }, s = { 0 };
        assert_int_equal(dp_pools_from_desired_keep(&d, &inv, NULL, NULL, &served), 0);
        assert_true(all_healthy(find(&served, "openshift.io/sriov_net"), true));

        inv.pfs[0].n_vfs = 2; /* VF 2's PCI function removed */
        assert_int_equal(dp_pools_from_desired_keep(&d, &inv, NULL, &served, &s), 0);
        const struct dp_pool *p = find(&s, "openshift.io/sriov_net");
        assert_int_equal(p->n_devices, 3);
        assert_false(dp_pool_find_device(p, "0000:3b:01.2")->healthy);
        assert_true(dp_pool_find_device(p, "0000:3b:01.1")->healthy);
        dp_pool_set_done(&s);

        d.interfaces[0].num_vfs = 2; /* the policy lowered numVfs: VF 2 leaves */
        assert_int_equal(dp_pools_from_desired_keep(&d, &inv, NULL, &served, &s), 0);
        assert_int_equal(find(&s, "openshift.io/sriov_net")->n_devices, 2);
        dp_pool_set_done(&s);
        d.interfaces[0].num_vfs = 3;

        inv.n_pfs = 0; /* the PF itself gone */
        assert_int_equal(dp_pools_from_desired_keep(&d, &inv, NULL, &served, &s), 0);
        assert_true(all_healthy(find(&s, "openshift.io/sriov_net"), false));
        assert_int_equal(find(&s, "openshift.io/sriov_net")->n_devices, 3);
        dp_pool_set_done(&s);
        inv.n_pfs = 1;
        inv.pfs[0].n_vfs = 3;

        dp_pool_set_done(&served);
        desired_state_done(&d);
        inventory_done(&inv);
}

/* Whole-card RDMA IDs are shares of every matching card: Unhealthy once all of them are down,
 * Healthy while one is up; --link-health off counts only unbound drivers. */
static void test_whole_card_pool_follows_its_cards(void **state)
{
        const struct dp_health_options no_link = { .ignore_link = true };
        struct inventory inv = { 0 };
        fx_add_pf(&inv, 0x3b, "ens1f0", "mlx5_core", 0, 0);
        fx_add_pf(&inv, 0x5e, "ens2f0", "mlx5_core", 0, 0);
        for (size_t i = 0; i < 2; i++) {
                fx_add_rdma(&inv.pfs[i].rdma, &inv.pfs[i].n_rdma, (int)i);
                strcpy(inv.pfs[i].rdma[0].link_layer, "InfiniBand");
                strcpy(inv.pfs[i].rdma[0].port_state, "4: ACTIVE");
        }
        struct rdma_shared_config c = { 0 };
        assert_int_equal(
            rdma_shared_config_parse("{\"configList\":[{\"resourceName\":\"hca\","
                                     "\"rdmaHcaMax\":3,\"selectors\":{\"vendors\":[\"15b3\"]}}]}",
                                     "t", &c, NULL),
            0);
        struct dp_pool_set s = { 0 };
        assert_int_equal(dp_pools_from_rdma_shared_health(&c, &inv, NULL, &s), 0);
        assert_true(all_healthy(find(&s, "rdma/hca"), true));
        dp_pool_set_done(&s);

        strcpy(inv.pfs[0].rdma[0].port_state, "1: DOWN");
        assert_int_equal(dp_pools_from_rdma_shared_health(&c, &inv, NULL, &s), 0);
        assert_true(all_healthy(find(&s, "rdma/hca"), true)); /* the other card is up */
        dp_pool_set_done(&s);

        strcpy(inv.pfs[1].netdevs[0].operstate, "down");
        assert_int_equal(dp_pools_from_rdma_shared_health(&c, &inv, NULL, &s), 0);
        assert_true(all_healthy(find(&s, "rdma/hca"), false));
        dp_pool_set_done(&s);
        assert_int_equal(dp_pools_from_rdma_shared_health(&c, &inv, &no_link, &s), 0);
        assert_true(all_healthy(find(&s, "rdma/hca"), true));
        dp_pool_set_done(&s);

        rdma_shared_config_done(&c);
        inventory_done(&inv);
}

/* While changes are applied, the pools served keep their devices: a VF gone from the node (the
 * kernel removed its PCI function) and every VF of a PF whose driver was unbound are marked
 * Unhealthy at once; nothing is added, removed or made Healthy. */
static void test_mark_gone_while_applying(void **state)
{
        struct inventory inv = { 0 };
        fx_add_pf(&inv, 0x3b, "ens1f0", "mlx5_core", 2, 0);
        fx_add_pf(&inv, 0x5e, "ens2f0", "vfio-pci", 2, 1);
        struct desired_state d = { 0 };
        fx_add_group(&d, "0000:3b:00.0", "sriov_net", DEVICE_TYPE_NETDEVICE, 0, 1);
        fx_add_group(&d, "0000:5e:00.0", "sriov_dpdk", DEVICE_TYPE_VFIO_PCI, 0, 1);
        struct dp_pool_set s = { 0 };
        assert_int_equal(dp_pools_from_desired(&d, &inv, NULL, &s), 0);
        assert_int_equal(dp_pools_mark_gone(&s, &inv, NULL), 0); /* nothing gone */

        inv.pfs[0].n_vfs = 1;     /* VF 1 of ens1f0 removed */
        inv.pfs[1].driver[0] = 0; /* ens2f0's driver unbound */
        assert_int_equal(dp_pools_mark_gone(&s, &inv, NULL), 3);
        const struct dp_pool *net = find(&s, "openshift.io/sriov_net");
        assert_int_equal(net->n_devices, 2);
        assert_true(net->devices[0].healthy);
        assert_false(net->devices[1].healthy);
        const struct dp_pool *dpdk = find(&s, "openshift.io/sriov_dpdk");
        assert_int_equal(dpdk->n_devices, 2);
        assert_false(dpdk->devices[0].healthy);
        assert_false(dpdk->devices[1].healthy);

        inv.pfs[0].n_vfs = 2;
        strcpy(inv.pfs[1].driver, "mlx5_core");
        assert_int_equal(dp_pools_mark_gone(&s, &inv, NULL), 0); /* never made Healthy here */
        assert_false(net->devices[1].healthy);
        dp_pool_set_done(&s);
        desired_state_done(&d);
        inventory_done(&inv);
}

/* An agent restart forgets what it advertised: a VF whose netdev the CNI moved into a pod
 * stays a device when the CNI plugin's record says it gave the VF to a pod, not otherwise. */
static void test_vf_in_pod_after_agent_restart(void **state)
{
        struct inventory inv = { 0 };
        struct pf_info *pf = fx_add_pf(&inv, 0x3b, "ens1f0", "igb", 3, 0);
        struct desired_state d = { 0 };
        fx_add_group(&d, "0000:3b:00.0", "sriov_net", DEVICE_TYPE_NETDEVICE, 0, 2);
        pf->vfs[1].n_netdevs = 0; /* in a pod's network namespace */
        pf->vfs[2].n_netdevs = 0; /* not yet probed: no record names it */
        char vf1[] = "0000:3b:01.1";
        char *in_pods[] = { vf1 };
        struct dp_health_options o = { .vfs_in_pods = in_pods, .n_vfs_in_pods = 1 };

        struct dp_pool_set s = { 0 };
        assert_int_equal(dp_pools_from_desired_health(&d, &inv, NULL, NULL, &o, &s), 0);
        const struct dp_pool *p = find(&s, "openshift.io/sriov_net");
        assert_int_equal(p->n_devices, 2);
        assert_non_null(dp_pool_find_device(p, "0000:3b:01.1"));
        assert_true(dp_pool_find_device(p, "0000:3b:01.1")->healthy);
        assert_null(dp_pool_find_device(p, "0000:3b:01.2"));
        dp_pool_set_done(&s);

        /* a record of a VF that is back on the host (its netdev there) changes nothing */
        pf->vfs[1].n_netdevs = 1;
        assert_int_equal(dp_pools_from_desired_health(&d, &inv, NULL, NULL, &o, &s), 0);
        assert_int_equal(find(&s, "openshift.io/sriov_net")->n_devices, 2);
        dp_pool_set_done(&s);
        /* nor one of a VF rebound to vfio-pci or unbound: not in a pod */
        pf->vfs[1].n_netdevs = 0;
        pf->vfs[1].driver[0] = 0;
        assert_int_equal(dp_pools_from_desired_health(&d, &inv, NULL, NULL, &o, &s), 0);
        assert_null(dp_pool_find_device(find(&s, "openshift.io/sriov_net"), "0000:3b:01.1"));
        dp_pool_set_done(&s);
        desired_state_done(&d);
        inventory_done(&inv);
        (void)state;
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_ready_vfs_by_device_type),
                cmocka_unit_test(test_mark_gone_while_applying),
                cmocka_unit_test(test_rdma_topology_health),
                cmocka_unit_test(test_groups_on_two_pfs_share_a_pool),
                cmocka_unit_test(test_split_between_device_plugin_and_dra),
                cmocka_unit_test(test_invalid_names),
                cmocka_unit_test(test_build_with_rdma_shared),
                cmocka_unit_test(test_vf_in_pod_keeps_its_slot),
                cmocka_unit_test(test_vf_in_pod_after_agent_restart),
                cmocka_unit_test(test_pf_health_sources),
                cmocka_unit_test(test_vf_gone_is_unhealthy),
                cmocka_unit_test(test_whole_card_pool_follows_its_cards),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
