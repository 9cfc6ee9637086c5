/* SPDX-License-Identifier: Apache-2.0 */
#include "host/netlink-netns.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/ethtool.h>
#include <linux/if_arp.h>
#include <linux/if_ether.h>
#include <linux/if_link.h>
#include <linux/if_packet.h>
#include <linux/magic.h>
#include <linux/nsfs.h>
#include <linux/rtnetlink.h>
#include <linux/sockios.h>
#include <netinet/icmp6.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include <netlink/attr.h>
#include <netlink/msg.h>

#include "host/netlink-request.h"
#include "util/array.h"
#include "util/macro.h"
#include "util/names.h"

#ifndef NSFS_MAGIC
#define NSFS_MAGIC 0x6e736673
#endif

static int transact(struct nl_msg *m, netlink_reply_fn fn, void *userdata)
{
        _cleanup_(host_nl_socket_freep) struct nl_sock *sk = NULL;
        int r = host_netlink_open(NETLINK_ROUTE, fn ? 64 * 1024 : 0, &sk);
        if (r < 0)
                return r;
        return host_netlink_transact(sk, m, fn, userdata, NULL, 0);
}

static struct nl_msg *link_msg(int type, int ifindex, unsigned flags, unsigned change)
{
        struct nl_msg *m = nlmsg_alloc_simple(type, NLM_F_REQUEST);
        struct ifinfomsg ifi = {
                .ifi_family = AF_UNSPEC,
                .ifi_index = ifindex,
                .ifi_flags = flags,
                .ifi_change = change,
        };
        if (m && nlmsg_append(m, &ifi, sizeof(ifi), NLMSG_ALIGNTO) < 0) {
                nlmsg_free(m);
                return NULL;
        }
        return m;
}

static int on_link(struct nl_msg *msg, void *userdata)
{
        struct host_link *l = userdata;
        struct nlmsghdr *h = nlmsg_hdr(msg);
        struct nlattr *tb[IFLA_MAX + 1];
        if (h->nlmsg_type != RTM_NEWLINK ||
            nlmsg_parse(h, sizeof(struct ifinfomsg), tb, IFLA_MAX, NULL) < 0)
                return -EBADMSG;
        const struct ifinfomsg *ifi = nlmsg_data(h);
        l->ifindex = ifi->ifi_index;
        l->flags = ifi->ifi_flags;
        if (tb[IFLA_IFNAME])
                nla_strlcpy(l->name, tb[IFLA_IFNAME], sizeof(l->name));
        if (tb[IFLA_MTU])
                l->mtu = (int)nla_get_u32(tb[IFLA_MTU]);
        if (tb[IFLA_ADDRESS] && nla_len(tb[IFLA_ADDRESS]) == 6)
                memcpy(l->mac, nla_data(tb[IFLA_ADDRESS]), 6);
        if (tb[IFLA_ADDRESS] && nla_len(tb[IFLA_ADDRESS]) <= HOST_HWADDR_MAX) {
                l->hwaddr_len = nla_len(tb[IFLA_ADDRESS]);
                memcpy(l->hwaddr, nla_data(tb[IFLA_ADDRESS]), (size_t)l->hwaddr_len);
        }
        if (tb[IFLA_PARENT_DEV_NAME])
                nla_strlcpy(l->parent_dev, tb[IFLA_PARENT_DEV_NAME], sizeof(l->parent_dev));
        return 0;
}

/* attr IFLA_IFNAME (the kernel resolves names and altnames alike) or IFLA_ALT_IFNAME (the same
 * lookup for names up to 127 bytes, Linux 5.5 and later) */
static int link_get_by(int attr, const char *name, struct host_link *ret)
{
        _cleanup_(host_nlmsg_freep) struct nl_msg *m = link_msg(RTM_GETLINK, 0, 0, 0);
        if (!m || nla_put_string(m, attr, name) < 0 ||
            nla_put_u32(m, IFLA_EXT_MASK, RTEXT_FILTER_SKIP_STATS) < 0)
                return -ENOMEM;
        struct host_link l = { .ifindex = 0 };
        int r = transact(m, on_link, &l);
        if (r < 0)
                return r;
        if (l.ifindex <= 0)
                return -ENODEV;
        *ret = l;
        return 0;
}

