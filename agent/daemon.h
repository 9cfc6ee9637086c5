/* SPDX-License-Identifier: Apache-2.0 */
/* The daemon: one sd-event loop that owns every piece of mutable state.
 *
 * Inputs (policy files or API watches, node labels, link events, a periodic timer) only mark
 * the desired state dirty; a short debounce timer then runs one reconcile at a time:
 * discover → select/merge policies → plan → apply → pools → status. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "stop-mode.h"

/* Upstream's path of the static InfiniBand VF GUID pool (sriov-network-operator). */
#define DEFAULT_IB_GUID_POOL "/etc/sriov-operator/infiniband/guids"

struct agent_config {
        const char *node_name;
        const char *kubeconfig;
        const char *namespace_;
        const char *policy_dir;  /* standalone mode when set */
        const char *node_labels; /* "k=v,k2=v2" in standalone mode */
        const char *sysfs_root;
        const char *kubelet_dir;
        const char *kubelet_root;  /* DRA: plugins_registry/ and plugins/ are under it */
        const char *dra_resources; /* "a,b": resources served through DRA, not the device plugin */
        const char *cdi_root;      /* DRA: where CDI specs are written (/var/run/cdi) */
        const char *state_dir;
        const char *devinfo_dir;
        const char *resource_prefix;
        const char *rdma_shared_config;
        /* cluster mode: "NAMESPACE/NAME" of the RDMA shared config ConfigMap; NULL: none */
        const char *rdma_shared_configmap;
        const char *pod_resources_socket;
        int rdma_mode;              /* --rdma-mode: enum host_rdma_netns_mode, -1 leave as is */
        const char *modprobe_dir;   /* where the mode is written for the next boot */
        const char *ib_guid_pool;   /* --ib-guid-pool, NULL: DEFAULT_IB_GUID_POOL */
        const char *metrics_listen; /* NULL: no metrics endpoint */
        const char *cni_state_dir;  /* the CNI plugin's records (metrics); NULL: the default */
        const char *const *supported_nics_files; /* --supported-nics, in order */
        size_t n_supported_nics_files;
        bool all_nics; /* --all-nics: every SR-IOV PF model may be configured */
        bool dry_run;
        bool allow_disruption;
        uint64_t resync_usec; /* periodic drift check */
        uint64_t debounce_usec;
        uint64_t vf_timeout_usec;
        uint64_t ready_timeout_usec; /* READY=1 at the latest this long after the start */
        enum stop_mode stop_mode;    /* what SIGTERM means (stop-mode.h) */
        bool no_link_health;         /* --link-health off: a PF's link never makes VFs Unhealthy */
        bool nad_controller;         /* --nad-controller on: render NADs (Lease holder) */
        bool no_metrics_pod_labels;  /* --metrics-pod-labels off: no pod names in metrics */
};

struct agent;

int agent_new(const struct agent_config *config, struct agent **ret);
/* Runs until SIGTERM/SIGINT; returns 0 or a negative errno. */
int agent_run(struct agent *agent);
struct agent *agent_free(struct agent *agent);
