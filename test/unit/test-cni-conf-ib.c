/* SPDX-License-Identifier: Apache-2.0 */
/* CNI type ib-sriov's configuration (lib/cni/conf-ib), with cases derived from upstream
 * k8snetworkplumbingwg/ib-sriov-cni: the GUID's sources and their order (cmd/ib-sriov-cni
 * getGUIDFromConf), and the GUIDs its ApplyVFConfig refuses (pkg/sriov/sriov_test.go "with
 * invalid GUID - wrong characters", "- wrong length", "- all zeros guid"); rdmaIsolation,
 * ibKubernetesEnabled and vfioPciMode as its NetConf (pkg/types/types.go) reads them. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "cni/conf-ib.h"

static int parse(const char *json, const char *args, struct cni_ib_conf *c, struct cni_error *e)
{
        *e = (struct cni_error){ .code = 0 };
        return cni_ib_conf_parse(json, strlen(json), args, c, e);
}

static void test_guid_sources_in_upstreams_order(void **state)
{
        (void)state;
        struct cni_ib_conf c;
        struct cni_error e;
        /* runtimeConfig first */
        assert_int_equal(parse("{\"runtimeConfig\":{\"infinibandGUID\":\"02:00:00:00:00:00:00:"
                               "0A\"},\"args\":{\"cni\":{\"guid\":\"02:00:00:00:00:00:00:0b\"}}}",
                               "GUID=02:00:00:00:00:00:00:0c", &c, &e),
                         0);
        assert_true(c.has_guid);
        assert_true(c.guid == 0x020000000000000aULL);
        assert_string_equal(c.guid_from, "runtimeConfig.infinibandGUID");
        /* then args.cni.guid */
        assert_int_equal(parse("{\"args\":{\"cni\":{\"guid\":\"02:00:00:00:00:00:00:0b\"}}}",
                               "GUID=02:00:00:00:00:00:00:0c", &c, &e),
                         0);
        assert_true(c.guid == 0x020000000000000bULL);
        /* then CNI_ARGS GUID= */
        assert_int_equal(parse("{}", "IgnoreUnknown=1;GUID=02:00:00:00:00:00:00:0c", &c, &e), 0);
        assert_true(c.guid == 0x020000000000000cULL);
        assert_string_equal(c.guid_from, "CNI_ARGS GUID");
        /* none: the VF's own GUID is checked later */
        assert_int_equal(parse("{\"runtimeConfig\":{}}", NULL, &c, &e), 0);
        assert_false(c.has_guid);
}

static void test_guids_upstream_refuses(void **state)
{
        (void)state;
        struct cni_ib_conf c;
        struct cni_error e;
        /* wrong characters */
        assert_int_equal(parse("{\"runtimeConfig\":{\"infinibandGUID\":\"02:00:00:00:00:00:00:"
                               "zz\"}}",
                               NULL, &c, &e),
                         -EINVAL);
        assert_int_equal(e.code, 7);
        assert_non_null(strstr(e.msg, "runtimeConfig.infinibandGUID"));
        /* wrong length */
        assert_int_equal(parse("{\"runtimeConfig\":{\"infinibandGUID\":\"02:00:00:00:00:00:00\"}}",
                               NULL, &c, &e),
                         -EINVAL);
        assert_non_null(strstr(e.msg, "not a GUID"));
        /* all zeros */
        assert_int_equal(parse("{\"runtimeConfig\":{\"infinibandGUID\":\"00:00:00:00:00:00:00:"
                               "00\"}}",
                               NULL, &c, &e),
                         -EINVAL);
        assert_non_null(strstr(e.msg, "all-zero"));
        /* from CNI_ARGS: an environment error (code 4) */
        assert_int_equal(parse("{}", "GUID=nope", &c, &e), -EINVAL);
        assert_int_equal(e.code, 4);
        assert_non_null(strstr(e.msg, "CNI_ARGS GUID"));
        /* a GUID that is not a string */
        assert_int_equal(parse("{\"runtimeConfig\":{\"infinibandGUID\":7}}", NULL, &c, &e),
                         -EINVAL);
        assert_non_null(strstr(e.msg, "runtimeConfig.infinibandGUID"));
}

static void test_flags(void **state)
{
        (void)state;
        struct cni_ib_conf c;
        struct cni_error e;
        assert_int_equal(parse("{\"rdmaIsolation\":true,\"ibKubernetesEnabled\":true,\"args\":{"
                               "\"cni\":{\"mellanox.infiniband.app\":\"configured\"}},"
                               "\"pkey\":\"0x7fff\"}",
                               NULL, &c, &e),
                         0);
        assert_true(c.rdma_isolation);
        assert_true(c.ib_kubernetes_enabled);
        assert_true(c.ib_configured);
        assert_false(c.vfio_pci_mode);
        assert_int_equal(parse("{\"rdmaIsolation\":\"yes\"}", NULL, &c, &e), -EINVAL);
        assert_int_equal(e.code, 7);
        assert_non_null(strstr(e.msg, "\"rdmaIsolation\""));
        assert_int_equal(parse("[1]", NULL, &c, &e), -EBADMSG);
        assert_int_equal(e.code, 6);
}

static void test_guid_text_round_trip(void **state)
{
        (void)state;
        uint64_t g;
        char text[CNI_GUID_STR_MAX];
        assert_int_equal(cni_guid_parse("0C:42:a1:03:00:B8:c0:de", &g), 0);
        assert_true(g == 0x0c42a10300b8c0deULL);
        cni_guid_format(g, text);
        assert_string_equal(text, "0c:42:a1:03:00:b8:c0:de");
        assert_int_equal(cni_guid_parse("0c-42-a1-03-00-b8-c0-de", &g), -EINVAL);
        assert_int_equal(cni_guid_parse("", &g), -EINVAL);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_guid_sources_in_upstreams_order),
                cmocka_unit_test(test_guids_upstream_refuses),
                cmocka_unit_test(test_flags),
                cmocka_unit_test(test_guid_text_round_trip),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
