/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for lib/host/netlink-link.
 *
 * Kernel-facing cases run in a private network namespace (the test process unshares its
 * network namespace, which needs root): MTU and admin state on lo and on a veth pair, checked
 * with ioctls independent of the code under test; VF attributes on a veth (which has no VFs)
 * come back "not supported" per attribute without failing the call. Without root these are
 * skipped with a message. Parsing of a 256-VF reply is checked on a built message. */
#include <errno.h>
#include <linux/if_link.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>
#include <netlink/attr.h>
#include <netlink/msg.h>
#include <netlink/route/link.h>
#include <netlink/route/link/veth.h>
#include <netlink/socket.h>

#include "host/netlink-link.h"
#include "util/log.h"
#include "veth-fixture.h"

static bool in_private_netns;

static void require_netns(void)
{
        if (!in_private_netns) {
                print_message("skipped: needs root to create a private network namespace\n");
                skip();
        }
}

static int if_mtu(const char *ifname)
{
        struct ifreq ifr = { 0 };
        int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        assert_true(fd >= 0);
        strncpy(ifr.ifr_name, ifname, IFNAMSIZ - 1);
        assert_int_equal(ioctl(fd, SIOCGIFMTU, &ifr), 0);
        close(fd);
        return ifr.ifr_mtu;
}

static bool if_is_up(const char *ifname)
{
        struct ifreq ifr = { 0 };
        int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        assert_true(fd >= 0);
        strncpy(ifr.ifr_name, ifname, IFNAMSIZ - 1);
        assert_int_equal(ioctl(fd, SIOCGIFFLAGS, &ifr), 0);
        close(fd);
        return ifr.ifr_flags & IFF_UP;
}

static void test_mtu_and_up_on_loopback(void **state)
{
        require_netns();
        assert_false(if_is_up("lo"));
        assert_int_equal(host_netlink_set_mtu("lo", 9000), 0);
        assert_int_equal(if_mtu("lo"), 9000);
        assert_int_equal(host_netlink_set_up("lo"), 0);
        assert_true(if_is_up("lo"));
        /* setting again is harmless */
        assert_int_equal(host_netlink_set_up("lo"), 0);
        assert_int_equal(host_netlink_set_mtu("lo", 65536), 0);
        assert_int_equal(if_mtu("lo"), 65536);
}

static void test_mtu_and_up_on_veth(void **state)
{
        require_netns();
        create_veth("sriovt0", "sriovt1");
        assert_int_equal(host_netlink_set_mtu("sriovt0", 1400), 0);
        assert_int_equal(if_mtu("sriovt0"), 1400);
        assert_int_equal(if_mtu("sriovt1"), 1500);
        assert_int_equal(host_netlink_set_up("sriovt0"), 0);
        assert_true(if_is_up("sriovt0"));
        assert_false(if_is_up("sriovt1"));
        /* below the Ethernet minimum: the kernel's EINVAL comes back unchanged */
        assert_int_equal(host_netlink_set_mtu("sriovt0", 20), -EINVAL);
        assert_int_equal(if_mtu("sriovt0"), 1400);
        assert_int_equal(host_netlink_set_mtu("sriovt0", 0), -EINVAL);
}

static void test_missing_and_hostile_names(void **state)
{
        const char *bad[] = {
                "", "../eth0", "a/b", "eth 0", "0123456789abcdef", ".", "..", "eth0\n"
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                assert_int_equal(host_netlink_set_mtu(bad[i], 1500), -EINVAL);
                assert_int_equal(host_netlink_set_up(bad[i]), -EINVAL);
                struct netlink_vf_info *vfs = NULL;
                size_t n = 0;
                assert_int_equal(host_netlink_get_vf_list(bad[i], &vfs, &n), -EINVAL);
        }
        assert_int_equal(host_netlink_set_mtu(NULL, 1500), -EINVAL);
        require_netns();
        assert_int_equal(host_netlink_set_mtu("nosuchif0", 1500), -ENODEV);
        assert_int_equal(host_netlink_set_up("nosuchif0"), -ENODEV);
}

