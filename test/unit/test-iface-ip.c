/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for lib/host/iface-ip (an IPAM result put on the pod's interface), on a veth
 * pair in a private network namespace (needs root; skipped otherwise). The cases follow the
 * reference plugins' pkg/ipam ipam_linux_test.go (ConfigureIface): "configures a link with
 * addresses and routes" (a route with a table, one with scope 200), "configures multiple routes
 * with the same destination (ECMP)", "keeps IPV6 addresses after the interface is brought
 * down", and its IPv6 enabling on lo and the link; plus DAD as ip.SettleAddresses sees it.
 * Checked with /proc and libnl's route cache, independent of the code under test. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "host/iface-ip.h"
#include "host/netlink-netns.h"
#include "veth-fixture.h"

#include <netlink/route/route.h>

static bool have_netns;

static void require_netns(void)
{
        if (!have_netns) {
                print_message("skipped: needs root to create a private network namespace\n");
                skip();
        }
}

static void sysctl_write(const char *ifname, const char *key, const char *value)
{
        char path[128];
        snprintf(path, sizeof(path), "/proc/sys/net/ipv6/conf/%s/%s", ifname, key);
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fputs(value, f);
        assert_int_equal(fclose(f), 0);
}

static int sysctl_read(const char *ifname, const char *key)
{
        char path[128], line[32] = "";
        snprintf(path, sizeof(path), "/proc/sys/net/ipv6/conf/%s/%s", ifname, key);
        FILE *f = fopen(path, "r");
        assert_non_null(f);
        assert_non_null(fgets(line, sizeof(line), f));
        fclose(f);
        return (int)strtol(line, NULL, 10);
}

/* The flags of ifname's IPv6 address (hex form of /proc/net/if_inet6), -1 when absent. Its
 * lines: address, ifindex, prefix length, scope, flags (all hex), name. */
static int inet6_flags(const char *ifname, const char *addr)
{
        uint8_t want[16];
        assert_int_equal(inet_pton(AF_INET6, addr, want), 1);
        char hex[33];
        for (int i = 0; i < 16; i++)
                snprintf(hex + 2 * i, 3, "%02x", want[i]);
        FILE *f = fopen("/proc/net/if_inet6", "r");
        assert_non_null(f);
        char line[256];
        int found = -1;
        while (fgets(line, sizeof(line), f)) {
                char *save = NULL, *field[6];
                int n = 0;
                for (char *t = strtok_r(line, " \t\n", &save); t && n < 6;
                     t = strtok_r(NULL, " \t\n", &save))
                        field[n++] = t;
                if (n == 6 && strcmp(field[0], hex) == 0 && strcmp(field[5], ifname) == 0)
                        found = (int)strtoul(field[4], NULL, 16);
        }
        fclose(f);
        return found;
}

/* What the kernel holds for an IPv4 route to dst (any table): read with libnl's route cache,
 * independent of the code under test. */
struct route_seen {
        bool found;
        uint32_t table, priority;
        int scope;
        int n_gw;
        char gw[4][INET_ADDRSTRLEN];
};

struct route_dump {
        struct nl_addr *want;
        struct route_seen seen;
};

/* Each route of the dump on its own: libnl's route cache would merge two routes that differ
 * only in their gateway (the kernel keeps IPv4 ones apart). */
static int on_route(struct nl_msg *msg, void *arg)
{
        struct route_dump *d = arg;
        struct rtnl_route *r = NULL;
        if (rtnl_route_parse(nlmsg_hdr(msg), &r) < 0)
                return NL_SKIP;
        struct nl_addr *dst = rtnl_route_get_dst(r);
        if (dst && nl_addr_cmp(dst, d->want) == 0 &&
            nl_addr_get_prefixlen(dst) == nl_addr_get_prefixlen(d->want)) {
                struct route_seen *s = &d->seen;
                s->found = true;
                s->table = rtnl_route_get_table(r);
                s->priority = rtnl_route_get_priority(r);
                s->scope = rtnl_route_get_scope(r);
                for (int i = 0; i < rtnl_route_get_nnexthops(r) && s->n_gw < 4; i++) {
                        struct nl_addr *gw = rtnl_route_nh_get_gateway(rtnl_route_nexthop_n(r, i));
                        if (gw)
                                nl_addr2str(gw, s->gw[s->n_gw++], INET_ADDRSTRLEN);
                }
        }
        rtnl_route_put(r);
        return NL_OK;
}

static struct route_seen route_lookup(const char *dst)
{
        struct route_dump d = { .seen = { .scope = -1 } };
        assert_int_equal(nl_addr_parse(dst, AF_INET, &d.want), 0);
        struct nl_sock *sk = rtnl();
        struct rtmsg rtm = { .rtm_family = AF_INET };
        assert_int_equal(nl_socket_modify_cb(sk, NL_CB_VALID, NL_CB_CUSTOM, on_route, &d), 0);
        assert_true(nl_send_simple(sk, RTM_GETROUTE, NLM_F_DUMP, &rtm, sizeof(rtm)) >= 0);
        assert_int_equal(nl_recvmsgs_default(sk), 0);
        nl_addr_put(d.want);
        nl_socket_free(sk);
        return d.seen;
}

static bool route_has_gw(const struct route_seen *r, const char *gw)
{
        for (int i = 0; i < r->n_gw; i++)
                if (strcmp(r->gw[i], gw) == 0)
                        return true;
        return false;
}

static void link_up(const char *ifname)
{
        struct host_link l;
        assert_int_equal(host_link_get(ifname, &l), 0);
        assert_int_equal(host_link_set_updown(l.ifindex, true), 0);
}

static struct host_ip_addr addr(const char *text, int prefix, const char *gw)
{
        struct host_ip_addr a = { .prefix = prefix, .has_gw = gw != NULL };
        a.family = strchr(text, ':') ? AF_INET6 : AF_INET;
        assert_int_equal(inet_pton(a.family, text, a.addr), 1);
        if (gw)
                assert_int_equal(inet_pton(a.family, gw, a.gw), 1);
        return a;
}

static struct host_ip_route route(const char *dst, int len, const char *gw)
{
        struct host_ip_route r = { .dst_len = len, .has_gw = gw != NULL };
        r.family = strchr(dst, ':') ? AF_INET6 : AF_INET;
        assert_int_equal(inet_pton(r.family, dst, r.dst), 1);
        if (gw)
                assert_int_equal(inet_pton(r.family, gw, r.gw), 1);
        return r;
}

/* A namespace created with IPv6 off on lo and the link still gets its IPv6 address, kept when
 * the link goes down; and the address is usable (not tentative) when the call returns. */
static void test_ipv6_enabled_kept_and_settled(void **state)
{
        require_netns();
        create_veth("pod0", "peer0");
        link_up("peer0");
        sysctl_write("lo", "disable_ipv6", "1");
        sysctl_write("pod0", "disable_ipv6", "1");
        const struct host_ip_addr ips[] = { addr("10.1.0.2", 24, "10.1.0.1"),
                                            addr("fd00:1::2", 64, "fd00:1::1") };
        struct host_ip_failure why;
        int r = host_iface_configure_ip("pod0", ips, 2, NULL, 0, HOST_DAD_SETTLE_MS, &why);
        if (r < 0)
                fail_msg("cannot %s: %s", why.step, strerror(-r));
        assert_int_equal(sysctl_read("pod0", "disable_ipv6"), 0);
        assert_int_equal(sysctl_read("lo", "disable_ipv6"), 0);
        assert_int_equal(sysctl_read("pod0", "keep_addr_on_down"), 1);
        int flags = inet6_flags("pod0", "fd00:1::2");
        assert_true(flags >= 0);
        /* settled: neither tentative nor failed (optimistic would be usable too) */
        if ((flags & 0x40 /* IFA_F_TENTATIVE */) && !(flags & 0x04 /* IFA_F_OPTIMISTIC */))
                fail_msg("fd00:1::2 is still tentative (flags %#x) after the call", flags);
        assert_false(flags & 0x08 /* IFA_F_DADFAILED */);

        struct host_link l;
        assert_int_equal(host_link_get("pod0", &l), 0);
        assert_int_equal(host_link_set_updown(l.ifindex, false), 0);
        assert_true(inet6_flags("pod0", "fd00:1::2") >= 0);
}

/* An address a neighbour already has fails DAD: the call fails instead of leaving the pod
 * an address that never works. */
static void test_dad_failure_is_an_error(void **state)
{
        require_netns();
        create_veth("pod1", "peer1");
        link_up("peer1");
        struct host_link peer;
        assert_int_equal(host_link_get("peer1", &peer), 0);
        sysctl_write("peer1", "accept_dad", "0");
        uint8_t taken[16];
        assert_int_equal(inet_pton(AF_INET6, "fd00:2::2", taken), 1);
        assert_int_equal(host_addr_add(peer.ifindex, AF_INET6, taken, 64), 0);
        const struct host_ip_addr ips[] = { addr("fd00:2::2", 64, NULL) };
        struct host_ip_failure why;
        assert_int_equal(host_iface_configure_ip("pod1", ips, 1, NULL, 0, HOST_DAD_SETTLE_MS, &why),
                         -EADDRINUSE);
        assert_non_null(strstr(why.step, "duplicate address detection"));
}

/* Routes keep priority, table and scope; two routes to one destination both go in. */
static void test_routes_as_configure_iface(void **state)
{
        require_netns();
        create_veth("pod2", "peer2");
        link_up("peer2");
        const struct host_ip_addr ips[] = { addr("10.2.0.2", 24, "10.2.0.1") };
        struct host_ip_route routes[] = {
                route("15.5.6.0", 24, "10.2.0.1"),    route("1.2.3.4", 32, NULL),
                route("192.168.7.0", 24, "10.2.0.1"), route("192.168.7.0", 24, "10.2.0.3"),
                route("172.16.0.0", 16, NULL),
        };
        routes[0].has_table = true;
        routes[0].table = 5000;
        routes[0].priority = 20;
        routes[1].has_scope = true;
        routes[1].scope = 200;
        routes[4].priority = 7; /* no gateway: through the address's, 10.2.0.1 */
        struct host_ip_failure why;
        int r = host_iface_configure_ip("pod2", ips, 1, routes, 5, HOST_DAD_SETTLE_MS, &why);
        if (r < 0)
                fail_msg("cannot %s %zu: %s", why.step, why.index, strerror(-r));

        struct route_seen t = route_lookup("15.5.6.0/24");
        if (!t.found || t.table != 5000 || t.priority != 20 || !route_has_gw(&t, "10.2.0.1"))
                fail_msg("15.5.6.0/24: found %d table %u metric %u", t.found, t.table, t.priority);
        t = route_lookup("1.2.3.4/32");
        if (!t.found || t.scope != 200)
                fail_msg("1.2.3.4/32: found %d scope %d", t.found, t.scope);
        t = route_lookup("172.16.0.0/16");
        if (!t.found || t.priority != 7 || !route_has_gw(&t, "10.2.0.1"))
                fail_msg("172.16.0.0/16 through the address's gateway: found %d metric %u", t.found,
                         t.priority);
        /* ECMP: one route with two next hops, or two routes, as the kernel keeps them */
        t = route_lookup("192.168.7.0/24");
        if (!route_has_gw(&t, "10.2.0.1") || !route_has_gw(&t, "10.2.0.3"))
                fail_msg("both next hops of 192.168.7.0/24: %d gateway(s) seen", t.n_gw);
}

static int setup(void **state)
{
        if (geteuid() != 0 || unshare(CLONE_NEWNET) < 0) {
                fprintf(stderr, "note: not root or unshare failed (%m): tests skipped\n");
                return 0;
        }
        have_netns = true;
        return 0;
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_ipv6_enabled_kept_and_settled),
                cmocka_unit_test(test_dad_failure_is_an_error),
                cmocka_unit_test(test_routes_as_configure_iface),
        };
        return cmocka_run_group_tests(tests, setup, NULL);
}
