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

/* A reconcile that ran to its end, not a dry run. */
static void decide(const struct apply_report *applied, const struct plan *plan,
                   const struct guarded_plan *guarded, const char *rdma_shared_error,
                   struct node_status *ret)
{
        node_status_decide(
            &(const struct node_status_facts){
                .applied = applied,
                .plan = plan,
                .guarded = guarded,
                .rdma_shared_error = rdma_shared_error,
            },
            ret);
}

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

/* The plan as the next round makes it once pf's changes are applied: without its actions. */
static void applied_pf(struct plan *p, const char *pf)
{
        size_t k = 0;
        for (size_t i = 0; i < p->n_actions; i++)
                if (strcmp(p->actions[i].pf, pf) != 0)
                        p->actions[k++] = p->actions[i];
        p->n_actions = k;
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
        decide(&rep, NULL, &nothing_held, NULL, &s);
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

        decide(&rep, &p, &nothing_held, RDMA, &s);
        show(&s);
        assert_int_equal(s.sync, NODE_SYNC_FAILED);
        char want[NODE_STATUS_MESSAGE_MAX];
        snprintf(want, sizeof(want), "%s; PF %s: %s; RDMA shared config not used: %s", EBUSY_MSG,
                 PF_B, p.problems[0].message, RDMA);
        assert_string_equal(s.message, want);
        assert_non_null(strstr(s.message, "16 VFs wanted but sriov_totalvfs is 8"));

        /* each one alone is a failure too */
        struct apply_report none = { 0 };
        decide(&none, &p, &nothing_held, NULL, &s);
        assert_int_equal(s.sync, NODE_SYNC_FAILED);
        assert_non_null(strstr(s.message, "PF " PF_B ": 16 VFs wanted"));
        decide(&none, NULL, &nothing_held, RDMA, &s);
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
        applied_pf(&n.p, PF_B);         /* the next round's plan: only A's held change */
        decide(&rep, &n.p, &n.g, NULL, &s);
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
        applied_pf(&n.p, PF_A); /* the next round's plan: empty */
        applied_pf(&n.p, PF_B);
        decide(&rep, &n.p, &n.g, NULL, &s);
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
        decide(&rep, &n.p, &n.g, NULL, &s);
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
        decide(&rep, NULL, &nothing_held, NULL, &s);
        assert_int_equal(s.sync, NODE_SYNC_SUCCEEDED);
        assert_string_equal(node_sync_status_to_string(s.sync), "Succeeded");
        assert_string_equal(s.message, "");
        p.problems = &warning;
        p.n_problems = 1;
        decide(&none, &p, &nothing_held, NULL, &s);
        assert_int_equal(s.sync, NODE_SYNC_SUCCEEDED);
        assert_string_equal(s.message, "");
        apply_report_done(&rep);
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
                decide(&rep, &p, &nothing_held, NULL, &s);
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
        applied_pf(&p, PF_A); /* the next round's plan: empty */
        decide(&rep, &p, &nothing_held, NULL, &s);
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
        decide(&rep, NULL, &nothing_held, RDMA, &s);
        assert_int_equal(s.sync, NODE_SYNC_FAILED);
        assert_int_equal(strlen(s.message), NODE_STATUS_MESSAGE_MAX - 1);
        assert_memory_equal(s.message, "0000:10:00.0xxx", 15);
        assert_non_null(strstr(s.message, "; 0000:13:00.0xxx"));
        apply_report_done(&rep);
}

/* The Events of a node without a --rdma-mode reboot notice. */
static int shared_config_events(const struct guarded_plan *g, const char *error, const char *posted,
                                struct node_events *e)
{
        const struct node_event_facts f = { .rdma_shared_error = error,
                                            .rdma_error_posted = posted };
        return node_events_decide(g, &f, e);
}

/* DisruptionHeld names the held PF, on every reconcile that holds it; none with
 * --allow-disruption. */
static void test_disruption_held_events(void **state)
{
        struct node n;
        struct node_events e = { 0 };

        node_setup(&n, false);
        for (int reconcile = 0; reconcile < 2; reconcile++) {
                assert_int_equal(shared_config_events(&n.g, NULL, NULL, &e), 0);
                assert_int_equal(e.n_events, 1);
                assert_string_equal(e.events[0].reason, "DisruptionHeld");
                assert_string_equal(e.events[0].message, n.g.held[0].reason);
                assert_non_null(strstr(e.events[0].message, PF_A " (ens1f0)"));
                node_events_done(&e);
        }
        node_done(&n);

        node_setup(&n, true);
        assert_int_equal(shared_config_events(&n.g, NULL, NULL, &e), 0);
        assert_int_equal(e.n_events, 0);
        node_events_done(&e);
        node_done(&n);
}

