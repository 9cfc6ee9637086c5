/* SPDX-License-Identifier: Apache-2.0 */
/* What the kubelet handed a pod for a VF's RDMA device (agent/cni/alloc-specs.c), read from a
 * generated kubelet device manager checkpoint as kubelet writes it (checkpoint.Data: its
 * PodDeviceEntries with DeviceIDs per NUMA node, or a plain list as before NUMA, and AllocResp:
 * the device plugin's ContainerAllocateResponse, protobuf bytes in base64 as Go's
 * encoding/json writes []byte). Per VF from the answer's PCIDEVICE_*_INFO (device-info-spec,
 * as this agent's and upstream's device plugins set it), else from its device specs when the
 * entry holds that VF alone; the pod chosen by K8S_POD_UID, else the only entry holding the
 * VF. Absent, garbled or ambiguous: nothing known (the ADD does not fail on the kubelet's
 * file). */
#include <errno.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include <cmocka.h>

#include "alloc-specs.h"
#include "deviceplugin.pb-c.h"
#include "deviceplugin/allocate.h"
#include "deviceplugin/devinfo.h" /* links the device plugin layer (its protobuf messages) */
#include "dra/claim.h"
#include "host/rdma-function.h"

static char path[64];

static char *b64(const uint8_t *in, size_t n)
{
        static const char t[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        char *out = calloc(1, (n + 2) / 3 * 4 + 1), *o = out;
        for (size_t i = 0; i < n; i += 3) {
                uint32_t w = (uint32_t)in[i] << 16 | (i + 1 < n ? (uint32_t)in[i + 1] << 8 : 0) |
                             (i + 2 < n ? in[i + 2] : 0);
                *o++ = t[w >> 18 & 63];
                *o++ = t[w >> 12 & 63];
                *o++ = i + 1 < n ? t[w >> 6 & 63] : '=';
                *o++ = i + 2 < n ? t[w & 63] : '=';
        }
        return out;
}

/* A ContainerAllocateResponse with one env (key "" for none) and device specs host paths. */
static char *answer(const char *env_key, const char *env_value, const char *const *devs,
                    size_t n_devs)
{
        V1beta1__ContainerAllocateResponse r = V1BETA1__CONTAINER_ALLOCATE_RESPONSE__INIT;
        V1beta1__ContainerAllocateResponse__EnvsEntry env =
            V1BETA1__CONTAINER_ALLOCATE_RESPONSE__ENVS_ENTRY__INIT;
        V1beta1__ContainerAllocateResponse__EnvsEntry *envs[1] = { &env };
        V1beta1__DeviceSpec specs[4], *spec_ptrs[4];
        if (env_key[0]) {
                env.key = (char *)env_key;
                env.value = (char *)env_value;
                r.envs = envs;
                r.n_envs = 1;
        }
        for (size_t i = 0; i < n_devs; i++) {
                specs[i] = (V1beta1__DeviceSpec)V1BETA1__DEVICE_SPEC__INIT;
                specs[i].host_path = specs[i].container_path = (char *)devs[i];
                specs[i].permissions = (char *)"rw";
                spec_ptrs[i] = &specs[i];
        }
        r.devices = spec_ptrs;
        r.n_devices = n_devs;
        size_t n = v1beta1__container_allocate_response__get_packed_size(&r);
        uint8_t *buf = malloc(n + 1);
        v1beta1__container_allocate_response__pack(&r, buf);
        char *text = b64(buf, n);
        free(buf);
        return text;
}

static void write_checkpoint(const char *text)
{
        FILE *fp = fopen(path, "w");
        assert_non_null(fp);
        fputs(text, fp);
        fclose(fp);
}

static const char info_a[] =
    "{\"0000:3b:00.2\":{\"generic\":{\"deviceID\":\"0000:3b:00.2\"},\"rdma\":{\"rdma_dev\":"
    "\"mlx5_3\",\"uverbs\":\"/dev/infiniband/uverbs3\",\"umad\":\"/dev/infiniband/umad3\","
    "\"issm\":\"/dev/infiniband/issm3\"}},\"0000:3b:00.3\":{\"rdma\":{\"rdma_dev\":\"mlx5_4\","
    "\"uverbs\":\"/dev/infiniband/uverbs4\",\"umad\":\"/dev/infiniband/umad4\"}}}";

/* Pod A holds VFs .2 and .3 (one answer, NUMA-keyed IDs, the INFO env); pod B holds .4 alone
 * (IDs as a plain list, no INFO env: its device specs). */
static void stage(void)
{
        const char *devs_a[] = { "/dev/infiniband/uverbs4", "/dev/infiniband/uverbs3",
                                 "/dev/infiniband/rdma_cm" };
        const char *devs_b[] = { "/dev/infiniband/rdma_cm", "/dev/infiniband/issm5",
                                 "/dev/infiniband/uverbs5", "/dev/infiniband/umad5" };
        char *a = answer("PCIDEVICE_OPENSHIFT_IO_IB_INFO", info_a, devs_a, 3);
        char *b = answer("", "", devs_b, 4);
        char text[8192];
        snprintf(text, sizeof(text),
                 "{\"Data\":{\"PodDeviceEntries\":["
                 "{\"PodUID\":\"uid-a\",\"ContainerName\":\"app\",\"ResourceName\":"
                 "\"openshift.io/ib\",\"DeviceIDs\":{\"0\":[\"0000:3b:00.2\",\"0000:3b:00.3\"]},"
                 "\"AllocResp\":\"%s\"},"
                 "{\"PodUID\":\"uid-b\",\"ContainerName\":\"app\",\"ResourceName\":"
                 "\"openshift.io/ib\",\"DeviceIDs\":[\"0000:3b:00.4\"],\"AllocResp\":\"%s\"}],"
                 "\"RegisteredDevices\":{\"openshift.io/ib\":[\"0000:3b:00.2\"]}},"
                 "\"Checksum\":1234}",
                 a, b);
        write_checkpoint(text);
        free(a);
        free(b);
}

static int setup(void **state)
{
        (void)state;
        snprintf(path, sizeof(path), "/tmp/test-cni-alloc-specs.XXXXXX");
        int fd = mkstemp(path);
        assert_true(fd >= 0);
        close(fd);
        return 0;
}

static int teardown(void **state)
{
        (void)state;
        unlink(path);
        return 0;
}

static int lookup(const char *args, const char *pci, struct host_rdma_char_devices *d, char *source)
{
        return cni_alloc_rdma_devices(path, args, pci, d, source, 512);
}

/* The pod's own VF's paths from the INFO env, not the other VF's of the same answer. */
static void test_per_vf_paths_from_the_info_env(void **state)
{
        (void)state;
        stage();
        struct host_rdma_char_devices d;
        char source[512];
        assert_int_equal(lookup("IgnoreUnknown=1;K8S_POD_NAMESPACE=ns;K8S_POD_UID=uid-a",
                                "0000:3b:00.2", &d, source),
                         1);
        assert_string_equal(d.uverbs, "/dev/infiniband/uverbs3");
        assert_string_equal(d.umad, "/dev/infiniband/umad3");
        assert_string_equal(d.issm, "/dev/infiniband/issm3");
        assert_non_null(strstr(source, "pod uid-a (container \"app\", openshift.io/ib)"));
        assert_int_equal(lookup("K8S_POD_UID=uid-a", "0000:3b:00.3", &d, source), 1);
        assert_string_equal(d.uverbs, "/dev/infiniband/uverbs4");
        assert_string_equal(d.issm, ""); /* not handed out: not compared */
        /* without a UID: the only entry holding the VF */
        assert_int_equal(lookup(NULL, "0000:3b:00.3", &d, source), 1);
        assert_string_equal(d.uverbs, "/dev/infiniband/uverbs4");
}

/* No INFO env, an entry holding that VF alone: its device specs (rdma_cm is no per-device
 * node). Another pod's UID: nothing for this VF. */
static void test_device_specs_when_alone(void **state)
{
        (void)state;
        stage();
        struct host_rdma_char_devices d;
        char source[512];
        assert_int_equal(lookup("K8S_POD_UID=uid-b", "0000:3b:00.4", &d, source), 1);
        assert_string_equal(d.uverbs, "/dev/infiniband/uverbs5");
        assert_string_equal(d.umad, "/dev/infiniband/umad5");
        assert_string_equal(d.issm, "/dev/infiniband/issm5");
        assert_int_equal(lookup("K8S_POD_UID=uid-a", "0000:3b:00.4", &d, source), 0);
        assert_int_equal(lookup("K8S_POD_UID=uid-b", "0000:3b:00.9", &d, source), 0);
        assert_string_equal(d.uverbs, "");
}

/* Two pods' entries name the VF (a stale one not cleaned up yet) and no UID to choose: not
 * known rather than a guess; the UID chooses. */
static void test_ambiguous_without_uid(void **state)
{
        (void)state;
        const char *devs[] = { "/dev/infiniband/uverbs7" };
        char *a = answer("", "", devs, 1), *b = answer("", "", devs, 1);
        char text[4096];
        snprintf(text, sizeof(text),
                 "{\"Data\":{\"PodDeviceEntries\":[{\"PodUID\":\"old\",\"DeviceIDs\":{\"-1\":"
                 "[\"0000:3b:00.2\"]},\"AllocResp\":\"%s\"},{\"PodUID\":\"new\",\"DeviceIDs\":"
                 "{\"-1\":[\"0000:3b:00.2\"]},\"AllocResp\":\"%s\"}]}}",
                 a, b);
        write_checkpoint(text);
        free(a);
        free(b);
        struct host_rdma_char_devices d;
        char source[512];
        assert_int_equal(lookup("K8S_POD_NAME=x", "0000:3b:00.2", &d, source), 0);
        assert_int_equal(lookup("K8S_POD_UID=new", "0000:3b:00.2", &d, source), 1);
        assert_string_equal(d.uverbs, "/dev/infiniband/uverbs7");
}

/* No checkpoint, not JSON, another shape, bad base64, bytes that are no protobuf message:
 * nothing known, no crash. */
static void test_garbled_or_absent_is_not_known(void **state)
{
        (void)state;
        struct host_rdma_char_devices d;
        char source[512];
#define ENTRY_HEAD "{\"Data\":{\"PodDeviceEntries\":[{\"PodUID\":"
#define VF_IDS     "\"DeviceIDs\":[\"0000:3b:00.2\"]"
        const char *texts[] = {
                "not json",
                "{\"Data\":{\"PodDeviceEntries\":{}}}",
                ENTRY_HEAD "\"u\"," VF_IDS ",\"AllocResp\":\"%%%%\"}]}}",
                ENTRY_HEAD "\"u\"," VF_IDS ",\"AllocResp\":\"/////w==\"}]}}",
                ENTRY_HEAD "7,\"DeviceIDs\":[1,\"0000:3b:00.2\"]}]}}",
        };
        for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
                write_checkpoint(texts[i]);
                assert_int_equal(lookup("K8S_POD_UID=u", "0000:3b:00.2", &d, source), 0);
                assert_string_equal(d.uverbs, "");
        }
        unlink(path);
        assert_int_equal(lookup(NULL, "0000:3b:00.2", &d, source), 0);
}

