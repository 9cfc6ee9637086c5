/* SPDX-License-Identifier: Apache-2.0 */
/* One reconcile, as a state machine so the loop never waits on the kernel:
 *
 *   prepare   policies (files or API) + node labels + discovery → desired state and a report
 *   round     plan → disruption guard → apply in a child process (apply_plan_async)
 *   applied   persist ownership, re-discover, plan again (new VFs get their binds and MTUs);
 *             at most APPLY_ROUNDS_MAX rounds, an empty plan means converged
 *   finish    pools for the kubelet (only PFs whose own configuration is complete), status;
 *             changes left after the last round are retried by the daemon (n_left)
 *   stop      anything failing on the way ends the reconcile early (reconcile_stop): logged
 *             once, and the NodeState says Failed with what stopped it
 *
 * Everything is recomputed from the sources each time, so a reconcile never depends on what
 * an earlier one believed. The decisions (what is advertised, which records are written or
 * deleted, which VFs count as in use) are lib/plan's pure functions; this file does the I/O
 * around them and hands the end to the caller's callback. */
#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "agent.h"
#include "applied-store.h"
#include "apply.h"
#include "cni/state.h"
#include "deviceplugin/manager.h"
#include "deviceplugin/podresources.h"
#include "deviceplugin/pool-set.h"
#include "host/discover.h"
#include "ib-attachments.h"
#include "kube/cluster.h"
#include "kube/json-split.h"
#include "plan/advertise.h"
#include "plan/freeze.h"
#include "plan/ib-guids.h"
#include "plan/node-status.h"
#include "plan/plan.h"
#include "plan/records.h"
#include "plan/vf-usage.h"
#include "policy-files.h"
#include "policy/node-labels.h"
#include "util/fileio.h"
#include "util/log.h"
#include "util/macro.h"
#include "util/parse.h"
#include "util/strv.h"

struct reconcile {
        struct policy_list policies;
        struct inventory inv;
        bool have_inv; /* inv is this reconcile's discovery (not emptied for a re-discovery) */
        struct desired_state desired;
        bool have_desired;
        struct policy_report report;
        struct applied_state previous;
        struct ib_guid_pool ib_guids; /* --ib-guid-pool as read at the start */
        /* the GUIDs CNI attachments gave pods, read before each plan */
        struct ib_guid_attachments ib_attachments;
        struct plan plan;            /* of the latest round: what is left */
        struct guarded_plan guarded; /* what the guard let through, and what it held */
        struct apply_report applied; /* of the latest apply */
        struct vf_usage in_use;      /* devices pods hold (asked once per reconcile) */
        bool asked_kubelet;
        struct dp_podresources_call *asking; /* PodResources List in flight */
        size_t n_failed;
        size_t n_left;         /* changes due after the apply rounds (node_status_decide) */
        bool stopped;          /* reconcile_stop() ended it */
        bool from_records;     /* boot: the records are the desired state (no API, no policies) */
        uint64_t started_usec; /* CLOCK_MONOTONIC */
        int round;
        struct apply_child *child;
        reconcile_done_fn done;
        void *userdata;
};

static void reconcile_free(struct reconcile *rc)
{
        if (!rc)
                return;
        apply_child_kill(rc->child);
        dp_podresources_call_cancel(rc->asking);
        vf_usage_done(&rc->in_use);
        apply_report_done(&rc->applied);
        guarded_plan_done(&rc->guarded);
        plan_done(&rc->plan);
        applied_state_done(&rc->previous);
        ib_guid_pool_done(&rc->ib_guids);
        ib_guid_attachments_done(&rc->ib_attachments);
        policy_report_done(&rc->report);
        desired_state_done(&rc->desired);
        inventory_done(&rc->inv);
        policy_list_done(&rc->policies);
        free(rc);
}

/* The static IB GUID pool: 1 read, 0 no such file (GUIDs are derived), -EINVAL/-errno with
 * error set. */
