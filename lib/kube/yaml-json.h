/* YAML documents (kubeconfig files) as jansson values.
 *
 * Mappings become objects, sequences arrays, scalars strings; plain (unquoted) true/false and
 * null/~/empty become booleans and null. With YAML_JSON_TYPED, plain scalars that look like
 * integers or decimals become numbers too (YAML 1.2 core schema), as CRDs and manifests need;
 * without it "8443" stays a string, as kubeconfig string fields need. Anchors and aliases are
 * rejected: kubeconfigs do not use them and expanding them is how "billion laughs" works.
 * Only the first document of a stream is read. Errors are described in *ret_error (line and
 * column from libyaml), which the caller frees. */
#pragma once

#include <jansson.h>
#include <stddef.h>

enum {
        YAML_JSON_TYPED = 1 << 0,
};

int yaml_to_json(const char *text, size_t len, unsigned flags, json_t **ret, char **ret_error);
