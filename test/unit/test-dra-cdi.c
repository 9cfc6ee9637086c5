/* SPDX-License-Identifier: Apache-2.0 */
/* dra_cdi_spec: the CDI spec of a prepared claim gives a container what the device plugin
 * gives it, here for a vfio-pci VF: /dev/vfio/vfio and the VF's IOMMU group. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "deviceplugin/allocate.h"
#include "deviceplugin/pool-set.h"
#include "dp-fixture.h"
#include "dra/claim.h"

#define DRIVER "sriovnetwork.k8snetworkplumbingwg.io"

/* The device node of edits with that path, checked to be mapped to the same host path. */
static json_t *device_node(json_t *edits, const char *path)
{
        size_t i;
        json_t *n;
        json_array_foreach(json_object_get(edits, "deviceNodes"), i, n)
        {
                if (strcmp(json_string_value(json_object_get(n, "path")) ?: "", path) != 0)
                        continue;
                assert_string_equal(json_string_value(json_object_get(n, "hostPath")), path);
                return n;
        }
        return NULL;
}

static bool has_env(json_t *edits, const char *kv)
{
        size_t i;
        json_t *e;
        json_array_foreach(json_object_get(edits, "env"), i, e)
        {
                if (strcmp(json_string_value(e) ?: "", kv) == 0)
                        return true;
        }
        return false;
}

static void test_vfio_vf(void **state)
{
        struct inventory inv = { 0 };
        fx_add_pf(&inv, 0x3b, "ens1f0", "vfio-pci", 2, 0);
        struct desired_state d = { 0 };
        fx_add_group(&d, "0000:3b:00.0", "dpdk", DEVICE_TYPE_VFIO_PCI, 0, 1);
        struct dp_pool_set pools = { 0 };
        assert_int_equal(dp_pools_from_desired(&d, &inv, "example.com", &pools), 0);
        assert_int_equal(pools.n_pools, 1);

        /* A claim of one VF, the second: its own allocation is also its pool's. */
        char *ids[] = { "0000:3b:01.1" };
        char *names[] = { "0000-3b-01-1" };
        struct dp_container_allocation a = { 0 };
        struct grpc_status st = { 0 };
        assert_int_equal(dp_allocate_container(&pools.pools[0], ids, 1, &a, &st), GRPC_STATUS_OK);
        const struct dp_container_allocation *own[] = { &a };
        json_t *spec = dra_cdi_spec(DRIVER, "uid-1", names, own, own, 1);
        assert_non_null(spec);

        assert_string_equal(json_string_value(json_object_get(spec, "cdiVersion")),
                            DRA_CDI_VERSION);
        assert_string_equal(json_string_value(json_object_get(spec, "kind")), DRIVER "/vf");
        json_t *devs = json_object_get(spec, "devices");
        assert_int_equal(json_array_size(devs), 1);
        json_t *dev = json_array_get(devs, 0);
        assert_string_equal(json_string_value(json_object_get(dev, "name")), "uid-1-0000-3b-01-1");
        json_t *edits = json_object_get(dev, "containerEdits");
        char group[32];
        snprintf(group, sizeof(group), "/dev/vfio/%d", 100 + 0x3b * 16 + 1); /* the fixture's */
        assert_non_null(device_node(edits, "/dev/vfio/vfio"));
        assert_non_null(device_node(edits, group));
        assert_int_equal(json_array_size(json_object_get(edits, "deviceNodes")), 2);
        assert_true(has_env(edits, "PCIDEVICE_EXAMPLE_COM_DPDK=0000:3b:01.1"));

        json_decref(spec);
        dp_container_allocation_done(&a);
        dp_pool_set_done(&pools);
        desired_state_done(&d);
        inventory_done(&inv);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_vfio_vf),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
