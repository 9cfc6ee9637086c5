/* SPDX-License-Identifier: Apache-2.0 */
#include "deviceplugin/plugin.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "deviceplugin.pb-c.h"
#include "deviceplugin/allocate.h"
#include "deviceplugin/pb-pack.h"
#include "deviceplugin/preferred.h"
#include "grpc/grpc-client.h"
#include "grpc/grpc-server.h"
#include "util/log.h"
#include "util/macro.h"
#include "util/parse.h"

#include "deviceplugin/plugin-internal.h"

/* ---- ListAndWatch ---- */

static int pack_list(const struct dp_pool *pool, bool all_unhealthy, uint8_t **ret, size_t *ret_len)
{
        size_t n = pool->n_devices;
        V1beta1__ListAndWatchResponse resp = V1BETA1__LIST_AND_WATCH_RESPONSE__INIT;
        _cleanup_free_ V1beta1__Device *devs = calloc(n ?: 1, sizeof(*devs));
        _cleanup_free_ V1beta1__Device **ptrs = calloc(n ?: 1, sizeof(*ptrs));
        _cleanup_free_ V1beta1__TopologyInfo *topos = calloc(n ?: 1, sizeof(*topos));
        _cleanup_free_ V1beta1__NUMANode *nodes = calloc(n ?: 1, sizeof(*nodes));
        _cleanup_free_ V1beta1__NUMANode **node_ptrs = calloc(n ?: 1, sizeof(*node_ptrs));
        if (!devs || !ptrs || !topos || !nodes || !node_ptrs)
                /* NOLINTNEXTLINE(clang-analyzer-unix.Malloc): _cleanup_ frees it */
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                const struct dp_device *d = &pool->devices[i];
                devs[i] = (V1beta1__Device)V1BETA1__DEVICE__INIT;
                devs[i].id = (char *)d->id;
                devs[i].health = (char *)(d->healthy && !all_unhealthy ? DP_HEALTHY : DP_UNHEALTHY);
                if (d->numa_node >= 0) {
                        nodes[i] = (V1beta1__NUMANode)V1BETA1__NUMANODE__INIT;
                        nodes[i].id = d->numa_node;
                        node_ptrs[i] = &nodes[i];
                        topos[i] = (V1beta1__TopologyInfo)V1BETA1__TOPOLOGY_INFO__INIT;
                        topos[i].n_nodes = 1;
                        topos[i].nodes = &node_ptrs[i];
                        devs[i].topology = &topos[i];
                }
                ptrs[i] = &devs[i];
        }
        resp.n_devices = n;
        resp.devices = ptrs;
        return dp_pack(&resp.base, ret, ret_len);
}

static void send_to_watchers(struct dp_plugin *p, const uint8_t *msg, size_t len)
{
        /* A send can end its own stream (client too slow), freeing w: step first. */
        for (struct watcher *w = p->watchers, *next; w; w = next) {
                next = w->next;
                if (grpc_call_send(w->call, msg, len) < 0)
                        log_ctx_msg(LOG_DEBUG, 0, LOG_RES(p), "ListAndWatch client not reachable");
        }
}

static void watcher_closed(struct grpc_call *call, void *userdata)
{
        struct watcher *w = userdata;
        struct dp_plugin *p = w->plugin;
        for (struct watcher **pp = &p->watchers; *pp; pp = &(*pp)->next)
                if (*pp == w) {
                        *pp = w->next;
                        break;
                }
        log_ctx_msg(LOG_DEBUG, 0, LOG_RES(p), "ListAndWatch stream closed");
        free(w);
}

static int on_list_and_watch(void *userdata, struct grpc_call *call, const uint8_t *req, size_t len,
                             struct grpc_status *st)
{
        struct dp_plugin *p = userdata;
        V1beta1__Empty *e = v1beta1__empty__unpack(NULL, len, req);
        if (!e)
                return grpc_fail(st, GRPC_STATUS_INVALID_ARGUMENT, "malformed Empty request");
        v1beta1__empty__free_unpacked(e, NULL);

