/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for lib/kube/events against the fake API server: one Event per object+reason+message,
 * repeats folded into count/lastTimestamp at most once per interval, cluster-scoped objects,
 * failures logged and retried on the next report, argument checks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "kube/events.h"
#include "util/log.h"

#include "kube-fake.h"

static void drain(struct fake *f, struct kube_events *ev)
{
        uint64_t deadline = now_usec() + 10 * 1000 * 1000;
        while (kube_events_in_flight(ev) > 0 && now_usec() < deadline)
                sd_event_run(f->event, 50 * 1000);
        assert_int_equal(kube_events_in_flight(ev), 0);
}

/* The Events in a namespace with the given reason (new reference to an array). */
static json_t *events_with_reason(struct fake *f, const char *ns, const char *reason)
{
        char path[128];
        snprintf(path, sizeof(path), "/api/v1/namespaces/%s/events", ns);
        json_t *list = get_json(f, path), *out = json_array();
        size_t i;
        json_t *e;
        json_array_foreach(json_object_get(list, "items"), i,
                           e) if (strcmp(json_string_value(json_object_get(e, "reason")), reason) ==
                                  0) json_array_append(out, e);
        json_decref(list);
        return out;
}

static const struct kube_object_ref policy = {
        .api_version = "sriovnetwork.openshift.io/v1",
        .kind = "SriovNetworkNodePolicy",
        .namespace_ = "default",
        .name = "bad-policy",
        .uid = "1234",
};

static void test_dedup(void **state)
{
        struct fake *f = *state;
        struct kube_events *ev;
        const struct kube_events_opts o = { .component = "sriov-agent", .host = "n1" };
        assert_int_equal(kube_events_new(f->agent, &o, &ev), 0);
        for (int i = 0; i < 10; i++)
                assert_int_equal(kube_events_post(ev, &policy, "Warning",
                                                  KUBE_EVENT_REASON_INVALID_POLICY,
                                                  "spec.numVfs: must be at most 128"),
                                 0);
        drain(f, ev);
        json_t *list = events_with_reason(f, "default", "InvalidPolicy");
        assert_int_equal(json_array_size(list), 1);
        json_t *e = json_array_get(list, 0);
        json_t *inv = json_object_get(e, "involvedObject");
        assert_string_equal(json_string_value(json_object_get(inv, "kind")),
                            "SriovNetworkNodePolicy");
        assert_string_equal(json_string_value(json_object_get(inv, "name")), "bad-policy");
        assert_string_equal(json_string_value(json_object_get(inv, "uid")), "1234");
        assert_string_equal(json_string_value(json_object_get(e, "type")), "Warning");
        assert_string_equal(json_string_value(json_object_get(e, "message")),
                            "spec.numVfs: must be at most 128");
        assert_int_equal(json_integer_value(json_object_get(e, "count")), 1);
        assert_string_equal(
            json_string_value(json_object_get(json_object_get(e, "source"), "component")),
            "sriov-agent");
        json_decref(list);

        /* A different message or reason is a different Event. */
        kube_events_post(ev, &policy, "Warning", KUBE_EVENT_REASON_CONFLICTING_POLICY,
                         "overlaps other-policy");
        kube_events_post(ev, &policy, "Warning", KUBE_EVENT_REASON_INVALID_POLICY,
                         "spec.mtu: must be at least 1");
        drain(f, ev);
        list = events_with_reason(f, "default", "InvalidPolicy");
        assert_int_equal(json_array_size(list), 2);
        json_decref(list);
        list = events_with_reason(f, "default", "ConflictingPolicy");
        assert_int_equal(json_array_size(list), 1);
        json_decref(list);
        kube_events_free(ev);
}

static void test_repeat_interval(void **state)
{
        struct fake *f = *state;
        struct kube_events *ev;
        const struct kube_events_opts o = { .host = "n1", .repeat_interval_usec = 200 * 1000 };
        assert_int_equal(kube_events_new(f->agent, &o, &ev), 0);
        long patches = stat_value(f, "patches");
        for (int i = 0; i < 3; i++) /* inside the interval: no writes */
                kube_events_post(ev, &policy, "Warning", "InvalidPolicy", "again");
        drain(f, ev);
        run_until(f, NULL, 0, 250 * 1000);
        kube_events_post(ev, &policy, "Warning", "InvalidPolicy", "again"); /* past it */
        drain(f, ev);
        assert_int_equal(stat_value(f, "patches") - patches, 1);
        json_t *list = events_with_reason(f, "default", "InvalidPolicy");
        assert_int_equal(json_array_size(list), 1);
        assert_int_equal(json_integer_value(json_object_get(json_array_get(list, 0), "count")), 4);
        json_decref(list);
        kube_events_free(ev);
}

