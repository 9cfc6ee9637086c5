/* SPDX-License-Identifier: Apache-2.0 */
#include "kube/watch.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kube/json-split.h"
#include "kube/status.h"
#include "kube/watch-stream.h"
#include "util/log.h"
#include "util/macro.h"

/* client-go's reflector: 0.8 s doubling to 30 s, with jitter. */
#define BACKOFF_MIN_USEC (800ULL * 1000)
#define BACKOFF_MAX_USEC (30ULL * 1000 * 1000)
#define LIST_PAGE_SIZE   500
/* A server whose continue tokens never end (500 × 1000 objects is far beyond any namespace's
 * policies) must not keep us paging forever. */
#define MAX_LIST_PAGES 1000
/* 20 objects of at most KUBE_MAX_OBJECT_SIZE stay under KUBE_MAX_BODY. */
#define SMALL_LIST_PAGE_SIZE 20
/* All objects of one informer together: 2 MiB of JSON is over a thousand policies, and at
 * jansson's worst (~15× for many tiny values) still fits the DaemonSet's memory limit. */
#define MAX_TOTAL_SIZE (2u * 1024 * 1024)
/* A watch that ends this quickly without delivering anything is treated like a failure, so a
 * server that closes every watch at once cannot make us spin. */
#define SHORT_WATCH_USEC (1000ULL * 1000)
/* Retries are jittered over seconds: 50 ms of slack is plenty, and not the default 250 ms,
 * which would turn "renew at once" into a quarter second. */
#define TIMER_ACCURACY_USEC (50ULL * 1000)
/* Bookmarks arrive about every 60 s: one missed by 15 s means the stream is dead. */
#define WATCH_IDLE_TIMEOUT_S 75
/* An event still arriving keeps its stream alive while it grows by this much per idle limit
 * (55 B/s at 75 s): a large object over a slow link is not cut, and a server trickling bytes
 * that make no event must keep up this rate into a line bounded by the event size limit. */
#define WATCH_PROGRESS_BYTES 4096
/* A watch that lived this long worked: the backoff starts over (as client-go's). */
#define HEALTHY_WATCH_USEC (30ULL * 1000 * 1000)

enum informer_step {
        STEP_LIST,
        STEP_WATCH,
};

struct kube_informer {
        struct kube_http *http;
        char *kind, *path, *field_selector, *label_selector;
        unsigned watch_timeout_s;
        unsigned list_page_size;
        void (*on_synced)(struct kube_informer *, void *);
        void *synced_userdata;

        struct kube_cache *cache;
        struct kube_watch_stream stream;
        json_t *list_items; /* pages collected so far */
        char *list_continue;
        unsigned list_pages; /* pages of the current list so far */
        bool small_pages;    /* a whole list exceeded KUBE_MAX_BODY: page it finely */
        size_t max_object_size;
        unsigned watch_idle_timeout_s;
        unsigned max_list_pages;
        /* Memory budget: the JSON size of every cached object, keyed like the cache. */
        size_t max_total_size, total_size;
        json_t *sizes;
        char resource_version[64];
        bool synced;

        struct kube_request *request;
        sd_event_source *retry_timer;
        enum informer_step next_step;
        uint64_t backoff_usec;
        uint64_t watch_started_usec;
        /* Lines decoded from watch streams, bookmarks and errors too: a stream that adds none
         * for its idle limit, nor WATCH_PROGRESS_BYTES to the line it is sending, is dead. */
        uint64_t stream_messages;
        size_t stream_progress_mark; /* the unfinished line's length when last counted alive */
        unsigned watch_events;
        bool relist_requested; /* a 410 or a broken stream asked for a fresh list */
        bool list_from_rv;     /* after a 410: list "not older than" our resourceVersion */
        bool consistent_list;  /* that failed too (410, or 504 too large): list from etcd */
        bool restarting;       /* requests go through kube_http's pacing until a watch works */
        bool watch_error;      /* the stream carried an ERROR other than 410 */
        uint64_t watch_error_retry_usec; /* its details.retryAfterSeconds */
        unsigned expired_in_row;         /* 410s without a working watch in between */
};

