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
#include "deviceplugin/podresources.h"
#include "deviceplugin/pool.h"
#include "deviceplugin/rdma-shared-config.h"
#include "metrics/histogram.h"
#include "model/desired.h"
#include "model/inventory.h"
#include "plan/disruption.h"
#include "policy/policy-merge.h"

struct apply_report;
struct prepare_job;
struct reconcile;
struct httpd;
struct host_rdma_names;

enum agent_reconcile_result {
        AGENT_RECONCILE_OK,
        AGENT_RECONCILE_FAILED,       /* a PF failed */
        AGENT_RECONCILE_CHANGES_LEFT, /* changes due after the apply rounds */
        AGENT_RECONCILE_STOPPED,      /* the reconcile could not go on */
        _AGENT_RECONCILE_RESULT_MAX,
};

/* The agent's own work, for the metrics endpoint (agent/metrics.c). */
struct agent_stats {
        uint64_t reconciles[_AGENT_RECONCILE_RESULT_MAX];
        struct metrics_histogram reconcile_seconds;
        int last_result;           /* enum agent_reconcile_result */
        double last_end_seconds;   /* CLOCK_REALTIME; 0 before the first */
        uint64_t started_usec;     /* CLOCK_MONOTONIC start of the one running */
        uint64_t started_cpu_usec; /* the process's CPU time then: the debug log's figure */
};

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
        struct link_monitor *links;          /* rtnetlink link events */
        struct host_uevent_monitor *uevents; /* PCI remove/unbind/bind (a vfio VF has no link) */
        struct kube_cluster *cluster;        /* cluster mode: policies, node labels, NodeState */
        struct inventory observed;           /* as of the last reconcile, to filter link events */

        struct string_pair *labels;
        size_t n_labels;
        struct rdma_shared_config rdma_shared;
        bool have_rdma_shared;   /* the last good RDMA shared config (none at start) */
        char *rdma_shared_text;  /* the file as last read, good or bad: reload on change only */
        char *rdma_shared_error; /* why the file as it is now is not used; NULL when it is */
        char *rdma_shared_error_posted; /* the error last sent as an Event */
        sd_event_source *rdma_shared_watch;
        /* Where the whole-card config comes from: "file PATH", "ConfigMap NS/NAME key
         * config.json", or NULL (none); journal and NodeState say it. */
        char *rdma_shared_source;
        struct rdma_configmap *rdma_configmap; /* cluster mode: the ConfigMap followed */
        /* Without an inotify instance (the user's fs.inotify.max_user_instances used up by
         * other daemons) the watched files are polled instead (agent/daemon.c). */
        sd_event_source *file_poll;
        bool poll_policy_dir, poll_rdma_shared;
        uint64_t policy_dir_fingerprint;
        bool polling_notice_posted; /* the NodeState's Event saying so */

        int rdma_mode_now;       /* the kernel's RDMA netns mode, -1 unknown (no ib_core) */
        int rdma_mode_next_boot; /* the mode the next boot loads (rdma-boot.h), -1 unknown */
        /* the modprobe.d file deciding it; "" the kernel's default */
        char rdma_mode_next_boot_source[4096];
        char *rdma_reboot_needed; /* --rdma-mode not live now: what to report */
        bool rdma_reboot_posted;  /* its Event was posted */

        int state_lock_fd;         /* --state-dir, flock()ed: one agent per state dir; -1 = none */
        struct reconcile *running; /* never two at once: a request meanwhile waits for it */
        bool reconcile_requested;
        bool ready_notified;
        sd_event_source *ready_timer; /* --ready-timeout: READY=1 even if the boot apply hangs */
        bool api_reconciled;          /* a reconcile from the API's policies has started */
        bool boot_applied;            /* a reconcile from the records has finished */
        uint64_t retry_usec;
        char *last_report;               /* policy statuses last logged, to log changes only */
        struct nic_list *nics;           /* supported NIC models (built-in, files, ConfigMap) */
        struct link_health *link_health; /* each served PF's up/down, as last reported */
        struct httpd *metrics;           /* --metrics-listen; NULL when off */
        struct metrics_podres *metrics_podres; /* scrapes' shared PodResources answer */
        size_t metrics_last_len;               /* the last exposition's size, for the next */
        struct host_rdma_names *rdma_names;    /* scrapes' RDMA counter names, in their order */
        size_t n_rdma_names, cap_rdma_names;
        struct agent_stats stats;
        int sync_status; /* enum node_sync_status of the last reconcile, -1 before */

        char **dra_resources; /* --dra-resources: resource names served through DRA */
        size_t n_dra_resources;
        struct dra_plugin *dra;       /* NULL when no resource is served through DRA */
        struct dp_pool_set dra_pools; /* the pools cut out of the device plugin's */
        struct kube_slices *slices;   /* cluster mode: this node's ResourceSlices */
        struct prepare_job *dra_jobs; /* NodePrepareResources calls reading claims */
        struct dp_usage dra_held;     /* DRA resources' VFs pods hold through the device plugin */
        struct dp_podresources_call *dra_held_call;
        /* No slice is published before the kubelet has said which VFs pods hold (agent/dra.c):
         * known once it answered (or there is no kubelet to ask); gave_up once it had not
         * answered within DRA_HELD_WAIT_USEC of the first ask. The timer asks again meanwhile. */
        bool dra_held_known, dra_held_gave_up;
        uint64_t dra_held_deadline; /* CLOCK_MONOTONIC µs */
        sd_event_source *dra_held_timer;
        void (*dra_drained)(void *userdata); /* agent_dra_drain()'s done, until it ran */
        /* DRA resources left out of the slices ([{resourceName, reason}], agent/dra.c), for
         * the NodeState; and the ones whose Event was posted. */
        json_t *dra_rejected, *dra_rejected_posted;

        /* SIGTERM/SIGINT: the kubelet's connections are drained before anything else stops
         * (daemon.c on_terminate); no reconcile starts any more. */
        bool stopping;
        unsigned n_draining; /* device plugin and DRA driver not drained yet */
        uint64_t stop_usec;  /* CLOCK_MONOTONIC of the signal */
};

