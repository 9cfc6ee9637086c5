/* SPDX-License-Identifier: Apache-2.0 */
#include "host/link-monitor.h"

#include <errno.h>
#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <netlink/attr.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <netlink/socket.h>

#include "host/netlink-request.h"
#include "util/log.h"
#include "util/macro.h"
#include "util/names.h"
#include "util/parse.h"

/* Datagrams read per wake-up: a flood of events must not starve the rest of the loop (the io
 * source is level-triggered and fires again). */
#define READS_PER_DISPATCH 64
/* A PF with hundreds of VFs can send large messages; anything above this is not a link
 * notification we can use and is dropped as a lost message. */
#define DATAGRAM_MAX (32u * 1024 * 1024)

struct link_monitor {
        struct nl_sock *sock;
        sd_event_source *source;
        link_event_fn callback;
        void *userdata;
        unsigned overruns;
        void *buf;
        size_t buf_size;
};

static const char *const link_event_kind_names[_LINK_EVENT_KIND_MAX] = {
        [LINK_EVENT_NEW] = "new",
        [LINK_EVENT_DEL] = "del",
};

const char *host_link_event_kind_to_string(enum link_event_kind k)
{
        return (unsigned)k < _LINK_EVENT_KIND_MAX ? link_event_kind_names[k] : "unknown";
}

/* RFC 2863 operational states, numbered as the kernel's IF_OPER_* values. */
static const char *const operstate_names[] = {
        "unknown", "notpresent", "down", "lowerlayerdown", "testing", "dormant", "up",
};

static struct nla_policy link_policy[IFLA_MAX + 1] = {
        [IFLA_IFNAME] = { .type = NLA_STRING, .maxlen = IFNAMSIZ },
        [IFLA_MTU] = { .type = NLA_U32 },
        [IFLA_OPERSTATE] = { .type = NLA_U8 },
        [IFLA_NUM_VF] = { .type = NLA_U32 },
};

int host_link_event_parse(const struct nlmsghdr *hdr, size_t len, struct link_event *ret)
{
        struct nlattr *tb[IFLA_MAX + 1];
        const struct ifinfomsg *ifi;

        if (!hdr || len < NLMSG_HDRLEN || hdr->nlmsg_len > len ||
            hdr->nlmsg_len < NLMSG_LENGTH(sizeof(*ifi)))
                return -EINVAL;
        if (hdr->nlmsg_type != RTM_NEWLINK && hdr->nlmsg_type != RTM_DELLINK)
                return -EINVAL;
        /* libnl's parser wants a mutable header; it does not write to it. */
        if (nlmsg_parse((struct nlmsghdr *)hdr, sizeof(*ifi), tb, IFLA_MAX, link_policy) < 0)
                return -EINVAL;
        ifi = NLMSG_DATA(hdr);
        *ret = (struct link_event){
                .kind = hdr->nlmsg_type == RTM_NEWLINK ? LINK_EVENT_NEW : LINK_EVENT_DEL,
                .ifindex = ifi->ifi_index,
                .up = ifi->ifi_flags & IFF_UP,
                .running = ifi->ifi_flags & IFF_RUNNING,
                .mtu = -1,
                .num_vfs = -1,
        };
        /* the policy guarantees a NUL-terminated string of at most IFNAMSIZ bytes */
        if (tb[IFLA_IFNAME])
                nla_strlcpy(ret->ifname, tb[IFLA_IFNAME], sizeof(ret->ifname));
        if (tb[IFLA_MTU] && nla_get_u32(tb[IFLA_MTU]) <= INT32_MAX)
                ret->mtu = (int)nla_get_u32(tb[IFLA_MTU]);
        if (tb[IFLA_OPERSTATE]) {
                unsigned s = nla_get_u8(tb[IFLA_OPERSTATE]);
                snprintf(ret->operstate, sizeof(ret->operstate), "%s",
                         s < ELEMENTSOF(operstate_names) ? operstate_names[s] : "unknown");
        }
        if (tb[IFLA_NUM_VF] && nla_get_u32(tb[IFLA_NUM_VF]) <= INT32_MAX)
                ret->num_vfs = (int)nla_get_u32(tb[IFLA_NUM_VF]);
        return 0;
}

