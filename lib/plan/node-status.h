/* SPDX-License-Identifier: Apache-2.0 */
/* The NodeState's syncStatus and lastSyncError after a reconcile (agent/report.c writes them,
 * with the discovered interfaces, through lib/kube/nodestate.h).
 *
 * - Failed when anything failed, lastSyncError listing every failure ("; " between them):
 *   each PF of the apply report with an error, as its message says it ("PF <pci>: <action>:
 *   <error>[: <hint>]"; a PF frozen by an unusable state record is one, see
 *   apply_report_add_frozen()); each plan problem that fails its PF until the user acts
 *   (pf_failed: "PF <pci>: <message>"); an RDMA shared config that is not used ("RDMA shared
 *   config not used: <why>").
 * - else InProgress while the disruption guard holds a PF's changes back (not with
 *   --allow-disruption, where nothing is held): "held back until the VFs are free: <reason>"
 *   per held PF, the reason naming the PF, its netdev, the change and the pods in the way.
 * - else Succeeded with lastSyncError "".
 * Decided from this reconcile's facts alone: a failure that persists is Failed again on every
 * reconcile, and a held change never hides it (the held PFs then only have their
 * DisruptionHeld Events). lastSyncError is cut at NODE_STATUS_MESSAGE_MAX - 1 bytes. Pure. */
#pragma once

#include "plan/apply-report.h"
#include "plan/disruption.h"
#include "plan/plan.h"

enum node_sync_status {
        NODE_SYNC_SUCCEEDED,
        NODE_SYNC_IN_PROGRESS,
        NODE_SYNC_FAILED,
};

#define NODE_STATUS_MESSAGE_MAX 2048

struct node_status {
        enum node_sync_status sync;
        char message[NODE_STATUS_MESSAGE_MAX]; /* lastSyncError */
};

/* applied: the last apply round's report (empty when nothing was applied); plan: the last
 * plan, or NULL; guarded: what the disruption guard held of it; rdma_shared_error: why the RDMA
 * shared config file is not used, or NULL. */
void node_status_decide(const struct apply_report *applied, const struct plan *plan,
                        const struct guarded_plan *guarded, const char *rdma_shared_error,
                        struct node_status *ret);

/* A Warning Event to post on the NodeState (strings borrowed from the inputs). */
struct node_event {
        const char *reason; /* "DisruptionHeld", "InvalidRdmaSharedConfig" */
        const char *message;
};

struct node_events {
        struct node_event *events;
        size_t n_events, cap_events;
};

void node_events_done(struct node_events *e);

/* The Events after a reconcile: "InvalidRdmaSharedConfig" with rdma_shared_error when it is
 * not the one last posted (rdma_error_posted, NULL: none; an unchanged error is posted once),
 * then "DisruptionHeld" with each held PF's reason on every reconcile that holds it (none
 * with --allow-disruption). 0 or -ENOMEM. */
int node_events_decide(const struct guarded_plan *guarded, const char *rdma_shared_error,
                       const char *rdma_error_posted, struct node_events *ret);

/* "Succeeded", "InProgress", "Failed": the syncStatus values. */
const char *node_sync_status_to_string(enum node_sync_status s);
