/* SPDX-License-Identifier: Apache-2.0 */
/* lib/host/rdma-function: a VF's RDMA device found from its PCI function in a generated sysfs
 * tree: directly under the function (infiniband/mlx5_3), under an auxiliary device
 * (mlx5_core.rdma.3/infiniband/mlx5_3, as mlx5 since Linux 5.11), none, and names that are
 * not file names skipped. */
#include <errno.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "host/rdma-function.h"

static char root[64];

static void mkdirs(const char *rel)
{
        char path[512], *p;
        snprintf(path, sizeof(path), "%s/%s", root, rel);
        for (p = path + strlen(root) + 1; (p = strchr(p, '/')); p++) {
                *p = '\0';
                (void)mkdir(path, 0755);
                *p = '/';
        }
        assert_true(mkdir(path, 0755) == 0 || errno == EEXIST);
}

static int setup(void **state)
{
        snprintf(root, sizeof(root), "/tmp/test-rdma-function-XXXXXX");
        assert_non_null(mkdtemp(root));
        mkdirs("bus/pci/devices/0000:3b:02.0/infiniband/mlx5_3");
        mkdirs("bus/pci/devices/0000:3b:02.1/mlx5_core.rdma.4/infiniband/mlx5_4");
        mkdirs("bus/pci/devices/0000:3b:02.1/net/ib1");
        mkdirs("bus/pci/devices/0000:3b:02.2/net/ib2");
        mkdirs("bus/pci/devices/0000:3b:02.3/infiniband/mlx5_9");
        mkdirs("bus/pci/devices/0000:3b:02.3/infiniband/mlx5_10");
        return 0;
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
        return remove(path);
}

static int teardown(void **state)
{
        return nftw(root, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void test_found_under_function_or_auxiliary_device(void **state)
{
        char name[64] = "";
        assert_int_equal(host_rdma_device_of_function(root, "0000:3b:02.0", name, sizeof(name)), 0);
        assert_string_equal(name, "mlx5_3");
        assert_int_equal(host_rdma_device_of_function(root, "0000:3b:02.1", name, sizeof(name)), 0);
        assert_string_equal(name, "mlx5_4");
        /* several: the first by name, whatever the directory's order */
        assert_int_equal(host_rdma_device_of_function(root, "0000:3b:02.3", name, sizeof(name)), 0);
        assert_string_equal(name, "mlx5_10");
}

static void test_none_and_bad_input(void **state)
{
        char name[64] = "untouched", tiny[4];
        assert_int_equal(host_rdma_device_of_function(root, "0000:3b:02.2", name, sizeof(name)),
                         -ENOENT);
        assert_string_equal(name, "untouched");
        assert_int_equal(host_rdma_device_of_function(root, "0000:3b:09.0", name, sizeof(name)),
                         -ENODEV);
        assert_int_equal(host_rdma_device_of_function(root, "../../etc", name, sizeof(name)),
                         -EINVAL);
        assert_int_equal(host_rdma_device_of_function(root, "0000:3b:02.0", tiny, sizeof(tiny)),
                         -ENAMETOOLONG);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_found_under_function_or_auxiliary_device),
                cmocka_unit_test(test_none_and_bad_input),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
