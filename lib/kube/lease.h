/* Leader election over a coordination.k8s.io/v1 Lease, as client-go's leaderelection does.
 *
 * Every agent runs one; at most one holds the Lease and is the leader. A candidate reads the
 * Lease every retry period (2 s, +20 % jitter) and takes it (update with the resourceVersion it
 * read, so two candidates cannot both win) when it is free (no holder, or holderIdentity "")
 * or has not changed for leaseDurationSeconds as seen on the candidate's own clock (so clock
 * skew between nodes does not matter). The leader renews every retry period; when it has not
 * managed to renew for the renew deadline (10 s) it stops leading before the others may take
 * over (15 s). kube_lease_release() hands the Lease back at shutdown (holder "", duration 1 s)
 * so a successor takes over within one retry period instead of the full duration. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "kube/http.h"

struct kube_lease;

struct kube_lease_opts {
        const char *namespace_;
        const char *name;
        const char *identity;         /* holderIdentity: the node name */
        uint64_t duration_usec;       /* 0 = 15 s */
        uint64_t renew_deadline_usec; /* 0 = 10 s */
        uint64_t retry_usec;          /* 0 = 2 s */
        /* Called on every change of leadership. */
        void (*on_change)(struct kube_lease *lease, bool leader, void *userdata);
        void *userdata;
};

int kube_lease_new(struct kube_http *http, const struct kube_lease_opts *opts,
                   struct kube_lease **ret);
int kube_lease_start(struct kube_lease *lease);
struct kube_lease *kube_lease_free(struct kube_lease *lease);
static inline void kube_lease_freep(struct kube_lease **l)
{
        kube_lease_free(*l);
}

bool kube_lease_is_leader(const struct kube_lease *lease);
/* Stops competing. A leader gives the Lease up (one write) and calls done when that finished
 * or failed; returns 1 when done was already called (nothing to release), 0 when pending. */
int kube_lease_release(struct kube_lease *lease, void (*done)(void *userdata), void *userdata);