static int load_ib_guid_pool(const char *path, struct ib_guid_pool *ret, char *error, size_t size)
{
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        char why[400];
        if (!path)
                path = DEFAULT_IB_GUID_POOL;
        int r = read_full_file(path, 4 << 20, &text, &len);
        if (r == -ENOENT)
                return 0;
        if (r < 0) {
                snprintf(error, size, "IB GUID pool %s: %s", path, strerror(-r));
                return r;
        }
        r = ib_guid_pool_parse(text, len, ret, why, sizeof(why));
        if (r < 0) {
                snprintf(error, size, "%s: %s", path, r == -ENOMEM ? "out of memory" : why);
                return r;
        }
        return 1;
}

static int load_policies(struct agent *a, struct policy_list *ret)
{
        const char *key;
        json_t *obj;

        if (a->config.policy_dir)
                return policy_list_load_path(ret, a->config.policy_dir);
        json_object_foreach(kube_cluster_policies(a->cluster), key, obj)
        {
                char origin[512];
                snprintf(origin, sizeof(origin), "SriovNetworkNodePolicy %s", key);
                int r = policy_list_add_json(ret, obj, origin);
                if (r < 0)
                        return r;
                /* An object lib/kube could not decode is a named stub: report it invalid with
                 * the reason, not as a policy without a spec. */
                const char *why = kube_object_undecodable(obj);
                struct policy *p = ret->n_items > 0 ? &ret->items[ret->n_items - 1] : NULL;
                if (why && p && p->error) {
                        char *error;
                        if (asprintf(&error, "%s: the object %s", origin, why) < 0)
                                return -ENOMEM;
                        free(p->error);
                        p->error = error;
                }
        }
        return 0;
}

/* Cluster mode: the Node's labels as they are now. -ENOENT while the Node is unknown: without
 * labels every policy would look unselected and owned PFs would be reset. Not logged. */
static int load_node_labels(struct agent *a)
{
        json_t *labels = kube_cluster_node_labels(a->cluster);
        const char *key;
        json_t *value;

        if (!kube_cluster_node(a->cluster))
                return -ENOENT;
        node_labels_free(a->labels, a->n_labels);
        a->labels = NULL;
        a->n_labels = 0;
        json_object_foreach(labels, key, value)
        {
                int r = node_labels_set(&a->labels, &a->n_labels, key,
                                        json_is_string(value) ? json_string_value(value) : "");
                if (r < 0)
                        return r;
        }
        return 0;
}

static int discover(const struct agent *a, struct reconcile *rc)
{
        const struct discover_options opts = {
                .sysfs_root = a->config.sysfs_root,
                .query_kernel = host_sysfs_root_is_live(a->config.sysfs_root),
        };
        int r = host_discover(&opts, &rc->inv);
        rc->have_inv = r >= 0;
        return r;
}

static const char *sysfs_root(const struct agent *a)
{
        return a->config.sysfs_root ? a->config.sysfs_root : "/sys";
}

static int ensure_state_dir(const struct agent *a)
{
        if (mkdir(a->config.state_dir, 0755) < 0 && errno != EEXIST)
                return log_error_errno(errno, "cannot create state directory %s",
                                       a->config.state_dir);
        return 0;
}

/* Before the first change to a PF: its record, with what the PF is now as the originals
 * (plan/records.h says why). */
static int record_intent(const struct agent *a, const struct plan *plan,
                         const struct applied_state *previous)
{
        _cleanup_(record_changes_done) struct record_changes c = { 0 };

        if (!a->config.state_dir)
                return 0;
        int r = ensure_state_dir(a);
        if (r >= 0)
                r = records_before_apply(plan, previous, &c);
        for (size_t i = 0; r >= 0 && i < c.n_save; i++)
                r = applied_record_save(a->config.state_dir, c.save[i]);
        return r;
}

