/* SPDX-License-Identifier: Apache-2.0 */
#include "host/rdma-sysfs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host/device-error.h"
#include "host/printable.h"
#include "host/sysfs-at.h"
#include "util/array.h"
#include "util/log.h"
#include "util/macro.h"
#include "util/names.h"
#include "util/parse.h"

#define DEV_INFINIBAND "/dev/infiniband/"

static bool rdma_name_is_valid(const char *name)
{
        return filename_is_valid(name) && strlen(name) < RDMA_NAME_MAX;
}

static int add_char_device(struct rdma_device *dev, const char *path)
{
        for (size_t i = 0; i < dev->n_char_devices; i++)
                if (strcmp(dev->char_devices[i], path) == 0)
                        return 0;
        /* Exact size (at most uverbs, umad, issm, rdma_cm), kept per function: no doubling. */
        char **p = realloc(dev->char_devices, (dev->n_char_devices + 1) * sizeof(char *));
        if (!p)
                return -ENOMEM;
        dev->char_devices = p;
        p[dev->n_char_devices] = strdup(path);
        if (!p[dev->n_char_devices])
                return -ENOMEM;
        dev->n_char_devices++;
        return 0;
}

static int compare_strings(const void *a, const void *b)
{
        return strcmp(*(char *const *)a, *(char *const *)b);
}

/* node_guid and port 1 of the device directory base_fd/dir, read by relative path: no
 * directory handle per RDMA device. */
static int read_device_attributes(int base_fd, const char *dir, struct rdma_device *dev,
                                  char **error)
{
        char rel[RDMA_NAME_MAX + 48], buf[64];
        int r;

        r = path_printf(rel, sizeof(rel), "%s/node_guid", dir);
        if (r >= 0)
                r = host_sysfs_read_line_at(base_fd, rel, buf, sizeof(buf));
        if (r >= 0 && strlen(buf) < sizeof(dev->node_guid))
                strcpy(dev->node_guid, buf);
        else if (host_device_error_append(error, "%s/node_guid: %s", dir,
                                          strerror(r < 0 ? -r : ENOBUFS)) < 0)
                return -ENOMEM;
        /* Port attributes are optional: a device without ports/ is still an RDMA device. */
        if (path_printf(rel, sizeof(rel), "%s/ports/1/state", dir) >= 0 &&
            host_sysfs_read_line_at(base_fd, rel, buf, sizeof(buf)) >= 0 &&
            strlen(buf) < sizeof(dev->port_state))
                strcpy(dev->port_state, buf);
        if (path_printf(rel, sizeof(rel), "%s/ports/1/link_layer", dir) >= 0 &&
            host_sysfs_read_line_at(base_fd, rel, buf, sizeof(buf)) >= 0 &&
            strlen(buf) < sizeof(dev->link_layer))
                strcpy(dev->link_layer, buf);
        return 0;
}

static int append_device(struct rdma_device **list, size_t *n, const char *name,
                         struct rdma_device **ret)
{
        for (size_t i = 0; i < *n; i++)
                if (strcmp((*list)[i].name, name) == 0) {
                        *ret = NULL; /* already known, e.g. under the PCI dir and tied */
                        return 0;
                }
        /* Exact size: one RDMA device per function, kept per VF for the inventory's life. */
        struct rdma_device *p = realloc(*list, (*n + 1) * sizeof(**list));
        if (!p)
                return -ENOMEM;
        *list = p;
        p[*n] = (struct rdma_device){ 0 };
        strcpy(p[*n].name, name);
        *ret = &p[(*n)++];
        return 0;
}

static struct rdma_device *find_device(struct rdma_device *list, size_t n, const char *name)
{
        for (size_t i = 0; i < n; i++)
                if (strcmp(list[i].name, name) == 0)
                        return &list[i];
        return NULL;
}

