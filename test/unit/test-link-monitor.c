/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for lib/host/link-monitor.
 *
 * Kernel-facing cases run in a child process with its own network namespace (fork +
 * unshare(CLONE_NEWNET), which needs root): a veth pair is created, its MTU and admin state are
 * changed and it is deleted with libnl, and the events must arrive through a real sd-event loop
 * within a deadline with the right name, MTU, flags and operstate. A tiny receive buffer and a
 * burst of changes provoke the kernel's ENOBUFS: the callback must get a resync event, and later
 * events must still arrive. Without root these cases are skipped with a message. The message
 * parser is checked on built messages, malformed ones included. */
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
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <netlink/attr.h>
#include <netlink/msg.h>
#include <netlink/route/link.h>
#include <netlink/route/link/veth.h>
#include <netlink/socket.h>

#include "fake-inventory.h"
#include "host/link-monitor.h"
#include "veth-fixture.h"

#define DEADLINE_USEC (5 * 1000 * 1000ULL)
#define MAX_EVENTS    4096

static bool in_private_netns;

static void require_netns(void)
{
        if (!in_private_netns) {
                print_message("skipped: needs root to create a private network namespace\n");
                skip();
        }
}

/* Everything the callback was given, in order. */
struct recorder {
        struct link_event events[MAX_EVENTS];
        size_t n;
        size_t n_resync;
};

static void record_event(const struct link_event *ev, void *userdata)
{
        struct recorder *r = userdata;
        if (ev->resync)
                r->n_resync++;
        if (r->n < MAX_EVENTS)
                r->events[r->n++] = *ev;
}

typedef bool (*match_fn)(const struct link_event *ev, const void *want);

/* Runs the loop until an event recorded from index *from on matches, or the deadline passes.
 * *from is moved past the match, so consecutive waits see events in order. */
