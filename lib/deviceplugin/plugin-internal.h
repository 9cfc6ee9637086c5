/* SPDX-License-Identifier: Apache-2.0 */
/* The plugin's state, shared by its RPC handlers (plugin.c) and its registration with the
 * kubelet (plugin-register.c). Not for use outside those two files. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include <systemd/sd-event.h>

#include "deviceplugin/plugin.h"
#include "deviceplugin/pool.h"
#include "grpc/grpc-client.h"
#include "grpc/grpc-server.h"
#include "util/log.h"

struct watcher {
        struct grpc_call *call;
        struct dp_plugin *plugin;
        struct watcher *next;
};

struct dp_plugin {
        sd_event *event;
        const char *kubelet_dir, *devinfo_dir;
        struct dp_pool pool;
        char socket_name[DP_RESOURCE_MAX + 8];
        char socket_path[4096];
        char kubelet_socket[4096];
        struct grpc_server *server;
        struct watcher *watchers;
        uint8_t *last_list; /* packed ListAndWatchResponse last sent */
        size_t last_list_len;
        struct grpc_client_call *register_call;
        sd_event_source *retry_timer;
        uint64_t backoff_usec;
        bool registered;
        struct stat kubelet_st; /* kubelet.sock we registered with (zero: none) */
        char **devinfo_ids;     /* device-info files we wrote */
        size_t n_devinfo_ids;
        struct dp_plugin_stats stats;
        bool draining; /* dp_plugin_drain() started: no registration, no serving anew */
        dp_plugin_drained_fn drained;
        void *drained_userdata;
};

#define LOG_RES(p) (&(const struct log_ctx){ .resource = (p)->pool.resource })

/* Registers now (cancelling a registration under way); on failure retries with backoff
 * (10 ms doubling to 5 s). Logs itself: it runs from timers, with no caller to tell. */
void dp_plugin_register_now(struct dp_plugin *p);
