/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for PFs frozen by an unusable state record (plan/freeze.h), on plans from the real
 * planner: the frozen PF gets no action and no new record, the problem names the PF and the
 * file's problem, every other PF is planned as usual. */
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

#define PF_A "0000:3b:00.0"
#define PF_B "0000:5e:00.0"

static void add_bad(struct applied_state *s, const char *pci, const char *message)
{
        struct applied_bad_record *arr = realloc(s->bad, (s->n_bad + 1) * sizeof(*arr));
        assert_non_null(arr);
        s->bad = arr;
        arr[s->n_bad] = (struct applied_bad_record){ 0 };
        snprintf(arr[s->n_bad].pci_address, sizeof(arr->pci_address), "%s", pci);
        snprintf(arr[s->n_bad].message, sizeof(arr->message), "%s", message);
        s->n_bad++;
}

/* The only problem of p, which must be pci's. */
static const struct plan_problem *only_problem(const struct plan *p, const char *pci)
{
        assert_int_equal(p->n_problems, 1);
        assert_string_equal(p->problems[0].pf, pci);
        return &p->problems[0];
}

/* B's record is not JSON and a policy wants 4 VFs on it: nothing is done to B and no record is
 * planned over its file; A is planned as without the bad record. */
static void test_frozen_pf_held_others_planned(void **state)
{
        struct fx_node n = { 0 };

        fake_add_pf(&n.inv, PF_A, "ens1f0", 0x15b3, 0x101b, 16, 0, 1500, "mlx5_core");
        fake_add_pf(&n.inv, PF_B, "ens1f1", 0x15b3, 0x101b, 16, 0, 1500, "mlx5_core");
        fx_want(&n.d, PF_A, "ens1f0", 4, 0, fx_group("a", 0, 3));
        fx_want(&n.d, PF_B, "ens1f1", 4, 0, fx_group("b", 0, 3));
        add_bad(&n.prev, PF_B, "/var/lib/sriov-agent/" PF_B ".json: not JSON: line 1: x");

        assert_int_equal(plan_build(&n.d, &n.inv, &n.prev, &n.p), 0);
        assert_true(fx_plan_touches(&n.p, PF_B)); /* the planner alone would change B */
        assert_int_equal(plan_freeze_bad_records(&n.p, &n.prev), 0);

        assert_false(fx_plan_touches(&n.p, PF_B));
        assert_true(fx_plan_has(&n.p, PF_A, ACTION_SET_NUM_VFS));
        assert_int_equal(n.p.applied.n_pfs, 1);
        assert_string_equal(n.p.applied.pfs[0].pci_address, PF_A);
        assert_true(n.prev.bad[0].would_change);
        const struct plan_problem *pb = only_problem(&n.p, PF_B);
        print_message("  %s\n", pb->message);
        assert_non_null(strstr(pb->message, "state record unusable (/var/lib/sriov-agent/" PF_B
                                            ".json: not JSON: line 1: x)"));
        assert_non_null(strstr(pb->message, "its changes held back"));
        assert_non_null(strstr(pb->message, "until the file is fixed or removed"));
        assert_false(pb->pf_failed); /* Failed through apply_report_add_frozen(), not twice */

        fx_node_done(&n);
}

/* A frozen PF with nothing to change is still reported (its file is still bad), without saying
 * that changes were held back. */
static void test_frozen_pf_without_changes(void **state)
{
        struct fx_node n = { 0 };

        fake_add_pf(&n.inv, PF_A, "ens1f0", 0x15b3, 0x101b, 16, 0, 1500, "mlx5_core");
        add_bad(&n.prev, PF_A, PF_A ".json: record is for PF 0000:5e:00.0.json");

        assert_int_equal(plan_build(&n.d, &n.inv, &n.prev, &n.p), 0);
        assert_int_equal(plan_freeze_bad_records(&n.p, &n.prev), 0);
        assert_int_equal(n.p.n_actions, 0);
        assert_false(n.prev.bad[0].would_change);
        const struct plan_problem *pa = only_problem(&n.p, PF_A);
        print_message("  %s\n", pa->message);
        assert_non_null(strstr(pa->message, "record is for PF"));
        assert_null(strstr(pa->message, "held back"));

        fx_node_done(&n);
}

/* A record's file name may spell the PCI address in capitals: it still freezes that PF. */
static void test_pci_address_case_insensitive(void **state)
{
        struct fx_node n = { 0 };

        fake_add_pf(&n.inv, PF_A, "ens1f0", 0x15b3, 0x101b, 16, 0, 1500, "mlx5_core");
        fx_want(&n.d, PF_A, "ens1f0", 4, 0, fx_group("a", 0, 3));
        add_bad(&n.prev, "0000:3B:00.0", "0000:3B:00.0.json: not JSON");

        assert_int_equal(plan_build(&n.d, &n.inv, &n.prev, &n.p), 0);
        assert_int_equal(plan_freeze_bad_records(&n.p, &n.prev), 0);
        assert_false(fx_plan_touches(&n.p, PF_A));
        assert_int_equal(n.p.applied.n_pfs, 0);
        assert_true(n.prev.bad[0].would_change);

        fx_node_done(&n);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_frozen_pf_held_others_planned),
                cmocka_unit_test(test_frozen_pf_without_changes),
                cmocka_unit_test(test_pci_address_case_insensitive),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
