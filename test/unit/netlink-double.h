/* SPDX-License-Identifier: Apache-2.0 */
/* A netlink double for the tests: a libnl socket whose send and receive are overwritten
 * (nl_cb_overwrite_send/recv), so the product's requests go through libnl and
 * host_netlink_transact() exactly as with the kernel, and come back as the bytes the kernel
 * would answer. It plays two kernel parts, with the attribute layout of the uapi headers:
 *
 * - the RDMA subsystem's nldev (drivers/infiniband/core/nldev.c, Linux 6.1):
 *   SYS_GET (netns mode, copy-on-fork), SYS_SET (EBUSY while another network namespace
 *   exists, EINVAL for a mode above 1), GET as a dump (fill_dev_info's attributes in its
 *   order, no 64-bit padding as on x86-64) and SET with DEV_INDEX + NET_NS_FD
 *   (ib_device_set_netns_put: the fd must be a network namespace, EOPNOTSUPP in shared mode
 *   or for a driver without disassociate_ucontext; a device only visible in its own namespace
 *   when the mode is exclusive);
 * - rtnetlink's RTM_SETLINK with IFLA_VFINFO_LIST (do_setvfinfo, handle_infiniband_guid):
 *   IFLA_VF_IB_NODE_GUID / IFLA_VF_IB_PORT_GUID with struct ifla_vf_guid, EOPNOTSUPP on a
 *   non-InfiniBand PF, EINVAL past the PF's VFs (as mlx5's ndo_set_vf_guid), ENODEV for an
 *   unknown ifindex; and an RTM_NEWLINK carrying the VFs' GUIDs as rtnl_fill_vfinfo writes it;
 * - rtnetlink's RTM_GETLINK of the PF (rtnl_getlink: by ifindex, or by IFLA_IFNAME when the
 *   index is 0; ENODEV otherwise): IFLA_NUM_VF and IFLA_VFINFO_LIST only with RTEXT_FILTER_VF
 *   in IFLA_EXT_MASK, each VF's IFLA_VF_STATS (struct nldouble_vf_stats, zeros as the kernel
 *   reports for a driver without ndo_get_vf_stats) unless RTEXT_FILTER_SKIP_STATS.
 *
 * Acknowledgements are as the kernel sends them to a socket with NETLINK_CAP_ACK (as
 * host_netlink_open() asks): NLMSG_ERROR with NLM_F_CAPPED and only the request's header;
 * dumps end with NLMSG_DONE and no ACK. Requests are kept (bytes) for the tests to check.
 * Answers wait in a queue of the asking thread, as each socket receives its own; a test whose
 * threads ask at once serialises the requests themselves. */
#pragma once

#include <errno.h>
#include <fcntl.h>
#include <linux/if_arp.h>
#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/nsfs.h>
#include <linux/rtnetlink.h>
#include <rdma/rdma_netlink.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>

#include <netlink/attr.h>
#include <netlink/handlers.h>
#include <netlink/msg.h>
#include <netlink/socket.h>

#define NLDOUBLE_MAX_DEVS    8
#define NLDOUBLE_MAX_VFS     8
#define NLDOUBLE_MAX_QUEUE   16
#define NLDOUBLE_MAX_REQUEST 1024

struct nldouble_dev {
        uint32_t index;
        char name[64];
        uint64_t node_guid;
        const char *protocol;  /* "ib", "roce" */
        bool can_disassociate; /* mlx5, mlx4, irdma...: yes; rxe, siw: no */
        ino_t netns;           /* the namespace it is in (inode of its nsfs file) */
};

struct nldouble_guid {
        uint64_t node, port;
};

/* what a driver's ndo_get_vf_stats fills in (struct ifla_vf_stats) */
struct nldouble_vf_stats {
        uint64_t rx_packets, tx_packets, rx_bytes, tx_bytes, broadcast, multicast, rx_dropped,
            tx_dropped;
};

