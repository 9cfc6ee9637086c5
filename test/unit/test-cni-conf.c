/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for lib/cni/conf (the sriov CNI plugin's configuration) and lib/cni/result.
 *
 * Validation cases follow upstream sriov-cni's pkg/config/config_test.go (LoadConf: vlan,
 * vlanQoS, vlanProto and link_state checks) and pkg/cnicommands (MAC precedence:
 * runtimeConfig.mac, then CNI_ARGS MAC=, then the config's mac). */
#include <errno.h>
#include <linux/if_ether.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cni/conf.h"
#include "cni/result.h"

#define BASE                                                                                       \
        "\"cniVersion\":\"1.0.0\",\"name\":\"net\",\"type\":\"sriov\",\"deviceID\":\"0000:01:10."  \
        "0\""

static int parse(const char *json, const char *args, struct cni_conf *c, struct cni_error *e)
{
        memset(e, 0, sizeof(*e));
        return cni_conf_parse(json, strlen(json), args, c, e);
}

/* the config is refused with code and a message containing want */
static void refused(const char *json, const char *args, int code, const char *want)
{
        struct cni_conf c;
        struct cni_error e;
        int r = parse(json, args, &c, &e);
        if (r >= 0) {
                cni_conf_done(&c);
                fail_msg("accepted: %s", json);
        }
        assert_int_equal(e.code, code);
        if (!strstr(e.msg, want))
                fail_msg("message \"%s\" lacks \"%s\"", e.msg, want);
}

static void test_minimal_and_defaults(void **state)
{
        struct cni_conf c;
        struct cni_error e;
        assert_int_equal(parse("{" BASE ",\"unknownField\":{\"x\":1},\"logLevel\":\"debug\","
                               "\"logFile\":\"/tmp/x\"}",
                               NULL, &c, &e),
                         0);
        assert_string_equal(c.cni_version, "1.0.0");
        assert_string_equal(c.device_id, "0000:01:10.0");
        assert_false(c.has_vlan);
        assert_int_equal(c.spoofchk, -1);
        assert_int_equal(c.trust, -1);
        assert_int_equal(c.link_state, -1);
        assert_false(c.has_min_tx);
        assert_false(c.has_max_tx);
        assert_false(c.has_mac);
        assert_string_equal(c.ipam_type, "");
        cni_conf_done(&c);
}

static void test_all_fields(void **state)
{
        struct cni_conf c;
        struct cni_error e;
        assert_int_equal(parse("{" BASE ",\"vlan\":100,\"vlanQoS\":3,\"vlanProto\":\"802.1AD\","
                               "\"spoofchk\":\"off\",\"trust\":\"on\",\"link_state\":\"enable\","
                               "\"min_tx_rate\":10,\"max_tx_rate\":200,"
                               "\"ipam\":{\"type\":\"host-local\"}}",
                               NULL, &c, &e),
                         0);
        assert_true(c.has_vlan);
        assert_int_equal(c.vlan, 100);
        assert_int_equal(c.qos, 3);
        assert_int_equal(c.vlan_proto, ETH_P_8021AD);
        assert_int_equal(c.spoofchk, 0);
        assert_int_equal(c.trust, 1);
        assert_int_equal(c.link_state, 1);
        assert_true(c.has_min_tx && c.has_max_tx);
        assert_int_equal(c.min_tx_rate, 10);
        assert_int_equal(c.max_tx_rate, 200);
        assert_string_equal(c.ipam_type, "host-local");
        cni_conf_done(&c);

        /* vlan alone: QoS 0, 802.1q (upstream fills both) */
        assert_int_equal(parse("{" BASE ",\"vlan\":0}", NULL, &c, &e), 0);
        assert_true(c.has_vlan);
        assert_int_equal(c.qos, 0);
        assert_int_equal(c.vlan_proto, ETH_P_8021Q);
        cni_conf_done(&c);
}

static void test_mac_precedence(void **state)
{
        struct cni_conf c;
        struct cni_error e;
        const char *all = "{" BASE ",\"mac\":\"02:00:00:00:00:0C\","
                          "\"runtimeConfig\":{\"mac\":\"02:00:00:00:00:0A\"}}";
        const char *conf_args = "{" BASE ",\"mac\":\"02:00:00:00:00:0C\"}";

        /* runtimeConfig wins over CNI_ARGS and config */
        assert_int_equal(parse(all, "IgnoreUnknown=1;MAC=02:00:00:00:00:0b", &c, &e), 0);
        assert_true(c.has_mac);
        assert_string_equal(c.mac_str, "02:00:00:00:00:0a");
        cni_conf_done(&c);
        /* CNI_ARGS wins over config */
        assert_int_equal(
            parse(conf_args, "IgnoreUnknown=1;K8S_POD_NAME=p;MAC=02:00:00:00:00:0B", &c, &e), 0);
        assert_string_equal(c.mac_str, "02:00:00:00:00:0b");
        cni_conf_done(&c);
        /* config alone, lower-cased */
        assert_int_equal(parse(conf_args, "K8S_POD_NAME=p;IgnoreUnknown=true", &c, &e), 0);
        assert_string_equal(c.mac_str, "02:00:00:00:00:0c");
        assert_int_equal(c.mac[5], 0x0c);
        cni_conf_done(&c);
        /* an empty runtimeConfig.mac does not hide CNI_ARGS */
        assert_int_equal(
            parse("{" BASE ",\"runtimeConfig\":{\"mac\":\"\"}}", "MAC=02:00:00:00:00:0b", &c, &e),
            0);
        assert_string_equal(c.mac_str, "02:00:00:00:00:0b");
        cni_conf_done(&c);

        refused("{" BASE ",\"mac\":\"02:00:00:00:00\"}", NULL, CNI_ERR_INVALID_CONFIG,
                "mac is \"02:00:00:00:00\"");
        refused("{" BASE "}", "MAC=zz:00:00:00:00:00", CNI_ERR_INVALID_ENV, "CNI_ARGS MAC");
        refused("{" BASE ",\"runtimeConfig\":{\"mac\":\"x\"}}", NULL, CNI_ERR_INVALID_CONFIG,
                "runtimeConfig.mac");
        refused("{" BASE "}", "MAC", CNI_ERR_INVALID_ENV, "CNI_ARGS: invalid pair");
}

/* CNI_ARGS by libcni's LoadArgs rule, the cases of its pkg/types args_test ("LoadArgs should
 * fail" for an unknown key without IgnoreUnknown, and for "IgnoreUnknown=0, Unk=nown"). */
static void test_cni_args_as_libcni(void **state)
{
        struct cni_conf c;
        struct cni_error e;
        const char *ok[] = {
                "IgnoreUnknown=True;Unk=nown",
                "Unk=nown;IgnoreUnknown=1",
                "IgnoreUnknown=1",
                "MAC=02:00:00:00:00:01",
                "IgnoreUnknown=1;K8S_POD_NAMESPACE=ns;K8S_POD_NAME=p;K8S_POD_UID=u",
                "IgnoreUnknown=1;MAC=",
        };
        for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
                if (parse("{" BASE "}", ok[i], &c, &e) != 0)
                        fail_msg("CNI_ARGS \"%s\" refused: %s", ok[i], e.msg);
                cni_conf_done(&c);
        }
        refused("{" BASE "}", "Unk=nown", CNI_ERR_INVALID_ENV, "unknown argument \"Unk=nown\"");
        refused("{" BASE "}", "K8S_POD_NAME=p;IgnoreUnknown=0", CNI_ERR_INVALID_ENV,
                "unknown argument \"K8S_POD_NAME=p\"");
        /* keys are case-sensitive, as Go's FieldByName */
        refused("{" BASE "}", "mac=02:00:00:00:00:01", CNI_ERR_INVALID_ENV, "unknown argument");
        refused("{" BASE "}", "IgnoreUnknown=0, Unk=nown", CNI_ERR_INVALID_ENV, "invalid pair");
        refused("{" BASE "}", "MAC=02:00:00:00:00:01=x", CNI_ERR_INVALID_ENV, "invalid pair");
        refused("{" BASE "}", "IgnoreUnknown=1;", CNI_ERR_INVALID_ENV, "invalid pair \"\"");
        refused("{" BASE "}", "IgnoreUnknown=yes", CNI_ERR_INVALID_ENV, "IgnoreUnknown is \"yes\"");
}