static void test_vf_attributes_not_supported_each(void **state)
{
        require_netns();
        create_veth("sriovt2", "sriovt3");
        struct vf_settings s = VF_SETTINGS_INIT;
        s.set_mac = true;
        memcpy(s.mac, (uint8_t[]){ 0x02, 0, 0, 0, 0, 1 }, 6);
        s.trust = 1;
        s.link_state = VF_LINK_STATE_ENABLE;
        struct vf_set_result res;
        /* veth has no VFs: every attribute is answered on its own, none fails the call */
        assert_int_equal(host_netlink_set_vf("sriovt2", 0, &s, &res), 0);
        assert_true(res.attempted[VF_ATTR_MAC]);
        assert_true(res.attempted[VF_ATTR_TRUST]);
        assert_true(res.attempted[VF_ATTR_LINK_STATE]);
        assert_false(res.attempted[VF_ATTR_VLAN]);
        assert_false(res.attempted[VF_ATTR_SPOOFCHK]);
        assert_true(host_netlink_error_is_not_supported(res.error[VF_ATTR_MAC]));
        assert_true(host_netlink_error_is_not_supported(res.error[VF_ATTR_TRUST]));
        assert_true(host_netlink_error_is_not_supported(res.error[VF_ATTR_LINK_STATE]));

        struct netlink_vf_info *vfs = NULL;
        size_t n = 99;
        assert_int_equal(host_netlink_get_vf_list("sriovt2", &vfs, &n), 0);
        assert_int_equal(n, 0);
        free(vfs);
        /* a virtual device has no PCI parent: the kernel does not report a VF count */
        int num = 99;
        assert_int_equal(host_netlink_get_num_vfs("sriovt2", &num), -ENODATA);
        assert_int_equal(num, 99);
}

static void test_vf_settings_validated(void **state)
{
        struct vf_settings s = VF_SETTINGS_INIT;
        s.vlan = 4096;
        assert_int_equal(host_netlink_set_vf("lo", 0, &s, NULL), -EINVAL);
        s.vlan = 4095; /* reserved by 802.1Q */
        assert_int_equal(host_netlink_set_vf("lo", 0, &s, NULL), -EINVAL);
        s = VF_SETTINGS_INIT;
        assert_int_equal(host_netlink_set_vf("lo", -1, &s, NULL), -EINVAL);
        s.link_state = 7;
        assert_int_equal(host_netlink_set_vf("lo", 0, &s, NULL), -EINVAL);
        s = VF_SETTINGS_INIT;
        s.vlan = 10;
        s.qos = 8;
        assert_int_equal(host_netlink_set_vf("lo", 0, &s, NULL), -EINVAL);
}

static void test_string_tables(void **state)
{
        assert_int_equal(host_vf_link_state_from_string("auto"), VF_LINK_STATE_AUTO);
        assert_int_equal(host_vf_link_state_from_string("enable"), VF_LINK_STATE_ENABLE);
        assert_int_equal(host_vf_link_state_from_string("disable"), VF_LINK_STATE_DISABLE);
        assert_int_equal(host_vf_link_state_from_string("on"), -EINVAL);
        assert_int_equal(host_vf_link_state_from_string(NULL), -EINVAL);
        assert_string_equal(host_vf_link_state_to_string(2), "disable");
        assert_string_equal(host_vf_link_state_to_string(9), "unknown");
        assert_string_equal(host_vf_attr_to_string(VF_ATTR_LINK_STATE), "link-state");
        assert_string_equal(host_vf_attr_to_string(VF_ATTR_SPOOFCHK), "spoofchk");
}