struct nldouble {
        /* nldev */
        uint8_t netns_mode;      /* 1 shared (the kernel's default), 0 exclusive */
        bool other_netns_exists; /* rdma_compatdev_set() then answers EBUSY */
        ino_t init_netns;        /* the test's own namespace */
        struct nldouble_dev devs[NLDOUBLE_MAX_DEVS];
        size_t n_devs;
        /* rtnetlink: one PF */
        int pf_ifindex;
        char pf_name[16];
        unsigned short pf_type; /* ARPHRD_INFINIBAND or ARPHRD_ETHER */
        int pf_num_vfs;
        struct nldouble_guid vf_guid[NLDOUBLE_MAX_VFS];
        struct nldouble_vf_stats vf_stats[NLDOUBLE_MAX_VFS];
        /* what it was asked */
        unsigned char request[NLDOUBLE_MAX_REQUEST];
        size_t request_len;
        unsigned n_requests;
        uint64_t busy_usec; /* time spent answering (the "kernel's own time") */
};

/* Answers not received yet: per thread, as each socket gets its own answers from the kernel
 * (a test with several threads asking at once serialises the requests themselves). */
struct nldouble_queue {
        struct nl_msg *msgs[NLDOUBLE_MAX_QUEUE];
        size_t head, tail;
};
static _Thread_local struct nldouble_queue nldouble_answers;

/* libnl's overwritten send/recv have no user data: one double per test process at a time. */
static struct nldouble *nldouble_current;

static inline ino_t nldouble_netns_ino(int fd)
{
        struct stat st;
        return fstat(fd, &st) == 0 ? st.st_ino : 0;
}

static inline void nldouble_init(struct nldouble *d)
{
        *d = (struct nldouble){ .netns_mode = 1,
                                .pf_ifindex = 7,
                                .pf_name = "ibp59s0f0",
                                .pf_type = ARPHRD_INFINIBAND };
        int fd = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
        d->init_netns = nldouble_netns_ino(fd);
        if (fd >= 0)
                close(fd);
        nldouble_current = d;
}

static inline void nldouble_add_dev(struct nldouble *d, uint32_t index, const char *name,
                                    uint64_t guid, const char *protocol, bool can_disassociate)
{
        struct nldouble_dev *v = &d->devs[d->n_devs++];
        *v = (struct nldouble_dev){ .index = index,
                                    .node_guid = guid,
                                    .protocol = protocol,
                                    .can_disassociate = can_disassociate,
                                    .netns = d->init_netns };
        snprintf(v->name, sizeof(v->name), "%s", name);
}

static inline void nldouble_done(struct nldouble *d)
{
        (void)d;
        struct nldouble_queue *q = &nldouble_answers;
        while (q->head != q->tail)
                nlmsg_free(q->msgs[q->head++ % NLDOUBLE_MAX_QUEUE]);
        nldouble_current = NULL;
}

static inline void nldouble_queue(struct nldouble *d, struct nl_msg *m)
{
        (void)d;
        nldouble_answers.msgs[nldouble_answers.tail++ % NLDOUBLE_MAX_QUEUE] = m;
}

/* netlink_ack() for a socket with NETLINK_CAP_ACK: the request's header only. */
static inline void nldouble_ack(struct nldouble *d, const struct nlmsghdr *req, int error)
{
        struct nl_msg *m = nlmsg_alloc();
        struct nlmsghdr *h = nlmsg_put(m, req->nlmsg_pid, req->nlmsg_seq, NLMSG_ERROR,
                                       sizeof(struct nlmsgerr), NLM_F_CAPPED);
        struct nlmsgerr *e = nlmsg_data(h);
        e->error = error;
        e->msg = *req;
        nldouble_queue(d, m);
}

/* The namespace of the calling thread: nldev answers for sock_net(), the requester's. */
static inline ino_t nldouble_caller_netns(void)
{
        int fd = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
        ino_t ino = nldouble_netns_ino(fd);
        if (fd >= 0)
                close(fd);
        return ino;
}

static inline bool nldouble_visible(const struct nldouble *d, const struct nldouble_dev *v)
{
        return d->netns_mode == 1 || v->netns == nldouble_caller_netns();
}

static inline struct nldouble_dev *nldouble_dev_by_index(struct nldouble *d, uint32_t index)
{
        for (size_t i = 0; i < d->n_devs; i++)
                if (d->devs[i].index == index && nldouble_visible(d, &d->devs[i]))
                        return &d->devs[i];
        return NULL;
}

