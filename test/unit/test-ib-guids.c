/* SPDX-License-Identifier: Apache-2.0 */
/* lib/plan/ib-guids: the static IB GUID pool file in upstream's format and the GUIDs VFs get.
 * Cases in our own words after sriov-network-operator's pkg/host/internal/infiniband tests
 * (ib_guid_config_test.go "getIbGUIDConfig", "getPfPciAddressFromRawConfig";
 * ib_guid_pool_test.go "GetVFGUID"; guid_test.go "ParseGUID"). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "plan/ib-guids.h"

static struct ib_guid_pool parse_ok(const char *text)
{
        struct ib_guid_pool pool;
        char error[256] = "";
        int r = ib_guid_pool_parse(text, strlen(text), &pool, error, sizeof(error));
        if (r < 0)
                fail_msg("%s", error);
        return pool;
}

static void expect_error(const char *text, const char *needle)
{
        struct ib_guid_pool pool;
        char error[256] = "";
        assert_int_equal(ib_guid_pool_parse(text, strlen(text), &pool, error, sizeof(error)),
                         -EINVAL);
        if (!strstr(error, needle))
                fail_msg("error '%s' does not say '%s'", error, needle);
        /* refused as a whole: nothing of the file to use or to free */
        assert_int_equal(pool.n_entries, 0);
        assert_null(pool.entries);
}

/* A PF with one RDMA device (rdma: the caller's, it outlives the PF) */
static struct pf_info ib_pf(const char *pci, const char *node_guid, struct rdma_device *rdma)
{
        struct pf_info pf = { 0 };
        snprintf(pf.pci_address, sizeof(pf.pci_address), "%s", pci);
        *rdma = (struct rdma_device){ 0 };
        snprintf(rdma->node_guid, sizeof(rdma->node_guid), "%s", node_guid);
        pf.rdma = rdma;
        pf.n_rdma = 1;
        return pf;
}

/* guid_test.go ParseGUID: 8 octets only; sysfs' grouped form is read too */
static void test_guid_text(void **state)
{
        uint64_t g = 0;
        char buf[IB_GUID_TEXT_MAX];
        assert_int_equal(ib_guid_parse("02:00:00:00:00:aa:00:0a", &g), 0);
        assert_true(g == 0x0200000000aa000aULL);
        ib_guid_format(g, buf);
        assert_string_equal(buf, "02:00:00:00:00:aa:00:0a");
        assert_int_equal(ib_guid_parse("0c42:a103:00b8:c0de", &g), 0);
        assert_true(g == 0x0c42a10300b8c0deULL);
        assert_int_equal(ib_guid_parse("02-00-00-00-00-00-00-01", &g), 0);
        assert_true(g == 1ULL + 0x0200000000000000ULL);
        const char *bad[] = { "",
                              "00:11:22:33:44:55",
                              "02:00:00:00:00:00:00:0g",
                              "02:00:00:00:00:00:00:001",
                              "02:00-00:00:00:00:00:01",
                              NULL };
        for (size_t i = 0; bad[i]; i++)
                assert_int_equal(ib_guid_parse(bad[i], &g), -EINVAL);
        assert_false(ib_guid_is_valid(0));
        assert_false(ib_guid_is_valid(UINT64_MAX));
}

/* getIbGUIDConfig "should parse correct json config": list and range, by PCI and by PF GUID;
 * GetVFGUID: VF N takes the N-th GUID or start + N, end included */
