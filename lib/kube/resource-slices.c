/* SPDX-License-Identifier: Apache-2.0 */
#include "kube/resource-slices.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/log.h"
#include "util/macro.h"

#define COLLECTION     "/apis/resource.k8s.io/v1/resourceslices"
#define RETRY_MIN_USEC (1000000ULL)
#define RETRY_MAX_USEC (30 * 1000000ULL)

enum op_kind { OP_LIST, OP_PUT, OP_POST, OP_DELETE, OP_CHECK };

struct kube_slices {
        struct kube_http *http;
        char *node, *driver, *list_path, *check_path;
        json_t *desired;   /* what the caller wants */
        json_t *published; /* what the server holds, as last set; NULL: unknown */
        json_t *round;     /* the desired set this round writes */
        json_t *ops;       /* array of [method, path, body|null] still to send */
        json_int_t generation;
        struct kube_request *request;
        enum op_kind op;
        sd_event_source *retry_timer;
        sd_event_source *verify_timer; /* armed while in sync, a non-empty set, not paused */
        uint64_t backoff_usec;
        size_t n_writes; /* of the round in flight */
        bool paused, verifying, recheck;
        bool have_desired; /* the caller said what it wants: nothing is written before */
};

static void start_round(struct kube_slices *s);
static void arm_verify(struct kube_slices *s);

static void request_done(struct kube_request *req, int error, long status, const char *body,
                         size_t body_len, void *userdata);
static int send_op(struct kube_slices *s, enum op_kind op, const char *method, const char *path,
                   json_t *body);

/* The check: the node's slices from the API server's watch cache (resourceVersion=0, no etcd
 * read). A difference from what was published starts a round, which reads them consistently
 * before writing; a cache a moment behind at worst costs that read. */
static int on_verify(sd_event_source *es, uint64_t usec, void *userdata)
{
        struct kube_slices *s = userdata;
        s->verify_timer = sd_event_source_disable_unref(s->verify_timer);
        if (s->paused || s->request || s->round || s->retry_timer || !s->published)
                return 0;
        if (send_op(s, OP_CHECK, "GET", s->check_path, NULL) < 0)
                arm_verify(s);
        return 0;
}

static void arm_verify(struct kube_slices *s)
{
        if (s->verify_timer || s->paused || json_array_size(s->desired) == 0)
                return;
        if (sd_event_add_time_relative(kube_http_event(s->http), &s->verify_timer, CLOCK_MONOTONIC,
                                       KUBE_SLICES_VERIFY_USEC, 200000, on_verify, s) < 0)
                log_warning("ResourceSlices of node %s: cannot arm the check timer; slices "
                            "deleted on the server come back at the next change only",
                            s->node);
}

static int on_retry(sd_event_source *es, uint64_t usec, void *userdata)
{
        struct kube_slices *s = userdata;
        s->retry_timer = sd_event_source_disable_unref(s->retry_timer);
        start_round(s);
        return 0;
}

static void fail_round(struct kube_slices *s, const char *what, long status, const char *body)
{
        s->backoff_usec = s->backoff_usec ? s->backoff_usec * 2 : RETRY_MIN_USEC;
        if (s->backoff_usec > RETRY_MAX_USEC)
                s->backoff_usec = RETRY_MAX_USEC;
        log_warning("ResourceSlices of node %s, driver %s: %s failed (HTTP %ld%s%.200s); "
                    "retrying in %llu ms",
                    s->node, s->driver, what, status, body && *body ? ": " : "", body ?: "",
                    (unsigned long long)(s->backoff_usec / 1000));
        json_decref(TAKE_PTR(s->round));
        json_decref(TAKE_PTR(s->ops));
        if (sd_event_add_time_relative(kube_http_event(s->http), &s->retry_timer, CLOCK_MONOTONIC,
                                       s->backoff_usec, 100000, on_retry, s) < 0)
                log_error("ResourceSlices: cannot arm the retry timer");
}

/* What decides whether a slice must be written: the spec without the pool's generation. */
static json_t *content(json_t *slice)
{
        json_t *spec = json_deep_copy(json_object_get(slice, "spec"));
        if (spec)
                json_object_del(json_object_get(spec, "pool"), "generation");
        return spec;
}

static int send_op(struct kube_slices *s, enum op_kind op, const char *method, const char *path,
                   json_t *body)
{
        const struct kube_request_opts opts = {
                .method = method,
                .path = path,
                .content_type = body ? "application/json" : NULL,
                .on_done = request_done,
                .userdata = s,
                .timeout_s = 10,
        };
        s->op = op;
        return kube_http_start_json(s->http, &opts, body, &s->request);
}

