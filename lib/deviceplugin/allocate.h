/* SPDX-License-Identifier: Apache-2.0 */
/* What a container gets for a set of device IDs of one pool (the Allocate answer), in plain C.
 *
 * SR-IOV pools: env PCIDEVICE_<PREFIX>_<NAME> = comma-joined PCI addresses and
 * PCIDEVICE_<PREFIX>_<NAME>_INFO = {"<pci>": {"generic": {"deviceID": ...}, "vfio": {...},
 * "rdma": {...}, "vhost": {...}}} as the SR-IOV network device plugin writes it; device specs
 * (permissions "rw", deduplicated by host path): vfio /dev/vfio/vfio + /dev/vfio/<group>, RDMA the
 * VF's char devices + /dev/infiniband/rdma_cm, needVhostNet /dev/vhost-net + /dev/net/tun.
 * Whole-card RDMA pools: the shared char devices of every selected card, permissions "rwm"
 * (mknod too, as the upstream plugin grants), no env.
 * Unknown IDs are INVALID_ARGUMENT, unhealthy ones FAILED_PRECONDITION. The device-info files
 * written per allocated device are in deviceplugin/devinfo.h. */
#pragma once

#include <stddef.h>

#include "deviceplugin/devinfo.h"
#include "deviceplugin/pool.h"
#include "grpc/grpc-status.h"

struct dp_device_spec {
        char container_path[128];
        char host_path[128];
        char permissions[4];
};

struct dp_container_allocation {
        char **env_keys, **env_values;
        size_t n_envs;
        struct dp_device_spec *specs;
        size_t n_specs, cap_specs; /* cap_*: allocated, for util/array.h */
};

void dp_container_allocation_done(struct dp_container_allocation *a);

/* "PCIDEVICE_" + upper-cased "<prefix>_<name>" with '.' made '_' (only that, as upstream). */
int dp_env_name(const struct dp_pool *pool, char *buf, size_t size);

/* The _INFO JSON for the given devices (compact, keys sorted); NULL on allocation failure. */
char *dp_info_json(const struct dp_pool *pool, const struct dp_device *const *devs, size_t n);

/* Whole cards of an RDMA shared pool by PCI address (pool->cards, what DRA hands out): each
 * card's RDMA char devices and rdma_cm, permissions "rwm" as for the shared IDs, no env. A
 * card not in the pool is INVALID_ARGUMENT, a card that is down FAILED_PRECONDITION. */
int dp_allocate_cards(const struct dp_pool *pool, char *const *ids, size_t n_ids,
                      struct dp_container_allocation *ret, struct grpc_status *st);

/* Returns a gRPC status code; st->message names the bad ID. */
int dp_allocate_container(const struct dp_pool *pool, char *const *ids, size_t n_ids,
                          struct dp_container_allocation *ret, struct grpc_status *st);
