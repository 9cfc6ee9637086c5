/* SPDX-License-Identifier: Apache-2.0 */
#include "dra/plugin.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>

#include "deviceplugin/pb-pack.h"
#include "drahealth.pb-c.h"
#include "draplugin.pb-c.h"
#include "grpc/grpc-server.h"
#include "pluginregistration.pb-c.h"
#include "util/fileio.h"
#include "util/log.h"
#include "util/macro.h"
#include "util/parse.h"
#include "util/strv.h"

#define CHECK_INTERVAL_USEC (5 * 1000000ULL)
#define PLUGIN_TYPE         "DRAPlugin"

struct dra_plugin {
        sd_event *event;
        const char *driver;
        const struct dra_handlers *handlers;
        void *userdata;
        char registry_dir[4096], endpoint_dir[4096];
        char registration_socket[4096], endpoint[4096];
        struct grpc_server *registration, *service;
        sd_event_source *registry_watch, *check_timer;
        bool registered;
        struct health_watcher *health_watchers;
        char *health_pool;
        struct dra_device_health *health; /* strings owned */
        size_t n_health;
        uint64_t health_sent_usec; /* CLOCK_MONOTONIC of the last send to every watcher */
        bool draining;             /* dra_plugin_drain() started: no serving anew */
        dra_plugin_drained_fn drained;
        void *drained_userdata;
};

struct health_watcher {
        struct grpc_call *call;
        struct dra_plugin *plugin;
        struct health_watcher *next;
};

#define LOG_DRV(p) (&(const struct log_ctx){ .resource = (p)->driver })

void dra_claim_result_done(struct dra_claim_result *r)
{
        for (size_t i = 0; i < r->n_devices; i++) {
                struct dra_prepared_device *d = &r->devices[i];
                strv_free_n(d->request_names, d->n_request_names);
                strv_free_n(d->cdi_ids, d->n_cdi_ids);
                free(d->pool);
                free(d->device);
        }
        free(r->devices);
        free(r->error);
        *r = (struct dra_claim_result){ 0 };
}

/* ---- pluginregistration.Registration ---- */

static int on_get_info(void *userdata, const uint8_t *req, size_t len, uint8_t **ret,
                       size_t *ret_len, struct grpc_status *st)
{
        struct dra_plugin *p = userdata;
        Pluginregistration__InfoRequest *r =
            pluginregistration__info_request__unpack(NULL, len, req);
        if (!r)
                return grpc_fail(st, GRPC_STATUS_INVALID_ARGUMENT, "malformed InfoRequest");
        pluginregistration__info_request__free_unpacked(r, NULL);
        static const char *const versions[] = { "v1.DRAPlugin", "v1beta1.DRAPlugin" };
        Pluginregistration__PluginInfo info = PLUGINREGISTRATION__PLUGIN_INFO__INIT;
        info.type = (char *)PLUGIN_TYPE;
        info.name = (char *)p->driver;
        info.endpoint = p->endpoint;
        info.n_supported_versions = ELEMENTSOF(versions);
        info.supported_versions = (char **)versions;
        log_ctx_msg(LOG_DEBUG, 0, LOG_DRV(p), "GetInfo: endpoint %s", p->endpoint);
        return dp_pack_reply(&info.base, ret, ret_len, st);
}

static int on_registration_status(void *userdata, const uint8_t *req, size_t len, uint8_t **ret,
                                  size_t *ret_len, struct grpc_status *st)
{
        struct dra_plugin *p = userdata;
        Pluginregistration__RegistrationStatus *r =
            pluginregistration__registration_status__unpack(NULL, len, req);
        if (!r)
                return grpc_fail(st, GRPC_STATUS_INVALID_ARGUMENT, "malformed RegistrationStatus");
        p->registered = r->plugin_registered;
        if (r->plugin_registered)
                log_ctx_msg(LOG_INFO, 0, LOG_DRV(p), "registered with the kubelet (endpoint %s)",
                            p->endpoint);
        else
                log_ctx_msg(LOG_ERR, 0, LOG_DRV(p), "the kubelet refused the DRA driver: %s",
                            r->error && *r->error ? r->error : "(no reason given)");
        pluginregistration__registration_status__free_unpacked(r, NULL);
        if (p->handlers && p->handlers->registration)
                p->handlers->registration(p->userdata, p->registered);
        Pluginregistration__RegistrationStatusResponse resp =
            PLUGINREGISTRATION__REGISTRATION_STATUS_RESPONSE__INIT;
        return dp_pack_reply(&resp.base, ret, ret_len, st);
}

