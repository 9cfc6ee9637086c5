/* SPDX-License-Identifier: Apache-2.0 */
/* Devlink (generic netlink family "devlink") for a PCI device: eswitch mode and the
 * `enable_rdma` parameter.
 *
 * Many drivers have no devlink at all, or not these operations, so "not supported" is an
 * ordinary answer: every function returns -EOPNOTSUPP (logged at notice level with the reason)
 * when the kernel has no devlink family, the device is not registered with devlink (ENODEV),
 * or the driver lacks the operation or parameter (EOPNOTSUPP, EINVAL). Other errors are
 * returned as the kernel gave them. The PCI address is validated before use. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* "legacy" or "switchdev" (or "unknown(N)") into buf. */
int host_devlink_get_eswitch_mode(const char *pci_addr, char *buf, size_t size);

/* Value of the boolean `enable_rdma` parameter; the driverinit value when the driver reports
 * several configuration modes (it is the one a reload applies). */
int host_devlink_get_enable_rdma(const char *pci_addr, bool *ret);

/* Sets `enable_rdma` in driverinit mode and reloads the device so it takes effect (the
 * device's netdevs and RDMA devices are re-created). No-op when already at the value. */
int host_devlink_set_enable_rdma(const char *pci_addr, bool enable);