/* daemon.c */
int agent_schedule_reconcile(struct agent *a, const char *why);
/* READY=1 to systemd, once: after the first reconcile (or the boot apply of the records), or
 * when --ready-timeout runs out first; why says which, in the journal. */
void agent_notify_ready(struct agent *a, const char *why);
/* Takes the RDMA shared config's text as its source has it now; origin names the source in
 * messages. text NULL without read_error: the source has none (no ConfigMap), so no
 * whole-card pools. read_error: the source cannot be used as it is (unreadable, no key); like
 * an invalid text it keeps the last good config and is reported. Returns 1 when what is used
 * or reported changed (a reconcile should follow), 0 when not, -ENOMEM. */
int agent_rdma_shared_update(struct agent *a, const char *origin, const char *text,
                             const char *read_error);

/* dra.c */
/* SIGTERM: the DRA driver answers what the kubelet already sent and stops (dra_plugin_drain);
 * done(a) runs once it has, possibly at once. */
void agent_dra_drain(struct agent *a, uint64_t grace_usec, void (*done)(void *userdata));
/* "a,b,c" appended to *ret (duplicates once); -EINVAL (logged) for a name that is not a valid
 * resourceName. */
int agent_dra_parse_resources(const char *list, char ***ret, size_t *n);
/* Starts the DRA driver when --dra-resources names any resource. */
int agent_dra_start(struct agent *a);
/* Moves the pools of DRA resources out of pools (what the device plugin will serve). */
int agent_dra_take_pools(struct agent *a, struct dp_pool_set *pools);
/* Cluster mode: the ResourceSlice publisher (with DRA off it removes leftovers once). */
int agent_dra_publisher_new(struct agent *a);
/* Publishes the DRA pools' devices as this node's ResourceSlices (on change only). */
int agent_dra_publish(struct agent *a, const struct inventory *inv);
/* Before the cluster goes: frees the publisher and the plugin. */
void agent_dra_stop(struct agent *a);

/* rdma-configmap.c */
struct kube_http;
struct rdma_configmap;
/* ref: "NAMESPACE/NAME" of the ConfigMap (key config.json). */
int rdma_configmap_new(struct agent *a, struct kube_http *http, const char *ref,
                       struct rdma_configmap **ret);
struct rdma_configmap *rdma_configmap_free(struct rdma_configmap *m);
static inline void rdma_configmap_freep(struct rdma_configmap **m)
{
        rdma_configmap_free(*m);
}
/* false until the ConfigMap has been listed once (or could not be for a while). */
bool rdma_configmap_ready(const struct rdma_configmap *m);
const char *rdma_configmap_origin(const struct rdma_configmap *m);

/* metrics.c: the endpoint when --metrics-listen is given (its stats in any case). */
int agent_metrics_start(struct agent *a);
/* Stops the endpoint (a waiting scrape gets 503) and ends the shared PodResources List. */
void agent_metrics_stop(struct agent *a);
const char *agent_polling_notice(const struct agent *a);

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
/* Cluster mode at start: one reconcile whose desired state is the records (plan/records.h
 * records_boot_desired()), so that a rebooted node gets its VFs, drivers, MTUs and pools back
 * without waiting for the API server; no NodeState is written by it. */
void reconcile_start_from_records(struct agent *a, reconcile_done_fn done, void *userdata);
/* On shutdown: stops an apply in progress (its child finishes the kernel write it is in). */
void reconcile_abort(struct agent *a);

/* link-health.c */
struct link_health;
/* After the pools are updated: reports each served PF that went down or came back (journal,
 * Event), once per change, flapping damped. */
void link_health_update(struct agent *a, const struct desired_state *served,
                        const struct inventory *inv);
void link_health_free(struct agent *a);

/* nic-list.c */
struct nic_list;
int nic_list_new(struct agent *a, struct nic_list **ret);
struct nic_list *nic_list_free(struct nic_list *l);
/* false until the cluster's supported-nic-ids ConfigMap has been read once (or given up on). */
bool nic_list_ready(const struct nic_list *l);
const struct supported_nics *nic_list_get(const struct nic_list *l);

/* rdma-mode.c */
/* At start: reads the kernel's RDMA netns mode and brings about --rdma-mode (not with
 * --dry-run), now and for the next boot (the modprobe option written or removed whenever the
 * next boot would load another mode); a mode the kernel keeps until a reboot is reported. */
void rdma_mode_start(struct agent *a);
/* The mode as the kernel has it now and as the next boot loads it, for the NodeState (cheap:
 * one netlink request, the modprobe.d directory read). */
void rdma_mode_refresh(struct agent *a);

/* report.c */
void report_policies(struct agent *a, const struct policy_report *rep);
void report_held(const struct guarded_plan *g);
struct node_status;
/* desired: NULL keeps the spec as it is (a reconcile that stopped before building it). */
void report_node_state(struct agent *a, const struct desired_state *desired,
                       const struct inventory *inv, const struct guarded_plan *guarded,
                       const struct node_status *status);
