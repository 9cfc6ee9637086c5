/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for lib/host/sriov-numvfs: VF count changes on a temp sysfs-like tree.
 *
 * A "fake kernel" thread watches the PF's sriov_numvfs with inotify, records every value
 * written, and then does what the kernel does: removes the VFs for 0, creates VF directories
 * with physfn back-links, driver links and virtfnN links (after a delay) for N. So the waits,
 * the 0-first rule (visible as the sequence of writes) and the timeouts run for real. */
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "host/sriov-numvfs.h"
#include "util/fileio.h"
#include "util/parse.h"

#define PF "0000:01:00.0"

#define PATHF(buf, ...) assert_int_equal(path_printf(buf, sizeof(buf), __VA_ARGS__), 0)

struct fake_kernel {
        char root[64];
        char pf_dir[PATH_MAX];
        char devices_dir[PATH_MAX];
        /* behaviour */
        bool create_links;           /* false: a write is accepted but no VF ever appears */
        bool bind_driver;            /* create a driver link for each VF */
        bool wrong_physfn;           /* physfn points at another device */
        int delay_ms;                /* before each VF appears */
        const char *driver_override; /* what new VFs show in driver_override */
        /* record */
        int writes[16];
        atomic_int n_writes;
        atomic_bool stop;
        atomic_bool ready; /* watches in place */
        pthread_t thread;
};

static void msleep(int ms)
{
        nanosleep(&(struct timespec){ .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L },
                  NULL);
}

