/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for Allocate answers: env-name mangling, the _INFO JSON, device specs, errors and
 * device-info files (lib/deviceplugin/allocate.c). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

#include <cmocka.h>

#include "deviceplugin/allocate.h"
#include "dp-fixture.h"
#include "util/fileio.h"

static void pool_with_names(struct dp_pool *p, const char *prefix, const char *name)
{
        *p = (struct dp_pool){ 0 };
        assert_int_equal(dp_pool_set_names(p, prefix, name), 0);
}

static void test_env_name_mangling(void **state)
{
        struct dp_pool p;
        char buf[128];
        pool_with_names(&p, "openshift.io", "sriov_highnet");
        assert_int_equal(dp_env_name(&p, buf, sizeof(buf)), 0);
        assert_string_equal(buf, "PCIDEVICE_OPENSHIFT_IO_SRIOV_HIGHNET");
        pool_with_names(&p, "intel-nics.example.com", "net-a_B9");
        assert_int_equal(dp_env_name(&p, buf, sizeof(buf)), 0);
        /* Issue 15.8: upstream replaces only '.'; a '-' stays (sriov-network-device-plugin
         * pool_stub.go GetEnvs, server_test.go Allocate envs) */
        assert_string_equal(buf, "PCIDEVICE_INTEL-NICS_EXAMPLE_COM_NET-A_B9");
        assert_int_equal(dp_env_name(&p, buf, 10), -ENAMETOOLONG);
}

/* A pool of two VFs on one PF: vfio + RDMA + vhost all on, to see every INFO section. */
static void build_pool(struct dp_pool *p, bool vfio, bool rdma, bool vhost)
{
        struct inventory inv = { 0 };
        struct pf_info *pf = fx_add_pf(&inv, 0x3b, "ens1f0", vfio ? "vfio-pci" : "mlx5_core", 2, 0);
        if (rdma) {
                fx_add_rdma(&pf->vfs[0].rdma, &pf->vfs[0].n_rdma, 1);
                fx_add_rdma(&pf->vfs[1].rdma, &pf->vfs[1].n_rdma, 2);
        }
        struct desired_state d = { 0 };
        struct vf_group *g = fx_add_group(
            &d, "0000:3b:00.0", "res", vfio ? DEVICE_TYPE_VFIO_PCI : DEVICE_TYPE_NETDEVICE, 0, 1);
        g->is_rdma = rdma;
        g->need_vhost_net = vhost;
        struct dp_pool_set s = { 0 };
        assert_int_equal(dp_pools_from_desired(&d, &inv, "example.com", &s), 0);
        assert_int_equal(s.n_pools, 1);
        assert_int_equal(s.pools[0].n_devices, 2);
        *p = s.pools[0];
        free(s.pools);
        desired_state_done(&d);
        inventory_done(&inv);
}

static const char *env(const struct dp_container_allocation *a, const char *key)
{
        for (size_t i = 0; i < a->n_envs; i++)
                if (strcmp(a->env_keys[i], key) == 0)
                        return a->env_values[i];
        return NULL;
}

