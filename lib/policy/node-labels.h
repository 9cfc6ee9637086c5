/* SPDX-License-Identifier: Apache-2.0 */
/* The node's labels as key/value pairs, for nodeSelector matching.
 * Parses the command-line form "k=v,k2=v2" (standalone mode and `sriov-agent plan`); a later
 * key replaces an earlier one. Keys must be non-empty; values may be empty ("k="). */
#pragma once

#include <stddef.h>

#include "policy/policy.h"

#define NODE_LABELS_MAX 256

/* text NULL or "" gives no labels. 0, -EINVAL (with *error naming the bad item; free()),
 * -E2BIG past NODE_LABELS_MAX, or -ENOMEM. */
int node_labels_parse(const char *text, struct string_pair **ret, size_t *ret_n, char **error);
/* Sets or replaces one label (copies key and value). 0, -E2BIG or -ENOMEM. */
int node_labels_set(struct string_pair **labels, size_t *n, const char *key, const char *value);
void node_labels_free(struct string_pair *labels, size_t n);