static void test_vlan_validation(void **state)
{
        refused("{" BASE ",\"vlan\":4095}", NULL, CNI_ERR_INVALID_CONFIG, "range 0-4094");
        refused("{" BASE ",\"vlan\":-1}", NULL, CNI_ERR_INVALID_CONFIG, "range 0-4094");
        refused("{" BASE ",\"vlan\":\"100\"}", NULL, CNI_ERR_INVALID_CONFIG, "integer");
        refused("{" BASE ",\"vlanQoS\":1}", NULL, CNI_ERR_INVALID_CONFIG, "needs \"vlan\"");
        refused("{" BASE ",\"vlanProto\":\"802.1q\"}", NULL, CNI_ERR_INVALID_CONFIG,
                "needs \"vlan\"");
        refused("{" BASE ",\"vlan\":1,\"vlanQoS\":8}", NULL, CNI_ERR_INVALID_CONFIG, "range 0-7");
        refused("{" BASE ",\"vlan\":0,\"vlanQoS\":2}", NULL, CNI_ERR_INVALID_CONFIG,
                "non-zero vlan");
        refused("{" BASE ",\"vlan\":0,\"vlanProto\":\"802.1ad\"}", NULL, CNI_ERR_INVALID_CONFIG,
                "802.1ad needs a non-zero vlan");
        refused("{" BASE ",\"vlan\":5,\"vlanProto\":\"802.1x\"}", NULL, CNI_ERR_INVALID_CONFIG,
                "must be \"802.1q\" or \"802.1ad\"");

        struct cni_conf c;
        struct cni_error e;
        assert_int_equal(
            parse("{" BASE ",\"vlan\":4094,\"vlanQoS\":7,\"vlanProto\":\"802.1Q\"}", NULL, &c, &e),
            0);
        assert_int_equal(c.vlan, 4094);
        assert_int_equal(c.vlan_proto, ETH_P_8021Q);
        cni_conf_done(&c);
}