static int informer_list(struct kube_informer *inf);
static int informer_watch(struct kube_informer *inf);

static uint64_t now_usec(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000000ULL + (uint64_t)ts.tv_nsec / 1000;
}

static int retry_timer_cb(sd_event_source *s, uint64_t usec, void *userdata)
{
        struct kube_informer *inf = userdata;
        int k = inf->next_step == STEP_LIST ? informer_list(inf) : informer_watch(inf);
        if (k < 0)
                log_error_errno(k, "%s informer: cannot start the next request", inf->kind);
        return 0;
}

/* Runs the next step after delay_usec (0: on the next loop iteration, never re-entrantly). */
static void schedule(struct kube_informer *inf, enum informer_step step, uint64_t delay_usec)
{
        inf->next_step = step;
        sd_event *event = sd_event_source_get_event(inf->retry_timer);
        uint64_t now;
        sd_event_now(event, CLOCK_MONOTONIC, &now);
        sd_event_source_set_time(inf->retry_timer, now + delay_usec);
        sd_event_source_set_enabled(inf->retry_timer, SD_EVENT_ONESHOT);
}

/* A retry after a failure: uniformly anywhere in a window that is the larger of this
 * informer's own backoff (client-go's 0.8 s doubling to 30 s) and the reconnect window of the
 * connection (4 s growing with the outage to 15 s). All agents of a cluster lose the server at
 * the same instant; spread over the window, and paced by kube_http to one request every 1.5 s
 * each, their reconnects stay below one request per node per second. */
static void schedule_backoff(struct kube_informer *inf, enum informer_step step)
{
        uint64_t next = inf->backoff_usec ? inf->backoff_usec * 2 : BACKOFF_MIN_USEC;
        if (next > BACKOFF_MAX_USEC)
                next = BACKOFF_MAX_USEC;
        inf->backoff_usec = next;
        uint64_t window = kube_http_reconnect_window_usec(inf->http);
        if (window < next)
                window = next;
        uint64_t delay = kube_http_jitter_usec(inf->http, window);
        log_info("%s informer: retrying %s in %.1f s", inf->kind,
                 step == STEP_LIST ? "list" : "watch", (double)delay / 1e6);
        inf->restarting = true;
        schedule(inf, step, delay);
}

static void set_resource_version(struct kube_informer *inf, json_t *object)
{
        const char *rv = json_string_value(
            json_object_get(json_object_get(object, "metadata"), "resourceVersion"));
        if (rv && *rv && strlen(rv) < sizeof(inf->resource_version))
                snprintf(inf->resource_version, sizeof(inf->resource_version), "%s", rv);
}

/* After a 410 (a compacted or restarted server: every agent gets it at once), relist "not older
 * than" the resourceVersion we had, which the API server answers from its watch cache, as
 * client-go's reflector does; a consistent read from etcd only when that fails too. The relist
 * is spread over the reconnect window; 410s again and again (a hostile or broken server) go
 * through the backoff. */
static void relist_after_expiry(struct kube_informer *inf)
{
        if (inf->resource_version[0] && !inf->consistent_list)
                inf->list_from_rv = true;
        else
                inf->consistent_list = true;
        free(inf->list_continue);
        inf->list_continue = NULL;
        inf->restarting = true;
        if (inf->expired_in_row++ == 0)
                schedule(
                    inf, STEP_LIST,
                    kube_http_jitter_usec(inf->http, kube_http_reconnect_window_usec(inf->http)));
        else
                schedule_backoff(inf, STEP_LIST);
}

