/* SPDX-License-Identifier: Apache-2.0 */
#include "policy/node-labels.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/macro.h"

void node_labels_free(struct string_pair *labels, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                free(labels[i].key);
                free(labels[i].value);
        }
        free(labels);
}

int node_labels_set(struct string_pair **labels, size_t *n, const char *key, const char *value)
{
        _cleanup_free_ char *v = strdup(value);
        if (!v)
                return -ENOMEM;
        for (size_t i = 0; i < *n; i++)
                if (strcmp((*labels)[i].key, key) == 0) {
                        free((*labels)[i].value);
                        (*labels)[i].value = TAKE_PTR(v);
                        return 0;
                }
        if (*n >= NODE_LABELS_MAX)
                return -E2BIG;
        /* One at a time: at most NODE_LABELS_MAX, each set already searches the keys (O(n)). */
        struct string_pair *p = realloc(*labels, (*n + 1) * sizeof(*p));
        if (p)
                *labels = p;
        _cleanup_free_ char *k = strdup(key);
        if (!p || !k)
                /* NOLINTNEXTLINE(clang-analyzer-unix.Malloc): _cleanup_ frees it */
                return -ENOMEM;
        p[(*n)++] = (struct string_pair){ .key = TAKE_PTR(k), .value = TAKE_PTR(v) };
        return 0;
}

int node_labels_parse(const char *text, struct string_pair **ret, size_t *ret_n, char **error)
{
        struct string_pair *labels = NULL;
        size_t n = 0;
        _cleanup_free_ char *copy = strdup(text ? text : "");
        char *save = NULL;
        int r = 0;

        if (!copy)
                return -ENOMEM;
        /* NOLINTNEXTLINE(clang-analyzer-unix.Malloc): _cleanup_ frees it */
        for (char *item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
                char *eq = strchr(item, '=');
                if (!eq || eq == item) {
                        if (error && asprintf(error, "\"%s\" is not key=value", item) < 0)
                                *error = NULL;
                        r = -EINVAL;
                        break;
                }
                *eq = '\0';
                r = node_labels_set(&labels, &n, item, eq + 1);
                if (r < 0) {
                        if (r == -E2BIG && error &&
                            asprintf(error, "more than %d labels", NODE_LABELS_MAX) < 0)
                                *error = NULL;
                        break;
                }
        }
        if (r < 0) {
                node_labels_free(labels, n);
                return r;
        }
        *ret = labels;
        *ret_n = n;
        return 0;
}
