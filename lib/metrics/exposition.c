/* SPDX-License-Identifier: Apache-2.0 */
#include "metrics/exposition.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/array.h"
#include "util/macro.h"
#include "util/strv.h"

static const char *const type_names[] = {
        [METRICS_COUNTER] = "counter",
        [METRICS_GAUGE] = "gauge",
        [METRICS_HISTOGRAM] = "histogram",
        [METRICS_UNTYPED] = "untyped",
};

static void fail(struct metrics_writer *w, int error)
{
        if (!w->error)
                w->error = error;
}

static void append(struct metrics_writer *w, const char *s, size_t n)
{
        if (w->error)
                return;
        if (grow_array((void **)&w->buf, &w->cap, w->len + n + 1, 1) < 0 || !w->buf) {
                fail(w, -ENOMEM);
                return;
        }
        memcpy(w->buf + w->len, s, n);
        w->len += n;
        w->buf[w->len] = 0;
}

static void append_str(struct metrics_writer *w, const char *s)
{
        append(w, s, strlen(s));
}

/* HELP text escapes \ and newline; label values also ". */
static void append_escaped(struct metrics_writer *w, const char *s, bool quote)
{
        const char *run = s;
        for (; *s; s++) {
                const char *esc = *s == '\\'             ? "\\\\"
                                  : *s == '\n'           ? "\\n"
                                  : (quote && *s == '"') ? "\\\""
                                                         : NULL;
                if (!esc)
                        continue;
                append(w, run, (size_t)(s - run));
                append_str(w, esc);
                run = s + 1;
        }
        append(w, run, (size_t)(s - run));
}

bool metrics_name_is_valid(const char *name)
{
        if (!name || !*name || (name[0] >= '0' && name[0] <= '9'))
                return false;
        for (const char *p = name; *p; p++)
                if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                      (*p >= '0' && *p <= '9') || *p == '_' || *p == ':'))
                        return false;
        return true;
}

bool metrics_label_name_is_valid(const char *name)
{
        return metrics_name_is_valid(name) && !strchr(name, ':') && strncmp(name, "__", 2) != 0;
}

int metrics_escape_label_value(const char *value, char **ret)
{
        struct metrics_writer w = { 0 };
        append(&w, "", 0);
        append_escaped(&w, value, true);
        if (w.error) {
                metrics_writer_done(&w);
                return w.error;
        }
        *ret = TAKE_PTR(w.buf);
        return 0;
}

void metrics_writer_done(struct metrics_writer *w)
{
        free(w->buf);
        free(w->family);
        strv_free_n(w->declared, w->n_declared);
        *w = (struct metrics_writer){ 0 };
}

int metrics_writer_reserve(struct metrics_writer *w, size_t n)
{
        if (n >= SIZE_MAX - w->len)
                return -ENOMEM;
        return grow_array((void **)&w->buf, &w->cap, w->len + n + 1, 1);
}

void metrics_family(struct metrics_writer *w, const char *name, enum metrics_type type,
                    const char *help)
{
        if (w->error)
                return;
        if (!metrics_name_is_valid(name) || (unsigned)type >= ELEMENTSOF(type_names)) {
                fail(w, -EINVAL);
                return;
        }
        if (strv_contains(w->declared, w->n_declared, name)) {
                fail(w, -EEXIST);
                return;
        }
        char *copy = strdup(name);
        if (!copy || GROW_ARRAY(w->declared, w->cap_declared, w->n_declared + 1) < 0) {
                free(copy);
                fail(w, -ENOMEM);
                return;
        }
        w->declared[w->n_declared++] = copy;
        free(w->family);
        w->family = strdup(name);
        if (!w->family) {
                fail(w, -ENOMEM);
                return;
        }
        w->type = type;
        size_t n = strlen(name);
        if (w->openmetrics && type == METRICS_COUNTER) {
                /* OpenMetrics names the counter family without the samples' suffix */
                if (n <= 6 || strcmp(name + n - 6, "_total") != 0) {
                        fail(w, -EINVAL);
                        return;
                }
                n -= 6;
        }
        append_str(w, "# HELP ");
        append(w, name, n);
        append_str(w, " ");
        append_escaped(w, help ? help : "", w->openmetrics);
        append_str(w, "\n# TYPE ");
        append(w, name, n);
        append_str(w, " ");
        append_str(w, w->openmetrics && type == METRICS_UNTYPED ? "unknown" : type_names[type]);
        append_str(w, "\n");
}

