/* SPDX-License-Identifier: Apache-2.0 */
#include "host/quick-check.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host/sysfs-at.h"
#include "util/array.h"
#include "util/fileio.h"
#include "util/macro.h"
#include "util/names.h"
#include "util/parse.h"

#define IFF_UP_FLAG 0x1

/* prefix + "net/" + name + "/" + attribute into buf, without printf's cost (this runs for every
 * VF on every periodic check). */
static int netdev_attr_path(char *buf, size_t size, const char *prefix, const char *name,
                            const char *attribute)
{
        const char *parts[] = { prefix, "net/", name, "/", attribute };
        size_t len = 0;
        for (size_t i = 0; i < ELEMENTSOF(parts); i++) {
                size_t l = strlen(parts[i]);
                if (len + l >= size)
                        return -ENAMETOOLONG;
                memcpy(buf + len, parts[i], l);
                len += l;
        }
        buf[len] = '\0';
        return 0;
}

/* fn_fd/<prefix>net/: the same names as nd[], each with the same MTU, and with the same admin
 * state when with_admin_state (a PF's: the plan brings a PF up; a VF's decides nothing, so its
 * `flags` is not read: a third of the periodic check's system calls). A function that had
 * netdevs is not listed: reading each one's attributes already fails when it went or was
 * renamed (a VF has one netdev; a second one appearing beside it is left to the full check).
 * One that had none is listed, to see one appear. */
static int netdevs_unchanged(int fn_fd, const char *prefix, const struct netdev_info *nd, size_t n,
                             bool with_admin_state)
{
        char rel[128], buf[64];

        if (n == 0) {
                bool empty = true;
                snprintf(rel, sizeof(rel), "%snet", prefix);
                _cleanup_sysfs_dir_ struct sysfs_dir d;
                int r = host_sysfs_dir_open_at(&d, fn_fd, rel);
                if (r == -ENOENT)
                        return 1;
                if (r < 0)
                        return r;
                for (const char *name; empty && (name = host_sysfs_dir_next(&d));)
                        empty = name[0] == '.';
                return empty && d.error >= 0;
        }
        for (size_t i = 0; i < n; i++) {
                int mtu;
                uint32_t flags;
                if (netdev_attr_path(rel, sizeof(rel), prefix, nd[i].name, "mtu") < 0 ||
                    host_sysfs_read_line_at(fn_fd, rel, buf, sizeof(buf)) < 0 ||
                    parse_int(buf, &mtu) < 0 || mtu != nd[i].mtu)
                        return 0;
                if (!with_admin_state)
                        continue;
                if (netdev_attr_path(rel, sizeof(rel), prefix, nd[i].name, "flags") < 0 ||
                    host_sysfs_read_line_at(fn_fd, rel, buf, sizeof(buf)) < 0 ||
                    parse_hex_u32(buf, &flags) < 0 || !!(flags & IFF_UP_FLAG) != nd[i].admin_up)
                        return 0;
        }
        return 1;
}

/* fn_fd/<prefix>driver names `driver` ("" = unbound). */
static bool driver_unchanged(int fn_fd, const char *prefix, const char *driver)
{
        char rel[64], name[DRIVER_MAX];

        snprintf(rel, sizeof(rel), "%sdriver", prefix);
        int r = read_link_basename_at(fn_fd, rel, name, sizeof(name));
        if (r == -ENOENT)
                return driver[0] == '\0';
        return r >= 0 && strcmp(name, driver) == 0;
}

/* The devices bound to one driver: bus/pci/drivers/<driver>/ holds a link per bound device,
 * named by its address, which the kernel makes and removes with the device's own `driver` link.
 * One listing per driver instead of a readlinkat per VF: a quarter of the check's calls. */
struct bound_devices {
        char driver[DRIVER_MAX];
        char (*addresses)[PCI_ADDR_MAX]; /* sorted */
        size_t n, cap;
        int error; /* the listing failed: each VF's link is read instead */
};

struct bound_listings {
        int drivers_fd; /* bus/pci/drivers, -1 when it cannot be opened */
        struct bound_devices drivers[4];
        size_t n;
};