/* A reply as a PF with 256 VFs sends it (without stats), VFs in reverse order. */
static void test_parse_256_vfs(void **state)
{
        struct nl_msg *m = nlmsg_alloc_size(1024 * 1024);
        assert_non_null(m);
        assert_non_null(nlmsg_put(m, 0, 0, RTM_NEWLINK, 0, 0));
        struct ifinfomsg ifi = { .ifi_family = AF_UNSPEC, .ifi_index = 5 };
        assert_int_equal(nlmsg_append(m, &ifi, sizeof(ifi), NLMSG_ALIGNTO), 0);
        assert_int_equal(nla_put_u32(m, IFLA_NUM_VF, 256), 0);
        struct nlattr *list = nla_nest_start(m, IFLA_VFINFO_LIST);
        for (int i = 255; i >= 0; i--) {
                struct nlattr *info = nla_nest_start(m, IFLA_VF_INFO);
                struct ifla_vf_mac mac = {
                        .vf = (uint32_t)i, .mac = { 0x02, 0, 0, 0, (uint8_t)(i >> 8), (uint8_t)i }
                };
                struct ifla_vf_vlan vlan = { .vf = (uint32_t)i,
                                             .vlan = (uint32_t)(i % 7),
                                             .qos = 0 };
                struct ifla_vf_trust trust = { .vf = (uint32_t)i, .setting = (uint32_t)(i & 1) };
                struct ifla_vf_spoofchk sc = { .vf = (uint32_t)i, .setting = (uint32_t)-1 };
                struct ifla_vf_link_state ls = { .vf = (uint32_t)i, .link_state = 2 };
                struct ifla_vf_tx_rate rate = { .vf = (uint32_t)i };
                assert_int_equal(nla_put(m, IFLA_VF_MAC, sizeof(mac), &mac), 0);
                assert_int_equal(nla_put(m, IFLA_VF_VLAN, sizeof(vlan), &vlan), 0);
                assert_int_equal(nla_put(m, IFLA_VF_TX_RATE, sizeof(rate), &rate), 0);
                assert_int_equal(nla_put(m, IFLA_VF_SPOOFCHK, sizeof(sc), &sc), 0);
                assert_int_equal(nla_put(m, IFLA_VF_LINK_STATE, sizeof(ls), &ls), 0);
                assert_int_equal(nla_put(m, IFLA_VF_TRUST, sizeof(trust), &trust), 0);
                nla_nest_end(m, info);
        }
        nla_nest_end(m, list);
        /* it must still fit a u16 attribute length, as the kernel's reply does */
        assert_true(nla_len(list) < 65535);

        struct netlink_vf_info *vfs = NULL;
        size_t n = 0;
        assert_int_equal(host_netlink_parse_vf_list(nlmsg_hdr(m), &vfs, &n), 0);
        assert_int_equal(n, 256);
        for (int i = 0; i < 256; i++) {
                char mac[18];
                snprintf(mac, sizeof(mac), "02:00:00:00:%02x:%02x", i >> 8, i & 0xff);
                assert_int_equal(vfs[i].vf, i);
                assert_string_equal(vfs[i].mac, mac);
                assert_int_equal(vfs[i].vlan, i % 7);
                assert_int_equal(vfs[i].trust, i & 1);
                assert_int_equal(vfs[i].spoofchk, -1);
                assert_int_equal(vfs[i].link_state, VF_LINK_STATE_DISABLE);
        }
        free(vfs);

        /* not a link message */
        nlmsg_hdr(m)->nlmsg_type = RTM_NEWADDR;
        assert_int_equal(host_netlink_parse_vf_list(nlmsg_hdr(m), &vfs, &n), -EBADMSG);
        nlmsg_free(m);
}

/* A reply with IFLA_VF_STATS as the kernel sends it to `ip -s link show PF` (what the metrics
 * endpoint reads): 128 VFs with counters past 2^32, one VF whose driver has none, and one from
 * a kernel before the dropped counters (4.x): those stay 0. */