int host_link_get(const char *ifname, struct host_link *ret)
{
        if (!ifname || !ifname_is_valid(ifname))
                return -EINVAL;
        return link_get_by(IFLA_IFNAME, ifname, ret);
}

int host_link_set_updown(int ifindex, bool up)
{
        _cleanup_(host_nlmsg_freep) struct nl_msg *m =
            link_msg(RTM_SETLINK, ifindex, up ? IFF_UP : 0, IFF_UP);
        return m ? transact(m, NULL, NULL) : -ENOMEM;
}

/* A MAC set is read back and set again until it shows, as upstream's SetVFEffectiveMAC and
 * SetVFHardwareMAC (20 tries 100 ms apart): i40e and iavf apply it asynchronously (the request
 * succeeds, the address changes later or never), newer iavf answers EAGAIN while the PF has
 * not answered, and a VF being reset answers EBUSY. Other errors are final at once: retrying
 * a refusal (EPERM for an untrusted VF...) for 2 s would change nothing. */
#define MAC_TRIES       20
#define MAC_INTERVAL_NS (100 * 1000 * 1000L)

static bool mac_error_transient(int r)
{
        return r == -EBUSY || r == -EAGAIN;
}

static int link_get_index(int ifindex, struct host_link *ret)
{
        _cleanup_(host_nlmsg_freep) struct nl_msg *m = link_msg(RTM_GETLINK, ifindex, 0, 0);
        if (!m || nla_put_u32(m, IFLA_EXT_MASK, RTEXT_FILTER_SKIP_STATS) < 0)
                return -ENOMEM;
        struct host_link l = { .ifindex = 0 };
        int r = transact(m, on_link, &l);
        if (r < 0)
                return r;
        if (l.ifindex <= 0)
                return -ENODEV;
        *ret = l;
        return 0;
}

int host_link_set_mac(int ifindex, const uint8_t mac[6])
{
        int r = 0;
        for (int i = 0; i < MAC_TRIES; i++) {
                if (i > 0)
                        nanosleep(&(struct timespec){ .tv_nsec = MAC_INTERVAL_NS }, NULL);
                _cleanup_(host_nlmsg_freep) struct nl_msg *m = link_msg(RTM_SETLINK, ifindex, 0, 0);
                if (!m || nla_put(m, IFLA_ADDRESS, 6, mac) < 0)
                        return -ENOMEM;
                r = transact(m, NULL, NULL);
                if (r < 0 && !mac_error_transient(r))
                        return r;
                struct host_link l;
                if (r == 0 && (r = link_get_index(ifindex, &l)) < 0)
                        return r;
                if (r == 0 && l.hwaddr_len == 6 && memcmp(l.mac, mac, 6) == 0)
                        return 0;
        }
        return r < 0 ? r : -ETIMEDOUT;
}

int host_link_set_mtu_index(int ifindex, int mtu)
{
        _cleanup_(host_nlmsg_freep) struct nl_msg *m = link_msg(RTM_SETLINK, ifindex, 0, 0);
        if (!m || nla_put_u32(m, IFLA_MTU, (uint32_t)mtu) < 0)
                return -ENOMEM;
        return transact(m, NULL, NULL);
}

int host_link_rename(int ifindex, const char *new_name)
{
        if (!new_name || !ifname_is_valid(new_name))
                return -EINVAL;
        _cleanup_(host_nlmsg_freep) struct nl_msg *m = link_msg(RTM_SETLINK, ifindex, 0, 0);
        if (!m || nla_put_string(m, IFLA_IFNAME, new_name) < 0)
                return -ENOMEM;
        return transact(m, NULL, NULL);
}

int host_link_move(int ifindex, int netns_fd, const char *new_name)
{
        if (new_name && !ifname_is_valid(new_name))
                return -EINVAL;
        _cleanup_(host_nlmsg_freep) struct nl_msg *m = link_msg(RTM_SETLINK, ifindex, 0, 0);
        if (!m || nla_put_u32(m, IFLA_NET_NS_FD, (uint32_t)netns_fd) < 0 ||
            (new_name && nla_put_string(m, IFLA_IFNAME, new_name) < 0))
                return -ENOMEM;
        return transact(m, NULL, NULL);
}

