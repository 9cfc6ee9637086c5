/* SPDX-License-Identifier: Apache-2.0 */
/* Driver binding of a VF: to vfio-pci (for VMs / DPDK) or back to its default kernel driver.
 *
 * The kernel sequence is: write the target to the VF's `driver_override`, write the VF address
 * to the current driver's `unbind`, write it to bus/pci/drivers_probe, then clear
 * `driver_override` again (a write of "\n") so a later re-probe uses the normal ID match.
 * Success is judged only by the VF's `driver` symlink: a drivers_probe write can succeed while
 * nothing binds (vfio-pci without an IOMMU).
 *
 * Safety rules:
 *  - only VFs are touched: a function with `sriov_totalvfs` or without `physfn` is refused
 *    (-EPERM), so a PF (and the node's connectivity) is never unbound;
 *  - vfio-pci needs the VF to be in an IOMMU group and the vfio-pci module to be loaded
 *    (bus/pci/drivers/vfio-pci); the agent never loads modules itself (no shell-outs): load
 *    vfio-pci at boot (modules-load.d) when policies use deviceType vfio-pci;
 *  - when binding fails, the VF is re-probed with its default driver so it stays usable.
 * All paths are under sysfs_root; addresses and driver names are validated first. */
#pragma once

#include <stddef.h>

#define HOST_BIND_DEFAULT_TIMEOUT_MS 10000

struct bind_options {
        const char *sysfs_root; /* NULL = "/sys" */
        int timeout_ms;         /* wait for unbind/bind to show in sysfs; 0 = default */
};

/* Binds vf_pci to driver (e.g. "vfio-pci"), or, with driver NULL or "", to whatever driver
 * the kernel picks without an override (its default driver). A VF already bound to a driver
 * other than vfio-pci, with no driver_override, counts as being on its default driver. Returns 0
 * when the `driver` link names the wanted driver afterwards, else a negative errno: -EINVAL bad
 * address/driver name, -ENODEV no such device, -EPERM not a VF, -ENXIO no IOMMU group (for
 * vfio-pci), -ENOENT target driver not loaded, -ENODATA probe wrote but nothing bound, -EIO bound
 * to another driver, -ETIMEDOUT. */
int host_bind_vf_driver(const struct bind_options *opts, const char *vf_pci, const char *driver);

/* Unbinds the VF from its kernel driver and lets the kernel probe it again with its default
 * driver (a VF on vfio-pci is left alone: 0). Same errors as host_bind_vf_driver(). */
int host_rebind_vf_driver(const struct bind_options *opts, const char *vf_pci);

/* The VF's current driver name into buf ("" when unbound). */
int host_vf_current_driver(const char *sysfs_root, const char *vf_pci, char *buf, size_t size);

/* The user-facing fix for a host_bind_vf_driver() error, or NULL when there is none to give
 * (as host_numvfs_error_hint() does for VF counts). */
const char *host_bind_error_hint(int error);
