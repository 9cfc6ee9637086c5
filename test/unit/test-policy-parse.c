/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for lib/policy parsing: every spec field, webhook defaults, YAML typing,
 * multi-document files, List objects, skipped kinds, wrong types and hostile input. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "policy/policy.h"
#include "util/yaml-json.h"
#include "util/fileio.h"

static void parse_text(struct policy_list *list, const char *text)
{
        *list = (struct policy_list){ 0 };
        assert_int_equal(policy_list_add_buffer(list, "test.yaml", text, strlen(text)), 0);
}

static void test_seed_fixture(void **state)
{
        char path[4096], *data = NULL;
        struct policy_list list = { 0 };
        size_t size;

        snprintf(path, sizeof(path), "%s/test/fixtures/policies/highnet-sriov-policy.yaml",
                 getenv("SRCDIR") ? getenv("SRCDIR") : ".");
        assert_int_equal(read_full_file(path, 1 << 20, &data, &size), 0);
        assert_int_equal(policy_list_add_buffer(&list, path, data, size), 0);
        free(data);
        assert_int_equal(list.n_items, 1);
        const struct policy *p = &list.items[0];
        assert_null(p->error);
        assert_string_equal(p->name, "highnet-sriov-policy");
        assert_string_equal(p->namespace, "sriov-network-operator");
        assert_string_equal(p->resource_name, "sriov_highnet");
        assert_int_equal(p->n_node_selector, 1);
        assert_string_equal(p->node_selector[0].key, "highnet-node");
        assert_string_equal(p->node_selector[0].value, "true");
        assert_int_equal(p->priority, 90);
        assert_int_equal(p->mtu, 1500);
        assert_int_equal(p->num_vfs, 8);
        assert_string_equal(p->nic.vendor, "15b3");
        assert_int_equal(p->nic.n_pf_names, 1);
        assert_string_equal(p->nic.pf_names[0].name, "ens1f0");
        assert_false(p->nic.pf_names[0].has_range);
        assert_string_equal(p->device_type, "netdevice");
        assert_true(p->is_rdma);
        policy_list_done(&list);
}

static const char all_fields[] = "apiVersion: sriovnetwork.openshift.io/v1\n"
                                 "kind: SriovNetworkNodePolicy\n"
                                 "metadata: {name: every-field, namespace: ns}\n"
                                 "spec:\n"
                                 "  resourceName: res_all\n"
                                 "  nodeSelector: {a: \"1\", b: x}\n"
                                 "  priority: 5\n"
                                 "  mtu: 9000\n"
                                 "  numVfs: 16\n"
                                 "  nicSelector:\n"
                                 "    vendor: \"8086\"\n"
                                 "    deviceID: \"159b\"\n"
                                 "    rootDevices: [\"0000:3b:00.0\", \"0000:3b:00.1\"]\n"
                                 "    pfNames: [\"ens1f0#2-5\", ens1f1]\n"
                                 "  deviceType: vfio-pci\n"
                                 "  isRdma: false\n"
                                 "  needVhostNet: true\n"
                                 "  linkType: ETH\n"
                                 "  eSwitchMode: switchdev\n"
                                 "  vdpaType: virtio\n"
                                 "  excludeTopology: true\n"
                                 "  externallyManaged: true\n";

static void test_every_field(void **state)
{
        struct policy_list list;
        parse_text(&list, all_fields);
        assert_int_equal(list.n_items, 1);
        const struct policy *p = &list.items[0];
        assert_null(p->error);
        assert_string_equal(p->origin, "test.yaml");
        assert_string_equal(p->resource_name, "res_all");
        assert_int_equal(p->n_node_selector, 2);
        assert_string_equal(p->node_selector[0].value, "1");
        assert_string_equal(p->node_selector[1].value, "x");
        assert_int_equal(p->priority, 5);
        assert_int_equal(p->mtu, 9000);
        assert_int_equal(p->num_vfs, 16);
        assert_string_equal(p->nic.vendor, "8086");
        assert_string_equal(p->nic.device_id, "159b");
        assert_int_equal(p->nic.n_root_devices, 2);
        assert_string_equal(p->nic.root_devices[1], "0000:3b:00.1");
        assert_int_equal(p->nic.n_pf_names, 2);
        assert_string_equal(p->nic.pf_names[0].name, "ens1f0");
        assert_true(p->nic.pf_names[0].has_range);
        assert_int_equal(p->nic.pf_names[0].vf_start, 2);
        assert_int_equal(p->nic.pf_names[0].vf_end, 5);
        assert_string_equal(p->nic.pf_names[1].name, "ens1f1");
        assert_false(p->nic.pf_names[1].has_range);
        assert_string_equal(p->device_type, "vfio-pci");
        assert_false(p->is_rdma);
        assert_true(p->need_vhost_net);
        assert_string_equal(p->link_type, "ETH");
        assert_string_equal(p->eswitch_mode, "switchdev");
        assert_string_equal(p->vdpa_type, "virtio");
        assert_true(p->exclude_topology);
        assert_true(p->externally_managed);
        policy_list_done(&list);
}

