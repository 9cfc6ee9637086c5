/* SPDX-License-Identifier: Apache-2.0 */
#include "kube/networks.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kube/lease.h"
#include "kube/status.h"
#include "kube/watch.h"
#include "nad/render.h"
#include "util/log.h"
#include "util/macro.h"

#define NETWORKS_PATH    "/apis/sriovnetwork.openshift.io/v1/namespaces/%s/%s"
#define NADS_PATH        "/apis/k8s.cni.cncf.io/v1/network-attachment-definitions"
#define NAD_OBJECT_PATH  "/apis/k8s.cni.cncf.io/v1/namespaces/%s/network-attachment-definitions"
#define NAMESPACES_PATH  "/api/v1/namespaces"
#define BACKOFF_MIN_USEC (500ULL * 1000)
#define BACKOFF_MAX_USEC (30ULL * 1000 * 1000)

#define REASON_READY        "NetworkReady"
#define REASON_INVALID      "NetworkAttachmentDefinitionInvalid"
#define REASON_NS_NOT_FOUND "NamespaceNotFound"

enum net_op {
        OP_NONE,
        OP_NAD_CREATE,
        OP_NAD_UPDATE,
        OP_NAD_DELETE,
        OP_NET_PATCH,
        OP_NET_STATUS,
};

struct kube_networks {
        struct kube_http *http;
        struct kube_events *events;
        struct kube_lease *lease;
        char *namespace_, *prefix;
        char *nets_path[2]; /* by enum nad_network_kind: sriovnetworks, sriovibnetworks */
        /* Only while leading: */
        struct kube_informer *nets[2], *nads, *namespaces;
        enum nad_network_kind cur_kind; /* of the network step() looks at */
        sd_event_source *pump_timer;
        /* Before the informers: is the NAD API served at all (Multus installed)? */
        struct kube_request *probe;
        sd_event_source *probe_timer;
        long probe_logged; /* HTTP status last logged, to say it once */
        bool probe_ib;     /* the second probe: is the SriovIBNetwork CRD installed? */
        bool have_ib;

        struct kube_request *request;
        enum net_op op;
        char *op_key; /* "Kind ns/name" of the network the request is for */
        enum nad_network_kind op_kind;
        json_t *op_network; /* that network (for the Event after a status write) */
        json_t *op_nad;     /* NAD deleted: {namespace, name} for the cache */
        json_t *op_event;   /* {type, reason, message} posted when the status write succeeds */
        json_t *backoff;    /* key → {at, delay} (usec) after a failure */
        json_t *logged;     /* key → last outcome logged, to log changes only */
        unsigned writes;
};

static void pump(struct kube_networks *n);

static uint64_t now_usec(struct kube_networks *n)
{
        uint64_t now = 0;
        sd_event_now(kube_http_event(n->http), CLOCK_MONOTONIC, &now);
        return now;
}

static const char *meta_str(json_t *o, const char *key)
{
        return json_string_value(json_object_get(json_object_get(o, "metadata"), key));
}

static const char *annotation(json_t *o, const char *key)
{
        return json_string_value(
            json_object_get(json_object_get(json_object_get(o, "metadata"), "annotations"), key));
}

static int pump_cb(sd_event_source *s, uint64_t usec, void *userdata)
{
        pump(userdata);
        return 0;
}

static void schedule_pump(struct kube_networks *n, uint64_t delay_usec)
{
        uint64_t at = now_usec(n) + delay_usec;
        if (!n->pump_timer) {
                /* Pumps "now" and per-network backoffs from 0.5 s: 50 ms of slack. */
                if (sd_event_add_time(kube_http_event(n->http), &n->pump_timer, CLOCK_MONOTONIC, at,
                                      50 * 1000, pump_cb, n) < 0)
                        return;
        } else {
                int enabled = SD_EVENT_OFF;
                uint64_t cur = 0;
                sd_event_source_get_enabled(n->pump_timer, &enabled);
                sd_event_source_get_time(n->pump_timer, &cur);
                if (enabled != SD_EVENT_OFF && cur <= at)
                        return; /* an earlier run is already due */
                sd_event_source_set_time(n->pump_timer, at);
        }
        sd_event_source_set_enabled(n->pump_timer, SD_EVENT_ONESHOT);
}

