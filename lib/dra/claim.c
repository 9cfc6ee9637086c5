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

json_t *dra_cdi_spec(const char *driver, const char *claim_uid, char *const *device_names,
                     const struct dp_container_allocation *const *own,
                     const struct dp_container_allocation *const *pool, size_t n)
{
        json_auto_t *devices = json_array();
        if (!devices)
                return NULL;
        for (size_t i = 0; i < n; i++) {
                json_auto_t *env = json_array(), *nodes = json_array();
                if (!env || !nodes)
                        return NULL;
                for (size_t e = 0; e < pool[i]->n_envs; e++) {
                        _cleanup_free_ char *kv = NULL;
                        if (asprintf(&kv, "%s=%s", pool[i]->env_keys[e], pool[i]->env_values[e]) <
                                0 ||
                            json_array_append_new(env, json_string(kv)) < 0)
                                return NULL;
                }
                for (size_t s = 0; s < own[i]->n_specs; s++)
                        if (json_array_append_new(
                                nodes,
                                json_pack("{s:s,s:s,s:s}", "path", own[i]->specs[s].container_path,
                                          "hostPath", own[i]->specs[s].host_path, "permissions",
                                          own[i]->specs[s].permissions)) < 0)
                                return NULL;
                json_auto_t *edits = json_object();
                if (!edits || json_object_set(edits, "env", env) < 0 ||
                    (json_array_size(nodes) && json_object_set(edits, "deviceNodes", nodes) < 0))
                        return NULL;
                _cleanup_free_ char *name = NULL;
                if (asprintf(&name, "%s-%s", claim_uid, device_names[i]) < 0 ||
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
