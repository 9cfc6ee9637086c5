/* Discovery: builds the observed inventory of SR-IOV network PFs and their VFs.
 *
 * Reads only under sysfs_root (default "/sys"), so tests run on generated trees. Every PCI
 * function of class 0x02xx with `sriov_totalvfs` is a PF; non-network PFs (NVMe, ...) are
 * ignored. A device whose attributes are garbled keeps what could be read plus an `error`
 * string, and the scan goes on. Returns 0 or a negative errno (only for failures that make
 * the whole scan impossible, such as a missing bus/pci/devices directory). */
#pragma once

#include <stdbool.h>

#include "model/inventory.h"

struct discover_options {
        const char *sysfs_root;  /* NULL = "/sys" */
        bool query_kernel;       /* also ask netlink/libibverbs (VF VLANs, port attributes);
                                  * false for generated trees */
};

int host_discover(const struct discover_options *opts, struct inventory *ret);
