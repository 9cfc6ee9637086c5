/* SPDX-License-Identifier: Apache-2.0 */
/* Whole-card RDMA pools configured in the k8s-rdma-shared-dev-plugin format.
 *
 *   {"periodicUpdateInterval": 300,
 *    "configList": [{"resourceName": "rdma_hca", "resourcePrefix": "rdma", "rdmaHcaMax": 1,
 *                    "selectors": {"vendors": ["15b3"], "deviceIDs": [], "drivers": [],
 *                                  "ifNames": [], "linkTypes": ["ether"]}}]}
 *
 * The rules are the upstream plugin's (its ReadConfig/ValidateConfigs, Go encoding/json):
 * periodicUpdateInterval: seconds, absent or null = 60, 0 = no periodic refresh, < 0 invalid.
 * resourceName: required, ^[a-zA-Z0-9_]+$, unique by name alone (whatever the prefix).
 * resourcePrefix: absent, null or "" = "rdma". rdmaHcaMax: >= 0 (absent = 0), the number of
 * interchangeable IDs "0".."rdmaHcaMax-1" advertised, at most RDMA_SHARED_HCA_MAX_LIMIT.
 * selectors {vendors, deviceIDs, drivers, ifNames, linkTypes} or the deprecated "devices" list
 * of interface names: a selector is empty when every list is; both empty, or both non-empty, is
 * an error; empty selectors use "devices" as ifNames. Values are compared as exact strings
 * (IDs as 4 lower-case hex digits, link types "ether"/"infiniband"): a value matching nothing
 * is valid and selects nothing. OR within a list, AND between lists. Unknown keys are ignored
 * (warnings); a value of the wrong type is an error. Selectors are matched against whole cards
 * (PFs) that have an RDMA device with uverbs, umad and rdma_cm char devices. Nothing of an
 * invalid file is used. */
#pragma once

#include <stddef.h>

#include "deviceplugin/pool.h"
#include "model/inventory.h"

#define RDMA_SHARED_PREFIX_DEFAULT "rdma"
#define RDMA_SHARED_UPDATE_DEFAULT 60
/* IDs "0".."99999": a ListAndWatch answer of about 2 MB, under the kubelet's 4 MiB gRPC
 * receive limit, and about 18 MB per copy of the pool in this process. */
#define RDMA_SHARED_HCA_MAX_LIMIT 100000

struct rdma_shared_selectors {
        char **vendors, **device_ids, **drivers, **if_names, **link_types;
        size_t n_vendors, n_device_ids, n_drivers, n_if_names, n_link_types;
};

struct rdma_shared_resource {
        char name[RESOURCE_NAME_MAX];
        char prefix[DP_PREFIX_MAX + 1];
        int hca_max;
        struct rdma_shared_selectors selectors;
};

struct rdma_shared_config {
        int periodic_update_sec;
        struct rdma_shared_resource *resources;
        size_t n_resources;
        char **warnings; /* what was ignored (unknown keys, deprecated fields): for the log */
        size_t n_warnings;
};

void rdma_shared_config_done(struct rdma_shared_config *c);
/* origin names the source in messages (a file name). Nothing is logged: on error (-EINVAL, or
 * -errno reading the file) *ret_error (may be NULL) gets a malloc'd message naming the file,
 * entry, field and value; warnings land in ret->warnings. */
int rdma_shared_config_parse(const char *text, const char *origin, struct rdma_shared_config *ret,
                             char **ret_error);
int rdma_shared_config_load(const char *path, struct rdma_shared_config *ret, char **ret_error);

/* True when a PF matches the resource's selectors and carries a usable RDMA device. */
bool rdma_shared_pf_matches(const struct rdma_shared_selectors *sel, const struct pf_info *pf);

/* One pool per configured resource: rdmaHcaMax IDs when at least one card matched, no IDs
 * otherwise; no topology. */
int dp_pools_from_rdma_shared(const struct rdma_shared_config *c, const struct inventory *inv,
                              struct dp_pool_set *ret);
struct dp_health_options;
/* The same with health options (deviceplugin/health.h; NULL = defaults): the IDs are Unhealthy
 * while every matching function is down (driver unbound; unless link health is off, no carrier
 * or InfiniBand port not ACTIVE), so whole-card pools follow their cards' ports. */
int dp_pools_from_rdma_shared_health(const struct rdma_shared_config *c,
                                     const struct inventory *inv,
                                     const struct dp_health_options *health,
                                     struct dp_pool_set *ret);
