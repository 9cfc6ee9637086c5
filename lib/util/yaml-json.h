/* SPDX-License-Identifier: Apache-2.0 */
/* YAML text to jansson values, so YAML and JSON inputs share one object parser (policy files,
 * kubeconfig files).
 *
 * Every document of a (possibly multi-document, `---`-separated) stream becomes one element of
 * the returned array. Plain scalars true/false and null/~/empty are always typed; with
 * YAML_JSON_TYPED other plain scalars are typed the way Kubernetes' YAML reader types them
 * (decimal/0x/0o integers, floats), otherwise they stay strings ("8443" in a kubeconfig).
 * Quoted scalars and scalars tagged !!str are strings. Mapping keys must be scalars. Aliases
 * are expanded with a bound on nesting depth and on the total number of nodes produced, so
 * "billion laughs" input fails instead of exhausting memory; YAML_JSON_NO_ALIASES refuses
 * them outright. Pure: no I/O, no logging. */
#pragma once

#include <jansson.h>
#include <stddef.h>

#define YAML_JSON_MAX_DEPTH 64
#define YAML_JSON_MAX_NODES 1000000

enum {
        YAML_JSON_TYPED = 1 << 0,
        YAML_JSON_NO_ALIASES = 1 << 1,
};

/* Returns 0 and a new JSON array of documents, -EINVAL with *error (free()) describing the
 * syntax error and its line, or -ENOMEM. */
int yaml_to_json_documents(const char *data, size_t size, unsigned flags, json_t **ret,
                           char **error);
/* The first document only (null for an empty stream). Same returns. */
int yaml_to_json(const char *data, size_t size, unsigned flags, json_t **ret, char **error);
