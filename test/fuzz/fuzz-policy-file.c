/* SPDX-License-Identifier: Apache-2.0 */
/* A policy file as the policy directory holds it: YAML or JSON, multi-document, List objects.
 * Every parsed policy then goes through validation, as the agent does before using it. */
#include <stdlib.h>

#include "fuzz-common.h"
#include "policy/policy-validate.h"
#include "policy/policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct policy_list list = { 0 };
        if (policy_list_add_buffer(&list, "fuzz.yaml", (const char *)data, size) == 0)
                for (size_t i = 0; i < list.n_items; i++) {
                        char *reason = NULL;
                        if (!list.items[i].error)
                                (void)policy_validate(&list.items[i], &reason);
                        free(reason);
                }
        policy_list_done(&list);
        return 0;
}
