/* SPDX-License-Identifier: Apache-2.0 */
/* Shared by the lib/kube tests: starts test/fake-apiserver on 127.0.0.1 (ephemeral port,
 * bearer token TOKEN, anonymous requests allowed, nodes n1..n3) and drives an sd-event loop
 * with two HTTP clients: `agent` (with the token) and `admin` (anonymous, like kubectl).
 * Header-only on purpose: each test program is one file plus this. */
#pragma once

#include <errno.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kube/http.h"
#include "kube/kubeconfig.h"
#include "util/fileio.h"
#include "util/parse.h"
#include "util/yaml-json.h"

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

static inline int start_fake(void **state)
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
        assert_int_equal(strncmp(line, "PORT ", 5), 0);
        assert_int_equal(parse_int(line + 5, &port), 0);
        snprintf(f->url, sizeof(f->url), "http://127.0.0.1:%d", port);

        assert_int_equal(sd_event_new(&f->event), 0);
        f->agent_cfg = (struct kube_config){ .server = f->url, .token = TOKEN };
        f->admin_cfg = (struct kube_config){ .server = f->url };
        assert_int_equal(kube_http_new(f->event, &f->agent_cfg, &f->agent), 0);
        assert_int_equal(kube_http_new(f->event, &f->admin_cfg, &f->admin), 0);
        *state = f;
        return 0;
}

static inline int stop_fake(void **state)
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

static inline uint64_t now_usec(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000000ULL + (uint64_t)ts.tv_nsec / 1000;
}

/* Runs the loop until *flag becomes true (or for `usec` when flag is NULL). */
static inline bool run_until(struct fake *f, const int *flag, int want, uint64_t usec)
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
        char *body; /* malloc'd copy */
};

static inline void call_done(struct kube_request *req, int error, long status, const char *body,
                             size_t len, void *userdata)
{
        struct call *c = userdata;
        c->status = error < 0 ? error : status;
        c->body = strdup(body ? body : "");
        c->done = 1;
}

/* One request through the same event loop (the informer keeps running meanwhile). */
static inline long request(struct fake *f, struct kube_http *h, const char *method,
                           const char *path, const char *content_type, const char *body, char *out,
                           size_t out_size)
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
        free(c.body);
        return c.status;
}

static inline void fault(struct fake *f, const char *json)
{
        assert_int_equal(
            request(f, f->admin, "POST", "/_fake/faults", "application/json", json, NULL, 0), 200);
}

static inline long stat_value(struct fake *f, const char *key)
{
        char body[4096];
        assert_int_equal(
            request(f, f->admin, "GET", "/_fake/stats", NULL, NULL, body, sizeof(body)), 200);
        json_t *j = json_loads(body, 0, NULL);
        long v = (long)json_integer_value(json_object_get(j, key));
        json_decref(j);
        return v;
}

static inline void post_crd_file(struct fake *f, const char *path, void (*edit)(json_t *crd))
{
        char *text, *err;
        size_t len;
        json_t *crd;
        assert_int_equal(read_full_file(path, 1 << 20, &text, &len), 0);
        assert_int_equal(yaml_to_json(text, len, YAML_JSON_TYPED, &crd, &err), 0);
        if (edit)
                edit(crd);
        char *body = json_dumps(crd, JSON_COMPACT);
        assert_int_equal(request(f, f->admin, "POST",
                                 "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                                 "application/json", body, NULL, 0),
                         201);
        free(body);
        json_decref(crd);
        free(text);
}

/* Creates the policy CRD from crds/, the NodeState CRD from crds/ or (upstream) from
 * test/fixtures/crds-upstream/ passed through edit (may be NULL), and the namespace. */
static inline void install_crds_variant(struct fake *f, const char *ns, bool upstream,
                                        void (*edit)(json_t *crd))
{
        const char *srcdir = getenv("SRCDIR") ? getenv("SRCDIR") : ".";
        char path[512];
        snprintf(path, sizeof(path),
                 "%s/crds/sriovnetwork.openshift.io_sriovnetworknodepolicies.yaml", srcdir);
        post_crd_file(f, path, NULL);
        snprintf(path, sizeof(path), "%s/%s/sriovnetwork.openshift.io_sriovnetworknodestates.yaml",
                 srcdir, upstream ? "test/fixtures/crds-upstream" : "crds");
        post_crd_file(f, path, edit);
        char body[256];
        snprintf(body, sizeof(body), "{\"metadata\":{\"name\":\"%s\"}}", ns);
        assert_int_equal(
            request(f, f->admin, "POST", "/api/v1/namespaces", "application/json", body, NULL, 0),
            201);
}

/* Creates the CRDs from crds/ (via the project's own YAML reader) and the namespace. */
static inline void install_crds_and_namespace(struct fake *f, const char *ns)
{
        install_crds_variant(f, ns, false, NULL);
}

/* GET path as JSON (new reference), asserting status 200. */
static inline json_t *get_json(struct fake *f, const char *path)
{
        struct call c = {};
        const struct kube_request_opts o = { .path = path, .on_done = call_done, .userdata = &c };
        assert_int_equal(kube_http_start(f->admin, &o, NULL), 0);
        assert_true(run_until(f, &c.done, 1, 10 * 1000 * 1000));
        assert_int_equal(c.status, 200);
        json_t *j = json_loads(c.body, 0, NULL);
        free(c.body);
        assert_non_null(j);
        return j;
}
