/* SPDX-License-Identifier: Apache-2.0 */
/* The k8s-rdma-shared-dev-plugin configuration file. */
#include <stdlib.h>

#include "deviceplugin/rdma-shared-config.h"
#include "fuzz-common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        char *text = fuzz_strndup(data, size);
        struct rdma_shared_config config = { 0 };
        (void)rdma_shared_config_parse(text, "fuzz.json", &config, NULL);
        rdma_shared_config_done(&config);
        free(text);
        return 0;
}