static const struct grpc_method registration_methods[] = {
        { .path = "/pluginregistration.Registration/GetInfo", .unary = on_get_info },
        { .path = "/pluginregistration.Registration/NotifyRegistrationStatus",
          .unary = on_registration_status },
};

/* ---- DRAPlugin (v1 and v1beta1 share their messages) ---- */

static struct dra_claim claim_view(const Dra__Claim *c)
{
        return (struct dra_claim){ .namespace_ = c->namespace_, .uid = c->uid, .name = c->name };
}

static void unprepare_request_freep(Dra__NodeUnprepareResourcesRequest **r)
{
        if (*r)
                dra__node_unprepare_resources_request__free_unpacked(*r, NULL);
}

/* Protobuf views of one claim's answer; the strings stay owned by the result. */
struct claim_view {
        Dra__NodePrepareResourcesResponse__ClaimsEntry entry;
        Dra__NodePrepareResourceResponse resp;
        Dra__Device *devs, **dev_ptrs;
};

static int claim_view_init(struct claim_view *v, const char *uid, const struct dra_claim_result *r)
{
        v->entry = (Dra__NodePrepareResourcesResponse__ClaimsEntry)
            DRA__NODE_PREPARE_RESOURCES_RESPONSE__CLAIMS_ENTRY__INIT;
        v->resp = (Dra__NodePrepareResourceResponse)DRA__NODE_PREPARE_RESOURCE_RESPONSE__INIT;
        v->entry.key = (char *)uid;
        v->entry.value = &v->resp;
        if (r->error) {
                v->resp.error = r->error;
                return 0;
        }
        v->devs = calloc(r->n_devices ?: 1, sizeof(*v->devs));
        v->dev_ptrs = calloc(r->n_devices ?: 1, sizeof(*v->dev_ptrs));
        if (!v->devs || !v->dev_ptrs)
                return -ENOMEM;
        for (size_t i = 0; i < r->n_devices; i++) {
                const struct dra_prepared_device *d = &r->devices[i];
                v->devs[i] = (Dra__Device)DRA__DEVICE__INIT;
                v->devs[i].n_request_names = d->n_request_names;
                v->devs[i].request_names = d->request_names;
                v->devs[i].pool_name = d->pool;
                v->devs[i].device_name = d->device;
                v->devs[i].n_cdi_device_ids = d->n_cdi_ids;
                v->devs[i].cdi_device_ids = d->cdi_ids;
                v->dev_ptrs[i] = &v->devs[i];
        }
        v->resp.n_devices = r->n_devices;
        v->resp.devices = v->dev_ptrs;
        return 0;
}

struct dra_prepare {
        struct dra_plugin *plugin;
        struct grpc_call *call; /* NULL once the kubelet went away */
        Dra__NodePrepareResourcesRequest *request;
        struct dra_claim *claims;
        struct dra_claim_result *results;
        size_t n;
};

size_t dra_prepare_n_claims(const struct dra_prepare *req)
{
        return req->n;
}

const struct dra_claim *dra_prepare_claim(const struct dra_prepare *req, size_t i)
{
        return &req->claims[i];
}

struct dra_claim_result *dra_prepare_result(struct dra_prepare *req, size_t i)
{
        return &req->results[i];
}

static void prepare_free(struct dra_prepare *req)
{
        for (size_t i = 0; req->results && i < req->n; i++)
                dra_claim_result_done(&req->results[i]);
        free(req->results);
        free(req->claims);
        if (req->request)
                dra__node_prepare_resources_request__free_unpacked(req->request, NULL);
        free(req);
}

static void prepare_call_closed(struct grpc_call *call, void *userdata)
{
        struct dra_prepare *req = userdata;
        req->call = NULL; /* the owner still finishes it; the answer goes nowhere */
}

