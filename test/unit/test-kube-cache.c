/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for lib/kube/cache: callbacks on real changes only, and relist reconciliation
 * that reports deletions which happened while the watch was away. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kube/cache.h"

struct log {
        char lines[32][80];
        int n;
};

static void record(struct log *l, const char *what, json_t *obj)
{
        json_t *m = json_object_get(obj, "metadata");
        snprintf(l->lines[l->n++], sizeof(l->lines[0]), "%s %s@%s", what,
                 json_string_value(json_object_get(m, "name")),
                 json_string_value(json_object_get(m, "resourceVersion")));
}

static void on_added(json_t *o, void *u)
{
        record(u, "added", o);
}

static void on_updated(json_t *old, json_t *o, void *u)
{
        record(u, "updated", o);
        /* The old object must still be intact while the callback runs. */
        assert_non_null(json_object_get(old, "metadata"));
}

static void on_deleted(json_t *o, void *u)
{
        record(u, "deleted", o);
}

static json_t *obj(const char *ns, const char *name, const char *rv)
{
        return json_pack("{s:{s:s, s:s, s:s}}", "metadata", "namespace", ns, "name", name,
                         "resourceVersion", rv);
}

static void apply(struct kube_cache *c, enum kube_cache_op op, const char *name, const char *rv)
{
        json_t *o = obj("ns", name, rv);
        assert_int_equal(kube_cache_apply(c, op, o), 0);
        json_decref(o);
}

static void test_apply(void **state)
{
        struct log l = {};
        const struct kube_cache_callbacks cb = { on_added, on_updated, on_deleted, &l };
        struct kube_cache *c;
        assert_int_equal(kube_cache_new(&cb, &c), 0);
        apply(c, KUBE_CACHE_UPSERT, "a", "1");
        apply(c, KUBE_CACHE_UPSERT, "a", "1"); /* replayed event: no callback */
        apply(c, KUBE_CACHE_UPSERT, "a", "2");
        apply(c, KUBE_CACHE_UPSERT, "b", "3");
        apply(c, KUBE_CACHE_DELETE, "a", "4");
        apply(c, KUBE_CACHE_DELETE, "zz", "5"); /* unknown: nothing */
        assert_int_equal(l.n, 4);
        assert_string_equal(l.lines[0], "added a@1");
        assert_string_equal(l.lines[1], "updated a@2");
        assert_string_equal(l.lines[2], "added b@3");
        assert_string_equal(l.lines[3], "deleted a@4");
        assert_int_equal(kube_cache_size(c), 1);
        assert_non_null(kube_cache_get(c, "ns", "b"));
        assert_null(kube_cache_get(c, "ns", "a"));
        assert_null(kube_cache_get(c, "other", "b"));

        json_t *nameless = json_pack("{s:{}}", "metadata");
        assert_int_equal(kube_cache_apply(c, KUBE_CACHE_UPSERT, nameless), -EINVAL);
        json_decref(nameless);
        kube_cache_free(c);
}

static void test_replace_reconciles(void **state)
{
        struct log l = {};
        const struct kube_cache_callbacks cb = { on_added, on_updated, on_deleted, &l };
        struct kube_cache *c;
        assert_int_equal(kube_cache_new(&cb, &c), 0);
        apply(c, KUBE_CACHE_UPSERT, "keep", "1");
        apply(c, KUBE_CACHE_UPSERT, "change", "2");
        apply(c, KUBE_CACHE_UPSERT, "gone", "3");
        l.n = 0;

        json_t *items = json_pack("[o, o, o]", obj("ns", "keep", "1"), obj("ns", "change", "7"),
                                  obj("ns", "new", "8"));
        assert_int_equal(kube_cache_replace(c, items), 0);
        json_decref(items);
        assert_int_equal(l.n, 3);
        assert_string_equal(l.lines[0], "deleted gone@3"); /* deletions first */
        assert_string_equal(l.lines[1], "updated change@7");
        assert_string_equal(l.lines[2], "added new@8");
        assert_int_equal(kube_cache_size(c), 3);

        l.n = 0;
        items = json_array();
        assert_int_equal(kube_cache_replace(c, items), 0);
        json_decref(items);
        assert_int_equal(l.n, 3);
        assert_int_equal(kube_cache_size(c), 0);
        assert_int_equal(kube_cache_replace(c, NULL), -EINVAL);
        kube_cache_free(c);
}

static void test_cluster_scoped_keys(void **state)
{
        struct kube_cache *c;
        assert_int_equal(kube_cache_new(NULL, &c), 0);
        json_t *node =
            json_pack("{s:{s:s, s:s}}", "metadata", "name", "node1", "resourceVersion", "1");
        assert_int_equal(kube_cache_apply(c, KUBE_CACHE_UPSERT, node), 0);
        json_decref(node);
        assert_non_null(kube_cache_get(c, NULL, "node1"));
        assert_non_null(json_object_get(kube_cache_objects(c), "node1"));
        kube_cache_free(c);
}

struct seen_status {
        int calls;
        bool had_status;
};

static void status_seen(json_t *o, void *u)
{
        struct seen_status *s = u;
        s->calls++;
        s->had_status = json_object_get(o, "status") != NULL;
}

static void status_seen_updated(json_t *old, json_t *o, void *u)
{
        status_seen(o, u);
}

/* Metadata-only caches (this node's NodeState, the Node): callbacks see each object whole,
 * the cache keeps its metadata (labels and resourceVersion) and still tells versions apart. */
static void test_metadata_only(void **state)
{
        struct seen_status seen = {};
        const struct kube_cache_callbacks cb = { status_seen, status_seen_updated, NULL, &seen };
        struct kube_cache *c;
        assert_int_equal(kube_cache_new(&cb, &c), 0);
        kube_cache_keep_metadata_only(c);
        json_t *node =
            json_pack("{s:s, s:s, s:{s:s, s:s, s:{s:s}, s:{s:s}, s:[{s:s}]}, s:{s:[s, s]}}",
                      "apiVersion", "v1", "kind", "Node", "metadata", "name", "node1",
                      "resourceVersion", "1", "labels", "a", "b", "annotations", "big", "...",
                      "managedFields", "manager", "kubelet", "status", "images", "x", "y");
        assert_int_equal(kube_cache_apply(c, KUBE_CACHE_UPSERT, node), 0);
        assert_int_equal(seen.calls, 1);
        assert_true(seen.had_status); /* the callback got the whole object */
        json_t *kept = kube_cache_get(c, NULL, "node1");
        assert_non_null(kept);
        assert_null(json_object_get(kept, "status"));
        assert_null(json_object_get(json_object_get(kept, "metadata"), "managedFields"));
        assert_null(json_object_get(json_object_get(kept, "metadata"), "annotations"));
        assert_string_equal(json_string_value(json_object_get(kept, "kind")), "Node");
        assert_string_equal(json_string_value(json_object_get(
                                json_object_get(json_object_get(kept, "metadata"), "labels"), "a")),
                            "b");
        /* the original object is not changed under its owner */
        assert_non_null(json_object_get(node, "status"));
        assert_non_null(json_object_get(json_object_get(node, "metadata"), "managedFields"));
        /* the same version again is no change */
        assert_int_equal(kube_cache_apply(c, KUBE_CACHE_UPSERT, node), 0);
        assert_int_equal(seen.calls, 1);
        json_decref(node);
        kube_cache_free(c);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_apply),
                cmocka_unit_test(test_replace_reconciles),
                cmocka_unit_test(test_cluster_scoped_keys),
                cmocka_unit_test(test_metadata_only),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