/* Saves what was applied and forgets PFs that were released (plan/records.h says which). */
static int persist_applied(const struct agent *a, const struct plan *plan,
                           const struct applied_state *previous, const struct apply_report *rep)
{
        _cleanup_(record_changes_done) struct record_changes c = { 0 };

        if (!a->config.state_dir)
                return 0;
        int r = ensure_state_dir(a);
        if (r >= 0)
                r = records_after_apply(plan, previous, rep, &c);
        if (r < 0)
                return r;
        for (size_t i = 0; i < c.n_save; i++) {
                r = applied_record_save(a->config.state_dir, c.save[i]);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < c.n_remove; i++)
                applied_record_remove(a->config.state_dir, c.remove[i]);
        return 0;
}

/* Calls fn for each VF the sriov CNI plugin has given to a pod that is still there: the
 * plugin's allocation record names a holder and its netdev is not in this namespace (a pod's
 * has it), or it has none (a DPDK VF, which never moves). A stale record alone (a pod gone
 * before its DEL, whose VF the kernel returned) holds nothing. */
static int for_each_cni_held_vf(const struct agent *a, const struct inventory *inv,
                                int (*fn)(const struct vf_info *vf, const char *holder,
                                          const char *dir, void *userdata),
                                void *userdata)
{
        const char *dir = a->config.cni_state_dir ?: CNI_STATE_DIR_DEFAULT;
        int r = 0;
        for (size_t i = 0; r >= 0 && i < inv->n_pfs; i++)
                for (size_t j = 0; r >= 0 && j < inv->pfs[i].n_vfs; j++) {
                        const struct vf_info *vf = &inv->pfs[i].vfs[j];
                        char holder[256];
                        if (vf->n_netdevs == 0 &&
                            cni_pci_holder(dir, vf->pci_address, holder, sizeof(holder)) >= 0)
                                r = fn(vf, holder, dir, userdata);
                }
        return r;
}

struct address_list {
        char **addresses;
        size_t n;
};

static int collect_address(const struct vf_info *vf, const char *holder, const char *dir,
                           void *userdata)
{
        struct address_list *l = userdata;
        return strv_push_dup(&l->addresses, &l->n, vf->pci_address);
}

static int update_pools(struct agent *a, const struct desired_state *advertised,
                        const struct inventory *inv)
{
        struct dp_pool_set pools = { 0 }, served = { 0 };
        /* after an agent restart, the CNI plugin's records are the only memory that a VF
         * whose netdev is gone is a pod's */
        struct address_list in_pods = { 0 };
        int r = dp_manager_get_pools(a->plugins, &served);
        if (r >= 0) /* a VF moved into a pod keeps its place on either side */
                r = dp_pool_set_append_copy(&served, &a->dra_pools);
        if (r >= 0)
                r = for_each_cni_held_vf(a, inv, collect_address, &in_pods);
        if (r >= 0)
                r = dp_pools_build(advertised, inv, a->config.resource_prefix,
                                   a->have_rdma_shared ? &a->rdma_shared : NULL, &served,
                                   &(const struct dp_health_options){
                                       .ignore_link = a->config.no_link_health,
                                       .vfs_in_pods = in_pods.addresses,
                                       .n_vfs_in_pods = in_pods.n,
                                   },
                                   &pools);
        strv_free_n(in_pods.addresses, in_pods.n);
        dp_pool_set_done(&served);
        if (r >= 0)
                r = agent_dra_take_pools(a, &pools);
        if (r >= 0)
                r = agent_dra_publish(a, inv);
        if (r >= 0)
                r = dp_manager_set_pools(a->plugins, &pools);
        dp_pool_set_done(&pools);
        return r;
}

static void reconcile_end(struct agent *a);

/* The apply about to start can take seconds (VF creation, driver probes) before the pools are
 * built again: meanwhile the kubelet must not keep a VF that is gone, or one whose PF is down or
 * unbound, as Healthy. The devices served now are marked from what this reconcile discovered;
 * which devices are served changes only when it ends. */
static void mark_served_health(struct agent *a, const struct inventory *inv)
{
        struct dp_pool_set served = { 0 };

        if (dp_manager_get_pools(a->plugins, &served) >= 0 &&
            dp_pools_mark_gone(
                &served, inv,
                &(const struct dp_health_options){ .ignore_link = a->config.no_link_health }) > 0) {
                log_debug("marking the devices that are gone or down Unhealthy while changes are "
                          "applied");
                int r = dp_manager_set_pools(a->plugins, &served);
                if (r < 0)
                        log_warning_errno(r, "cannot mark gone devices Unhealthy");
        }
        dp_pool_set_done(&served);
}
__attribute__((format(printf, 3, 4))) static void reconcile_stop(struct agent *a, int error,
                                                                 const char *fmt, ...);

