/* SPDX-License-Identifier: Apache-2.0 */
/* dra_slices_build: the ResourceSlices this node publishes for its DRA pools, checked against
 * resource.k8s.io/v1's limits before they are written. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "deviceplugin/pool-set.h"
#include "dp-fixture.h"
#include "dra/slices.h"

#define DRIVER "sriovnetwork.k8snetworkplumbingwg.io"

static const char *attr_string(json_t *dev, const char *key)
{
        return json_string_value(
            json_object_get(json_object_get(json_object_get(dev, "attributes"), key), "string"));
}

static json_int_t attr_int(json_t *dev, const char *key)
{
        return json_integer_value(
            json_object_get(json_object_get(json_object_get(dev, "attributes"), key), "int"));
}

static void test_attributes_of_a_vf(void **state)
{
        struct inventory inv = { 0 };
        struct pf_info *pf = fx_add_pf(&inv, 0x3b, "ens1f0", "mlx5_core", 2, 1);
        snprintf(pf->vfs[0].pcie_root, PCIE_ROOT_MAX, "pci0000:3a");
        snprintf(pf->vfs[1].pcie_root, PCIE_ROOT_MAX, "pci0000:3a");
        pf->vfs[1].vendor = 0x15b3;
        pf->vfs[1].device = 0x101c; /* a ConnectX-6 VF of PF 101b */
        snprintf(pf->eswitch_mode, sizeof(pf->eswitch_mode), "switchdev");
        struct desired_state d = { 0 };
        fx_add_group(&d, "0000:3b:00.0", "gpu_nic", DEVICE_TYPE_NETDEVICE, 0, 1);
        struct dp_pool_set pools = { 0 };
        assert_int_equal(dp_pools_from_desired(&d, &inv, NULL, &pools), 0);
        json_t *slices = NULL;
        assert_int_equal(dra_slices_build(&pools, &inv, "worker-1", DRIVER, NULL, &slices), 0);

        assert_int_equal(json_array_size(slices), 1);
        json_t *slice = json_array_get(slices, 0);
        json_t *spec = json_object_get(slice, "spec");
        assert_string_equal(json_string_value(json_object_get(slice, "kind")), "ResourceSlice");
        assert_string_equal(
            json_string_value(json_object_get(json_object_get(slice, "metadata"), "name")),
            "worker-1-sriov-agent-0");
        assert_string_equal(json_string_value(json_object_get(spec, "driver")), DRIVER);
        assert_string_equal(json_string_value(json_object_get(spec, "nodeName")), "worker-1");
        json_t *pool = json_object_get(spec, "pool");
        assert_string_equal(json_string_value(json_object_get(pool, "name")), "worker-1");
        assert_int_equal(json_integer_value(json_object_get(pool, "resourceSliceCount")), 1);
        json_t *devs = json_object_get(spec, "devices");
        assert_int_equal(json_array_size(devs), 2);
        json_t *dev = json_array_get(devs, 1);
        assert_string_equal(json_string_value(json_object_get(dev, "name")), "0000-3b-01-1");
        assert_string_equal(attr_string(dev, "resource.kubernetes.io/pcieRoot"), "pci0000:3a");
        assert_string_equal(attr_string(dev, "resource.kubernetes.io/pciBusID"), "0000:3b:01.1");
        assert_int_equal(attr_int(dev, "dra.net/numaNode"), 1);
        assert_string_equal(attr_string(dev, DRIVER "/PFName"), "ens1f0");
        /* dra-driver-sriov's names: the VF's and the PF's device IDs, the PF's eswitch mode. */
        assert_string_equal(attr_string(dev, DRIVER "/vendor"), "15b3");
        assert_string_equal(attr_string(dev, DRIVER "/deviceID"), "101c");
        assert_string_equal(attr_string(dev, DRIVER "/pfDeviceID"), "101b");
        assert_string_equal(attr_string(dev, DRIVER "/EswitchMode"), "switchdev");
        assert_int_equal(attr_int(dev, DRIVER "/vfID"), 1);
        assert_string_equal(attr_string(dev, DRIVER "/linkType"), "ethernet");
        assert_string_equal(attr_string(dev, DRIVER "/deviceType"), "netdevice");
        assert_string_equal(attr_string(dev, "k8s.cni.cncf.io/resourceName"),
                            "openshift.io/gpu_nic");
        assert_string_equal(attr_string(dev, "k8s.cni.cncf.io/deviceID"), "0000:3b:01.1");
        assert_false(json_is_true(json_object_get(
            json_object_get(json_object_get(dev, "attributes"), DRIVER "/rdmaCapable"), "bool")));
        json_decref(slices);

        /* A PF whose eswitch mode devlink does not tell is in legacy mode, as upstream says. */
        pf->eswitch_mode[0] = 0;
        assert_int_equal(dra_slices_build(&pools, &inv, "worker-1", DRIVER, NULL, &slices), 0);
        dev = json_array_get(
            json_object_get(json_object_get(json_array_get(slices, 0), "spec"), "devices"), 1);
        assert_string_equal(attr_string(dev, DRIVER "/EswitchMode"), "legacy");
        json_decref(slices);
        dp_pool_set_done(&pools);
        desired_state_done(&d);
        inventory_done(&inv);
}

