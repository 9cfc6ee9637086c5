/* SPDX-License-Identifier: Apache-2.0 */
#include "host/devlink.h"

#include <errno.h>
#include <linux/devlink.h>
#include <linux/netlink.h>
#include <stdio.h>
#include <string.h>

#include <netlink/attr.h>
#include <netlink/errno.h>
#include <netlink/genl/ctrl.h>
#include <netlink/genl/genl.h>
#include <netlink/msg.h>

#include "host/netlink-request.h"
#include "host/printable.h"
#include "util/log.h"
#include "util/macro.h"
#include "util/names.h"

#define ENABLE_RDMA "enable_rdma"
#define EXTACK_MAX  256

struct devlink {
        struct nl_sock *sk;
        int family;
        const char *dev;
};

static void devlink_close(struct devlink *d)
{
        if (d->sk)
                nl_socket_free(d->sk);
}

/* Errors that mean "this kernel/driver/device does not do that". */
static bool error_means_unsupported(int error)
{
        return error == -EOPNOTSUPP || error == -ENODEV || error == -EINVAL || error == -ENOENT;
}

/* Debug level: the result is returned, and discovery asks on every reconcile; a NIC without
 * devlink (igb) would otherwise repeat the same notice every 30 s. */
static int unsupported(const char *dev, const char *what, const char *why)
{
        log_pf(LOG_DEBUG, 0, dev, "devlink %s not supported: %s", what, why);
        return -EOPNOTSUPP;
}

static int devlink_open(const char *dev, const char *what, struct devlink *ret)
{
        if (!dev || !pci_address_is_valid(dev))
                return log_error_errno(-EINVAL, "invalid PCI address '%s' for devlink",
                                       PRINTABLE(dev));
        struct devlink d = { .dev = dev, .family = -1 };
        int r = host_netlink_open(NETLINK_GENERIC, 0, &d.sk);
        if (r < 0)
                return log_pf(LOG_ERR, r, dev, "cannot open a generic netlink socket");
        d.family = genl_ctrl_resolve(d.sk, DEVLINK_GENL_NAME);
        if (d.family < 0) {
                devlink_close(&d);
                return unsupported(dev, what, "the kernel has no devlink family");
        }
        *ret = d;
        return 0;
}

static struct nl_msg *devlink_request(const struct devlink *d, int cmd)
{
        struct nl_msg *m = nlmsg_alloc();
        if (!m)
                return NULL;
        if (!genlmsg_put(m, NL_AUTO_PORT, NL_AUTO_SEQ, d->family, 0, 0, (uint8_t)cmd,
                         DEVLINK_GENL_VERSION) ||
            nla_put_string(m, DEVLINK_ATTR_BUS_NAME, "pci") < 0 ||
            nla_put_string(m, DEVLINK_ATTR_DEV_NAME, d->dev) < 0) {
                nlmsg_free(m);
                return NULL;
        }
        return m;
}

static int devlink_transact(const struct devlink *d, struct nl_msg *m, const char *what,
                            netlink_reply_fn on_reply, void *userdata)
{
        char extack[EXTACK_MAX];
        int r = host_netlink_transact(d->sk, m, on_reply, userdata, extack, sizeof(extack));
        if (r == 0)
                return 0;
        if (error_means_unsupported(r)) {
                char why[EXTACK_MAX + 64];
                snprintf(why, sizeof(why), "%s%s%s",
                         r == -ENODEV ? "the device is not registered with devlink" : strerror(-r),
                         extack[0] ? ": " : "", extack);
                return unsupported(d->dev, what, why);
        }
        return log_pf(LOG_ERR, r, d->dev, "devlink %s failed%s%s", what, extack[0] ? ": " : "",
                      extack);
}

static int parse_genl(struct nl_msg *msg, struct nlattr **tb)
{
        return genlmsg_parse(nlmsg_hdr(msg), 0, tb, DEVLINK_ATTR_MAX, NULL) < 0 ? -EBADMSG : 0;
}

static int on_eswitch_reply(struct nl_msg *msg, void *userdata)
{
        int *mode = userdata;
        struct nlattr *tb[DEVLINK_ATTR_MAX + 1];
        if (parse_genl(msg, tb) < 0)
                return -EBADMSG;
        if (tb[DEVLINK_ATTR_ESWITCH_MODE])
                *mode = nla_get_u16(tb[DEVLINK_ATTR_ESWITCH_MODE]);
        return 0;
}

int host_devlink_get_eswitch_mode(const char *pci_addr, char *buf, size_t size)
{
        struct devlink d;
        int r = devlink_open(pci_addr, "eswitch mode", &d);
        if (r < 0)
                return r;
        _cleanup_(host_nlmsg_freep) struct nl_msg *m = devlink_request(&d, DEVLINK_CMD_ESWITCH_GET);
        int mode = -1;
        r = m ? devlink_transact(&d, m, "eswitch mode", on_eswitch_reply, &mode) : -ENOMEM;
        devlink_close(&d);
        if (r < 0)
                return r;
        if (mode < 0)
                return unsupported(pci_addr, "eswitch mode", "the driver reports no mode");
        if (mode == DEVLINK_ESWITCH_MODE_LEGACY)
                snprintf(buf, size, "legacy");
        else if (mode == DEVLINK_ESWITCH_MODE_SWITCHDEV)
                snprintf(buf, size, "switchdev");
        else
                snprintf(buf, size, "unknown(%d)", mode);
        return 0;
}

