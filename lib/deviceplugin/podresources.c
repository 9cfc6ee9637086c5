/* SPDX-License-Identifier: Apache-2.0 */
#include "deviceplugin/podresources.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "deviceplugin/pb-pack.h"
#include "deviceplugin/pool.h"
#include "grpc/grpc-client.h"
#include "podresources.pb-c.h"
#include "util/array.h"
#include "util/log.h"
#include "util/macro.h"

#define LIST_METHOD "/v1.PodResourcesLister/List"

void dp_usage_done(struct dp_usage *u)
{
        for (size_t i = 0; i < u->n_resources; i++) {
                free(u->resources[i].resource);
                strv_free_n(u->resources[i].ids, u->resources[i].n_ids);
        }
        free(u->resources);
        for (size_t i = 0; i < u->n_holders; i++) {
                struct dp_device_holder *h = &u->holders[i];
                free(h->resource);
                free(h->id);
                free(h->namespace_);
                free(h->pod);
                free(h->container);
        }
        free(u->holders);
        *u = (struct dp_usage){ 0 };
}

int dp_usage_copy(const struct dp_usage *src, struct dp_usage *ret)
{
        struct dp_usage u = { 0 };
        int r = 0;
        for (size_t i = 0; i < src->n_resources && r >= 0; i++) {
                const struct dp_resource_usage *res = &src->resources[i];
                if (res->n_ids == 0)
                        r = dp_usage_add(&u, res->resource, NULL);
                for (size_t j = 0; j < res->n_ids && r >= 0; j++)
                        r = dp_usage_add(&u, res->resource, res->ids[j]);
        }
        for (size_t i = 0; i < src->n_holders && r >= 0; i++) {
                const struct dp_device_holder *h = &src->holders[i];
                if (GROW_ARRAY(u.holders, u.cap_holders, u.n_holders + 1) < 0) {
                        r = -ENOMEM;
                        break;
                }
                struct dp_device_holder *c = &u.holders[u.n_holders++];
                *c = (struct dp_device_holder){ .resource = strdup(h->resource),
                                                .id = strdup(h->id),
                                                .namespace_ = strdup(h->namespace_),
                                                .pod = strdup(h->pod),
                                                .container = strdup(h->container) };
                if (!c->resource || !c->id || !c->namespace_ || !c->pod || !c->container)
                        r = -ENOMEM;
        }
        if (r < 0) {
                dp_usage_done(&u);
                return r;
        }
        *ret = u;
        return 0;
}

const struct dp_resource_usage *dp_usage_find(const struct dp_usage *u, const char *resource)
{
        for (size_t i = 0; i < u->n_resources; i++)
                if (strcmp(u->resources[i].resource, resource) == 0)
                        return &u->resources[i];
        return NULL;
}

int dp_usage_in_use(const struct dp_usage *u, const char *resource, const char *id)
{
        const struct dp_resource_usage *r = dp_usage_find(u, resource);
        return r && strv_contains(r->ids, r->n_ids, id);
}

static int add_holders(struct dp_usage *u, const V1__PodResources *pod,
                       const V1__ContainerResources *container, const V1__ContainerDevices *cd)
{
        for (size_t i = 0; i < cd->n_device_ids; i++) {
                if (GROW_ARRAY(u->holders, u->cap_holders, u->n_holders + 1) < 0)
                        return -ENOMEM;
                struct dp_device_holder *h = &u->holders[u->n_holders++];
                *h = (struct dp_device_holder){
                        .resource = strdup(cd->resource_name),
                        .id = strdup(cd->device_ids[i]),
                        .namespace_ = strdup(pod->namespace_ ? pod->namespace_ : ""),
                        .pod = strdup(pod->name ? pod->name : ""),
                        .container = strdup(container->name ? container->name : ""),
                };
                if (!h->resource || !h->id || !h->namespace_ || !h->pod || !h->container)
                        return -ENOMEM;
        }
        return 0;
}

int dp_usage_add(struct dp_usage *u, const char *resource, const char *id)
{
        struct dp_resource_usage *r = (struct dp_resource_usage *)dp_usage_find(u, resource);
        if (!r) {
                if (GROW_ARRAY(u->resources, u->cap_resources, u->n_resources + 1) < 0)
                        return -ENOMEM;
                r = &u->resources[u->n_resources];
                *r = (struct dp_resource_usage){ .resource = strdup(resource) };
                if (!r->resource)
                        return -ENOMEM;
                u->n_resources++;
        }
        if (!id || strv_contains(r->ids, r->n_ids, id))
                return 0;
        return strv_push_dup(&r->ids, &r->n_ids, id);
}

static int add_ids(struct dp_usage *u, const V1__ContainerDevices *cd)
{
        if (!cd->resource_name || !*cd->resource_name)
                return 0;
        int k = dp_usage_add(u, cd->resource_name, NULL);
        for (size_t i = 0; k >= 0 && i < cd->n_device_ids; i++)
                k = dp_usage_add(u, cd->resource_name, cd->device_ids[i]);
        return k;
}

int dp_usage_from_list_response(const uint8_t *data, size_t len, struct dp_usage *ret)
{
        V1__ListPodResourcesResponse *resp =
            v1__list_pod_resources_response__unpack(NULL, len, data);
        if (!resp)
                return -EBADMSG;
        struct dp_usage u = { 0 };
        int r = 0;
        for (size_t i = 0; r >= 0 && i < resp->n_pod_resources; i++) {
                const V1__PodResources *pod = resp->pod_resources[i];
                for (size_t j = 0; r >= 0 && j < pod->n_containers; j++)
                        for (size_t k = 0; r >= 0 && k < pod->containers[j]->n_devices; k++) {
                                r = add_ids(&u, pod->containers[j]->devices[k]);
                                if (r >= 0 && pod->containers[j]->devices[k]->resource_name &&
                                    *pod->containers[j]->devices[k]->resource_name)
                                        r = add_holders(&u, pod, pod->containers[j],
                                                        pod->containers[j]->devices[k]);
                        }
        }
        v1__list_pod_resources_response__free_unpacked(resp, NULL);
        if (r < 0) {
                dp_usage_done(&u);
                return r;
        }
        *ret = u;
        return 0;
}