/* A whole-card pool: one device per card, whatever rdmaHcaMax; none while a device-plugin pod
 * still holds one of the pool's shared IDs (every such pod uses every card). */
static void test_whole_card_pool(void **state)
{
        struct inventory inv = { 0 };
        struct pf_info *pf = fx_add_pf(&inv, 0x3d, "ens1f1", "mlx5_core", 0, 0);
        snprintf(pf->pcie_root, PCIE_ROOT_MAX, "pci0000:3c");
        struct dp_pool_set pools = { .pools = calloc(1, sizeof(struct dp_pool)), .n_pools = 1 };
        struct dp_pool *p = &pools.pools[0];
        assert_int_equal(dp_pool_set_names(p, "rdma", "rdma_hca"), 0);
        p->kind = DP_POOL_RDMA_SHARED;
        p->devices = calloc(4, sizeof(*p->devices)); /* rdmaHcaMax 4: IDs "0".."3" */
        p->n_devices = 4;
        for (int i = 0; i < 4; i++)
                snprintf(p->devices[i].id, sizeof(p->devices[i].id), "%d", i);
        p->cards = calloc(1, sizeof(*p->cards));
        p->n_cards = 1;
        p->cards[0] = (struct dp_device){ .healthy = true, .numa_node = 0, .iommu_group = -1 };
        snprintf(p->cards[0].id, sizeof(p->cards[0].id), "%s", pf->pci_address);
        snprintf(p->cards[0].rdma_device, sizeof(p->cards[0].rdma_device), "mlx5_9");

        json_t *slices = NULL;
        assert_int_equal(dra_slices_build(&pools, &inv, "worker-1", DRIVER, NULL, &slices), 0);
        json_t *devs =
            json_object_get(json_object_get(json_array_get(slices, 0), "spec"), "devices");
        assert_int_equal(json_array_size(devs), 1);
        json_t *dev = json_array_get(devs, 0);
        assert_string_equal(json_string_value(json_object_get(dev, "name")), "0000-3d-00-0");
        assert_string_equal(attr_string(dev, "resource.kubernetes.io/pcieRoot"), "pci0000:3c");
        assert_string_equal(attr_string(dev, DRIVER "/deviceType"), "rdma-shared");
        assert_string_equal(attr_string(dev, DRIVER "/rdmaDevice"), "mlx5_9");
        assert_string_equal(attr_string(dev, DRIVER "/ifName"), "ens1f1");
        assert_null(json_object_get(json_object_get(dev, "attributes"), DRIVER "/vfID"));
        json_decref(slices);

        struct dp_usage held = { 0 };
        assert_int_equal(dp_usage_add(&held, "rdma/rdma_hca", "2"), 0);
        assert_int_equal(dra_slices_build(&pools, &inv, "worker-1", DRIVER, &held, &slices), 0);
        assert_int_equal(json_array_size(slices), 0);
        json_decref(slices);
        dp_usage_done(&held);
        dp_pool_set_done(&pools);
        inventory_done(&inv);
}