struct altname_list {
        char (*names)[HOST_ALTNAME_SIZE];
        size_t n, cap;
};

/* Collects the link's altnames (IFLA_PROP_LIST / IFLA_ALT_IFNAME) from one RTM_NEWLINK. */
static int on_link_altnames(struct nl_msg *msg, void *userdata)
{
        struct altname_list *q = userdata;
        struct nlmsghdr *h = nlmsg_hdr(msg);
        struct nlattr *tb[IFLA_MAX + 1], *a;
        int rem;
        if (h->nlmsg_type != RTM_NEWLINK ||
            nlmsg_parse(h, sizeof(struct ifinfomsg), tb, IFLA_MAX, NULL) < 0)
                return -EBADMSG;
        if (!tb[IFLA_PROP_LIST])
                return 0;
        /* nla_for_each_nested() spelled out: cppcheck runs without libnl's headers */
        for (a = nla_data(tb[IFLA_PROP_LIST]), rem = nla_len(tb[IFLA_PROP_LIST]); nla_ok(a, rem);
             a = nla_next(a, &rem)) {
                const char *s = nla_data(a);
                int len = nla_len(a);
                if (nla_type(a) != IFLA_ALT_IFNAME || len < 2 || len > HOST_ALTNAME_SIZE ||
                    s[len - 1] != '\0')
                        continue;
                if (GROW_ARRAY(q->names, q->cap, q->n + 1) < 0)
                        return -ENOMEM;
                memcpy(q->names[q->n++], s, (size_t)len);
        }
        return 0;
}

/* The link's altnames in the calling thread's namespace (none before Linux 5.5). */
static int link_altnames(int ifindex, struct altname_list *ret)
{
        _cleanup_(host_nlmsg_freep) struct nl_msg *get = link_msg(RTM_GETLINK, ifindex, 0, 0);
        if (!get || nla_put_u32(get, IFLA_EXT_MASK, RTEXT_FILTER_SKIP_STATS) < 0)
                return -ENOMEM;
        *ret = (struct altname_list){ .n = 0 };
        int r = transact(get, on_link_altnames, ret);
        if (r < 0) {
                free(ret->names);
                *ret = (struct altname_list){ .n = 0 };
        }
        return r;
}

int host_link_drop_altname(int ifindex, const char *name)
{
        if (!name || !*name || strlen(name) >= HOST_ALTNAME_SIZE)
                return -EINVAL;
        struct altname_list q;
        int r = link_altnames(ifindex, &q);
        if (r < 0)
                return r;
        bool found = false;
        for (size_t i = 0; i < q.n && !found; i++)
                found = strcmp(q.names[i], name) == 0;
        free(q.names);
        if (!found)
                return 0;
        _cleanup_(host_nlmsg_freep) struct nl_msg *del = link_msg(RTM_DELLINKPROP, ifindex, 0, 0);
        if (!del)
                return -ENOMEM;
        struct nlattr *list = nla_nest_start(del, IFLA_PROP_LIST);
        if (!list || nla_put_string(del, IFLA_ALT_IFNAME, name) < 0)
                return -ENOMEM;
        nla_nest_end(del, list);
        r = transact(del, NULL, NULL);
        /* gone between the two requests: what was asked for holds */
        return r == -ENOENT ? 0 : r < 0 ? r : 1;
}

/* The names in the target, in the order the kernel checks them (net/core/dev.c,
 * __dev_change_net_namespace, then the rename in do_setlink). Runs in the target namespace;
 * l is the link: its index there when moved. */
