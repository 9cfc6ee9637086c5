/* SPDX-License-Identifier: Apache-2.0 */
/* What the device plugin may offer the kubelet after a reconcile, as a desired state that the
 * pool builder (lib/deviceplugin) turns into pools. Pure.
 *
 * - A PF whose own configuration (VF count, eswitch mode, MTU, link) is not complete, because
 *   such an action is still planned or is the one that failed, keeps its interfaces but with
 *   no VFs: the kubelet sees 0 devices rather than a plugin that vanished, and the VFs appear
 *   once the PF is done. VF-level work (binds, VF MTUs) needs no gate: a VF not ready yet is
 *   left out by the pool builder.
 * - A PF whose changes are held back (pods use its VFs) is offered as it was last applied,
 *   which is what its VFs still are (unless the guard only warned: --allow-disruption).
 * - A PF frozen by an unusable state record is offered while it already is what is desired,
 *   with no VFs when changes for it were dropped. */
#pragma once

#include <stdbool.h>

#include "model/desired.h"
#include "plan/applied.h"
#include "plan/apply-report.h"
#include "plan/disruption.h"
#include "plan/plan.h"

/* left: the plan of what is still to do; rep: the last apply (empty when none ran). */
bool pf_level_incomplete(const char *pci, const struct plan *left, const struct apply_report *rep);

/* One interface per desired interface, in the same order. guarded may be NULL (nothing was
 * guarded: a dry run, or nothing to do); previous is the applied state the plan was built
 * with. 0 or -ENOMEM. */
int advertised_subset(const struct desired_state *desired, const struct plan *left,
                      const struct apply_report *rep, const struct guarded_plan *guarded,
                      const struct applied_state *previous, struct desired_state *ret);
