/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for lib/host/driver-bind: VF driver changes on a temp sysfs-like tree.
 *
 * A "fake kernel" thread watches driver_override, the drivers' unbind files and drivers_probe
 * with inotify, records each write in order, and does what the kernel does: unbind removes the
 * VF's driver link, a probe binds the override (or the default driver igbvf) when that driver
 * exists, unless the test makes probes bind nothing (vfio-pci without an IOMMU). */
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

#include "host/driver-bind.h"
#include "util/fileio.h"
#include "util/parse.h"
#include "util/log.h"

#define PF "0000:01:00.0"
#define VF "0000:01:10.0"

#define PATHF(buf, ...) assert_int_equal(path_printf(buf, sizeof(buf), __VA_ARGS__), 0)

enum watch_kind { W_OVERRIDE, W_PROBE, W_UNBIND_IGBVF, W_UNBIND_VFIO, _W_MAX };

struct fake_kernel {
        char root[64];
        char vf_dir[PATH_MAX];
        bool probe_binds; /* false: drivers_probe is accepted and nothing binds */
        char refuse[32];  /* a driver whose probe fails (vfio-pci without an IOMMU) */
        int wd[_W_MAX];
        pthread_mutex_t lock;
        char log[512]; /* "override=vfio-pci;unbind igbvf;probe;override=;" */
        atomic_bool stop;
        atomic_bool ready; /* watches in place */
        pthread_t thread;
};

static void msleep(int ms)
{
        nanosleep(&(struct timespec){ .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L },
                  NULL);
}

/* Closed before the rename so inotify does not report the fake kernel's own rewrites under
 * the final name. */
static void put_file(const char *dir, const char *name, const char *content)
{
        char path[PATH_MAX], tmp[PATH_MAX];
        PATHF(path, "%s/%s", dir, name);
        PATHF(tmp, "%s/.%s.tmp", dir, name);
        FILE *f = fopen(tmp, "we");
        assert_non_null(f);
        assert_true(fputs(content, f) >= 0);
        assert_int_equal(fclose(f), 0);
        assert_int_equal(rename(tmp, path), 0);
}

static void mkdirf(const char *root, const char *rel)
{
        char path[PATH_MAX];
        PATHF(path, "%s/%s", root, rel);
        assert_int_equal(mkdir(path, 0755), 0);
}

static void symlinkf(const char *target, const char *root, const char *rel)
{
        char path[PATH_MAX];
        PATHF(path, "%s/%s", root, rel);
        assert_int_equal(symlink(target, path), 0);
}

static void record(struct fake_kernel *k, const char *what, const char *arg)
{
        char entry[128];
        snprintf(entry, sizeof(entry), "%s%s", what, arg);
        pthread_mutex_lock(&k->lock);
        strncat(k->log, entry, sizeof(k->log) - strlen(k->log) - 1);
        strncat(k->log, ";", sizeof(k->log) - strlen(k->log) - 1);
        pthread_mutex_unlock(&k->lock);
}

static void current_driver(struct fake_kernel *k, char *buf, size_t size)
{
        char path[PATH_MAX];
        PATHF(path, "%s/driver", k->vf_dir);
        if (read_link_basename(path, buf, size) < 0)
                buf[0] = '\0';
}

static void handle_probe(struct fake_kernel *k)
{
        char path[PATH_MAX], override[64] = "", drv[64];
        current_driver(k, drv, sizeof(drv));
        if (drv[0] || !k->probe_binds)
                return;
        PATHF(path, "%s/driver_override", k->vf_dir);
        (void)read_line_file(path, override, sizeof(override));
        const char *target = override[0] ? override : "igbvf";
        if (strcmp(target, k->refuse) == 0)
                return;
        PATHF(path, "%s/bus/pci/drivers/%s", k->root, target);
        if (access(path, F_OK) < 0)
                return;
        PATHF(path, "%s/driver", k->vf_dir);
        char link[PATH_MAX];
        PATHF(link, "../../../bus/pci/drivers/%s", target);
        assert_int_equal(symlink(link, path), 0);
}

