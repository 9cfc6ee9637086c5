/* SPDX-License-Identifier: Apache-2.0 */
#include "kube/nodestate.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "kube/merge-patch.h"
#include "kube/status.h"
#include "util/log.h"
#include "util/macro.h"

#define DEFAULT_NAMESPACE "sriov-network-operator"
#define GROUP_VERSION     "sriovnetwork.openshift.io/v1"
#define KIND              "SriovNetworkNodeState"
#define BACKOFF_MIN_USEC  (500ULL * 1000)
#define BACKOFF_MAX_USEC  (30ULL * 1000 * 1000)
/* Our writes are at most one a second, so the watch would have to lag by 16 s for an event of
 * ours to fall out of the history (and then it costs one 409 and a re-read, as before). */
#define SEEN_RV_HISTORY 16
/* At most one write per second under churn (issue: a write loop at 5,000 nodes). */
#define WRITE_INTERVAL_USEC (1000ULL * 1000)
/* A body the server refuses as invalid (422) is not retried sooner than this. */
/* Deleted again this soon after we re-created it: something keeps removing it; back off. */
#define RECREATE_WINDOW_USEC (60ULL * 1000 * 1000)
/* Write pacing is 1 s and backoffs 0.25 s and up: 50 ms of slack, not sd-event's 250 ms. */
#define TIMER_ACCURACY_USEC  (50ULL * 1000)
#define PERMANENT_RETRY_USEC (5ULL * 60 * 1000 * 1000)

static const char *const sync_status_table[_KUBE_SYNC_STATUS_MAX] = {
        [KUBE_SYNC_IN_PROGRESS] = "InProgress",
        [KUBE_SYNC_SUCCEEDED] = "Succeeded",
        [KUBE_SYNC_FAILED] = "Failed",
};

const char *kube_sync_status_to_string(enum kube_sync_status s)
{
        return (unsigned)s < _KUBE_SYNC_STATUS_MAX ? sync_status_table[s] : NULL;
}

int kube_sync_status_from_string(const char *s)
{
        for (int i = 0; i < _KUBE_SYNC_STATUS_MAX; i++)
                if (s && strcmp(s, sync_status_table[i]) == 0)
                        return i;
        return -EINVAL;
}

enum writer_op {
        OP_NONE,
        OP_GET,
        OP_CREATE,
        OP_PATCH_SPEC,
        OP_PATCH_STATUS,
};

struct kube_nodestate {
        struct kube_http *http;
        char *namespace_, *node_name;
        char *object_path; /* .../sriovnetworknodestates/NODE */
        struct kube_events *events;
        void (*on_result)(struct kube_nodestate *, int, void *);
        void *userdata;

        json_t *desired_spec;   /* NULL until set */
        char *rdma_mode;        /* status.system.rdmaMode, NULL: not reported */
        json_t *desired_status; /* {interfaces, syncStatus, lastSyncError} or NULL */
        /* The extra-status annotation (its JSON text as a JSON string, shared by reference
         * between desired, in flight, acknowledged and the server's copy: with hundreds of VFs
         * it is ~100 KiB), NULL = none. */
        json_t *desired_extra;
        /* A status that arrived while a Failed one still waited for its (paced) write: a
         * failure is never coalesced away, it is written first and this one after it. */
        json_t *next_status;
        json_t *next_extra;
        json_t *server; /* last object seen from the server, NULL = unknown */

        /* What the server last acknowledged (2xx) from us, as we sent it. The server may
         * prune or default what it stores, so its echo is not a measure of "up to date":
         * comparing with it would write the same body forever. NULL/false = unknown (never
         * written, or the object changed behind our back): compare with the echo then. */
        json_t *acked_spec, *acked_status;
        json_t *acked_extra;
        bool acked_extra_known;
        char *acked_rv; /* resourceVersion of the echo of our last write */
        /* The resourceVersions of this object that this writer has read, written or adopted
         * from the watch, newest last. resourceVersions are opaque (never compared by value
         * order): a watch event naming one of them is a version we already had, at best the
         * current one and otherwise superseded (typically the late event of our own earlier
         * write), never someone else's change. */
        char seen_rvs[SEEN_RV_HISTORY][64];
        unsigned seen_rvs_next; /* ring position of the next one */
        json_t *inflight_spec, *inflight_status;
        json_t *inflight_extra;

        struct kube_request *request;
        enum writer_op op;
        sd_event_source *retry_timer;
        uint64_t backoff_usec;
        uint64_t write_interval_usec;
        uint64_t last_write_usec; /* CLOCK_MONOTONIC of the last write sent, 0 = none */
        unsigned writes;
        uint64_t last_create_usec;  /* when we last (re)created it after a 404, 0 = never */
        bool held;                  /* the last body was refused as invalid: wait for a new one */
        char *last_permanent_error; /* logged once until the body changes */
        /* While the server holds the status we set and nothing is being written, that status
         * is kept only as its compact text (keys sorted): desired and acknowledged status are
         * NULL and the server's copy has no status.interfaces. Decoded, with hundreds of VFs,
         * it is the largest thing the agent holds (~0.6 MiB for 512 VFs, ~0.1 MiB as text).
         * NULL when not parked. */
        char *parked_status;
};

static void writer_pump(struct kube_nodestate *st);

/* Parks the status (see parked_status) when it is written and the writer is idle: desired and
 * acknowledged are one tree, and the server's status.interfaces is that tree's. */
