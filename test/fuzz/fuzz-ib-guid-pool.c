/* SPDX-License-Identifier: Apache-2.0 */
/* The static InfiniBand GUID pool file (upstream's format; an administrator's file on the node):
 * every input is parsed or refused with a reason, and what is accepted gives only GUIDs that
 * came from the file or, for PFs it does not name, derived ones; all of them valid (neither zero
 * nor all-ones). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz-common.h"
#include "plan/ib-guids.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct ib_guid_pool pool;
        char error[256] = "";
        if (ib_guid_pool_parse((const char *)data, size, &pool, error, sizeof(error)) < 0) {
                if (!error[0])
                        abort(); /* a refusal always says why */
                return 0;
        }
        struct pf_info pf = { .pci_address = "0000:3b:00.0" };
        for (int vf = 0; vf < 4; vf++) {
                uint64_t g;
                int r = ib_guid_for_vf(&pool, &pf, vf, &g, error, sizeof(error));
                if (r < 0 && (r != -ENOENT || !error[0]))
                        abort();
                if (r == 0 && !ib_guid_is_valid(g))
                        abort(); /* a file with a zero or all-ones GUID is refused */
        }
        for (size_t i = 0; i < pool.n_entries; i++)
                if (pool.entries[i].has_range &&
                    pool.entries[i].range_end < pool.entries[i].range_start)
                        abort();
        ib_guid_pool_done(&pool);
        return 0;
}