/* 136 devices: two slices of at most 128, both saying the pool has two; names are stable
 * across builds (same input, same output). */
static void test_128_per_slice(void **state)
{
        struct inventory inv = { 0 };
        struct desired_state d = { 0 };
        for (int bus = 0x10; bus < 0x21; bus++) {
                char name[16], addr[16];
                snprintf(name, sizeof(name), "ens%d", bus);
                snprintf(addr, sizeof(addr), "0000:%02x:00.0", bus);
                fx_add_pf(&inv, bus, name, "mlx5_core", 8, 0);
                fx_add_group(&d, addr, "many", DEVICE_TYPE_NETDEVICE, 0, 7);
        }
        struct dp_pool_set pools = { 0 };
        assert_int_equal(dp_pools_from_desired(&d, &inv, NULL, &pools), 0);
        json_t *a = NULL, *b = NULL;
        assert_int_equal(dra_slices_build(&pools, &inv, "n", DRIVER, NULL, &a), 0);
        assert_int_equal(dra_slices_build(&pools, &inv, "n", DRIVER, NULL, &b), 0);
        assert_true(json_equal(a, b));
        assert_int_equal(json_array_size(a), 2);
        size_t total = 0;
        for (size_t i = 0; i < 2; i++) {
                json_t *spec = json_object_get(json_array_get(a, i), "spec");
                size_t n = json_array_size(json_object_get(spec, "devices"));
                assert_true(n <= DRA_DEVICES_PER_SLICE);
                total += n;
                assert_int_equal(json_integer_value(json_object_get(json_object_get(spec, "pool"),
                                                                    "resourceSliceCount")),
                                 2);
        }
        assert_int_equal(total, 17 * 8);
        json_decref(a);
        json_decref(b);

        /* no DRA pools: no slices */
        struct dp_pool_set none = { 0 };
        assert_int_equal(dra_slices_build(&none, &inv, "n", DRIVER, NULL, &a), 0);
        assert_int_equal(json_array_size(a), 0);
        json_decref(a);
        dp_pool_set_done(&pools);
        desired_state_done(&d);
        inventory_done(&inv);
}

/* A policy resourceName of 52 characters is valid, but its resourceName attribute
 * ("openshift.io/<name>", 65 characters) is over resource.k8s.io/v1's 64: that resource is left
 * out and named with the field and the limit; the other resource is still published. */