static void handle(struct fake_kernel *k, enum watch_kind kind)
{
        char path[PATH_MAX], value[64] = "";
        switch (kind) {
        case W_OVERRIDE:
                PATHF(path, "%s/driver_override", k->vf_dir);
                (void)read_line_file(path, value, sizeof(value));
                record(k, "override=", value);
                /* The kernel keeps exactly what was written: drop the bytes an overwrite
                 * without truncation left behind. */
                put_file(k->vf_dir, "driver_override", value);
                break;
        case W_PROBE:
                PATHF(path, "%s/bus/pci/drivers_probe", k->root);
                (void)read_line_file(path, value, sizeof(value));
                record(k, "probe ", value);
                handle_probe(k);
                break;
        case W_UNBIND_IGBVF:
        case W_UNBIND_VFIO: {
                const char *drv = kind == W_UNBIND_IGBVF ? "igbvf" : "vfio-pci";
                PATHF(path, "%s/bus/pci/drivers/%s/unbind", k->root, drv);
                (void)read_line_file(path, value, sizeof(value));
                record(k, "unbind ", drv);
                char cur[64];
                current_driver(k, cur, sizeof(cur));
                if (strcmp(value, VF) == 0 && strcmp(cur, drv) == 0) {
                        PATHF(path, "%s/driver", k->vf_dir);
                        unlink(path);
                }
                break;
        }
        default:
                break;
        }
}

static void *fake_kernel_run(void *userdata)
{
        struct fake_kernel *k = userdata;
        char path[PATH_MAX];
        int fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
        assert_true(fd >= 0);
        k->wd[W_OVERRIDE] = inotify_add_watch(fd, k->vf_dir, IN_CLOSE_WRITE);
        PATHF(path, "%s/bus/pci", k->root);
        k->wd[W_PROBE] = inotify_add_watch(fd, path, IN_CLOSE_WRITE);
        PATHF(path, "%s/bus/pci/drivers/igbvf", k->root);
        k->wd[W_UNBIND_IGBVF] = inotify_add_watch(fd, path, IN_CLOSE_WRITE);
        PATHF(path, "%s/bus/pci/drivers/vfio-pci", k->root);
        k->wd[W_UNBIND_VFIO] = inotify_add_watch(fd, path, IN_CLOSE_WRITE); /* may be absent */
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
                        if (ev->len == 0)
                                continue;
                        if (ev->wd == k->wd[W_OVERRIDE] && strcmp(ev->name, "driver_override") == 0)
                                handle(k, W_OVERRIDE);
                        else if (ev->wd == k->wd[W_PROBE] && strcmp(ev->name, "drivers_probe") == 0)
                                handle(k, W_PROBE);
                        else if (ev->wd == k->wd[W_UNBIND_IGBVF] && strcmp(ev->name, "unbind") == 0)
                                handle(k, W_UNBIND_IGBVF);
                        else if (ev->wd == k->wd[W_UNBIND_VFIO] && strcmp(ev->name, "unbind") == 0)
                                handle(k, W_UNBIND_VFIO);
                }
        }
        close(fd);
        return NULL;
}

/* PF 0000:01:00.0 (igb) with one VF 0000:01:10.0 bound to `bound_to` ("" = unbound), with or
 * without an iommu_group, and with or without the vfio-pci driver loaded. */
static struct fake_kernel *fake_kernel_new(const char *bound_to, bool iommu, bool vfio_loaded)
{
        struct fake_kernel *k = calloc(1, sizeof(*k));
        assert_non_null(k);
        pthread_mutex_init(&k->lock, NULL);
        k->probe_binds = true;
        snprintf(k->root, sizeof(k->root), "/tmp/sriov-test-bind-XXXXXX");
        assert_non_null(mkdtemp(k->root));
        /* "dir/" PF joins on purpose: NOLINTBEGIN(bugprone-suspicious-missing-comma) */
        const char *dirs[] = { "devices",
                               "devices/pci0000:00",
                               "devices/pci0000:00/" PF,
                               "devices/pci0000:00/" VF,
                               "bus",
                               "bus/pci",
                               "bus/pci/drivers",
                               "bus/pci/drivers/igb",
                               "bus/pci/drivers/igbvf",
                               "kernel",
                               "kernel/iommu_groups",
                               "kernel/iommu_groups/7" };
        /* NOLINTEND(bugprone-suspicious-missing-comma) */
        for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
                mkdirf(k->root, dirs[i]);
        if (vfio_loaded)
                mkdirf(k->root, "bus/pci/drivers/vfio-pci");
        symlinkf("../../devices/pci0000:00", k->root, "bus/pci/devices");
        PATHF(k->vf_dir, "%s/devices/pci0000:00/" VF, k->root);

