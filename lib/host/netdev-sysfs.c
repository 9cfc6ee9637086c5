#include "host/netdev-sysfs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host/device-error.h"
#include "host/sysfs-at.h"
#include "util/fileio.h"
#include "util/macro.h"
#include "util/names.h"

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
        return device_error_append(error, "net/%s/%s: %s", ifname, attr, strerror(-r));
}

static int read_netdev(int fn_dir_fd, const char *ifname, struct netdev_info *n, char **error)
{
        char buf[64];

        if (path_printf(buf, sizeof(buf), "net/%s", ifname) < 0)
                return note(error, ifname, "", -ENAMETOOLONG);
        _cleanup_close_ int fd = sysfs_open_dir_at(fn_dir_fd, buf);
        uint32_t flags;
        int r, type;

        netdev_info_init(n);
        strcpy(n->name, ifname); /* ifname_is_valid() bounds it below IFNAME_MAX */
        if (fd < 0)
                return note(error, ifname, "", fd);

        r = sysfs_read_line_at(fd, "address", n->mac, sizeof(n->mac));
        if (r < 0) {
                n->mac[0] = '\0';
                if (note(error, ifname, "address", r) < 0)
                        return -ENOMEM;
        }
        r = sysfs_read_int_at(fd, "mtu", &n->mtu);
        if (r < 0) {
                n->mtu = -1;
                if (note(error, ifname, "mtu", r) < 0)
                        return -ENOMEM;
        }
        r = sysfs_read_hex_u32_at(fd, "flags", &flags);
        if (r < 0) {
                if (note(error, ifname, "flags", r) < 0)
                        return -ENOMEM;
        } else
                n->admin_up = flags & IFF_UP_FLAG;
        r = sysfs_read_int_at(fd, "type", &type);
        if (r < 0) {
                if (note(error, ifname, "type", r) < 0)
                        return -ENOMEM;
        } else
                n->link_type = link_type_from_arphrd(type);

        /* The kernel answers EINVAL for the speed of a down link and has no operstate for some
         * virtual devices: both just mean "unknown". */
        if (sysfs_read_int_at(fd, "speed", &n->speed_mbps) < 0 || n->speed_mbps < 0)
                n->speed_mbps = -1;
        if (sysfs_read_line_at(fd, "operstate", buf, sizeof(buf)) >= 0 &&
            strlen(buf) < sizeof(n->operstate))
                strcpy(n->operstate, buf);
        return 0;
}

static int compare_netdev(const void *a, const void *b)
{
        return strcmp(((const struct netdev_info *)a)->name, ((const struct netdev_info *)b)->name);
}

int netdev_sysfs_read_function(int fn_dir_fd, struct netdev_info **ret, size_t *ret_n, char **error)
{
        struct netdev_info *list = NULL;
        size_t n = 0;
        int r = 0;

        *ret = NULL;
        *ret_n = 0;

        struct sysfs_dir d;
        r = sysfs_dir_open_at(&d, fn_dir_fd, "net");
        if (r < 0)
                return r == -ENOENT ? 0 : device_error_append(error, "net: %s", strerror(-r));

        const char *name;
        while ((name = sysfs_dir_next(&d))) {
                char shown[64];

                if (name[0] == '.')
                        continue;
                if (!ifname_is_valid(name)) {
                        r = device_error_append(error, "net/'%s': not a valid interface name",
                                                printable_name(name, shown, sizeof(shown)));
                        if (r < 0)
                                break;
                        continue;
                }
                struct netdev_info *p = realloc(list, (n + 1) * sizeof(*list));
                if (!p) {
                        r = -ENOMEM;
                        break;
                }
                list = p;
                r = read_netdev(fn_dir_fd, name, &list[n++], error);
                if (r < 0)
                        break;
        }
        sysfs_dir_close(&d);
        if (r < 0) {
                free(list);
                return r;
        }
        if (n > 1)
                qsort(list, n, sizeof(*list), compare_netdev);
        *ret = list;
        *ret_n = n;
        return 0;
}