static void changed_added(json_t *o, void *userdata)
{
        schedule_pump(userdata, 0);
}
static void changed_updated(json_t *old, json_t *o, void *userdata)
{
        schedule_pump(userdata, 0);
}
/* A network is gone: forget what was remembered about it, so churn does not grow memory. */
static void forget(struct kube_networks *n, enum nad_network_kind kind, json_t *o)
{
        char key[512];
        snprintf(key, sizeof(key), "%s %s/%s", nad_network_kind_name(kind),
                 meta_str(o, "namespace") ? meta_str(o, "namespace") : "",
                 meta_str(o, "name") ? meta_str(o, "name") : "");
        json_object_del(n->logged, key);
        json_object_del(n->backoff, key);
        schedule_pump(n, 0);
}
static void network_deleted(json_t *o, void *userdata)
{
        forget(userdata, NAD_SRIOV_NETWORK, o);
}
static void ib_network_deleted(json_t *o, void *userdata)
{
        forget(userdata, NAD_SRIOV_IB_NETWORK, o);
}
static void synced(struct kube_informer *inf, void *userdata)
{
        schedule_pump(userdata, 0);
}

static void stop_informers(struct kube_networks *n)
{
        kube_request_cancel(n->request);
        n->request = NULL;
        n->op = OP_NONE;
        free(n->op_key);
        n->op_key = NULL;
        json_decref(n->op_nad);
        json_decref(n->op_event);
        n->op_nad = n->op_event = NULL;
        kube_request_cancel(n->probe);
        n->probe = NULL;
        n->probe_ib = false;
        if (n->probe_timer)
                sd_event_source_set_enabled(n->probe_timer, SD_EVENT_OFF);
        json_decref(n->op_network);
        n->op_network = NULL;
        for (size_t i = 0; i < ELEMENTSOF(n->nets); i++)
                n->nets[i] = kube_informer_free(n->nets[i]);
        n->nads = kube_informer_free(n->nads);
        n->namespaces = kube_informer_free(n->namespaces);
}

static int start_informers(struct kube_networks *n)
{
        const struct kube_cache_callbacks cb = { changed_added, changed_updated, changed_added, n };
        const struct kube_informer_opts nad_opts = { .kind = NAD_KIND,
                                                     .path = NADS_PATH,
                                                     .callbacks = cb,
                                                     .on_synced = synced,
                                                     .synced_userdata = n };
        /* Only a namespace's existence matters: its metadata is enough to keep. */
        const struct kube_informer_opts ns_opts = { .kind = "Namespace",
                                                    .path = NAMESPACES_PATH,
                                                    .callbacks = cb,
                                                    .on_synced = synced,
                                                    .synced_userdata = n,
                                                    .cache_metadata_only = true };
        int k;
        for (size_t i = 0; i < ELEMENTSOF(n->nets); i++) {
                if (i == NAD_SRIOV_IB_NETWORK && !n->have_ib)
                        continue;
                const struct kube_cache_callbacks net_cb = {
                        changed_added, changed_updated,
                        i == NAD_SRIOV_NETWORK ? network_deleted : ib_network_deleted, n
                };
                const struct kube_informer_opts net_opts = { .kind = nad_network_kind_name(i),
                                                             .path = n->nets_path[i],
                                                             .callbacks = net_cb,
                                                             .on_synced = synced,
                                                             .synced_userdata = n };
                if ((k = kube_informer_new(n->http, &net_opts, &n->nets[i])) < 0 ||
                    (k = kube_informer_start(n->nets[i])) < 0) {
                        stop_informers(n);
                        return k;
                }
        }
        if ((k = kube_informer_new(n->http, &nad_opts, &n->nads)) < 0 ||
            (k = kube_informer_new(n->http, &ns_opts, &n->namespaces)) < 0 ||
            (k = kube_informer_start(n->nads)) < 0 ||
            (k = kube_informer_start(n->namespaces)) < 0) {
                stop_informers(n);
                return k;
        }
        return 0;
}