static void test_other_validation(void **state)
{
        refused("not json", NULL, CNI_ERR_DECODE, "not JSON");
        refused("[1,2]", NULL, CNI_ERR_DECODE, "not a JSON object");
        refused("", NULL, CNI_ERR_DECODE, "not JSON");
        refused("{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"type\":\"sriov\"}", NULL,
                CNI_ERR_INVALID_CONFIG, "\"deviceID\" (the VF's PCI address) is required");
        refused("{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"deviceID\":\"../../etc\"}", NULL,
                CNI_ERR_INVALID_CONFIG, "not a PCI address");
        refused("{" BASE ",\"link_state\":\"up\"}", NULL, CNI_ERR_INVALID_CONFIG,
                "auto, enable or disable");
        refused("{" BASE ",\"spoofchk\":\"yes\"}", NULL, CNI_ERR_INVALID_CONFIG,
                "\"spoofchk\" is \"yes\"");
        refused("{" BASE ",\"trust\":true}", NULL, CNI_ERR_INVALID_CONFIG, "\"trust\"");
        refused("{" BASE ",\"min_tx_rate\":-5}", NULL, CNI_ERR_INVALID_CONFIG, "min_tx_rate");
        refused("{" BASE ",\"ipam\":\"host-local\"}", NULL, CNI_ERR_INVALID_CONFIG,
                "\"ipam\" must be an object");
        refused("{" BASE ",\"ipam\":{\"type\":\"../bin/sh\"}}", NULL, CNI_ERR_INVALID_CONFIG,
                "not a plugin name");
}

/* As upstream decodes its configuration (Go's encoding/json into sriov-cni's NetConf, the
 * version as libcni's pkg/version conf_test "assumes the config is version 0.1.0"). */
