/* SPDX-License-Identifier: Apache-2.0 */
/* util/debounce.h: an isolated change is handled without waiting; a burst costs at most one
 * start per window. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "util/debounce.h"

#define MS 1000ULL

static void test_isolated_change_runs_now(void **state)
{
        assert_int_equal(debounce_delay(5000 * MS, 0, 200 * MS), 0);         /* first ever */
        assert_int_equal(debounce_delay(5000 * MS, 4000 * MS, 200 * MS), 0); /* quiet before */
        assert_int_equal(debounce_delay(5000 * MS, 4800 * MS, 200 * MS), 0); /* window over */
}

static void test_burst_waits_for_the_window(void **state)
{
        /* A reconcile started at 4.9 s: events until 5.1 s wait for its window to end. */
        assert_int_equal(debounce_delay(4900 * MS, 4900 * MS, 200 * MS), 200 * MS);
        assert_int_equal(debounce_delay(5000 * MS, 4900 * MS, 200 * MS), 100 * MS);
        assert_int_equal(debounce_delay(5099 * MS, 4900 * MS, 200 * MS), 1 * MS);
        /* so a burst of events every millisecond starts at most one run per window */
        unsigned starts = 0;
        uint64_t last = 0, due = 0;
        for (uint64_t t = 1000 * MS; t < 2000 * MS; t += MS) {
                if (due && t >= due) {
                        starts++;
                        last = t;
                        due = 0;
                }
                if (!due)
                        due = t + debounce_delay(t, last, 200 * MS);
                if (due == t) {
                        starts++;
                        last = t;
                        due = 0;
                }
        }
        assert_in_range(starts, 5, 6);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_isolated_change_runs_now),
                cmocka_unit_test(test_burst_waits_for_the_window),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
