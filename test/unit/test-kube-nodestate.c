/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for lib/kube/nodestate against the fake API server: create-if-missing, merge patches
 * of spec and /status, no write when unchanged, 409 retry, re-creation after deletion, leaving
 * others' status fields alone, SyncStatusChanged events, and argument checks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "kube/events.h"
#include "kube/nodestate.h"
#include "util/log.h"

#include "kube-fake.h"

#define NS   "sriov-network-operator"
#define PATH "/apis/sriovnetwork.openshift.io/v1/namespaces/" NS "/sriovnetworknodestates/n1"

struct results {
        int ok, failed;
};

static void on_result(struct kube_nodestate *st, int error, void *userdata)
{
        struct results *r = userdata;
        if (error < 0)
                r->failed++;
        else
                r->ok++;
}

struct ctx {
        struct fake *f;
        struct results results;
        struct kube_events *events;
        struct kube_nodestate *st;
};

static void make_state_paced(struct ctx *c, struct fake *f, uint64_t write_interval_usec)
{
        *c = (struct ctx){ .f = f };
        const struct kube_events_opts eo = { .component = "sriov-agent", .host = "n1" };
        assert_int_equal(kube_events_new(f->agent, &eo, &c->events), 0);
        const struct kube_nodestate_opts so = { .node_name = "n1",
                                                .events = c->events,
                                                .on_result = on_result,
                                                .userdata = &c->results,
                                                .write_interval_usec = write_interval_usec };
        assert_int_equal(kube_nodestate_new(f->agent, &so, &c->st), 0);
}

/* Most tests are about what is written, not when: a short write interval keeps them quick. */
static void make_state(struct ctx *c, struct fake *f)
{
        make_state_paced(c, f, 20 * 1000);
}

static void free_state(struct ctx *c)
{
        kube_nodestate_free(c->st);
        kube_events_free(c->events);
}

/* Runs until the writer reports idle once more (and the events are out). */
static void settle(struct ctx *c)
{
        int want = c->results.ok + 1;
        assert_true(run_until(c->f, &c->results.ok, want, 15 * 1000 * 1000));
        uint64_t deadline = now_usec() + 5 * 1000 * 1000;
        while (kube_events_in_flight(c->events) > 0 && now_usec() < deadline)
                sd_event_run(c->f->event, 50 * 1000);
        assert_false(kube_nodestate_busy(c->st));
}

static void set_status(struct ctx *c, const char *ifaces, enum kube_sync_status s, const char *err)
{
        json_t *j = json_loads(ifaces, 0, NULL);
        assert_int_equal(kube_nodestate_set_status(c->st, j, s, err), 0);
        json_decref(j);
}

static void set_spec(struct ctx *c, const char *spec)
{
        json_t *j = json_loads(spec, 0, NULL);
        assert_int_equal(kube_nodestate_set_spec(c->st, j), 0);
        json_decref(j);
}

static const char *status_field(json_t *obj, const char *field)
{
        return json_string_value(json_object_get(json_object_get(obj, "status"), field));
}

