/* SPDX-License-Identifier: Apache-2.0 */
/* Conformance of the device plugin's answers with the plugins it replaces (`ctest -L
 * conformance`). Each case is derived from a unit test (or, where upstream has none, the code)
 * of k8snetworkplumbingwg/sriov-network-device-plugin (SNDP, @40b6f507) or
 * Mellanox/k8s-rdma-shared-dev-plugin (RSDP, @410b0f32), written anew here and named after it.
 *
 * Unlike the unit tests, nothing here is a hand-built inventory: every node is a tree from the
 * sysfs generator (test/sysfs-gen), read by the real discovery, turned into pools by the real
 * pool builder and answered by the real Allocate code. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "deviceplugin/allocate.h"
#include "deviceplugin/pool-set.h"
#include "deviceplugin/rdma-shared-config.h"
#include "dp-fixture.h"
#include "host/discover.h"

struct node {
        char root[64];
        struct inventory inv;
};

/* Generates a tree (extra: gen-sysfs options) and discovers it. */
static void node_new(struct node *n, const char *extra)
{
        const char *src = getenv("SRCDIR"), *python = getenv("PYTHON");
        strcpy(n->root, "/tmp/dp-conformance-XXXXXX");
        assert_non_null(mkdtemp(n->root));
        char cmd[1024];
        snprintf(cmd, sizeof(cmd),
                 "%s %s/test/sysfs-gen/gen-sysfs.py --out %s/sys --profile seed %s >/dev/null",
                 python ? python : "python3", src ? src : ".", n->root, extra ? extra : "");
        assert_int_equal(system(cmd), 0);
        char sys[128];
        snprintf(sys, sizeof(sys), "%s/sys", n->root);
        const struct discover_options o = { .sysfs_root = sys };
        assert_int_equal(host_discover(&o, &n->inv), 0);
}

static void node_rediscover(struct node *n)
{
        inventory_done(&n->inv);
        char sys[128];
        snprintf(sys, sizeof(sys), "%s/sys", n->root);
        const struct discover_options o = { .sysfs_root = sys };
        assert_int_equal(host_discover(&o, &n->inv), 0);
}

static void node_done(struct node *n)
{
        inventory_done(&n->inv);
        char cmd[128];
        snprintf(cmd, sizeof(cmd), "rm -rf %s", n->root);
        assert_int_equal(system(cmd), 0);
}

/* Binds a VF to vfio-pci the way the kernel shows it: driver link, no netdev, no RDMA. */
static void bind_vfio(struct node *n, const char *vf)
{
        char cmd[512];
        snprintf(cmd, sizeof(cmd),
                 "cd %s/sys/bus/pci/devices/%s && rm -rf net infiniband infiniband_mad "
                 "infiniband_verbs && rm driver && ln -s ../../../../bus/pci/drivers/vfio-pci "
                 "driver",
                 n->root, vf);
        assert_int_equal(system(cmd), 0);
}

static const struct pf_info *pf_named(const struct node *n, const char *ifname)
{
        const struct pf_info *pf = inventory_find_pf_by_netdev(&n->inv, ifname);
        assert_non_null(pf);
        return pf;
}

/* One pool from one group on a PF. */
static void sriov_pool(const struct node *n, const char *prefix, const char *pf_name,
                       enum device_type type, int first, int last, bool rdma, bool vhost,
                       struct dp_pool_set *ret)
{
        struct desired_state d = { 0 };
        struct vf_group *g =
            fx_add_group(&d, pf_named(n, pf_name)->pci_address, "res", type, first, last);
        g->is_rdma = rdma;
        g->need_vhost_net = vhost;
        assert_int_equal(dp_pools_build(&d, &n->inv, prefix, NULL, NULL, NULL, ret), 0);
        assert_int_equal(ret->n_pools, 1);
        desired_state_done(&d);
}

