/* SPDX-License-Identifier: Apache-2.0 */
/* Prometheus text exposition format 0.0.4, written into a growing buffer (pure, no I/O).
 *
 *   struct metrics_writer w = { 0 };
 *   metrics_family(&w, "sriov_vf_rx_bytes", METRICS_COUNTER, "Bytes received by the VF.");
 *   metrics_sample_u64(&w, "sriov_vf_rx_bytes", METRICS_LABELS({ "pf", "ens1f0" }), 42);
 *   r = metrics_writer_finish(&w, &text, &len);     // the first error, or 0
 *
 * The format wants every sample of a family right after its HELP and TYPE lines, each family
 * once: the writer refuses a sample of another family than the current one, a family declared
 * twice and invalid metric or label names, with a sticky error that finish() returns (so the
 * callers can write many samples and check once). Label values and HELP texts are escaped.
 *
 * With openmetrics set before the first family, the same calls write OpenMetrics 1.0.0 text
 * instead: a counter family (whose name must end in "_total", as its samples') is declared
 * without the suffix, untyped is "unknown", HELP escapes '"' too, and finish() adds "# EOF". */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "metrics/histogram.h"

enum metrics_type {
        METRICS_COUNTER,
        METRICS_GAUGE,
        METRICS_HISTOGRAM,
        METRICS_UNTYPED,
};

struct metrics_label {
        const char *name;
        const char *value;
};

/* METRICS_LABELS({ "pf", pf }, { "vf", vf }) → a label array and its count. */
#define METRICS_LABELS(...)                                                                        \
        ((const struct metrics_label[]){ __VA_ARGS__ }),                                           \
            (sizeof((const struct metrics_label[]){ __VA_ARGS__ }) / sizeof(struct metrics_label))
#define METRICS_NO_LABELS NULL, 0

struct metrics_writer {
        bool openmetrics; /* set before the first family: OpenMetrics 1.0.0 */
        char *buf;
        size_t len, cap;
        int error;              /* first error: -ENOMEM, -EINVAL (bad name), -EEXIST (twice) */
        char *family;           /* the family samples may belong to now */
        enum metrics_type type; /* its type */
        char **declared;        /* every family so far, to refuse one twice */
        size_t n_declared, cap_declared;
};

void metrics_writer_done(struct metrics_writer *w);
/* Room for n bytes of text before the first write, so that text of a known size (a scrape of
 * the same node is as long as the last) is written into one buffer without regrowing it. */
int metrics_writer_reserve(struct metrics_writer *w, size_t n);

/* The "# HELP" and "# TYPE" lines of a family; samples of it follow. */
void metrics_family(struct metrics_writer *w, const char *name, enum metrics_type type,
                    const char *help);
/* One sample line. name is the family's name, or for a histogram the family's name plus
 * "_bucket", "_sum" or "_count". */
void metrics_sample(struct metrics_writer *w, const char *name, const struct metrics_label *labels,
                    size_t n_labels, double value);
/* The same with an exact integer (counters past 2^53 stay exact). */
void metrics_sample_u64(struct metrics_writer *w, const char *name,
                        const struct metrics_label *labels, size_t n_labels, uint64_t value);
/* The _bucket (cumulative, with le="+Inf"), _sum and _count lines of a histogram family. */
void metrics_sample_histogram(struct metrics_writer *w, const char *name,
                              const struct metrics_label *labels, size_t n_labels,
                              const struct metrics_histogram *h);

/* Hands the text over (NUL-terminated, *ret_len without the NUL; free() it) and resets the
 * writer. On an earlier error returns it and hands nothing. */
int metrics_writer_finish(struct metrics_writer *w, char **ret, size_t *ret_len);

#define METRICS_CONTENT_TYPE_TEXT "text/plain; version=0.0.4; charset=utf-8"
#define METRICS_CONTENT_TYPE_OPENMETRICS                                                           \
        "application/openmetrics-text; version=1.0.0; charset=utf-8"

/* Whether an HTTP Accept header prefers OpenMetrics 1.0.0 to the text format 0.0.4: its best
 * q for application/openmetrics-text (version 1.0.0 or none) is above that of text/plain
 * (version 0.0.4 or none), text/\* and \*\/\*. NULL or empty: no. */
bool metrics_accepts_openmetrics(const char *accept);

/* Exposed for tests: the escaped form of a label value (\\, \", \n). */
int metrics_escape_label_value(const char *value, char **ret);
/* A valid metric name ([a-zA-Z_:][a-zA-Z0-9_:]*) or label name ([a-zA-Z_][a-zA-Z0-9_]*, not
 * starting with "__"). */
bool metrics_name_is_valid(const char *name);
bool metrics_label_name_is_valid(const char *name);
