/* Tests for lib/kube/watch (the informer) and lib/kube/http against the fake API server
 * (test/fake-apiserver, started here on 127.0.0.1 with an ephemeral port): paged lists,
 * callbacks, field selectors, relist-and-reconcile after 410 while away, and backoff. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "kube/http.h"
#include "kube/kubeconfig.h"
#include "kube/watch.h"
#include "util/log.h"

#define TOKEN "unit-token"

struct fake {
        pid_t pid;
        char url[64];
        sd_event *event;
        struct kube_config agent_cfg, admin_cfg;
        struct kube_http *agent, *admin;
};

struct seen {
        char lines[64][64];
        int n, synced;
};

extern char **environ;

static int start_fake(void **state)
{
        struct fake *f = calloc(1, sizeof(*f));
        const char *srcdir = getenv("SRCDIR") ? getenv("SRCDIR") : ".";
        char script[512];
        snprintf(script, sizeof(script), "%s/test/fake-apiserver/fake_apiserver.py", srcdir);
        int pipefd[2];
        assert_int_equal(pipe(pipefd), 0);
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_adddup2(&fa, pipefd[1], STDOUT_FILENO);
        posix_spawn_file_actions_addclose(&fa, pipefd[0]);
        char *argv[] = { "python3", script, "--port", "0",  "--token", TOKEN, "--anonymous",
                         "--node",  "n1",   "--node", "n2", "--node",  "n3",  NULL };
        assert_int_equal(posix_spawnp(&f->pid, "python3", &fa, NULL, argv, environ), 0);
        posix_spawn_file_actions_destroy(&fa);
        close(pipefd[1]);
        FILE *out = fdopen(pipefd[0], "r");
        char line[64] = "";
        assert_non_null(fgets(line, sizeof(line), out));
        fclose(out);
        int port = 0;
        assert_int_equal(sscanf(line, "PORT %d", &port), 1);
        snprintf(f->url, sizeof(f->url), "http://127.0.0.1:%d", port);

        assert_int_equal(sd_event_new(&f->event), 0);
        f->agent_cfg = (struct kube_config){ .server = f->url, .token = TOKEN };
        f->admin_cfg = (struct kube_config){ .server = f->url };
        assert_int_equal(kube_http_new(f->event, &f->agent_cfg, &f->agent), 0);
        assert_int_equal(kube_http_new(f->event, &f->admin_cfg, &f->admin), 0);
        *state = f;
        return 0;
}

static int stop_fake(void **state)
{
        struct fake *f = *state;
        kube_http_free(f->agent);
        kube_http_free(f->admin);
        sd_event_unref(f->event);
        kill(f->pid, SIGTERM);
        waitpid(f->pid, NULL, 0);
        free(f);
        return 0;
}

static uint64_t now_usec(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000000ULL + (uint64_t)ts.tv_nsec / 1000;
}

/* Runs the loop until *flag becomes true (or for `usec` when flag is NULL). */
static bool run_until(struct fake *f, const int *flag, int want, uint64_t usec)
{
        uint64_t deadline = now_usec() + usec;
        while (now_usec() < deadline) {
                if (flag && *flag >= want)
                        return true;
                sd_event_run(f->event, 50 * 1000);
        }
        return flag ? *flag >= want : true;
}

struct call {
        int done;
        long status;
        char body[4096];
};

static void call_done(struct kube_request *req, int error, long status, const char *body,
                      size_t len, void *userdata)
{
        struct call *c = userdata;
        c->status = error < 0 ? error : status;
        snprintf(c->body, sizeof(c->body), "%s", body ? body : "");
        c->done = 1;
}