static struct dp_container_allocation allocate(const struct dp_pool *p, const char *a,
                                               const char *b)
{
        char *ids[] = { (char *)a, (char *)b };
        struct dp_container_allocation out = { 0 };
        struct grpc_status st = { 0 };
        int code = dp_allocate_container(p, ids, b ? 2 : a ? 1 : 0, &out, &st);
        if (code != GRPC_STATUS_OK)
                fail_msg("Allocate: %s", st.message);
        return out;
}

static const char *env(const struct dp_container_allocation *a, const char *key)
{
        for (size_t i = 0; i < a->n_envs; i++)
                if (strcmp(a->env_keys[i], key) == 0)
                        return a->env_values[i];
        return NULL;
}

static const struct dp_device_spec *spec(const struct dp_container_allocation *a, const char *host)
{
        for (size_t i = 0; i < a->n_specs; i++)
                if (strcmp(a->specs[i].host_path, host) == 0)
                        return &a->specs[i];
        return NULL;
}

static json_t *info_of(const struct dp_container_allocation *a, const char *key, const char *id)
{
        json_t *root = json_loads(env(a, key), 0, NULL);
        assert_non_null(root);
        json_t *o = json_incref(json_object_get(root, id));
        json_decref(root);
        assert_non_null(o);
        return o;
}

static const char *info_str(json_t *info, const char *provider, const char *key)
{
        return json_string_value(json_object_get(json_object_get(info, provider), key));
}

/* SNDP pkg/resources/server_test.go "allocating" + pool_stub.go GetEnvs: the env key is
 * PCIDEVICE_<PREFIX>_<NAME> upper-cased with only '.' made '_', the value the requested IDs in
 * request order joined by ','. */
static void test_sndp_server_allocate_envs(void **state)
{
        struct node n;
        node_new(&n, NULL);
        struct dp_pool_set s = { 0 };
        sriov_pool(&n, "intel-nics.example.com", "ens2f0", DEVICE_TYPE_NETDEVICE, 0, 3, false,
                   false, &s);
        const struct pf_info *pf = pf_named(&n, "ens2f0");
        const char *a = pf->vfs[2].pci_address, *b = pf->vfs[0].pci_address;
        struct dp_container_allocation al = allocate(&s.pools[0], a, b);
        char want[64];
        snprintf(want, sizeof(want), "%s,%s", a, b);
        assert_string_equal(env(&al, "PCIDEVICE_INTEL-NICS_EXAMPLE_COM_RES"), want);
        assert_non_null(env(&al, "PCIDEVICE_INTEL-NICS_EXAMPLE_COM_RES_INFO"));
        assert_int_equal(al.n_envs, 2);
        dp_container_allocation_done(&al);
        dp_pool_set_done(&s);
        node_done(&n);
}

/* SNDP pkg/infoprovider/genericInfoProvider_test.go "getting device specs: should always
 * return an empty map" + the generic _INFO entry {"deviceID": <pci>}. */
static void test_sndp_genericInfoProvider(void **state)
{
        struct node n;
        node_new(&n, NULL);
        struct dp_pool_set s = { 0 };
        sriov_pool(&n, NULL, "ens2f0", DEVICE_TYPE_NETDEVICE, 0, 3, false, false, &s);
        const char *id = pf_named(&n, "ens2f0")->vfs[1].pci_address;
        struct dp_container_allocation al = allocate(&s.pools[0], id, NULL);
        assert_int_equal(al.n_specs, 0);
        json_t *info = info_of(&al, "PCIDEVICE_OPENSHIFT_IO_RES_INFO", id);
        assert_string_equal(info_str(info, "generic", "deviceID"), id);
        assert_int_equal(json_object_size(info), 1);
        json_decref(info);
        dp_container_allocation_done(&al);
        dp_pool_set_done(&s);
        node_done(&n);
}

/* SNDP pkg/infoprovider/rdmaInfoProvider_test.go "GetDeviceSpecs: should return non empty map
 * for rdma device" and "GetEnvVal: should the rdma mounts from deviceSpecs": issm, umad,
 * uverbs and rdma_cm, rw, same path inside; _INFO rdma {issm, umad, uverbs, rdma_cm,
 * rdma_dev}. */
