/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for what the kubelet is offered after a reconcile (plan/advertise.h): a PF's VFs
 * only once the PF itself is configured (README.md: "advertises it, and only after its PF is
 * fully configured"), a PF that failed keeps its resources with 0 devices, a held PF as it
 * was last applied, a frozen PF only while it already is what is desired. Plans come from the
 * real planner on fake inventories. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "plan-fixture.h"
#include "plan/advertise.h"
#include "plan/disruption.h"
#include "util/macro.h"

#define PF_A "0000:3b:00.0"
#define PF_B "0000:5e:00.0"

static const struct apply_report nothing_applied = { 0 };

/* The VFs interface i of an advertised state offers in its first group (0 = none). */
static int offered(const struct desired_state *adv, size_t i)
{
        assert_true(i < adv->n_interfaces);
        assert_int_equal(adv->interfaces[i].n_groups, 1);
        const struct vf_group *g = &adv->interfaces[i].groups[0];
        return g->vf_end >= g->vf_start ? g->vf_end - g->vf_start + 1 : 0;
}

/* A fresh PF: while its VF count is still to be written, its resource is there with no
 * devices; once the plan is done, all its VFs are. */
static void test_vfs_wait_for_the_vf_count(void **state)
{
        struct inventory inv = { 0 };
        struct desired_state d = { 0 }, adv = { 0 };
        struct plan p = { 0 };

        fake_add_pf(&inv, PF_A, "ens1f0", 0x8086, 0x1592, 8, 0, 1500, NULL);
        fx_want(&d, PF_A, "ens1f0", 4, 0, fx_group("highnet", 0, 3));
        assert_int_equal(plan_build(&d, &inv, NULL, &p), 0);
        assert_true(fx_plan_has(&p, PF_A, ACTION_SET_NUM_VFS));

        assert_true(pf_level_incomplete(PF_A, &p, &nothing_applied));
        assert_int_equal(advertised_subset(&d, &p, &nothing_applied, NULL, NULL, &adv), 0);
        assert_int_equal(adv.n_interfaces, 1);
        assert_string_equal(adv.interfaces[0].pci_address, PF_A);
        assert_string_equal(adv.interfaces[0].groups[0].resource_name, "highnet");
        assert_int_equal(offered(&adv, 0), 0);
        desired_state_done(&adv);

        /* applied: nothing left, every VF is offered */
        assert_int_equal(plan_simulate(&p, &inv), 0);
        plan_done(&p);
        assert_int_equal(plan_build(&d, &inv, NULL, &p), 0);
        assert_int_equal(p.n_actions, 0);
        assert_false(pf_level_incomplete(PF_A, &p, &nothing_applied));
        assert_int_equal(advertised_subset(&d, &p, &nothing_applied, NULL, NULL, &adv), 0);
        assert_int_equal(offered(&adv, 0), 4);
        assert_int_equal(adv.interfaces[0].num_vfs, 4);
        desired_state_done(&adv);

        plan_done(&p);
        desired_state_done(&d);
        inventory_done(&inv);
}

/* The PF MTU (a PF-level action) still to be raised: the VFs, which exist, wait for it. */
static void test_pending_pf_mtu_withholds_vfs(void **state)
{
        struct inventory inv = { 0 };
        struct desired_state d = { 0 }, adv = { 0 };
        struct plan p = { 0 };

        fake_add_pf(&inv, PF_A, "ens1f0", 0x8086, 0x1592, 8, 4, 1500, "iavf");
        fx_want(&d, PF_A, "ens1f0", 4, 9000, fx_group("highnet", 0, 3));
        assert_int_equal(plan_build(&d, &inv, NULL, &p), 0);
        assert_true(fx_plan_has(&p, PF_A, ACTION_SET_PF_MTU));
        assert_false(fx_plan_has(&p, PF_A, ACTION_SET_NUM_VFS));
        assert_int_equal(advertised_subset(&d, &p, &nothing_applied, NULL, NULL, &adv), 0);
        assert_int_equal(offered(&adv, 0), 0);
        desired_state_done(&adv);
        plan_done(&p);
        desired_state_done(&d);
        inventory_done(&inv);
}

/* Only VF-level work left (rebinding VFs to vfio-pci): no gate, the pool builder leaves out
 * VFs that are not ready. */
static void test_vf_level_work_does_not_gate(void **state)
{
        struct inventory inv = { 0 };
        struct desired_state d = { 0 }, adv = { 0 };
        struct plan p = { 0 };
        struct vf_group g = fx_group("dpdk", 0, 3);

        g.device_type = DEVICE_TYPE_VFIO_PCI;
        fake_add_pf(&inv, PF_A, "ens1f0", 0x8086, 0x1592, 8, 4, 1500, "iavf");
        fx_want(&d, PF_A, "ens1f0", 4, 0, g);
        assert_int_equal(plan_build(&d, &inv, NULL, &p), 0);
        assert_true(fx_plan_has(&p, PF_A, ACTION_BIND_DRIVER));
        assert_false(pf_level_incomplete(PF_A, &p, &nothing_applied));
        assert_int_equal(advertised_subset(&d, &p, &nothing_applied, NULL, NULL, &adv), 0);
        assert_int_equal(offered(&adv, 0), 4);
        desired_state_done(&adv);
        plan_done(&p);
        desired_state_done(&d);
        inventory_done(&inv);
}

/* The last apply failed on the PF: a PF-level failure withholds its VFs (resource kept with
 * 0 devices), a VF-level one does not; the other PF is unaffected. */
static void test_failed_pf_keeps_resource_with_no_devices(void **state)
{
        static const struct {
                int error;
                enum action_kind kind;
                bool withheld;
        } cases[] = {
                { -EBUSY, ACTION_SET_NUM_VFS, true },
                { -EINVAL, ACTION_SET_PF_MTU, true },
                { -EIO, ACTION_PF_LINK_UP, true },
                { -EOPNOTSUPP, ACTION_SET_ESWITCH_MODE, true },
                { -ENODEV, ACTION_BIND_DRIVER, false },
                { -EIO, ACTION_SET_VF_MTU, false },
                { 0, ACTION_SET_NUM_VFS, false },
        };
        struct desired_state d = { 0 };
        const struct plan left = { 0 }; /* nothing is planned any more */

        fx_want(&d, PF_A, "ens1f0", 4, 0, fx_group("highnet", 0, 3));
        fx_want(&d, PF_B, "ens2f0", 2, 0, fx_group("lownet", 0, 1));
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                struct apply_report rep = { 0 };
                struct desired_state adv = { 0 };

                fx_result(&rep, PF_A, 1, cases[i].error, cases[i].kind);
                fx_result(&rep, PF_B, 2, 0, 0);
                assert_int_equal(pf_level_incomplete(PF_A, &left, &rep), cases[i].withheld);
                assert_int_equal(advertised_subset(&d, &left, &rep, NULL, NULL, &adv), 0);
                assert_int_equal(adv.n_interfaces, 2);
                assert_string_equal(adv.interfaces[0].groups[0].resource_name, "highnet");
                assert_int_equal(offered(&adv, 0), cases[i].withheld ? 0 : 4);
                assert_int_equal(offered(&adv, 1), 2);
                desired_state_done(&adv);
                apply_report_done(&rep);
        }
        desired_state_done(&d);
}