/* A prepared claim's record as the agent's DRA driver writes it (agent/dra.c): its devices with
 * their CDI IDs and the CDI spec itself, made by dra_cdi_spec() from each VF's own device
 * nodes. VF .2 has uverbs3/umad3/issm3, VF .3 uverbs4 and rdma_cm. */
static void write_dra_record(const char *agent_dir, const char *uid, const char *name)
{
        struct dp_device_spec specs2[] = {
                { "/dev/infiniband/uverbs3", "/dev/infiniband/uverbs3", "rw" },
                { "/dev/infiniband/umad3", "/dev/infiniband/umad3", "rw" },
                { "/dev/infiniband/issm3", "/dev/infiniband/issm3", "rw" },
                { "/dev/infiniband/rdma_cm", "/dev/infiniband/rdma_cm", "rw" },
        };
        struct dp_device_spec specs3[] = {
                { "/dev/infiniband/rdma_cm", "/dev/infiniband/rdma_cm", "rw" },
                { "/dev/infiniband/uverbs4", "/dev/infiniband/uverbs4", "rw" },
        };
        const struct dp_container_allocation own2 = { .specs = specs2, .n_specs = 4 },
                                             own3 = { .specs = specs3, .n_specs = 2 }, pool = { 0 };
        const struct dra_cdi_device devs[] = {
                { .name = "0000-3b-00-2",
                  .pci = "0000:3b:00.2",
                  .rdma_device = "mlx5_3",
                  .own = &own2,
                  .pool = &pool },
                { .name = "0000-3b-00-3",
                  .pci = "0000:3b:00.3",
                  .rdma_device = "mlx5_4",
                  .own = &own3,
                  .pool = &pool },
        };
        json_auto_t *cdi = dra_cdi_spec("sriovnetwork.k8snetworkplumbingwg.io", uid, devs, 2);
        assert_non_null(cdi);
        json_auto_t *listed = json_array();
        for (size_t i = 0; i < 2; i++) {
                char id[256];
                assert_int_equal(dra_cdi_device_id("sriovnetwork.k8snetworkplumbingwg.io", uid,
                                                   devs[i].name, id, sizeof(id)),
                                 0);
                json_array_append_new(listed,
                                      json_pack("{s:s,s:s,s:s,s:s}", "request", "vf", "pool",
                                                "node-a", "device", devs[i].name, "cdi", id));
        }
        json_auto_t *record =
            json_pack("{s:s,s:s,s:s,s:[],s:O,s:O}", "namespace", "team", "name", name, "uid", uid,
                      "reservedFor", "devices", listed, "cdi", cdi);
        assert_non_null(record);
        char dir[128], file[160];
        snprintf(dir, sizeof(dir), "%s/dra", agent_dir);
        (void)mkdir(dir, 0755);
        snprintf(file, sizeof(file), "%s/%s.json", dir, uid);
        assert_int_equal(json_dump_file(record, file, 0), 0);
}

