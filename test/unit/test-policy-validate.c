/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for policy_validate(): one row per upstream CRD/webhook rule and per rule of ours.
 * Every error must name the origin, the policy, the field and the reason. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "policy/policy-validate.h"
#include "policy/policy.h"
#include "util/fileio.h"

static const char base_spec[] =
    "{\"resourceName\": \"sriov_highnet\", \"nodeSelector\": {\"highnet-node\": \"true\"},"
    " \"priority\": 90, \"mtu\": 1500, \"numVfs\": 8,"
    " \"nicSelector\": {\"vendor\": \"15b3\", \"pfNames\": [\"ens1f0\"]},"
    " \"deviceType\": \"netdevice\", \"isRdma\": true}";

/* Validates the base policy with `spec_override` (JSON object) merged over its spec, keys in
 * `remove` (comma-separated) deleted, and metadata.name `name`. */
static int validate_variant(const char *name, const char *spec_override, const char *remove,
                            char **reason)
{
        json_t *spec = json_loads(base_spec, 0, NULL), *obj;
        struct policy p;
        int r;

        assert_non_null(spec);
        if (spec_override) {
                json_t *o = json_loads(spec_override, 0, NULL);
                if (!o)
                        fail_msg("bad override %s", spec_override);
                json_object_update(spec, o);
                json_decref(o);
        }
        if (remove) {
                char buf[256], *save = NULL;
                snprintf(buf, sizeof(buf), "%s", remove);
                for (char *k = strtok_r(buf, ",", &save); k; k = strtok_r(NULL, ",", &save))
                        json_object_del(spec, k);
        }
        obj = json_pack("{s:s, s:s, s:{s:s}, s:o}", "apiVersion", POLICY_API_VERSION, "kind",
                        POLICY_KIND, "metadata", "name", name, "spec", spec);
        assert_non_null(obj);
        assert_int_equal(policy_from_json(obj, "case.yaml", &p), 0);
        json_decref(obj);
        r = policy_validate(&p, reason);
        policy_done(&p);
        return r;
}

static void test_valid_variants(void **state)
{
        static const char *const ok[] = {
                NULL,
                "{\"resourceName\": \"with-dash_and_1\"}",
                "{\"priority\": 0}",
                "{\"priority\": 99}",
                "{\"nicSelector\": {\"vendor\": \"15B3\"}}",
                "{\"nicSelector\": {\"deviceID\": \"101b\"}}",
                "{\"nicSelector\": {\"rootDevices\": [\"0000:3b:00.0\"]}}",
                "{\"nicSelector\": {\"pfNames\": [\"ens1f0#0-7\", \"ens1f1#2-3\"]}}",
                "{\"deviceType\": \"vfio-pci\", \"isRdma\": false}",
                "{\"linkType\": \"IB\"}",
                "{\"eSwitchMode\": \"switchdev\", \"linkType\": \"eth\"}",
                "{\"eSwitchMode\": \"switchdev\", \"vdpaType\": \"vhost\"}",
                "{\"numVfs\": 0, \"nicSelector\": {\"vendor\": \"15b3\"}}",
                "{\"nicSelector\": {\"netFilter\": \"openstack/NetworkID:abc\"}}",
                "{\"nodeSelector\": {}}",
        };
        for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
                char *reason = NULL;
                int r = validate_variant("valid-policy", ok[i], NULL, &reason);
                if (r != 0)
                        fail_msg("case %zu (%s) rejected: %s", i, ok[i] ? ok[i] : "base", reason);
        }
}