static void start_probe(struct kube_networks *n);

static int probe_timer_cb(sd_event_source *s, uint64_t usec, void *userdata)
{
        start_probe(userdata);
        return 0;
}

static void probe_done(struct kube_request *req, int error, long status, const char *body,
                       size_t body_len, void *userdata)
{
        struct kube_networks *n = userdata;
        n->probe = NULL;
        if (!kube_lease_is_leader(n->lease))
                return;
        if (n->probe_ib) {
                /* The SriovIBNetwork CRD is optional (older installs have three CRDs). */
                n->probe_ib = false;
                n->have_ib = error == 0 && status == 200;
                if (!n->have_ib)
                        log_notice("SriovIBNetworks are not served (CRD not installed?); only "
                                   "SriovNetworks are rendered");
                int k = start_informers(n);
                if (k < 0)
                        log_error_errno(k, "SriovNetworks: cannot start watching");
                return;
        }
        if (error == 0 && status == 200) {
                if (n->probe_logged)
                        log_info("NetworkAttachmentDefinition API now served; rendering "
                                 "SriovNetworks");
                n->probe_logged = 0;
                _cleanup_free_ char *path = NULL;
                if (asprintf(&path, "%s?limit=1", n->nets_path[NAD_SRIOV_IB_NETWORK]) < 0)
                        return;
                const struct kube_request_opts opts = {
                        .path = path,
                        .on_done = probe_done,
                        .userdata = n,
                };
                int k = kube_http_start(n->http, &opts, &n->probe);
                if (k < 0)
                        log_error_errno(k, "SriovIBNetworks: cannot start a request");
                else
                        n->probe_ib = true;
                return;
        }
        /* A cluster without Multus has no NAD API: say so once, look again every 5 s (one cheap
         * list, holder only). */
        long what = error < 0 ? -1 : status;
        if (what != n->probe_logged) {
                char desc[256];
                kube_request_describe(req, error, status, body, body_len, desc, sizeof(desc));
                if (error == 0 && status == 404)
                        log_notice("NetworkAttachmentDefinitions (k8s.cni.cncf.io/v1) are not "
                                   "served (Multus not installed?); SriovNetworks are rendered "
                                   "once they are");
                else
                        log_warning("NetworkAttachmentDefinitions: cannot list them: %s", desc);
                n->probe_logged = what;
        }
        uint64_t at = now_usec(n) + 5ULL * 1000000;
        if (!n->probe_timer) {
                /* A probe every 5 s for the NAD API: half a second either way is fine. */
                if (sd_event_add_time(kube_http_event(n->http), &n->probe_timer, CLOCK_MONOTONIC,
                                      at, 500 * 1000, probe_timer_cb, n) < 0)
                        return;
        } else
                sd_event_source_set_time(n->probe_timer, at);
        sd_event_source_set_enabled(n->probe_timer, SD_EVENT_ONESHOT);
}

static void start_probe(struct kube_networks *n)
{
        if (n->probe || n->nads || !kube_lease_is_leader(n->lease))
                return;
        const struct kube_request_opts opts = {
                .path = NADS_PATH "?limit=1",
                .on_done = probe_done,
                .userdata = n,
        };
        int k = kube_http_start(n->http, &opts, &n->probe);
        if (k < 0)
                log_error_errno(k, "NetworkAttachmentDefinitions: cannot start a request");
}

static void lease_changed(struct kube_lease *lease, bool leader, void *userdata)
{
        struct kube_networks *n = userdata;
        if (!leader) {
                stop_informers(n);
                return;
        }
        log_info("this agent renders the SriovNetworks of %s into NetworkAttachmentDefinitions now",
                 n->namespace_);
        json_object_clear(n->backoff);
        start_probe(n);
}

/* -------------------------------------------------------------------- requests */

static void log_outcome(struct kube_networks *n, const char *key, int level, const char *msg)
{
        const char *last = json_string_value(json_object_get(n->logged, key));
        if (last && strcmp(last, msg) == 0)
                return;
        json_object_set_new(n->logged, key, json_string(msg));
        log_ctx_msg(level, 0, NULL, "%s: %s", key, msg);
}

