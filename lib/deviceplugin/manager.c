/* SPDX-License-Identifier: Apache-2.0 */
#include "deviceplugin/manager.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "deviceplugin/allocate.h"
#include "util/array.h"
#include "util/log.h"
#include "util/macro.h"

/* inotify on the kubelet directory sees kubelet restarts at once; this check only covers a
 * missed event. At the agent's default resync interval, with 1 s accuracy so that sd-event can
 * wake up once for both: an idle agent wakes ~2 times per 30 s, not 7. */
#define SAFETY_CHECK_USEC     (30 * 1000000ULL)
#define SAFETY_CHECK_ACCURACY (1000000ULL)
/* Without inotify (a node whose daemons used up the per-user instances) the same check runs
 * every second instead: a kubelet restart is then noticed within a second, for a stat() of
 * each plugin's socket. */
#define POLL_USEC     (1000000ULL)
#define POLL_ACCURACY (100000ULL)

struct dp_manager {
        sd_event *event;
        char *kubelet_dir, *devinfo_dir;
        int inotify_fd;
        sd_event_source *inotify_source, *check_defer, *check_timer;
        bool polling; /* no inotify: check_timer runs every POLL_USEC */
        struct dp_plugin **plugins;
        size_t n_plugins, cap_plugins;
        bool stopping;     /* dp_manager_stop() started: pools and plugins stay as they are */
        size_t n_draining; /* plugins not drained yet */
        void (*stopped)(void *userdata);
        void *stopped_userdata;
};

static void check_all(struct dp_manager *m)
{
        for (size_t i = 0; i < m->n_plugins; i++)
                (void)dp_plugin_check(m->plugins[i]);
}

static int on_check(sd_event_source *s, void *userdata)
{
        sd_event_source_set_enabled(s, SD_EVENT_OFF);
        check_all(userdata);
        return 0;
}

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
        struct dp_manager *m = userdata;
        check_all(m);
        sd_event_source_set_time_relative(s, m->polling ? POLL_USEC : SAFETY_CHECK_USEC);
        sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
        return 0;
}

static int watch_dir(struct dp_manager *m)
{
        if (inotify_add_watch(m->inotify_fd, m->kubelet_dir,
                              IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE_SELF |
                                  IN_MOVE_SELF | IN_ONLYDIR) < 0)
                return negative_errno();
        return 0;
}

static int add_watch(struct dp_manager *m)
{
        int r = watch_dir(m);
        if (r < 0)
                return log_warning_errno(r, "cannot watch %s", m->kubelet_dir);
        return 0;
}

/* Any change in the directory: re-check every plugin once this burst of events is read. */
static int on_inotify(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
        struct dp_manager *m = userdata;
        union {
                struct inotify_event ev;
                char buf[4096];
        } u;
        bool dir_gone = false;
        for (;;) {
                ssize_t n = read(fd, u.buf, sizeof(u.buf));
                if (n <= 0)
                        break;
                for (char *p = u.buf; p < u.buf + n;) {
                        const struct inotify_event *ev = (const struct inotify_event *)p;
                        if (ev->mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED))
                                dir_gone = true;
                        p += sizeof(*ev) + ev->len;
                }
        }
        if (dir_gone) {
                /* The directory was replaced: recreate and watch the new one. */
                (void)mkdir(m->kubelet_dir, 0755);
                (void)add_watch(m);
        }
        sd_event_source_set_enabled(m->check_defer, SD_EVENT_ONESHOT);
        return 0;
}

