/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for lib/cni/pool: which VFs the CNI plugin accepts as deviceID, read from the
 * sriov-agent's record of their PF (<state-dir>/<pf-pci>.json, interface.vfGroups). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "cni/pool.h"
#include "util/fileio.h"

static const char record[] =
    "{\"pciAddress\":\"0000:3b:00.0\",\"interface\":{\"pciAddress\":\"0000:3b:00.0\","
    "\"vfGroups\":[{\"resourceName\":\"net_a\",\"vfRange\":\"0-3\"},"
    "{\"resourceName\":\"vfio_b\",\"vfRange\":\"5\"},"
    "{\"resourceName\":\"odd\",\"vfRange\":\"7-x\"}]}}";

static int lookup(const char *text, int vf, char *resource, struct cni_error *e)
{
        return cni_pool_lookup_text("rec", text, strlen(text), "0000:3b:00.0", vf, resource, 64, e);
}

static void test_ranges(void **state)
{
        char resource[64];
        struct cni_error e = { 0 };
        assert_int_equal(lookup(record, 0, resource, &e), 0);
        assert_string_equal(resource, "net_a");
        assert_int_equal(lookup(record, 3, resource, &e), 0);
        assert_string_equal(resource, "net_a");
        assert_int_equal(lookup(record, 5, resource, &e), 0);
        assert_string_equal(resource, "vfio_b");
        /* between the groups, after them, and in a range that does not parse */
        assert_int_equal(lookup(record, 4, resource, &e), -ESRCH);
        assert_int_equal(e.code, CNI_ERR_INVALID_CONFIG);
        assert_non_null(strstr(e.msg, "VF 4 of PF 0000:3b:00.0 is in none of the pools"));
        assert_int_equal(lookup(record, 8, resource, &e), -ESRCH);
        assert_int_equal(lookup(record, 7, resource, &e), -ESRCH);
        assert_int_equal(lookup(record, -1, resource, &e), -ESRCH);
}

static void test_bad_records(void **state)
{
        char resource[64];
        struct cni_error e = { 0 };
        /* a PF the agent manages without pools (externally managed, or all VFs released) */
        assert_int_equal(lookup("{\"interface\":{}}", 0, resource, &e), -ESRCH);
        assert_int_equal(lookup("{nope", 0, resource, &e), -EBADMSG);
        assert_non_null(strstr(e.msg, "cannot be read"));
        assert_int_equal(lookup("{\"interface\":{\"vfGroups\":5}}", 0, resource, &e), -EBADMSG);
        assert_int_equal(
            lookup("{\"interface\":{\"vfGroups\":[{\"vfRange\":\"0-3\"}]}}", 0, resource, &e),
            -ESRCH); /* no resource name: no pool */
}

static void test_files(void **state)
{
        char dir[] = "/tmp/sriov-test-cni-pool-XXXXXX", path[128], resource[64];
        struct cni_error e = { 0 };
        assert_non_null(mkdtemp(dir));
        assert_int_equal(cni_pool_lookup(dir, "0000:3b:00.0", 0, resource, 64, &e), -ENOENT);
        assert_non_null(strstr(e.msg, "it manages no VF of that PF"));
        snprintf(path, sizeof(path), "%s/0000:3b:00.0.json", dir);
        assert_int_equal(write_file_atomic(path, record, strlen(record), 0600), 0);
        assert_int_equal(cni_pool_lookup(dir, "0000:3b:00.0", 2, resource, 64, &e), 0);
        assert_string_equal(resource, "net_a");
        /* a PF address that is a path is no record name */
        assert_int_equal(cni_pool_lookup(dir, "../0000:3b:00.0", 2, resource, 64, &e), -EINVAL);
        unlink(path);
        rmdir(dir);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_ranges),
                cmocka_unit_test(test_bad_records),
                cmocka_unit_test(test_files),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
