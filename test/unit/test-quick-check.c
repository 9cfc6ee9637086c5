/* SPDX-License-Identifier: Apache-2.0 */
/* lib/host/quick-check: the periodic check's first look says "unchanged" only while the facts
 * the plan acts on are as discovery last saw them, and "changed" after each kind of change an
 * operator, a driver or the kernel makes (on a tree written by test/sysfs-gen/gen-sysfs.py). */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <setjmp.h>
#include <spawn.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "host/discover.h"
#include "host/quick-check.h"
#include "model/inventory.h"

extern char **environ;

struct tree {
        char dir[64];
        char root[96];
        struct inventory inv;
};

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
        return remove(path);
}

/* The seed node (ens1f0 with 8 VFs, ...) and its discovery. */
static int setup(void **state)
{
        struct tree *t = calloc(1, sizeof(*t));
        char gen[512];
        const char *srcdir = getenv("SRCDIR");
        assert_non_null(t);
        assert_non_null(srcdir);
        snprintf(gen, sizeof(gen), "%s/test/sysfs-gen/gen-sysfs.py", srcdir);
        snprintf(t->dir, sizeof(t->dir), "%s/sriov-test-quick-XXXXXX",
                 access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
        assert_non_null(mkdtemp(t->dir));
        snprintf(t->root, sizeof(t->root), "%s/sys", t->dir);
        char *argv[] = { "python3", gen, "--out", t->root, "--profile", "seed", NULL };
        pid_t pid;
        int status;
        assert_int_equal(posix_spawnp(&pid, "python3", NULL, NULL, argv, environ), 0);
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        assert_int_equal(
            host_discover(&(struct discover_options){ .sysfs_root = t->root }, &t->inv), 0);
        *state = t;
        return 0;
}

static int teardown(void **state)
{
        struct tree *t = *state;
        if (!t)
                return 0;
        inventory_done(&t->inv);
        nftw(t->dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
        free(t);
        return 0;
}

static const struct pf_info *pf_with_vfs(const struct tree *t)
{
        for (size_t i = 0; i < t->inv.n_pfs; i++)
                if (t->inv.pfs[i].n_vfs > 1 && !t->inv.pfs[i].error &&
                    t->inv.pfs[i].vfs[1].n_netdevs == 1)
                        return &t->inv.pfs[i];
        fail_msg("seed tree has no PF with VFs and netdevs");
        return NULL;
}

static void path_of(const struct tree *t, char *buf, size_t size, const char *pci, const char *rel)
{
        snprintf(buf, size, "%s/bus/pci/devices/%s/%s", t->root, pci, rel);
}

static void write_file(const char *path, const char *text)
{
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fputs(text, f);
        fclose(f);
}

static int quick(const struct tree *t)
{
        return host_quick_check(t->root, &t->inv);
}

static void test_unchanged(void **state)
{
        struct tree *t = *state;
        assert_int_equal(quick(t), 1);
        assert_int_equal(quick(t), 1);
}

/* Each change is made, seen, and undone. */
static void test_vf_mtu_and_pf_admin_state(void **state)
{
        struct tree *t = *state;
        const struct vf_info *vf = &pf_with_vfs(t)->vfs[1];
        char path[512], rel[128], old[32];

        snprintf(rel, sizeof(rel), "net/%s/mtu", vf->netdevs[0].name);
        path_of(t, path, sizeof(path), vf->pci_address, rel);
        snprintf(old, sizeof(old), "%d\n", vf->netdevs[0].mtu);
        write_file(path, "9000\n");
        assert_int_equal(quick(t), 0);
        write_file(path, old);
        assert_int_equal(quick(t), 1);

        /* A VF's admin state decides nothing (no plan step, no NodeState field): not a change,
         * and not read, while a PF's is (the plan brings a PF up). */
        snprintf(rel, sizeof(rel), "net/%s/flags", vf->netdevs[0].name);
        path_of(t, path, sizeof(path), vf->pci_address, rel);
        write_file(path, vf->netdevs[0].admin_up ? "0x1002\n" : "0x1003\n");
        assert_int_equal(quick(t), 1);
        write_file(path, vf->netdevs[0].admin_up ? "0x1003\n" : "0x1002\n");

        const struct pf_info *pf = pf_with_vfs(t);
        snprintf(rel, sizeof(rel), "net/%s/flags", pf->netdevs[0].name);
        path_of(t, path, sizeof(path), pf->pci_address, rel);
        write_file(path, pf->netdevs[0].admin_up ? "0x1002\n" : "0x1003\n");
        assert_int_equal(quick(t), 0);
        write_file(path, pf->netdevs[0].admin_up ? "0x1003\n" : "0x1002\n");
        assert_int_equal(quick(t), 1);
}

static void test_vf_netdev_gone_or_renamed(void **state)
{
        struct tree *t = *state;
        const struct vf_info *vf = &pf_with_vfs(t)->vfs[1];
        char from[512], to[512], rel[128];

        snprintf(rel, sizeof(rel), "net/%s", vf->netdevs[0].name);
        path_of(t, from, sizeof(from), vf->pci_address, rel);
        path_of(t, to, sizeof(to), vf->pci_address, "net/renamed0");
        assert_int_equal(rename(from, to), 0); /* renamed (or moved into a pod and back) */
        assert_int_equal(quick(t), 0);
        assert_int_equal(rename(to, from), 0);
        assert_int_equal(quick(t), 1);
}

/* Unbinds or binds the device at pci as the kernel does: its own `driver` link and the driver's
 * link to it (bus/pci/drivers/<driver>/<pci>) come and go together. */
static void set_driver(const struct tree *t, const char *pci, const char *driver)
{
        char link[512], target[512], entry[512];
        path_of(t, link, sizeof(link), pci, "driver");
        ssize_t n = readlink(link, target, sizeof(target) - 1);
        if (n > 0) {
                target[n] = '\0';
                const char *old = strrchr(target, '/') + 1;
                snprintf(entry, sizeof(entry), "%s/bus/pci/drivers/%s/%s", t->root, old, pci);
                assert_int_equal(unlink(entry), 0);
                assert_int_equal(unlink(link), 0);
        }
        if (!driver)
                return;
        snprintf(target, sizeof(target), "%s/bus/pci/drivers/%s", t->root, driver);
        mkdir(target, 0755);
        /* absolute targets: the device's link lives in its real directory, not under bus/ */
        snprintf(target, sizeof(target), "%s/bus/pci/drivers/%s", t->root, driver);
        assert_int_equal(symlink(target, link), 0);
        snprintf(entry, sizeof(entry), "%s/bus/pci/drivers/%s/%s", t->root, driver, pci);
        snprintf(target, sizeof(target), "%s/bus/pci/devices/%s", t->root, pci);
        assert_int_equal(symlink(target, entry), 0);
}

static void test_vf_driver_and_numvfs(void **state)
{
        struct tree *t = *state;
        const struct pf_info *pf = pf_with_vfs(t);
        const struct vf_info *vf = &pf->vfs[1];
        char path[512], numvfs[32];

        set_driver(t, vf->pci_address, NULL); /* unbound */
        assert_int_equal(quick(t), 0);
        set_driver(t, vf->pci_address, "vfio-pci"); /* bound to another driver */
        assert_int_equal(quick(t), 0);
        set_driver(t, vf->pci_address, vf->driver);
        assert_int_equal(quick(t), 1);

        path_of(t, path, sizeof(path), pf->pci_address, "sriov_numvfs");
        snprintf(numvfs, sizeof(numvfs), "%d\n", pf->num_vfs);
        write_file(path, "0\n");
        assert_int_equal(quick(t), 0);
        write_file(path, numvfs);
        assert_int_equal(quick(t), 1);
}

/* VFs whose virtfn links do not take the kernel's "../<address>" form are followed through
 * the links, with the same answers. */
static void test_virtfn_links_not_siblings(void **state)
{
        struct tree *t = *state;
        const struct pf_info *pf = pf_with_vfs(t);
        const struct vf_info *last = &pf->vfs[pf->n_vfs - 1];
        char link[512], vf_dir[PATH_MAX], path[PATH_MAX + 64];

        snprintf(link, sizeof(link), "%s/bus/pci/devices/%s/virtfn%d", t->root, pf->pci_address,
                 last->vf_index);
        assert_non_null(realpath(link, vf_dir));
        assert_int_equal(unlink(link), 0);
        assert_int_equal(symlink(vf_dir, link), 0); /* absolute */
        assert_int_equal(quick(t), 1);

        snprintf(path, sizeof(path), "%s/net/%s/mtu", vf_dir, last->netdevs[0].name);
        write_file(path, "9000\n");
        assert_int_equal(quick(t), 0);
        snprintf(link, sizeof(link), "%d\n", last->netdevs[0].mtu);
        write_file(path, link);
        assert_int_equal(quick(t), 1);
        set_driver(t, last->pci_address, NULL);
        assert_int_equal(quick(t), 0);
        set_driver(t, last->pci_address, last->driver);
        assert_int_equal(quick(t), 1);
}

/* A VF that was unbound at discovery: bound since then is a change (its own link is read). */
static void test_unbound_vf_bound(void **state)
{
        struct tree *t = *state;
        const struct pf_info *pf = pf_with_vfs(t);
        char driver[DRIVER_MAX];
        strcpy(driver, pf->vfs[2].driver);

        set_driver(t, pf->vfs[2].pci_address, NULL);
        struct inventory inv = { 0 };
        assert_int_equal(host_discover(&(struct discover_options){ .sysfs_root = t->root }, &inv),
                         0);
        assert_int_equal(host_quick_check(t->root, &inv), 1);
        set_driver(t, pf->vfs[2].pci_address, driver);
        assert_int_equal(host_quick_check(t->root, &inv), 0);
        inventory_done(&inv);
        assert_int_equal(quick(t), 1);
}

static void test_pf_mtu_and_missing_root(void **state)
{
        struct tree *t = *state;
        const struct pf_info *pf = pf_with_vfs(t);
        char path[512], rel[128], old[32];

        snprintf(rel, sizeof(rel), "net/%s/mtu", pf->netdevs[0].name);
        path_of(t, path, sizeof(path), pf->pci_address, rel);
        snprintf(old, sizeof(old), "%d\n", pf->netdevs[0].mtu);
        write_file(path, "1234\n");
        assert_int_equal(quick(t), 0);
        write_file(path, old);
        assert_int_equal(quick(t), 1);

        assert_true(host_quick_check("/nonexistent-sysfs", &t->inv) < 0);
}

/* A VF discovered without its netdev (not ready yet) whose netdev then appears. */
static void test_vf_netdev_appears(void **state)
{
        struct tree *t = *state;
        const struct vf_info *vf = &pf_with_vfs(t)->vfs[2];
        char from[512], to[512], rel[128];
        struct inventory without;

        snprintf(rel, sizeof(rel), "net/%s", vf->netdevs[0].name);
        path_of(t, from, sizeof(from), vf->pci_address, rel);
        snprintf(to, sizeof(to), "%s/aside", t->dir);
        assert_int_equal(rename(from, to), 0);
        assert_int_equal(
            host_discover(&(struct discover_options){ .sysfs_root = t->root }, &without), 0);
        assert_int_equal(host_quick_check(t->root, &without), 1);
        assert_int_equal(rename(to, from), 0);
        assert_int_equal(host_quick_check(t->root, &without), 0);
        inventory_done(&without);
        assert_int_equal(quick(t), 1);
}

/* An rxe device added on a VF's netdev (what `rdma link add` does): an isRdma VF becomes ready. */
static void test_rxe_on_a_vf(void **state)
{
        struct tree *t = *state;
        const struct vf_info *vf = &pf_with_vfs(t)->vfs[1];
        char dir[512], path[600], line[64];

        snprintf(dir, sizeof(dir), "%s/class/infiniband/rxe9", t->root);
        assert_int_equal(mkdir(dir, 0755), 0);
        snprintf(path, sizeof(path), "%s/parent", dir);
        write_file(path, "eno99\n"); /* not ours: ignored */
        assert_int_equal(quick(t), 1);
        snprintf(line, sizeof(line), "%s\n", vf->netdevs[0].name);
        write_file(path, line);
        assert_int_equal(quick(t), 0);
        assert_int_equal(unlink(path), 0);
        assert_int_equal(rmdir(dir), 0);
        assert_int_equal(quick(t), 1);
}

static void test_pf_operstate(void **state)
{
        struct tree *t = *state;
        const struct pf_info *pf = pf_with_vfs(t);
        char path[512], rel[128], old[32];

        snprintf(rel, sizeof(rel), "net/%s/operstate", pf->netdevs[0].name);
        path_of(t, path, sizeof(path), pf->pci_address, rel);
        snprintf(old, sizeof(old), "%s\n", pf->netdevs[0].operstate);
        write_file(path, strcmp(pf->netdevs[0].operstate, "down") ? "down\n" : "up\n");
        assert_int_equal(quick(t), 0);
        write_file(path, old);
        assert_int_equal(quick(t), 1);
}

/* An InfiniBand port leaving ACTIVE decides its PF's VFs' health; without an IPoIB netdev (or on
 * a generated tree) no link event says so, only the periodic check's look at the port. */
static void test_pf_port_state(void **state)
{
        struct tree *t = *state;
        const struct pf_info *pf = NULL;
        char path[512], old[32];

        for (size_t i = 0; i < t->inv.n_pfs && !pf; i++)
                if (t->inv.pfs[i].n_rdma > 0 && t->inv.pfs[i].rdma[0].port_state[0])
                        pf = &t->inv.pfs[i];
        if (!pf) { /* fail() does not return; clang's analyzer does not know */
                fail_msg("the generated tree has no PF with an RDMA port state");
                return;
        }
        snprintf(path, sizeof(path), "%s/class/infiniband/%s/ports/1/state", t->root,
                 pf->rdma[0].name);
        snprintf(old, sizeof(old), "%s\n", pf->rdma[0].port_state);
        write_file(path, "1: DOWN\n");
        assert_int_equal(quick(t), 0);
        write_file(path, old);
        assert_int_equal(quick(t), 1);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_unchanged),
                cmocka_unit_test(test_vf_mtu_and_pf_admin_state),
                cmocka_unit_test(test_vf_netdev_gone_or_renamed),
                cmocka_unit_test(test_vf_driver_and_numvfs),
                cmocka_unit_test(test_unbound_vf_bound),
                cmocka_unit_test(test_virtfn_links_not_siblings),
                cmocka_unit_test(test_pf_mtu_and_missing_root),
                cmocka_unit_test(test_vf_netdev_appears),
                cmocka_unit_test(test_rxe_on_a_vf),
                cmocka_unit_test(test_pf_operstate),
                cmocka_unit_test(test_pf_port_state),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
