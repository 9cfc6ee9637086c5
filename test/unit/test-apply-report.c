/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for the decisions taken on an apply's report (plan/apply-report.h): which
 * actions are the PF's own (they gate advertising its VFs), how a PF frozen by an unusable
 * record shows as failed, and when the apply rounds of a reconcile stop. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "plan-fixture.h"
#include "plan/apply-report.h"
#include "util/macro.h"

#define PF_A "0000:3b:00.0"
#define PF_B "0000:5e:00.0"

static void test_pf_level_actions(void **state)
{
        static const struct {
                enum action_kind kind;
                bool pf_level;
        } cases[] = {
                { ACTION_SET_NUM_VFS, true },  { ACTION_SET_ESWITCH_MODE, true },
                { ACTION_SET_PF_MTU, true },   { ACTION_PF_LINK_UP, true },
                { ACTION_RESET_PF, true },     { ACTION_RESTORE_PF_MTU, true },
                { ACTION_BIND_DRIVER, false }, { ACTION_SET_VF_MTU, false },
                { ACTION_SET_VF_GUID, false },
        };
        assert_int_equal(ELEMENTSOF(cases), _ACTION_KIND_MAX); /* a new kind must be decided */
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                print_message("  %s\n", action_kind_to_string(cases[i].kind));
                assert_int_equal(action_is_pf_level(cases[i].kind), cases[i].pf_level);
        }
}

/* A frozen PF the apply did not mention is added as failed (-EBADMSG, naming the record's
 * problem); one it did mention keeps its own line; no PF is listed twice. */
static void test_frozen_pf_reported_failed(void **state)
{
        struct applied_bad_record bad[] = {
                { .pci_address = PF_A,
                  .message = "/var/lib/sriov-agent/0000:3b:00.0.json: "
                             "not JSON: line 1: unexpected token" },
                { .pci_address = PF_B, .message = "/var/lib/sriov-agent/0000:5e:00.0.json: x" },
        };
        const struct applied_state prev = { .bad = bad, .n_bad = ELEMENTSOF(bad) };
        struct apply_report rep = { 0 };

        fx_result(&rep, PF_B, 1, -EIO, ACTION_SET_PF_MTU);
        assert_int_equal(apply_report_n_failed(&rep), 1);
        assert_int_equal(apply_report_add_frozen(&rep, &prev), 0);
        assert_int_equal(rep.n_pfs, 2);
        assert_int_equal(apply_report_n_failed(&rep), 2);
        const struct apply_pf_result *a = apply_report_find(&rep, PF_A);
        assert_non_null(a);
        assert_int_equal(a->error, -EBADMSG);
        assert_int_equal(a->n_done, 0);
        print_message("  %s\n", a->message);
        assert_non_null(strstr(a->message, "PF 0000:3b:00.0: state record unusable"));
        assert_non_null(strstr(a->message, "not JSON: line 1"));
        assert_int_equal(apply_report_find(&rep, PF_B)->error, -EIO);

        assert_int_equal(apply_report_add_frozen(&rep, &prev), 0); /* the next round's call */
        assert_int_equal(rep.n_pfs, 2);
        apply_report_done(&rep);
}

/* Rounds go on while each changes something, up to APPLY_ROUNDS_MAX; a round that failed
 * without changing anything ends them (the retry backoff takes over). */
static void test_rounds(void **state)
{
        struct apply_report ok = { 0 }, partial = { 0 }, stuck = { 0 };

        fx_result(&ok, PF_A, 3, 0, 0);
        fx_result(&partial, PF_A, 2, 0, 0);
        fx_result(&partial, PF_B, 0, -EBUSY, ACTION_SET_NUM_VFS);
        fx_result(&stuck, PF_B, 0, -EBUSY, ACTION_SET_NUM_VFS);
        assert_int_equal(APPLY_ROUNDS_MAX, 3);
        for (int round = 1; round < APPLY_ROUNDS_MAX; round++) {
                assert_false(apply_rounds_over(round, &ok));
                assert_false(apply_rounds_over(round, &partial));
                assert_true(apply_rounds_over(round, &stuck));
        }
        assert_true(apply_rounds_over(APPLY_ROUNDS_MAX, &ok));
        assert_true(apply_rounds_over(APPLY_ROUNDS_MAX, &partial));
        apply_report_done(&ok);
        apply_report_done(&partial);
        apply_report_done(&stuck);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_pf_level_actions),
                cmocka_unit_test(test_frozen_pf_reported_failed),
                cmocka_unit_test(test_rounds),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
