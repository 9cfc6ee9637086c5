/* SPDX-License-Identifier: Apache-2.0 */
/* The disruption guard: which PFs' planned actions would disturb VFs that pods are using.
 *
 * Pure. Input: a plan, the observed inventory it was built from, and the device IDs the kubelet
 * reports allocated to pods (PodResources; for this agent a device ID is the VF's PCI address,
 * or the PF's own PCI address for a whole-card pool). An action is disruptive when it
 * - changes the VF count of a PF that has VFs in use: going from a non-zero count to another
 *   writes 0 first, so growing as well as shrinking destroys and re-creates every VF (growing
 *   from 0 VFs never is, there is nothing to destroy);
 * - resets the PF (removes all VFs) while VFs are in use;
 * - rebinds the driver of, sets the MTU of, or sets the InfiniBand GUID of (a re-bind too) an
 *   in-use VF (the planner plans no GUID change for a VF whose GUID a pod's attachment set);
 * - changes the eswitch mode of a PF with in-use VFs;
 * - lowers the PF MTU (restore-pf-mtu) while VFs are in use (raising it never is);
 * - touches in any way a PF that is itself allocated to a pod.
 * A PF with one disruptive action has ALL its actions held: applying part of a PF would leave
 * it half-configured. Other PFs are independent. With allow_disruption nothing is held but the
 * same PFs are still reported (as a warning for the caller to log).
 * The returned plan keeps the problems and, for held PFs, the previous applied record instead
 * of the new one (nothing was applied, and a held reset must keep the agent's ownership). */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "model/inventory.h"
#include "plan/applied.h"
#include "plan/plan.h"

#define HELD_PF_REASON_MAX 512

struct held_pf {
        char pf[PCI_ADDR_MAX];
        char pf_name[IFNAME_MAX]; /* "" when the PF has no netdev */
        size_t n_actions;         /* the PF's actions in the input plan */
        size_t n_in_use;          /* its devices (VFs, or the PF itself) allocated to pods */
        /* "0000:3b:00.0 (ens1f0): set-num-vfs 4 -> 6 writes 0 first and re-creates every VF;
         * in use: VF 0000:3b:02.1 by pod ml/train-0" */
        char reason[HELD_PF_REASON_MAX];
};

struct guarded_plan {
        struct plan plan;     /* the actions allowed to run, in input order; problems; applied */
        struct held_pf *held; /* disruptive PFs, by PCI address order of the plan */
        size_t n_held, cap_held;
        bool passed_through; /* allow_disruption: `held` lists PFs whose actions still run */
};

void guarded_plan_done(struct guarded_plan *g);

/* in_use: device IDs allocated to pods (compared case-insensitively; IDs that match nothing
 * on this node are ignored). in_use_pods: NULL, or for each ID the pod holding it ("ns/name";
 * entries may be NULL). previous: the applied state the plan was built with, may be NULL.
 * 0, -EINVAL (NULL plan/observed/ret, or an ID array missing while n_in_use > 0), or -ENOMEM. */
int disruption_guard(const struct plan *plan, const struct inventory *observed,
                     const struct applied_state *previous, const char *const *in_use,
                     const char *const *in_use_pods, size_t n_in_use, bool allow_disruption,
                     struct guarded_plan *ret);