static void next_op(struct kube_slices *s)
{
        if (json_array_size(s->ops) == 0) {
                if (s->n_writes)
                        log_info("ResourceSlices of node %s, driver %s: %zu published, pool "
                                 "generation %lld",
                                 s->node, s->driver, json_array_size(s->round),
                                 (long long)s->generation);
                s->n_writes = 0;
                s->verifying = false;
                json_decref(s->published);
                s->published = TAKE_PTR(s->round);
                if (s->recheck) /* resumed meanwhile: what this round read may be gone */
                        json_decref(TAKE_PTR(s->published));
                s->recheck = false;
                json_decref(TAKE_PTR(s->ops));
                s->backoff_usec = 0;
                start_round(s); /* the caller may have set a newer one meanwhile */
                return;
        }
        json_t *op = json_array_get(s->ops, 0);
        const char *method = json_string_value(json_array_get(op, 0));
        enum op_kind kind = strcmp(method, "PUT") == 0    ? OP_PUT
                            : strcmp(method, "POST") == 0 ? OP_POST
                                                          : OP_DELETE;
        int r = send_op(s, kind, method, json_string_value(json_array_get(op, 1)),
                        json_is_null(json_array_get(op, 2)) ? NULL : json_array_get(op, 2));
        if (r < 0)
                fail_round(s, "starting a request", 0, strerror(-r));
}

static int add_op(json_t *ops, const char *method, const char *name, json_t *body)
{
        char path[600];
        if (name)
                snprintf(path, sizeof(path), COLLECTION "/%s", name);
        else
                snprintf(path, sizeof(path), COLLECTION);
        return json_array_append_new(ops, json_pack("[s,s,O?]", method, path, body));
}

/* Whether the server's `items` hold exactly `want` (content without the generation). */
static bool same_content(json_t *items, json_t *want)
{
        if (json_array_size(items) != json_array_size(want))
                return false;
        size_t i, j;
        json_t *w, *item;
        json_array_foreach(want, i, w)
        {
                const char *name =
                    json_string_value(json_object_get(json_object_get(w, "metadata"), "name"));
                json_t *old = NULL;
                json_array_foreach(items, j, item)
                {
                        const char *n = json_string_value(
                            json_object_get(json_object_get(item, "metadata"), "name"));
                        if (name && n && strcmp(n, name) == 0)
                                old = item;
                }
                json_auto_t *a = content(w), *b = old ? content(old) : NULL;
                if (!old || !json_equal(a, b))
                        return false;
        }
        return true;
}

/* The server's slices of this node and driver are in `items`: plan the writes. */
static void plan(struct kube_slices *s, json_t *items)
{
        json_int_t max_gen = 0;
        size_t i;
        json_t *item;
        bool same = json_array_size(items) == json_array_size(s->round);
        json_array_foreach(items, i, item)
        {
                json_int_t g = json_integer_value(json_object_get(
                    json_object_get(json_object_get(item, "spec"), "pool"), "generation"));
                if (g > max_gen)
                        max_gen = g;
        }
        json_t *by_name = json_object();
        json_array_foreach(items, i, item)
        {
                const char *name =
                    json_string_value(json_object_get(json_object_get(item, "metadata"), "name"));
                if (name)
                        json_object_set(by_name, name, item);
        }
        json_array_foreach(s->round, i, item)
        {
                const char *name =
                    json_string_value(json_object_get(json_object_get(item, "metadata"), "name"));
                json_t *old = json_object_get(by_name, name ?: "");
                json_auto_t *a = content(item), *b = old ? content(old) : NULL;
                if (!old || !json_equal(a, b))
                        same = false;
        }
        if (same) {
                /* Already there (an agent restart, a check finding them current): nothing to
                 * write. */
                s->generation = max_gen;
                s->ops = json_array();
                json_decref(by_name);
                next_op(s);
                return;
        }
        if (s->verifying)
                log_notice("ResourceSlices of node %s, driver %s: the server holds %zu slice(s) "
                           "that differ from the %zu wanted (deleted by the kubelet or someone "
                           "else): writing them again",
                           s->node, s->driver, json_array_size(items), json_array_size(s->round));
        /* Never lower than what this run wrote: after a wipe the server has none to go by. */
        s->generation = (max_gen > s->generation ? max_gen : s->generation) + 1;
        s->ops = json_array();
        json_array_foreach(s->round, i, item)
        {
                json_t *body = json_deep_copy(item);
                const char *name =
                    json_string_value(json_object_get(json_object_get(item, "metadata"), "name"));
                json_object_set_new(json_object_get(json_object_get(body, "spec"), "pool"),
                                    "generation", json_integer(s->generation));
                json_t *old = json_object_get(by_name, name ?: "");
                if (old) {
                        json_object_set(
                            json_object_get(body, "metadata"), "resourceVersion",
                            json_object_get(json_object_get(old, "metadata"), "resourceVersion"));
                        add_op(s->ops, "PUT", name, body);
                        json_object_del(by_name, name);
                } else
                        add_op(s->ops, "POST", NULL, body);
                json_decref(body);
        }
        const char *name;
        json_t *old;
        json_object_foreach(by_name, name, old)
        {
                add_op(s->ops, "DELETE", name, NULL);
        }
        json_decref(by_name);
        s->n_writes = json_array_size(s->ops);
        next_op(s);
}

