/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for lib/nad/decide: what the NAD controller does next for a network, given what it
 * knows of the NADs. The rules a cluster operator relies on: a NAD that is not ours is never
 * written or deleted, one that is not known is read first, one that could not be read is
 * reported and not written, ours from an earlier version gets its label only, writes name the
 * resourceVersion they were decided on. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include <cmocka.h>

#include "nad/decide.h"

#define OWNER "SriovNetwork.sriovnetwork.openshift.io/sriov-network-operator/net1"

struct world {
        struct nad_view target, last;
        bool ns_exists;
        int lookups;
};

static struct nad_view lookup(const char *ns, const char *name, void *userdata)
{
        struct world *w = userdata;
        w->lookups++;
        assert_string_equal(name, "net1");
        return strcmp(ns, "team-a") == 0 ? w->target : w->last;
}

static bool namespace_exists(const char *ns, void *userdata)
{
        const struct world *w = userdata;
        return w->ns_exists;
}

/* A SriovNetwork net1 → team-a, with the finalizer and the last-namespace annotation unless
 * told otherwise. */
static json_t *network(bool finalizer, const char *last)
{
        json_t *n = json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:s, s:I, s:{}}, s:{s:s, s:s, s:s}}",
                              "apiVersion", "sriovnetwork.openshift.io/v1", "kind", "SriovNetwork",
                              "metadata", "name", "net1", "namespace", "sriov-network-operator",
                              "uid", "u-1", "resourceVersion", "7", "generation", (json_int_t)1,
                              "annotations", "spec", "resourceName", "sriov_net1",
                              "networkNamespace", "team-a", "ipam", "{\"type\":\"dhcp\"}");
        assert_non_null(n);
        json_t *meta = json_object_get(n, "metadata");
        if (finalizer)
                json_object_set_new(meta, "finalizers", json_pack("[s]", NAD_NETWORK_FINALIZER));
        if (last)
                json_object_set_new(json_object_get(meta, "annotations"), NAD_NETWORK_LAST_NS,
                                    json_string(last));
        return n;
}

static struct nad_action decide(json_t *net, struct world *w)
{
        const struct nad_decide_input in = { .kind = NAD_SRIOV_NETWORK,
                                             .network = net,
                                             .resource_prefix = "openshift.io",
                                             .now = "2026-01-01T00:00:00Z",
                                             .lookup = lookup,
                                             .namespace_exists = namespace_exists,
                                             .userdata = w };
        struct nad_action a;
        assert_int_equal(nad_decide(&in, &a), 0);
        return a;
}

/* The NAD as rendered for network(); owner/label as given, resourceVersion "42". */
static json_t *rendered(json_t *net, const char *owner, bool labelled)
{
        json_t *nad = NULL;
        char *error = NULL;
        assert_int_equal(nad_render(NAD_SRIOV_NETWORK, net, "openshift.io", &nad, &error), 0);
        json_t *meta = json_object_get(nad, "metadata");
        json_object_set_new(meta, "resourceVersion", json_string("42"));
        json_t *ann = json_object_get(meta, "annotations");
        if (owner)
                json_object_set_new(ann, NAD_ANNOTATION_OWNER, json_string(owner));
        else
                json_object_del(ann, NAD_ANNOTATION_OWNER);
        if (labelled)
                json_object_set_new(
                    meta, "labels",
                    json_pack("{s:s}", NAD_LABEL_RENDERED_BY, NAD_LABEL_RENDERED_BY_VALUE));
        return nad;
}

static const char *body_str(const struct nad_action *a, const char *k1, const char *k2)
{
        return json_string_value(json_object_get(json_object_get(a->body, k1), k2));
}

static void test_ownership(void **state)
{
        json_t *net = network(true, "team-a");
        json_t *ours = rendered(net, OWNER, true), *old = rendered(net, OWNER, false),
               *other = rendered(net, "SriovNetwork.sriovnetwork.openshift.io/x/net1", true),
               *none = rendered(net, NULL, false);
        assert_int_equal(nad_ownership(ours, OWNER), NAD_OURS);
        assert_int_equal(nad_ownership(old, OWNER), NAD_OURS_UNLABELED);
        assert_int_equal(nad_ownership(other, OWNER), NAD_OTHER_OWNER);
        assert_int_equal(nad_ownership(none, OWNER), NAD_NO_OWNER);
        json_decref(ours);
        json_decref(old);
        json_decref(other);
        json_decref(none);
        json_decref(net);
}

