/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for lib/kube/cluster against the fake API server: one "initial sync" after both lists,
 * then change notifications only for what selects or shapes VFs (policy add/delete/spec, node
 * labels), none for status or annotation churn. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "kube/cluster.h"
#include "util/log.h"

#include "kube-fake.h"

#define NS          "sriov-network-operator"
#define POLICY_PATH "/apis/sriovnetwork.openshift.io/v1/namespaces/" NS "/sriovnetworknodepolicies"

/* Userdata for on_change: what was seen, and optionally a cluster whose Event sink is used
 * from inside the callback (which runs inside libcurl's write callback of the watch). */
struct change_ctx {
        struct seen seen;
        struct kube_cluster *cluster;
};

static void on_change(const char *why, void *userdata)
{
        struct change_ctx *ctx = userdata;
        struct seen *s = &ctx->seen;
        if (s->n < 64)
                snprintf(s->lines[s->n], sizeof(s->lines[0]), "%s", why);
        s->n++;
        if (ctx->cluster) {
                const struct kube_object_ref node = { .kind = "Node", .name = "n1" };
                assert_int_equal(kube_events_post(kube_cluster_events(ctx->cluster), &node,
                                                  "Normal", "Changed", why),
                                 0);
        }
}

static char *write_kubeconfig(struct fake *f)
{
        char *path = strdup("/tmp/test-kube-cluster-XXXXXX");
        int fd = mkstemp(path);
        assert_true(fd >= 0);
        FILE *out = fdopen(fd, "w");
        fprintf(out,
                "apiVersion: v1\nclusters:\n- name: f\n  cluster:\n    server: %s\n"
                "users:\n- name: u\n  user:\n    token: " TOKEN "\n"
                "contexts:\n- name: c\n  context: {cluster: f, user: u}\n"
                "current-context: c\n",
                f->url);
        fclose(out);
        return path;
}

static long patch(struct fake *f, const char *path, const char *body)
{
        return request(f, f->admin, "PATCH", path, "application/merge-patch+json", body, NULL, 0);
}