static int remove_entry(const char *entry, const struct stat *st, int type, struct FTW *ftw)
{
        return remove(entry);
}

/* A VF the agent's DRA driver prepared: its own CDI device's nodes (not the claim's other VF's),
 * named by the claim; a VF no claim lists, a garbled record, no records, or two claims listing
 * one VF (one stale): nothing known. */
static void test_dra_claims_cdi_device(void **state)
{
        (void)state;
        char agent[64] = "/tmp/test-cni-alloc-dra.XXXXXX";
        assert_non_null(mkdtemp(agent));
        struct host_rdma_char_devices d;
        char source[512], file[160];
        assert_int_equal(cni_dra_rdma_devices(agent, "0000:3b:00.2", &d, source, 512), 0);
        write_dra_record(agent, "c1a1", "ib-claim");
        snprintf(file, sizeof(file), "%s/dra/garbled.json", agent);
        FILE *fp = fopen(file, "w");
        assert_non_null(fp);
        fputs("{\"devices\": [", fp);
        fclose(fp);
        assert_int_equal(cni_dra_rdma_devices(agent, "0000:3b:00.2", &d, source, 512), 1);
        assert_string_equal(d.uverbs, "/dev/infiniband/uverbs3");
        assert_string_equal(d.umad, "/dev/infiniband/umad3");
        assert_string_equal(d.issm, "/dev/infiniband/issm3");
        print_message("  source: %s\n", source);
        assert_non_null(strstr(source, "DRA ResourceClaim team/ib-claim"));
        assert_non_null(strstr(source, "c1a1-0000-3b-00-2"));
        assert_int_equal(cni_dra_rdma_devices(agent, "0000:3b:00.3", &d, source, 512), 1);
        assert_string_equal(d.uverbs, "/dev/infiniband/uverbs4");
        assert_string_equal(d.umad, ""); /* not handed out: not compared */
        assert_int_equal(cni_dra_rdma_devices(agent, "0000:3b:00.9", &d, source, 512), 0);
        assert_string_equal(source, "");
        write_dra_record(agent, "c2b2", "stale");
        assert_int_equal(cni_dra_rdma_devices(agent, "0000:3b:00.2", &d, source, 512), 0);
        assert_string_equal(d.uverbs, "");
        assert_int_equal(nftw(agent, remove_entry, 16, FTW_DEPTH | FTW_PHYS), 0);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_per_vf_paths_from_the_info_env, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_device_specs_when_alone, setup, teardown),
                cmocka_unit_test_setup_teardown(test_ambiguous_without_uid, setup, teardown),
                cmocka_unit_test_setup_teardown(test_garbled_or_absent_is_not_known, setup,
                                                teardown),
                cmocka_unit_test(test_dra_claims_cdi_device),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