        char pf_dir[PATH_MAX];
        PATHF(pf_dir, "%s/devices/pci0000:00/" PF, k->root);
        put_file(pf_dir, "sriov_totalvfs", "7\n");
        put_file(pf_dir, "sriov_numvfs", "1\n");
        put_file(pf_dir, "driver_override", "");
        symlinkf("../../../bus/pci/drivers/igb", pf_dir, "driver");
        symlinkf("../" VF, pf_dir, "virtfn0");
        symlinkf("../" PF, k->vf_dir, "physfn");
        put_file(k->vf_dir, "driver_override", "");
        if (iommu)
                symlinkf("../../../kernel/iommu_groups/7", k->vf_dir, "iommu_group");
        if (bound_to[0]) {
                char link[PATH_MAX];
                PATHF(link, "../../../bus/pci/drivers/%s", bound_to);
                symlinkf(link, k->vf_dir, "driver");
        }
        char path[PATH_MAX];
        PATHF(path, "%s/bus/pci", k->root);
        put_file(path, "drivers_probe", "");
        const char *drivers[] = { "igb", "igbvf", vfio_loaded ? "vfio-pci" : NULL };
        for (size_t i = 0; i < 3 && drivers[i]; i++) {
                PATHF(path, "%s/bus/pci/drivers/%s", k->root, drivers[i]);
                put_file(path, "unbind", "");
        }

        assert_int_equal(pthread_create(&k->thread, NULL, fake_kernel_run, k), 0);
        while (!atomic_load(&k->ready))
                msleep(1);
        return k;
}

/* nftw() callback: removes the fake sysfs tree bottom-up (FTW_DEPTH). */
static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
        return remove(path);
}

static void fake_kernel_free(struct fake_kernel *k)
{
        atomic_store(&k->stop, true);
        pthread_join(k->thread, NULL);
        assert_int_equal(nftw(k->root, remove_entry, 16, FTW_DEPTH | FTW_PHYS), 0);
        pthread_mutex_destroy(&k->lock);
        free(k);
}

static bool log_matches(struct fake_kernel *k, const char *want, bool whole)
{
        pthread_mutex_lock(&k->lock);
        bool ok = whole ? strcmp(k->log, want) == 0 : strstr(k->log, want) != NULL;
        pthread_mutex_unlock(&k->lock);
        return ok;
}

/* The fake kernel may still be handling the last write (the final driver_override clear is
 * not waited for by the code under test): give it up to 3 s to reach the expected log, then
 * compare. Expecting no writes at all, give stray writes 100 ms to show up. */
static void assert_write_log(struct fake_kernel *k, const char *want, bool whole)
{
        if (!want[0])
                msleep(100);
        for (int i = 0; i < 300 && !log_matches(k, want, whole); i++)
                msleep(10);
        pthread_mutex_lock(&k->lock);
        if (whole)
                assert_string_equal(k->log, want);
        else
                assert_non_null(strstr(k->log, want));
        pthread_mutex_unlock(&k->lock);
}

static void assert_driver(struct fake_kernel *k, const char *want)
{
        char drv[64];
        current_driver(k, drv, sizeof(drv));
        assert_string_equal(drv, want);
}

static void assert_override_cleared(struct fake_kernel *k)
{
        char path[PATH_MAX], value[64] = "x";
        PATHF(path, "%s/driver_override", k->vf_dir);
        assert_int_equal(read_line_file(path, value, sizeof(value)), 0);
        assert_string_equal(value, "");
}

/* Runs fn with stderr going to a temp file; returns what was logged (caller frees). */
static char *capture_stderr_begin(int *saved)
{
        char *path = strdup("/tmp/sriov-test-bind-log-XXXXXX");
        int fd = mkstemp(path);
        assert_true(fd >= 0);
        fflush(stderr);
        *saved = dup(STDERR_FILENO);
        dup2(fd, STDERR_FILENO);
        close(fd);
        return path;
}

static char *capture_stderr_end(int saved, char *path)
{
        char *text = NULL;
        fflush(stderr);
        dup2(saved, STDERR_FILENO);
        close(saved);
        assert_int_equal(read_full_file(path, 1 << 20, &text, NULL), 0);
        unlink(path);
        free(path);
        fputs(text, stderr);
        return text;
}

