/* SPDX-License-Identifier: Apache-2.0 */
/* The `sriov` CNI plugin's pool check: a network configuration (stdin, from a
 * NetworkAttachmentDefinition any user of the pod's namespace may write) with CNI_ARGS (from pod
 * annotations), then the deviceID looked up in the sriov-agent record of the VF's PF. The first
 * two input lines are CNI_ARGS and that record, the rest is stdin. */
#include "cni/conf.h"
#include "cni/pool.h"
#include "cni/state.h"
#include "fuzz-common.h"

static const char *next_line(const char **p, const char *end, size_t *len)
{
        const char *start = *p, *nl = memchr(start, '\n', (size_t)(end - start));
        *len = nl ? (size_t)(nl - start) : (size_t)(end - start);
        *p = nl ? nl + 1 : end;
        return start;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        const char *p = (const char *)data, *end = p + size;
        size_t args_len, record_len;
        const char *args = next_line(&p, end, &args_len);
        const char *record = next_line(&p, end, &record_len);
        char *args_str = fuzz_strndup((const uint8_t *)args, args_len);
        if (!args_str)
                return 0;

        struct cni_conf conf = { 0 };
        struct cni_error e = { 0 };
        if (cni_conf_parse(p, (size_t)(end - p), args_len ? args_str : NULL, &conf, &e) == 0) {
                char resource[256];
                (void)cni_pool_lookup_text("fuzz", record, record_len, "0000:3b:00.0", 3, resource,
                                           sizeof(resource), &e);
        }
        cni_conf_done(&conf);
        free(args_str);
        return 0;
}