static void test_parse_vf_stats(void **state)
{
        struct nl_msg *m = nlmsg_alloc_size(1024 * 1024);
        assert_non_null(m);
        assert_non_null(nlmsg_put(m, 0, 0, RTM_NEWLINK, 0, 0));
        struct ifinfomsg ifi = { .ifi_family = AF_UNSPEC, .ifi_index = 7 };
        assert_int_equal(nlmsg_append(m, &ifi, sizeof(ifi), NLMSG_ALIGNTO), 0);
        struct nlattr *list = nla_nest_start(m, IFLA_VFINFO_LIST);
        for (int i = 0; i < 128; i++) {
                struct nlattr *info = nla_nest_start(m, IFLA_VF_INFO);
                struct ifla_vf_mac mac = { .vf = (uint32_t)i, .mac = { 0x02, 0, 0, 0, 0, 1 } };
                assert_int_equal(nla_put(m, IFLA_VF_MAC, sizeof(mac), &mac), 0);
                if (i != 5) {
                        struct nlattr *st = nla_nest_start(m, IFLA_VF_STATS);
                        uint64_t base = (uint64_t)i << 33; /* past 32 bits */
                        assert_int_equal(nla_put_u64(m, IFLA_VF_STATS_RX_PACKETS, base + 1), 0);
                        assert_int_equal(nla_put_u64(m, IFLA_VF_STATS_TX_PACKETS, base + 2), 0);
                        assert_int_equal(nla_put_u64(m, IFLA_VF_STATS_RX_BYTES, base + 3), 0);
                        assert_int_equal(nla_put_u64(m, IFLA_VF_STATS_TX_BYTES, base + 4), 0);
                        assert_int_equal(nla_put_u64(m, IFLA_VF_STATS_BROADCAST, base + 5), 0);
                        assert_int_equal(nla_put_u64(m, IFLA_VF_STATS_MULTICAST, base + 6), 0);
                        if (i != 9) {
                                assert_int_equal(nla_put_u64(m, IFLA_VF_STATS_RX_DROPPED, base + 7),
                                                 0);
                                assert_int_equal(nla_put_u64(m, IFLA_VF_STATS_TX_DROPPED, base + 8),
                                                 0);
                        }
                        nla_nest_end(m, st);
                }
                nla_nest_end(m, info);
        }
        nla_nest_end(m, list);

        struct netlink_vf_info *vfs = NULL;
        size_t n = 0;
        assert_int_equal(host_netlink_parse_vf_list(nlmsg_hdr(m), &vfs, &n), 0);
        assert_int_equal(n, 128);
        for (int i = 0; i < 128; i++) {
                uint64_t base = (uint64_t)i << 33;
                assert_int_equal(vfs[i].vf, i);
                if (i == 5) {
                        assert_false(vfs[i].have_stats);
                        assert_true(vfs[i].rx_bytes == 0);
                        continue;
                }
                assert_true(vfs[i].have_stats);
                assert_true(vfs[i].rx_packets == base + 1);
                assert_true(vfs[i].tx_packets == base + 2);
                assert_true(vfs[i].rx_bytes == base + 3);
                assert_true(vfs[i].tx_bytes == base + 4);
                assert_true(vfs[i].broadcast == base + 5);
                assert_true(vfs[i].multicast == base + 6);
                assert_true(vfs[i].rx_dropped == (i == 9 ? 0 : base + 7));
                assert_true(vfs[i].tx_dropped == (i == 9 ? 0 : base + 8));
        }
        free(vfs);
        nlmsg_free(m);
}

/* Adds an alternative name the way `ip link property add dev IF altname NAME` does. */
static int add_alt_name(const char *ifname, const char *alt)
{
        struct nl_sock *sk = nl_socket_alloc();
        struct nl_msg *m = nlmsg_alloc_simple(RTM_NEWLINKPROP, NLM_F_REQUEST | NLM_F_ACK);
        struct ifinfomsg ifi = { .ifi_family = AF_UNSPEC,
                                 .ifi_index = (int)if_nametoindex(ifname) };
        int r;

        assert_non_null(sk);
        assert_non_null(m);
        assert_int_equal(nl_connect(sk, NETLINK_ROUTE), 0);
        assert_int_equal(nlmsg_append(m, &ifi, sizeof(ifi), NLMSG_ALIGNTO), 0);
        struct nlattr *list = nla_nest_start(m, IFLA_PROP_LIST);
        assert_int_equal(nla_put_string(m, IFLA_ALT_IFNAME, alt), 0);
        nla_nest_end(m, list);
        r = nl_send_auto(sk, m);
        if (r >= 0)
                r = nl_wait_for_ack(sk);
        nlmsg_free(m);
        nl_socket_free(sk);
        return r;
}