static void test_netdevice_rdma_vhost(void **state)
{
        struct dp_pool p;
        build_pool(&p, false, true, true);
        char *ids[] = { "0000:3b:01.1", "0000:3b:01.0" };
        struct dp_container_allocation a = { 0 };
        struct grpc_status st = { 0 };
        assert_int_equal(dp_allocate_container(&p, ids, 2, &a, &st), GRPC_STATUS_OK);
        assert_int_equal(a.n_envs, 2);
        assert_string_equal(env(&a, "PCIDEVICE_EXAMPLE_COM_RES"), "0000:3b:01.1,0000:3b:01.0");
        assert_string_equal(
            env(&a, "PCIDEVICE_EXAMPLE_COM_RES_INFO"),
            "{\"0000:3b:01.0\":{\"generic\":{\"deviceID\":\"0000:3b:01.0\"},"
            "\"rdma\":{\"issm\":\"/dev/infiniband/issm1\",\"rdma_cm\":\"/dev/infiniband/rdma_cm\","
            "\"rdma_dev\":\"mlx5_1\",\"umad\":\"/dev/infiniband/umad1\","
            "\"uverbs\":\"/dev/infiniband/uverbs1\"},"
            "\"vhost\":{\"net-mount\":\"/dev/vhost-net\",\"tun-mount\":\"/dev/net/tun\"}},"
            "\"0000:3b:01.1\":{\"generic\":{\"deviceID\":\"0000:3b:01.1\"},"
            "\"rdma\":{\"issm\":\"/dev/infiniband/issm2\",\"rdma_cm\":\"/dev/infiniband/rdma_cm\","
            "\"rdma_dev\":\"mlx5_2\",\"umad\":\"/dev/infiniband/umad2\","
            "\"uverbs\":\"/dev/infiniband/uverbs2\"},"
            "\"vhost\":{\"net-mount\":\"/dev/vhost-net\",\"tun-mount\":\"/dev/net/tun\"}}}");
        /* uverbs/umad/issm of both VFs, rdma_cm, vhost-net, tun: each once, rw */
        const char *want[] = { "/dev/infiniband/uverbs2", "/dev/infiniband/umad2",
                               "/dev/infiniband/issm2",   "/dev/infiniband/rdma_cm",
                               "/dev/vhost-net",          "/dev/net/tun",
                               "/dev/infiniband/uverbs1", "/dev/infiniband/umad1",
                               "/dev/infiniband/issm1" };
        assert_int_equal(a.n_specs, 9);
        for (size_t i = 0; i < 9; i++) {
                assert_string_equal(a.specs[i].host_path, want[i]);
                assert_string_equal(a.specs[i].container_path, want[i]);
                assert_string_equal(a.specs[i].permissions, "rw");
        }
        dp_container_allocation_done(&a);
        dp_pool_done(&p);
}

static void test_vfio(void **state)
{
        struct dp_pool p;
        build_pool(&p, true, false, false);
        char *ids[] = { "0000:3b:01.0", "0000:3b:01.1" };
        struct dp_container_allocation a = { 0 };
        struct grpc_status st = { 0 };
        assert_int_equal(dp_allocate_container(&p, ids, 2, &a, &st), GRPC_STATUS_OK);
        char g0[32], g1[32];
        snprintf(g0, sizeof(g0), "/dev/vfio/%d", 100 + 0x3b * 16);
        snprintf(g1, sizeof(g1), "/dev/vfio/%d", 100 + 0x3b * 16 + 1);
        assert_int_equal(a.n_specs, 3);
        assert_string_equal(a.specs[0].host_path, "/dev/vfio/vfio");
        assert_string_equal(a.specs[1].host_path, g0);
        assert_string_equal(a.specs[2].host_path, g1);
        char want[512];
        snprintf(
            want, sizeof(want),
            "{\"0000:3b:01.0\":{\"generic\":{\"deviceID\":\"0000:3b:01.0\"},\"vfio\":{"
            "\"dev-mount\":\"%s\",\"mount\":\"/dev/vfio/vfio\"}},\"0000:3b:01.1\":{\"generic\":"
            "{\"deviceID\":\"0000:3b:01.1\"},\"vfio\":{\"dev-mount\":\"%s\",\"mount\":"
            "\"/dev/vfio/vfio\"}}}",
            g0, g1);
        assert_string_equal(env(&a, "PCIDEVICE_EXAMPLE_COM_RES_INFO"), want);
        dp_container_allocation_done(&a);
        dp_pool_done(&p);
}

static void test_errors(void **state)
{
        struct dp_pool p;
        build_pool(&p, false, false, false);
        struct dp_container_allocation a = { 0 };
        struct grpc_status st = { 0 };
        char *unknown[] = { "0000:3b:01.0", "0000:ff:00.0" };
        assert_int_equal(dp_allocate_container(&p, unknown, 2, &a, &st),
                         GRPC_STATUS_INVALID_ARGUMENT);
        assert_non_null(strstr(st.message, "0000:ff:00.0"));
        assert_non_null(strstr(st.message, "example.com/res"));
        p.devices[1].healthy = false;
        char *sick[] = { "0000:3b:01.1" };
        assert_int_equal(dp_allocate_container(&p, sick, 1, &a, &st),
                         GRPC_STATUS_FAILED_PRECONDITION);
        assert_non_null(strstr(st.message, "unhealthy"));
        /* nothing requested: an empty answer */
        assert_int_equal(dp_allocate_container(&p, NULL, 0, &a, &st), GRPC_STATUS_OK);
        assert_int_equal(a.n_envs, 0);
        dp_container_allocation_done(&a);
        dp_pool_done(&p);
}