static bool no_kubelet_here(const struct agent *a)
{
        const char *p = a->config.pod_resources_socket;
        return p && (p[0] == 0 || strcmp(p, "none") == 0);
}

static void reconcile_guard_and_apply(struct agent *a);

/* The kubelet's answer (or why there is none). Every failure to ask counts every VF as in use:
 * a stopped or restarting kubelet refuses connections while its pods keep running, and holding
 * a change back is recoverable where destroying a pod's VF is not. */
static void on_in_use(void *userdata, int error, const char *message, const struct dp_usage *usage)
{
        struct agent *a = userdata;
        struct reconcile *rc = a->running;
        int r = 0;

        rc->asking = NULL;
        rc->asked_kubelet = true;
        if (error < 0) {
                const char *why = message ?: strerror(-error);
                log_warning("cannot ask the kubelet which VFs pods hold: %s; every VF counts as "
                            "in use%s",
                            why,
                            a->config.allow_disruption ? " (--allow-disruption: applying anyway)"
                                                       : ", disruptive changes are held back");
                r = vf_usage_unknown(&rc->in_use, &rc->inv, why);
        } else {
                for (size_t i = 0; r >= 0 && i < usage->n_resources; i++)
                        for (size_t j = 0; r >= 0 && j < usage->resources[i].n_ids; j++)
                                r = vf_usage_add(&rc->in_use, usage->resources[i].ids[j]);
        }
        if (r < 0) {
                reconcile_stop(a, r, "VFs in use (kubelet PodResources)");
                return;
        }
        reconcile_guard_and_apply(a);
}

static int mark_in_use(const struct vf_info *vf, const char *holder, const char *dir,
                       void *userdata)
{
        log_debug("VF %s: held by %s (the sriov CNI plugin's record in %s): in use",
                  vf->pci_address, holder, dir);
        return vf_usage_add(userdata, vf->pci_address);
}

/* VFs the sriov CNI plugin has given to a pod that are still there count as in use whatever
 * the kubelet says: PodResources lists only what the kubelet allocated, not a VF a NAD named
 * by its deviceID (where the node allows it), nor one of a pod the kubelet has forgotten. */
static int add_cni_held(struct agent *a, struct vf_usage *in_use, const struct inventory *inv)
{
        return for_each_cni_held_vf(a, inv, mark_in_use, in_use);
}

/* Asks the kubelet's PodResources service which device IDs pods hold, on the loop: Allocate
 * calls from the kubelet are served meanwhile. Continues with reconcile_guard_and_apply(). */
static int ask_kubelet(struct agent *a)
{
        struct reconcile *rc = a->running;
        if (no_kubelet_here(a)) {
                log_debug("--pod-resources-socket none: no kubelet on this host, only the VFs "
                          "the CNI plugin gave to pods are in use");
                rc->asked_kubelet = true;
                reconcile_guard_and_apply(a);
                return 0;
        }
        log_debug("asking the kubelet which VFs pods hold (%s)", a->config.pod_resources_socket);
        return dp_podresources_list(a->event, a->config.pod_resources_socket, 2 * 1000000ULL,
                                    on_in_use, a, &rc->asking);
}

static void reconcile_end(struct agent *a)
{
        struct reconcile *rc = a->running;
        if (!rc)
                return;
        reconcile_done_fn done = rc->done;
        void *userdata = rc->userdata;
        const struct reconcile_outcome outcome = { .n_failed = rc->n_failed,
                                                   .n_left = rc->n_left,
                                                   .stopped = rc->stopped };

        a->running = NULL;
        reconcile_free(rc);
        /* A reconcile's inventory, desired state and plan are freed now; without this glibc
         * keeps their high-water mark (~0.5 MB with 512 VFs) resident between reconciles. */
        malloc_trim(0);
        if (done)
                done(&outcome, userdata);
}

