/* SPDX-License-Identifier: Apache-2.0 */
/* --rdma-mode now and at the next boot (agent/rdma-boot.c): the live switch against the netlink
 * double (netlink-double.h answers RDMA_NLDEV_CMD_SYS_GET/SET as the kernel does, EBUSY while
 * another network namespace exists), the next boot from a modprobe.d directory under a
 * temporary root. A reboot is simulated as the kernel does it: ib_core loads with the mode the
 * modprobe configuration says (read back with rdma_next_boot_read(), the files as kmod reads
 * them), no other namespace exists yet, and the agent starts again. */
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "host/rdma-netlink.h"
#include "netlink-double.h"
#include "rdma-boot.h"
#include "util/fileio.h"
#include "util/macro.h"

#define SHARED    HOST_RDMA_NETNS_SHARED
#define EXCLUSIVE HOST_RDMA_NETNS_EXCLUSIVE

struct fixture {
        struct nldouble d;
        struct nl_sock *sk;
        char root[64];
        char dir[128]; /* <root>/etc/modprobe.d, missing until written */
        char ours[256];
};

static int setup(void **state)
{
        struct fixture *f = calloc(1, sizeof(*f));
        nldouble_init(&f->d);
        f->sk = nldouble_socket();
        snprintf(f->root, sizeof(f->root), "/tmp/sriov-test-rdma-boot-XXXXXX");
        assert_non_null(mkdtemp(f->root));
        snprintf(f->dir, sizeof(f->dir), "%s/etc", f->root);
        assert_int_equal(mkdir(f->dir, 0755), 0);
        snprintf(f->dir, sizeof(f->dir), "%s/etc/modprobe.d", f->root);
        snprintf(f->ours, sizeof(f->ours), "%s/" HOST_RDMA_MODPROBE_FILE, f->dir);
        *state = f;
        return 0;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
        (void)st, (void)flag, (void)ftw;
        return remove(path);
}

static int teardown(void **state)
{
        struct fixture *f = *state;
        nl_socket_free(f->sk);
        nldouble_done(&f->d);
        assert_int_equal(nftw(f->root, remove_entry, 16, FTW_DEPTH | FTW_PHYS), 0);
        free(f);
        return 0;
}

/* The node reboots: ib_core loads with what the modprobe configuration says, and the pods'
 * namespaces are gone until the kubelet starts them again. */
static void reboot(struct fixture *f)
{
        struct rdma_next_boot next;
        assert_int_equal(rdma_next_boot_read(f->dir, NULL, &next), 0);
        f->d.netns_mode = (uint8_t)next.mode;
        f->d.other_netns_exists = false;
}

static void write_conf(const struct fixture *f, const char *name, const char *text)
{
        char path[PATH_MAX];
        (void)mkdir(f->dir, 0755);
        snprintf(path, sizeof(path), "%s/%s", f->dir, name);
        assert_int_equal(write_file_atomic(path, text, strlen(text), 0644), 0);
}

/* The NodeState's rdmaMode as a user reads it (kubectl get sriovnetworknodestate -o yaml, the
 * status-extra annotation) after the outcome o of wanting `wanted`. */
static void assert_status(const struct rdma_mode_outcome *o, int wanted, const char *live,
                          const char *next_boot, const char *next_boot_from)
{
        json_auto_t *j = rdma_mode_status_json(o->live, o->have_next_boot ? o->next_boot.mode : -1,
                                               o->next_boot.source, wanted);
        assert_non_null(j);
        assert_string_equal(json_string_value(json_object_get(j, "live")), live);
        assert_string_equal(json_string_value(json_object_get(j, "nextBoot")), next_boot);
        assert_string_equal(json_string_value(json_object_get(j, "nextBootFrom")), next_boot_from);
        assert_string_equal(json_string_value(json_object_get(j, "wanted")),
                            host_rdma_netns_mode_to_string(wanted));
}

/* A live switch to exclusive: the next boot must not come back shared. */
static void test_live_switch_to_exclusive_survives_a_reboot(void **state)
{
        struct fixture *f = *state;
        struct rdma_mode_outcome o;
        char msg[768];

        rdma_mode_bring_about(f->sk, EXCLUSIVE, true, f->dir, &o);
        assert_int_equal(o.live, EXCLUSIVE);
        assert_true(o.changed);
        assert_int_equal(o.live_error, 0);
        assert_true(o.have_next_boot);
        assert_int_equal(o.next_boot.mode, EXCLUSIVE);
        assert_string_equal(o.next_boot.source, f->ours);
        rdma_mode_reboot_message(EXCLUSIVE, &o, msg, sizeof(msg));
        assert_string_equal(msg, ""); /* nothing to tell: it is live */
        assert_status(&o, EXCLUSIVE, "exclusive", "exclusive", f->ours);

        reboot(f);
        assert_int_equal(f->d.netns_mode, EXCLUSIVE);
        /* the agent starts again: nothing to change now or for the boot after */
        rdma_mode_bring_about(f->sk, EXCLUSIVE, true, f->dir, &o);
        assert_int_equal(o.live, EXCLUSIVE);
        assert_false(o.changed);
        assert_int_equal(o.next_boot.mode, EXCLUSIVE);
}