static long long now_ms(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void put_file(const char *dir, const char *name, const char *content)
{
        char path[PATH_MAX];
        char tmp[PATH_MAX];
        /* Closed before the rename: inotify names a close by the file's name at that time, and
         * the fake kernel must not take its own rewrites for writes of the code under test. */
        PATHF(path, "%s/%s", dir, name);
        PATHF(tmp, "%s/.%s.tmp", dir, name);
        FILE *f = fopen(tmp, "we");
        assert_non_null(f);
        assert_int_equal(fputs(content, f) >= 0, 1);
        assert_int_equal(fclose(f), 0);
        assert_int_equal(rename(tmp, path), 0);
}

static void vf_addr(int i, char *buf, size_t size)
{
        snprintf(buf, size, "0000:01:10.%d", i);
}

static void remove_vfs(struct fake_kernel *k)
{
        char path[PATH_MAX], addr[32];
        for (int i = 0; i < 8; i++) {
                PATHF(path, "%s/virtfn%d", k->pf_dir, i);
                unlink(path);
                vf_addr(i, addr, sizeof(addr));
                const char *files[] = { "physfn", "driver", "driver_override" };
                for (size_t f = 0; f < 3; f++) {
                        PATHF(path, "%s/%s/%s", k->devices_dir, addr, files[f]);
                        unlink(path);
                }
                PATHF(path, "%s/%s", k->devices_dir, addr);
                rmdir(path);
        }
}

static void create_vfs(struct fake_kernel *k, int n)
{
        char path[PATH_MAX], target[PATH_MAX], addr[32];
        for (int i = 0; i < n; i++) {
                msleep(k->delay_ms);
                vf_addr(i, addr, sizeof(addr));
                PATHF(path, "%s/%s", k->devices_dir, addr);
                mkdir(path, 0755);
                put_file(path, "driver_override",
                         k->driver_override ? k->driver_override : "(null)\n");
                PATHF(path, "%s/%s/physfn", k->devices_dir, addr);
                (void)!symlink(k->wrong_physfn ? "../0000:02:00.0" : "../" PF, path);
                PATHF(path, "%s/virtfn%d", k->pf_dir, i);
                PATHF(target, "../%s", addr);
                (void)!symlink(target, path);
        }
        for (int i = 0; i < n && k->bind_driver; i++) {
                msleep(k->delay_ms);
                vf_addr(i, addr, sizeof(addr));
                PATHF(path, "%s/%s/driver", k->devices_dir, addr);
                (void)!symlink("../../../bus/pci/drivers/igbvf", path);
        }
}

static void *fake_kernel_run(void *userdata)
{
        struct fake_kernel *k = userdata;
        int fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
        assert_true(fd >= 0);
        assert_true(inotify_add_watch(fd, k->pf_dir, IN_CLOSE_WRITE) >= 0);
        atomic_store(&k->ready, true);

        while (!atomic_load(&k->stop)) {
                struct pollfd p = { .fd = fd, .events = POLLIN };
                if (poll(&p, 1, 20) <= 0)
                        continue;
                char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
                ssize_t len = read(fd, buf, sizeof(buf));
                for (char *ptr = buf; len > 0 && ptr < buf + len;) {
                        const struct inotify_event *ev = (const struct inotify_event *)ptr;
                        ptr += sizeof(*ev) + ev->len;
                        if (ev->len == 0 || strcmp(ev->name, "sriov_numvfs") != 0)
                                continue;
                        char path[PATH_MAX];
                        int value = -1;
                        PATHF(path, "%s/sriov_numvfs", k->pf_dir);
                        if (read_int_file(path, &value) < 0)
                                continue;
                        int idx = atomic_fetch_add(&k->n_writes, 1);
                        if (idx < 16)
                                k->writes[idx] = value;
                        /* Normalise the file before acting, as the kernel's value is what
                         * reads return from now on. */
                        char text[16];
                        snprintf(text, sizeof(text), "%d\n", value);
                        put_file(k->pf_dir, "sriov_numvfs", text);
                        if (!k->create_links)
                                continue;
                        remove_vfs(k);
                        create_vfs(k, value);
                }
        }
        close(fd);
        return NULL;
}

/* Tree: <root>/devices/pci0000:00/0000:01:00.0 (+ VFs beside it), bus/pci/devices links,
 * bus/pci/drivers/igbvf. */
static struct fake_kernel *fake_kernel_new(int total, int current)
{
        struct fake_kernel *k = calloc(1, sizeof(*k));
        char path[PATH_MAX];
        assert_non_null(k);
        snprintf(k->root, sizeof(k->root), "/tmp/sriov-test-numvfs-XXXXXX");
        assert_non_null(mkdtemp(k->root));
        snprintf(k->devices_dir, sizeof(k->devices_dir), "%s/devices", k->root);
        mkdir(k->devices_dir, 0755);
        strcat(k->devices_dir, "/pci0000:00");
        mkdir(k->devices_dir, 0755);
        assert_true(snprintf(k->pf_dir, sizeof(k->pf_dir), "%s/" PF, k->devices_dir) <
                    (int)sizeof(k->pf_dir));
        assert_int_equal(mkdir(k->pf_dir, 0755), 0);
        PATHF(path, "%s/bus", k->root);
        mkdir(path, 0755);
        strcat(path, "/pci");
        mkdir(path, 0755);
        PATHF(path, "%s/bus/pci/drivers", k->root);
        mkdir(path, 0755);
        strcat(path, "/igbvf");
        mkdir(path, 0755);
        PATHF(path, "%s/bus/pci/devices", k->root);
        assert_int_equal(symlink("../../devices/pci0000:00", path), 0);

        char text[16];
        snprintf(text, sizeof(text), "%d\n", total);
        put_file(k->pf_dir, "sriov_totalvfs", text);
        snprintf(text, sizeof(text), "%d\n", current);
        put_file(k->pf_dir, "sriov_numvfs", text);
        put_file(k->pf_dir, "sriov_drivers_autoprobe", "1\n");
        k->create_links = true;
        k->bind_driver = true;
        k->delay_ms = 5;
        create_vfs(k, current);
        return k;
}

static void fake_kernel_start(struct fake_kernel *k)
{
        assert_int_equal(pthread_create(&k->thread, NULL, fake_kernel_run, k), 0);
        while (!atomic_load(&k->ready))
                msleep(1);
}

/* nftw() callback: removes the fake sysfs tree bottom-up (FTW_DEPTH). */
static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
        return remove(path);
}

static void fake_kernel_free(struct fake_kernel *k)
{
        if (k->thread) {
                atomic_store(&k->stop, true);
                pthread_join(k->thread, NULL);
        }
        assert_int_equal(nftw(k->root, remove_entry, 16, FTW_DEPTH | FTW_PHYS), 0);
        free(k);
}