static void park_status(struct kube_nodestate *st)
{
        if (st->parked_status || st->op != OP_NONE || st->request || st->next_status ||
            !st->desired_status || st->desired_status != st->acked_status)
                return;
        json_t *interfaces = json_object_get(st->desired_status, "interfaces");
        json_t *server_status = json_object_get(st->server, "status");
        if (!interfaces || json_object_get(server_status, "interfaces") != interfaces)
                return;
        char *text = json_dumps(st->desired_status, JSON_COMPACT | JSON_SORT_KEYS);
        if (!text)
                return; /* out of memory: stay as we are */
        json_object_del(server_status, "interfaces");
        json_decref(st->acked_status);
        json_decref(st->desired_status);
        st->acked_status = st->desired_status = NULL;
        st->parked_status = text;
}

/* Back to the decoded status, as it was before park_status(). */
static int unpark_status(struct kube_nodestate *st)
{
        if (!st->parked_status)
                return 0;
        json_t *status = json_loads(st->parked_status, 0, NULL);
        if (!status)
                return log_error_errno(-ENOMEM, "NodeState %s: cannot decode the status kept",
                                       st->node_name);
        json_t *server_status = json_object_get(st->server, "status");
        if (json_is_object(server_status) &&
            json_object_set(server_status, "interfaces", json_object_get(status, "interfaces")) <
                0) {
                json_decref(status);
                return log_error_errno(-ENOMEM, "NodeState %s: cannot decode the status kept",
                                       st->node_name);
        }
        st->desired_status = status;
        st->acked_status = json_incref(status);
        free(st->parked_status);
        st->parked_status = NULL;
        return 0;
}

static void forget_acked(struct kube_nodestate *st)
{
        json_decref(st->acked_spec);
        json_decref(st->acked_status);
        st->acked_spec = st->acked_status = NULL;
        json_decref(st->acked_extra);
        st->acked_extra = NULL;
        st->acked_extra_known = false;
        free(st->acked_rv);
        st->acked_rv = NULL;
}

static void clear_inflight(struct kube_nodestate *st)
{
        json_decref(st->inflight_spec);
        json_decref(st->inflight_status);
        st->inflight_spec = st->inflight_status = NULL;
        json_decref(st->inflight_extra);
        st->inflight_extra = NULL;
}

static bool streq_null(const char *a, const char *b)
{
        return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

int kube_nodestate_new(struct kube_http *http, const struct kube_nodestate_opts *opts,
                       struct kube_nodestate **ret)
{
        if (!opts->node_name || !*opts->node_name || strchr(opts->node_name, '/'))
                return log_error_errno(-EINVAL, "NodeState: invalid node name \"%s\"",
                                       opts->node_name ? opts->node_name : "");
        struct kube_nodestate *st = calloc(1, sizeof(*st));
        if (!st)
                return -ENOMEM;
        *st = (struct kube_nodestate){
                .http = http,
                .events = opts->events,
                .on_result = opts->on_result,
                .userdata = opts->userdata,
                .namespace_ = strdup(opts->namespace_ ? opts->namespace_ : DEFAULT_NAMESPACE),
                .node_name = strdup(opts->node_name),
                .write_interval_usec =
                    opts->write_interval_usec ? opts->write_interval_usec : WRITE_INTERVAL_USEC,
        };
        if (!st->namespace_ || !st->node_name ||
            asprintf(&st->object_path,
                     "/apis/" GROUP_VERSION "/namespaces/%s/sriovnetworknodestates/%s",
                     st->namespace_, st->node_name) < 0) {
                kube_nodestate_free(st);
                return -ENOMEM;
        }
        *ret = st;
        return 0;
}

struct kube_nodestate *kube_nodestate_free(struct kube_nodestate *st)
{
        if (!st)
                return NULL;
        kube_request_cancel(st->request);
        sd_event_source_disable_unref(st->retry_timer);
        json_decref(st->desired_spec);
        json_decref(st->desired_status);
        free(st->rdma_mode);
        json_decref(st->desired_extra);
        json_decref(st->next_status);
        json_decref(st->next_extra);
        json_decref(st->server);
        forget_acked(st);
        clear_inflight(st);
        free(st->parked_status);
        free(st->last_permanent_error);
        free(st->namespace_);
        free(st->node_name);
        free(st->object_path);
        free(st);
        return NULL;
}

bool kube_nodestate_busy(const struct kube_nodestate *st)
{
        return st->op != OP_NONE ||
               (st->retry_timer && sd_event_source_get_enabled(st->retry_timer, NULL) > 0);
}

json_t *kube_nodestate_object(const struct kube_nodestate *st)
{
        return st->server;
}

unsigned kube_nodestate_writes(const struct kube_nodestate *st)
{
        return st->writes;
}

static void report(struct kube_nodestate *st, int error)
{
        if (st->on_result)
                st->on_result(st, error, st->userdata);
}

static uint64_t now_usec(struct kube_nodestate *st)
{
        uint64_t now = 0;
        sd_event_now(kube_http_event(st->http), CLOCK_MONOTONIC, &now);
        return now;
}

static int retry_cb(sd_event_source *s, uint64_t usec, void *userdata)
{
        writer_pump(userdata);
        return 0;
}

/* Runs the writer from the event loop, after delay_usec. */
static void schedule(struct kube_nodestate *st, uint64_t delay_usec)
{
        sd_event *event = kube_http_event(st->http);
        uint64_t now;
        sd_event_now(event, CLOCK_MONOTONIC, &now);
        if (!st->retry_timer) {
                int k = sd_event_add_time(event, &st->retry_timer, CLOCK_MONOTONIC,
                                          now + delay_usec, TIMER_ACCURACY_USEC, retry_cb, st);
                if (k < 0) {
                        log_error_errno(k, "NodeState %s: cannot arm the retry timer",
                                        st->node_name);
                        return;
                }
        } else
                sd_event_source_set_time(st->retry_timer, now + delay_usec);
        sd_event_source_set_enabled(st->retry_timer, SD_EVENT_ONESHOT);
}

static void schedule_backoff(struct kube_nodestate *st)
{
        uint64_t next = st->backoff_usec ? st->backoff_usec * 2 : BACKOFF_MIN_USEC;
        if (next > BACKOFF_MAX_USEC)
                next = BACKOFF_MAX_USEC;
        st->backoff_usec = next;
        uint64_t rnd = 0;
        (void)!getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK);
        schedule(st, next / 2 + rnd % (next / 2 + 1));
}

