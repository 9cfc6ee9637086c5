#include "daemon.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "apply.h"
#include "deviceplugin/manager.h"
#include "deviceplugin/podresources.h"
#include "deviceplugin/pool-set.h"
#include "deviceplugin/rdma-shared-config.h"
#include "host/discover.h"
#include "host/link-monitor.h"
#include "plan/applied-store.h"
#include "plan/disruption.h"
#include "plan/plan.h"
#include "policy/node-labels.h"
#include "policy/policy-files.h"
#include "policy/policy-merge.h"
#include "util/fileio.h"
#include "util/log.h"
#include "util/macro.h"

#define MAX_APPLY_ROUNDS  3
#define RETRY_MIN_USEC    (1 * 1000000ULL)
#define RETRY_MAX_USEC    (300 * 1000000ULL)
#define POLICY_DIR_EVENTS (IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_CREATE)

struct agent {
        struct agent_config config;
        sd_event *event;
        sd_event_source *debounce; /* one-shot: runs the reconcile */
        sd_event_source *resync;   /* periodic drift check */
        sd_event_source *retry;    /* backoff after a failed PF */
        sd_event_source *policy_watch;
        struct dp_manager *plugins;
        struct link_monitor *links; /* live /sys only */
        struct inventory observed;  /* as of the last reconcile, to filter link events */

        struct string_pair *labels;
        size_t n_labels;
        struct rdma_shared_config rdma_shared;
        bool have_rdma_shared;

        bool reconciling; /* never overlap: a request during one re-arms the timer */
        bool reconcile_requested;
        bool ready_notified;
        uint64_t retry_usec;
        char *last_report; /* policy statuses last logged, to log changes only */
};

static int schedule_reconcile(struct agent *a, const char *why);

static void log_policy_report(struct agent *a, const struct policy_report *rep)
{
        /* The periodic check re-evaluates every policy; say what changed, not the same
         * warning every 30 s. */
        size_t size = 1;
        for (size_t i = 0; i < rep->n_results; i++)
                size += strlen(rep->results[i].name ? rep->results[i].name : "") +
                        strlen(rep->results[i].reason ? rep->results[i].reason : "") + 32;
        _cleanup_free_ char *text = calloc(1, size);
        if (!text)
                return;
        char *p = text;
        for (size_t i = 0; i < rep->n_results; i++)
                p += sprintf(p, "%s|%s|%s\n", rep->results[i].name ? rep->results[i].name : "",
                             policy_status_to_string(rep->results[i].status),
                             rep->results[i].reason ? rep->results[i].reason : "");
        if (a->last_report && strcmp(a->last_report, text) == 0)
                return;

        for (size_t i = 0; i < rep->n_results; i++) {
                const struct policy_result *r = &rep->results[i];
                int level =
                    r->status == POLICY_STATUS_INVALID || r->status == POLICY_STATUS_CONFLICT
                        ? LOG_WARNING
                        : LOG_INFO;
                /* The reason already names the origin and the policy. */
                log_policy(level, 0, r->name ? r->name : "(unnamed)", "%s: %s",
                           policy_status_to_string(r->status), r->reason ? r->reason : "");
        }
        free(a->last_report);
        a->last_report = TAKE_PTR(text);
}

static int load_policies(struct agent *a, struct policy_list *ret)
{
        return policy_list_load_path(ret, a->config.policy_dir);
}

static int discover(const struct agent *a, struct inventory *ret)
{
        const struct discover_options opts = {
                .sysfs_root = a->config.sysfs_root,
                .query_kernel =
                    a->config.sysfs_root == NULL || strcmp(a->config.sysfs_root, "/sys") == 0,
        };
        int r = host_discover(&opts, ret);
        if (r < 0)
                return log_error_errno(r, "discovery under %s failed",
                                       opts.sysfs_root ? opts.sysfs_root : "/sys");
        return 0;
}

/* Saves what was applied to each PF that this round touched or that is fully configured, and
 * forgets PFs that were reset; a PF that failed before changing anything keeps its record. */
