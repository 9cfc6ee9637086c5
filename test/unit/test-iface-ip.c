/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for lib/host/iface-ip (an IPAM result put on the pod's interface), on a veth
 * pair in a private network namespace (needs root; skipped otherwise). The cases follow the
 * reference plugins' pkg/ipam ipam_linux_test.go (ConfigureIface): "configures a link with
 * addresses and routes" (a route with a table, one with scope 200), "configures multiple routes
 * with the same destination (ECMP)", "keeps IPV6 addresses after the interface is brought
 * down", and its IPv6 enabling on lo and the link; plus DAD as ip.SettleAddresses sees it.
 * Checked with /proc and `ip`, independent of the code under test. */
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
        char path[128];
        int v = -1;
        snprintf(path, sizeof(path), "/proc/sys/net/ipv6/conf/%s/%s", ifname, key);
        FILE *f = fopen(path, "r");
        assert_non_null(f);
        assert_int_equal(fscanf(f, "%d", &v), 1);
        fclose(f);
        return v;
}

/* The flags of ifname's IPv6 address (hex form of /proc/net/if_inet6), -1 when absent. */
static int inet6_flags(const char *ifname, const char *addr)
{
        uint8_t want[16];
        assert_int_equal(inet_pton(AF_INET6, addr, want), 1);
        char hex[33];
        for (int i = 0; i < 16; i++)
                snprintf(hex + 2 * i, 3, "%02x", want[i]);
        FILE *f = fopen("/proc/net/if_inet6", "r");
        assert_non_null(f);
        char a[64], dev[IFNAMSIZ + 1];
        unsigned idx, plen, scope, flags;
        int found = -1;
        while (fscanf(f, "%63s %x %x %x %x %16s", a, &idx, &plen, &scope, &flags, dev) == 6)
                if (strcmp(a, hex) == 0 && strcmp(dev, ifname) == 0)
                        found = (int)flags;
        fclose(f);
        return found;
}

/* `ip ARGS` output (the test's own view of routes), malloc'ed. */
static char *ip_output(const char *args)
{
        char cmd[256];
        snprintf(cmd, sizeof(cmd), "ip %s 2>&1", args);
        FILE *p = popen(cmd, "r");
        assert_non_null(p);
        char *out = calloc(1, 16384);
        assert_non_null(out);
        size_t n = fread(out, 1, 16383, p);
        out[n] = '\0';
        pclose(p);
        return out;
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

        char *t = ip_output("-4 route show table 5000 dev pod2");
        if (!strstr(t, "15.5.6.0/24 via 10.2.0.1") || !strstr(t, "metric 20"))
                fail_msg("table 5000: %s", t);
        free(t);
        t = ip_output("-4 route show table main dev pod2");
        if (!strstr(t, "1.2.3.4") || !(strstr(t, "scope site") || strstr(t, "scope 200")))
                fail_msg("scope 200 route: %s", t);
        if (!strstr(t, "172.16.0.0/16 via 10.2.0.1") || !strstr(t, "metric 7"))
                fail_msg("route through the address's gateway: %s", t);
        free(t);
        t = ip_output("-4 route show table main 192.168.7.0/24");
        if (!strstr(t, "10.2.0.1") || !strstr(t, "10.2.0.3"))
                fail_msg("both next hops of 192.168.7.0/24: %s", t);
        free(t);
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
