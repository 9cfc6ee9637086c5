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
 *   A reconcile that stopped early (discovery, the policies, the state directory, the
 *   kubelet query or the apply process failed) is Failed too, its reason first ("discovery:
 *   <error>"): without it the NodeState would keep the previous status, Succeeded perhaps.
 * - else InProgress while the disruption guard holds a PF's changes back (not with
 *   --allow-disruption, where nothing is held): "held back until the VFs are free: <reason>"
 *   per held PF, the reason naming the PF, its netdev, the change and the pods in the way.
 * - else InProgress while the plan still has changes of PFs that are not held: after the
 *   apply rounds (apply_rounds_over(); the daemon reconciles again soon), "N change(s) left
 *   after the apply rounds, applying again: <PF> (<netdev>): <action> -> <value>, ... and M
 *   more" (NODE_STATUS_ACTIONS_LISTED listed); with --dry-run, where nothing is applied,
 *   "dry run: N change(s) planned, not applied: ...". Upstream's
 *   InProgress means exactly this: the node does not match its spec yet.
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
        /* The plan's changes that are due but not applied (of PFs not held; 0 with --dry-run):
         * the daemon reconciles again soon (with backoff) instead of waiting for its periodic
         * check. */
        size_t n_left;
};

/* What a reconcile found. Every pointer may be NULL: nothing applied, no plan, nothing held,
 * the RDMA shared config used, the reconcile ran to its end. */
struct node_status_facts {
        const struct apply_report *applied; /* the last apply round's report */
        const struct plan *plan;            /* the last plan: what is left */
        const struct guarded_plan *guarded; /* what the disruption guard held of it */
        const char *rdma_shared_error;      /* why the RDMA shared config file is not used */
        const char *stopped; /* why the reconcile stopped early: "discovery: <error>" */
        /* --rdma-mode could not be set now (other network namespaces exist) and is written for
         * the next boot: InProgress with this text until the node is rebooted */
        const char *rdma_reboot_needed;
        bool dry_run; /* --dry-run: the plan's actions are not applied */
};

/* How many actions of PFs an InProgress message lists before "and N more". */
#define NODE_STATUS_ACTIONS_LISTED 4

void node_status_decide(const struct node_status_facts *facts, struct node_status *ret);

/* A Warning Event to post on the NodeState (strings borrowed from the inputs). */
struct node_event {
        const char *reason; /* "DisruptionHeld", "InvalidRdmaSharedConfig", "RebootNeeded" */
        const char *message;
};

struct node_events {
        struct node_event *events;
        size_t n_events, cap_events;
};

void node_events_done(struct node_events *e);

/* What node_events_decide() weighs besides the plan: the whole-card RDMA config's error and
 * the --rdma-mode reboot notice, each with what was posted already. */
struct node_event_facts {
        const char *rdma_shared_error;
        const char *rdma_error_posted; /* NULL: none posted */
        const char *rdma_reboot_needed;
        bool rdma_reboot_posted;
};

/* The Events after a reconcile: "RebootNeeded" with rdma_reboot_needed (the kernel refused the
 * RDMA mode with EBUSY; once per agent run, as the notice does not change while it runs), then
 * "InvalidRdmaSharedConfig" with rdma_shared_error when it is not the one last posted (an
 * unchanged error is posted once), then "DisruptionHeld" with each held PF's reason on every
 * reconcile that holds it (none with --allow-disruption). 0 or -ENOMEM. */
int node_events_decide(const struct guarded_plan *guarded, const struct node_event_facts *facts,
                       struct node_events *ret);

/* "Succeeded", "InProgress", "Failed": the syncStatus values. */
const char *node_sync_status_to_string(enum node_sync_status s);
