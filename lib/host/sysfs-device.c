/* SPDX-License-Identifier: Apache-2.0 */
#include "host/sysfs-device.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "host/sysfs-at.h"
#include "util/fileio.h"
#include "util/macro.h"
#include "util/names.h"
#include "util/parse.h"

#define DEFAULT_ROOT "/sys"

int host_device_open(struct host_device *d, const char *sysfs_root, const char *pci_address)
{
        *d = HOST_DEVICE_NULL;
        d->root = sysfs_root ? sysfs_root : DEFAULT_ROOT;
        if (!pci_address || !pci_address_is_valid(pci_address))
                return -EINVAL;
        strcpy(d->address, pci_address); /* pci_address_is_valid() bounded it */

        _cleanup_close_ int root_fd = host_sysfs_open_dir_at(AT_FDCWD, d->root);
        if (root_fd < 0)
                return root_fd == -ENOENT || root_fd == -ENOTDIR ? -ENODEV : root_fd;
        char rel[sizeof(d->address) + 32];
        snprintf(rel, sizeof(rel), "bus/pci/devices/%s", pci_address);
        int fd = host_sysfs_open_dir_at(root_fd, rel);
        if (fd < 0)
                return fd == -ENOENT || fd == -ENOTDIR ? -ENODEV : fd;
        d->fd = fd;
        d->root_fd = TAKE_FD(root_fd);
        return 0;
}

void host_device_close(struct host_device *d)
{
        closep(&d->fd);
        closep(&d->root_fd);
        d->fd = d->root_fd = -1;
}

int host_device_read_line(const struct host_device *d, const char *attr, char *buf, size_t size)
{
        return host_sysfs_read_line_at(d->fd, attr, buf, size);
}

int host_device_read_int(const struct host_device *d, const char *attr, int *ret)
{
        return host_sysfs_read_int_at(d->fd, attr, ret);
}

int host_device_write(const struct host_device *d, const char *attr, const char *value)
{
        return host_sysfs_write_at(d->fd, attr, value);
}

int host_device_read_link(const struct host_device *d, const char *attr, char *buf, size_t size,
                          bool *ret_dangling)
{
        return host_sysfs_read_link_at(d->fd, attr, buf, size, ret_dangling);
}

bool host_device_exists(const struct host_device *d, const char *attr)
{
        return host_sysfs_exists_at(d->fd, attr);
}

int host_device_path(const struct host_device *d, const char *attr, char *buf, size_t size)
{
        int n = snprintf(buf, size, "%s/bus/pci/devices/%s%s%s", d->root, d->address,
                         attr && attr[0] ? "/" : "", attr ? attr : "");
        return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}