static void test_one_bad_resource_leaves_the_rest(void **state)
{
        static const char long_name[] = "sriov_a_resource_name_of_fifty_two_characters_long_x";
        assert_int_equal(strlen(long_name), 52);
        struct inventory inv = { 0 };
        fx_add_pf(&inv, 0x3b, "ens1f0", "mlx5_core", 2, 0);
        fx_add_pf(&inv, 0x5e, "ens2f0", "mlx5_core", 2, 0);
        struct desired_state d = { 0 };
        fx_add_group(&d, "0000:3b:00.0", "sriov_highnet", DEVICE_TYPE_NETDEVICE, 0, 1);
        fx_add_group(&d, "0000:5e:00.0", long_name, DEVICE_TYPE_NETDEVICE, 0, 1);
        struct dp_pool_set pools = { 0 };
        assert_int_equal(dp_pools_from_desired(&d, &inv, NULL, &pools), 0);
        assert_int_equal(pools.n_pools, 2);
        json_t *slices = NULL, *rejected = NULL;
        assert_int_equal(
            dra_slices_build_checked(&pools, &inv, "worker-1", DRIVER, NULL, &slices, &rejected),
            0);
        assert_int_equal(json_array_size(slices), 1);
        json_t *devs =
            json_object_get(json_object_get(json_array_get(slices, 0), "spec"), "devices");
        assert_int_equal(json_array_size(devs), 2);
        for (size_t i = 0; i < 2; i++)
                assert_string_equal(attr_string(json_array_get(devs, i), DRIVER "/resourceName"),
                                    "openshift.io/sriov_highnet");
        char why[512];
        for (size_t i = 0; i < 2; i++)
                assert_true(dra_device_is_valid(json_array_get(devs, i), why, sizeof(why)));
        assert_int_equal(json_array_size(rejected), 1);
        json_t *r = json_array_get(rejected, 0);
        const char *reason = json_string_value(json_object_get(r, "reason"));
        assert_non_null(strstr(json_string_value(json_object_get(r, "resourceName")), long_name));
        assert_non_null(strstr(reason, "resourceName"));
        assert_non_null(strstr(reason, "65 characters"));
        assert_non_null(strstr(reason, "allows 64"));
        json_decref(rejected);
        json_decref(slices);
        dp_pool_set_done(&pools);
        desired_state_done(&d);
        inventory_done(&inv);
}

/* The limits one by one. */
static void test_device_limits(void **state)
{
        char why[512];
        json_t *dev = json_loads("{\"name\":\"0000-3b-01-0\",\"attributes\":{\"a.b/c\":"
                                 "{\"string\":\"x\"}}}",
                                 0, NULL);
        assert_true(dra_device_is_valid(dev, why, sizeof(why)));
        json_object_set_new(dev, "name", json_string("Not_A_Label"));
        assert_false(dra_device_is_valid(dev, why, sizeof(why)));
        assert_non_null(strstr(why, "DNS label"));
        json_object_set_new(dev, "name", json_string("ok"));
        json_t *attrs = json_object_get(dev, "attributes");
        json_object_set_new(attrs, "example.com/1bad", json_pack("{s:b}", "bool", 1));
        assert_false(dra_device_is_valid(dev, why, sizeof(why)));
        assert_non_null(strstr(why, "example.com/1bad"));
        json_object_del(attrs, "example.com/1bad");
        for (int i = 0; i < 32; i++) {
                char key[32];
                snprintf(key, sizeof(key), "a%d", i);
                json_object_set_new(attrs, key, json_pack("{s:i}", "int", i));
        }
        assert_false(dra_device_is_valid(dev, why, sizeof(why)));
        assert_non_null(strstr(why, "33 attributes and capacities"));
        json_decref(dev);
}

/* A node name of 253 characters (the most a Node may have) still gives slice names of at most
 * 253 that are DNS subdomains, distinct per node. */
static void test_long_node_name(void **state)
{
        char node[254], other[254], a[512], b[512];
        memset(node, 'a', 253);
        node[253] = 0;
        node[200] = '.';
        memcpy(other, node, sizeof(other));
        other[252] = 'b';
        dra_slice_name(node, 0, a, sizeof(a));
        dra_slice_name(other, 0, b, sizeof(b));
        assert_true(strlen(a) <= 253);
        assert_string_not_equal(a, b);
        assert_non_null(strstr(a, "-sriov-agent-0"));
        assert_null(strstr(a, ".-"));
        assert_null(strstr(a, "-."));
        dra_slice_name("worker-1", 3, a, sizeof(a));
        assert_string_equal(a, "worker-1-sriov-agent-3");
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_attributes_of_a_vf),
                cmocka_unit_test(test_128_per_slice),
                cmocka_unit_test(test_whole_card_pool),
                cmocka_unit_test(test_one_bad_resource_leaves_the_rest),
                cmocka_unit_test(test_device_limits),
                cmocka_unit_test(test_long_node_name),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