static void test_decoded_as_upstream(void **state)
{
        struct cni_conf c;
        struct cni_error e;
        /* no cniVersion: 0.1.0, and the result and errors are printed in it */
        assert_int_equal(parse("{\"name\":\"n\",\"type\":\"sriov\",\"deviceID\":\"0000:01:10.0\"}",
                               NULL, &c, &e),
                         0);
        assert_string_equal(c.cni_version, "0.1.0");
        cni_conf_done(&c);
        /* keys in any case set the field: "VLAN": 100 is vlan 100 upstream */
        assert_int_equal(
            parse("{\"CNIVERSION\":\"0.4.0\",\"Name\":\"n\",\"DeviceId\":"
                  "\"0000:01:10.0\",\"VLAN\":100,\"VlanQos\":2,\"SPOOFCHK\":\"off\","
                  "\"Max_Tx_Rate\":5,\"RuntimeConfig\":{\"MAC\":\"02:00:00:00:00:0A\"},"
                  "\"IPAM\":{\"Type\":\"host-local\"}}",
                  NULL, &c, &e),
            0);
        assert_string_equal(c.cni_version, "0.4.0");
        assert_string_equal(c.device_id, "0000:01:10.0");
        assert_true(c.has_vlan);
        assert_int_equal(c.vlan, 100);
        assert_int_equal(c.qos, 2);
        assert_int_equal(c.spoofchk, 0);
        assert_true(c.has_max_tx);
        assert_int_equal(c.max_tx_rate, 5);
        assert_true(c.has_mac);
        assert_string_equal(c.mac_str, "02:00:00:00:00:0a");
        assert_string_equal(c.ipam_type, "host-local");
        cni_conf_done(&c);
        /* a duplicate key takes the last value, whatever the case of each; an escaped key and
         * the long s (U+017F) that Unicode folds to 's' match too, as Go's EqualFold */
        assert_int_equal(parse("{" BASE ",\"VLAN\":1,\"vlan\":2,\"VLAN\":3,"
                               "\"\\u0074rust\":\"on\",\"\xc5\xbfpoofchk\":\"on\"}",
                               NULL, &c, &e),
                         0);
        assert_int_equal(c.vlan, 3);
        assert_int_equal(c.trust, 1);
        assert_int_equal(c.spoofchk, 1);
        cni_conf_done(&c);
        /* a later null unsets the field, as it does a Go pointer */
        assert_int_equal(parse("{" BASE ",\"vlan\":7,\"Vlan\":null}", NULL, &c, &e), 0);
        assert_false(c.has_vlan);
        cni_conf_done(&c);
        /* the last value is the one checked */
        refused("{" BASE ",\"vlan\":7,\"vlan\":5000}", NULL, CNI_ERR_INVALID_CONFIG,
                "\"vlan\" is 5000");
        /* a key of another length, or a near miss, is another field */
        assert_int_equal(parse("{" BASE ",\"vlan_\":7,\"vla\":8}", NULL, &c, &e), 0);
        assert_false(c.has_vlan);
        cni_conf_done(&c);
        /* the network's name is required (CNI spec: "name" is a required field) */
        refused("{\"cniVersion\":\"1.0.0\",\"type\":\"sriov\",\"deviceID\":\"0000:01:10.0\"}", NULL,
                CNI_ERR_INVALID_CONFIG, "\"name\"");
        refused("{\"cniVersion\":\"1.0.0\",\"name\":\"\",\"deviceID\":\"0000:01:10.0\"}", NULL,
                CNI_ERR_INVALID_CONFIG, "\"name\" (the network's name) is required");
        /* and made of libcni's characters (skel's validateConfig, ValidateNetworkName) */
        refused("{\"name\":\"../x\",\"deviceID\":\"0000:01:10.0\"}", NULL, CNI_ERR_INVALID_CONFIG,
                "invalid characters found in network name");
        refused("{\"name\":\"a/b\",\"deviceID\":\"0000:01:10.0\"}", NULL, CNI_ERR_INVALID_CONFIG,
                "\"a/b\"");
        refused("{\"name\":\"-x\",\"deviceID\":\"0000:01:10.0\"}", NULL, CNI_ERR_INVALID_CONFIG,
                "invalid characters");
        refused("{\"name\":\"net 1\",\"deviceID\":\"0000:01:10.0\"}", NULL, CNI_ERR_INVALID_CONFIG,
                "invalid characters");
        assert_int_equal(
            parse("{\"name\":\"Sriov_net-1.a\",\"deviceID\":\"0000:01:10.0\"}", NULL, &c, &e), 0);
        cni_conf_done(&c);
}

static void test_versions(void **state)
{
        assert_true(cni_version_supported("0.4.0"));
        assert_true(cni_version_supported("1.0.0"));
        assert_true(cni_version_supported("1.1.0"));
        assert_false(cni_version_supported("2.0.0"));
        assert_false(cni_version_supported(""));
        assert_true(cni_version_compare("0.10.0", "0.4.0") > 0);
        assert_true(cni_version_compare("0.3.1", "0.4.0") < 0);
        assert_int_equal(cni_version_compare("1.0.0", "1.0.0"), 0);
}

static json_t *load(char *text)
{
        assert_non_null(text);
        json_error_t err;
        json_t *o = json_loads(text, 0, &err);
        free(text);
        assert_non_null(o);
        return o;
}

