/* SPDX-License-Identifier: Apache-2.0 */
#include "host/netlink-link.h"

#include <errno.h>
#include <inttypes.h>
#include <linux/if_link.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <netlink/attr.h>
#include <netlink/msg.h>

#include "host/netlink-request.h"
#include "host/printable.h"
#include "util/log.h"
#include "util/macro.h"
#include "util/names.h"

#define EXTACK_MAX 256

static const char *const vf_attr_names[_VF_ATTR_MAX] = {
        [VF_ATTR_MAC] = "mac",
        [VF_ATTR_VLAN] = "vlan",
        [VF_ATTR_TRUST] = "trust",
        [VF_ATTR_SPOOFCHK] = "spoofchk",
        [VF_ATTR_LINK_STATE] = "link-state",
};

const char *host_vf_attr_to_string(enum vf_attr a)
{
        return a >= 0 && a < _VF_ATTR_MAX ? vf_attr_names[a] : "unknown";
}

static const char *const link_state_names[] = {
        [VF_LINK_STATE_AUTO] = "auto",
        [VF_LINK_STATE_ENABLE] = "enable",
        [VF_LINK_STATE_DISABLE] = "disable",
};

const char *host_vf_link_state_to_string(int s)
{
        return s >= 0 && (size_t)s < ELEMENTSOF(link_state_names) ? link_state_names[s] : "unknown";
}

int host_vf_link_state_from_string(const char *s)
{
        for (size_t i = 0; s && i < ELEMENTSOF(link_state_names); i++)
                if (strcmp(s, link_state_names[i]) == 0)
                        return (int)i;
        return -EINVAL;
}

bool host_netlink_error_is_not_supported(int error)
{
        return error == -EOPNOTSUPP;
}

static int resolve_ifindex(const char *ifname, int *ret)
{
        if (!ifname || !ifname_is_valid(ifname))
                return log_error_errno(-EINVAL, "invalid interface name '%s'", PRINTABLE(ifname));
        unsigned idx = if_nametoindex(ifname);
        if (idx == 0)
                return log_error_errno(errno == ENODEV || errno == ENXIO ? -ENODEV
                                                                         : negative_errno(),
                                       "no network interface named %s", ifname);
        *ret = (int)idx;
        return 0;
}

static struct nl_msg *link_request(int type, int flags, int ifindex, unsigned ifi_flags,
                                   unsigned ifi_change)
{
        struct nl_msg *m = nlmsg_alloc_simple(type, NLM_F_REQUEST | flags);
        if (!m)
                return NULL;
        struct ifinfomsg ifi = {
                .ifi_family = AF_UNSPEC,
                .ifi_index = ifindex,
                .ifi_flags = ifi_flags,
                .ifi_change = ifi_change,
        };
        if (nlmsg_append(m, &ifi, sizeof(ifi), NLMSG_ALIGNTO) < 0) {
                nlmsg_free(m);
                return NULL;
        }
        return m;
}

/* Sends a built RTM_SETLINK; logs failures with the kernel's extack text. */
static int send_setlink(struct nl_msg *m, const char *ifname, const char *what)
{
        _cleanup_(host_nl_socket_freep) struct nl_sock *sk = NULL;
        char extack[EXTACK_MAX];
        int r = host_netlink_open(NETLINK_ROUTE, 0, &sk);
        if (r < 0)
                return log_error_errno(r, "%s: cannot open an rtnetlink socket", ifname);
        r = host_netlink_transact(sk, m, NULL, NULL, extack, sizeof(extack));
        if (r < 0 && !host_netlink_error_is_not_supported(r))
                return log_error_errno(r, "%s: cannot set %s%s%s", ifname, what,
                                       extack[0] ? ": " : "", extack);
        return r;
}

