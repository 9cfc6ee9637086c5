/* SPDX-License-Identifier: Apache-2.0 */
/* The daemon's loop: event sources, signals and the scheduling of reconciles. */
#include "daemon.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "agent.h"
#include "deviceplugin/manager.h"
#include "host/discover.h"
#include "host/link-monitor.h"
#include "host/quick-check.h"
#include "host/uevent-monitor.h"
#include "httpd/httpd.h"
#include "kube/cluster.h"
#include "policy/node-labels.h"
#include "util/clock.h"
#include "util/debounce.h"
#include "util/fileio.h"
#include "util/log.h"
#include "util/macro.h"

/* A full periodic check (rediscovery + planning) at least every this many intervals. */
#define FULL_CHECK_EVERY  10
#define RETRY_MIN_USEC    (1 * 1000000ULL)
#define RETRY_MAX_USEC    (300 * 1000000ULL)
#define POLICY_DIR_EVENTS (IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_CREATE)
/* How late a periodic check may run: a tenth of the interval, at most 1 s. sd-event wakes a
 * timer at the last point of its per-boot grid (whole seconds, plus a fixed offset) inside the
 * window, and the check re-arms itself from the moment it ran, just past a grid point: given
 * 1 s, a 1 s interval became 2 s whenever nothing else woke the loop (a settled cluster-mode
 * agent, since its watches no longer do every second). */
#define RESYNC_MAX_ACCURACY_USEC (1000ULL * 1000)
/* Without inotify: a changed policy or RDMA shared config file is seen within this. */
#define FILE_POLL_USEC (2ULL * 1000 * 1000)

/* Failures and changes left after the apply rounds share the backoff: each retry of changes
 * left makes progress, and one that never converges (something undoing our changes) is
 * retried at most every RETRY_MAX_USEC, not in a loop. */
static void agent_schedule_retry(struct agent *a, const struct reconcile_outcome *o)
{
        if (!o->stopped && o->n_failed == 0 && o->n_left == 0) {
                a->retry_usec = 0;
                return;
        }
        a->retry_usec = a->retry_usec ? a->retry_usec * 2 : RETRY_MIN_USEC;
        if (a->retry_usec > RETRY_MAX_USEC)
                a->retry_usec = RETRY_MAX_USEC;
        unsigned long long in_s = a->retry_usec / 1000000ULL;
        if (o->stopped) /* reconcile_stop() logged why */
                log_notice("reconciling again in %llu s", in_s);
        else if (o->n_failed > 0)
                log_warning("%zu PF(s) failed; retrying in %llu s", o->n_failed, in_s);
        else
                log_notice("%zu change(s) left after the apply rounds; reconciling again in "
                           "%llu s",
                           o->n_left, in_s);
        sd_event_source_set_time_relative(a->retry, a->retry_usec);
        sd_event_source_set_enabled(a->retry, SD_EVENT_ONESHOT);
}

static void count_reconcile(struct agent *a, const struct reconcile_outcome *o)
{
        enum agent_reconcile_result result = o->stopped        ? AGENT_RECONCILE_STOPPED
                                             : o->n_failed > 0 ? AGENT_RECONCILE_FAILED
                                             : o->n_left > 0   ? AGENT_RECONCILE_CHANGES_LEFT
                                                               : AGENT_RECONCILE_OK;
        uint64_t now;
        a->stats.reconciles[result]++;
        a->stats.last_result = (int)result;
        /* The clock itself: a reconcile that ends in the loop iteration it started in (a
         * standalone node's, with nothing to apply) would measure 0 s with sd_event_now(). */
        if (a->stats.started_usec) {
                uint64_t took = clock_monotonic_usec() - a->stats.started_usec;
                metrics_histogram_observe(&a->stats.reconcile_seconds, (double)took / 1e6);
                log_debug("reconcile finished in %.1f ms (CPU %.1f ms)", (double)took / 1e3,
                          (double)(clock_process_cpu_usec() - a->stats.started_cpu_usec) / 1e3);
        }
        a->stats.started_usec = 0;
        if (sd_event_now(a->event, CLOCK_REALTIME, &now) >= 0)
                a->stats.last_end_seconds = (double)now / 1e6;
}

static void on_reconcile_done(const struct reconcile_outcome *outcome, void *userdata)
{
        struct agent *a = userdata;

        count_reconcile(a, outcome);
        agent_schedule_retry(a, outcome);
        if (a->reconcile_requested)
                agent_schedule_reconcile(a, "changes during the last reconcile");
}

