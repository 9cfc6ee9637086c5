/* SPDX-License-Identifier: Apache-2.0 */
#include "host/netdev-sysfs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host/device-error.h"
#include "host/printable.h"
#include "host/sysfs-at.h"
#include "util/macro.h"
#include "util/names.h"
#include "util/parse.h"

#define ARPHRD_ETHER_TYPE      1
#define ARPHRD_INFINIBAND_TYPE 32
#define IFF_UP_FLAG            0x1

static enum link_type link_type_from_arphrd(int type)
{
        switch (type) {
        case ARPHRD_ETHER_TYPE:
                return LINK_TYPE_ETH;
        case ARPHRD_INFINIBAND_TYPE:
                return LINK_TYPE_IB;
        default:
                return LINK_TYPE_UNKNOWN;
        }
}

static int note(char **error, const char *ifname, const char *attr, int r)
{
        return host_device_error_append(error, "net/%s/%s: %s", ifname, attr, strerror(-r));
}

/* net/<ifname>/<attr> relative to the function: no per-netdev directory handle to open and
 * close, which is two system calls per VF saved. */
static int read_attr(int fn_dir_fd, const char *ifname, const char *attr, char *buf, size_t size)
{
        char rel[64];
        int r = path_printf(rel, sizeof(rel), "net/%s/%s", ifname, attr);
        return r < 0 ? r : host_sysfs_read_line_at(fn_dir_fd, rel, buf, size);
}

static int read_netdev(int fn_dir_fd, const char *ifname, bool pf_attributes, struct netdev_info *n,
                       char **error)
{
        char buf[64];
        uint32_t flags;
        int r, type;

        netdev_info_init(n);
        strcpy(n->name, ifname); /* ifname_is_valid() bounds it below IFNAME_MAX */

        r = read_attr(fn_dir_fd, ifname, "address", n->mac, sizeof(n->mac));
        if (r < 0) {
                n->mac[0] = '\0';
                if (note(error, ifname, "address", r) < 0)
                        return -ENOMEM;
        }
        r = read_attr(fn_dir_fd, ifname, "mtu", buf, sizeof(buf));
        if (r >= 0)
                r = parse_int(buf, &n->mtu);
        if (r < 0) {
                n->mtu = -1;
                if (note(error, ifname, "mtu", r) < 0)
                        return -ENOMEM;
        }
        r = read_attr(fn_dir_fd, ifname, "flags", buf, sizeof(buf));
        if (r >= 0)
                r = parse_hex_u32(buf, &flags);
        if (r < 0) {
                if (note(error, ifname, "flags", r) < 0)
                        return -ENOMEM;
        } else
                n->admin_up = flags & IFF_UP_FLAG;
        r = read_attr(fn_dir_fd, ifname, "type", buf, sizeof(buf));
        if (r >= 0)
                r = parse_int(buf, &type);
        if (r < 0) {
                if (note(error, ifname, "type", r) < 0)
                        return -ENOMEM;
        } else
                n->link_type = link_type_from_arphrd(type);

        /* The kernel answers EINVAL for the speed of a down link and has no operstate for some
         * virtual devices: both just mean "unknown". */
        if (!pf_attributes || read_attr(fn_dir_fd, ifname, "speed", buf, sizeof(buf)) < 0 ||
            parse_int(buf, &n->speed_mbps) < 0 || n->speed_mbps < 0)
                n->speed_mbps = -1;
        if (pf_attributes && read_attr(fn_dir_fd, ifname, "operstate", buf, sizeof(buf)) >= 0 &&
            strlen(buf) < sizeof(n->operstate))
                strcpy(n->operstate, buf);
        return 0;
}

static int compare_netdev(const void *a, const void *b)
{
        return strcmp(((const struct netdev_info *)a)->name, ((const struct netdev_info *)b)->name);
}

int host_netdev_sysfs_read_function(int fn_dir_fd, bool pf_attributes, struct netdev_info **ret,
                                    size_t *ret_n, char **error)
{
        _cleanup_free_ struct netdev_info *list = NULL;
        size_t n = 0;

        *ret = NULL;
        *ret_n = 0;

        _cleanup_sysfs_dir_ struct sysfs_dir d;
        int r = host_sysfs_dir_open_at(&d, fn_dir_fd, "net");
        if (r < 0)
                return r == -ENOENT ? 0 : host_device_error_append(error, "net: %s", strerror(-r));

        const char *name;
        while ((name = host_sysfs_dir_next(&d))) {
                char shown[64];

                if (name[0] == '.')
                        continue;
                if (!ifname_is_valid(name)) {
                        r = host_device_error_append(
                            error, "net/'%s': not a valid interface name",
                            host_printable_name(name, shown, sizeof(shown)));
                        if (r < 0)
                                break;
                        continue;
                }
                /* Exact size, not util/array.h's doubling: a function has one netdev (rarely
                 * two), and spare capacity would be kept per VF for the inventory's life. */
                struct netdev_info *p = realloc(list, (n + 1) * sizeof(*list));
                if (!p) {
                        r = -ENOMEM;
                        break;
                }
                list = p;
                r = read_netdev(fn_dir_fd, name, pf_attributes, &list[n++], error);
                if (r < 0)
                        break;
        }
        if (r < 0)
                return r;
        if (n > 1)
                qsort(list, n, sizeof(*list), compare_netdev);
        *ret = TAKE_PTR(list);
        *ret_n = n;
        return 0;
}
