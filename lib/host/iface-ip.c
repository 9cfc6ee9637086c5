/* SPDX-License-Identifier: Apache-2.0 */
#include "host/iface-ip.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/if_addr.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include <netlink/msg.h>

#include "host/netlink-netns.h"
#include "host/netlink-request.h"
#include "host/sysfs-at.h"
#include "util/fileio.h"
#include "util/macro.h"
#include "util/names.h"

#define SETTLE_INTERVAL_MS 20

int host_ipv6_conf_set(const char *ifname, const char *key, const char *value)
{
        char path[128];
        if (!ifname_is_valid(ifname) && strcmp(ifname, "lo") != 0)
                return -EINVAL;
        snprintf(path, sizeof(path), "/proc/sys/net/ipv6/conf/%s/%s", ifname, key);
        return host_sysfs_write_at(AT_FDCWD, path, value);
}

/* As ConfigureIface: IPv6 on for lo and the link (a value that cannot be read is left alone),
 * then keep_addr_on_down for the link. */
static int enable_ipv6(const char *ifname)
{
        const char *const links[] = { "lo", ifname };
        for (size_t i = 0; i < ELEMENTSOF(links); i++) {
                char path[128], value[16];
                snprintf(path, sizeof(path), "/proc/sys/net/ipv6/conf/%s/disable_ipv6", links[i]);
                if (read_line_file(path, value, sizeof(value)) < 0 || strcmp(value, "0") == 0)
                        continue;
                int r = host_ipv6_conf_set(links[i], "disable_ipv6", "0");
                if (r < 0)
                        return r;
        }
        return host_ipv6_conf_set(ifname, "keep_addr_on_down", "1");
}

struct settle_state {
        int ifindex;
        bool tentative, dad_failed;
};

static int on_addr(struct nl_msg *msg, void *userdata)
{
        struct settle_state *s = userdata;
        struct nlmsghdr *h = nlmsg_hdr(msg);
        struct nlattr *tb[IFA_MAX + 1];
        if (h->nlmsg_type != RTM_NEWADDR ||
            nlmsg_parse(h, sizeof(struct ifaddrmsg), tb, IFA_MAX, NULL) < 0)
                return 0;
        const struct ifaddrmsg *ifa = nlmsg_data(h);
        if ((int)ifa->ifa_index != s->ifindex || ifa->ifa_family != AF_INET6)
                return 0;
        /* IFA_FLAGS, when there, holds all 32 bits; ifa_flags only the low 8 */
        uint32_t flags = tb[IFA_FLAGS] ? nla_get_u32(tb[IFA_FLAGS]) : ifa->ifa_flags;
        if (flags & IFA_F_DADFAILED)
                s->dad_failed = true;
        /* an optimistic address is usable while DAD runs (RFC 4429) */
        if ((flags & IFA_F_TENTATIVE) && !(flags & IFA_F_OPTIMISTIC))
                s->tentative = true;
        return 0;
}

static int addr_state(int ifindex, struct settle_state *s)
{
        _cleanup_(host_nl_socket_freep) struct nl_sock *sk = NULL;
        int r = host_netlink_open(NETLINK_ROUTE, 64 * 1024, &sk);
        if (r < 0)
                return r;
        _cleanup_(host_nlmsg_freep) struct nl_msg *m =
            nlmsg_alloc_simple(RTM_GETADDR, NLM_F_REQUEST | NLM_F_DUMP);
        struct ifaddrmsg ifa = { .ifa_family = AF_INET6, .ifa_index = (uint32_t)ifindex };
        if (!m || nlmsg_append(m, &ifa, sizeof(ifa), NLMSG_ALIGNTO) < 0)
                return -ENOMEM;
        *s = (struct settle_state){ .ifindex = ifindex };
        return host_netlink_transact(sk, m, on_addr, s, NULL, 0);
}

/* As plugins' ip.SettleAddresses: wait while an IPv6 address is tentative; a DAD failure is
 * an error; at the deadline, an error only when the link is operationally up (without carrier
 * DAD has not started, and will run when the carrier comes). */
static int settle(const char *ifname, int ifindex, int timeout_ms)
{
        for (int waited = 0;; waited += SETTLE_INTERVAL_MS) {
                struct settle_state s;
                int r = addr_state(ifindex, &s);
                if (r < 0)
                        return r;
                if (s.dad_failed)
                        return -EADDRINUSE;
                if (!s.tentative)
                        return 0;
                if (waited >= timeout_ms) {
                        struct host_link l;
                        r = host_link_get(ifname, &l);
                        if (r < 0)
                                return r;
                        return (l.flags & IFF_RUNNING) ? -ETIMEDOUT : 0;
                }
                nanosleep(&(struct timespec){ .tv_nsec = SETTLE_INTERVAL_MS * 1000000L }, NULL);
        }
}

