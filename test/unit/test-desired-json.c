/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for lib/model/desired-json: SriovNetworkNodeState spec names, round trip, and
 * strict parsing of persisted/received state. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "model/desired-json.h"

static void fill(struct desired_state *s)
{
        static struct vf_group groups[2];
        static struct desired_interface ifaces[1];

        groups[0] = (struct vf_group){ .vf_start = 0, .vf_end = 3, .mtu = 9000, .is_rdma = true };
        snprintf(groups[0].resource_name, sizeof(groups[0].resource_name), "sriov_highnet");
        snprintf(groups[0].policy_name, sizeof(groups[0].policy_name), "highnet-sriov-policy");
        groups[1] =
            (struct vf_group){ .vf_start = 4, .vf_end = 7, .device_type = DEVICE_TYPE_VFIO_PCI };
        snprintf(groups[1].resource_name, sizeof(groups[1].resource_name), "dpdk");
        snprintf(groups[1].policy_name, sizeof(groups[1].policy_name), "dpdk-policy");
        snprintf(groups[1].vdpa_type, sizeof(groups[1].vdpa_type), "virtio");
        ifaces[0] = (struct desired_interface){ .num_vfs = 8,
                                                .mtu = 9000,
                                                .link_type = LINK_TYPE_ETH,
                                                .eswitch_mode = ESWITCH_MODE_LEGACY,
                                                .groups = groups,
                                                .n_groups = 2 };
        snprintf(ifaces[0].pci_address, sizeof(ifaces[0].pci_address), "0000:3b:00.0");
        snprintf(ifaces[0].name, sizeof(ifaces[0].name), "ens1f0");
        *s = (struct desired_state){ .interfaces = ifaces, .n_interfaces = 1 };
}

static void test_spec_names(void **state)
{
        struct desired_state s;
        json_t *o, *i, *g;

        fill(&s);
        assert_int_equal(desired_state_to_json(&s, &o), 0);
        i = json_array_get(json_object_get(o, "interfaces"), 0);
        assert_string_equal(json_string_value(json_object_get(i, "pciAddress")), "0000:3b:00.0");
        assert_string_equal(json_string_value(json_object_get(i, "name")), "ens1f0");
        assert_int_equal(json_integer_value(json_object_get(i, "numVfs")), 8);
        assert_int_equal(json_integer_value(json_object_get(i, "mtu")), 9000);
        assert_string_equal(json_string_value(json_object_get(i, "linkType")), "ETH");
        assert_string_equal(json_string_value(json_object_get(i, "eSwitchMode")), "legacy");
        assert_true(json_is_false(json_object_get(i, "externallyManaged")));
        g = json_array_get(json_object_get(i, "vfGroups"), 0);
        assert_string_equal(json_string_value(json_object_get(g, "resourceName")), "sriov_highnet");
        assert_string_equal(json_string_value(json_object_get(g, "deviceType")), "netdevice");
        assert_string_equal(json_string_value(json_object_get(g, "vfRange")), "0-3");
        assert_string_equal(json_string_value(json_object_get(g, "policyName")),
                            "highnet-sriov-policy");
        assert_int_equal(json_integer_value(json_object_get(g, "mtu")), 9000);
        assert_true(json_is_true(json_object_get(g, "isRdma")));
        assert_null(json_object_get(g, "vdpaType"));
        g = json_array_get(json_object_get(i, "vfGroups"), 1);
        assert_string_equal(json_string_value(json_object_get(g, "deviceType")), "vfio-pci");
        assert_null(json_object_get(g, "mtu")); /* unset values are omitted */
        assert_string_equal(json_string_value(json_object_get(g, "vdpaType")), "virtio");
        json_decref(o);
}

static void test_roundtrip(void **state)
{
        struct desired_state s, back;
        char *error = NULL;
        json_t *o, *o2;

        fill(&s);
        assert_int_equal(desired_state_to_json(&s, &o), 0);
        assert_int_equal(desired_state_from_json(o, &back, &error), 0);
        assert_int_equal(back.n_interfaces, 1);
        assert_int_equal(back.interfaces[0].n_groups, 2);
        assert_int_equal(back.interfaces[0].groups[1].vf_start, 4);
        assert_int_equal(back.interfaces[0].groups[1].device_type, DEVICE_TYPE_VFIO_PCI);
        assert_int_equal(back.interfaces[0].link_type, LINK_TYPE_ETH);
        assert_int_equal(desired_state_to_json(&back, &o2), 0);
        assert_true(json_equal(o, o2));
        json_decref(o);
        json_decref(o2);
        desired_state_done(&back);
}

