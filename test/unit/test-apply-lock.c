/* SPDX-License-Identifier: Apache-2.0 */
/* The agent's VF driver binds and GUID changes (agent/apply.c) take the CNI plugin's node-wide
 * lock around re-binds and RDMA moves (cni_move_lock in the plugin's records directory): while
 * a pod's ADD holds it, apply_plan() waits, and goes on once it is released. The actions then
 * run against a sysfs root and a PF that do not exist (they fail with ENODEV in the report): the
 * test only needs to see when they start. */
#include <errno.h>
#include <ftw.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "apply.h"
#include "cni/state.h"
#include "host/driver-bind.h"
#include "host/netlink-link.h"
#include "host/sriov-numvfs.h"
#include "model/inventory.h"
#include "plan/plan.h"
#include "util/log.h"

static char dir[64];

struct run {
        struct plan plan;
        struct apply_report report;
        atomic_bool done;
};

static void *run_apply(void *arg)
{
        struct run *r = arg;
        const struct apply_options opts = { .sysfs_root = "/nonexistent", .cni_state_dir = dir };
        const struct inventory inv = { 0 };
        assert_int_equal(apply_plan(&opts, &r->plan, &inv, &r->report), 0);
        atomic_store(&r->done, true);
        return NULL;
}

static int setup(void **state)
{
        (void)state;
        snprintf(dir, sizeof(dir), "/tmp/test-apply-lock.XXXXXX");
        assert_non_null(mkdtemp(dir));
        return 0;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
        (void)st, (void)flag, (void)ftw;
        return remove(path);
}

static int teardown(void **state)
{
        (void)state;
        (void)nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
        return 0;
}

static void held_then_released(enum action_kind kind)
{
        struct action a = { .kind = kind, .vf_index = 1, .guid = 0x0200000000aa000aULL };
        snprintf(a.pf, sizeof(a.pf), "0000:3b:00.0");
        snprintf(a.pf_name, sizeof(a.pf_name), "nosuchpf0");
        snprintf(a.vf_address, sizeof(a.vf_address), "0000:3b:00.2");
        struct run r = { .plan = { .actions = &a, .n_actions = 1 } };
        /* a pod's ADD moving an RDMA device */
        int lock = cni_move_lock(dir, 1000);
        assert_true(lock >= 0);
        pthread_t t;
        assert_int_equal(pthread_create(&t, NULL, run_apply, &r), 0);
        /* not a speed bound: an apply that took no lock would be done long before */
        nanosleep(&(struct timespec){ .tv_nsec = 300 * 1000 * 1000 }, NULL);
        assert_false(atomic_load(&r.done));
        close(lock);
        assert_int_equal(pthread_join(t, NULL), 0);
        assert_true(atomic_load(&r.done));
        /* it ran after the release (and failed: nothing of it exists here) */
        assert_int_equal(r.report.n_pfs, 1);
        assert_true(r.report.pfs[0].error < 0);
        apply_report_done(&r.report);
}

static void test_driver_bind_waits_for_the_plugins_lock(void **state)
{
        (void)state;
        held_then_released(ACTION_BIND_DRIVER);
}

static void test_guid_change_waits_for_the_plugins_lock(void **state)
{
        (void)state;
        held_then_released(ACTION_SET_VF_GUID);
}

/* A pod's ADD takes the VF between the plan and the apply: it holds the node's lock while it
 * writes its records (the plan had the VF free). The agent's re-bind or GUID change then waits
 * for the lock and leaves the VF alone: skipped, not failed (the NodeState stays out of Failed
 * and the next plan sees the attachment). Without the check the action runs and fails here
 * (nothing of the host exists), as it would overwrite the pod's GUID on a real node. */
static void taken_between_plan_and_apply(enum action_kind kind)
{
        struct action a = { .kind = kind, .vf_index = 1, .guid = 0x0200000000aa000aULL };
        snprintf(a.pf, sizeof(a.pf), "0000:3b:00.0");
        snprintf(a.pf_name, sizeof(a.pf_name), "nosuchpf0");
        snprintf(a.vf_address, sizeof(a.vf_address), "0000:3b:00.2");
        struct run r = { .plan = { .actions = &a, .n_actions = 1 } };
        int lock = cni_move_lock(dir, 1000);
        assert_true(lock >= 0);
        pthread_t t;
        assert_int_equal(pthread_create(&t, NULL, run_apply, &r), 0);
        /* the ADD's records, as it writes them before its first change */
        const char *json = "{\"cniVersion\":\"1.0.0\",\"name\":\"ib\",\"type\":\"ib-sriov\","
                           "\"deviceID\":\"0000:3b:00.2\"}";
        struct cni_conf conf;
        struct cni_error e = { 0 };
        assert_int_equal(cni_conf_parse(json, strlen(json), NULL, &conf, &e), 0);
        struct cni_cache rec = { .vfid = 1, .spoofchk = -1, .trust = -1, .link_state = -1 };
        snprintf(rec.device_id, sizeof(rec.device_id), "0000:3b:00.2");
        snprintf(rec.type, sizeof(rec.type), "ib-sriov");
        snprintf(rec.guid, sizeof(rec.guid), "02:aa:00:00:00:00:00:01");
        assert_int_equal(cni_cache_write(dir, "c0ffee-net1", &conf, &rec), 0);
        cni_conf_done(&conf);
        assert_int_equal(cni_pci_save(dir, "0000:3b:00.2", "/var/run/netns/cni-pod-a"), 0);
        close(lock);
        assert_int_equal(pthread_join(t, NULL), 0);
        assert_int_equal(r.report.n_pfs, 1);
        assert_int_equal(r.report.pfs[0].error, 0);
        assert_int_equal(apply_report_n_failed(&r.report), 0);
        assert_int_equal(r.report.n_done, 0);
        assert_int_equal(r.report.n_skipped, 1);
        apply_report_done(&r.report);

        /* once the attachment ended (its DEL released the VF), the action runs again */
        assert_int_equal(cni_pci_release(dir, "0000:3b:00.2"), 0);
        r = (struct run){ .plan = { .actions = &a, .n_actions = 1 } };
        run_apply(&r);
        assert_true(r.report.pfs[0].error < 0);
        assert_int_equal(r.report.n_skipped, 0);
        apply_report_done(&r.report);
}

static void test_driver_bind_leaves_a_vf_a_pod_took(void **state)
{
        (void)state;
        taken_between_plan_and_apply(ACTION_BIND_DRIVER);
}

static void test_guid_change_leaves_a_vf_a_pod_took(void **state)
{
        (void)state;
        taken_between_plan_and_apply(ACTION_SET_VF_GUID);
}

int main(void)
{
        log_setup(LOG_TARGET_STDERR, LOG_DEBUG);
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_driver_bind_waits_for_the_plugins_lock, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_guid_change_waits_for_the_plugins_lock, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_driver_bind_leaves_a_vf_a_pod_took, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_guid_change_leaves_a_vf_a_pod_took, setup,
                                                teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