static const struct link_event *wait_for(sd_event *e, struct recorder *rec, size_t *from,
                                         match_fn match, const void *want)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        uint64_t start = (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000, now = start;

        for (;;) {
                for (; *from < rec->n; (*from)++)
                        if (match(&rec->events[*from], want))
                                return &rec->events[(*from)++];
                if (now - start >= DEADLINE_USEC)
                        return NULL;
                assert_true(sd_event_run(e, DEADLINE_USEC - (now - start)) >= 0);
                clock_gettime(CLOCK_MONOTONIC, &ts);
                now = (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
        }
}

struct want_link {
        enum link_event_kind kind;
        const char *ifname;
        int mtu;               /* -1: any */
        int up;                /* -1: any */
        int running;           /* -1: any */
        const char *operstate; /* NULL: any */
};

static bool match_link(const struct link_event *ev, const void *p)
{
        const struct want_link *w = p;
        return !ev->resync && ev->kind == w->kind && strcmp(ev->ifname, w->ifname) == 0 &&
               (w->mtu < 0 || ev->mtu == w->mtu) && (w->up < 0 || ev->up == (w->up != 0)) &&
               (w->running < 0 || ev->running == (w->running != 0)) &&
               (!w->operstate || strcmp(ev->operstate, w->operstate) == 0);
}

static bool match_resync(const struct link_event *ev, const void *p)
{
        return ev->resync;
}

static void dump_events(const struct recorder *rec)
{
        for (size_t i = 0; i < rec->n && i < 40; i++) {
                const struct link_event *ev = &rec->events[i];
                if (ev->resync)
                        print_message("  resync\n");
                else
                        print_message("  %s %d %s mtu=%d up=%d running=%d oper=%s\n",
                                      host_link_event_kind_to_string(ev->kind), ev->ifindex,
                                      ev->ifname, ev->mtu, ev->up, ev->running, ev->operstate);
        }
}

static const struct link_event *expect(sd_event *e, struct recorder *rec, size_t *from,
                                       const struct want_link *w)
{
        const struct link_event *ev = wait_for(e, rec, from, match_link, w);
        if (!ev) {
                print_message("no %s event for %s (mtu %d, up %d, running %d) in time; got:\n",
                              host_link_event_kind_to_string(w->kind), w->ifname, w->mtu, w->up,
                              w->running);
                dump_events(rec);
        }
        assert_non_null(ev);
        return ev;
}

/* Link changes made with libnl directly (rtnl(), create_veth() in veth-fixture.h),
 * independent of the code under test. */
static void change_link(const char *ifname, int mtu, bool set_up)
{
        struct nl_sock *sk = rtnl();
        struct rtnl_link *orig = NULL, *change = rtnl_link_alloc();
        assert_non_null(change);
        assert_int_equal(rtnl_link_get_kernel(sk, 0, ifname, &orig), 0);
        if (mtu > 0)
                rtnl_link_set_mtu(change, (unsigned)mtu);
        if (set_up)
                rtnl_link_set_flags(change, IFF_UP);
        assert_int_equal(rtnl_link_change(sk, orig, change, 0), 0);
        rtnl_link_put(orig);
        rtnl_link_put(change);
        nl_socket_free(sk);
}

static void delete_link(const char *ifname)
{
        struct nl_sock *sk = rtnl();
        struct rtnl_link *l = rtnl_link_alloc();
        assert_non_null(l);
        rtnl_link_set_name(l, ifname);
        assert_int_equal(rtnl_link_delete(sk, l), 0);
        rtnl_link_put(l);
        nl_socket_free(sk);
}

static void test_link_lifecycle(void **state)
{
        sd_event *e = NULL;
        struct link_monitor *m = NULL;
        struct recorder *rec = calloc(1, sizeof(*rec));
        size_t from = 0;
        const struct link_event *ev;

        require_netns();
        assert_non_null(rec);
        assert_int_equal(sd_event_new(&e), 0);
        assert_int_equal(host_link_monitor_new(e, 0, record_event, rec, &m), 0);

        create_veth("lmon0", "lmon1");
        ev =
            expect(e, rec, &from, &(struct want_link){ LINK_EVENT_NEW, "lmon0", 1500, 0, 0, NULL });
        assert_int_equal(ev->ifindex, (int)if_nametoindex("lmon0"));
        assert_int_equal(ev->num_vfs, -1); /* a veth has no VFs and says nothing about them */

        change_link("lmon0", 1400, false);
        expect(e, rec, &from, &(struct want_link){ LINK_EVENT_NEW, "lmon0", 1400, 0, 0, NULL });

        /* up, but its peer is down: no carrier */
        change_link("lmon0", 0, true);
        expect(e, rec, &from,
               &(struct want_link){ LINK_EVENT_NEW, "lmon0", 1400, 1, 0, "lowerlayerdown" });

        change_link("lmon1", 0, true);
        expect(e, rec, &from, &(struct want_link){ LINK_EVENT_NEW, "lmon0", 1400, 1, 1, "up" });

        delete_link("lmon0"); /* takes its peer with it */
        size_t del_from = from;
        expect(e, rec, &from, &(struct want_link){ LINK_EVENT_DEL, "lmon0", -1, -1, -1, NULL });
        expect(e, rec, &del_from, &(struct want_link){ LINK_EVENT_DEL, "lmon1", -1, -1, -1, NULL });
        assert_int_equal(rec->n_resync, 0);
        assert_int_equal(host_link_monitor_overruns(m), 0);

        host_link_monitor_free(m);
        sd_event_unref(e);
        free(rec);
}

static void test_overrun_resync(void **state)
{
        sd_event *e = NULL;
        struct link_monitor *m = NULL;
        struct recorder *rec = calloc(1, sizeof(*rec));
        size_t from = 0;

        require_netns();
        assert_non_null(rec);
        create_veth("lmon2", "lmon3");
        assert_int_equal(sd_event_new(&e), 0);
        /* the smallest buffer the kernel grants holds only a few link messages */
        assert_int_equal(host_link_monitor_new(e, 1, record_event, rec, &m), 0);
        for (int i = 0; i < 200; i++)
                change_link("lmon2", 1300 + i % 2, false);
        assert_non_null(wait_for(e, rec, &from, match_resync, NULL));
        assert_true(host_link_monitor_overruns(m) >= 1);
        assert_int_equal(host_link_monitor_overruns(m), rec->n_resync);

        /* drain whatever is left, then the monitor keeps working */
        while (sd_event_run(e, 100 * 1000) > 0)
                ;
        from = rec->n;
        change_link("lmon2", 1234, false);
        expect(e, rec, &from, &(struct want_link){ LINK_EVENT_NEW, "lmon2", 1234, -1, -1, NULL });

        host_link_monitor_free(m);
        delete_link("lmon2");
        sd_event_unref(e);
        free(rec);
}

/* Freed with events queued and the loop alive: nothing is delivered after free, no leak. */
static void test_free_with_pending_events(void **state)
{
        sd_event *e = NULL;
        struct link_monitor *m = NULL;
        struct recorder *rec = calloc(1, sizeof(*rec));

        require_netns();
        assert_non_null(rec);
        assert_int_equal(sd_event_new(&e), 0);
        assert_int_equal(host_link_monitor_new(e, 0, record_event, rec, &m), 0);
        create_veth("lmon4", "lmon5");
        assert_null(host_link_monitor_free(m));
        assert_true(sd_event_run(e, 50 * 1000) >= 0);
        assert_int_equal(rec->n, 0);
        delete_link("lmon4");
        sd_event_unref(e);
        free(rec);
}

static void test_bad_arguments(void **state)
{
        sd_event *e = NULL;
        struct link_monitor *m = NULL;

        assert_int_equal(sd_event_new(&e), 0);
        assert_int_equal(host_link_monitor_new(NULL, 0, record_event, NULL, &m), -EINVAL);
        assert_int_equal(host_link_monitor_new(e, 0, NULL, NULL, &m), -EINVAL);
        assert_int_equal(host_link_monitor_new(e, 0, record_event, NULL, NULL), -EINVAL);
        assert_null(m);
        assert_null(host_link_monitor_free(NULL));
        assert_int_equal(host_link_monitor_overruns(NULL), 0);
        assert_string_equal(host_link_event_kind_to_string(LINK_EVENT_DEL), "del");
        assert_string_equal(host_link_event_kind_to_string(7), "unknown");
        sd_event_unref(e);
}

/* A link message as the kernel builds it; attributes are added by the caller. */
static struct nl_msg *link_msg(int type, int ifindex, unsigned flags)
{
        struct nl_msg *m = nlmsg_alloc();
        assert_non_null(m);
        assert_non_null(nlmsg_put(m, 0, 0, type, 0, 0));
        struct ifinfomsg ifi = { .ifi_family = AF_UNSPEC,
                                 .ifi_index = ifindex,
                                 .ifi_flags = flags };
        assert_int_equal(nlmsg_append(m, &ifi, sizeof(ifi), NLMSG_ALIGNTO), 0);
        return m;
}

static int parse(struct nl_msg *m, struct link_event *ev)
{
        struct nlmsghdr *h = nlmsg_hdr(m);
        return host_link_event_parse(h, h->nlmsg_len, ev);
}

static void test_parse_complete_message(void **state)
{
        struct nl_msg *m = link_msg(RTM_NEWLINK, 7, IFF_UP | IFF_RUNNING);
        struct link_event ev;

        assert_int_equal(nla_put_string(m, IFLA_IFNAME, "ens1f0"), 0);
        assert_int_equal(nla_put_u32(m, IFLA_MTU, 9000), 0);
        assert_int_equal(nla_put_u8(m, IFLA_OPERSTATE, 6), 0);
        assert_int_equal(nla_put_u32(m, IFLA_NUM_VF, 8), 0);
        assert_int_equal(parse(m, &ev), 0);
        assert_false(ev.resync);
        assert_int_equal(ev.kind, LINK_EVENT_NEW);
        assert_int_equal(ev.ifindex, 7);
        assert_string_equal(ev.ifname, "ens1f0");
        assert_int_equal(ev.mtu, 9000);
        assert_true(ev.up);
        assert_true(ev.running);
        assert_string_equal(ev.operstate, "up");
        assert_int_equal(ev.num_vfs, 8);
        nlmsg_free(m);

        /* a bare DELLINK: only what it says */
        m = link_msg(RTM_DELLINK, 9, 0);
        assert_int_equal(parse(m, &ev), 0);
        assert_int_equal(ev.kind, LINK_EVENT_DEL);
        assert_int_equal(ev.ifindex, 9);
        assert_string_equal(ev.ifname, "");
        assert_int_equal(ev.mtu, -1);
        assert_int_equal(ev.num_vfs, -1);
        assert_string_equal(ev.operstate, "");
        assert_false(ev.up);
        nlmsg_free(m);

        /* an operstate from the future */
        m = link_msg(RTM_NEWLINK, 9, 0);
        assert_int_equal(nla_put_u8(m, IFLA_OPERSTATE, 42), 0);
        assert_int_equal(parse(m, &ev), 0);
        assert_string_equal(ev.operstate, "unknown");
        nlmsg_free(m);
}

static void test_parse_malformed(void **state)
{
        struct link_event ev;
        struct nl_msg *m;
        struct nlmsghdr *h;

        assert_int_equal(host_link_event_parse(NULL, 0, &ev), -EINVAL);

        /* wrong message type */
        m = link_msg(RTM_NEWADDR, 1, 0);
        assert_int_equal(parse(m, &ev), -EINVAL);
        nlmsg_free(m);

        /* the header claims more than the buffer holds; a buffer shorter than a header */
        m = link_msg(RTM_NEWLINK, 1, 0);
        h = nlmsg_hdr(m);
        assert_int_equal(host_link_event_parse(h, h->nlmsg_len - 1, &ev), -EINVAL);
        assert_int_equal(host_link_event_parse(h, 8, &ev), -EINVAL);
        /* a body shorter than struct ifinfomsg */
        h->nlmsg_len = NLMSG_LENGTH(4);
        assert_int_equal(host_link_event_parse(h, h->nlmsg_len, &ev), -EINVAL);
        nlmsg_free(m);

        /* an MTU of 2 bytes */
        m = link_msg(RTM_NEWLINK, 1, 0);
        assert_int_equal(nla_put(m, IFLA_MTU, 2, &(uint16_t){ 1500 }), 0);
        assert_int_equal(parse(m, &ev), -EINVAL);
        nlmsg_free(m);

        /* a name without its NUL, and one longer than IFNAMSIZ */
        m = link_msg(RTM_NEWLINK, 1, 0);
        assert_int_equal(nla_put(m, IFLA_IFNAME, 4, "eth0"), 0);
        assert_int_equal(parse(m, &ev), -EINVAL);
        nlmsg_free(m);
        m = link_msg(RTM_NEWLINK, 1, 0);
        assert_int_equal(nla_put_string(m, IFLA_IFNAME, "a-name-much-longer-than-ifnamsiz"), 0);
        assert_int_equal(parse(m, &ev), -EINVAL);
        nlmsg_free(m);

        /* an attribute whose length runs past the message: parsing stops before it, so the
         * MTU it would carry is not taken, and nothing is read out of bounds */
        m = link_msg(RTM_NEWLINK, 3, 0);
        assert_int_equal(nla_put_string(m, IFLA_IFNAME, "ok0"), 0);
        assert_int_equal(nla_put_u32(m, IFLA_MTU, 1500), 0);
        h = nlmsg_hdr(m);
        struct nlattr *last = (struct nlattr *)((char *)h + h->nlmsg_len - NLA_HDRLEN - 4);
        assert_int_equal(last->nla_type, IFLA_MTU);
        last->nla_len = 200;
        assert_int_equal(parse(m, &ev), 0);
        assert_string_equal(ev.ifname, "ok0");
        assert_int_equal(ev.mtu, -1);
        nlmsg_free(m);
}

static struct link_event new_link(enum link_event_kind kind, const char *ifname)
{
        struct link_event ev = { .kind = kind, .mtu = 1500, .num_vfs = -1 };
        snprintf(ev.ifname, sizeof(ev.ifname), "%s", ifname);
        return ev;
}

/* A busy node: pod veths come and go; only SR-IOV netdevs may trigger a re-plan. The sysfs is
 * a temp dir: ens9v0 has a device link (a VF created by hand), veth1234 has none. */
static void test_concerns_sriov(void **state)
{
        char root[] = "/tmp/test-link-monitor-XXXXXX", path[512];
        struct inventory inv = { 0 };
        struct link_event ev;

        assert_non_null(mkdtemp(root));
        snprintf(path, sizeof(path), "%s/class", root);
        assert_int_equal(mkdir(path, 0755), 0);
        snprintf(path, sizeof(path), "%s/class/net", root);
        assert_int_equal(mkdir(path, 0755), 0);
        snprintf(path, sizeof(path), "%s/class/net/ens9v0", root);
        assert_int_equal(mkdir(path, 0755), 0);
        snprintf(path, sizeof(path), "%s/class/net/veth1234", root);
        assert_int_equal(mkdir(path, 0755), 0);
        snprintf(path, sizeof(path), "%s/pci-fn", root);
        assert_int_equal(mkdir(path, 0755), 0);
        snprintf(path, sizeof(path), "%s/class/net/ens9v0/device", root);
        assert_int_equal(symlink("../../../pci-fn", path), 0);
        fake_add_pf(&inv, "0000:3b:00.0", "ens1f0", 0x8086, 0x1592, 8, 2, 1500, "iavf");

        ev = (struct link_event){ .resync = true };
        assert_true(host_link_event_concerns_sriov(&ev, NULL, root));
        ev = new_link(LINK_EVENT_NEW, "ens1f0"); /* the PF: someone changed its MTU */
        assert_true(host_link_event_concerns_sriov(&ev, &inv, root));
        ev = new_link(LINK_EVENT_DEL, "ens1f0v1"); /* a VF netdev vanished: numvfs reset */
        assert_true(host_link_event_concerns_sriov(&ev, &inv, root));
        ev = new_link(LINK_EVENT_NEW, "ens9v0"); /* unknown but backed by a device */
        assert_true(host_link_event_concerns_sriov(&ev, &inv, root));
        assert_true(host_link_event_concerns_sriov(&ev, NULL, root));
        ev = new_link(LINK_EVENT_DEL, "ens9v0"); /* gone, and never ours */
        assert_false(host_link_event_concerns_sriov(&ev, &inv, root));
        ev = new_link(LINK_EVENT_NEW, "veth1234"); /* a pod's veth */
        assert_false(host_link_event_concerns_sriov(&ev, &inv, root));
        ev = new_link(LINK_EVENT_DEL, "veth1234");
        assert_false(host_link_event_concerns_sriov(&ev, &inv, root));
        const char *hostile[] = { "", "..", "../pci-fn", "a/b" };
        for (size_t i = 0; i < sizeof(hostile) / sizeof(hostile[0]); i++) {
                ev = new_link(LINK_EVENT_NEW, hostile[i]);
                assert_false(host_link_event_concerns_sriov(&ev, &inv, root));
        }
        assert_false(host_link_event_concerns_sriov(NULL, &inv, root));

        snprintf(path, sizeof(path), "%s/class/net/ens9v0/device", root);
        assert_int_equal(unlink(path), 0);
        const char *dirs[] = { "class/net/ens9v0", "class/net/veth1234",
                               "class/net",        "class",
                               "pci-fn",           "" };
        for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
                snprintf(path, sizeof(path), "%s/%s", root, dirs[i]);
                assert_int_equal(rmdir(path), 0);
        }
        inventory_done(&inv);
}

static int run_all_tests(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_link_lifecycle),
                cmocka_unit_test(test_overrun_resync),
                cmocka_unit_test(test_free_with_pending_events),
                cmocka_unit_test(test_bad_arguments),
                cmocka_unit_test(test_parse_complete_message),
                cmocka_unit_test(test_parse_malformed),
                cmocka_unit_test(test_concerns_sriov),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

int main(void)
{
        int status;
        pid_t pid = fork();

        if (pid < 0) {
                perror("fork");
                return 1;
        }
        if (pid == 0) {
                /* The child gets the namespace; the test runner's own stays untouched. */
                in_private_netns = geteuid() == 0 && unshare(CLONE_NEWNET) == 0;
                exit(run_all_tests()); /* exit, not _exit: let libraries free their globals */
        }
        if (waitpid(pid, &status, 0) < 0) {
                perror("waitpid");
                return 1;
        }
        if (WIFSIGNALED(status)) {
                fprintf(stderr, "test process killed by signal %d\n", WTERMSIG(status));
                return 1;
        }
        return WEXITSTATUS(status);
}