static void test_lifecycle(void **state)
{
        struct fake *f = *state;
        install_crds_and_namespace(f, NS);
        struct ctx c;
        make_state(&c, f);

        set_spec(&c, "{\"interfaces\":[{\"pciAddress\":\"0000:01:00.0\",\"numVfs\":8}]}");
        set_status(&c, "[{\"name\":\"ens1f0\",\"pciAddress\":\"0000:01:00.0\"}]",
                   KUBE_SYNC_IN_PROGRESS, NULL);
        settle(&c);
        assert_int_equal(kube_nodestate_writes(c.st), 2); /* POST, PATCH /status */
        json_t *obj = get_json(f, PATH);
        assert_int_equal(
            json_integer_value(json_object_get(
                json_array_get(json_object_get(json_object_get(obj, "spec"), "interfaces"), 0),
                "numVfs")),
            8);
        assert_string_equal(status_field(obj, "syncStatus"), "InProgress");
        assert_string_equal(status_field(obj, "lastSyncError"), "");
        const char *rv =
            json_string_value(json_object_get(json_object_get(obj, "metadata"), "resourceVersion"));
        char *rv_before = strdup(rv);
        json_decref(obj);

        /* Same desired state again: nothing is written. */
        set_status(&c, "[{\"name\":\"ens1f0\",\"pciAddress\":\"0000:01:00.0\"}]",
                   KUBE_SYNC_IN_PROGRESS, NULL);
        settle(&c);
        assert_int_equal(kube_nodestate_writes(c.st), 2);
        obj = get_json(f, PATH);
        assert_string_equal(
            json_string_value(json_object_get(json_object_get(obj, "metadata"), "resourceVersion")),
            rv_before);
        json_decref(obj);
        free(rv_before);

        /* VF details alone do not cause a write... */
        set_status(&c,
                   "[{\"name\":\"ens1f0\",\"pciAddress\":\"0000:01:00.0\",\"Vfs\":"
                   "[{\"pciAddress\":\"0000:01:00.2\",\"mac\":\"aa:bb:cc:00:00:01\"}]}]",
                   KUBE_SYNC_IN_PROGRESS, NULL);
        settle(&c);
        assert_int_equal(kube_nodestate_writes(c.st), 2);
        /* ...they ride along with the next real change. */
        set_status(&c,
                   "[{\"name\":\"ens1f0\",\"pciAddress\":\"0000:01:00.0\",\"Vfs\":"
                   "[{\"pciAddress\":\"0000:01:00.2\",\"mac\":\"aa:bb:cc:00:00:01\"}]}]",
                   KUBE_SYNC_SUCCEEDED, NULL);
        settle(&c);
        assert_int_equal(kube_nodestate_writes(c.st), 3);
        obj = get_json(f, PATH);
        json_t *vfs = json_object_get(
            json_array_get(json_object_get(json_object_get(obj, "status"), "interfaces"), 0),
            "Vfs");
        assert_int_equal(json_array_size(vfs), 1);
        json_decref(obj);

        /* Someone else owns status.system: our status writes leave it alone. */
        assert_int_equal(request(f, f->admin, "PATCH", PATH "/status",
                                 "application/merge-patch+json",
                                 "{\"status\":{\"system\":{\"rdmaMode\":\"shared\"}}}", NULL, 0),
                         200);
        /* One injected 409: the writer refetches and retries. */
        fault(f, "{\"conflicts\":1}");
        set_status(&c, "[]", KUBE_SYNC_FAILED, "numVfs 200 > totalvfs 16");
        settle(&c);
        assert_int_equal(kube_nodestate_writes(c.st), 5);
        obj = get_json(f, PATH);
        assert_string_equal(status_field(obj, "syncStatus"), "Failed");
        assert_string_equal(status_field(obj, "lastSyncError"), "numVfs 200 > totalvfs 16");
        assert_string_equal(
            json_string_value(json_object_get(
                json_object_get(json_object_get(obj, "status"), "system"), "rdmaMode")),
            "shared");
        assert_int_equal(
            json_array_size(json_object_get(json_object_get(obj, "status"), "interfaces")), 0);
        json_decref(obj);

        /* The spec is replaced as a whole: keys we no longer set are removed. */
        set_spec(&c, "{\"system\":{\"rdmaMode\":\"exclusive\"}}");
        settle(&c);
        obj = get_json(f, PATH);
        json_t *spec = json_object_get(obj, "spec");
        assert_null(json_object_get(spec, "interfaces"));
        assert_string_equal(
            json_string_value(json_object_get(json_object_get(spec, "system"), "rdmaMode")),
            "exclusive");
        assert_string_equal(status_field(obj, "syncStatus"), "Failed"); /* status kept */
        json_decref(obj);

        /* Deleted behind our back: re-created on the next change. */
        assert_int_equal(request(f, f->admin, "DELETE", PATH, NULL, NULL, NULL, 0), 200);
        set_status(&c, "[]", KUBE_SYNC_SUCCEEDED, NULL);
        settle(&c);
        obj = get_json(f, PATH);
        assert_string_equal(status_field(obj, "syncStatus"), "Succeeded");
        json_decref(obj);

        /* Each syncStatus change became one Event on the NodeState. */
        json_t *events = get_json(f, "/api/v1/namespaces/" NS "/events");
        size_t i, n = 0;
        json_t *e;
        bool failed_seen = false;
        json_array_foreach(json_object_get(events, "items"), i, e)
        {
                assert_string_equal(json_string_value(json_object_get(e, "reason")),
                                    "SyncStatusChanged");
                assert_string_equal(json_string_value(json_object_get(
                                        json_object_get(e, "involvedObject"), "kind")),
                                    "SriovNetworkNodeState");
                const char *msg = json_string_value(json_object_get(e, "message"));
                if (strstr(msg, "from Succeeded to Failed") &&
                    strstr(msg, "numVfs 200 > totalvfs 16")) {
                        failed_seen = true;
                        assert_string_equal(json_string_value(json_object_get(e, "type")),
                                            "Warning");
                }
                n++;
        }
        assert_true(failed_seen);
        /* (none)→InProgress, InProgress→Succeeded, Succeeded→Failed, (new)→Succeeded */
        assert_int_equal(n, 4);
        json_decref(events);
        free_state(&c);
}

