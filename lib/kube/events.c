/* SPDX-License-Identifier: Apache-2.0 */
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
/* Distinct (object, reason, message) triples remembered; the oldest is forgotten first. A
 * record is small (the key is kept as a hash), so this covers thousands of invalid policies. */
#define MAX_REMEMBERED 2048
/* Per involved object, client-go's spam filter: a burst of 25, then one per 5 minutes. */
#define OBJECT_BURST       25.0
#define OBJECT_REFILL_USEC (5ULL * 60 * 1000 * 1000)
#define MAX_OBJECTS        1024
/* All objects together: a burst of 50, then one per second. */
#define TOTAL_BURST       50.0
#define TOTAL_REFILL_USEC (1000ULL * 1000)
/* The kubelet's aggregation: more than 10 distinct messages for one object and reason within
 * 10 minutes become one "(combined from similar events)" Event whose count grows. */
#define AGGREGATE_THRESHOLD   10
#define AGGREGATE_WINDOW_USEC (10ULL * 60 * 1000 * 1000)
/* A failed POST is not retried before this (doubling per failure, up to 5 minutes). */
#define FAILURE_BACKOFF_MIN_USEC (1000ULL * 1000)
#define FAILURE_BACKOFF_MAX_USEC (5ULL * 60 * 1000 * 1000)
/* The API server rejects longer event messages. */
#define MAX_MESSAGE 1024

struct event_record {
        uint64_t id;
        uint64_t hash;    /* of kind/ns/name/reason/message */
        char *key;        /* kind/ns/name/reason, for log lines */
        char *namespace_; /* where the Event object lives */
        char *event_name; /* set once the POST succeeded */
        unsigned count;
        uint64_t last_write_usec;
        uint64_t retry_after_usec; /* a failed POST: not before this */
        uint64_t failure_backoff_usec;
};

/* Per involved object (and, for aggregation, per object and reason). */
struct object_budget {
        uint64_t hash; /* of kind/ns/name */
        double tokens;
        uint64_t refilled_usec, last_use_usec;
        uint64_t reason_hash; /* aggregation: the reason counted */
        unsigned distinct;    /* distinct messages for it in the window */
        uint64_t window_start_usec;
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
        struct object_budget objects[MAX_OBJECTS];
        size_t n_objects;
        double total_tokens;
        uint64_t total_refilled_usec;
        unsigned dropped; /* reports suppressed by the rate limits (for tests and logs) */
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
        ev->total_tokens = TOTAL_BURST;
        ev->total_refilled_usec = now_usec();
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

static uint64_t hash_str(uint64_t h, const char *s)
{
        /* FNV-1a, with a separator so "a"+"bc" and "ab"+"c" differ. */
        for (; *s; s++)
                h = (h ^ (unsigned char)*s) * 1099511628211ULL;
        return (h ^ 0xff) * 1099511628211ULL;
}

static struct event_record *record_find_hash(struct kube_events *ev, uint64_t hash)
{
        for (size_t i = 0; i < ev->n_records; i++)
                if (ev->records[i].hash == hash)
                        return &ev->records[i];
        return NULL;
}

static void refill(double *tokens, uint64_t *refilled, uint64_t now, double burst,
                   uint64_t interval)
{
        if (now > *refilled) {
                *tokens += (double)(now - *refilled) / (double)interval;
                if (*tokens > burst)
                        *tokens = burst;
        }
        *refilled = now;
}

static struct object_budget *object_budget(struct kube_events *ev, uint64_t hash, uint64_t now)
{
        for (size_t i = 0; i < ev->n_objects; i++)
                if (ev->objects[i].hash == hash) {
                        ev->objects[i].last_use_usec = now;
                        return &ev->objects[i];
                }
        size_t slot = ev->n_objects;
        if (slot == MAX_OBJECTS) {
                slot = 0;
                for (size_t i = 1; i < ev->n_objects; i++)
                        if (ev->objects[i].last_use_usec < ev->objects[slot].last_use_usec)
                                slot = i;
        } else
                ev->n_objects++;
        ev->objects[slot] = (struct object_budget){
                .hash = hash,
                .tokens = OBJECT_BURST,
                .refilled_usec = now,
                .last_use_usec = now,
        };
        return &ev->objects[slot];
}

/* Takes one token from the object's and the total bucket, or none (suppressed). */
static bool take_token(struct kube_events *ev, struct object_budget *b, uint64_t now)
{
        refill(&b->tokens, &b->refilled_usec, now, OBJECT_BURST, OBJECT_REFILL_USEC);
        refill(&ev->total_tokens, &ev->total_refilled_usec, now, TOTAL_BURST, TOTAL_REFILL_USEC);
        if (b->tokens < 1.0 || ev->total_tokens < 1.0)
                return false;
        b->tokens -= 1.0;
        ev->total_tokens -= 1.0;
        return true;
}

static void record_drop(struct kube_events *ev, struct event_record *r)
{
        record_clear(r);
        size_t i = (size_t)(r - ev->records);
        memmove(&ev->records[i], &ev->records[i + 1],
                (ev->n_records - i - 1) * sizeof(ev->records[0]));
        ev->n_records--;
}

static struct event_record *record_add(struct kube_events *ev, uint64_t hash, char *key,
                                       const char *ns)
{
        if (ev->n_records == MAX_REMEMBERED) {
                size_t oldest = 0;
                for (size_t i = 1; i < ev->n_records; i++)
                        if (ev->records[i].last_write_usec < ev->records[oldest].last_write_usec)
                                oldest = i;
                record_drop(ev, &ev->records[oldest]);
        }
        struct event_record *r = &ev->records[ev->n_records];
        *r = (struct event_record){
                .id = ev->next_id++, .hash = hash, .key = key, .namespace_ = strdup(ns)
        };
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
                kube_request_describe(req, error, status, body, body_len, desc, sizeof(desc));
                log_warning("event %s: cannot %s the Event: %s", r ? r->key : "(forgotten)",
                            c->is_patch ? "update" : "create", desc);
                /* Keep it, so identical reports do not retry at every reconcile: the next try
                 * waits out a backoff. */
                if (r) {
                        uint64_t b = r->failure_backoff_usec ? r->failure_backoff_usec * 2
                                                             : FAILURE_BACKOFF_MIN_USEC;
                        r->failure_backoff_usec =
                            b > FAILURE_BACKOFF_MAX_USEC ? FAILURE_BACKOFF_MAX_USEC : b;
                        r->retry_after_usec = now_usec() + r->failure_backoff_usec;
                        if (!c->is_patch) {
                                free(r->event_name);
                                r->event_name = NULL;
                        }
                }
        } else if (r && !c->is_patch) {
                r->failure_backoff_usec = 0;
                r->retry_after_usec = 0;
                json_auto_t *obj = json_loadb(body, body_len, 0, NULL);
                const char *name =
                    json_string_value(json_object_get(json_object_get(obj, "metadata"), "name"));
                if (name) {
                        free(r->event_name);
                        r->event_name = strdup(name);
                }
        }
        free(c);
}