static void test_results(void **state)
{
        const char *ipam_out = "{\"cniVersion\":\"1.0.0\",\"ips\":[{\"address\":\"10.56.0.2/24\","
                               "\"gateway\":\"10.56.0.1\"},{\"address\":\"fd00::2/64\"}],"
                               "\"routes\":[{\"dst\":\"0.0.0.0/0\"}],\"dns\":{}}";
        struct cni_ipam_result r;
        struct cni_error e = { 0 };
        assert_int_equal(cni_ipam_result_parse(ipam_out, strlen(ipam_out), &r, &e), 0);
        assert_int_equal(r.n_ips, 2);
        assert_int_equal(r.ips[0].prefix, 24);
        assert_true(r.ips[0].has_gw);
        assert_false(r.ips[1].has_gw);
        assert_int_equal(r.n_routes, 1);
        assert_int_equal(r.routes[0].dst_len, 0);

        const struct cni_iface ifc = { .name = "net1",
                                       .mac = "02:00:00:00:00:01",
                                       .mtu = 1500,
                                       .sandbox = "/var/run/netns/a" };
        json_t *o = load(cni_result_format("1.0.0", &ifc, &r));
        json_t *ip0 = json_array_get(json_object_get(o, "ips"), 0);
        assert_string_equal(json_string_value(json_object_get(ip0, "address")), "10.56.0.2/24");
        assert_int_equal(json_integer_value(json_object_get(ip0, "interface")), 0);
        assert_null(json_object_get(ip0, "version"));
        json_t *if0 = json_array_get(json_object_get(o, "interfaces"), 0);
        assert_string_equal(json_string_value(json_object_get(if0, "sandbox")), "/var/run/netns/a");
        assert_int_equal(json_integer_value(json_object_get(if0, "mtu")), 1500);
        json_decref(o);

        o = load(cni_result_format("0.4.0", &ifc, &r));
        ip0 = json_array_get(json_object_get(o, "ips"), 0);
        assert_string_equal(json_string_value(json_object_get(ip0, "version")), "4");
        json_decref(o);

        o = load(cni_result_format("0.2.0", &ifc, &r));
        assert_string_equal(json_string_value(json_object_get(json_object_get(o, "ip4"), "ip")),
                            "10.56.0.2/24");
        assert_string_equal(json_string_value(json_object_get(json_object_get(o, "ip6"), "ip")),
                            "fd00::2/64");
        assert_null(json_object_get(o, "interfaces"));
        json_decref(o);
        cni_ipam_result_done(&r);

        /* an old-style IPAM answer */
        const char *legacy = "{\"ip4\":{\"ip\":\"10.1.0.5/16\",\"gateway\":\"10.1.0.1\"}}";
        assert_int_equal(cni_ipam_result_parse(legacy, strlen(legacy), &r, &e), 0);
        assert_int_equal(r.n_ips, 1);
        cni_ipam_result_done(&r);

        const char *empty = "{\"cniVersion\":\"1.0.0\",\"ips\":[]}";
        assert_int_equal(cni_ipam_result_parse(empty, strlen(empty), &r, &e), -ENODATA);
        assert_non_null(strstr(e.msg, "missing IP config"));
        const char *bad = "{\"ips\":[{\"address\":\"10.0.0.1\"}]}";
        assert_true(cni_ipam_result_parse(bad, strlen(bad), &r, &e) < 0);
        assert_non_null(strstr(e.msg, "not an address/prefix"));

        const struct cni_error err = { .code = 7, .msg = "field \"vlan\" is 5000" };
        o = load(cni_error_format("1.0.0", &err));
        assert_int_equal(json_integer_value(json_object_get(o, "code")), 7);
        assert_string_equal(json_string_value(json_object_get(o, "msg")), "field \"vlan\" is 5000");
        json_decref(o);
        o = load(cni_version_format(NULL));
        assert_int_equal(json_array_size(json_object_get(o, "supportedVersions")), 7);
        json_decref(o);
}

/* As libcni's result types print them (pkg/types/100 types_test "correctly encodes a 0.4.0
 * Result": the 0.4.0 interface has no mtu) and as plugins' ipam.ConfigureIface reads routes
 * (its test "configures a link with addresses and routes" gives a table and a scope). */
