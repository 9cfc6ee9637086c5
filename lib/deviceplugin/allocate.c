/* SPDX-License-Identifier: Apache-2.0 */
#include "deviceplugin/allocate.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "util/array.h"
#include "util/fileio.h"
#include "util/log.h"
#include "util/macro.h"
#include "util/parse.h"

void dp_container_allocation_done(struct dp_container_allocation *a)
{
        strv_free_n(a->env_keys, a->n_envs);
        strv_free_n(a->env_values, a->n_envs);
        free(a->specs);
        *a = (struct dp_container_allocation){ 0 };
}

int dp_env_name(const struct dp_pool *pool, char *buf, size_t size)
{
        int n = snprintf(buf, size, "PCIDEVICE_%s_%s", pool->prefix, pool->name);
        if (n < 0 || (size_t)n >= size)
                return -ENAMETOOLONG;
        /* As upstream (strings.ToUpper(strings.ReplaceAll(key, ".", "_"))): only '.' is
         * replaced, so a '-' in the prefix stays and the name is not shell-safe; pods read
         * exactly this key. */
        for (char *c = buf; *c; c++) {
                if (*c >= 'a' && *c <= 'z')
                        *c = (char)(*c - 'a' + 'A');
                else if (*c == '.')
                        *c = '_';
        }
        return 0;
}

static const char *char_device_of(const struct dp_device *d, const char *kind)
{
        size_t n = strlen(kind);
        for (size_t i = 0; i < d->n_char_devices; i++) {
                const char *base = strrchr(d->char_devices[i], '/');
                base = base ? base + 1 : d->char_devices[i];
                if (strncmp(base, kind, n) == 0 && base[n] >= '0' && base[n] <= '9')
                        return d->char_devices[i];
        }
        return NULL;
}

static int json_set_str(json_t *obj, const char *key, const char *value)
{
        return json_object_set_new(obj, key, json_string(value)) == 0 ? 0 : -ENOMEM;
}

static json_t *device_info(const struct dp_pool *pool, const struct dp_device *d)
{
        json_auto_t *info = json_object();
        json_t *o;
        if (!info)
                return NULL;
        bool ok = (o = json_object()) && json_object_set_new(info, "generic", o) == 0 &&
                  json_set_str(o, "deviceID", d->id) == 0;
        if (ok && pool->device_type == DEVICE_TYPE_VFIO_PCI) {
                char group[64];
                snprintf(group, sizeof(group), "/dev/vfio/%d", d->iommu_group);
                ok = (o = json_object()) && json_object_set_new(info, "vfio", o) == 0 &&
                     json_set_str(o, "mount", "/dev/vfio/vfio") == 0 &&
                     json_set_str(o, "dev-mount", group) == 0;
        }
        if (ok && pool->is_rdma) {
                static const char *const kinds[] = { "uverbs", "umad", "issm" };
                /* rdma_cm only where the node has it: container runtimes refuse to start a
                 * container whose device path is missing (upstream: rdmamap only lists it when
                 * /dev/infiniband/rdma_cm exists). */
                ok = (o = json_object()) && json_object_set_new(info, "rdma", o) == 0 &&
                     (!d->rdma_cm || json_set_str(o, "rdma_cm", "/dev/infiniband/rdma_cm") == 0) &&
                     json_set_str(o, "rdma_dev", d->rdma_device) == 0;
                for (size_t i = 0; ok && i < ELEMENTSOF(kinds); i++) {
                        const char *path = char_device_of(d, kinds[i]);
                        if (path)
                                ok = json_set_str(o, kinds[i], path) == 0;
                }
        }
        if (ok && pool->need_vhost_net)
                ok = (o = json_object()) && json_object_set_new(info, "vhost", o) == 0 &&
                     json_set_str(o, "net-mount", "/dev/vhost-net") == 0 &&
                     json_set_str(o, "tun-mount", "/dev/net/tun") == 0;
        return ok ? TAKE_PTR(info) : NULL;
}