static int find_conflict(const struct host_link *l, bool moved, const struct altname_list *alts,
                         const char *ifname, const char *new_name,
                         char ret[static HOST_ALTNAME_SIZE])
{
        struct host_link h;
        int r;
        if (moved) {
                /* the rename was refused: new_name resolves to another link, or to this one
                 * (one of its own altnames: the kernel refuses those as its name) */
                r = new_name ? link_get_by(IFLA_IFNAME, new_name, &h) : -ENODEV;
                if (r < 0)
                        return r == -ENODEV ? -ENOENT : r;
                snprintf(ret, HOST_ALTNAME_SIZE, "%s", new_name);
                return h.ifindex == l->ifindex ? HOST_MOVE_OWN_ALTNAME : HOST_MOVE_TAKEN_NAME;
        }
        /* its own name taken there: the kernel tries new_name instead */
        r = link_get_by(IFLA_IFNAME, ifname, &h);
        if (r == 0 && new_name && (r = link_get_by(IFLA_IFNAME, new_name, &h)) == 0) {
                snprintf(ret, HOST_ALTNAME_SIZE, "%s", new_name);
                return HOST_MOVE_TAKEN_NAME;
        }
        if (r < 0 && r != -ENODEV)
                return r;
        for (size_t i = 0; i < alts->n; i++) {
                r = link_get_by(IFLA_ALT_IFNAME, alts->names[i], &h);
                if (r == 0) {
                        snprintf(ret, HOST_ALTNAME_SIZE, "%s", alts->names[i]);
                        return HOST_MOVE_TAKEN_ALTNAME;
                }
                if (r != -ENODEV)
                        return r;
        }
        return -ENOENT;
}

int host_link_move_conflict(const char *ifname, int netns_fd, const char *new_name,
                            char ret[static HOST_ALTNAME_SIZE])
{
        if (!ifname || !ifname_is_valid(ifname) || (new_name && !ifname_is_valid(new_name)))
                return -EINVAL;
        _cleanup_close_ int here = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
        if (here < 0)
                return negative_errno();
        struct host_link l;
        struct altname_list alts = { .n = 0 };
        int r = host_link_get(ifname, &l);
        /* gone from here: moved, and the rename refused (in the target under its old name) */
        const bool moved = r == -ENODEV;
        if (r == 0)
                r = link_altnames(l.ifindex, &alts);
        if (r < 0 && !moved)
                return r;
        if ((r = host_netns_enter(netns_fd)) < 0) {
                free(alts.names);
                return r;
        }
        r = moved ? host_link_get(ifname, &l) : 0;
        if (r == 0)
                r = find_conflict(&l, moved, &alts, ifname, new_name, ret);
        free(alts.names);
        int r2 = host_netns_enter(here);
        return r2 < 0 ? r2 : r;
}

static int addr_len(int family)
{
        return family == AF_INET ? 4 : family == AF_INET6 ? 16 : -1;
}

int host_addr_add(int ifindex, int family, const void *addr, int prefixlen)
{
        int len = addr_len(family);
        if (len < 0 || prefixlen < 0 || prefixlen > len * 8)
                return -EINVAL;
        _cleanup_(host_nlmsg_freep) struct nl_msg *m =
            nlmsg_alloc_simple(RTM_NEWADDR, NLM_F_REQUEST | NLM_F_CREATE | NLM_F_EXCL);
        struct ifaddrmsg ifa = {
                .ifa_family = (uint8_t)family,
                .ifa_prefixlen = (uint8_t)prefixlen,
                .ifa_index = (uint32_t)ifindex,
                .ifa_scope = RT_SCOPE_UNIVERSE,
        };
        if (!m || nlmsg_append(m, &ifa, sizeof(ifa), NLMSG_ALIGNTO) < 0 ||
            nla_put(m, IFA_LOCAL, len, addr) < 0 || nla_put(m, IFA_ADDRESS, len, addr) < 0)
                return -ENOMEM;
        return transact(m, NULL, NULL);
}

int host_route_add(int ifindex, int family, const void *dst, int dst_len, const void *gw)
{
        int len = addr_len(family);
        if (len < 0 || dst_len < 0 || dst_len > len * 8 || (dst_len > 0 && !dst))
                return -EINVAL;
        _cleanup_(host_nlmsg_freep) struct nl_msg *m =
            nlmsg_alloc_simple(RTM_NEWROUTE, NLM_F_REQUEST | NLM_F_CREATE | NLM_F_EXCL);
        struct rtmsg rtm = {
                .rtm_family = (uint8_t)family,
                .rtm_dst_len = (uint8_t)dst_len,
                .rtm_table = RT_TABLE_MAIN,
                .rtm_protocol = RTPROT_BOOT,
                .rtm_scope = gw ? RT_SCOPE_UNIVERSE : RT_SCOPE_LINK,
                .rtm_type = RTN_UNICAST,
        };
        if (!m || nlmsg_append(m, &rtm, sizeof(rtm), NLMSG_ALIGNTO) < 0 ||
            (dst_len > 0 && nla_put(m, RTA_DST, len, dst) < 0) ||
            (gw && nla_put(m, RTA_GATEWAY, len, gw) < 0) ||
            nla_put_u32(m, RTA_OIF, (uint32_t)ifindex) < 0)
                return -ENOMEM;
        return transact(m, NULL, NULL);
}

