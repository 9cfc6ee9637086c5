/* SPDX-License-Identifier: Apache-2.0 */
#include "host/rdma-netlink.h"

#include <errno.h>
#include <linux/netlink.h>
#include <rdma/rdma_netlink.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <netlink/attr.h>
#include <netlink/msg.h>

#include "host/netlink-request.h"
#include "host/printable.h"
#include "util/fileio.h"
#include "util/log.h"
#include "util/macro.h"

#define EXTACK_MAX 256
/* nldev attributes run from 1 to RDMA_NLDEV_ATTR_MAX - 1 */
#define NLDEV_MAXTYPE (RDMA_NLDEV_ATTR_MAX - 1)

const char *host_rdma_netns_mode_to_string(int mode)
{
        switch (mode) {
        case HOST_RDMA_NETNS_EXCLUSIVE:
                return "exclusive";
        case HOST_RDMA_NETNS_SHARED:
                return "shared";
        default:
                return NULL;
        }
}

int host_rdma_netns_mode_from_string(const char *s)
{
        if (s && strcmp(s, "exclusive") == 0)
                return HOST_RDMA_NETNS_EXCLUSIVE;
        if (s && strcmp(s, "shared") == 0)
                return HOST_RDMA_NETNS_SHARED;
        return -EINVAL;
}

int host_rdma_netlink_open(struct nl_sock **ret)
{
        int r = host_netlink_open(NETLINK_RDMA, 0, ret);
        if (r == -EPROTONOSUPPORT) /* no RDMA hardware here, usually: the caller decides */
                return log_ctx_msg(LOG_DEBUG, r, NULL,
                                   "no RDMA netlink in this kernel (ib_core not loaded)");
        if (r < 0)
                return log_error_errno(r, "cannot open an RDMA netlink socket");
        return 0;
}

/* The socket to use: the caller's, or a fresh one kept in *owned. */
static int use_socket(struct nl_sock *sk, struct nl_sock **owned, struct nl_sock **ret)
{
        if (sk) {
                *ret = sk;
                return 0;
        }
        int r = host_rdma_netlink_open(owned);
        if (r < 0)
                return r;
        *ret = *owned;
        return 0;
}

static struct nl_msg *nldev_request(int cmd, int flags)
{
        return nlmsg_alloc_simple(RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, cmd), NLM_F_REQUEST | flags);
}

static const struct nla_policy nldev_policy[NLDEV_MAXTYPE + 1] = {
        [RDMA_NLDEV_ATTR_DEV_INDEX] = { .type = NLA_U32 },
        [RDMA_NLDEV_ATTR_DEV_NAME] = { .type = NLA_STRING },
        [RDMA_NLDEV_ATTR_NODE_GUID] = { .type = NLA_U64 },
        [RDMA_NLDEV_ATTR_DEV_PROTOCOL] = { .type = NLA_STRING },
        [RDMA_NLDEV_SYS_ATTR_NETNS_MODE] = { .type = NLA_U8 },
};

static int parse_nldev(const struct nlmsghdr *hdr, int cmd, struct nlattr **tb)
{
        if (hdr->nlmsg_type != RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, cmd) ||
            hdr->nlmsg_len < NLMSG_HDRLEN ||
            nlmsg_parse((struct nlmsghdr *)hdr, 0, tb, NLDEV_MAXTYPE, nldev_policy) < 0)
                return -EBADMSG;
        return 0;
}

int host_rdma_parse_sys_reply(const struct nlmsghdr *hdr, enum host_rdma_netns_mode *ret)
{
        struct nlattr *tb[NLDEV_MAXTYPE + 1];
        if (parse_nldev(hdr, RDMA_NLDEV_CMD_SYS_GET, tb) < 0 || !tb[RDMA_NLDEV_SYS_ATTR_NETNS_MODE])
                return -EBADMSG;
        uint8_t mode = nla_get_u8(tb[RDMA_NLDEV_SYS_ATTR_NETNS_MODE]);
        if (mode > HOST_RDMA_NETNS_SHARED)
                return -EBADMSG;
        *ret = (enum host_rdma_netns_mode)mode;
        return 0;
}

