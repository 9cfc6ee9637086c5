#include "host/quick-check.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>

#include "host/sysfs-at.h"
#include "util/fileio.h"
#include "util/macro.h"

#define IFF_UP_FLAG 0x1

/* fn_fd/<prefix>net/: the same names as nd[], each with the same MTU and admin state. */
static int netdevs_unchanged(int fn_fd, const char *prefix, const struct netdev_info *nd, size_t n)
{
        char rel[128], buf[64];
        struct sysfs_dir d;
        size_t seen = 0;

        snprintf(rel, sizeof(rel), "%snet", prefix);
        int r = sysfs_dir_open_at(&d, fn_fd, rel);
        if (r == -ENOENT)
                return n == 0;
        if (r < 0)
                return r;
        bool same = true;
        for (const char *name; same && (name = sysfs_dir_next(&d));) {
                if (name[0] == '.')
                        continue;
                bool known = false;
                for (size_t i = 0; i < n && !known; i++)
                        known = strcmp(nd[i].name, name) == 0;
                same = known;
                seen++;
        }
        sysfs_dir_close(&d);
        if (!same || d.error < 0 || seen != n)
                return 0;
        for (size_t i = 0; i < n; i++) {
                int mtu;
                uint32_t flags;
                if (path_printf(rel, sizeof(rel), "%snet/%s/mtu", prefix, nd[i].name) < 0 ||
                    sysfs_read_line_at(fn_fd, rel, buf, sizeof(buf)) < 0 ||
                    parse_int(buf, &mtu) < 0 || mtu != nd[i].mtu)
                        return 0;
                if (path_printf(rel, sizeof(rel), "%snet/%s/flags", prefix, nd[i].name) < 0 ||
                    sysfs_read_line_at(fn_fd, rel, buf, sizeof(buf)) < 0 ||
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

static int pf_unchanged(int devices_fd, const struct pf_info *pf)
{
        char buf[32];
        int num_vfs;

        if (pf->error || pf->num_vfs < 0 || (size_t)pf->num_vfs != pf->n_vfs)
                return 0; /* what was wrong may have been fixed: let discovery look */
        _cleanup_close_ int fd = sysfs_open_dir_at(devices_fd, pf->pci_address);
        if (fd < 0)
                return 0;
        if (sysfs_read_line_at(fd, "sriov_numvfs", buf, sizeof(buf)) < 0 ||
            parse_int(buf, &num_vfs) < 0 || num_vfs != pf->num_vfs)
                return 0;
        if (!driver_unchanged(fd, "", pf->driver))
                return 0;
        int r = netdevs_unchanged(fd, "", pf->netdevs, pf->n_netdevs);
        for (size_t i = 0; r > 0 && i < pf->n_vfs; i++) {
                const struct vf_info *vf = &pf->vfs[i];
                char prefix[32];
                if (vf->error)
                        return 0;
                snprintf(prefix, sizeof(prefix), "virtfn%d/", vf->vf_index);
                if (!driver_unchanged(fd, prefix, vf->driver))
                        return 0;
                r = netdevs_unchanged(fd, prefix, vf->netdevs, vf->n_netdevs);
        }
        return r;
}

int host_quick_check(const char *sysfs_root, const struct inventory *last)
{
        char path[4096];

        if (path_printf(path, sizeof(path), "%s/bus/pci/devices",
                        sysfs_root ? sysfs_root : "/sys") < 0)
                return -ENAMETOOLONG;
        _cleanup_close_ int devices_fd = sysfs_open_dir_at(AT_FDCWD, path);
        if (devices_fd < 0)
                return devices_fd;
        int r = 1;
        for (size_t i = 0; r > 0 && i < last->n_pfs; i++)
                r = pf_unchanged(devices_fd, &last->pfs[i]);
        return r;
}
