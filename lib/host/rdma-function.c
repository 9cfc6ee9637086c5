/* SPDX-License-Identifier: Apache-2.0 */
#include "host/rdma-function.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>

#include "host/sysfs-at.h"
#include "host/sysfs-device.h"
#include "util/macro.h"
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

/* "<driver>.<kind>.<N>": the auxiliary device names of drivers/base/auxiliary.c */
static bool is_rdma_aux_name(const char *name)
{
        static const char *const kinds[] = { ".rdma.", ".roce.", ".iwarp." };
        for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
                const char *k = strstr(name, kinds[i]);
                if (k && k != name && k[strlen(kinds[i])] >= '0' && k[strlen(kinds[i])] <= '9')
                        return true;
        }
        return false;
}

bool host_rdma_function_has_rdma_aux(const char *sysfs_root, const char *pci_address)
{
        _cleanup_host_device_ struct host_device dev = HOST_DEVICE_NULL;
        if (host_device_open(&dev, sysfs_root, pci_address) < 0)
                return false;
        _cleanup_sysfs_dir_ struct sysfs_dir d;
        if (host_sysfs_dir_open_at(&d, dev.fd, ".") < 0)
                return false;
        for (const char *sub; (sub = host_sysfs_dir_next(&d));)
                if (filename_is_valid(sub) && is_rdma_aux_name(sub))
                        return true;
        return false;
}

/* The first entry of class/<cls> named <prefix><digits> whose ibdev is ibdev, as a /dev path. */
static void char_device_in(int root_fd, const char *cls, const char *prefix, const char *ibdev,
                           char *out, size_t size)
{
        char rel[64];
        snprintf(rel, sizeof(rel), "class/%s", cls);
        _cleanup_close_ int fd = host_sysfs_open_dir_at(root_fd, rel);
        if (fd < 0)
                return;
        _cleanup_sysfs_dir_ struct sysfs_dir d;
        if (host_sysfs_dir_open_at(&d, fd, ".") < 0)
                return;
        const size_t n = strlen(prefix);
        for (const char *name; (name = host_sysfs_dir_next(&d));) {
                char path[300], owner[64];
                if (strncmp(name, prefix, n) != 0 || name[n] < '0' || name[n] > '9' ||
                    strspn(name + n, "0123456789") != strlen(name + n) || strlen(name) > 24 ||
                    snprintf(path, sizeof(path), "%s/ibdev", name) >= (int)sizeof(path) ||
                    host_sysfs_read_line_at(fd, path, owner, sizeof(owner)) < 0 ||
                    strcmp(owner, ibdev) != 0)
                        continue;
                snprintf(out, size, "/dev/infiniband/%s", name);
                return;
        }
}

int host_rdma_char_devices_of(const char *sysfs_root, const char *ibdev,
                              struct host_rdma_char_devices *ret)
{
        *ret = (struct host_rdma_char_devices){ 0 };
        if (!ibdev || !filename_is_valid(ibdev))
                return -EINVAL;
        _cleanup_close_ int root_fd = host_sysfs_open_dir_at(AT_FDCWD, sysfs_root ?: "/sys");
        if (root_fd < 0)
                return root_fd;
        char_device_in(root_fd, "infiniband_verbs", "uverbs", ibdev, ret->uverbs,
                       sizeof(ret->uverbs));
        char_device_in(root_fd, "infiniband_mad", "umad", ibdev, ret->umad, sizeof(ret->umad));
        char_device_in(root_fd, "infiniband_mad", "issm", ibdev, ret->issm, sizeof(ret->issm));
        return 0;
}
