/* SPDX-License-Identifier: Apache-2.0 */
/* One `sriov` CNI plugin record (/var/lib/cni/sriov/<containerid>-<ifname>) as DEL reads it:
 * ours, upstream sriov-cni's, or one corrupted on disk. DEL must either get a record whose
 * device and interface names are safe to use or an error, never a crash. */
#include "cni/state.h"
#include "fuzz-common.h"
#include "util/names.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct cni_cache c;
        struct cni_error e = { 0 };
        if (cni_cache_parse("fuzz", (const char *)data, size, &c, &e) == 0) {
                /* what DEL goes on to use as paths and interface names */
                if (!pci_address_is_valid(c.device_id) ||
                    (c.orig.host_ifname[0] && !ifname_is_valid(c.orig.host_ifname)))
                        abort();
        }
        return 0;
}
