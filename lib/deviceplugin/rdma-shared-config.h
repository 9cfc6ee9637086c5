/* Whole-card RDMA pools configured in the k8s-rdma-shared-dev-plugin format.
 *
 *   {"periodicUpdateInterval": 300,
 *    "configList": [{"resourceName": "rdma_hca", "resourcePrefix": "rdma", "rdmaHcaMax": 1,
 *                    "selectors": {"vendors": ["15b3"], "deviceIDs": [], "drivers": [],
 *                                  "ifNames": [], "linkTypes": ["ether"]}}]}
 *
 * periodicUpdateInterval: seconds, absent = 60, 0 = no periodic refresh, < 0 invalid.
 * resourceName: required, ^[a-zA-Z0-9_]+$, unique. resourcePrefix: default "rdma".
 * rdmaHcaMax: >= 0, the number of interchangeable IDs "0".."rdmaHcaMax-1" advertised.
 * selectors (or the deprecated "devices" list of interface names, exactly one of the two):
 * OR within a list, AND between lists; an empty list matches everything. Selectors are matched
 * against whole cards (PFs) that have an RDMA device with uverbs, umad and rdma_cm char devices.
 * Errors name the entry and field; nothing of an invalid file is used. */
#pragma once

#include <stddef.h>

#include "deviceplugin/pool.h"
#include "model/inventory.h"

#define RDMA_SHARED_PREFIX_DEFAULT "rdma"
#define RDMA_SHARED_UPDATE_DEFAULT 60
#define RDMA_SHARED_HCA_MAX_LIMIT  1000

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
};

void rdma_shared_config_done(struct rdma_shared_config *c);
/* origin names the source in error messages (a file name). */
int rdma_shared_config_parse(const char *text, const char *origin, struct rdma_shared_config *ret);
int rdma_shared_config_load(const char *path, struct rdma_shared_config *ret);

/* True when a PF matches the resource's selectors and carries a usable RDMA device. */
bool rdma_shared_pf_matches(const struct rdma_shared_selectors *sel, const struct pf_info *pf);

/* One pool per configured resource: rdmaHcaMax healthy IDs when at least one card matched, no
 * IDs otherwise; no topology. */
int dp_pools_from_rdma_shared(const struct rdma_shared_config *c, const struct inventory *inv,
                              struct dp_pool_set *ret);