/* An old exclusive file and a live switch to shared: the file goes, the next boot is shared. */
static void test_live_switch_to_shared_removes_the_old_file(void **state)
{
        struct fixture *f = *state;
        struct rdma_mode_outcome o;

        rdma_mode_bring_about(f->sk, EXCLUSIVE, true, f->dir, &o);
        reboot(f);
        assert_int_equal(f->d.netns_mode, EXCLUSIVE);

        rdma_mode_bring_about(f->sk, SHARED, true, f->dir, &o);
        assert_int_equal(o.live, SHARED);
        assert_true(o.changed);
        assert_int_equal(o.next_boot.mode, SHARED);
        assert_string_equal(o.next_boot.source, ""); /* the kernel's default */
        assert_int_equal(access(f->ours, F_OK), -1);

        reboot(f);
        assert_int_equal(f->d.netns_mode, SHARED);
}

/* EBUSY (a pod's namespace): the mode is kept now, written for the next boot, and the notice
 * says both; after the reboot the mode is live. Either way. */
static void test_busy_kernel_gets_the_mode_at_the_next_boot(void **state)
{
        struct fixture *f = *state;
        struct rdma_mode_outcome o;
        char msg[768];

        f->d.other_netns_exists = true;
        rdma_mode_bring_about(f->sk, EXCLUSIVE, true, f->dir, &o);
        assert_int_equal(o.live, SHARED);
        assert_int_equal(o.live_error, -EBUSY);
        assert_false(o.changed);
        assert_int_equal(o.next_boot.mode, EXCLUSIVE);
        rdma_mode_reboot_message(EXCLUSIVE, &o, msg, sizeof(msg));
        print_message("  %s\n", msg);
        assert_non_null(strstr(msg, "RDMA network namespace mode exclusive needs a reboot"));
        assert_non_null(strstr(msg, "the kernel keeps shared while other network namespaces"));
        assert_non_null(strstr(msg, f->ours));
        /* the NodeState says the kernel keeps shared and the next boot loads exclusive */
        assert_status(&o, EXCLUSIVE, "shared", "exclusive", f->ours);
        reboot(f);
        assert_int_equal(f->d.netns_mode, EXCLUSIVE);

        /* and back, busy again: the file goes, the next boot loads the default */
        f->d.other_netns_exists = true;
        rdma_mode_bring_about(f->sk, SHARED, true, f->dir, &o);
        assert_int_equal(o.live, EXCLUSIVE);
        assert_int_equal(o.next_boot.mode, SHARED);
        assert_int_equal(access(f->ours, F_OK), -1);
        rdma_mode_reboot_message(SHARED, &o, msg, sizeof(msg));
        assert_non_null(strstr(msg, "the next boot loads shared (the kernel's default"));
        assert_status(&o, SHARED, "exclusive", "shared", "the kernel's default");
        reboot(f);
        assert_int_equal(f->d.netns_mode, SHARED);
}

/* Without --rdma-mode, or with persist off (a dry run): nothing is written, what the next boot
 * loads is still read (and reported). */
static void test_read_only(void **state)
{
        struct fixture *f = *state;
        struct rdma_mode_outcome o;

        write_conf(f, "mlnx.conf", "options ib_core netns_mode=0\n");
        rdma_mode_bring_about(f->sk, -1, true, f->dir, &o);
        assert_int_equal(o.live, SHARED);
        assert_false(o.changed);
        assert_int_equal(o.next_boot.mode, EXCLUSIVE);
        /* reported without --rdma-mode too: another tool's file decides the next boot */
        json_auto_t *j = rdma_mode_status_json(o.live, o.next_boot.mode, o.next_boot.source, -1);
        assert_non_null(j);
        assert_string_equal(json_string_value(json_object_get(j, "live")), "shared");
        assert_string_equal(json_string_value(json_object_get(j, "nextBoot")), "exclusive");
        assert_non_null(strstr(json_string_value(json_object_get(j, "nextBootFrom")), "mlnx.conf"));
        assert_null(json_object_get(j, "wanted"));
        rdma_mode_bring_about(f->sk, SHARED, false, f->dir, &o);
        assert_int_equal(o.next_boot.mode, EXCLUSIVE);
        assert_int_equal(access(f->ours, F_OK), -1);
}