static int route_add(int ifindex, const struct host_ip_route *rt, const uint8_t *gw)
{
        const int len = rt->family == AF_INET ? 4 : rt->family == AF_INET6 ? 16 : -1;
        if (len < 0 || rt->dst_len < 0 || rt->dst_len > len * 8)
                return -EINVAL;
        /* NLM_F_CREATE without NLM_F_EXCL: a second route to the same destination is added
         * beside the first (an ECMP next hop), as netlink.RouteAddEcmp */
        _cleanup_(host_nlmsg_freep) struct nl_msg *m =
            nlmsg_alloc_simple(RTM_NEWROUTE, NLM_F_REQUEST | NLM_F_CREATE);
        const uint32_t table = rt->has_table && rt->table ? rt->table : RT_TABLE_MAIN;
        struct rtmsg rtm = {
                .rtm_family = (uint8_t)rt->family,
                .rtm_dst_len = (uint8_t)rt->dst_len,
                .rtm_table = table < 256 ? (uint8_t)table : RT_TABLE_UNSPEC,
                .rtm_protocol = RTPROT_BOOT,
                .rtm_scope = rt->has_scope ? rt->scope
                             : gw          ? RT_SCOPE_UNIVERSE
                                           : RT_SCOPE_LINK,
                .rtm_type = RTN_UNICAST,
        };
        if (!m || nlmsg_append(m, &rtm, sizeof(rtm), NLMSG_ALIGNTO) < 0 ||
            (rt->dst_len > 0 && nla_put(m, RTA_DST, len, rt->dst) < 0) ||
            (gw && nla_put(m, RTA_GATEWAY, len, gw) < 0) ||
            nla_put_u32(m, RTA_OIF, (uint32_t)ifindex) < 0 ||
            (rt->priority && nla_put_u32(m, RTA_PRIORITY, rt->priority) < 0) ||
            (table >= 256 && nla_put_u32(m, RTA_TABLE, table) < 0))
                return -ENOMEM;
        _cleanup_(host_nl_socket_freep) struct nl_sock *sk = NULL;
        int r = host_netlink_open(NETLINK_ROUTE, 0, &sk);
        return r < 0 ? r : host_netlink_transact(sk, m, NULL, NULL, NULL, 0);
}

int host_iface_configure_ip(const char *ifname, const struct host_ip_addr *ips, size_t n_ips,
                            const struct host_ip_route *routes, size_t n_routes, int settle_ms,
                            struct host_ip_failure *why)
{
        struct host_link l;
        *why = (struct host_ip_failure){ .step = "find it" };
        int r = host_link_get(ifname, &l);
        if (r < 0)
                return r;
        const struct host_ip_addr *gw4 = NULL, *gw6 = NULL;
        bool ipv6 = false;
        for (size_t i = 0; i < n_ips; i++) {
                const struct host_ip_addr *ip = &ips[i];
                *why = (struct host_ip_failure){ .step = "enable IPv6 on it", .index = i };
                if (ip->family == AF_INET6 && !ipv6 && (r = enable_ipv6(ifname)) < 0)
                        return r;
                ipv6 |= ip->family == AF_INET6;
                why->step = "add address";
                if ((r = host_addr_add(l.ifindex, ip->family, ip->addr, ip->prefix)) < 0)
                        return r;
                if (ip->has_gw && ip->family == AF_INET && !gw4)
                        gw4 = ip;
                if (ip->has_gw && ip->family == AF_INET6 && !gw6)
                        gw6 = ip;
        }
        *why = (struct host_ip_failure){ .step = "bring it up" };
        if ((r = host_link_set_updown(l.ifindex, true)) < 0)
                return r;
        why->step = "settle its IPv6 addresses (duplicate address detection)";
        if (ipv6 && (r = settle(ifname, l.ifindex, settle_ms)) < 0)
                return r;
        for (size_t i = 0; i < n_routes; i++) {
                const struct host_ip_route *rt = &routes[i];
                const struct host_ip_addr *dgw = rt->family == AF_INET ? gw4 : gw6;
                const uint8_t *gw = rt->has_gw ? rt->gw : dgw ? dgw->gw : NULL;
                *why = (struct host_ip_failure){ .step = "add route", .index = i };
                if ((r = route_add(l.ifindex, rt, gw)) < 0)
                        return r;
        }
        return 0;
}
