/* SPDX-License-Identifier: Apache-2.0 */
#include "rdma.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "host/netlink-request.h"
#include "host/rdma-function.h"
#include "host/rdma-netlink.h"
#include "host/rdma-netns.h"
#include "ib.h"
#include "util/macro.h"

/* How long a VF whose function shows an RDMA auxiliary device (or an ib-sriov VF) may be
 * without its RDMA device: a driver re-bind (the agent's GUID change, the previous pod's DEL
 * putting its GUID back) unregisters it and registers it again within a second or two */
#define RDMA_APPEAR_POLLS   100
#define RDMA_APPEAR_POLL_NS (50 * 1000 * 1000)

/* host_rdma_find_vf_device(), waiting up to RDMA_APPEAR_POLLS polls while it answers -ENOENT
 * and wait says the device should be there. */
static int find_waiting(struct nl_sock *sk, const char *sysfs_root, const char *pci,
                        const char *vf_ifname, const char *driver, bool wait,
                        struct host_rdma_vf_device *dev)
{
        for (int i = 0;; i++) {
                int r = host_rdma_find_vf_device(sk, sysfs_root, pci, vf_ifname, driver, dev);
                if (r != -ENOENT || !wait || i >= RDMA_APPEAR_POLLS)
                        return r;
                nanosleep(&(struct timespec){ .tv_nsec = RDMA_APPEAR_POLL_NS }, NULL);
        }
}

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
        /* a function with an RDMA auxiliary device has an RDMA device, only perhaps not at this
         * instant (a driver re-bind in progress): absent for a moment is not "no RDMA", which
         * would attach the VF without it and leave the pod without its device */
        const bool expected = required || host_rdma_function_has_rdma_aux(sysfs_root, pci);
        r = find_waiting(sk, sysfs_root, pci, vf_ifname, driver, expected, &dev);
        if (r == -ENOENT && !expected)
                return 0; /* a VF without RDMA: nothing to move */
        if (r < 0)
                return cni_fail(e, CNI_ERR_GENERIC, r,
                                "VF %s: cannot find its RDMA device in the host's namespace: %s",
                                pci,
                                r != -ENOENT ? strerror(-r)
                                : required   ? "it has none"
                                             : "its function has an RDMA auxiliary device, but no "
                                               "RDMA device appeared within 5 s");
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
        /* the netdev the re-bind waited for may come before the RDMA device (mlx5 registers it
         * from its auxiliary device): up to 5 s */
        int r = find_waiting(NULL, sysfs_root, rec->device_id, vf_ifname, driver, true, &dev);
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

int cni_rdma_release(const char *sysfs_root, const struct cni_cache *rec, int pod_ns, int host_ns,
                     const char *netns, struct cni_error *e)
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
        if (r > 0 || !rec->orig.host_ifname[0])
                return 0; /* not moved now: its netdev was not re-created by this */
        /* an IPoIB netdev belongs to its RDMA device: the move re-created it in the host under
         * the kernel's next free name (ibN); without a GUID to restore (whose re-bind names it
         * back) nothing else would give it its host name back */
        struct vf_location loc;
        if ((r = host_vf_locate(sysfs_root, rec->device_id, &loc)) < 0)
                return cni_fail(e, CNI_ERR_GENERIC, r,
                                "VF %s: cannot find it after moving RDMA device %s back: %s",
                                rec->device_id, rec->rdma_name, strerror(-r));
        return cni_vf_netdev_name_back(sysfs_root, rec->device_id, &loc, rec->orig.host_ifname, e);
}

int cni_rdma_check_devices(const char *sysfs_root, const struct cni_cache *rec,
                           const struct host_rdma_char_devices *want, const char *source,
                           struct cni_error *e)
{
        if (!want->uverbs[0] && !want->umad[0] && !want->issm[0])
                return 0; /* nothing handed out to compare with */
        char name[HOST_RDMA_DEV_NAME_MAX];
        if (rec->rdma_moved)
                snprintf(name, sizeof(name), "%s", rec->rdma_name);
        else {
                /* shared mode: the one under its function, re-registered by the GUID's re-bind
                 * perhaps a moment after its netdev */
                const bool expected = host_rdma_function_has_rdma_aux(sysfs_root, rec->device_id);
                int found;
                for (int i = 0;; i++) {
                        found = host_rdma_device_of_function(sysfs_root, rec->device_id, name,
                                                             sizeof(name));
                        if (found != -ENOENT || !expected || i >= RDMA_APPEAR_POLLS)
                                break;
                        nanosleep(&(struct timespec){ .tv_nsec = RDMA_APPEAR_POLL_NS }, NULL);
                }
                if (found < 0)
                        return 0; /* none under its function (Soft-RoCE): not renumbered here */
        }
        struct host_rdma_char_devices have;
        int r = host_rdma_char_devices_of(sysfs_root, name, &have);
        if (r < 0)
                return cni_fail(e, CNI_ERR_GENERIC, r,
                                "VF %s: cannot read the character devices of RDMA device %s: %s",
                                rec->device_id, name, strerror(-r));
        const char *kinds[] = { "uverbs", "umad", "issm" };
        const char *wanted[] = { want->uverbs, want->umad, want->issm };
        const char *owned[] = { have.uverbs, have.umad, have.issm };
        for (size_t i = 0; i < ELEMENTSOF(kinds); i++) {
                if (!wanted[i][0] || strcmp(wanted[i], owned[i]) == 0)
                        continue;
                char now[64];
                snprintf(now, sizeof(now), "%s%s", owned[i][0] ? "owns " : "has no ",
                         owned[i][0] ? owned[i] : kinds[i]);
                return cni_fail(e, CNI_ERR_GENERIC, -EXDEV,
                                "VF %s: its RDMA device %s %s now, but %s gave the pod %s: "
                                "moving it (or re-binding its driver) took the lowest free %s "
                                "number again, and the container would open another device; "
                                "delete the pod to get a new allocation",
                                rec->device_id, name, now, source, wanted[i], kinds[i]);
        }
        return 0;
}
