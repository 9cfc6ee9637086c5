/* SPDX-License-Identifier: Apache-2.0 */
/* metrics/exposition.h: what a Prometheus parser needs from the text format 0.0.4 — HELP and
 * TYPE before a family's samples, each family once, escaped label values and HELP texts,
 * cumulative histogram buckets ending in +Inf, exact integers. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "metrics/exposition.h"
#include "util/macro.h"

static char *finish(struct metrics_writer *w)
{
        char *text = NULL;
        size_t len = 0;
        assert_int_equal(metrics_writer_finish(w, &text, &len), 0);
        assert_int_equal(strlen(text), len);
        return text;
}

static void test_help_and_type_precede_samples(void **state)
{
        struct metrics_writer w = { 0 };
        metrics_family(&w, "sriov_vf_rx_bytes", METRICS_COUNTER, "Bytes received by the VF.");
        metrics_sample_u64(
            &w, "sriov_vf_rx_bytes",
            METRICS_LABELS({ "pf", "ens1f0" }, { "vf", "3" }, { "pciAddr", "0000:3b:02.3" }),
            18446744073709551615ULL);
        metrics_family(&w, "sriov_agent_up", METRICS_GAUGE, "Always 1.");
        metrics_sample(&w, "sriov_agent_up", METRICS_NO_LABELS, 1);
        _cleanup_free_ char *text = finish(&w);
        assert_string_equal(text,
                            "# HELP sriov_vf_rx_bytes Bytes received by the VF.\n"
                            "# TYPE sriov_vf_rx_bytes counter\n"
                            "sriov_vf_rx_bytes{pf=\"ens1f0\",vf=\"3\",pciAddr=\"0000:3b:02.3\"} "
                            "18446744073709551615\n"
                            "# HELP sriov_agent_up Always 1.\n"
                            "# TYPE sriov_agent_up gauge\n"
                            "sriov_agent_up 1\n");
}

/* Text within the reserved room is written into that one buffer; beyond it the buffer grows
 * as without a reserve, and the text is the same either way. */
static void test_reserve_keeps_one_buffer(void **state)
{
        struct metrics_writer w = { 0 };
        assert_int_equal(metrics_writer_reserve(&w, 4096), 0);
        const char *const buf = w.buf;
        assert_non_null(buf);
        metrics_family(&w, "sriov_agent_up", METRICS_GAUGE, "Always 1.");
        for (int i = 0; i < 100; i++)
                metrics_sample(&w, "sriov_agent_up", METRICS_NO_LABELS, 1);
        assert_true(w.len < 4096);
        assert_ptr_equal(w.buf, buf);
        for (int i = 0; i < 400; i++)
                metrics_sample(&w, "sriov_agent_up", METRICS_NO_LABELS, 1);
        _cleanup_free_ char *text = finish(&w);
        struct metrics_writer plain = { 0 };
        metrics_family(&plain, "sriov_agent_up", METRICS_GAUGE, "Always 1.");
        for (int i = 0; i < 500; i++)
                metrics_sample(&plain, "sriov_agent_up", METRICS_NO_LABELS, 1);
        _cleanup_free_ char *plain_text = finish(&plain);
        assert_string_equal(text, plain_text);
        assert_int_equal(metrics_writer_reserve(&w, SIZE_MAX), -ENOMEM);
}

static void test_label_values_are_escaped(void **state)
{
        struct metrics_writer w = { 0 };
        metrics_family(&w, "x", METRICS_GAUGE, "a \\ backslash\nand a newline \"quoted\"");
        metrics_sample(&w, "x", METRICS_LABELS({ "pod", "we\"ird\\na\nme" }), 0.5);
        _cleanup_free_ char *text = finish(&w);
        /* HELP escapes \ and newline but not "; label values all three */
        assert_string_equal(text, "# HELP x a \\\\ backslash\\nand a newline \"quoted\"\n"
                                  "# TYPE x gauge\n"
                                  "x{pod=\"we\\\"ird\\\\na\\nme\"} 0.5\n");
        _cleanup_free_ char *escaped = NULL;
        assert_int_equal(metrics_escape_label_value("ünïcode stays", &escaped), 0);
        assert_string_equal(escaped, "ünïcode stays");
}

static void test_a_sample_outside_its_family_is_refused(void **state)
{
        char *text = NULL;
        size_t len;
        struct metrics_writer w = { 0 };
        metrics_family(&w, "a", METRICS_GAUGE, "A.");
        metrics_family(&w, "b", METRICS_GAUGE, "B.");
        metrics_sample(&w, "a", METRICS_NO_LABELS, 1); /* "a" is no longer the current family */
        assert_int_equal(metrics_writer_finish(&w, &text, &len), -EINVAL);
        assert_null(text);

        metrics_family(&w, "a", METRICS_GAUGE, "A.");
        metrics_sample(&w, "a", METRICS_NO_LABELS, 1);
        metrics_family(&w, "a", METRICS_GAUGE, "A again."); /* split family */
        assert_int_equal(metrics_writer_finish(&w, &text, &len), -EEXIST);

        metrics_sample(&w, "orphan", METRICS_NO_LABELS, 1); /* no family at all */
        assert_int_equal(metrics_writer_finish(&w, &text, &len), -EINVAL);
}