/* A sample's name must be the current family's, or for a histogram one of its series. */
static bool belongs(const struct metrics_writer *w, const char *name)
{
        if (!w->family)
                return false;
        size_t n = strlen(w->family);
        if (strncmp(name, w->family, n) != 0)
                return false;
        if (name[n] == 0)
                return w->type != METRICS_HISTOGRAM;
        return w->type == METRICS_HISTOGRAM &&
               (strcmp(name + n, "_bucket") == 0 || strcmp(name + n, "_sum") == 0 ||
                strcmp(name + n, "_count") == 0);
}

static void sample_start(struct metrics_writer *w, const char *name,
                         const struct metrics_label *labels, size_t n_labels, const char *le)
{
        if (w->error)
                return;
        if (!belongs(w, name)) {
                fail(w, -EINVAL);
                return;
        }
        append_str(w, name);
        if (n_labels == 0 && !le) {
                append_str(w, " ");
                return;
        }
        append_str(w, "{");
        for (size_t i = 0; i < n_labels; i++) {
                if (!metrics_label_name_is_valid(labels[i].name) ||
                    strcmp(labels[i].name, "le") == 0) {
                        fail(w, -EINVAL);
                        return;
                }
                for (size_t j = 0; j < i; j++)
                        if (strcmp(labels[i].name, labels[j].name) == 0) {
                                fail(w, -EINVAL);
                                return;
                        }
                if (i > 0)
                        append_str(w, ",");
                append_str(w, labels[i].name);
                append_str(w, "=\"");
                append_escaped(w, labels[i].value ? labels[i].value : "", true);
                append_str(w, "\"");
        }
        if (le) {
                append_str(w, n_labels ? ",le=\"" : "le=\"");
                append_str(w, le);
                append_str(w, "\"");
        }
        append_str(w, "} ");
}

/* Decimal digits of v into buf (at least 21 bytes), NUL-terminated; returns their count. Most
 * samples are counters: printf's general machinery was a third of a scrape's instructions. */
static size_t format_u64(uint64_t v, char *buf)
{
        char tmp[20];
        size_t n = 0;
        do {
                tmp[n++] = (char)('0' + v % 10);
                v /= 10;
        } while (v);
        for (size_t i = 0; i < n; i++)
                buf[i] = tmp[n - 1 - i];
        buf[n] = 0;
        return n;
}

/* The shortest of %.15g/%.17g that reads back as the same double; NaN and ±Inf as the format
 * spells them. A whole number below 2^53 is exact as an integer and %.15g writes it the same
 * way up to 10^15, so those take the integer path. */
static void format_double(double v, char buf[32])
{
        if (isnan(v))
                strcpy(buf, "NaN");
        else if (isinf(v))
                strcpy(buf, v > 0 ? "+Inf" : "-Inf");
        else if (v >= 0 && v < 1e15 && v == (double)(uint64_t)v && !(v == 0 && signbit(v)))
                format_u64((uint64_t)v, buf);
        else if (v < 0 && v > -1e15 && v == -(double)(uint64_t)-v) {
                buf[0] = '-';
                format_u64((uint64_t)-v, buf + 1);
        } else {
                snprintf(buf, 32, "%.15g", v);
                if (strtod(buf, NULL) != v)
                        snprintf(buf, 32, "%.17g", v);
        }
}

void metrics_sample(struct metrics_writer *w, const char *name, const struct metrics_label *labels,
                    size_t n_labels, double value)
{
        char buf[32];
        sample_start(w, name, labels, n_labels, NULL);
        format_double(value, buf);
        append_str(w, buf);
        append_str(w, "\n");
}