static int pack_prepare_response(struct dra_prepare *req, uint8_t **ret, size_t *ret_len)
{
        size_t n = req->n;
        struct claim_view *views = calloc(n ?: 1, sizeof(*views));
        Dra__NodePrepareResourcesResponse__ClaimsEntry **entries = calloc(n ?: 1, sizeof(*entries));
        int r = views && entries ? 0 : -ENOMEM;
        for (size_t i = 0; r == 0 && i < n; i++) {
                r = claim_view_init(&views[i], req->claims[i].uid, &req->results[i]);
                entries[i] = &views[i].entry;
        }
        if (r == 0) {
                Dra__NodePrepareResourcesResponse resp = DRA__NODE_PREPARE_RESOURCES_RESPONSE__INIT;
                resp.n_claims = n;
                resp.claims = entries;
                r = dp_pack(&resp.base, ret, ret_len);
        }
        for (size_t i = 0; views && i < n; i++) {
                free(views[i].devs);
                free(views[i].dev_ptrs);
        }
        free(views);
        free(entries);
        return r;
}

void dra_prepare_done(struct dra_prepare *req)
{
        struct dra_plugin *p = req->plugin;
        for (size_t i = 0; i < req->n; i++) {
                const struct dra_claim *c = &req->claims[i];
                if (req->results[i].error)
                        log_ctx_msg(LOG_WARNING, 0, LOG_DRV(p),
                                    "NodePrepareResources: claim %s/%s (%s): %s", c->namespace_,
                                    c->name, c->uid, req->results[i].error);
                else
                        log_ctx_msg(LOG_INFO, 0, LOG_DRV(p),
                                    "NodePrepareResources: claim %s/%s (%s): %zu device(s)",
                                    c->namespace_, c->name, c->uid, req->results[i].n_devices);
        }
        if (req->call) {
                _cleanup_free_ uint8_t *msg = NULL;
                size_t len = 0;
                grpc_call_set_closed_handler(req->call, NULL, NULL);
                if (pack_prepare_response(req, &msg, &len) < 0)
                        (void)grpc_call_finish(req->call, GRPC_STATUS_RESOURCE_EXHAUSTED,
                                               "out of memory");
                else if (grpc_call_send(req->call, msg, len) >= 0)
                        (void)grpc_call_finish(req->call, GRPC_STATUS_OK, NULL);
        } else
                log_ctx_msg(LOG_NOTICE, 0, LOG_DRV(p),
                            "NodePrepareResources: the kubelet went away before the answer");
        prepare_free(req);
}

/* A unary method served as a stream that sends one message: the answer may wait for the API
 * server, and the wire is the same for the kubelet. */
static int on_prepare(void *userdata, struct grpc_call *call, const uint8_t *data, size_t len,
                      struct grpc_status *st)
{
        struct dra_plugin *p = userdata;
        struct dra_prepare *req = calloc(1, sizeof(*req));
        if (!req)
                return grpc_fail(st, GRPC_STATUS_RESOURCE_EXHAUSTED, "out of memory");
        req->plugin = p;
        req->request = dra__node_prepare_resources_request__unpack(NULL, len, data);
        if (!req->request) {
                prepare_free(req);
                return grpc_fail(st, GRPC_STATUS_INVALID_ARGUMENT,
                                 "malformed NodePrepareResourcesRequest");
        }
        req->n = req->request->n_claims;
        req->claims = calloc(req->n ?: 1, sizeof(*req->claims));
        req->results = calloc(req->n ?: 1, sizeof(*req->results));
        if (!req->claims || !req->results) {
                prepare_free(req);
                return grpc_fail(st, GRPC_STATUS_RESOURCE_EXHAUSTED, "out of memory");
        }
        for (size_t i = 0; i < req->n; i++)
                req->claims[i] = claim_view(req->request->claims[i]);
        req->call = call;
        grpc_call_set_closed_handler(call, prepare_call_closed, req);
        p->handlers->prepare(p->userdata, req);
        return GRPC_STATUS_OK;
}

