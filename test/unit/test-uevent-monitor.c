/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for lib/host/uevent-monitor: the parser on kernel-shaped datagrams (and udev's,
 * which are refused), which events concern the agent, and the socket path against the real
 * kernel. The kernel-facing case runs in a child process with its own network namespace (fork +
 * unshare(CLONE_NEWNET), root): a veth created there makes the kernel send "add" uevents of
 * subsystem net to that namespace, which must arrive through a real sd-event loop, parsed; a
 * datagram a user process sends to the same group must not (only the kernel speaks for
 * devices). Without root that case is skipped with a message. */
#include <errno.h>
#include <linux/netlink.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "fake-inventory.h"
#include "host/uevent-monitor.h"
#include "veth-fixture.h"

static bool in_private_netns;

/* A datagram as the kernel builds it: "ACTION@DEVPATH" then KEY=VALUE fields, NUL-separated. */
static size_t kernel_msg(char *buf, size_t size, const char *const *fields)
{
        size_t n = 0;
        for (; *fields; fields++) {
                size_t len = strlen(*fields) + 1;
                assert_true(n + len <= size);
                memcpy(buf + n, *fields, len);
                n += len;
        }
        return n;
}

static void test_parse_pci_remove(void **state)
{
        static const char *const fields[] = {
                "remove@/devices/pci0000:00/0000:00:02.0/0000:01:10.4",
                "ACTION=remove",
                "DEVPATH=/devices/pci0000:00/0000:00:02.0/0000:01:10.4",
                "SUBSYSTEM=pci",
                "PCI_CLASS=20000",
                "PCI_SLOT_NAME=0000:01:10.4",
                "SEQNUM=2281",
                NULL,
        };
        char buf[512];
        struct host_uevent ev;
        assert_int_equal(host_uevent_parse(buf, kernel_msg(buf, sizeof(buf), fields), &ev), 0);
        assert_false(ev.resync);
        assert_string_equal(ev.action, "remove");
        assert_string_equal(ev.subsystem, "pci");
        assert_string_equal(ev.pci_address, "0000:01:10.4");
}

static void test_parse_refuses(void **state)
{
        char buf[512];
        struct host_uevent ev;
        /* udev's re-broadcast: a binary header, no "@" before the first NUL */
        static const char udev[] = "libudev\0\xfe\xed\xca\xfe";
        assert_int_equal(host_uevent_parse(udev, sizeof(udev), &ev), -EINVAL);
        static const char *const no_action[] = { "add@/devices/x", "SUBSYSTEM=pci", NULL };
        assert_int_equal(host_uevent_parse(buf, kernel_msg(buf, sizeof(buf), no_action), &ev),
                         -EINVAL);
        static const char *const no_subsystem[] = { "add@/devices/x", "ACTION=add", NULL };
        assert_int_equal(host_uevent_parse(buf, kernel_msg(buf, sizeof(buf), no_subsystem), &ev),
                         -EINVAL);
        static const char *const bad_slot[] = { "add@/devices/x", "ACTION=add", "SUBSYSTEM=pci",
                                                "PCI_SLOT_NAME=../../etc", NULL };
        assert_int_equal(host_uevent_parse(buf, kernel_msg(buf, sizeof(buf), bad_slot), &ev),
                         -EINVAL);
        assert_int_equal(host_uevent_parse("no-nul", 6, &ev), -EINVAL);
        /* a field without "=" and an over-long one are skipped, not fatal */
        char longfield[400];
        memset(longfield, 'x', sizeof(longfield) - 1);
        longfield[sizeof(longfield) - 1] = 0;
        const char *const odd[] = { "bind@/devices/x",
                                    "NOEQUALS",
                                    longfield,
                                    "ACTION=bind",
                                    "SUBSYSTEM=pci",
                                    "PCI_SLOT_NAME=0000:3b:00.0",
                                    NULL };
        assert_int_equal(host_uevent_parse(buf, kernel_msg(buf, sizeof(buf), odd), &ev), 0);
        assert_string_equal(ev.action, "bind");
}

static struct host_uevent pci_event(const char *action, const char *pci)
{
        struct host_uevent ev = { 0 };
        snprintf(ev.action, sizeof(ev.action), "%s", action);
        snprintf(ev.subsystem, sizeof(ev.subsystem), "pci");
        snprintf(ev.pci_address, sizeof(ev.pci_address), "%s", pci);
        return ev;
}