static void bound_listings_done(struct bound_listings *b)
{
        for (size_t i = 0; i < b->n; i++)
                free(b->drivers[i].addresses);
        if (b->drivers_fd >= 0)
                close(b->drivers_fd);
}

static int compare_addresses(const void *a, const void *b)
{
        return strcmp(a, b);
}

static int list_bound_devices(int drivers_fd, struct bound_devices *s)
{
        _cleanup_sysfs_dir_ struct sysfs_dir d;
        int r = host_sysfs_dir_open_at(&d, drivers_fd, s->driver);
        if (r < 0)
                return r;
        for (const char *name; (name = host_sysfs_dir_next(&d));) {
                if (!pci_address_is_valid(name))
                        continue; /* bind, unbind, new_id, module... */
                if (GROW_ARRAY(s->addresses, s->cap, s->n + 1) < 0)
                        return -ENOMEM;
                strcpy(s->addresses[s->n++], name); /* pci_address_is_valid() bounded it */
        }
        if (d.error < 0)
                return d.error;
        if (s->n > 1)
                qsort(s->addresses, s->n, sizeof(*s->addresses), compare_addresses);
        return 0;
}

/* The listing of `driver`, read on first use; NULL when there is none to use. */
static const struct bound_devices *bound_devices_of(struct bound_listings *b, const char *driver)
{
        for (size_t i = 0; i < b->n; i++)
                if (strcmp(b->drivers[i].driver, driver) == 0)
                        return b->drivers[i].error < 0 ? NULL : &b->drivers[i];
        if (b->drivers_fd < 0 || b->n == ELEMENTSOF(b->drivers) || !filename_is_valid(driver))
                return NULL;
        struct bound_devices *s = &b->drivers[b->n++];
        *s = (struct bound_devices){ 0 };
        strcpy(s->driver, driver); /* both DRIVER_MAX */
        s->error = list_bound_devices(b->drivers_fd, s);
        return s->error < 0 ? NULL : s;
}

/* A VF bound before is bound to the same driver when that driver's listing names it; an unbound
 * one (or one whose driver cannot be listed) has its own link read. */
static bool vf_driver_unchanged(struct bound_listings *b, int pf_fd, const char *prefix,
                                const struct vf_info *vf)
{
        const struct bound_devices *s = vf->driver[0] ? bound_devices_of(b, vf->driver) : NULL;
        if (!s)
                return driver_unchanged(pf_fd, prefix, vf->driver);
        return bsearch(vf->pci_address, s->addresses, s->n, sizeof(*s->addresses),
                       compare_addresses) != NULL;
}

/* Whether the PF's virtfn links name siblings ("../<address>", as the kernel makes them: a VF
 * on a bus of its own still sits under the PF's bridge), checked on the first and the last VF,
 * the one most likely on another bus. Then every VF is reached from the PF's parent directory
 * by its address: no path walk through a virtfn link (~6 % less CPU per check, medians of 14
 * checks on a generated 4 x 128 tree). */
static bool vfs_are_siblings(int pf_fd, const struct pf_info *pf)
{
        const struct vf_info *ends[] = { &pf->vfs[0], &pf->vfs[pf->n_vfs - 1] };
        for (size_t i = 0; i < ELEMENTSOF(ends); i++) {
                char link[32], target[PCI_ADDR_MAX + 8];
                snprintf(link, sizeof(link), "virtfn%d", ends[i]->vf_index);
                ssize_t len = readlinkat(pf_fd, link, target, sizeof(target) - 1);
                if (len < 3 || memcmp(target, "../", 3) != 0)
                        return false;
                target[len] = '\0';
                if (strcmp(target + 3, ends[i]->pci_address) != 0)
                        return false;
        }
        return true;
}

