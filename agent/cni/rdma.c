/* SPDX-License-Identifier: Apache-2.0 */
#include "rdma.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "host/netlink-request.h"
#include "host/rdma-netlink.h"
#include "host/rdma-netns.h"
#include "util/macro.h"

int cni_rdma_plan(const char *sysfs_root, const char *pci, const char *vf_ifname,
                  const char *driver, bool required, struct cni_cache *rec, struct cni_error *e)
{
        rec->rdma_moved = false;
        _cleanup_(host_nl_socket_freep) struct nl_sock *sk = NULL;
        int r = host_rdma_netlink_open(&sk);
        if (r == -EPROTONOSUPPORT && !required)
                return 0; /* no ib_core: no RDMA device to isolate */
        if (r < 0)
                return cni_fail(e, CNI_ERR_GENERIC, r,
                                "VF %s: rdmaIsolation: cannot open RDMA netlink (is ib_core "
                                "loaded?): %s",
                                pci, strerror(-r));
        enum host_rdma_netns_mode mode;
        if ((r = host_rdma_get_netns_mode(sk, &mode)) < 0)
                return cni_fail(e, CNI_ERR_GENERIC, r,
                                "VF %s: cannot read the RDMA network namespace mode: %s", pci,
                                strerror(-r));
        if (mode != HOST_RDMA_NETNS_EXCLUSIVE) {
                if (!required)
                        return 0; /* shared: every namespace sees every device, nothing moves */
                return cni_fail(e, CNI_ERR_GENERIC, -EOPNOTSUPP,
                                "rdmaIsolation: the RDMA subsystem's network namespace mode is "
                                "%s, it must be exclusive (sriov-agent --rdma-mode exclusive)",
                                host_rdma_netns_mode_to_string(mode) ?: "unknown");
        }
        struct host_rdma_vf_device dev;
        r = host_rdma_find_vf_device(sk, sysfs_root, pci, vf_ifname, driver, &dev);
        if (r == -ENOENT && !required)
                return 0; /* a VF without RDMA: nothing to move */
        if (r < 0)
                return cni_fail(e, CNI_ERR_GENERIC, r,
                                "VF %s: cannot find its RDMA device in the host's namespace: %s",
                                pci, r == -ENOENT ? "it has none" : strerror(-r));
        rec->rdma_moved = true;
        rec->rdma_index = dev.index;
        snprintf(rec->rdma_name, sizeof(rec->rdma_name), "%s", dev.name);
        /* the driver only names the failure below: not recorded */
        snprintf(rec->rdma_driver, sizeof(rec->rdma_driver), "%s", dev.driver);
        return 0;
}

int cni_rdma_find_again(const char *sysfs_root, const char *vf_ifname, const char *driver,
                        struct cni_cache *rec, struct cni_error *e)
{
        struct host_rdma_vf_device dev;
        int r;
        /* the netdev the re-bind waited for may come before the RDMA device (mlx5 registers it
         * from its auxiliary device): up to 2 s */
        for (int i = 0;; i++) {
                r = host_rdma_find_vf_device(NULL, sysfs_root, rec->device_id, vf_ifname, driver,
                                             &dev);
                if (r != -ENOENT || i >= 40)
                        break;
                nanosleep(&(struct timespec){ .tv_nsec = 50 * 1000 * 1000 }, NULL);
        }
        if (r < 0)
                return cni_fail(e, CNI_ERR_GENERIC, r,
                                "VF %s: its RDMA device (%s, index %u before re-binding its "
                                "driver) is not back in the host's namespace after the "
                                "re-bind: %s",
                                rec->device_id, rec->rdma_name, rec->rdma_index,
                                r == -ENOENT ? "none found" : strerror(-r));
        const bool changed = dev.index != rec->rdma_index || strcmp(dev.name, rec->rdma_name) != 0;
        rec->rdma_index = dev.index;
        snprintf(rec->rdma_name, sizeof(rec->rdma_name), "%s", dev.name);
        snprintf(rec->rdma_driver, sizeof(rec->rdma_driver), "%s", dev.driver);
        return changed;
}

int cni_rdma_move(const struct cni_cache *rec, int pod_ns, const char *netns, struct cni_error *e)
{
        int r = host_rdma_move_to_netns(NULL, rec->rdma_index, rec->rdma_name, pod_ns);
        if (r == -EOPNOTSUPP)
                return cni_fail(e, CNI_ERR_GENERIC, r,
                                "VF %s: RDMA device %s (driver %s) cannot move into the pod's "
                                "network namespace %s in exclusive RDMA mode: its driver cannot "
                                "move devices between namespaces (no disassociate_ucontext)",
                                rec->device_id, rec->rdma_name,
                                rec->rdma_driver[0] ? rec->rdma_driver : "unknown", netns);
        if (r < 0)
                return cni_fail(e, CNI_ERR_GENERIC, r,
                                "VF %s: cannot move RDMA device %s into %s (exclusive RDMA "
                                "mode): %s",
                                rec->device_id, rec->rdma_name, netns, strerror(-r));
        return 0;
}

int cni_rdma_release(const struct cni_cache *rec, int pod_ns, int host_ns, const char *netns,
                     struct cni_error *e)
{
        int r =
            host_rdma_return_device(NULL, NULL, pod_ns, host_ns, rec->rdma_index, rec->rdma_name);
        if (r == -ENODEV) {
                /* gone with its VF (destroyed, or re-created by a driver re-bind) */
                fprintf(stderr, "sriov: VF %s: RDMA device %s is in no namespace any more\n",
                        rec->device_id, rec->rdma_name);
                return 0;
        }
        if (r < 0)
                return cni_fail(e, CNI_ERR_GENERIC, r,
                                "VF %s: cannot move RDMA device %s back from %s to the host: %s",
                                rec->device_id, rec->rdma_name, netns, strerror(-r));
        return 0;
}
