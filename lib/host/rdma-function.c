/* SPDX-License-Identifier: Apache-2.0 */
#include "host/rdma-function.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "host/sysfs-at.h"
#include "host/sysfs-device.h"
#include "util/names.h"

/* The smallest valid device name in dir_fd/rel ("infiniband" or "X/infiniband") into best. */
static void smallest_device(int dir_fd, const char *rel, char *best, size_t size)
{
        _cleanup_sysfs_dir_ struct sysfs_dir d;
        if (host_sysfs_dir_open_at(&d, dir_fd, rel) < 0)
                return;
        for (const char *n; (n = host_sysfs_dir_next(&d));)
                if (n[0] != '.' && filename_is_valid(n) && strlen(n) < size &&
                    (!best[0] || strcmp(n, best) < 0))
                        snprintf(best, size, "%s", n);
}

int host_rdma_device_of_function(const char *sysfs_root, const char *pci_address, char *name,
                                 size_t size)
{
        _cleanup_host_device_ struct host_device dev = HOST_DEVICE_NULL;
        char best[64] = "";
        if (!name || size == 0)
                return -EINVAL;
        int r = host_device_open(&dev, sysfs_root, pci_address);
        if (r < 0)
                return r;
        smallest_device(dev.fd, "infiniband", best, sizeof(best));
        if (!best[0]) {
                /* auxiliary devices: subdirectories of the function with their own infiniband/ */
                _cleanup_sysfs_dir_ struct sysfs_dir d;
                if (host_sysfs_dir_open_at(&d, dev.fd, ".") >= 0)
                        for (const char *sub; (sub = host_sysfs_dir_next(&d));) {
                                char rel[300];
                                if (sub[0] == '.' || !filename_is_valid(sub) ||
                                    snprintf(rel, sizeof(rel), "%s/infiniband", sub) >=
                                        (int)sizeof(rel))
                                        continue;
                                smallest_device(dev.fd, rel, best, sizeof(best));
                        }
        }
        if (!best[0])
                return -ENOENT;
        if (strlen(best) >= size)
                return -ENAMETOOLONG;
        snprintf(name, size, "%s", best);
        return 0;
}