#define MINIMAL_HEAD                                                                               \
        "apiVersion: sriovnetwork.openshift.io/v1\nkind: SriovNetworkNodePolicy\n"                 \
        "metadata: {name: p}\nspec:\n  resourceName: r\n  nodeSelector: {}\n  numVfs: 2\n"         \
        "  nicSelector: {vendor: \"15b3\"}\n"

static void test_webhook_defaults(void **state)
{
        static const struct {
                const char *extra;
                int priority;
                const char *device_type;
                bool is_rdma;
        } cases[] = {
                { "", 99, "netdevice", false },
                { "  linkType: ib\n", 99, "netdevice", true },
                { "  linkType: IB\n  priority: 0\n", 0, "netdevice", true },
                { "  linkType: ib\n  deviceType: vfio-pci\n", 99, "vfio-pci", false },
                { "  linkType: eth\n", 99, "netdevice", false },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                char text[1024];
                struct policy_list list;
                snprintf(text, sizeof(text), "%s%s", MINIMAL_HEAD, cases[i].extra);
                parse_text(&list, text);
                assert_int_equal(list.n_items, 1);
                assert_null(list.items[0].error);
                assert_int_equal(list.items[0].priority, cases[i].priority);
                assert_string_equal(list.items[0].device_type, cases[i].device_type);
                assert_int_equal(list.items[0].is_rdma, cases[i].is_rdma);
                policy_list_done(&list);
        }
}

static void test_wrong_types(void **state)
{
        static const struct {
                const char *extra;
                const char *expect;
        } cases[] = {
                { "  mtu: \"9000\"\n", "field spec.mtu: expected an integer, got a string" },
                { "  priority: 1.5\n", "field spec.priority: expected an integer, got a number" },
                { "  isRdma: \"true\"\n", "field spec.isRdma: expected a boolean, got a string" },
                { "  needVhostNet: 1\n", "field spec.needVhostNet: expected a boolean" },
                { "  excludeTopology: [true]\n", "field spec.excludeTopology: expected a boolean" },
                { "  externallyManaged: {}\n", "field spec.externallyManaged: expected a boolean" },
                { "  deviceType: 5\n", "field spec.deviceType: expected a string, got an integer" },
                { "  linkType: true\n", "field spec.linkType: expected a string, got a boolean" },
                { "  eSwitchMode: [a]\n", "field spec.eSwitchMode: expected a string, got a list" },
                { "  vdpaType: 1\n", "field spec.vdpaType: expected a string" },
                { "  bridge: 3\n", "field spec.bridge: expected an object" },
                { "  numVFs: 3\n", "field spec: unknown field \"numVFs\"" },
                { "  mtu: 99999999999\n", "field spec.mtu: integer 99999999999 out of range" },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                char text[1024];
                struct policy_list list;
                snprintf(text, sizeof(text), "%s%s", MINIMAL_HEAD, cases[i].extra);
                parse_text(&list, text);
                assert_int_equal(list.n_items, 1);
                assert_non_null(list.items[0].error);
                if (!strstr(list.items[0].error, cases[i].expect) ||
                    !strstr(list.items[0].error, "test.yaml: policy p: "))
                        fail_msg("case %zu: \"%s\" lacks \"%s\"", i, list.items[0].error,
                                 cases[i].expect);
                policy_list_done(&list);
        }
}