/* Once written, the status (hundreds of KiB decoded with hundreds of VFs) is held as its text
 * only: the object kept has no status.interfaces, the same status again writes nothing, a changed
 * one is written whole and kept as text again. The spec and the extra-status annotation are one
 * copy shared with the server's echo. */
static void test_written_status_kept_as_text(void **state)
{
        struct fake *f = *state;
        install_crds_and_namespace(f, NS);
        struct ctx c;
        make_state(&c, f);
        static const char first[] =
            "[{\"name\":\"ens1f0\",\"pciAddress\":\"0000:01:00.0\",\"numaNode\":1,\"Vfs\":"
            "[{\"pciAddress\":\"0000:01:00.2\",\"mac\":\"aa:bb:cc:00:00:01\"}]}]";
        static const char renamed[] =
            "[{\"name\":\"ens1f1\",\"pciAddress\":\"0000:01:00.0\",\"numaNode\":1,\"Vfs\":"
            "[{\"pciAddress\":\"0000:01:00.2\",\"mac\":\"aa:bb:cc:00:00:01\"}]}]";
        set_spec(&c, "{\"interfaces\":[{\"pciAddress\":\"0000:01:00.0\",\"numVfs\":8}]}");
        set_status(&c, first, KUBE_SYNC_SUCCEEDED, NULL);
        settle(&c);
        json_t *obj = kube_nodestate_object(c.st);
        assert_string_equal(status_field(obj, "syncStatus"), "Succeeded");
        assert_null(json_object_get(json_object_get(obj, "status"), "interfaces"));
        assert_true(json_object_get(obj, "spec")->refcount >= 2);
        /* the extra-status annotation (numaNode is not in upstream's schema) is one copy too */
        json_t *extra =
            json_object_get(json_object_get(json_object_get(obj, "metadata"), "annotations"),
                            KUBE_NODESTATE_EXTRA_ANNOTATION);
        assert_non_null(strstr(json_string_value(extra), "numaNode"));
        assert_true(extra->refcount >= 2);
        json_t *server = get_json(f, PATH);
        const char *name = json_string_value(json_object_get(
            json_array_get(json_object_get(json_object_get(server, "status"), "interfaces"), 0),
            "name"));
        assert_string_equal(name, "ens1f0");
        json_decref(server);
        unsigned writes = kube_nodestate_writes(c.st);

        set_status(&c, first, KUBE_SYNC_SUCCEEDED, NULL);
        settle(&c);
        assert_int_equal(kube_nodestate_writes(c.st), writes);

        set_status(&c, renamed, KUBE_SYNC_SUCCEEDED, NULL);
        settle(&c);
        assert_int_equal(kube_nodestate_writes(c.st), writes + 1);
        server = get_json(f, PATH);
        json_t *want = json_loads(renamed, 0, NULL);
        json_object_del(json_array_get(want, 0), "numaNode"); /* in the annotation */
        assert_true(
            json_equal(json_object_get(json_object_get(server, "status"), "interfaces"), want));
        json_decref(want);
        json_decref(server);
        obj = kube_nodestate_object(c.st);
        assert_null(json_object_get(json_object_get(obj, "status"), "interfaces"));
        free_state(&c);
}