static const char *object_rv(json_t *obj)
{
        return json_string_value(
            json_object_get(json_object_get(obj, "metadata"), "resourceVersion"));
}

static const char *server_extra(json_t *obj)
{
        return json_string_value(
            json_object_get(json_object_get(json_object_get(obj, "metadata"), "annotations"),
                            KUBE_NODESTATE_EXTRA_ANNOTATION));
}

static bool rv_seen(const struct kube_nodestate *st, const char *rv)
{
        for (unsigned i = 0; rv && i < SEEN_RV_HISTORY; i++)
                if (strcmp(st->seen_rvs[i], rv) == 0)
                        return true;
        return false;
}

static void remember_rv(struct kube_nodestate *st, json_t *obj)
{
        const char *rv = object_rv(obj);
        if (!rv || !*rv || strlen(rv) >= sizeof(st->seen_rvs[0]) || rv_seen(st, rv))
                return;
        snprintf(st->seen_rvs[st->seen_rvs_next], sizeof(st->seen_rvs[0]), "%s", rv);
        st->seen_rvs_next = (st->seen_rvs_next + 1) % SEEN_RV_HISTORY;
}

static void set_server(struct kube_nodestate *st, const char *body, size_t len)
{
        json_auto_t *obj = json_loadb(body, len, 0, NULL);
        json_decref(st->server);
        st->server = json_is_object(obj) ? TAKE_PTR(obj) : NULL;
        remember_rv(st, st->server);
}

/* Members of the server's object (a fresh copy we own) that equal what we hold anyway become
 * references to our copy: with hundreds of VFs, status.interfaces is hundreds of KiB decoded,
 * and the echo of our own write carries it again. Same content, one copy. */
static void share_member(json_t *server_part, json_t *ours)
{
        const char *key;
        json_t *value;
        json_object_foreach(ours, key, value)
        {
                json_t *have = json_object_get(server_part, key);
                if (have && have != value && json_equal(have, value))
                        json_object_set(server_part, key, value);
        }
}

/* Shallow copies of object and of the members share_with_ours() replaces members of (status,
 * metadata, metadata.annotations): the watch's object itself is never changed. */
static json_t *copy_for_sharing(json_t *object)
{
        json_auto_t *copy = json_copy(object);
        if (!copy)
                return NULL;
        json_t *status = json_object_get(object, "status");
        if (json_is_object(status) && json_object_set_new(copy, "status", json_copy(status)) < 0)
                return NULL;
        json_t *meta = json_object_get(object, "metadata");
        if (!json_is_object(meta))
                return TAKE_PTR(copy);
        json_auto_t *meta_copy = json_copy(meta);
        json_t *annotations = json_object_get(meta, "annotations");
        if (!meta_copy ||
            (json_is_object(annotations) &&
             json_object_set_new(meta_copy, "annotations", json_copy(annotations)) < 0))
                return NULL;
        if (json_object_set(copy, "metadata", meta_copy) < 0)
                return NULL;
        return TAKE_PTR(copy);
}

static void share_with_ours(struct kube_nodestate *st)
{
        json_t *spec = json_object_get(st->server, "spec");
        json_t *status = json_object_get(st->server, "status");
        /* The spec as a whole (keys absent in ours mean absent). */
        json_t *spec_ours = st->desired_spec ? st->desired_spec : st->acked_spec;
        if (spec && spec_ours && spec != spec_ours && json_equal(spec, spec_ours))
                json_object_set(st->server, "spec", spec_ours);
        if (json_is_object(status)) {
                if (st->desired_status)
                        share_member(status, st->desired_status);
                if (st->acked_status && st->acked_status != st->desired_status)
                        share_member(status, st->acked_status);
        }
        json_t *annotations =
            json_object_get(json_object_get(st->server, "metadata"), "annotations");
        json_t *extra = json_object_get(annotations, KUBE_NODESTATE_EXTRA_ANNOTATION);
        json_t *const candidates[] = { st->desired_extra, st->acked_extra };
        for (size_t i = 0; extra && i < ELEMENTSOF(candidates); i++)
                if (candidates[i] && extra != candidates[i] && json_equal(extra, candidates[i])) {
                        json_object_set(annotations, KUBE_NODESTATE_EXTRA_ANNOTATION,
                                        candidates[i]);
                        break;
                }
}

/* After a read: an object that is not the echo of our last write was changed (or re-created)
 * by someone else, so what we wrote before says nothing about it any more. */
