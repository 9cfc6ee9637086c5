#include "deviceplugin/podresources.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "deviceplugin/grpc-client.h"
#include "deviceplugin/pool.h"
#include "podresources.pb-c.h"
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
        *u = (struct dp_usage){ 0 };
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

static int add_ids(struct dp_usage *u, const V1__ContainerDevices *cd)
{
        if (!cd->resource_name || !*cd->resource_name)
                return 0;
        struct dp_resource_usage *r =
            (struct dp_resource_usage *)dp_usage_find(u, cd->resource_name);
        if (!r) {
                struct dp_resource_usage *l =
                    realloc(u->resources, (u->n_resources + 1) * sizeof(*l));
                if (!l)
                        return -ENOMEM;
                u->resources = l;
                r = &l[u->n_resources];
                *r = (struct dp_resource_usage){ .resource = strdup(cd->resource_name) };
                if (!r->resource)
                        return -ENOMEM;
                u->n_resources++;
        }
        for (size_t i = 0; i < cd->n_device_ids; i++) {
                if (strv_contains(r->ids, r->n_ids, cd->device_ids[i]))
                        continue;
                int k = strv_push_dup(&r->ids, &r->n_ids, cd->device_ids[i]);
                if (k < 0)
                        return k;
        }
        return 0;
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
                        for (size_t k = 0; r >= 0 && k < pod->containers[j]->n_devices; k++)
                                r = add_ids(&u, pod->containers[j]->devices[k]);
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
        size_t len = v1__list_pod_resources_request__get_packed_size(&req);
        uint8_t *buf = malloc(len ?: 1);
        if (!buf)
                return -ENOMEM;
        v1__list_pod_resources_request__pack(&req, buf);
        *ret = buf;
        *ret_len = len;
        return 0;
}

struct list_call {
        dp_usage_done_fn done;
        void *userdata;
};

static void on_list_done(void *userdata, const struct grpc_status *st, const uint8_t *resp,
                         size_t len)
{
        _cleanup_free_ struct list_call *c = userdata;
        struct dp_usage u = { 0 };
        int r;
        if (st->code != GRPC_STATUS_OK)
                r = log_warning_errno(EPROTO, "PodResources List failed: %s: %s",
                                      grpc_status_to_string(st->code), st->message);
        else {
                r = dp_usage_from_list_response(resp, len, &u);
                if (r < 0)
                        log_warning_errno(r, "PodResources List: malformed response");
        }
        c->done(c->userdata, r, r < 0 ? NULL : &u);
        dp_usage_done(&u);
}

int dp_podresources_list(sd_event *event, const char *socket_path, uint64_t timeout_usec,
                         dp_usage_done_fn done, void *userdata)
{
        _cleanup_free_ uint8_t *req = NULL;
        size_t len;
        int r = pack_request(&req, &len);
        if (r < 0)
                return r;
        struct list_call *c = malloc(sizeof(*c));
        if (!c)
                return -ENOMEM;
        *c = (struct list_call){ .done = done, .userdata = userdata };
        r = grpc_unary_call(event, socket_path ?: DP_PODRESOURCES_SOCKET_DEFAULT, LIST_METHOD, req,
                            len, timeout_usec, on_list_done, c, NULL);
        if (r < 0)
                free(c);
        return r;
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
        if (st.code != GRPC_STATUS_OK)
                return log_warning_errno(EPROTO, "PodResources List failed: %s: %s",
                                         grpc_status_to_string(st.code), st.message);
        return dp_usage_from_list_response(resp, resp_len, ret);
}