static void test_pool_lookup(void **state)
{
        struct ib_guid_pool pool =
            parse_ok("[{\"pciAddress\":\"0000:3b:00.0\",\"guids\":[\"02:00:00:00:00:00:00:00\","
                     "\"02:00:00:00:00:00:00:01\"]},"
                     "{\"pfGuid\":\"0c:42:a1:03:00:b8:c0:de\",\"guidsRange\":{\"start\":"
                     "\"02:00:00:00:00:aa:00:02\",\"end\":\"02:00:00:00:00:aa:00:0a\"}},"
                     "{\"pciAddress\":\"0000:3b:00.0\",\"guids\":[\"02:00:00:00:00:00:00:99\"]}]");
        char error[256];
        uint64_t g;
        struct rdma_device rdma_a, rdma_b;
        struct pf_info a = ib_pf("0000:3b:00.0", "0000:0000:0000:0001", &rdma_a);
        assert_int_equal(ib_guid_for_vf(&pool, &a, 1, &g, error, sizeof(error)), 0);
        assert_true(g == 0x0200000000000001ULL); /* the first entry of a PF counts */
        assert_int_equal(ib_guid_for_vf(&pool, &a, 2, &g, error, sizeof(error)), -ENOENT);
        assert_non_null(strstr(error, "no GUID for VF 2 of PF 0000:3b:00.0"));

        struct pf_info b = ib_pf("0000:af:00.0", "0c42:a103:00b8:c0de", &rdma_b);
        assert_int_equal(ib_guid_for_vf(&pool, &b, 0, &g, error, sizeof(error)), 0);
        assert_true(g == 0x0200000000aa0002ULL);
        assert_int_equal(ib_guid_for_vf(&pool, &b, 8, &g, error, sizeof(error)), 0);
        assert_true(g == 0x0200000000aa000aULL);
        assert_int_equal(ib_guid_for_vf(&pool, &b, 9, &g, error, sizeof(error)), -ENOENT);
        ib_guid_pool_done(&pool);
}

/* getIbGUIDConfig's and getPfPciAddressFromRawConfig's errors, with the entry named */
static void test_pool_errors(void **state)
{
        expect_error("{\"pciAddress\":\"0000:3b:00.0\"}", "a JSON list of PFs");
        expect_error("[{\"pciAddress\":\"0000:3b:00.0\",\"pfGuid\":\"02:00:00:00:00:00:00:01\","
                     "\"guids\":[\"02:00:00:00:00:00:00:01\"]}]",
                     "entry 0: either pciAddress or pfGuid names the PF, both given");
        expect_error("[{\"guids\":[\"02:00:00:00:00:00:00:01\"]}]", "none given");
        expect_error("[{\"pciAddress\":\"0000:3b:00.0\",\"guids\":[\"02:00:00:00:00:00:00:01\"],"
                     "\"guidsRange\":{\"start\":\"02:00:00:00:00:00:00:01\"}}]",
                     "got both");
        expect_error("[{\"pciAddress\":\"0000:3b:00.0\"}]", "got none");
        expect_error("[{\"pciAddress\":\"0000:3b:00.0\",\"guidsRange\":{\"start\":"
                     "\"02:00:00:00:00:00:00:01\"}}]",
                     "needs both start and end");
        expect_error("[{\"pciAddress\":\"0000:3b:00.0\",\"guidsRange\":{\"start\":"
                     "\"02:00:00:00:00:00:00:09\",\"end\":\"02:00:00:00:00:00:00:01\"}}]",
                     "ends before it starts");
        expect_error("[{\"pciAddress\":\"0000:3b:00.0\",\"guids\":[\"nonsense\"]}]",
                     "guids: \"nonsense\" is not a GUID");
        /* upstream's documentation spells the keys pci_address/pf_guid, its code pciAddress/
         * pfGuid: a misspelt key is named instead of silently ignored */
        expect_error("[{\"pci_address\":\"0000:3b:00.0\",\"guids\":[\"02:00:00:00:00:00:00:01\"]}]",
                     "unknown field \"pci_address\"");
        expect_error("[{\"pciAddress\":\"../x\",\"guids\":[\"02:00:00:00:00:00:00:01\"]}]",
                     "not a PCI address");
}

/* A GUID the pool would hand out that is zero or all-ones (what a VF nobody gave a GUID shows)
 * is refused, naming the entry, the field and the value; so is a pfGuid that no PF can have.
 * The whole file is refused (nothing of it is used): no entry is returned. */