char *dp_info_json(const struct dp_pool *pool, const struct dp_device *const *devs, size_t n)
{
        json_auto_t *root = json_object();
        if (!root)
                return NULL;
        for (size_t i = 0; i < n; i++) {
                json_t *info = device_info(pool, devs[i]);
                if (!info || json_object_set_new(root, devs[i]->id, info) != 0)
                        return NULL;
        }
        return json_dumps(root, JSON_COMPACT | JSON_SORT_KEYS);
}

static int add_spec(struct dp_container_allocation *a, const char *host, const char *container)
{
        for (size_t i = 0; i < a->n_specs; i++)
                if (strcmp(a->specs[i].host_path, host) == 0)
                        return 0;
        if (GROW_ARRAY(a->specs, a->cap_specs, a->n_specs + 1) < 0)
                return -ENOMEM;
        struct dp_device_spec *spec = &a->specs[a->n_specs++];
        *spec = (struct dp_device_spec){ .permissions = "rw" };
        snprintf(spec->host_path, sizeof(spec->host_path), "%s", host);
        snprintf(spec->container_path, sizeof(spec->container_path), "%s", container);
        return 0;
}

static int add_env(struct dp_container_allocation *a, const char *key, const char *value)
{
        size_t n = a->n_envs;
        int r = strv_push_dup(&a->env_keys, &n, key);
        if (r < 0)
                return r;
        n = a->n_envs;
        r = strv_push_dup(&a->env_values, &n, value);
        if (r < 0) {
                free(a->env_keys[a->n_envs]);
                return r;
        }
        a->n_envs++;
        return 0;
}

static int device_specs(const struct dp_pool *pool, const struct dp_device *d,
                        struct dp_container_allocation *a)
{
        int r = 0;
        if (pool->device_type == DEVICE_TYPE_VFIO_PCI) {
                /* In vfio's no-IOMMU mode the host node is noiommu-<group>; DPDK in the
                 * container still opens /dev/vfio/<group>. */
                char group[64], host[64];
                snprintf(group, sizeof(group), "/dev/vfio/%d", d->iommu_group);
                snprintf(host, sizeof(host), "/dev/vfio/%s%d", d->noiommu ? "noiommu-" : "",
                         d->iommu_group);
                r = add_spec(a, "/dev/vfio/vfio", "/dev/vfio/vfio");
                if (r >= 0)
                        r = add_spec(a, host, group);
        }
        if (r >= 0 && pool->is_rdma) {
                for (size_t i = 0; r >= 0 && i < d->n_char_devices; i++)
                        r = add_spec(a, d->char_devices[i], d->char_devices[i]);
                if (r >= 0 && d->rdma_cm)
                        r = add_spec(a, "/dev/infiniband/rdma_cm", "/dev/infiniband/rdma_cm");
        }
        if (r >= 0 && pool->need_vhost_net) {
                r = add_spec(a, "/dev/vhost-net", "/dev/vhost-net");
                if (r >= 0)
                        r = add_spec(a, "/dev/net/tun", "/dev/net/tun");
        }
        return r;
}

static int allocate_sriov(const struct dp_pool *pool, const struct dp_device *const *devs, size_t n,
                          struct dp_container_allocation *a)
{
        size_t len = 1;
        for (size_t i = 0; i < n; i++)
                len += strlen(devs[i]->id) + 1;
        _cleanup_free_ char *list = calloc(1, len);
        if (!list)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                if (i > 0)
                        strcat(list, ",");
                strcat(list, devs[i]->id);
                int r = device_specs(pool, devs[i], a);
                if (r < 0)
                        /* NOLINTNEXTLINE(clang-analyzer-unix.Malloc): _cleanup_ frees it */
                        return r;
        }
        char key[DP_RESOURCE_MAX + 32], info_key[DP_RESOURCE_MAX + 40];
        int r = dp_env_name(pool, key, sizeof(key));
        if (r < 0)
                return r;
        snprintf(info_key, sizeof(info_key), "%s_INFO", key);
        _cleanup_free_ char *info = dp_info_json(pool, devs, n);
        if (!info)
                return -ENOMEM;
        r = add_env(a, key, list);
        if (r < 0)
                return r;
        return add_env(a, info_key, info);
}

