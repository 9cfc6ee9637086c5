#include "host/netdev-sysfs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host/device-error.h"
#include "host/sysfs-at.h"
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

static int read_netdev(int net_fd, const char *ifname, struct netdev_info *n, char **error)
{
        _cleanup_close_ int fd = sysfs_open_dir_at(net_fd, ifname);
        char buf[64];
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

        int net_fd = openat(fn_dir_fd, "net", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (net_fd < 0)
                return errno == ENOENT ? 0 : device_error_append(error, "net: %m");
        DIR *d = fdopendir(net_fd);
        if (!d) {
                close(net_fd);
                return -ENOMEM;
        }

        struct dirent *de;
        while ((de = readdir(d))) {
                char shown[64];

                if (de->d_name[0] == '.')
                        continue;
                if (!ifname_is_valid(de->d_name)) {
                        r = device_error_append(error, "net/'%s': not a valid interface name",
                                                printable_name(de->d_name, shown, sizeof(shown)));
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
                r = read_netdev(dirfd(d), de->d_name, &list[n++], error);
                if (r < 0)
                        break;
        }
        closedir(d);
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