static void test_invalid_names_are_refused(void **state)
{
        char *text = NULL;
        size_t len;
        struct metrics_writer w = { 0 };
        assert_true(metrics_name_is_valid("sriov:vf_rx_bytes"));
        assert_false(metrics_name_is_valid("9lives"));
        assert_false(metrics_name_is_valid("rx-bytes"));
        assert_false(metrics_label_name_is_valid("__name__"));
        assert_false(metrics_label_name_is_valid("a:b"));

        metrics_family(&w, "rx-bytes", METRICS_GAUGE, "bad");
        assert_int_equal(metrics_writer_finish(&w, &text, &len), -EINVAL);

        metrics_family(&w, "ok", METRICS_GAUGE, "fine");
        metrics_sample(&w, "ok", METRICS_LABELS({ "pf", "a" }, { "pf", "b" }), 1); /* twice */
        assert_int_equal(metrics_writer_finish(&w, &text, &len), -EINVAL);

        metrics_family(&w, "ok", METRICS_GAUGE, "fine");
        metrics_sample(&w, "ok", METRICS_LABELS({ "le", "1" }), 1); /* reserved for buckets */
        assert_int_equal(metrics_writer_finish(&w, &text, &len), -EINVAL);
}

static void test_histogram_buckets_are_cumulative(void **state)
{
        static const double bounds[] = { 0.1, 1 };
        struct metrics_histogram h;
        metrics_histogram_init(&h, bounds, ELEMENTSOF(bounds));
        metrics_histogram_observe(&h, 0.05);
        metrics_histogram_observe(&h, 0.1); /* on the bound: in that bucket (le) */
        metrics_histogram_observe(&h, 0.5);
        metrics_histogram_observe(&h, 7);
        metrics_histogram_observe(&h, NAN); /* ignored */

        struct metrics_writer w = { 0 };
        metrics_family(&w, "d_seconds", METRICS_HISTOGRAM, "Durations.");
        metrics_sample_histogram(&w, "d_seconds", METRICS_LABELS({ "verb", "GET" }), &h);
        metrics_sample(&w, "d_seconds_count", METRICS_LABELS({ "verb", "PUT" }), 0);
        _cleanup_free_ char *text = finish(&w);
        assert_string_equal(text, "# HELP d_seconds Durations.\n"
                                  "# TYPE d_seconds histogram\n"
                                  "d_seconds_bucket{verb=\"GET\",le=\"0.1\"} 2\n"
                                  "d_seconds_bucket{verb=\"GET\",le=\"1\"} 3\n"
                                  "d_seconds_bucket{verb=\"GET\",le=\"+Inf\"} 4\n"
                                  "d_seconds_sum{verb=\"GET\"} 7.65\n"
                                  "d_seconds_count{verb=\"GET\"} 4\n"
                                  "d_seconds_count{verb=\"PUT\"} 0\n");

        /* a histogram's own name is not a sample of it */
        metrics_family(&w, "e_seconds", METRICS_HISTOGRAM, "E.");
        metrics_sample(&w, "e_seconds", METRICS_NO_LABELS, 1);
        char *bad = NULL;
        size_t len;
        assert_int_equal(metrics_writer_finish(&w, &bad, &len), -EINVAL);
}

/* OpenMetrics 1.0.0: counter families declared without _total (samples keep it), untyped is
 * unknown, HELP escapes quotes too, # EOF last; a counter not named *_total is refused. */
static void test_openmetrics(void **state)
{
        struct metrics_writer w = { .openmetrics = true };
        metrics_family(&w, "sriov_agent_reconciles_total", METRICS_COUNTER,
                       "Reconciles \"ended\".");
        metrics_sample_u64(&w, "sriov_agent_reconciles_total", METRICS_LABELS({ "result", "ok" }),
                           3);
        metrics_family(&w, "sriov_vf_rx_bytes", METRICS_UNTYPED, "Bytes.");
        metrics_sample_u64(&w, "sriov_vf_rx_bytes", METRICS_LABELS({ "vf", "0" }), 7);
        _cleanup_free_ char *text = finish(&w);
        assert_string_equal(text, "# HELP sriov_agent_reconciles Reconciles \\\"ended\\\".\n"
                                  "# TYPE sriov_agent_reconciles counter\n"
                                  "sriov_agent_reconciles_total{result=\"ok\"} 3\n"
                                  "# HELP sriov_vf_rx_bytes Bytes.\n"
                                  "# TYPE sriov_vf_rx_bytes unknown\n"
                                  "sriov_vf_rx_bytes{vf=\"0\"} 7\n"
                                  "# EOF\n");
        struct metrics_writer bad = { .openmetrics = true };
        metrics_family(&bad, "sriov_things", METRICS_COUNTER, "no _total");
        char *t = NULL;
        size_t len = 0;
        assert_int_equal(metrics_writer_finish(&bad, &t, &len), -EINVAL);
        struct metrics_writer empty = { .openmetrics = true };
        _cleanup_free_ char *eof = finish(&empty);
        assert_string_equal(eof, "# EOF\n");
}