struct param_value {
        bool found;
        bool value;
        bool from_driverinit;
};

static int on_param_reply(struct nl_msg *msg, void *userdata)
{
        struct param_value *p = userdata;
        struct nlattr *tb[DEVLINK_ATTR_MAX + 1], *ptb[DEVLINK_ATTR_MAX + 1];
        if (parse_genl(msg, tb) < 0 || !tb[DEVLINK_ATTR_PARAM] ||
            nla_parse_nested(ptb, DEVLINK_ATTR_MAX, tb[DEVLINK_ATTR_PARAM], NULL) < 0 ||
            !ptb[DEVLINK_ATTR_PARAM_VALUES_LIST])
                return -EBADMSG;
        if (ptb[DEVLINK_ATTR_PARAM_TYPE] && nla_get_u8(ptb[DEVLINK_ATTR_PARAM_TYPE]) != NLA_FLAG)
                return -EBADMSG; /* enable_rdma is a bool parameter */

        struct nlattr *v;
        int rem;
        nla_for_each_nested(v, ptb[DEVLINK_ATTR_PARAM_VALUES_LIST], rem)
        {
                struct nlattr *vtb[DEVLINK_ATTR_MAX + 1];
                if (nla_type(v) != DEVLINK_ATTR_PARAM_VALUE ||
                    nla_parse_nested(vtb, DEVLINK_ATTR_MAX, v, NULL) < 0 ||
                    !vtb[DEVLINK_ATTR_PARAM_VALUE_CMODE])
                        continue;
                bool driverinit = nla_get_u8(vtb[DEVLINK_ATTR_PARAM_VALUE_CMODE]) ==
                                  DEVLINK_PARAM_CMODE_DRIVERINIT;
                if (p->found && p->from_driverinit && !driverinit)
                        continue;
                p->found = true;
                p->from_driverinit = driverinit;
                /* a bool value is a flag: present means true */
                p->value = vtb[DEVLINK_ATTR_PARAM_VALUE_DATA] != NULL;
        }
        return 0;
}

static int get_enable_rdma(const struct devlink *d, bool *ret)
{
        _cleanup_(host_nlmsg_freep) struct nl_msg *m = devlink_request(d, DEVLINK_CMD_PARAM_GET);
        if (!m || nla_put_string(m, DEVLINK_ATTR_PARAM_NAME, ENABLE_RDMA) < 0)
                return -ENOMEM;
        struct param_value p = { 0 };
        int r = devlink_transact(d, m, ENABLE_RDMA, on_param_reply, &p);
        if (r < 0)
                return r;
        if (!p.found)
                return unsupported(d->dev, ENABLE_RDMA, "the driver reports no value");
        *ret = p.value;
        return 0;
}

int host_devlink_get_enable_rdma(const char *pci_addr, bool *ret)
{
        struct devlink d;
        int r = devlink_open(pci_addr, ENABLE_RDMA, &d);
        if (r < 0)
                return r;
        r = get_enable_rdma(&d, ret);
        devlink_close(&d);
        return r;
}

static int set_and_reload(const struct devlink *d, bool enable)
{
        _cleanup_(host_nlmsg_freep) struct nl_msg *m = devlink_request(d, DEVLINK_CMD_PARAM_SET);
        if (!m || nla_put_string(m, DEVLINK_ATTR_PARAM_NAME, ENABLE_RDMA) < 0 ||
            nla_put_u8(m, DEVLINK_ATTR_PARAM_TYPE, NLA_FLAG) < 0 ||
            nla_put_u8(m, DEVLINK_ATTR_PARAM_VALUE_CMODE, DEVLINK_PARAM_CMODE_DRIVERINIT) < 0 ||
            (enable && nla_put_flag(m, DEVLINK_ATTR_PARAM_VALUE_DATA) < 0))
                return -ENOMEM;
        int r = devlink_transact(d, m, "set " ENABLE_RDMA, NULL, NULL);
        if (r < 0)
                return r;

        /* driverinit values apply only when the driver re-initialises the device */
        _cleanup_(host_nlmsg_freep) struct nl_msg *reload = devlink_request(d, DEVLINK_CMD_RELOAD);
        if (!reload)
                return -ENOMEM;
        r = devlink_transact(d, reload, "reload", NULL, NULL);
        if (r < 0)
                return r;
        log_pf(LOG_INFO, 0, d->dev, ENABLE_RDMA " set to %s and the device reloaded",
               enable ? "true" : "false");
        return 0;
}

int host_devlink_set_enable_rdma(const char *pci_addr, bool enable)
{
        struct devlink d;
        bool current;
        int r = devlink_open(pci_addr, ENABLE_RDMA, &d);
        if (r < 0)
                return r;
        r = get_enable_rdma(&d, &current);
        if (r == 0 && current == enable)
                log_pf(LOG_DEBUG, 0, pci_addr, ENABLE_RDMA " already %s",
                       enable ? "true" : "false");
        else if (r == 0)
                r = set_and_reload(&d, enable);
        devlink_close(&d);
        return r;
}