static int count_links(const struct fake_kernel *k)
{
        char path[PATH_MAX];
        int n = 0;
        for (int i = 0; i < 16; i++) {
                PATHF(path, "%s/virtfn%d/physfn", k->pf_dir, i);
                n += access(path, F_OK) == 0;
        }
        return n;
}

static int read_numvfs(const struct fake_kernel *k)
{
        char path[PATH_MAX];
        int v = -1;
        PATHF(path, "%s/sriov_numvfs", k->pf_dir);
        assert_int_equal(read_int_file(path, &v), 0);
        return v;
}

static void test_create_from_zero(void **state)
{
        struct fake_kernel *k = fake_kernel_new(7, 0);
        fake_kernel_start(k);
        struct numvfs_options o = { .sysfs_root = k->root, .timeout_ms = 5000 };
        assert_int_equal(host_set_num_vfs(&o, PF, 4), 0);
        assert_int_equal(atomic_load(&k->n_writes), 1);
        assert_int_equal(k->writes[0], 4);
        assert_int_equal(count_links(k), 4);
        assert_int_equal(read_numvfs(k), 4);
        fake_kernel_free(k);
}

static void test_change_writes_zero_first(void **state)
{
        struct fake_kernel *k = fake_kernel_new(7, 4);
        fake_kernel_start(k);
        struct numvfs_options o = { .sysfs_root = k->root, .timeout_ms = 5000 };
        assert_int_equal(host_set_num_vfs(&o, PF, 2), 0);
        assert_int_equal(atomic_load(&k->n_writes), 2);
        assert_int_equal(k->writes[0], 0);
        assert_int_equal(k->writes[1], 2);
        assert_int_equal(count_links(k), 2);
        fake_kernel_free(k);
}

static void test_to_zero_single_write(void **state)
{
        struct fake_kernel *k = fake_kernel_new(7, 3);
        fake_kernel_start(k);
        struct numvfs_options o = { .sysfs_root = k->root, .timeout_ms = 5000 };
        assert_int_equal(host_set_num_vfs(&o, PF, 0), 0);
        assert_int_equal(atomic_load(&k->n_writes), 1);
        assert_int_equal(k->writes[0], 0);
        assert_int_equal(count_links(k), 0);
        fake_kernel_free(k);
}

static void test_equal_count_writes_nothing(void **state)
{
        struct fake_kernel *k = fake_kernel_new(7, 4);
        fake_kernel_start(k);
        struct numvfs_options o = { .sysfs_root = k->root, .timeout_ms = 5000 };
        assert_int_equal(host_set_num_vfs(&o, PF, 4), 0);
        msleep(100);
        assert_int_equal(atomic_load(&k->n_writes), 0);
        fake_kernel_free(k);
}

static void test_above_total_rejected_before_write(void **state)
{
        struct fake_kernel *k = fake_kernel_new(7, 4);
        fake_kernel_start(k);
        struct numvfs_options o = { .sysfs_root = k->root, .timeout_ms = 5000 };
        assert_int_equal(host_set_num_vfs(&o, PF, 8), -ERANGE);
        assert_int_equal(host_set_num_vfs(&o, PF, -1), -ERANGE);
        msleep(100);
        assert_int_equal(atomic_load(&k->n_writes), 0);
        assert_int_equal(read_numvfs(k), 4);
        assert_int_equal(count_links(k), 4);
        fake_kernel_free(k);
}

static void test_timeout_when_no_vf_appears(void **state)
{
        struct fake_kernel *k = fake_kernel_new(7, 0);
        k->create_links = false;
        fake_kernel_start(k);
        struct numvfs_options o = { .sysfs_root = k->root, .timeout_ms = 300 };
        long long t0 = now_ms();
        assert_int_equal(host_set_num_vfs(&o, PF, 2), -ETIMEDOUT);
        long long took = now_ms() - t0;
        assert_true(took >= 300);
        assert_true(took < 10000); /* bounded: the deadline is honoured, not overshot */
        assert_int_equal(atomic_load(&k->n_writes), 1);
        assert_non_null(strstr(host_numvfs_error_hint(-ETIMEDOUT), "dmesg"));
        fake_kernel_free(k);
}

