/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for which applied-state records are written and deleted around an apply
 * (plan/records.h). A record is what makes a PF the agent's (README.md: "only PFs this agent
 * configured are ever reset"), so: written before the first change with the PF's originals,
 * never rewritten then, kept by a PF whose change or reset failed, deleted once a PF is
 * released, never written for a PF no policy selected, left alone when unusable. Plans come
 * from the real planner on fake inventories. */
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
#include "plan/records.h"

#define PF_A "0000:3b:00.0"
#define PF_B "0000:3b:00.1"
#define PF_C "0000:5e:00.0"
#define PF_F "0000:af:00.0" /* foreign: never selected by a policy, no record */

static const struct apply_report all_done = { 0 };

static const struct applied_pf *saved(const struct record_changes *c, const char *pci)
{
        for (size_t i = 0; i < c->n_save; i++)
                if (strcmp(c->save[i]->pci_address, pci) == 0)
                        return c->save[i];
        return NULL;
}

static bool removed(const struct record_changes *c, const char *pci)
{
        for (size_t i = 0; i < c->n_remove; i++)
                if (strcmp(c->remove[i], pci) == 0)
                        return true;
        return false;
}

/* A: new to the agent, 0 -> 4 VFs. B: the agent's, 4 -> 6 VFs. C: new, already as desired. */
static void test_record_written_before_the_first_change(void **state)
{
        struct fx_node n = { 0 };
        struct record_changes c = { 0 };

        fake_add_pf(&n.inv, PF_A, "ens1f0", 0x8086, 0x1592, 8, 0, 1500, NULL);
        fake_add_pf(&n.inv, PF_B, "ens1f1", 0x8086, 0x1592, 8, 4, 1500, "iavf");
        fake_add_pf(&n.inv, PF_C, "ens2f0", 0x8086, 0x1592, 8, 4, 1500, "iavf");
        fx_owned(&n.prev, PF_B, 4, 2, "b");
        fx_want(&n.d, PF_A, "ens1f0", 4, 0, fx_group("a", 0, 3));
        fx_want(&n.d, PF_B, "ens1f1", 6, 0, fx_group("b", 0, 5));
        fx_want(&n.d, PF_C, "ens2f0", 4, 0, fx_group("c", 0, 3));
        assert_int_equal(plan_build(&n.d, &n.inv, &n.prev, &n.p), 0);
        assert_true(fx_plan_touches(&n.p, PF_A));
        assert_true(fx_plan_touches(&n.p, PF_B));
        assert_false(fx_plan_touches(&n.p, PF_C));

        assert_int_equal(records_before_apply(&n.p, &n.prev, &c), 0);
        assert_int_equal(c.n_save, 1);
        assert_int_equal(c.n_remove, 0);
        const struct applied_pf *a = saved(&c, PF_A);
        assert_non_null(a);
        assert_int_equal(a->original_num_vfs, 0); /* what the PF is now */
        assert_int_equal(a->original_mtu, 1500);
        assert_null(saved(&c, PF_B)); /* its originals (2 VFs) stay as first recorded */
        assert_null(saved(&c, PF_C)); /* nothing is about to change on it */
        record_changes_done(&c);

        /* all applied: the agent manages exactly the desired PFs, with their new records */
        assert_int_equal(records_after_apply(&n.p, &n.prev, &all_done, &c), 0);
        assert_int_equal(c.n_save, 3);
        assert_int_equal(saved(&c, PF_B)->applied.num_vfs, 6);
        assert_int_equal(saved(&c, PF_B)->original_num_vfs, 2);
        assert_non_null(saved(&c, PF_C));
        assert_int_equal(c.n_remove, 0);
        record_changes_done(&c);

        fx_node_done(&n);
}

/* B left every policy: it is reset, and its record goes once the reset worked. If the reset
 * failed (before or after changing something) the record stays: the agent still owns the PF
 * and resets it on the next try. */
static void test_released_pf_record_deleted_after_its_reset(void **state)
{
        struct fx_node n = { 0 };
        struct record_changes c = { 0 };

        fake_add_pf(&n.inv, PF_A, "ens1f0", 0x8086, 0x1592, 8, 4, 1500, "iavf");
        fake_add_pf(&n.inv, PF_B, "ens1f1", 0x8086, 0x1592, 8, 4, 1500, "iavf");
        fx_owned(&n.prev, PF_A, 4, 0, "a");
        fx_owned(&n.prev, PF_B, 4, 0, "b");
        fx_want(&n.d, PF_A, "ens1f0", 4, 0, fx_group("a", 0, 3));
        assert_int_equal(plan_build(&n.d, &n.inv, &n.prev, &n.p), 0);
        assert_true(fx_plan_has(&n.p, PF_B, ACTION_RESET_PF));

        assert_int_equal(records_after_apply(&n.p, &n.prev, &all_done, &c), 0);
        assert_non_null(saved(&c, PF_A));
        assert_null(saved(&c, PF_B));
        assert_true(removed(&c, PF_B));
        assert_false(removed(&c, PF_A));
        record_changes_done(&c);

        for (size_t n_done = 0; n_done <= 1; n_done++) {
                struct apply_report rep = { 0 };
                fx_result(&rep, PF_B, n_done, -EBUSY, ACTION_RESET_PF);
                assert_int_equal(records_after_apply(&n.p, &n.prev, &rep, &c), 0);
                assert_false(removed(&c, PF_B));
                assert_int_equal(c.n_remove, 0);
                record_changes_done(&c);
                apply_report_done(&rep);
        }

        fx_node_done(&n);
}