static void test_notifications(void **state)
{
        struct fake *f = *state;
        install_crds_and_namespace(f, NS);
        const char *policy = "{\"apiVersion\":\"sriovnetwork.openshift.io/v1\",\"kind\":"
                             "\"SriovNetworkNodePolicy\",\"metadata\":{\"name\":\"p1\"},\"spec\":{"
                             "\"resourceName\":\"r1\",\"nodeSelector\":{\"a\":\"b\"},\"numVfs\":4,"
                             "\"nicSelector\":{\"vendor\":\"15b3\"}}}";
        assert_int_equal(
            request(f, f->admin, "POST", POLICY_PATH, "application/json", policy, NULL, 0), 201);

        char *kc = write_kubeconfig(f);
        struct change_ctx ctx = {};
        struct seen *sp = &ctx.seen;
        const struct kube_cluster_opts o = {
                .kubeconfig = kc, .node_name = "n1", .on_change = on_change, .userdata = &ctx
        };
        struct kube_cluster *c;
        assert_int_equal(kube_cluster_new(f->event, &o, &c), 0);
        ctx.cluster = c;
        assert_false(kube_cluster_synced(c));
        assert_true(run_until(f, &sp->n, 1, 10 * 1000 * 1000));
        assert_string_equal(sp->lines[0], "initial sync");
        assert_true(kube_cluster_synced(c));
        assert_int_equal(json_object_size(kube_cluster_policies(c)), 1);
        assert_non_null(json_object_get(kube_cluster_policies(c), NS "/p1"));
        assert_string_equal(json_string_value(json_object_get(kube_cluster_node_labels(c),
                                                              "kubernetes.io/hostname")),
                            "n1");

        /* Churn that changes nothing the agent acts on. */
        assert_int_equal(patch(f, "/api/v1/nodes/n1/status",
                               "{\"status\":{\"conditions\":[{\"type\":\"Ready\","
                               "\"status\":\"False\"}]}}"),
                         200);
        assert_int_equal(
            patch(f, POLICY_PATH "/p1", "{\"metadata\":{\"annotations\":{\"x\":\"y\"}}}"), 200);
        assert_int_equal(patch(f, "/api/v1/nodes/n2", "{\"metadata\":{\"labels\":{\"a\":\"b\"}}}"),
                         200);
        run_until(f, NULL, 0, 500 * 1000);
        assert_int_equal(sp->n, 1);

        assert_int_equal(patch(f, "/api/v1/nodes/n1", "{\"metadata\":{\"labels\":{\"a\":\"b\"}}}"),
                         200);
        assert_true(run_until(f, &sp->n, 2, 10 * 1000 * 1000));
        assert_string_equal(sp->lines[1], "node n1 labels changed");
        assert_string_equal(json_string_value(json_object_get(kube_cluster_node_labels(c), "a")),
                            "b");

        assert_int_equal(patch(f, POLICY_PATH "/p1", "{\"spec\":{\"numVfs\":8}}"), 200);
        assert_true(run_until(f, &sp->n, 3, 10 * 1000 * 1000));
        assert_string_equal(sp->lines[2], "policy p1 changed");

        assert_int_equal(request(f, f->admin, "DELETE", POLICY_PATH "/p1", NULL, NULL, NULL, 0),
                         200);
        assert_true(run_until(f, &sp->n, 4, 10 * 1000 * 1000));
        assert_string_equal(sp->lines[3], "policy p1 deleted");
        assert_int_equal(json_object_size(kube_cluster_policies(c)), 0);

        /* Events posted from inside on_change (inside curl's callback) were all delivered. */
        uint64_t until = now_usec() + 10 * 1000 * 1000;
        while (kube_events_in_flight(kube_cluster_events(c)) > 0 && now_usec() < until)
                sd_event_run(f->event, 50 * 1000);
        json_t *evs = get_json(f, "/api/v1/namespaces/default/events");
        assert_int_equal(json_array_size(json_object_get(evs, "items")), 4);
        json_decref(evs);

        /* The NodeState writer and Event sink come ready to use. */
        assert_non_null(kube_cluster_events(c));
        assert_int_equal(
            kube_nodestate_set_status(kube_cluster_nodestate(c), NULL, KUBE_SYNC_SUCCEEDED, NULL),
            0);
        uint64_t deadline = now_usec() + 10 * 1000 * 1000;
        while (kube_nodestate_busy(kube_cluster_nodestate(c)) && now_usec() < deadline)
                sd_event_run(f->event, 50 * 1000);
        json_t *st = get_json(f, "/apis/sriovnetwork.openshift.io/v1/namespaces/" NS
                                 "/sriovnetworknodestates/n1");
        assert_string_equal(
            json_string_value(json_object_get(json_object_get(st, "status"), "syncStatus")),
            "Succeeded");
        json_decref(st);

        kube_cluster_free(c);
        unlink(kc);
        free(kc);
}

static void test_unregistered_node_and_bad_config(void **state)
{
        struct fake *f = *state;
        install_crds_and_namespace(f, NS);
        char *kc = write_kubeconfig(f);
        struct change_ctx ctx = {};
        struct seen *sp = &ctx.seen;
        const struct kube_cluster_opts o = {
                .kubeconfig = kc, .node_name = "late", .on_change = on_change, .userdata = &ctx
        };
        struct kube_cluster *c;
        assert_int_equal(kube_cluster_new(f->event, &o, &c), 0);
        assert_true(run_until(f, &sp->n, 1, 10 * 1000 * 1000));
        assert_null(kube_cluster_node(c));
        assert_null(kube_cluster_node_labels(c));
        assert_int_equal(request(f, f->admin, "POST", "/api/v1/nodes", "application/json",
                                 "{\"metadata\":{\"name\":\"late\"}}", NULL, 0),
                         201);
        assert_true(run_until(f, &sp->n, 2, 10 * 1000 * 1000));
        assert_string_equal(sp->lines[1], "node late appeared");
        kube_cluster_free(c);
        unlink(kc);
        free(kc);

        const struct kube_cluster_opts missing = { .kubeconfig = "/nonexistent", .node_name = "x" };
        assert_int_equal(kube_cluster_new(f->event, &missing, &c), -ENOENT);
        const struct kube_cluster_opts nameless = { .kubeconfig = "/nonexistent" };
        assert_int_equal(kube_cluster_new(f->event, &nameless, &c), -EINVAL);
}

int main(void)
{
        log_setup(LOG_TARGET_STDERR, LOG_NOTICE);
        signal(SIGPIPE, SIG_IGN);
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_notifications, start_fake, stop_fake),
                cmocka_unit_test_setup_teardown(test_unregistered_node_and_bad_config, start_fake,
                                                stop_fake),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