static void test_rdma_shared_pool(void **state)
{
        struct dp_pool p = { .kind = DP_POOL_RDMA_SHARED, .is_rdma = true };
        assert_int_equal(dp_pool_set_names(&p, "rdma", "rdma_hca"), 0);
        strv_push_dup(&p.shared_char_devices, &p.n_shared_char_devices, "/dev/infiniband/uverbs0");
        strv_push_dup(&p.shared_char_devices, &p.n_shared_char_devices, "/dev/infiniband/rdma_cm");
        p.devices = calloc(1, sizeof(*p.devices));
        p.devices[0] = (struct dp_device){ .id = "0", .healthy = true, .numa_node = -1 };
        p.n_devices = 1;
        char *ids[] = { "0" };
        struct dp_container_allocation a = { 0 };
        struct grpc_status st = { 0 };
        assert_int_equal(dp_allocate_container(&p, ids, 1, &a, &st), GRPC_STATUS_OK);
        assert_int_equal(a.n_envs, 0);
        assert_int_equal(a.n_specs, 2);
        assert_string_equal(a.specs[0].host_path, "/dev/infiniband/uverbs0");
        dp_container_allocation_done(&a);
        char *bad[] = { "1" };
        assert_int_equal(dp_allocate_container(&p, bad, 1, &a, &st), GRPC_STATUS_INVALID_ARGUMENT);
        dp_pool_done(&p);
}

static void test_devinfo_files(void **state)
{
        char dir[] = "/tmp/test-devinfo-XXXXXX";
        assert_non_null(mkdtemp(dir));
        char sub[64];
        snprintf(sub, sizeof(sub), "%s/dp", dir); /* created on first write */
        struct dp_pool p;
        build_pool(&p, false, true, false);
        assert_int_equal(dp_devinfo_write(sub, &p, &p.devices[0]), 0);
        assert_int_equal(dp_devinfo_write(sub, &p, &p.devices[1]), 0);
        char path[256], *content = NULL;
        size_t n;
        assert_int_equal(dp_devinfo_path(sub, p.resource, "0000:3b:01.0", path, sizeof(path)), 0);
        char want_path[256];
        snprintf(want_path, sizeof(want_path), "%s/example.com-res-0000:3b:01.0-device.json", sub);
        assert_string_equal(path, want_path);
        assert_int_equal(read_full_file(path, 4096, &content, &n), 0);
        assert_string_equal(content, "{\"pci\":{\"pci-address\":\"0000:3b:01.0\",\"rdma-device\":"
                                     "\"mlx5_1\"},\"type\":\"pci\",\"version\":\"1.1.0\"}");
        free(content);
        assert_int_equal(dp_devinfo_remove(sub, p.resource, "0000:3b:01.0"), 0);
        assert_int_equal(access(path, F_OK), -1);
        assert_int_equal(dp_devinfo_remove(sub, p.resource, "0000:3b:01.0"), 0); /* already gone */
        assert_int_equal(dp_devinfo_path(sub, p.resource, "../../etc", path, sizeof(path)),
                         -EINVAL);

        /* remove_all takes only this resource's files */
        struct dp_pool other;
        pool_with_names(&other, "example.com", "res-b");
        struct dp_device d = { .id = "0000:3b:01.7" };
        assert_int_equal(dp_devinfo_write(sub, &other, &d), 0);
        assert_int_equal(dp_devinfo_remove_all(sub, p.resource), 0);
        assert_int_equal(dp_devinfo_path(sub, p.resource, "0000:3b:01.1", path, sizeof(path)), 0);
        assert_int_equal(access(path, F_OK), -1);
        assert_int_equal(dp_devinfo_path(sub, other.resource, d.id, path, sizeof(path)), 0);
        assert_int_equal(access(path, F_OK), 0);
        unlink(path);
        rmdir(sub);
        rmdir(dir);
        dp_pool_done(&p);
}