static int on_debounce(sd_event_source *s, uint64_t usec, void *userdata)
{
        struct agent *a = userdata;

        if (a->stopping)
                return 0; /* SIGTERM: the pools stay as the kubelet was last told */

        if (sd_event_now(a->event, CLOCK_MONOTONIC, &a->debounce_last) < 0 || !a->debounce_last)
                a->debounce_last = usec ? usec : 1;
        a->converged = false; /* until this reconcile says otherwise */
        if (!a->running) {
                a->stats.started_usec = clock_monotonic_usec();
                a->stats.started_cpu_usec = clock_process_cpu_usec();
        }
        /* Until the API server has answered once, a retry or link event re-applies the records
         * (a VF count still probing at boot is finished without the API). */
        if (a->cluster && !a->config.dry_run && !a->api_reconciled &&
            !kube_cluster_synced(a->cluster))
                reconcile_start_from_records(a, on_reconcile_done, a);
        else
                reconcile_start(a, on_reconcile_done, a);
        return 0;
}

/* leading_edge: a change that should show at once (a VF's link, SIGHUP) starts the reconcile
 * now unless one started within the debounce window (util/debounce.h); other triggers wait the
 * whole window, which collapses bursts such as several policy files written in a row. */
static int schedule(struct agent *a, const char *why, bool leading_edge)
{
        int enabled = SD_EVENT_OFF;
        uint64_t now, due;

        if (a->running) {
                a->reconcile_requested = true;
                return 0;
        }
        int r = sd_event_now(a->event, CLOCK_MONOTONIC, &now);
        if (r < 0)
                return r;
        due = now + (leading_edge ? debounce_delay(now, a->debounce_last, a->config.debounce_usec)
                                  : a->config.debounce_usec);
        sd_event_source_get_enabled(a->debounce, &enabled);
        if (enabled != SD_EVENT_OFF) {
                uint64_t pending;
                /* already pending: the debounce collapses bursts, but never delays a change
                 * that would run sooner on its own */
                if (sd_event_source_get_time(a->debounce, &pending) < 0 || pending <= due)
                        return 0;
        }
        log_debug("reconcile scheduled: %s%s", why, due == now ? " (now)" : "");
        r = sd_event_source_set_time(a->debounce, due);
        if (r < 0)
                return r;
        return sd_event_source_set_enabled(a->debounce, SD_EVENT_ONESHOT);
}

int agent_schedule_reconcile(struct agent *a, const char *why)
{
        return schedule(a, why, false);
}

static uint64_t resync_accuracy_usec(uint64_t resync_usec)
{
        uint64_t tenth = resync_usec / 10;
        return tenth < RESYNC_MAX_ACCURACY_USEC ? tenth + 1 : RESYNC_MAX_ACCURACY_USEC;
}

static int on_resync(sd_event_source *s, uint64_t usec, void *userdata)
{
        struct agent *a = userdata;

        /* A converged node is first compared with the last observation on the facts that
         * change when VFs are created, bound or reconfigured (~3 system calls per VF instead
         * of a full discovery's 30-55, and no planning); every FULL_CHECK_EVERY-th check, and
         * after any difference, it is rediscovered and planned in full. */
        if (a->converged && !a->running && ++a->quick_checks < FULL_CHECK_EVERY) {
                /* CLOCK_PROCESS_CPUTIME_ID is a system call: read only for the debug line */
                bool timed = log_get_max_level() >= LOG_DEBUG;
                uint64_t cpu = timed ? clock_process_cpu_usec() : 0;
                int r = host_quick_check(a->config.sysfs_root, &a->observed);
                if (r > 0)
                        log_debug("periodic check: nothing changed (quick check, CPU %.1f ms)",
                                  timed ? (double)(clock_process_cpu_usec() - cpu) / 1e3 : 0.0);
                else {
                        a->quick_checks = 0;
                        schedule(a,
                                 r < 0 ? "periodic check (quick check failed)"
                                       : "periodic check found a change",
                                 true);
                }
        } else {
                a->quick_checks = 0;
                /* nothing to collapse: no separate debounce wake-up after a quiet period */
                schedule(a, "periodic check", true);
        }
        sd_event_source_set_time_relative(s, a->config.resync_usec);
        return sd_event_source_set_enabled(s, SD_EVENT_ON);
}

static int on_retry(sd_event_source *s, uint64_t usec, void *userdata)
{
        return agent_schedule_reconcile(userdata, "retry after failure");
}

static int on_policy_dir(sd_event_source *s, const struct inotify_event *ev, void *userdata)
{
        return agent_schedule_reconcile(userdata, "policy files changed");
}