int host_netlink_set_mtu(const char *ifname, int mtu)
{
        int ifindex, r = resolve_ifindex(ifname, &ifindex);
        if (r < 0)
                return r;
        if (mtu <= 0)
                return log_error_errno(-EINVAL, "%s: invalid MTU %d", ifname, mtu);
        _cleanup_(host_nlmsg_freep) struct nl_msg *m = link_request(RTM_SETLINK, 0, ifindex, 0, 0);
        if (!m || nla_put_u32(m, IFLA_MTU, (uint32_t)mtu) < 0)
                return -ENOMEM;
        char what[32];
        snprintf(what, sizeof(what), "MTU %d", mtu);
        r = send_setlink(m, ifname, what);
        if (r == 0)
                log_info("%s: MTU set to %d", ifname, mtu);
        return r;
}

int host_netlink_set_up(const char *ifname)
{
        int ifindex, r = resolve_ifindex(ifname, &ifindex);
        if (r < 0)
                return r;
        _cleanup_(host_nlmsg_freep) struct nl_msg *m =
            link_request(RTM_SETLINK, 0, ifindex, IFF_UP, IFF_UP);
        if (!m)
                return -ENOMEM;
        r = send_setlink(m, ifname, "admin state up");
        if (r == 0)
                log_info("%s: set administratively up", ifname);
        return r;
}

/* The IFLA_VF_* payload for one attribute. */
static int put_vf_attr(struct nl_msg *m, enum vf_attr a, uint32_t vf, const struct vf_settings *s)
{
        switch (a) {
        case VF_ATTR_MAC: {
                struct ifla_vf_mac v = { .vf = vf };
                memcpy(v.mac, s->mac, sizeof(s->mac));
                return nla_put(m, IFLA_VF_MAC, sizeof(v), &v);
        }
        case VF_ATTR_VLAN: {
                struct ifla_vf_vlan v = { .vf = vf,
                                          .vlan = (uint32_t)s->vlan,
                                          .qos = (uint32_t)s->qos };
                return nla_put(m, IFLA_VF_VLAN, sizeof(v), &v);
        }
        case VF_ATTR_TRUST: {
                struct ifla_vf_trust v = { .vf = vf, .setting = (uint32_t)s->trust };
                return nla_put(m, IFLA_VF_TRUST, sizeof(v), &v);
        }
        case VF_ATTR_SPOOFCHK: {
                struct ifla_vf_spoofchk v = { .vf = vf, .setting = (uint32_t)s->spoofchk };
                return nla_put(m, IFLA_VF_SPOOFCHK, sizeof(v), &v);
        }
        case VF_ATTR_LINK_STATE: {
                struct ifla_vf_link_state v = { .vf = vf, .link_state = (uint32_t)s->link_state };
                return nla_put(m, IFLA_VF_LINK_STATE, sizeof(v), &v);
        }
        default:
                return -EINVAL;
        }
}

static bool attr_is_set(enum vf_attr a, const struct vf_settings *s)
{
        switch (a) {
        case VF_ATTR_MAC:
                return s->set_mac;
        case VF_ATTR_VLAN:
                return s->vlan >= 0;
        case VF_ATTR_TRUST:
                return s->trust >= 0;
        case VF_ATTR_SPOOFCHK:
                return s->spoofchk >= 0;
        case VF_ATTR_LINK_STATE:
                return s->link_state >= 0;
        default:
                return false;
        }
}

static int validate_vf_settings(const char *pf, int vf, const struct vf_settings *s)
{
        if (vf < 0)
                return log_error_errno(-EINVAL, "%s: invalid VF index %d", pf, vf);
        if (s->vlan > 4094 || s->qos < 0 || s->qos > 7)
                return log_error_errno(-EINVAL, "%s VF %d: invalid VLAN %d / QoS %d", pf, vf,
                                       s->vlan, s->qos);
        if (s->trust > 1 || s->spoofchk > 1)
                return log_error_errno(-EINVAL, "%s VF %d: trust/spoofchk must be on or off", pf,
                                       vf);
        if (s->link_state > VF_LINK_STATE_DISABLE)
                return log_error_errno(-EINVAL, "%s VF %d: invalid link state %d", pf, vf,
                                       s->link_state);
        return 0;
}