static void request_done(struct kube_request *req, int error, long status, const char *body,
                         size_t body_len, void *userdata)
{
        struct kube_slices *s = userdata;
        s->request = NULL;
        if (s->op == OP_CHECK) {
                json_auto_t *list =
                    error == 0 && status == 200 ? json_loadb(body, body_len, 0, NULL) : NULL;
                json_t *items = json_object_get(list, "items");
                if (!json_is_array(items)) {
                        log_debug("ResourceSlices of node %s: check failed (HTTP %ld)", s->node,
                                  status);
                        arm_verify(s);
                        return;
                }
                if (!s->paused && s->published && !same_content(items, s->published)) {
                        json_decref(TAKE_PTR(s->published));
                        s->verifying = true;
                }
                start_round(s); /* arms the next check when in sync */
                return;
        }
        if (s->op == OP_LIST) {
                if (error == 0 && (status == 404 || status == 403) &&
                    json_array_size(s->round) == 0) {
                        /* DRA off on a cluster without the API (404) or without the agent's
                         * newer RBAC (403): nothing of ours can be there, or nothing we may
                         * remove; not worth retrying. */
                        log_debug("ResourceSlices of node %s: none to remove (HTTP %ld on list)",
                                  s->node, status);
                        json_decref(s->published);
                        s->published = TAKE_PTR(s->round);
                        return;
                }
                json_auto_t *list =
                    error == 0 && status == 200 ? json_loadb(body, body_len, 0, NULL) : NULL;
                json_t *items = json_object_get(list, "items");
                if (!json_is_array(items))
                        return fail_round(s, "listing", status, error ? strerror(-error) : body);
                return plan(s, items);
        }
        bool ok = error == 0 &&
                  ((status >= 200 && status < 300) || (s->op == OP_DELETE && status == 404));
        if (!ok)
                return fail_round(s,
                                  s->op == OP_PUT    ? "updating a slice"
                                  : s->op == OP_POST ? "creating a slice"
                                                     : "deleting a slice",
                                  status, error ? strerror(-error) : body);
        json_array_remove(s->ops, 0);
        next_op(s);
}

static void start_round(struct kube_slices *s)
{
        if (s->request || s->retry_timer || s->round)
                return; /* one at a time; the end of this one looks again */
        if (s->paused || !s->have_desired)
                return;
        if (s->published && json_equal(s->published, s->desired)) {
                arm_verify(s);
                return;
        }
        s->round = json_incref(s->desired);
        int r = send_op(s, OP_LIST, "GET", s->list_path, NULL);
        if (r < 0)
                fail_round(s, "starting the list", 0, strerror(-r));
}

int kube_slices_set(struct kube_slices *s, json_t *desired)
{
        json_decref(s->desired);
        s->desired = json_incref(desired);
        s->have_desired = true;
        start_round(s);
        return 0;
}

void kube_slices_set_paused(struct kube_slices *s, bool paused)
{
        if (s->paused == paused && paused)
                return;
        s->paused = paused;
        s->verify_timer = sd_event_source_disable_unref(s->verify_timer);
        if (paused) {
                log_info("ResourceSlices of node %s, driver %s: not written until the kubelet "
                         "registers the driver",
                         s->node, s->driver);
                return;
        }
        /* Whatever happened meanwhile (a kubelet that wiped them at its start), the server is
         * asked again. */
        json_decref(TAKE_PTR(s->published));
        s->verifying = true;
        s->recheck = s->round != NULL;
        start_round(s);
}

bool kube_slices_in_sync(const struct kube_slices *s)
{
        return s->published && json_equal(s->published, s->desired);
}

int kube_slices_new(struct kube_http *http, const char *node, const char *driver,
                    struct kube_slices **ret)
{
        struct kube_slices *s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        s->http = http;
        s->node = strdup(node);
        s->driver = strdup(driver);
        _cleanup_free_ char *sel = NULL;
        if (asprintf(&sel, "spec.nodeName=%s,spec.driver=%s", node, driver) >= 0) {
                _cleanup_free_ char *esc = kube_http_escape(sel);
                if (esc && asprintf(&s->list_path, COLLECTION "?fieldSelector=%s", esc) < 0)
                        s->list_path = NULL;
                if (esc && asprintf(&s->check_path,
                                    COLLECTION "?fieldSelector=%s&resourceVersion=0", esc) < 0)
                        s->check_path = NULL;
        }
        s->desired = json_array();
        if (!s->node || !s->driver || !s->list_path || !s->check_path || !s->desired) {
                kube_slices_free(s);
                return -ENOMEM;
        }
        *ret = s;
        return 0;
}

struct kube_slices *kube_slices_free(struct kube_slices *s)
{
        if (!s)
                return NULL;
        kube_request_cancel(s->request);
        s->retry_timer = sd_event_source_disable_unref(s->retry_timer);
        s->verify_timer = sd_event_source_disable_unref(s->verify_timer);
        json_decref(s->desired);
        json_decref(s->published);
        json_decref(s->round);
        json_decref(s->ops);
        free(s->node);
        free(s->driver);
        free(s->list_path);
        free(s->check_path);
        free(s);
        return NULL;
}