static int pack_request(uint8_t **ret, size_t *ret_len)
{
        V1__ListPodResourcesRequest req = V1__LIST_POD_RESOURCES_REQUEST__INIT;
        return dp_pack(&req.base, ret, ret_len);
}

struct dp_podresources_call {
        struct grpc_client_call *grpc; /* NULL once answered, or when connecting failed */
        sd_event_source *defer;        /* reports a connect failure from the loop */
        int connect_error;
        char socket_path[108];
        dp_usage_done_fn done;
        void *userdata;
};

void dp_podresources_call_cancel(struct dp_podresources_call *c)
{
        if (!c)
                return;
        grpc_client_call_cancel(c->grpc);
        c->defer = sd_event_source_disable_unref(c->defer);
        free(c);
}

static void finish(struct dp_podresources_call *c, int error, const char *message,
                   const struct dp_usage *u)
{
        dp_usage_done_fn done = c->done;
        void *userdata = c->userdata;
        c->grpc = NULL;
        dp_podresources_call_cancel(c);
        done(userdata, error, message, u);
}

static void on_list_done(void *userdata, const struct grpc_status *st, const uint8_t *resp,
                         size_t len)
{
        struct dp_podresources_call *c = userdata;
        struct dp_usage u = { 0 };
        char msg[GRPC_STATUS_MESSAGE_MAX + 256] = "";
        int r;
        if (st->code == GRPC_STATUS_DEADLINE_EXCEEDED) {
                r = -ETIMEDOUT;
                snprintf(msg, sizeof(msg), "no answer from %s in time", c->socket_path);
        } else if (st->code != GRPC_STATUS_OK) {
                /* a refusal (the kubelet's rate limit) and a connection that went away are
                 * told apart: callers retry them, not other errors */
                r = st->code == GRPC_STATUS_RESOURCE_EXHAUSTED ? -EBUSY
                    : st->code == GRPC_STATUS_UNAVAILABLE      ? -EAGAIN
                                                               : -EPROTO;
                snprintf(msg, sizeof(msg), "List on %s failed: %s: %s", c->socket_path,
                         grpc_status_to_string(st->code), st->message);
        } else {
                r = dp_usage_from_list_response(resp, len, &u);
                if (r < 0)
                        snprintf(msg, sizeof(msg), "List on %s: malformed response",
                                 c->socket_path);
        }
        c->grpc = NULL; /* the gRPC call frees itself after this callback */
        finish(c, r, r < 0 ? msg : NULL, r < 0 ? NULL : &u);
        dp_usage_done(&u);
}

static int on_connect_failed(sd_event_source *s, void *userdata)
{
        struct dp_podresources_call *c = userdata;
        char msg[256];
        if (c->connect_error == -ENOENT)
                snprintf(msg, sizeof(msg), "no PodResources socket at %s (kubelet not running?)",
                         c->socket_path);
        else if (c->connect_error == -ECONNREFUSED)
                snprintf(msg, sizeof(msg), "nothing listens on %s (kubelet not running?)",
                         c->socket_path);
        else
                snprintf(msg, sizeof(msg), "cannot connect to %s: %s", c->socket_path,
                         strerror(-c->connect_error));
        finish(c, c->connect_error, msg, NULL);
        return 0;
}

int dp_podresources_list(sd_event *event, const char *socket_path, uint64_t timeout_usec,
                         dp_usage_done_fn done, void *userdata, struct dp_podresources_call **ret)
{
        _cleanup_free_ uint8_t *req = NULL;
        size_t len;
        int r = pack_request(&req, &len);
        if (r < 0)
                return r;
        struct dp_podresources_call *c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        *c = (struct dp_podresources_call){ .done = done, .userdata = userdata };
        snprintf(c->socket_path, sizeof(c->socket_path), "%s",
                 socket_path ?: DP_PODRESOURCES_SOCKET_DEFAULT);
        r = grpc_unary_call(event, c->socket_path, LIST_METHOD, req, len, timeout_usec,
                            on_list_done, c, &c->grpc);
        if (r < 0) {
                /* Reported from the loop like every other outcome, so callers have one path. */
                c->grpc = NULL;
                c->connect_error = r;
                r = sd_event_add_defer(event, &c->defer, on_connect_failed, c);
                if (r < 0) {
                        free(c);
                        return r;
                }
        }
        if (ret)
                *ret = c;
        return 0;
}

int dp_podresources_list_sync(const char *socket_path, uint64_t timeout_usec, struct dp_usage *ret)
{
        _cleanup_free_ uint8_t *req = NULL, *resp = NULL;
        size_t len, resp_len = 0;
        struct grpc_status st = { 0 };
        int r = pack_request(&req, &len);
        if (r < 0)
                return r;
        r = grpc_unary_call_sync(socket_path ?: DP_PODRESOURCES_SOCKET_DEFAULT, LIST_METHOD, req,
                                 len, timeout_usec, &st, &resp, &resp_len);
        if (r < 0)
                return r;
        if (st.code != GRPC_STATUS_OK) {
                log_debug("PodResources List failed: %s: %s", grpc_status_to_string(st.code),
                          st.message);
                return -EPROTO;
        }
        return dp_usage_from_list_response(resp, resp_len, ret);
}