/* Pods use a VF of PF A, so growing it 4 -> 6 (a new resource) is held: A is offered as last
 * applied, which is what its VFs still are. With --allow-disruption the guard only warns and
 * A is offered as desired once its VF count is written. */
static void test_held_pf_offered_as_last_applied(void **state)
{
        struct inventory inv = { 0 };
        struct desired_state d = { 0 }, adv = { 0 };
        struct applied_state prev = { 0 };
        struct plan p = { 0 };
        struct guarded_plan g = { 0 };
        const char *in_use[] = { "0000:3b:02.1" };

        fake_add_pf(&inv, PF_A, "ens1f0", 0x8086, 0x1592, 8, 4, 1500, "iavf");
        fx_owned(&prev, PF_A, 4, 0, "oldnet");
        fx_want(&d, PF_A, "ens1f0", 6, 0, fx_group("newnet", 0, 5));
        assert_int_equal(plan_build(&d, &inv, &prev, &p), 0);
        assert_true(fx_plan_has(&p, PF_A, ACTION_SET_NUM_VFS));

        assert_int_equal(disruption_guard(&p, &inv, &prev, in_use, NULL, 1, false, &g), 0);
        assert_int_equal(g.n_held, 1);
        assert_int_equal(advertised_subset(&d, &p, &nothing_applied, &g, &prev, &adv), 0);
        assert_int_equal(adv.n_interfaces, 1);
        assert_string_equal(adv.interfaces[0].groups[0].resource_name, "oldnet");
        assert_int_equal(adv.interfaces[0].num_vfs, 4);
        assert_int_equal(offered(&adv, 0), 4);
        desired_state_done(&adv);
        guarded_plan_done(&g);

        assert_int_equal(disruption_guard(&p, &inv, &prev, in_use, NULL, 1, true, &g), 0);
        assert_true(g.passed_through);
        assert_int_equal(advertised_subset(&d, &p, &nothing_applied, &g, &prev, &adv), 0);
        assert_string_equal(adv.interfaces[0].groups[0].resource_name, "newnet");
        assert_int_equal(offered(&adv, 0), 0); /* its VF count is still to be written */
        desired_state_done(&adv);
        guarded_plan_done(&g);

        plan_done(&p);
        applied_state_done(&prev);
        desired_state_done(&d);
        inventory_done(&inv);
}

/* A PF frozen by an unusable record: offered while it already is what is desired (nothing was
 * dropped for it), with no devices when changes for it were dropped. */
static void test_frozen_pf(void **state)
{
        struct desired_state d = { 0 };
        struct applied_bad_record bad = { .pci_address = PF_A, .message = "a.json: not JSON" };
        const struct applied_state prev = { .bad = &bad, .n_bad = 1 };
        const struct plan left = { 0 };

        fx_want(&d, PF_A, "ens1f0", 4, 0, fx_group("highnet", 0, 3));
        for (int would_change = 0; would_change <= 1; would_change++) {
                struct desired_state adv = { 0 };
                bad.would_change = would_change;
                assert_int_equal(advertised_subset(&d, &left, &nothing_applied, NULL, &prev, &adv),
                                 0);
                assert_int_equal(offered(&adv, 0), would_change ? 0 : 4);
                desired_state_done(&adv);
        }
        desired_state_done(&d);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_vfs_wait_for_the_vf_count),
                cmocka_unit_test(test_pending_pf_mtu_withholds_vfs),
                cmocka_unit_test(test_vf_level_work_does_not_gate),
                cmocka_unit_test(test_failed_pf_keeps_resource_with_no_devices),
                cmocka_unit_test(test_held_pf_offered_as_last_applied),
                cmocka_unit_test(test_frozen_pf),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
