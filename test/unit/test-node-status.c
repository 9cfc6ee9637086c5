/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for the NodeState's syncStatus and lastSyncError (plan/node-status.h), what a user
 * reads with `kubectl get sriovnetworknodestates -o yaml`: a failed PF gives Failed naming the
 * PF and the error; a change held back because pods use the VFs gives InProgress naming the
 * PF; Succeeded only when nothing failed and nothing is held; a failure that persists stays
 * Failed; and the Warning Events posted on the NodeState. Plans, held changes and frozen PFs come
 * from the real planner, guard and report. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "plan-fixture.h"
#include "plan/freeze.h"
#include "plan/node-status.h"
#include "plan/vf-usage.h"
#include "util/macro.h"

#define PF_A "0000:3b:00.0"
#define PF_B "0000:5e:00.0"
#define EBUSY_MSG                                                                                  \
        "PF " PF_A ": set-num-vfs 6: Device or resource busy: VFs are still bound to a driver"
#define RDMA "/etc/sriov-agent/rdma-shared.json: configList[0].resourceName: missing"

static const struct guarded_plan nothing_held = { 0 };

static void set_message(struct apply_report *r, const char *pci, const char *message)
{
        for (size_t i = 0; i < r->n_pfs; i++)
                if (strcmp(r->pfs[i].pf, pci) == 0)
                        snprintf(r->pfs[i].message, sizeof(r->pfs[i].message), "%s", message);
}

static void show(const struct node_status *s)
{
        print_message("    %s: \"%s\"\n", node_sync_status_to_string(s->sync), s->message);
}

/* PF A with 4 VFs is the agent's and the policy now wants 6 (re-creates every VF); PF B gets
 * its first 2. A pod holds A's VF 0000:3b:02.1, so the guard holds A back. */
struct node {
        struct inventory inv;
        struct desired_state d;
        struct applied_state prev;
        struct plan p;
        struct vf_usage in_use;
        struct guarded_plan g;
};

static void node_setup(struct node *n, bool allow_disruption)
{
        *n = (struct node){ 0 };
        fake_add_pf(&n->inv, PF_A, "ens1f0", 0x8086, 0x1592, 8, 4, 1500, "iavf");
        fake_add_pf(&n->inv, PF_B, "ens2f0", 0x8086, 0x1592, 8, 0, 1500, NULL);
        fx_owned(&n->prev, PF_A, 4, 0, "a");
        fx_want(&n->d, PF_A, "ens1f0", 6, 0, fx_group("a", 0, 5));
        fx_want(&n->d, PF_B, "ens2f0", 2, 0, fx_group("b", 0, 1));
        assert_int_equal(plan_build(&n->d, &n->inv, &n->prev, &n->p), 0);
        assert_int_equal(vf_usage_add(&n->in_use, "0000:3b:02.1"), 0);
        assert_int_equal(
            vf_usage_guard(&n->p, &n->inv, &n->prev, &n->in_use, allow_disruption, &n->g), 0);
        assert_int_equal(n->g.n_held, 1);
}

static void node_done(struct node *n)
{
        guarded_plan_done(&n->g);
        vf_usage_done(&n->in_use);
        plan_done(&n->p);
        applied_state_done(&n->prev);
        desired_state_done(&n->d);
        inventory_done(&n->inv);
}

/* A's set-num-vfs failed, B was applied: Failed, lastSyncError is A's error and only A's. */
static void test_failed_pf(void **state)
{
        struct apply_report rep = { 0 };
        struct node_status s;

        fx_result(&rep, PF_A, 0, -EBUSY, ACTION_SET_NUM_VFS);
        set_message(&rep, PF_A, EBUSY_MSG);
        fx_result(&rep, PF_B, 3, 0, 0);
        node_status_decide(&rep, NULL, &nothing_held, NULL, &s);
        show(&s);
        assert_int_equal(s.sync, NODE_SYNC_FAILED);
        assert_string_equal(node_sync_status_to_string(s.sync), "Failed");
        assert_string_equal(s.message, EBUSY_MSG);
        assert_null(strstr(s.message, PF_B));
        apply_report_done(&rep);
}

