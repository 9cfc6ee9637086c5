/* SPDX-License-Identifier: Apache-2.0 */
#include "host/vf-lookup.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "host/sysfs-at.h"
#include "host/sysfs-device.h"
#include "util/macro.h"
#include "util/names.h"
#include "util/parse.h"

/* The first name of the directory in sorted order, as upstream's os.ReadDir()[0] (its GetPfName
 * and GetVFLinkName): a PF with several netdevs (multi-port, switchdev representors) is then
 * known by the same name here and there, whatever order the filesystem lists them in. */
static int first_entry(int dir_fd, const char *path, char *buf, size_t size)
{
        _cleanup_sysfs_dir_ struct sysfs_dir d;
        int r = host_sysfs_dir_open_at(&d, dir_fd, path);
        if (r < 0)
                return r;
        bool found = false, too_long = false;
        for (const char *name; (name = host_sysfs_dir_next(&d));) {
                if (strlen(name) >= size)
                        too_long = true;
                else if (!found || strcmp(name, buf) < 0) {
                        strcpy(buf, name);
                        found = true;
                }
        }
        return found ? 0 : too_long ? -ENOBUFS : -ENOENT;
}

int host_vf_locate(const char *sysfs_root, const char *vf_pci, struct vf_location *ret)
{
        struct vf_location loc = { .vf_index = -1 };
        if (!vf_pci || !pci_address_is_valid(vf_pci))
                return -EINVAL;
        _cleanup_host_device_ struct host_device vf = HOST_DEVICE_NULL;
        if (host_device_open(&vf, sysfs_root, vf_pci) < 0)
                return -ENODEV;
        const int vf_fd = vf.fd;
        bool dangling = false;
        int r = host_sysfs_read_link_at(vf_fd, "physfn", loc.pf_pci, sizeof(loc.pf_pci), &dangling);
        if (r < 0 || dangling)
                return -ENOTTY;
        _cleanup_close_ int pf_fd = host_sysfs_open_dir_at(vf_fd, "physfn");
        if (pf_fd < 0)
                return -ENOTTY;
        if (first_entry(pf_fd, "net", loc.pf_ifname, sizeof(loc.pf_ifname)) < 0)
                return -ENOLINK;

        _cleanup_sysfs_dir_ struct sysfs_dir d;
        r = host_sysfs_dir_open_at(&d, pf_fd, ".");
        if (r < 0)
                return r;
        for (const char *name; (name = host_sysfs_dir_next(&d));) {
                int idx;
                char target[32];
                if (strncmp(name, "virtfn", 6) != 0 || parse_int(name + 6, &idx) < 0)
                        continue;
                if (host_sysfs_read_link_at(pf_fd, name, target, sizeof(target), &dangling) == 0 &&
                    strcasecmp(target, vf_pci) == 0) {
                        loc.vf_index = idx;
                        break;
                }
        }
        if (loc.vf_index < 0)
                return -ENOENT;

        (void)first_entry(vf_fd, "net", loc.vf_ifname, sizeof(loc.vf_ifname));
        (void)host_sysfs_read_link_at(vf_fd, "driver", loc.driver, sizeof(loc.driver), &dangling);
        *ret = loc;
        return 0;
}

bool host_driver_is_userspace(const char *driver)
{
        static const char *const drivers[] = { "vfio-pci", "uio_pci_generic", "igb_uio" };
        for (size_t i = 0; driver && i < ELEMENTSOF(drivers); i++)
                if (strcmp(driver, drivers[i]) == 0)
                        return true;
        return false;
}

int host_pf_foreach(const char *sysfs_root,
                    int (*fn)(const char *pf_pci, const char *pf_ifname, void *userdata),
                    void *userdata)
{
        char path[PATH_MAX];
        int n =
            snprintf(path, sizeof(path), "%s/bus/pci/devices", sysfs_root ? sysfs_root : "/sys");
        if (n < 0 || (size_t)n >= sizeof(path))
                return -ENAMETOOLONG;
        _cleanup_close_ int devices_fd = host_sysfs_open_dir_at(AT_FDCWD, path);
        if (devices_fd < 0)
                return devices_fd;
        _cleanup_sysfs_dir_ struct sysfs_dir d;
        int r = host_sysfs_dir_open_at(&d, devices_fd, ".");
        if (r < 0)
                return r;
        for (const char *name; (name = host_sysfs_dir_next(&d));) {
                /* a name read from sysfs is checked before it becomes a path */
                if (!pci_address_is_valid(name))
                        continue;
                _cleanup_close_ int pf_fd = host_sysfs_open_dir_at(devices_fd, name);
                if (pf_fd < 0 || !host_sysfs_exists_at(pf_fd, "virtfn0"))
                        continue;
                char ifname[IFNAMSIZ] = "";
                if (first_entry(pf_fd, "net", ifname, sizeof(ifname)) < 0)
                        ifname[0] = '\0';
                if ((r = fn(name, ifname, userdata)) != 0)
                        return r;
        }
        return d.error < 0 ? d.error : 0;
}

int host_vf_pci(const char *sysfs_root, const char *pf_pci, int vf_index, char *buf, size_t size)
{
        char link[32];
        _cleanup_host_device_ struct host_device pf = HOST_DEVICE_NULL;
        int r = host_device_open(&pf, sysfs_root, pf_pci);
        if (r < 0)
                return r;
        snprintf(link, sizeof(link), "virtfn%d", vf_index);
        bool dangling = false;
        if ((r = host_device_read_link(&pf, link, buf, size, &dangling)) < 0)
                return r;
        return dangling || !pci_address_is_valid(buf) ? -ENOENT : 0;
}

bool host_vf_has_netdev(const char *sysfs_root, const char *vf_pci)
{
        char name[IFNAMSIZ];
        _cleanup_host_device_ struct host_device vf = HOST_DEVICE_NULL;
        return host_device_open(&vf, sysfs_root, vf_pci) == 0 &&
               first_entry(vf.fd, "net", name, sizeof(name)) == 0;
}
