/* SPDX-License-Identifier: Apache-2.0 */
/* A VF the sriov-agent's DRA driver prepared belongs to its claim's pods. The agent records each
 * prepared claim in <agent_dir>/dra/<driver>-<claim uid>.json with the claim's namespace, name
 * and the pods of its status.reservedFor at Prepare (agent/dra.c); the CNI plugin hands such a
 * VF only to a pod named in CNI_ARGS that one of those records reserves. */
#pragma once

#include <jansson.h>

#include "cni/conf.h"
#include "cni/podres.h"

/* Called for each claim record that lists the VF, with its DRA device name ("0000-3b-00-2") and
 * the record's file name less ".json"; nonzero ends the walk. */
typedef int (*cni_dra_record_fn)(json_t *record, const char *device, const char *claim_file,
                                 void *userdata);
/* Walks the claim records (<agent_dir>/dra/<file>.json) that list the VF device_id, a PCI
 * address: the first nonzero fn result, 0 when none (or no records), -ENOMEM. */
int cni_dra_for_each_record(const char *agent_dir, const char *device_id, cni_dra_record_fn fn,
                            void *userdata);

/* 0: no claim record lists the VF (not a DRA VF: the device-plugin checks apply); 1: a record
 * lists it and its claim is reserved for pod (same namespace, the pod among reservedFor), or
 * the record predates these fields (an agent before them wrote it; a line on stderr says so);
 * a negative errno with e (CNI_ERR_INVALID_CONFIG) naming the claim and the pod when records
 * list the VF but none reserves it for pod, or pod is NULL (CNI_ARGS names no pod); -ENOMEM
 * (CNI_ERR_GENERIC) when the records cannot be read. */
int cni_dra_owner_check(const char *agent_dir, const char *device_id, const struct cni_pod_ref *pod,
                        struct cni_error *e);
