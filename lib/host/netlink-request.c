/* SPDX-License-Identifier: Apache-2.0 */
#include "host/netlink-request.h"

#include <errno.h>
#include <linux/netlink.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>

#include <netlink/attr.h>
#include <netlink/errno.h>
#include <netlink/handlers.h>
#include <netlink/netlink.h>

#ifndef SOL_NETLINK
#define SOL_NETLINK 270
#endif

struct transact_ctx {
        netlink_reply_fn on_reply;
        void *userdata;
        int error; /* kernel errno from the ACK, or the reply handler's error */
        bool done;
        char *extack;
        size_t extack_size;
};

static int libnl_error_to_errno(int nle)
{
        switch (nle < 0 ? -nle : nle) {
        case NLE_NOMEM:
                return -ENOMEM;
        case NLE_MSG_TRUNC:
        case NLE_MSGSIZE:
                return -EMSGSIZE;
        case NLE_AGAIN:
                return -EAGAIN;
        case NLE_PERM:
                return -EPERM;
        default:
                return -EIO;
        }
}

int host_netlink_open(int protocol, size_t rcvbuf, struct nl_sock **ret)
{
        struct nl_sock *sk = nl_socket_alloc();
        if (!sk)
                return -ENOMEM;
        int r = nl_connect(sk, protocol);
        if (r < 0) {
                nl_socket_free(sk);
                return r == -NLE_PROTO_MISMATCH ? -EPROTONOSUPPORT : libnl_error_to_errno(r);
        }
        int one = 1;
        /* Best effort: older kernels have no extended ACKs, requests still work. */
        (void)setsockopt(nl_socket_get_fd(sk), SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one));
        (void)setsockopt(nl_socket_get_fd(sk), SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof(one));
        if (rcvbuf > 0) {
                /* One reply can be larger than a page (a PF with hundreds of VFs): peek at
                 * each datagram's size and read it whole. */
                nl_socket_enable_msg_peek(sk);
                (void)nl_socket_set_msg_buf_size(sk, rcvbuf);
                (void)nl_socket_set_buffer_size(sk, (int)rcvbuf, 0);
        }
        *ret = sk;
        return 0;
}

static void copy_extack(struct transact_ctx *c, const struct nlmsgerr *e)
{
        const struct nlmsghdr *hdr = (const struct nlmsghdr *)((const char *)e - NLMSG_HDRLEN);
        if (!c->extack || !(hdr->nlmsg_flags & NLM_F_ACK_TLVS))
                return;
        size_t offset = NLMSG_HDRLEN + sizeof(*e);
        if (!(hdr->nlmsg_flags & NLM_F_CAPPED))
                offset += NLMSG_ALIGN(e->msg.nlmsg_len - NLMSG_HDRLEN);
        if (offset >= hdr->nlmsg_len)
                return;
        struct nlattr *tb[NLMSGERR_ATTR_MAX + 1];
        if (nla_parse(tb, NLMSGERR_ATTR_MAX, (struct nlattr *)((char *)hdr + offset),
                      (int)(hdr->nlmsg_len - offset), NULL) < 0 ||
            !tb[NLMSGERR_ATTR_MSG])
                return;
        nla_strlcpy(c->extack, tb[NLMSGERR_ATTR_MSG], c->extack_size);
}

static int on_error(struct sockaddr_nl *nla, struct nlmsgerr *e, void *arg)
{
        struct transact_ctx *c = arg;
        c->error = e->error;
        c->done = true;
        copy_extack(c, e);
        return NL_STOP;
}

static int on_ack(struct nl_msg *msg, void *arg)
{
        struct transact_ctx *c = arg;
        c->done = true;
        return NL_STOP;
}

static int on_valid(struct nl_msg *msg, void *arg)
{
        struct transact_ctx *c = arg;
        if (!c->on_reply || c->error < 0)
                return NL_OK;
        int r = c->on_reply(msg, c->userdata);
        if (r < 0)
                c->error = r;
        return NL_OK;
}

int host_netlink_transact(struct nl_sock *sk, struct nl_msg *req, netlink_reply_fn on_reply,
                          void *userdata, char *extack, size_t extack_size)
{
        struct transact_ctx c = {
                .on_reply = on_reply,
                .userdata = userdata,
                .extack = extack,
                .extack_size = extack_size,
        };
        if (extack && extack_size)
                extack[0] = '\0';

        /* A clone of the socket's own callbacks: a socket whose send and receive are
         * overwritten (the netlink doubles of the tests) keeps them for this exchange. */
        struct nl_cb *own = nl_socket_get_cb(sk); /* a reference of ours */
        struct nl_cb *cb = own ? nl_cb_clone(own) : NULL;
        if (own)
                nl_cb_put(own);
        if (!cb)
                return -ENOMEM;
        nl_cb_err(cb, NL_CB_CUSTOM, on_error, &c);
        nl_cb_set(cb, NL_CB_ACK, NL_CB_CUSTOM, on_ack, &c);
        nl_cb_set(cb, NL_CB_FINISH, NL_CB_CUSTOM, on_ack, &c);
        nl_cb_set(cb, NL_CB_VALID, NL_CB_CUSTOM, on_valid, &c);

        nlmsg_hdr(req)->nlmsg_flags |= NLM_F_ACK;
        int r = nl_send_auto(sk, req);
        if (r < 0) {
                nl_cb_put(cb);
                return libnl_error_to_errno(r);
        }
        while (!c.done) {
                r = nl_recvmsgs(sk, cb);
                if (r < 0 && !c.done) {
                        nl_cb_put(cb);
                        return libnl_error_to_errno(r);
                }
        }
        nl_cb_put(cb);
        return c.error;
}