/* Node-level facts (the RDMA shared config's source) share the extra-status annotation with the
 * PCI-keyed ones; a change of them alone is written, the same again is not. */
static void test_node_extra(void **state)
{
        struct fake *f = *state;
        install_crds_and_namespace(f, NS);
        struct ctx c;
        make_state(&c, f);
        json_t *ifaces = json_loads(
            "[{\"name\":\"ens1f0\",\"pciAddress\":\"0000:01:00.0\",\"numaNode\":1}]", 0, NULL);
        json_t *node = json_loads("{\"rdmaSharedConfig\":{\"source\":\"ConfigMap a/b key "
                                  "config.json\",\"state\":\"absent\"}}",
                                  0, NULL);
        assert_int_equal(
            kube_nodestate_set_status_extra(c.st, ifaces, node, KUBE_SYNC_SUCCEEDED, NULL), 0);
        settle(&c);
        json_t *obj = get_json(f, PATH);
        json_t *extra =
            json_loads(json_string_value(json_object_get(
                           json_object_get(json_object_get(obj, "metadata"), "annotations"),
                           KUBE_NODESTATE_EXTRA_ANNOTATION)),
                       0, NULL);
        assert_int_equal(
            json_integer_value(json_object_get(json_object_get(extra, "0000:01:00.0"), "numaNode")),
            1);
        assert_true(json_equal(json_object_get(extra, "rdmaSharedConfig"),
                               json_object_get(node, "rdmaSharedConfig")));
        json_decref(extra);
        json_decref(obj);
        unsigned writes = kube_nodestate_writes(c.st);

        assert_int_equal(
            kube_nodestate_set_status_extra(c.st, ifaces, node, KUBE_SYNC_SUCCEEDED, NULL), 0);
        settle(&c);
        assert_int_equal(kube_nodestate_writes(c.st), writes);

        json_object_set_new(json_object_get(node, "rdmaSharedConfig"), "state",
                            json_string("in use"));
        assert_int_equal(
            kube_nodestate_set_status_extra(c.st, ifaces, node, KUBE_SYNC_SUCCEEDED, NULL), 0);
        settle(&c);
        assert_int_equal(kube_nodestate_writes(c.st), writes + 1);
        obj = get_json(f, PATH);
        assert_non_null(strstr(json_string_value(json_object_get(
                                   json_object_get(json_object_get(obj, "metadata"), "annotations"),
                                   KUBE_NODESTATE_EXTRA_ANNOTATION)),
                               "\"state\":\"in use\""));
        json_decref(obj);
        json_decref(ifaces);
        json_decref(node);
        free_state(&c);
}

static void test_server_errors_retry(void **state)
{
        struct fake *f = *state;
        install_crds_and_namespace(f, NS);
        struct ctx c;
        make_state(&c, f);
        fault(f, "{\"errors_500\":2}");
        set_status(&c, "[]", KUBE_SYNC_SUCCEEDED, NULL);
        settle(&c);
        assert_int_equal(c.results.failed, 2);
        json_t *obj = get_json(f, PATH);
        assert_string_equal(status_field(obj, "syncStatus"), "Succeeded");
        json_decref(obj);
        free_state(&c);
}