/* InvalidRdmaSharedConfig once per error: not again while the same error stays, again when it
 * changes; none without one. */
static void test_rdma_event_once_per_error(void **state)
{
        struct node_events e = { 0 };

        assert_int_equal(shared_config_events(&nothing_held, RDMA, NULL, &e), 0);
        assert_int_equal(e.n_events, 1);
        assert_string_equal(e.events[0].reason, "InvalidRdmaSharedConfig");
        assert_string_equal(e.events[0].message, RDMA);
        node_events_done(&e);
        assert_int_equal(shared_config_events(&nothing_held, RDMA, RDMA, &e), 0);
        assert_int_equal(e.n_events, 0);
        node_events_done(&e);
        assert_int_equal(shared_config_events(&nothing_held, RDMA, "an older error", &e), 0);
        assert_int_equal(e.n_events, 1);
        assert_string_equal(e.events[0].message, RDMA);
        node_events_done(&e);
        assert_int_equal(shared_config_events(&nothing_held, NULL, RDMA, &e), 0);
        assert_int_equal(e.n_events, 0);
        node_events_done(&e);
}

/* PF B has 8 VFs at MTU 1500 and the policy wants MTU 9000: the real planner gives the PF's
 * MTU and then each VF's (9 actions). */
static void mtu_plan(struct inventory *inv, struct desired_state *d, struct plan *p)
{
        fake_add_pf(inv, PF_B, "ens2f0", 0x8086, 0x1592, 8, 8, 1500, "iavf");
        struct vf_group g = fx_group("b", 0, 7);
        g.mtu = 9000;
        fx_want(d, PF_B, "ens2f0", 8, 9000, g);
        assert_int_equal(plan_build(d, inv, NULL, p), 0);
        assert_int_equal(p->n_actions, 9);
        assert_int_equal(p->actions[0].kind, ACTION_SET_PF_MTU);
}

/* The third apply round made progress (nothing failed) and the plan made from what the kernel
 * shows then still has changes: InProgress naming how many and the first of them, not
 * Succeeded (which would stay until the periodic full check). */
static void test_changes_left_after_rounds(void **state)
{
        struct inventory inv = { 0 };
        struct desired_state d = { 0 };
        struct plan p = { 0 };
        struct apply_report rep = { 0 };
        struct node_status s;

        mtu_plan(&inv, &d, &p);
        fx_result(&rep, PF_B, 2, 0, 0); /* the last round did something */
        assert_true(apply_rounds_over(APPLY_ROUNDS_MAX, &rep));
        decide(&rep, &p, &nothing_held, NULL, &s);
        show(&s);
        assert_int_equal(s.sync, NODE_SYNC_IN_PROGRESS);
        assert_string_equal(s.message,
                            "9 changes left after the apply rounds, applying again: " PF_B
                            " (ens2f0): set-pf-mtu -> 9000, " PF_B
                            " (ens2f0): set-vf-mtu vf 0 -> 9000, " PF_B
                            " (ens2f0): set-vf-mtu vf 1 -> 9000, " PF_B
                            " (ens2f0): set-vf-mtu vf 2 -> 9000, and 5 more");

        /* one change: no "and N more", singular */
        p.n_actions = 1;
        decide(&rep, &p, &nothing_held, NULL, &s);
        assert_int_equal(s.sync, NODE_SYNC_IN_PROGRESS);
        assert_string_equal(s.message, "1 change left after the apply rounds, applying again: " PF_B
                                       " (ens2f0): set-pf-mtu -> 9000");
        p.n_actions = 9;

        /* a failure is never hidden by what is left */
        struct apply_report failed = { 0 };
        fx_result(&failed, PF_A, 0, -EBUSY, ACTION_SET_NUM_VFS);
        set_message(&failed, PF_A, EBUSY_MSG);
        decide(&failed, &p, &nothing_held, NULL, &s);
        assert_int_equal(s.sync, NODE_SYNC_FAILED);
        assert_string_equal(s.message, EBUSY_MSG);

        apply_report_done(&failed);
        apply_report_done(&rep);
        plan_done(&p);
        desired_state_done(&d);
        inventory_done(&inv);
}

/* Changes of a held PF are counted once, as held; B's changes left after the rounds are
 * listed after it. */
