/* SPDX-License-Identifier: Apache-2.0 */
/* Which applied-state records (plan/applied.h; the files are agent/applied-store.h's) are
 * written and deleted around an apply. A record is what proves the agent owns a PF, so:
 *
 * - before an apply, every PF the plan changes and that has no record yet gets one, its
 *   originals being what the PF is now: written only after the change, an agent killed in
 *   between would find the PF changed, no record, and take the changed values for the
 *   originals. An existing record is never rewritten then (its originals stay). A record for
 *   changes that then fail is harmless: releasing the PF restores exactly these originals.
 * - after an apply, every PF of plan->applied gets its new record, except one that failed
 *   before changing anything (it keeps what it had); the record of a PF applied before and
 *   no longer in plan->applied is deleted, except when its reset failed (the agent still owns
 *   what it could not release, and retries). A PF frozen by an unusable record is in neither
 *   list (plan_freeze_bad_records() took it out of plan->applied): its file is left alone.
 * Pure: the lists point into the plan and the previous state. */
#pragma once

#include <stddef.h>

#include "plan/applied.h"
#include "plan/apply-report.h"
#include "plan/plan.h"

struct record_changes {
        const struct applied_pf **save; /* into plan->applied */
        size_t n_save;
        const char **remove; /* PCI addresses, into previous */
        size_t n_remove;
};

void record_changes_done(struct record_changes *c);

/* The records to write before applying plan (n_remove is 0). 0 or -ENOMEM. */
int records_before_apply(const struct plan *plan, const struct applied_state *previous,
                         struct record_changes *ret);
/* The records to write and delete once plan was applied as rep says (an empty report: the plan
 * had nothing to do). 0 or -ENOMEM. */
int records_after_apply(const struct plan *plan, const struct applied_state *previous,
                        const struct apply_report *rep, struct record_changes *ret);

/* The desired state at boot, before the API server has answered: every PF the records say this
 * agent configured, as it was last applied (VF count, groups and their drivers, MTUs, eswitch
 * mode, link type). Planned against a node whose VFs a reboot removed, it brings them back;
 * it never resets a PF (every recorded PF is wanted) and never touches a PF without a record.
 * Externally managed PFs are included as recorded (the planner leaves their VF count alone).
 * 0 or -ENOMEM. */
int records_boot_desired(const struct applied_state *records, struct desired_state *ret);