/* Char devices under the function: <class_dir>/<entry>/ibdev names the RDMA device. */
static int read_local_char_devices(int fn_fd, const char *class_dir, struct rdma_device *list,
                                   size_t n, char **error)
{
        _cleanup_sysfs_dir_ struct sysfs_dir d;
        if (host_sysfs_dir_open_at(&d, fn_fd, class_dir) < 0)
                return 0;

        int r = 0;
        const char *name;
        while (r >= 0 && (name = host_sysfs_dir_next(&d))) {
                char rel[512], ibdev[RDMA_NAME_MAX + 1], shown[64], path[RDMA_NAME_MAX + 32];

                if (name[0] == '.')
                        continue;
                if (!rdma_name_is_valid(name)) {
                        r = host_device_error_append(
                            error, "%s/'%s': not a valid device name", class_dir,
                            host_printable_name(name, shown, sizeof(shown)));
                        continue;
                }
                if (path_printf(rel, sizeof(rel), "%s/%s/ibdev", class_dir, name) < 0)
                        continue;
                int k = host_sysfs_read_line_at(fn_fd, rel, ibdev, sizeof(ibdev));
                if (k < 0) {
                        r = host_device_error_append(error, "%s: %s", rel, strerror(-k));
                        continue;
                }
                if (!rdma_name_is_valid(ibdev)) {
                        r = host_device_error_append(
                            error, "%s: '%s' is not a valid RDMA device name", rel,
                            host_printable_name(ibdev, shown, sizeof(shown)));
                        continue;
                }
                struct rdma_device *dev = find_device(list, n, ibdev);
                if (!dev)
                        continue;
                if (path_printf(path, sizeof(path), DEV_INFINIBAND "%s", name) >= 0)
                        r = add_char_device(dev, path);
        }
        return r;
}

/* RDMA devices under the PCI function directory (ConnectX style). */
static int read_pci_devices(int fn_fd, struct rdma_device **list, size_t *n, char **error)
{
        _cleanup_sysfs_dir_ struct sysfs_dir d;
        if (host_sysfs_dir_open_at(&d, fn_fd, "infiniband") < 0)
                return 0;

        int r = 0;
        const char *name;
        while (r >= 0 && (name = host_sysfs_dir_next(&d))) {
                char rel[RDMA_NAME_MAX + 16], shown[64];
                struct rdma_device *dev;

                if (name[0] == '.')
                        continue;
                if (!rdma_name_is_valid(name)) {
                        r = host_device_error_append(
                            error, "infiniband/'%s': not a valid device name",
                            host_printable_name(name, shown, sizeof(shown)));
                        continue;
                }
                r = append_device(list, n, name, &dev);
                if (r < 0 || !dev)
                        continue;
                if (path_printf(rel, sizeof(rel), "infiniband/%s", name) < 0)
                        continue;
                r = read_device_attributes(fn_fd, rel, dev, error);
        }
        if (r < 0 || *n == 0)
                return r;
        r = read_local_char_devices(fn_fd, "infiniband_verbs", *list, *n, error);
        if (r >= 0)
                r = read_local_char_devices(fn_fd, "infiniband_mad", *list, *n, error);
        return r;
}

/* Virtual RDMA devices (rxe) whose `parent` is one of the function's netdevs. */
static int read_tied_devices(const struct rdma_scan *scan, const struct netdev_info *netdevs,
                             size_t n_netdevs, struct rdma_device **list, size_t *n, char **error)
{
        for (size_t t = 0; t < scan->n_ties; t++) {
                const struct rdma_tie *tie = &scan->ties[t];
                bool ours = false;
                for (size_t i = 0; i < n_netdevs && !ours; i++)
                        ours = strcmp(netdevs[i].name, tie->netdev) == 0;
                if (!ours)
                        continue;

                struct rdma_device *dev;
                int r = append_device(list, n, tie->rdma_name, &dev);
                if (r < 0)
                        return r;
                if (!dev)
                        continue;
                char rel[RDMA_NAME_MAX + 32];
                (void)path_printf(rel, sizeof(rel), "class/infiniband/%s", tie->rdma_name);
                r = read_device_attributes(scan->root_fd, rel, dev, error);
                if (r < 0)
                        return r;
                for (size_t c = 0; c < scan->n_class_char_devices; c++)
                        if (strcmp(scan->class_char_devices[c].ibdev, dev->name) == 0) {
                                r = add_char_device(dev, scan->class_char_devices[c].path);
                                if (r < 0)
                                        return r;
                        }
        }
        return 0;
}

