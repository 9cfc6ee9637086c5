/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for lib/kube/merge-patch: the smallest RFC 7386 patch between two documents,
 * empty when nothing changed (which is how the NodeState writer skips writes). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kube/merge-patch.h"

static void expect(json_t *(*fn)(json_t *, json_t *), const char *old, const char *new_value,
                   const char *patch)
{
        json_t *o = json_loads(old, JSON_DECODE_ANY, NULL), *n = json_loads(new_value, 0, NULL);
        json_t *want = json_loads(patch, 0, NULL);
        assert_non_null(o);
        assert_non_null(n);
        assert_non_null(want);
        json_t *got = fn(o, n);
        if (!json_equal(got, want)) {
                char *g = json_dumps(got, JSON_COMPACT | JSON_SORT_KEYS);
                fail_msg("diff(%s, %s) = %s, want %s", old, new_value, g, patch);
        }
        json_decref(got);
        json_decref(o);
        json_decref(n);
        json_decref(want);
}

static void test_diff(void **state)
{
        expect(kube_merge_patch_diff, "{\"a\":1}", "{\"a\":1}", "{}");
        expect(kube_merge_patch_diff, "{\"a\":1}", "{\"a\":2}", "{\"a\":2}");
        expect(kube_merge_patch_diff, "{\"a\":1,\"b\":2}", "{\"a\":1}", "{\"b\":null}");
        expect(kube_merge_patch_diff, "{}", "{\"x\":{\"y\":1}}", "{\"x\":{\"y\":1}}");
        expect(kube_merge_patch_diff, "{\"x\":{\"y\":1,\"z\":2}}", "{\"x\":{\"y\":1,\"z\":3}}",
               "{\"x\":{\"z\":3}}");
        expect(kube_merge_patch_diff, "{\"l\":[1,2]}", "{\"l\":[1,2,3]}", "{\"l\":[1,2,3]}");
        expect(kube_merge_patch_diff, "{\"l\":[{\"a\":1}]}", "{\"l\":[{\"a\":1}]}", "{}");
        expect(kube_merge_patch_diff, "{\"o\":{\"a\":1}}", "{\"o\":5}", "{\"o\":5}");
        expect(kube_merge_patch_diff, "null", "{\"a\":1}", "{\"a\":1}");
}

static void test_owned(void **state)
{
        /* status.system belongs to someone else: not touched. */
        expect(kube_merge_patch_diff_owned,
               "{\"system\":{\"rdmaMode\":\"shared\"},\"syncStatus\":"
               "\"InProgress\"}",
               "{\"syncStatus\":\"Succeeded\"}", "{\"syncStatus\":\"Succeeded\"}");
        expect(kube_merge_patch_diff_owned, "{\"syncStatus\":\"Succeeded\",\"other\":1}",
               "{\"syncStatus\":\"Succeeded\"}", "{}");
        /* Below the owned keys the whole subtree is ours again. */
        expect(kube_merge_patch_diff_owned, "{\"i\":{\"a\":1,\"b\":2}}", "{\"i\":{\"a\":1}}",
               "{\"i\":{\"b\":null}}");
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_diff),
                cmocka_unit_test(test_owned),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
