/* SPDX-License-Identifier: Apache-2.0 */
/* What the kubelet handed a pod for a VF: the RDMA character devices (uverbsN, umadN, issmN)
 * its device plugin's Allocate answered, read from the kubelet's device manager checkpoint
 * (/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint: the kubelet writes it at
 * admission, before the sandbox and so before the CNI ADD; each entry keeps the plugin's
 * ContainerAllocateResponse as protobuf bytes). The container runtime resolves those /dev paths
 * to device numbers when it creates the containers, after the ADD: the VF's RDMA device must own
 * exactly those names when the ADD ends, else the container opens another device.
 *
 * Per VF, the answer's PCIDEVICE_<resource>_INFO environment variable (device-info-spec's map
 * from device ID to its "rdma" paths, which this agent's and upstream's device plugins set)
 * says which paths are the VF's; without it, the answer's device specs, when the entry holds
 * this VF alone. The pod's entry is the one of CNI_ARGS K8S_POD_UID, else the only one holding
 * the VF. Nothing is logged; a checkpoint that is absent or unreadable is "not known". */
#pragma once

#include <stddef.h>

#include "host/rdma-function.h"

#define CNI_KUBELET_CHECKPOINT_DEFAULT "/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint"

/* 1 with ret filled (a kind not handed out is "") and source naming the entry, 0 when nothing
 * is known (no checkpoint, no entry for the VF, none of its devices is an RDMA char device),
 * -ENOMEM. args: CNI_ARGS (K8S_POD_UID), may be NULL. */
int cni_alloc_rdma_devices(const char *checkpoint, const char *args, const char *pci,
                           struct host_rdma_char_devices *ret, char *source, size_t source_size);

/* The same for a VF the agent's DRA driver prepared: the device nodes of the VF's own CDI device
 * in the claim's record (<agent_dir>/dra/<claim uid>.json, written at NodePrepareResources with
 * the CDI spec the runtime reads, before the sandbox and so before the ADD). A VF no record
 * lists, or that several list (a stale record): 0, nothing known. -ENOMEM. */
int cni_dra_rdma_devices(const char *agent_dir, const char *pci, struct host_rdma_char_devices *ret,
                         char *source, size_t source_size);
