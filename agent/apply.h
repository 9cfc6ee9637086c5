/* SPDX-License-Identifier: Apache-2.0 */
/* Applying a plan to the host: each action of lib/plan through the matching lib/host call.
 *
 * PFs are independent: the first failing action of a PF stops that PF's remaining actions and
 * is recorded with the PF, the error and the user-facing fix; other PFs go on. Actions on VFs
 * that do not exist yet (the plan was made before their creation) are skipped: the caller
 * re-discovers and re-plans after a VF-count change, so they are planned again with real
 * addresses and netdev names. So are driver binds and GUID changes of a VF that a CNI
 * attachment took after the plan was made (the plugin's allocation record, read under its
 * node-wide lock): the next plan sees the attachment, and the pod's VF is not re-bound under
 * it nor its GUID overwritten. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "model/inventory.h"
#include "plan/apply-report.h" /* struct apply_report: what an apply did, per PF */
#include "plan/plan.h"

#include <systemd/sd-event.h>

struct apply_options {
        const char *sysfs_root;
        int vf_timeout_ms; /* VF creation deadline; 0 = host default */
        /* the CNI plugin's records: its node-wide lock around driver re-binds and RDMA moves
         * (cni_move_lock) is taken for every driver bind and GUID change; NULL: the default */
        const char *cni_state_dir;
};

/* observed is the inventory the plan was made from (for VF netdev names). 0 or -ENOMEM;
 * per-PF failures are in the report, not the return value. */
int apply_plan(const struct apply_options *opts, const struct plan *plan,
               const struct inventory *observed, struct apply_report *ret);

/* The same, in a child process: the caller's sd-event loop keeps running (the kubelet's calls,
 * the API server's watches, signals) while the kernel creates VFs, which can take minutes.
 * done runs from the loop once the child has exited, with its report (ownership passes to
 * done) or a negative errno and how the child ended ("was killed by signal 9 (Killed)", for
 * the caller's log and the NodeState; not logged here) when it gave no report. */
typedef void (*apply_done_fn)(int error, const char *why, struct apply_report *report,
                              void *userdata);
struct apply_child;
int apply_plan_async(sd_event *event, const struct apply_options *opts, const struct plan *plan,
                     const struct inventory *observed, apply_done_fn done, void *userdata,
                     struct apply_child **ret);
/* Ends the child (SIGTERM, then waits for it) without calling done. A child in the middle of
 * a VF-count change first writes the final count (never leaves the PF at 0 VFs). */
void apply_child_kill(struct apply_child *c);