/* Logs a failed list or watch response and picks the retry. */
static void handle_http_failure(struct kube_informer *inf, struct kube_request *req,
                                enum informer_step step, int error, long status, const char *body,
                                size_t body_len)
{
        const char *what = step == STEP_LIST ? "list" : "watch";
        char desc[512];

        if (error < 0 && (status == 0 || error == -EFBIG)) {
                const char *text = req ? kube_request_error_text(req) : "";
                if (*text)
                        log_warning("%s informer: %s of %s failed: %s", inf->kind, what,
                                    kube_http_server(inf->http), text);
                else
                        log_warning_errno(error, "%s informer: %s of %s failed", inf->kind, what,
                                          kube_http_server(inf->http));
                schedule_backoff(inf, step);
                return;
        }
        kube_status_describe(status, body, body_len, desc, sizeof(desc));
        if (step == STEP_LIST && inf->list_from_rv && (status == 410 || status == 504)) {
                /* The server has nothing as new as our resourceVersion (a younger store after
                 * a restart) or forgot it: read the current state from etcd. */
                log_info("%s informer: list from resourceVersion %s failed (%s); listing "
                         "consistently",
                         inf->kind, inf->resource_version, desc);
                inf->list_from_rv = false;
                inf->consistent_list = true;
                schedule_backoff(inf, STEP_LIST);
                return;
        }
        if (status == 410) {
                log_info("%s informer: %s expired (%s); relisting", inf->kind, what, desc);
                relist_after_expiry(inf);
                return;
        }
        if (status == 401 || status == 403)
                log_error("%s informer: the API server rejected our credentials for the %s of "
                          "%s (%s); check the token or client certificate",
                          inf->kind, what, inf->path, desc);
        else if (status == 404)
                log_error("%s informer: %s of %s: %s (is the CRD installed, the namespace "
                          "created?)",
                          inf->kind, what, inf->path, desc);
        else
                log_warning("%s informer: %s of %s failed: %s", inf->kind, what, inf->path, desc);
        /* A transient server or credentials problem leaves our resourceVersion valid; anything
         * else (400, 404...) means our idea of the collection is suspect: list again. */
        bool transient = status >= 500 || status == 401 || status == 403 || status == 429;
        uint64_t retry_after = kube_request_retry_after_usec(req);
        if (retry_after > 0 && (status == 429 || status == 503)) {
                /* API Priority and Fairness says when: neither sooner nor later. */
                log_info("%s informer: retrying %s in %.0f s (Retry-After)", inf->kind,
                         transient ? what : "list", (double)retry_after / 1e6);
                schedule(inf, transient ? step : STEP_LIST, retry_after);
                return;
        }
        schedule_backoff(inf, transient ? step : STEP_LIST);
}

static int append_query(char **url, const char *name, const char *value)
{
        _cleanup_free_ char *escaped = kube_http_escape(value);
        if (!escaped)
                return -ENOMEM;
        char *n;
        if (asprintf(&n, "%s%c%s=%s", *url, strchr(*url, '?') ? '&' : '?', name, escaped) < 0)
                return -ENOMEM;
        free(*url);
        *url = n;
        return 0;
}

static int selector_query(struct kube_informer *inf, char **url)
{
        int k = 0;
        if (inf->field_selector && (k = append_query(url, "fieldSelector", inf->field_selector)))
                return k;
        if (inf->label_selector && (k = append_query(url, "labelSelector", inf->label_selector)))
                return k;
        return 0;
}

/* ---- memory budget -------------------------------------------------------------------- */

static int object_key(json_t *obj, char *buf, size_t size)
{
        json_t *meta = json_object_get(obj, "metadata");
        const char *name = json_string_value(json_object_get(meta, "name"));
        const char *ns = json_string_value(json_object_get(meta, "namespace"));
        if (!name)
                return -EINVAL;
        snprintf(buf, size, "%s%s%s", ns ? ns : "", ns ? "/" : "", name);
        return 0;
}

/* Accounts obj (replacing what its key held) against the budget; returns obj, or a stub of it
 * (obj released) when the budget would be exceeded. deleting: only release its share. */
