/* SPDX-License-Identifier: Apache-2.0 */
/* What this agent applied to each PF before, and what the PF looked like before we touched it.
 *
 * The planner needs it to reset PFs that no policy wants any more (VFs to 0, original MTU and
 * eswitch mode restored) and to never touch PFs it did not configure. The agent persists one
 * record per PF as JSON in <state-dir>/<pci-address>.json (see agent/applied-store.h):
 *   {"pciAddress", "originalMtu", "originalNumVfs", "originalESwitchMode",
 *    "interface": {desired interface}}
 * Records written before originalNumVfs existed read as 0 (released PFs go to 0 VFs, as then).
 * The record's presence is what proves "this agent owns the PF". Pure data and (de)serialisation.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>

#include "model/desired.h"

struct applied_pf {
        char pci_address[PCI_ADDR_MAX];
        int original_mtu;               /* PF MTU before the first change; 0 = unknown */
        int original_num_vfs;           /* VF count before the first change; 0 = none/unknown */
        char original_eswitch_mode[16]; /* "legacy", "switchdev", "" = unknown */
        struct desired_interface applied;
};

/* A record file that exists for a PF but cannot be used (truncated, not JSON, a field out of
 * range, named for another PF). Its PF is frozen: no action is planned for it and no record
 * is written over the file, until an operator fixes or removes it. Other PFs are unaffected. */
struct applied_bad_record {
        char pci_address[PCI_ADDR_MAX];
        char message[512]; /* "<path>: not JSON: line 1: ..." */
        bool would_change; /* set by plan_freeze_bad_records(): actions were held back */
};

struct applied_state {
        struct applied_pf *pfs;         /* sorted by PCI address once built by the planner */
        size_t n_pfs, cap_pfs;          /* cap_*: allocated, for util/array.h */
        struct applied_bad_record *bad; /* only from applied_state_load_dir() */
        size_t n_bad, cap_bad;
};

void applied_pf_done(struct applied_pf *pf);
void applied_state_done(struct applied_state *state);
const struct applied_pf *applied_state_find(const struct applied_state *state, const char *pci);
/* The unusable record of a PF, or NULL. */
struct applied_bad_record *applied_state_find_bad(const struct applied_state *state,
                                                  const char *pci);
/* Moves *pf into the state (it is zeroed). 0 or -ENOMEM. */
int applied_state_take(struct applied_state *state, struct applied_pf *pf);
/* Deep copy. 0 or -ENOMEM. */
int applied_pf_copy(const struct applied_pf *src, struct applied_pf *ret);

/* 0 or -ENOMEM. */
int applied_pf_to_json(const struct applied_pf *pf, json_t **ret);
/* 0, -EINVAL with *error (free()) naming the field, or -ENOMEM. */
int applied_pf_from_json(const json_t *obj, struct applied_pf *ret, char **error);