static const char *const discovered =
    "[{\"name\":\"ens1f0\",\"pciAddress\":\"0000:01:00.0\",\"numVfs\":1,"
    "\"altNames\":[\"enp1s0f0\"],\"numaNode\":1,\"iommuGroup\":7,\"error\":\"no link\","
    "\"Vfs\":[{\"pciAddress\":\"0000:01:00.2\",\"vfID\":0,\"numaNode\":1,"
    "\"rdmaDevices\":[{\"name\":\"mlx5_2\"}]}]}]";

/* An older upstream chart: no altNames in status either (pruned like numaNode). */
static void drop_alt_names(json_t *crd)
{
        json_t *props = json_object_get(
            json_object_get(
                json_object_get(
                    json_object_get(
                        json_object_get(
                            json_object_get(
                                json_object_get(
                                    json_object_get(
                                        json_array_get(json_object_get(json_object_get(crd, "spec"),
                                                                       "versions"),
                                                       0),
                                        "schema"),
                                    "openAPIV3Schema"),
                                "properties"),
                            "status"),
                        "properties"),
                    "interfaces"),
                "items"),
            "properties");
        assert_int_equal(json_object_del(props, "altNames"), 0);
}

/* Under upstream's NodeState CRD the server prunes status fields it does not declare. The
 * writer must converge: fields upstream lacks go to the annotation, status keeps upstream's
 * field set, and what is still pruned (altNames under an older chart) causes no second write:
 * the decision is made against the last acknowledged write, not against the server's echo. */
static void test_upstream_crd_converges(void **state)
{
        struct fake *f = *state;
        install_crds_variant(f, NS, true, drop_alt_names);
        struct ctx c;
        make_state(&c, f);
        set_spec(&c, "{\"interfaces\":[{\"pciAddress\":\"0000:01:00.0\",\"numVfs\":1}]}");
        set_status(&c, discovered, KUBE_SYNC_SUCCEEDED, NULL);
        settle(&c);
        assert_int_equal(kube_nodestate_writes(c.st), 2); /* POST, PATCH /status */

        json_t *obj = get_json(f, PATH);
        json_t *iface =
            json_array_get(json_object_get(json_object_get(obj, "status"), "interfaces"), 0);
        assert_string_equal(json_string_value(json_object_get(iface, "name")), "ens1f0");
        assert_null(json_object_get(iface, "numaNode"));
        assert_null(json_object_get(iface, "altNames")); /* pruned by this older schema */
        const char *extra = json_string_value(
            json_object_get(json_object_get(json_object_get(obj, "metadata"), "annotations"),
                            KUBE_NODESTATE_EXTRA_ANNOTATION));
        assert_non_null(extra);
        json_t *ej = json_loads(extra, 0, NULL);
        json_t *pf = json_object_get(ej, "0000:01:00.0");
        assert_int_equal(json_integer_value(json_object_get(pf, "numaNode")), 1);
        assert_int_equal(json_integer_value(json_object_get(pf, "iommuGroup")), 7);
        assert_string_equal(json_string_value(json_object_get(pf, "error")), "no link");
        assert_string_equal(
            json_string_value(json_object_get(
                json_array_get(
                    json_object_get(json_object_get(json_object_get(pf, "Vfs"), "0000:01:00.2"),
                                    "rdmaDevices"),
                    0),
                "name")),
            "mlx5_2");
        json_decref(ej);
        char *rv = strdup(json_string_value(
            json_object_get(json_object_get(obj, "metadata"), "resourceVersion")));
        json_decref(obj);

        /* The agent reports the same state every reconcile: no write, no new version. */
        for (int i = 0; i < 10; i++) {
                set_spec(&c, "{\"interfaces\":[{\"pciAddress\":\"0000:01:00.0\",\"numVfs\":1}]}");
                set_status(&c, discovered, KUBE_SYNC_SUCCEEDED, NULL);
                settle(&c);
                run_until(f, NULL, 0, 100 * 1000);
        }
        assert_int_equal(kube_nodestate_writes(c.st), 2);
        obj = get_json(f, PATH);
        assert_string_equal(
            json_string_value(json_object_get(json_object_get(obj, "metadata"), "resourceVersion")),
            rv);
        json_decref(obj);
        free(rv);

        /* A real change is one write. */
        set_status(&c, discovered, KUBE_SYNC_FAILED, "ens1f0: no link");
        settle(&c);
        assert_int_equal(kube_nodestate_writes(c.st), 3);
        free_state(&c);
}

