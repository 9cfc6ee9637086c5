#include "kube/events.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "kube/status.h"
#include "util/log.h"
#include "util/macro.h"

#define DEFAULT_REPEAT_INTERVAL_USEC (10ULL * 60 * 1000 * 1000)
/* Distinct (object, reason, message) triples remembered; the oldest is forgotten first. */
#define MAX_REMEMBERED 128
/* The API server rejects longer event messages. */
#define MAX_MESSAGE 1024

struct event_record {
        uint64_t id;
        char *key;        /* kind/ns/name/reason/message */
        char *namespace_; /* where the Event object lives */
        char *event_name; /* set once the POST succeeded */
        unsigned count;
        uint64_t last_write_usec;
};

struct event_call {
        struct kube_events *events;
        struct kube_request *request;
        uint64_t record_id;
        bool is_patch;
        struct event_call *next;
};

struct kube_events {
        struct kube_http *http;
        char *component, *host;
        uint64_t repeat_interval_usec;
        struct event_record records[MAX_REMEMBERED];
        size_t n_records;
        uint64_t next_id;
        struct event_call *calls;
        unsigned in_flight;
};

static uint64_t now_usec(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000000ULL + (uint64_t)ts.tv_nsec / 1000;
}

static void rfc3339_now(char buf[static 32])
{
        time_t t = time(NULL);
        struct tm tm;
        gmtime_r(&t, &tm);
        strftime(buf, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static void record_clear(struct event_record *r)
{
        free(r->key);
        free(r->namespace_);
        free(r->event_name);
        *r = (struct event_record){};
}

int kube_events_new(struct kube_http *http, const struct kube_events_opts *opts,
                    struct kube_events **ret)
{
        struct kube_events *ev = calloc(1, sizeof(*ev));
        if (!ev)
                return -ENOMEM;
        ev->http = http;
        ev->component = strdup(opts->component ? opts->component : "sriov-agent");
        ev->host = strdup(opts->host ? opts->host : "");
        ev->repeat_interval_usec =
            opts->repeat_interval_usec ? opts->repeat_interval_usec : DEFAULT_REPEAT_INTERVAL_USEC;
        ev->next_id = 1;
        if (!ev->component || !ev->host) {
                kube_events_free(ev);
                return -ENOMEM;
        }
        *ret = ev;
        return 0;
}

struct kube_events *kube_events_free(struct kube_events *ev)
{
        if (!ev)
                return NULL;
        while (ev->calls) {
                struct event_call *c = ev->calls;
                ev->calls = c->next;
                kube_request_cancel(c->request);
                free(c);
        }
        for (size_t i = 0; i < ev->n_records; i++)
                record_clear(&ev->records[i]);
        free(ev->component);
        free(ev->host);
        free(ev);
        return NULL;
}

unsigned kube_events_in_flight(const struct kube_events *ev)
{
        return ev->in_flight;
}

int kube_object_ref_from_json(json_t *object, struct kube_object_ref *ref)
{
        json_t *meta = json_object_get(object, "metadata");
        *ref = (struct kube_object_ref){
                .api_version = json_string_value(json_object_get(object, "apiVersion")),
                .kind = json_string_value(json_object_get(object, "kind")),
                .namespace_ = json_string_value(json_object_get(meta, "namespace")),
                .name = json_string_value(json_object_get(meta, "name")),
                .uid = json_string_value(json_object_get(meta, "uid")),
        };
        return ref->kind && ref->name ? 0 : -EINVAL;
}

static struct event_record *record_find_id(struct kube_events *ev, uint64_t id)
{
        for (size_t i = 0; i < ev->n_records; i++)
                if (ev->records[i].id == id)
                        return &ev->records[i];
        return NULL;
}

static struct event_record *record_find_key(struct kube_events *ev, const char *key)
{
        for (size_t i = 0; i < ev->n_records; i++)
                if (strcmp(ev->records[i].key, key) == 0)
                        return &ev->records[i];
        return NULL;
}

static void record_drop(struct kube_events *ev, struct event_record *r)
{
        record_clear(r);
        size_t i = (size_t)(r - ev->records);
        memmove(&ev->records[i], &ev->records[i + 1],
                (ev->n_records - i - 1) * sizeof(ev->records[0]));
        ev->n_records--;
}

static struct event_record *record_add(struct kube_events *ev, char *key, const char *ns)
{
        if (ev->n_records == MAX_REMEMBERED) {
                size_t oldest = 0;
                for (size_t i = 1; i < ev->n_records; i++)
                        if (ev->records[i].last_write_usec < ev->records[oldest].last_write_usec)
                                oldest = i;
                record_drop(ev, &ev->records[oldest]);
        }
        struct event_record *r = &ev->records[ev->n_records];
        *r = (struct event_record){ .id = ev->next_id++, .key = key, .namespace_ = strdup(ns) };
        if (!r->namespace_) {
                free(key);
                return NULL;
        }
        ev->n_records++;
        return r;
}

static void call_done(struct kube_request *req, int error, long status, const char *body,
                      size_t body_len, void *userdata)
{
        struct event_call *c = userdata;
        struct kube_events *ev = c->events;
        for (struct event_call **p = &ev->calls; *p; p = &(*p)->next)
                if (*p == c) {
                        *p = c->next;
                        break;
                }
        ev->in_flight--;
        struct event_record *r = record_find_id(ev, c->record_id);
        bool ok = error == 0 && (status == 200 || status == 201);
        if (!ok) {
                char desc[512];
                if (error < 0 && status == 0)
                        snprintf(desc, sizeof(desc), "%s", strerror(-error));
                else
                        kube_status_describe(status, body, body_len, desc, sizeof(desc));
                log_warning("event %s: cannot %s the Event: %s", r ? r->key : "(forgotten)",
                            c->is_patch ? "update" : "create", desc);
                /* Forget it so the next identical report tries again from scratch. */
                if (r)
                        record_drop(ev, r);
        } else if (r && !c->is_patch) {
                json_t *obj = json_loadb(body, body_len, 0, NULL);
                const char *name =
                    json_string_value(json_object_get(json_object_get(obj, "metadata"), "name"));
                if (name) {
                        free(r->event_name);
                        r->event_name = strdup(name);
                }
                json_decref(obj);
        }
        free(c);
}

static int send_call(struct kube_events *ev, struct event_record *r, const char *method,
                     const char *path, const char *content_type, json_t *body)
{
        _cleanup_free_ char *text = json_dumps(body, JSON_COMPACT);
        if (!text)
                return -ENOMEM;
        struct event_call *c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        *c = (struct event_call){ .events = ev,
                                  .record_id = r->id,
                                  .is_patch = strcmp(method, "PATCH") == 0 };
        const struct kube_request_opts opts = {
                .method = method,
                .path = path,
                .content_type = content_type,
                .body = text,
                .body_len = strlen(text),
                .on_done = call_done,
                .userdata = c,
        };
        int k = kube_http_start(ev->http, &opts, &c->request);
        if (k < 0) {
                free(c);
                return k;
        }
        c->next = ev->calls;
        ev->calls = c;
        ev->in_flight++;
        return 0;
}

static int post_new(struct kube_events *ev, struct event_record *r, const struct kube_object_ref *o,
                    const char *type, const char *reason, const char *message)
{
        char now[32], suffix[17];
        uint64_t rnd = 0;
        rfc3339_now(now);
        if (getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK) != sizeof(rnd))
                rnd = now_usec();
        snprintf(suffix, sizeof(suffix), "%016llx", (unsigned long long)rnd);
        _cleanup_free_ char *name = NULL;
        if (asprintf(&name, "%s.%s", o->name, suffix) < 0)
                return -ENOMEM;

        json_t *involved = json_pack("{s:s, s:s, s:s}", "kind", o->kind, "name", o->name,
                                     "apiVersion", o->api_version ? o->api_version : "v1");
        if (involved && o->namespace_)
                json_object_set_new(involved, "namespace", json_string(o->namespace_));
        if (involved && o->uid)
                json_object_set_new(involved, "uid", json_string(o->uid));
        json_t *body = json_pack(
            "{s:s, s:s, s:{s:s, s:s}, s:o, s:s, s:s%, s:s, s:i, s:s, s:s, s:{s:s, s:s},"
            " s:s, s:s}",
            "apiVersion", "v1", "kind", "Event", "metadata", "name", name, "namespace",
            r->namespace_, "involvedObject", involved, "reason", reason, "message", message,
            strnlen(message, MAX_MESSAGE), "type", type, "count", (int)r->count, "firstTimestamp",
            now, "lastTimestamp", now, "source", "component", ev->component, "host", ev->host,
            "reportingComponent", ev->component, "reportingInstance", ev->host);
        if (!body)
                return -ENOMEM;
        _cleanup_free_ char *path = NULL;
        if (asprintf(&path, "/api/v1/namespaces/%s/events", r->namespace_) < 0) {
                json_decref(body);
                return -ENOMEM;
        }
        int k = send_call(ev, r, "POST", path, "application/json", body);
        json_decref(body);
        return k;
}

static int patch_count(struct kube_events *ev, struct event_record *r)
{
        char now[32];
        rfc3339_now(now);
        json_t *body = json_pack("{s:i, s:s}", "count", (int)r->count, "lastTimestamp", now);
        if (!body)
                return -ENOMEM;
        _cleanup_free_ char *path = NULL;
        if (asprintf(&path, "/api/v1/namespaces/%s/events/%s", r->namespace_, r->event_name) < 0) {
                json_decref(body);
                return -ENOMEM;
        }
        int k = send_call(ev, r, "PATCH", path, "application/merge-patch+json", body);
        json_decref(body);
        return k;
}

int kube_events_post(struct kube_events *ev, const struct kube_object_ref *object, const char *type,
                     const char *reason, const char *message)
{
        if (!object->kind || !object->name || !reason || !message || !type)
                return -EINVAL;
        const char *ns = object->namespace_ ? object->namespace_ : "default";
        _cleanup_free_ char *key = NULL;
        if (asprintf(&key, "%s/%s/%s/%s/%s", object->kind, ns, object->name, reason, message) < 0)
                return -ENOMEM;

        uint64_t now = now_usec();
        struct event_record *r = record_find_key(ev, key);
        if (r) {
                r->count++;
                if (!r->event_name || now - r->last_write_usec < ev->repeat_interval_usec) {
                        log_debug("event %s: repeated (%u times), not re-posted", key, r->count);
                        return 0;
                }
                r->last_write_usec = now;
                return patch_count(ev, r);
        }
        r = record_add(ev, TAKE_PTR(key), ns);
        if (!r)
                return -ENOMEM;
        r->count = 1;
        r->last_write_usec = now;
        int k = post_new(ev, r, object, type, reason, message);
        if (k < 0)
                record_drop(ev, r);
        return k;
}
