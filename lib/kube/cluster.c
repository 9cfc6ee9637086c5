/* SPDX-License-Identifier: Apache-2.0 */
#include "kube/cluster.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube/http.h"
#include "kube/kubeconfig.h"
#include "kube/networks.h"
#include "kube/watch.h"
#include "util/log.h"
#include "util/macro.h"

struct kube_cluster {
        struct kube_config *config;
        struct kube_http *http;
        struct kube_informer *policies, *nodes;
        struct kube_informer *own_state; /* this node's NodeState: repaired if changed */
        struct kube_nodestate *nodestate;
        struct kube_events *events;
        struct kube_networks *networks;
        char *node_name;
        void (*on_change)(const char *why, void *userdata);
        void *userdata;
        bool announced_sync;
};

static void notify(struct kube_cluster *c, const char *what, const char *name, const char *change)
{
        if (!c->announced_sync || !c->on_change)
                return; /* before the first full sync one "initial sync" covers everything */
        char why[256];
        snprintf(why, sizeof(why), "%s %s %s", what, name ? name : "", change);
        c->on_change(why, c->userdata);
}

static const char *object_name(json_t *o)
{
        return json_string_value(json_object_get(json_object_get(o, "metadata"), "name"));
}

static void policy_added(json_t *o, void *userdata)
{
        notify(userdata, "policy", object_name(o), "added");
}

static void policy_updated(json_t *old, json_t *o, void *userdata)
{
        /* Annotation or status churn does not change what the node should look like. */
        if (json_equal(json_object_get(old, "spec"), json_object_get(o, "spec")))
                return;
        notify(userdata, "policy", object_name(o), "changed");
}

static void policy_deleted(json_t *o, void *userdata)
{
        notify(userdata, "policy", object_name(o), "deleted");
}

/* The own NodeState as the API server has it now: the writer repairs what others changed and
 * re-creates it when deleted (its own writes' echoes are recognised and ignored). */
static void own_state_added(json_t *o, void *userdata)
{
        struct kube_cluster *c = userdata;
        kube_nodestate_observe(c->nodestate, o);
}

static void own_state_updated(json_t *old, json_t *o, void *userdata)
{
        own_state_added(o, userdata);
}

static void own_state_deleted(json_t *o, void *userdata)
{
        struct kube_cluster *c = userdata;
        kube_nodestate_observe(c->nodestate, NULL);
}

static json_t *labels_of(json_t *o)
{
        return json_object_get(json_object_get(o, "metadata"), "labels");
}

static void node_added(json_t *o, void *userdata)
{
        notify(userdata, "node", object_name(o), "appeared");
}

static void node_updated(json_t *old, json_t *o, void *userdata)
{
        /* The kubelet rewrites the Node status every few seconds; only labels select policies. */
        json_t *a = labels_of(old), *b = labels_of(o);
        if ((!a && !b) || (a && b && json_equal(a, b)))
                return;
        notify(userdata, "node", object_name(o), "labels changed");
}

static void node_deleted(json_t *o, void *userdata)
{
        notify(userdata, "node", object_name(o), "deleted");
}

static void informer_synced(struct kube_informer *inf, void *userdata)
{
        struct kube_cluster *c = userdata;
        if (c->announced_sync || !kube_cluster_synced(c))
                return;
        c->announced_sync = true;
        log_info("API server %s: %zu policies in the namespace, node %s %s",
                 kube_http_server(c->http), kube_cache_size(kube_informer_cache(c->policies)),
                 c->node_name, kube_cluster_node(c) ? "found" : "not registered yet");
        if (c->on_change)
                c->on_change("initial sync", c->userdata);
}

int kube_cluster_new(sd_event *event, const struct kube_cluster_opts *opts,
                     struct kube_cluster **ret)
{
        if (!opts->node_name || !*opts->node_name)
                return log_error_errno(-EINVAL, "API client: a node name is required");
        const char *ns = opts->namespace_ ? opts->namespace_ : KUBE_DEFAULT_NAMESPACE;

        _cleanup_(kube_cluster_freep) struct kube_cluster *c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        c->on_change = opts->on_change;
        c->userdata = opts->userdata;
        c->node_name = strdup(opts->node_name);
        if (!c->node_name)
                /* cppcheck-suppress memleak ; _cleanup_ frees it */
                /* NOLINTNEXTLINE(clang-analyzer-unix.Malloc): _cleanup_ frees it */
                return -ENOMEM;

        int k = kube_config_load(opts->kubeconfig, &c->config);
        if (k < 0)
                return k; /* logged with file and field */
        if ((k = kube_http_new(event, c->config, &c->http)) < 0)
                return k;