static void test_bind_vfio_then_back(void **state)
{
        struct fake_kernel *k = fake_kernel_new("igbvf", true, true);
        struct bind_options o = { .sysfs_root = k->root, .timeout_ms = 2000 };

        assert_int_equal(host_bind_vf_driver(&o, VF, "vfio-pci"), 0);
        assert_driver(k, "vfio-pci");
        assert_override_cleared(k);
        assert_write_log(k, "override=vfio-pci;unbind igbvf;probe " VF ";override=;", true);

        pthread_mutex_lock(&k->lock);
        k->log[0] = '\0';
        pthread_mutex_unlock(&k->lock);
        assert_int_equal(host_bind_vf_driver(&o, VF, NULL), 0);
        assert_driver(k, "igbvf");
        assert_override_cleared(k);
        assert_write_log(k, "override=;unbind vfio-pci;probe " VF ";override=;", true);

        char drv[64];
        assert_int_equal(host_vf_current_driver(k->root, VF, drv, sizeof(drv)), 0);
        assert_string_equal(drv, "igbvf");
        fake_kernel_free(k);
}

static void test_already_bound_writes_nothing(void **state)
{
        struct fake_kernel *k = fake_kernel_new("vfio-pci", true, true);
        struct bind_options o = { .sysfs_root = k->root, .timeout_ms = 2000 };
        assert_int_equal(host_bind_vf_driver(&o, VF, "vfio-pci"), 0);
        assert_write_log(k, "", true);
        fake_kernel_free(k);

        k = fake_kernel_new("igbvf", true, true);
        o.sysfs_root = k->root;
        assert_int_equal(host_bind_vf_driver(&o, VF, ""), 0);
        assert_write_log(k, "", true);
        fake_kernel_free(k);
}

static void test_unbound_vf_gets_bound(void **state)
{
        struct fake_kernel *k = fake_kernel_new("", true, true);
        struct bind_options o = { .sysfs_root = k->root, .timeout_ms = 2000 };
        assert_int_equal(host_bind_vf_driver(&o, VF, NULL), 0);
        assert_driver(k, "igbvf");
        assert_write_log(k, "override=;probe " VF ";override=;", true);
        fake_kernel_free(k);
}

static void test_probe_accepted_but_nothing_bound(void **state)
{
        struct fake_kernel *k = fake_kernel_new("igbvf", true, true);
        struct bind_options o = { .sysfs_root = k->root, .timeout_ms = 1000 };
        k->probe_binds = false;
        int saved;
        char *path = capture_stderr_begin(&saved);
        int r = host_bind_vf_driver(&o, VF, "vfio-pci");
        char *text = capture_stderr_end(saved, path);
        assert_int_equal(r, -ENODATA);
        assert_non_null(strstr(text, "no driver bound"));
        assert_non_null(strstr(text, VF));
        free(text);
        /* the override is not left behind, and a re-probe was attempted */
        assert_override_cleared(k);
        assert_write_log(k, "probe " VF ";override=;probe " VF ";", false);
        fake_kernel_free(k);
}

static void test_vfio_failure_falls_back_to_default(void **state)
{
        struct fake_kernel *k = fake_kernel_new("igbvf", true, true);
        struct bind_options o = { .sysfs_root = k->root, .timeout_ms = 1000 };
        strcpy(k->refuse, "vfio-pci"); /* as vfio-pci's probe fails without a usable IOMMU */
        assert_int_equal(host_bind_vf_driver(&o, VF, "vfio-pci"), -ENODATA);
        /* the VF is usable again: back on its default driver, no override left */
        assert_driver(k, "igbvf");
        assert_override_cleared(k);
        assert_write_log(k, "override=vfio-pci;unbind igbvf;probe " VF ";override=;probe " VF ";",
                         true);
        fake_kernel_free(k);
}

