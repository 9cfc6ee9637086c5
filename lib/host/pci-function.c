/* SPDX-License-Identifier: Apache-2.0 */
#include "host/pci-function.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host/device-error.h"
#include "host/netdev-sysfs.h"
#include "host/printable.h"
#include "host/sysfs-at.h"
#include "util/parse.h"

/* Appends "<attr>: <why>" where r is a read or parse failure. */
static int note(char **error, const char *attr, int r)
{
        const char *why = r == -EINVAL   ? "not a number"
                          : r == -ERANGE ? "out of range"
                                         : strerror(-r);
        return host_device_error_append(error, "%s: %s", attr, why);
}

static int read_hex_u16_noted(int fn_fd, const char *attr, uint16_t *v, char **error)
{
        int r = host_sysfs_read_hex_u16_at(fn_fd, attr, v);
        if (r < 0) {
                *v = 0;
                return note(error, attr, r);
        }
        return 0;
}

int host_pci_function_read_ids(int fn_fd, uint16_t *vendor, uint16_t *device, char **error)
{
        int r = read_hex_u16_noted(fn_fd, "vendor", vendor, error);
        if (r >= 0)
                r = read_hex_u16_noted(fn_fd, "device", device, error);
        return r;
}

int host_pci_function_read_driver(int fn_fd, char driver[DRIVER_MAX], char **error)
{
        char name[DRIVER_MAX];
        bool dangling = false;

        driver[0] = '\0';
        int r = host_sysfs_read_link_at(fn_fd, "driver", name, sizeof(name), &dangling);
        if (r == -ENOENT)
                return 0; /* unbound */
        if (r < 0)
                return note(error, "driver", r);
        if (dangling)
                return host_device_error_append(error, "driver: link to '%s' dangles", name);
        strcpy(driver, name);
        return 0;
}

int host_pci_function_read_numa(int fn_fd, int *numa_node, char **error)
{
        int r = host_sysfs_read_int_at(fn_fd, "numa_node", numa_node);
        if (r < 0) {
                *numa_node = -1;
                return note(error, "numa_node", r);
        }
        return 0;
}

static int fd_path(int fd, char *buf, size_t size)
{
        char link[64];
        snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
        ssize_t n = readlink(link, buf, size - 1);
        if (n < 0)
                return negative_errno();
        if ((size_t)n >= size - 1)
                return -ENAMETOOLONG;
        buf[n] = 0;
        return 0;
}

int host_pci_function_read_pcie_root(const struct discover_scan *scan, int fn_fd,
                                     char root[PCIE_ROOT_MAX])
{
        char fn[4096], sys[4096];
        root[0] = 0;
        int r = fd_path(fn_fd, fn, sizeof(fn));
        if (r >= 0)
                r = fd_path(scan->root_fd, sys, sizeof(sys));
        if (r < 0)
                return 0; /* unknown; nothing about the VF itself is wrong */
        size_t n = strlen(sys);
        if (n == 1) /* the real /sys is "/sys"; a root of "/" would be odd but fine */
                n = 0;
        const char *rest = fn + n;
        if (strncmp(fn, sys, n) != 0 || strncmp(rest, "/devices/", 9) != 0)
                return 0; /* a flat test tree, a VF not below /sys/devices: unknown */
        rest += 9;
        size_t len = strcspn(rest, "/");
        if (len == 0 || len >= PCIE_ROOT_MAX)
                return 0;
        memcpy(root, rest, len);
        root[len] = 0;
        return 0;
}

int host_pci_function_read_iommu_group(int fn_fd, int *group, char **error)
{
        char name[32];

        /* The number the link names is the group, dangling or not: no extra stat per VF. */
        *group = -1;
        int r = host_sysfs_read_link_at(fn_fd, "iommu_group", name, sizeof(name), NULL);
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return note(error, "iommu_group", r);
        if (parse_int(name, group) < 0 || *group < 0) {
                char shown[40];
                *group = -1;
                return host_device_error_append(error, "iommu_group: '%s' is not a group number",
                                                host_printable_name(name, shown, sizeof(shown)));
        }
        return 0;
}

int host_pci_function_read_net_rdma(const struct discover_scan *scan, int fn_fd,
                                    const char *pci_address, bool is_vf,
                                    struct netdev_info **netdevs, size_t *n_netdevs,
                                    struct rdma_device **rdma, size_t *n_rdma, char **error)
{
        int r = host_netdev_sysfs_read_function(fn_fd, !is_vf, netdevs, n_netdevs, error);
        if (r < 0)
                return r;
        return host_rdma_sysfs_read_function(&scan->rdma, fn_fd, pci_address, *netdevs, *n_netdevs,
                                             rdma, n_rdma, error);
}
