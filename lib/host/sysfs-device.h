/* SPDX-License-Identifier: Apache-2.0 */
/* One PCI function in sysfs, opened once: the handle every lib/host module reads, writes and
 * follows links through (as systemd's sd_device).
 *
 * host_device_open() opens the sysfs root and <root>/bus/pci/devices/<address> as O_PATH
 * directory handles. Attributes are then reached with openat(2)/readlinkat(2)/faccessat(2)
 * relative to the function: no path rebuilt per attribute, no walk from / each time, and the
 * function stays the same directory while a driver is unbound or VFs come and go. Names given
 * to the accessors are relative ("driver_override", "virtfn3/physfn"); names read from files
 * must be checked (util/names.h) before they are used in one.
 *
 * Contract as util/fileio.h: 0 or a negative errno, first line without its newline, nothing
 * logged. Paths for messages come from host_device_path(), only when there is one to log.
 *
 *   _cleanup_host_device_ struct host_device d = HOST_DEVICE_NULL;
 *   r = host_device_open(&d, opts->sysfs_root, vf);
 *   r = host_device_write(&d, "driver_override", "vfio-pci"); */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "util/macro.h"

struct host_device {
        int root_fd;      /* the sysfs root: bus/pci/drivers/... are relative to it */
        int fd;           /* bus/pci/devices/<address> */
        const char *root; /* the root as given (the caller's string, "/sys" by default) */
        char address[16]; /* "0000:3b:02.1": no model/ include, the CNI plugin compiles this */
};

#define HOST_DEVICE_NULL ((struct host_device){ .root_fd = -1, .fd = -1 })

/* -EINVAL for a malformed address (it would become a path), -ENODEV when the root or the
 * function does not exist, other errors of openat(2) as they come. sysfs_root NULL = "/sys";
 * a non-NULL root must outlive the handle. */
int host_device_open(struct host_device *d, const char *sysfs_root, const char *pci_address);
void host_device_close(struct host_device *d);
#define _cleanup_host_device_ _cleanup_(host_device_close)

int host_device_read_line(const struct host_device *d, const char *attr, char *buf, size_t size);
int host_device_read_int(const struct host_device *d, const char *attr, int *ret);
/* Writes value with one write(2), as the kernel's sysfs store() expects; a short write is -EIO. */
int host_device_write(const struct host_device *d, const char *attr, const char *value);
/* Basename of the link's target; -ENOENT when there is no link; *ret_dangling (optional) is set
 * when the link exists but its target does not. */
int host_device_read_link(const struct host_device *d, const char *attr, char *buf, size_t size,
                          bool *ret_dangling);
/* Whether the attribute exists, following links (a dangling link does not). */
bool host_device_exists(const struct host_device *d, const char *attr);
/* <root>/bus/pci/devices/<address>[/<attr>] for messages; -ENAMETOOLONG when it does not fit
 * (buf then holds a truncated path, still fine to print). */
int host_device_path(const struct host_device *d, const char *attr, char *buf, size_t size);
