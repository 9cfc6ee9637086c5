/* SPDX-License-Identifier: Apache-2.0 */
#include "host/rdma-netns.h"

#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/netlink-netns.h"
#include "host/netlink-request.h"
#include "host/printable.h"
#include "host/rdma-function.h"
#include "host/sysfs-at.h"
#include "util/fileio.h"
#include "util/log.h"
#include "util/macro.h"
#include "util/names.h"

/* The software RDMA device whose `parent` is ifname, into name. */
static int tied_device(const char *sysfs_root, const char *ifname, char *name, size_t size)
{
        char path[512];
        snprintf(path, sizeof(path), "%s/class/infiniband", sysfs_root ? sysfs_root : "/sys");
        _cleanup_close_ int fd = host_sysfs_open_dir_at(AT_FDCWD, path);
        if (fd < 0)
                return -ENOENT;
        _cleanup_sysfs_dir_ struct sysfs_dir d;
        if (host_sysfs_dir_open_at(&d, fd, ".") < 0)
                return -ENOENT;
        for (const char *n; (n = host_sysfs_dir_next(&d));) {
                char rel[300], parent[IFNAMSIZ + 1];
                if (n[0] == '.' || !filename_is_valid(n) || strlen(n) >= size ||
                    snprintf(rel, sizeof(rel), "%s/parent", n) >= (int)sizeof(rel) ||
                    host_sysfs_read_line_at(fd, rel, parent, sizeof(parent)) < 0)
                        continue;
                if (strcmp(parent, ifname) == 0) {
                        snprintf(name, size, "%s", n);
                        return 0;
                }
        }
        return -ENOENT;
}

int host_rdma_find_vf_device(struct nl_sock *sk, const char *sysfs_root, const char *pci,
                             const char *vf_ifname, const char *fn_driver,
                             struct host_rdma_vf_device *ret)
{
        struct host_rdma_vf_device dev = { .index = 0 };
        bool tied = false;
        int r = host_rdma_device_of_function(sysfs_root, pci, dev.name, sizeof(dev.name));
        if (r == -ENOENT && vf_ifname && vf_ifname[0]) {
                r = tied_device(sysfs_root, vf_ifname, dev.name, sizeof(dev.name));
                tied = r == 0;
        }
        if (r < 0)
                return r;
        _cleanup_(host_nl_socket_freep) struct nl_sock *owned = NULL;
        if (!sk) {
                if ((r = host_rdma_netlink_open(&owned)) < 0)
                        return r;
                sk = owned;
        }
        _cleanup_free_ struct host_rdma_link *devs = NULL;
        size_t n = 0;
        if ((r = host_rdma_list_devices(sk, &devs, &n)) < 0)
                return r;
        for (size_t i = 0; i < n; i++) {
                if (strcmp(devs[i].name, dev.name) != 0)
                        continue;
                dev.index = devs[i].index;
                if (!tied)
                        snprintf(dev.driver, sizeof(dev.driver), "%s",
                                 fn_driver && fn_driver[0] ? fn_driver : "unknown");
                else
                        snprintf(dev.driver, sizeof(dev.driver), "%s",
                                 strcmp(devs[i].protocol, "iw") == 0 ? "siw" : "rxe");
                *ret = dev;
                return 0;
        }
        /* sysfs shows it, the caller's namespace does not (moved into a pod's already) */
        return -ENOENT;
}

/* The index of the device (by index, or by name when index is 0) in sk's namespace. */
static int lookup(struct nl_sock *sk, uint32_t index, const char *name, uint32_t *ret)
{
        _cleanup_free_ struct host_rdma_link *devs = NULL;
        size_t n = 0;
        int r = host_rdma_list_devices(sk, &devs, &n);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++)
                if (index ? devs[i].index == index : name && strcmp(devs[i].name, name) == 0) {
                        *ret = devs[i].index;
                        return 0;
                }
        return -ENODEV;
}

int host_rdma_return_device(struct nl_sock *pod_sk, struct nl_sock *host_sk, int pod_ns,
                            int host_ns, uint32_t index, const char *name)
{
        const char *shown = name && name[0] ? name : "?";
        if (!index && !(name && name[0]))
                return log_error_errno(-EINVAL, "no RDMA device named to move back");
        int r = host_netns_enter(pod_ns);
        if (r < 0)
                return log_error_errno(r, "RDMA device %s: cannot enter the pod's namespace",
                                       shown);
        _cleanup_(host_nl_socket_freep) struct nl_sock *owned = NULL;
        if (!pod_sk && (r = host_rdma_netlink_open(&owned)) >= 0)
                pod_sk = owned;
        uint32_t found = 0;
        if (r >= 0)
                r = lookup(pod_sk, index, name, &found);
        if (r >= 0)
                r = host_rdma_move_to_netns(pod_sk, found, shown, host_ns);
        int r2 = host_netns_enter(host_ns);
        if (r2 < 0)
                return log_error_errno(r2, "RDMA device %s: cannot return to the host namespace",
                                       shown);
        if (r >= 0)
                return 0;
        if (r != -ENODEV)
                return r;
        /* not in the pod's namespace: already home? */
        _cleanup_(host_nl_socket_freep) struct nl_sock *owned_host = NULL;
        if (!host_sk) {
                if ((r = host_rdma_netlink_open(&owned_host)) < 0)
                        return r;
                host_sk = owned_host;
        }
        r = lookup(host_sk, index, name, &found);
        if (r == 0)
                return 1;
        return r == -ENODEV ? log_ctx_msg(LOG_WARNING, -ENODEV, NULL,
                                          "RDMA device %s (index %u) is neither in the pod's "
                                          "namespace nor in the host's",
                                          shown, index)
                            : r;
}