static void post_event(struct kube_networks *n, json_t *network, const char *type,
                       const char *reason, const char *message)
{
        struct kube_object_ref ref;
        if (!n->events || kube_object_ref_from_json(network, &ref) < 0)
                return;
        kube_events_post(n->events, &ref, type, reason, message);
}

static void request_done(struct kube_request *req, int error, long status, const char *body,
                         size_t body_len, void *userdata)
{
        struct kube_networks *n = userdata;
        enum net_op op = n->op;
        _cleanup_free_ char *key = TAKE_PTR(n->op_key);
        json_auto_t *op_nad = TAKE_PTR(n->op_nad), *op_event = TAKE_PTR(n->op_event),
                    *op_network = TAKE_PTR(n->op_network);
        struct kube_informer *nets = n->nets[n->op_kind];
        n->request = NULL;
        n->op = OP_NONE;

        bool ok = error == 0 && status >= 200 && status < 300;
        if (error == 0 && status == 404 && op == OP_NAD_DELETE)
                ok = true; /* already gone */
        if (ok) {
                json_object_del(n->backoff, key);
                json_auto_t *obj = body && body_len ? json_loadb(body, body_len, 0, NULL) : NULL;
                /* Let the next decision see our write now rather than when its watch event
                 * arrives (the event then changes nothing: same resourceVersion). */
                if (op == OP_NAD_DELETE && n->nads)
                        kube_cache_apply(kube_informer_cache(n->nads), KUBE_CACHE_DELETE, op_nad);
                else if ((op == OP_NAD_CREATE || op == OP_NAD_UPDATE) && n->nads &&
                         json_is_object(obj))
                        kube_cache_apply(kube_informer_cache(n->nads), KUBE_CACHE_UPSERT, obj);
                else if ((op == OP_NET_PATCH || op == OP_NET_STATUS) && nets &&
                         json_is_object(obj) && meta_str(obj, "name"))
                        kube_cache_apply(kube_informer_cache(nets), KUBE_CACHE_UPSERT, obj);
                if (op == OP_NET_STATUS && op_event && op_network)
                        post_event(n, op_network,
                                   json_string_value(json_object_get(op_event, "type")),
                                   json_string_value(json_object_get(op_event, "reason")),
                                   json_string_value(json_object_get(op_event, "message")));
        } else {
                char desc[512];
                /* An over-size answer is -EFBIG with status 200: say what it is. */
                kube_request_describe(req, error, status, body, body_len, desc, sizeof(desc));
                json_t *b = json_object_get(n->backoff, key);
                uint64_t delay = b ? (uint64_t)json_integer_value(json_object_get(b, "delay")) * 2
                                   : BACKOFF_MIN_USEC;
                if (delay > BACKOFF_MAX_USEC)
                        delay = BACKOFF_MAX_USEC;
                /* A conflict only means our copy was stale: the watch brings the new one. */
                if (error == 0 && status == 409)
                        log_debug("%s: conflict (%s), retrying", key, desc);
                else
                        log_warning("%s: request failed: %s; retrying in %llu ms", key, desc,
                                    (unsigned long long)(delay / 1000));
                const uint64_t at = now_usec(n) + delay;
                json_object_set_new(
                    n->backoff, key,
                    json_pack("{s:I, s:I}", "at", (json_int_t)at, "delay", (json_int_t)delay));
        }
        schedule_pump(n, 0);
}

static int start(struct kube_networks *n, enum net_op op, const char *key, const char *method,
                 const char *path, const char *content_type, json_t *body)
{
        const struct kube_request_opts opts = {
                .method = method,
                .path = path,
                .content_type = content_type,
                .on_done = request_done,
                .userdata = n,
        };
        n->op_key = strdup(key);
        if (!n->op_key)
                return -ENOMEM;
        int k = kube_http_start_json(n->http, &opts, body, &n->request);
        if (k < 0) {
                free(n->op_key);
                n->op_key = NULL;
                return k;
        }
        n->op = op;
        n->op_kind = n->cur_kind;
        n->writes++;
        return 1;
}