static int persist_applied(const struct agent *a, const struct plan *plan,
                           const struct applied_state *previous, const struct apply_report *rep)
{
        if (!a->config.state_dir)
                return 0;
        if (mkdir(a->config.state_dir, 0755) < 0 && errno != EEXIST)
                return log_error_errno(errno, "cannot create state directory %s",
                                       a->config.state_dir);

        for (size_t i = 0; i < plan->applied.n_pfs; i++) {
                const struct applied_pf *pf = &plan->applied.pfs[i];
                const struct apply_pf_result *res = apply_report_find(rep, pf->pci_address);
                if (res && res->error != 0 && res->n_done == 0)
                        continue;

                char name[64], path[4096];
                _cleanup_free_ char *text = NULL;
                json_t *obj = NULL;
                int r = applied_record_filename(pf->pci_address, name, sizeof(name));
                if (r >= 0)
                        r = path_printf(path, sizeof(path), "%s/%s", a->config.state_dir, name);
                if (r >= 0)
                        r = applied_pf_to_json(pf, &obj);
                if (r < 0)
                        return log_pf(LOG_ERR, r, pf->pci_address, "cannot record applied state");
                text = json_dumps(obj, JSON_INDENT(2) | JSON_SORT_KEYS);
                json_decref(obj);
                if (!text)
                        return -ENOMEM;
                /* Every converged reconcile re-states ownership; only a change is written. */
                _cleanup_free_ char *old_text = NULL;
                if (read_full_file(path, 1024 * 1024, &old_text, NULL) >= 0 &&
                    strcmp(old_text, text) == 0)
                        continue;
                r = write_file_atomic(path, text, strlen(text), 0644);
                if (r < 0)
                        return log_pf(LOG_ERR, r, pf->pci_address, "cannot write %s", path);
                log_pf(LOG_DEBUG, 0, pf->pci_address, "recorded the applied state in %s", path);
        }

        for (size_t i = 0; i < previous->n_pfs; i++) {
                const char *pci = previous->pfs[i].pci_address;
                const struct apply_pf_result *res = apply_report_find(rep, pci);
                if (applied_state_find(&plan->applied, pci) || (res && res->error != 0))
                        continue;
                char name[64], path[4096];
                if (applied_record_filename(pci, name, sizeof(name)) < 0 ||
                    path_printf(path, sizeof(path), "%s/%s", a->config.state_dir, name) < 0)
                        continue;
                if (unlink(path) < 0) {
                        if (errno != ENOENT)
                                log_pf(LOG_WARNING, errno, pci, "cannot remove %s", path);
                } else
                        log_pf(LOG_INFO, 0, pci, "PF released: no policy selects it any more");
        }
        return 0;
}

static int copy_interface(const struct desired_interface *d, bool no_vfs,
                          struct desired_interface *ret)
{
        *ret = *d;
        ret->groups = NULL;
        if (d->n_groups == 0)
                return 0;
        ret->groups = malloc(d->n_groups * sizeof(*ret->groups));
        if (!ret->groups)
                return -ENOMEM;
        memcpy(ret->groups, d->groups, d->n_groups * sizeof(*ret->groups));
        for (size_t i = 0; no_vfs && i < d->n_groups; i++)
                ret->groups[i].vf_end = ret->groups[i].vf_start - 1; /* an empty range */
        return 0;
}

static bool pf_level_incomplete(const char *pci, const struct plan *left,
                                const struct apply_report *rep)
{
        const struct apply_pf_result *res = apply_report_find(rep, pci);

        if (res && res->error != 0 && action_is_pf_level(res->failed_kind))
                return true;
        for (size_t j = 0; j < left->n_actions; j++)
                if (strcmp(left->actions[j].pf, pci) == 0 &&
                    action_is_pf_level(left->actions[j].kind))
                        return true;
        return false;
}

/* What may be advertised. A PF whose own configuration (VF count, MTU, link) is not complete
 * keeps its resources but with no devices, so the kubelet sees 0 rather than a plugin that
 * vanished; its VFs appear once the PF is done (VFs themselves are filtered by readiness in
 * the pool builder). A PF whose change is held back (VFs in use) is advertised as it was
 * last applied, which is what its VFs still are. */
static int advertised_subset(const struct desired_state *desired, const struct plan *left,
                             const struct apply_report *rep, const struct held_pf *held,
                             size_t n_held, const struct applied_state *previous,
                             struct desired_state *ret)
{
        struct desired_state out = { 0 };
        int r = 0;