/* B's change 4 -> 6 VFs failed before anything changed: its old record (4 VFs, what its VFs
 * still are) is kept, not replaced by the one of the change that did not happen. Once an
 * action of it went through, the new record is written. */
static void test_failed_before_any_change_keeps_the_old_record(void **state)
{
        struct fx_node n = { 0 };
        struct record_changes c = { 0 };

        fake_add_pf(&n.inv, PF_B, "ens1f1", 0x8086, 0x1592, 8, 4, 1500, "iavf");
        fx_owned(&n.prev, PF_B, 4, 0, "b");
        fx_want(&n.d, PF_B, "ens1f1", 6, 9000, fx_group("b", 0, 5));
        assert_int_equal(plan_build(&n.d, &n.inv, &n.prev, &n.p), 0);

        struct apply_report rep = { 0 };
        fx_result(&rep, PF_B, 0, -EBUSY, ACTION_SET_NUM_VFS);
        assert_int_equal(records_after_apply(&n.p, &n.prev, &rep, &c), 0);
        assert_int_equal(c.n_save, 0);
        assert_int_equal(c.n_remove, 0);
        record_changes_done(&c);
        apply_report_done(&rep);

        fx_result(&rep, PF_B, 1, -EINVAL, ACTION_SET_PF_MTU);
        assert_int_equal(records_after_apply(&n.p, &n.prev, &rep, &c), 0);
        assert_int_equal(c.n_save, 1);
        assert_int_equal(saved(&c, PF_B)->applied.num_vfs, 6);
        record_changes_done(&c);
        apply_report_done(&rep);

        fx_node_done(&n);
}

/* F has VFs someone else made and no policy selects it: no action, and no record is ever
 * written for it, so no later reconcile can take it for the agent's and reset it. C was
 * externally managed and left every policy: released without a reset (its VFs were never the
 * agent's), its record deleted. */
static void test_foreign_pf_never_reset_nor_recorded(void **state)
{
        struct fx_node n = { 0 };
        struct record_changes c = { 0 };

        fake_add_pf(&n.inv, PF_A, "ens1f0", 0x8086, 0x1592, 8, 0, 1500, NULL);
        fake_add_pf(&n.inv, PF_C, "ens2f0", 0x8086, 0x1592, 8, 4, 9000, "iavf");
        fake_add_pf(&n.inv, PF_F, "eno1", 0x8086, 0x1592, 64, 4, 9000, "iavf");
        fx_owned(&n.prev, PF_C, 4, 0, "c");
        n.prev.pfs[0].applied.externally_managed = true;
        fx_want(&n.d, PF_A, "ens1f0", 4, 0, fx_group("a", 0, 3));
        assert_int_equal(plan_build(&n.d, &n.inv, &n.prev, &n.p), 0);
        assert_false(fx_plan_touches(&n.p, PF_F));
        assert_false(fx_plan_touches(&n.p, PF_C));

        assert_int_equal(records_before_apply(&n.p, &n.prev, &c), 0);
        assert_null(saved(&c, PF_F));
        assert_null(saved(&c, PF_C));
        record_changes_done(&c);
        assert_int_equal(records_after_apply(&n.p, &n.prev, &all_done, &c), 0);
        assert_null(saved(&c, PF_F));
        assert_false(removed(&c, PF_F));
        assert_null(saved(&c, PF_C));
        assert_true(removed(&c, PF_C));
        record_changes_done(&c);

        fx_node_done(&n);
}

/* A's record file is unusable: its PF is frozen, and the file is neither overwritten nor
 * deleted, before or after the apply of the other PFs. */
