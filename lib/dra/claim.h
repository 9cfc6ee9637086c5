/* SPDX-License-Identifier: Apache-2.0 */
/* What a ResourceClaim (resource.k8s.io/v1) allocated to this driver on this node, and the CDI
 * spec that hands those devices to containers. Pure: no I/O. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
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

/* One device of a prepared claim as its CDI device gives it to a container. */
struct dra_cdi_device {
        const char *name;        /* the device name in our ResourceSlice ("0000-3b-01-2") */
        const char *pci;         /* its PCI address */
        const char *rdma_device; /* NULL or "" when none */
        const struct dp_container_allocation *own;  /* its allocation alone */
        const struct dp_container_allocation *pool; /* all the claim's devices of its pool */
        bool vhost; /* VfConfig addVhostMount: /dev/vhost-net and /dev/net/tun */
};

/* One claim's CDI spec: kind "<driver>/vf", one device per entry (CDI rejects a device without
 * edits, so each carries its own): the device nodes of `own`, and the environment
 * dra-driver-sriov gives, named after the device so that a container holding several claims
 * sees every VF: SRIOVNETWORK_VF_DEVICE_<dev>=<PCI address> (<dev>: the device name with '-'
 * made '_'), SRIOVNETWORK_<dev>_RDMA_DEVICE and _RDMA_UVERB/_RDMA_UMAD/_RDMA_ISSM/_RDMA_CM for
 * an RDMA device, SRIOVNETWORK_<dev>_VFIO_DEVICE for a vfio-pci VF; then the device plugin's
 * PCIDEVICE_* variables of `pool` (identical for devices of one claim's pool, so injecting
 * several of one claim never conflicts; two claims of one resource each set them to their own
 * VFs, which is why the per-device names are the ones to read). */
json_t *dra_cdi_spec(const char *driver, const char *claim_uid, const struct dra_cdi_device *devs,
                     size_t n);

/* dra-driver-sriov's opaque per-claim configuration (apiVersion
 * sriovnetwork.k8snetworkplumbingwg.io/v1alpha1, kind VfConfig), decoded strictly as upstream
 * does: an unknown field or a wrong type is an error. */
#define DRA_VFCONFIG_API_VERSION "sriovnetwork.k8snetworkplumbingwg.io/v1alpha1"
struct dra_vf_config {
        char *driver, *if_name, *nad_name, *nad_namespace; /* NULL: not set */
        bool add_vhost_mount;
};
void dra_vf_config_done(struct dra_vf_config *c);
/* The configuration status.allocation.devices.config gives the devices of `request` of driver
 * (entries of other drivers ignored; an entry with no requests applies to every request; later
 * entries, the claim's after the class's, override earlier ones field by field). 0 (*ret zeroed
 * when nothing applies), -EINVAL with *error (malloc'd) naming the entry and field, -ENOMEM. */
int dra_claim_vf_config(json_t *claim, const char *driver, const char *request,
                        struct dra_vf_config *ret, char **error);

/* The pods a claim is reserved for (status.reservedFor entries of resource "pods" in the core
 * group): a new JSON array of {"name", "uid"}; NULL on allocation failure. */
json_t *dra_claim_reserved_pods(json_t *claim);

/* One device of ours for ResourceClaim status.devices. */
struct dra_status_device {
        const char *pool, *device;
        const char *message; /* the Ready condition's message */
};
/* The claim's status.devices with our driver's entries for these devices set (conditions: Ready
 * True, reason Prepared, lastTransitionTime now (RFC 3339), kept when an entry already had
 * it Ready) and every other driver's entries kept as they are; a new array, NULL on allocation
 * failure. */
json_t *dra_claim_status_devices(json_t *claim, const char *driver,
                                 const struct dra_status_device *devs, size_t n, const char *now);