        _cleanup_free_ char *policy_path = kube_policy_collection_path(ns);
        _cleanup_free_ char *node_path = kube_node_collection_path();
        _cleanup_free_ char *selector = NULL;
        if (!policy_path || !node_path ||
            asprintf(&selector, "metadata.name=%s", opts->node_name) < 0)
                return -ENOMEM;
        const struct kube_informer_opts policy_opts = {
                .kind = "SriovNetworkNodePolicy",
                .path = policy_path,
                .callbacks = { policy_added, policy_updated, policy_deleted, c },
                .on_synced = informer_synced,
                .synced_userdata = c,
        };
        const struct kube_informer_opts node_opts = {
                .kind = "Node",
                .path = node_path,
                .field_selector = selector,
                .callbacks = { node_added, node_updated, node_deleted, c },
                .on_synced = informer_synced,
                .synced_userdata = c,
                /* Only the labels select policies; a Node's status (images, conditions) is
                 * most of its size and rewritten every few seconds. */
                .cache_metadata_only = true,
        };
        if ((k = kube_informer_new(c->http, &policy_opts, &c->policies)) < 0 ||
            (k = kube_informer_new(c->http, &node_opts, &c->nodes)) < 0)
                return k;

        const struct kube_events_opts event_opts = { .component = "sriov-agent",
                                                     .host = opts->node_name };
        if ((k = kube_events_new(c->http, &event_opts, &c->events)) < 0)
                return k;
        const struct kube_nodestate_opts state_opts = { .namespace_ = ns,
                                                        .node_name = opts->node_name,
                                                        .events = c->events };
        if ((k = kube_nodestate_new(c->http, &state_opts, &c->nodestate)) < 0)
                return k;
        _cleanup_free_ char *state_path = NULL;
        if (asprintf(&state_path,
                     "/apis/sriovnetwork.openshift.io/v1/namespaces/%s/sriovnetworknodestates",
                     ns) < 0)
                return -ENOMEM;
        const struct kube_informer_opts state_informer_opts = {
                .kind = "SriovNetworkNodeState",
                .path = state_path,
                .field_selector = selector,
                .callbacks = { own_state_added, own_state_updated, own_state_deleted, c },
                /* The writer keeps what it needs of a changed object; the cache only tells
                 * versions apart (its status lists every VF: hundreds of KiB decoded). */
                .cache_metadata_only = true,
        };
        if ((k = kube_informer_new(c->http, &state_informer_opts, &c->own_state)) < 0)
                return k;

        /* SriovNetworks are rendered by one agent of the cluster (the Lease holder), when the
         * agents do it at all (else `sriov-agent nad-controller` does). */
        const struct kube_networks_opts net_opts = { .namespace_ = ns,
                                                     .identity = opts->node_name,
                                                     .resource_prefix = opts->resource_prefix,
                                                     .events = c->events };
        if (opts->render_nads && (k = kube_networks_new(c->http, &net_opts, &c->networks)) < 0)
                return k;

        if ((k = kube_informer_start(c->policies)) < 0 || (k = kube_informer_start(c->nodes)) < 0 ||
            (k = kube_informer_start(c->own_state)) < 0)
                return k;
        *ret = TAKE_PTR(c);
        return 0;
}

struct kube_cluster *kube_cluster_free(struct kube_cluster *c)
{
        if (!c)
                return NULL;
        /* Users of the HTTP layer first, then the layer, then its configuration. */
        kube_networks_free(c->networks);
        kube_informer_free(c->own_state);
        kube_nodestate_free(c->nodestate);
        kube_events_free(c->events);
        kube_informer_free(c->policies);
        kube_informer_free(c->nodes);
        kube_http_free(c->http);
        kube_config_free(c->config);
        free(c->node_name);
        free(c);
        return NULL;
}

bool kube_cluster_synced(const struct kube_cluster *c)
{
        return c->policies && c->nodes && kube_informer_has_synced(c->policies) &&
               kube_informer_has_synced(c->nodes);
}

json_t *kube_cluster_policies(struct kube_cluster *c)
{
        return kube_cache_objects(kube_informer_cache(c->policies));
}

json_t *kube_cluster_node(struct kube_cluster *c)
{
        return kube_cache_get(kube_informer_cache(c->nodes), NULL, c->node_name);
}

json_t *kube_cluster_node_labels(struct kube_cluster *c)
{
        return labels_of(kube_cluster_node(c));
}

struct kube_nodestate *kube_cluster_nodestate(struct kube_cluster *c)
{
        return c->nodestate;
}

struct kube_http *kube_cluster_http(struct kube_cluster *c)
{
        return c->http;
}

struct kube_events *kube_cluster_events(struct kube_cluster *c)
{
        return c->events;
}

struct kube_networks *kube_cluster_networks(struct kube_cluster *c)
{
        return c->networks;
}

int kube_cluster_release(struct kube_cluster *c, void (*done)(void *), void *userdata)
{
        if (!c->networks)
                return 1; /* nothing to hand back */
        return kube_networks_release(c->networks, done, userdata);
}
