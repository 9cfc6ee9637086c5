/* SPDX-License-Identifier: Apache-2.0 */
/* VF lifecycle: changing a PF's VF count through sysfs `sriov_numvfs`.
 *
 * host_set_num_vfs() reads `sriov_totalvfs` and `sriov_numvfs` under
 * <sysfs_root>/bus/pci/devices/<pf>, and
 *  - does not write when the count is already the wanted one;
 *  - refuses a count above `sriov_totalvfs` before writing anything (-ERANGE);
 *  - writes 0 first when going from one non-zero count to another (the kernel answers EBUSY
 *    otherwise) and waits for the old VFs to disappear;
 *  - writes the new count and waits, with a deadline, until the VFs are settled.
 *
 * A VF is settled when its `virtfnN` link exists, resolves to a directory whose `physfn` link
 * points back at the PF, and one of these holds:
 *  - it has a `driver` link (bound);
 *  - the PF's `sriov_drivers_autoprobe` is 0 (the kernel never probes new VFs);
 *  - its `driver_override` names a driver that is not loaded (nothing can bind it);
 *  - every VF link has existed for unbound_grace_ms and it is still unbound: the kernel probes
 *    VFs inside the sriov_numvfs write itself, so a VF still unbound after the grace has no
 *    driver that matches it (e.g. the VF driver module is not loaded). It is logged as such.
 *
 * Waiting sleeps between polls (sysfs does not raise inotify events for entries the kernel
 * creates, so there is nothing to wait on). Errors are logged with the PF as context and
 * returned as negative errno; host_numvfs_error_hint() gives the user-facing advice. */
#pragma once

#include <stdbool.h>

#define HOST_NUMVFS_DEFAULT_TIMEOUT_MS       120000
#define HOST_NUMVFS_DEFAULT_UNBOUND_GRACE_MS 10000

struct numvfs_options {
        const char *sysfs_root; /* NULL = "/sys" */
        int timeout_ms;         /* 0 = HOST_NUMVFS_DEFAULT_TIMEOUT_MS, for each wait */
        int unbound_grace_ms;   /* 0 = HOST_NUMVFS_DEFAULT_UNBOUND_GRACE_MS */
        /* Called once the final count has been written (before waiting for the VFs to settle):
         * from then on the PF is no longer at 0 VFs only because of the 0-first rule. The
         * apply process holds off SIGTERM until then. NULL = nothing. */
        void (*final_count_written)(void *userdata);
        void *userdata;
};

/* Sets the VF count of pf_pci ("0000:3b:00.0") to n. Returns 0 or a negative errno:
 * -EINVAL bad address or garbled sysfs values, -ENODEV no such PF, -EOPNOTSUPP not SR-IOV
 * capable, -ERANGE n above sriov_totalvfs, -ETIMEDOUT VFs not settled in time, or the error
 * the kernel gave for the write (-EBUSY, -ENOMEM, -ENOSPC, ...). */
int host_set_num_vfs(const struct numvfs_options *opts, const char *pf_pci, int n);

/* What a user can do about an errno from a sriov_numvfs write; NULL when there is no advice. */
const char *host_numvfs_error_hint(int error);