int dp_manager_new(sd_event *event, const struct dp_manager_options *opts, struct dp_manager **ret)
{
        _cleanup_(dp_manager_freep) struct dp_manager *m = calloc(1, sizeof(*m));
        if (!m)
                return -ENOMEM;
        m->event = sd_event_ref(event);
        m->inotify_fd = -1;
        m->kubelet_dir = strdup(opts->kubelet_dir ?: DP_KUBELET_DIR_DEFAULT);
        m->devinfo_dir = strdup(opts->devinfo_dir ?: DP_DEVINFO_DIR_DEFAULT);
        if (!m->kubelet_dir || !m->devinfo_dir)
                /* cppcheck-suppress memleak ; _cleanup_ frees it */
                /* NOLINTNEXTLINE(clang-analyzer-unix.Malloc): _cleanup_ frees it */
                return -ENOMEM;
        if (mkdir(m->kubelet_dir, 0755) < 0 && errno != EEXIST)
                /* cppcheck-suppress memleak ; _cleanup_ frees it */
                return negative_errno(); /* the caller logs, naming the directory */
        m->inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        int r = m->inotify_fd < 0 ? negative_errno() : watch_dir(m);
        if (r < 0) {
                /* EMFILE: the user's inotify instances (fs.inotify.max_user_instances, 128 by
                 * default) are taken by other daemons; ENOSPC: its watches. Keep working. */
                log_warning_errno(r,
                                  "cannot watch %s with inotify; checking it every %llu s for "
                                  "kubelet restarts instead",
                                  m->kubelet_dir, POLL_USEC / 1000000ULL);
                if (m->inotify_fd >= 0)
                        close(m->inotify_fd);
                m->inotify_fd = -1;
                m->polling = true;
        } else {
                r = sd_event_add_io(event, &m->inotify_source, m->inotify_fd, EPOLLIN, on_inotify,
                                    m);
                if (r < 0)
                        return r;
        }
        r = sd_event_add_defer(event, &m->check_defer, on_check, m);
        if (r < 0)
                return r;
        sd_event_source_set_enabled(m->check_defer, SD_EVENT_OFF);
        r = sd_event_add_time_relative(
            event, &m->check_timer, CLOCK_MONOTONIC, m->polling ? POLL_USEC : SAFETY_CHECK_USEC,
            m->polling ? POLL_ACCURACY : SAFETY_CHECK_ACCURACY, on_timer, m);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(m);
        return 0;
}

bool dp_manager_polling(const struct dp_manager *m)
{
        return m->polling;
}

static struct dp_plugin *find_plugin(struct dp_manager *m, const char *resource, size_t *ret_i)
{
        for (size_t i = 0; i < m->n_plugins; i++)
                if (strcmp(dp_plugin_pool(m->plugins[i])->resource, resource) == 0) {
                        if (ret_i)
                                *ret_i = i;
                        return m->plugins[i];
                }
        return NULL;
}

int dp_manager_set_pools(struct dp_manager *m, const struct dp_pool_set *pools)
{
        int ret = 0;
        if (m->stopping)
                return 0; /* the streams have ended; the next process serves the change */
        /* Stop plugins whose resource is gone. */
        for (size_t i = 0; i < m->n_plugins;) {
                const struct dp_pool *old = dp_plugin_pool(m->plugins[i]);
                if (dp_pool_set_find(pools, old->resource)) {
                        i++;
                        continue;
                }
                log_ctx_msg(LOG_INFO, 0, &(const struct log_ctx){ .resource = old->resource },
                            "resource no longer configured: stopping its device plugin");
                dp_plugin_report_unhealthy(m->plugins[i]);
                dp_plugin_free(m->plugins[i]);
                m->plugins[i] = m->plugins[--m->n_plugins];
        }
        for (size_t i = 0; i < pools->n_pools; i++) {
                const struct dp_pool *pool = &pools->pools[i];
                struct dp_plugin *p = find_plugin(m, pool->resource, NULL);
                int r;
                if (p) {
                        r = dp_plugin_update(p, pool);
                } else {
                        if (GROW_ARRAY(m->plugins, m->cap_plugins, m->n_plugins + 1) < 0)
                                return -ENOMEM;
                        struct dp_plugin_options o = { .kubelet_dir = m->kubelet_dir,
                                                       .devinfo_dir = m->devinfo_dir };
                        r = dp_plugin_new(m->event, &o, pool, &p);
                        if (r >= 0)
                                m->plugins[m->n_plugins++] = p;
                }
                if (r < 0 && ret == 0)
                        ret = r;
        }
        return ret;
}

