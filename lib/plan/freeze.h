/* SPDX-License-Identifier: Apache-2.0 */
/* PFs frozen by an unusable applied-state record (plan/applied.h: applied_state.bad; the files
 * are read by agent/applied-store.h).
 *
 * A record that exists but cannot be used (truncated, not JSON, a field out of range, named
 * for another PF) may be the only proof that the agent owns the PF and what it was before:
 * planning the PF as if it had none could reset or re-adopt it wrongly, so the PF is left
 * exactly as it is until an operator fixes or removes the file. Other PFs are unaffected.
 * Pure. */
#pragma once

#include "plan/applied.h"
#include "plan/plan.h"

/* Applies previous->bad to plan p: drops every action and every applied record (p->applied) of
 * a frozen PF, so nothing is done to it and no record is written over its file; sets
 * bad[i].would_change when actions were dropped; adds one problem per frozen PF naming it and
 * the record's problem ("state record unusable (<path>: ...); PF left as it is[, its changes
 * held back,] until the file is fixed or removed"). PCI addresses compare case-insensitively.
 * 0 or -ENOMEM. */
int plan_freeze_bad_records(struct plan *p, struct applied_state *previous);