static int on_unprepare(void *userdata, const uint8_t *req, size_t len, uint8_t **ret,
                        size_t *ret_len, struct grpc_status *st)
{
        struct dra_plugin *p = userdata;
        _cleanup_(unprepare_request_freep) Dra__NodeUnprepareResourcesRequest *r =
            dra__node_unprepare_resources_request__unpack(NULL, len, req);
        if (!r)
                return grpc_fail(st, GRPC_STATUS_INVALID_ARGUMENT,
                                 "malformed NodeUnprepareResourcesRequest");
        size_t n = r->n_claims;
        char **errors = calloc(n ?: 1, sizeof(*errors));
        Dra__NodeUnprepareResourceResponse *resps = calloc(n ?: 1, sizeof(*resps));
        Dra__NodeUnprepareResourcesResponse__ClaimsEntry *entries =
            calloc(n ?: 1, sizeof(*entries));
        Dra__NodeUnprepareResourcesResponse__ClaimsEntry **ptrs = calloc(n ?: 1, sizeof(*ptrs));
        int code = GRPC_STATUS_OK;
        if (!errors || !resps || !entries || !ptrs)
                code = grpc_fail(st, GRPC_STATUS_RESOURCE_EXHAUSTED, "out of memory");
        for (size_t i = 0; code == GRPC_STATUS_OK && i < n; i++) {
                const struct dra_claim c = claim_view(r->claims[i]);
                errors[i] = p->handlers->unprepare(p->userdata, &c);
                log_ctx_msg(errors[i] ? LOG_WARNING : LOG_INFO, 0, LOG_DRV(p),
                            "NodeUnprepareResources: claim %s/%s (%s): %s", c.namespace_, c.name,
                            c.uid, errors[i] ?: "done");
                resps[i] =
                    (Dra__NodeUnprepareResourceResponse)DRA__NODE_UNPREPARE_RESOURCE_RESPONSE__INIT;
                if (errors[i])
                        resps[i].error = errors[i];
                entries[i] = (Dra__NodeUnprepareResourcesResponse__ClaimsEntry)
                    DRA__NODE_UNPREPARE_RESOURCES_RESPONSE__CLAIMS_ENTRY__INIT;
                entries[i].key = r->claims[i]->uid;
                entries[i].value = &resps[i];
                ptrs[i] = &entries[i];
        }
        if (code == GRPC_STATUS_OK) {
                Dra__NodeUnprepareResourcesResponse resp =
                    DRA__NODE_UNPREPARE_RESOURCES_RESPONSE__INIT;
                resp.n_claims = n;
                resp.claims = ptrs;
                code = dp_pack_reply(&resp.base, ret, ret_len, st);
        }
        for (size_t i = 0; errors && i < n; i++)
                free(errors[i]);
        free(errors);
        free(resps);
        free(entries);
        free(ptrs);
        return code;
}

static int on_watch_health(void *userdata, struct grpc_call *call, const uint8_t *req, size_t len,
                           struct grpc_status *st);

static const struct grpc_method service_methods[] = {
        { .path = "/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodePrepareResources",
          .stream = on_prepare },
        { .path = "/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodeUnprepareResources",
          .unary = on_unprepare },
        { .path = "/k8s.io.kubelet.pkg.apis.dra.v1beta1.DRAPlugin/NodePrepareResources",
          .stream = on_prepare },
        { .path = "/k8s.io.kubelet.pkg.apis.dra.v1beta1.DRAPlugin/NodeUnprepareResources",
          .unary = on_unprepare },
        /* The health service under each name kubelets dial: v1alpha1 (1.34, 1.35), v1beta1
         * (1.36), v1 (later); one message set. */
        { .path = "/v1alpha1.DRAResourceHealth/NodeWatchResources", .stream = on_watch_health },
        { .path = "/v1beta1.DRAResourceHealth/NodeWatchResources", .stream = on_watch_health },
        { .path = "/v1.DRAResourceHealth/NodeWatchResources", .stream = on_watch_health },
};

/* ---- DRAResourceHealth (v1alpha1 and v1 share their messages) ---- */

static int pack_health(const struct dra_plugin *p, uint8_t **ret, size_t *ret_len)
{
        size_t n = p->n_health;
        _cleanup_free_ Drahealth__DeviceHealth *devs = calloc(n ?: 1, sizeof(*devs));
        _cleanup_free_ Drahealth__DeviceHealth **ptrs = calloc(n ?: 1, sizeof(*ptrs));
        _cleanup_free_ Drahealth__DeviceIdentifier *ids = calloc(n ?: 1, sizeof(*ids));
        if (!devs || !ptrs || !ids)
                /* NOLINTNEXTLINE(clang-analyzer-unix.Malloc): _cleanup_ frees it */
                return -ENOMEM;
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        for (size_t i = 0; i < n; i++) {
                ids[i] = (Drahealth__DeviceIdentifier)DRAHEALTH__DEVICE_IDENTIFIER__INIT;
                ids[i].pool_name = p->health_pool;
                ids[i].device_name = (char *)p->health[i].device;
                devs[i] = (Drahealth__DeviceHealth)DRAHEALTH__DEVICE_HEALTH__INIT;
                devs[i].device = &ids[i];
                devs[i].health = p->health[i].healthy ? DRAHEALTH__HEALTH_STATUS__HEALTHY
                                                      : DRAHEALTH__HEALTH_STATUS__UNHEALTHY;
                devs[i].last_updated_time = now.tv_sec;
                devs[i].health_check_timeout_seconds = DRA_HEALTH_TIMEOUT_S;
                devs[i].message = (char *)(p->health[i].message ?: "");
                ptrs[i] = &devs[i];
        }
        Drahealth__NodeWatchResourcesResponse resp = DRAHEALTH__NODE_WATCH_RESOURCES_RESPONSE__INIT;
        resp.n_devices = n;
        resp.devices = ptrs;
        return dp_pack(&resp.base, ret, ret_len);
}