static int send_call(struct kube_events *ev, struct event_record *r, const char *method,
                     const char *path, const char *content_type, json_t *body)
{
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
                .on_done = call_done,
                .userdata = c,
        };
        int k = kube_http_start_json(ev->http, &opts, body, &c->request);
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
        /* "o" steals involved also when json_pack fails. */
        json_auto_t *body = json_pack(
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
        if (asprintf(&path, "/api/v1/namespaces/%s/events", r->namespace_) < 0)
                return -ENOMEM;
        return send_call(ev, r, "POST", path, "application/json", body);
}

static int patch_count(struct kube_events *ev, struct event_record *r)
{
        char now[32];
        rfc3339_now(now);
        json_auto_t *body = json_pack("{s:i, s:s}", "count", (int)r->count, "lastTimestamp", now);
        if (!body)
                return -ENOMEM;
        _cleanup_free_ char *path = NULL;
        if (asprintf(&path, "/api/v1/namespaces/%s/events/%s", r->namespace_, r->event_name) < 0)
                return -ENOMEM;
        return send_call(ev, r, "PATCH", path, "application/merge-patch+json", body);
}

int kube_events_post(struct kube_events *ev, const struct kube_object_ref *object, const char *type,
                     const char *reason, const char *message)
{
        if (!object->kind || !object->name || !reason || !message || !type)
                return -EINVAL;
        const char *ns = object->namespace_ ? object->namespace_ : "default";
        uint64_t now = now_usec();
        uint64_t object_hash =
            hash_str(hash_str(hash_str(14695981039346656037ULL, object->kind), ns), object->name);
        uint64_t reason_hash = hash_str(object_hash, reason);
        uint64_t hash = hash_str(reason_hash, message);
        struct object_budget *b = object_budget(ev, object_hash, now);

        struct event_record *r = record_find_hash(ev, hash);
        _cleanup_free_ char *combined = NULL;
        if (!r) {
                /* A new message for this object and reason: aggregate past the threshold. */
                if (b->reason_hash != reason_hash ||
                    now - b->window_start_usec > AGGREGATE_WINDOW_USEC) {
                        b->reason_hash = reason_hash;
                        b->distinct = 0;
                        b->window_start_usec = now;
                }
                if (++b->distinct > AGGREGATE_THRESHOLD) {
                        if (asprintf(&combined, "(combined from similar events): %s", message) < 0)
                                return -ENOMEM;
                        message = combined;
                        hash = hash_str(reason_hash, "(combined from similar events)");
                        r = record_find_hash(ev, hash);
                }
        }
        if (r) {
                r->count++;
                if (r->retry_after_usec) {
                        if (now < r->retry_after_usec)
                                return 0; /* the last POST failed: back off */
                        r->retry_after_usec = 0;
                        if (!take_token(ev, b, now)) {
                                ev->dropped++;
                                return 0;
                        }
                        r->last_write_usec = now;
                        return post_new(ev, r, object, type, reason, message);
                }
                if (!r->event_name || now - r->last_write_usec < ev->repeat_interval_usec) {
                        log_debug("event %s: repeated (%u times), not re-posted", r->key, r->count);
                        return 0;
                }
                if (!take_token(ev, b, now)) {
                        ev->dropped++;
                        return 0;
                }
                r->last_write_usec = now;
                return patch_count(ev, r);
        }
        if (!take_token(ev, b, now)) {
                /* Not remembered: a later report (next reconcile) tries again. */
                ev->dropped++;
                log_debug("event %s/%s/%s %s: rate limited", object->kind, ns, object->name,
                          reason);
                return 0;
        }
        char *key;
        if (asprintf(&key, "%s/%s/%s/%s", object->kind, ns, object->name, reason) < 0)
                return -ENOMEM;
        r = record_add(ev, hash, key, ns);
        if (!r)
                return -ENOMEM;
        r->count = 1;
        r->last_write_usec = now;
        int k = post_new(ev, r, object, type, reason, message);
        if (k < 0)
                record_drop(ev, r);
        return k;
}

unsigned kube_events_suppressed(const struct kube_events *ev)
{
        return ev->dropped;
}
