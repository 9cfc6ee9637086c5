/* SPDX-License-Identifier: Apache-2.0 */
/* An IPAM result put on a link, in the calling thread's network namespace, as the CNI
 * reference plugins' ipam.ConfigureIface does it (containernetworking/plugins pkg/ipam):
 *   - before the first IPv6 address, IPv6 is enabled (disable_ipv6=0) on lo and the link and
 *     keep_addr_on_down=1 is set on the link, so addresses go on in a namespace created with
 *     IPv6 disabled and stay when the pod takes the link down;
 *   - the addresses, then the link up;
 *   - with an IPv6 address: duplicate-address detection settled (optimistic addresses count as
 *     usable), bounded by 5 s, and an error when an address failed DAD;
 *   - the routes, through the first gateway of their family when they have none, with their
 *     priority, table and scope, created without NLM_F_EXCL so two routes to one destination
 *     (ECMP) both go in, as netlink's RouteAddEcmp. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct host_ip_addr {
        int family; /* AF_INET / AF_INET6 */
        uint8_t addr[16];
        int prefix;
        bool has_gw;
        uint8_t gw[16];
};

struct host_ip_route {
        int family;
        uint8_t dst[16];
        int dst_len;
        bool has_gw;
        uint8_t gw[16];
        uint32_t priority; /* 0 = none */
        bool has_table, has_scope;
        uint32_t table; /* 0 = main */
        uint8_t scope;  /* RT_SCOPE_*; without one: link for a route without gateway */
};

/* Which step of host_iface_configure_ip() failed, for the caller's message. */
struct host_ip_failure {
        const char *step; /* "enable IPv6", "add address", "settle addresses", "add route"... */
        size_t index;     /* of the address or route concerned */
};

/* DAD settling bound, as ipam.ConfigureIface's dadSettleTimeout. */
#define HOST_DAD_SETTLE_MS 5000

/* 0 or a negative errno with *why filled: -EADDRINUSE when an address failed DAD, -ETIMEDOUT
 * when one is still tentative after settle_ms while the link is operationally up. */
int host_iface_configure_ip(const char *ifname, const struct host_ip_addr *ips, size_t n_ips,
                            const struct host_ip_route *routes, size_t n_routes, int settle_ms,
                            struct host_ip_failure *why);

/* Writes value into /proc/sys/net/ipv6/conf/IFNAME/KEY of the calling thread's namespace
 * (optimistic_dad, ndisc_notify...). */
int host_ipv6_conf_set(const char *ifname, const char *key, const char *value);