int host_netns_enter(int netns_fd)
{
        return setns(netns_fd, CLONE_NEWNET) < 0 ? negative_errno() : 0;
}

int host_netns_open(const char *path)
{
        if (!path || path[0] != '/')
                return -EINVAL;
        /* O_NONBLOCK: a FIFO at the path would block the open until a writer came (the caller
         * holds a VF's lock); O_NOCTTY: nor may a terminal become ours */
        int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
        if (fd < 0)
                return negative_errno();
        struct statfs sfs;
        /* A bind-mounted namespace file and /proc/PID/ns/net (a magic link) both open the
         * namespace's nsfs inode; a plain file left where a namespace was is not one, nor is
         * another kind of namespace (/proc/PID/ns/mnt) */
        if (fstatfs(fd, &sfs) < 0 || (unsigned long)sfs.f_type != NSFS_MAGIC) {
                close(fd);
                return -EINVAL;
        }
        int type = ioctl(fd, NS_GET_NSTYPE);
        if ((type < 0 && errno != ENOTTY) || (type >= 0 && type != CLONE_NEWNET)) {
                close(fd); /* ENOTTY: a kernel before 4.11, which cannot tell */
                return -EINVAL;
        }
        return fd;
}

bool host_netns_same(int fd_a, int fd_b)
{
        struct stat a, b;
        return fstat(fd_a, &a) == 0 && fstat(fd_b, &b) == 0 && a.st_dev == b.st_dev &&
               a.st_ino == b.st_ino;
}

/* The bus address the link's driver reports (ethtool's bus-info): a PCI function's address for
 * a VF netdev, "" for virtual links. */
static int link_bus_info(int fd, const char *ifname, char *buf, size_t size)
{
        struct ethtool_drvinfo info = { .cmd = ETHTOOL_GDRVINFO };
        struct ifreq ifr = { .ifr_data = (void *)&info };
        snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
        if (ioctl(fd, SIOCETHTOOL, &ifr) < 0)
                return negative_errno();
        snprintf(buf, size, "%.*s", (int)sizeof(info.bus_info), info.bus_info);
        return 0;
}

/* Whether the link named ifname is the device bus_addr: the parent device the kernel reports
 * (Linux 5.16 and later), else what its driver reports to ethtool (older kernels; a driver
 * resetting its device may refuse ethtool then, while the parent is always reported). */
static bool link_is_device(int fd, const char *ifname, const char *bus_addr, struct host_link *ret)
{
        char bus[64];
        if (host_link_get(ifname, ret) < 0)
                return false;
        if (ret->parent_dev[0])
                return strcmp(ret->parent_dev, bus_addr) == 0;
        return link_bus_info(fd, ifname, bus, sizeof(bus)) == 0 && strcmp(bus, bus_addr) == 0;
}

int host_link_find_by_bus(const char *bus_addr, const char *hint, struct host_link *ret)
{
        _cleanup_close_ int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return negative_errno();
        /* the name the link should have first: one request instead of every link's */
        if (hint && ifname_is_valid(hint) && link_is_device(fd, hint, bus_addr, ret))
                return 0;
        struct if_nameindex *all = if_nameindex();
        if (!all)
                return negative_errno();
        int r = -ENODEV;
        for (struct if_nameindex *i = all; i->if_index != 0; i++)
                if (link_is_device(fd, i->if_name, bus_addr, ret)) {
                        r = 0;
                        break;
                }
        if_freenameindex(all);
        return r;
}

struct vf_query {
        int vf;
        bool found;
        struct host_vf_state *st;
};

