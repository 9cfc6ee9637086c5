/* SPDX-License-Identifier: Apache-2.0 */
/* Everything the node daemon needs from the API server, behind one object.
 *
 * kube_cluster_new() loads the credentials (kubeconfig or in-cluster), binds HTTP to the
 * daemon's sd-event loop and starts two informers: SriovNetworkNodePolicies in the namespace
 * and this node's Node object (field selector metadata.name=NODE). It also owns the node's
 * SriovNetworkNodeState writer and the Event sink, ready for the daemon to use, and a third
 * informer on that NodeState (field selector on its name) so that an edit or deletion behind
 * the agent's back is repaired at once (kube_nodestate_observe), without periodic GETs.
 *
 * on_change tells the daemon to reconcile, and only when it matters: once both informers have
 * completed their first list ("initial sync" — never reconcile before, or an empty cache would
 * look like "no policies"), when a policy is added or deleted or its spec changes, and when the
 * node's labels change (not on the kubelet's periodic status updates). Getters return the
 * current cache contents, borrowed until control returns to the loop. on_change may post
 * Events and set the NodeState, but must not free the cluster. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <systemd/sd-event.h>

#include "kube/events.h"
#include "kube/nodestate.h"

#define KUBE_DEFAULT_NAMESPACE "sriov-network-operator"

struct kube_cluster_opts {
        const char *kubeconfig; /* NULL: $KUBECONFIG, in-cluster, ~/.kube/config */
        const char *namespace_; /* NULL: KUBE_DEFAULT_NAMESPACE */
        const char *node_name;
        const char *resource_prefix; /* NADs' resourceName annotation; NULL = "openshift.io" */
        /* Also campaign for the NAD Lease and render SriovNetworks while holding it
         * (kube/networks.h): small setups without `sriov-agent nad-controller`. */
        bool render_nads;
        /* why: a short phrase for the log ("policy p1 spec changed", "node labels changed"). */
        void (*on_change)(const char *why, void *userdata);
        void *userdata;
};

struct kube_cluster;

int kube_cluster_new(sd_event *event, const struct kube_cluster_opts *opts,
                     struct kube_cluster **ret);
struct kube_cluster *kube_cluster_free(struct kube_cluster *c);
static inline void kube_cluster_freep(struct kube_cluster **c)
{
        kube_cluster_free(*c);
}

/* True once policies and the node have both been listed. */
bool kube_cluster_synced(const struct kube_cluster *c);
/* Policies keyed "namespace/name" → SriovNetworkNodePolicy object. */
json_t *kube_cluster_policies(struct kube_cluster *c);
/* The Node object, NULL while it does not exist (yet). */
json_t *kube_cluster_node(struct kube_cluster *c);
/* metadata.labels of the Node, NULL when unknown. */
json_t *kube_cluster_node_labels(struct kube_cluster *c);

struct kube_nodestate *kube_cluster_nodestate(struct kube_cluster *c);
/* The HTTP client the informers use, for the daemon's own informers (borrowed). */
struct kube_http *kube_cluster_http(struct kube_cluster *c);
struct kube_events *kube_cluster_events(struct kube_cluster *c);
/* The SriovNetwork → NAD controller (kube/networks.h), NULL without render_nads; active only
 * on the Lease holder. */
struct kube_networks *kube_cluster_networks(struct kube_cluster *c);
/* Shutdown: hands the networks Lease back; done runs when finished (at once, returning 1,
 * when there is nothing to release). */
int kube_cluster_release(struct kube_cluster *c, void (*done)(void *userdata), void *userdata);
