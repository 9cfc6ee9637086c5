/* SPDX-License-Identifier: Apache-2.0 */
/* The embedded device plugin as the agent uses it: every pool served by its own plugin.
 *
 *   dp_manager_new(event, &opts, &m);          // watches the kubelet directory
 *   dp_manager_set_pools(m, &pools);           // any time: new/changed/gone resources
 *   dp_manager_shutdown(m); dp_manager_free(m); // devices Unhealthy first, then GOAWAY
 *
 * set_pools() diffs by resource name: new resources get a plugin (socket + Register), gone ones
 * are stopped (socket and device-info files removed), changed ones push the new list to
 * ListAndWatch at once. Kubelet restarts are noticed with inotify on the kubelet directory
 * (our socket removed, kubelet.sock created) plus a 30 s safety check, and answered by serving
 * the socket anew and registering again. Without an inotify instance (the user's
 * fs.inotify.max_user_instances used up) the check runs every second instead, said once in the
 * journal. Everything runs on the caller's sd-event loop. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <systemd/sd-event.h>

#include "deviceplugin/plugin.h"
#include "deviceplugin/pool.h"
#include "util/macro.h"

struct dp_manager;

struct dp_manager_options {
        const char *kubelet_dir; /* NULL = /var/lib/kubelet/device-plugins */
        const char *devinfo_dir; /* NULL = /var/run/k8s.cni.cncf.io/devinfo/dp */
};

int dp_manager_new(sd_event *event, const struct dp_manager_options *opts, struct dp_manager **ret);
/* Pools are copied. Returns 0, or the first error (other resources are still applied). */
int dp_manager_set_pools(struct dp_manager *m, const struct dp_pool_set *pools);
/* The agent stops: every plugin answers what the kubelet already sent and ends its streams,
 * after reporting every device Unhealthy when unhealthy_first (dp_plugin_drain), and serves
 * until the kubelet closes the connections or grace_usec passed; done(userdata) then runs,
 * possibly before this returns. From here on the pools stay as they are and kubelet restarts
 * are not followed; free the plugins with dp_manager_close() once done ran. */
void dp_manager_stop(struct dp_manager *m, bool unhealthy_first, uint64_t grace_usec,
                     void (*done)(void *userdata), void *userdata);
/* Reports every device Unhealthy on the open ListAndWatch streams and stops every plugin. */
void dp_manager_shutdown(struct dp_manager *m);
/* Stops every plugin without a last word on health (an agent restart): the streams and sockets
 * close, the kubelet keeps the devices' health as last sent until the new process registers. */
void dp_manager_close(struct dp_manager *m);
struct dp_manager *dp_manager_free(struct dp_manager *m);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct dp_manager *, dp_manager_free);

/* A copy of every pool served now (for dp_pools_build's previous). */
int dp_manager_get_pools(const struct dp_manager *m, struct dp_pool_set *ret);
size_t dp_manager_n_plugins(const struct dp_manager *m);
struct dp_plugin *dp_manager_plugin(const struct dp_manager *m, size_t i);
bool dp_manager_all_registered(const struct dp_manager *m);
/* True when the kubelet directory is polled because inotify was not available. */
bool dp_manager_polling(const struct dp_manager *m);