/* A merge patch of the SriovNetwork's metadata (finalizers, annotations), guarded by its
 * resourceVersion. */
static int patch_network(struct kube_networks *n, const char *key, json_t *network,
                         json_t *metadata_patch)
{
        json_object_set_new(metadata_patch, "resourceVersion",
                            json_string(meta_str(network, "resourceVersion")));
        /* "o" steals metadata_patch also when json_pack fails. */
        json_auto_t *body = json_pack("{s:o}", "metadata", metadata_patch);
        _cleanup_free_ char *path = NULL;
        if (!body ||
            asprintf(&path, "%s/%s", n->nets_path[n->cur_kind], meta_str(network, "name")) < 0)
                return -ENOMEM;
        return start(n, OP_NET_PATCH, key, "PATCH", path, "application/merge-patch+json", body);
}

static bool has_finalizer(json_t *network)
{
        size_t i;
        json_t *f;
        json_array_foreach(json_object_get(json_object_get(network, "metadata"), "finalizers"), i,
                           f) if (json_is_string(f) &&
                                  strcmp(json_string_value(f), KUBE_NETWORK_FINALIZER) ==
                                      0) return true;
        return false;
}

static int set_finalizer(struct kube_networks *n, const char *key, json_t *network, bool on)
{
        json_t *list = json_array();
        size_t i;
        json_t *f;
        json_array_foreach(json_object_get(json_object_get(network, "metadata"), "finalizers"), i,
                           f) if (!json_is_string(f) ||
                                  strcmp(json_string_value(f), KUBE_NETWORK_FINALIZER) != 0)
            json_array_append(list, f);
        if (on)
                json_array_append_new(list, json_string(KUBE_NETWORK_FINALIZER));
        return patch_network(n, key, network, json_pack("{s:o}", "finalizers", list));
}

static char *nad_path(const char *ns, const char *name)
{
        char *p = NULL;
        if (asprintf(&p, NAD_OBJECT_PATH "%s%s", ns, name ? "/" : "", name ? name : "") < 0)
                return NULL;
        return p;
}

static json_t *find_nad(struct kube_networks *n, const char *ns, const char *name)
{
        return kube_cache_get(kube_informer_cache(n->nads), ns, name);
}

static int delete_nad(struct kube_networks *n, const char *key, const char *ns, const char *name)
{
        _cleanup_free_ char *path = nad_path(ns, name);
        if (!path)
                return -ENOMEM;
        n->op_nad = json_pack("{s:{s:s, s:s}}", "metadata", "name", name, "namespace", ns);
        int k = start(n, OP_NAD_DELETE, key, "DELETE", path, NULL, NULL);
        if (k < 0) {
                json_decref(n->op_nad);
                n->op_nad = NULL;
        }
        return k;
}

