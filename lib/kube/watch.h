/* SPDX-License-Identifier: Apache-2.0 */
/* List-then-watch informer for one kind of Kubernetes object.
 *
 * kube_informer_start() lists the collection with resourceVersion=0 (served from the API
 * server's watch cache, as client-go's reflector does), fills the cache, then watches from the
 * list's resourceVersion with allowWatchBookmarks and a server-side timeoutSeconds; a watch
 * that ends normally is renewed at once from the last seen resourceVersion. Every change
 * reaches the cache callbacks (added/updated/deleted), including deletions that happened while
 * the informer was away (410 Expired → relist and reconcile).
 *
 * Failures never stop the informer. A dropped connection, a 5xx or a failed list is retried at
 * a moment drawn uniformly from a window: the larger of the connection's reconnect window
 * (kube_http_reconnect_window_usec(): 4 s, growing with the outage to 15 s) and client-go's
 * exponential backoff (0.8 s doubling, capped at 30 s), which resets only once a watch
 * delivered events or lived 30 s (never on a mere successful list). Until a watch works again
 * its requests go through kube_http's pacing (one per 1.5 s per agent), so a fleet that lost
 * its API server together does not come back together. A 410 relists after a jitter over the
 * same window, "not older than" the last resourceVersion (resourceVersion=N without limit,
 * served from the watch cache); only when that fails too (410, or 504 too large) a consistent,
 * paged read from etcd. 410s in a row go through the backoff. An ERROR event of another
 * code inside a watch stream (500, 429...) keeps the resourceVersion and watches again after
 * the backoff (or its details.retryAfterSeconds). 429/503 answers wait for Retry-After.
 * 401/403 are logged as a credentials problem and retried the same way; a malformed or
 * oversized (16 MiB) event ends the stream
 * with a logged error and a relist. Objects are decoded one at a time: one that cannot be
 * decoded (nesting beyond jansson's depth, an integer beyond 64 bits) or is larger than
 * max_object_size enters the cache as a stub carrying its name and the reason
 * (kube_object_undecodable(), json-split.h) and never fails the list or watch for the others.
 * A list whose continue tokens do not end after 1,000 pages is abandoned and retried after a
 * backoff. All work happens in the sd-event loop kube_http runs on.
 * Callbacks may start requests and read the cache, but must not free the informer (or the
 * kube_http under it): stop from outside, e.g. after sd_event_exit(). */
#pragma once

#include <stdbool.h>

#include "kube/cache.h"
#include "kube/http.h"

struct kube_informer;

struct kube_informer_opts {
        const char *kind; /* "SriovNetworkNodePolicy", "Node": for log lines */
        /* Collection path, e.g. "/api/v1/nodes" or
         * "/apis/sriovnetwork.openshift.io/v1/namespaces/NS/sriovnetworknodepolicies". */
        const char *path;
        const char *field_selector; /* optional, e.g. "metadata.name=worker-1" */
        const char *label_selector; /* optional */
        struct kube_cache_callbacks callbacks;
        /* Called after every successful (re)list has been reconciled into the cache. */
        void (*on_synced)(struct kube_informer *informer, void *userdata);
        void *synced_userdata;
        unsigned watch_timeout_s; /* server-side timeoutSeconds; 0 = random 300..599 */
        size_t max_event_size;    /* 0 = KUBE_WATCH_MAX_EVENT (16 MiB) */
        unsigned list_page_size;  /* 0 = 500 */
        size_t max_object_size;   /* 0 = KUBE_MAX_OBJECT_SIZE (512 KiB): larger ones are stubs */
        /* A watch stream without an event or bookmark this long (whatever other bytes it
         * carries, unless an event is on its way at 4 KiB per limit at least) is dropped and
         * resumed from the last resourceVersion; 0 = 75 s (the API server bookmarks about
         * every 60 s). */
        unsigned watch_idle_timeout_s;
        /* All cached objects together (their JSON size): objects beyond it become stubs
         * reported as invalid, so memory is bounded whatever the namespace holds. 0 = 2 MiB. */
        size_t max_total_size;
        unsigned max_list_pages; /* 0 = 1,000: a list that does not end is abandoned */
        /* The cache keeps only each object's metadata once the callbacks have seen it whole
         * (kube_cache_keep_metadata_only()). */
        bool cache_metadata_only;
};

int kube_informer_new(struct kube_http *http, const struct kube_informer_opts *opts,
                      struct kube_informer **ret);
int kube_informer_start(struct kube_informer *informer);
struct kube_informer *kube_informer_free(struct kube_informer *informer);
static inline void kube_informer_freep(struct kube_informer **i)
{
        kube_informer_free(*i);
}

struct kube_cache *kube_informer_cache(struct kube_informer *informer);
/* True once the first list has completed. */
bool kube_informer_has_synced(const struct kube_informer *informer);
/* The resourceVersion the next watch starts from ("" before the first list). */
const char *kube_informer_resource_version(const struct kube_informer *informer);

/* Collection paths for the two informers the agent runs. Caller frees. */
char *kube_policy_collection_path(const char *namespace_);
char *kube_node_collection_path(void);
