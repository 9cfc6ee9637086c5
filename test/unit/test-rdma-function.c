/* SPDX-License-Identifier: Apache-2.0 */
/* lib/host/rdma-function: a VF's RDMA device found from its PCI function in a generated sysfs
 * tree: directly under the function (infiniband/mlx5_3), under an auxiliary device
 * (mlx5_core.rdma.3/infiniband/mlx5_3, as mlx5 since Linux 5.11), none, and names that are
 * not file names skipped; an RDMA auxiliary device without its RDMA device; the uverbs, umad and
 * issm char devices a device owns (class/infiniband_verbs, class/infiniband_mad). */
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
        /* an RDMA auxiliary device whose RDMA device is not (yet) registered; names that only
         * look like one */
        mkdirs("bus/pci/devices/0000:3b:02.4/ice.roce.0");
        mkdirs("bus/pci/devices/0000:3b:02.5/.rdma.0");
        mkdirs("bus/pci/devices/0000:3b:02.5/mlx5_core.rdma.x");
        mkdirs("bus/pci/devices/0000:3b:02.5/mlx5_core.eth.0");
        /* the char devices' classes: uverbs3 and umad3/issm3 are mlx5_3's */
        mkdirs("class/infiniband_verbs/uverbs3");
        mkdirs("class/infiniband_verbs/uverbs3x");
        mkdirs("class/infiniband_verbs/abi_version_dir");
        mkdirs("class/infiniband_mad/umad3");
        mkdirs("class/infiniband_mad/issm3");
        mkdirs("class/infiniband_mad/umad4");
        const char *owners[][2] = { { "class/infiniband_verbs/uverbs3/ibdev", "mlx5_3\n" },
                                    { "class/infiniband_verbs/uverbs3x/ibdev", "mlx5_4\n" },
                                    { "class/infiniband_mad/umad3/ibdev", "mlx5_3\n" },
                                    { "class/infiniband_mad/issm3/ibdev", "mlx5_3\n" },
                                    { "class/infiniband_mad/umad4/ibdev", "mlx5_4\n" } };
        for (size_t i = 0; i < sizeof(owners) / sizeof(owners[0]); i++) {
                char path[512];
                snprintf(path, sizeof(path), "%s/%s", root, owners[i][0]);
                FILE *fp = fopen(path, "w");
                assert_non_null(fp);
                fputs(owners[i][1], fp);
                fclose(fp);
        }
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

/* An auxiliary device an RDMA driver binds (<driver>.rdma.N, .roce.N, .iwarp.N) says the
 * function has an RDMA device even while none is registered under it; other names do not. */
static void test_rdma_auxiliary_device(void **state)
{
        assert_true(host_rdma_function_has_rdma_aux(root, "0000:3b:02.1"));
        assert_true(host_rdma_function_has_rdma_aux(root, "0000:3b:02.4"));
        assert_false(host_rdma_function_has_rdma_aux(root, "0000:3b:02.0")); /* ConnectX < 5.11 */
        assert_false(host_rdma_function_has_rdma_aux(root, "0000:3b:02.5"));
        assert_false(host_rdma_function_has_rdma_aux(root, "0000:3b:09.0"));
        assert_false(host_rdma_function_has_rdma_aux(root, "../../etc"));
}

/* The /dev paths an RDMA device owns, by the classes' ibdev files; an entry that is not
 * <kind><digits> is no char device of it. */
static void test_char_devices_of_a_device(void **state)
{
        struct host_rdma_char_devices d;
        assert_int_equal(host_rdma_char_devices_of(root, "mlx5_3", &d), 0);
        assert_string_equal(d.uverbs, "/dev/infiniband/uverbs3");
        assert_string_equal(d.umad, "/dev/infiniband/umad3");
        assert_string_equal(d.issm, "/dev/infiniband/issm3");
        assert_int_equal(host_rdma_char_devices_of(root, "mlx5_4", &d), 0);
        assert_string_equal(d.uverbs, "");
        assert_string_equal(d.umad, "/dev/infiniband/umad4");
        assert_string_equal(d.issm, "");
        assert_int_equal(host_rdma_char_devices_of(root, "../x", &d), -EINVAL);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_found_under_function_or_auxiliary_device),
                cmocka_unit_test(test_none_and_bad_input),
                cmocka_unit_test(test_rdma_auxiliary_device),
                cmocka_unit_test(test_char_devices_of_a_device),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
