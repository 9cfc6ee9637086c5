/* SPDX-License-Identifier: Apache-2.0 */
/* Selection: does a policy apply to this node, and which of its PFs does it select?
 *
 * nodeSelector is matched against the node's labels (every key present with exactly that
 * value); nicSelector against discovered PFs: vendor and deviceID as hex numbers (so "15B3" and
 * "15b3" agree), rootDevices by PCI address (case-insensitive), pfNames by netdev name with an
 * optional "#first-last" VF range. All given nicSelector fields must match. Node-dependent
 * checks (numVfs against the PF, externally managed PFs, features the node lacks) live here
 * too. Pure functions over validated policies. */
#pragma once

#include <stdbool.h>

#include "model/inventory.h"
#include "policy/policy.h"

/* true when every nodeSelector key/value is among the labels. On false, *ret_missing (if not
 * NULL) points at the first selector pair that is not satisfied. */
bool policy_matches_node(const struct policy *p, const struct string_pair *labels, size_t n_labels,
                         const struct string_pair **ret_missing);

/* How a policy selected one PF. */
struct pf_selection {
        const struct pf_info *pf;
        int vf_start, vf_end;                      /* the VF group's range */
        const struct pf_name_selector *by_pf_name; /* the pfNames entry naming it, or NULL */
        bool by_root_device;                       /* listed in rootDevices */
};

/* true when the nicSelector selects the PF; fills *ret (range from a matching pfNames entry
 * with "#first-last", else 0..numVfs-1). */
bool policy_selects_pf(const struct policy *p, const struct pf_info *pf, struct pf_selection *ret);

/* Checks that depend on the selected PF: numVfs > 0, numVfs <= sriov_totalvfs, <= 128 on
 * Mellanox, and for externally managed PFs enough existing VFs, mtu <= PF MTU and the same link
 * type. Returns 0, or -EINVAL with *ret_reason (free()) naming the PF and the field. */
int policy_check_on_pf(const struct policy *p, const struct pf_info *pf, char **ret_reason);

/* Features this node cannot provide for the policy (netFilter cloud selection, OVS bridges,
 * switchdev on a PF without a known eswitch mode). NULL when none, else a static reason. */
const char *policy_unsupported_feature(const struct policy *p);
const char *policy_unsupported_on_pf(const struct policy *p, const struct pf_info *pf);

#define MELLANOX_VENDOR_ID 0x15b3
#define MELLANOX_MAX_VFS   128
