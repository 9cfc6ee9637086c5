/* SPDX-License-Identifier: Apache-2.0 */
/* The kubelet's PodResources List() response, reduced to the device IDs pods hold. */
#include "deviceplugin/podresources.h"
#include "fuzz-common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct dp_usage usage = { 0 };
        if (dp_usage_from_list_response(data, size, &usage) == 0 && usage.n_resources > 0 &&
            usage.resources[0].n_ids > 0)
                (void)dp_usage_in_use(&usage, usage.resources[0].resource,
                                      usage.resources[0].ids[0]);
        dp_usage_done(&usage);
        return 0;
}