static void on_link_event(const struct link_event *ev, void *userdata)
{
        struct agent *a = userdata;

        /* Pod veth pairs come and go all the time; only our PFs and VFs matter. */
        if (!host_link_event_concerns_sriov(ev, &a->observed, a->config.sysfs_root))
                return;
        log_debug("link %s %s (mtu %d, %s)", ev->ifname, host_link_event_kind_to_string(ev->kind),
                  ev->mtu, ev->up ? "up" : "down");
        schedule(a, ev->resync ? "link events lost" : "link change", true);
}

static void on_uevent(const struct host_uevent *ev, void *userdata)
{
        struct agent *a = userdata;

        if (!host_uevent_concerns_sriov(ev, &a->observed))
                return;
        log_debug("PCI function %s: %s", ev->pci_address, ev->action);
        schedule(a, ev->resync ? "uevents lost" : "PCI device change", true);
}

static void on_cluster_change(const char *why, void *userdata)
{
        agent_schedule_reconcile(userdata, why);
}

/* Drops the whole-card config: its source has none (the ConfigMap does not exist). */
static int rdma_shared_clear(struct agent *a, const char *origin)
{
        bool had = a->have_rdma_shared || a->rdma_shared_error;

        rdma_shared_config_done(&a->rdma_shared);
        a->have_rdma_shared = false;
        free(a->rdma_shared_text);
        a->rdma_shared_text = NULL;
        free(a->rdma_shared_error);
        a->rdma_shared_error = NULL;
        if (had)
                log_info("RDMA shared config: %s does not exist (any more); no whole-card RDMA "
                         "pools",
                         origin);
        return had ? 1 : 0;
}

static void log_rdma_shared_in_use(const struct agent *a)
{
        char list[512] = "";
        size_t n = 0;

        for (size_t i = 0; i < a->rdma_shared.n_resources && n < sizeof(list); i++) {
                const struct rdma_shared_resource *res = &a->rdma_shared.resources[i];
                int k = snprintf(list + n, sizeof(list) - n, "%s%s/%s (rdmaHcaMax %d)",
                                 i ? ", " : "", res->prefix, res->name, res->hca_max);
                if (k < 0)
                        break;
                n += (size_t)k;
        }
        log_info("RDMA shared config in use: %s: %s", a->rdma_shared_source, list);
}

int agent_rdma_shared_update(struct agent *a, const char *origin, const char *text,
                             const char *read_error)
{
        struct rdma_shared_config c = { 0 };
        _cleanup_free_ char *error = NULL, *copy = NULL;
        int r;

        if (!text && !read_error)
                return rdma_shared_clear(a, origin);
        if (text) {
                if (a->rdma_shared_text && strcmp(a->rdma_shared_text, text) == 0)
                        return 0;
                copy = strdup(text);
                if (!copy)
                        return -ENOMEM;
                r = rdma_shared_config_parse(text, origin, &c, &error);
        } else {
                error = strdup(read_error);
                r = -EINVAL;
        }
        free(a->rdma_shared_text);
        a->rdma_shared_text = TAKE_PTR(copy);
        if (r < 0) {
                if (!error)
                        error = strdup(strerror(-r));
                if (!a->rdma_shared_error || !error || strcmp(a->rdma_shared_error, error) != 0)
                        log_error("RDMA shared config not used: %s; %s", error ?: "?",
                                  a->have_rdma_shared
                                      ? "the whole-card RDMA pools keep the last good one"
                                      : "no whole-card RDMA pools until it is fixed (it is "
                                        "watched; SIGHUP re-reads a file)");
                free(a->rdma_shared_error);
                a->rdma_shared_error = TAKE_PTR(error);
                return 1;
        }
        for (size_t i = 0; i < c.n_warnings; i++)
                log_warning("RDMA shared config %s", c.warnings[i]);
        if (a->rdma_shared_error)
                log_info("RDMA shared config %s is valid again", origin);
        free(a->rdma_shared_error);
        a->rdma_shared_error = NULL;
        rdma_shared_config_done(&a->rdma_shared);
        a->rdma_shared = c;
        a->have_rdma_shared = true;
        log_rdma_shared_in_use(a);
        return 1;
}

/* (Re)reads the RDMA shared config file. A bad file never stops the agent: the SR-IOV side
 * keeps working and the whole-card pools keep the last good config (none at start); the error
 * is logged once per content and reported in the NodeState and as an Event. Returns 1 when
 * the file changed (a reconcile should follow), 0 when it did not, negative errno. */