static void test_sndp_rdmaInfoProvider(void **state)
{
        struct node n;
        node_new(&n, NULL);
        struct dp_pool_set s = { 0 };
        sriov_pool(&n, NULL, "ens1f0", DEVICE_TYPE_NETDEVICE, 0, 7, true, false, &s);
        const struct vf_info *vf = &pf_named(&n, "ens1f0")->vfs[3];
        struct dp_container_allocation al = allocate(&s.pools[0], vf->pci_address, NULL);
        const struct rdma_device *rd = &vf->rdma[0];
        assert_int_equal(al.n_specs, 4);
        for (size_t i = 0; i < rd->n_char_devices; i++) {
                const struct dp_device_spec *sp = spec(&al, rd->char_devices[i]);
                assert_non_null(sp);
                assert_string_equal(sp->container_path, rd->char_devices[i]);
                assert_string_equal(sp->permissions, "rw");
        }
        assert_non_null(spec(&al, "/dev/infiniband/rdma_cm"));
        json_t *info = info_of(&al, "PCIDEVICE_OPENSHIFT_IO_RES_INFO", vf->pci_address);
        assert_string_equal(info_str(info, "rdma", "rdma_cm"), "/dev/infiniband/rdma_cm");
        assert_string_equal(info_str(info, "rdma", "rdma_dev"), rd->name);
        assert_non_null(strstr(info_str(info, "rdma", "uverbs"), "/dev/infiniband/uverbs"));
        assert_non_null(strstr(info_str(info, "rdma", "umad"), "/dev/infiniband/umad"));
        assert_non_null(strstr(info_str(info, "rdma", "issm"), "/dev/infiniband/issm"));
        json_decref(info);
        dp_container_allocation_done(&al);
        dp_pool_set_done(&s);
        node_done(&n);
}

/* SNDP rdmaInfoProvider via Mellanox/rdmamap GetRdmaCharDevices: rdma_cm is listed only when
 * /dev/infiniband/rdma_cm exists (class/misc/rdma_cm: rdma_ucm loaded). */
static void test_sndp_rdmaInfoProvider_without_rdma_cm(void **state)
{
        struct node n;
        node_new(&n, "--no-rdma-cm");
        struct dp_pool_set s = { 0 };
        sriov_pool(&n, NULL, "ens1f0", DEVICE_TYPE_NETDEVICE, 0, 7, true, false, &s);
        const struct vf_info *vf = &pf_named(&n, "ens1f0")->vfs[0];
        struct dp_container_allocation al = allocate(&s.pools[0], vf->pci_address, NULL);
        assert_int_equal(al.n_specs, 3);
        assert_null(spec(&al, "/dev/infiniband/rdma_cm"));
        json_t *info = info_of(&al, "PCIDEVICE_OPENSHIFT_IO_RES_INFO", vf->pci_address);
        assert_null(info_str(info, "rdma", "rdma_cm"));
        assert_non_null(info_str(info, "rdma", "uverbs"));
        json_decref(info);
        dp_container_allocation_done(&al);
        dp_pool_set_done(&s);
        node_done(&n);
}

/* SNDP pkg/infoprovider/vfioInfoProvider_test.go "GetDeviceSpecs" and "getting env val: should
 * return vfio devices mounts": /dev/vfio/vfio + /dev/vfio/<group>, rw; _INFO vfio {mount,
 * dev-mount}; no mounts. */
