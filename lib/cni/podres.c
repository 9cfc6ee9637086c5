/* SPDX-License-Identifier: Apache-2.0 */
#include "cni/podres.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "util/macro.h"

/* The value of key in "K=V;K=V" (pairs already checked to be K=V), the last one as libcni's
 * LoadArgs takes it: 1 and (value, len) when it is there and not empty, else 0. */
static int args_get(const char *args, const char *key, const char **value, size_t *len)
{
        const size_t klen = strlen(key);
        int found = 0;
        for (const char *p = args; p && *p;) {
                const char *end = strchr(p, ';');
                const size_t n = end ? (size_t)(end - p) : strlen(p);
                if (n >= klen + 1 && strncmp(p, key, klen) == 0 && p[klen] == '=') {
                        *value = p + klen + 1;
                        *len = n - klen - 1;
                        found = *len > 0;
                }
                p = end ? end + 1 : NULL;
        }
        return found;
}

static int copy_value(const char *key, const char *v, size_t len, char *out, size_t size,
                      struct cni_error *e)
{
        if (len >= size)
                return cni_fail(e, CNI_ERR_INVALID_ENV, -EINVAL,
                                "CNI_ARGS: %s is %zu bytes long, longer than a pod's (%zu)", key,
                                len, size - 1);
        memcpy(out, v, len);
        out[len] = '\0';
        return 0;
}

int cni_args_pod(const char *args, struct cni_pod_ref *ret, struct cni_error *e)
{
        const char *ns, *name;
        size_t ns_len, name_len;
        *ret = (struct cni_pod_ref){ .name = "" };
        if (!args || args_get(args, "K8S_POD_NAMESPACE", &ns, &ns_len) <= 0 ||
            args_get(args, "K8S_POD_NAME", &name, &name_len) <= 0)
                return 0;
        int r = copy_value("K8S_POD_NAMESPACE", ns, ns_len, ret->namespace_,
                           sizeof(ret->namespace_), e);
        if (r < 0 ||
            (r = copy_value("K8S_POD_NAME", name, name_len, ret->name, sizeof(ret->name), e)) < 0)
                return r;
        return 1;
}

int cni_podres_verdict(const struct cni_device_holder *holders, size_t n,
                       const struct cni_pod_ref *pod, const char *device_id,
                       const char *pool_resource, struct cni_error *e)
{
        const struct cni_device_holder *other = NULL;
        for (size_t i = 0; i < n; i++) {
                const struct cni_device_holder *h = &holders[i];
                if (!h->id || strcmp(h->id, device_id) != 0)
                        continue;
                if (h->namespace_ && h->pod && strcmp(h->namespace_, pod->namespace_) == 0 &&
                    strcmp(h->pod, pod->name) == 0)
                        return 0;
                if (!other)
                        other = h;
        }
        if (other)
                return cni_fail(e, CNI_ERR_INVALID_CONFIG, -EACCES,
                                "deviceID %s refused: the kubelet allocated it (resource %s) to "
                                "pod %s/%s, not to pod %s/%s",
                                device_id, other->resource ? other->resource : "?",
                                other->namespace_ ? other->namespace_ : "?",
                                other->pod ? other->pod : "?", pod->namespace_, pod->name);
        return cni_fail(e, CNI_ERR_INVALID_CONFIG, -EACCES,
                        "deviceID %s refused: the kubelet has not allocated it (resource %s) to "
                        "pod %s/%s; a NetworkAttachmentDefinition must name the resource so that "
                        "the pod requests it",
                        device_id, pool_resource && *pool_resource ? pool_resource : "?",
                        pod->namespace_, pod->name);
}
