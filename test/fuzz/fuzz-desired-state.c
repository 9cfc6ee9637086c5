/* SPDX-License-Identifier: Apache-2.0 */
/* The persisted/received desired state (SriovNetworkNodeState spec names), read back strictly,
 * and re-serialised when it parsed: what was accepted must be printable again. */
#include <stdlib.h>

#include "fuzz-common.h"
#include "model/desired-json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        json_t *value = json_loadb((const char *)data, size, 0, NULL);
        if (!value)
                return 0;

        struct desired_state state = { 0 };
        char *error = NULL;
        if (desired_state_from_json(value, &state, &error) == 0) {
                json_t *again = NULL;
                if (desired_state_to_json(&state, &again) == 0)
                        json_decref(again);
        }
        free(error);
        desired_state_done(&state);

        json_decref(value);
        return 0;
}