/* Ends a reconcile that cannot go on: logs why once ("<what>: <error>", error 0: what says it
 * all) and, in cluster mode, says it in the NodeState (Failed, plan/node-status.h), so a
 * Succeeded from an earlier reconcile does not stay. Its interfaces are this reconcile's
 * discovery, or the last one's when this one has none; its spec is left as it is unless the
 * desired state was built. The daemon retries with backoff (outcome.stopped). */
__attribute__((format(printf, 3, 4))) static void reconcile_stop(struct agent *a, int error,
                                                                 const char *fmt, ...)
{
        struct reconcile *rc = a->running;
        char what[1024], why[NODE_STATUS_MESSAGE_MAX];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(what, sizeof(what), fmt, ap);
        va_end(ap);
        if (error < 0)
                snprintf(why, sizeof(why), "%s: %s", what, strerror(-error));
        else
                snprintf(why, sizeof(why), "%s", what);
        log_error("reconcile stopped: %s", why); /* the daemon logs when it tries again */
        rc->stopped = true;
        a->converged = false; /* the next periodic check is a full reconcile */
        a->sync_status = NODE_SYNC_FAILED;
        if (a->cluster && !rc->from_records) {
                struct node_status status;
                node_status_decide(
                    &(const struct node_status_facts){
                        .applied = &rc->applied,
                        .guarded = &rc->guarded,
                        .rdma_shared_error = a->rdma_shared_error,
                        .stopped = why,
                        .rdma_reboot_needed = a->rdma_reboot_needed,
                    },
                    &status);
                report_node_state(a, rc->have_desired ? &rc->desired : NULL,
                                  rc->have_inv ? &rc->inv : &a->observed, &rc->guarded, &status);
        }
        reconcile_end(a);
}

static void reconcile_finish(struct agent *a)
{
        struct reconcile *rc = a->running;
        struct desired_state advertised = { 0 };
        size_t n_held = rc->guarded.passed_through ? 0 : rc->guarded.n_held;

        int r = advertised_subset(&rc->desired, &rc->plan, &rc->applied, &rc->guarded,
                                  &rc->previous, &advertised);
        if (r >= 0)
                r = update_pools(a, &advertised, &rc->inv);
        if (r < 0)
                log_error_errno(r, "cannot update the device-plugin pools");
        else
                link_health_update(a, &advertised, &rc->inv);

        sd_notifyf(false, "STATUS=%s%zu PF(s) configured, %zu failed, %zu held back",
                   rc->from_records ? "recorded state restored, waiting for the API server: " : "",
                   advertised.n_interfaces, rc->n_failed, n_held);
        if (rc->from_records) {
                uint64_t now = 0;
                (void)sd_event_now(a->event, CLOCK_MONOTONIC, &now);
                log_ctx_msg(a->boot_applied ? LOG_DEBUG : LOG_INFO, 0, NULL,
                            "boot: recorded state of %zu PF(s) applied in %llu ms (%zu failed, %zu "
                            "held back); the live policies follow once the API server answers",
                            advertised.n_interfaces,
                            (unsigned long long)((now - rc->started_usec) / 1000), rc->n_failed,
                            n_held);
                a->boot_applied = true;
        }
        agent_notify_ready(a, rc->from_records ? "recorded state applied" : "first reconcile done");
        /* A frozen PF is reported Failed even on OOM here: the NodeState then only lacks its
         * line, the journal has it from the plan's problems. */
        (void)apply_report_add_frozen(&rc->applied, &rc->previous);
        struct node_status status;
        node_status_decide(
            &(const struct node_status_facts){
                .applied = &rc->applied,
                .plan = &rc->plan,
                .guarded = &rc->guarded,
                .rdma_shared_error = a->rdma_shared_error,
                .dry_run = a->config.dry_run,
                .rdma_reboot_needed = a->rdma_reboot_needed,
            },
            &status);
        /* Due, not held, not a dry run: the daemon reconciles again soon. */
        rc->n_left = status.n_left;
        a->sync_status = (int)status.sync;
        if (a->cluster && !rc->from_records)
                report_node_state(a, &rc->desired, &rc->inv, &rc->guarded, &status);
        desired_state_done(&advertised);
        /* Periodic checks may then look only for changes (agent/daemon.c on_resync). */
        a->converged = r >= 0 && rc->n_failed == 0 && n_held == 0 && rc->plan.n_actions == 0;
        /* Keep what was seen, so link events can be told apart from pod veth churn. */
        inventory_done(&a->observed);
        a->observed = rc->inv;
        rc->inv = (struct inventory){ 0 };
        reconcile_end(a);
}