static int load_rdma_shared(struct agent *a)
{
        const char *path = a->config.rdma_shared_config;
        _cleanup_free_ char *text = NULL, *error = NULL;
        size_t size;

        if (!path)
                return 0;
        int r = read_full_file(path, 1024 * 1024, &text, &size);
        if (r < 0 && asprintf(&error, "%s: cannot read: %s", path, strerror(-r)) < 0)
                return -ENOMEM;
        return agent_rdma_shared_update(a, path, text, error);
}

/* The file, when given, wins over the ConfigMap (host installs, and nodes an operator pins);
 * the ConfigMap is followed only in cluster mode. */
static int rdma_shared_describe_source(struct agent *a)
{
        const struct agent_config *c = &a->config;
        int r = 0;

        if (c->rdma_shared_config)
                r = asprintf(&a->rdma_shared_source, "file %s", c->rdma_shared_config);
        else if (!c->policy_dir && c->rdma_shared_configmap && *c->rdma_shared_configmap)
                r = asprintf(&a->rdma_shared_source, "ConfigMap %s key config.json",
                             c->rdma_shared_configmap);
        if (r < 0) {
                a->rdma_shared_source = NULL;
                return -ENOMEM;
        }
        return 0;
}

/* ---- polling when inotify is not available --------------------------------------------- */

/* Every entry of the policy directory (names, sizes, modification times, inodes): a changed,
 * added, removed or renamed file changes it. 0 for a directory that cannot be read. */
static uint64_t policy_dir_fingerprint(const char *dir)
{
        struct dirent **names = NULL;
        int n = scandir(dir, &names, NULL, alphasort);
        uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a */
        for (int i = 0; i < n; i++) {
                char path[PATH_MAX];
                struct stat st = { 0 };
                if (snprintf(path, sizeof(path), "%s/%s", dir, names[i]->d_name) <
                    (int)sizeof(path))
                        (void)stat(path, &st);
                const uint64_t parts[] = { (uint64_t)st.st_size, (uint64_t)st.st_mtim.tv_sec,
                                           (uint64_t)st.st_mtim.tv_nsec, (uint64_t)st.st_ino };
                for (const char *c = names[i]->d_name; *c; c++)
                        h = (h ^ (uint8_t)*c) * 0x100000001b3ULL;
                for (size_t k = 0; k < ELEMENTSOF(parts); k++)
                        h = (h ^ parts[k]) * 0x100000001b3ULL;
                free(names[i]);
        }
        free(names);
        return n < 0 ? 0 : h;
}

static int on_file_poll(sd_event_source *s, uint64_t usec, void *userdata)
{
        struct agent *a = userdata;
        if (a->poll_policy_dir) {
                uint64_t fp = policy_dir_fingerprint(a->config.policy_dir);
                if (fp != a->policy_dir_fingerprint) {
                        a->policy_dir_fingerprint = fp;
                        agent_schedule_reconcile(a, "policy files changed");
                }
        }
        if (a->poll_rdma_shared && load_rdma_shared(a) > 0)
                agent_schedule_reconcile(a, "RDMA shared config changed");
        sd_event_source_set_time_relative(s, FILE_POLL_USEC);
        return sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
}

/* what could not be watched with inotify (error r) is polled from now on; said once. */
static int poll_instead(struct agent *a, const char *what, int r)
{
        log_warning_errno(r,
                          "cannot watch %s with inotify; checking it every %llu s instead "
                          "(is fs.inotify.max_user_instances used up on this node?)",
                          what, FILE_POLL_USEC / 1000000ULL);
        if (a->file_poll)
                return 0;
        r = sd_event_add_time_relative(a->event, &a->file_poll, CLOCK_MONOTONIC, FILE_POLL_USEC,
                                       FILE_POLL_USEC / 10, on_file_poll, a);
        if (r < 0)
                return log_error_errno(r, "cannot poll %s either", what);
        return 0;
}

/* What the NodeState's Event says while something is polled for want of inotify (NULL: all is
 * watched). */
const char *agent_polling_notice(const struct agent *a)
{
        if (!a->poll_policy_dir && !a->poll_rdma_shared &&
            !(a->plugins && dp_manager_polling(a->plugins)))
                return NULL;
        return "no inotify instance available (fs.inotify.max_user_instances used up on this "
               "node): the kubelet directory and the configuration files are polled every "
               "second or two instead";
}

static int on_rdma_shared_dir(sd_event_source *s, const struct inotify_event *ev, void *userdata)
{
        struct agent *a = userdata;
        if (load_rdma_shared(a) > 0)
                agent_schedule_reconcile(a, "RDMA shared config changed");
        return 0;
}

/* The file may be written in place, replaced by rename, or (a ConfigMap volume) swapped with
 * its directory's ..data link: watch the directory. */