        _cleanup_free_ uint8_t *msg = NULL;
        size_t n;
        if (pack_list(&p->pool, false, &msg, &n) < 0)
                return grpc_fail(st, GRPC_STATUS_RESOURCE_EXHAUSTED, "out of memory");
        struct watcher *w = calloc(1, sizeof(*w));
        if (!w)
                return grpc_fail(st, GRPC_STATUS_RESOURCE_EXHAUSTED, "out of memory");
        *w = (struct watcher){ .call = call, .plugin = p, .next = p->watchers };
        p->watchers = w;
        grpc_call_set_closed_handler(call, watcher_closed, w);
        (void)grpc_call_send(call, msg, n);
        log_ctx_msg(LOG_INFO, 0, LOG_RES(p), "ListAndWatch: sent %zu devices", p->pool.n_devices);
        return GRPC_STATUS_OK;
}

/* ---- unary RPCs ---- */

static int on_get_options(void *userdata, const uint8_t *req, size_t len, uint8_t **ret,
                          size_t *ret_len, struct grpc_status *st)
{
        V1beta1__Empty *e = v1beta1__empty__unpack(NULL, len, req);
        if (!e)
                return grpc_fail(st, GRPC_STATUS_INVALID_ARGUMENT, "malformed Empty request");
        v1beta1__empty__free_unpacked(e, NULL);
        V1beta1__DevicePluginOptions opts = V1BETA1__DEVICE_PLUGIN_OPTIONS__INIT;
        opts.get_preferred_allocation_available = true;
        return dp_pack_reply(&opts.base, ret, ret_len, st);
}

static int on_prestart(void *userdata, const uint8_t *req, size_t len, uint8_t **ret,
                       size_t *ret_len, struct grpc_status *st)
{
        V1beta1__PreStartContainerRequest *r =
            v1beta1__pre_start_container_request__unpack(NULL, len, req);
        if (!r)
                return grpc_fail(st, GRPC_STATUS_INVALID_ARGUMENT, "malformed request");
        v1beta1__pre_start_container_request__free_unpacked(r, NULL);
        V1beta1__PreStartContainerResponse resp = V1BETA1__PRE_START_CONTAINER_RESPONSE__INIT;
        return dp_pack_reply(&resp.base, ret, ret_len, st);
}

static void preferred_request_freep(V1beta1__PreferredAllocationRequest **r)
{
        if (*r)
                v1beta1__preferred_allocation_request__free_unpacked(*r, NULL);
}

static void allocate_request_freep(V1beta1__AllocateRequest **r)
{
        if (*r)
                v1beta1__allocate_request__free_unpacked(*r, NULL);
}

static int on_preferred(void *userdata, const uint8_t *req, size_t len, uint8_t **ret,
                        size_t *ret_len, struct grpc_status *st)
{
        struct dp_plugin *p = userdata;
        _cleanup_(preferred_request_freep) V1beta1__PreferredAllocationRequest *r =
            v1beta1__preferred_allocation_request__unpack(NULL, len, req);
        if (!r)
                return grpc_fail(st, GRPC_STATUS_INVALID_ARGUMENT,
                                 "malformed PreferredAllocationRequest");
        size_t n = r->n_container_requests;
        V1beta1__PreferredAllocationResponse resp = V1BETA1__PREFERRED_ALLOCATION_RESPONSE__INIT;
        V1beta1__ContainerPreferredAllocationResponse *crs = calloc(n ?: 1, sizeof(*crs));
        V1beta1__ContainerPreferredAllocationResponse **ptrs = calloc(n ?: 1, sizeof(*ptrs));
        int code = GRPC_STATUS_OK;
        if (!crs || !ptrs)
                code = grpc_fail(st, GRPC_STATUS_RESOURCE_EXHAUSTED, "out of memory");
        for (size_t i = 0; code == GRPC_STATUS_OK && i < n; i++) {
                const V1beta1__ContainerPreferredAllocationRequest *c = r->container_requests[i];
                crs[i] = (V1beta1__ContainerPreferredAllocationResponse)
                    V1BETA1__CONTAINER_PREFERRED_ALLOCATION_RESPONSE__INIT;
                ptrs[i] = &crs[i];
                if (c->allocation_size < 0)
                        code = grpc_fail(st, GRPC_STATUS_INVALID_ARGUMENT,
                                         "allocation_size %d is negative", c->allocation_size);
                else if (dp_preferred_allocation(
                             &p->pool, c->available_deviceids, c->n_available_deviceids,
                             c->must_include_deviceids, c->n_must_include_deviceids,
                             (size_t)c->allocation_size, (const char ***)&crs[i].deviceids,
                             &crs[i].n_deviceids) < 0)
                        code = grpc_fail(st, GRPC_STATUS_RESOURCE_EXHAUSTED, "out of memory");
        }
        if (code == GRPC_STATUS_OK) {
                resp.n_container_responses = n;
                resp.container_responses = ptrs;
                code = dp_pack_reply(&resp.base, ret, ret_len, st);
        }
        for (size_t i = 0; crs && i < n; i++)
                free(crs[i].deviceids);
        free(crs);
        free(ptrs);
        return code;
}

