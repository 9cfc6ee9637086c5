/* SPDX-License-Identifier: Apache-2.0 */
/* lib/host/sysfs-device: one PCI function opened once, read, written and followed relative to
 * its directory; and which sysfs roots count as the live /sys. The tree is laid out as sysfs
 * does it (bus/pci/devices/<addr> a link into devices/), with garbled attributes: missing
 * ones, dangling links, values longer than any buffer, non-numbers. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "host/discover.h"
#include "host/sysfs-device.h"
#include "util/fileio.h"

#define PF "0000:01:00.0"
#define VF "0000:01:00.2"

struct tree {
        char root[64];
};

static void put(const char *root, const char *rel, const char *content)
{
        char path[PATH_MAX];
        snprintf(path, sizeof(path), "%s/%s", root, rel);
        FILE *f = fopen(path, "we");
        assert_non_null(f);
        assert_true(fputs(content, f) >= 0);
        assert_int_equal(fclose(f), 0);
}

static void mk(const char *root, const char *rel)
{
        char path[PATH_MAX];
        snprintf(path, sizeof(path), "%s/%s", root, rel);
        assert_int_equal(mkdir(path, 0755), 0);
}

static void ln(const char *target, const char *root, const char *rel)
{
        char path[PATH_MAX];
        snprintf(path, sizeof(path), "%s/%s", root, rel);
        assert_int_equal(symlink(target, path), 0);
}

static int setup(void **state)
{
        struct tree *t = calloc(1, sizeof(*t));
        assert_non_null(t);
        snprintf(t->root, sizeof(t->root), "/tmp/sriov-test-sysfs-device-XXXXXX");
        assert_non_null(mkdtemp(t->root));
        const char *r = t->root;
        mk(r, "bus");
        mk(r, "bus/pci");
        mk(r, "bus/pci/devices");
        mk(r, "bus/pci/drivers");
        mk(r, "bus/pci/drivers/igbvf");
        mk(r, "devices");
        mk(r, "devices/pci0000:00");
        mk(r, "devices/pci0000:00/" PF);
        mk(r, "devices/pci0000:00/" VF);
        ln("../../../devices/pci0000:00/" PF, r, "bus/pci/devices/" PF);
        ln("../../../devices/pci0000:00/" VF, r, "bus/pci/devices/" VF);
        put(r, "devices/pci0000:00/" PF "/sriov_totalvfs", "8\n");
        put(r, "devices/pci0000:00/" PF "/sriov_numvfs", "1\n");
        put(r, "devices/pci0000:00/" PF "/numa_node", "zero\n"); /* garbled */
        char big[5000];
        memset(big, 'x', sizeof(big) - 1);
        big[sizeof(big) - 1] = '\0';
        put(r, "devices/pci0000:00/" PF "/label", big); /* longer than any reader's buffer */
        ln("../" VF, r, "devices/pci0000:00/" PF "/virtfn0");
        ln("../" PF, r, "devices/pci0000:00/" VF "/physfn");
        ln("../../../bus/pci/drivers/igbvf", r, "devices/pci0000:00/" VF "/driver");
        ln("../../../kernel/iommu_groups/7", r,
           "devices/pci0000:00/" VF "/iommu_group"); /* dangles */
        put(r, "devices/pci0000:00/" VF "/driver_override", "(null)\n");
        *state = t;
        return 0;
}

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
        (void)st, (void)type, (void)ftw;
        return remove(path);
}

