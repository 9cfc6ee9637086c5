/* SPDX-License-Identifier: Apache-2.0 */
/* One netlink request and its answer, with the kernel's own errno and extended-ack text.
 *
 * libnl turns kernel errors into its NLE_* codes, which merges EOPNOTSUPP-vs-EINVAL style
 * distinctions callers need (an unsupported VF attribute is not a failure). host_netlink_transact()
 * sends a request (NLM_F_ACK is added), hands every reply message to on_reply, and returns 0,
 * the kernel's negative errno from the ACK, or a negative errno for local failures. When the
 * kernel attached a message (extack, e.g. "PF still in reset state"), it is copied to extack.
 * Shared by the rtnetlink and devlink modules of lib/host only. */
#pragma once

#include <stddef.h>

#include <netlink/msg.h>
#include <netlink/socket.h>

typedef int (*netlink_reply_fn)(struct nl_msg *msg, void *userdata);

/* A connected socket for protocol (NETLINK_ROUTE, NETLINK_GENERIC) with extended ACKs on and a
 * receive buffer of at least rcvbuf bytes (0 = libnl default). */
int host_netlink_open(int protocol, size_t rcvbuf, struct nl_sock **ret);

int host_netlink_transact(struct nl_sock *sk, struct nl_msg *req, netlink_reply_fn on_reply,
                          void *userdata, char *extack, size_t extack_size);

static inline void host_nl_socket_freep(struct nl_sock **sk)
{
        if (*sk)
                nl_socket_free(*sk);
}
static inline void host_nlmsg_freep(struct nl_msg **m)
{
        if (*m)
                nlmsg_free(*m);
}