static void after_read(struct kube_nodestate *st)
{
        if (!st->acked_rv || !streq_null(st->acked_rv, object_rv(st->server)))
                forget_acked(st);
}

/* After a 2xx write: remember what we sent as acknowledged, and the echo's version. */
static void after_write(struct kube_nodestate *st, enum writer_op op)
{
        if (op == OP_CREATE)
                forget_acked(st); /* status starts empty on a new object */
        if (op == OP_CREATE || op == OP_PATCH_SPEC) {
                if (st->inflight_spec) {
                        json_decref(st->acked_spec);
                        st->acked_spec = json_incref(st->inflight_spec);
                }
                json_decref(st->acked_extra);
                st->acked_extra = TAKE_PTR(st->inflight_extra);
                st->acked_extra_known = true;
        }
        if (op == OP_PATCH_STATUS && st->inflight_status) {
                json_decref(st->acked_status);
                st->acked_status = json_incref(st->inflight_status);
        }
        free(st->acked_rv);
        const char *rv = object_rv(st->server);
        st->acked_rv = rv ? strdup(rv) : NULL;
        clear_inflight(st);
}

static void maybe_post_sync_event(struct kube_nodestate *st, const char *before)
{
        const char *after =
            json_string_value(json_object_get(json_object_get(st->server, "status"), "syncStatus"));
        if (!st->events || !after || (before && strcmp(before, after) == 0))
                return;
        const char *err = json_string_value(
            json_object_get(json_object_get(st->server, "status"), "lastSyncError"));
        _cleanup_free_ char *message = NULL;
        if (asprintf(&message, "Status changed from %s to %s. Last Error: %s",
                     before && *before ? before : "(none)", after, err ? err : "") < 0)
                return;
        struct kube_object_ref ref;
        if (kube_object_ref_from_json(st->server, &ref) < 0)
                return;
        kube_events_post(st->events, &ref, strcmp(after, "Failed") == 0 ? "Warning" : "Normal",
                         KUBE_EVENT_REASON_SYNC_STATUS, message);
}

static void promote_next_status(struct kube_nodestate *st)
{
        if (!st->next_status)
                return;
        json_decref(st->desired_status);
        st->desired_status = TAKE_PTR(st->next_status);
        json_decref(st->desired_extra);
        st->desired_extra = TAKE_PTR(st->next_extra);
}

/* A 404 names the object when the object is missing ("sriovnetworknodestates.… \"N\" not
 * found", details.name = N); a 404 without it means the resource or its /status subresource is
 * not served (no CRD, or a CRD without the status subresource): creating cannot help then. */
static bool is_object_not_found(struct kube_nodestate *st, const char *body, size_t len)
{
        json_auto_t *status = body ? json_loadb(body, len, 0, NULL) : NULL;
        json_t *details = json_object_get(status, "details");
        const char *name = json_string_value(json_object_get(details, "name"));
        return name && strcmp(name, st->node_name) == 0;
}

static void request_done(struct kube_request *req, int error, long status, const char *body,
                         size_t body_len, void *userdata)
{
        struct kube_nodestate *st = userdata;
        enum writer_op op = st->op;
        st->request = NULL;
        st->op = OP_NONE;
        /* A spec write may have started while the status was parked. Should decoding it fail,
         * the status stays parked (and unwritten until it changes). */
        (void)unpark_status(st);

        /* The syncStatus before this write (a short enum value), for the Event. */
        char before_buf[64];
        const char *before = NULL;
        if (op == OP_PATCH_STATUS) {
                const char *b = json_string_value(
                    json_object_get(json_object_get(st->server, "status"), "syncStatus"));
                if (b) {
                        snprintf(before_buf, sizeof(before_buf), "%s", b);
                        before = before_buf;
                }
        }

        if (error == 0 && (status == 200 || status == 201)) {
                set_server(st, body, body_len);
                st->backoff_usec = 0;
                if (op == OP_GET)
                        after_read(st);
                else {
                        after_write(st, op);
                        st->held = false;
                        free(st->last_permanent_error);
                        st->last_permanent_error = NULL;
                }
                share_with_ours(st);
                if (op == OP_CREATE)
                        log_info("NodeState %s/%s: created", st->namespace_, st->node_name);
                if (op == OP_PATCH_STATUS) {
                        maybe_post_sync_event(st, before);
                        promote_next_status(st);
                }
                writer_pump(st);
                return;
        }
        clear_inflight(st);
        char desc[512];
        kube_request_describe(req, error, status, body, body_len, desc, sizeof(desc));

        if (error == 0 && status == 404 &&
            (op == OP_GET || op == OP_PATCH_SPEC || op == OP_PATCH_STATUS)) {
                if (!is_object_not_found(st, body, body_len)) {
                        log_error("NodeState %s/%s: the API server does not serve %s (%s): is "
                                  "the SriovNetworkNodeState CRD installed, with the status "
                                  "subresource? Retrying",
                                  st->namespace_, st->node_name,
                                  op == OP_PATCH_STATUS ? "its /status subresource" : "it", desc);
                        schedule_backoff(st);
                        report(st, -ENOENT);
                        return;
                }
                /* Missing (or deleted behind our back): create it. A create that keeps being
                 * undone is paced by the backoff rather than repeated at once. */
                json_decref(st->server);
                st->server = NULL;
                forget_acked(st);
                st->op = OP_CREATE;
                uint64_t now = now_usec(st);
                if (st->last_create_usec && now - st->last_create_usec < RECREATE_WINDOW_USEC)
                        schedule_backoff(st);
                else
                        schedule(st, 0);
                st->last_create_usec = now;
                return;
        }
        if (error == 0 && status == 409) {
                log_debug("NodeState %s: conflict (%s), refetching", st->node_name,
                          op == OP_CREATE ? "already exists" : "modified meanwhile");
                json_decref(st->server);
                st->server = NULL;
                schedule(st, 0);
                return;
        }
        static const char *const op_names[] = { [OP_GET] = "read",
                                                [OP_CREATE] = "create",
                                                [OP_PATCH_SPEC] = "write the spec of",
                                                [OP_PATCH_STATUS] = "write the status of" };
        const char *what = op_names[op] ? op_names[op] : "update";
        if (error == 0 && (status == 400 || status == 422)) {
                /* The server refuses this body: sending it again cannot succeed. Say so once,
                 * and wait for a new desired state (or a long while) before trying again. */
                if (!streq_null(st->last_permanent_error, desc)) {
                        log_error("NodeState %s/%s: the API server refuses to %s it: %s; not "
                                  "retrying this content",
                                  st->namespace_, st->node_name, what, desc);
                        free(st->last_permanent_error);
                        st->last_permanent_error = strdup(desc);
                }
                st->held = true;
                schedule(st, PERMANENT_RETRY_USEC);
                report(st, -EINVAL);
                return;
        }
        log_warning("NodeState %s/%s: cannot %s it: %s; retrying", st->namespace_, st->node_name,
                    what, desc);
        uint64_t retry_after = error == 0 ? kube_request_retry_after_usec(req) : 0;
        if (retry_after > 0)
                schedule(st, retry_after);
        else
                schedule_backoff(st);
        report(st, error < 0 ? error : (status == 401 || status == 403) ? -EACCES : -EIO);
}

