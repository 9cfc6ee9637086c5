/* YAML documents (kubeconfig files) as jansson values.
 *
 * Mappings become objects, sequences arrays, scalars strings (plain scalars "true"/"false"
 * become booleans, so insecure-skip-tls-verify works quoted or not). Anchors and aliases are
 * rejected: kubeconfigs do not use them and expanding them is how "billion laughs" works.
 * Only the first document of a stream is read. Errors are described in *ret_error (line and
 * column from libyaml), which the caller frees. */
#pragma once

#include <jansson.h>
#include <stddef.h>

int yaml_to_json(const char *text, size_t len, json_t **ret, char **ret_error);
