/* SPDX-License-Identifier: Apache-2.0 */
/* The sriov CNI plugin's network configuration (stdin, written by whoever may create a
 * NetworkAttachmentDefinition in the pod's namespace) and CNI_ARGS (from pod annotations).
 * Input: CNI_ARGS, a NUL byte, then the configuration; without a NUL byte all of it is the
 * configuration. What the parser accepts must hold what the plugin relies on. */
#include <stdlib.h>
#include <string.h>

#include "cni/conf.h"
#include "fuzz-common.h"
#include "util/names.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        const uint8_t *nul = memchr(data, '\0', size);
        char *args = nul ? fuzz_strndup(data, (size_t)(nul - data)) : NULL;
        const uint8_t *conf = nul ? nul + 1 : data;
        const size_t conf_len = nul ? size - (size_t)(nul + 1 - data) : size;

        struct cni_conf c;
        struct cni_error e = { 0 };
        if (cni_conf_parse((const char *)conf, conf_len, args, &c, &e) == 0) {
                /* everything ADD acts on was checked */
                if (!pci_address_is_valid(c.device_id) || !c.cni_version[0] || !c.name[0] ||
                    (c.ipam_type[0] && !filename_is_valid(c.ipam_type)) ||
                    (c.has_vlan && (c.vlan < 0 || c.vlan > 4094 || c.qos < 0 || c.qos > 7)) ||
                    (c.has_mac && strlen(c.mac_str) != 17))
                        abort();
                cni_conf_done(&c);
        } else if (e.code == 0 || !e.msg[0]) {
                abort(); /* a refusal always says why */
        }
        free(args);
        return 0;
}
