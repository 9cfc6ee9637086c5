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

static int compare_function_entries(const void *a, const void *b)
{
        const struct rdma_function_entry *x = a, *y = b;
        int c = strcmp(x->pci_address, y->pci_address);
        return c ? c : strcmp(x->name, y->name);
}

/* The entries of entries (sorted by compare_function_entries) that name pci_address: the
 * first of them, and their number in *ret_n (0 and NULL: none). */
static const struct rdma_function_entry *function_entries(const struct rdma_function_entry *entries,
                                                          size_t n, const char *pci_address,
                                                          size_t *ret_n)
{
        struct rdma_function_entry key = { 0 };
        size_t lo = 0, hi = n;

        strcpy(key.pci_address, pci_address); /* the caller's, bounded by PCI_ADDR_MAX */
        while (lo < hi) {                     /* the first entry not before (pci_address, "") */
                size_t mid = lo + (hi - lo) / 2;
                if (compare_function_entries(&entries[mid], &key) < 0)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        size_t end = lo;
        while (end < n && strcmp(entries[end].pci_address, pci_address) == 0)
                end++;
        *ret_n = end - lo;
        return *ret_n ? entries + lo : NULL; /* entries is NULL when the walk found none */
}

/* The function's own entries of the class walk, all its one RDMA device's. */
static int add_function_char_devices(const struct rdma_scan *scan, const char *pci_address,
                                     struct rdma_device *dev)
{
        size_t n;
        const struct rdma_function_entry *own = function_entries(
            scan->function_char_devices, scan->n_function_char_devices, pci_address, &n);
        for (size_t i = 0; i < n; i++) {
                char path[RDMA_NAME_MAX + 32];
                snprintf(path, sizeof(path), DEV_INFINIBAND "%s", own[i].name);
                int r = add_char_device(dev, path);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* One RDMA device under the PCI function directory, infiniband/<name>. */
static int read_pci_device(int fn_fd, const char *name, struct rdma_device **list, size_t *n,
                           char **error)
{
        char rel[RDMA_NAME_MAX + 16], shown[64];
        struct rdma_device *dev;

        if (!rdma_name_is_valid(name))
                return host_device_error_append(error, "infiniband/'%s': not a valid device name",
                                                host_printable_name(name, shown, sizeof(shown)));
        int r = append_device(list, n, name, &dev);
        if (r < 0 || !dev || path_printf(rel, sizeof(rel), "infiniband/%s", name) < 0)
                return r;
        return read_device_attributes(fn_fd, rel, dev, error);
}

/* RDMA devices under the PCI function directory (ConnectX style): the class walk's when it
 * was whole (no listing of the function's infiniband/, the same names: the kernel makes each
 * class link with its device), else the directory's. */
static int read_pci_devices(const struct rdma_scan *scan, int fn_fd, const char *pci_address,
                            struct rdma_device **list, size_t *n, char **error)
{
        int r = 0;
        if (scan->function_devices_valid && pci_address && strlen(pci_address) < PCI_ADDR_MAX) {
                size_t n_own;
                const struct rdma_function_entry *own = function_entries(
                    scan->function_devices, scan->n_function_devices, pci_address, &n_own);
                for (size_t i = 0; r >= 0 && i < n_own; i++)
                        r = read_pci_device(fn_fd, own[i].name, list, n, error);
        } else {
                _cleanup_sysfs_dir_ struct sysfs_dir d;
                if (host_sysfs_dir_open_at(&d, fn_fd, "infiniband") < 0)
                        return 0;
                for (const char *name; r >= 0 && (name = host_sysfs_dir_next(&d));)
                        if (name[0] != '.')
                                r = read_pci_device(fn_fd, name, list, n, error);
        }
        if (r < 0 || *n == 0)
                return r;
        if (*n == 1 && scan->function_char_devices_valid && pci_address &&
            strlen(pci_address) < PCI_ADDR_MAX)
                return add_function_char_devices(scan, pci_address, &(*list)[0]);
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
                                  const char *pci_address, const struct netdev_info *netdevs,
                                  size_t n_netdevs, struct rdma_device **ret, size_t *ret_n,
                                  char **error)
{
        struct rdma_device *list = NULL;
        size_t n = 0;

        int r = read_pci_devices(scan, fn_dir_fd, pci_address, &list, &n, error);
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

/* The PCI function in a class link's target: "../../devices/pci0000:3a/.../0000:3b:00.0/
 * <dir>/<name>" (dir "infiniband", "infiniband_verbs" or "infiniband_mad") names 0000:3b:00.0.
 * False for any other target (rxe, siw under devices/virtual). */
static bool link_pci_function(char *target, const char *dir, const char *name,
                              char addr[static PCI_ADDR_MAX])
{
        size_t len = strlen(target), n = strlen(name), d = strlen(dir);
        if (len < n + d + 2 || strcmp(target + len - n, name) != 0 || target[len - n - 1] != '/' ||
            memcmp(target + len - n - 1 - d, dir, d) != 0 || target[len - n - d - 2] != '/')
                return false;
        target[len - n - d - 2] = '\0';
        const char *slash = strrchr(target, '/');
        const char *fn = slash ? slash + 1 : target;
        if (!pci_address_is_valid(fn))
                return false;
        strcpy(addr, fn); /* pci_address_is_valid() bounded it */
        return true;
}

static int add_function_entry(struct rdma_function_entry **entries, size_t *n, size_t *cap,
                              const char *addr, const char *name)
{
        if (GROW_ARRAY(*entries, *cap, *n + 1) < 0)
                return -ENOMEM;
        struct rdma_function_entry *p = &(*entries)[(*n)++];
        strcpy(p->pci_address, addr);
        strcpy(p->name, name); /* the callers' rdma_name_is_valid() bounded it */
        return 0;
}

static int read_ties(struct rdma_scan *scan)
{
        _cleanup_sysfs_dir_ struct sysfs_dir d;
        if (host_sysfs_dir_open_at(&d, scan->root_fd, "class/infiniband") < 0)
                return 0;

        int r = 0;
        bool whole = true; /* every entry told a function's device from a virtual one */
        const char *name;
        while (r >= 0 && (name = host_sysfs_dir_next(&d))) {
                char rel[NAME_MAX + 32], parent[IFNAME_MAX + 1], shown[64], target[PATH_MAX],
                    addr[PCI_ADDR_MAX];

                if (name[0] == '.')
                        continue;
                snprintf(rel, sizeof(rel), "class/infiniband/%s", name);
                ssize_t len = readlinkat(scan->root_fd, rel, target, sizeof(target) - 1);
                if (len <= 0)
                        whole = false;
                else {
                        target[len] = '\0';
                        if (link_pci_function(target, "infiniband", name, addr)) {
                                /* A name too long to keep: the function is still one with
                                 * RDMA, its devices are left to its listing, which reports it. */
                                bool keep = rdma_name_is_valid(name);
                                whole = whole && keep;
                                r = add_function_entry(
                                    &scan->function_devices, &scan->n_function_devices,
                                    &scan->cap_function_devices, addr, keep ? name : "");
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
        if (r < 0)
                return r;
        scan->function_devices_valid = whole && d.error >= 0;
        if (scan->n_function_devices > 1)
                qsort(scan->function_devices, scan->n_function_devices,
                      sizeof(*scan->function_devices), compare_function_entries);
        return 0;
}

/* A virtual device's entry (under devices/virtual/): its ibdev, kept when a tie names it. */
static int add_class_char_device(struct rdma_scan *scan, const char *rel_entry, const char *name)
{
        char rel[512], ibdev[RDMA_NAME_MAX + 1], path[sizeof(scan->class_char_devices->path)];

        if (path_printf(rel, sizeof(rel), "%s/ibdev", rel_entry) < 0 ||
            host_sysfs_read_line_at(scan->root_fd, rel, ibdev, sizeof(ibdev)) < 0 ||
            !rdma_name_is_valid(ibdev) ||
            path_printf(path, sizeof(path), DEV_INFINIBAND "%s", name) < 0)
                return 0;
        bool tied = false;
        for (size_t t = 0; t < scan->n_ties && !tied; t++)
                tied = strcmp(scan->ties[t].rdma_name, ibdev) == 0;
        if (!tied)
                return 0;
        if (GROW_ARRAY(scan->class_char_devices, scan->cap_class_char_devices,
                       scan->n_class_char_devices + 1) < 0)
                return -ENOMEM;
        struct rdma_char_device *p = &scan->class_char_devices[scan->n_class_char_devices++];
        strcpy(p->ibdev, ibdev);
        strcpy(p->path, path);
        return 0;
}

/* Every entry of class/<class_name>: one readlinkat tells a PCI function's entry from a virtual
 * device's. Returns 1 when the class was walked or is absent, 0 when it could not be read. */
static int read_class_char_devices(struct rdma_scan *scan, const char *class_name)
{
        char class_dir[48];
        snprintf(class_dir, sizeof(class_dir), "class/%s", class_name);
        _cleanup_sysfs_dir_ struct sysfs_dir d;
        int r = host_sysfs_dir_open_at(&d, scan->root_fd, class_dir);
        if (r < 0)
                return r == -ENOENT ? 1 : 0;

        r = 0;
        const char *name;
        while (r >= 0 && (name = host_sysfs_dir_next(&d))) {
                char rel[512], target[PATH_MAX], addr[PCI_ADDR_MAX];

                if (name[0] == '.' || !rdma_name_is_valid(name) ||
                    path_printf(rel, sizeof(rel), "%s/%s", class_dir, name) < 0)
                        continue;
                ssize_t len = readlinkat(scan->root_fd, rel, target, sizeof(target) - 1);
                if (len <= 0)
                        continue; /* abi_version, a file */
                target[len] = '\0';
                if (link_pci_function(target, class_name, name, addr))
                        r = add_function_entry(&scan->function_char_devices,
                                               &scan->n_function_char_devices,
                                               &scan->cap_function_char_devices, addr, name);
                else if (scan->n_ties > 0)
                        r = add_class_char_device(scan, rel, name);
        }
        if (r < 0)
                return r;
        return d.error >= 0;
}

int host_rdma_scan_init(struct rdma_scan *scan, int root_fd)
{
        *scan = (struct rdma_scan){ .root_fd = root_fd };
        scan->has_rdma_cm = host_sysfs_exists_at(root_fd, "class/misc/rdma_cm");

        int r = read_ties(scan), verbs = 0, mad = 0;
        /* No RDMA device at all: nothing to attribute, nothing to walk. */
        if (r >= 0 && (scan->n_function_devices > 0 || scan->n_ties > 0))
                r = verbs = read_class_char_devices(scan, "infiniband_verbs");
        if (r >= 0 && (scan->n_function_devices > 0 || scan->n_ties > 0))
                r = mad = read_class_char_devices(scan, "infiniband_mad");
        if (r < 0) {
                host_rdma_scan_done(scan);
                return r;
        }
        scan->function_char_devices_valid = verbs > 0 && mad > 0;
        if (scan->n_function_char_devices > 1)
                qsort(scan->function_char_devices, scan->n_function_char_devices,
                      sizeof(*scan->function_char_devices), compare_function_entries);
        return 0;
}

void host_rdma_scan_done(struct rdma_scan *scan)
{
        free(scan->function_devices);
        free(scan->ties);
        free(scan->class_char_devices);
        free(scan->function_char_devices);
        *scan = (struct rdma_scan){ .root_fd = -1 };
}
