/* SPDX-License-Identifier: Apache-2.0 */
/* The agent's DRA driver: which resources it serves (--dra-resources) and the plugin that
 * registers with the kubelet. A resource named there is cut out of the device-plugin pools
 * on every reconcile (agent_dra_take_pools), so a device is offered through one path only. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "deviceplugin/pool.h"
#include "dra/plugin.h"
#include "dra/slices.h"
#include "kube/cluster.h"
#include "kube/resource-slices.h"
#include "util/log.h"
#include "util/names.h"
#include "util/strv.h"

int agent_dra_parse_resources(const char *list, char ***ret, size_t *n)
{
        for (const char *p = list; p && *p;) {
                size_t len = strcspn(p, ",");
                char name[RESOURCE_NAME_MAX];
                if (len == 0 || len >= sizeof(name)) {
                        log_error("--dra-resources: empty or too long resource name in \"%s\"",
                                  list);
                        return -EINVAL;
                }
                memcpy(name, p, len);
                name[len] = 0;
                if (!resource_name_is_valid(name)) {
                        log_error("--dra-resources: \"%s\" is not a valid resourceName", name);
                        return -EINVAL;
                }
                if (!strv_contains(*ret, *n, name) && strv_push_dup(ret, n, name) < 0)
                        return -ENOMEM;
                p += len + (p[len] == ',');
        }
        return 0;
}

/* ResourceClaim allocations are not read yet: every claim is answered with an error, which
 * the kubelet shows in the pod's events, rather than with devices that were never checked. */
static void prepare(void *userdata, const struct dra_claim *claim, struct dra_claim_result *ret)
{
        if (asprintf(&ret->error,
                     "claim %s/%s (%s): this agent does not read ResourceClaim allocations yet",
                     claim->namespace_, claim->name, claim->uid) < 0)
                ret->error = NULL;
}

static char *unprepare(void *userdata, const struct dra_claim *claim)
{
        return NULL; /* nothing is ever prepared (see prepare) */
}

static const struct dra_handlers agent_dra_handlers = { .prepare = prepare,
                                                        .unprepare = unprepare };

int agent_dra_start(struct agent *a)
{
        if (a->n_dra_resources == 0)
                return 0;
        const struct dra_plugin_options opts = {
                .kubelet_root = a->config.kubelet_root,
                .handlers = &agent_dra_handlers,
                .userdata = a,
        };
        int r = dra_plugin_new(a->event, &opts, &a->dra);
        if (r < 0)
                return log_error_errno(r, "cannot start the DRA driver (kubelet root %s)",
                                       a->config.kubelet_root ?: DRA_KUBELET_ROOT_DEFAULT);
        return 0;
}

int agent_dra_take_pools(struct agent *a, struct dp_pool_set *pools)
{
        struct dp_pool_set dra = { 0 };
        int r = dp_pool_set_split(pools, a->dra_resources, a->n_dra_resources, &dra);
        if (r < 0)
                return r;
        dp_pool_set_done(&a->dra_pools);
        a->dra_pools = dra;
        return 0;
}

int agent_dra_publisher_new(struct agent *a)
{
        int r = kube_slices_new(kube_cluster_http(a->cluster), a->config.node_name,
                                DRA_DRIVER_NAME_DEFAULT, &a->slices);
        if (r < 0)
                return log_error_errno(r, "cannot set up the ResourceSlice publisher");
        if (a->n_dra_resources == 0) {
                /* DRA off: slices a previous run published for this node must go. */
                json_t *none = json_array();
                r = none ? kube_slices_set(a->slices, none) : -ENOMEM;
                json_decref(none);
        }
        return r;
}

int agent_dra_publish(struct agent *a, const struct inventory *inv)
{
        if (!a->slices || a->n_dra_resources == 0)
                return 0;
        json_t *slices = NULL;
        int r = dra_slices_build(&a->dra_pools, inv, a->config.node_name, DRA_DRIVER_NAME_DEFAULT,
                                 &slices);
        if (r < 0)
                return r;
        r = kube_slices_set(a->slices, slices);
        json_decref(slices);
        return r;
}

void agent_dra_stop(struct agent *a)
{
        a->slices = kube_slices_free(a->slices);
        a->dra = dra_plugin_free(a->dra);
        dp_pool_set_done(&a->dra_pools);
        strv_free_n(a->dra_resources, a->n_dra_resources);
        a->dra_resources = NULL;
        a->n_dra_resources = 0;
}
