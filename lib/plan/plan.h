/* SPDX-License-Identifier: Apache-2.0 */
/* The planner: desired state + observed node + previously applied state -> ordered actions.
 *
 * Pure and deterministic. It changes as little as possible:
 * - sriov_numvfs is written only when the count differs, never on externally managed PFs (there
 *   it only checks that enough VFs exist, else a problem is reported);
 * - the PF MTU is only raised; the PF is set up if it is administratively down;
 * - a VF is rebound only when its driver is wrong for its group (vfio-pci groups need vfio-pci;
 *   netdevice groups need a kernel driver, not unbound and not a DPDK driver); the VF MTU is set
 *   for netdevice groups when it differs or is unknown (the VF is being created or rebound);
 * - VFs outside every group are untouched;
 * - a VF of an InfiniBand PF gets its pool GUID when it shows another, except while a live CNI
 *   attachment (desired->ib_attachments) owns its GUID: then the GUID is its pod's;
 * - PFs with an applied record but no longer desired are reset (VF count, eswitch mode and MTU
 *   back to the recorded originals) unless they were externally managed; PFs without a
 *   record are never touched.
 * Order: PFs by PCI address; per PF: VF count, eswitch mode, PF MTU, link up, per-VF driver
 * binds, per-VF MTUs. `applied` is the state to persist once every action succeeded.
 * plan_simulate() applies a plan to an inventory in memory so that re-planning on the result
 * gives no actions (used by tests and benchmarks). */
#pragma once

#include <jansson.h>

#include "model/desired.h"
#include "model/inventory.h"
#include "plan/applied.h"

enum action_kind {
        ACTION_SET_NUM_VFS,      /* value = VF count (the executor writes 0 first when needed) */
        ACTION_SET_ESWITCH_MODE, /* text = "legacy" or "switchdev" */
        ACTION_SET_PF_MTU,       /* value = MTU */
        ACTION_PF_LINK_UP,
        ACTION_BIND_DRIVER,    /* text = "vfio-pci", or "" for the VF's default kernel driver */
        ACTION_SET_VF_MTU,     /* value = MTU */
        ACTION_RESET_PF,       /* value = the PF's original VF count (0 if we made them all) */
        ACTION_RESTORE_PF_MTU, /* value = the PF's original MTU */
        ACTION_SET_VF_GUID,    /* guid = node and port GUID of an InfiniBand VF */
        _ACTION_KIND_MAX,
};
const char *action_kind_to_string(enum action_kind k); /* "set-num-vfs", ... */

#define ACTION_REASON_MAX 192

struct action {
        enum action_kind kind;
        char pf[PCI_ADDR_MAX];
        char pf_name[IFNAME_MAX];      /* "" when the PF has no netdev */
        int vf_index;                  /* -1 for PF-level actions */
        char vf_address[PCI_ADDR_MAX]; /* "" when the VF does not exist yet (being created) */
        int value;
        char text[DRIVER_MAX];
        uint64_t guid;
        char reason[ACTION_REASON_MAX];
};

struct plan_problem {
        char pf[PCI_ADDR_MAX];
        char message[512];
        /* The PF is left alone until the user acts (firmware settings): a failure of that PF
         * (NodeState Failed with the message as lastSyncError), not only a warning. */
        bool pf_failed;
};

struct plan {
        struct action *actions;
        size_t n_actions;
        struct plan_problem *problems;   /* things no action can fix (PF missing, too few VFs) */
        size_t n_problems, cap_problems; /* cap_*: allocated, for util/array.h */
        struct applied_state applied;    /* to persist after success */
};

void plan_done(struct plan *p);

/* previous may be NULL (nothing applied before). 0 or -ENOMEM. */
int plan_build(const struct desired_state *desired, const struct inventory *observed,
               const struct applied_state *previous, struct plan *ret);

/* Applies the actions to the inventory in memory. New VFs get the driver name
 * PLAN_SIM_DEFAULT_DRIVER and a netdev with MTU 1500. 0 or -ENOMEM. */
#define PLAN_SIM_DEFAULT_DRIVER "(default)"
int plan_simulate(const struct plan *p, struct inventory *inv);

/* {"action","pf","pfName","vf","vfAddress","value","driver"/"mode","reason"} and the whole
 * list; 0 or -ENOMEM. */
int action_to_json(const struct action *a, json_t **ret);
int plan_actions_to_json(const struct plan *p, json_t **ret);
/* One human line, without newline. */
void action_format(const struct action *a, char *buf, size_t size);
/* The value an action sets, as both human texts show it: " -> 9000", " -> vfio-pci",
 * " -> default driver"; "" for pf-link-up, which sets none. */
void action_value_format(const struct action *a, char *buf, size_t size);
