/* SPDX-License-Identifier: Apache-2.0 */
#include "dra/claim.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/macro.h"

__attribute__((format(printf, 2, 3))) static int fail(char **error, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        if (vasprintf(error, fmt, ap) < 0)
                *error = NULL;
        va_end(ap);
        return *error ? -EINVAL : -ENOMEM;
}

void dra_allocated_free(struct dra_allocated *a, size_t n)
{
        for (size_t i = 0; a && i < n; i++) {
                free(a[i].request);
                free(a[i].device);
        }
        free(a);
}

int dra_claim_allocated(json_t *claim, const char *uid, const char *driver, const char *pool,
                        struct dra_allocated **ret, size_t *n, char **error)
{
        *ret = NULL;
        *n = 0;
        json_t *meta = json_object_get(claim, "metadata");
        const char *have = json_string_value(json_object_get(meta, "uid"));
        if (!have || strcmp(have, uid) != 0)
                return fail(error,
                            "the ResourceClaim now has uid %s, not %s (deleted and "
                            "created again?)",
                            have ?: "(none)", uid);
        json_t *results = json_object_get(
            json_object_get(json_object_get(json_object_get(claim, "status"), "allocation"),
                            "devices"),
            "results");
        if (!json_is_array(results))
                return fail(error, "the ResourceClaim is not allocated (no status.allocation)");
        struct dra_allocated *list = calloc(json_array_size(results) ?: 1, sizeof(*list));
        if (!list)
                return -ENOMEM;
        size_t i, k = 0;
        json_t *r;
        int err = 0;
        json_array_foreach(results, i, r)
        {
                const char *d = json_string_value(json_object_get(r, "driver"));
                if (!d || strcmp(d, driver) != 0)
                        continue;
                const char *p = json_string_value(json_object_get(r, "pool"));
                const char *dev = json_string_value(json_object_get(r, "device"));
                const char *req = json_string_value(json_object_get(r, "request"));
                if (!p || strcmp(p, pool) != 0) {
                        err = fail(error,
                                   "status.allocation.devices.results[%zu]: device %s of pool "
                                   "%s is not on this node (pool %s)",
                                   i, dev ?: "?", p ?: "(none)", pool);
                        break;
                }
                if (!dev || !req) {
                        err =
                            fail(error,
                                 "status.allocation.devices.results[%zu]: no device or request", i);
                        break;
                }
                list[k] = (struct dra_allocated){ .request = strdup(req), .device = strdup(dev) };
                k++;
                if (!list[k - 1].request || !list[k - 1].device) {
                        err = -ENOMEM;
                        break;
                }
        }
        if (err < 0) {
                dra_allocated_free(list, k);
                return err;
        }
        *ret = list;
        *n = k;
        return 0;
}