/* Not known (not watched: no label, or a stub): read before anything else. */
static void test_unknown_is_read(void **state)
{
        json_t *net = network(true, "team-a");
        struct world w = { .target = { .seen = NAD_SEEN_UNKNOWN }, .ns_exists = true };
        struct nad_action a = decide(net, &w);
        assert_int_equal(a.type, NAD_ACTION_READ);
        assert_string_equal(a.namespace_, "team-a");
        assert_string_equal(a.name, "net1");
        assert_null(a.body);
        nad_action_clear(&a);
        json_decref(net);
}

static void test_absent_is_created_labelled(void **state)
{
        json_t *net = network(true, "team-a");
        struct world w = { .target = { .seen = NAD_SEEN_ABSENT }, .ns_exists = true };
        struct nad_action a = decide(net, &w);
        assert_int_equal(a.type, NAD_ACTION_CREATE);
        json_t *meta = json_object_get(a.body, "metadata");
        assert_string_equal(json_string_value(json_object_get(json_object_get(meta, "labels"),
                                                              NAD_LABEL_RENDERED_BY)),
                            NAD_LABEL_RENDERED_BY_VALUE);
        assert_string_equal(json_string_value(json_object_get(json_object_get(meta, "annotations"),
                                                              NAD_ANNOTATION_OWNER)),
                            OWNER);
        nad_action_clear(&a);
        json_decref(net);
}

/* Another owner, or none: reported on the network, never written. */
static void test_foreign_never_written(void **state)
{
        json_t *net = network(true, "team-a");
        const char *owners[] = { "SriovNetwork.sriovnetwork.openshift.io/x/net1", NULL };
        const char *expect[] = { "owned by SriovNetwork.sriovnetwork.openshift.io/x/net1",
                                 "no sriovnetwork.openshift.io/owner-ref annotation" };
        for (size_t i = 0; i < 2; i++) {
                json_t *nad = rendered(net, owners[i], i == 0);
                json_object_set_new(json_object_get(nad, "spec"), "config",
                                    json_string("{\"keep\":true}"));
                struct world w = { .target = { .seen = NAD_SEEN_PRESENT, .object = nad },
                                   .ns_exists = true };
                struct nad_action a = decide(net, &w);
                assert_int_equal(a.type, NAD_ACTION_NETWORK_STATUS);
                json_t *cond = json_array_get(
                    json_object_get(json_object_get(a.body, "status"), "conditions"), 0);
                assert_string_equal(json_string_value(json_object_get(cond, "reason")),
                                    NAD_REASON_INVALID);
                assert_non_null(
                    strstr(json_string_value(json_object_get(cond, "message")), expect[i]));
                assert_non_null(a.event); /* first time: ReadyAdded Warning */
                assert_string_equal(json_string_value(json_object_get(a.event, "type")), "Warning");
                nad_action_clear(&a);
                json_decref(nad);
        }
        json_decref(net);
}

/* Rendered by an earlier version: the label, by a merge patch naming its resourceVersion, and
 * nothing else, even when the content differs (the watch shows it whole next). */
static void test_ours_unlabelled_gets_label_only(void **state)
{
        json_t *net = network(true, "team-a");
        json_t *nad = rendered(net, OWNER, false);
        struct world w = { .target = { .seen = NAD_SEEN_PRESENT, .object = nad },
                           .ns_exists = true };
        struct nad_action a = decide(net, &w);
        assert_int_equal(a.type, NAD_ACTION_LABEL);
        json_auto_t *want =
            json_pack("{s:{s:{s:s}, s:s}}", "metadata", "labels", NAD_LABEL_RENDERED_BY,
                      NAD_LABEL_RENDERED_BY_VALUE, "resourceVersion", "42");
        assert_true(json_equal(a.body, want));
        nad_action_clear(&a);
        json_decref(nad);
        json_decref(net);
}

static void test_ours_stale_is_updated_with_rv(void **state)
{
        json_t *net = network(true, "team-a");
        json_t *nad = rendered(net, OWNER, true);
        json_object_set_new(json_object_get(nad, "spec"), "config", json_string("{\"hand\":1}"));
        json_object_set_new(json_object_get(json_object_get(nad, "metadata"), "labels"), "team",
                            json_string("a"));
        struct world w = { .target = { .seen = NAD_SEEN_PRESENT, .object = nad },
                           .ns_exists = true };
        struct nad_action a = decide(net, &w);
        assert_int_equal(a.type, NAD_ACTION_UPDATE);
        assert_string_equal(body_str(&a, "metadata", "resourceVersion"), "42");
        json_t *labels = json_object_get(json_object_get(a.body, "metadata"), "labels");
        assert_string_equal(json_string_value(json_object_get(labels, "team")), "a");
        assert_string_equal(json_string_value(json_object_get(labels, NAD_LABEL_RENDERED_BY)),
                            NAD_LABEL_RENDERED_BY_VALUE);
        nad_action_clear(&a);
        /* Unchanged: nothing to write but the Ready condition, once. */
        json_decref(nad);
        nad = rendered(net, OWNER, true);
        w.target.object = nad;
        a = decide(net, &w);
        assert_int_equal(a.type, NAD_ACTION_NETWORK_STATUS);
        nad_action_clear(&a);
        json_decref(nad);
        json_decref(net);
}