static json_t *budget_account(struct kube_informer *inf, json_t *obj, bool deleting)
{
        char key[512];
        if (object_key(obj, key, sizeof(key)) < 0)
                return obj;
        size_t old = (size_t)json_integer_value(json_object_get(inf->sizes, key));
        inf->total_size -= old < inf->total_size ? old : inf->total_size;
        json_object_del(inf->sizes, key);
        if (deleting)
                return obj;
        size_t size = kube_object_undecodable(obj) ? 0 : json_dumpb(obj, NULL, 0, JSON_COMPACT);
        if (size > 0 && inf->total_size + size > inf->max_total_size) {
                char reason[160];
                snprintf(reason, sizeof(reason),
                         "does not fit the %zu KiB memory budget for all %s objects",
                         inf->max_total_size >> 10, inf->kind);
                json_t *stub = kube_object_stub(obj, reason);
                if (stub) {
                        json_decref(obj);
                        obj = stub;
                        size = 0;
                }
        }
        inf->total_size += size;
        json_object_set_new(inf->sizes, key, json_integer((json_int_t)size));
        return obj;
}

/* ---- list ---------------------------------------------------------------------------- */

static void log_undecodable(struct kube_informer *inf, json_t *obj)
{
        const char *why = kube_object_undecodable(obj);
        if (!why)
                return;
        json_t *meta = json_object_get(obj, "metadata");
        const char *ns = json_string_value(json_object_get(meta, "namespace"));
        log_warning("%s %s%s%s %s; it is kept as an invalid object, the others are used", inf->kind,
                    ns ? ns : "", ns ? "/" : "", json_string_value(json_object_get(meta, "name")),
                    why);
}

static void list_finished(struct kube_informer *inf, json_t *list)
{
        json_t *items = inf->list_items;
        size_t i;
        json_t *item;
        json_array_foreach(items, i, item)
        {
                json_t *meta = json_object_get(item, "metadata");
                if (!json_string_value(json_object_get(meta, "name")))
                        log_warning("%s informer: ignoring a listed object without a name",
                                    inf->kind);
        }
        int k = kube_cache_replace(inf->cache, items);
        if (k < 0)
                log_error_errno(k, "%s informer: cannot update the cache", inf->kind);
        set_resource_version(inf, list);
        json_array_clear(inf->list_items);
        inf->list_pages = 0;
        inf->synced = true;
        inf->relist_requested = false;
        inf->consistent_list = false;
        inf->list_from_rv = false;
        /* The backoff is not reset here: a server whose watches fail right after a good list
         * must not get a list at full speed each time. Only a watch that worked resets it. */
        log_debug("%s informer: listed %zu objects at resourceVersion %s", inf->kind,
                  kube_cache_size(inf->cache), inf->resource_version);
        if (inf->on_synced)
                inf->on_synced(inf, inf->synced_userdata);
        schedule(inf, STEP_WATCH, 0);
}

struct list_page {
        struct kube_informer *inf;
        json_t *metadata; /* the list's own metadata (resourceVersion, continue) */
        bool items_bad;
};

static int list_item(const char *value, size_t value_len, void *userdata)
{
        struct list_page *pg = userdata;
        struct kube_informer *inf = pg->inf;
        char reason[256];
        json_t *obj =
            kube_json_decode_object(value, value_len, inf->max_object_size, reason, sizeof(reason));
        if (!obj) {
                log_warning("%s informer: skipping a listed object without a readable name: %s",
                            inf->kind, reason);
                return 0;
        }
        obj = budget_account(inf, obj, false);
        log_undecodable(inf, obj);
        return json_array_append_new(inf->list_items, obj) < 0 ? -ENOMEM : 0;
}

static int list_member(const char *key, size_t key_len, const char *value, size_t value_len,
                       void *userdata)
{
        struct list_page *pg = userdata;
        if (key_len == 5 && memcmp(key, "items", 5) == 0) {
                if (value_len == 4 && memcmp(value, "null", 4) == 0)
                        return 0;
                int k = kube_json_array_elements(value, value_len, list_item, pg);
                if (k == -ENOMEM)
                        return k;
                if (k < 0)
                        pg->items_bad = true;
        } else if (key_len == 8 && memcmp(key, "metadata", 8) == 0) {
                json_decref(pg->metadata);
                pg->metadata = json_loadb(value, value_len, 0, NULL);
        }
        return 0;
}

