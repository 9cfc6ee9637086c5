/* SPDX-License-Identifier: Apache-2.0 */
/* What applying a plan did, per PF: pure data, written by the executor (agent/apply.h) and read
 * by the decisions taken on it (plan/advertise.h, plan/records.h) and by the NodeState report.
 * PFs are independent: a PF's first failed action stops that PF only. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "plan/applied.h"
#include "plan/plan.h"

struct apply_pf_result {
        char pf[PCI_ADDR_MAX];
        int error;                    /* 0 or negative errno of the first failed action */
        enum action_kind failed_kind; /* the kind of that action */
        char message[512];            /* "PF 0000:3b:00.0: set-num-vfs 8: ...: <hint>" */
        size_t n_done;                /* actions that succeeded */
};

struct apply_report {
        struct apply_pf_result *pfs; /* one per PF that had actions, in plan order */
        size_t n_pfs, cap_pfs;       /* cap_*: allocated, for util/array.h */
        size_t n_done, n_skipped;
        bool changed_vf_count; /* re-discover and re-plan before trusting VF-level state */
};

void apply_report_done(struct apply_report *r);
const struct apply_pf_result *apply_report_find(const struct apply_report *r, const char *pf);
/* True for actions that configure the PF itself (VF count, eswitch mode, PF MTU, link):
 * while one of them is pending or failed, none of the PF's VFs may be advertised. VF-level
 * actions need no such gate: a VF with the wrong driver is not ready, so no pool has it. */
bool action_is_pf_level(enum action_kind kind);
/* Number of PFs with an error. */
size_t apply_report_n_failed(const struct apply_report *r);

/* A PF frozen by an unusable state record (previous->bad) is a failure the NodeState must show:
 * each one the report does not name yet is added with -EBADMSG and the record's problem.
 * 0 or -ENOMEM. */
int apply_report_add_frozen(struct apply_report *r, const struct applied_state *previous);

/* Apply rounds per reconcile: each re-discovers and re-plans, so VFs created by one get their
 * binds and MTUs in the next. */
#define APPLY_ROUNDS_MAX 3
/* Whether the reconcile stops applying after `rounds` rounds, the last one reporting `last`:
 * at APPLY_ROUNDS_MAX, or when that round failed without changing anything (doing it again
 * at once would fail the same way; the retry backoff takes over). */
bool apply_rounds_over(int rounds, const struct apply_report *last);
