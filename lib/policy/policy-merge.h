/* SPDX-License-Identifier: Apache-2.0 */
/* From policies to the node's desired state, with a status for every policy.
 *
 * policy_build_desired_state() validates each policy, selects those whose nodeSelector matches
 * the node labels and whose nicSelector matches discovered PFs, resolves on the node the
 * conflicts upstream's admission webhook would have rejected (overlapping pfNames ranges on one
 * PF, the same rootDevice twice, disagreeing externallyManaged on a PF, disagreeing
 * excludeTopology for one resourceName: the higher-priority policy, then the smaller name, wins
 * and the other applies nothing), then merges exactly as upstream's controller does: policies
 * in order of descending priority number (ties by name), each replacing the PF entry and
 * carrying over earlier groups that neither share its resourceName nor overlap its VF range;
 * PF-level mtu/numVfs take the maximum only when the priorities are equal or a group was
 * carried, otherwise the later (higher-priority) policy's values win.
 * Pure: data in, data out; the result does not point into the inputs. */
#pragma once

#include "model/desired.h"
#include "model/inventory.h"
#include "policy/policy.h"
#include "policy/supported-nics.h"

enum policy_status {
        POLICY_STATUS_APPLIED,
        POLICY_STATUS_NOT_SELECTED,
        POLICY_STATUS_INVALID,
        POLICY_STATUS_CONFLICT,
        _POLICY_STATUS_MAX,
};
const char *policy_status_to_string(enum policy_status s); /* "applied", "not-selected", ... */

struct policy_result {
        char *name;   /* metadata.name, or NULL when the object had none */
        char *origin; /* file/document or "API" */
        enum policy_status status;
        char *reason; /* human-readable: where it applied, or why not */
};

/* One result per input policy, in input order. */
struct policy_report {
        struct policy_result *results;
        size_t n_results;
};

void policy_report_done(struct policy_report *report);
/* true when any policy is invalid or conflicting (the CLI's exit status 2). */
bool policy_report_has_errors(const struct policy_report *report);

struct policy_build_options {
        /* Which PF models policies may configure; NULL: the built-in table. PFs of other
         * models are never selected (the policy's reason names them), and a nicSelector
         * vendor/deviceID outside the list makes the policy invalid, as upstream's webhook
         * rejects it. */
        const struct supported_nics *supported;
};

/* Returns 0 and fills both outputs (desired interfaces sorted by PCI address), or -ENOMEM. */
int policy_build_desired_state_with(const struct policy_build_options *opts,
                                    const struct policy *policies, size_t n_policies,
                                    const struct string_pair *labels, size_t n_labels,
                                    const struct inventory *inv, struct desired_state *ret_desired,
                                    struct policy_report *ret_report);
/* The same with default options (the built-in supported-NIC table). */
int policy_build_desired_state(const struct policy *policies, size_t n_policies,
                               const struct string_pair *labels, size_t n_labels,
                               const struct inventory *inv, struct desired_state *ret_desired,
                               struct policy_report *ret_report);