int host_rdma_sysfs_read_function(const struct rdma_scan *scan, int fn_dir_fd,
                                  const struct netdev_info *netdevs, size_t n_netdevs,
                                  struct rdma_device **ret, size_t *ret_n, char **error)
{
        struct rdma_device *list = NULL;
        size_t n = 0;

        int r = read_pci_devices(fn_dir_fd, &list, &n, error);
        if (r >= 0)
                r = read_tied_devices(scan, netdevs, n_netdevs, &list, &n, error);
        for (size_t i = 0; r >= 0 && i < n; i++) {
                if (scan->has_rdma_cm)
                        r = add_char_device(&list[i], DEV_INFINIBAND "rdma_cm");
                if (list[i].n_char_devices > 1)
                        qsort(list[i].char_devices, list[i].n_char_devices, sizeof(char *),
                              compare_strings);
        }
        if (r < 0) {
                for (size_t i = 0; i < n; i++)
                        rdma_device_done(&list[i]);
                free(list);
                return r;
        }
        *ret = list;
        *ret_n = n;
        return 0;
}

/* The PCI function in a class/infiniband link's target: "../../devices/pci0000:3a/.../
 * 0000:3b:00.0/infiniband/mlx5_0" names 0000:3b:00.0. False for any other target (rxe, siw
 * under devices/virtual). */
static bool rdma_link_pci_function(char *target, const char *name, char addr[static 16])
{
        size_t len = strlen(target), n = strlen(name);
        static const char dir[] = "/infiniband/";
        if (len < n + sizeof(dir) - 1 || strcmp(target + len - n, name) != 0 ||
            memcmp(target + len - n - (sizeof(dir) - 1), dir, sizeof(dir) - 1) != 0)
                return false;
        target[len - n - (sizeof(dir) - 1)] = '\0';
        const char *slash = strrchr(target, '/');
        const char *fn = slash ? slash + 1 : target;
        if (!pci_address_is_valid(fn))
                return false;
        strcpy(addr, fn); /* pci_address_is_valid() bounded it */
        return true;
}

static int add_rdma_function(struct rdma_scan *scan, const char *addr)
{
        if (scan->n_rdma_functions == scan->rdma_functions_size) {
                size_t size = scan->rdma_functions_size ? 2 * scan->rdma_functions_size : 16;
                void *p = realloc(scan->rdma_functions, size * sizeof(*scan->rdma_functions));
                if (!p)
                        return -ENOMEM;
                scan->rdma_functions = p;
                scan->rdma_functions_size = size;
        }
        strcpy(scan->rdma_functions[scan->n_rdma_functions++], addr);
        return 0;
}

