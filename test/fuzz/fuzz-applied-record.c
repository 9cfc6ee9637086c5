/* SPDX-License-Identifier: Apache-2.0 */
/* One applied record (<state-dir>/<pci>.json) as the agent reads it back after a restart. */
#include <stdlib.h>

#include "fuzz-common.h"
#include "plan/applied.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        json_t *value = json_loadb((const char *)data, size, 0, NULL);
        if (!value)
                return 0;

        struct applied_pf pf = { 0 };
        char *error = NULL;
        if (applied_pf_from_json(value, &pf, &error) == 0) {
                json_t *again = NULL;
                if (applied_pf_to_json(&pf, &again) == 0)
                        json_decref(again);
        }
        free(error);
        applied_pf_done(&pf);

        json_decref(value);
        return 0;
}