/* Every failure is listed, in the order: apply errors, PFs the plan leaves alone (firmware),
 * the RDMA shared config. The firmware one comes from the real planner (8 VFs at most). */
static void test_every_failure_listed(void **state)
{
        struct inventory inv = { 0 };
        struct desired_state d = { 0 };
        struct plan p = { 0 };
        struct apply_report rep = { 0 };
        struct node_status s;

        fake_add_pf(&inv, PF_B, "ens2f0", 0x8086, 0x1592, 8, 0, 1500, NULL);
        fx_want(&d, PF_B, "ens2f0", 16, 0, fx_group("b", 0, 15));
        assert_int_equal(plan_build(&d, &inv, NULL, &p), 0);
        assert_int_equal(p.n_problems, 1);
        assert_true(p.problems[0].pf_failed);
        fx_result(&rep, PF_A, 0, -EBUSY, ACTION_SET_NUM_VFS);
        set_message(&rep, PF_A, EBUSY_MSG);

        node_status_decide(&rep, &p, &nothing_held, RDMA, &s);
        show(&s);
        assert_int_equal(s.sync, NODE_SYNC_FAILED);
        char want[NODE_STATUS_MESSAGE_MAX];
        snprintf(want, sizeof(want), "%s; PF %s: %s; RDMA shared config not used: %s", EBUSY_MSG,
                 PF_B, p.problems[0].message, RDMA);
        assert_string_equal(s.message, want);
        assert_non_null(strstr(s.message, "16 VFs wanted but sriov_totalvfs is 8"));

        /* each one alone is a failure too */
        struct apply_report none = { 0 };
        node_status_decide(&none, &p, &nothing_held, NULL, &s);
        assert_int_equal(s.sync, NODE_SYNC_FAILED);
        assert_non_null(strstr(s.message, "PF " PF_B ": 16 VFs wanted"));
        node_status_decide(&none, NULL, &nothing_held, RDMA, &s);
        assert_int_equal(s.sync, NODE_SYNC_FAILED);
        assert_string_equal(s.message, "RDMA shared config not used: " RDMA);

        apply_report_done(&rep);
        plan_done(&p);
        desired_state_done(&d);
        inventory_done(&inv);
}

/* A pod uses a VF of A: A's change is held, InProgress, and lastSyncError names A, its netdev,
 * the change and the VF in use. */
static void test_held_change_in_progress(void **state)
{
        struct node n;
        struct apply_report rep = { 0 };
        struct node_status s;

        node_setup(&n, false);
        fx_result(&rep, PF_B, 3, 0, 0); /* B went ahead */
        node_status_decide(&rep, &n.p, &n.g, NULL, &s);
        show(&s);
        assert_int_equal(s.sync, NODE_SYNC_IN_PROGRESS);
        assert_string_equal(node_sync_status_to_string(s.sync), "InProgress");
        assert_non_null(strstr(s.message, "held back until the VFs are free: " PF_A " (ens1f0)"));
        assert_non_null(strstr(s.message, "set-num-vfs"));
        assert_non_null(strstr(s.message, "0000:3b:02.1"));
        assert_null(strstr(s.message, PF_B));
        apply_report_done(&rep);
        node_done(&n);
}

/* --allow-disruption: nothing is held (the same reasons are only warnings), so the apply's
 * outcome decides. */
static void test_allow_disruption_not_held(void **state)
{
        struct node n;
        struct apply_report rep = { 0 };
        struct node_status s;

        node_setup(&n, true);
        assert_true(n.g.passed_through);
        fx_result(&rep, PF_A, 2, 0, 0);
        fx_result(&rep, PF_B, 3, 0, 0);
        node_status_decide(&rep, &n.p, &n.g, NULL, &s);
        assert_int_equal(s.sync, NODE_SYNC_SUCCEEDED);
        assert_string_equal(s.message, "");
        apply_report_done(&rep);
        node_done(&n);
}