int host_rdma_parse_device_reply(const struct nlmsghdr *hdr, struct host_rdma_link *ret)
{
        struct nlattr *tb[NLDEV_MAXTYPE + 1];
        if (parse_nldev(hdr, RDMA_NLDEV_CMD_GET, tb) < 0 || !tb[RDMA_NLDEV_ATTR_DEV_INDEX] ||
            !tb[RDMA_NLDEV_ATTR_DEV_NAME] ||
            nla_len(tb[RDMA_NLDEV_ATTR_DEV_NAME]) > HOST_RDMA_DEV_NAME_MAX)
                return -EBADMSG;
        *ret = (struct host_rdma_link){ .index = nla_get_u32(tb[RDMA_NLDEV_ATTR_DEV_INDEX]) };
        nla_strlcpy(ret->name, tb[RDMA_NLDEV_ATTR_DEV_NAME], sizeof(ret->name));
        if (!ret->name[0])
                return -EBADMSG;
        if (tb[RDMA_NLDEV_ATTR_NODE_GUID])
                ret->node_guid = nla_get_u64(tb[RDMA_NLDEV_ATTR_NODE_GUID]);
        if (tb[RDMA_NLDEV_ATTR_DEV_PROTOCOL])
                nla_strlcpy(ret->protocol, tb[RDMA_NLDEV_ATTR_DEV_PROTOCOL], sizeof(ret->protocol));
        return 0;
}

static int on_sys_reply(struct nl_msg *msg, void *userdata)
{
        return host_rdma_parse_sys_reply(nlmsg_hdr(msg), userdata);
}

int host_rdma_get_netns_mode(struct nl_sock *sk, enum host_rdma_netns_mode *ret)
{
        _cleanup_(host_nl_socket_freep) struct nl_sock *owned = NULL;
        int r = use_socket(sk, &owned, &sk);
        if (r < 0)
                return r;
        _cleanup_(host_nlmsg_freep) struct nl_msg *m = nldev_request(RDMA_NLDEV_CMD_SYS_GET, 0);
        if (!m)
                return -ENOMEM;
        int mode = -1;
        char extack[EXTACK_MAX];
        r = host_netlink_transact(sk, m, on_sys_reply, &mode, extack, sizeof(extack));
        if (r < 0)
                return log_error_errno(r, "cannot read the RDMA network namespace mode%s%s",
                                       extack[0] ? ": " : "", extack);
        if (mode < 0)
                return log_error_errno(-EBADMSG, "the kernel answered the RDMA system query "
                                                 "without a network namespace mode");
        *ret = (enum host_rdma_netns_mode)mode;
        return 0;
}

int host_rdma_set_netns_mode(struct nl_sock *sk, enum host_rdma_netns_mode mode)
{
        const char *name = host_rdma_netns_mode_to_string(mode);
        if (!name)
                return log_error_errno(-EINVAL, "invalid RDMA network namespace mode %d", mode);
        _cleanup_(host_nl_socket_freep) struct nl_sock *owned = NULL;
        int r = use_socket(sk, &owned, &sk);
        if (r < 0)
                return r;
        _cleanup_(host_nlmsg_freep) struct nl_msg *m = nldev_request(RDMA_NLDEV_CMD_SYS_SET, 0);
        if (!m || nla_put_u8(m, RDMA_NLDEV_SYS_ATTR_NETNS_MODE, (uint8_t)mode) < 0)
                return -ENOMEM;
        char extack[EXTACK_MAX];
        r = host_netlink_transact(sk, m, NULL, NULL, extack, sizeof(extack));
        if (r == -EBUSY)
                /* not an error of ours: the caller decides what a busy kernel means */
                log_notice("the kernel keeps its RDMA network namespace mode: %s cannot be set "
                           "while other network namespaces exist",
                           name);
        else if (r < 0)
                return log_error_errno(r, "cannot set the RDMA network namespace mode to %s%s%s",
                                       name, extack[0] ? ": " : "", extack);
        else
                log_info("RDMA network namespace mode set to %s", name);
        return r;
}