static void parse_one_vf(struct nlattr *vtb[], struct vf_query *q)
{
        const struct ifla_vf_mac *mac = vtb[IFLA_VF_MAC] ? nla_data(vtb[IFLA_VF_MAC]) : NULL;
        if (!mac || nla_len(vtb[IFLA_VF_MAC]) < (int)sizeof(*mac) || (int)mac->vf != q->vf)
                return;
        struct host_vf_state *st = q->st;
        *st = (struct host_vf_state){ .spoofchk = -1, .trust = -1, .link_state = -1 };
        q->found = true;
        memcpy(st->mac, mac->mac, 6);
        if (vtb[IFLA_VF_VLAN] && nla_len(vtb[IFLA_VF_VLAN]) >= (int)sizeof(struct ifla_vf_vlan)) {
                const struct ifla_vf_vlan *v = nla_data(vtb[IFLA_VF_VLAN]);
                st->vlan = (int)v->vlan;
                st->qos = (int)v->qos;
                st->vlan_proto = ETH_P_8021Q;
        }
        if (vtb[IFLA_VF_VLAN_LIST]) {
                struct nlattr *a;
                int rem;
                nla_for_each_nested(a, vtb[IFLA_VF_VLAN_LIST], rem)
                {
                        if (nla_type(a) != IFLA_VF_VLAN_INFO ||
                            nla_len(a) < (int)sizeof(struct ifla_vf_vlan_info))
                                continue;
                        const struct ifla_vf_vlan_info *vi = nla_data(a);
                        st->vlan = (int)vi->vlan;
                        st->qos = (int)vi->qos;
                        st->vlan_proto = ntohs(vi->vlan_proto);
                        break;
                }
        }
        if (vtb[IFLA_VF_RATE] && nla_len(vtb[IFLA_VF_RATE]) >= (int)sizeof(struct ifla_vf_rate)) {
                const struct ifla_vf_rate *rt = nla_data(vtb[IFLA_VF_RATE]);
                st->min_tx_rate = rt->min_tx_rate;
                st->max_tx_rate = rt->max_tx_rate;
        }
        if (vtb[IFLA_VF_SPOOFCHK] &&
            nla_len(vtb[IFLA_VF_SPOOFCHK]) >= (int)sizeof(struct ifla_vf_spoofchk)) {
                uint32_t s =
                    ((const struct ifla_vf_spoofchk *)nla_data(vtb[IFLA_VF_SPOOFCHK]))->setting;
                st->spoofchk = s <= 1 ? (int)s : -1;
        }
        if (vtb[IFLA_VF_TRUST] &&
            nla_len(vtb[IFLA_VF_TRUST]) >= (int)sizeof(struct ifla_vf_trust)) {
                uint32_t s = ((const struct ifla_vf_trust *)nla_data(vtb[IFLA_VF_TRUST]))->setting;
                st->trust = s <= 1 ? (int)s : -1;
        }
        if (vtb[IFLA_VF_LINK_STATE] &&
            nla_len(vtb[IFLA_VF_LINK_STATE]) >= (int)sizeof(struct ifla_vf_link_state)) {
                uint32_t s = ((const struct ifla_vf_link_state *)nla_data(vtb[IFLA_VF_LINK_STATE]))
                                 ->link_state;
                st->link_state = s <= IFLA_VF_LINK_STATE_DISABLE ? (int)s : -1;
        }
}

static int on_vf_reply(struct nl_msg *msg, void *userdata)
{
        struct vf_query *q = userdata;
        struct nlattr *tb[IFLA_MAX + 1];
        if (nlmsg_hdr(msg)->nlmsg_type != RTM_NEWLINK ||
            nlmsg_parse(nlmsg_hdr(msg), sizeof(struct ifinfomsg), tb, IFLA_MAX, NULL) < 0)
                return -EBADMSG;
        if (!tb[IFLA_VFINFO_LIST])
                return 0;
        struct nlattr *a;
        int rem;
        nla_for_each_nested(a, tb[IFLA_VFINFO_LIST], rem)
        {
                struct nlattr *vtb[IFLA_VF_MAX + 1];
                if (nla_type(a) == IFLA_VF_INFO && nla_parse_nested(vtb, IFLA_VF_MAX, a, NULL) == 0)
                        parse_one_vf(vtb, q);
        }
        return 0;
}