static void send_health(struct dra_plugin *p, struct grpc_call *only)
{
        _cleanup_free_ uint8_t *msg = NULL;
        size_t len = 0;
        if (pack_health(p, &msg, &len) < 0)
                return;
        if (only) {
                (void)grpc_call_send(only, msg, len);
                return;
        }
        /* A send can end its own stream (client too slow), freeing w: step first. */
        for (struct health_watcher *w = p->health_watchers, *next; w; w = next) {
                next = w->next;
                (void)grpc_call_send(w->call, msg, len);
        }
        uint64_t now = 0;
        (void)sd_event_now(p->event, CLOCK_MONOTONIC, &now);
        p->health_sent_usec = now;
}

static void health_watcher_closed(struct grpc_call *call, void *userdata)
{
        struct health_watcher *w = userdata;
        struct dra_plugin *p = w->plugin;
        for (struct health_watcher **pp = &p->health_watchers; *pp; pp = &(*pp)->next)
                if (*pp == w) {
                        *pp = w->next;
                        break;
                }
        free(w);
}

static int on_watch_health(void *userdata, struct grpc_call *call, const uint8_t *req, size_t len,
                           struct grpc_status *st)
{
        struct dra_plugin *p = userdata;
        Drahealth__NodeWatchResourcesRequest *r =
            drahealth__node_watch_resources_request__unpack(NULL, len, req);
        if (!r)
                return grpc_fail(st, GRPC_STATUS_INVALID_ARGUMENT,
                                 "malformed NodeWatchResourcesRequest");
        drahealth__node_watch_resources_request__free_unpacked(r, NULL);
        struct health_watcher *w = calloc(1, sizeof(*w));
        if (!w)
                return grpc_fail(st, GRPC_STATUS_RESOURCE_EXHAUSTED, "out of memory");
        *w = (struct health_watcher){ .call = call, .plugin = p, .next = p->health_watchers };
        p->health_watchers = w;
        grpc_call_set_closed_handler(call, health_watcher_closed, w);
        send_health(p, call);
        log_ctx_msg(LOG_INFO, 0, LOG_DRV(p), "NodeWatchResources: sent %zu devices", p->n_health);
        return GRPC_STATUS_OK;
}

static void health_done(struct dra_plugin *p)
{
        for (size_t i = 0; i < p->n_health; i++) {
                free((char *)p->health[i].device);
                free((char *)p->health[i].message);
        }
        free(p->health);
        p->health = NULL;
        p->n_health = 0;
}

static bool same_health(const struct dra_plugin *p, const char *pool,
                        const struct dra_device_health *devs, size_t n)
{
        if (n != p->n_health || !p->health_pool || strcmp(pool, p->health_pool) != 0)
                return false;
        for (size_t i = 0; i < n; i++)
                if (strcmp(devs[i].device, p->health[i].device) != 0 ||
                    devs[i].healthy != p->health[i].healthy ||
                    strcmp(devs[i].message ?: "", p->health[i].message ?: "") != 0)
                        return false;
        return true;
}

int dra_plugin_set_health(struct dra_plugin *p, const char *pool,
                          const struct dra_device_health *devs, size_t n)
{
        if (same_health(p, pool, devs, n))
                return 0;
        struct dra_device_health *copy = calloc(n ?: 1, sizeof(*copy));
        char *pool_copy = strdup(pool);
        if (!copy || !pool_copy) {
                free(copy);
                free(pool_copy);
                return -ENOMEM;
        }
        for (size_t i = 0; i < n; i++) {
                copy[i] =
                    (struct dra_device_health){ .device = strdup(devs[i].device),
                                                .healthy = devs[i].healthy,
                                                .message = devs[i].message ? strdup(devs[i].message)
                                                                           : NULL };
        }
        health_done(p);
        free(p->health_pool);
        p->health_pool = pool_copy;
        p->health = copy;
        p->n_health = n;
        for (size_t i = 0; i < n; i++)
                if (!copy[i].device || (devs[i].message && !copy[i].message))
                        return -ENOMEM; /* kept consistent: health_done frees what is there */
        send_health(p, NULL);
        return 1;
}