/* A held change never hides a failure: B failed while A is held, Failed with B's error. */
static void test_failure_not_hidden_by_held_change(void **state)
{
        struct node n;
        struct apply_report rep = { 0 };
        struct node_status s;

        node_setup(&n, false);
        fx_result(&rep, PF_B, 0, -EIO, ACTION_SET_NUM_VFS);
        set_message(&rep, PF_B, "PF " PF_B ": set-num-vfs 2: Input/output error");
        node_status_decide(&rep, &n.p, &n.g, NULL, &s);
        show(&s);
        assert_int_equal(s.sync, NODE_SYNC_FAILED);
        assert_string_equal(s.message, "PF " PF_B ": set-num-vfs 2: Input/output error");
        apply_report_done(&rep);
        node_done(&n);
}

/* Succeeded, lastSyncError "", only when nothing failed and nothing is held: an apply that
 * went through, or nothing to apply; a plan problem that does not fail its PF (a warning in the
 * journal) does not change it. */
static void test_succeeded_only_when_nothing_left(void **state)
{
        struct apply_report rep = { 0 }, none = { 0 };
        struct plan p = { 0 };
        struct plan_problem warning = { .pf = PF_B, .message = "desired PF not found" };
        struct node_status s;

        fx_result(&rep, PF_A, 3, 0, 0);
        fx_result(&rep, PF_B, 1, 0, 0);
        node_status_decide(&rep, NULL, &nothing_held, NULL, &s);
        assert_int_equal(s.sync, NODE_SYNC_SUCCEEDED);
        assert_string_equal(node_sync_status_to_string(s.sync), "Succeeded");
        assert_string_equal(s.message, "");
        p.problems = &warning;
        p.n_problems = 1;
        node_status_decide(&none, &p, &nothing_held, NULL, &s);
        assert_int_equal(s.sync, NODE_SYNC_SUCCEEDED);
        assert_string_equal(s.message, "");
}

/* A failure that persists is Failed on every reconcile, also on one with nothing left to apply:
 * a PF frozen by an unusable state record gets no action (so no apply report line of its
 * own) and is still Failed, naming the PF and the file's fault, until the file is fixed. */
static void test_failure_persists(void **state)
{
        struct inventory inv = { 0 };
        struct desired_state d = { 0 };
        struct applied_state prev = { 0 };
        struct node_status s;

        fake_add_pf(&inv, PF_A, "ens1f0", 0x8086, 0x1592, 8, 0, 1500, NULL);
        fx_want(&d, PF_A, "ens1f0", 4, 0, fx_group("a", 0, 3));
        prev.bad = calloc(1, sizeof(*prev.bad));
        assert_non_null(prev.bad);
        prev.n_bad = 1;
        snprintf(prev.bad[0].pci_address, sizeof(prev.bad[0].pci_address), PF_A);
        snprintf(prev.bad[0].message, sizeof(prev.bad[0].message),
                 "/var/lib/sriov-agent/%s.json: not JSON: line 1: unexpected token", PF_A);

        for (int reconcile = 0; reconcile < 3; reconcile++) {
                struct plan p = { 0 };
                struct apply_report rep = { 0 };

                assert_int_equal(plan_build(&d, &inv, &prev, &p), 0);
                assert_int_equal(plan_freeze_bad_records(&p, &prev), 0);
                assert_int_equal(p.n_actions, 0); /* converged: nothing applied */
                assert_int_equal(apply_report_add_frozen(&rep, &prev), 0);
                node_status_decide(&rep, &p, &nothing_held, NULL, &s);
                if (reconcile == 0)
                        show(&s);
                assert_int_equal(s.sync, NODE_SYNC_FAILED);
                assert_non_null(strstr(s.message, "PF " PF_A ": state record unusable"));
                assert_non_null(strstr(s.message, "not JSON: line 1"));
                apply_report_done(&rep);
                plan_done(&p);
        }
        /* fixed (the record removed): nothing left, Succeeded */
        applied_state_done(&prev);
        struct plan p = { 0 };
        struct apply_report rep = { 0 };
        assert_int_equal(plan_build(&d, &inv, &prev, &p), 0);
        assert_int_equal(plan_freeze_bad_records(&p, &prev), 0);
        fx_result(&rep, PF_A, p.n_actions, 0, 0);
        node_status_decide(&rep, &p, &nothing_held, NULL, &s);
        assert_int_equal(s.sync, NODE_SYNC_SUCCEEDED);
        apply_report_done(&rep);
        plan_done(&p);
        desired_state_done(&d);
        inventory_done(&inv);
}