/* Each page is decoded object by object (see json-split.h): an object that cannot be decoded
 * becomes a named stub instead of failing the whole list. */
static void list_done(struct kube_request *req, int error, long status, const char *body,
                      size_t body_len, void *userdata)
{
        struct kube_informer *inf = userdata;
        inf->request = NULL;
        if (error == -EFBIG) {
                /* The watch cache answers a list whole: too big to hold. Page it from etcd
                 * instead, in pages small enough to stay under the limit. */
                log_error("%s informer: the list of %s is larger than %u MiB; listing again in "
                          "pages of %u",
                          inf->kind, inf->path, KUBE_MAX_BODY >> 20, SMALL_LIST_PAGE_SIZE);
                free(inf->list_continue);
                inf->list_continue = NULL;
                json_array_clear(inf->list_items);
                inf->list_pages = 0;
                inf->consistent_list = true;
                inf->small_pages = true;
                schedule_backoff(inf, STEP_LIST);
                return;
        }
        if (error < 0 || status != 200) {
                free(inf->list_continue);
                inf->list_continue = NULL; /* an expired continue token means start over */
                json_array_clear(inf->list_items);
                inf->list_pages = 0;
                handle_http_failure(inf, req, STEP_LIST, error, status, body, body_len);
                return;
        }
        struct list_page pg = { .inf = inf };
        if (!inf->list_continue && inf->list_pages == 0) {
                /* A list replaces the whole cache: account from zero. */
                json_object_clear(inf->sizes);
                inf->total_size = 0;
        }
        int k = kube_json_object_members(body, body_len, list_member, &pg);
        json_auto_t *metadata = TAKE_PTR(pg.metadata);
        free(inf->list_continue);
        inf->list_continue = NULL;
        if (k < 0 || pg.items_bad || !json_is_object(metadata)) {
                log_error("%s informer: list of %s returned a malformed body (%s); retrying",
                          inf->kind, inf->path,
                          k == -ENOMEM   ? "out of memory"
                          : k < 0        ? "not a JSON object"
                          : pg.items_bad ? "items is not a JSON array"
                                         : "no list metadata");
                json_array_clear(inf->list_items);
                inf->list_pages = 0;
                schedule_backoff(inf, STEP_LIST);
                return;
        }
        const char *cont = json_string_value(json_object_get(metadata, "continue"));
        if (cont && *cont) {
                if (++inf->list_pages >= inf->max_list_pages) {
                        log_error("%s informer: list of %s did not end after %u pages; "
                                  "starting over after a backoff",
                                  inf->kind, inf->path, inf->max_list_pages);
                        json_array_clear(inf->list_items);
                        inf->list_pages = 0;
                        schedule_backoff(inf, STEP_LIST);
                        return;
                }
                inf->list_continue = strdup(cont);
                if (!inf->list_continue || informer_list(inf) < 0)
                        schedule_backoff(inf, STEP_LIST);
                return;
        }
        /* "o" steals metadata also when json_pack fails. */
        json_auto_t *list = json_pack("{s:o}", "metadata", TAKE_PTR(metadata));
        list_finished(inf, list);
}

