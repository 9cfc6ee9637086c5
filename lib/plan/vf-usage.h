/* SPDX-License-Identifier: Apache-2.0 */
/* Which devices the disruption guard (plan/disruption.h) takes as allocated to pods, as the
 * kubelet answered (PodResources) or, when it could not be asked, every VF.
 *
 * Kubelet cannot be asked (no socket, refused, no answer in time, a gRPC error, an undecodable
 * answer) means every VF is in use: a stopped or restarting kubelet gives exactly these while
 * its pods keep running, and holding a change back is recoverable where destroying a pod's VF
 * is not. Each held PF's reason then says why the kubelet could not be asked. Pure. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "model/inventory.h"
#include "plan/applied.h"
#include "plan/disruption.h"
#include "plan/plan.h"

struct vf_usage {
        char **ids; /* device IDs allocated to pods: VF PCI addresses, or a PF's (whole card) */
        size_t n_ids;
        char *unknown; /* why the kubelet could not be asked; NULL when it answered */
};

void vf_usage_done(struct vf_usage *u);
/* The kubelet says a pod holds id. 0 or -ENOMEM. */
int vf_usage_add(struct vf_usage *u, const char *id);
/* The kubelet could not be asked (why): every VF of observed counts as in use. 0 or -ENOMEM. */
int vf_usage_unknown(struct vf_usage *u, const struct inventory *observed, const char *why);
/* disruption_guard() with the devices of u. 0 or a negative errno as that. */
int vf_usage_guard(const struct plan *plan, const struct inventory *observed,
                   const struct applied_state *previous, const struct vf_usage *u,
                   bool allow_disruption, struct guarded_plan *ret);