        out.interfaces =
            calloc(desired->n_interfaces ? desired->n_interfaces : 1, sizeof(*out.interfaces));
        if (!out.interfaces)
                return -ENOMEM;
        for (size_t i = 0; i < desired->n_interfaces && r >= 0; i++) {
                const struct desired_interface *d = &desired->interfaces[i];
                const struct applied_pf *prev = NULL;
                for (size_t j = 0; j < n_held; j++)
                        if (strcmp(held[j].pf, d->pci_address) == 0)
                                prev = applied_state_find(previous, d->pci_address);
                if (prev)
                        r = copy_interface(&prev->applied, false,
                                           &out.interfaces[out.n_interfaces++]);
                else
                        r = copy_interface(d, pf_level_incomplete(d->pci_address, left, rep),
                                           &out.interfaces[out.n_interfaces++]);
        }
        if (r < 0) {
                desired_state_done(&out);
                return r;
        }
        *ret = out;
        return 0;
}

static int update_pools(struct agent *a, const struct desired_state *advertised,
                        const struct inventory *inv)
{
        struct dp_pool_set pools = { 0 };
        int r = dp_pools_build(advertised, inv, a->config.resource_prefix,
                               a->have_rdma_shared ? &a->rdma_shared : NULL, &pools);
        if (r >= 0)
                r = dp_manager_set_pools(a->plugins, &pools);
        dp_pool_set_done(&pools);
        return r;
}

/* Device IDs the kubelet has handed to pods. When it cannot be asked although it is there,
 * every VF counts as in use: holding a change back is recoverable, breaking a pod is not. */
static int collect_in_use(const struct agent *a, const struct inventory *inv, char ***ret,
                          size_t *ret_n)
{
        struct dp_usage usage = { 0 };
        char **ids = NULL;
        size_t n = 0;
        int r = dp_podresources_list_sync(a->config.pod_resources_socket, 2 * 1000000ULL, &usage);

        if (r == -ENOENT || r == -ECONNREFUSED) {
                log_debug("no kubelet PodResources socket at %s: no VF is in use",
                          a->config.pod_resources_socket);
                *ret = NULL;
                *ret_n = 0;
                return 0;
        }
        if (r < 0) {
                log_warning_errno(r,
                                  "cannot ask the kubelet which VFs are in use (%s); treating "
                                  "every VF as in use",
                                  a->config.pod_resources_socket);
                for (size_t i = 0; i < inv->n_pfs; i++)
                        for (size_t j = 0; j < inv->pfs[i].n_vfs; j++)
                                if ((r = strv_push_dup(&ids, &n, inv->pfs[i].vfs[j].pci_address)) <
                                    0)
                                        goto fail;
        } else {
                for (size_t i = 0; i < usage.n_resources; i++)
                        for (size_t j = 0; j < usage.resources[i].n_ids; j++)
                                if ((r = strv_push_dup(&ids, &n, usage.resources[i].ids[j])) < 0)
                                        goto fail;
        }
        dp_usage_done(&usage);
        *ret = ids;
        *ret_n = n;
        return 0;
fail:
        dp_usage_done(&usage);
        strv_free_n(ids, n);
        return r;
}

static void schedule_retry(struct agent *a, size_t n_failed)
{
        if (n_failed == 0) {
                a->retry_usec = 0;
                return;
        }
        a->retry_usec = a->retry_usec ? a->retry_usec * 2 : RETRY_MIN_USEC;
        if (a->retry_usec > RETRY_MAX_USEC)
                a->retry_usec = RETRY_MAX_USEC;
        log_warning("%zu PF(s) failed; retrying in %llu s", n_failed,
                    (unsigned long long)(a->retry_usec / 1000000ULL));
        sd_event_source_set_time_relative(a->retry, a->retry_usec);
        sd_event_source_set_enabled(a->retry, SD_EVENT_ONESHOT);
}

static void log_held(const struct guarded_plan *g)
{
        for (size_t i = 0; i < g->n_held; i++) {
                const struct log_ctx ctx = { .pf = g->held[i].pf };
                if (g->passed_through)
                        log_ctx_msg(LOG_WARNING, 0, &ctx,
                                    "applying although VFs are in use (--allow-disruption): %s",
                                    g->held[i].reason);
                else
                        log_ctx_msg(LOG_WARNING, 0, &ctx,
                                    "change held back until the VFs are free: %s",
                                    g->held[i].reason);
        }
}

/* One pass: everything is recomputed from the sources (policies, sysfs, state records), so a
 * reconcile never depends on what an earlier one believed. */