static void test_sndp_vfioInfoProvider(void **state)
{
        struct node n;
        node_new(&n, NULL);
        const char *vf = pf_named(&n, "ens2f0")->vfs[1].pci_address;
        char id[16];
        snprintf(id, sizeof(id), "%s", vf);
        bind_vfio(&n, id);
        node_rediscover(&n);
        const struct vf_info *v = &pf_named(&n, "ens2f0")->vfs[1];
        struct dp_pool_set s = { 0 };
        sriov_pool(&n, NULL, "ens2f0", DEVICE_TYPE_VFIO_PCI, 0, 3, false, false, &s);
        assert_int_equal(s.pools[0].n_devices, 1);
        struct dp_container_allocation al = allocate(&s.pools[0], id, NULL);
        char group[32];
        snprintf(group, sizeof(group), "/dev/vfio/%d", v->iommu_group);
        assert_int_equal(al.n_specs, 2);
        assert_non_null(spec(&al, "/dev/vfio/vfio"));
        assert_string_equal(spec(&al, group)->container_path, group);
        assert_string_equal(spec(&al, group)->permissions, "rw");
        json_t *info = info_of(&al, "PCIDEVICE_OPENSHIFT_IO_RES_INFO", id);
        assert_string_equal(info_str(info, "vfio", "mount"), "/dev/vfio/vfio");
        assert_string_equal(info_str(info, "vfio", "dev-mount"), group);
        json_decref(info);
        dp_container_allocation_done(&al);
        dp_pool_set_done(&s);
        node_done(&n);
}

/* SNDP pkg/utils GetVFIODeviceFile (commit cba9f302e; no upstream unit test for this branch):
 * a group named vfio-noiommu has host node /dev/vfio/noiommu-<g>, container /dev/vfio/<g>. */
static void test_sndp_utils_GetVFIODeviceFile_noiommu(void **state)
{
        struct node n;
        node_new(&n, "--noiommu");
        char id[16];
        snprintf(id, sizeof(id), "%s", pf_named(&n, "ens2f0")->vfs[0].pci_address);
        bind_vfio(&n, id);
        node_rediscover(&n);
        int g = pf_named(&n, "ens2f0")->vfs[0].iommu_group;
        struct dp_pool_set s = { 0 };
        sriov_pool(&n, NULL, "ens2f0", DEVICE_TYPE_VFIO_PCI, 0, 3, false, false, &s);
        struct dp_container_allocation al = allocate(&s.pools[0], id, NULL);
        char host[40], cont[32];
        snprintf(host, sizeof(host), "/dev/vfio/noiommu-%d", g);
        snprintf(cont, sizeof(cont), "/dev/vfio/%d", g);
        assert_non_null(spec(&al, host));
        assert_string_equal(spec(&al, host)->container_path, cont);
        json_t *info = info_of(&al, "PCIDEVICE_OPENSHIFT_IO_RES_INFO", id);
        assert_string_equal(info_str(info, "vfio", "dev-mount"), cont);
        json_decref(info);
        dp_container_allocation_done(&al);
        dp_pool_set_done(&s);
        node_done(&n);
}

/* SNDP pkg/infoprovider/vhostNetInfoProvider_test.go "should return correct specs for vhost net
 * device" and "GetEnvVal: should always return the device mounts info". */
static void test_sndp_vhostNetInfoProvider(void **state)
{
        struct node n;
        node_new(&n, NULL);
        struct dp_pool_set s = { 0 };
        sriov_pool(&n, NULL, "eno1", DEVICE_TYPE_NETDEVICE, 0, 1, false, true, &s);
        const char *id = pf_named(&n, "eno1")->vfs[0].pci_address;
        struct dp_container_allocation al = allocate(&s.pools[0], id, NULL);
        assert_int_equal(al.n_specs, 2);
        assert_string_equal(spec(&al, "/dev/vhost-net")->permissions, "rw");
        assert_string_equal(spec(&al, "/dev/net/tun")->container_path, "/dev/net/tun");
        json_t *info = info_of(&al, "PCIDEVICE_OPENSHIFT_IO_RES_INFO", id);
        assert_string_equal(info_str(info, "vhost", "net-mount"), "/dev/vhost-net");
        assert_string_equal(info_str(info, "vhost", "tun-mount"), "/dev/net/tun");
        json_decref(info);
        dp_container_allocation_done(&al);
        dp_pool_set_done(&s);
        node_done(&n);
}