static int start(struct kube_nodestate *st, enum writer_op op, const char *method, const char *path,
                 const char *content_type, json_t *body)
{
        const struct kube_request_opts opts = {
                .method = method,
                .path = path,
                .content_type = content_type,
                .on_done = request_done,
                .userdata = st,
        };
        int k = kube_http_start_json(st->http, &opts, body, &st->request);
        if (k < 0)
                return k;
        st->op = op;
        if (op != OP_GET) {
                st->writes++;
                st->last_write_usec = now_usec(st);
        }
        return 0;
}

static int start_create(struct kube_nodestate *st)
{
        _cleanup_free_ char *path = NULL;
        if (asprintf(&path, "/apis/" GROUP_VERSION "/namespaces/%s/sriovnetworknodestates",
                     st->namespace_) < 0)
                return -ENOMEM;
        json_t *spec = st->desired_spec ? json_incref(st->desired_spec) : json_object();
        json_auto_t *body =
            json_pack("{s:s, s:s, s:{s:s, s:s}, s:o}", "apiVersion", GROUP_VERSION, "kind", KIND,
                      "metadata", "name", st->node_name, "namespace", st->namespace_, "spec", spec);
        if (!body)
                return -ENOMEM;
        if (st->desired_extra)
                json_object_set_new(
                    json_object_get(body, "metadata"), "annotations",
                    json_pack("{s:O}", KUBE_NODESTATE_EXTRA_ANNOTATION, st->desired_extra));
        clear_inflight(st);
        st->inflight_spec = st->desired_spec ? json_incref(st->desired_spec) : NULL;
        st->inflight_extra = json_incref(st->desired_extra);
        return start(st, OP_CREATE, "POST", path, "application/json", body);
}

/* One merge patch: spec_diff on the object (with the extra-status annotation when it changed),
 * or status_diff through /status. Remembers what it sends, to compare with later. */
static int start_patch(struct kube_nodestate *st, json_t *spec_diff, bool extra_changed,
                       json_t *status_diff)
{
        json_auto_t *body =
            json_pack("{s:{s:s?}}", "metadata", "resourceVersion", object_rv(st->server));
        if (!body)
                return -ENOMEM;
        clear_inflight(st);
        bool status = status_diff != NULL;
        if (status) {
                json_object_set(body, "status", status_diff);
                st->inflight_status = json_incref(st->desired_status);
        } else {
                if (spec_diff && json_object_size(spec_diff) > 0)
                        json_object_set(body, "spec", spec_diff);
                if (extra_changed)
                        json_object_set_new(
                            json_object_get(body, "metadata"), "annotations",
                            json_pack("{s:O}", KUBE_NODESTATE_EXTRA_ANNOTATION,
                                      st->desired_extra ? st->desired_extra : json_null()));
                st->inflight_spec = st->desired_spec ? json_incref(st->desired_spec) : NULL;
                st->inflight_extra = json_incref(st->desired_extra);
        }
        _cleanup_free_ char *status_path = NULL;
        if (status && asprintf(&status_path, "%s/status", st->object_path) < 0)
                return -ENOMEM;
        return start(st, status ? OP_PATCH_STATUS : OP_PATCH_SPEC, "PATCH",
                     status ? status_path : st->object_path, "application/merge-patch+json", body);
}

/* A copy of status.interfaces without each interface's "Vfs" list. */
static json_t *interfaces_without_vfs(json_t *status)
{
        json_t *out = json_array();
        size_t i;
        json_t *iface;
        json_array_foreach(json_object_get(status, "interfaces"), i, iface)
        {
                json_t *copy = json_copy(iface);
                json_object_del(copy, "Vfs");
                json_array_append_new(out, copy);
        }
        return out;
}

