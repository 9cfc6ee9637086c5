/* SPDX-License-Identifier: Apache-2.0 */
/* SriovNetwork → NetworkAttachmentDefinition controller (cluster mode), one writer per cluster.
 *
 * `sriov-agent nad-controller` runs one per replica (and `run --nad-controller on`, for small
 * or standalone setups); only the holder of the Lease "sriov-agent-networks" in its namespace
 * acts. While it leads it watches the SriovNetworks of its namespace, the NADs it rendered
 * (label selector NAD_LABEL_SELECTOR, nad/decide.h) and all Namespaces, and brings every NAD
 * to what nad_render() makes of its SriovNetwork, one request at a time, writing only what
 * differs (so an idle cluster sees no writes). What to do is decided by nad_decide() (pure:
 * ownership, finalizer, namespace moves, the Ready condition and its Event); this file does
 * the I/O: the watches, the GET of any NAD the watch cannot show (not labelled: foreign, or
 * rendered by an earlier version; or cached as a stub), trusted for 60 s or, for a stub, for
 * the version it stands for; the writes, each guarded by the resourceVersion it was decided
 * on (DELETE with preconditions); a NAD that could not be read is never written (the network
 * says NetworkAttachmentDefinitionUnreadable and the read is retried with the backoff).
 * Failed requests are retried per network with backoff (0.5 s doubling to 30 s). */
#pragma once

#include <stdbool.h>

#include "kube/events.h"
#include "kube/http.h"

#define KUBE_NETWORKS_LEASE "sriov-agent-networks"

struct kube_networks;

struct kube_networks_opts {
        const char *namespace_;      /* SriovNetworks and the Lease live here */
        const char *identity;        /* Lease holder: the pod (or node) name */
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
