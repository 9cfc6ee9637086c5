/* SPDX-License-Identifier: Apache-2.0 */
/* A VF's RDMA device and a pod's network namespace, as the CNI plugin needs them in the RDMA
 * subsystem's exclusive mode: which device is the VF's, and moving it back from a pod's
 * namespace (moving it in is host_rdma_move_to_netns()).
 *
 * The device's index is the kernel's ib_device index: it stays the same when the device moves
 * between namespaces. A netlink socket answers for the namespace it was created in (nldev
 * looks devices up in sock_net()), so a socket for the pod's namespace is opened inside it. */
#pragma once

#include <stdint.h>

#include "host/rdma-netlink.h"

struct nl_sock;

struct host_rdma_vf_device {
        uint32_t index;
        char name[HOST_RDMA_DEV_NAME_MAX];
        char driver[64]; /* the driver that owns the RDMA device: the VF's, or "rxe" / "siw" */
};

/* The VF's RDMA device as the caller's namespace shows it: the one under the PCI function
 * pci (host_rdma_device_of_function(); driver is then fn_driver), else a software device (rxe,
 * siw) whose `parent` is the VF's netdev vf_ifname (driver "rxe" for RoCE, "siw" for iWARP).
 * sk: an RDMA netlink socket or NULL for a fresh one. -ENOENT: the VF has no RDMA device here;
 * -EPROTONOSUPPORT: no RDMA netlink (ib_core not loaded). Nothing is logged for -ENOENT. */
int host_rdma_find_vf_device(struct nl_sock *sk, const char *sysfs_root, const char *pci,
                             const char *vf_ifname, const char *fn_driver,
                             struct host_rdma_vf_device *ret);

/* Moves the RDMA device with this index (name for logs and for records without an index: index
 * 0 looks it up by name) from the namespace pod_ns back to host_ns, the caller's. The calling
 * thread enters pod_ns for the move and is back in host_ns on return. pod_sk / host_sk: sockets
 * for tests (the netlink double), NULL on a node (opened in the right namespace).
 * 0: moved back; 1: not in pod_ns but in host_ns already (the kernel returns devices to the
 * initial namespace when a namespace dies, or an earlier DEL moved it); -ENODEV: in neither. */
int host_rdma_return_device(struct nl_sock *pod_sk, struct nl_sock *host_sk, int pod_ns,
                            int host_ns, uint32_t index, const char *name);