static int reconcile(struct agent *a)
{
        struct policy_list policies = { 0 };
        struct inventory inv = { 0 };
        struct desired_state desired = { 0 }, advertised = { 0 };
        struct policy_report report = { 0 };
        struct applied_state previous = { 0 };
        struct plan plan = { 0 };
        struct guarded_plan guarded = { 0 };
        struct apply_report applied = { 0 };
        _cleanup_free_ char *load_error = NULL;
        char **in_use = NULL;
        size_t n_in_use = 0, n_failed = 0;
        bool asked_kubelet = false;
        int r;

        r = load_policies(a, &policies);
        if (r < 0) {
                log_error_errno(r, "cannot read policies from %s", a->config.policy_dir);
                goto out;
        }
        r = discover(a, &inv);
        if (r < 0)
                goto out;
        r = policy_build_desired_state(policies.items, policies.n_items, a->labels, a->n_labels,
                                       &inv, &desired, &report);
        if (r < 0)
                goto out;
        log_policy_report(a, &report);

        if (a->config.state_dir) {
                r = applied_state_load_dir(a->config.state_dir, &previous, &load_error);
                if (r < 0) {
                        /* Without the records we could reset PFs we own or forget them:
                         * touch nothing until the file is fixed. */
                        log_error("state directory %s: %s; not applying anything",
                                  a->config.state_dir, load_error ? load_error : strerror(-r));
                        goto out;
                }
        }

        for (int round = 0; round < MAX_APPLY_ROUNDS; round++) {
                plan_done(&plan);
                guarded_plan_done(&guarded);
                r = plan_build(&desired, &inv, &previous, &plan);
                if (r < 0)
                        goto out;
                if (round == 0)
                        for (size_t i = 0; i < plan.n_problems; i++)
                                log_pf(LOG_WARNING, 0, plan.problems[i].pf, "%s",
                                       plan.problems[i].message);
                if (plan.n_actions == 0) {
                        /* Converged: the agent manages exactly the desired PFs now. */
                        if (!a->config.dry_run)
                                persist_applied(a, &plan, &previous, &(struct apply_report){});
                        break;
                }
                if (a->config.dry_run) {
                        for (size_t i = 0; i < plan.n_actions; i++) {
                                char line[256];
                                action_format(&plan.actions[i], line, sizeof(line));
                                log_pf(LOG_NOTICE, 0, plan.actions[i].pf, "dry run: would %s",
                                       line);
                        }
                        break;
                }

                if (!asked_kubelet) {
                        r = collect_in_use(a, &inv, &in_use, &n_in_use);
                        if (r < 0)
                                goto out;
                        asked_kubelet = true;
                }
                r = disruption_guard(&plan, &inv, &previous, (const char *const *)in_use, NULL,
                                     n_in_use, a->config.allow_disruption, &guarded);
                if (r < 0)
                        goto out;
                if (round == 0)
                        log_held(&guarded);
                if (guarded.plan.n_actions == 0)
                        break;

                const struct apply_options opts = {
                        .sysfs_root = a->config.sysfs_root,
                        .vf_timeout_ms = (int)(a->config.vf_timeout_usec / 1000),
                };
                apply_report_done(&applied);
                r = apply_plan(&opts, &guarded.plan, &inv, &applied);
                if (r < 0)
                        goto out;
                n_failed = apply_report_n_failed(&applied);
                persist_applied(a, &guarded.plan, &previous, &applied);

                /* Re-read what the kernel did, and plan again: new VFs get their binds and
                 * MTUs, and an empty plan confirms the PF is configured. */
                inventory_done(&inv);
                r = discover(a, &inv);
                if (r < 0)
                        goto out;
                applied_state_done(&previous);
                if (a->config.state_dir) {
                        free(load_error);
                        load_error = NULL;
                        r = applied_state_load_dir(a->config.state_dir, &previous, &load_error);
                        if (r < 0) {
                                log_error("state directory %s: %s; stopping this reconcile",
                                          a->config.state_dir,
                                          load_error ? load_error : strerror(-r));
                                goto out;
                        }
                }
                if (n_failed > 0 && applied.n_done == 0)
                        break;
        }

        r = advertised_subset(&desired, &plan, &applied, guarded.held,
                              guarded.passed_through ? 0 : guarded.n_held, &previous, &advertised);
        if (r >= 0)
                r = update_pools(a, &advertised, &inv);
        if (r < 0)
                log_error_errno(r, "cannot update the device-plugin pools");

        sd_notifyf(false, "STATUS=%zu PF(s) configured, %zu failed, %zu held back",
                   advertised.n_interfaces, n_failed, guarded.passed_through ? 0 : guarded.n_held);
        if (!a->ready_notified) {
                sd_notify(false, "READY=1");
                a->ready_notified = true;
        }
        /* Keep what was seen, so link events can be told apart from pod veth churn. */
        inventory_done(&a->observed);
        a->observed = inv;
        inv = (struct inventory){ 0 };
out:
        schedule_retry(a, n_failed);
        strv_free_n(in_use, n_in_use);
        apply_report_done(&applied);
        guarded_plan_done(&guarded);
        plan_done(&plan);
        applied_state_done(&previous);
        policy_report_done(&report);
        desired_state_done(&advertised);
        desired_state_done(&desired);
        inventory_done(&inv);
        policy_list_done(&policies);
        return r;
}

