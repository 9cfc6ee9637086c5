/* SPDX-License-Identifier: Apache-2.0 */
/* Kubernetes Events (core/v1) about our objects, deduplicated.
 *
 * The agent reports an invalid or conflicting policy (reasons InvalidPolicy /
 * ConflictingPolicy) on the policy object and sync status changes (SyncStatusChanged) on its
 * SriovNetworkNodeState. A broken policy is re-evaluated on every resync, so the same
 * object+reason+message is posted once; repeats only raise a local count, which is written to
 * the existing Event (count, lastTimestamp) at most once per repeat interval (default 10 min).
 * Floods are bounded like client-go's event recorder and the kubelet's correlator: per involved
 * object a burst of 25 then one per 5 minutes, for all objects a burst of 50 then one per
 * second (a suppressed new report is not remembered: a later identical report tries again);
 * more than 10 distinct messages for one object and reason within 10 minutes become one
 * "(combined from similar events): ..." Event whose count grows; a failed POST is remembered
 * and retried only after a backoff (1 s doubling to 5 min), whatever the reconcile rate.
 * Posting is asynchronous and best effort: failures are logged, never returned to the caller
 * after the request started. The Event lives in the involved object's namespace. */
#pragma once

#include <jansson.h>
#include <stdint.h>

#include "kube/http.h"

#define KUBE_EVENT_REASON_INVALID_POLICY     "InvalidPolicy"
#define KUBE_EVENT_REASON_CONFLICTING_POLICY "ConflictingPolicy"
#define KUBE_EVENT_REASON_SYNC_STATUS        "SyncStatusChanged"

struct kube_object_ref {
        const char *api_version; /* "sriovnetwork.openshift.io/v1" */
        const char *kind;        /* "SriovNetworkNodePolicy" */
        const char *namespace_;  /* NULL for cluster-scoped objects ("default" is used) */
        const char *name;
        const char *uid; /* optional */
};

struct kube_events_opts {
        const char *component;         /* source.component, e.g. "sriov-agent" */
        const char *host;              /* source.host: the node name */
        uint64_t repeat_interval_usec; /* 0 = 10 minutes */
};

struct kube_events;

int kube_events_new(struct kube_http *http, const struct kube_events_opts *opts,
                    struct kube_events **ret);
struct kube_events *kube_events_free(struct kube_events *ev);
static inline void kube_events_freep(struct kube_events **e)
{
        kube_events_free(*e);
}

/* type: "Normal" or "Warning". Returns 0 when posted, queued as a repeat, or suppressed. */
int kube_events_post(struct kube_events *ev, const struct kube_object_ref *object, const char *type,
                     const char *reason, const char *message);
/* Fills ref from an object as the API returns it (strings borrowed from object). */
int kube_object_ref_from_json(json_t *object, struct kube_object_ref *ref);
/* Reports suppressed by the rate limits so far. */
unsigned kube_events_suppressed(const struct kube_events *ev);
/* Requests still on the wire (tests wait for 0). */
unsigned kube_events_in_flight(const struct kube_events *ev);