static int set_one_vf_attr(struct nl_sock *sk, int ifindex, const char *pf, int vf, enum vf_attr a,
                           const struct vf_settings *s)
{
        _cleanup_(host_nlmsg_freep) struct nl_msg *m = link_request(RTM_SETLINK, 0, ifindex, 0, 0);
        if (!m)
                return -ENOMEM;
        struct nlattr *list = nla_nest_start(m, IFLA_VFINFO_LIST);
        struct nlattr *info = list ? nla_nest_start(m, IFLA_VF_INFO) : NULL;
        if (!info || put_vf_attr(m, a, (uint32_t)vf, s) < 0)
                return -ENOMEM;
        nla_nest_end(m, info);
        nla_nest_end(m, list);

        char extack[EXTACK_MAX];
        int r = host_netlink_transact(sk, m, NULL, NULL, extack, sizeof(extack));
        if (host_netlink_error_is_not_supported(r))
                log_notice("%s VF %d: %s is not supported by the driver", pf, vf,
                           host_vf_attr_to_string(a));
        else if (r < 0)
                log_error_errno(r, "%s VF %d: cannot set %s%s%s", pf, vf, host_vf_attr_to_string(a),
                                extack[0] ? ": " : "", extack);
        else
                log_info("%s VF %d: %s set", pf, vf, host_vf_attr_to_string(a));
        return r;
}

static int set_one_vf_guid(struct nl_sock *sk, int ifindex, const char *pf, int vf, int type,
                           uint64_t guid)
{
        _cleanup_(host_nlmsg_freep) struct nl_msg *m = link_request(RTM_SETLINK, 0, ifindex, 0, 0);
        if (!m)
                return -ENOMEM;
        const struct ifla_vf_guid g = { .vf = (uint32_t)vf, .guid = guid };
        struct nlattr *list = nla_nest_start(m, IFLA_VFINFO_LIST);
        struct nlattr *info = list ? nla_nest_start(m, IFLA_VF_INFO) : NULL;
        if (!info || nla_put(m, type, sizeof(g), &g) < 0)
                return -ENOMEM;
        nla_nest_end(m, info);
        nla_nest_end(m, list);

        const char *what = type == IFLA_VF_IB_NODE_GUID ? "node GUID" : "port GUID";
        char extack[EXTACK_MAX];
        int r = host_netlink_transact(sk, m, NULL, NULL, extack, sizeof(extack));
        if (r < 0)
                return log_error_errno(r, "%s VF %d: cannot set the %s%s%s%s", pf, vf, what,
                                       r == -EOPNOTSUPP ? " (not an InfiniBand PF, or its "
                                                          "driver has no VF GUIDs)"
                                                        : "",
                                       extack[0] ? ": " : "", extack);
        return 0;
}

int host_netlink_set_vf_guids(struct nl_sock *sk, const char *pf_ifname, int pf_ifindex,
                              int vf_index, uint64_t node_guid, uint64_t port_guid)
{
        const char *pf = pf_ifname ? pf_ifname : "?";
        int r;
        if (vf_index < 0)
                return log_error_errno(-EINVAL, "%s: invalid VF index %d", pf, vf_index);
        if (pf_ifindex <= 0 && (r = resolve_ifindex(pf_ifname, &pf_ifindex)) < 0)
                return r;
        _cleanup_(host_nl_socket_freep) struct nl_sock *owned = NULL;
        if (!sk) {
                r = host_netlink_open(NETLINK_ROUTE, 0, &owned);
                if (r < 0)
                        return log_error_errno(r, "%s: cannot open an rtnetlink socket", pf);
                sk = owned;
        }
        r = set_one_vf_guid(sk, pf_ifindex, pf, vf_index, IFLA_VF_IB_NODE_GUID, node_guid);
        if (r >= 0)
                r = set_one_vf_guid(sk, pf_ifindex, pf, vf_index, IFLA_VF_IB_PORT_GUID, port_guid);
        if (r >= 0)
                log_info("%s VF %d: node GUID %016" PRIx64 ", port GUID %016" PRIx64 " set", pf,
                         vf_index, node_guid, port_guid);
        return r;
}