/* SNDP pkg/netdevice/netResourcePool_test.go "Saving and Cleaning DevInfo files: should call
 * nadutils to create a well formatted DeviceInfo object": {"type": "pci", "version": "1.1.0",
 * "pci": {"pci-address", "rdma-device"}} (rdma-device for isRdma only). */
static void test_sndp_netResourcePool_devinfo(void **state)
{
        struct node n;
        node_new(&n, NULL);
        struct dp_pool_set s = { 0 };
        sriov_pool(&n, NULL, "ens1f0", DEVICE_TYPE_NETDEVICE, 0, 7, true, false, &s);
        const struct vf_info *vf = &pf_named(&n, "ens1f0")->vfs[5];
        const struct dp_device *d = dp_pool_find_device(&s.pools[0], vf->pci_address);
        assert_non_null(d);
        char *text = dp_devinfo_json(&s.pools[0], d);
        json_t *got = json_loads(text, 0, NULL);
        json_t *want = json_pack("{s:s,s:s,s:{s:s,s:s}}", "type", "pci", "version", "1.1.0", "pci",
                                 "pci-address", vf->pci_address, "rdma-device", vf->rdma[0].name);
        if (!json_equal(got, want))
                fail_msg("device-info %s", text);
        json_decref(got);
        json_decref(want);
        free(text);
        dp_pool_set_done(&s);
        node_done(&n);
}

/* RSDP pkg/resources/resources_manager_test.go "ReadConfig" and "ValidateConfigs": every
 * config upstream accepts is accepted, every one it refuses is refused. */
static void test_rsdp_resources_manager_ReadConfig_ValidateConfigs(void **state)
{
        static const struct {
                const char *name, *json;
                bool valid;
        } cases[] = {
                { "Read valid config file with non default periodic update",
                  "{\"periodicUpdateInterval\":30,\"configList\":[{\"resourceName\":\"hca\","
                  "\"rdmaHcaMax\":100,\"devices\":[\"ib0\",\"ib1\"]}]}",
                  true },
                { "Read valid config file with default periodic update",
                  "{\"configList\":[{\"resourceName\":\"hca\",\"rdmaHcaMax\":100,"
                  "\"selectors\":{\"ifNames\":[\"ib0\"]}}]}",
                  true },
                { "Read invalid config file", "{\"configList\":[{\"resourceName\":", false },
                { "Valid config list with \"devices\" field",
                  "{\"configList\":[{\"resourceName\":\"a\",\"devices\":[\"ib0\"]}]}", true },
                { "Valid config list \"selectors\" field",
                  "{\"configList\":[{\"resourceName\":\"a\",\"selectors\":{\"vendors\":[\"15b3\"],"
                  "\"deviceIDs\":[\"1017\"],\"drivers\":[\"mlx5_core\"],\"ifNames\":[\"ib0\"],"
                  "\"linkTypes\":[\"infiniband\"]}}]}",
                  true },
                { "Valid config list with 0 number of resources",
                  "{\"configList\":[{\"resourceName\":\"a\",\"rdmaHcaMax\":0,\"devices\":[\"ib0\"]}"
                  "]}",
                  true },
                { "Validate empty config list", "{\"configList\":[]}", false },
                { "resources with invalid name",
                  "{\"configList\":[{\"resourceName\":\"hca-x\",\"devices\":[\"ib0\"]}]}", false },
                { "resources with repeated names",
                  "{\"configList\":[{\"resourceName\":\"a\",\"devices\":[\"ib0\"]},{"
                  "\"resourceName\":"
                  "\"a\",\"devices\":[\"ib1\"]}]}",
                  false },
                { "resources with invalid number of resources",
                  "{\"configList\":[{\"resourceName\":\"a\",\"rdmaHcaMax\":-1,\"devices\":[\"ib0\"]"
                  "}]}",
                  false },
                { "configuration mismatch between \"selectors\" and \"devices\"",
                  "{\"configList\":[{\"resourceName\":\"a\",\"devices\":[\"ib0\"],\"selectors\":{"
                  "\"ifNames\":[\"ib1\"]}}]}",
                  false },
                { "resources configuration with neither \"selectors\" nor \"devices\"",
                  "{\"configList\":[{\"resourceName\":\"a\"}]}", false },
                { "configuration with invalid \"periodicUpdateInterval\"",
                  "{\"periodicUpdateInterval\":-1,\"configList\":[{\"resourceName\":\"a\","
                  "\"devices\":[\"ib0\"]}]}",
                  false },
                /* ReadConfig code paths without a test of their own */
                { "periodicUpdateInterval null (ReadConfig: nil -> default)",
                  "{\"periodicUpdateInterval\":null,\"configList\":[{\"resourceName\":\"a\","
                  "\"devices\":[\"ib0\"]}]}",
                  true },
                { "empty resourcePrefix (ValidateConfigs: default prefix)",
                  "{\"configList\":[{\"resourceName\":\"a\",\"resourcePrefix\":\"\","
                  "\"devices\":[\"ib0\"]}]}",
                  true },
                { "unknown keys (encoding/json ignores them)",
                  "{\"x\":1,\"configList\":[{\"resourceName\":\"a\",\"y\":2,\"selectors\":{"
                  "\"z\":[],\"vendors\":[\"15b3\"]}}]}",
                  true },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                struct rdma_shared_config c = { 0 };
                char *error = NULL;
                int r = rdma_shared_config_parse(cases[i].json, "config.json", &c, &error);
                if ((r == 0) != cases[i].valid)
                        fail_msg("%s: %s (%s)", cases[i].name, r == 0 ? "accepted" : "refused",
                                 error ? error : "");
                if (r == 0 && strcmp(cases[i].name,
                                     "Read valid config file with default periodic update") == 0)
                        assert_int_equal(c.periodic_update_sec, 60);
                if (r == 0 && strstr(cases[i].name, "prefix"))
                        assert_string_equal(c.resources[0].prefix, "rdma");
                free(error);
                rdma_shared_config_done(&c);
        }
}