static void plugin_drained(struct dp_plugin *p, void *userdata)
{
        struct dp_manager *m = userdata;
        if (--m->n_draining > 0 || !m->stopped)
                return;
        void (*fn)(void *) = m->stopped;
        m->stopped = NULL;
        fn(m->stopped_userdata);
}

void dp_manager_stop(struct dp_manager *m, bool unhealthy_first, uint64_t grace_usec,
                     void (*done)(void *userdata), void *userdata)
{
        m->stopping = true;
        /* No kubelet restart is followed any more: a socket would only be served anew. */
        m->inotify_source = sd_event_source_disable_unref(m->inotify_source);
        (void)sd_event_source_set_enabled(m->check_defer, SD_EVENT_OFF);
        (void)sd_event_source_set_enabled(m->check_timer, SD_EVENT_OFF);
        m->stopped = done;
        m->stopped_userdata = userdata;
        /* Counted before any starts: a plugin with nothing to wait for is done at once. */
        m->n_draining = m->n_plugins + 1;
        for (size_t i = 0; i < m->n_plugins; i++)
                dp_plugin_drain(m->plugins[i], unhealthy_first, grace_usec, plugin_drained, m);
        plugin_drained(NULL, m);
}

void dp_manager_shutdown(struct dp_manager *m)
{
        for (size_t i = 0; i < m->n_plugins; i++)
                dp_plugin_report_unhealthy(m->plugins[i]);
        for (size_t i = 0; i < m->n_plugins; i++)
                dp_plugin_free(m->plugins[i]);
        m->n_plugins = 0;
}

void dp_manager_close(struct dp_manager *m)
{
        for (size_t i = 0; i < m->n_plugins; i++)
                dp_plugin_free(m->plugins[i]);
        m->n_plugins = 0;
}

struct dp_manager *dp_manager_free(struct dp_manager *m)
{
        if (!m)
                return NULL;
        for (size_t i = 0; i < m->n_plugins; i++)
                dp_plugin_free(m->plugins[i]);
        free(m->plugins);
        m->inotify_source = sd_event_source_disable_unref(m->inotify_source);
        m->check_defer = sd_event_source_disable_unref(m->check_defer);
        m->check_timer = sd_event_source_disable_unref(m->check_timer);
        if (m->inotify_fd >= 0)
                close(m->inotify_fd);
        free(m->kubelet_dir);
        free(m->devinfo_dir);
        sd_event_unref(m->event);
        free(m);
        return NULL;
}

size_t dp_manager_n_plugins(const struct dp_manager *m)
{
        return m->n_plugins;
}

struct dp_plugin *dp_manager_plugin(const struct dp_manager *m, size_t i)
{
        return i < m->n_plugins ? m->plugins[i] : NULL;
}

bool dp_manager_all_registered(const struct dp_manager *m)
{
        for (size_t i = 0; i < m->n_plugins; i++)
                if (!dp_plugin_is_registered(m->plugins[i]))
                        return false;
        return true;
}

int dp_manager_get_pools(const struct dp_manager *m, struct dp_pool_set *ret)
{
        struct dp_pool_set s = { 0 };
        if (m->n_plugins > 0) {
                s.pools = calloc(m->n_plugins, sizeof(*s.pools));
                if (!s.pools)
                        return -ENOMEM;
        }
        for (size_t i = 0; i < m->n_plugins; i++) {
                int r = dp_pool_copy(dp_plugin_pool(m->plugins[i]), &s.pools[i]);
                if (r < 0) {
                        dp_pool_set_done(&s);
                        return r;
                }
                s.n_pools = i + 1;
        }
        *ret = s;
        return 0;
}