static void test_results_as_libcni(void **state)
{
        const char *ipam_out =
            "{\"cniVersion\":\"1.0.0\",\"ips\":[{\"address\":\"1.2.3.30/24\","
            "\"gateway\":\"1.2.3.1\"}],\"routes\":[{\"dst\":\"15.5.6.0/24\",\"gw\":\"15.5.6.8\","
            "\"table\":5000,\"priority\":20},{\"dst\":\"1.2.3.4/32\",\"scope\":200},"
            "{\"dst\":\"0.0.0.0/0\",\"mtu\":1400,\"advmss\":1360,\"table\":0}]}";
        struct cni_ipam_result r;
        struct cni_error e = { 0 };
        assert_int_equal(cni_ipam_result_parse(ipam_out, strlen(ipam_out), &r, &e), 0);
        const struct cni_iface ifc = { .name = "net1",
                                       .mac = "00:11:22:33:44:55",
                                       .mtu = 9000,
                                       .sandbox = "/var/run/netns/a" };
        static const char *const versions[] = { "1.1.0", "1.0.0", "0.4.0", "0.3.1", "0.2.0" };
        for (size_t i = 0; i < sizeof(versions) / sizeof(versions[0]); i++) {
                const char *v = versions[i];
                json_t *o = load(cni_result_format(v, &ifc, &r));
                json_t *routes = cni_version_compare(v, "0.3.0") >= 0
                                     ? json_object_get(o, "routes")
                                     : json_object_get(json_object_get(o, "ip4"), "routes");
                json_t *r0 = json_array_get(routes, 0), *r1 = json_array_get(routes, 1),
                       *r2 = json_array_get(routes, 2);
                if (!r0 || !r1 || !r2)
                        fail_msg("%s: routes missing", v);
                assert_int_equal(json_integer_value(json_object_get(r0, "table")), 5000);
                assert_int_equal(json_integer_value(json_object_get(r0, "priority")), 20);
                assert_null(json_object_get(r0, "scope"));
                assert_int_equal(json_integer_value(json_object_get(r1, "scope")), 200);
                assert_null(json_object_get(r1, "table"));
                assert_null(json_object_get(r1, "priority"));
                assert_int_equal(json_integer_value(json_object_get(r2, "mtu")), 1400);
                assert_int_equal(json_integer_value(json_object_get(r2, "advmss")), 1360);
                /* a table given as 0 is still given (a Go *int) */
                assert_non_null(json_object_get(r2, "table"));
                json_t *if0 = json_array_get(json_object_get(o, "interfaces"), 0);
                if (cni_version_compare(v, "1.0.0") >= 0)
                        assert_int_equal(json_integer_value(json_object_get(if0, "mtu")), 9000);
                else if (if0 && json_object_get(if0, "mtu"))
                        fail_msg("a %s result has an interface mtu", v);
                json_decref(o);
        }
        cni_ipam_result_done(&r);

        const char *bad = "{\"ips\":[{\"address\":\"10.0.0.1/8\"}],\"routes\":[{\"dst\":"
                          "\"0.0.0.0/0\",\"scope\":256}]}";
        assert_true(cni_ipam_result_parse(bad, strlen(bad), &r, &e) < 0);
        assert_non_null(strstr(e.msg, "route scope"));

        /* an IPoIB link-layer address is 20 bytes; upstream prints all of them */
        uint8_t ib[20];
        for (size_t i = 0; i < sizeof(ib); i++)
                ib[i] = (uint8_t)(0xa0 + i);
        char text[CNI_HWADDR_STR_MAX];
        cni_format_hwaddr(ib, sizeof(ib), text);
        assert_string_equal(text, "a0:a1:a2:a3:a4:a5:a6:a7:a8:a9:aa:ab:ac:ad:ae:af:b0:b1:b2:b3");
        cni_format_hwaddr(ib, 6, text);
        assert_string_equal(text, "a0:a1:a2:a3:a4:a5");
        cni_format_hwaddr(ib, 0, text);
        assert_string_equal(text, "");
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_minimal_and_defaults),
                cmocka_unit_test(test_all_fields),
                cmocka_unit_test(test_mac_precedence),
                cmocka_unit_test(test_cni_args_as_libcni),
                cmocka_unit_test(test_vlan_validation),
                cmocka_unit_test(test_other_validation),
                cmocka_unit_test(test_decoded_as_upstream),
                cmocka_unit_test(test_versions),
                cmocka_unit_test(test_results),
                cmocka_unit_test(test_results_as_libcni),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
