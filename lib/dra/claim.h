/* SPDX-License-Identifier: Apache-2.0 */
/* What a ResourceClaim (resource.k8s.io/v1) allocated to this driver on this node, and the CDI
 * spec that hands those devices to containers. Pure: no I/O. */
#pragma once

#include <jansson.h>
#include <stddef.h>

#include "deviceplugin/allocate.h"

struct dra_allocated {
        char *request; /* the claim's request name */
        char *device;  /* the device name in our ResourceSlice */
};

/* The results of claim (a parsed ResourceClaim) for driver in pool. The claim must be the one
 * the kubelet named (uid) and be allocated. A result of our driver in another pool is an error:
 * the claim was allocated for another node. *ret may hold 0 devices (nothing of ours).
 * 0, or -EINVAL with *error (malloc'd) saying why, or -ENOMEM. */
int dra_claim_allocated(json_t *claim, const char *uid, const char *driver, const char *pool,
                        struct dra_allocated **ret, size_t *n, char **error);
void dra_allocated_free(struct dra_allocated *a, size_t n);

#define DRA_CDI_VERSION "0.6.0" /* what containerd 1.7+/2.x and CRI-O of Kubernetes 1.34 read */
#define DRA_CDI_CLASS   "vf"

/* The CDI device name of one device of a claim ("<claim uid>-<device>"), and its fully
 * qualified ID "<driver>/vf=<name>". */
int dra_cdi_device_id(const char *driver, const char *claim_uid, const char *device, char *buf,
                      size_t size);

/* One claim's CDI spec: kind "<driver>/vf", one device per entry (CDI rejects a device without
 * edits, so each carries its own): the device nodes of own[i] (its allocation alone) and the
 * environment of pool[i] (the allocation of all the claim's devices of its pool: the
 * PCIDEVICE_* variables the device plugin gives, identical for devices of one pool, so
 * injecting several never conflicts). */
json_t *dra_cdi_spec(const char *driver, const char *claim_uid, char *const *device_names,
                     const struct dp_container_allocation *const *own,
                     const struct dp_container_allocation *const *pool, size_t n);