static int pf_unchanged(int devices_fd, struct bound_listings *bound, const struct pf_info *pf)
{
        char buf[32];
        int num_vfs;

        if (pf->error || pf->num_vfs < 0 || (size_t)pf->num_vfs != pf->n_vfs)
                return 0; /* what was wrong may have been fixed: let discovery look */
        _cleanup_close_ int fd = host_sysfs_open_dir_at(devices_fd, pf->pci_address);
        if (fd < 0)
                return 0;
        if (host_sysfs_read_line_at(fd, "sriov_numvfs", buf, sizeof(buf)) < 0 ||
            parse_int(buf, &num_vfs) < 0 || num_vfs != pf->num_vfs)
                return 0;
        if (!driver_unchanged(fd, "", pf->driver))
                return 0;
        int r = netdevs_unchanged(fd, "", pf->netdevs, pf->n_netdevs, true);
        /* A PF's operstate decides its VFs' health (no netlink event on a generated tree). */
        for (size_t i = 0; r > 0 && i < pf->n_netdevs; i++) {
                char rel[64];
                if (path_printf(rel, sizeof(rel), "net/%s/operstate", pf->netdevs[i].name) < 0 ||
                    host_sysfs_read_line_at(fd, rel, buf, sizeof(buf)) < 0 ||
                    strcmp(buf, pf->netdevs[i].operstate) != 0)
                        r = 0;
        }
        if (r <= 0 || pf->n_vfs == 0)
                return r;
        /* negative when not siblings or not opened: the virtfn links are followed */
        _cleanup_close_ int siblings_fd =
            vfs_are_siblings(fd, pf) ? host_sysfs_open_dir_at(fd, "..") : -1;
        for (size_t i = 0; r > 0 && i < pf->n_vfs; i++) {
                const struct vf_info *vf = &pf->vfs[i];
                char prefix[PCI_ADDR_MAX + 16];
                if (vf->error || !pci_address_is_valid(vf->pci_address))
                        return 0;
                if (siblings_fd >= 0)
                        snprintf(prefix, sizeof(prefix), "%s/", vf->pci_address);
                else
                        snprintf(prefix, sizeof(prefix), "virtfn%d/", vf->vf_index);
                int base_fd = siblings_fd >= 0 ? siblings_fd : fd;
                if (!vf_driver_unchanged(bound, base_fd, prefix, vf))
                        return 0;
                r = netdevs_unchanged(base_fd, prefix, vf->netdevs, vf->n_netdevs, false);
        }
        return r;
}