static void test_unreadable_reported_not_written(void **state)
{
        json_t *net = network(true, "team-a");
        struct world w = { .target = { .seen = NAD_SEEN_UNREADABLE, .error = "HTTP 500" },
                           .ns_exists = true };
        struct nad_action a = decide(net, &w);
        assert_int_equal(a.type, NAD_ACTION_NETWORK_STATUS);
        json_t *cond =
            json_array_get(json_object_get(json_object_get(a.body, "status"), "conditions"), 0);
        assert_string_equal(json_string_value(json_object_get(cond, "reason")),
                            NAD_REASON_UNREADABLE);
        assert_non_null(strstr(json_string_value(json_object_get(cond, "message")), "HTTP 500"));
        nad_action_clear(&a);
        json_decref(net);
}

/* Deleted network: its own NAD is deleted with a precondition; a foreign one is left and the
 * finalizer removed. */
static void test_deletion(void **state)
{
        json_t *net = network(true, "team-a");
        json_object_set_new(json_object_get(net, "metadata"), "deletionTimestamp",
                            json_string("2026-01-01T00:00:00Z"));
        json_t *ours = rendered(net, OWNER, true), *none = rendered(net, NULL, false);
        struct world w = { .target = { .seen = NAD_SEEN_PRESENT, .object = ours },
                           .ns_exists = true };
        struct nad_action a = decide(net, &w);
        assert_int_equal(a.type, NAD_ACTION_DELETE);
        assert_string_equal(body_str(&a, "preconditions", "resourceVersion"), "42");
        nad_action_clear(&a);
        w.target.object = none;
        a = decide(net, &w);
        assert_int_equal(a.type, NAD_ACTION_NETWORK_PATCH);
        assert_int_equal(
            json_array_size(json_object_get(json_object_get(a.body, "metadata"), "finalizers")), 0);
        nad_action_clear(&a);
        w.target = (struct nad_view){ .seen = NAD_SEEN_UNKNOWN };
        a = decide(net, &w);
        assert_int_equal(a.type, NAD_ACTION_READ);
        nad_action_clear(&a);
        json_decref(ours);
        json_decref(none);
        json_decref(net);
}

/* Moved: the old namespace's NAD is deleted only when it is ours. */
static void test_moved(void **state)
{
        json_t *net = network(true, "team-old");
        json_t *other = rendered(net, "SriovNetwork.sriovnetwork.openshift.io/x/net1", true);
        struct world w = { .target = { .seen = NAD_SEEN_ABSENT },
                           .last = { .seen = NAD_SEEN_PRESENT, .object = other },
                           .ns_exists = true };
        struct nad_action a = decide(net, &w);
        assert_int_equal(a.type, NAD_ACTION_CREATE); /* the foreign one stays */
        nad_action_clear(&a);
        json_t *ours = rendered(net, OWNER, false);
        w.last.object = ours;
        a = decide(net, &w);
        assert_int_equal(a.type, NAD_ACTION_DELETE);
        assert_string_equal(a.namespace_, "team-old");
        nad_action_clear(&a);
        json_decref(ours);
        json_decref(other);
        json_decref(net);
}

static void test_finalizer_first(void **state)
{
        json_t *net = network(false, NULL);
        struct world w = { .target = { .seen = NAD_SEEN_UNKNOWN }, .ns_exists = true };
        struct nad_action a = decide(net, &w);
        assert_int_equal(a.type, NAD_ACTION_NETWORK_PATCH);
        assert_string_equal(body_str(&a, "metadata", "resourceVersion"), "7");
        assert_int_equal(w.lookups, 0);
        nad_action_clear(&a);
        json_decref(net);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_ownership),
                cmocka_unit_test(test_unknown_is_read),
                cmocka_unit_test(test_absent_is_created_labelled),
                cmocka_unit_test(test_foreign_never_written),
                cmocka_unit_test(test_ours_unlabelled_gets_label_only),
                cmocka_unit_test(test_ours_stale_is_updated_with_rv),
                cmocka_unit_test(test_unreadable_reported_not_written),
                cmocka_unit_test(test_deletion),
                cmocka_unit_test(test_moved),
                cmocka_unit_test(test_finalizer_first),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