/* One request through the same event loop (the informer keeps running meanwhile). */
static long request(struct fake *f, struct kube_http *h, const char *method, const char *path,
                    const char *content_type, const char *body, char *out, size_t out_size)
{
        struct call c = {};
        const struct kube_request_opts o = { .method = method,
                                             .path = path,
                                             .content_type = content_type,
                                             .body = body,
                                             .body_len = body ? strlen(body) : 0,
                                             .on_done = call_done,
                                             .userdata = &c };
        assert_int_equal(kube_http_start(h, &o, NULL), 0);
        assert_true(run_until(f, &c.done, 1, 10 * 1000 * 1000));
        if (out)
                snprintf(out, out_size, "%s", c.body);
        return c.status;
}

static void fault(struct fake *f, const char *json)
{
        assert_int_equal(
            request(f, f->admin, "POST", "/_fake/faults", "application/json", json, NULL, 0), 200);
}

static long stat_value(struct fake *f, const char *key)
{
        char body[4096];
        assert_int_equal(
            request(f, f->admin, "GET", "/_fake/stats", NULL, NULL, body, sizeof(body)), 200);
        json_t *j = json_loads(body, 0, NULL);
        long v = (long)json_integer_value(json_object_get(j, key));
        json_decref(j);
        return v;
}

static void add_line(struct seen *s, const char *what, json_t *o)
{
        const char *name =
            json_string_value(json_object_get(json_object_get(o, "metadata"), "name"));
        if (s->n < 64)
                snprintf(s->lines[s->n], sizeof(s->lines[0]), "%s %s", what, name);
        s->n++;
}

static void on_added(json_t *o, void *u)
{
        add_line(u, "added", o);
}

static void on_updated(json_t *old, json_t *o, void *u)
{
        add_line(u, "updated", o);
}

static void on_deleted(json_t *o, void *u)
{
        add_line(u, "deleted", o);
}

static void on_synced(struct kube_informer *inf, void *u)
{
        ((struct seen *)u)->synced++;
}

static struct kube_informer *node_informer(struct fake *f, struct seen *s, const char *selector,
                                           unsigned page_size)
{
        const struct kube_informer_opts o = {
                .kind = "Node",
                .path = "/api/v1/nodes",
                .field_selector = selector,
                .callbacks = { on_added, on_updated, on_deleted, s },
                .on_synced = on_synced,
                .synced_userdata = s,
                .list_page_size = page_size,
                .watch_timeout_s = 30,
        };
        struct kube_informer *inf;
        assert_int_equal(kube_informer_new(f->agent, &o, &inf), 0);
        assert_int_equal(kube_informer_start(inf), 0);
        return inf;
}

static void test_paged_list_and_updates(void **state)
{
        struct fake *f = *state;
        struct seen s = {};
        long lists = stat_value(f, "lists");
        struct kube_informer *inf = node_informer(f, &s, NULL, 2);
        assert_true(run_until(f, &s.synced, 1, 10 * 1000 * 1000));
        assert_int_equal(s.n, 3);
        assert_string_equal(s.lines[0], "added n1");
        assert_string_equal(s.lines[2], "added n3");
        assert_int_equal(kube_cache_size(kube_informer_cache(inf)), 3);
        assert_int_equal(stat_value(f, "lists") - lists, 2); /* 3 nodes in pages of 2 */
        assert_true(kube_informer_has_synced(inf));
        assert_true(strlen(kube_informer_resource_version(inf)) > 0);

        assert_int_equal(
            request(f, f->admin, "PATCH", "/api/v1/nodes/n2", "application/merge-patch+json",
                    "{\"metadata\":{\"labels\":{\"highnet-node\":\"true\"}}}", NULL, 0),
            200);
        assert_true(run_until(f, &s.n, 4, 10 * 1000 * 1000));
        assert_string_equal(s.lines[3], "updated n2");
        json_t *n2 = kube_cache_get(kube_informer_cache(inf), NULL, "n2");
        assert_string_equal(
            json_string_value(json_object_get(
                json_object_get(json_object_get(n2, "metadata"), "labels"), "highnet-node")),
            "true");
        kube_informer_free(inf);
}