static void watch_rdma_shared(struct agent *a)
{
        const char *path = a->config.rdma_shared_config;
        if (!path)
                return;
        _cleanup_free_ char *dir = strdup(path);
        if (!dir)
                return;
        char *slash = strrchr(dir, '/');
        if (!slash)
                strcpy(dir, ".");
        else if (slash == dir)
                slash[1] = 0;
        else
                *slash = 0;
        int r = sd_event_add_inotify(a->event, &a->rdma_shared_watch, dir,
                                     IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE |
                                         IN_DELETE,
                                     on_rdma_shared_dir, a);
        if (r < 0) {
                a->poll_rdma_shared = true;
                (void)poll_instead(a, dir, r);
        }
}

static int on_sighup(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata)
{
        struct agent *a = userdata;

        log_info("SIGHUP: reloading configuration");
        if (a->config.rdma_shared_config) {
                /* re-read and re-report even if unchanged (a ConfigMap is watched instead) */
                free(a->rdma_shared_text);
                a->rdma_shared_text = NULL;
                free(a->rdma_shared_error);
                a->rdma_shared_error = NULL;
                (void)load_rdma_shared(a);
        }
        return schedule(a, "SIGHUP", true);
}

static void released(void *userdata)
{
        struct agent *a = userdata;
        sd_event_exit(a->event, 0);
}

static int on_release_timeout(sd_event_source *s, uint64_t usec, void *userdata)
{
        log_warning("shutdown: the Lease release did not finish in time; exiting anyway");
        return sd_event_exit(sd_event_source_get_event(s), 0);
}

void agent_notify_ready(struct agent *a, const char *why)
{
        if (a->ready_notified)
                return;
        a->ready_notified = true;
        a->ready_timer = sd_event_source_disable_unref(a->ready_timer);
        log_debug("ready (READY=1): %s", why);
        sd_notify(false, "READY=1");
}

static int on_ready_timeout(sd_event_source *s, uint64_t usec, void *userdata)
{
        struct agent *a = userdata;
        log_warning("not ready after %llu s (--ready-timeout): notifying readiness anyway so "
                    "that the kubelet is not held; the apply goes on",
                    (unsigned long long)(a->config.ready_timeout_usec / 1000000ULL));
        sd_notify(false, "STATUS=ready timeout: the recorded state is still being applied");
        agent_notify_ready(a, "--ready-timeout");
        return 0;
}

/* A node shutdown: every device Unhealthy first, so that the kubelet places no pod on them
 * while it winds down. A restart or upgrade: they stay Healthy until the sockets close (the
 * kubelet marks them unhealthy itself then, until the new process registers), so a pod
 * admitted meanwhile is not rejected for a device the agent still serves. */
static bool stopping_for_shutdown(const struct agent *a)
{
        const char *why = NULL;
        switch (a->config.stop_mode) {
        case STOP_MODE_RESTART:
                log_info("stop: a restart (--stop-mode restart); devices stay Healthy");
                return false;
        case STOP_MODE_SHUTDOWN:
                log_info("stop: a shutdown (--stop-mode shutdown); reporting devices Unhealthy");
                return true;
        case STOP_MODE_AUTO:
        default:
                break;
        }
        int r = node_shutting_down(300 * 1000ULL, &why);
        if (r > 0)
                log_info("stop: the node is shutting down (%s); reporting devices Unhealthy", why);
        else if (r == 0)
                log_info("stop: a restart, the node is not shutting down (%s); devices stay "
                         "Healthy until the sockets close",
                         why);
        else
                log_info("stop: taken for a restart (%s: %s); devices stay Healthy until the "
                         "sockets close",
                         why, strerror(-r));
        return r > 0;
}

/* How long a stopping agent keeps serving the kubelet's connections after it ended the
 * streams. The kubelet closes a device plugin's connection as soon as its ListAndWatch stream
 * ends (and a DRA connection once the GOAWAY's calls are answered), so this bounds only a
 * kubelet that does not: every millisecond of it delays the next process's registration. */
#define DRAIN_GRACE_USEC (500 * 1000ULL)

static uint64_t ms_since(const struct agent *a, uint64_t since)
{
        uint64_t now = 0;
        (void)sd_event_now(a->event, CLOCK_MONOTONIC, &now);
        return now > since ? (now - since) / 1000 : 0;
}

