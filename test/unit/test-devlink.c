/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for lib/host/devlink: input validation, and "not supported" as a clean, non-fatal
 * answer for a PCI address no devlink device has (whether or not this kernel has the devlink
 * family at all). Real devlink devices are exercised in the VM lab. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "host/devlink.h"
#include "util/log.h"

static void test_hostile_addresses(void **state)
{
        const char *bad[] = { "", "../x", "pci/0000:01:00.0", "0000:01:00.0\n", "netdevsim0" };
        char buf[32];
        bool v;
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                assert_int_equal(host_devlink_get_eswitch_mode(bad[i], buf, sizeof(buf)), -EINVAL);
                assert_int_equal(host_devlink_get_enable_rdma(bad[i], &v), -EINVAL);
                assert_int_equal(host_devlink_set_enable_rdma(bad[i], true), -EINVAL);
        }
        assert_int_equal(host_devlink_get_enable_rdma(NULL, &v), -EINVAL);
}

static void test_unknown_device_is_not_supported(void **state)
{
        char buf[32] = "untouched";
        bool v = true;
        /* a PCI address that no machine of ours has */
        assert_int_equal(host_devlink_get_eswitch_mode("0000:fe:1f.7", buf, sizeof(buf)),
                         -EOPNOTSUPP);
        assert_string_equal(buf, "untouched");
        assert_int_equal(host_devlink_get_enable_rdma("0000:fe:1f.7", &v), -EOPNOTSUPP);
        assert_true(v);
        assert_int_equal(host_devlink_set_enable_rdma("0000:fe:1f.7", false), -EOPNOTSUPP);
}

static int setup(void **state)
{
        log_setup(LOG_TARGET_STDERR, LOG_DEBUG);
        return 0;
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_hostile_addresses),
                cmocka_unit_test(test_unknown_device_is_not_supported),
        };
        return cmocka_run_group_tests(tests, setup, NULL);
}