/* fill_dev_info(), Linux 6.1 order; x86-64 needs no RDMA_NLDEV_ATTR_PAD before u64s. */
static inline void nldouble_fill_dev(struct nl_msg *m, const struct nldouble_dev *v)
{
        nla_put_u32(m, RDMA_NLDEV_ATTR_DEV_INDEX, v->index);
        nla_put_string(m, RDMA_NLDEV_ATTR_DEV_NAME, v->name);
        nla_put_u32(m, RDMA_NLDEV_ATTR_PORT_INDEX, 1);
        nla_put_u64(m, RDMA_NLDEV_ATTR_CAP_FLAGS, 0x1425321c36ULL);
        nla_put_string(m, RDMA_NLDEV_ATTR_FW_VERSION, "20.31.1014");
        nla_put_u64(m, RDMA_NLDEV_ATTR_NODE_GUID, v->node_guid);
        nla_put_u64(m, RDMA_NLDEV_ATTR_SYS_IMAGE_GUID, v->node_guid);
        nla_put_u8(m, RDMA_NLDEV_ATTR_DEV_NODE_TYPE, 1 /* RDMA_NODE_IB_CA */);
        nla_put_u8(m, RDMA_NLDEV_ATTR_DEV_DIM, 1);
        nla_put_string(m, RDMA_NLDEV_ATTR_DEV_PROTOCOL, v->protocol);
}

static inline int nldouble_nldev(struct nldouble *d, struct nlmsghdr *req)
{
        int cmd = req->nlmsg_type & ((1 << 10) - 1);
        struct nlattr *tb[RDMA_NLDEV_ATTR_MAX];
        if (nlmsg_parse(req, 0, tb, RDMA_NLDEV_ATTR_MAX - 1, NULL) < 0)
                return -EINVAL;
        switch (cmd) {
        case RDMA_NLDEV_CMD_SYS_GET: {
                struct nl_msg *m = nlmsg_alloc();
                nlmsg_put(m, req->nlmsg_pid, req->nlmsg_seq,
                          RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_SYS_GET), 0, 0);
                nla_put_u8(m, RDMA_NLDEV_SYS_ATTR_NETNS_MODE, d->netns_mode);
                nla_put_u8(m, RDMA_NLDEV_SYS_ATTR_COPY_ON_FORK, 1);
                nldouble_queue(d, m);
                return 0;
        }
        case RDMA_NLDEV_CMD_SYS_SET: {
                if (!tb[RDMA_NLDEV_SYS_ATTR_NETNS_MODE] ||
                    nla_len(tb[RDMA_NLDEV_SYS_ATTR_NETNS_MODE]) < 1)
                        return -EINVAL;
                uint8_t mode = nla_get_u8(tb[RDMA_NLDEV_SYS_ATTR_NETNS_MODE]);
                if (mode > 1)
                        return -EINVAL;
                if (mode == d->netns_mode)
                        return 0;
                if (d->other_netns_exists)
                        return -EBUSY;
                d->netns_mode = mode;
                return 0;
        }
        case RDMA_NLDEV_CMD_GET: {
                if (!(req->nlmsg_flags & NLM_F_DUMP))
                        return -EINVAL; /* doit needs DEV_INDEX; the product only dumps */
                for (size_t i = 0; i < d->n_devs; i++) {
                        if (!nldouble_visible(d, &d->devs[i]))
                                continue;
                        struct nl_msg *m = nlmsg_alloc();
                        nlmsg_put(m, req->nlmsg_pid, req->nlmsg_seq,
                                  RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_GET), 0,
                                  NLM_F_MULTI);
                        nldouble_fill_dev(m, &d->devs[i]);
                        nldouble_queue(d, m);
                }
                struct nl_msg *m = nlmsg_alloc();
                struct nlmsghdr *h = nlmsg_put(m, req->nlmsg_pid, req->nlmsg_seq, NLMSG_DONE,
                                               sizeof(int), NLM_F_MULTI);
                memset(nlmsg_data(h), 0, sizeof(int));
                nldouble_queue(d, m);
                return 1; /* no ACK after a dump */
        }
        case RDMA_NLDEV_CMD_SET: {
                if (!tb[RDMA_NLDEV_ATTR_DEV_INDEX])
                        return -EINVAL;
                struct nldouble_dev *v =
                    nldouble_dev_by_index(d, nla_get_u32(tb[RDMA_NLDEV_ATTR_DEV_INDEX]));
                if (!v)
                        return -EINVAL;
                if (!tb[RDMA_NLDEV_NET_NS_FD])
                        return 0;
                int fd = (int)nla_get_u32(tb[RDMA_NLDEV_NET_NS_FD]);
                if (fcntl(fd, F_GETFD) < 0)
                        return -EBADF;
                if (ioctl(fd, NS_GET_NSTYPE) != CLONE_NEWNET)
                        return -EINVAL;
                if (!v->can_disassociate || d->netns_mode == 1)
                        return -EOPNOTSUPP;
                v->netns = nldouble_netns_ino(fd);
                return 0;
        }
        default:
                return -EOPNOTSUPP;
        }
}