static void remember_devinfo(struct dp_plugin *p, const struct dp_device *d)
{
        if (p->pool.kind != DP_POOL_SRIOV)
                return;
        /* The content only depends on the pool: a file we wrote and that is still there is
         * current (pool changes remove the files of devices that went). */
        char path[4096];
        if (strv_contains(p->devinfo_ids, p->n_devinfo_ids, d->id) &&
            dp_devinfo_path(p->devinfo_dir, p->pool.resource, d->id, path, sizeof(path)) >= 0 &&
            access(path, F_OK) == 0)
                return;
        int r = dp_devinfo_write(p->devinfo_dir, &p->pool, d);
        if (r < 0) {
                log_ctx_msg(LOG_WARNING, r,
                            &(const struct log_ctx){ .resource = p->pool.resource, .vf = d->id },
                            "cannot write the device-info file in %s", p->devinfo_dir);
                return;
        }
        if (!strv_contains(p->devinfo_ids, p->n_devinfo_ids, d->id))
                (void)strv_push_dup(&p->devinfo_ids, &p->n_devinfo_ids, d->id);
}

/* Protobuf views of one container's allocation; the strings stay owned by `a`. */
struct container_view {
        V1beta1__ContainerAllocateResponse resp;
        V1beta1__ContainerAllocateResponse__EnvsEntry *envs, **env_ptrs;
        V1beta1__DeviceSpec *specs, **spec_ptrs;
};

static int view_init(struct container_view *v, const struct dp_container_allocation *a)
{
        *v = (struct container_view){ .resp = V1BETA1__CONTAINER_ALLOCATE_RESPONSE__INIT };
        v->envs = calloc(a->n_envs ?: 1, sizeof(*v->envs));
        v->env_ptrs = calloc(a->n_envs ?: 1, sizeof(*v->env_ptrs));
        v->specs = calloc(a->n_specs ?: 1, sizeof(*v->specs));
        v->spec_ptrs = calloc(a->n_specs ?: 1, sizeof(*v->spec_ptrs));
        if (!v->envs || !v->env_ptrs || !v->specs || !v->spec_ptrs)
                return -ENOMEM;
        for (size_t i = 0; i < a->n_envs; i++) {
                v->envs[i] = (V1beta1__ContainerAllocateResponse__EnvsEntry)
                    V1BETA1__CONTAINER_ALLOCATE_RESPONSE__ENVS_ENTRY__INIT;
                v->envs[i].key = a->env_keys[i];
                v->envs[i].value = a->env_values[i];
                v->env_ptrs[i] = &v->envs[i];
        }
        for (size_t i = 0; i < a->n_specs; i++) {
                v->specs[i] = (V1beta1__DeviceSpec)V1BETA1__DEVICE_SPEC__INIT;
                v->specs[i].container_path = (char *)a->specs[i].container_path;
                v->specs[i].host_path = (char *)a->specs[i].host_path;
                v->specs[i].permissions = (char *)a->specs[i].permissions;
                v->spec_ptrs[i] = &v->specs[i];
        }
        v->resp.n_envs = a->n_envs;
        v->resp.envs = v->env_ptrs;
        v->resp.n_devices = a->n_specs;
        v->resp.devices = v->spec_ptrs;
        return 0;
}