/* Under churn the writer sends at most one write per second, and the last state wins. */
/* The kernel's RDMA netns mode goes to status.system.rdmaMode (upstream's field, in the CRD):
 * written with the status, a change of mode alone is a write, and it survives the API
 * server's schema. */
static void test_rdma_mode_in_status_system(void **state)
{
        struct fake *f = *state;
        install_crds_and_namespace(f, NS);
        struct ctx c;
        make_state(&c, f);
        set_spec(&c, "{\"interfaces\":[]}");
        assert_int_equal(kube_nodestate_set_rdma_mode(c.st, "shared"), 0);
        set_status(&c, "[]", KUBE_SYNC_SUCCEEDED, NULL);
        settle(&c);
        json_t *obj = get_json(f, PATH);
        json_t *system = json_object_get(json_object_get(obj, "status"), "system");
        assert_string_equal(json_string_value(json_object_get(system, "rdmaMode")), "shared");
        json_decref(obj);
        int writes = kube_nodestate_writes(c.st);

        assert_int_equal(kube_nodestate_set_rdma_mode(c.st, "exclusive"), 0);
        set_status(&c, "[]", KUBE_SYNC_SUCCEEDED, NULL);
        settle(&c);
        assert_int_equal(kube_nodestate_writes(c.st), writes + 1);
        obj = get_json(f, PATH);
        system = json_object_get(json_object_get(obj, "status"), "system");
        assert_string_equal(json_string_value(json_object_get(system, "rdmaMode")), "exclusive");
        json_decref(obj);
        free_state(&c);
}

static void test_writes_paced(void **state)
{
        struct fake *f = *state;
        install_crds_and_namespace(f, NS);
        struct ctx c;
        make_state_paced(&c, f, 0 /* the default: 1 s */);
        set_status(&c, "[]", KUBE_SYNC_IN_PROGRESS, NULL);
        settle(&c);
        unsigned before = kube_nodestate_writes(c.st);
        uint64_t start = now_usec();
        char err[32];
        for (int i = 1; i <= 10; i++) {
                snprintf(err, sizeof(err), "e%d", i);
                set_status(&c, "[]", KUBE_SYNC_FAILED, err);
                run_until(f, NULL, 0, 150 * 1000);
        }
        settle(&c);
        double secs = (double)(now_usec() - start) / 1e6;
        unsigned writes = kube_nodestate_writes(c.st) - before;
        assert_true(writes >= 1);
        assert_true(writes <= (unsigned)secs + 1);
        json_t *obj = get_json(f, PATH);
        assert_string_equal(status_field(obj, "lastSyncError"), "e10");
        json_decref(obj);
        free_state(&c);
}

/* A refused body (422) is logged once and not retried at full speed; a new body goes out. */
static void test_invalid_not_retried(void **state)
{
        struct fake *f = *state;
        install_crds_and_namespace(f, NS);
        struct ctx c;
        make_state(&c, f);
        set_status(&c, "[]", KUBE_SYNC_SUCCEEDED, NULL);
        settle(&c);
        unsigned before = kube_nodestate_writes(c.st);
        /* numVfs is an integer in the schema: a string is refused with 422. */
        set_status(&c, "[{\"pciAddress\":\"0000:01:00.0\",\"numVfs\":\"many\"}]", KUBE_SYNC_FAILED,
                   "x");
        run_until(f, NULL, 0, 2 * 1000 * 1000);
        assert_int_equal(kube_nodestate_writes(c.st) - before, 1);
        assert_true(c.results.failed >= 1);
        /* The same body again (every reconcile): still nothing sent. */
        set_status(&c, "[{\"pciAddress\":\"0000:01:00.0\",\"numVfs\":\"many\"}]", KUBE_SYNC_FAILED,
                   "x");
        run_until(f, NULL, 0, 500 * 1000);
        assert_int_equal(kube_nodestate_writes(c.st) - before, 1);
        /* A valid one is written at once. */
        set_status(&c, "[]", KUBE_SYNC_FAILED, "y");
        settle(&c);
        json_t *obj = get_json(f, PATH);
        assert_string_equal(status_field(obj, "lastSyncError"), "y");
        json_decref(obj);
        free_state(&c);
}

