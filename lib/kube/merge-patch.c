/* SPDX-License-Identifier: Apache-2.0 */
#include "kube/merge-patch.h"

#include <stdbool.h>

#include "util/macro.h"

static json_t *diff(json_t *old, json_t *new_value, bool owned_only)
{
        json_auto_t *patch = json_object();
        if (!patch)
                return NULL;
        const char *key;
        json_t *value;
        if (!owned_only && json_is_object(old))
                json_object_foreach(old, key, value) if (!json_object_get(new_value, key))
                    json_object_set_new(patch, key, json_null());
        json_object_foreach(new_value, key, value)
        {
                json_t *before = json_object_get(old, key);
                if (before && json_equal(before, value))
                        continue;
                if (json_is_object(before) && json_is_object(value)) {
                        /* Below the top level we own the whole subtree. */
                        json_auto_t *sub = diff(before, value, false);
                        if (!sub)
                                return NULL;
                        if (json_object_size(sub) > 0)
                                json_object_set_new(patch, key, TAKE_PTR(sub));
                } else
                        json_object_set(patch, key, value);
        }
        return TAKE_PTR(patch);
}

json_t *kube_merge_patch_diff(json_t *old, json_t *new_value)
{
        return diff(old, new_value, false);
}

json_t *kube_merge_patch_diff_owned(json_t *old, json_t *new_value)
{
        return diff(old, new_value, true);
}
