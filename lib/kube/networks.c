/* SPDX-License-Identifier: Apache-2.0 */
#include "kube/networks.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kube/json-split.h"
#include "kube/lease.h"
#include "kube/status.h"
#include "kube/watch.h"
#include "nad/decide.h"
#include "nad/render.h"
#include "util/log.h"
#include "util/macro.h"

#define NETWORKS_PATH    "/apis/sriovnetwork.openshift.io/v1/namespaces/%s/%s"
#define NADS_PATH        "/apis/k8s.cni.cncf.io/v1/network-attachment-definitions"
#define NAD_OBJECT_PATH  "/apis/k8s.cni.cncf.io/v1/namespaces/%s/network-attachment-definitions"
#define NAMESPACES_PATH  "/api/v1/namespaces"
#define BACKOFF_MIN_USEC (500ULL * 1000)
#define BACKOFF_MAX_USEC (30ULL * 1000 * 1000)
/* How long a NAD read with GET (one this controller does not watch: not labelled, or a stub)
 * is trusted: a foreign NAD in the way is looked at again after this. */
#define REREAD_USEC (60ULL * 1000 * 1000)

enum net_op {
        OP_NONE,
        OP_NAD_READ,
        OP_NAD_CREATE,
        OP_NAD_LABEL,
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
        json_t *op_nad;     /* the NAD of the request: {metadata: {namespace, name}} */
        json_t *op_event;   /* {type, reason, message} posted when the status write succeeds */
        json_t *backoff;    /* key → {at, delay} (usec) after a failure */
        json_t *logged;     /* key → last outcome logged, to log changes only */
        /* "ns/name" → {until (usec), object (null: 404) or error}: NADs read with GET, for
         * the decisions the watched (labelled) NADs cannot answer. */
        json_t *reads;
        uint64_t wake_at; /* the earliest "until" of the reads a decision used */
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
        /* A new term reads again what it does not watch. */
        json_object_clear(n->reads);
}

