/* SPDX-License-Identifier: Apache-2.0 */
/* The daemon's state and what its parts share (agent/ only).
 *
 * daemon.c owns the loop: event sources, signals, scheduling. reconcile.c runs one reconcile
 * at a time as a small state machine (prepare → apply rounds in a child process → finish), so
 * the loop keeps serving the kubelet and the API server while the kernel creates VFs; it takes
 * its decisions from lib/plan and reports its end through daemon.c's callback.
 * report.c says what happened: journal lines, NodeState and Events. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <systemd/sd-event.h>

#include "daemon.h"
#include "deviceplugin/rdma-shared-config.h"
#include "model/desired.h"
#include "model/inventory.h"
#include "plan/disruption.h"
#include "policy/policy-merge.h"

struct apply_report;
struct reconcile;

struct agent {
        struct agent_config config;
        sd_event *event;
        sd_event_source *debounce; /* one-shot: starts a reconcile */
        uint64_t debounce_last;    /* CLOCK_MONOTONIC of the last start by it (util/debounce.h) */
        bool converged;            /* the last reconcile left nothing to do, held or failed */
        unsigned quick_checks;     /* periodic checks answered by host_quick_check() in a row */
        sd_event_source *resync;   /* periodic drift check */
        sd_event_source *retry;    /* backoff after a failed PF */
        sd_event_source *policy_watch;
        struct dp_manager *plugins;
        struct link_monitor *links;   /* live /sys only */
        struct kube_cluster *cluster; /* cluster mode: policies, node labels, NodeState */
        struct inventory observed;    /* as of the last reconcile, to filter link events */

        struct string_pair *labels;
        size_t n_labels;
        struct rdma_shared_config rdma_shared;
        bool have_rdma_shared;   /* the last good RDMA shared config (none at start) */
        char *rdma_shared_text;  /* the file as last read, good or bad: reload on change only */
        char *rdma_shared_error; /* why the file as it is now is not used; NULL when it is */
        char *rdma_shared_error_posted; /* the error last sent as an Event */
        sd_event_source *rdma_shared_watch;

        int rdma_mode_now;         /* the kernel's RDMA netns mode, -1 unknown (no ib_core) */
        char *rdma_reboot_needed;  /* --rdma-mode written for the next boot: what to report */
        bool rdma_reboot_posted;   /* its Event was posted */

        int state_lock_fd;         /* --state-dir, flock()ed: one agent per state dir; -1 = none */
        struct reconcile *running; /* never two at once: a request meanwhile waits for it */
        bool reconcile_requested;
        bool ready_notified;
        uint64_t retry_usec;
        char *last_report;     /* policy statuses last logged, to log changes only */
        struct nic_list *nics; /* supported NIC models (built-in, files, ConfigMap) */
};

/* daemon.c */
int agent_schedule_reconcile(struct agent *a, const char *why);

/* reconcile.c */
/* How a reconcile ended, for the daemon's retry: n_failed PFs failed, n_left changes are still
 * due after the apply rounds, stopped: the reconcile itself could not go on (it logged why). */
struct reconcile_outcome {
        size_t n_failed;
        size_t n_left;
        bool stopped;
};
/* Runs once a reconcile has ended and its state is freed. */
typedef void (*reconcile_done_fn)(const struct reconcile_outcome *outcome, void *userdata);
/* Starts a reconcile unless one is running or the inputs are not known yet (the cluster's
 * initial sync, the supported-NIC list): their arrival schedules one. done may run before
 * this returns (a reconcile that fails or has nothing to ask the kubelet). */
void reconcile_start(struct agent *a, reconcile_done_fn done, void *userdata);
/* On shutdown: stops an apply in progress (its child finishes the kernel write it is in). */
void reconcile_abort(struct agent *a);

/* nic-list.c */
struct nic_list;
int nic_list_new(struct agent *a, struct nic_list **ret);
struct nic_list *nic_list_free(struct nic_list *l);
/* false until the cluster's supported-nic-ids ConfigMap has been read once (or given up on). */
bool nic_list_ready(const struct nic_list *l);
const struct supported_nics *nic_list_get(const struct nic_list *l);

/* rdma-mode.c */
/* At start: reads the kernel's RDMA netns mode and brings about --rdma-mode (not with
 * --dry-run); what cannot be set now is written for the next boot and reported. */
void rdma_mode_start(struct agent *a);
/* The mode as the kernel has it now, for the NodeState (cheap: one netlink request). */
void rdma_mode_refresh(struct agent *a);

/* report.c */
void report_policies(struct agent *a, const struct policy_report *rep);
void report_held(const struct guarded_plan *g);
struct node_status;
/* desired: NULL keeps the spec as it is (a reconcile that stopped before building it). */
void report_node_state(struct agent *a, const struct desired_state *desired,
                       const struct inventory *inv, const struct guarded_plan *guarded,
                       const struct node_status *status);