/* The Ready condition; written (and an Event posted) only when it changes. */
static int ensure_condition(struct kube_networks *n, const char *key, json_t *network, bool ready,
                            const char *reason, const char *message)
{
        log_outcome(n, key, ready ? LOG_INFO : LOG_WARNING, message);
        json_t *cur = NULL, *c;
        size_t i;
        json_array_foreach(json_object_get(json_object_get(network, "status"), "conditions"), i, c)
        {
                const char *type = json_string_value(json_object_get(c, "type"));
                if (type && strcmp(type, "Ready") == 0)
                        cur = c;
        }
        const char *want_status = ready ? "True" : "False";
        json_t *generation = json_object_get(json_object_get(network, "metadata"), "generation");
        const char *cur_status = json_string_value(json_object_get(cur, "status"));
        const char *cur_reason = json_string_value(json_object_get(cur, "reason"));
        const char *cur_message = json_string_value(json_object_get(cur, "message"));
        bool same = cur && cur_status && strcmp(cur_status, want_status) == 0 && cur_reason &&
                    strcmp(cur_reason, reason) == 0 && cur_message &&
                    strcmp(cur_message, message) == 0 &&
                    json_integer_value(json_object_get(cur, "observedGeneration")) ==
                        json_integer_value(generation);
        if (same)
                return 0;
        char now[32];
        time_t t = time(NULL);
        struct tm tm;
        gmtime_r(&t, &tm);
        strftime(now, sizeof(now), "%Y-%m-%dT%H:%M:%SZ", &tm);
        const char *transition = cur && cur_status && strcmp(cur_status, want_status) == 0
                                     ? json_string_value(json_object_get(cur, "lastTransitionTime"))
                                     : NULL;
        json_t *cond = json_pack("{s:s, s:s, s:s, s:s, s:s, s:I}", "type", "Ready", "status",
                                 want_status, "reason", reason, "message", message,
                                 "lastTransitionTime", transition ? transition : now,
                                 "observedGeneration", json_integer_value(generation));
        json_t *conditions = json_array();
        json_array_foreach(json_object_get(json_object_get(network, "status"), "conditions"), i,
                           c) if (c != cur) json_array_append(conditions, c);
        json_array_append_new(conditions, cond);
        json_auto_t *body =
            json_pack("{s:{s:s?}, s:{s:o}}", "metadata", "resourceVersion",
                      meta_str(network, "resourceVersion"), "status", "conditions", conditions);
        _cleanup_free_ char *path = NULL;
        if (!body || asprintf(&path, "%s/%s/status", n->nets_path[n->cur_kind],
                              meta_str(network, "name")) < 0)
                return -ENOMEM;
        /* upstream: one Event per transition, ReadyAdded / ReadyChanged, the message as note;
         * a False condition is a Warning here so `kubectl get events` flags it. */
        if (!cur || !cur_status || strcmp(cur_status, want_status) != 0 || !cur_reason ||
            strcmp(cur_reason, reason) != 0 || !cur_message || strcmp(cur_message, message) != 0)
                n->op_event =
                    json_pack("{s:s, s:s, s:s}", "type", ready ? "Normal" : "Warning", "reason",
                              cur ? "ReadyChanged" : "ReadyAdded", "message", message);
        int k = start(n, OP_NET_STATUS, key, "PATCH", path, "application/merge-patch+json", body);
        if (k < 0) {
                json_decref(n->op_event);
                n->op_event = NULL;
        } else
                n->op_network = json_incref(network);
        return k;
}

static bool nad_matches(json_t *have, json_t *want)
{
        json_t *hm = json_object_get(have, "metadata"), *wm = json_object_get(want, "metadata");
        json_t *href = json_object_get(hm, "ownerReferences"),
               *wref = json_object_get(wm, "ownerReferences");
        return json_equal(json_object_get(have, "spec"), json_object_get(want, "spec")) &&
               json_equal(json_object_get(hm, "annotations"), json_object_get(wm, "annotations")) &&
               ((!href && !wref) || (href && wref && json_equal(href, wref)));
}