static int start_informers(struct kube_networks *n)
{
        const struct kube_cache_callbacks cb = { changed_added, changed_updated, changed_added, n };
        /* Only the NADs this controller rendered: others (any number, any size) are never
         * listed, so never cached as stubs or mistaken for absent; one not labelled is read
         * with GET before anything is decided about it (nad/decide.h). */
        const struct kube_informer_opts nad_opts = { .kind = NAD_KIND,
                                                     .path = NADS_PATH,
                                                     .label_selector = NAD_LABEL_SELECTOR,
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
        log_info("holding the Lease: rendering the SriovNetworks of %s into "
                 "NetworkAttachmentDefinitions",
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
        log_ctx_msg(level, 0, NULL, "%s", msg);
}

static void post_event(struct kube_networks *n, json_t *network, const char *type,
                       const char *reason, const char *message)
{
        struct kube_object_ref ref;
        if (!n->events || kube_object_ref_from_json(network, &ref) < 0)
                return;
        kube_events_post(n->events, &ref, type, reason, message);
}

static char *nad_path(const char *ns, const char *name)
{
        char *p = NULL;
        if (asprintf(&p, NAD_OBJECT_PATH "%s%s", ns, name ? "/" : "", name ? name : "") < 0)
                return NULL;
        return p;
}

/* "ns/name" of a NAD, the key of n->reads. */
static void nad_key(const char *ns, const char *name, char *buf, size_t size)
{
        snprintf(buf, size, "%s/%s", ns ? ns : "", name ? name : "");
}

static void remember_read(struct kube_networks *n, const char *key, json_t *object,
                          const char *error, uint64_t until)
{
        json_t *r = json_pack("{s:I, s:O?, s:s?}", "until", (json_int_t)until, "object", object,
                              "error", error);
        if (r)
                json_object_set_new(n->reads, key, r);
}

static uint64_t backoff_delay(struct kube_networks *n, const char *key)
{
        json_t *b = json_object_get(n->backoff, key);
        uint64_t delay =
            b ? (uint64_t)json_integer_value(json_object_get(b, "delay")) * 2 : BACKOFF_MIN_USEC;
        return delay > BACKOFF_MAX_USEC ? BACKOFF_MAX_USEC : delay;
}

static void set_backoff(struct kube_networks *n, const char *key, uint64_t delay)
{
        const uint64_t at = now_usec(n) + delay;
        json_object_set_new(
            n->backoff, key,
            json_pack("{s:I, s:I}", "at", (json_int_t)at, "delay", (json_int_t)delay));
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
        char nkey[512];
        nad_key(meta_str(op_nad, "namespace"), meta_str(op_nad, "name"), nkey, sizeof(nkey));

        bool ok = error == 0 && status >= 200 && status < 300;
        if (error == 0 && status == 404 && (op == OP_NAD_DELETE || op == OP_NAD_READ))
                ok = true; /* (already) gone */
        if (ok) {
                json_object_del(n->backoff, key);
                json_auto_t *obj = body && body_len ? json_loadb(body, body_len, 0, NULL) : NULL;
                if (op == OP_NAD_READ) {
                        /* An answer that is not an object is no read: never decided on. */
                        if (status != 404 && !json_is_object(obj))
                                remember_read(n, nkey, NULL, "the answer is not a JSON object",
                                              now_usec(n) + backoff_delay(n, key));
                        else
                                remember_read(n, nkey, status == 404 ? NULL : obj, NULL,
                                              now_usec(n) + REREAD_USEC);
                        schedule_pump(n, 0);
                        return;
                }
                /* Let the next decision see our write now rather than when its watch event
                 * arrives (the event then changes nothing: same resourceVersion). What is
                 * written is labelled, so it belongs in the watched cache. */
                if (op == OP_NAD_DELETE) {
                        if (n->nads)
                                kube_cache_apply(kube_informer_cache(n->nads), KUBE_CACHE_DELETE,
                                                 op_nad);
                        remember_read(n, nkey, NULL, NULL, now_usec(n) + REREAD_USEC);
                } else if (op == OP_NAD_CREATE || op == OP_NAD_UPDATE || op == OP_NAD_LABEL) {
                        json_object_del(n->reads, nkey);
                        if (n->nads && json_is_object(obj))
                                kube_cache_apply(kube_informer_cache(n->nads), KUBE_CACHE_UPSERT,
                                                 obj);
                } else if ((op == OP_NET_PATCH || op == OP_NET_STATUS) && nets &&
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
                const uint64_t delay = backoff_delay(n, key);
                if (op == OP_NAD_READ) {
                        /* Never written while it cannot be read: the decision reports it
                         * until the read is retried after the backoff. */
                        log_warning("%s: cannot read NetworkAttachmentDefinition %s: %s; "
                                    "retrying in %llu ms",
                                    key, nkey, desc, (unsigned long long)(delay / 1000));
                        remember_read(n, nkey, NULL, desc, now_usec(n) + delay);
                } else {
                        /* What the write was decided on is stale: read it again. */
                        if (op_nad)
                                json_object_del(n->reads, nkey);
                        /* A conflict only means our copy was stale: the watch brings the new
                         * one. */
                        if (error == 0 && status == 409)
                                log_debug("%s: conflict (%s), retrying", key, desc);
                        else
                                log_warning("%s: request failed: %s; retrying in %llu ms", key,
                                            desc, (unsigned long long)(delay / 1000));
                }
                set_backoff(n, key, delay);
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
        int k = body ? kube_http_start_json(n->http, &opts, body, &n->request)
                     : kube_http_start(n->http, &opts, &n->request);
        if (k < 0) {
                free(n->op_key);
                n->op_key = NULL;
                return k;
        }
        n->op = op;
        n->op_kind = n->cur_kind;
        if (op != OP_NAD_READ)
                n->writes++;
        return 1;
}

/* What the decision may know of the NAD ns/name: the watched copy when it is whole, else what
 * a GET returned while that is trusted (for a stub: only for the version it stands for). */
static struct nad_view lookup_nad(const char *ns, const char *name, void *userdata)
{
        struct kube_networks *n = userdata;
        json_t *cached = kube_cache_get(kube_informer_cache(n->nads), ns, name);
        if (cached && !kube_object_undecodable(cached))
                return (struct nad_view){ .seen = NAD_SEEN_PRESENT, .object = cached };
        char key[512];
        nad_key(ns, name, key, sizeof(key));
        json_t *r = json_object_get(n->reads, key);
        const uint64_t until = (uint64_t)json_integer_value(json_object_get(r, "until"));
        if (!r || until <= now_usec(n))
                return (struct nad_view){ .seen = NAD_SEEN_UNKNOWN };
        if (!n->wake_at || until < n->wake_at)
                n->wake_at = until;
        const char *error = json_string_value(json_object_get(r, "error"));
        json_t *obj = json_object_get(r, "object");
        if (error)
                return (struct nad_view){ .seen = NAD_SEEN_UNREADABLE, .error = error };
        if (cached) {
                const char *rv = meta_str(cached, "resourceVersion");
                if (!json_is_object(obj) || !rv || !meta_str(obj, "resourceVersion") ||
                    strcmp(rv, meta_str(obj, "resourceVersion")) != 0)
                        return (struct nad_view){ .seen = NAD_SEEN_UNKNOWN };
        }
        if (!json_is_object(obj))
                return (struct nad_view){ .seen = NAD_SEEN_ABSENT };
        return (struct nad_view){ .seen = NAD_SEEN_PRESENT, .object = obj };
}

static bool namespace_exists(const char *ns, void *userdata)
{
        struct kube_networks *n = userdata;
        return kube_cache_get(kube_informer_cache(n->namespaces), NULL, ns) != NULL;
}

/* Decides what the network needs next (nad/decide.h) and starts at most one request for it
 * (returns 1 then). */
static int step(struct kube_networks *n, const char *key, json_t *network)
{
        char now[32];
        time_t t = time(NULL);
        struct tm tm;
        gmtime_r(&t, &tm);
        strftime(now, sizeof(now), "%Y-%m-%dT%H:%M:%SZ", &tm);
        const struct nad_decide_input in = {
                .kind = n->cur_kind,
                .network = network,
                .resource_prefix = n->prefix,
                .now = now,
                .lookup = lookup_nad,
                .namespace_exists = namespace_exists,
                .userdata = n,
        };
        _cleanup_(nad_action_clear) struct nad_action a = {};
        int k = nad_decide(&in, &a);
        if (k < 0)
                return k;
        if (a.message) {
                if (a.outcome)
                        log_outcome(n, key, a.level, a.message);
                else
                        log_ctx_msg(a.level, 0, NULL, "%s", a.message);
        }
        _cleanup_free_ char *path = NULL;
        switch (a.type) {
        case NAD_ACTION_NONE:
                return 0;
        case NAD_ACTION_NETWORK_PATCH:
        case NAD_ACTION_NETWORK_STATUS: {
                const bool status = a.type == NAD_ACTION_NETWORK_STATUS;
                if (asprintf(&path, "%s/%s%s", n->nets_path[n->cur_kind], meta_str(network, "name"),
                             status ? "/status" : "") < 0)
                        return -ENOMEM;
                k = start(n, status ? OP_NET_STATUS : OP_NET_PATCH, key, "PATCH", path,
                          "application/merge-patch+json", a.body);
                if (k > 0 && status) {
                        n->op_event = TAKE_PTR(a.event);
                        n->op_network = json_incref(network);
                }
                return k;
        }
        default:
                break;
        }
        static const struct {
                enum net_op op;
                const char *method, *content_type;
                bool collection;
        } how[] = {
                [NAD_ACTION_READ] = { OP_NAD_READ, "GET", NULL, false },
                [NAD_ACTION_CREATE] = { OP_NAD_CREATE, "POST", "application/json", true },
                [NAD_ACTION_UPDATE] = { OP_NAD_UPDATE, "PUT", "application/json", false },
                [NAD_ACTION_LABEL] = { OP_NAD_LABEL, "PATCH", "application/merge-patch+json",
                                       false },
                [NAD_ACTION_DELETE] = { OP_NAD_DELETE, "DELETE", "application/json", false },
        };
        if ((size_t)a.type >= ELEMENTSOF(how) || !how[a.type].method)
                return -EINVAL;
        path = nad_path(a.namespace_, how[a.type].collection ? NULL : a.name);
        json_t *op_nad =
            json_pack("{s:{s:s, s:s}}", "metadata", "name", a.name, "namespace", a.namespace_);
        if (!path || !op_nad) {
                json_decref(op_nad);
                return -ENOMEM;
        }
        k = start(n, how[a.type].op, key, how[a.type].method, path, how[a.type].content_type,
                  a.body);
        if (k > 0)
                n->op_nad = op_nad;
        else
                json_decref(op_nad);
        return k;
}

/* Reads older than their trust are dropped, so memory follows the networks, not history. */
static void sweep_reads(struct kube_networks *n)
{
        const uint64_t now = now_usec(n);
        const char *key;
        json_t *r, *tmp;
        json_object_foreach_safe(n->reads, tmp, key, r)
        {
                if ((uint64_t)json_integer_value(json_object_get(r, "until")) <= now)
                        json_object_del(n->reads, key);
        }
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
        sweep_reads(n);
        n->wake_at = 0;
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
        /* A NAD read with GET is looked at again when its trust ends (a foreign one in the
         * way may have gone). */
        if (n->wake_at && (!next || n->wake_at < next))
                next = n->wake_at;
        if (next)
                schedule_pump(n, next > now ? next - now : 0);
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
        n->reads = json_object();
        if (!n->namespace_ || !n->prefix || !n->backoff || !n->logged || !n->reads ||
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
        json_decref(n->reads);
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