/* The kubelet's connections are closed: the rest of the stop. */
static void stop_after_drain(struct agent *a)
{
        log_info("stop: the kubelet's connections closed %llu ms after the signal",
                 (unsigned long long)ms_since(a, a->stop_usec));
        dp_manager_close(a->plugins);
        reconcile_abort(a);
        /* Nothing touches a PF or a record any more: the next process may start serving now,
         * without waiting for the Lease release below (an API server round trip). */
        if (a->state_lock_fd >= 0) {
                close(a->state_lock_fd);
                a->state_lock_fd = -1;
        }
        /* The NAD renderer's Lease is handed back so another node takes over within seconds
         * instead of after its 30 s expiry; bounded, so a dead API server cannot hold us. */
        if (a->cluster && kube_cluster_release(a->cluster, released, a) == 0) {
                /* A bound on shutdown, not a deadline: 100 ms of slack is fine. */
                if (sd_event_add_time_relative(a->event, NULL, CLOCK_MONOTONIC, 3 * 1000000ULL,
                                               100 * 1000, on_release_timeout, a) >= 0)
                        return;
        }
        sd_event_exit(a->event, 0);
}

static void drained(void *userdata)
{
        struct agent *a = userdata;
        if (--a->n_draining == 0)
                stop_after_drain(a);
}

static int on_terminate(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata)
{
        struct agent *a = userdata;

        if (a->stopping) {
                log_info("%s again: not waiting for the kubelet's connections any more",
                         strsignal((int)si->ssi_signo));
                return sd_event_exit(a->event, 0);
        }
        a->stopping = true;
        (void)sd_event_now(a->event, CLOCK_MONOTONIC, &a->stop_usec);
        log_info("%s: stopping (VFs are kept)", strsignal((int)si->ssi_signo));
        sd_notify(false, "STOPPING=1");
        (void)sd_event_source_set_enabled(a->debounce, SD_EVENT_OFF);
        /* Before anything that can wait (an apply process finishing a VF-count change): on a
         * shutdown the kubelet must stop placing pods now, not when the kernel is done; on a
         * restart the streams must end now so that the new process is not kept waiting.
         * Whatever the kubelet sent until now (while the bus was asked, too) is answered before
         * its streams end: it closes the connection then, and a call still on it would fail. */
        bool shutdown = stopping_for_shutdown(a);
        a->n_draining = 3; /* device plugin, DRA driver, and this function */
        dp_manager_stop(a->plugins, shutdown, DRAIN_GRACE_USEC, drained, a);
        agent_dra_drain(a, DRAIN_GRACE_USEC, drained);
        drained(a);
        return 0;
}

/* One agent per state dir: two would reset each other's PFs and fight over sriov_numvfs. The
 * lock lives on the open directory, which the apply process shares, so a restarted agent also
 * waits for the apply process of one that was killed (it ends after at most one VF-count
 * change, bounded by --vf-timeout). */