/* A VF on vfio-pci removed, a PF unbound: they concern the agent; other devices, other
 * subsystems and "change" events do not; a new function counts once there are PFs. */
static void test_concerns_sriov(void **state)
{
        struct inventory inv = { 0 };
        fake_add_pf(&inv, "0000:3b:00.0", "ens1f0", 0x8086, 0x1592, 8, 2, 1500, "vfio-pci");
        const char *vf = inv.pfs[0].vfs[1].pci_address;

        struct host_uevent ev = pci_event("remove", vf);
        assert_true(host_uevent_concerns_sriov(&ev, &inv));
        ev = pci_event("unbind", "0000:3b:00.0");
        assert_true(host_uevent_concerns_sriov(&ev, &inv));
        ev = pci_event("bind", "0000:3b:00.0");
        assert_true(host_uevent_concerns_sriov(&ev, &inv));
        ev = pci_event("remove", "0000:af:00.0"); /* an NVMe drive */
        assert_false(host_uevent_concerns_sriov(&ev, &inv));
        ev = pci_event("change", vf);
        assert_false(host_uevent_concerns_sriov(&ev, &inv));
        ev = pci_event("add", "0000:3b:02.7");
        assert_true(host_uevent_concerns_sriov(&ev, &inv));
        assert_false(host_uevent_concerns_sriov(&ev, NULL));
        ev = pci_event("remove", vf);
        snprintf(ev.subsystem, sizeof(ev.subsystem), "net");
        assert_false(host_uevent_concerns_sriov(&ev, &inv));
        assert_true(
            host_uevent_concerns_sriov(&(const struct host_uevent){ .resync = true }, NULL));
        assert_false(host_uevent_concerns_sriov(NULL, &inv));
        inventory_done(&inv);
}

struct seen {
        unsigned net_adds;
        unsigned forged;
        sd_event *event;
};

static void on_uevent(const struct host_uevent *ev, void *userdata)
{
        struct seen *s = userdata;
        if (strcmp(ev->subsystem, "net") == 0 && strcmp(ev->action, "add") == 0)
                s->net_adds++;
        if (strcmp(ev->subsystem, "forged") == 0)
                s->forged++;
        if (s->net_adds >= 2)
                sd_event_exit(s->event, 0);
}

static int on_deadline(sd_event_source *src, uint64_t usec, void *userdata)
{
        return sd_event_exit(sd_event_source_get_event(src), 0);
}

static void test_kernel_uevents(void **state)
{
        if (!in_private_netns) {
                print_message("skipped: needs root to create a private network namespace\n");
                skip();
        }
        struct seen s = { 0 };
        struct host_uevent_monitor *m = NULL;
        assert_int_equal(sd_event_new(&s.event), 0);
        assert_int_equal(host_uevent_monitor_new(s.event, on_uevent, &s, &m), 0);

        /* A user process speaking on the kernel's group is not believed. */
        int fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_KOBJECT_UEVENT);
        assert_true(fd >= 0);
        static const char *const forged[] = { "add@/devices/x", "ACTION=add", "SUBSYSTEM=forged",
                                              NULL };
        char buf[256];
        size_t n = kernel_msg(buf, sizeof(buf), forged);
        const struct sockaddr_nl to = { .nl_family = AF_NETLINK, .nl_groups = 1 };
        (void)sendto(fd, buf, n, 0, (const struct sockaddr *)&to, sizeof(to));
        close(fd);

        create_veth("uev0", "uev1"); /* two net "add" uevents, from the kernel */
        assert_int_equal(sd_event_add_time_relative(s.event, NULL, CLOCK_MONOTONIC, 5000000, 0,
                                                    on_deadline, NULL),
                         0);
        assert_int_equal(sd_event_loop(s.event), 0);
        assert_int_equal(s.net_adds, 2);
        assert_int_equal(s.forged, 0);
        host_uevent_monitor_free(m);
        sd_event_unref(s.event);
}

static int run_all_tests(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_parse_pci_remove),
                cmocka_unit_test(test_parse_refuses),
                cmocka_unit_test(test_concerns_sriov),
                cmocka_unit_test(test_kernel_uevents),
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
                exit(run_all_tests());
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
