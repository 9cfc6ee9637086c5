/* Shared by the kernel-facing lib/host tests (netlink-link, netlink-netns, link-monitor): a
 * veth pair made with libnl directly, independent of the code under test, in the test's
 * private network namespace. Header-only like kube-fake.h; include it after <cmocka.h>. */
#pragma once

#include <linux/netlink.h>
#include <unistd.h>

#include <netlink/route/link.h>
#include <netlink/route/link/veth.h>
#include <netlink/socket.h>

static struct nl_sock *rtnl(void)
{
        struct nl_sock *sk = nl_socket_alloc();
        assert_non_null(sk);
        assert_int_equal(nl_connect(sk, NETLINK_ROUTE), 0);
        return sk;
}

/* Skips the test when the kernel cannot make one (no veth module). */
static void create_veth(const char *a, const char *b)
{
        struct nl_sock *sk = rtnl();
        int r = rtnl_link_veth_add(sk, a, b, getpid());
        nl_socket_free(sk);
        if (r < 0) {
                print_message("skipped: cannot create a veth pair (%d)\n", r);
                skip();
        }
}