static int lock_state_dir(const struct agent_config *c, int *ret_fd)
{
        *ret_fd = -1;
        if (!c->state_dir || c->dry_run)
                return 0;
        if (mkdir(c->state_dir, 0755) < 0 && errno != EEXIST)
                return log_error_errno(errno, "cannot create state directory %s", c->state_dir);
        int fd = open(c->state_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return log_error_errno(errno == ENOTDIR ? -ELOOP : errno,
                                       "state directory %s: cannot open it (a symlink is refused)",
                                       c->state_dir);
        uint64_t waited = 0, limit = c->vf_timeout_usec + 2 * 1000000ULL;
        while (flock(fd, LOCK_EX | LOCK_NB) < 0) {
                if (errno == EINTR)
                        continue;
                if (errno != EWOULDBLOCK) {
                        int r = -errno;
                        close(fd);
                        return log_error_errno(r, "cannot lock state directory %s", c->state_dir);
                }
                if (waited == 0)
                        log_warning("state directory %s is locked by another sriov-agent or by the "
                                    "apply process of one that stopped; waiting up to %llu s",
                                    c->state_dir, (unsigned long long)(limit / 1000000ULL));
                if (waited >= limit) {
                        close(fd);
                        return log_error_errno(-EBUSY,
                                               "state directory %s is still locked: another "
                                               "sriov-agent is running with it on this node",
                                               c->state_dir);
                }
                /* Every 10 ms: on a restart this wait is part of the kubelet's time without
                 * an endpoint, and a flock() attempt costs nothing. */
                usleep(10 * 1000);
                waited += 10 * 1000;
        }
        *ret_fd = fd;
        return 0;
}

int agent_new(const struct agent_config *config, struct agent **ret)
{
        struct agent *a = calloc(1, sizeof(*a));
        int r;

        if (!a)
                return -ENOMEM;
        _cleanup_free_ char *labels_error = NULL; /* before any goto fail: it is freed there */

        a->config = *config;
        a->state_lock_fd = -1;
        a->rdma_mode_now = -1;
        r = lock_state_dir(config, &a->state_lock_fd);
        if (r < 0)
                goto fail;
        r = sd_event_new(&a->event);
        if (r < 0)
                goto fail;
        r = node_labels_parse(config->node_labels, &a->labels, &a->n_labels, &labels_error);
        if (r < 0) {
                log_error_errno(r, "--node-labels: %s", labels_error ? labels_error : "invalid");
                goto fail;
        }
        if (config->node_name &&
            (r = node_labels_set(&a->labels, &a->n_labels, "kubernetes.io/hostname",
                                 config->node_name)) < 0)
                goto fail;
        r = rdma_shared_describe_source(a);
        if (r < 0)
                goto fail;
        r = load_rdma_shared(a); /* a bad file is reported, never fatal */
        if (r < 0)
                goto fail;
        watch_rdma_shared(a);

        const struct dp_manager_options dp_opts = {
                .kubelet_dir = config->kubelet_dir,
                .devinfo_dir = config->devinfo_dir,
        };
        r = dp_manager_new(a->event, &dp_opts, &a->plugins);
        if (r < 0) {
                log_error_errno(r, "cannot start the device plugin (kubelet directory %s)",
                                config->kubelet_dir ? config->kubelet_dir
                                                    : "/var/lib/kubelet/device-plugins");
                goto fail;
        }

        r = agent_dra_parse_resources(config->dra_resources, &a->dra_resources,
                                      &a->n_dra_resources);
        if (r >= 0)
                r = agent_dra_start(a);
        if (r < 0)
                goto fail;

        sigset_t mask;
        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGHUP);
        sigaddset(&mask, SIGCHLD); /* sd-event child sources (the apply process) need it */
        sigprocmask(SIG_BLOCK, &mask, NULL);
        if ((r = sd_event_add_signal(a->event, NULL, SIGTERM, on_terminate, a)) < 0 ||
            (r = sd_event_add_signal(a->event, NULL, SIGINT, on_terminate, a)) < 0 ||
            (r = sd_event_add_signal(a->event, NULL, SIGHUP, on_sighup, a)) < 0)
                goto fail;

        /* Explicit accuracies (sd-event's default is 250 ms): the debounce is on the path from
         * a link event to an advertised VF, the resync is a periodic check, the retry a backoff.
         * Standalone, the first reconcile is the boot apply and serves the pools: at once, as
         * there is nothing to collapse yet and on a restart the kubelet has no endpoint until
         * then (cluster mode applies the records in agent_run() and waits as before). */
        uint64_t first = config->policy_dir ? 0 : config->debounce_usec;
        if ((r = sd_event_add_time_relative(a->event, &a->debounce, CLOCK_MONOTONIC, first,
                                            10 * 1000, on_debounce, a)) < 0 ||
            (r = sd_event_add_time_relative(
                 a->event, &a->resync, CLOCK_MONOTONIC, config->resync_usec,
                 resync_accuracy_usec(config->resync_usec), on_resync, a)) < 0 ||
            (r = sd_event_add_time_relative(a->event, &a->retry, CLOCK_MONOTONIC, RETRY_MIN_USEC,
                                            100 * 1000, on_retry, a)) < 0)
                goto fail;
        sd_event_source_set_enabled(a->retry, SD_EVENT_OFF);

        /* Also under a generated --sysfs-root: its netdev names are then followed in the
         * agent's network namespace (tests pair them with veths there). */
        r = host_link_monitor_new(a->event, 0, on_link_event, a, &a->links);
        if (r < 0)
                log_warning_errno(r, "no netlink link events; drift and link changes are found "
                                     "by the periodic check only");
        /* Only a live /sys has uevents for its devices. */
        if (host_sysfs_root_is_live(config->sysfs_root) &&
            (r = host_uevent_monitor_new(a->event, on_uevent, a, &a->uevents)) < 0)
                log_notice("no uevents (%s): a VF on vfio-pci that vanishes is found by the "
                           "periodic check",
                           strerror(-r));

        if (!config->policy_dir) {
                const struct kube_cluster_opts kube_opts = {
                        .kubeconfig = config->kubeconfig,
                        .namespace_ = config->namespace_,
                        .node_name = config->node_name,
                        .resource_prefix = config->resource_prefix,
                        .render_nads = config->nad_controller,
                        .on_change = on_cluster_change,
                        .userdata = a,
                };
                r = kube_cluster_new(a->event, &kube_opts, &a->cluster);
                if (r < 0) {
                        log_error_errno(r, "cannot talk to the API server");
                        goto fail;
                }
                if (config->rdma_shared_configmap && *config->rdma_shared_configmap) {
                        r = rdma_configmap_new(a, kube_cluster_http(a->cluster),
                                               config->rdma_shared_configmap, &a->rdma_configmap);
                        if (r < 0)
                                goto fail;
                }
                r = agent_dra_publisher_new(a);
                if (r < 0)
                        goto fail;
        } else {
                r = sd_event_add_inotify(a->event, &a->policy_watch, config->policy_dir,
                                         POLICY_DIR_EVENTS, on_policy_dir, a);
                if (r < 0) {
                        a->poll_policy_dir = true;
                        a->policy_dir_fingerprint = policy_dir_fingerprint(config->policy_dir);
                        r = poll_instead(a, config->policy_dir, r);
                        if (r < 0)
                                goto fail;
                }
        }
        r = nic_list_new(a, &a->nics);
        if (r < 0)
                goto fail;
        r = agent_metrics_start(a);
        if (r < 0)
                goto fail;
        *ret = a;
        return 0;
fail:
        agent_free(a);
        return r;
}