static void reconcile_round(struct agent *a);

static bool has_ib_vfs(const struct inventory *inv)
{
        for (size_t i = 0; i < inv->n_pfs; i++)
                for (size_t j = 0; j < inv->pfs[i].n_vfs; j++)
                        if (inv->pfs[i].vfs[j].has_ib_guids)
                                return true;
        return false;
}

/* The GUIDs pods were given, when the node has InfiniBand VFs (none on Ethernet nodes: nothing
 * is read there). */
static int load_ib_attachments(const struct agent *a, const struct inventory *inv,
                               struct ib_guid_attachments *ret)
{
        ib_guid_attachments_done(ret);
        if (!has_ib_vfs(inv))
                return 0;
        return ib_attachments_read(a->config.cni_state_dir ?: CNI_STATE_DIR_DEFAULT, ret);
}

/* plan_build() and then nothing for PFs whose state record is unusable (they are reported
 * as plan problems and left exactly as they are). The GUIDs pods were given are read afresh
 * for each plan: a round's re-bind may come after a pod's ADD or DEL. */
static int build_plan(const struct agent *a, struct reconcile *rc, char *what, size_t size)
{
        plan_done(&rc->plan);
        snprintf(what, size, "the GUIDs pods were given (the CNI plugin's records in %s)",
                 a->config.cni_state_dir ?: CNI_STATE_DIR_DEFAULT);
        int r = load_ib_attachments(a, &rc->inv, &rc->ib_attachments);
        if (r < 0)
                return r;
        snprintf(what, size, "planning");
        rc->desired.ib_attachments = &rc->ib_attachments;
        r = plan_build(&rc->desired, &rc->inv, &rc->previous, &rc->plan);
        if (r >= 0)
                r = plan_freeze_bad_records(&rc->plan, &rc->previous);
        return r;
}

static void on_applied(int error, const char *why, struct apply_report *report, void *userdata)
{
        struct agent *a = userdata;
        struct reconcile *rc = a->running;
        _cleanup_free_ char *load_error = NULL;
        char what[PATH_MAX];
        int r;

        rc->child = NULL;
        if (error < 0) {
                reconcile_stop(a, 0, "apply process: %s", why ?: strerror(-error));
                return;
        }
        apply_report_done(&rc->applied);
        rc->applied = *report;
        *report = (struct apply_report){ 0 };
        rc->n_failed = apply_report_n_failed(&rc->applied);
        persist_applied(a, &rc->guarded.plan, &rc->previous, &rc->applied);

        /* Re-read what the kernel did and plan again. */
        inventory_done(&rc->inv);
        rc->have_inv = false;
        applied_state_done(&rc->previous);
        r = discover(a, rc);
        if (r < 0) {
                reconcile_stop(a, r, "discovery under %s after applying", sysfs_root(a));
                return;
        }
        if (a->config.state_dir) {
                r = applied_state_load_dir(a->config.state_dir, &rc->previous, &load_error);
                if (r < 0) {
                        reconcile_stop(a, 0, "state directory %s: %s", a->config.state_dir,
                                       load_error ? load_error : strerror(-r));
                        return;
                }
        }
        rc->round++;
        if (apply_rounds_over(rc->round, &rc->applied)) {
                /* What is left is reported and retried with backoff; plan it once more so
                 * the pools and the status describe the node as it is now. */
                r = build_plan(a, rc, what, sizeof(what));
                if (r < 0) {
                        reconcile_stop(a, r, "%s", what);
                        return;
                }
                reconcile_finish(a);
                return;
        }
        reconcile_round(a);
}