size_t dra_plugin_n_health_watchers(const struct dra_plugin *p)
{
        size_t n = 0;
        for (const struct health_watcher *w = p->health_watchers; w; w = w->next)
                n++;
        return n;
}

/* ---- sockets ---- */

static bool socket_present(const char *path)
{
        struct stat st;
        return stat(path, &st) == 0 && S_ISSOCK(st.st_mode);
}

static int serve(struct dra_plugin *p, const char *dir, const char *path,
                 const struct grpc_method *methods, size_t n, struct grpc_server **server)
{
        *server = grpc_server_free(*server);
        int r = mkdir_p(dir);
        if (r < 0)
                return log_ctx_msg(LOG_ERR, r, LOG_DRV(p), "cannot create %s", dir);
        r = grpc_server_new(p->event, path, methods, n, p, server);
        if (r < 0)
                return log_ctx_msg(LOG_ERR, r, LOG_DRV(p), "cannot serve on %s", path);
        return 0;
}

static int on_registry_event(sd_event_source *s, const struct inotify_event *ev, void *userdata)
{
        struct dra_plugin *p = userdata;
        if (ev->mask & (IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF))
                p->registry_watch = sd_event_source_disable_unref(p->registry_watch);
        (void)dra_plugin_check(p);
        return 0;
}

static void watch_registry(struct dra_plugin *p)
{
        if (p->registry_watch)
                return;
        int r = sd_event_add_inotify(p->event, &p->registry_watch, p->registry_dir,
                                     IN_DELETE | IN_MOVED_FROM | IN_DELETE_SELF | IN_MOVE_SELF,
                                     on_registry_event, p);
        if (r < 0) /* the timer still checks */
                log_ctx_msg(LOG_WARNING, r, LOG_DRV(p), "cannot watch %s", p->registry_dir);
}

bool dra_plugin_check(struct dra_plugin *p)
{
        bool served = false;
        if (p->draining)
                return false;
        /* The endpoint first: the kubelet dials it as soon as GetInfo named it. */
        if (!socket_present(p->endpoint)) {
                log_ctx_msg(LOG_NOTICE, 0, LOG_DRV(p), "socket %s removed: serving anew",
                            p->endpoint);
                served |= serve(p, p->endpoint_dir, p->endpoint, service_methods,
                                ELEMENTSOF(service_methods), &p->service) >= 0;
        }
        if (!socket_present(p->registration_socket)) {
                log_ctx_msg(LOG_NOTICE, 0, LOG_DRV(p),
                            "socket %s removed: serving anew for the kubelet's plugin watcher",
                            p->registration_socket);
                bool was = p->registered;
                p->registered = false;
                served |= serve(p, p->registry_dir, p->registration_socket, registration_methods,
                                ELEMENTSOF(registration_methods), &p->registration) >= 0;
                if (was && p->handlers && p->handlers->registration)
                        p->handlers->registration(p->userdata, false);
        }
        watch_registry(p);
        return served;
}

static int on_check_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
        struct dra_plugin *p = userdata;
        (void)dra_plugin_check(p);
        if (p->health_watchers && usec >= p->health_sent_usec + DRA_HEALTH_RESEND_USEC)
                send_health(p, NULL); /* keeps the reports inside their timeout */
        (void)sd_event_source_set_time_relative(s, CHECK_INTERVAL_USEC);
        (void)sd_event_source_set_enabled(s, SD_EVENT_ON);
        return 0;
}

