/* SPDX-License-Identifier: Apache-2.0 */
/* One device-plugin server: serves one pool as a kubelet resource and registers it.
 *
 * Socket <kubelet_dir>/<prefix>_<name>.sock; Register (v1beta1, endpoint = socket file name,
 * resource "<prefix>/<name>", get_preferred_allocation_available) to <kubelet_dir>/kubelet.sock,
 * retried with backoff (10 ms doubling to 5 s) while the kubelet is absent or refuses.
 * RPCs: GetDevicePluginOptions, ListAndWatch (whole list at once, again on every change),
 * GetPreferredAllocation (preferred.h), Allocate (allocate.h; device-info files written for
 * SR-IOV devices and removed when the device leaves the pool or the plugin stops),
 * PreStartContainer (no-op). The manager (manager.h) owns plugins and tells them when the
 * kubelet restarted. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include <systemd/sd-event.h>

#include "deviceplugin/pool.h"
#include "metrics/histogram.h"
#include "util/macro.h"

#define DP_KUBELET_DIR_DEFAULT "/var/lib/kubelet/device-plugins"
#define DP_KUBELET_SOCKET      "kubelet.sock"

struct dp_plugin;

struct dp_plugin_options {
        const char *kubelet_dir; /* must outlive the plugin */
        const char *devinfo_dir;
};

/* Copies the pool, starts serving and registering. */
int dp_plugin_new(sd_event *event, const struct dp_plugin_options *opts, const struct dp_pool *pool,
                  struct dp_plugin **ret);
/* Replaces the pool (same resource); pushes the new list to every ListAndWatch stream if it
 * differs. */
int dp_plugin_update(struct dp_plugin *p, const struct dp_pool *pool);
/* Sends every device as Unhealthy to the open ListAndWatch streams (graceful stop). */
void dp_plugin_report_unhealthy(struct dp_plugin *p);
/* Checks the socket and kubelet.sock: recreates a removed socket, registers again with a new
 * kubelet (a kubelet.sock file other than the one we registered with: device, inode and ctime,
 * as inode numbers are reused at once). Cheap; called on inotify events and periodically.
 * Returns true when it started a registration. */
bool dp_plugin_check(struct dp_plugin *p);
typedef void (*dp_plugin_drained_fn)(struct dp_plugin *p, void *userdata);
/* A graceful stop (the agent restarts or stops): answers every call the kubelet has already
 * sent, removes the socket, ends the ListAndWatch streams (after reporting every device
 * Unhealthy when unhealthy_first), then serves the connections until the kubelet closes them,
 * as it does when a stream ends, or grace_usec passed. done then runs (possibly at once) and
 * may free the plugin; until it is freed the plugin neither registers nor serves anew, and
 * dp_plugin_update() changes nothing. */
void dp_plugin_drain(struct dp_plugin *p, bool unhealthy_first, uint64_t grace_usec,
                     dp_plugin_drained_fn done, void *userdata);
/* Stops serving, removes its socket and device-info files. NULL-safe; returns NULL. */
struct dp_plugin *dp_plugin_free(struct dp_plugin *p);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct dp_plugin *, dp_plugin_free);

const struct dp_pool *dp_plugin_pool(const struct dp_plugin *p);
const char *dp_plugin_socket_name(const struct dp_plugin *p);
bool dp_plugin_is_registered(const struct dp_plugin *p);
size_t dp_plugin_n_watchers(const struct dp_plugin *p);

/* What this plugin did since it started, for the metrics endpoint. */
struct dp_plugin_stats {
        uint64_t registrations;         /* accepted by the kubelet */
        uint64_t registration_failures; /* refused or unanswered (each is retried) */
        uint64_t allocate_ok, allocate_refused;
        struct metrics_histogram allocate_seconds; /* every Allocate, answered or refused */
};
const struct dp_plugin_stats *dp_plugin_stats(const struct dp_plugin *p);
