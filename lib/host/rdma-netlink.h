/* SPDX-License-Identifier: Apache-2.0 */
/* The RDMA subsystem's netlink interface (NETLINK_RDMA, client "nldev"): the network-namespace
 * mode of RDMA devices, the device list, and moving a device into a network namespace.
 *
 * Messages carry no family header: the nlmsghdr type is RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, cmd)
 * and the attributes follow it directly (uapi <rdma/rdma_netlink.h>).
 *
 * The mode is the kernel's `ib_core` parameter netns_mode: shared (1, the default: every
 * namespace sees every RDMA device) or exclusive (0: a device belongs to one namespace). The
 * kernel changes it only while no network namespace other than the initial one exists, and
 * answers EBUSY otherwise; the module option then applies from the next boot.
 *
 * Every function takes a socket from host_rdma_netlink_open() or NULL for a fresh one of its
 * own, returns 0 or a negative errno as the kernel gave it and logs with the device (and the
 * kernel's extended-ack text) as context. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct nl_sock;
struct nlmsghdr;

enum host_rdma_netns_mode {
        HOST_RDMA_NETNS_EXCLUSIVE = 0, /* the kernel's values of netns_mode */
        HOST_RDMA_NETNS_SHARED = 1,
};
/* "exclusive", "shared"; NULL for other values. */
const char *host_rdma_netns_mode_to_string(int mode);
/* The enum value, or -EINVAL. */
int host_rdma_netns_mode_from_string(const char *s);

/* -EPROTONOSUPPORT when the kernel has no RDMA netlink (ib_core not loaded). */
int host_rdma_netlink_open(struct nl_sock **ret);

/* RDMA_NLDEV_CMD_SYS_GET: the current mode into *ret. */
int host_rdma_get_netns_mode(struct nl_sock *sk, enum host_rdma_netns_mode *ret);
/* RDMA_NLDEV_CMD_SYS_SET. -EBUSY: another network namespace exists, the kernel keeps its mode;
 * -EPERM without CAP_NET_ADMIN. */
int host_rdma_set_netns_mode(struct nl_sock *sk, enum host_rdma_netns_mode mode);

#define HOST_RDMA_DEV_NAME_MAX 64

struct host_rdma_link {
        uint32_t index;                    /* RDMA_NLDEV_ATTR_DEV_INDEX */
        char name[HOST_RDMA_DEV_NAME_MAX]; /* mlx5_3, rxe0 */
        uint64_t node_guid;                /* 0 when not reported */
        char protocol[8];                  /* "ib", "roce", "iw", "opa", "usnic", "" */
};

/* The RDMA devices of the caller's network namespace (in shared mode: all of them), sorted
 * by index; malloc'ed, free() it. */
int host_rdma_list_devices(struct nl_sock *sk, struct host_rdma_link **ret, size_t *n);
/* The index of the device named name in the caller's namespace; -ENODEV when none. */
int host_rdma_device_index(struct nl_sock *sk, const char *name, uint32_t *ret);

/* RDMA_NLDEV_CMD_SET with RDMA_NLDEV_ATTR_DEV_INDEX and RDMA_NLDEV_NET_NS_FD: moves the device
 * into the network namespace netns_fd refers to. -EOPNOTSUPP when the mode is shared or the
 * driver cannot move devices (it lacks disassociate_ucontext: rxe, siw); the caller names the
 * driver. -EINVAL: no device with that index in the caller's namespace, or netns_fd is not a
 * network namespace. */
int host_rdma_move_to_netns(struct nl_sock *sk, uint32_t index, const char *name_for_logs,
                            int netns_fd);

/* Parsers of one reply message, for callers reading replies themselves and for the fuzzer:
 * 0, or -EBADMSG when the message is not the expected nldev reply or is malformed. */
int host_rdma_parse_sys_reply(const struct nlmsghdr *hdr, enum host_rdma_netns_mode *ret);
int host_rdma_parse_device_reply(const struct nlmsghdr *hdr, struct host_rdma_link *ret);

/* The file the mode is written to for the next boot, under a modprobe.d directory. */
#define HOST_RDMA_MODPROBE_FILE "sriov-agent-rdma.conf"

/* Writes "options ib_core netns_mode=N" to dir/HOST_RDMA_MODPROBE_FILE (atomically; an
 * unchanged file is not rewritten; dir is created when missing, its parent is not) so that ib_core
 * loads with mode from the next boot on. The path written goes to path (optional). */
int host_rdma_write_modprobe_option(const char *dir, enum host_rdma_netns_mode mode, char *path,
                                    size_t path_size);

/* What host_rdma_bring_about_mode() found and did. */
struct host_rdma_mode_result {
        int current;        /* the kernel's mode afterwards, or -1 when it cannot be read */
        bool changed;       /* the kernel's mode was changed now */
        bool reboot_needed; /* the kernel refused (EBUSY): the option is written for next boot */
        char modprobe_path[512];
};

/* Reads the kernel's mode and, when wanted >= 0 differs, sets it; when the kernel refuses with
 * EBUSY writes the modprobe option under modprobe_dir and reports reboot_needed. Never reboots.
 * wanted < 0: only read. 0, or a negative errno (no RDMA netlink: -EPROTONOSUPPORT). */
int host_rdma_bring_about_mode(struct nl_sock *sk, int wanted, const char *modprobe_dir,
                               struct host_rdma_mode_result *ret);

/* What the node is told when res->reboot_needed (NodeState message, RebootNeeded Event, log):
 * the mode wanted, the one the kernel keeps, and the file written for the next boot. */
void host_rdma_reboot_message(int wanted, const struct host_rdma_mode_result *res, char *buf,
                              size_t size);