/* 429 with Retry-After (API Priority and Fairness): the write waits that long, no sooner, and
 * the agent then paces its requests (one every 1.5 s) until the server has been quiet a while:
 * the read, the write and the SyncStatusChanged Event arrive within about 2 s (plus up to half
 * of it as jitter) + 3 × 1.5 s. That figure is printed, not bounded: how much later than the
 * rule the write lands depends on the machine; settle()'s deadlines catch a hang. */
static void test_retry_after(void **state)
{
        struct fake *f = *state;
        install_crds_and_namespace(f, NS);
        struct ctx c;
        make_state(&c, f);
        fault(f, "{\"throttle\":1,\"retry_after_s\":2}");
        uint64_t start = now_usec();
        set_status(&c, "[]", KUBE_SYNC_SUCCEEDED, NULL);
        settle(&c);
        uint64_t took = now_usec() - start;
        assert_int_equal(stat_value(f, "throttled"), 1);
        print_message("written after %.2f s with Retry-After: 2\n", (double)took / 1e6);
        if (took < 1900 * 1000)
                fail_msg("written after %.2f s with Retry-After: 2", (double)took / 1e6);
        free_state(&c);
}

/* A 404 without the object's name (no such resource or subresource) is not "object missing":
 * no create loop. */
static void test_missing_resource_not_created(void **state)
{
        struct fake *f = *state;
        /* Namespace but no CRDs at all. */
        assert_int_equal(request(f, f->admin, "POST", "/api/v1/namespaces", "application/json",
                                 "{\"metadata\":{\"name\":\"" NS "\"}}", NULL, 0),
                         201);
        struct ctx c;
        make_state(&c, f);
        set_status(&c, "[]", KUBE_SYNC_SUCCEEDED, NULL);
        run_until(f, NULL, 0, 2 * 1000 * 1000);
        assert_int_equal(kube_nodestate_writes(c.st), 0); /* GETs only, no POST */
        assert_true(c.results.failed >= 1);
        free_state(&c);
}

/* The watch event of our own earlier write arrives after a later write was acknowledged (a
 * slow server, a lagging watch): it is older than what we wrote, not someone else's change, so
 * nothing is rewritten (before: a PATCH carrying the stale resourceVersion, a 409, a re-read).
 * A version we never saw is still taken as someone else's change. */
