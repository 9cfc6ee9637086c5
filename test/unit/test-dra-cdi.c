/* SPDX-License-Identifier: Apache-2.0 */
/* The pure parts of a DRA Prepare (lib/dra/claim.c): the CDI spec of a prepared claim gives a
 * container what the device plugin gives it (here for a vfio-pci VF: /dev/vfio/vfio and the
 * VF's IOMMU group) and dra-driver-sriov's per-device variables, so that a container with two
 * claims of one resource sees both VFs; the claim's VfConfig decoded strictly; the pods it is
 * reserved for; its status.devices. */
#include <errno.h>
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
#include "util/macro.h"

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
        const struct dra_cdi_device dev1 = {
                .name = names[0], .pci = ids[0], .own = &a, .pool = &a
        };
        json_t *spec = dra_cdi_spec(DRIVER, "uid-1", &dev1, 1);
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
        assert_true(has_env(edits, "SRIOVNETWORK_VF_DEVICE_0000_3b_01_1=0000:3b:01.1"));
        char vfio_env[96];
        snprintf(vfio_env, sizeof(vfio_env), "SRIOVNETWORK_0000_3b_01_1_VFIO_DEVICE=%s", group);
        assert_true(has_env(edits, vfio_env));

        json_decref(spec);
        dp_container_allocation_done(&a);
        dp_pool_set_done(&pools);
        desired_state_done(&d);
        inventory_done(&inv);
}

/* The environment a container holding both CDI devices sees: every device's variables in
 * order, a later value of a name replacing an earlier one (what the runtime does). */
static json_t *container_env(json_t *const *specs, size_t n)
{
        json_t *env = json_object();
        for (size_t k = 0; k < n; k++) {
                size_t i, j;
                json_t *d, *e;
                json_array_foreach(json_object_get(specs[k], "devices"), i, d)
                {
                        json_array_foreach(
                            json_object_get(json_object_get(d, "containerEdits"), "env"), j, e)
                        {
                                const char *kv = json_string_value(e);
                                const char *eq = strchr(kv, '=');
                                char key[256];
                                snprintf(key, sizeof(key), "%.*s", (int)(eq - kv), kv);
                                json_object_set_new(env, key, json_string(eq + 1));
                        }
                }
        }
        return env;
}

/* Two claims of one resource, one VF each, in one container: both VFs are named. */
static void test_two_claims_one_resource(void **state)
{
        struct inventory inv = { 0 };
        struct pf_info *pf = fx_add_pf(&inv, 0x3b, "ens1f0", "mlx5_core", 2, 0);
        for (size_t i = 0; i < pf->n_vfs; i++)
                fx_add_rdma(&pf->vfs[i].rdma, &pf->vfs[i].n_rdma, (int)i + 2);
        struct desired_state d = { 0 };
        fx_add_group(&d, "0000:3b:00.0", "sriov_highnet", DEVICE_TYPE_NETDEVICE, 0, 1)->is_rdma =
            true;
        struct dp_pool_set pools = { 0 };
        assert_int_equal(dp_pools_from_desired(&d, &inv, "openshift.io", &pools), 0);
        assert_int_equal(pools.n_pools, 1);
        assert_int_equal(pools.pools[0].n_devices, 2);

        char *ids[] = { "0000:3b:01.0", "0000:3b:01.1" };
        const char *names[] = { "0000-3b-01-0", "0000-3b-01-1" };
        struct dp_container_allocation a[2] = { 0 };
        struct grpc_status st = { 0 };
        json_t *specs[2];
        for (int k = 0; k < 2; k++) {
                assert_int_equal(dp_allocate_container(&pools.pools[0], &ids[k], 1, &a[k], &st),
                                 GRPC_STATUS_OK);
                const struct dra_cdi_device dev = { .name = names[k],
                                                    .pci = ids[k],
                                                    .rdma_device =
                                                        pools.pools[0].devices[k].rdma_device,
                                                    .own = &a[k],
                                                    .pool = &a[k] };
                specs[k] = dra_cdi_spec(DRIVER, k ? "uid-b" : "uid-a", &dev, 1);
                assert_non_null(specs[k]);
        }
        json_t *env = container_env(specs, 2);
        assert_string_equal(
            json_string_value(json_object_get(env, "SRIOVNETWORK_VF_DEVICE_0000_3b_01_0")),
            "0000:3b:01.0");
        assert_string_equal(
            json_string_value(json_object_get(env, "SRIOVNETWORK_VF_DEVICE_0000_3b_01_1")),
            "0000:3b:01.1");
        assert_string_equal(
            json_string_value(json_object_get(env, "SRIOVNETWORK_0000_3b_01_0_RDMA_DEVICE")),
            "mlx5_2");
        assert_string_equal(
            json_string_value(json_object_get(env, "SRIOVNETWORK_0000_3b_01_1_RDMA_UVERB")),
            "/dev/infiniband/uverbs3");
        assert_non_null(json_object_get(env, "SRIOVNETWORK_0000_3b_01_1_RDMA_CM"));
        json_decref(env);
        for (int k = 0; k < 2; k++) {
                json_decref(specs[k]);
                dp_container_allocation_done(&a[k]);
        }
        dp_pool_set_done(&pools);
        desired_state_done(&d);
        inventory_done(&inv);
}