static int informer_list(struct kube_informer *inf)
{
        /* After a 410: "not older than" our resourceVersion, without limit (a paged list would
         * be read from etcd; client-go drops the limit for the same reason). */
        bool from_rv = inf->list_from_rv && !inf->small_pages && !inf->list_continue;
        _cleanup_free_ char *url = NULL;
        if ((from_rv ? asprintf(&url, "%s", inf->path)
                     : asprintf(&url, "%s?limit=%u", inf->path,
                                inf->small_pages ? SMALL_LIST_PAGE_SIZE : inf->list_page_size)) < 0)
                return -ENOMEM;
        int k = selector_query(inf, &url);
        if (k < 0)
                return k;
        if (inf->list_continue) {
                if ((k = append_query(&url, "continue", inf->list_continue)) < 0)
                        return k;
        } else if (from_rv) {
                if ((k = append_query(&url, "resourceVersion", inf->resource_version)) < 0)
                        return k;
        } else if (!inf->consistent_list && !inf->small_pages &&
                   (k = append_query(&url, "resourceVersion", "0")) < 0)
                /* Served from the API server's watch cache, as client-go's reflector lists;
                 * a consistent read from etcd only after a 410. */
                return k;
        const struct kube_request_opts opts = {
                .path = url,
                .paced = inf->restarting,
                .on_done = list_done,
                .userdata = inf,
        };
        k = kube_http_start(inf->http, &opts, &inf->request);
        if (k < 0) {
                schedule_backoff(inf, STEP_LIST);
                return k;
        }
        return 0;
}

/* ---- watch --------------------------------------------------------------------------- */

static int watch_event(enum kube_watch_event_type type, json_t *object, void *userdata)
{
        struct kube_informer *inf = userdata;
        char desc[512];

        inf->stream_messages++;
        switch (type) {
        case KUBE_WATCH_ERROR:
                kube_status_describe_json(0, object, desc, sizeof(desc));
                if (kube_status_code(object) == 410) {
                        log_info("%s informer: watch expired (%s); relisting", inf->kind, desc);
                        inf->relist_requested = true;
                        return -ESTALE;
                }
                /* 500, 429...: our resourceVersion is still good. Back off and watch again
                 * from it; relisting would only add load to a server already in trouble. */
                log_warning("%s informer: watch error (%s); watching again after a backoff",
                            inf->kind, desc);
                inf->watch_error = true;
                inf->watch_error_retry_usec =
                    (uint64_t)json_integer_value(
                        json_object_get(json_object_get(object, "details"), "retryAfterSeconds")) *
                    1000000ULL;
                if (inf->watch_error_retry_usec > KUBE_RETRY_AFTER_MAX_S * 1000000ULL)
                        inf->watch_error_retry_usec = KUBE_RETRY_AFTER_MAX_S * 1000000ULL;
                return -EPROTO;
        case KUBE_WATCH_BOOKMARK:
                set_resource_version(inf, object);
                inf->restarting = false; /* the watch works */
                return 0;
        case KUBE_WATCH_ADDED:
        case KUBE_WATCH_MODIFIED:
        case KUBE_WATCH_DELETED:
                break;
        default:
                return 0;
        }
        json_auto_t *accounted =
            budget_account(inf, json_incref(object), type == KUBE_WATCH_DELETED);
        if (type != KUBE_WATCH_DELETED)
                log_undecodable(inf, accounted);
        int k = kube_cache_apply(inf->cache,
                                 type == KUBE_WATCH_DELETED ? KUBE_CACHE_DELETE : KUBE_CACHE_UPSERT,
                                 accounted);
        if (k < 0) {
                log_warning("%s informer: ignoring a %s event for an object without a name",
                            inf->kind, kube_watch_event_type_to_string(type));
                return 0;
        }
        set_resource_version(inf, object);
        inf->watch_events++;
        inf->backoff_usec = 0; /* the watch works */
        inf->restarting = false;
        inf->expired_in_row = 0;
        return 0;
}

static int watch_data(struct kube_request *req, const char *data, size_t len, void *userdata)
{
        struct kube_informer *inf = userdata;
        uint64_t before = inf->stream_messages;
        int k = kube_watch_stream_feed(&inf->stream, data, len, watch_event, inf);
        if (k == -EBADMSG || k == -EFBIG || k == -ENOMEM) {
                log_error("%s informer: %s; ending the watch and relisting", inf->kind,
                          inf->stream.error);
                inf->relist_requested = true;
        }
        if (k < 0)
                return k;
        /* An event or bookmark, or an event well on its way: keeps the idle limit off. */
        size_t pending = kube_watch_stream_pending(&inf->stream);
        if (inf->stream_messages == before &&
            pending < inf->stream_progress_mark + WATCH_PROGRESS_BYTES)
                return 0;
        inf->stream_progress_mark = pending;
        return 1;
}