static void test_parse_errors(void **state)
{
        static const struct {
                const char *json, *expect;
        } cases[] = {
                { "[]", "spec: expected an object" },
                { "{\"interfaces\": {}}", "spec.interfaces: expected a list" },
                { "{\"interfaces\": [1]}", "spec.interfaces[0]: expected an object" },
                { "{\"interfaces\": [{}]}", "spec.interfaces[0].pciAddress: missing" },
                { "{\"interfaces\": [{\"pciAddress\": \"../../x\"}]}",
                  "spec.interfaces[0].pciAddress: \"../../x\" is not a PCI address" },
                { "{\"interfaces\": [{\"pciAddress\": \"0000:3b:00.0\", \"name\": \"a/b\"}]}",
                  "spec.interfaces[0].name: \"a/b\" is not an interface name" },
                { "{\"interfaces\": [{\"pciAddress\": \"0000:3b:00.0\", \"numVfs\": \"8\"}]}",
                  "spec.interfaces[0].numVfs: expected an integer" },
                { "{\"interfaces\": [{\"pciAddress\": \"0000:3b:00.0\", \"numVfs\": -1}]}",
                  "spec.interfaces[0].numVfs: -1 outside 0..65535" },
                { "{\"interfaces\": [{\"pciAddress\": \"0000:3b:00.0\", \"linkType\": \"x\"}]}",
                  "spec.interfaces[0].linkType: \"x\" is not eth or ib" },
                { "{\"interfaces\": [{\"pciAddress\": \"0000:3b:00.0\", \"eSwitchMode\": 1}]}",
                  "spec.interfaces[0].eSwitchMode: expected a string" },
                { "{\"interfaces\": [{\"pciAddress\": \"0000:3b:00.0\", \"externallyManaged\": "
                  "\"no\"}]}",
                  "spec.interfaces[0].externallyManaged: expected a boolean" },
                { "{\"interfaces\": [{\"pciAddress\": \"0000:3b:00.0\", \"vfGroups\": 3}]}",
                  "spec.interfaces[0].vfGroups: expected a list" },
                { "{\"interfaces\": [{\"pciAddress\": \"0000:3b:00.0\", \"vfGroups\": [{}]}]}",
                  "spec.interfaces[0].vfGroups[0].resourceName: missing" },
                { "{\"interfaces\": [{\"pciAddress\": \"0000:3b:00.0\", \"vfGroups\": "
                  "[{\"resourceName\": \"../x\", \"vfRange\": \"0-1\"}]}]}",
                  "vfGroups[0].resourceName: \"../x\" is not a valid resource name" },
                { "{\"interfaces\": [{\"pciAddress\": \"0000:3b:00.0\", \"vfGroups\": "
                  "[{\"resourceName\": \"r\", \"vfRange\": \"1\"}]}]}",
                  "vfGroups[0].vfRange: \"1\" is not \"first-last\"" },
                /* out of int range: once undefined behaviour of sscanf("%d") */
                { "{\"interfaces\": [{\"pciAddress\": \"0000:3b:00.0\", \"vfGroups\": "
                  "[{\"resourceName\": \"r\", \"vfRange\": \"0-99999999999\"}]}]}",
                  "vfGroups[0].vfRange: \"0-99999999999\" is not \"first-last\"" },
                { "{\"interfaces\": [{\"pciAddress\": \"0000:3b:00.0\", \"vfGroups\": "
                  "[{\"resourceName\": \"r\", \"vfRange\": \"1-2-3\"}]}]}",
                  "vfGroups[0].vfRange: \"1-2-3\" is not \"first-last\"" },
                { "{\"interfaces\": [{\"pciAddress\": \"0000:3b:00.0\", \"vfGroups\": "
                  "[{\"resourceName\": \"r\", \"vfRange\": \"0-1\", \"deviceType\": \"dpdk\"}]}]}",
                  "vfGroups[0].deviceType: \"dpdk\" is not netdevice or vfio-pci" },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                struct desired_state s;
                char *error = NULL;
                json_t *o = json_loads(cases[i].json, 0, NULL);

                if (!o)
                        fail_msg("case %zu: test JSON does not parse", i);
                assert_int_equal(desired_state_from_json(o, &s, &error), -EINVAL);
                if (!error || !strstr(error, cases[i].expect))
                        fail_msg("case %zu: \"%s\" lacks \"%s\"", i, error ? error : "(null)",
                                 cases[i].expect);
                free(error);
                json_decref(o);
        }
}

static void test_long_policy_name(void **state)
{
        char longname[400];
        struct desired_state s;
        char *error = NULL;
        json_t *o;

        memset(longname, 'a', sizeof(longname) - 1);
        longname[sizeof(longname) - 1] = '\0';
        o = json_pack("{s:[{s:s, s:[{s:s, s:s, s:s}]}]}", "interfaces", "pciAddress",
                      "0000:3b:00.0", "vfGroups", "resourceName", "r", "vfRange", "0-1",
                      "policyName", longname);
        assert_non_null(o);
        assert_int_equal(desired_state_from_json(o, &s, &error), -EINVAL);
        assert_non_null(strstr(error, "vfGroups[0].policyName: too long"));
        free(error);
        json_decref(o);
}

static void test_empty(void **state)
{
        struct desired_state s = { 0 }, back;
        char *error = NULL;
        json_t *o;

        assert_int_equal(desired_state_to_json(&s, &o), 0);
        assert_int_equal(json_array_size(json_object_get(o, "interfaces")), 0);
        assert_int_equal(desired_state_from_json(o, &back, &error), 0);
        assert_int_equal(back.n_interfaces, 0);
        desired_state_done(&back);
        json_decref(o);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_spec_names),   cmocka_unit_test(test_roundtrip),
                cmocka_unit_test(test_parse_errors), cmocka_unit_test(test_long_policy_name),
                cmocka_unit_test(test_empty),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
