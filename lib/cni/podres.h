/* SPDX-License-Identifier: Apache-2.0 */
/* Whether the pod an ADD is for holds the VF it names, by the kubelet's PodResources answer
 * (pure; the call itself is agent/cni/podres.c).
 *
 * The pool check (cni/pool.h) keeps a NetworkAttachmentDefinition to the VFs the sriov-agent
 * manages, but any namespace could still name a VF of a pool that the kubelet gave to another
 * pod (or to none). Where CNI_ARGS names the pod (K8S_POD_NAMESPACE and K8S_POD_NAME, as
 * Multus and the runtimes pass them) and the kubelet answers, the VF's PCI address (the device
 * plugin's device ID) must be among that pod's devices. Without an answer (no socket, no answer
 * in time) only the pool check applies; the node-side allow-any-VF file turns both off. */
#pragma once

#include <stddef.h>

#include "cni/conf.h"

#define CNI_PODRES_SOCKET_DEFAULT "/var/lib/kubelet/pod-resources/kubelet.sock"
/* How long ADD waits for the kubelet's answer before going on with the pool check only. */
#define CNI_PODRES_TIMEOUT_MS 2000

/* A pod's namespace and name: DNS-1123 labels/subdomains, at most 253 bytes. */
struct cni_pod_ref {
        char namespace_[254];
        char name[254];
};

/* K8S_POD_NAMESPACE and K8S_POD_NAME from CNI_ARGS ("K=V;K=V", as cni_conf_parse() accepted
 * it). 1 and ret filled when both are there and not empty, 0 when either is missing, -EINVAL
 * (e filled, naming the key) when a value is too long to be a pod's. */
int cni_args_pod(const char *args, struct cni_pod_ref *ret, struct cni_error *e);

/* One device the kubelet has given to a pod's container. */
struct cni_device_holder {
        const char *resource, *id, *namespace_, *pod;
};

/* The verdict on the kubelet's answer (holders: every device of every pod it listed): 0 when
 * pod holds device_id under any resource; otherwise -EACCES and e (CNI_ERR_INVALID_CONFIG)
 * names the pod, the deviceID and the resource: the one the kubelet lists the device under for
 * another pod (and that pod), else pool_resource (the VF's pool in the agent's record). */
int cni_podres_verdict(const struct cni_device_holder *holders, size_t n,
                       const struct cni_pod_ref *pod, const char *device_id,
                       const char *pool_resource, struct cni_error *e);

