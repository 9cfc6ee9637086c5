/* SPDX-License-Identifier: Apache-2.0 */
/* SriovNetwork → NetworkAttachmentDefinition controller (cluster mode), one writer per cluster.
 *
 * Every agent runs one; only the holder of the Lease "sriov-agent-networks" in the agent's
 * namespace acts. While it leads it watches the SriovNetworks of its namespace, all NADs and
 * all Namespaces, and brings every NAD to what nad_render() makes of its SriovNetwork, one
 * request at a time, writing only what differs (so an idle cluster sees no writes):
 * - a finalizer (netattdef.finalizers.sriovnetwork.openshift.io) on each SriovNetwork, so its
 *   deletion removes the NAD even while no agent runs; then the finalizer is removed;
 * - NAD missing → created (when its namespace exists, else Ready=False NamespaceNotFound until
 *   the Namespace appears); hand edits reverted, hand deletes recreated; a NAD owned by another
 *   network (owner-ref annotation) is never touched; an unannotated one is adopted (log + Event);
 * - spec.networkNamespace moved → the old NAD (if ours) is deleted; the last target is kept in
 *   the annotation operator.sriovnetwork.openshift.io/last-network-namespace, as upstream;
 * - status.conditions Ready (NetworkReady, NetworkAttachmentDefinitionInvalid,
 *   NamespaceNotFound), with an Event on each transition naming the problem (the field, for
 *   invalid input).
 * Failed requests are retried per network with backoff (0.5 s doubling to 30 s). */
#pragma once

#include <stdbool.h>

#include "kube/events.h"
#include "kube/http.h"

#define KUBE_NETWORK_FINALIZER "netattdef.finalizers.sriovnetwork.openshift.io"
#define KUBE_NETWORK_LAST_NS   "operator.sriovnetwork.openshift.io/last-network-namespace"
#define KUBE_NETWORKS_LEASE    "sriov-agent-networks"

struct kube_networks;

struct kube_networks_opts {
        const char *namespace_;      /* the agent's: SriovNetworks and the Lease live here */
        const char *identity;        /* Lease holder: the node name */
        const char *resource_prefix; /* NULL = "openshift.io" */
        struct kube_events *events;
};

int kube_networks_new(struct kube_http *http, const struct kube_networks_opts *opts,
                      struct kube_networks **ret);
struct kube_networks *kube_networks_free(struct kube_networks *n);
static inline void kube_networks_freep(struct kube_networks **n)
{
        kube_networks_free(*n);
}

bool kube_networks_leader(const struct kube_networks *n);
/* Shutdown: stop writing and give the Lease back; done runs when that finished (or at once,
 * return 1, when this agent did not lead). */
int kube_networks_release(struct kube_networks *n, void (*done)(void *userdata), void *userdata);
/* NAD and SriovNetwork writes sent so far. */
unsigned kube_networks_writes(const struct kube_networks *n);