struct vf_list {
        struct netlink_vf_info *vfs;
        size_t n;
        int num_vfs; /* IFLA_NUM_VF, -1 when the device has no parent bus to ask */
        const char *pf;
};

static int compare_vf_index(const void *a, const void *b)
{
        const struct netlink_vf_info *x = a, *y = b;
        return (x->vf > y->vf) - (x->vf < y->vf);
}

static void parse_vf_guids(struct nlattr *tb[], struct netlink_vf_info *v)
{
        const struct nlattr *node = tb[IFLA_VF_IB_NODE_GUID], *port = tb[IFLA_VF_IB_PORT_GUID];
        if (!node || !port || nla_len(node) < (int)sizeof(struct ifla_vf_guid) ||
            nla_len(port) < (int)sizeof(struct ifla_vf_guid))
                return;
        struct ifla_vf_guid g;
        memcpy(&g, nla_data(node), sizeof(g));
        v->node_guid = g.guid;
        memcpy(&g, nla_data(port), sizeof(g));
        v->port_guid = g.guid;
        v->has_guids = true;
}

static void parse_vf_stats(struct nlattr *stats, struct netlink_vf_info *v)
{
        struct nlattr *st[IFLA_VF_STATS_MAX + 1];
        if (nla_parse_nested(st, IFLA_VF_STATS_MAX, stats, NULL) < 0)
                return;
        v->have_stats = true;
        const struct {
                int attr;
                uint64_t *value;
        } fields[] = {
                { IFLA_VF_STATS_RX_PACKETS, &v->rx_packets },
                { IFLA_VF_STATS_TX_PACKETS, &v->tx_packets },
                { IFLA_VF_STATS_RX_BYTES, &v->rx_bytes },
                { IFLA_VF_STATS_TX_BYTES, &v->tx_bytes },
                { IFLA_VF_STATS_BROADCAST, &v->broadcast },
                { IFLA_VF_STATS_MULTICAST, &v->multicast },
                { IFLA_VF_STATS_RX_DROPPED, &v->rx_dropped },
                { IFLA_VF_STATS_TX_DROPPED, &v->tx_dropped },
        };
        for (size_t i = 0; i < ELEMENTSOF(fields); i++)
                if (st[fields[i].attr] && nla_len(st[fields[i].attr]) >= (int)sizeof(uint64_t))
                        *fields[i].value = nla_get_u64(st[fields[i].attr]);
}