int dra_cdi_device_id(const char *driver, const char *claim_uid, const char *device, char *buf,
                      size_t size)
{
        int n = snprintf(buf, size, "%s/" DRA_CDI_CLASS "=%s-%s", driver, claim_uid, device);
        return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

/* "SRIOVNETWORK_<dev><suffix>=<value>" or, with `mid` NULL, "SRIOVNETWORK_VF_DEVICE_<dev>=...":
 * the device name's '-' made '_', as dra-driver-sriov names them. */
static int push_env(json_t *env, const char *what, const char *device, const char *suffix,
                    const char *value)
{
        char dev[128];
        size_t i = 0;
        for (; i < sizeof(dev) - 1 && device[i]; i++)
                dev[i] = device[i] == '-' ? '_' : device[i];
        dev[i] = 0;
        _cleanup_free_ char *kv = NULL;
        if (asprintf(&kv, "SRIOVNETWORK_%s%s%s=%s", what, dev, suffix, value) < 0)
                return -ENOMEM;
        return json_array_append_new(env, json_string(kv)) < 0 ? -ENOMEM : 0;
}

static const char *base_name(const char *path)
{
        const char *slash = strrchr(path, '/');
        return slash ? slash + 1 : path;
}

/* The per-device variables: the VF's address, its RDMA device and char devices, its vfio
 * group; named after the device, so several devices (of several claims) never collide. */
static int device_env(json_t *env, const struct dra_cdi_device *d)
{
        int r = push_env(env, "VF_DEVICE_", d->name, "", d->pci);
        if (r == 0 && d->rdma_device && *d->rdma_device)
                r = push_env(env, "", d->name, "_RDMA_DEVICE", d->rdma_device);
        for (size_t s = 0; r == 0 && s < d->own->n_specs; s++) {
                const char *path = d->own->specs[s].container_path, *b = base_name(path);
                const char *suffix =
                    strncmp(b, "uverbs", 6) == 0 ? "_RDMA_UVERB"
                    : strncmp(b, "umad", 4) == 0 ? "_RDMA_UMAD"
                    : strncmp(b, "issm", 4) == 0 ? "_RDMA_ISSM"
                    : strcmp(b, "rdma_cm") == 0  ? "_RDMA_CM"
                    : strncmp(path, "/dev/vfio/", 10) == 0 && strcmp(b, "vfio") != 0
                        ? "_VFIO_DEVICE"
                        : NULL;
                if (suffix)
                        r = push_env(env, "", d->name, suffix, path);
        }
        return r;
}

static int push_node(json_t *nodes, const char *path, const char *host, const char *perm)
{
        return json_array_append_new(nodes, json_pack("{s:s,s:s,s:s}", "path", path, "hostPath",
                                                      host, "permissions", perm)) < 0
                   ? -ENOMEM
                   : 0;
}

static bool has_node(const struct dp_container_allocation *a, const char *path)
{
        for (size_t s = 0; s < a->n_specs; s++)
                if (strcmp(a->specs[s].container_path, path) == 0)
                        return true;
        return false;
}

json_t *dra_cdi_spec(const char *driver, const char *claim_uid, const struct dra_cdi_device *devs,
                     size_t n)
{
        json_auto_t *devices = json_array();
        if (!devices)
                return NULL;
        for (size_t i = 0; i < n; i++) {
                const struct dra_cdi_device *d = &devs[i];
                json_auto_t *env = json_array(), *nodes = json_array();
                if (!env || !nodes || device_env(env, d) < 0)
                        return NULL;
                for (size_t e = 0; e < d->pool->n_envs; e++) {
                        _cleanup_free_ char *kv = NULL;
                        if (asprintf(&kv, "%s=%s", d->pool->env_keys[e], d->pool->env_values[e]) <
                                0 ||
                            json_array_append_new(env, json_string(kv)) < 0)
                                return NULL;
                }
                for (size_t s = 0; s < d->own->n_specs; s++)
                        if (push_node(nodes, d->own->specs[s].container_path,
                                      d->own->specs[s].host_path, d->own->specs[s].permissions) < 0)
                                return NULL;
                /* addVhostMount: what needVhostNet gives through the device plugin. */
                if (d->vhost && !has_node(d->own, "/dev/vhost-net") &&
                    (push_node(nodes, "/dev/vhost-net", "/dev/vhost-net", "rw") < 0 ||
                     push_node(nodes, "/dev/net/tun", "/dev/net/tun", "rw") < 0))
                        return NULL;
                json_auto_t *edits = json_object();
                if (!edits || json_object_set(edits, "env", env) < 0 ||
                    (json_array_size(nodes) && json_object_set(edits, "deviceNodes", nodes) < 0))
                        return NULL;
                _cleanup_free_ char *name = NULL;
                if (asprintf(&name, "%s-%s", claim_uid, d->name) < 0 ||
                    json_array_append_new(
                        devices, json_pack("{s:s,s:O}", "name", name, "containerEdits", edits)) < 0)
                        return NULL;
        }
        _cleanup_free_ char *kind = NULL;
        if (asprintf(&kind, "%s/" DRA_CDI_CLASS, driver) < 0)
                return NULL;
        return json_pack("{s:s,s:s,s:O}", "cdiVersion", DRA_CDI_VERSION, "kind", kind, "devices",
                         devices);
}

void dra_vf_config_done(struct dra_vf_config *c)
{
        free(c->driver);
        free(c->if_name);
        free(c->nad_name);
        free(c->nad_namespace);
        *c = (struct dra_vf_config){ 0 };
}

static bool lists(json_t *requests, const char *request)
{
        if (json_array_size(requests) == 0)
                return true;
        size_t i;
        json_t *r;
        json_array_foreach(requests, i, r)
        {
                if (json_is_string(r) && strcmp(json_string_value(r), request) == 0)
                        return true;
        }
        return false;
}

static int set_string(char **field, json_t *v, size_t i, const char *key, char **error)
{
        if (!json_is_string(v))
                return fail(error,
                            "status.allocation.devices.config[%zu].opaque.parameters.%s: must be "
                            "a string",
                            i, key);
        char *copy = strdup(json_string_value(v));
        if (!copy)
                return -ENOMEM;
        free(*field);
        *field = copy;
        return 0;
}

/* One VfConfig, strictly: what it sets overrides c. */
static int decode_vf_config(json_t *params, size_t i, struct dra_vf_config *c, char **error)
{
        const char *api = json_string_value(json_object_get(params, "apiVersion"));
        const char *kind = json_string_value(json_object_get(params, "kind"));
        if (!json_is_object(params) || !api || strcmp(api, DRA_VFCONFIG_API_VERSION) != 0 ||
            !kind || strcmp(kind, "VfConfig") != 0)
                return fail(error,
                            "status.allocation.devices.config[%zu].opaque.parameters: not a "
                            "VfConfig of " DRA_VFCONFIG_API_VERSION " (apiVersion %s, kind %s)",
                            i, api ?: "(none)", kind ?: "(none)");
        const char *key;
        json_t *v;
        json_object_foreach(params, key, v)
        {
                int r = 0;
                if (strcmp(key, "apiVersion") == 0 || strcmp(key, "kind") == 0)
                        continue;
                if (strcmp(key, "driver") == 0)
                        r = set_string(&c->driver, v, i, key, error);
                else if (strcmp(key, "ifName") == 0)
                        r = set_string(&c->if_name, v, i, key, error);
                else if (strcmp(key, "netAttachDefName") == 0)
                        r = set_string(&c->nad_name, v, i, key, error);
                else if (strcmp(key, "netAttachDefNamespace") == 0)
                        r = set_string(&c->nad_namespace, v, i, key, error);
                else if (strcmp(key, "addVhostMount") == 0) {
                        if (!json_is_boolean(v))
                                return fail(error,
                                            "status.allocation.devices.config[%zu].opaque."
                                            "parameters.addVhostMount: must be a boolean",
                                            i);
                        c->add_vhost_mount = json_is_true(v);
                } else
                        return fail(error,
                                    "status.allocation.devices.config[%zu].opaque.parameters: "
                                    "unknown field \"%s\" of VfConfig",
                                    i, key);
                if (r < 0)
                        return r;
        }
        return 0;
}

int dra_claim_vf_config(json_t *claim, const char *driver, const char *request,
                        struct dra_vf_config *ret, char **error)
{
        *ret = (struct dra_vf_config){ 0 };
        json_t *configs = json_object_get(
            json_object_get(json_object_get(json_object_get(claim, "status"), "allocation"),
                            "devices"),
            "config");
        /* FromClass entries first, then FromClaim: the claim's own word wins. */
        for (int pass = 0; pass < 2; pass++) {
                size_t i;
                json_t *c;
                json_array_foreach(configs, i, c)
                {
                        const char *source = json_string_value(json_object_get(c, "source"));
                        bool from_class = source && strcmp(source, "FromClass") == 0;
                        if (from_class != (pass == 0))
                                continue;
                        json_t *opaque = json_object_get(c, "opaque");
                        const char *d = json_string_value(json_object_get(opaque, "driver"));
                        if (!d || strcmp(d, driver) != 0 ||
                            !lists(json_object_get(c, "requests"), request))
                                continue;
                        int r =
                            decode_vf_config(json_object_get(opaque, "parameters"), i, ret, error);
                        if (r < 0) {
                                dra_vf_config_done(ret);
                                return r;
                        }
                }
        }
        return 0;
}

json_t *dra_claim_reserved_pods(json_t *claim)
{
        json_t *pods = json_array();
        size_t i;
        json_t *c;
        json_array_foreach(json_object_get(json_object_get(claim, "status"), "reservedFor"), i, c)
        {
                const char *res = json_string_value(json_object_get(c, "resource"));
                const char *group = json_string_value(json_object_get(c, "apiGroup"));
                const char *name = json_string_value(json_object_get(c, "name"));
                const char *uid = json_string_value(json_object_get(c, "uid"));
                if (!res || strcmp(res, "pods") != 0 || (group && *group) || !name)
                        continue;
                if (!pods || json_array_append_new(pods, json_pack("{s:s,s:s}", "name", name, "uid",
                                                                   uid ?: "")) < 0) {
                        json_decref(pods);
                        return NULL;
                }
        }
        return pods;
}

static bool is_ready(json_t *entry)
{
        size_t i;
        json_t *c;
        json_array_foreach(json_object_get(entry, "conditions"), i, c)
        {
                const char *type = json_string_value(json_object_get(c, "type"));
                const char *status = json_string_value(json_object_get(c, "status"));
                if (type && status && strcmp(type, "Ready") == 0 && strcmp(status, "True") == 0)
                        return true;
        }
        return false;
}

json_t *dra_claim_status_devices(json_t *claim, const char *driver,
                                 const struct dra_status_device *devs, size_t n, const char *now)
{
        json_auto_t *out = json_array();
        json_t *old = json_object_get(json_object_get(claim, "status"), "devices");
        if (!out)
                return NULL;
        size_t i;
        json_t *e;
        /* Other drivers' entries, and ours for devices no longer listed, as they are. */
        json_array_foreach(old, i, e)
        {
                const char *d = json_string_value(json_object_get(e, "driver"));
                const char *pool = json_string_value(json_object_get(e, "pool"));
                const char *dev = json_string_value(json_object_get(e, "device"));
                bool ours = false;
                for (size_t k = 0; d && pool && dev && k < n; k++)
                        ours |= strcmp(d, driver) == 0 && strcmp(pool, devs[k].pool) == 0 &&
                                strcmp(dev, devs[k].device) == 0;
                if (!ours && json_array_append(out, e) < 0)
                        return NULL;
        }
        for (size_t k = 0; k < n; k++) {
                json_t *prev = NULL;
                json_array_foreach(old, i, e)
                {
                        const char *d = json_string_value(json_object_get(e, "driver"));
                        const char *pool = json_string_value(json_object_get(e, "pool"));
                        const char *dev = json_string_value(json_object_get(e, "device"));
                        if (d && pool && dev && strcmp(d, driver) == 0 &&
                            strcmp(pool, devs[k].pool) == 0 && strcmp(dev, devs[k].device) == 0)
                                prev = e;
                }
                if (prev && is_ready(prev)) {
                        if (json_array_append(out, prev) < 0)
                                return NULL;
                        continue;
                }
                json_t *entry =
                    json_pack("{s:s,s:s,s:s,s:[{s:s,s:s,s:s,s:s,s:s}]}", "driver", driver, "pool",
                              devs[k].pool, "device", devs[k].device, "conditions", "type", "Ready",
                              "status", "True", "reason", "Prepared", "message",
                              devs[k].message ?: "prepared", "lastTransitionTime", now);
                if (!entry || json_array_append_new(out, entry) < 0)
                        return NULL;
        }
        return json_incref(out);
}