/* Whether the owned status fields differ in anything but interfaces[].Vfs. Like upstream, VF
 * details (MACs, assignment) churn; they are written along with the next real change only. */
static bool differs_beyond_vfs(json_t *server_status, json_t *desired)
{
        if (!server_status)
                return true;
        const char *key;
        json_t *value;
        json_object_foreach(desired, key, value)
        {
                if (strcmp(key, "interfaces") == 0)
                        continue;
                json_t *have = json_object_get(server_status, key);
                if (!have || !json_equal(have, value))
                        return true;
        }
        json_auto_t *a = interfaces_without_vfs(server_status);
        json_auto_t *b = interfaces_without_vfs(desired);
        return !json_equal(a, b) || !json_object_get(server_status, "interfaces") !=
                                        !json_object_get(desired, "interfaces");
}

/* What the spec write must carry: the merge patch from the server's spec to the desired one
 * (may be empty) and whether the annotation changes; false when no spec write is due. The
 * decision is made against what the server acknowledged from us, the content against its
 * copy. */
static bool spec_write_due(struct kube_nodestate *st, json_t **ret_diff, bool *ret_extra_changed)
{
        *ret_diff = NULL;
        json_t *server_spec = json_object_get(st->server, "spec");
        bool spec_due = false;
        if (st->desired_spec) {
                json_t *base = st->acked_spec ? st->acked_spec : server_spec;
                json_auto_t *d = kube_merge_patch_diff(base, st->desired_spec);
                spec_due = d && json_object_size(d) > 0;
        }
        const char *desired_extra = json_string_value(st->desired_extra);
        const char *base_extra =
            st->acked_extra_known ? json_string_value(st->acked_extra) : server_extra(st->server);
        bool extra_due = !streq_null(base_extra, desired_extra);
        /* Removing an annotation that is not there is no write. */
        bool extra_on_server_differs = !streq_null(server_extra(st->server), desired_extra);
        *ret_extra_changed = extra_due && extra_on_server_differs;
        if (!spec_due && !extra_due)
                return false;
        if (spec_due)
                *ret_diff = kube_merge_patch_diff(server_spec, st->desired_spec);
        if ((!*ret_diff || json_object_size(*ret_diff) == 0) && !*ret_extra_changed) {
                /* The server already holds it (e.g. someone wrote the same): adopt as acked. */
                json_decref(*ret_diff);
                *ret_diff = NULL;
                if (st->desired_spec) {
                        json_decref(st->acked_spec);
                        st->acked_spec = json_incref(st->desired_spec);
                }
                json_decref(st->acked_extra);
                st->acked_extra = json_incref(st->desired_extra);
                st->acked_extra_known = true;
                return false;
        }
        return true;
}

/* The status merge patch due, or NULL. VF details alone never make a write (they ride along
 * with the next real change, as upstream does). */
static json_t *status_write_due(struct kube_nodestate *st)
{
        if (!st->desired_status)
                return NULL;
        json_t *server_status = json_object_get(st->server, "status");
        json_t *base = st->acked_status ? st->acked_status : server_status;
        if (!differs_beyond_vfs(base, st->desired_status))
                return NULL;
        json_auto_t *d = kube_merge_patch_diff_owned(server_status, st->desired_status);
        if (d && json_object_size(d) > 0)
                return TAKE_PTR(d);
        json_decref(st->acked_status);
        st->acked_status = json_incref(st->desired_status);
        return NULL;
}

/* Decides and starts the next request, or reports that the server is up to date. */
static void writer_pump(struct kube_nodestate *st)
{
        if (st->op == OP_GET || st->op == OP_PATCH_SPEC || st->op == OP_PATCH_STATUS || st->request)
                return; /* the completion will pump again */
        if (st->retry_timer)
                sd_event_source_set_enabled(st->retry_timer, SD_EVENT_OFF);

        if (st->op != OP_CREATE && !st->desired_spec && !st->desired_status) {
                report(st, 0);
                return;
        }
        if (st->op != OP_CREATE && !st->server) {
                int k = start(st, OP_GET, "GET", st->object_path, NULL, NULL);
                if (k < 0) {
                        log_error_errno(k, "NodeState %s: cannot start a request", st->node_name);
                        schedule_backoff(st);
                        report(st, k);
                }
                return;
        }

        json_auto_t *spec_diff = NULL, *status_diff = NULL;
        bool extra_changed = false, spec_due = false;
        if (st->op != OP_CREATE) {
                spec_due = spec_write_due(st, &spec_diff, &extra_changed);
                if (!spec_due)
                        status_diff = status_write_due(st);
                if (!spec_due && !status_diff) {
                        park_status(st);
                        report(st, 0);
                        return;
                }
        }
        /* Pace writes: at most one per write interval, whatever the churn. */
        uint64_t now = now_usec(st);
        if (st->last_write_usec && now < st->last_write_usec + st->write_interval_usec) {
                schedule(st, st->last_write_usec + st->write_interval_usec - now);
                return;
        }
        int k;
        if (st->op == OP_CREATE) {
                st->op = OP_NONE;
                k = start_create(st);
        } else if (spec_due)
                k = start_patch(st, spec_diff, extra_changed, NULL);
        else
                k = start_patch(st, NULL, false, status_diff);
        if (k < 0) {
                log_error_errno(k, "NodeState %s: cannot start a request", st->node_name);
                schedule_backoff(st);
                report(st, k);
        }
}

