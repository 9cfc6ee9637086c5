/* SPDX-License-Identifier: Apache-2.0 */
/* One SriovNetworkNodePolicy object as the API server sends it (JSON), and a List of them. */
#include <stdlib.h>

#include "fuzz-common.h"
#include "policy/policy-validate.h"
#include "policy/policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        json_t *value = json_loadb((const char *)data, size, 0, NULL);
        if (!value)
                return 0;

        struct policy p = { 0 };
        if (policy_from_json(value, "API", &p) == 0 && !p.error) {
                char *reason = NULL;
                (void)policy_validate(&p, &reason);
                free(reason);
        }
        policy_done(&p);

        struct policy_list list = { 0 };
        (void)policy_list_add_json(&list, value, "API");
        policy_list_done(&list);

        json_decref(value);
        return 0;
}