static void test_unusable_record_left_alone(void **state)
{
        struct fx_node n = { 0 };
        struct record_changes c = { 0 };

        fake_add_pf(&n.inv, PF_A, "ens1f0", 0x8086, 0x1592, 8, 0, 1500, NULL);
        fake_add_pf(&n.inv, PF_B, "ens1f1", 0x8086, 0x1592, 8, 0, 1500, NULL);
        n.prev.bad = calloc(1, sizeof(*n.prev.bad));
        assert_non_null(n.prev.bad);
        snprintf(n.prev.bad[0].pci_address, sizeof(n.prev.bad[0].pci_address), "%s", PF_A);
        snprintf(n.prev.bad[0].message, sizeof(n.prev.bad[0].message), "%s.json: not JSON", PF_A);
        n.prev.n_bad = 1;
        fx_want(&n.d, PF_A, "ens1f0", 4, 0, fx_group("a", 0, 3));
        fx_want(&n.d, PF_B, "ens1f1", 4, 0, fx_group("b", 0, 3));
        assert_int_equal(plan_build(&n.d, &n.inv, &n.prev, &n.p), 0);
        assert_int_equal(plan_freeze_bad_records(&n.p, &n.prev), 0);
        assert_false(fx_plan_touches(&n.p, PF_A));

        assert_int_equal(records_before_apply(&n.p, &n.prev, &c), 0);
        assert_null(saved(&c, PF_A));
        assert_non_null(saved(&c, PF_B));
        record_changes_done(&c);
        assert_int_equal(records_after_apply(&n.p, &n.prev, &all_done, &c), 0);
        assert_null(saved(&c, PF_A));
        assert_false(removed(&c, PF_A));
        assert_non_null(saved(&c, PF_B));
        record_changes_done(&c);

        fx_node_done(&n);
}

/* After a reboot (every sriov_numvfs 0) the records alone bring back what the agent last
 * applied: A and B get their VF counts again (B's vfio-pci group included), the foreign F is
 * neither touched nor recorded, nothing is reset, and the records stay as they are. */
static void test_boot_desired_from_records_restores_owned_pfs_only(void **state)
{
        struct fx_node n = { 0 };
        struct record_changes c = { 0 };

        fake_add_pf(&n.inv, PF_A, "ens1f0", 0x8086, 0x1592, 8, 0, 1500, NULL);
        fake_add_pf(&n.inv, PF_B, "ens1f1", 0x8086, 0x1592, 8, 0, 1500, NULL);
        fake_add_pf(&n.inv, PF_F, "eno1", 0x8086, 0x1592, 64, 0, 1500, NULL);
        /* records in file order, not PCI order: the desired state must come out sorted */
        fx_owned(&n.prev, PF_B, 6, 0, "b");
        fx_owned(&n.prev, PF_A, 4, 0, "a");
        n.prev.pfs[0].applied.groups[0].device_type = DEVICE_TYPE_VFIO_PCI;
        n.prev.pfs[0].applied.mtu = 9000;

        assert_int_equal(records_boot_desired(&n.prev, &n.d), 0);
        assert_int_equal(n.d.n_interfaces, 2);
        assert_string_equal(n.d.interfaces[0].pci_address, PF_A);
        assert_string_equal(n.d.interfaces[1].pci_address, PF_B);
        assert_int_equal(n.d.interfaces[1].num_vfs, 6);
        assert_int_equal(n.d.interfaces[1].mtu, 9000);
        assert_int_equal(n.d.interfaces[1].groups[0].device_type, DEVICE_TYPE_VFIO_PCI);
        /* a deep copy: the records can be freed first */
        assert_ptr_not_equal(n.d.interfaces[1].groups, n.prev.pfs[0].applied.groups);

        assert_int_equal(plan_build(&n.d, &n.inv, &n.prev, &n.p), 0);
        assert_true(fx_plan_has(&n.p, PF_A, ACTION_SET_NUM_VFS));
        assert_true(fx_plan_has(&n.p, PF_B, ACTION_SET_NUM_VFS));
        assert_true(fx_plan_has(&n.p, PF_B, ACTION_SET_PF_MTU));
        assert_false(fx_plan_touches(&n.p, PF_F));
        for (size_t i = 0; i < n.p.n_actions; i++)
                assert_int_not_equal(n.p.actions[i].kind, ACTION_RESET_PF);

        assert_int_equal(records_after_apply(&n.p, &n.prev, &all_done, &c), 0);
        assert_int_equal(c.n_remove, 0);
        assert_null(saved(&c, PF_F));
        record_changes_done(&c);

        fx_node_done(&n);
}

/* No records (a node the agent never configured): an empty desired state, nothing planned. */
static void test_boot_desired_without_records_is_empty(void **state)
{
        struct fx_node n = { 0 };

        fake_add_pf(&n.inv, PF_F, "eno1", 0x8086, 0x1592, 64, 4, 1500, "iavf");
        assert_int_equal(records_boot_desired(&n.prev, &n.d), 0);
        assert_int_equal(n.d.n_interfaces, 0);
        assert_int_equal(plan_build(&n.d, &n.inv, &n.prev, &n.p), 0);
        assert_int_equal(n.p.n_actions, 0);
        fx_node_done(&n);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_record_written_before_the_first_change),
                cmocka_unit_test(test_released_pf_record_deleted_after_its_reset),
                cmocka_unit_test(test_failed_before_any_change_keeps_the_old_record),
                cmocka_unit_test(test_foreign_pf_never_reset_nor_recorded),
                cmocka_unit_test(test_unusable_record_left_alone),
                cmocka_unit_test(test_boot_desired_from_records_restores_owned_pfs_only),
                cmocka_unit_test(test_boot_desired_without_records_is_empty),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