void metrics_sample_u64(struct metrics_writer *w, const char *name,
                        const struct metrics_label *labels, size_t n_labels, uint64_t value)
{
        char buf[32];
        sample_start(w, name, labels, n_labels, NULL);
        size_t n = format_u64(value, buf);
        buf[n] = '\n';
        append(w, buf, n + 1);
}

void metrics_sample_histogram(struct metrics_writer *w, const char *name,
                              const struct metrics_label *labels, size_t n_labels,
                              const struct metrics_histogram *h)
{
        char series[256], le[32], value[32];
        if (w->error)
                return;
        if (!w->family || strcmp(name, w->family) != 0 || w->type != METRICS_HISTOGRAM ||
            strlen(name) + sizeof("_bucket") > sizeof(series)) {
                fail(w, -EINVAL);
                return;
        }
        uint64_t cumulative = 0;
        snprintf(series, sizeof(series), "%s_bucket", name);
        for (size_t i = 0; i <= h->n_bounds; i++) {
                cumulative += h->counts[i];
                if (i < h->n_bounds)
                        format_double(h->bounds[i], le);
                else
                        strcpy(le, "+Inf");
                sample_start(w, series, labels, n_labels, le);
                snprintf(value, sizeof(value), "%" PRIu64 "\n", cumulative);
                append_str(w, value);
        }
        snprintf(series, sizeof(series), "%s_sum", name);
        metrics_sample(w, series, labels, n_labels, h->sum);
        snprintf(series, sizeof(series), "%s_count", name);
        metrics_sample_u64(w, series, labels, n_labels, h->count);
}

int metrics_writer_finish(struct metrics_writer *w, char **ret, size_t *ret_len)
{
        int r = w->error;
        if (r == 0 && !w->buf)
                append(w, "", 0);
        if (w->openmetrics)
                append_str(w, "# EOF\n");
        r = w->error;
        if (r == 0) {
                *ret = TAKE_PTR(w->buf);
                *ret_len = w->len;
        }
        metrics_writer_done(w);
        return r;
}

/* The q of one media range of an Accept header ("type/sub;version=x;q=0.5"), and whether it is
 * the type and version asked for (version NULL: any subtype match is enough). */
static double media_q(const char *range, size_t len, const char *type, const char *version)
{
        char buf[256];
        if (len >= sizeof(buf))
                return 0;
        memcpy(buf, range, len);
        buf[len] = 0;
        double q = 1;
        bool type_ok = false, version_ok = true, first = true;
        char *save = NULL;
        for (char *part = strtok_r(buf, ";", &save); part;
             part = strtok_r(NULL, ";", &save), first = false) {
                part += strspn(part, " \t");
                size_t end = strlen(part);
                while (end > 0 && (part[end - 1] == ' ' || part[end - 1] == '\t'))
                        part[--end] = 0;
                if (first)
                        type_ok = strcasecmp(part, type) == 0;
                else if (strncasecmp(part, "q=", 2) == 0)
                        q = strtod(part + 2, NULL);
                else if (version && strncasecmp(part, "version=", 8) == 0)
                        version_ok = strcmp(part + 8, version) == 0;
        }
        return type_ok && version_ok && q > 0 && q <= 1 ? q : 0;
}

/* max of two q values (never NaN: media_q() returns 0 or a q in (0, 1]); not fmax(), which
 * alone made the agent load libm (0.9 MiB of the image). */
static double max_q(double a, double b)
{
        return a > b ? a : b;
}

bool metrics_accepts_openmetrics(const char *accept)
{
        double om = 0, text = 0;
        for (const char *p = accept; p && *p;) {
                size_t len = strcspn(p, ",");
                om = max_q(om, media_q(p, len, "application/openmetrics-text", "1.0.0"));
                text = max_q(text, media_q(p, len, "text/plain", "0.0.4"));
                text = max_q(text, media_q(p, len, "text/*", NULL));
                text = max_q(text, media_q(p, len, "*/*", NULL));
                p += len + (p[len] == ',');
        }
        return om > text;
}