/* Issue 15.3: without class/misc/rdma_cm (rdma_ucm not loaded) neither the device spec nor the
 * _INFO key names /dev/infiniband/rdma_cm: containerd and CRI-O refuse a missing device path. */
static void test_rdma_without_rdma_cm(void **state)
{
        struct inventory inv = { 0 };
        struct pf_info *pf = fx_add_pf(&inv, 0x3b, "ens1f0", "mlx5_core", 1, 0);
        fx_add_rdma(&pf->vfs[0].rdma, &pf->vfs[0].n_rdma, 1);
        fx_drop_rdma_cm(&pf->vfs[0].rdma[0]);
        struct desired_state d = { 0 };
        fx_add_group(&d, "0000:3b:00.0", "res", DEVICE_TYPE_NETDEVICE, 0, 0)->is_rdma = true;
        struct dp_pool_set s = { 0 };
        assert_int_equal(dp_pools_from_desired(&d, &inv, "example.com", &s), 0);
        char *ids[] = { "0000:3b:01.0" };
        struct dp_container_allocation a = { 0 };
        struct grpc_status st = { 0 };
        assert_int_equal(dp_allocate_container(&s.pools[0], ids, 1, &a, &st), GRPC_STATUS_OK);
        assert_int_equal(a.n_specs, 3); /* uverbs1, umad1, issm1 */
        for (size_t i = 0; i < a.n_specs; i++)
                assert_null(strstr(a.specs[i].host_path, "rdma_cm"));
        assert_string_equal(env(&a, "PCIDEVICE_EXAMPLE_COM_RES_INFO"),
                            "{\"0000:3b:01.0\":{\"generic\":{\"deviceID\":\"0000:3b:01.0\"},"
                            "\"rdma\":{\"issm\":\"/dev/infiniband/issm1\",\"rdma_dev\":"
                            "\"mlx5_1\",\"umad\":\"/dev/infiniband/umad1\","
                            "\"uverbs\":\"/dev/infiniband/uverbs1\"}}}");
        dp_container_allocation_done(&a);
        dp_pool_set_done(&s);
        desired_state_done(&d);
        inventory_done(&inv);
}

/* Issue 15.4: vfio no-IOMMU mode: the host node is /dev/vfio/noiommu-<group>, the container
 * path and the _INFO dev-mount /dev/vfio/<group> (upstream utils.GetVFIODeviceFile). */
static void test_vfio_noiommu(void **state)
{
        struct dp_pool p;
        build_pool(&p, true, false, false);
        p.devices[0].noiommu = true;
        char *ids[] = { "0000:3b:01.0" };
        struct dp_container_allocation a = { 0 };
        struct grpc_status st = { 0 };
        assert_int_equal(dp_allocate_container(&p, ids, 1, &a, &st), GRPC_STATUS_OK);
        char host[32], cont[32], want[256];
        snprintf(host, sizeof(host), "/dev/vfio/noiommu-%d", 100 + 0x3b * 16);
        snprintf(cont, sizeof(cont), "/dev/vfio/%d", 100 + 0x3b * 16);
        assert_int_equal(a.n_specs, 2);
        assert_string_equal(a.specs[1].host_path, host);
        assert_string_equal(a.specs[1].container_path, cont);
        snprintf(want, sizeof(want),
                 "{\"0000:3b:01.0\":{\"generic\":{\"deviceID\":\"0000:3b:01.0\"},\"vfio\":{"
                 "\"dev-mount\":\"%s\",\"mount\":\"/dev/vfio/vfio\"}}}",
                 cont);
        assert_string_equal(env(&a, "PCIDEVICE_EXAMPLE_COM_RES_INFO"), want);
        dp_container_allocation_done(&a);
        dp_pool_done(&p);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_env_name_mangling),
                cmocka_unit_test(test_netdevice_rdma_vhost),
                cmocka_unit_test(test_vfio),
                cmocka_unit_test(test_vfio_noiommu),
                cmocka_unit_test(test_errors),
                cmocka_unit_test(test_rdma_shared_pool),
                cmocka_unit_test(test_rdma_without_rdma_cm),
                cmocka_unit_test(test_devinfo_files),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