static void test_alt_names(void **state)
{
        char names[4][128];
        size_t n = 99;

        (void)state;
        require_netns();
        create_veth("sriovt4", "sriovt5");
        assert_int_equal(host_netlink_get_alt_names("sriovt4", names, 4, &n), 0);
        assert_int_equal(n, 0);
        if (add_alt_name("sriovt4", "enp59s0f0np0") < 0) {
                print_message("skipped: this kernel has no alternative interface names\n");
                skip();
        }
        assert_int_equal(add_alt_name("sriovt4", "uplink-with-a-name-longer-than-ifnamsiz"), 0);
        assert_int_equal(host_netlink_get_alt_names("sriovt4", names, 4, &n), 0);
        assert_int_equal(n, 2);
        assert_string_equal(names[0], "enp59s0f0np0");
        assert_string_equal(names[1], "uplink-with-a-name-longer-than-ifnamsiz");
        /* at most `max` are copied */
        assert_int_equal(host_netlink_get_alt_names("sriovt4", names, 1, &n), 0);
        assert_int_equal(n, 1);
        /* the peer has none */
        assert_int_equal(host_netlink_get_alt_names("sriovt5", names, 4, &n), 0);
        assert_int_equal(n, 0);
}

static void test_parse_alt_names(void **state)
{
        struct nl_msg *m = nlmsg_alloc_size(4096);
        struct ifinfomsg ifi = { .ifi_family = AF_UNSPEC, .ifi_index = 7 };
        char names[4][128];
        size_t n = 0;

        (void)state;
        assert_non_null(m);
        assert_non_null(nlmsg_put(m, 0, 0, RTM_NEWLINK, 0, 0));
        assert_int_equal(nlmsg_append(m, &ifi, sizeof(ifi), NLMSG_ALIGNTO), 0);
        struct nlattr *list = nla_nest_start(m, IFLA_PROP_LIST);
        assert_int_equal(nla_put_string(m, IFLA_ALT_IFNAME, "enp59s0f0np0"), 0);
        assert_int_equal(nla_put(m, IFLA_ALT_IFNAME, 3, "abc"), 0); /* not NUL-terminated */
        nla_nest_end(m, list);
        assert_int_equal(host_netlink_parse_alt_names(nlmsg_hdr(m), names, 4, &n), -EBADMSG);
        nlmsg_free(m);
}

static int setup(void **state)
{
        log_setup(LOG_TARGET_STDERR, LOG_INFO);
        if (geteuid() == 0 && unshare(CLONE_NEWNET) == 0)
                in_private_netns = true;
        else
                fprintf(stderr, "note: not root or unshare(CLONE_NEWNET) failed (%m): "
                                "kernel-facing netlink tests are skipped\n");
        return 0;
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_mtu_and_up_on_loopback),
                cmocka_unit_test(test_mtu_and_up_on_veth),
                cmocka_unit_test(test_missing_and_hostile_names),
                cmocka_unit_test(test_vf_attributes_not_supported_each),
                cmocka_unit_test(test_vf_settings_validated),
                cmocka_unit_test(test_string_tables),
                cmocka_unit_test(test_parse_256_vfs),
                cmocka_unit_test(test_parse_vf_stats),
                cmocka_unit_test(test_alt_names),
                cmocka_unit_test(test_parse_alt_names),
        };
        return cmocka_run_group_tests(tests, setup, NULL);
}
