/* SPDX-License-Identifier: Apache-2.0 */
/* Link configuration over rtnetlink: MTU, admin state, and a PF's VF attributes.
 *
 * Interface names are checked with ifname_is_valid() before use. Every function returns 0 or
 * a negative errno as the kernel gave it and logs with the interface (and VF index) as
 * context, adding the kernel's extended-ack text when there is one.
 *
 * VF attributes are sent one request per attribute: the kernel stops at the first attribute
 * a driver rejects, and drivers differ (igb has no VF link state: EOPNOTSUPP). The result of
 * each attribute is reported separately; "not supported" does not make the call fail.
 *
 * The VF list of a PF is one RTM_GETLINK reply carrying every VF. With stats included it
 * outgrows the 64 KiB an attribute nest can describe at ~222 Ethernet VFs (EMSGSIZE), so the
 * request asks for VF info without VF stats (RTEXT_FILTER_SKIP_STATS) and reads the reply with
 * a large peeking receive buffer. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum vf_attr {
        VF_ATTR_MAC,
        VF_ATTR_VLAN,
        VF_ATTR_TRUST,
        VF_ATTR_SPOOFCHK,
        VF_ATTR_LINK_STATE,
        _VF_ATTR_MAX,
};
const char *
host_vf_attr_to_string(enum vf_attr a); /* "mac", "vlan", "trust", "spoofchk", "link-state" */

/* Values as IFLA_VF_LINK_STATE_* */
enum vf_link_state {
        VF_LINK_STATE_AUTO = 0,
        VF_LINK_STATE_ENABLE = 1,
        VF_LINK_STATE_DISABLE = 2,
};
const char *host_vf_link_state_to_string(int s);   /* "auto", "enable", "disable", "unknown" */
int host_vf_link_state_from_string(const char *s); /* enum value or -EINVAL */

/* What to change on one VF; attributes left at their "unset" value are not sent. */
struct vf_settings {
        bool set_mac;
        uint8_t mac[6];
        int vlan;       /* -1 unset, 0 none, 1..4094 (4095 is reserved) */
        int qos;        /* 802.1p priority with vlan, 0..7 */
        int trust;      /* -1 unset, 0 off, 1 on */
        int spoofchk;   /* -1 unset, 0 off, 1 on */
        int link_state; /* -1 unset, or enum vf_link_state */
};
#define VF_SETTINGS_INIT                                                                           \
        ((struct vf_settings){ .vlan = -1, .trust = -1, .spoofchk = -1, .link_state = -1 })

struct vf_set_result {
        bool attempted[_VF_ATTR_MAX];
        int error[_VF_ATTR_MAX]; /* 0 or negative errno, per attempted attribute */
};

/* -EOPNOTSUPP: the driver does not implement this setting. */
bool host_netlink_error_is_not_supported(int error);

int host_netlink_set_mtu(const char *ifname, int mtu);
int host_netlink_set_up(const char *ifname);

/* Applies every set attribute of s to VF vf_index of pf_ifname, each in its own request.
 * Returns 0 when every attempted attribute succeeded or was not supported, else the first
 * other error; ret (optional) gets each attribute's result. An index at or past the PF's VF
 * count is refused (-ENOENT) before anything is sent. */
int host_netlink_set_vf(const char *pf_ifname, int vf_index, const struct vf_settings *s,
                        struct vf_set_result *ret);

/* Sets VF vf_index's node and port GUID on an InfiniBand PF (IFLA_VF_IB_NODE_GUID, then
 * IFLA_VF_IB_PORT_GUID, payload struct ifla_vf_guid), as `ip link set PF vf N node_guid G
 * port_guid G` does. The VF's driver must be re-bound for its RDMA device to show them.
 * sk: an rtnetlink socket, or NULL for a fresh one; pf_ifindex 0: looked up from pf_ifname.
 * -EOPNOTSUPP: not an InfiniBand PF, or its driver has no VF GUIDs. */
struct nl_sock;
int host_netlink_set_vf_guids(struct nl_sock *sk, const char *pf_ifname, int pf_ifindex,
                              int vf_index, uint64_t node_guid, uint64_t port_guid);

struct netlink_vf_info {
        int vf;         /* VF index */
        char mac[18];   /* "aa:bb:cc:dd:ee:ff" */
        int vlan, qos;  /* 0 when none */
        int trust;      /* 0/1, -1 when the kernel did not report it */
        int spoofchk;   /* 0/1, -1 when not reported */
        int link_state; /* enum vf_link_state, -1 when not reported */
        /* InfiniBand PFs only (IFLA_VF_IB_NODE_GUID / IFLA_VF_IB_PORT_GUID) */
        bool has_guids;
        uint64_t node_guid, port_guid;
        /* IFLA_VF_STATS, only from host_netlink_get_vf_stats() and when the driver has them */
        bool have_stats;
        uint64_t rx_packets, tx_packets, rx_bytes, tx_bytes, broadcast, multicast, rx_dropped,
            tx_dropped;
};

/* The receive buffer a socket needs for a PF's VF list: a 256-VF reply without stats is
 * ~40 KiB; room for drivers that report more, and for the stats. */
#define HOST_NETLINK_VF_LIST_RCVBUF (1024 * 1024)

/* The PF's VFs as host_netlink_get_vf_list() with their counters (IFLA_VF_STATS): the kernel
 * gathers them from the driver, so this costs more than the list alone; the metrics endpoint asks
 * at scrape time only. The PF is asked by name (no lookup of its index first). sk: an rtnetlink
 * socket to ask on, one for many PFs (host_netlink_open(NETLINK_ROUTE,
 * HOST_NETLINK_VF_LIST_RCVBUF)), or NULL for a fresh one. */
int host_netlink_get_vf_stats(struct nl_sock *sk, const char *pf_ifname,
                              struct netlink_vf_info **ret, size_t *n);

/* The PF's VF count as rtnetlink reports it (IFLA_NUM_VF); -ENODATA for a device that has
 * no bus parent to ask (virtual devices). */
int host_netlink_get_num_vfs(const char *pf_ifname, int *ret);

/* The PF's VFs as the kernel reports them, sorted by index (malloc'ed; free() it). */
int host_netlink_get_vf_list(const char *pf_ifname, struct netlink_vf_info **ret, size_t *n);

/* The interface's alternative names (IFLA_PROP_LIST / IFLA_ALT_IFNAME, `ip link property add
 * dev X altname Y`), at most `max` of them copied into names[]; *ret_n is how many. Kernels
 * before 5.5 have none: 0 names. */
int host_netlink_get_alt_names(const char *ifname, char (*names)[128], size_t max, size_t *ret_n);
/* Parses the alternative names out of one RTM_NEWLINK message; -EBADMSG when malformed. */
struct nlmsghdr;
int host_netlink_parse_alt_names(const struct nlmsghdr *hdr, char (*names)[128], size_t max,
                                 size_t *ret_n);

/* Parses one RTM_NEWLINK message (as host_netlink_get_vf_list receives it); -EBADMSG when
 * malformed. Exposed for callers that read link replies themselves, and for tests. */
struct nlmsghdr;
int host_netlink_parse_vf_list(const struct nlmsghdr *hdr, struct netlink_vf_info **ret, size_t *n);