/* Accept negotiation as scrapers send it. */
static void test_accept_negotiation(void **state)
{
        /* Prometheus 2.x and 3.x */
        assert_true(metrics_accepts_openmetrics(
            "application/openmetrics-text;version=1.0.0,application/openmetrics-text;"
            "version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"));
        assert_true(metrics_accepts_openmetrics(
            "application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.6,"
            "application/openmetrics-text;version=0.0.1;q=0.5,text/plain;version=1.0.0;"
            "escaping=allow-utf-8;q=0.4,text/plain;version=0.0.4;q=0.3,*/*;q=0.2"));
        assert_true(metrics_accepts_openmetrics("Application/OpenMetrics-Text"));
        /* curl, browsers, a header preferring text, an OpenMetrics version we do not write */
        assert_false(metrics_accepts_openmetrics(NULL));
        assert_false(metrics_accepts_openmetrics(""));
        assert_false(metrics_accepts_openmetrics("*/*"));
        assert_false(metrics_accepts_openmetrics("text/html,application/xhtml+xml,*/*;q=0.8"));
        assert_false(metrics_accepts_openmetrics(
            "text/plain;version=0.0.4;q=0.9,application/openmetrics-text;q=0.5"));
        assert_false(metrics_accepts_openmetrics("application/openmetrics-text;version=0.0.1"));
        assert_false(metrics_accepts_openmetrics("application/openmetrics-text;q=0"));
}

static void test_special_values(void **state)
{
        struct metrics_writer w = { 0 };
        metrics_family(&w, "v", METRICS_GAUGE, "");
        metrics_sample(&w, "v", METRICS_LABELS({ "k", "nan" }), NAN);
        metrics_sample(&w, "v", METRICS_LABELS({ "k", "inf" }), -INFINITY);
        metrics_sample(&w, "v", METRICS_LABELS({ "k", "tenth" }), 0.1);
        metrics_sample(&w, "v", METRICS_LABELS({ "k", "third" }), 1.0 / 3);
        _cleanup_free_ char *text = finish(&w);
        assert_string_equal(text, "# HELP v \n# TYPE v gauge\n"
                                  "v{k=\"nan\"} NaN\n"
                                  "v{k=\"inf\"} -Inf\n"
                                  "v{k=\"tenth\"} 0.1\n"
                                  "v{k=\"third\"} 0.33333333333333331\n");
}

/* The integer fast path writes exactly what the general %.15g/%.17g rule writes, on both sides
 * of its bounds (2^53, 10^15), for negatives, zero and -0. */
static void test_numbers_as_printf_writes_them(void **state)
{
        const double values[] = { 0,
                                  -0.0,
                                  1,
                                  -1,
                                  7,
                                  10,
                                  12345678,
                                  4294967296.0,
                                  999999999999999.0,
                                  1e15,
                                  1e15 + 1,
                                  9007199254740992.0,
                                  9007199254740993.0,
                                  -999999999999999.0,
                                  -1e15,
                                  0.5,
                                  1e-300,
                                  123.25,
                                  -2.5e10,
                                  18446744073709551615.0 };
        for (size_t i = 0; i < ELEMENTSOF(values); i++) {
                struct metrics_writer w = { 0 };
                metrics_family(&w, "x", METRICS_GAUGE, "x");
                metrics_sample(&w, "x", METRICS_NO_LABELS, values[i]);
                _cleanup_free_ char *text = finish(&w);
                char want[64];
                snprintf(want, sizeof(want), "%.15g", values[i]);
                if (strtod(want, NULL) != values[i])
                        snprintf(want, sizeof(want), "%.17g", values[i]);
                const char *got = strstr(text, "\nx ");
                assert_non_null(got);
                char line[80];
                snprintf(line, sizeof(line), "\nx %s\n", want);
                assert_string_equal(got, line);
        }
        const uint64_t counts[] = { 0, 9, 10, 4294967295ULL, 18446744073709551615ULL };
        for (size_t i = 0; i < ELEMENTSOF(counts); i++) {
                struct metrics_writer w = { 0 };
                metrics_family(&w, "c", METRICS_COUNTER, "c");
                metrics_sample_u64(&w, "c", METRICS_NO_LABELS, counts[i]);
                _cleanup_free_ char *text = finish(&w);
                char line[64];
                snprintf(line, sizeof(line), "\nc %" PRIu64 "\n", counts[i]);
                assert_string_equal(strstr(text, "\nc "), line);
        }
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_help_and_type_precede_samples),
                cmocka_unit_test(test_label_values_are_escaped),
                cmocka_unit_test(test_a_sample_outside_its_family_is_refused),
                cmocka_unit_test(test_invalid_names_are_refused),
                cmocka_unit_test(test_histogram_buckets_are_cumulative),
                cmocka_unit_test(test_special_values),
                cmocka_unit_test(test_numbers_as_printf_writes_them),
                cmocka_unit_test(test_openmetrics),
                cmocka_unit_test(test_accept_negotiation),
                cmocka_unit_test(test_reserve_keeps_one_buffer),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