/* Decides what the SriovNetwork needs next; starts at most one request (returns 1 then). */
static int step(struct kube_networks *n, const char *key, json_t *network)
{
        const char *name = meta_str(network, "name");
        json_t *meta = json_object_get(network, "metadata");
        const char *target = nad_target_namespace(network);
        const char *last = annotation(network, KUBE_NETWORK_LAST_NS);
        _cleanup_free_ char *owner = nad_owner_ref(n->cur_kind, network);
        if (!name || !target || !owner)
                return 0;

        if (json_object_get(meta, "deletionTimestamp")) {
                if (!has_finalizer(network))
                        return 0;
                /* The NAD goes first (where it is now and where it was), then the finalizer. */
                const char *where[] = { target, last };
                for (size_t i = 0; i < ELEMENTSOF(where); i++) {
                        json_t *nad = where[i] && *where[i] ? find_nad(n, where[i], name) : NULL;
                        const char *o = annotation(nad, NAD_ANNOTATION_OWNER);
                        if (nad && (!o || strcmp(o, owner) == 0)) {
                                log_info("%s deleted: deleting its "
                                         "NetworkAttachmentDefinition %s/%s",
                                         key, where[i], name);
                                return delete_nad(n, key, where[i], name);
                        }
                }
                return set_finalizer(n, key, network, false);
        }
        if (!has_finalizer(network))
                return set_finalizer(n, key, network, true);

        json_auto_t *want = NULL;
        _cleanup_free_ char *error = NULL;
        int k = nad_render(n->cur_kind, network, n->prefix, &want, &error);
        if (k == -EINVAL) {
                _cleanup_free_ char *msg = NULL;
                if (asprintf(&msg, "invalid, no NetworkAttachmentDefinition rendered: %s",
                             error ? error : "") < 0)
                        return -ENOMEM;
                return ensure_condition(n, key, network, false, REASON_INVALID, msg);
        }
        if (k < 0)
                return k;

        /* Moved to another namespace: the NAD in the old one goes (when it is ours). */
        if (last && *last && strcmp(last, target) != 0) {
                json_t *old = find_nad(n, last, name);
                const char *o = annotation(old, NAD_ANNOTATION_OWNER);
                if (old && o && strcmp(o, owner) == 0) {
                        log_info("%s: networkNamespace is now %s; deleting the "
                                 "NetworkAttachmentDefinition in %s",
                                 key, target, last);
                        return delete_nad(n, key, last, name);
                }
        }

        if (!kube_cache_get(kube_informer_cache(n->namespaces), NULL, target)) {
                _cleanup_free_ char *msg = NULL;
                if (asprintf(&msg, "target namespace \"%s\" does not exist", target) < 0)
                        return -ENOMEM;
                return ensure_condition(n, key, network, false, REASON_NS_NOT_FOUND, msg);
        }

        json_t *have = find_nad(n, target, name);
        if (!have) {
                _cleanup_free_ char *path = nad_path(target, NULL);
                if (!path)
                        return -ENOMEM;
                log_info("%s: creating NetworkAttachmentDefinition %s/%s", key, target, name);
                return start(n, OP_NAD_CREATE, key, "POST", path, "application/json", want);
        }
        const char *have_owner = annotation(have, NAD_ANNOTATION_OWNER);
        if (have_owner && strcmp(have_owner, owner) != 0) {
                _cleanup_free_ char *msg = NULL;
                if (asprintf(&msg,
                             "NetworkAttachmentDefinition '%s/%s' already exists and is owned by "
                             "%s",
                             target, name, have_owner) < 0)
                        return -ENOMEM;
                return ensure_condition(n, key, network, false, REASON_INVALID, msg);
        }
        if (!nad_matches(have, want)) {
                if (!have_owner) {
                        /* upstream adopts NADs without the owner annotation (made by hand or by
                         * an old operator): say so, it overwrites someone's object. */
                        _cleanup_free_ char *msg = NULL;
                        if (asprintf(&msg,
                                     "adopting NetworkAttachmentDefinition %s/%s, which had no "
                                     "owner annotation; its config is replaced",
                                     target, name) >= 0) {
                                log_notice("%s: %s", key, msg);
                                post_event(n, network, "Normal",
                                           "NetworkAttachmentDefinitionAdopted", msg);
                        }
                } else
                        log_info("%s: NetworkAttachmentDefinition %s/%s differs "
                                 "from the network; updating it",
                                 key, target, name);
                json_auto_t *body = json_deep_copy(have);
                json_t *bm = json_object_get(body, "metadata"),
                       *wm = json_object_get(want, "metadata");
                json_object_set(bm, "annotations", json_object_get(wm, "annotations"));
                if (json_object_get(wm, "ownerReferences"))
                        json_object_set(bm, "ownerReferences",
                                        json_object_get(wm, "ownerReferences"));
                else
                        json_object_del(bm, "ownerReferences");
                json_object_set(body, "spec", json_object_get(want, "spec"));
                _cleanup_free_ char *path = nad_path(target, name);
                return path ? start(n, OP_NAD_UPDATE, key, "PUT", path, "application/json", body)
                            : -ENOMEM;
        }
        if (!last || strcmp(last, target) != 0)
                return patch_network(
                    n, key, network,
                    json_pack("{s:{s:s}}", "annotations", KUBE_NETWORK_LAST_NS, target));
        return ensure_condition(n, key, network, true, REASON_READY,
                                "NetworkAttachmentDefinition is provisioned and ready");
}