static void test_cluster_scoped_and_failures(void **state)
{
        struct fake *f = *state;
        struct kube_events *ev;
        const struct kube_events_opts o = { .host = "n1" };
        assert_int_equal(kube_events_new(f->agent, &o, &ev), 0);
        const struct kube_object_ref node = { .api_version = "v1", .kind = "Node", .name = "n1" };

        fault(f, "{\"reject_token\":true}");
        assert_int_equal(kube_events_post(ev, &node, "Normal", "Test", "hello"), 0);
        drain(f, ev); /* logged as rejected */
        fault(f, "{\"reject_token\":false}");
        json_t *list = events_with_reason(f, "default", "Test");
        assert_int_equal(json_array_size(list), 0);
        json_decref(list);

        /* The failed report is retried, but only after a backoff (1 s), not at every call. */
        assert_int_equal(kube_events_post(ev, &node, "Normal", "Test", "hello"), 0);
        drain(f, ev);
        list = events_with_reason(f, "default", "Test");
        assert_int_equal(json_array_size(list), 0);
        json_decref(list);
        run_until(f, NULL, 0, 1100 * 1000);
        assert_int_equal(kube_events_post(ev, &node, "Normal", "Test", "hello"), 0);
        drain(f, ev);
        list = events_with_reason(f, "default", "Test");
        assert_int_equal(json_array_size(list), 1);
        json_t *inv = json_object_get(json_array_get(list, 0), "involvedObject");
        assert_null(json_object_get(inv, "namespace"));
        json_decref(list);

        /* Many distinct messages for one object and reason: 10 Events, then one combined. */
        char msg[32];
        for (int i = 0; i < 140; i++) {
                snprintf(msg, sizeof(msg), "message %d", i);
                kube_events_post(ev, &node, "Normal", "Many", msg);
        }
        drain(f, ev);
        list = events_with_reason(f, "default", "Many");
        assert_int_equal(json_array_size(list), 11);
        size_t i;
        json_t *e;
        bool combined = false;
        json_array_foreach(list, i, e)
        {
                combined |= strstr(json_string_value(json_object_get(e, "message")),
                                   "(combined from similar events): message 10") != NULL;
        }
        assert_true(combined);
        json_decref(list);

        const struct kube_object_ref nameless = { .kind = "Node" };
        assert_int_equal(kube_events_post(ev, &nameless, "Normal", "X", "y"), -EINVAL);
        assert_int_equal(kube_events_post(ev, &node, "Normal", NULL, "y"), -EINVAL);
        kube_events_free(ev);

        json_t *obj = json_pack("{s:s, s:s, s:{s:s, s:s, s:s}}", "apiVersion", "v1", "kind", "Node",
                                "metadata", "name", "n1", "uid", "u", "namespace", "x");
        struct kube_object_ref ref;
        assert_int_equal(kube_object_ref_from_json(obj, &ref), 0);
        assert_string_equal(ref.name, "n1");
        assert_string_equal(ref.uid, "u");
        json_decref(obj);
        json_t *empty = json_object();
        assert_int_equal(kube_object_ref_from_json(empty, &ref), -EINVAL);
        json_decref(empty);
}

/* 300 invalid policies reported at every reconcile: the total is bounded (a burst of 50, then
 * one per second), nothing is posted twice, and suppressed reports go out later. */
static void test_flood_bounded(void **state)
{
        struct fake *f = *state;
        struct kube_events *ev;
        const struct kube_events_opts o = { .host = "n1" };
        assert_int_equal(kube_events_new(f->agent, &o, &ev), 0);
        const uint64_t start = now_usec(); /* the bucket is full from here on */
        long creates = stat_value(f, "creates");
        char name[32];
        for (int round = 0; round < 3; round++) {
                for (int i = 0; i < 300; i++) {
                        snprintf(name, sizeof(name), "p%d", i);
                        const struct kube_object_ref ref = {
                                .api_version = "sriovnetwork.openshift.io/v1",
                                .kind = "SriovNetworkNodePolicy",
                                .namespace_ = "default",
                                .name = name,
                        };
                        kube_events_post(ev, &ref, "Warning", "InvalidPolicy", "bad");
                }
                drain(f, ev);
                run_until(f, NULL, 0, 500 * 1000);
        }
        long posted = stat_value(f, "creates") - creates;
        /* 50 at once, then about one per second over the time this test took (~2 s natively,
         * longer on a slow machine: the bound follows the time measured, not a fixed one). */
        const double secs = (double)(now_usec() - start) / 1e6;
        if (posted < 50 || (double)posted > 50 + secs + 4)
                fail_msg("%ld Events posted for 3 rounds of 300 reports in %.1f s", posted, secs);
        assert_true(kube_events_suppressed(ev) > 0);
        kube_events_free(ev);
}

int main(void)
{
        log_setup(LOG_TARGET_STDERR, LOG_NOTICE);
        signal(SIGPIPE, SIG_IGN);
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_dedup, start_fake, stop_fake),
                cmocka_unit_test_setup_teardown(test_repeat_interval, start_fake, stop_fake),
                cmocka_unit_test_setup_teardown(test_flood_bounded, start_fake, stop_fake),
                cmocka_unit_test_setup_teardown(test_cluster_scoped_and_failures, start_fake,
                                                stop_fake),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