static int on_debounce(sd_event_source *s, uint64_t usec, void *userdata)
{
        struct agent *a = userdata;

        a->reconciling = true;
        a->reconcile_requested = false;
        reconcile(a);
        a->reconciling = false;
        if (a->reconcile_requested)
                schedule_reconcile(a, "changes during the last reconcile");
        return 0;
}

static int schedule_reconcile(struct agent *a, const char *why)
{
        int enabled = SD_EVENT_OFF;

        if (a->reconciling) {
                a->reconcile_requested = true;
                return 0;
        }
        sd_event_source_get_enabled(a->debounce, &enabled);
        if (enabled != SD_EVENT_OFF)
                return 0; /* already pending: the debounce collapses bursts */
        log_debug("reconcile scheduled: %s", why);
        int r = sd_event_source_set_time_relative(a->debounce, a->config.debounce_usec);
        if (r < 0)
                return r;
        return sd_event_source_set_enabled(a->debounce, SD_EVENT_ONESHOT);
}

static int on_resync(sd_event_source *s, uint64_t usec, void *userdata)
{
        struct agent *a = userdata;

        schedule_reconcile(a, "periodic check");
        sd_event_source_set_time_relative(s, a->config.resync_usec);
        return sd_event_source_set_enabled(s, SD_EVENT_ON);
}

static int on_retry(sd_event_source *s, uint64_t usec, void *userdata)
{
        return schedule_reconcile(userdata, "retry after failure");
}

static int on_policy_dir(sd_event_source *s, const struct inotify_event *ev, void *userdata)
{
        return schedule_reconcile(userdata, "policy files changed");
}

static void on_link_event(const struct link_event *ev, void *userdata)
{
        struct agent *a = userdata;

        /* Pod veth pairs come and go all the time; only our PFs and VFs matter. */
        if (!link_event_concerns_sriov(ev, &a->observed, a->config.sysfs_root))
                return;
        log_debug("link %s %s (mtu %d, %s)", ev->ifname, link_event_kind_to_string(ev->kind),
                  ev->mtu, ev->up ? "up" : "down");
        schedule_reconcile(a, ev->resync ? "link events lost" : "link change");
}

static int load_rdma_shared(struct agent *a)
{
        struct rdma_shared_config c = { 0 };

        if (!a->config.rdma_shared_config)
                return 0;
        int r = rdma_shared_config_load(a->config.rdma_shared_config, &c);
        if (r < 0)
                return log_error_errno(r,
                                       "RDMA shared config %s not loaded (keeping the "
                                       "previous one)",
                                       a->config.rdma_shared_config);
        rdma_shared_config_done(&a->rdma_shared);
        a->rdma_shared = c;
        a->have_rdma_shared = true;
        return 0;
}

static int on_sighup(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata)
{
        struct agent *a = userdata;

        log_info("SIGHUP: reloading configuration");
        load_rdma_shared(a);
        return schedule_reconcile(a, "SIGHUP");
}

static int on_terminate(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata)
{
        struct agent *a = userdata;

        /* The kubelet keeps a plugin's devices for 5 minutes after it goes away: say they are
         * Unhealthy first so no pod is placed on them meanwhile. VFs stay as they are. */
        log_info("%s: reporting devices Unhealthy and stopping (VFs are kept)",
                 strsignal((int)si->ssi_signo));
        sd_notify(false, "STOPPING=1");
        dp_manager_shutdown(a->plugins);
        return sd_event_exit(sd_event_source_get_event(s), 0);
}