/* addVhostMount gives /dev/vhost-net and /dev/net/tun, as needVhostNet does. */
static void test_vhost(void **state)
{
        struct dp_container_allocation a = { 0 };
        const struct dra_cdi_device dev = {
                .name = "0000-3b-01-0", .pci = "0000:3b:01.0", .own = &a, .pool = &a, .vhost = true
        };
        json_t *spec = dra_cdi_spec(DRIVER, "uid-v", &dev, 1);
        json_t *edits =
            json_object_get(json_array_get(json_object_get(spec, "devices"), 0), "containerEdits");
        assert_non_null(device_node(edits, "/dev/vhost-net"));
        assert_non_null(device_node(edits, "/dev/net/tun"));
        json_decref(spec);
}

static json_t *claim_with_config(const char *config_json)
{
        json_error_t err;
        json_t *c = json_loads(config_json, 0, &err);
        assert_non_null(c);
        json_t *claim =
            json_pack("{s:{s:{s:{s:o}}}}", "status", "allocation", "devices", "config", c);
        assert_non_null(claim);
        return claim;
}

static void test_vf_config(void **state)
{
        struct dra_vf_config cfg;
        char *error = NULL;
        /* The class says vfio-pci and a vhost mount, the claim's own entry an ifName for
         * request nic; another driver's entry and one for another request do not apply. */
        json_t *claim = claim_with_config(
            "[{\"source\":\"FromClaim\",\"requests\":[\"nic\"],\"opaque\":{\"driver\":\"" DRIVER
            "\",\"parameters\":{\"apiVersion\":\"" DRA_VFCONFIG_API_VERSION
            "\",\"kind\":\"VfConfig\",\"ifName\":\"net1\"}}},"
            "{\"source\":\"FromClass\",\"opaque\":{\"driver\":\"" DRIVER
            "\",\"parameters\":{\"apiVersion\":\"" DRA_VFCONFIG_API_VERSION
            "\",\"kind\":\"VfConfig\",\"driver\":\"vfio-pci\",\"addVhostMount\":true}}},"
            "{\"source\":\"FromClaim\",\"requests\":[\"gpu\"],\"opaque\":{\"driver\":\"" DRIVER
            "\",\"parameters\":{\"apiVersion\":\"" DRA_VFCONFIG_API_VERSION
            "\",\"kind\":\"VfConfig\",\"ifName\":\"other\"}}},"
            "{\"source\":\"FromClaim\",\"opaque\":{\"driver\":\"gpu.example.com\","
            "\"parameters\":{\"anything\":1}}}]");
        assert_int_equal(dra_claim_vf_config(claim, DRIVER, "nic", &cfg, &error), 0);
        assert_string_equal(cfg.driver, "vfio-pci");
        assert_string_equal(cfg.if_name, "net1");
        assert_true(cfg.add_vhost_mount);
        assert_null(cfg.nad_name);
        dra_vf_config_done(&cfg);
        json_decref(claim);

        /* Strict: an unknown field is named. */
        claim = claim_with_config("[{\"source\":\"FromClaim\",\"opaque\":{\"driver\":\"" DRIVER
                                  "\",\"parameters\":{\"apiVersion\":\"" DRA_VFCONFIG_API_VERSION
                                  "\",\"kind\":\"VfConfig\",\"ifname\":\"net1\"}}}]");
        assert_int_equal(dra_claim_vf_config(claim, DRIVER, "nic", &cfg, &error), -EINVAL);
        assert_non_null(strstr(error, "unknown field \"ifname\""));
        assert_non_null(strstr(error, "config[0]"));
        free(TAKE_PTR(error));
        json_decref(claim);

        /* A wrong type, and another kind. */
        claim = claim_with_config("[{\"source\":\"FromClaim\",\"opaque\":{\"driver\":\"" DRIVER
                                  "\",\"parameters\":{\"apiVersion\":\"" DRA_VFCONFIG_API_VERSION
                                  "\",\"kind\":\"VfConfig\",\"addVhostMount\":\"yes\"}}}]");
        assert_int_equal(dra_claim_vf_config(claim, DRIVER, "nic", &cfg, &error), -EINVAL);
        assert_non_null(strstr(error, "addVhostMount: must be a boolean"));
        free(TAKE_PTR(error));
        json_decref(claim);
        claim = claim_with_config("[{\"source\":\"FromClaim\",\"opaque\":{\"driver\":\"" DRIVER
                                  "\",\"parameters\":{\"apiVersion\":\"v1\",\"kind\":\"Foo\"}}}]");
        assert_int_equal(dra_claim_vf_config(claim, DRIVER, "nic", &cfg, &error), -EINVAL);
        assert_non_null(strstr(error, "not a VfConfig"));
        free(TAKE_PTR(error));
        json_decref(claim);
}