static void test_changes_left_and_held(void **state)
{
        struct node n;
        struct apply_report rep = { 0 };
        struct node_status s;

        node_setup(&n, false);
        fx_result(&rep, PF_B, 1, 0, 0);
        decide(&rep, &n.p, &n.g, NULL, &s);
        show(&s);
        assert_int_equal(s.sync, NODE_SYNC_IN_PROGRESS);
        assert_non_null(strstr(s.message, "held back until the VFs are free: " PF_A " (ens1f0)"));
        size_t n_b = 0;
        for (size_t i = 0; i < n.p.n_actions; i++)
                n_b += strcmp(n.p.actions[i].pf, PF_B) == 0;
        assert_true(n_b > 0 && n_b < n.p.n_actions);
        char want[128];
        snprintf(want, sizeof(want),
                 "; %zu change%s left after the apply rounds, applying again: " PF_B, n_b,
                 n_b == 1 ? "" : "s");
        assert_non_null(strstr(s.message, want));
        assert_null(strstr(strstr(s.message, want), PF_A));
        apply_report_done(&rep);
        node_done(&n);

        /* --allow-disruption: nothing is held, A's changes are left like B's */
        node_setup(&n, true);
        decide(&rep, &n.p, &n.g, NULL, &s);
        assert_int_equal(s.sync, NODE_SYNC_IN_PROGRESS);
        snprintf(want, sizeof(want), "%zu changes left after the apply rounds", n.p.n_actions);
        assert_non_null(strstr(s.message, want));
        assert_null(strstr(s.message, "held back"));
        node_done(&n);
}

/* A reconcile that stopped early is Failed with what stopped it first, whatever the apply of an
 * earlier round said; the RDMA shared config's error is still listed. */
static void test_stopped_early(void **state)
{
        struct node_status s;
        struct apply_report rep = { 0 };
        const char *discovery = "discovery: /sys/bus/pci/devices: No such file or directory";

        node_status_decide(&(const struct node_status_facts){ .stopped = discovery }, &s);
        show(&s);
        assert_int_equal(s.sync, NODE_SYNC_FAILED);
        assert_string_equal(s.message, discovery);

        /* round 1 applied B, then the apply process of round 2 was killed */
        fx_result(&rep, PF_B, 3, 0, 0);
        node_status_decide(
            &(const struct node_status_facts){
                .applied = &rep,
                .guarded = &nothing_held,
                .rdma_shared_error = RDMA,
                .stopped = "apply process: was killed by signal 9",
            },
            &s);
        assert_int_equal(s.sync, NODE_SYNC_FAILED);
        assert_string_equal(s.message, "apply process: was killed by signal 9; RDMA shared config "
                                       "not used: " RDMA);
        apply_report_done(&rep);
}

/* --dry-run: nothing is applied, so planned changes are InProgress ("dry run: N changes
 * planned, not applied: ..."), never Succeeded; a dry run with nothing to change is
 * Succeeded. */
static void test_dry_run(void **state)
{
        struct inventory inv = { 0 };
        struct desired_state d = { 0 };
        struct plan p = { 0 }, empty = { 0 };
        struct node_status s;

        mtu_plan(&inv, &d, &p);
        node_status_decide(&(const struct node_status_facts){ .plan = &p, .dry_run = true }, &s);
        show(&s);
        assert_int_equal(s.sync, NODE_SYNC_IN_PROGRESS);
        assert_string_equal(s.message, "dry run: 9 changes planned, not applied: " PF_B
                                       " (ens2f0): set-pf-mtu -> 9000, " PF_B
                                       " (ens2f0): set-vf-mtu vf 0 -> 9000, " PF_B
                                       " (ens2f0): set-vf-mtu vf 1 -> 9000, " PF_B
                                       " (ens2f0): set-vf-mtu vf 2 -> 9000, and 5 more");
        node_status_decide(&(const struct node_status_facts){ .plan = &empty, .dry_run = true },
                           &s);
        assert_int_equal(s.sync, NODE_SYNC_SUCCEEDED);
        assert_string_equal(s.message, "");
        plan_done(&p);
        desired_state_done(&d);
        inventory_done(&inv);
}

/* --rdma-mode written for the next boot: InProgress saying so until the node is rebooted; a
 * failure still wins. */
static void test_rdma_reboot_needed(void **state)
{
        struct node_status s;
        const char *reboot = "RDMA network namespace mode exclusive needs a reboot";
        node_status_decide(&(const struct node_status_facts){ .rdma_reboot_needed = reboot }, &s);
        assert_int_equal(s.sync, NODE_SYNC_IN_PROGRESS);
        assert_string_equal(s.message, reboot);
        node_status_decide(&(const struct node_status_facts){ .rdma_reboot_needed = reboot,
                                                              .rdma_shared_error = RDMA },
                           &s);
        assert_int_equal(s.sync, NODE_SYNC_FAILED);
        assert_string_equal(s.message, "RDMA shared config not used: " RDMA);
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
                cmocka_unit_test(test_changes_left_after_rounds),
                cmocka_unit_test(test_changes_left_and_held),
                cmocka_unit_test(test_stopped_early),
                cmocka_unit_test(test_dry_run),
                cmocka_unit_test(test_rdma_reboot_needed),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