/* Another file deciding: ours is written only when needed, and one that sorts after ours and
 * overrides it is named. */
static void test_other_files(void **state)
{
        struct fixture *f = *state;
        struct rdma_mode_outcome o;
        struct rdma_next_boot next;
        char msg[768];

        /* an operator's exclusive file: shared needs our option (it sorts after mlnx.conf) */
        write_conf(f, "mlnx.conf", "# comment\noptions ib-core \\\n  netns_mode=N foo=1\n");
        assert_int_equal(rdma_next_boot_read(f->dir, NULL, &next), 0);
        assert_int_equal(next.mode, EXCLUSIVE);
        rdma_mode_bring_about(f->sk, SHARED, true, f->dir, &o);
        assert_int_equal(o.next_boot.mode, SHARED);
        assert_string_equal(o.next_boot.source, f->ours);
        _cleanup_free_ char *text = NULL;
        size_t size;
        assert_int_equal(read_full_file(f->ours, 4096, &text, &size), 0);
        assert_non_null(strstr(text, "\noptions ib_core netns_mode=1\n"));
        /* the same wish again: exclusive now, the operator's file does it, ours goes */
        rdma_mode_bring_about(f->sk, EXCLUSIVE, true, f->dir, &o);
        assert_int_equal(o.next_boot.mode, EXCLUSIVE);
        assert_int_equal(access(f->ours, F_OK), -1);

        /* a file sorting after ours overrides it: reported, not hidden */
        write_conf(f, "zz-rdma.conf", "options ib_core netns_mode=1\n");
        f->d.other_netns_exists = true;
        f->d.netns_mode = SHARED;
        rdma_mode_bring_about(f->sk, EXCLUSIVE, true, f->dir, &o);
        assert_int_equal(o.next_boot.mode, SHARED);
        rdma_mode_reboot_message(EXCLUSIVE, &o, msg, sizeof(msg));
        print_message("  %s\n", msg);
        assert_non_null(strstr(msg, "cannot be brought about"));
        assert_non_null(strstr(msg, "zz-rdma.conf"));

        /* kmod's spellings: no value is true; y/n, on/off, quoted; other modules and files
         * without .conf do not count; a value that is no bool is ignored */
        const struct {
                const char *text;
                int mode;
        } cases[] = {
                { "options ib_core netns_mode\n", SHARED },
                { "options ib_core netns_mode=off\n", EXCLUSIVE },
                { "options ib_core netns-mode=\"0\"\n", EXCLUSIVE },
                { "options ib_core netns_mode=n netns_mode=Y\n", SHARED },
                { "options ib_uverbs netns_mode=0\n", SHARED },
                { "#options ib_core netns_mode=0\n", SHARED },
                { "options ib_core netns_mode=maybe\n", SHARED },
                { "options ib_core netns_mode=0", EXCLUSIVE }, /* no final newline */
        };
        assert_int_equal(unlink(f->ours) == 0 || errno == ENOENT, 1);
        char path[PATH_MAX];
        snprintf(path, sizeof(path), "%s/zz-rdma.conf", f->dir);
        unlink(path);
        snprintf(path, sizeof(path), "%s/mlnx.conf", f->dir);
        unlink(path);
        write_conf(f, "rdma.conf.bak", "options ib_core netns_mode=0\n");
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                write_conf(f, "a.conf", cases[i].text);
                assert_int_equal(rdma_next_boot_read(f->dir, NULL, &next), 0);
                if (next.mode != cases[i].mode)
                        fail_msg("\"%s\": mode %d, %d expected", cases[i].text, next.mode,
                                 cases[i].mode);
        }
        /* no directory at all: the default */
        char missing[PATH_MAX];
        snprintf(missing, sizeof(missing), "%s/none", f->root);
        assert_int_equal(rdma_next_boot_read(missing, NULL, &next), 0);
        assert_int_equal(next.mode, SHARED);
        assert_string_equal(next.source, "");
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_live_switch_to_exclusive_survives_a_reboot,
                                                setup, teardown),
                cmocka_unit_test_setup_teardown(test_live_switch_to_shared_removes_the_old_file,
                                                setup, teardown),
                cmocka_unit_test_setup_teardown(test_busy_kernel_gets_the_mode_at_the_next_boot,
                                                setup, teardown),
                cmocka_unit_test_setup_teardown(test_read_only, setup, teardown),
                cmocka_unit_test_setup_teardown(test_other_files, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