static void parse_vf_info(struct nlattr *tb[], struct netlink_vf_info *v)
{
        *v = (struct netlink_vf_info){ .vf = -1, .trust = -1, .spoofchk = -1, .link_state = -1 };
        if (tb[IFLA_VF_MAC] && nla_len(tb[IFLA_VF_MAC]) >= (int)sizeof(struct ifla_vf_mac)) {
                const struct ifla_vf_mac *m = nla_data(tb[IFLA_VF_MAC]);
                v->vf = (int)m->vf;
                snprintf(v->mac, sizeof(v->mac), "%02x:%02x:%02x:%02x:%02x:%02x", m->mac[0],
                         m->mac[1], m->mac[2], m->mac[3], m->mac[4], m->mac[5]);
        }
        if (tb[IFLA_VF_VLAN] && nla_len(tb[IFLA_VF_VLAN]) >= (int)sizeof(struct ifla_vf_vlan)) {
                const struct ifla_vf_vlan *vl = nla_data(tb[IFLA_VF_VLAN]);
                v->vf = (int)vl->vf;
                v->vlan = (int)vl->vlan;
                v->qos = (int)vl->qos;
        }
        if (tb[IFLA_VF_TRUST] && nla_len(tb[IFLA_VF_TRUST]) >= (int)sizeof(struct ifla_vf_trust)) {
                const struct ifla_vf_trust *t = nla_data(tb[IFLA_VF_TRUST]);
                /* drivers without the setting report (u32)-1 */
                v->trust = t->setting <= 1 ? (int)t->setting : -1;
        }
        if (tb[IFLA_VF_SPOOFCHK] &&
            nla_len(tb[IFLA_VF_SPOOFCHK]) >= (int)sizeof(struct ifla_vf_spoofchk)) {
                const struct ifla_vf_spoofchk *sc = nla_data(tb[IFLA_VF_SPOOFCHK]);
                v->spoofchk = sc->setting <= 1 ? (int)sc->setting : -1;
        }
        if (tb[IFLA_VF_LINK_STATE] &&
            nla_len(tb[IFLA_VF_LINK_STATE]) >= (int)sizeof(struct ifla_vf_link_state)) {
                const struct ifla_vf_link_state *ls = nla_data(tb[IFLA_VF_LINK_STATE]);
                v->link_state = ls->link_state <= VF_LINK_STATE_DISABLE ? (int)ls->link_state : -1;
        }
        parse_vf_guids(tb, v);
        if (tb[IFLA_VF_STATS])
                parse_vf_stats(tb[IFLA_VF_STATS], v);
}

int host_netlink_parse_vf_list(const struct nlmsghdr *hdr, struct netlink_vf_info **ret,
                               size_t *ret_n)
{
        struct nlattr *tb[IFLA_MAX + 1];
        if (hdr->nlmsg_type != RTM_NEWLINK ||
            nlmsg_parse((struct nlmsghdr *)hdr, sizeof(struct ifinfomsg), tb, IFLA_MAX, NULL) < 0)
                return -EBADMSG;

        size_t count = 0, n = 0;
        struct nlattr *a;
        int rem;
        if (tb[IFLA_VFINFO_LIST])
                nla_for_each_nested(a, tb[IFLA_VFINFO_LIST], rem) count++;
        struct netlink_vf_info *vfs = calloc(count ? count : 1, sizeof(*vfs));
        if (!vfs)
                return -ENOMEM;
        if (tb[IFLA_VFINFO_LIST])
                nla_for_each_nested(a, tb[IFLA_VFINFO_LIST], rem)
                {
                        struct nlattr *vtb[IFLA_VF_MAX + 1];
                        if (nla_type(a) != IFLA_VF_INFO ||
                            nla_parse_nested(vtb, IFLA_VF_MAX, a, NULL) < 0)
                                continue;
                        parse_vf_info(vtb, &vfs[n]);
                        if (vfs[n].vf >= 0)
                                n++;
                }
        if (n > 1)
                qsort(vfs, n, sizeof(*vfs), compare_vf_index);
        *ret = vfs;
        *ret_n = n;
        return 0;
}

static int on_link_reply(struct nl_msg *msg, void *userdata)
{
        struct vf_list *l = userdata;
        if (nlmsg_hdr(msg)->nlmsg_type != RTM_NEWLINK)
                return 0;
        free(l->vfs);
        l->vfs = NULL;
        int r = host_netlink_parse_vf_list(nlmsg_hdr(msg), &l->vfs, &l->n);
        if (r < 0)
                return log_error_errno(r, "%s: malformed link reply", l->pf);
        struct nlattr *tb[IFLA_MAX + 1];
        if (nlmsg_parse(nlmsg_hdr(msg), sizeof(struct ifinfomsg), tb, IFLA_MAX, NULL) == 0 &&
            tb[IFLA_NUM_VF])
                l->num_vfs = (int)nla_get_u32(tb[IFLA_NUM_VF]);
        return 0;
}