struct device_list {
        struct host_rdma_link *devs;
        size_t n, cap;
};

static int on_device_reply(struct nl_msg *msg, void *userdata)
{
        struct device_list *l = userdata;
        struct host_rdma_link dev;
        if (host_rdma_parse_device_reply(nlmsg_hdr(msg), &dev) < 0)
                return -EBADMSG;
        if (l->n == l->cap) {
                size_t cap = l->cap ? l->cap * 2 : 8;
                struct host_rdma_link *p = reallocarray(l->devs, cap, sizeof(*p));
                if (!p)
                        return -ENOMEM;
                l->devs = p;
                l->cap = cap;
        }
        l->devs[l->n++] = dev;
        return 0;
}

static int compare_index(const void *a, const void *b)
{
        const struct host_rdma_link *x = a, *y = b;
        return (x->index > y->index) - (x->index < y->index);
}

int host_rdma_list_devices(struct nl_sock *sk, struct host_rdma_link **ret, size_t *n)
{
        _cleanup_(host_nl_socket_freep) struct nl_sock *owned = NULL;
        int r = use_socket(sk, &owned, &sk);
        if (r < 0)
                return r;
        _cleanup_(host_nlmsg_freep) struct nl_msg *m =
            nldev_request(RDMA_NLDEV_CMD_GET, NLM_F_DUMP);
        if (!m)
                return -ENOMEM;
        struct device_list l = { 0 };
        char extack[EXTACK_MAX];
        r = host_netlink_transact(sk, m, on_device_reply, &l, extack, sizeof(extack));
        if (r < 0) {
                free(l.devs);
                return log_error_errno(r, "cannot list the RDMA devices%s%s", extack[0] ? ": " : "",
                                       extack);
        }
        if (l.n > 1)
                qsort(l.devs, l.n, sizeof(*l.devs), compare_index);
        *ret = l.devs;
        *n = l.n;
        return 0;
}

int host_rdma_device_index(struct nl_sock *sk, const char *name, uint32_t *ret)
{
        _cleanup_free_ struct host_rdma_link *devs = NULL;
        size_t n = 0;
        if (!name || !*name || strlen(name) >= HOST_RDMA_DEV_NAME_MAX)
                return log_error_errno(-EINVAL, "invalid RDMA device name '%s'", PRINTABLE(name));
        int r = host_rdma_list_devices(sk, &devs, &n);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++)
                if (strcmp(devs[i].name, name) == 0) {
                        *ret = devs[i].index;
                        return 0;
                }
        return -ENODEV;
}

int host_rdma_move_to_netns(struct nl_sock *sk, uint32_t index, const char *name_for_logs,
                            int netns_fd)
{
        const char *name = name_for_logs ? name_for_logs : "?";
        if (netns_fd < 0)
                return log_error_errno(-EBADF,
                                       "RDMA device %s: no network namespace to move "
                                       "it into",
                                       name);
        _cleanup_(host_nl_socket_freep) struct nl_sock *owned = NULL;
        int r = use_socket(sk, &owned, &sk);
        if (r < 0)
                return r;
        _cleanup_(host_nlmsg_freep) struct nl_msg *m = nldev_request(RDMA_NLDEV_CMD_SET, 0);
        if (!m || nla_put_u32(m, RDMA_NLDEV_ATTR_DEV_INDEX, index) < 0 ||
            nla_put_u32(m, RDMA_NLDEV_NET_NS_FD, (uint32_t)netns_fd) < 0)
                return -ENOMEM;
        char extack[EXTACK_MAX];
        r = host_netlink_transact(sk, m, NULL, NULL, extack, sizeof(extack));
        if (r < 0 && r != -EOPNOTSUPP) /* the caller names driver and mode for that one */
                return log_error_errno(r,
                                       "RDMA device %s (index %u): cannot move it to another "
                                       "network namespace%s%s",
                                       name, index, extack[0] ? ": " : "", extack);
        return r;
}

