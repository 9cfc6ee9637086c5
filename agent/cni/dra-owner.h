/* SPDX-License-Identifier: Apache-2.0 */
/* A VF the sriov-agent's DRA driver prepared belongs to its claim's pods. The agent records each
 * prepared claim in <agent_dir>/dra/<driver>-<claim uid>.json with the claim's namespace, name
 * and the pods of its status.reservedFor at Prepare (agent/dra.c); the CNI plugin hands such a
 * VF only to a pod named in CNI_ARGS that one of those records reserves. */
#pragma once

#include "cni/conf.h"
#include "cni/podres.h"

/* 0: no claim record lists the VF (not a DRA VF: the device-plugin checks apply); 1: a record
 * lists it and its claim is reserved for pod (same namespace, the pod among reservedFor), or
 * the record predates these fields (an agent before them wrote it; a line on stderr says so);
 * a negative errno with e (CNI_ERR_INVALID_CONFIG) naming the claim and the pod when records
 * list the VF but none reserves it for pod, or pod is NULL (CNI_ARGS names no pod). */
int cni_dra_owner_check(const char *agent_dir, const char *device_id, const struct cni_pod_ref *pod,
                        struct cni_error *e);