int dra_plugin_new(sd_event *event, const struct dra_plugin_options *opts, struct dra_plugin **ret)
{
        _cleanup_(dra_plugin_freep) struct dra_plugin *p = calloc(1, sizeof(*p));
        if (!p)
                return -ENOMEM;
        p->event = sd_event_ref(event);
        p->driver = opts->driver_name ?: DRA_DRIVER_NAME_DEFAULT;
        p->handlers = opts->handlers;
        p->userdata = opts->userdata;
        const char *root = opts->kubelet_root ?: DRA_KUBELET_ROOT_DEFAULT;
        if (path_printf(p->registry_dir, sizeof(p->registry_dir), "%s/plugins_registry", root) <
                0 ||
            path_printf(p->registration_socket, sizeof(p->registration_socket), "%s/%s-reg.sock",
                        p->registry_dir, p->driver) < 0 ||
            path_printf(p->endpoint_dir, sizeof(p->endpoint_dir), "%s/plugins/%s", root,
                        p->driver) < 0 ||
            path_printf(p->endpoint, sizeof(p->endpoint), "%s/dra.sock", p->endpoint_dir) < 0)
                return log_ctx_msg(LOG_ERR, ENAMETOOLONG, LOG_DRV(p),
                                   "DRA socket paths under %s too long", root);
        int r = serve(p, p->endpoint_dir, p->endpoint, service_methods, ELEMENTSOF(service_methods),
                      &p->service);
        if (r < 0)
                return r;
        r = serve(p, p->registry_dir, p->registration_socket, registration_methods,
                  ELEMENTSOF(registration_methods), &p->registration);
        if (r < 0)
                return r;
        watch_registry(p);
        r = sd_event_add_time_relative(event, &p->check_timer, CLOCK_MONOTONIC, CHECK_INTERVAL_USEC,
                                       100000, on_check_timer, p);
        if (r < 0)
                return log_ctx_msg(LOG_ERR, r, LOG_DRV(p), "cannot arm the socket check timer");
        log_ctx_msg(LOG_INFO, 0, LOG_DRV(p), "DRA driver serving %s, registration at %s",
                    p->endpoint, p->registration_socket);
        *ret = TAKE_PTR(p);
        return 0;
}

static bool is_health_watch(const struct grpc_call *call, void *userdata)
{
        return strstr(grpc_call_path(call), "/NodeWatchResources") != NULL;
}

static void on_service_drained(struct grpc_server *s, void *userdata)
{
        struct dra_plugin *p = userdata;
        dra_plugin_drained_fn fn = p->drained;
        p->drained = NULL;
        fn(p, p->drained_userdata); /* may free p */
}

void dra_plugin_drain(struct dra_plugin *p, uint64_t grace_usec, dra_plugin_drained_fn done,
                      void *userdata)
{
        p->draining = true;
        p->check_timer = sd_event_source_disable_unref(p->check_timer);
        p->registry_watch = sd_event_source_disable_unref(p->registry_watch);
        /* Registration first, so that the kubelet never dials an endpoint that is gone; what
         * its plugin watcher already asked is answered. */
        if (p->registration) {
                grpc_server_quiesce(p->registration);
                p->registration = grpc_server_free(p->registration);
        }
        if (!p->service) {
                done(p, userdata);
                return;
        }
        /* Calls already sent are read now: unprepares are answered at once, prepares when
         * their claims are read (within the grace). The health streams end; the GOAWAY makes
         * the kubelet, which keeps a DRA connection open, start later calls elsewhere and
         * close this one once answered, instead of holding the stop for the whole grace. */
        grpc_server_quiesce(p->service);
        grpc_server_finish_calls(p->service, is_health_watch, NULL, GRPC_STATUS_UNAVAILABLE,
                                 "DRA driver stopping");
        p->drained = done;
        p->drained_userdata = userdata;
        int r = grpc_server_drain(p->service, grace_usec, true, on_service_drained, p);
        if (r < 0) {
                log_ctx_msg(LOG_WARNING, r, LOG_DRV(p), "cannot wait for the kubelet to close");
                p->drained = NULL;
                done(p, userdata);
        }
}

struct dra_plugin *dra_plugin_free(struct dra_plugin *p)
{
        if (!p)
                return NULL;
        p->check_timer = sd_event_source_disable_unref(p->check_timer);
        p->registry_watch = sd_event_source_disable_unref(p->registry_watch);
        /* Registration first, so that the kubelet never dials an endpoint that is gone. */
        p->registration = grpc_server_free(p->registration);
        p->service = grpc_server_free(p->service); /* closes the health watchers */
        health_done(p);
        free(p->health_pool);
        sd_event_unref(p->event);
        free(p);
        return NULL;
}

bool dra_plugin_is_registered(const struct dra_plugin *p)
{
        return p->registered;
}

const char *dra_plugin_endpoint(const struct dra_plugin *p)
{
        return p->endpoint;
}

const char *dra_plugin_registration_socket(const struct dra_plugin *p)
{
        return p->registration_socket;
}
