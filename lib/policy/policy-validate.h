/* SPDX-License-Identifier: Apache-2.0 */
/* Node-independent validation of a parsed SriovNetworkNodePolicy.
 *
 * Upstream's CRD schema and admission-webhook rules plus ours (names that end up in sysfs paths
 * must be plain names). Checks that need the node (numVfs against a PF's totalvfs, Mellanox's
 * 128 VF limit, externally managed PFs) are done at selection (policy-select.h). Pure. */
#pragma once

#include "policy/policy.h"

#define POLICY_MAX_MTU     65535
#define POLICY_MAX_NUM_VFS 65535 /* the PCIe TotalVFs field is 16 bits */
#define PF_NAME_MAX        127   /* alternative names may be longer than IFNAMSIZ */

/* 0 when valid. -EINVAL when not, with *ret_reason (free()) listing every problem as
 * "ORIGIN: policy NAME: field F: reason; field G: reason". A policy with a parse error is
 * invalid with that error. -ENOMEM on allocation failure. */
int policy_validate(const struct policy *p, char **ret_reason);

/* A PF selector name: 1..127 bytes, no '/', whitespace, control characters or "..". */
bool pf_name_is_valid(const char *name);