static void test_missing_iommu_group(void **state)
{
        struct fake_kernel *k = fake_kernel_new("igbvf", false, true);
        struct bind_options o = { .sysfs_root = k->root, .timeout_ms = 200 };
        int saved;
        char *path = capture_stderr_begin(&saved);
        int r = host_bind_vf_driver(&o, VF, "vfio-pci");
        char *text = capture_stderr_end(saved, path);
        assert_int_equal(r, -ENXIO);
        assert_non_null(strstr(text, "VF " VF " has no IOMMU group: enable the IOMMU "
                                     "(intel_iommu=on / amd_iommu=on on the kernel command line)"));
        free(text);
        assert_write_log(k, "", true);
        assert_driver(k, "igbvf");
        fake_kernel_free(k);
}

static void test_vfio_not_loaded(void **state)
{
        struct fake_kernel *k = fake_kernel_new("igbvf", true, false);
        struct bind_options o = { .sysfs_root = k->root, .timeout_ms = 200 };
        int saved;
        char *path = capture_stderr_begin(&saved);
        int r = host_bind_vf_driver(&o, VF, "vfio-pci");
        char *text = capture_stderr_end(saved, path);
        assert_int_equal(r, -ENOENT);
        assert_non_null(strstr(text, "driver vfio-pci is not loaded"));
        free(text);
        assert_write_log(k, "", true);
        fake_kernel_free(k);
}

static void test_never_touches_a_pf(void **state)
{
        struct fake_kernel *k = fake_kernel_new("igbvf", true, true);
        struct bind_options o = { .sysfs_root = k->root, .timeout_ms = 200 };
        assert_int_equal(host_bind_vf_driver(&o, PF, "vfio-pci"), -EPERM);
        assert_int_equal(host_bind_vf_driver(&o, PF, NULL), -EPERM);
        /* a function without physfn is not a VF either */
        char path[PATH_MAX];
        PATHF(path, "%s/physfn", k->vf_dir);
        assert_int_equal(unlink(path), 0);
        assert_int_equal(host_bind_vf_driver(&o, VF, "vfio-pci"), -EPERM);
        assert_write_log(k, "", true);
        assert_driver(k, "igbvf");
        fake_kernel_free(k);
}

static void test_hostile_names(void **state)
{
        struct fake_kernel *k = fake_kernel_new("igbvf", true, true);
        struct bind_options o = { .sysfs_root = k->root, .timeout_ms = 200 };
        /* NOLINTNEXTLINE(bugprone-suspicious-missing-comma): VF "/.." joins on purpose */
        const char *bad_addr[] = { "../../x", VF "/..", "", "0000:01:10.0\n", "*" };
        for (size_t i = 0; i < sizeof(bad_addr) / sizeof(bad_addr[0]); i++)
                assert_int_equal(host_bind_vf_driver(&o, bad_addr[i], "vfio-pci"), -EINVAL);
        assert_int_equal(host_bind_vf_driver(&o, NULL, "vfio-pci"), -EINVAL);
        const char *bad_driver[] = { "..", "../igb", "a/b", "vfio pci\n", "." };
        for (size_t i = 0; i < sizeof(bad_driver) / sizeof(bad_driver[0]); i++)
                assert_int_equal(host_bind_vf_driver(&o, VF, bad_driver[i]), -EINVAL);
        assert_int_equal(host_bind_vf_driver(&o, "0000:09:00.0", "vfio-pci"), -ENODEV);
        assert_write_log(k, "", true);
        assert_driver(k, "igbvf");
        fake_kernel_free(k);
}

static int setup_logging(void **state)
{
        log_setup(LOG_TARGET_STDERR, LOG_INFO);
        return 0;
}

static void test_error_hints(void **state)
{
        assert_non_null(strstr(host_bind_error_hint(-ENXIO), "intel_iommu=on / amd_iommu=on"));
        assert_non_null(strstr(host_bind_error_hint(-ENOENT), "vfio-pci"));
        assert_null(host_bind_error_hint(-EIO));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_bind_vfio_then_back),
                cmocka_unit_test(test_already_bound_writes_nothing),
                cmocka_unit_test(test_unbound_vf_gets_bound),
                cmocka_unit_test(test_probe_accepted_but_nothing_bound),
                cmocka_unit_test(test_vfio_failure_falls_back_to_default),
                cmocka_unit_test(test_missing_iommu_group),
                cmocka_unit_test(test_vfio_not_loaded),
                cmocka_unit_test(test_never_touches_a_pf),
                cmocka_unit_test(test_hostile_names),
                cmocka_unit_test(test_error_hints),
        };
        return cmocka_run_group_tests(tests, setup_logging, NULL);
}