void kube_nodestate_observe(struct kube_nodestate *st, json_t *object)
{
        /* A write in flight brings its own fresh copy; a create pending will make one. */
        if (st->request || st->op != OP_NONE)
                return;
        if (!object) {
                if (!st->server && !st->acked_rv)
                        return;
                log_info("NodeState %s/%s: deleted by someone else; re-creating it", st->namespace_,
                         st->node_name);
                (void)unpark_status(st); /* the new object is created with the status */
                json_decref(st->server);
                st->server = NULL;
                forget_acked(st);
        } else {
                const char *rv = object_rv(object);
                if (!rv || streq_null(rv, st->acked_rv) || streq_null(rv, object_rv(st->server)))
                        return; /* the echo of our own write, or known */
                if (rv_seen(st, rv)) {
                        /* A version we already moved past (our own earlier write, arriving
                         * after a later one was acknowledged): adopting it would write with a
                         * stale resourceVersion and earn a 409. */
                        log_debug("NodeState %s: ignoring resourceVersion %s, older than our "
                                  "last write's (%s)",
                                  st->node_name, rv, st->acked_rv ? st->acked_rv : "none");
                        return;
                }
                log_debug("NodeState %s: resourceVersion %s is not our write's (%s): comparing "
                          "afresh",
                          st->node_name, rv, st->acked_rv ? st->acked_rv : "none");
                (void)unpark_status(st); /* compared with the changed object below */
                json_decref(st->server);
                st->server = copy_for_sharing(object);
                remember_rv(st, st->server);
                forget_acked(st); /* changed behind our back: compare with it afresh */
                share_with_ours(st);
        }
        if (!kube_nodestate_busy(st) || st->held) {
                st->held = false;
                schedule(st, 0);
        }
}

static bool is_failed(json_t *status)
{
        const char *s = json_string_value(json_object_get(status, "syncStatus"));
        return s && strcmp(s, "Failed") == 0;
}

/* The desired status is Failed and the server has not acknowledged it yet (nor refused it:
 * a refused body must not hold back the statuses after it). */
static bool failed_unwritten(struct kube_nodestate *st)
{
        return is_failed(st->desired_status) && !st->held &&
               !(st->acked_status && json_equal(st->acked_status, st->desired_status));
}

/* Whether the writer should run now for a new desired value: it is idle, or it waits out a
 * refusal (422) of a body that has just changed. */
static void desired_changed(struct kube_nodestate *st)
{
        if (!kube_nodestate_busy(st) || (st->held && st->op == OP_NONE)) {
                st->held = false;
                schedule(st, 0);
        }
}

int kube_nodestate_set_spec(struct kube_nodestate *st, json_t *spec)
{
        if (!json_is_object(spec))
                return log_error_errno(-EINVAL, "NodeState %s: spec must be a JSON object",
                                       st->node_name);
        bool same = st->desired_spec && json_equal(st->desired_spec, spec);
        if (!same) { /* an equal spec keeps the object the acknowledged one shares */
                json_decref(st->desired_spec);
                st->desired_spec = json_incref(spec);
        }
        if (!same || !kube_nodestate_busy(st))
                desired_changed(st);
        return 0;
}

int kube_nodestate_set_rdma_mode(struct kube_nodestate *st, const char *mode)
{
        if (streq_null(st->rdma_mode, mode))
                return 0;
        char *copy = NULL;
        if (mode && !(copy = strdup(mode)))
                return -ENOMEM;
        free(st->rdma_mode);
        st->rdma_mode = copy;
        return 0;
}

/* The node-level keys join the PCI-keyed ones of the interfaces in one JSON object. */
static int add_node_extra(json_t *node_extra, char **extra_text)
{
        if (json_object_size(node_extra) == 0)
                return 0;
        json_auto_t *extra = *extra_text ? json_loads(*extra_text, 0, NULL) : json_object();
        if (!extra || json_object_update(extra, node_extra) < 0)
                return -ENOMEM;
        char *text = json_dumps(extra, JSON_COMPACT | JSON_SORT_KEYS);
        if (!text)
                return -ENOMEM;
        free(*extra_text);
        *extra_text = text;
        return 0;
}

int kube_nodestate_set_status(struct kube_nodestate *st, json_t *interfaces,
                              enum kube_sync_status sync_status, const char *last_sync_error)
{
        return kube_nodestate_set_status_extra(st, interfaces, NULL, sync_status, last_sync_error);
}