static void test_timeout_when_physfn_points_elsewhere(void **state)
{
        struct fake_kernel *k = fake_kernel_new(7, 0);
        k->wrong_physfn = true;
        fake_kernel_start(k);
        struct numvfs_options o = { .sysfs_root = k->root, .timeout_ms = 300 };
        assert_int_equal(host_set_num_vfs(&o, PF, 2), -ETIMEDOUT);
        fake_kernel_free(k);
}

static void test_waits_for_slow_driver_probe(void **state)
{
        struct fake_kernel *k = fake_kernel_new(7, 0);
        k->delay_ms = 60; /* 3 VFs appear, then bind, over ~360 ms */
        fake_kernel_start(k);
        struct numvfs_options o = { .sysfs_root = k->root, .timeout_ms = 5000 };
        assert_int_equal(host_set_num_vfs(&o, PF, 3), 0);
        /* returned only once every VF had its driver link */
        char path[PATH_MAX];
        for (int i = 0; i < 3; i++) {
                PATHF(path, "%s/virtfn%d/driver", k->pf_dir, i);
                assert_int_equal(access(path, F_OK), 0);
        }
        fake_kernel_free(k);
}

static void test_unbound_vfs_settle_after_grace(void **state)
{
        struct fake_kernel *k = fake_kernel_new(7, 0);
        k->bind_driver = false;
        fake_kernel_start(k);
        struct numvfs_options o = { .sysfs_root = k->root,
                                    .timeout_ms = 5000,
                                    .unbound_grace_ms = 200 };
        long long t0 = now_ms();
        assert_int_equal(host_set_num_vfs(&o, PF, 2), 0);
        assert_true(now_ms() - t0 >= 200);
        assert_int_equal(count_links(k), 2);
        fake_kernel_free(k);
}

static void test_autoprobe_off_needs_no_driver(void **state)
{
        struct fake_kernel *k = fake_kernel_new(7, 0);
        k->bind_driver = false;
        put_file(k->pf_dir, "sriov_drivers_autoprobe", "0\n");
        fake_kernel_start(k);
        /* With autoprobe off nobody will bind the VFs: the wait must end as soon as they
         * exist, not after the unbound grace. The grace is far above any scheduling delay so
         * the check holds on a loaded machine. */
        struct numvfs_options o = { .sysfs_root = k->root,
                                    .timeout_ms = 120000,
                                    .unbound_grace_ms = 60000 };
        long long t0 = now_ms();
        assert_int_equal(host_set_num_vfs(&o, PF, 2), 0);
        assert_true(now_ms() - t0 < 30000);
        fake_kernel_free(k);
}

static void test_override_to_missing_driver_needs_no_driver(void **state)
{
        struct fake_kernel *k = fake_kernel_new(7, 0);
        k->bind_driver = false;
        k->driver_override = "vfio-pci\n"; /* not loaded: no bus/pci/drivers/vfio-pci */
        fake_kernel_start(k);
        struct numvfs_options o = { .sysfs_root = k->root,
                                    .timeout_ms = 120000,
                                    .unbound_grace_ms = 60000 };
        long long t0 = now_ms();
        assert_int_equal(host_set_num_vfs(&o, PF, 2), 0);
        assert_true(now_ms() - t0 < 30000); /* did not sit through the grace */
        fake_kernel_free(k);
}

static void test_override_to_loaded_driver_waits(void **state)
{
        struct fake_kernel *k = fake_kernel_new(7, 0);
        k->bind_driver = false;
        k->driver_override = "igbvf\n"; /* loaded, so a bind may still come: wait the grace */
        fake_kernel_start(k);
        struct numvfs_options o = { .sysfs_root = k->root,
                                    .timeout_ms = 5000,
                                    .unbound_grace_ms = 300 };
        long long t0 = now_ms();
        assert_int_equal(host_set_num_vfs(&o, PF, 2), 0);
        assert_true(now_ms() - t0 >= 300);
        fake_kernel_free(k);
}