int agent_run(struct agent *a)
{
        char source[512];
        if (a->config.policy_dir)
                snprintf(source, sizeof(source), "%s", a->config.policy_dir);
        else
                snprintf(source, sizeof(source), "the API server (namespace %s, node %s)",
                         a->config.namespace_ ? a->config.namespace_ : KUBE_DEFAULT_NAMESPACE,
                         a->config.node_name);
        log_info("sriov-agent %s starting: policies from %s, sysfs %s%s", SRIOV_AGENT_VERSION,
                 source, a->config.sysfs_root ? a->config.sysfs_root : "/sys",
                 a->config.dry_run ? ", dry run" : "");
        log_info("RDMA shared config (whole-card pools) from %s%s",
                 a->rdma_shared_source ? a->rdma_shared_source : "nowhere: none",
                 a->rdma_shared_source && a->config.rdma_shared_config && a->rdma_configmap
                     ? " (it wins over the ConfigMap)"
                     : (a->rdma_configmap ? " (watched)" : ""));
        rdma_mode_start(a); /* before the first reconcile reports it */
        if (a->config.ready_timeout_usec > 0 &&
            sd_event_add_time_relative(a->event, &a->ready_timer, CLOCK_MONOTONIC,
                                       a->config.ready_timeout_usec, 100 * 1000, on_ready_timeout,
                                       a) < 0)
                log_warning("cannot arm --ready-timeout; readiness waits for the first apply");
        /* Cluster mode: what the records say is applied before the API server is asked
         * anything (its connections start when the loop runs), and without waiting for it. */
        if (a->cluster && !a->config.dry_run)
                reconcile_start_from_records(a, on_reconcile_done, a);
        uint64_t watchdog_usec;
        if (sd_watchdog_enabled(false, &watchdog_usec) > 0)
                sd_event_set_watchdog(a->event, true);
        return sd_event_loop(a->event);
}

struct agent *agent_free(struct agent *a)
{
        if (!a)
                return NULL;
        agent_metrics_stop(a); /* first: a scrape waiting for the kubelet is answered 503 */
        reconcile_abort(a);
        sd_event_source_unref(a->debounce);
        sd_event_source_unref(a->resync);
        sd_event_source_unref(a->retry);
        sd_event_source_disable_unref(a->ready_timer);
        sd_event_source_unref(a->policy_watch);
        sd_event_source_disable_unref(a->file_poll);
        nic_list_free(a->nics);
        link_health_free(a);
        rdma_configmap_free(a->rdma_configmap); /* its informer uses the cluster's HTTP */
        agent_dra_stop(a);                      /* so does the ResourceSlice publisher */
        kube_cluster_free(a->cluster);
        host_link_monitor_free(a->links);
        host_uevent_monitor_free(a->uevents);
        dp_manager_free(a->plugins);
        sd_event_unref(a->event);
        inventory_done(&a->observed);
        node_labels_free(a->labels, a->n_labels);
        rdma_shared_config_done(&a->rdma_shared);
        sd_event_source_disable_unref(a->rdma_shared_watch);
        free(a->rdma_shared_text);
        free(a->rdma_shared_error);
        free(a->rdma_shared_error_posted);
        free(a->rdma_shared_source);
        free(a->last_report);
        free(a->rdma_reboot_needed);
        if (a->state_lock_fd >= 0)
                close(a->state_lock_fd);
        free(a);
        return NULL;
}