static void reconcile_round(struct agent *a)
{
        struct reconcile *rc = a->running;
        char what[PATH_MAX];
        int r;

        guarded_plan_done(&rc->guarded);
        r = build_plan(a, rc, what, sizeof(what));
        if (r < 0) {
                reconcile_stop(a, r, "%s", what);
                return;
        }
        if (rc->round == 0)
                for (size_t i = 0; i < rc->plan.n_problems; i++)
                        log_pf(LOG_WARNING, 0, rc->plan.problems[i].pf, "%s",
                               rc->plan.problems[i].message);
        if (rc->plan.n_actions == 0) {
                /* Converged: the agent manages exactly the desired PFs now. */
                if (!a->config.dry_run)
                        persist_applied(a, &rc->plan, &rc->previous, &(struct apply_report){});
                reconcile_finish(a);
                return;
        }
        if (a->config.dry_run) {
                for (size_t i = 0; i < rc->plan.n_actions; i++) {
                        char line[256];
                        action_format(&rc->plan.actions[i], line, sizeof(line));
                        log_pf(LOG_NOTICE, 0, rc->plan.actions[i].pf, "dry run: would %s", line);
                }
                reconcile_finish(a);
                return;
        }

        if (!rc->asked_kubelet) {
                /* once per reconcile, as the kubelet is asked */
                if ((r = add_cni_held(a, &rc->in_use, &rc->inv)) < 0) {
                        reconcile_stop(a, r, "VFs in use (the sriov CNI plugin's records)");
                        return;
                }
                r = ask_kubelet(a); /* continues in reconcile_guard_and_apply() */
                if (r < 0)
                        reconcile_stop(a, r, "asking the kubelet which VFs pods hold");
                return;
        }
        reconcile_guard_and_apply(a);
}

/* The kubelet's answer about VFs in use is known: the guard, then apply what it lets through. */
static void reconcile_guard_and_apply(struct agent *a)
{
        struct reconcile *rc = a->running;
        int r;

        guarded_plan_done(&rc->guarded);
        r = vf_usage_guard(&rc->plan, &rc->inv, &rc->previous, &rc->in_use,
                           a->config.allow_disruption, &rc->guarded);
        if (r < 0) {
                reconcile_stop(a, r, "disruption guard");
                return;
        }
        if (rc->round == 0)
                report_held(&rc->guarded);
        if (rc->guarded.plan.n_actions == 0) {
                reconcile_finish(a);
                return;
        }

        const struct apply_options opts = {
                .sysfs_root = a->config.sysfs_root,
                .vf_timeout_ms = (int)(a->config.vf_timeout_usec / 1000),
                .cni_state_dir = a->config.cni_state_dir,
        };
        r = record_intent(a, &rc->guarded.plan, &rc->previous);
        if (r < 0) {
                reconcile_stop(a, r, "state directory %s: cannot write a PF's record",
                               a->config.state_dir);
                return;
        }
        mark_served_health(a, &rc->inv);
        r = apply_plan_async(a->event, &opts, &rc->guarded.plan, &rc->inv, on_applied, a,
                             &rc->child);
        if (r < 0) {
                reconcile_stop(a, r, "apply process: cannot start it");
                return;
        }
}

static struct reconcile *reconcile_new(struct agent *a, reconcile_done_fn done, void *userdata)
{
        struct reconcile *rc = calloc(1, sizeof(*rc));
        if (!rc) {
                log_error_errno(-ENOMEM, "cannot start a reconcile");
                return NULL;
        }
        rc->done = done;
        rc->userdata = userdata;
        (void)sd_event_now(a->event, CLOCK_MONOTONIC, &rc->started_usec);
        a->running = rc;
        a->reconcile_requested = false;
        return rc;
}