/* sk: the caller's rtnetlink socket, or NULL for a fresh one; ifindex 0: the PF asked by name
 * (IFLA_IFNAME, as rtnl_getlink() allows), without a lookup of its index first. */
static int query_vfs(struct nl_sock *sk, const char *pf_ifname, int ifindex, bool with_stats,
                     struct vf_list *ret)
{
        _cleanup_(host_nl_socket_freep) struct nl_sock *owned = NULL;
        int r;
        if (!sk) {
                r = host_netlink_open(NETLINK_ROUTE, HOST_NETLINK_VF_LIST_RCVBUF, &owned);
                if (r < 0)
                        return log_error_errno(r, "%s: cannot open an rtnetlink socket", pf_ifname);
                sk = owned;
        }
        _cleanup_(host_nlmsg_freep) struct nl_msg *m = link_request(RTM_GETLINK, 0, ifindex, 0, 0);
        if (!m || (ifindex <= 0 && nla_put_string(m, IFLA_IFNAME, pf_ifname) < 0) ||
            nla_put_u32(m, IFLA_EXT_MASK,
                        RTEXT_FILTER_VF | (with_stats ? 0 : RTEXT_FILTER_SKIP_STATS)) < 0)
                return -ENOMEM;

        struct vf_list l = { .pf = pf_ifname, .num_vfs = -1 };
        char extack[EXTACK_MAX];
        r = host_netlink_transact(sk, m, on_link_reply, &l, extack, sizeof(extack));
        if (r < 0) {
                free(l.vfs);
                return log_error_errno(r, "%s: cannot read the VF list%s%s", pf_ifname,
                                       extack[0] ? ": " : "", extack);
        }
        *ret = l;
        return 0;
}

int host_netlink_get_vf_list(const char *pf_ifname, struct netlink_vf_info **ret, size_t *n)
{
        struct vf_list l;
        int ifindex, r = resolve_ifindex(pf_ifname, &ifindex);
        if (r < 0)
                return r;
        r = query_vfs(NULL, pf_ifname, ifindex, false, &l);
        if (r < 0)
                return r;
        *ret = l.vfs;
        *n = l.n;
        return 0;
}

int host_netlink_get_vf_stats(struct nl_sock *sk, const char *pf_ifname,
                              struct netlink_vf_info **ret, size_t *n)
{
        struct vf_list l;
        if (!pf_ifname || !ifname_is_valid(pf_ifname))
                return log_error_errno(-EINVAL, "invalid interface name '%s'",
                                       PRINTABLE(pf_ifname));
        int r = query_vfs(sk, pf_ifname, 0, true, &l);
        if (r < 0)
                return r;
        *ret = l.vfs;
        *n = l.n;
        return 0;
}

int host_netlink_get_num_vfs(const char *pf_ifname, int *ret)
{
        struct vf_list l;
        int ifindex, r = resolve_ifindex(pf_ifname, &ifindex);
        if (r < 0)
                return r;
        r = query_vfs(NULL, pf_ifname, ifindex, false, &l);
        if (r < 0)
                return r;
        free(l.vfs);
        if (l.num_vfs < 0)
                return -ENODATA;
        *ret = l.num_vfs;
        return 0;
}

int host_netlink_set_vf(const char *pf_ifname, int vf_index, const struct vf_settings *s,
                        struct vf_set_result *ret)
{
        struct vf_set_result res = { 0 };
        int ifindex, r = resolve_ifindex(pf_ifname, &ifindex);
        if (r < 0)
                return r;
        r = validate_vf_settings(pf_ifname, vf_index, s);
        if (r < 0)
                return r;
        /* Drivers answer an index past their VFs differently (EINVAL, or EOPNOTSUPP for an
         * attribute they lack, which would read as success): check it here when the kernel
         * reports the PF's VF count (PCI devices do). */
        struct vf_list l;
        r = query_vfs(NULL, pf_ifname, ifindex, false, &l);
        if (r < 0)
                return r;
        free(l.vfs);
        if (l.num_vfs >= 0 && vf_index >= l.num_vfs)
                return log_error_errno(-ENOENT, "%s has %d VFs: there is no VF %d", pf_ifname,
                                       l.num_vfs, vf_index);