/* rtnl_fill_vfinfo() for one VF: GUIDs on an InfiniBand PF (ndo_get_vf_guid), stats unless
 * RTEXT_FILTER_SKIP_STATS (x86-64 puts no IFLA_VF_STATS_PAD before the u64s). */
static inline void nldouble_fill_vf(struct nl_msg *m, const struct nldouble *d, uint32_t vf,
                                    uint32_t ext_mask)
{
        struct nlattr *info = nla_nest_start(m, IFLA_VF_INFO);
        struct ifla_vf_mac mac = { .vf = vf };
        struct ifla_vf_broadcast bc = { 0 };
        struct ifla_vf_vlan vlan = { .vf = vf };
        struct ifla_vf_vlan_info vi = { .vf = vf, .vlan_proto = htons(ETH_P_8021Q) };
        struct ifla_vf_tx_rate tx = { .vf = vf };
        struct ifla_vf_rate rate = { .vf = vf };
        struct ifla_vf_spoofchk sc = { .vf = vf, .setting = (uint32_t)-1 };
        struct ifla_vf_link_state ls = { .vf = vf, .link_state = IFLA_VF_LINK_STATE_AUTO };
        struct ifla_vf_rss_query_en rq = { .vf = vf, .setting = (uint32_t)-1 };
        struct ifla_vf_trust tr = { .vf = vf, .setting = 0 };
        struct ifla_vf_guid ng = { .vf = vf, .guid = d->vf_guid[vf].node };
        struct ifla_vf_guid pg = { .vf = vf, .guid = d->vf_guid[vf].port };
        nla_put(m, IFLA_VF_MAC, sizeof(mac), &mac);
        nla_put(m, IFLA_VF_BROADCAST, sizeof(bc), &bc);
        nla_put(m, IFLA_VF_VLAN, sizeof(vlan), &vlan);
        struct nlattr *vl = nla_nest_start(m, IFLA_VF_VLAN_LIST);
        nla_put(m, IFLA_VF_VLAN_INFO, sizeof(vi), &vi);
        nla_nest_end(m, vl);
        nla_put(m, IFLA_VF_TX_RATE, sizeof(tx), &tx);
        nla_put(m, IFLA_VF_RATE, sizeof(rate), &rate);
        nla_put(m, IFLA_VF_SPOOFCHK, sizeof(sc), &sc);
        nla_put(m, IFLA_VF_LINK_STATE, sizeof(ls), &ls);
        nla_put(m, IFLA_VF_RSS_QUERY_EN, sizeof(rq), &rq);
        nla_put(m, IFLA_VF_TRUST, sizeof(tr), &tr);
        if (d->pf_type == ARPHRD_INFINIBAND) {
                nla_put(m, IFLA_VF_IB_NODE_GUID, sizeof(ng), &ng);
                nla_put(m, IFLA_VF_IB_PORT_GUID, sizeof(pg), &pg);
        }
        if (!(ext_mask & RTEXT_FILTER_SKIP_STATS)) {
                const struct nldouble_vf_stats *st = &d->vf_stats[vf];
                struct nlattr *stats = nla_nest_start(m, IFLA_VF_STATS);
                nla_put_u64(m, IFLA_VF_STATS_RX_PACKETS, st->rx_packets);
                nla_put_u64(m, IFLA_VF_STATS_TX_PACKETS, st->tx_packets);
                nla_put_u64(m, IFLA_VF_STATS_RX_BYTES, st->rx_bytes);
                nla_put_u64(m, IFLA_VF_STATS_TX_BYTES, st->tx_bytes);
                nla_put_u64(m, IFLA_VF_STATS_BROADCAST, st->broadcast);
                nla_put_u64(m, IFLA_VF_STATS_MULTICAST, st->multicast);
                nla_put_u64(m, IFLA_VF_STATS_RX_DROPPED, st->rx_dropped);
                nla_put_u64(m, IFLA_VF_STATS_TX_DROPPED, st->tx_dropped);
                nla_nest_end(m, stats);
        }
        nla_nest_end(m, info);
}

