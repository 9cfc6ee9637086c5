/* SPDX-License-Identifier: Apache-2.0 */
/* host_link_set_mac() checks that the MAC took, with bounded retries, as upstream sriov-cni's
 * SetVFEffectiveMAC (pkg/utils; its utils_test "SetVFEffectiveMAC ... assuming calling function
 * fails" retries until the read-back matches). On a veth in a private network namespace (needs
 * root; skipped otherwise).
 *
 * i40e/iavf apply a VF's MAC asynchronously: the request succeeds and the address changes later,
 * or not at all. No link type here does that, so a "driver" thread stands in: it watches the
 * link's notifications and puts the old MAC back the first times the new one appears. It runs
 * SCHED_FIFO on the same CPU as the caller, so it always acts between the caller's request and
 * its read-back, which makes the case deterministic. */
#include <errno.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "host/netlink-netns.h"
#include "veth-fixture.h"

static bool have_netns;

struct driver {
        int ifindex;
        uint8_t old_mac[6], new_mac[6];
        int reverts_left;
        int reverted;
        int notify_fd;
};

static void *driver_main(void *arg)
{
        struct driver *d = arg;
        char buf[8192];
        while (d->reverts_left > 0) {
                ssize_t n = recv(d->notify_fd, buf, sizeof(buf), 0);
                if (n <= 0)
                        break; /* SO_RCVTIMEO: nobody sets it again (without retries) */
                for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, (size_t)n);
                     h = NLMSG_NEXT(h, n)) {
                        if (h->nlmsg_type != RTM_NEWLINK)
                                continue;
                        const struct ifinfomsg *ifi = NLMSG_DATA(h);
                        if (ifi->ifi_index != d->ifindex)
                                continue;
                        int len = (int)IFLA_PAYLOAD(h);
                        for (struct rtattr *a = IFLA_RTA(ifi); RTA_OK(a, len);
                             a = RTA_NEXT(a, len)) {
                                if (a->rta_type == IFLA_ADDRESS && RTA_PAYLOAD(a) == 6 &&
                                    memcmp(RTA_DATA(a), d->new_mac, 6) == 0 &&
                                    d->reverts_left > 0) {
                                        d->reverts_left--;
                                        d->reverted++;
                                        /* the original call: the code under test retries */
                                        struct nl_sock *sk = rtnl();
                                        struct rtnl_link *chg = rtnl_link_alloc();
                                        struct nl_addr *mac = nl_addr_build(AF_LLC, d->old_mac, 6);
                                        rtnl_link_set_addr(chg, mac);
                                        struct rtnl_link *orig = rtnl_link_alloc();
                                        rtnl_link_set_ifindex(orig, d->ifindex);
                                        (void)rtnl_link_change(sk, orig, chg, 0);
                                        nl_addr_put(mac);
                                        rtnl_link_put(orig);
                                        rtnl_link_put(chg);
                                        nl_socket_free(sk);
                                }
                        }
                }
        }
        return NULL;
}

/* Both threads on one CPU, the driver above the caller: it runs as soon as it is woken. */
static bool pin_and_prioritize(pthread_attr_t *attr)
{
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(sched_getcpu(), &one);
        if (sched_setaffinity(0, sizeof(one), &one) < 0)
                return false;
        struct sched_param sp = { .sched_priority = 10 };
        return pthread_attr_init(attr) == 0 &&
               pthread_attr_setaffinity_np(attr, sizeof(one), &one) == 0 &&
               pthread_attr_setinheritsched(attr, PTHREAD_EXPLICIT_SCHED) == 0 &&
               pthread_attr_setschedpolicy(attr, SCHED_FIFO) == 0 &&
               pthread_attr_setschedparam(attr, &sp) == 0;
}

static void test_mac_applied_late(void **state)
{
        if (!have_netns) {
                print_message("skipped: needs root to create a private network namespace\n");
                skip();
        }
        create_veth("late0", "late1");
        struct host_link l;
        assert_int_equal(host_link_get("late0", &l), 0);
        struct driver d = { .ifindex = l.ifindex, .reverts_left = 3 };
        memcpy(d.old_mac, l.mac, 6);
        memcpy(d.new_mac, (uint8_t[6]){ 0x02, 0, 0, 0, 0x0d, 0x01 }, 6);

        d.notify_fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
        assert_true(d.notify_fd >= 0);
        struct sockaddr_nl sa = { .nl_family = AF_NETLINK, .nl_groups = RTMGRP_LINK };
        assert_int_equal(bind(d.notify_fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
        struct timeval tv = { .tv_sec = 3 };
        assert_int_equal(setsockopt(d.notify_fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);

        pthread_attr_t attr;
        pthread_t driver = 0;
        if (!pin_and_prioritize(&attr) || pthread_create(&driver, &attr, driver_main, &d) != 0) {
                close(d.notify_fd);
                print_message("skipped: cannot run a SCHED_FIFO thread here\n");
                skip();
        }
        pthread_attr_destroy(&attr);

        const int r = host_link_set_mac(l.ifindex, d.new_mac);
        pthread_join(driver, NULL);
        close(d.notify_fd);

        assert_int_equal(r, 0);
        assert_int_equal(d.reverted, 3);
        /* the MAC asked for is the link's, after the driver dropped it three times */
        assert_int_equal(host_link_get("late0", &l), 0);
        assert_memory_equal(l.mac, d.new_mac, 6);
}

static void test_mac_refused_at_once(void **state)
{
        if (!have_netns) {
                print_message("skipped: needs root to create a private network namespace\n");
                skip();
        }
        create_veth("late2", "late3");
        struct host_link l;
        assert_int_equal(host_link_get("late2", &l), 0);
        /* a multicast address is refused (EADDRNOTAVAIL): final, not retried for 2 s */
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        assert_int_equal(host_link_set_mac(l.ifindex, (uint8_t[6]){ 0x01, 0, 0x5e, 0, 0, 1 }),
                         -EADDRNOTAVAIL);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        /* retried, it would sleep 19 × 100 ms: half of that tells the two apart with room for
         * a slow machine (the whole elapsed time, not only the seconds fields, which differ
         * by one for a call that spans a second boundary) */
        const double spent =
            (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
        if (spent >= 1.0)
                fail_msg("refused after %.2f s: retried", spent);
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
                cmocka_unit_test(test_mac_applied_late),
                cmocka_unit_test(test_mac_refused_at_once),
        };
        return cmocka_run_group_tests(tests, setup, NULL);
}