int dp_allocate_cards(const struct dp_pool *pool, char *const *ids, size_t n_ids,
                      struct dp_container_allocation *ret, struct grpc_status *st)
{
        struct dp_container_allocation a = { 0 };
        int r = 0;
        for (size_t i = 0; i < n_ids; i++) {
                const struct dp_device *d = NULL;
                for (size_t j = 0; !d && j < pool->n_cards; j++)
                        if (strcmp(pool->cards[j].id, ids[i]) == 0)
                                d = &pool->cards[j];
                if (!d) {
                        dp_container_allocation_done(&a);
                        return grpc_fail(st, GRPC_STATUS_INVALID_ARGUMENT,
                                         "no card %.64s in resource %s", ids[i], pool->resource);
                }
                if (!d->healthy) {
                        dp_container_allocation_done(&a);
                        return grpc_fail(st, GRPC_STATUS_FAILED_PRECONDITION,
                                         "card %s of resource %s is down", ids[i], pool->resource);
                }
                for (size_t k = 0; r >= 0 && k < d->n_char_devices; k++)
                        r = add_spec(&a, d->char_devices[k], d->char_devices[k]);
                if (r >= 0 && d->rdma_cm)
                        r = add_spec(&a, "/dev/infiniband/rdma_cm", "/dev/infiniband/rdma_cm");
        }
        for (size_t i = 0; i < a.n_specs; i++)
                snprintf(a.specs[i].permissions, sizeof(a.specs[i].permissions), "rwm");
        if (r < 0) {
                dp_container_allocation_done(&a);
                return grpc_fail(st, GRPC_STATUS_INTERNAL, "cannot build the allocation: %s",
                                 strerror(-r));
        }
        *ret = a;
        return GRPC_STATUS_OK;
}

int dp_allocate_container(const struct dp_pool *pool, char *const *ids, size_t n_ids,
                          struct dp_container_allocation *ret, struct grpc_status *st)
{
        struct dp_container_allocation a = { 0 };
        _cleanup_free_ const struct dp_device **devs = calloc(n_ids ?: 1, sizeof(*devs));
        if (!devs)
                return grpc_fail(st, GRPC_STATUS_RESOURCE_EXHAUSTED, "out of memory");
        for (size_t i = 0; i < n_ids; i++) {
                devs[i] = dp_pool_find_device(pool, ids[i]);
                if (!devs[i])
                        return grpc_fail(st, GRPC_STATUS_INVALID_ARGUMENT,
                                         "unknown device ID \"%.64s\" for resource %s", ids[i],
                                         pool->resource);
                if (!devs[i]->healthy)
                        return grpc_fail(st, GRPC_STATUS_FAILED_PRECONDITION,
                                         "device %s of resource %s is unhealthy", ids[i],
                                         pool->resource);
        }
        int r = 0;
        if (pool->kind == DP_POOL_RDMA_SHARED) {
                /* NOLINTNEXTLINE(clang-analyzer-unix.Malloc): _cleanup_ frees it */
                for (size_t i = 0; r >= 0 && i < pool->n_shared_char_devices; i++)
                        r = add_spec(&a, pool->shared_char_devices[i],
                                     pool->shared_char_devices[i]);
                /* The upstream whole-card plugin grants "rwm" (mknod too), SR-IOV "rw". */
                for (size_t i = 0; i < a.n_specs; i++)
                        snprintf(a.specs[i].permissions, sizeof(a.specs[i].permissions), "rwm");
        } else if (n_ids > 0)
                r = allocate_sriov(pool, devs, n_ids, &a);
        if (r < 0) {
                dp_container_allocation_done(&a);
                return grpc_fail(st, GRPC_STATUS_INTERNAL, "cannot build the allocation: %s",
                                 strerror(-r));
        }
        *ret = a;
        return GRPC_STATUS_OK;
}
