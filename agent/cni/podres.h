/* SPDX-License-Identifier: Apache-2.0 */
/* The `sriov` CNI plugin's PodResources check: asks the kubelet whether the pod CNI_ARGS
 * names holds the VF (the decision is lib/cni/podres.c's). */
#pragma once

#include "cni/conf.h"

/* 0 when ADD may go on: the pod holds the VF, CNI_ARGS names no pod, no kubelet answers at
 * socket_path at all (no socket, nothing listening, no answer within timeout_ms; one line on
 * stderr says the pool check alone applies), or the agent's DRA driver (records in agent_dir)
 * prepared the VF for a claim reserved for that pod (dra-owner.h: a DRA VF for any other pod, or
 * with no pod named, is refused with e naming the claim). A refused (RESOURCE_EXHAUSTED) or
 * interrupted (UNAVAILABLE) call is asked again within timeout_ms; when none succeeds, or the
 * kubelet answers with another error, the ADD fails closed: a negative errno and e
 * (CNI_ERR_TRY_LATER) saying why. A definite answer that the pod does not hold the VF: a negative
 * errno and e naming pod, deviceID and resource (pool_resource: the VF's pool in the agent's
 * record). */
int cni_podres_check(const char *socket_path, int timeout_ms, const char *agent_dir,
                     const char *args, const char *device_id, const char *pool_resource,
                     struct cni_error *e);
