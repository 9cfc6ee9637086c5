/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for lib/host/netlink-netns (what the sriov CNI plugin does to a VF's netdev),
 * on a veth pair in private network namespaces (needs root; skipped otherwise): move into a
 * "pod" namespace renamed in one request, MAC/MTU/up there, addresses and routes, and back
 * under the old name; a name taken in the target is refused with nothing moved; namespace
 * files are told apart from other files. Checked with if_nametoindex/ioctls in the namespace
 * concerned, independent of the code under test. */
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
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <linux/rtnetlink.h>
#include <netlink/msg.h>
#include <netlink/route/link.h>
#include <netlink/route/link/veth.h>
#include <netlink/socket.h>

#include "host/netlink-netns.h"
#include "veth-fixture.h"

static int host_ns = -1, pod_ns = -1;

static void require_netns(void)
{
        if (host_ns < 0) {
                print_message("skipped: needs root to create private network namespaces\n");
                skip();
        }
}

static void if_hwaddr(const char *ifname, uint8_t mac[6])
{
        struct ifreq ifr = { 0 };
        int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        assert_true(fd >= 0);
        strncpy(ifr.ifr_name, ifname, IFNAMSIZ - 1);
        assert_int_equal(ioctl(fd, SIOCGIFHWADDR, &ifr), 0);
        close(fd);
        memcpy(mac, ifr.ifr_hwaddr.sa_data, 6);
}

static void test_move_rename_and_back(void **state)
{
        require_netns();
        create_veth("cnit0", "cnit1");
        struct host_link l;
        assert_int_equal(host_link_get("cnit0", &l), 0);
        assert_int_equal(l.ifindex, (int)if_nametoindex("cnit0"));
        const int mtu0 = l.mtu;
        uint8_t mac0[6];
        memcpy(mac0, l.mac, 6);

        /* into the pod, renamed on arrival */
        assert_int_equal(host_link_move(l.ifindex, pod_ns, "net1"), 0);
        assert_int_equal(if_nametoindex("cnit0"), 0);
        assert_int_equal(host_link_get("cnit0", &l), -ENODEV);
        assert_int_equal(host_netns_enter(pod_ns), 0);
        struct host_link p;
        assert_int_equal(host_link_get("net1", &p), 0);
        assert_memory_equal(p.mac, mac0, 6);
        const uint8_t mac1[6] = { 0x02, 0, 0, 0, 0x0a, 0x01 };
        assert_int_equal(host_link_set_mac(p.ifindex, mac1), 0);
        assert_int_equal(host_link_set_mtu_index(p.ifindex, 1400), 0);
        assert_int_equal(host_link_set_updown(p.ifindex, true), 0);
        uint8_t now[6];
        if_hwaddr("net1", now);
        assert_memory_equal(now, mac1, 6);
        assert_int_equal(host_link_get("net1", &p), 0);
        assert_int_equal(p.mtu, 1400);
        assert_true(p.flags & IFF_UP);

        struct in_addr a, gw, dst;
        inet_pton(AF_INET, "10.9.0.2", &a);
        inet_pton(AF_INET, "10.9.0.1", &gw);
        inet_pton(AF_INET, "10.10.0.0", &dst);
        assert_int_equal(host_addr_add(p.ifindex, AF_INET, &a, 24), 0);
        assert_int_equal(host_addr_add(p.ifindex, AF_INET, &a, 24), -EEXIST);
        assert_int_equal(host_route_add(p.ifindex, AF_INET, &dst, 16, &gw), 0);
        assert_int_equal(host_route_add(p.ifindex, AF_INET, NULL, 0, &gw), 0); /* default */
        assert_int_equal(host_route_add(p.ifindex, AF_INET, NULL, 0, &gw), -EEXIST);
        assert_int_equal(host_addr_add(p.ifindex, AF_INET, &a, 33), -EINVAL);
        struct in6_addr a6;
        inet_pton(AF_INET6, "fd00::2", &a6);
        assert_int_equal(host_addr_add(p.ifindex, AF_INET6, &a6, 64), 0);

        /* back to the host under the old name, MAC and MTU restored first */
        assert_int_equal(host_link_set_updown(p.ifindex, false), 0);
        assert_int_equal(host_link_set_mac(p.ifindex, mac0), 0);
        assert_int_equal(host_link_set_mtu_index(p.ifindex, mtu0), 0);
        assert_int_equal(host_link_move(p.ifindex, host_ns, "cnit0"), 0);
        assert_int_equal(if_nametoindex("net1"), 0);
        assert_int_equal(host_netns_enter(host_ns), 0);
        assert_true(if_nametoindex("cnit0") > 0);
        if_hwaddr("cnit0", now);
        assert_memory_equal(now, mac0, 6);
        assert_int_equal(host_link_get("cnit0", &l), 0);
        assert_int_equal(l.mtu, mtu0);
        assert_false(l.flags & IFF_UP);
}

/* A link left in the pod under `name` (moved, its rename refused) goes back to the host under
 * that name; the test thread ends in the host's namespace. */
static void bring_home(const char *name)
{
        struct host_link l;
        assert_int_equal(host_netns_enter(pod_ns), 0);
        assert_int_equal(host_link_get(name, &l), 0);
        assert_int_equal(host_link_move(l.ifindex, host_ns, name), 0);
        assert_int_equal(host_netns_enter(host_ns), 0);
}

static void test_name_taken_in_target(void **state)
{
        require_netns();
        create_veth("cnit2", "cnit3");
        struct host_link l;
        assert_int_equal(host_link_get("cnit2", &l), 0);
        assert_int_equal(host_link_move(l.ifindex, pod_ns, "a/b"), -EINVAL);
        /* "lo" exists in every namespace: refused, but only after the move (the kernel renames
         * after moving) - why the plugin checks the pod's names first */
        assert_int_equal(host_link_move(l.ifindex, pod_ns, "lo"), -EEXIST);
        assert_int_equal(if_nametoindex("cnit2"), 0);
        bring_home("cnit2");
        assert_int_equal(host_link_get("cnit2", &l), 0);
        assert_int_equal(host_link_rename(l.ifindex, "cnit2x"), 0);
        assert_int_equal(if_nametoindex("cnit2"), 0);
        assert_true(if_nametoindex("cnit2x") > 0);
}

/* Adds an alternative name the way `ip link property add dev IF altname NAME` does, in the
 * calling thread's namespace; negative when the kernel has no altnames (before 5.5). */
static int add_alt_name(int ifindex, const char *alt)
{
        struct nl_sock *sk = nl_socket_alloc();
        struct nl_msg *m = nlmsg_alloc_simple(RTM_NEWLINKPROP, NLM_F_REQUEST | NLM_F_ACK);
        struct ifinfomsg ifi = { .ifi_family = AF_UNSPEC, .ifi_index = ifindex };
        assert_non_null(sk);
        assert_non_null(m);
        assert_int_equal(nl_connect(sk, NETLINK_ROUTE), 0);
        assert_int_equal(nlmsg_append(m, &ifi, sizeof(ifi), NLMSG_ALIGNTO), 0);
        struct nlattr *list = nla_nest_start(m, IFLA_PROP_LIST);
        assert_int_equal(nla_put_string(m, IFLA_ALT_IFNAME, alt), 0);
        nla_nest_end(m, list);
        int r = nl_send_auto(sk, m);
        if (r >= 0)
                r = nl_wait_for_ack(sk);
        nlmsg_free(m);
        nl_socket_free(sk);
        return r;
}

/* A VF in the pod carrying its host name as an altname (systemd-udevd before v254 adds the
 * previous name on a rename; upstream sriov-cni issue #250) cannot be moved home under that
 * name: the kernel answers EEXIST after the move, leaving it in the host under the pod name.
 * Conformance: upstream sriov-cni pkg/sriov/sriov_test.go, SetupVF "Remove altName" (an altname
 * equal to the original name is deleted, none there means no delete and no error). */
static void test_altname_equal_to_old_name(void **state)
{
        require_netns();
        create_veth("cnit6", "cnit7");
        struct host_link l, p;
        assert_int_equal(host_link_get("cnit6", &l), 0);
        assert_int_equal(host_link_move(l.ifindex, pod_ns, "net2"), 0);
        assert_int_equal(host_netns_enter(pod_ns), 0);
        assert_int_equal(host_link_get("net2", &p), 0);
        /* the kernel's rename kept no altname by itself */
        assert_int_equal(host_link_drop_altname(p.ifindex, "cnit6"), 0);
        if (add_alt_name(p.ifindex, "cnit6") < 0) {
                assert_int_equal(host_netns_enter(host_ns), 0);
                print_message("skipped: this kernel has no alternative interface names\n");
                skip();
        }
        assert_int_equal(add_alt_name(p.ifindex, "cnit6-other"), 0);
        /* the altname resolves to the link, as the kernel resolves every name */
        assert_int_equal(host_link_get("cnit6", &l), 0);
        assert_int_equal(l.ifindex, p.ifindex);

        assert_int_equal(host_link_drop_altname(p.ifindex, "cnit6"), 1);
        assert_int_equal(host_link_get("cnit6", &l), -ENODEV);
        /* not there (any more): nothing to do, not an error */
        assert_int_equal(host_link_drop_altname(p.ifindex, "cnit6"), 0);
        assert_int_equal(host_link_drop_altname(p.ifindex, "never-there"), 0);
        assert_int_equal(host_link_drop_altname(p.ifindex, ""), -EINVAL);
        assert_int_equal(host_link_drop_altname(999999, "cnit6"), -ENODEV);
        /* other altnames stay */
        assert_int_equal(host_link_get("cnit6-other", &l), 0);

        assert_int_equal(host_link_move(p.ifindex, host_ns, "cnit6"), 0);
        assert_int_equal(host_netns_enter(host_ns), 0);
        assert_true(if_nametoindex("cnit6") > 0);
}

/* Without the drop the way home is refused: what DEL met before it dropped the altname. */
static void test_altname_blocks_move_home(void **state)
{
        require_netns();
        create_veth("cnit8", "cnit9");
        struct host_link l, p;
        assert_int_equal(host_link_get("cnit8", &l), 0);
        assert_int_equal(host_link_move(l.ifindex, pod_ns, "net3"), 0);
        assert_int_equal(host_netns_enter(pod_ns), 0);
        assert_int_equal(host_link_get("net3", &p), 0);
        if (add_alt_name(p.ifindex, "cnit8") < 0) {
                assert_int_equal(host_netns_enter(host_ns), 0);
                print_message("skipped: this kernel has no alternative interface names\n");
                skip();
        }
        assert_int_equal(host_link_move(p.ifindex, host_ns, "cnit8"), -EEXIST);
        assert_int_equal(host_netns_enter(host_ns), 0);
        /* moved, but under the pod's name */
        assert_int_equal(if_nametoindex("cnit8"), (unsigned)p.ifindex);
        assert_true(if_nametoindex("net3") > 0);
}

static bool in_namespace(int ns_fd)
{
        struct stat a, b;
        assert_int_equal(stat("/proc/thread-self/ns/net", &a), 0);
        assert_int_equal(fstat(ns_fd, &b), 0);
        return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* A link carrying an altname that is a name or altname in the target: the kernel (one whose
 * netns move checks altnames) refuses the move with EEXIST and moves nothing, although new_name is
 * free there; the plugin reported "that name is taken there" (new_name's) for it.
 * host_link_move_conflict names the altname, also one longer than an interface name, and leaves the
 * thread where it was. */
static void test_move_refused_for_altname(void **state)
{
        require_netns();
        create_veth("cnita0", "cnita1");
        struct host_link l;
        assert_int_equal(host_link_get("cnita0", &l), 0);
        if (add_alt_name(l.ifindex, "cnitalt") < 0) {
                print_message("skipped: this kernel has no alternative interface names\n");
                skip();
        }
        static const char long_alt[] = "cnita0-an-altname-longer-than-ifnamsiz";
        assert_int_equal(add_alt_name(l.ifindex, long_alt), 0);
        /* the pod has a link named like the first altname, another carrying the second */
        assert_int_equal(host_netns_enter(pod_ns), 0);
        create_veth("cnitalt", "cnitp1");
        create_veth("cnitq0", "cnitq1");
        assert_int_equal(add_alt_name((int)if_nametoindex("cnitq0"), long_alt), 0);
        assert_int_equal(host_netns_enter(host_ns), 0);

        int r = host_link_move(l.ifindex, pod_ns, "net4");
        if (r == 0) {
                print_message("skipped: this kernel does not check altnames when moving a link\n");
                skip();
        }
        assert_int_equal(r, -EEXIST);
        /* nothing moved, nothing renamed */
        assert_int_equal(if_nametoindex("cnita0"), (unsigned)l.ifindex);
        char name[HOST_ALTNAME_SIZE] = "";
        assert_int_equal(host_link_move_conflict("cnita0", pod_ns, "net4", name),
                         HOST_MOVE_TAKEN_ALTNAME);
        assert_string_equal(name, "cnitalt");
        assert_true(in_namespace(host_ns));

        /* without that one, the long altname (looked up as IFLA_ALT_IFNAME) is in the way */
        assert_int_equal(host_link_drop_altname(l.ifindex, "cnitalt"), 1);
        assert_int_equal(host_link_move(l.ifindex, pod_ns, "net4"), -EEXIST);
        assert_int_equal(if_nametoindex("cnita0"), (unsigned)l.ifindex);
        assert_int_equal(host_link_move_conflict("cnita0", pod_ns, "net4", name),
                         HOST_MOVE_TAKEN_ALTNAME);
        assert_string_equal(name, long_alt);
        assert_true(in_namespace(host_ns));

        /* both free: moves */
        assert_int_equal(host_link_drop_altname(l.ifindex, long_alt), 1);
        assert_int_equal(host_link_move_conflict("cnita0", pod_ns, "net4", name), -ENOENT);
        assert_int_equal(host_link_move(l.ifindex, pod_ns, "net4"), 0);
        assert_int_equal(if_nametoindex("cnita0"), 0);
        assert_int_equal(host_link_move_conflict("nosuchlink0", pod_ns, "net4", name), -ENODEV);
        assert_true(in_namespace(host_ns));
}

/* new_name taken in the target: the kernel moves first and refuses the rename after, leaving
 * the link there under its old name; new_name as one of the link's own altnames is refused
 * the same way. host_link_move_conflict finds the link in the target and tells the two apart. */
static void test_move_conflict_after_move(void **state)
{
        require_netns();
        create_veth("cnitb0", "cnitb1");
        struct host_link l;
        assert_int_equal(host_link_get("cnitb0", &l), 0);
        char name[HOST_ALTNAME_SIZE] = "";
        /* not moved yet, its own name free there: "lo" alone does not stop the move */
        assert_int_equal(host_link_move_conflict("cnitb0", pod_ns, "lo", name), -ENOENT);
        assert_int_equal(host_link_move(l.ifindex, pod_ns, "lo"), -EEXIST);
        assert_int_equal(if_nametoindex("cnitb0"), 0);
        name[0] = '\0';
        assert_int_equal(host_link_move_conflict("cnitb0", pod_ns, "lo", name),
                         HOST_MOVE_TAKEN_NAME);
        assert_string_equal(name, "lo");
        assert_true(in_namespace(host_ns));
        bring_home("cnitb0");

        assert_int_equal(host_link_get("cnitb0", &l), 0);
        if (add_alt_name(l.ifindex, "net5") < 0) {
                print_message("skipped: this kernel has no alternative interface names\n");
                skip();
        }
        assert_int_equal(host_link_move(l.ifindex, pod_ns, "net5"), -EEXIST);
        assert_int_equal(if_nametoindex("cnitb0"), 0);
        assert_int_equal(host_link_move_conflict("cnitb0", pod_ns, "net5", name),
                         HOST_MOVE_OWN_ALTNAME);
        assert_string_equal(name, "net5");
        assert_true(in_namespace(host_ns));
        assert_int_equal(host_link_move_conflict("cnitb0", pod_ns, "a/b", name), -EINVAL);
}

static void test_netns_files_and_vfs(void **state)
{
        require_netns();
        int fd = host_netns_open("/proc/self/ns/net");
        assert_true(fd >= 0);
        close(fd);
        assert_int_equal(host_netns_open("/nonexistent/netns"), -ENOENT);
        assert_int_equal(host_netns_open("/proc/self/status"), -EINVAL);
        assert_int_equal(host_netns_open("relative"), -EINVAL);
        /* another kind of namespace, and a FIFO (an open that would block until a writer came,
         * with the VF's lock held): refused at once */
        assert_int_equal(host_netns_open("/proc/self/ns/mnt"), -EINVAL);
        char fifo[] = "/tmp/sriov-test-netns-fifo-XXXXXX";
        assert_non_null(mkdtemp(fifo));
        char fifo_path[sizeof(fifo) + 8];
        snprintf(fifo_path, sizeof(fifo_path), "%s/fifo", fifo);
        assert_int_equal(mkfifo(fifo_path, 0600), 0);
        alarm(5); /* a blocking open is a failure, not a hang */
        assert_int_equal(host_netns_open(fifo_path), -EINVAL);
        alarm(0);
        unlink(fifo_path);
        rmdir(fifo);
        int a = host_netns_open("/proc/self/ns/net"), b = host_netns_open("/proc/1/ns/net");
        assert_true(a >= 0);
        assert_true(host_netns_same(a, a));
        if (b >= 0) {
                int c = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
                assert_true(host_netns_same(a, c));
                close(c);
                close(b);
        }
        close(a);
        /* a link that is no bus device is never taken for one, whatever its name */
        struct host_link found;
        create_veth("cnitc0", "cnitc1");
        assert_int_equal(host_link_find_by_bus("0000:01:10.0", "cnitc0", &found), -ENODEV);
        struct host_vf_state st;
        /* a veth has no VFs */
        create_veth("cnit4", "cnit5");
        assert_int_equal(host_vf_get_state("cnit4", 0, &st), -ENOENT);
        assert_int_equal(host_vf_get_state("nosuchif0", 0, &st), -ENODEV);
        assert_int_equal(host_link_get("../x", &(struct host_link){ 0 }), -EINVAL);
}

static int setup(void **state)
{
        if (geteuid() != 0 || unshare(CLONE_NEWNET) < 0) {
                fprintf(stderr, "note: not root or unshare failed (%m): netns tests skipped\n");
                return 0;
        }
        host_ns = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
        /* a second namespace for the "pod": kept alive by its fd */
        if (host_ns < 0 || unshare(CLONE_NEWNET) < 0 ||
            (pod_ns = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC)) < 0 ||
            setns(host_ns, CLONE_NEWNET) < 0) {
                fprintf(stderr, "note: cannot make a second namespace (%m): tests skipped\n");
                host_ns = -1;
        }
        return 0;
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_move_rename_and_back),
                cmocka_unit_test(test_name_taken_in_target),
                cmocka_unit_test(test_altname_equal_to_old_name),
                cmocka_unit_test(test_altname_blocks_move_home),
                cmocka_unit_test(test_move_refused_for_altname),
                cmocka_unit_test(test_move_conflict_after_move),
                cmocka_unit_test(test_netns_files_and_vfs),
        };
        return cmocka_run_group_tests(tests, setup, NULL);
}