static void test_reserved_pods(void **state)
{
        json_t *claim = json_loads(
            "{\"status\":{\"reservedFor\":[{\"resource\":\"pods\",\"name\":\"a\",\"uid\":\"u1\"},"
            "{\"apiGroup\":\"example.com\",\"resource\":\"pods\",\"name\":\"x\",\"uid\":\"u2\"},"
            "{\"resource\":\"pods\",\"apiGroup\":\"\",\"name\":\"b\",\"uid\":\"u3\"}]}}",
            0, NULL);
        json_t *pods = dra_claim_reserved_pods(claim);
        assert_int_equal(json_array_size(pods), 2);
        assert_string_equal(json_string_value(json_object_get(json_array_get(pods, 0), "name")),
                            "a");
        assert_string_equal(json_string_value(json_object_get(json_array_get(pods, 1), "uid")),
                            "u3");
        json_decref(pods);
        json_decref(claim);
}

/* Ours set, another driver's entry kept as it is. */
static void test_status_devices(void **state)
{
        json_t *claim = json_loads("{\"status\":{\"devices\":[{\"driver\":\"gpu.example.com\","
                                   "\"pool\":\"n\",\"device\":\"gpu-0\"},{\"driver\":\"" DRIVER
                                   "\",\"pool\":\"n\",\"device\":\"0000-3b-01-0\"}]}}",
                                   0, NULL);
        const struct dra_status_device devs[] = { { "n", "0000-3b-01-0", "VF prepared" } };
        json_t *list = dra_claim_status_devices(claim, DRIVER, devs, 1, "2026-01-01T00:00:00Z");
        assert_int_equal(json_array_size(list), 2);
        assert_string_equal(json_string_value(json_object_get(json_array_get(list, 0), "driver")),
                            "gpu.example.com");
        json_t *ours = json_array_get(list, 1);
        json_t *cond = json_array_get(json_object_get(ours, "conditions"), 0);
        assert_string_equal(json_string_value(json_object_get(cond, "type")), "Ready");
        assert_string_equal(json_string_value(json_object_get(cond, "status")), "True");
        assert_string_equal(json_string_value(json_object_get(cond, "lastTransitionTime")),
                            "2026-01-01T00:00:00Z");
        json_decref(list);
        json_decref(claim);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_vfio_vf),
                cmocka_unit_test(test_two_claims_one_resource),
                cmocka_unit_test(test_vhost),
                cmocka_unit_test(test_vf_config),
                cmocka_unit_test(test_reserved_pods),
                cmocka_unit_test(test_status_devices),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