static void test_wrong_types_nested(void **state)
{
        static const struct {
                const char *spec;
                const char *expect;
        } cases[] = {
                { "  numVfs: \"8\"\n", "field spec.numVfs: expected an integer, got a string" },
                { "  nodeSelector: {highnet-node: true}\n",
                  "field spec.nodeSelector: value of \"highnet-node\": expected a string, got a "
                  "boolean" },
                { "  nodeSelector: [a]\n", "field spec.nodeSelector: expected a map of strings" },
                { "  nicSelector: \"15b3\"\n", "field spec.nicSelector: expected an object" },
                { "  nicSelector: {vendor: 0x15b3}\n",
                  "field spec.nicSelector.vendor: expected a string, got an integer" },
                { "  nicSelector: {pfNames: ens1f0}\n",
                  "field spec.nicSelector.pfNames: expected a list of strings, got a string" },
                { "  nicSelector: {rootDevices: [1]}\n",
                  "field spec.nicSelector.rootDevices: item 0: expected a string" },
                { "  nicSelector: {pfname: [x]}\n",
                  "field spec.nicSelector: unknown field \"pfname\"" },
                { "  resourceName: [r]\n", "field spec.resourceName: expected a string" },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                char text[1024];
                struct policy_list list;
                snprintf(text, sizeof(text),
                         "apiVersion: sriovnetwork.openshift.io/v1\nkind: SriovNetworkNodePolicy\n"
                         "metadata: {name: nested}\nspec:\n%s",
                         cases[i].spec);
                parse_text(&list, text);
                assert_int_equal(list.n_items, 1);
                assert_non_null(list.items[0].error);
                if (!strstr(list.items[0].error, cases[i].expect) ||
                    !strstr(list.items[0].error, "policy nested"))
                        fail_msg("case %zu: \"%s\" lacks \"%s\"", i, list.items[0].error,
                                 cases[i].expect);
                policy_list_done(&list);
        }
}

static void test_multi_document_and_kinds(void **state)
{
        struct policy_list list;
        parse_text(&list, MINIMAL_HEAD "---\n"
                                       "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"
                                       "---\n"
                                       "apiVersion: sriovnetwork.openshift.io/v2\n"
                                       "kind: SriovNetworkNodePolicy\nmetadata: {name: v2}\n"
                                       "---\n" MINIMAL_HEAD "---\n");
        assert_int_equal(list.n_items, 2);
        assert_string_equal(list.items[0].origin, "test.yaml document 1");
        assert_string_equal(list.items[1].origin, "test.yaml document 4");
        assert_int_equal(list.n_notes, 2);
        assert_non_null(strstr(list.notes[0], "test.yaml document 2: kind ConfigMap skipped"));
        assert_non_null(strstr(list.notes[1], "apiVersion sriovnetwork.openshift.io/v2 skipped"));
        policy_list_done(&list);
}

static void test_list_object(void **state)
{
        char path[4096], *data = NULL;
        struct policy_list list = { 0 };
        size_t size;

        snprintf(path, sizeof(path), "%s/test/fixtures/policies/other/list-and-others.yaml",
                 getenv("SRCDIR") ? getenv("SRCDIR") : ".");
        assert_int_equal(read_full_file(path, 1 << 20, &data, &size), 0);
        assert_int_equal(policy_list_add_buffer(&list, "l.yaml", data, size), 0);
        free(data);
        assert_int_equal(list.n_items, 2);
        assert_string_equal(list.items[0].name, "list-policy-a");
        assert_string_equal(list.items[0].origin, "l.yaml document 1 item 1");
        assert_string_equal(list.items[1].name, "list-policy-b");
        assert_true(list.items[1].is_rdma); /* linkType ib */
        assert_int_equal(list.n_notes, 1);
        assert_non_null(strstr(list.notes[0], "kind ConfigMap skipped"));
        policy_list_done(&list);
}

static void test_json_file_and_api_object(void **state)
{
        const char *text = "{\"apiVersion\":\"sriovnetwork.openshift.io/v1\","
                           "\"kind\":\"SriovNetworkNodePolicy\",\"metadata\":{\"name\":\"j\"},"
                           "\"spec\":{\"resourceName\":\"r\",\"nodeSelector\":{},\"numVfs\":3,"
                           "\"nicSelector\":{\"pfNames\":[\"eth0#0-1\"]}}}";
        struct policy_list list = { 0 };
        struct policy p;
        json_t *obj;

        assert_int_equal(policy_list_add_buffer(&list, "p.json", text, strlen(text)), 0);
        assert_int_equal(list.n_items, 1);
        assert_null(list.items[0].error);
        assert_int_equal(list.items[0].num_vfs, 3);
        policy_list_done(&list);

        obj = json_loads(text, 0, NULL);
        assert_non_null(obj);
        assert_int_equal(policy_from_json(obj, NULL, &p), 0);
        assert_null(p.error);
        assert_string_equal(p.origin, "API");
        assert_int_equal(p.nic.pf_names[0].vf_end, 1);
        policy_done(&p);
        json_decref(obj);
}