static int read_ties(struct rdma_scan *scan)
{
        _cleanup_sysfs_dir_ struct sysfs_dir d;
        if (host_sysfs_dir_open_at(&d, scan->root_fd, "class/infiniband") < 0)
                return 0;

        int r = 0;
        const char *name;
        while (r >= 0 && (name = host_sysfs_dir_next(&d))) {
                char rel[NAME_MAX + 32], parent[IFNAME_MAX + 1], shown[64], target[PATH_MAX],
                    addr[16];

                if (name[0] == '.')
                        continue;
                snprintf(rel, sizeof(rel), "class/infiniband/%s", name);
                ssize_t len = readlinkat(scan->root_fd, rel, target, sizeof(target) - 1);
                if (len > 0) {
                        target[len] = '\0';
                        if (rdma_link_pci_function(target, name, addr)) {
                                r = add_rdma_function(scan, addr);
                                continue; /* a card's device: no `parent` */
                        }
                }
                /* Only virtual devices have `parent`. */
                if (!rdma_name_is_valid(name) ||
                    path_printf(rel, sizeof(rel), "class/infiniband/%s/parent", name) < 0 ||
                    host_sysfs_read_line_at(scan->root_fd, rel, parent, sizeof(parent)) < 0)
                        continue;
                if (!ifname_is_valid(parent)) {
                        log_warning("sysfs %s: '%s' is not a valid interface name, ignoring %s",
                                    rel, host_printable_name(parent, shown, sizeof(shown)), name);
                        continue;
                }
                if (GROW_ARRAY(scan->ties, scan->cap_ties, scan->n_ties + 1) < 0) {
                        r = -ENOMEM;
                        break;
                }
                struct rdma_tie *p = scan->ties;
                strcpy(p[scan->n_ties].rdma_name, name);
                strcpy(p[scan->n_ties].netdev, parent);
                scan->n_ties++;
        }
        return r;
}

/* class/<class_dir>/<entry>/ibdev for every entry: the char devices of virtual RDMA devices,
 * which the kernel places under devices/virtual/ rather than under a PCI function. */
static int read_class_char_devices(struct rdma_scan *scan, const char *class_dir)
{
        _cleanup_sysfs_dir_ struct sysfs_dir d;
        if (host_sysfs_dir_open_at(&d, scan->root_fd, class_dir) < 0)
                return 0;

        int r = 0;
        const char *name;
        while (r >= 0 && (name = host_sysfs_dir_next(&d))) {
                char rel[512], ibdev[RDMA_NAME_MAX + 1];

                if (name[0] == '.' || !rdma_name_is_valid(name))
                        continue;
                if (path_printf(rel, sizeof(rel), "%s/%s/ibdev", class_dir, name) < 0 ||
                    host_sysfs_read_line_at(scan->root_fd, rel, ibdev, sizeof(ibdev)) < 0 ||
                    !rdma_name_is_valid(ibdev))
                        continue;
                char path[sizeof(scan->class_char_devices->path)];
                if (path_printf(path, sizeof(path), DEV_INFINIBAND "%s", name) < 0)
                        continue;
                bool tied = false;
                for (size_t t = 0; t < scan->n_ties && !tied; t++)
                        tied = strcmp(scan->ties[t].rdma_name, ibdev) == 0;
                if (!tied)
                        continue;
                if (GROW_ARRAY(scan->class_char_devices, scan->cap_class_char_devices,
                               scan->n_class_char_devices + 1) < 0) {
                        r = -ENOMEM;
                        break;
                }
                struct rdma_char_device *p =
                    &scan->class_char_devices[scan->n_class_char_devices++];
                strcpy(p->ibdev, ibdev);
                strcpy(p->path, path);
        }
        return r;
}

int host_rdma_scan_init(struct rdma_scan *scan, int root_fd)
{
        *scan = (struct rdma_scan){ .root_fd = root_fd };
        scan->has_rdma_cm = host_sysfs_exists_at(root_fd, "class/misc/rdma_cm");

        int r = read_ties(scan);
        if (r >= 0 && scan->n_ties > 0)
                r = read_class_char_devices(scan, "class/infiniband_verbs");
        if (r >= 0 && scan->n_ties > 0)
                r = read_class_char_devices(scan, "class/infiniband_mad");
        if (r < 0)
                host_rdma_scan_done(scan);
        return r;
}

void host_rdma_scan_done(struct rdma_scan *scan)
{
        free(scan->rdma_functions);
        free(scan->ties);
        free(scan->class_char_devices);
        *scan = (struct rdma_scan){ .root_fd = -1 };
}