static void watch_done(struct kube_request *req, int error, long status, const char *body,
                       size_t body_len, void *userdata)
{
        struct kube_informer *inf = userdata;
        inf->request = NULL;

        bool lived = now_usec() - inf->watch_started_usec >= HEALTHY_WATCH_USEC;
        if (lived) {
                inf->backoff_usec = 0;
                inf->expired_in_row = 0;
                inf->restarting = false;
        }
        if (inf->relist_requested) {
                /* After a 410 the list is the remedy; after a broken stream, back off first
                 * so a server that keeps sending garbage is not hammered. */
                if (error == -ESTALE)
                        relist_after_expiry(inf);
                else
                        schedule_backoff(inf, STEP_LIST);
                return;
        }
        if (inf->watch_error) {
                inf->watch_error = false;
                if (inf->watch_error_retry_usec)
                        schedule(inf, STEP_WATCH, inf->watch_error_retry_usec);
                else
                        schedule_backoff(inf, STEP_WATCH);
                return;
        }
        if (status != 200 && status != 0) {
                handle_http_failure(inf, req, STEP_WATCH, error, status, body, body_len);
                return;
        }
        if (error < 0) {
                const char *text = kube_request_error_text(req);
                log_warning("%s informer: watch connection lost after %u events: %s", inf->kind,
                            inf->watch_events, *text ? text : strerror(-error));
                schedule_backoff(inf, STEP_WATCH);
                return;
        }
        if (kube_watch_stream_pending(&inf->stream) > 0)
                log_warning("%s informer: watch ended in the middle of an event; resuming",
                            inf->kind);
        if (inf->watch_events == 0 && now_usec() - inf->watch_started_usec < SHORT_WATCH_USEC)
                schedule_backoff(inf, STEP_WATCH);
        else
                schedule(inf, STEP_WATCH, 0); /* the server's timeoutSeconds ran out: renew */
}

static int informer_watch(struct kube_informer *inf)
{
        unsigned timeout = inf->watch_timeout_s
                               ? inf->watch_timeout_s
                               : 300 + (unsigned)kube_http_jitter_usec(inf->http, 299);
        _cleanup_free_ char *url = NULL;
        if (asprintf(&url, "%s?watch=1&allowWatchBookmarks=true&timeoutSeconds=%u", inf->path,
                     timeout) < 0)
                return -ENOMEM;
        int k = selector_query(inf, &url);
        if (k < 0)
                return k;
        if ((k = append_query(&url, "resourceVersion", inf->resource_version)) < 0)
                return k;

        kube_watch_stream_reset(&inf->stream);
        inf->stream_progress_mark = 0;
        inf->watch_events = 0;
        inf->watch_error = false;
        inf->watch_error_retry_usec = 0;
        inf->watch_started_usec = now_usec();
        const struct kube_request_opts opts = {
                .path = url,
                .on_data = watch_data,
                .on_done = watch_done,
                .userdata = inf,
                .paced = inf->restarting,
                /* We ask for bookmarks, which the API server sends about once a minute even
                 * when nothing changes: a watch without an event or bookmark for longer than
                 * that is dead even if TCP has not noticed, whatever bytes it still carries.
                 * It is resumed from the last resourceVersion. */
                .idle_timeout_s = inf->watch_idle_timeout_s,
        };
        k = kube_http_start(inf->http, &opts, &inf->request);
        if (k < 0) {
                schedule_backoff(inf, STEP_WATCH);
                return k;
        }
        return 0;
}

/* ---- life cycle ---------------------------------------------------------------------- */

