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
        json_t *desired_status; /* {interfaces, syncStatus, lastSyncError} or NULL */
        json_t *server;         /* last object seen from the server, NULL = unknown */

        struct kube_request *request;
        enum writer_op op;
        sd_event_source *retry_timer;
        uint64_t backoff_usec;
        unsigned writes;
};

static void writer_pump(struct kube_nodestate *st);

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
        json_decref(st->server);
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
                                          now + delay_usec, 0, retry_cb, st);
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

static void set_server(struct kube_nodestate *st, const char *body, size_t len)
{
        json_t *obj = json_loadb(body, len, 0, NULL);
        json_decref(st->server);
        st->server = json_is_object(obj) ? obj : NULL;
        if (!st->server)
                json_decref(obj);
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

static void request_done(struct kube_request *req, int error, long status, const char *body,
                         size_t body_len, void *userdata)
{
        struct kube_nodestate *st = userdata;
        enum writer_op op = st->op;
        st->request = NULL;
        st->op = OP_NONE;

        _cleanup_free_ char *before = NULL;
        if (op == OP_PATCH_STATUS) {
                const char *b = json_string_value(
                    json_object_get(json_object_get(st->server, "status"), "syncStatus"));
                before = b ? strdup(b) : NULL;
        }

        if (error == 0 && (status == 200 || status == 201)) {
                set_server(st, body, body_len);
                st->backoff_usec = 0;
                if (op == OP_CREATE)
                        log_info("NodeState %s/%s: created", st->namespace_, st->node_name);
                if (op == OP_PATCH_STATUS)
                        maybe_post_sync_event(st, before);
                writer_pump(st);
                return;
        }
        /* NOLINTNEXTLINE(clang-analyzer-unix.Malloc): _cleanup_ frees it */
        if (error == 0 && status == 404 &&
            (op == OP_GET || op == OP_PATCH_SPEC || op == OP_PATCH_STATUS)) {
                /* Missing (or deleted behind our back): create it. */
                json_decref(st->server);
                st->server = NULL;
                st->op = OP_CREATE;
                schedule(st, 0);
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
        char desc[512];
        if (error < 0 && status == 0)
                snprintf(desc, sizeof(desc), "%s",
                         *kube_request_error_text(req) ? kube_request_error_text(req)
                                                       : strerror(-error));
        else
                kube_status_describe(status, body, body_len, desc, sizeof(desc));
        static const char *const op_names[] = { [OP_GET] = "read",
                                                [OP_CREATE] = "create",
                                                [OP_PATCH_SPEC] = "write the spec of",
                                                [OP_PATCH_STATUS] = "write the status of" };
        log_warning("NodeState %s/%s: cannot %s it: %s; retrying", st->namespace_, st->node_name,
                    op_names[op] ? op_names[op] : "update", desc);
        schedule_backoff(st);
        report(st, error < 0 ? error : (status == 401 || status == 403) ? -EACCES : -EIO);
}

static int start(struct kube_nodestate *st, enum writer_op op, const char *method, const char *path,
                 const char *content_type, json_t *body)
{
        _cleanup_free_ char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
        if (body && !text)
                return -ENOMEM;
        const struct kube_request_opts opts = {
                .method = method,
                .path = path,
                .content_type = content_type,
                .body = text,
                .body_len = text ? strlen(text) : 0,
                .on_done = request_done,
                .userdata = st,
        };
        int k = kube_http_start(st->http, &opts, &st->request);
        if (k < 0)
                return k;
        st->op = op;
        if (op != OP_GET)
                st->writes++;
        return 0;
}

static int start_create(struct kube_nodestate *st)
{
        _cleanup_free_ char *path = NULL;
        if (asprintf(&path, "/apis/" GROUP_VERSION "/namespaces/%s/sriovnetworknodestates",
                     st->namespace_) < 0)
                return -ENOMEM;
        json_t *spec = st->desired_spec ? json_incref(st->desired_spec) : json_object();
        json_t *body =
            json_pack("{s:s, s:s, s:{s:s, s:s}, s:o}", "apiVersion", GROUP_VERSION, "kind", KIND,
                      "metadata", "name", st->node_name, "namespace", st->namespace_, "spec", spec);
        if (!body)
                return -ENOMEM;
        int k = start(st, OP_CREATE, "POST", path, "application/json", body);
        json_decref(body);
        return k;
}

static int start_patch(struct kube_nodestate *st, const char *field, json_t *diff)
{
        const char *rv = json_string_value(
            json_object_get(json_object_get(st->server, "metadata"), "resourceVersion"));
        json_t *body = json_pack("{s:{s:s?}, s:O}", "metadata", "resourceVersion", rv, field, diff);
        if (!body)
                return -ENOMEM;
        _cleanup_free_ char *status_path = NULL;
        bool status = strcmp(field, "status") == 0;
        if (status && asprintf(&status_path, "%s/status", st->object_path) < 0) {
                json_decref(body);
                return -ENOMEM;
        }
        int k = start(st, status ? OP_PATCH_STATUS : OP_PATCH_SPEC, "PATCH",
                      status ? status_path : st->object_path, "application/merge-patch+json", body);
        json_decref(body);
        return k;
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
        json_t *a = interfaces_without_vfs(server_status);
        json_t *b = interfaces_without_vfs(desired);
        bool differ = !json_equal(a, b) || !json_object_get(server_status, "interfaces") !=
                                               !json_object_get(desired, "interfaces");
        json_decref(a);
        json_decref(b);
        return differ;
}

/* Decides and starts the next request, or reports that the server is up to date. */
static void writer_pump(struct kube_nodestate *st)
{
        if (st->op == OP_GET || st->op == OP_PATCH_SPEC || st->op == OP_PATCH_STATUS || st->request)
                return; /* the completion will pump again */
        if (st->retry_timer)
                sd_event_source_set_enabled(st->retry_timer, SD_EVENT_OFF);

        int k;
        if (st->op == OP_CREATE) {
                st->op = OP_NONE;
                k = start_create(st);
        } else if (!st->desired_spec && !st->desired_status) {
                report(st, 0);
                return;
        } else if (!st->server) {
                k = start(st, OP_GET, "GET", st->object_path, NULL, NULL);
        } else {
                json_t *spec_diff = NULL, *status_diff = NULL;
                if (st->desired_spec)
                        spec_diff = kube_merge_patch_diff(json_object_get(st->server, "spec"),
                                                          st->desired_spec);
                if (st->desired_status &&
                    !differs_beyond_vfs(json_object_get(st->server, "status"), st->desired_status))
                        status_diff = json_object(); /* VF details alone: no write */
                else if (st->desired_status)
                        status_diff = kube_merge_patch_diff_owned(
                            json_object_get(st->server, "status"), st->desired_status);
                if (spec_diff && json_object_size(spec_diff) > 0)
                        k = start_patch(st, "spec", spec_diff);
                else if (status_diff && json_object_size(status_diff) > 0)
                        k = start_patch(st, "status", status_diff);
                else
                        k = 1; /* up to date */
                json_decref(spec_diff);
                json_decref(status_diff);
                if (k == 1) {
                        report(st, 0);
                        return;
                }
        }
        if (k < 0) {
                log_error_errno(k, "NodeState %s: cannot start a request", st->node_name);
                schedule_backoff(st);
                report(st, k);
        }
}

int kube_nodestate_set_spec(struct kube_nodestate *st, json_t *spec)
{
        if (!json_is_object(spec))
                return log_error_errno(-EINVAL, "NodeState %s: spec must be a JSON object",
                                       st->node_name);
        json_decref(st->desired_spec);
        st->desired_spec = json_incref(spec);
        if (!kube_nodestate_busy(st))
                schedule(st, 0);
        return 0;
}

int kube_nodestate_set_status(struct kube_nodestate *st, json_t *interfaces,
                              enum kube_sync_status sync_status, const char *last_sync_error)
{
        const char *s = kube_sync_status_to_string(sync_status);
        if (!s || (interfaces && !json_is_array(interfaces)))
                return log_error_errno(-EINVAL,
                                       "NodeState %s: status needs an interfaces array and a "
                                       "valid syncStatus",
                                       st->node_name);
        json_t *status = json_pack("{s:O?, s:s, s:s}", "interfaces", interfaces, "syncStatus", s,
                                   "lastSyncError", last_sync_error ? last_sync_error : "");
        if (!status)
                return -ENOMEM;
        if (!interfaces)
                json_object_del(status, "interfaces");
        json_decref(st->desired_status);
        st->desired_status = status;
        if (!kube_nodestate_busy(st))
                schedule(st, 0);
        return 0;
}