static int compare_names(const void *a, const void *b)
{
        return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static bool is_our_netdev(const struct inventory *inv, const char *name)
{
        for (size_t p = 0; p < inv->n_pfs; p++) {
                const struct pf_info *pf = &inv->pfs[p];
                for (size_t i = 0; i < pf->n_netdevs; i++)
                        if (strcmp(pf->netdevs[i].name, name) == 0)
                                return true;
                for (size_t v = 0; v < pf->n_vfs; v++)
                        for (size_t i = 0; i < pf->vfs[v].n_netdevs; i++)
                                if (strcmp(pf->vfs[v].netdevs[i].name, name) == 0)
                                        return true;
        }
        return false;
}

static bool is_our_function(const struct inventory *inv, const char *link_target)
{
        char needle[PCI_ADDR_MAX + 16];
        for (size_t p = 0; p < inv->n_pfs; p++) {
                const struct pf_info *pf = &inv->pfs[p];
                snprintf(needle, sizeof(needle), "/%s/", pf->pci_address);
                if (strstr(link_target, needle))
                        return true;
                for (size_t v = 0; v < pf->n_vfs; v++) {
                        snprintf(needle, sizeof(needle), "/%s/", pf->vfs[v].pci_address);
                        if (strstr(link_target, needle))
                                return true;
                }
        }
        return false;
}

/* RDMA devices: class/infiniband holds every one, PCI-backed or virtual (rxe). Those the last
 * discovery attributed must all still be there; any other must belong to none of our
 * functions or netdevs (an rxe device added on a VF's netdev makes an isRdma VF ready). */
static int rdma_unchanged(int root_fd, const struct inventory *last)
{
        size_t n = 0, seen = 0;
        for (size_t p = 0; p < last->n_pfs; p++) {
                n += last->pfs[p].n_rdma;
                for (size_t v = 0; v < last->pfs[p].n_vfs; v++)
                        n += last->pfs[p].vfs[v].n_rdma;
        }
        _cleanup_free_ const char **known = calloc(n ? n : 1, sizeof(*known));
        if (!known)
                return -ENOMEM;
        n = 0;
        for (size_t p = 0; p < last->n_pfs; p++) {
                const struct pf_info *pf = &last->pfs[p];
                for (size_t i = 0; i < pf->n_rdma; i++)
                        known[n++] = pf->rdma[i].name;
                for (size_t v = 0; v < pf->n_vfs; v++)
                        for (size_t i = 0; i < pf->vfs[v].n_rdma; i++)
                                known[n++] = pf->vfs[v].rdma[i].name;
        }
        if (n > 1)
                qsort(known, n, sizeof(*known), compare_names);

        _cleanup_sysfs_dir_ struct sysfs_dir d;
        int r = host_sysfs_dir_open_at(&d, root_fd, "class/infiniband");
        if (r < 0)
                /* NOLINTNEXTLINE(clang-analyzer-unix.Malloc): _cleanup_ frees it */
                return r == -ENOENT ? n == 0 : r;
        bool same = true;
        for (const char *name; same && (name = host_sysfs_dir_next(&d));) {
                char rel[300], buf[4096];
                if (name[0] == '.')
                        continue;
                if (n && bsearch(&name, known, n, sizeof(*known), compare_names)) {
                        seen++;
                        continue;
                }
                if (path_printf(rel, sizeof(rel), "class/infiniband/%s/parent", name) >= 0 &&
                    host_sysfs_read_line_at(root_fd, rel, buf, sizeof(buf)) >= 0) {
                        same = !is_our_netdev(last, buf);
                        continue;
                }
                if (path_printf(rel, sizeof(rel), "class/infiniband/%s", name) < 0)
                        continue;
                ssize_t len = readlinkat(root_fd, rel, buf, sizeof(buf) - 1);
                if (len > 0) {
                        buf[len] = '\0';
                        same = !is_our_function(last, buf);
                }
        }
        return same && d.error >= 0 && seen == n;
}

/* Port 1's state of each RDMA device of a PF or whole-card NIC: an InfiniBand port that leaves
 * ACTIVE makes the function's devices Unhealthy (deviceplugin/health.h). Without an IPoIB netdev
 * (ib_ipoib not loaded) nothing else announces it, so the periodic check must see it on every
 * tick, not only at its full check. VFs' own ports do not decide their health: not read. */
static bool ports_unchanged(int root_fd, const struct pf_info *fns, size_t n_fns)
{
        for (size_t i = 0; i < n_fns; i++)
                for (size_t k = 0; k < fns[i].n_rdma; k++) {
                        const struct rdma_device *d = &fns[i].rdma[k];
                        char rel[RDMA_NAME_MAX + 48], buf[sizeof(d->port_state)];
                        if (path_printf(rel, sizeof(rel), "class/infiniband/%s/ports/1/state",
                                        d->name) < 0)
                                return false;
                        if (host_sysfs_read_line_at(root_fd, rel, buf, sizeof(buf)) < 0)
                                buf[0] = '\0'; /* as discovery records a port it cannot read */
                        if (strcmp(buf, d->port_state) != 0)
                                return false;
                }
        return true;
}

int host_quick_check(const char *sysfs_root, const struct inventory *last)
{
        _cleanup_close_ int root_fd =
            host_sysfs_open_dir_at(AT_FDCWD, sysfs_root ? sysfs_root : "/sys");
        if (root_fd < 0)
                return root_fd;
        _cleanup_close_ int devices_fd = host_sysfs_open_dir_at(root_fd, "bus/pci/devices");
        if (devices_fd < 0)
                return devices_fd;
        _cleanup_(bound_listings_done) struct bound_listings bound = {
                .drivers_fd = host_sysfs_open_dir_at(root_fd, "bus/pci/drivers"),
        };
        int r = 1;
        for (size_t i = 0; r > 0 && i < last->n_pfs; i++)
                r = pf_unchanged(devices_fd, &bound, &last->pfs[i]);
        if (r > 0 && (!ports_unchanged(root_fd, last->pfs, last->n_pfs) ||
                      !ports_unchanged(root_fd, last->rdma_nics, last->n_rdma_nics)))
                r = 0;
        return r > 0 ? rdma_unchanged(root_fd, last) : r;
}
