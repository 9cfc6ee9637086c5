/* SPDX-License-Identifier: Apache-2.0 */
/* This node's SriovNetworkNodeState: the desired state (spec) and what was found and done
 * (status), written to the API server.
 *
 * The object is named after the node, in the agent's namespace, and created if missing. The
 * caller sets the desired spec and the status parts at any time; a background writer (one
 * request at a time, in the sd-event loop) brings the server copy up to date with merge
 * patches — spec on the object, status through the /status subresource — carrying the
 * resourceVersion it last saw, so a concurrent change yields 409 and the writer refetches and
 * recomputes. Whether to write is decided against what the server last acknowledged from us
 * (as we sent it), not against its echo: an API server may prune or default what it stores
 * (upstream's CRD prunes unknown status fields), and comparing with the echo would write the
 * same body forever. So the same body is never written twice in a row, and a changed object
 * (another resourceVersion than our last write's echo, or a re-created one) is compared with
 * afresh. Nothing is written when only status.interfaces[].Vfs differ (VF details churn; as
 * upstream, they ride along with the next real change). Writes are paced to at most one per
 * write interval (1 s); a Failed status is never coalesced away by the pacing (a status
 * arriving while it waits is written after it). Status fields that upstream's CRD lacks (numaNode,
 * iommuGroup, rdmaDevices, error, ...) go to the KUBE_NODESTATE_EXTRA_ANNOTATION annotation as JSON
 * keyed by PF (and VF) PCI address, so status keeps upstream's field set and any schema keeps them.
 * A 404 naming the object re-creates it (backing off when that repeats within a minute); a
 * 404 for the resource itself (no CRD, no /status) is reported and retried with backoff; a
 * 400/422 refusal is logged once and not retried until the desired state changes (or after
 * 5 min); 429/503 honour Retry-After. A change of syncStatus
 * posts a SyncStatusChanged Event on the NodeState when an events sink is given.
 * Transport and server errors are retried with backoff (0.5 s doubling to 30 s). */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "kube/events.h"
#include "kube/http.h"

enum kube_sync_status {
        KUBE_SYNC_IN_PROGRESS,
        KUBE_SYNC_SUCCEEDED,
        KUBE_SYNC_FAILED,
        _KUBE_SYNC_STATUS_MAX,
};

const char *kube_sync_status_to_string(enum kube_sync_status s);
int kube_sync_status_from_string(const char *s); /* -EINVAL if unknown */

struct kube_nodestate;

struct kube_nodestate_opts {
        const char *namespace_; /* NULL = "sriov-network-operator" */
        const char *node_name;
        struct kube_events *events; /* optional: SyncStatusChanged events */
        /* Called whenever the writer goes idle (error 0: the server matches what was set) or a
         * write failed (error < 0; a retry is already scheduled). */
        void (*on_result)(struct kube_nodestate *state, int error, void *userdata);
        void *userdata;
        uint64_t write_interval_usec; /* 0 = 1 s */
};

#define KUBE_NODESTATE_EXTRA_ANNOTATION "sriovnetwork.openshift.io/status-extra"

/* Splits discovered interfaces into upstream's field set (a new array) and the rest, as the
 * compact JSON text of the annotation (NULL when nothing is left over). */
/* The kernel's RDMA network namespace mode ("shared", "exclusive"; NULL: unknown), written as
 * status.system.rdmaMode (upstream's field) with the next kube_nodestate_set_status(). */
int kube_nodestate_set_rdma_mode(struct kube_nodestate *st, const char *mode);

int kube_nodestate_split_interfaces(json_t *interfaces, json_t **ret_upstream, char **ret_extra);

int kube_nodestate_new(struct kube_http *http, const struct kube_nodestate_opts *opts,
                       struct kube_nodestate **ret);
struct kube_nodestate *kube_nodestate_free(struct kube_nodestate *state);
static inline void kube_nodestate_freep(struct kube_nodestate **s)
{
        kube_nodestate_free(*s);
}

/* The whole desired spec (takes its own reference; keys absent here are removed). */
int kube_nodestate_set_spec(struct kube_nodestate *state, json_t *spec);
/* status.interfaces (own reference taken), syncStatus and lastSyncError (NULL = ""). Other
 * status fields on the server are left as they are. */
int kube_nodestate_set_status(struct kube_nodestate *state, json_t *interfaces,
                              enum kube_sync_status sync_status, const char *last_sync_error);
/* The same, with node-level facts upstream's status lacks (a JSON object, NULL = none) added
 * to the KUBE_NODESTATE_EXTRA_ANNOTATION annotation next to the PCI-keyed ones. */
int kube_nodestate_set_status_extra(struct kube_nodestate *state, json_t *interfaces,
                                    json_t *node_extra, enum kube_sync_status sync_status,
                                    const char *last_sync_error);

/* The object as a watch on it delivers it (NULL: deleted). A resourceVersion this writer has
 * not read, written or adopted before means someone else changed it: the writer compares
 * afresh and repairs it (at most one write), or re-creates it. One it has (the late event of
 * its own earlier write, on a slow server) is ignored: it is not newer than what we wrote. */
void kube_nodestate_observe(struct kube_nodestate *state, json_t *object);

/* True while a write is pending or on the wire. */
bool kube_nodestate_busy(const struct kube_nodestate *state);
/* The object as the server last returned it, or NULL (borrowed): for its metadata. Once the
 * server holds the status set, status.interfaces is not kept in it (the writer holds that status
 * as text until it changes). */
json_t *kube_nodestate_object(const struct kube_nodestate *state);
/* Number of PATCH/POST writes sent so far (lets tests prove "no write when unchanged"). */
unsigned kube_nodestate_writes(const struct kube_nodestate *state);