static void report_resync(struct link_monitor *m, const char *why)
{
        const struct link_event ev = { .resync = true, .mtu = -1, .num_vfs = -1 };

        if (m->overruns++ == 0)
                log_warning("link monitor: %s; link events were lost, re-checking everything "
                            "(further losses are logged at debug level)",
                            why);
        else
                log_debug("link monitor: %s (%u times so far)", why, m->overruns);
        m->callback(&ev, m->userdata);
}

/* NLMSG_OK() without its signed/unsigned comparison (clang's -Wsign-compare rejects it). */
static bool nlmsg_fits(const struct nlmsghdr *h, int rem)
{
        return rem >= (int)sizeof(*h) && h->nlmsg_len >= sizeof(*h) &&
               h->nlmsg_len <= (unsigned)rem;
}

static void dispatch_datagram(struct link_monitor *m, size_t len)
{
        int rem = (int)len; /* NLMSG_NEXT counts down an int; len is at most DATAGRAM_MAX */

        for (const struct nlmsghdr *h = m->buf; nlmsg_fits(h, rem); h = NLMSG_NEXT(h, rem)) {
                struct link_event ev;

                if (h->nlmsg_type != RTM_NEWLINK && h->nlmsg_type != RTM_DELLINK)
                        continue;
                if (host_link_event_parse(h, (size_t)rem, &ev) < 0) {
                        log_debug("link monitor: skipping a malformed link message (%u bytes)",
                                  h->nlmsg_len);
                        continue;
                }
                m->callback(&ev, m->userdata);
        }
}

/* The size of the next datagram, or a negative errno (-EAGAIN when there is none). */
static ssize_t peek_size(int fd)
{
        for (;;) {
                ssize_t n = recv(fd, NULL, 0, MSG_PEEK | MSG_TRUNC | MSG_DONTWAIT);
                if (n >= 0)
                        return n;
                if (errno != EINTR)
                        return errno == EWOULDBLOCK ? -EAGAIN : negative_errno();
        }
}

static int ensure_buffer(struct link_monitor *m, size_t size)
{
        if (size <= m->buf_size)
                return 0;
        void *b = realloc(m->buf, size);
        if (!b)
                return -ENOMEM;
        m->buf = b;
        m->buf_size = size;
        return 0;
}

/* Reads one datagram. 1 when one was handled, 0 when the socket is drained, negative errno on
 * errors other than lost messages. */
static int read_one(struct link_monitor *m, int fd)
{
        struct sockaddr_nl sender = { 0 };
        struct iovec iov;
        char sink; /* receives the first byte of a datagram that is dropped */
        struct msghdr msg = {
                .msg_name = &sender, .msg_namelen = sizeof(sender), .msg_iov = &iov, .msg_iovlen = 1
        };
        ssize_t size = peek_size(fd), n;
        bool drop;

        if (size == -ENOBUFS) {
                report_resync(m, "socket receive buffer overrun");
                return 1;
        }
        if (size == -EAGAIN)
                return 0;
        if (size < 0)
                return (int)size;
        /* Too large or no memory: consume it with a tiny buffer (MSG_TRUNC) and resync. */
        drop = (size_t)size > DATAGRAM_MAX || ensure_buffer(m, (size_t)size) < 0;
        iov =
            (struct iovec){ .iov_base = drop ? &sink : m->buf, .iov_len = drop ? 1 : (size_t)size };
        do
                n = recvmsg(fd, &msg, MSG_DONTWAIT);
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
        if (drop || (msg.msg_flags & MSG_TRUNC)) {
                report_resync(m, "a link message too large to read was dropped");
                return 1;
        }
        if (sender.nl_pid != 0) { /* only the kernel speaks for links */
                log_debug("link monitor: ignoring a message from netlink port %u", sender.nl_pid);
                return 1;
        }
        dispatch_datagram(m, (size_t)n);
        return 1;
}

static int on_readable(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
        struct link_monitor *m = userdata;

        for (int i = 0; i < READS_PER_DISPATCH; i++) {
                int r = read_one(m, fd);
                if (r == 0)
                        return 0;
                if (r < 0) {
                        /* Unknown socket trouble: stop listening rather than spin; the
                         * periodic check keeps repairing drift. */
                        log_error_errno(r, "link monitor: cannot read link events; "
                                           "link events are disabled");
                        (void)sd_event_source_set_enabled(s, SD_EVENT_OFF);
                        report_resync(m, "the netlink socket failed");
                        return 0;
                }
        }
        return 0;
}