static struct dp_pool rsdp_pool(const struct node *n, const char *config)
{
        struct rdma_shared_config c = { 0 };
        assert_int_equal(rdma_shared_config_parse(config, "config.json", &c, NULL), 0);
        struct dp_pool_set s = { 0 };
        assert_int_equal(dp_pools_from_rdma_shared(&c, &n->inv, &s), 0);
        struct dp_pool p = s.pools[0];
        for (size_t i = 1; i < s.n_pools; i++)
                dp_pool_done(&s.pools[i]);
        free(s.pools);
        rdma_shared_config_done(&c);
        return p;
}

/* RSDP pkg/resources/resources_manager_test.go "GetFilteredDevices" and "DiscoverHostDevices":
 * every network function with RDMA is a candidate (PFs, VFs, NICs without SR-IOV), selectors
 * compare exact strings, AND across selectors. */
static void test_rsdp_GetFilteredDevices(void **state)
{
        struct node n;
        node_new(&n, "--pf cx6-nosriov:ens4f0:0 --pf cx6-vf:ens5:0");
        assert_int_equal(n.inv.n_rdma_nics, 2);
        /* the VF passed through to a VM, by device ID */
        struct dp_pool p = rsdp_pool(&n, "{\"configList\":[{\"resourceName\":\"vm\",\"rdmaHcaMax\":"
                                         "3,\"selectors\":{\"deviceIDs\":[\"101c\"],\"ifNames\":["
                                         "\"ens5\"]}}]}");
        assert_int_equal(p.n_devices, 3);
        char uverbs[64];
        snprintf(uverbs, sizeof(uverbs), "%s", n.inv.rdma_nics[1].rdma[0].char_devices[0]);
        assert_true(strv_contains(p.shared_char_devices, p.n_shared_char_devices, uverbs));
        dp_pool_done(&p);
        /* SR-IOV off in firmware: a card with no sriov_* files */
        p = rsdp_pool(&n, "{\"configList\":[{\"resourceName\":\"fw\",\"rdmaHcaMax\":1,"
                          "\"devices\":[\"ens4f0\"]}]}");
        assert_int_equal(p.n_devices, 1);
        assert_int_equal(p.n_shared_char_devices, 4); /* uverbs, umad, issm, rdma_cm */
        dp_pool_done(&p);
        /* vendor IDs are compared as ghw writes them: "0x15b3" selects nothing */
        p = rsdp_pool(&n, "{\"configList\":[{\"resourceName\":\"x\",\"rdmaHcaMax\":1,"
                          "\"selectors\":{\"vendors\":[\"0x15b3\"]}}]}");
        assert_int_equal(p.n_devices, 0);
        dp_pool_done(&p);
        node_done(&n);
}