static void test_invalid_variants(void **state)
{
        static const struct {
                const char *name, *override, *remove, *expect;
        } cases[] = {
                { "p", "{\"resourceName\": \"bad-\"}", NULL,
                  "field spec.resourceName: \"bad-\" must match" },
                { "p", "{\"resourceName\": \"a.b\"}", NULL, "field spec.resourceName" },
                { "p",
                  "{\"resourceName\": "
                  "\"a234567890123456789012345678901234567890123456789012345678901234\"}",
                  NULL, "at most 63 characters" },
                { "p", NULL, "resourceName", "field spec.resourceName: missing (required)" },
                { "p", NULL, "nodeSelector", "field spec.nodeSelector: missing (required)" },
                { "p", "{\"nodeSelector\": {\"a\": \"x\\u0001\"}}", NULL,
                  "field spec.nodeSelector: contains control characters" },
                { "p", "{\"priority\": 100}", NULL, "field spec.priority: 100 is outside 0..99" },
                { "p", "{\"priority\": -1}", NULL, "field spec.priority: -1 is outside 0..99" },
                { "p", "{\"mtu\": -5}", NULL, "field spec.mtu: -5 is outside 1..65535" },
                { "p", "{\"mtu\": 70000}", NULL, "field spec.mtu: 70000 is outside" },
                { "p", NULL, "numVfs", "field spec.numVfs: missing (required)" },
                { "p", "{\"numVfs\": -1}", NULL, "field spec.numVfs: -1 is outside 0..65535" },
                { "p", NULL, "nicSelector", "field spec.nicSelector: missing (required)" },
                { "p", "{\"nicSelector\": {}}", NULL,
                  "field spec.nicSelector: at least one of vendor, deviceID" },
                { "p", "{\"nicSelector\": {\"vendor\": \"mellanox\"}}", NULL,
                  "field spec.nicSelector.vendor: \"mellanox\" is not a hex vendor id" },
                { "p", "{\"nicSelector\": {\"deviceID\": \"12345\"}}", NULL,
                  "field spec.nicSelector.deviceID: \"12345\" is not a hex device id" },
                { "p", "{\"nicSelector\": {\"rootDevices\": [\"3b:00.0\"]}}", NULL,
                  "field spec.nicSelector.rootDevices: \"3b:00.0\" is not a PCI address" },
                { "p", "{\"nicSelector\": {\"rootDevices\": [\"0000:3b:00.0/../x\"]}}", NULL,
                  "field spec.nicSelector.rootDevices" },
                { "p", "{\"nicSelector\": {\"pfNames\": [\"../x\"]}}", NULL,
                  "field spec.nicSelector.pfNames: \"../x\" is not a network interface name" },
                { "p", "{\"nicSelector\": {\"pfNames\": [\"a/b\"]}}", NULL,
                  "\"a/b\" is not a network interface name" },
                { "p", "{\"nicSelector\": {\"pfNames\": [\"ens 1\"]}}", NULL,
                  "\"ens 1\" is not a network interface name" },
                { "p", "{\"nicSelector\": {\"pfNames\": [\"ens\\t1\"]}}", NULL,
                  "is not a network interface name" },
                { "p", "{\"nicSelector\": {\"pfNames\": [\"\"]}}", NULL,
                  "is not a network interface name" },
                { "p", "{\"nicSelector\": {\"pfNames\": [\"ens1f0#5-2\"]}}", NULL,
                  "\"ens1f0#5-2\": range end 2 is before its start 5" },
                { "p", "{\"nicSelector\": {\"pfNames\": [\"ens1f0#0-8\"]}}", NULL,
                  "\"ens1f0#0-8\": range end 8 must be less than numVfs 8" },
                { "p", "{\"nicSelector\": {\"pfNames\": [\"ens1f0#1\"]}}", NULL,
                  "\"ens1f0#1\": VF range must be \"#first-last\" with exactly one '-'" },
                { "p", "{\"nicSelector\": {\"pfNames\": [\"ens1f0#1-2#3\"]}}", NULL,
                  "more than one '#'" },
                { "p", "{\"nicSelector\": {\"pfNames\": [\"ens1f0#x-2\"]}}", NULL,
                  "VF range bounds must be non-negative integers" },
                { "p", "{\"deviceType\": \"dpdk\"}", NULL,
                  "field spec.deviceType: \"dpdk\" is not one of netdevice, vfio-pci" },
                { "p", "{\"linkType\": \"Eth\"}", NULL,
                  "field spec.linkType: \"Eth\" is not one of eth, ETH, ib, IB" },
                { "p", "{\"eSwitchMode\": \"offload\"}", NULL,
                  "field spec.eSwitchMode: \"offload\" is not one of legacy, switchdev" },
                { "p", "{\"vdpaType\": \"x\", \"eSwitchMode\": \"switchdev\"}", NULL,
                  "field spec.vdpaType: \"x\" is not one of virtio, vhost" },
                { "p", "{\"deviceType\": \"vfio-pci\"}", NULL,
                  "field spec.isRdma: RDMA cannot be enabled with deviceType vfio-pci" },
                { "p", "{\"eSwitchMode\": \"switchdev\", \"linkType\": \"ib\"}", NULL,
                  "field spec.eSwitchMode: switchdev requires linkType eth" },
                { "p", "{\"vdpaType\": \"virtio\"}", NULL,
                  "field spec.vdpaType: requires eSwitchMode switchdev" },
                { "p",
                  "{\"vdpaType\": \"virtio\", \"eSwitchMode\": \"switchdev\", \"deviceType\": "
                  "\"vfio-pci\", \"isRdma\": false}",
                  NULL, "field spec.vdpaType: requires deviceType netdevice" },
                { "p", "{\"nicSelector\": {\"netFilter\": \"gcp/x\"}}", NULL,
                  "field spec.nicSelector.netFilter: \"gcp/x\" must be openstack/NetworkID" },
                { "p",
                  "{\"nicSelector\": {\"netFilter\": \"aws/NetworkID:x\", \"vendor\": \"15b3\"}}",
                  NULL, "netFilter: cannot be combined with vendor" },
                { "p",
                  "{\"nicSelector\": {\"netFilter\": \"aws/NetworkID:x\"}, \"linkType\": \"ib\"}",
                  NULL, "field spec.linkType: only eth is allowed together with netFilter" },
                { "Bad_Name", NULL, NULL,
                  "field metadata.name: \"Bad_Name\" is not a valid object name" },
                { "", NULL, NULL, "field metadata.name" },
                { "p", "{\"numVfs\": \"8\"}", NULL,
                  "field spec.numVfs: expected an integer, got a string" },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                char *reason = NULL, prefix[128];
                int r =
                    validate_variant(cases[i].name, cases[i].override, cases[i].remove, &reason);
                snprintf(prefix, sizeof(prefix),
                         "case.yaml: policy %s: ", cases[i].name[0] ? cases[i].name : "");
                if (r != -EINVAL || !reason || !strstr(reason, cases[i].expect) ||
                    (cases[i].name[0] && strncmp(reason, prefix, strlen(prefix)) != 0))
                        fail_msg("case %zu: r=%d reason \"%s\" lacks \"%s\"", i, r,
                                 reason ? reason : "(null)", cases[i].expect);
                free(reason);
        }
}