static int open_socket(size_t rcvbuf, struct nl_sock **ret)
{
        _cleanup_(host_nl_socket_freep) struct nl_sock *sk = nl_socket_alloc();
        int size = (int)(rcvbuf > INT32_MAX / 2 ? INT32_MAX / 2 : rcvbuf);
        int fd;

        if (!sk)
                return -ENOMEM;
        nl_socket_disable_seq_check(sk); /* notifications have no sequence */
        if (nl_connect(sk, NETLINK_ROUTE) < 0)
                return log_error_errno(-EIO, "link monitor: cannot open an rtnetlink socket");
        if (nl_socket_add_membership(sk, RTNLGRP_LINK) < 0)
                return log_error_errno(-EIO, "link monitor: cannot subscribe to link events");
        if (nl_socket_set_nonblocking(sk) < 0)
                return log_error_errno(-EIO, "link monitor: cannot make the socket non-blocking");
        fd = nl_socket_get_fd(sk);
        /* Privileged callers may exceed net.core.rmem_max; others get what the limit allows. */
        if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size)) < 0 &&
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size)) < 0)
                log_debug("link monitor: cannot set the receive buffer to %d bytes: %m", size);
        *ret = TAKE_PTR(sk);
        return 0;
}

int host_link_monitor_new(sd_event *event, size_t rcvbuf, link_event_fn callback, void *userdata,
                          struct link_monitor **ret)
{
        struct link_monitor *m;
        int r;

        if (!event || !callback || !ret)
                return -EINVAL;
        m = calloc(1, sizeof(*m));
        if (!m)
                return -ENOMEM;
        m->callback = callback;
        m->userdata = userdata;
        r = open_socket(rcvbuf ? rcvbuf : LINK_MONITOR_DEFAULT_RCVBUF, &m->sock);
        if (r >= 0)
                r = ensure_buffer(m, 64 * 1024);
        if (r >= 0) {
                r = sd_event_add_io(event, &m->source, nl_socket_get_fd(m->sock), EPOLLIN,
                                    on_readable, m);
                if (r < 0)
                        log_error_errno(r, "link monitor: cannot watch the netlink socket");
        }
        if (r < 0) {
                host_link_monitor_free(m);
                return r;
        }
        (void)sd_event_source_set_description(m->source, "link-monitor");
        *ret = m;
        return 0;
}

struct link_monitor *host_link_monitor_free(struct link_monitor *m)
{
        if (!m)
                return NULL;
        sd_event_source_disable_unref(m->source);
        if (m->sock)
                nl_socket_free(m->sock);
        free(m->buf);
        free(m);
        return NULL;
}

unsigned host_link_monitor_overruns(const struct link_monitor *m)
{
        return m ? m->overruns : 0;
}

static bool inventory_knows_netdev(const struct inventory *inv, const char *ifname)
{
        if (!inv)
                return false;
        if (inventory_find_pf_by_netdev(inv, ifname))
                return true;
        for (size_t i = 0; i < inv->n_pfs; i++)
                for (size_t j = 0; j < inv->pfs[i].n_vfs; j++) {
                        const struct vf_info *vf = &inv->pfs[i].vfs[j];
                        for (size_t k = 0; k < vf->n_netdevs; k++)
                                if (strcmp(vf->netdevs[k].name, ifname) == 0)
                                        return true;
                }
        return false;
}

static bool netdev_has_device(const char *sysfs_root, const char *ifname)
{
        char path[4096];
        struct stat st;

        if (!sysfs_root ||
            path_printf(path, sizeof(path), "%s/class/net/%s/device", sysfs_root, ifname) < 0)
                return false;
        return stat(path, &st) == 0;
}

bool host_link_event_concerns_sriov(const struct link_event *ev, const struct inventory *inventory,
                                    const char *sysfs_root)
{
        if (!ev)
                return false;
        if (ev->resync)
                return true;
        /* the kernel never sends a name like "../x"; a forged one must not become a path */
        if (!ifname_is_valid(ev->ifname))
                return false;
        if (inventory_knows_netdev(inventory, ev->ifname))
                return true;
        return ev->kind == LINK_EVENT_NEW && netdev_has_device(sysfs_root, ev->ifname);
}