static void test_field_selector(void **state)
{
        struct fake *f = *state;
        struct seen s = {};
        struct kube_informer *inf = node_informer(f, &s, "metadata.name=n1", 0);
        assert_true(run_until(f, &s.synced, 1, 10 * 1000 * 1000));
        assert_int_equal(s.n, 1);
        assert_string_equal(s.lines[0], "added n1");
        request(f, f->admin, "PATCH", "/api/v1/nodes/n3", "application/merge-patch+json",
                "{\"metadata\":{\"labels\":{\"x\":\"1\"}}}", NULL, 0);
        request(f, f->admin, "PATCH", "/api/v1/nodes/n1", "application/merge-patch+json",
                "{\"metadata\":{\"labels\":{\"x\":\"1\"}}}", NULL, 0);
        assert_true(run_until(f, &s.n, 2, 10 * 1000 * 1000));
        assert_string_equal(s.lines[1], "updated n1");
        run_until(f, NULL, 0, 300 * 1000);
        assert_int_equal(s.n, 2); /* n3 never shows up */
        kube_informer_free(inf);
}

static void test_deleted_while_away(void **state)
{
        struct fake *f = *state;
        struct seen s = {};
        struct kube_informer *inf = node_informer(f, &s, NULL, 0);
        assert_true(run_until(f, &s.synced, 1, 10 * 1000 * 1000));
        int before = s.n;

        /* Shut the agent out, delete a node, forget the history, let the agent back in. */
        fault(f, "{\"reject_token\":true}");
        fault(f, "{\"close_watches\":true}");
        run_until(f, NULL, 0, 300 * 1000);
        assert_int_equal(request(f, f->admin, "DELETE", "/api/v1/nodes/n3", NULL, NULL, NULL, 0),
                         200);
        fault(f, "{\"compact\":true}");
        fault(f, "{\"reject_token\":false}");
        assert_true(run_until(f, &s.n, before + 1, 40 * 1000 * 1000));
        assert_string_equal(s.lines[before], "deleted n3");
        assert_int_equal(s.synced, 2); /* the 410 made it list again */
        assert_int_equal(kube_cache_size(kube_informer_cache(inf)), 2);
        kube_informer_free(inf);
}

static void test_backoff(void **state)
{
        struct fake *f = *state;
        struct seen s = {};
        /* No CRDs on the fake: every list is a 404. Backoff starts at 0.25-0.5 s and doubles,
         * so within 3.5 s there are 3 or 4 attempts, not dozens. */
        const struct kube_informer_opts o = {
                .kind = "SriovNetworkNodePolicy",
                .path = "/apis/sriovnetwork.openshift.io/v1/namespaces/x/sriovnetworknodepolicies",
                .callbacks = { on_added, on_updated, on_deleted, &s },
        };
        long lists = stat_value(f, "requests");
        struct kube_informer *inf;
        assert_int_equal(kube_informer_new(f->agent, &o, &inf), 0);
        assert_int_equal(kube_informer_start(inf), 0);
        run_until(f, NULL, 0, 3500 * 1000);
        long attempts = stat_value(f, "requests") - lists - 1; /* minus the stats call */
        assert_false(kube_informer_has_synced(inf));
        kube_informer_free(inf);
        if (attempts < 3 || attempts > 5)
                fail_msg("%ld list attempts in 3.5 s", attempts);
}

int main(void)
{
        log_setup(LOG_TARGET_STDERR, LOG_NOTICE);
        signal(SIGPIPE, SIG_IGN);
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_paged_list_and_updates, start_fake, stop_fake),
                cmocka_unit_test_setup_teardown(test_field_selector, start_fake, stop_fake),
                cmocka_unit_test_setup_teardown(test_deleted_while_away, start_fake, stop_fake),
                cmocka_unit_test_setup_teardown(test_backoff, start_fake, stop_fake),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