int host_vf_get_state(const char *pf_ifname, int vf_index, struct host_vf_state *ret)
{
        if (!pf_ifname || !ifname_is_valid(pf_ifname) || vf_index < 0)
                return -EINVAL;
        _cleanup_(host_nlmsg_freep) struct nl_msg *m = link_msg(RTM_GETLINK, 0, 0, 0);
        if (!m || nla_put_string(m, IFLA_IFNAME, pf_ifname) < 0 ||
            nla_put_u32(m, IFLA_EXT_MASK, RTEXT_FILTER_VF | RTEXT_FILTER_SKIP_STATS) < 0)
                return -ENOMEM;
        _cleanup_(host_nl_socket_freep) struct nl_sock *sk = NULL;
        /* the reply carries every VF of the PF: up to ~40 KiB for 256 VFs */
        int r = host_netlink_open(NETLINK_ROUTE, 1024 * 1024, &sk);
        if (r < 0)
                return r;
        struct vf_query q = { .vf = vf_index, .st = ret };
        r = host_netlink_transact(sk, m, on_vf_reply, &q, NULL, 0);
        if (r < 0)
                return r;
        return q.found ? 0 : -ENOENT;
}

static int set_vf_nested(const char *pf_ifname, int type, const void *data, size_t len, bool list)
{
        unsigned idx = if_nametoindex(pf_ifname);
        if (idx == 0)
                return -ENODEV;
        _cleanup_(host_nlmsg_freep) struct nl_msg *m = link_msg(RTM_SETLINK, (int)idx, 0, 0);
        struct nlattr *vfl = m ? nla_nest_start(m, IFLA_VFINFO_LIST) : NULL;
        struct nlattr *info = vfl ? nla_nest_start(m, IFLA_VF_INFO) : NULL;
        struct nlattr *inner = info && list ? nla_nest_start(m, IFLA_VF_VLAN_LIST) : NULL;
        if (!info || (list && !inner) || nla_put(m, type, (int)len, data) < 0)
                return -ENOMEM;
        if (inner)
                nla_nest_end(m, inner);
        nla_nest_end(m, info);
        nla_nest_end(m, vfl);
        return transact(m, NULL, NULL);
}

int host_vf_set_vlan_proto(const char *pf_ifname, int vf_index, int vlan, int qos, uint16_t proto)
{
        if (vf_index < 0 || vlan < 0 || vlan > 4095 || qos < 0 || qos > 7)
                return -EINVAL;
        struct ifla_vf_vlan_info vi = {
                .vf = (uint32_t)vf_index,
                .vlan = (uint32_t)vlan,
                .qos = (uint32_t)qos,
                .vlan_proto = htons(proto ? proto : ETH_P_8021Q),
        };
        return set_vf_nested(pf_ifname, IFLA_VF_VLAN_INFO, &vi, sizeof(vi), true);
}

int host_vf_set_rate(const char *pf_ifname, int vf_index, uint32_t min_tx, uint32_t max_tx)
{
        if (vf_index < 0)
                return -EINVAL;
        struct ifla_vf_rate rt = {
                .vf = (uint32_t)vf_index,
                .min_tx_rate = min_tx,
                .max_tx_rate = max_tx,
        };
        return set_vf_nested(pf_ifname, IFLA_VF_RATE, &rt, sizeof(rt), false);
}

int host_vf_set_mac(const char *pf_ifname, int vf_index, const uint8_t mac[6])
{
        if (vf_index < 0)
                return -EINVAL;
        struct ifla_vf_mac v = { .vf = (uint32_t)vf_index };
        memcpy(v.mac, mac, 6);
        int r = 0;
        for (int i = 0; i < MAC_TRIES; i++) {
                if (i > 0)
                        nanosleep(&(struct timespec){ .tv_nsec = MAC_INTERVAL_NS }, NULL);
                r = set_vf_nested(pf_ifname, IFLA_VF_MAC, &v, sizeof(v), false);
                if (r < 0 && !mac_error_transient(r))
                        return r;
                struct host_vf_state st;
                if (r == 0 && (r = host_vf_get_state(pf_ifname, vf_index, &st)) < 0)
                        return r;
                if (r == 0 && memcmp(st.mac, mac, 6) == 0)
                        return 0;
        }
        return r < 0 ? r : -ETIMEDOUT;
}

