/* What this agent applied to each PF before, and what the PF looked like before we touched it.
 *
 * The planner needs it to reset PFs that no policy wants any more (VFs to 0, original MTU and
 * eswitch mode restored) and to never touch PFs it did not configure. The agent persists one
 * record per PF as JSON in <state-dir>/<pci-address>.json (see applied-store.h):
 *   {"pciAddress", "originalMtu", "originalESwitchMode", "interface": {desired interface}}
 * The record's presence is what proves "this agent owns the PF". Pure data and (de)serialisation.
 */
#pragma once

#include <jansson.h>

#include "model/desired.h"

struct applied_pf {
        char pci_address[PCI_ADDR_MAX];
        int original_mtu;               /* PF MTU before the first change; 0 = unknown */
        char original_eswitch_mode[16]; /* "legacy", "switchdev", "" = unknown */
        struct desired_interface applied;
};

struct applied_state {
        struct applied_pf *pfs; /* sorted by PCI address once built by the planner */
        size_t n_pfs;
};

void applied_pf_done(struct applied_pf *pf);
void applied_state_done(struct applied_state *state);
const struct applied_pf *applied_state_find(const struct applied_state *state, const char *pci);
/* Moves *pf into the state (it is zeroed). 0 or -ENOMEM. */
int applied_state_take(struct applied_state *state, struct applied_pf *pf);
/* Deep copy. 0 or -ENOMEM. */
int applied_pf_copy(const struct applied_pf *src, struct applied_pf *ret);

/* 0 or -ENOMEM. */
int applied_pf_to_json(const struct applied_pf *pf, json_t **ret);
/* 0, -EINVAL with *error (free()) naming the field, or -ENOMEM. */
int applied_pf_from_json(const json_t *obj, struct applied_pf *ret, char **error);
