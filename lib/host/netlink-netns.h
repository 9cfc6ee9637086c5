/* SPDX-License-Identifier: Apache-2.0 */
/* Link, address and route operations the CNI plugin needs, in the calling thread's network
 * namespace, plus the full state of one VF as its PF reports it (rates and VLAN protocol
 * included) and the two VF settings netlink-link.h does not cover (VLAN with protocol, rates).
 *
 * A pod's namespace is entered with host_netns_enter() (setns on the calling thread; the
 * plugin is single-threaded); every function opens its rtnetlink socket in the namespace the
 * thread is in at that moment. Functions return 0 or the kernel's negative errno and do not
 * log: the plugin reports one error naming the VF, interface and step. */
#pragma once

#include <net/if.h>
#include <stdbool.h>
#include <stdint.h>

/* The longest link-layer address (the kernel's MAX_ADDR_LEN). */
#define HOST_HWADDR_MAX 32

struct host_link {
        int ifindex;
        char name[IFNAMSIZ];
        uint8_t mac[6]; /* the address when it is 6 bytes long (Ethernet), else zero */
        /* the address as the kernel reports it, of any length: 20 bytes on IPoIB */
        uint8_t hwaddr[HOST_HWADDR_MAX];
        int hwaddr_len;
        int mtu;
        unsigned flags;      /* IFF_* */
        char parent_dev[64]; /* its device (a VF's PCI address); "" when the kernel (before 5.16)
                                or the link (virtual) reports none */
};

/* -ENODEV when there is no such interface. */
int host_link_get(const char *ifname, struct host_link *ret);
int host_link_set_updown(int ifindex, bool up);
/* Sets the link's MAC and reads it back, setting it again (bounded: 20 tries, 100 ms apart)
 * while the driver answers EBUSY/EAGAIN or the link does not show it yet, as upstream's
 * SetVFEffectiveMAC; -ETIMEDOUT when it never showed. */
int host_link_set_mac(int ifindex, const uint8_t mac[6]);
int host_link_set_mtu_index(int ifindex, int mtu);
int host_link_rename(int ifindex, const char *new_name);
/* Moves the link into the namespace netns_fd and renames it there to new_name, in one request.
 * The kernel moves first and renames after: when new_name is taken in the target the answer is
 * -EEXIST with the link already moved under its old name (callers check the target first).
 * -EEXIST can also mean another name is taken there: host_link_move_conflict() says which. */
int host_link_move(int ifindex, int netns_fd, const char *new_name);
/* Removes the alternative name `name` (IFLA_ALT_IFNAME, `ip link property del dev X altname
 * NAME`) from the link when the link lists it: 1 when removed, 0 when the link has no such
 * altname (kernels before 5.5 have none), else the kernel's negative errno. A link carrying its
 * old name as an altname cannot take that name back (-EEXIST), not even when moved home. */
int host_link_drop_altname(int ifindex, const char *name);

/* An alternative name's size (the kernel's ALTIFNAMSIZ), NUL included. */
#define HOST_ALTNAME_SIZE 128

/* Which name made host_link_move() answer -EEXIST (its return value; the name in ret): */
enum host_move_conflict {
        HOST_MOVE_TAKEN_NAME = 1, /* another link has new_name as its name or an altname */
        HOST_MOVE_TAKEN_ALTNAME,  /* one of the link's altnames is a name or altname there */
        HOST_MOVE_OWN_ALTNAME,    /* new_name is one of the link's own altnames */
};
/* After host_link_move(ifindex, netns_fd, new_name) answered -EEXIST: which name is taken in the
 * target namespace. ifname is the link's name, the one it had before the move. The kernel
 * refuses the move (nothing moved) when one of the link's altnames is a name or altname in the
 * target (kernels whose netns move checks altnames: 6.1.0-50 and 6.18 measured), or when both
 * its name and new_name are; it moves the link and then refuses the rename when new_name is
 * taken there, also as one of the link's own altnames (it stays there under ifname). So the link
 * is looked for in the calling thread's namespace, else in the target, and the names checked in
 * the kernel's order. Returns an enum host_move_conflict value, -ENOENT when no name is taken
 * (any more), or a negative errno; the thread is back in its namespace on return. */
int host_link_move_conflict(const char *ifname, int netns_fd, const char *new_name,
                            char ret[static HOST_ALTNAME_SIZE]);
/* family AF_INET / AF_INET6, addr 4 or 16 bytes. */
int host_addr_add(int ifindex, int family, const void *addr, int prefixlen);
/* dst NULL with dst_len 0 = default route; gw NULL = on-link. */
int host_route_add(int ifindex, int family, const void *dst, int dst_len, const void *gw);

/* setns(fd, CLONE_NEWNET) for the calling thread. */
int host_netns_enter(int netns_fd);
/* Opens a network namespace file (a bind mount under /var/run/netns or /proc/PID/ns/net)
 * without blocking (a FIFO there does not hang the caller) and checks it is a network
 * namespace: -ENOENT when the path is gone, -EINVAL when it is not a network namespace. */
int host_netns_open(const char *path);
/* Whether two namespace fds name the same namespace. */
bool host_netns_same(int fd_a, int fd_b);
/* In the calling thread's namespace: the link whose driver reports bus_addr (a PCI address) as
 * its bus, whatever its name (hint, the name it should have, is tried first). -ENODEV when
 * none does. */
int host_link_find_by_bus(const char *bus_addr, const char *hint, struct host_link *ret);

struct host_vf_state {
        uint8_t mac[6]; /* administrative MAC (zero when none) */
        int vlan, qos;
        uint16_t vlan_proto; /* ETH_P_8021Q / ETH_P_8021AD host order; 0 when not reported */
        uint32_t min_tx_rate, max_tx_rate;
        int spoofchk, trust; /* 0/1, -1 not reported */
        int link_state;      /* IFLA_VF_LINK_STATE_*, -1 not reported */
};

/* -ENOENT when the PF reports no VF vf_index. */
int host_vf_get_state(const char *pf_ifname, int vf_index, struct host_vf_state *ret);
int host_vf_set_vlan_proto(const char *pf_ifname, int vf_index, int vlan, int qos, uint16_t proto);
int host_vf_set_rate(const char *pf_ifname, int vf_index, uint32_t min_tx, uint32_t max_tx);
/* The administrative MAC (all zero clears it on drivers that allow that), read back from the
 * PF's VF list and set again (bounded as host_link_set_mac) while the driver answers
 * EBUSY/EAGAIN (a VF being reset) or does not list it yet, as upstream's SetVFHardwareMAC;
 * -ETIMEDOUT when it never showed. */
int host_vf_set_mac(const char *pf_ifname, int vf_index, const uint8_t mac[6]);
int host_vf_set_spoofchk(const char *pf_ifname, int vf_index, bool on);
int host_vf_set_trust(const char *pf_ifname, int vf_index, bool on);
int host_vf_set_link_state(const char *pf_ifname, int vf_index, int state);

/* Gratuitous ARP (a broadcast ARP request for addr from addr) on ifindex. */
int host_send_gratuitous_arp(int ifindex, const uint8_t mac[6], const void *ipv4);
/* Unsolicited neighbour advertisement for addr to all-nodes on ifindex. */
int host_send_unsolicited_na(int ifindex, const uint8_t mac[6], const void *ipv6);