static void test_all_problems_reported(void **state)
{
        char *reason = NULL;
        assert_int_equal(validate_variant("p",
                                          "{\"priority\": 120, \"deviceType\": \"x\", "
                                          "\"resourceName\": \"-\"}",
                                          NULL, &reason),
                         -EINVAL);
        assert_non_null(strstr(reason, "field spec.priority"));
        assert_non_null(strstr(reason, "field spec.deviceType"));
        assert_non_null(strstr(reason, "field spec.resourceName"));
        free(reason);
}

static void test_fixture_files(void **state)
{
        static const struct {
                const char *file;
                size_t n;
                const char *expect[3];
        } cases[] = {
                { "hostile-names.yaml",
                  1,
                  { "policy hostile-names: field spec.nicSelector.rootDevices", NULL, NULL } },
                { "wrong-types.yaml",
                  1,
                  { "policy wrong-types: field spec.nodeSelector", NULL, NULL } },
                { "rules.yaml",
                  2,
                  { "rules.yaml document 1: policy vfio-with-rdma: field spec.resourceName",
                    "rules.yaml document 2: policy bad-enums: field spec.nicSelector", NULL } },
                { "malformed.yaml",
                  1,
                  { "malformed.yaml: not valid YAML/JSON: line", NULL, NULL } },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                char path[4096], *data = NULL;
                struct policy_list list = { 0 };
                size_t size;

                snprintf(path, sizeof(path), "%s/test/fixtures/policies/invalid/%s",
                         getenv("SRCDIR") ? getenv("SRCDIR") : ".", cases[i].file);
                assert_int_equal(read_full_file(path, 1 << 20, &data, &size), 0);
                assert_int_equal(policy_list_add_buffer(&list, cases[i].file, data, size), 0);
                free(data);
                assert_int_equal(list.n_items, cases[i].n);
                for (size_t k = 0; k < cases[i].n; k++) {
                        char *reason = NULL;
                        assert_int_equal(policy_validate(&list.items[k], &reason), -EINVAL);
                        if (cases[i].expect[k] && !strstr(reason, cases[i].expect[k]))
                                fail_msg("%s #%zu: \"%s\" lacks \"%s\"", cases[i].file, k, reason,
                                         cases[i].expect[k]);
                        free(reason);
                }
                policy_list_done(&list);
        }
}

static void test_pf_name_is_valid(void **state)
{
        assert_true(pf_name_is_valid("ens1f0"));
        assert_true(pf_name_is_valid("enp59s0f0np0"));
        assert_true(pf_name_is_valid("a-very-long-alternative-name-of-twenty-plus"));
        assert_false(pf_name_is_valid(""));
        assert_false(pf_name_is_valid("."));
        assert_false(pf_name_is_valid(".."));
        assert_false(pf_name_is_valid("a..b"));
        assert_false(pf_name_is_valid("a/b"));
        assert_false(pf_name_is_valid("a b"));
        assert_false(pf_name_is_valid("a\nb"));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_valid_variants),
                cmocka_unit_test(test_invalid_variants),
                cmocka_unit_test(test_all_problems_reported),
                cmocka_unit_test(test_fixture_files),
                cmocka_unit_test(test_pf_name_is_valid),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