static void test_stale_own_write_ignored(void **state)
{
        struct fake *f = *state;
        install_crds_and_namespace(f, NS);
        struct ctx c;
        make_state(&c, f);

        set_spec(&c, "{\"interfaces\":[{\"pciAddress\":\"0000:01:00.0\",\"numVfs\":8}]}");
        settle(&c);
        assert_int_equal(kube_nodestate_writes(c.st), 1);
        json_t *first_echo = json_deep_copy(kube_nodestate_object(c.st));
        set_status(&c, "[{\"name\":\"ens1f0\",\"pciAddress\":\"0000:01:00.0\"}]",
                   KUBE_SYNC_SUCCEEDED, NULL);
        settle(&c);
        assert_int_equal(kube_nodestate_writes(c.st), 2);

        long requests = stat_value(f, "requests");
        kube_nodestate_observe(c.st, first_echo); /* the late event of the first write */
        run_until(f, NULL, 0, 300 * 1000);
        long sent = stat_value(f, "requests") - requests; /* /_fake/ requests do not count */
        if (sent != 0 || kube_nodestate_writes(c.st) != 2)
                fail_msg("a late event of our own write caused %ld requests (%u writes)", sent,
                         kube_nodestate_writes(c.st));
        json_t *obj = get_json(f, PATH);
        assert_string_equal(status_field(obj, "syncStatus"), "Succeeded");
        json_decref(obj);

        /* Someone else's change (a version this writer never saw) is still repaired. */
        assert_int_equal(request(f, f->admin, "PATCH", PATH "/status",
                                 "application/merge-patch+json",
                                 "{\"status\":{\"syncStatus\":\"Failed\"}}", NULL, 0),
                         200);
        obj = get_json(f, PATH);
        kube_nodestate_observe(c.st, obj);
        json_decref(obj);
        settle(&c);
        assert_int_equal(kube_nodestate_writes(c.st), 3);
        obj = get_json(f, PATH);
        assert_string_equal(status_field(obj, "syncStatus"), "Succeeded");
        json_decref(obj);
        json_decref(first_echo);
        free_state(&c);
}

static void test_bad_arguments(void **state)
{
        struct fake *f = *state;
        struct kube_nodestate *st;
        const struct kube_nodestate_opts bad = { .node_name = "../n1" };
        assert_int_equal(kube_nodestate_new(f->agent, &bad, &st), -EINVAL);
        const struct kube_nodestate_opts empty = { .node_name = "" };
        assert_int_equal(kube_nodestate_new(f->agent, &empty, &st), -EINVAL);

        const struct kube_nodestate_opts ok = { .node_name = "n1" };
        assert_int_equal(kube_nodestate_new(f->agent, &ok, &st), 0);
        json_t *not_array = json_object();
        assert_int_equal(kube_nodestate_set_status(st, not_array, KUBE_SYNC_SUCCEEDED, NULL),
                         -EINVAL);
        assert_int_equal(kube_nodestate_set_status(st, NULL, _KUBE_SYNC_STATUS_MAX, NULL), -EINVAL);
        json_t *not_object = json_array();
        assert_int_equal(kube_nodestate_set_spec(st, not_object), -EINVAL);
        json_decref(not_array);
        json_decref(not_object);
        assert_false(kube_nodestate_busy(st));
        kube_nodestate_free(st);

        for (int i = 0; i < _KUBE_SYNC_STATUS_MAX; i++)
                assert_int_equal(kube_sync_status_from_string(kube_sync_status_to_string(i)), i);
        assert_int_equal(kube_sync_status_from_string("NotSelected"), -EINVAL);
}

int main(void)
{
        log_setup(LOG_TARGET_STDERR, LOG_NOTICE);
        signal(SIGPIPE, SIG_IGN);
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_rdma_mode_in_status_system, start_fake,
                                                stop_fake),
                cmocka_unit_test_setup_teardown(test_lifecycle, start_fake, stop_fake),
                cmocka_unit_test_setup_teardown(test_written_status_kept_as_text, start_fake,
                                                stop_fake),
                cmocka_unit_test_setup_teardown(test_node_extra, start_fake, stop_fake),
                cmocka_unit_test_setup_teardown(test_server_errors_retry, start_fake, stop_fake),
                cmocka_unit_test_setup_teardown(test_bad_arguments, start_fake, stop_fake),
                cmocka_unit_test_setup_teardown(test_upstream_crd_converges, start_fake, stop_fake),
                cmocka_unit_test_setup_teardown(test_writes_paced, start_fake, stop_fake),
                cmocka_unit_test_setup_teardown(test_invalid_not_retried, start_fake, stop_fake),
                cmocka_unit_test_setup_teardown(test_retry_after, start_fake, stop_fake),
                cmocka_unit_test_setup_teardown(test_missing_resource_not_created, start_fake,
                                                stop_fake),
                cmocka_unit_test_setup_teardown(test_stale_own_write_ignored, start_fake,
                                                stop_fake),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