int agent_new(const struct agent_config *config, struct agent **ret)
{
        struct agent *a = calloc(1, sizeof(*a));
        int r;

        if (!a)
                return -ENOMEM;
        a->config = *config;
        r = sd_event_new(&a->event);
        if (r < 0)
                goto fail;
        _cleanup_free_ char *labels_error = NULL;
        r = node_labels_parse(config->node_labels, &a->labels, &a->n_labels, &labels_error);
        if (r < 0) {
                log_error_errno(r, "--node-labels: %s", labels_error ? labels_error : "invalid");
                goto fail;
        }
        if (config->node_name &&
            (r = node_labels_set(&a->labels, &a->n_labels, "kubernetes.io/hostname",
                                 config->node_name)) < 0)
                goto fail;
        r = load_rdma_shared(a);
        if (r < 0)
                goto fail;

        const struct dp_manager_options dp_opts = {
                .kubelet_dir = config->kubelet_dir,
                .devinfo_dir = config->devinfo_dir,
        };
        r = dp_manager_new(a->event, &dp_opts, &a->plugins);
        if (r < 0) {
                log_error_errno(r, "cannot start the device plugin");
                goto fail;
        }

        sigset_t mask;
        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGHUP);
        sigprocmask(SIG_BLOCK, &mask, NULL);
        if ((r = sd_event_add_signal(a->event, NULL, SIGTERM, on_terminate, a)) < 0 ||
            (r = sd_event_add_signal(a->event, NULL, SIGINT, on_terminate, a)) < 0 ||
            (r = sd_event_add_signal(a->event, NULL, SIGHUP, on_sighup, a)) < 0)
                goto fail;

        if ((r = sd_event_add_time_relative(a->event, &a->debounce, CLOCK_MONOTONIC,
                                            config->debounce_usec, 0, on_debounce, a)) < 0 ||
            (r = sd_event_add_time_relative(a->event, &a->resync, CLOCK_MONOTONIC,
                                            config->resync_usec, 0, on_resync, a)) < 0 ||
            (r = sd_event_add_time_relative(a->event, &a->retry, CLOCK_MONOTONIC, RETRY_MIN_USEC, 0,
                                            on_retry, a)) < 0)
                goto fail;
        sd_event_source_set_enabled(a->retry, SD_EVENT_OFF);

        if (!config->sysfs_root || strcmp(config->sysfs_root, "/sys") == 0) {
                r = link_monitor_new(a->event, 0, on_link_event, a, &a->links);
                if (r < 0)
                        log_warning_errno(r, "no netlink link events; drift is found by the "
                                             "periodic check only");
        }

        if (config->policy_dir) {
                r = sd_event_add_inotify(a->event, &a->policy_watch, config->policy_dir,
                                         POLICY_DIR_EVENTS, on_policy_dir, a);
                if (r < 0) {
                        log_error_errno(r, "cannot watch the policy directory %s",
                                        config->policy_dir);
                        goto fail;
                }
        }
        *ret = a;
        return 0;
fail:
        agent_free(a);
        return r;
}

int agent_run(struct agent *a)
{
        log_info("sriov-agent %s starting: policies from %s, sysfs %s%s", SRIOV_AGENT_VERSION,
                 a->config.policy_dir ? a->config.policy_dir : "(none)",
                 a->config.sysfs_root ? a->config.sysfs_root : "/sys",
                 a->config.dry_run ? ", dry run" : "");
        uint64_t watchdog_usec;
        if (sd_watchdog_enabled(false, &watchdog_usec) > 0)
                sd_event_set_watchdog(a->event, true);
        return sd_event_loop(a->event);
}

struct agent *agent_free(struct agent *a)
{
        if (!a)
                return NULL;
        sd_event_source_unref(a->debounce);
        sd_event_source_unref(a->resync);
        sd_event_source_unref(a->retry);
        sd_event_source_unref(a->policy_watch);
        link_monitor_free(a->links);
        dp_manager_free(a->plugins);
        sd_event_unref(a->event);
        inventory_done(&a->observed);
        node_labels_free(a->labels, a->n_labels);
        rdma_shared_config_done(&a->rdma_shared);
        free(a->last_report);
        free(a);
        return NULL;
}