static void test_pf_name_ranges(void **state)
{
        static const struct {
                const char *entry;
                bool has_range, range_error;
                int start, end;
        } cases[] = {
                { "ens1f0", false, false, 0, 0 },     { "ens1f0#0-7", true, false, 0, 7 },
                { "ens1f0#3-3", true, false, 3, 3 },  { "ens1f0#7-2", true, false, 7, 2 },
                { "ens1f0#1", true, true, 0, 0 },     { "ens1f0#1-2-3", true, true, 0, 0 },
                { "ens1f0#a-b", true, true, 0, 0 },   { "ens1f0#-1-2", true, true, 0, 0 },
                { "ens1f0#1-2#3", true, true, 0, 0 }, { "ens1f0#", true, true, 0, 0 },
                { "ens1f0# 1-2", true, true, 0, 0 },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                char text[1024];
                struct policy_list list;
                snprintf(text, sizeof(text),
                         "apiVersion: sriovnetwork.openshift.io/v1\nkind: SriovNetworkNodePolicy\n"
                         "metadata: {name: r}\nspec: {nicSelector: {pfNames: [\"%s\"]}}\n",
                         cases[i].entry);
                parse_text(&list, text);
                const struct pf_name_selector *s = &list.items[0].nic.pf_names[0];
                assert_string_equal(s->name, "ens1f0");
                assert_int_equal(s->has_range, cases[i].has_range);
                if (cases[i].range_error != (s->range_error != NULL))
                        fail_msg("case %s: range_error %s", cases[i].entry,
                                 s->range_error ? s->range_error : "(none)");
                if (cases[i].has_range && !cases[i].range_error) {
                        assert_int_equal(s->vf_start, cases[i].start);
                        assert_int_equal(s->vf_end, cases[i].end);
                }
                policy_list_done(&list);
        }
}

static void test_yaml_typing(void **state)
{
        const char *text = "a: 8\nb: \"8\"\nc: true\nd: 'true'\ne: ~\nf: 0x10\ng: 1.5\n"
                           "h: -3\ni: plain text\nj: |\n  block\nk: 0o17\nl: null\nm: 1e3\n"
                           "n: 12abc\n";
        json_t *docs, *d;
        char *error = NULL;

        assert_int_equal(yaml_to_json_documents(text, strlen(text), YAML_JSON_TYPED, &docs, &error), 0);
        assert_int_equal(json_array_size(docs), 1);
        d = json_array_get(docs, 0);
        assert_int_equal(json_integer_value(json_object_get(d, "a")), 8);
        assert_string_equal(json_string_value(json_object_get(d, "b")), "8");
        assert_true(json_is_true(json_object_get(d, "c")));
        assert_string_equal(json_string_value(json_object_get(d, "d")), "true");
        assert_true(json_is_null(json_object_get(d, "e")));
        assert_int_equal(json_integer_value(json_object_get(d, "f")), 16);
        assert_true(json_is_real(json_object_get(d, "g")));
        assert_int_equal(json_integer_value(json_object_get(d, "h")), -3);
        assert_string_equal(json_string_value(json_object_get(d, "i")), "plain text");
        assert_string_equal(json_string_value(json_object_get(d, "j")), "block\n");
        assert_int_equal(json_integer_value(json_object_get(d, "k")), 15);
        assert_true(json_is_null(json_object_get(d, "l")));
        assert_true(json_is_real(json_object_get(d, "m")));
        assert_string_equal(json_string_value(json_object_get(d, "n")), "12abc");
        json_decref(docs);
}

