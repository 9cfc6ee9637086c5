/* SPDX-License-Identifier: Apache-2.0 */
/* The sriov CNI plugin's network configuration (stdin, written by whoever may create a
 * NetworkAttachmentDefinition in the pod's namespace) and CNI_ARGS (from pod annotations).
 * Input: CNI_ARGS, a NUL byte, then the configuration; without a NUL byte all of it is the
 * configuration. What the parser accepts must hold what the plugin relies on. The same input
 * goes through ib-sriov's fields (cni/conf-ib.h): a GUID it accepts is never zero and prints
 * back as the text it parses. */
#include <stdlib.h>
#include <string.h>

#include "cni/conf-ib.h"
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
        struct cni_ib_conf ib;
        e = (struct cni_error){ .code = 0 };
        if (cni_ib_conf_parse((const char *)conf, conf_len, args, &ib, &e) == 0) {
                char text[CNI_GUID_STR_MAX];
                uint64_t back;
                if (ib.has_guid) {
                        cni_guid_format(ib.guid, text);
                        if (ib.guid == 0 || cni_guid_parse(text, &back) < 0 || back != ib.guid ||
                            !ib.guid_from[0])
                                abort();
                }
        } else if (e.code == 0 || !e.msg[0]) {
                abort();
        }
        free(args);
        return 0;
}