int host_rdma_write_modprobe_option(const char *dir, enum host_rdma_netns_mode mode, char *path,
                                    size_t path_size)
{
        const char *name = host_rdma_netns_mode_to_string(mode);
        if (!name || !dir || !*dir)
                return log_error_errno(-EINVAL, "RDMA mode: no modprobe.d directory or mode");
        char file[512], text[256];
        int k = snprintf(file, sizeof(file), "%s/%s", dir, HOST_RDMA_MODPROBE_FILE);
        if (k < 0 || (size_t)k >= sizeof(file))
                return log_error_errno(-ENAMETOOLONG, "modprobe.d directory %s: name too long",
                                       PRINTABLE(dir));
        k = snprintf(text, sizeof(text),
                     "# Written by sriov-agent (--rdma-mode %s): the RDMA network namespace mode\n"
                     "# ib_core starts with. Remove it to go back to the kernel's default.\n"
                     "options ib_core netns_mode=%d\n",
                     name, (int)mode);
        if (path)
                snprintf(path, path_size, "%s", file);
        _cleanup_free_ char *old = NULL;
        size_t old_size = 0;
        if (read_full_file(file, 4096, &old, &old_size) >= 0 && old_size == (size_t)k &&
            memcmp(old, text, old_size) == 0)
                return 0;
        /* a host without any modprobe.d yet (minimal images) */
        if (mkdir(dir, 0755) < 0 && errno != EEXIST)
                return log_error_errno(-errno, "cannot create %s (RDMA mode %s for the next boot)",
                                       dir, name);
        int r = write_file_atomic(file, text, (size_t)k, 0644);
        if (r < 0)
                return log_error_errno(r, "cannot write %s (RDMA mode %s for the next boot)", file,
                                       name);
        log_notice("wrote %s: ib_core starts in RDMA mode %s from the next boot", file, name);
        return 0;
}

int host_rdma_bring_about_mode(struct nl_sock *sk, int wanted, const char *modprobe_dir,
                               struct host_rdma_mode_result *ret)
{
        *ret = (struct host_rdma_mode_result){ .current = -1 };
        if (wanted >= 0 && !host_rdma_netns_mode_to_string(wanted))
                return log_error_errno(-EINVAL, "invalid RDMA network namespace mode %d", wanted);
        _cleanup_(host_nl_socket_freep) struct nl_sock *owned = NULL;
        int r = use_socket(sk, &owned, &sk);
        if (r < 0)
                return r;
        enum host_rdma_netns_mode now;
        r = host_rdma_get_netns_mode(sk, &now);
        if (r < 0)
                return r;
        ret->current = (int)now;
        if (wanted < 0 || (int)now == wanted)
                return 0;
        r = host_rdma_set_netns_mode(sk, (enum host_rdma_netns_mode)wanted);
        if (r == -EBUSY) {
                r = host_rdma_write_modprobe_option(modprobe_dir, (enum host_rdma_netns_mode)wanted,
                                                    ret->modprobe_path, sizeof(ret->modprobe_path));
                if (r < 0)
                        return r;
                ret->reboot_needed = true;
                return 0;
        }
        if (r < 0)
                return r;
        /* read back: what the NodeState reports is what the kernel has */
        r = host_rdma_get_netns_mode(sk, &now);
        if (r < 0)
                return r;
        ret->current = (int)now;
        ret->changed = true;
        return 0;
}

void host_rdma_reboot_message(int wanted, const struct host_rdma_mode_result *res, char *buf,
                              size_t size)
{
        snprintf(buf, size,
                 "RDMA network namespace mode %s needs a reboot: the kernel keeps %s while other "
                 "network namespaces exist; %s is written for the next boot (the agent never "
                 "reboots the node)",
                 host_rdma_netns_mode_to_string(wanted) ?: "?",
                 host_rdma_netns_mode_to_string(res->current) ?: "?", res->modprobe_path);
}
