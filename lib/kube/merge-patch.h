/* SPDX-License-Identifier: Apache-2.0 */
/* Computing JSON merge patches (RFC 7386) between what the server has and what we want.
 *
 * kube_merge_patch_diff(old, new) returns the smallest merge patch that turns old into new:
 * changed or added keys carry the new value (objects recursively), keys missing from new are
 * null, arrays are replaced whole. kube_merge_patch_diff_owned() only looks at the keys present
 * in new, so fields written by others (e.g. status.system) are left alone.
 * Both return a new reference to an object, empty when nothing differs (no write needed). */
#pragma once

#include <jansson.h>

json_t *kube_merge_patch_diff(json_t *old, json_t *new_value);
json_t *kube_merge_patch_diff_owned(json_t *old, json_t *new_value);