/* The RTM_NEWLINK the kernel answers an RTM_GETLINK of the PF with, for IFLA_EXT_MASK
 * ext_mask (the parts the VF list parser reads); caller frees. */
static inline struct nl_msg *nldouble_newlink_mask(const struct nldouble *d, uint32_t ext_mask)
{
        struct nl_msg *m = nlmsg_alloc_size(16384);
        struct nlmsghdr *h = nlmsg_put(m, 0, 1, RTM_NEWLINK, sizeof(struct ifinfomsg), 0);
        struct ifinfomsg *ifi = nlmsg_data(h);
        *ifi = (struct ifinfomsg){ .ifi_type = d->pf_type, .ifi_index = d->pf_ifindex };
        nla_put_string(m, IFLA_IFNAME, d->pf_name);
        if (!(ext_mask & RTEXT_FILTER_VF))
                return m; /* rtnl_vf_ports_fill/rtnl_fill_vf: nothing of the VFs */
        nla_put_u32(m, IFLA_NUM_VF, (uint32_t)d->pf_num_vfs);
        struct nlattr *list = nla_nest_start(m, IFLA_VFINFO_LIST);
        for (int vf = 0; vf < d->pf_num_vfs; vf++)
                nldouble_fill_vf(m, d, (uint32_t)vf, ext_mask);
        nla_nest_end(m, list);
        return m;
}

/* The same without stats, as the VF list (not the metrics) asks for it. */
static inline struct nl_msg *nldouble_newlink(const struct nldouble *d)
{
        return nldouble_newlink_mask(d, RTEXT_FILTER_VF | RTEXT_FILTER_SKIP_STATS);
}

/* rtnl_getlink(): the PF by ifindex, or by IFLA_IFNAME when the index is 0. */
static inline int nldouble_getlink(struct nldouble *d, struct nlmsghdr *req)
{
        struct nlattr *tb[IFLA_MAX + 1];
        if (nlmsg_parse(req, sizeof(struct ifinfomsg), tb, IFLA_MAX, NULL) < 0)
                return -EINVAL;
        const struct ifinfomsg *ifi = nlmsg_data(req);
        char name[16] = "";
        if (tb[IFLA_IFNAME])
                nla_strlcpy(name, tb[IFLA_IFNAME], sizeof(name));
        if (ifi->ifi_index > 0 ? ifi->ifi_index != d->pf_ifindex
                               : !tb[IFLA_IFNAME] || strcmp(name, d->pf_name) != 0)
                return ifi->ifi_index > 0 || tb[IFLA_IFNAME] ? -ENODEV : -EINVAL;
        uint32_t ext_mask = tb[IFLA_EXT_MASK] ? nla_get_u32(tb[IFLA_EXT_MASK]) : 0;
        struct nl_msg *m = nldouble_newlink_mask(d, ext_mask);
        nlmsg_hdr(m)->nlmsg_pid = req->nlmsg_pid;
        nlmsg_hdr(m)->nlmsg_seq = req->nlmsg_seq;
        nldouble_queue(d, m);
        return 0;
}

