/* YAML text to jansson values, so YAML and JSON inputs share one object parser.
 *
 * Every document of a (possibly multi-document, `---`-separated) stream becomes one element of
 * the returned array. Plain scalars are typed the way Kubernetes' YAML reader types them
 * (true/false, null/~/empty, decimal/0x/0o integers, floats); quoted scalars and scalars tagged
 * !!str stay strings. Mapping keys must be scalars. Aliases are expanded, with a bound on nesting
 * depth and on the total number of nodes produced so "billion laughs" input fails instead of
 * exhausting memory. Pure: no I/O, no logging. */
#pragma once

#include <jansson.h>
#include <stddef.h>

#define YAML_JSON_MAX_DEPTH 64
#define YAML_JSON_MAX_NODES 1000000

/* Returns 0 and a new JSON array of documents, -EINVAL with *error (free()) describing the
 * syntax error and its line, or -ENOMEM. */
int yaml_to_json_documents(const char *data, size_t size, json_t **ret, char **error);