static void test_pool_refuses_zero_and_all_ones(void **state)
{
        const char *zero = "00:00:00:00:00:00:00:00", *ones = "ff:ff:ff:ff:ff:ff:ff:ff";
        const char *good = "02:00:00:00:00:00:00:01";
        char text[512], needle[128];
        for (int k = 0; k < 2; k++) {
                const char *bad = k ? ones : zero;
                /* the second entry's second GUID: the first entry is fine */
                snprintf(text, sizeof(text),
                         "[{\"pciAddress\":\"0000:3b:00.0\",\"guids\":[\"%s\"]},"
                         "{\"pciAddress\":\"0000:3b:00.1\",\"guids\":[\"%s\",\"%s\"]}]",
                         good, good, bad);
                snprintf(needle, sizeof(needle),
                         "IB GUID pool entry 1: guids[1]: \"%s\" is not a valid GUID", bad);
                expect_error(text, needle);
                snprintf(text, sizeof(text),
                         "[{\"pciAddress\":\"0000:3b:00.0\",\"guidsRange\":{\"start\":\"%s\","
                         "\"end\":\"%s\"}}]",
                         k ? good : zero, k ? ones : good);
                snprintf(needle, sizeof(needle),
                         "IB GUID pool entry 0: guidsRange.%s \"%s\" is not a valid GUID",
                         k ? "end" : "start", bad);
                expect_error(text, needle);
                snprintf(text, sizeof(text), "[{\"pfGuid\":\"%s\",\"guids\":[\"%s\"]}]", bad, good);
                snprintf(needle, sizeof(needle),
                         "IB GUID pool entry 0: pfGuid \"%s\" is not a valid GUID", bad);
                expect_error(text, needle);
        }
        /* sysfs' grouped spelling of all-ones too */
        expect_error("[{\"pciAddress\":\"0000:3b:00.0\",\"guids\":[\"ffff:ffff:ffff:ffff\"]}]",
                     "guids[0]: \"ffff:ffff:ffff:ffff\" is not a valid GUID");
        /* the range's ends are the only values to check: all between are valid then */
        struct ib_guid_pool pool =
            parse_ok("[{\"pciAddress\":\"0000:3b:00.0\",\"guidsRange\":{\"start\":"
                     "\"00:00:00:00:00:00:00:01\",\"end\":\"ff:ff:ff:ff:ff:ff:ff:fe\"}}]");
        ib_guid_pool_done(&pool);
}

/* Without a pool: the same VF gets the same valid GUID every time, VFs and PFs differ */
static void test_derived_guids_are_stable_and_valid(void **state)
{
        char error[256];
        uint64_t g0, g0_again, g1, other;
        struct rdma_device rdma_a, rdma_b;
        struct pf_info a = ib_pf("0000:3b:00.0", "0c42:a103:00b8:c0de", &rdma_a);
        struct pf_info b = ib_pf("0000:3b:00.1", "0c42:a103:00b8:c0df", &rdma_b);
        assert_int_equal(ib_guid_for_vf(NULL, &a, 0, &g0, error, sizeof(error)), 0);
        assert_int_equal(ib_guid_for_vf(NULL, &a, 0, &g0_again, error, sizeof(error)), 0);
        assert_int_equal(ib_guid_for_vf(NULL, &a, 1, &g1, error, sizeof(error)), 0);
        assert_int_equal(ib_guid_for_vf(NULL, &b, 0, &other, error, sizeof(error)), 0);
        assert_true(g0 == g0_again);
        assert_true(g0 != g1 && g0 != other);
        for (int vf = 0; vf < 256; vf++) {
                uint64_t g;
                assert_int_equal(ib_guid_for_vf(NULL, &a, vf, &g, error, sizeof(error)), 0);
                assert_true(ib_guid_is_valid(g));
                assert_int_equal(g >> 56, 0x02);
        }
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_guid_text),
                cmocka_unit_test(test_pool_lookup),
                cmocka_unit_test(test_pool_errors),
                cmocka_unit_test(test_pool_refuses_zero_and_all_ones),
                cmocka_unit_test(test_derived_guids_are_stable_and_valid),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