/* Many failures: lastSyncError is cut, not overflowed, and starts with the first. */
static void test_message_cut(void **state)
{
        struct apply_report rep = { 0 };
        struct node_status s;
        char msg[500];

        memset(msg, 'x', sizeof(msg) - 1);
        msg[sizeof(msg) - 1] = '\0';
        for (int i = 0; i < 10; i++) {
                char pci[PCI_ADDR_MAX];
                snprintf(pci, sizeof(pci), "0000:%02x:00.0", 0x10 + i);
                fx_result(&rep, pci, 0, -EIO, ACTION_SET_NUM_VFS);
                memcpy(msg, pci, strlen(pci));
                set_message(&rep, pci, msg);
        }
        node_status_decide(&rep, NULL, &nothing_held, RDMA, &s);
        assert_int_equal(s.sync, NODE_SYNC_FAILED);
        assert_int_equal(strlen(s.message), NODE_STATUS_MESSAGE_MAX - 1);
        assert_memory_equal(s.message, "0000:10:00.0xxx", 15);
        assert_non_null(strstr(s.message, "; 0000:13:00.0xxx"));
        apply_report_done(&rep);
}

/* DisruptionHeld names the held PF, on every reconcile that holds it; none with
 * --allow-disruption. */
static void test_disruption_held_events(void **state)
{
        struct node n;
        struct node_events e = { 0 };

        node_setup(&n, false);
        for (int reconcile = 0; reconcile < 2; reconcile++) {
                assert_int_equal(node_events_decide(&n.g, NULL, NULL, &e), 0);
                assert_int_equal(e.n_events, 1);
                assert_string_equal(e.events[0].reason, "DisruptionHeld");
                assert_string_equal(e.events[0].message, n.g.held[0].reason);
                assert_non_null(strstr(e.events[0].message, PF_A " (ens1f0)"));
                node_events_done(&e);
        }
        node_done(&n);

        node_setup(&n, true);
        assert_int_equal(node_events_decide(&n.g, NULL, NULL, &e), 0);
        assert_int_equal(e.n_events, 0);
        node_events_done(&e);
        node_done(&n);
}

/* InvalidRdmaSharedConfig once per error: not again while the same error stays, again when it
 * changes; none without one. */
static void test_rdma_event_once_per_error(void **state)
{
        struct node_events e = { 0 };

        assert_int_equal(node_events_decide(&nothing_held, RDMA, NULL, &e), 0);
        assert_int_equal(e.n_events, 1);
        assert_string_equal(e.events[0].reason, "InvalidRdmaSharedConfig");
        assert_string_equal(e.events[0].message, RDMA);
        node_events_done(&e);
        assert_int_equal(node_events_decide(&nothing_held, RDMA, RDMA, &e), 0);
        assert_int_equal(e.n_events, 0);
        node_events_done(&e);
        assert_int_equal(node_events_decide(&nothing_held, RDMA, "an older error", &e), 0);
        assert_int_equal(e.n_events, 1);
        assert_string_equal(e.events[0].message, RDMA);
        node_events_done(&e);
        assert_int_equal(node_events_decide(&nothing_held, NULL, RDMA, &e), 0);
        assert_int_equal(e.n_events, 0);
        node_events_done(&e);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_failed_pf),
                cmocka_unit_test(test_every_failure_listed),
                cmocka_unit_test(test_held_change_in_progress),
                cmocka_unit_test(test_allow_disruption_not_held),
                cmocka_unit_test(test_failure_not_hidden_by_held_change),
                cmocka_unit_test(test_succeeded_only_when_nothing_left),
                cmocka_unit_test(test_failure_persists),
                cmocka_unit_test(test_message_cut),
                cmocka_unit_test(test_disruption_held_events),
                cmocka_unit_test(test_rdma_event_once_per_error),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
