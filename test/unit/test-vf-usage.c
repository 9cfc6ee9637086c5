/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for which devices count as in use (plan/vf-usage.h) and what the guard then
 * holds: disruptive changes wait while pods use VFs (docs/policies.md "Disruption guard"), and a
 * kubelet that cannot be asked means every VF is in use, so they wait too, with the reason saying
 * why (docs/policies.md "When the kubelet cannot be asked"). Plans come from the real planner. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "plan-fixture.h"
#include "plan/records.h"
#include "plan/vf-usage.h"
#include "util/strv.h"

#define PF_A    "0000:3b:00.0"
#define PF_B    "0000:5e:00.0"
#define REFUSED "no PodResources socket at /var/lib/kubelet/pod-resources/kubelet.sock"
#define KUBELET "the kubelet could not be asked which VFs pods hold: " REFUSED

/* PF A has 4 VFs and is the agent's; the policy now wants 6 (writes 0 first: disruptive while
 * any VF is in use). PF B has no VFs yet and gets 2 (never disruptive). */
static void node_setup(struct fx_node *n)
{
        *n = (struct fx_node){ 0 };
        fake_add_pf(&n->inv, PF_A, "ens1f0", 0x8086, 0x1592, 8, 4, 1500, "iavf");
        fake_add_pf(&n->inv, PF_B, "ens2f0", 0x8086, 0x1592, 8, 0, 1500, NULL);
        fx_owned(&n->prev, PF_A, 4, 0, "a");
        fx_want(&n->d, PF_A, "ens1f0", 6, 0, fx_group("a", 0, 5));
        fx_want(&n->d, PF_B, "ens2f0", 2, 0, fx_group("b", 0, 1));
        assert_int_equal(plan_build(&n->d, &n->inv, &n->prev, &n->p), 0);
        assert_true(fx_plan_has(&n->p, PF_A, ACTION_SET_NUM_VFS));
        assert_true(fx_plan_has(&n->p, PF_B, ACTION_SET_NUM_VFS));
}

static void test_kubelet_unknown_means_every_vf_in_use(void **state)
{
        struct inventory inv = { 0 };
        struct vf_usage u = { 0 };

        fake_add_pf(&inv, PF_A, "ens1f0", 0x8086, 0x1592, 8, 4, 1500, "iavf");
        fake_add_pf(&inv, PF_B, "ens2f0", 0x8086, 0x1592, 8, 2, 1500, "vfio-pci");
        assert_int_equal(vf_usage_unknown(&u, &inv, REFUSED), 0);
        assert_string_equal(u.unknown, REFUSED);
        assert_int_equal(u.n_ids, 6);
        for (size_t i = 0; i < inv.n_pfs; i++)
                for (size_t j = 0; j < inv.pfs[i].n_vfs; j++)
                        assert_true(strv_contains(u.ids, u.n_ids, inv.pfs[i].vfs[j].pci_address));
        vf_usage_done(&u);
        inventory_done(&inv);
}

/* The kubelet answered: a pod holds VF 1 of A. A's change waits (all of it), B goes ahead; the
 * held PF keeps its record. Nothing in use: both go ahead. */
static void test_change_held_while_pods_use_vfs(void **state)
{
        struct fx_node n;
        struct vf_usage u = { 0 };
        struct guarded_plan g = { 0 };
        struct record_changes c = { 0 };

        node_setup(&n);
        assert_int_equal(vf_usage_add(&u, "0000:3b:02.1"), 0);
        assert_int_equal(vf_usage_guard(&n.p, &n.inv, &n.prev, &u, false, &g), 0);
        assert_int_equal(g.n_held, 1);
        assert_string_equal(g.held[0].pf, PF_A);
        assert_non_null(strstr(g.held[0].reason, "0000:3b:02.1"));
        assert_null(strstr(g.held[0].reason, "kubelet could not be asked"));
        assert_false(fx_plan_touches(&g.plan, PF_A));
        assert_true(fx_plan_has(&g.plan, PF_B, ACTION_SET_NUM_VFS));
        /* a held PF's record is the previous one: 4 VFs, what it still is */
        assert_int_equal(records_after_apply(&g.plan, &n.prev, &(struct apply_report){ 0 }, &c), 0);
        const struct applied_pf *kept = NULL;
        for (size_t i = 0; i < c.n_save; i++)
                if (strcmp(c.save[i]->pci_address, PF_A) == 0)
                        kept = c.save[i];
        assert_non_null(kept);
        assert_int_equal(kept ? kept->applied.num_vfs : -1, 4);
        assert_int_equal(c.n_remove, 0);
        record_changes_done(&c);
        guarded_plan_done(&g);
        vf_usage_done(&u);

        assert_int_equal(vf_usage_guard(&n.p, &n.inv, &n.prev, &u, false, &g), 0);
        assert_int_equal(g.n_held, 0);
        assert_int_equal(g.plan.n_actions, n.p.n_actions);
        guarded_plan_done(&g);
        fx_node_done(&n);
}

/* The kubelet could not be asked: A's change is held with the kubelet's failure in its reason;
 * B (no VFs to destroy) still goes ahead. --allow-disruption applies A too, and still says
 * why it would have been held. */
static void test_kubelet_unknown_holds_disruptive_change(void **state)
{
        struct fx_node n;
        struct vf_usage u = { 0 };
        struct guarded_plan g = { 0 };

        node_setup(&n);
        assert_int_equal(vf_usage_unknown(&u, &n.inv, REFUSED), 0);
        assert_int_equal(vf_usage_guard(&n.p, &n.inv, &n.prev, &u, false, &g), 0);
        assert_false(g.passed_through);
        assert_int_equal(g.n_held, 1);
        assert_string_equal(g.held[0].pf, PF_A);
        print_message("    held: %s\n", g.held[0].reason);
        assert_non_null(strstr(g.held[0].reason, "(" KUBELET ")"));
        assert_false(fx_plan_touches(&g.plan, PF_A));
        assert_true(fx_plan_has(&g.plan, PF_B, ACTION_SET_NUM_VFS));
        guarded_plan_done(&g);

        assert_int_equal(vf_usage_guard(&n.p, &n.inv, &n.prev, &u, true, &g), 0);
        assert_true(g.passed_through);
        assert_int_equal(g.n_held, 1);
        assert_non_null(strstr(g.held[0].reason, KUBELET));
        assert_true(fx_plan_has(&g.plan, PF_A, ACTION_SET_NUM_VFS));
        guarded_plan_done(&g);

        vf_usage_done(&u);
        fx_node_done(&n);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_kubelet_unknown_means_every_vf_in_use),
                cmocka_unit_test(test_change_held_while_pods_use_vfs),
                cmocka_unit_test(test_kubelet_unknown_holds_disruptive_change),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