int kube_nodestate_set_status_extra(struct kube_nodestate *st, json_t *interfaces,
                                    json_t *node_extra, enum kube_sync_status sync_status,
                                    const char *last_sync_error)
{
        const char *s = kube_sync_status_to_string(sync_status);
        if (!s || (interfaces && !json_is_array(interfaces)))
                return log_error_errno(-EINVAL,
                                       "NodeState %s: status needs an interfaces array and a "
                                       "valid syncStatus",
                                       st->node_name);
        json_t *upstream_ifaces = NULL;
        _cleanup_free_ char *extra_text = NULL;
        int k = kube_nodestate_split_interfaces(interfaces, &upstream_ifaces, &extra_text);
        if (k < 0)
                return k;
        k = add_node_extra(node_extra, &extra_text);
        if (k < 0) {
                json_decref(upstream_ifaces);
                return k;
        }
        /* "o?" steals upstream_ifaces also when json_pack fails. */
        json_auto_t *status =
            json_pack("{s:o?, s:s, s:s}", "interfaces", upstream_ifaces, "syncStatus", s,
                      "lastSyncError", last_sync_error ? last_sync_error : "");
        if (!status)
                return -ENOMEM;
        if (st->rdma_mode && json_object_set_new(status, "system",
                                                 json_pack("{s:s}", "rdmaMode", st->rdma_mode)) < 0)
                return -ENOMEM;
        json_auto_t *extra = NULL;
        if (extra_text && !(extra = json_string(extra_text)))
                return -ENOMEM;
        if (st->parked_status) { /* written: compare as text, decode only for a change */
                _cleanup_free_ char *text = json_dumps(status, JSON_COMPACT | JSON_SORT_KEYS);
                if (text && strcmp(text, st->parked_status) == 0 &&
                    streq_null(json_string_value(st->desired_extra), extra_text)) {
                        if (!kube_nodestate_busy(st))
                                desired_changed(st);
                        return 0;
                }
                k = unpark_status(st);
                if (k < 0)
                        return k;
        }
        /* A Failed status not written yet stays until it is: queue this one behind it. */
        if (failed_unwritten(st) && !is_failed(status)) {
                json_decref(st->next_status);
                json_decref(st->next_extra);
                st->next_status = TAKE_PTR(status);
                st->next_extra = TAKE_PTR(extra);
                return 0;
        }
        json_decref(st->next_status);
        json_decref(st->next_extra);
        st->next_status = NULL;
        st->next_extra = NULL;
        bool same = st->desired_status && json_equal(st->desired_status, status) &&
                    streq_null(json_string_value(st->desired_extra), extra_text);
        if (same) {
                /* Keep the tree we hold: the acknowledged status and the server's copy share
                 * it, and a second one of equal content is hundreds of KiB with many VFs. */
                if (!kube_nodestate_busy(st))
                        desired_changed(st);
                return 0;
        }
        json_decref(st->desired_status);
        st->desired_status = TAKE_PTR(status);
        json_decref(st->desired_extra);
        st->desired_extra = TAKE_PTR(extra);
        desired_changed(st);
        return 0;
}

/* The keys upstream's NodeState CRD has under status.interfaces[] and status.interfaces[].Vfs[]
 * (api/v1 InterfaceExt and VirtualFunction). Its schema does not preserve unknown fields
 * there, so anything else would be pruned silently by the API server. */
static const char *const upstream_interface_keys[] = {
        "name",        "mac",
        "driver",      "pciAddress",
        "vendor",      "deviceID",
        "netFilter",   "mtu",
        "numVfs",      "linkSpeed",
        "linkType",    "linkAdminState",
        "eSwitchMode", "externallyManaged",
        "totalvfs",    "altNames",
        "Vfs",         NULL,
};
static const char *const upstream_vf_keys[] = {
        "name", "mac", "assigned", "driver",   "pciAddress",      "vendor", "deviceID",
        "Vlan", "mtu", "vfID",     "vdpaType", "representorName", "guid",   NULL,
};

static bool key_in(const char *const *keys, const char *key)
{
        for (; *keys; keys++)
                if (strcmp(*keys, key) == 0)
                        return true;
        return false;
}

/* Moves the keys outside `keys` from obj into a new object (NULL when there are none). */
static json_t *take_extra_keys(json_t *obj, const char *const *keys)
{
        json_t *extra = NULL;
        const char *key;
        json_t *value;
        void *tmp;
        json_object_foreach_safe(obj, tmp, key, value)
        {
                if (key_in(keys, key))
                        continue;
                if (!extra && !(extra = json_object()))
                        return NULL;
                json_object_set(extra, key, value);
                json_object_del(obj, key);
        }
        return extra;
}

static const char *item_key(json_t *item, size_t index, char *buf, size_t size)
{
        const char *pci = json_string_value(json_object_get(item, "pciAddress"));
        if (pci)
                return pci;
        snprintf(buf, size, "#%zu", index);
        return buf;
}

int kube_nodestate_split_interfaces(json_t *interfaces, json_t **ret_upstream, char **ret_extra)
{
        *ret_upstream = NULL;
        *ret_extra = NULL;
        if (!interfaces)
                return 0;
        json_auto_t *out = json_deep_copy(interfaces);
        json_auto_t *extra = json_object();
        if (!out || !extra)
                return -ENOMEM;
        size_t i, j;
        json_t *iface, *vf;
        char buf[32];
        json_array_foreach(out, i, iface)
        {
                if (!json_is_object(iface))
                        continue;
                json_t *e = take_extra_keys(iface, upstream_interface_keys);
                json_t *vf_extra = NULL;
                json_array_foreach(json_object_get(iface, "Vfs"), j, vf)
                {
                        if (!json_is_object(vf))
                                continue;
                        json_t *ve = take_extra_keys(vf, upstream_vf_keys);
                        if (!ve)
                                continue;
                        if (!vf_extra)
                                vf_extra = json_object();
                        json_object_set_new(vf_extra, item_key(vf, j, buf, sizeof(buf)), ve);
                }
                if (vf_extra) {
                        if (!e)
                                e = json_object();
                        json_object_set_new(e, "Vfs", vf_extra);
                }
                if (e)
                        json_object_set_new(extra, item_key(iface, i, buf, sizeof(buf)), e);
        }
        if (json_object_size(extra) > 0) {
                *ret_extra = json_dumps(extra, JSON_COMPACT | JSON_SORT_KEYS);
                if (!*ret_extra)
                        return -ENOMEM;
        }
        *ret_upstream = TAKE_PTR(out);
        return 0;
}
