/* SPDX-License-Identifier: Apache-2.0 */
/* dra_slices_build: the ResourceSlices this node publishes for its DRA pools. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

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

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_attributes_of_a_vf),
                cmocka_unit_test(test_128_per_slice),
                cmocka_unit_test(test_whole_card_pool),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
