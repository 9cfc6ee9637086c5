/* SPDX-License-Identifier: Apache-2.0 */
/* Leader election over a coordination.k8s.io/v1 Lease, as client-go's leaderelection does, but
 * cheap for the candidates.
 *
 * Every agent runs one; at most one holds the Lease and is the leader. A candidate does not poll
 * the Lease (client-go GETs it every 2 s: 150,000 requests/min at 5,000 nodes): it watches it
 * (list+watch with fieldSelector metadata.name, from the API server's watch cache) and tries to
 * take it (update with the resourceVersion it saw, so two candidates cannot both win) only when
 * it is free (absent, or holderIdentity "") after a jitter of up to a retry period, or when it
 * has not changed for leaseDurationSeconds as seen on the candidate's own clock (so clock skew
 * between nodes does not matter), plus the same jitter. A conflict (409) reads it again (GET);
 * a leader whose renewal got the 409 resigns only when that read names another holder, and
 * otherwise renews again with the resourceVersion it just read.
 * The leader renews every renew period (10 s); failed renewals are retried every retry period
 * (2 s). The renew deadline (20 s) is a timer of its own, counted from when the last renewal
 * that succeeded was sent: when it fires, whatever the renewal is doing (queued behind a 429's
 * Retry-After, in flight, being retried), the request is cancelled and on_change(false) is
 * called, before the others may take over (the lease duration, 30 s, counted on their clocks
 * from when they saw that renewal, which cannot precede its sending). So the duration must
 * exceed the renew deadline by more than KUBE_LEASE_SKEW_MARGIN_USEC (timer slack, a busy event
 * loop, clock rates), and the renew deadline must exceed 1.2 retry periods (client-go's rules
 * plus that margin); kube_lease_new() refuses other timings with -EINVAL.
 * kube_lease_release() hands the Lease back at shutdown (holder "", duration 1 s) so a
 * successor takes over within a retry period. RBAC: get, list, watch, create, update on
 * leases. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kube/http.h"

struct kube_lease;

/* How much longer than the renew deadline the lease must last. */
#define KUBE_LEASE_SKEW_MARGIN_USEC (1000ULL * 1000)

struct kube_lease_opts {
        const char *namespace_;
        const char *name;
        const char *identity;         /* holderIdentity: the node name */
        uint64_t duration_usec;       /* 0 = 30 s; whole seconds (leaseDurationSeconds) */
        uint64_t renew_deadline_usec; /* 0 = 20 s */
        uint64_t retry_usec;          /* 0 = 2 s: failed requests, acquisition jitter */
        uint64_t renew_period_usec;   /* 0 = 10 s: the leader's renewals; < renew deadline */
        /* Called on every change of leadership. */
        void (*on_change)(struct kube_lease *lease, bool leader, void *userdata);
        void *userdata;
        /* What the timings are called where the user sets them (e.g. "--lease-duration"), for
         * error messages; NULL: "lease duration", "renew deadline", "retry period", "renew
         * period". */
        const char *duration_name, *renew_deadline_name, *retry_name, *renew_period_name;
};

/* The checks kube_lease_new() makes of opts' timings (0 fields taken as their defaults): 0, or
 * -EINVAL with why (NUL-terminated, may be truncated) naming the setting and the rule. */
int kube_lease_check_timings(const struct kube_lease_opts *opts, char *why, size_t why_size);

int kube_lease_new(struct kube_http *http, const struct kube_lease_opts *opts,
                   struct kube_lease **ret);
int kube_lease_start(struct kube_lease *lease);
struct kube_lease *kube_lease_free(struct kube_lease *lease);
static inline void kube_lease_freep(struct kube_lease **l)
{
        kube_lease_free(*l);
}

/* Whether it holds the Lease and its last renewal is within the renew deadline (checked on the
 * clock, not only by the step-down's timer). */
bool kube_lease_is_leader(const struct kube_lease *lease);
/* Stops competing. A leader gives the Lease up (one write) and calls done when that finished
 * or failed; returns 1 when done was already called (nothing to release), 0 when pending. */
int kube_lease_release(struct kube_lease *lease, void (*done)(void *userdata), void *userdata);