        _cleanup_(host_nl_socket_freep) struct nl_sock *sk = NULL;
        r = host_netlink_open(NETLINK_ROUTE, 0, &sk);
        if (r < 0)
                return log_error_errno(r, "%s: cannot open an rtnetlink socket", pf_ifname);

        int first_error = 0;
        for (enum vf_attr a = 0; a < _VF_ATTR_MAX; a++) {
                if (!attr_is_set(a, s))
                        continue;
                res.attempted[a] = true;
                res.error[a] = set_one_vf_attr(sk, ifindex, pf_ifname, vf_index, a, s);
                if (res.error[a] < 0 && !host_netlink_error_is_not_supported(res.error[a]) &&
                    first_error == 0)
                        first_error = res.error[a];
        }
        if (ret)
                *ret = res;
        return first_error;
}

int host_netlink_parse_alt_names(const struct nlmsghdr *hdr, char (*names)[128], size_t max,
                                 size_t *ret_n)
{
        struct nlattr *tb[IFLA_MAX + 1], *a;
        size_t n = 0;
        int rem;

        if (hdr->nlmsg_type != RTM_NEWLINK ||
            nlmsg_parse((struct nlmsghdr *)hdr, sizeof(struct ifinfomsg), tb, IFLA_MAX, NULL) < 0)
                return -EBADMSG;
        if (tb[IFLA_PROP_LIST])
                nla_for_each_nested(a, tb[IFLA_PROP_LIST], rem)
                {
                        int len = nla_len(a);
                        const char *s = nla_data(a);
                        if (nla_type(a) != IFLA_ALT_IFNAME || n >= max)
                                continue;
                        /* NUL-terminated by the kernel; refuse anything that is not. */
                        if (len < 2 || len > 128 || s[len - 1] != '\0' ||
                            strlen(s) != (size_t)len - 1)
                                return -EBADMSG;
                        memcpy(names[n++], s, (size_t)len);
                }
        *ret_n = n;
        return 0;
}

struct alt_names_reply {
        char (*names)[128];
        size_t max, n;
        int error;
};

static int on_alt_names_reply(struct nl_msg *msg, void *userdata)
{
        struct alt_names_reply *r = userdata;
        if (nlmsg_hdr(msg)->nlmsg_type == RTM_NEWLINK)
                r->error = host_netlink_parse_alt_names(nlmsg_hdr(msg), r->names, r->max, &r->n);
        return 0;
}

int host_netlink_get_alt_names(const char *ifname, char (*names)[128], size_t max, size_t *ret_n)
{
        _cleanup_(host_nl_socket_freep) struct nl_sock *sk = NULL;
        struct alt_names_reply reply = { .names = names, .max = max };
        char extack[EXTACK_MAX];
        int ifindex, r = resolve_ifindex(ifname, &ifindex);

        if (r < 0)
                return r;
        r = host_netlink_open(NETLINK_ROUTE, 0, &sk);
        if (r < 0)
                return r;
        _cleanup_(host_nlmsg_freep) struct nl_msg *m = link_request(RTM_GETLINK, 0, ifindex, 0, 0);
        if (!m || nla_put_u32(m, IFLA_EXT_MASK, RTEXT_FILTER_SKIP_STATS) < 0)
                return -ENOMEM;
        r = host_netlink_transact(sk, m, on_alt_names_reply, &reply, extack, sizeof(extack));
        if (r < 0)
                return r;
        if (reply.error < 0)
                return reply.error;
        *ret_n = reply.n;
        return 0;
}