/* RSDP pkg/resources/rdma_device_spec.go (requiredRdmaDevices rdma_cm, umad, uverbs; issue
 * #192 "rdma_cm not found" -> 0 devices): without rdma_cm no card qualifies. */
static void test_rsdp_rdma_device_spec_required_devices(void **state)
{
        struct node n;
        node_new(&n, "--no-rdma-cm");
        struct dp_pool p =
            rsdp_pool(&n, "{\"configList\":[{\"resourceName\":\"hca\","
                          "\"rdmaHcaMax\":1,\"selectors\":{\"vendors\":[\"15b3\"]}}]}");
        assert_int_equal(p.n_devices, 0);
        assert_int_equal(p.n_shared_char_devices, 0);
        dp_pool_done(&p);
        node_done(&n);
}

/* RSDP pkg/resources/server_test.go "allocating": "allocating successfully 1 deviceID" gives
 * the selected cards' char devices with permissions "rwm" and no env; "empty AllocateRequest"
 * is not an error. */
static void test_rsdp_server_allocating(void **state)
{
        struct node n;
        node_new(&n, NULL);
        struct dp_pool p = rsdp_pool(&n, "{\"configList\":[{\"resourceName\":\"hca\","
                                         "\"rdmaHcaMax\":2,\"devices\":[\"ens1f0\"]}]}");
        struct dp_container_allocation al = allocate(&p, "1", NULL);
        assert_int_equal(al.n_envs, 0);
        assert_int_equal(al.n_specs, 4);
        for (size_t i = 0; i < al.n_specs; i++)
                assert_string_equal(al.specs[i].permissions, "rwm");
        assert_non_null(spec(&al, "/dev/infiniband/rdma_cm"));
        dp_container_allocation_done(&al);
        al = allocate(&p, NULL, NULL);
        assert_int_equal(al.n_specs, 4); /* no device IDs checked: every container gets them */
        dp_container_allocation_done(&al);
        dp_pool_done(&p);
        node_done(&n);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_sndp_server_allocate_envs),
                cmocka_unit_test(test_sndp_genericInfoProvider),
                cmocka_unit_test(test_sndp_rdmaInfoProvider),
                cmocka_unit_test(test_sndp_rdmaInfoProvider_without_rdma_cm),
                cmocka_unit_test(test_sndp_vfioInfoProvider),
                cmocka_unit_test(test_sndp_utils_GetVFIODeviceFile_noiommu),
                cmocka_unit_test(test_sndp_vhostNetInfoProvider),
                cmocka_unit_test(test_sndp_netResourcePool_devinfo),
                cmocka_unit_test(test_rsdp_resources_manager_ReadConfig_ValidateConfigs),
                cmocka_unit_test(test_rsdp_GetFilteredDevices),
                cmocka_unit_test(test_rsdp_rdma_device_spec_required_devices),
                cmocka_unit_test(test_rsdp_server_allocating),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