/* Each must give an error (or nothing), never a crash; sanitizers watch the memory side. */
static void test_hostile_input(void **state)
{
        static const struct {
                const char *text;
                const char *expect; /* substring of the single invalid entry's error, or NULL
                                     * when the input yields no policy at all */
        } cases[] = {
                { "", NULL },
                { "---\n---\n", NULL },
                { "[", "not valid YAML/JSON: line" },
                { "{\"a\": ", "not valid YAML/JSON" },
                { "key: [unclosed\n  x: 1\n", "not valid YAML/JSON: line" },
                { "a: &x [*x]\n", "not valid YAML/JSON" },
                { "42\n", "not an object" },
                { "- 1\n- 2\n", "not an object" },
                { "metadata: {name: x}\n", "field kind: missing" },
                { "kind: List\nitems: 3\n", "List without an items list" },
                { "kind: List\nitems: [3]\n", "item 1: not an object" },
                { "apiVersion: sriovnetwork.openshift.io/v1\nkind: SriovNetworkNodePolicy\n",
                  "field spec: missing" },
                { "apiVersion: sriovnetwork.openshift.io/v1\nkind: SriovNetworkNodePolicy\n"
                  "spec: 3\n",
                  "field spec: expected an object, got an integer" },
                { "apiVersion: sriovnetwork.openshift.io/v1\nkind: SriovNetworkNodePolicy\n"
                  "metadata: 3\nspec: {}\n",
                  "field metadata: expected an object" },
                { "apiVersion: sriovnetwork.openshift.io/v1\nkind: SriovNetworkNodePolicy\n"
                  "metadata: {name: [x]}\nspec: {}\n",
                  "field metadata.name: expected a string" },
                { "? [a]\n: b\n", "mapping key is not a scalar" },
                { "a: 1\na: 2\n", "duplicate mapping key" },
                { "\t- x\n", "not valid YAML/JSON" },
                { "a: \"\\0\"\n", "NUL" },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                struct policy_list list;
                parse_text(&list, cases[i].text);
                if (!cases[i].expect) {
                        assert_int_equal(list.n_items, 0);
                } else {
                        assert_int_equal(list.n_items, 1);
                        assert_non_null(list.items[0].error);
                        if (!strstr(list.items[0].error, cases[i].expect))
                                fail_msg("case %zu: \"%s\" lacks \"%s\"", i, list.items[0].error,
                                         cases[i].expect);
                }
                policy_list_done(&list);
        }
}

static void test_alias_bomb_and_depth(void **state)
{
        /* 9 levels of 10 aliases = 10^9 nodes if expanded naively. */
        char bomb[2048] = "a: &a [x,x,x,x,x,x,x,x,x,x]\n";
        struct policy_list list;
        char deep[4096] = "";

        for (int c = 'b'; c <= 'j'; c++) {
                char line[128];
                snprintf(line, sizeof(line), "%c: &%c [*%c,*%c,*%c,*%c,*%c,*%c,*%c,*%c,*%c,*%c]\n",
                         c, c, c - 1, c - 1, c - 1, c - 1, c - 1, c - 1, c - 1, c - 1, c - 1,
                         c - 1);
                strcat(bomb, line);
        }
        parse_text(&list, bomb);
        assert_int_equal(list.n_items, 1);
        assert_non_null(strstr(list.items[0].error, "too many nodes"));
        policy_list_done(&list);

        for (int i = 0; i < 200; i++)
                strcat(deep, "[");
        parse_text(&list, deep);
        assert_int_equal(list.n_items, 1);
        assert_non_null(list.items[0].error);
        policy_list_done(&list);

        char nested[4096] = "";
        for (int i = 0; i < 100; i++)
                strcat(nested, "[");
        for (int i = 0; i < 100; i++)
                strcat(nested, "]");
        parse_text(&list, nested);
        assert_int_equal(list.n_items, 1);
        assert_non_null(strstr(list.items[0].error, "nesting too deep"));
        policy_list_done(&list);
}

static void test_binary_file(void **state)
{
        static const char data[] = { 'a', ':', ' ', 0, 1, 2, '\n' };
        struct policy_list list = { 0 };

        assert_int_equal(policy_list_add_buffer(&list, "bin.yaml", data, sizeof(data)), 0);
        assert_int_equal(list.n_items, 1);
        assert_non_null(strstr(list.items[0].error, "bin.yaml: file contains NUL bytes"));
        policy_list_done(&list);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_seed_fixture),
                cmocka_unit_test(test_every_field),
                cmocka_unit_test(test_webhook_defaults),
                cmocka_unit_test(test_wrong_types),
                cmocka_unit_test(test_wrong_types_nested),
                cmocka_unit_test(test_multi_document_and_kinds),
                cmocka_unit_test(test_list_object),
                cmocka_unit_test(test_json_file_and_api_object),
                cmocka_unit_test(test_pf_name_ranges),
                cmocka_unit_test(test_yaml_typing),
                cmocka_unit_test(test_hostile_input),
                cmocka_unit_test(test_alias_bomb_and_depth),
                cmocka_unit_test(test_binary_file),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