static inline int nldouble_setlink(struct nldouble *d, struct nlmsghdr *req)
{
        struct nlattr *tb[IFLA_MAX + 1];
        if (nlmsg_parse(req, sizeof(struct ifinfomsg), tb, IFLA_MAX, NULL) < 0)
                return -EINVAL;
        const struct ifinfomsg *ifi = nlmsg_data(req);
        if (ifi->ifi_index != d->pf_ifindex)
                return -ENODEV;
        if (!tb[IFLA_VFINFO_LIST])
                return 0;
        struct nlattr *a;
        int rem;
        nla_for_each_nested(a, tb[IFLA_VFINFO_LIST], rem)
        {
                struct nlattr *v[IFLA_VF_MAX + 1];
                if (nla_type(a) != IFLA_VF_INFO || nla_len(a) < NLA_HDRLEN ||
                    nla_parse_nested(v, IFLA_VF_MAX, a, NULL) < 0)
                        return -EINVAL;
                for (int type = IFLA_VF_IB_NODE_GUID; type <= IFLA_VF_IB_PORT_GUID; type++) {
                        if (!v[type])
                                continue;
                        if (nla_len(v[type]) < (int)sizeof(struct ifla_vf_guid))
                                return -ERANGE; /* the policy's minimum length */
                        struct ifla_vf_guid g;
                        memcpy(&g, nla_data(v[type]), sizeof(g));
                        if (g.vf >= INT32_MAX)
                                return -EINVAL;
                        if (d->pf_type != ARPHRD_INFINIBAND)
                                return -EOPNOTSUPP;
                        if ((int)g.vf >= d->pf_num_vfs)
                                return -EINVAL;
                        if (type == IFLA_VF_IB_NODE_GUID)
                                d->vf_guid[g.vf].node = g.guid;
                        else
                                d->vf_guid[g.vf].port = g.guid;
                        return 0; /* do_setvfinfo returns after the GUID it handled */
                }
        }
        return 0;
}

static inline int nldouble_send(struct nl_sock *sk, struct nl_msg *msg)
{
        struct nldouble *d = nldouble_current;
        struct nlmsghdr *req = nlmsg_hdr(msg);
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        d->n_requests++;
        d->request_len = req->nlmsg_len < sizeof(d->request) ? req->nlmsg_len : sizeof(d->request);
        memcpy(d->request, req, d->request_len);
        int r;
        if (req->nlmsg_type >= RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, 0) &&
            req->nlmsg_type < RDMA_NL_GET_TYPE((RDMA_NL_NLDEV + 1), 0))
                r = nldouble_nldev(d, req);
        else if (req->nlmsg_type == RTM_SETLINK)
                r = nldouble_setlink(d, req);
        else if (req->nlmsg_type == RTM_GETLINK)
                r = nldouble_getlink(d, req);
        else
                r = -EOPNOTSUPP;
        if (r <= 0 && (r < 0 || (req->nlmsg_flags & NLM_F_ACK)))
                nldouble_ack(d, req, r);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        d->busy_usec +=
            (uint64_t)((t1.tv_sec - t0.tv_sec) * 1000000000LL + (t1.tv_nsec - t0.tv_nsec)) / 1000;
        return (int)req->nlmsg_len;
}

static inline int nldouble_recv(struct nl_sock *sk, struct sockaddr_nl *nla, unsigned char **buf,
                                struct ucred **creds)
{
        struct nldouble *d = nldouble_current;
        if (creds)
                *creds = NULL;
        (void)d;
        struct nldouble_queue *q = &nldouble_answers;
        if (q->head == q->tail)
                return -NLE_AGAIN; /* the kernel would block: a test bug */
        struct nl_msg *m = q->msgs[q->head++ % NLDOUBLE_MAX_QUEUE];
        struct nlmsghdr *h = nlmsg_hdr(m);
        *buf = malloc(h->nlmsg_len);
        memcpy(*buf, h, h->nlmsg_len);
        int len = (int)h->nlmsg_len;
        nlmsg_free(m);
        if (nla)
                *nla = (struct sockaddr_nl){ .nl_family = AF_NETLINK };
        return len;
}

/* A socket talking to the double; free with nl_socket_free(). */
static inline struct nl_sock *nldouble_socket(void)
{
        struct nl_sock *sk = nl_socket_alloc();
        struct nl_cb *cb = nl_socket_get_cb(sk);
        nl_cb_overwrite_send(cb, nldouble_send);
        nl_cb_overwrite_recv(cb, nldouble_recv);
        nl_cb_put(cb);
        return sk;
}