static void pump(struct kube_networks *n)
{
        if (n->request || !kube_lease_is_leader(n->lease) || !n->nads ||
            !kube_informer_has_synced(n->nads) || !kube_informer_has_synced(n->namespaces))
                return;
        for (size_t i = 0; i < ELEMENTSOF(n->nets); i++)
                if (n->nets[i] && !kube_informer_has_synced(n->nets[i]))
                        return;
        if (!n->nets[NAD_SRIOV_NETWORK])
                return;
        uint64_t now = now_usec(n), next = 0;
        for (size_t i = 0; i < ELEMENTSOF(n->nets); i++) {
                const char *cache_key;
                json_t *network;
                if (!n->nets[i])
                        continue;
                json_object_foreach(kube_cache_objects(kube_informer_cache(n->nets[i])), cache_key,
                                    network)
                {
                        char key[512];
                        snprintf(key, sizeof(key), "%s %s", nad_network_kind_name(i), cache_key);
                        json_t *b = json_object_get(n->backoff, key);
                        uint64_t at =
                            b ? (uint64_t)json_integer_value(json_object_get(b, "at")) : 0;
                        if (at > now) {
                                if (!next || at < next)
                                        next = at;
                                continue;
                        }
                        n->cur_kind = i;
                        int k = step(n, key, network);
                        if (k > 0)
                                return; /* its completion pumps again */
                        if (k < 0)
                                log_warning_errno(k, "%s: cannot start a request", key);
                }
        }
        if (next)
                schedule_pump(n, next - now);
}

/* -------------------------------------------------------------------- lifetime */

int kube_networks_new(struct kube_http *http, const struct kube_networks_opts *opts,
                      struct kube_networks **ret)
{
        _cleanup_(kube_networks_freep) struct kube_networks *n = calloc(1, sizeof(*n));
        if (!n)
                return -ENOMEM;
        n->http = http;
        n->events = opts->events;
        n->namespace_ = strdup(opts->namespace_);
        n->prefix = strdup(opts->resource_prefix ? opts->resource_prefix : "openshift.io");
        n->backoff = json_object();
        n->logged = json_object();
        if (!n->namespace_ || !n->prefix || !n->backoff || !n->logged ||
            asprintf(&n->nets_path[NAD_SRIOV_NETWORK], NETWORKS_PATH, opts->namespace_,
                     "sriovnetworks") < 0 ||
            asprintf(&n->nets_path[NAD_SRIOV_IB_NETWORK], NETWORKS_PATH, opts->namespace_,
                     "sriovibnetworks") < 0)
                /* NOLINTNEXTLINE(clang-analyzer-unix.Malloc): _cleanup_ frees it */
                return -ENOMEM;
        const struct kube_lease_opts lease_opts = {
                .namespace_ = opts->namespace_,
                .name = KUBE_NETWORKS_LEASE,
                .identity = opts->identity,
                .on_change = lease_changed,
                .userdata = n,
        };
        int k = kube_lease_new(http, &lease_opts, &n->lease);
        if (k < 0 || (k = kube_lease_start(n->lease)) < 0)
                return k;
        *ret = TAKE_PTR(n);
        return 0;
}

struct kube_networks *kube_networks_free(struct kube_networks *n)
{
        if (!n)
                return NULL;
        stop_informers(n);
        kube_lease_free(n->lease);
        sd_event_source_disable_unref(n->pump_timer);
        sd_event_source_disable_unref(n->probe_timer);
        json_decref(n->op_nad);
        json_decref(n->op_event);
        json_decref(n->backoff);
        json_decref(n->logged);
        free(n->op_key);
        free(n->namespace_);
        free(n->prefix);
        free(n->nets_path[0]);
        free(n->nets_path[1]);
        free(n);
        return NULL;
}

bool kube_networks_leader(const struct kube_networks *n)
{
        return n && kube_lease_is_leader(n->lease);
}

int kube_networks_release(struct kube_networks *n, void (*done)(void *), void *userdata)
{
        stop_informers(n);
        return kube_lease_release(n->lease, done, userdata);
}

unsigned kube_networks_writes(const struct kube_networks *n)
{
        return n->writes;
}