int host_vf_set_spoofchk(const char *pf_ifname, int vf_index, bool on)
{
        struct ifla_vf_spoofchk v = { .vf = (uint32_t)vf_index, .setting = on };
        return vf_index < 0 ? -EINVAL
                            : set_vf_nested(pf_ifname, IFLA_VF_SPOOFCHK, &v, sizeof(v), false);
}

int host_vf_set_trust(const char *pf_ifname, int vf_index, bool on)
{
        struct ifla_vf_trust v = { .vf = (uint32_t)vf_index, .setting = on };
        return vf_index < 0 ? -EINVAL
                            : set_vf_nested(pf_ifname, IFLA_VF_TRUST, &v, sizeof(v), false);
}

int host_vf_set_link_state(const char *pf_ifname, int vf_index, int state)
{
        if (vf_index < 0 || state < 0 || state > IFLA_VF_LINK_STATE_DISABLE)
                return -EINVAL;
        struct ifla_vf_link_state v = { .vf = (uint32_t)vf_index, .link_state = (uint32_t)state };
        return set_vf_nested(pf_ifname, IFLA_VF_LINK_STATE, &v, sizeof(v), false);
}

int host_send_gratuitous_arp(int ifindex, const uint8_t mac[6], const void *ipv4)
{
        _cleanup_close_ int fd = socket(AF_PACKET, SOCK_DGRAM | SOCK_CLOEXEC, htons(ETH_P_ARP));
        if (fd < 0)
                return negative_errno();
        struct __attribute__((packed)) {
                struct arphdr h;
                uint8_t sha[6], spa[4], tha[6], tpa[4];
        } arp = {
                .h = { .ar_hrd = htons(ARPHRD_ETHER),
                       .ar_pro = htons(ETH_P_IP),
                       .ar_hln = 6,
                       .ar_pln = 4,
                       .ar_op = htons(ARPOP_REQUEST) },
        };
        memcpy(arp.sha, mac, 6);
        memcpy(arp.spa, ipv4, 4);
        memcpy(arp.tpa, ipv4, 4);
        struct sockaddr_ll to = {
                .sll_family = AF_PACKET,
                .sll_protocol = htons(ETH_P_ARP),
                .sll_ifindex = ifindex,
                .sll_halen = 6,
                .sll_addr = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff },
        };
        if (sendto(fd, &arp, sizeof(arp), 0, (struct sockaddr *)&to, sizeof(to)) < 0)
                return negative_errno();
        return 0;
}

int host_send_unsolicited_na(int ifindex, const uint8_t mac[6], const void *ipv6)
{
        _cleanup_close_ int fd = socket(AF_INET6, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_ICMPV6);
        if (fd < 0)
                return negative_errno();
        int hops = 255;
        if (setsockopt(fd, IPPROTO_IPV6, IPV6_MULTICAST_HOPS, &hops, sizeof(hops)) < 0 ||
            setsockopt(fd, IPPROTO_IPV6, IPV6_MULTICAST_IF, &ifindex, sizeof(ifindex)) < 0)
                return negative_errno();
        struct __attribute__((packed)) {
                struct nd_neighbor_advert na;
                uint8_t opt_type, opt_len, lladdr[6];
        } pkt = {
                .na = { .nd_na_type = ND_NEIGHBOR_ADVERT,
                        .nd_na_flags_reserved = ND_NA_FLAG_OVERRIDE },
                .opt_type = ND_OPT_TARGET_LINKADDR,
                .opt_len = 1,
        };
        memcpy(&pkt.na.nd_na_target, ipv6, 16);
        memcpy(pkt.lladdr, mac, 6);
        struct sockaddr_in6 to = { .sin6_family = AF_INET6, .sin6_scope_id = (uint32_t)ifindex };
        inet_pton(AF_INET6, "ff02::1", &to.sin6_addr);
        if (sendto(fd, &pkt, sizeof(pkt), 0, (struct sockaddr *)&to, sizeof(to)) < 0)
                return negative_errno();
        return 0;
}