static int teardown(void **state)
{
        struct tree *t = *state;
        nftw(t->root, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
        free(t);
        return 0;
}

static int count_fds(void)
{
        DIR *d = opendir("/proc/self/fd");
        int n = 0;
        assert_non_null(d);
        while (readdir(d))
                n++;
        closedir(d);
        return n;
}

static void test_open_errors(void **state)
{
        struct tree *t = *state;
        struct host_device d;
        char missing[128];

        assert_int_equal(host_device_open(&d, t->root, "0000:01:00.6"), -ENODEV);
        assert_int_equal(d.fd, -1);
        /* A malformed address never becomes a path. */
        assert_int_equal(host_device_open(&d, t->root, "../../etc"), -EINVAL);
        assert_int_equal(host_device_open(&d, t->root, NULL), -EINVAL);
        snprintf(missing, sizeof(missing), "%s/nope", t->root);
        assert_int_equal(host_device_open(&d, missing, PF), -ENODEV);
        /* A file where the function's directory should be. */
        put(t->root, "bus/pci/devices/0000:01:00.7", "");
        assert_int_equal(host_device_open(&d, t->root, "0000:01:00.7"), -ENODEV);
}

static void test_read_garbled_attributes(void **state)
{
        struct tree *t = *state;
        _cleanup_host_device_ struct host_device d = HOST_DEVICE_NULL;
        char buf[64];
        int n = -1;

        assert_int_equal(host_device_open(&d, t->root, PF), 0);
        assert_string_equal(d.address, PF);
        assert_int_equal(host_device_read_int(&d, "sriov_totalvfs", &n), 0);
        assert_int_equal(n, 8);
        assert_int_equal(host_device_read_line(&d, "sriov_numvfs", buf, sizeof(buf)), 0);
        assert_string_equal(buf, "1");
        assert_int_equal(host_device_read_int(&d, "numa_node", &n), -EINVAL);
        assert_int_equal(host_device_read_line(&d, "label", buf, sizeof(buf)), -ENOBUFS);
        assert_int_equal(host_device_read_line(&d, "sriov_vf_device", buf, sizeof(buf)), -ENOENT);
        assert_false(host_device_exists(&d, "sriov_vf_device"));
        assert_true(host_device_exists(&d, "sriov_totalvfs"));
        /* Through a link to another function: the VF's attributes, relative to the PF. */
        assert_true(host_device_exists(&d, "virtfn0/driver_override"));
}

static void test_links(void **state)
{
        struct tree *t = *state;
        _cleanup_host_device_ struct host_device d = HOST_DEVICE_NULL;
        char buf[64], small[4];
        bool dangling = true;

        assert_int_equal(host_device_open(&d, t->root, VF), 0);
        assert_int_equal(host_device_read_link(&d, "driver", buf, sizeof(buf), &dangling), 0);
        assert_string_equal(buf, "igbvf");
        assert_false(dangling);
        assert_int_equal(host_device_read_link(&d, "physfn", buf, sizeof(buf), NULL), 0);
        assert_string_equal(buf, PF);
        assert_int_equal(host_device_read_link(&d, "physfn", small, sizeof(small), NULL), -ENOBUFS);
        /* The link is there, its target is not: named, and flagged. */
        assert_int_equal(host_device_read_link(&d, "iommu_group", buf, sizeof(buf), &dangling), 0);
        assert_string_equal(buf, "7");
        assert_true(dangling);
        assert_false(host_device_exists(&d, "iommu_group"));
        assert_int_equal(host_device_read_link(&d, "net", buf, sizeof(buf), NULL), -ENOENT);
        /* A regular file is no link. */
        assert_int_equal(host_device_read_link(&d, "driver_override", buf, sizeof(buf), NULL),
                         -EINVAL);
}

static void test_write(void **state)
{
        struct tree *t = *state;
        _cleanup_host_device_ struct host_device d = HOST_DEVICE_NULL;
        char buf[64], path[PATH_MAX];

        assert_int_equal(host_device_open(&d, t->root, VF), 0);
        assert_int_equal(host_device_write(&d, "driver_override", "vfio-pci"), 0);
        snprintf(path, sizeof(path), "%s/devices/pci0000:00/" VF "/driver_override", t->root);
        assert_int_equal(read_line_file(path, buf, sizeof(buf)), 0);
        assert_string_equal(buf, "vfio-pci");
        /* sysfs has no O_CREAT: an attribute the kernel does not offer is not made up. */
        assert_int_equal(host_device_write(&d, "sriov_numvfs", "1"), -ENOENT);
        assert_int_equal(host_device_write(&d, "driver", "x"), -EISDIR);
}

/* Opened once: the function stays reachable while its bus/pci/devices entry goes away and
 * comes back (what a rebind or a mid-scan hotplug does to paths built from the root). */
static void test_handle_outlives_its_path(void **state)
{
        struct tree *t = *state;
        _cleanup_host_device_ struct host_device d = HOST_DEVICE_NULL;
        char link[PATH_MAX];
        int n;

        assert_int_equal(host_device_open(&d, t->root, PF), 0);
        snprintf(link, sizeof(link), "%s/bus/pci/devices/" PF, t->root);
        assert_int_equal(unlink(link), 0);
        assert_int_equal(host_device_read_int(&d, "sriov_totalvfs", &n), 0);
        assert_int_equal(n, 8);
        ln("../../../devices/pci0000:00/" PF, t->root, "bus/pci/devices/" PF);
}

static void test_path_for_messages(void **state)
{
        struct tree *t = *state;
        _cleanup_host_device_ struct host_device d = HOST_DEVICE_NULL;
        char want[PATH_MAX], buf[PATH_MAX], tiny[8];

        assert_int_equal(host_device_open(&d, t->root, PF), 0);
        snprintf(want, sizeof(want), "%s/bus/pci/devices/" PF "/sriov_numvfs", t->root);
        assert_int_equal(host_device_path(&d, "sriov_numvfs", buf, sizeof(buf)), 0);
        assert_string_equal(buf, want);
        snprintf(want, sizeof(want), "%s/bus/pci/devices/" PF, t->root);
        assert_int_equal(host_device_path(&d, NULL, buf, sizeof(buf)), 0);
        assert_string_equal(buf, want);
        assert_int_equal(host_device_path(&d, "sriov_numvfs", tiny, sizeof(tiny)), -ENAMETOOLONG);
        /* The default root, also for a handle that failed to open. */
        struct host_device none;
        assert_int_equal(host_device_open(&none, NULL, "0000:ff:1f.7"), -ENODEV);
        assert_int_equal(host_device_path(&none, "x", buf, sizeof(buf)), 0);
        assert_string_equal(buf, "/sys/bus/pci/devices/0000:ff:1f.7/x");
}

static void test_cleanup_closes(void **state)
{
        struct tree *t = *state;
        int before = count_fds();
        for (int i = 0; i < 3; i++) {
                _cleanup_host_device_ struct host_device d = HOST_DEVICE_NULL;
                assert_int_equal(host_device_open(&d, t->root, PF), 0);
                assert_int_equal(count_fds(), before + 2);
        }
        assert_int_equal(count_fds(), before);
        {
                /* A failed open leaves nothing to close, and closing twice is harmless. */
                _cleanup_host_device_ struct host_device d = HOST_DEVICE_NULL;
                assert_int_equal(host_device_open(&d, t->root, "0000:01:00.6"), -ENODEV);
                host_device_close(&d);
        }
        assert_int_equal(count_fds(), before);
}

/* The agent asks netlink and libibverbs only about the live /sys: whatever spelling of it, and
 * never about a generated tree. */
static void test_root_is_live(void **state)
{
        struct tree *t = *state;
        char sub[PATH_MAX];

        assert_true(host_sysfs_root_is_live(NULL));
        assert_false(host_sysfs_root_is_live(t->root));
        snprintf(sub, sizeof(sub), "%s/nope", t->root);
        assert_false(host_sysfs_root_is_live(sub));
        assert_false(host_sysfs_root_is_live(""));
        if (access("/sys/bus", F_OK) != 0)
                skip(); /* no sysfs in this build container */
        assert_true(host_sysfs_root_is_live("/sys"));
        assert_true(host_sysfs_root_is_live("/sys/"));
        assert_true(host_sysfs_root_is_live("//sys"));
        assert_true(host_sysfs_root_is_live("/sys/bus/.."));
        assert_false(host_sysfs_root_is_live("/sys/bus"));
        /* A link named like a sysfs root is judged by what it is: a tree here. */
        snprintf(sub, sizeof(sub), "%s/sys", t->root);
        assert_int_equal(symlink(t->root, sub), 0);
        assert_false(host_sysfs_root_is_live(sub));
        assert_int_equal(unlink(sub), 0);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_open_errors),
                cmocka_unit_test(test_read_garbled_attributes),
                cmocka_unit_test(test_links),
                cmocka_unit_test(test_write),
                cmocka_unit_test(test_handle_outlives_its_path),
                cmocka_unit_test(test_path_for_messages),
                cmocka_unit_test(test_cleanup_closes),
                cmocka_unit_test(test_root_is_live),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
