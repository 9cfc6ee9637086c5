/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for lib/nad/render: SriovNetwork → NetworkAttachmentDefinition, byte for byte as
 * upstream's operator renders it. Expected configs are upstream's own: the golden files
 * api/v1/testdata/TestRendering/{simple,chained}.golden after formatJSON, and the cases of
 * controllers/sriovnetwork_controller_test.go ("should be possible to create/delete
 * net-att-def": test-0 … test-5) and sriovibnetwork_controller_test.go. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "nad/render.h"

#define IPAM                                                                                       \
        "{\"type\":\"host-local\",\"subnet\":\"10.56.217.0/24\",\"rangeStart\":\"10.56.217.171\"," \
        "\"rangeEnd\":\"10.56.217.181\",\"routes\":[{\"dst\":\"0.0.0.0/0\"}],\"gateway\":"         \
        "\"10.56.217.1\"}"

/* Renders a SriovNetwork "name" in "sriov-network-operator" with the given spec. */
static json_t *network(const char *name, const char *spec_json)
{
        json_t *spec = json_loads(spec_json, 0, NULL);
        assert_non_null(spec);
        return json_pack("{s:s, s:s, s:{s:s, s:s, s:s}, s:o}", "apiVersion",
                         "sriovnetwork.openshift.io/v1", "kind", "SriovNetwork", "metadata", "name",
                         name, "namespace", "sriov-network-operator", "uid", "u-1", "spec", spec);
}

static json_t *render_ok(enum nad_network_kind kind, const char *name, const char *spec)
{
        json_t *n = network(name, spec), *nad = NULL;
        char *error = NULL;
        int k = nad_render(kind, n, "openshift.io", &nad, &error);
        if (k < 0)
                fail_msg("render %s: %d %s", spec, k, error ? error : "");
        json_decref(n);
        return nad;
}

static const char *config_of(json_t *nad)
{
        return json_string_value(json_object_get(json_object_get(nad, "spec"), "config"));
}

/* What Go's formatJSON makes of the config upstream's test writes by hand. */
static char *indented(const char *compact)
{
        char *out = NULL;
        assert_int_equal(nad_json_indent(compact, &out), 0);
        return out;
}

static void expect_config(const char *name, const char *spec, const char *want_compact)
{
        json_t *nad = render_ok(NAD_SRIOV_NETWORK, name, spec);
        char *want = indented(want_compact);
        assert_string_equal(config_of(nad), want);
        free(want);
        json_decref(nad);
}

static void test_indent_like_go(void **state)
{
        char *out = NULL;
        assert_int_equal(
            nad_json_indent(" { \"a\" :1, \"b\":{} ,\"c\":[ ], \"d\":[1,{\"e\":\" x \"}]}", &out),
            0);
        assert_string_equal(out, "{\n    \"a\": 1,\n    \"b\": {},\n    \"c\": [],\n    \"d\": [\n"
                                 "        1,\n        {\n            \"e\": \" x \"\n        }\n"
                                 "    ]\n}");
        free(out);
        assert_int_equal(nad_json_indent("{\"a\":", &out), -EINVAL);
}

/* simple.golden: the smallest SriovNetwork. */
static void test_simple_golden(void **state)
{
        json_t *nad = render_ok(NAD_SRIOV_NETWORK, "test", "{\"resourceName\":\"testresource\"}");
        assert_string_equal(config_of(nad), "{\n    \"cniVersion\": \"1.0.0\",\n    \"name\": "
                                            "\"test\",\n    \"type\": \"sriov\",\n    \"vlan\": "
                                            "0,\n    \"vlanQoS\": 0,\n    \"ipam\": {}\n}");
        json_t *meta = json_object_get(nad, "metadata");
        json_t *ann = json_object_get(meta, "annotations");
        assert_string_equal(json_string_value(json_object_get(ann, NAD_ANNOTATION_RESOURCE)),
                            "openshift.io/testresource");
        assert_string_equal(json_string_value(json_object_get(ann, NAD_ANNOTATION_OWNER)),
                            "SriovNetwork.sriovnetwork.openshift.io/sriov-network-operator/test");
        assert_int_equal(json_object_size(ann), 2);
        /* Same namespace: an ownerReference (apiVersion, kind, name, uid only). */
        json_t *ref = json_array_get(json_object_get(meta, "ownerReferences"), 0);
        assert_string_equal(json_string_value(json_object_get(ref, "uid")), "u-1");
        assert_string_equal(json_string_value(json_object_get(ref, "kind")), "SriovNetwork");
        assert_int_equal(json_object_size(ref), 4);
        json_decref(nad);
}

/* chained.golden: metaPlugins turn the config into a plugins list. */
static void test_chained_golden(void **state)
{
        expect_config("test",
                      "{\"resourceName\":\"testresource\",\"metaPlugins\":\"{ \\\"type\\\": "
                      "\\\"vrf\\\", \\\"vrfname\\\": \\\"blue\\\" }\"}",
                      "{ \"cniVersion\":\"1.0.0\", \"name\":\"test\",\"plugins\": [ "
                      "{\"type\":\"sriov\",\"vlan\":0,\"vlanQoS\":0,\"ipam\":{} },\n{ \"type\": "
                      "\"vrf\", \"vrfname\": \"blue\" }\n] }");
}

/* sriovnetwork_controller_test.go, generateExpectedNetConfig for test-0 … test-5. */
static void test_controller_cases(void **state)
{
        expect_config("test-0",
                      "{\"resourceName\":\"resource_1\",\"ipam\":"
                      "\""
                      "{\\\"type\\\":\\\"host-local\\\"}"
                      "\",\"vlan\":100,\"vlanQoS\":5,\"vlanProto\":\"802.1ad\"}",
                      "{ \"cniVersion\":\"1.0.0\", \"name\":\"test-0\",\"type\":\"sriov\","
                      "\"vlan\":100,\"vlanQoS\":5,\"vlanProto\": \"802.1ad\","
                      "\"ipam\":{\"type\":\"host-local\"} }");
        expect_config("test-2", "{\"resourceName\":\"resource_1\",\"spoofChk\":\"on\"}",
                      "{ \"cniVersion\":\"1.0.0\", \"name\":\"test-2\",\"type\":\"sriov\","
                      "\"vlan\":0,\"spoofchk\":\"on\",\"vlanQoS\":0,\"ipam\":{} }");
        expect_config("test-3", "{\"resourceName\":\"resource_1\",\"trust\":\"on\"}",
                      "{ \"cniVersion\":\"1.0.0\", \"name\":\"test-3\",\"type\":\"sriov\","
                      "\"vlan\":0,\"trust\":\"on\",\"vlanQoS\":0,\"ipam\":{} }");
        expect_config("test-5",
                      "{\"resourceName\":\"resource_1\",\"logLevel\":\"debug\",\"logFile\":\"/tmp/"
                      "tmpfile\"}",
                      "{ \"cniVersion\":\"1.0.0\", \"name\":\"test-5\",\"type\":\"sriov\","
                      "\"vlan\":0,\"vlanQoS\":0,\"logLevel\":\"debug\",\"logFile\":\"/tmp/"
                      "tmpfile\",\"ipam\":{} }");
        /* The controller test's "with link state" and "capabilities" entries. */
        expect_config("t",
                      "{\"resourceName\":\"r\",\"linkState\":\"enable\",\"capabilities\":"
                      "\"{\\\"mac\\\": true, \\\"ips\\\": true}\",\"minTxRate\":10,"
                      "\"maxTxRate\":100}",
                      "{\"cniVersion\":\"1.0.0\",\"name\":\"t\",\"type\":\"sriov\",\"vlan\":0,"
                      "\"vlanQoS\":0,\"min_tx_rate\":10,\"max_tx_rate\":100,\"capabilities\":"
                      "{\"mac\": true, \"ips\": true},\"link_state\":\"enable\",\"ipam\":{}}");
}

/* ipam: every whitespace character goes, also inside strings (strings.Fields). */
static void test_ipam_whitespace(void **state)
{
        json_t *nad = render_ok(NAD_SRIOV_NETWORK, "highnet-rdma-network",
                                "{\"resourceName\":\"sriov_highnet\",\"networkNamespace\":"
                                "\"default\",\"logLevel\":\"info\",\"ipam\":\"{\\n  \\\"type\\\": "
                                "\\\"host-local\\\",\\n  \\\"subnet\\\": "
                                "\\\"192.168.100.0/24\\\"\\n}\\n\"}");
        char *want = indented("{\"cniVersion\":\"1.0.0\",\"name\":\"highnet-rdma-network\","
                              "\"type\":\"sriov\",\"vlan\":0,\"vlanQoS\":0,\"logLevel\":\"info\","
                              "\"ipam\":{\"type\":\"host-local\",\"subnet\":\"192.168.100.0/"
                              "24\"}}");
        assert_string_equal(config_of(nad), want);
        free(want);
        /* Cross-namespace (the seed: operator namespace → default): no ownerReferences. */
        json_t *meta = json_object_get(nad, "metadata");
        assert_string_equal(json_string_value(json_object_get(meta, "namespace")), "default");
        assert_null(json_object_get(meta, "ownerReferences"));
        json_decref(nad);
        (void)IPAM;
}

/* Equal input, equal bytes (idle writes are zero because of this). */
static void test_byte_stable(void **state)
{
        const char *spec = "{\"resourceName\":\"r\",\"vlan\":7,\"ipam\":\""
                           "{\\\"type\\\":\\\"dhcp\\\"}"
                           "\"}";
        json_t *a = render_ok(NAD_SRIOV_NETWORK, "x", spec),
               *b = render_ok(NAD_SRIOV_NETWORK, "x", spec);
        assert_string_equal(config_of(a), config_of(b));
        json_decref(a);
        json_decref(b);
}

/* sriovibnetwork_controller_test.go: type ib-sriov, no VLAN fields. */
static void test_ib(void **state)
{
        json_t *nad = render_ok(NAD_SRIOV_IB_NETWORK, "ib-0",
                                "{\"resourceName\":\"r\",\"linkState\":\"enable\",\"vlan\":5}");
        char *want = indented("{ \"cniVersion\":\"1.0.0\", \"name\":\"ib-0\",\"type\":\"ib-sriov\","
                              "\"link_state\":\"enable\",\"ipam\":{} }");
        assert_string_equal(config_of(nad), want);
        free(want);
        assert_string_equal(json_string_value(json_object_get(
                                json_object_get(json_object_get(nad, "metadata"), "annotations"),
                                NAD_ANNOTATION_OWNER)),
                            "SriovIBNetwork.sriovnetwork.openshift.io/sriov-network-operator/ib-0");
        json_decref(nad);
}

static void expect_error(const char *spec, const char *field)
{
        json_t *n = network("bad", spec), *nad = NULL;
        char *error = NULL;
        assert_int_equal(nad_render(NAD_SRIOV_NETWORK, n, "openshift.io", &nad, &error), -EINVAL);
        assert_null(nad);
        assert_non_null(error);
        if (!strstr(error, field))
                fail_msg("error \"%s\" does not name %s", error, field);
        free(error);
        json_decref(n);
}

static void test_invalid(void **state)
{
        expect_error("{\"resourceName\":\"r\",\"ipam\":\"{\\\"type\\\": \\\"host-local\\\", "
                     "\\\"subnet\\\": \"}",
                     "spec.ipam");
        expect_error("{\"resourceName\":\"r\",\"ipam\":\"[1]\"}", "spec.ipam");
        expect_error("{\"resourceName\":\"r\",\"capabilities\":\"mac\"}", "spec.capabilities");
        expect_error("{\"resourceName\":\"r\",\"vlanQoS\":3}", "spec.vlanQoS");
        expect_error("{\"resourceName\":\"r\",\"linkState\":\"up\"}", "spec.linkState");
        expect_error("{\"resourceName\":\"r\",\"metaPlugins\":\"{\\\"type\\\":\"}",
                     "spec.metaPlugins");
        expect_error("{\"resourceName\":\"r\",\"vlan\":5000}", "spec.vlan");
        expect_error("{\"resourceName\":\"r\",\"vlan\":\"5\"}", "spec.vlan");
        expect_error("{\"resourceName\":\"r\",\"vlanProto\":\"qinq\"}", "spec.vlanProto");
        expect_error("{\"ipam\":\"{}\"}", "spec.resourceName");
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_indent_like_go),
                cmocka_unit_test(test_simple_golden),
                cmocka_unit_test(test_chained_golden),
                cmocka_unit_test(test_controller_cases),
                cmocka_unit_test(test_ipam_whitespace),
                cmocka_unit_test(test_byte_stable),
                cmocka_unit_test(test_ib),
                cmocka_unit_test(test_invalid),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
