/* SPDX-License-Identifier: Apache-2.0 */
#include "host/uevent-monitor.h"

#include <errno.h>
#include <linux/netlink.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util/log.h"
#include "util/macro.h"
#include "util/names.h"

#define UEVENT_GROUP_KERNEL 1u   /* group 2 is udev's re-broadcast */
#define UEVENT_DATAGRAM_MAX 8192 /* the kernel's uevent buffer is 2048 bytes */
#define UEVENT_RCVBUF       (1024 * 1024)
#define READS_PER_DISPATCH  64

struct host_uevent_monitor {
        int fd;
        sd_event_source *source;
        host_uevent_fn callback;
        void *userdata;
};

static void copy_value(char *dst, size_t size, const char *value)
{
        snprintf(dst, size, "%s", value);
}

int host_uevent_parse(const char *buf, size_t len, struct host_uevent *ret)
{
        struct host_uevent ev = { 0 };
        bool have_action = false, have_subsystem = false;

        /* The header "ACTION@DEVPATH" ends at the first NUL; udev's own messages start with
         * "libudev" and are binary. */
        const char *end = buf + len, *nul = memchr(buf, 0, len);
        if (!nul || !memchr(buf, '@', (size_t)(nul - buf)))
                return -EINVAL;
        for (const char *p = nul + 1; p < end;) {
                const char *e = memchr(p, 0, (size_t)(end - p));
                size_t n = e ? (size_t)(e - p) : (size_t)(end - p);
                char field[256];
                if (n < sizeof(field)) {
                        memcpy(field, p, n);
                        field[n] = 0;
                        char *eq = strchr(field, '=');
                        if (eq) {
                                *eq = 0;
                                const char *value = eq + 1;
                                if (strcmp(field, "ACTION") == 0) {
                                        copy_value(ev.action, sizeof(ev.action), value);
                                        have_action = true;
                                } else if (strcmp(field, "SUBSYSTEM") == 0) {
                                        copy_value(ev.subsystem, sizeof(ev.subsystem), value);
                                        have_subsystem = true;
                                } else if (strcmp(field, "PCI_SLOT_NAME") == 0) {
                                        if (!pci_address_is_valid(value))
                                                return -EINVAL;
                                        copy_value(ev.pci_address, sizeof(ev.pci_address), value);
                                }
                        }
                }
                p += n + 1;
        }
        if (!have_action || !have_subsystem)
                return -EINVAL;
        *ret = ev;
        return 0;
}

static bool known_function(const struct inventory *inv, const char *pci)
{
        for (size_t i = 0; inv && i < inv->n_pfs; i++) {
                const struct pf_info *pf = &inv->pfs[i];
                if (strcasecmp(pf->pci_address, pci) == 0)
                        return true;
                for (size_t j = 0; j < pf->n_vfs; j++)
                        if (strcasecmp(pf->vfs[j].pci_address, pci) == 0)
                                return true;
        }
        return false;
}

bool host_uevent_concerns_sriov(const struct host_uevent *ev, const struct inventory *inventory)
{
        if (!ev)
                return false;
        if (ev->resync)
                return true;
        if (strcmp(ev->subsystem, "pci") != 0 || ev->pci_address[0] == 0)
                return false;
        if (strcmp(ev->action, "remove") == 0 || strcmp(ev->action, "unbind") == 0 ||
            strcmp(ev->action, "bind") == 0)
                return known_function(inventory, ev->pci_address);
        if (strcmp(ev->action, "add") == 0)
                return known_function(inventory, ev->pci_address) ||
                       (inventory && inventory->n_pfs > 0);
        return false;
}

static void report_resync(struct host_uevent_monitor *m, const char *why)
{
        log_debug("uevent monitor: %s; everything is re-read", why);
        m->callback(&(const struct host_uevent){ .resync = true }, m->userdata);
}

/* 1 when a datagram was consumed, 0 when none is left, a negative errno on socket trouble. */
static int read_one(struct host_uevent_monitor *m)
{
        char buf[UEVENT_DATAGRAM_MAX];
        struct sockaddr_nl sender = { 0 };
        struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
        struct msghdr msg = {
                .msg_name = &sender, .msg_namelen = sizeof(sender), .msg_iov = &iov, .msg_iovlen = 1
        };
        ssize_t n;

        do
                n = recvmsg(m->fd, &msg, MSG_DONTWAIT);
        while (n < 0 && errno == EINTR);
        if (n < 0) {
                if (errno == EAGAIN || errno == EWOULDBLOCK)
                        return 0;
                if (errno == ENOBUFS) {
                        report_resync(m, "socket receive buffer overrun");
                        return 1;
                }
                return negative_errno();
        }
        if (msg.msg_flags & MSG_TRUNC) {
                report_resync(m, "a uevent too large to read was dropped");
                return 1;
        }
        if (sender.nl_pid != 0) { /* only the kernel speaks for devices */
                log_debug("uevent monitor: ignoring a message from netlink port %u", sender.nl_pid);
                return 1;
        }
        struct host_uevent ev;
        if (host_uevent_parse(buf, (size_t)n, &ev) < 0) {
                log_debug("uevent monitor: skipping a malformed uevent");
                return 1;
        }
        m->callback(&ev, m->userdata);
        return 1;
}

static int on_readable(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
        struct host_uevent_monitor *m = userdata;

        for (int i = 0; i < READS_PER_DISPATCH; i++) {
                int r = read_one(m);
                if (r == 0)
                        return 0;
                if (r < 0) {
                        log_error_errno(r, "uevent monitor: cannot read uevents; PCI device "
                                           "changes are found by link events and the periodic "
                                           "check only");
                        (void)sd_event_source_set_enabled(s, SD_EVENT_OFF);
                        report_resync(m, "the uevent socket failed");
                        return 0;
                }
        }
        return 0;
}

int host_uevent_monitor_new(sd_event *event, host_uevent_fn callback, void *userdata,
                            struct host_uevent_monitor **ret)
{
        struct host_uevent_monitor *m = calloc(1, sizeof(*m));
        if (!m)
                return -ENOMEM;
        m->callback = callback;
        m->userdata = userdata;
        m->fd =
            socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_KOBJECT_UEVENT);
        if (m->fd < 0) {
                int r = negative_errno();
                free(m);
                return r;
        }
        const int rcvbuf = UEVENT_RCVBUF;
        (void)setsockopt(m->fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
        const struct sockaddr_nl addr = { .nl_family = AF_NETLINK,
                                          .nl_groups = UEVENT_GROUP_KERNEL };
        int r =
            bind(m->fd, (const struct sockaddr *)&addr, sizeof(addr)) < 0 ? negative_errno() : 0;
        if (r >= 0)
                r = sd_event_add_io(event, &m->source, m->fd, EPOLLIN, on_readable, m);
        if (r < 0) {
                host_uevent_monitor_free(m);
                return r;
        }
        *ret = m;
        return 0;
}

struct host_uevent_monitor *host_uevent_monitor_free(struct host_uevent_monitor *m)
{
        if (!m)
                return NULL;
        m->source = sd_event_source_disable_unref(m->source);
        if (m->fd >= 0)
                close(m->fd);
        free(m);
        return NULL;
}