static void test_garbled_values(void **state)
{
        struct fake_kernel *k = fake_kernel_new(7, 0);
        struct numvfs_options o = { .sysfs_root = k->root, .timeout_ms = 300 };

        put_file(k->pf_dir, "sriov_totalvfs", "seven\n");
        assert_int_equal(host_set_num_vfs(&o, PF, 1), -EINVAL);
        put_file(k->pf_dir, "sriov_totalvfs", "7\n");
        put_file(k->pf_dir, "sriov_numvfs", "\n");
        assert_int_equal(host_set_num_vfs(&o, PF, 1), -EINVAL);
        put_file(k->pf_dir, "sriov_numvfs", "-3\n");
        assert_int_equal(host_set_num_vfs(&o, PF, 1), -EINVAL);
        put_file(k->pf_dir, "sriov_numvfs", "0\n");

        char path[PATH_MAX];
        PATHF(path, "%s/sriov_totalvfs", k->pf_dir);
        unlink(path);
        assert_int_equal(host_set_num_vfs(&o, PF, 1), -EOPNOTSUPP);
        /* no such device */
        assert_int_equal(host_set_num_vfs(&o, "0000:09:00.0", 1), -ENODEV);
        /* nothing was written in any of these cases */
        assert_int_equal(read_numvfs(k), 0);
        fake_kernel_free(k);
}

static void test_hostile_addresses(void **state)
{
        struct fake_kernel *k = fake_kernel_new(7, 0);
        fake_kernel_start(k);
        struct numvfs_options o = { .sysfs_root = k->root, .timeout_ms = 300 };
        const char *bad[] = { "../../etc",      "0000:01:00.0/../x", "",
                              "0000:01:00.0\n", "0000:01:00.0/",     "..",
                              "0000:01:00",     "0000:01:00.0 " };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                assert_int_equal(host_set_num_vfs(&o, bad[i], 1), -EINVAL);
        assert_int_equal(host_set_num_vfs(&o, NULL, 1), -EINVAL);
        msleep(100);
        assert_int_equal(atomic_load(&k->n_writes), 0);
        fake_kernel_free(k);
}

static void test_write_error_is_returned_at_once(void **state)
{
        struct fake_kernel *k = fake_kernel_new(100000, 0);
        char path[PATH_MAX];
        /* A readable number whose writes the kernel refuses (mode 0444 even for root, or a
         * read-only /proc): stands in for a sriov_numvfs the PF driver rejects. */
        PATHF(path, "%s/sriov_numvfs", k->pf_dir);
        unlink(path);
        assert_int_equal(symlink("/proc/sys/kernel/ngroups_max", path), 0);
        struct numvfs_options o = { .sysfs_root = k->root, .timeout_ms = 120000 };
        long long t0 = now_ms();
        int r = host_set_num_vfs(&o, PF, 1);
        assert_true(r == -EACCES || r == -EROFS || r == -EPERM);
        assert_true(now_ms() - t0 < 30000); /* returned at once, did not wait for VFs */
        fake_kernel_free(k);
}

static void test_error_hints(void **state)
{
        assert_non_null(strstr(host_numvfs_error_hint(-ENOSPC), "MSI-X"));
        assert_non_null(strstr(host_numvfs_error_hint(-ENOMEM), "pci=realloc"));
        assert_non_null(strstr(host_numvfs_error_hint(-ENOMEM), "BIOS"));
        assert_non_null(strstr(host_numvfs_error_hint(ERANGE), "sriov_totalvfs"));
        assert_non_null(strstr(host_numvfs_error_hint(-EBUSY), "in use"));
        assert_null(host_numvfs_error_hint(-EXDEV));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_create_from_zero),
                cmocka_unit_test(test_change_writes_zero_first),
                cmocka_unit_test(test_to_zero_single_write),
                cmocka_unit_test(test_equal_count_writes_nothing),
                cmocka_unit_test(test_above_total_rejected_before_write),
                cmocka_unit_test(test_timeout_when_no_vf_appears),
                cmocka_unit_test(test_timeout_when_physfn_points_elsewhere),
                cmocka_unit_test(test_waits_for_slow_driver_probe),
                cmocka_unit_test(test_unbound_vfs_settle_after_grace),
                cmocka_unit_test(test_autoprobe_off_needs_no_driver),
                cmocka_unit_test(test_override_to_missing_driver_needs_no_driver),
                cmocka_unit_test(test_override_to_loaded_driver_waits),
                cmocka_unit_test(test_garbled_values),
                cmocka_unit_test(test_hostile_addresses),
                cmocka_unit_test(test_write_error_is_returned_at_once),
                cmocka_unit_test(test_error_hints),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