void reconcile_start_from_records(struct agent *a, reconcile_done_fn done, void *userdata)
{
        _cleanup_free_ char *load_error = NULL;

        if (a->running || !a->config.state_dir)
                return;
        struct reconcile *rc = reconcile_new(a, done, userdata);
        if (!rc)
                return;
        rc->from_records = true;
        int r = applied_state_load_dir(a->config.state_dir, &rc->previous, &load_error);
        if (r < 0) {
                reconcile_stop(a, 0, "boot: state directory %s: %s; not applying anything",
                               a->config.state_dir, load_error ? load_error : strerror(-r));
                return;
        }
        r = records_boot_desired(&rc->previous, &rc->desired);
        if (r < 0) {
                reconcile_stop(a, r, "boot: desired state from the records");
                return;
        }
        rc->have_desired = true;
        r = discover(a, rc);
        if (r < 0) {
                reconcile_stop(a, r, "boot: discovery under %s", sysfs_root(a));
                return;
        }
        /* Until the API server answers, link events and retries come back here: said once. */
        log_ctx_msg(a->boot_applied ? LOG_DEBUG : LOG_INFO, 0, NULL,
                    "boot: applying the recorded state of %zu PF(s) from %s before the API server "
                    "answers",
                    rc->desired.n_interfaces, a->config.state_dir);
        reconcile_round(a);
}

void reconcile_start(struct agent *a, reconcile_done_fn done, void *userdata)
{
        struct reconcile *rc;
        _cleanup_free_ char *load_error = NULL;
        int r;

        if (a->running)
                return;
        if (a->cluster && !kube_cluster_synced(a->cluster))
                return; /* the initial sync triggers the first reconcile */
        if (!nic_list_ready(a->nics))
                return; /* reading the supported-NIC ConfigMap triggers it */
        if (!rdma_configmap_ready(a->rdma_configmap))
                return; /* reading the RDMA shared config ConfigMap triggers it */
        rc = reconcile_new(a, done, userdata);
        if (!rc)
                return;
        a->api_reconciled = a->cluster != NULL;

        r = a->cluster ? load_node_labels(a) : 0;
        if (r == -ENOENT) {
                reconcile_stop(a, 0,
                               "node %s is not known to the API server; nothing is "
                               "applied until it is",
                               a->config.node_name);
                return;
        }
        if (r < 0) {
                reconcile_stop(a, r, "node labels");
                return;
        }
        r = load_policies(a, &rc->policies);
        if (r < 0) {
                reconcile_stop(a, r, "cannot read the policies");
                return;
        }
        r = discover(a, rc);
        if (r < 0) {
                reconcile_stop(a, r, "discovery under %s", sysfs_root(a));
                return;
        }
        r = policy_build_desired_state_with(
            &(const struct policy_build_options){ .supported = nic_list_get(a->nics) },
            rc->policies.items, rc->policies.n_items, a->labels, a->n_labels, &rc->inv,
            &rc->desired, &rc->report);
        if (r < 0) {
                reconcile_stop(a, r, "desired state");
                return;
        }
        rc->have_desired = true;
        report_policies(a, &rc->report);
        char pool_error[512];
        r = load_ib_guid_pool(a->config.ib_guid_pool, &rc->ib_guids, pool_error,
                              sizeof(pool_error));
        if (r < 0) {
                /* a VF must not get a GUID the operator did not mean it to have */
                reconcile_stop(a, 0, "%s", pool_error);
                return;
        }
        rc->desired.ib_guids = r > 0 ? &rc->ib_guids : NULL;

        if (a->config.state_dir) {
                r = applied_state_load_dir(a->config.state_dir, &rc->previous, &load_error);
                /* Without the records we could reset PFs we own or forget them: touch nothing
                 * until the file is fixed. */
                if (r < 0) {
                        reconcile_stop(a, 0, "state directory %s: %s; not applying anything",
                                       a->config.state_dir, load_error ? load_error : strerror(-r));
                        return;
                }
        }
        reconcile_round(a);
}

void reconcile_abort(struct agent *a)
{
        reconcile_free(a->running);
        a->running = NULL;
}