static int dup_optional(const char *s, char **ret)
{
        *ret = NULL;
        if (!s)
                return 0;
        *ret = strdup(s);
        return *ret ? 0 : -ENOMEM;
}

int kube_informer_new(struct kube_http *http, const struct kube_informer_opts *opts,
                      struct kube_informer **ret)
{
        if (!opts->path || !opts->kind)
                return -EINVAL;
        struct kube_informer *inf = calloc(1, sizeof(*inf));
        if (!inf)
                return -ENOMEM;
        *inf = (struct kube_informer){
                .http = http,
                .watch_timeout_s = opts->watch_timeout_s,
                .list_page_size = opts->list_page_size ? opts->list_page_size : LIST_PAGE_SIZE,
                .max_object_size = opts->max_object_size,
                .max_list_pages = opts->max_list_pages ? opts->max_list_pages : MAX_LIST_PAGES,
                .max_total_size = opts->max_total_size ? opts->max_total_size : MAX_TOTAL_SIZE,
                .watch_idle_timeout_s =
                    opts->watch_idle_timeout_s ? opts->watch_idle_timeout_s : WATCH_IDLE_TIMEOUT_S,
                .on_synced = opts->on_synced,
                .synced_userdata = opts->synced_userdata,
        };
        kube_watch_stream_init(&inf->stream, opts->max_event_size);
        int k;
        if ((k = dup_optional(opts->kind, &inf->kind)) < 0 ||
            (k = dup_optional(opts->path, &inf->path)) < 0 ||
            (k = dup_optional(opts->field_selector, &inf->field_selector)) < 0 ||
            (k = dup_optional(opts->label_selector, &inf->label_selector)) < 0 ||
            (k = kube_cache_new(&opts->callbacks, &inf->cache)) < 0)
                goto fail;
        if (opts->cache_metadata_only)
                kube_cache_keep_metadata_only(inf->cache);
        inf->list_items = json_array();
        inf->sizes = json_object();
        if (!inf->list_items || !inf->sizes) {
                k = -ENOMEM;
                goto fail;
        }
        *ret = inf;
        return 0;
fail:
        kube_informer_free(inf);
        return k;
}

int kube_informer_start(struct kube_informer *inf)
{
        int k = sd_event_add_time(kube_http_event(inf->http), &inf->retry_timer, CLOCK_MONOTONIC,
                                  UINT64_MAX, TIMER_ACCURACY_USEC, retry_timer_cb, inf);
        if (k < 0)
                return log_error_errno(k, "%s informer: cannot create its timer", inf->kind);
        sd_event_source_set_enabled(inf->retry_timer, SD_EVENT_OFF);
        schedule(inf, STEP_LIST, 0);
        return 0;
}

struct kube_informer *kube_informer_free(struct kube_informer *inf)
{
        if (!inf)
                return NULL;
        kube_request_cancel(inf->request);
        sd_event_source_disable_unref(inf->retry_timer);
        kube_watch_stream_done(&inf->stream);
        kube_cache_free(inf->cache);
        json_decref(inf->list_items);
        json_decref(inf->sizes);
        free(inf->list_continue);
        free(inf->kind);
        free(inf->path);
        free(inf->field_selector);
        free(inf->label_selector);
        free(inf);
        return NULL;
}

struct kube_cache *kube_informer_cache(struct kube_informer *inf)
{
        return inf->cache;
}

bool kube_informer_has_synced(const struct kube_informer *inf)
{
        return inf->synced;
}

const char *kube_informer_resource_version(const struct kube_informer *inf)
{
        return inf->resource_version;
}

char *kube_policy_collection_path(const char *namespace_)
{
        char *p;
        if (asprintf(&p,
                     "/apis/sriovnetwork.openshift.io/v1/namespaces/%s/sriovnetworknodepolicies",
                     namespace_) < 0)
                return NULL;
        return p;
}

char *kube_node_collection_path(void)
{
        return strdup("/api/v1/nodes");
}