static void view_done(struct container_view *v)
{
        free(v->envs);
        free(v->env_ptrs);
        free(v->specs);
        free(v->spec_ptrs);
}

static int compare_id_ptr(const void *a, const void *b)
{
        return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Checked before any per-device work, so a hostile request (a 4 MiB message is ~250,000 IDs)
 * costs at most a sort of the pool's size per container: the kubelet never asks for one device
 * twice for a container, nor for more than the pool has. (Init containers may be given the
 * devices their app containers get, so the same ID in two containers is allowed, within
 * MAX_ALLOCATE_FACTOR times the pool in all.) */
#define MAX_ALLOCATE_FACTOR 16

static int check_request_ids(const struct dp_plugin *p, const V1beta1__AllocateRequest *r,
                             struct grpc_status *st)
{
        size_t total = 0, pool = p->pool.n_devices;
        for (size_t i = 0; i < r->n_container_requests; i++) {
                size_t n = r->container_requests[i]->n_devices_ids;
                total += n;
                if (n > pool || total > pool * MAX_ALLOCATE_FACTOR)
                        return grpc_fail(st, GRPC_STATUS_INVALID_ARGUMENT,
                                         "%zu device IDs requested, resource %s has %zu devices",
                                         n > pool ? n : total, p->pool.resource, pool);
        }
        for (size_t i = 0; i < r->n_container_requests; i++) {
                const V1beta1__ContainerAllocateRequest *c = r->container_requests[i];
                if (c->n_devices_ids < 2)
                        continue;
                _cleanup_free_ char **ids = malloc(c->n_devices_ids * sizeof(*ids));
                if (!ids)
                        return grpc_fail(st, GRPC_STATUS_RESOURCE_EXHAUSTED, "out of memory");
                memcpy(ids, c->devices_ids, c->n_devices_ids * sizeof(*ids));
                qsort(ids, c->n_devices_ids, sizeof(*ids), compare_id_ptr);
                for (size_t j = 1; j < c->n_devices_ids; j++)
                        if (strcmp(ids[j - 1], ids[j]) == 0)
                                return grpc_fail(st, GRPC_STATUS_INVALID_ARGUMENT,
                                                 "device ID \"%.64s\" requested more than once "
                                                 "for one container of resource %s",
                                                 ids[j], p->pool.resource);
        }
        return GRPC_STATUS_OK;
}

static int allocate(struct dp_plugin *p, const uint8_t *req, size_t len, uint8_t **ret,
                    size_t *ret_len, struct grpc_status *st)
{
        _cleanup_(allocate_request_freep) V1beta1__AllocateRequest *r =
            v1beta1__allocate_request__unpack(NULL, len, req);
        if (!r)
                return grpc_fail(st, GRPC_STATUS_INVALID_ARGUMENT, "malformed AllocateRequest");
        int early = check_request_ids(p, r, st);
        if (early != GRPC_STATUS_OK) {
                log_ctx_msg(LOG_WARNING, 0, LOG_RES(p), "Allocate refused: %s", st->message);
                return early;
        }
        size_t n = r->n_container_requests;
        struct dp_container_allocation *allocs = calloc(n ?: 1, sizeof(*allocs));
        struct container_view *views = calloc(n ?: 1, sizeof(*views));
        V1beta1__ContainerAllocateResponse **ptrs = calloc(n ?: 1, sizeof(*ptrs));
        int code = GRPC_STATUS_OK;
        if (!allocs || !views || !ptrs)
                code = grpc_fail(st, GRPC_STATUS_RESOURCE_EXHAUSTED, "out of memory");
        size_t done = 0;
        for (; code == GRPC_STATUS_OK && done < n; done++) {
                const V1beta1__ContainerAllocateRequest *c = r->container_requests[done];
                code = dp_allocate_container(&p->pool, c->devices_ids, c->n_devices_ids,
                                             &allocs[done], st);
                if (code != GRPC_STATUS_OK)
                        break;
                if (view_init(&views[done], &allocs[done]) < 0)
                        code = grpc_fail(st, GRPC_STATUS_RESOURCE_EXHAUSTED, "out of memory");
                ptrs[done] = &views[done].resp;
        }
        if (code == GRPC_STATUS_OK) {
                V1beta1__AllocateResponse resp = V1BETA1__ALLOCATE_RESPONSE__INIT;
                resp.n_container_responses = n;
                resp.container_responses = ptrs;
                code = dp_pack_reply(&resp.base, ret, ret_len, st);
        }
        if (code == GRPC_STATUS_OK)
                for (size_t i = 0; i < n; i++)
                        for (size_t j = 0; j < r->container_requests[i]->n_devices_ids; j++)
                                remember_devinfo(
                                    p, dp_pool_find_device(
                                           &p->pool, r->container_requests[i]->devices_ids[j]));
        if (code == GRPC_STATUS_OK)
                log_ctx_msg(LOG_INFO, 0, LOG_RES(p), "Allocate: %zu container(s)", n);
        else
                log_ctx_msg(LOG_WARNING, 0, LOG_RES(p), "Allocate refused: %s", st->message);
        for (size_t i = 0; i < n && allocs && views; i++) {
                view_done(&views[i]);
                dp_container_allocation_done(&allocs[i]);
        }
        free(allocs);
        free(views);
        free(ptrs);
        return code;
}

static double monotonic_seconds(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int on_allocate(void *userdata, const uint8_t *req, size_t len, uint8_t **ret,
                       size_t *ret_len, struct grpc_status *st)
{
        struct dp_plugin *p = userdata;
        double start = monotonic_seconds();
        int code = allocate(p, req, len, ret, ret_len, st);
        metrics_histogram_observe(&p->stats.allocate_seconds, monotonic_seconds() - start);
        if (code == GRPC_STATUS_OK)
                p->stats.allocate_ok++;
        else
                p->stats.allocate_refused++;
        return code;
}

static const struct grpc_method plugin_methods[] = {
        { .path = "/v1beta1.DevicePlugin/GetDevicePluginOptions", .unary = on_get_options },
        { .path = "/v1beta1.DevicePlugin/ListAndWatch", .stream = on_list_and_watch },
        { .path = "/v1beta1.DevicePlugin/GetPreferredAllocation", .unary = on_preferred },
        { .path = "/v1beta1.DevicePlugin/Allocate", .unary = on_allocate },
        { .path = "/v1beta1.DevicePlugin/PreStartContainer", .unary = on_prestart },
};

static int serve(struct dp_plugin *p)
{
        p->server = grpc_server_free(p->server);
        int r = grpc_server_new(p->event, p->socket_path, plugin_methods,
                                ELEMENTSOF(plugin_methods), p, &p->server);
        if (r < 0)
                return log_ctx_msg(LOG_ERR, r, LOG_RES(p), "cannot serve on %s", p->socket_path);
        return 0;
}

static bool same_file(const struct stat *a, const struct stat *b)
{
        return a->st_dev == b->st_dev && a->st_ino == b->st_ino &&
               a->st_ctim.tv_sec == b->st_ctim.tv_sec && a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

static bool socket_present(const char *path)
{
        struct stat st;
        return stat(path, &st) == 0 && S_ISSOCK(st.st_mode);
}

bool dp_plugin_check(struct dp_plugin *p)
{
        if (p->draining)
                return false;
        if (!socket_present(p->socket_path)) {
                log_ctx_msg(LOG_NOTICE, 0, LOG_RES(p),
                            "socket %s removed (kubelet restart?): serving anew", p->socket_path);
                if (serve(p) < 0)
                        return false;
                p->backoff_usec = 0;
                dp_plugin_register_now(p);
                return true;
        }
        struct stat st;
        if (stat(p->kubelet_socket, &st) == 0 && !same_file(&st, &p->kubelet_st)) {
                log_ctx_msg(LOG_NOTICE, 0, LOG_RES(p), "new kubelet socket: registering again");
                p->backoff_usec = 0;
                dp_plugin_register_now(p);
                return true;
        }
        return false;
}

int dp_plugin_new(sd_event *event, const struct dp_plugin_options *opts, const struct dp_pool *pool,
                  struct dp_plugin **ret)
{
        _cleanup_(dp_plugin_freep) struct dp_plugin *p = calloc(1, sizeof(*p));
        if (!p)
                return -ENOMEM;
        p->event = sd_event_ref(event);
        metrics_histogram_init(&p->stats.allocate_seconds, metrics_duration_bounds,
                               metrics_n_duration_bounds);
        p->kubelet_dir = opts->kubelet_dir ?: DP_KUBELET_DIR_DEFAULT;
        p->devinfo_dir = opts->devinfo_dir ?: DP_DEVINFO_DIR_DEFAULT;
        int r = dp_pool_copy(pool, &p->pool); /* leaves p->pool empty when it fails */
        if (r < 0)
                return r;
        snprintf(p->socket_name, sizeof(p->socket_name), "%s_%s.sock", pool->prefix, pool->name);
        if (path_printf(p->socket_path, sizeof(p->socket_path), "%s/%s", p->kubelet_dir,
                        p->socket_name) < 0 ||
            path_printf(p->kubelet_socket, sizeof(p->kubelet_socket), "%s/%s", p->kubelet_dir,
                        DP_KUBELET_SOCKET) < 0)
                return log_ctx_msg(LOG_ERR, ENAMETOOLONG, LOG_RES(p), "socket path too long");
        (void)dp_devinfo_remove_all(p->devinfo_dir, p->pool.resource);
        r = serve(p);
        if (r < 0)
                return r;
        (void)pack_list(&p->pool, false, &p->last_list, &p->last_list_len);
        dp_plugin_register_now(p);
        *ret = TAKE_PTR(p);
        return 0;
}

int dp_plugin_update(struct dp_plugin *p, const struct dp_pool *pool)
{
        if (p->draining)
                return 0; /* the streams have ended; the next process serves the change */
        struct dp_pool copy;
        int r = dp_pool_copy(pool, &copy);
        if (r < 0)
                return r;
        /* Device-info files of devices that left the pool go with them; those of devices that
         * stay are rewritten (an RDMA device name may have changed). */
        for (size_t i = 0; i < p->n_devinfo_ids;) {
                const struct dp_device *kept = dp_pool_find_device(&copy, p->devinfo_ids[i]);
                if (kept) {
                        (void)dp_devinfo_write(p->devinfo_dir, &copy, kept);
                        i++;
                        continue;
                }
                (void)dp_devinfo_remove(p->devinfo_dir, p->pool.resource, p->devinfo_ids[i]);
                free(p->devinfo_ids[i]);
                p->devinfo_ids[i] = p->devinfo_ids[--p->n_devinfo_ids];
        }
        dp_pool_done(&p->pool);
        p->pool = copy;

        _cleanup_free_ uint8_t *msg = NULL;
        size_t len = 0;
        r = pack_list(&p->pool, false, &msg, &len);
        if (r < 0)
                return r;
        if (p->last_list && len == p->last_list_len && memcmp(msg, p->last_list, len) == 0)
                return 0;
        free(p->last_list);
        p->last_list = TAKE_PTR(msg);
        p->last_list_len = len;
        log_ctx_msg(LOG_INFO, 0, LOG_RES(p), "pool changed: %zu devices, updating %zu watcher(s)",
                    p->pool.n_devices, dp_plugin_n_watchers(p));
        send_to_watchers(p, p->last_list, len);
        return 1;
}

void dp_plugin_report_unhealthy(struct dp_plugin *p)
{
        _cleanup_free_ uint8_t *msg = NULL;
        size_t len;
        if (pack_list(&p->pool, true, &msg, &len) < 0)
                return;
        send_to_watchers(p, msg, len);
}

static void on_drained(struct grpc_server *s, void *userdata)
{
        struct dp_plugin *p = userdata;
        log_ctx_msg(LOG_DEBUG, 0, LOG_RES(p), "every kubelet connection closed");
        dp_plugin_drained_fn fn = p->drained;
        p->drained = NULL;
        fn(p, p->drained_userdata); /* may free p */
}

void dp_plugin_drain(struct dp_plugin *p, bool unhealthy_first, uint64_t grace_usec,
                     dp_plugin_drained_fn done, void *userdata)
{
        /* The new process registers; this one must not race it. */
        grpc_client_call_cancel(p->register_call);
        p->register_call = NULL;
        p->retry_timer = sd_event_source_disable_unref(p->retry_timer);
        p->draining = true;
        if (!p->server) {
                done(p, userdata);
                return;
        }
        /* Everything the kubelet sent before this moment is answered before its stream ends:
         * the kubelet closes the connection when it sees the end, and a call still on it
         * would fail (the pod is then rejected with UnexpectedAdmissionError). */
        uint64_t answered = p->stats.allocate_ok + p->stats.allocate_refused;
        grpc_server_quiesce(p->server);
        answered = p->stats.allocate_ok + p->stats.allocate_refused - answered;
        if (unhealthy_first)
                dp_plugin_report_unhealthy(p);
        size_t n_watchers = dp_plugin_n_watchers(p);
        grpc_server_finish_calls(p->server, NULL, NULL, GRPC_STATUS_UNAVAILABLE,
                                 "device plugin stopping");
        log_ctx_msg(LOG_INFO, 0, LOG_RES(p),
                    "stopping: %" PRIu64 " Allocate(s) already sent answered, %zu ListAndWatch "
                    "stream(s) ended; serving the kubelet's connections until it closes them "
                    "(at most %" PRIu64 " ms)",
                    answered, n_watchers, grace_usec / 1000);
        p->drained = done;
        p->drained_userdata = userdata;
        int r = grpc_server_drain(p->server, grace_usec, false, on_drained, p);
        if (r < 0) {
                log_ctx_msg(LOG_WARNING, r, LOG_RES(p), "cannot wait for the kubelet to close");
                p->drained = NULL;
                done(p, userdata);
        }
}

struct dp_plugin *dp_plugin_free(struct dp_plugin *p)
{
        if (!p)
                return NULL;
        grpc_client_call_cancel(p->register_call);
        p->retry_timer = sd_event_source_disable_unref(p->retry_timer);
        p->server = grpc_server_free(p->server); /* closes the watchers through their handlers */
        for (size_t i = 0; i < p->n_devinfo_ids; i++)
                (void)dp_devinfo_remove(p->devinfo_dir, p->pool.resource, p->devinfo_ids[i]);
        strv_free_n(p->devinfo_ids, p->n_devinfo_ids);
        free(p->last_list);
        dp_pool_done(&p->pool);
        sd_event_unref(p->event);
        free(p);
        return NULL;
}

const struct dp_pool *dp_plugin_pool(const struct dp_plugin *p)
{
        return &p->pool;
}

const char *dp_plugin_socket_name(const struct dp_plugin *p)
{
        return p->socket_name;
}

const struct dp_plugin_stats *dp_plugin_stats(const struct dp_plugin *p)
{
        return &p->stats;
}

bool dp_plugin_is_registered(const struct dp_plugin *p)
{
        return p->registered;
}

size_t dp_plugin_n_watchers(const struct dp_plugin *p)
{
        size_t n = 0;
        for (const struct watcher *w = p->watchers; w; w = w->next)
                n++;
        return n;
}
