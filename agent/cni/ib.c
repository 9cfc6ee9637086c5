/* SPDX-License-Identifier: Apache-2.0 */
#include "ib.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "host/driver-bind.h"
#include "host/netlink-link.h"
#include "host/netlink-netns.h"
#include "util/ipoib.h"
#include "util/macro.h"

#define GUID_ALL_ONES UINT64_MAX

uint64_t cni_ib_current_guid(const struct vf_location *loc, uint64_t vf_info_guid)
{
        struct host_link l;
        uint64_t guid;
        if (!loc->vf_ifname[0] || host_link_get(loc->vf_ifname, &l) < 0 ||
            ipoib_hwaddr_guid(l.hwaddr, l.hwaddr_len, &guid) < 0)
                return vf_info_guid;
        return guid;
}

int cni_ib_plan(const struct cni_ib_conf *ib, const struct vf_location *loc, const char *pci,
                bool vfio, struct cni_cache *rec, struct cni_error *e)
{
        if (ib->ib_kubernetes_enabled && !ib->ib_configured)
                return cni_fail(e, CNI_ERR_GENERIC, -EINVAL,
                                "ibKubernetesEnabled: args.cni \"mellanox.infiniband.app\" is "
                                "not \"configured\": ib-kubernetes has not configured this pod");
        if (ib->ib_kubernetes_enabled && !ib->has_guid)
                return cni_fail(e, CNI_ERR_GENERIC, -EINVAL,
                                "ibKubernetesEnabled: no GUID given (ib-kubernetes sets "
                                "runtimeConfig.infinibandGUID)");
        if (!ib->has_guid && vfio)
                return 0; /* as upstream: a vfio-pci VF's GUID cannot be read here */
        _cleanup_free_ struct netlink_vf_info *vfs = NULL;
        size_t n = 0;
        int r = host_netlink_get_vf_list(loc->pf_ifname, &vfs, &n);
        if (r < 0)
                return cni_fail(e, CNI_ERR_GENERIC, r, "%s: cannot read its VFs: %s",
                                loc->pf_ifname, strerror(-r));
        const struct netlink_vf_info *v = NULL;
        for (size_t i = 0; i < n; i++)
                if (vfs[i].vf == loc->vf_index)
                        v = &vfs[i];
        if (!v || !v->has_guids)
                return cni_fail(e, CNI_ERR_GENERIC, -EOPNOTSUPP,
                                "VF %s (VF %d of %s): its PF reports no VF GUIDs: not an "
                                "InfiniBand VF",
                                pci, loc->vf_index, loc->pf_ifname);
        uint64_t current = cni_ib_current_guid(loc, v->port_guid);
        char now[CNI_GUID_STR_MAX];
        cni_guid_format(current, now);
        if (ib->has_guid) {
                snprintf(rec->host_guid, sizeof(rec->host_guid), "%s", now);
                cni_guid_format(ib->guid, rec->guid);
                return 0;
        }
        if (current == 0 || current == GUID_ALL_ONES)
                return cni_fail(e, CNI_ERR_GENERIC, -EINVAL,
                                "VF %s (VF %d of %s): its GUID %s is not valid and no GUID was "
                                "given (runtimeConfig.infinibandGUID or CNI_ARGS GUID=)",
                                pci, loc->vf_index, loc->pf_ifname, now);
        return 0;
}

/* The first VF of the node, other than the one being attached, whose PF reports guid as its
 * node or port GUID. */
struct guid_scan {
        uint64_t guid;
        const struct vf_location *self;
        bool found;
        char pf_pci[32], pf_ifname[IFNAMSIZ];
        int vf;
        const char *as; /* "node GUID", "port GUID", "node and port GUID" */
        int err;        /* a PF whose VFs could not be read */
};

static int scan_pf(const char *pf_pci, const char *pf_ifname, void *userdata)
{
        struct guid_scan *s = userdata;
        if (!pf_ifname[0])
                return 0; /* no netdev in the host's namespace to ask (nor VFs to give a pod) */
        _cleanup_free_ struct netlink_vf_info *vfs = NULL;
        size_t n = 0;
        int r = host_netlink_get_vf_list(pf_ifname, &vfs, &n);
        if (r < 0) {
                /* a PF not read may carry the GUID: not knowing is no "free" */
                s->err = r;
                snprintf(s->pf_pci, sizeof(s->pf_pci), "%s", pf_pci);
                snprintf(s->pf_ifname, sizeof(s->pf_ifname), "%s", pf_ifname);
                return 1;
        }
        for (size_t i = 0; i < n; i++) {
                const struct netlink_vf_info *v = &vfs[i];
                if (!v->has_guids ||
                    (v->vf == s->self->vf_index && strcmp(pf_pci, s->self->pf_pci) == 0))
                        continue;
                bool node = v->node_guid == s->guid, port = v->port_guid == s->guid;
                if (!node && !port)
                        continue;
                s->found = true;
                s->vf = v->vf;
                s->as = node && port ? "node and port GUID" : node ? "node GUID" : "port GUID";
                snprintf(s->pf_pci, sizeof(s->pf_pci), "%s", pf_pci);
                snprintf(s->pf_ifname, sizeof(s->pf_ifname), "%s", pf_ifname);
                return 1;
        }
        return 0;
}

/* A record's holder counts while its namespace lives: a pod whose namespace ended has no
 * identity on the fabric any more (and its VF's GUID, if set, is what the kernel reports). */
static bool holder_alive(const char *name, const struct cni_cache *rec, const char *holder,
                         void *userdata)
{
        (void)name, (void)rec, (void)userdata;
        int fd = host_netns_open(holder);
        if (fd < 0)
                return false;
        close(fd);
        return true;
}

/* ", attached as \"<record>\" (CNI_CONTAINERID-CNI_IFNAME) in network namespace <path>" for the
 * attachment holding VF pci, from its records; "" when no live attachment holds it. */
static void attachment_of(const char *state_dir, const char *pci, char *buf, size_t size)
{
        char name[NAME_MAX + 1], netns[4096];
        struct cni_cache c;
        buf[0] = '\0';
        if (cni_cache_find_latest(state_dir, pci, name, sizeof(name), &c) < 0 ||
            cni_pci_holder(state_dir, pci, netns, sizeof(netns)) < 0)
                return;
        snprintf(buf, size,
                 ", attached as \"%s\" (CNI_CONTAINERID-CNI_IFNAME) in network namespace %s", name,
                 netns);
}

int cni_ib_check_guid_unique(const char *sysfs_root, const char *state_dir, const char *self,
                             const struct cni_ib_conf *ib, const struct vf_location *loc,
                             const char *pci, struct cni_error *e)
{
        if (!ib->has_guid)
                return 0; /* the VF keeps its own GUID, which the agent made unique */
        char text[CNI_GUID_STR_MAX];
        cni_guid_format(ib->guid, text);
        struct guid_scan s = { .guid = ib->guid, .self = loc };
        int r = host_pf_foreach(sysfs_root, scan_pf, &s);
        if (r < 0)
                return cni_fail(e, CNI_ERR_GENERIC, r,
                                "%s %s: cannot list the node's PFs to check that no other VF "
                                "carries it: %s",
                                ib->guid_from, text, strerror(-r));
        if (s.err < 0)
                return cni_fail(e, CNI_ERR_GENERIC, s.err,
                                "%s %s: cannot read the VFs of PF %s (%s) to check that none "
                                "carries it: %s",
                                ib->guid_from, text, s.pf_ifname, s.pf_pci, strerror(-s.err));
        char attached[4096 + NAME_MAX + 96];
        if (s.found) {
                char vf_pci[32];
                if (host_vf_pci(sysfs_root, s.pf_pci, s.vf, vf_pci, sizeof(vf_pci)) < 0)
                        snprintf(vf_pci, sizeof(vf_pci), "?");
                attachment_of(state_dir, vf_pci, attached, sizeof(attached));
                return cni_fail(e, CNI_ERR_GENERIC, -EADDRINUSE,
                                "%s %s is taken: VF %s (VF %d of %s) carries it as its %s%s; a "
                                "GUID must be unique on the node (VF %s not changed)",
                                ib->guid_from, text, vf_pci, s.vf, s.pf_ifname, s.as, attached,
                                pci);
        }
        /* an ADD for another VF that recorded the GUID and has not set it yet */
        char name[NAME_MAX + 1], netns[4096];
        struct cni_cache c;
        r = cni_cache_find_guid(state_dir, self, ib->guid, pci, holder_alive, NULL, name,
                                sizeof(name), &c, netns, sizeof(netns));
        if (r < 0)
                return cni_fail(e, CNI_ERR_GENERIC, r,
                                "%s %s: cannot read the attachment records in %s to check that "
                                "none holds it: %s",
                                ib->guid_from, text, state_dir, strerror(-r));
        if (r > 0)
                return cni_fail(e, CNI_ERR_GENERIC, -EADDRINUSE,
                                "%s %s is taken: the attachment \"%s\" (CNI_CONTAINERID-"
                                "CNI_IFNAME) in network namespace %s holds it for VF %s (VF %d "
                                "of %s); a GUID must be unique on the node (VF %s not changed)",
                                ib->guid_from, text, name, netns, c.device_id, c.vfid, c.master,
                                pci);
        return 0;
}

int cni_ib_set_guid(const char *sysfs_root, const char *pci, struct vf_location *loc,
                    const char *host_ifname, bool vfio, uint64_t guid, struct cni_error *e)
{
        char text[CNI_GUID_STR_MAX];
        cni_guid_format(guid, text);
        int r = host_netlink_set_vf_guids(NULL, loc->pf_ifname, 0, loc->vf_index, guid, guid);
        if (r < 0)
                return cni_fail(e, CNI_ERR_GENERIC, r, "%s VF %d (%s): cannot set GUID %s: %s",
                                loc->pf_ifname, loc->vf_index, pci, text, strerror(-r));
        if (vfio)
                return 0;
        const struct bind_options opts = { .sysfs_root = sysfs_root };
        if ((r = host_rebind_vf_driver(&opts, pci)) < 0)
                return cni_fail(e, CNI_ERR_GENERIC, r,
                                "VF %s: GUID %s set, but re-binding its driver failed: %s", pci,
                                text, strerror(-r));
        if (!host_ifname || !host_ifname[0])
                return 0;
        return cni_vf_netdev_name_back(sysfs_root, pci, loc, host_ifname, e);
}

int cni_vf_netdev_name_back(const char *sysfs_root, const char *pci, struct vf_location *loc,
                            const char *host_ifname, struct cni_error *e)
{
        int r;
        /* the driver re-creates the netdev, possibly under another name */
        for (int i = 0; i < 100 && !host_vf_has_netdev(sysfs_root, pci); i++)
                nanosleep(&(struct timespec){ .tv_nsec = 50 * 1000 * 1000 }, NULL);
        if ((r = host_vf_locate(sysfs_root, pci, loc)) < 0 || !loc->vf_ifname[0])
                return cni_fail(e, CNI_ERR_GENERIC, r < 0 ? r : -ENODEV,
                                "VF %s: no netdev after re-binding its driver", pci);
        if (strcmp(loc->vf_ifname, host_ifname) != 0) {
                struct host_link l;
                if ((r = host_link_get(loc->vf_ifname, &l)) < 0 ||
                    (r = host_link_rename(l.ifindex, host_ifname)) < 0)
                        return cni_fail(e, CNI_ERR_GENERIC, r,
                                        "VF %s: cannot give its re-created netdev %s its name %s "
                                        "back: %s",
                                        pci, loc->vf_ifname, host_ifname, strerror(-r));
                snprintf(loc->vf_ifname, sizeof(loc->vf_ifname), "%s", host_ifname);
        }
        return 0;
}

int cni_ib_restore_guid(const char *sysfs_root, const struct cni_cache *rec, bool vfio,
                        struct cni_error *e)
{
        uint64_t guid;
        if (!rec->host_guid[0])
                return 0;
        if (cni_guid_parse(rec->host_guid, &guid) < 0)
                return cni_fail(e, CNI_ERR_GENERIC, -EBADMSG,
                                "VF %s: the recorded GUID \"%s\" is not a GUID", rec->device_id,
                                rec->host_guid);
        if (guid == 0)
                guid = GUID_ALL_ONES;
        struct vf_location loc;
        int r = host_vf_locate(sysfs_root, rec->device_id, &loc);
        if (r < 0)
                return cni_fail(e, CNI_ERR_GENERIC, r, "VF %s: cannot find its PF: %s",
                                rec->device_id, strerror(-r));
        return cni_ib_set_guid(sysfs_root, rec->device_id, &loc, rec->orig.host_ifname, vfio, guid,
                               e);
}

int cni_ib_reclaim_guid(const char *sysfs_root, const struct cni_cache *stale, bool vfio,
                        struct cni_error *e)
{
        if (!stale->host_guid[0])
                return 0;
        int r = cni_ib_restore_guid(sysfs_root, stale, vfio, e);
        if (r < 0) {
                char why[sizeof(e->msg)];
                snprintf(why, sizeof(why), "%s", e->msg);
                return cni_fail(e, CNI_ERR_TRY_LATER, r,
                                "VF %s: its last holder's namespace is gone and its GUID %s "
                                "could not be put back to %s, as that attachment's DEL would: "
                                "%s; not taken, so that this pod records neither that GUID as "
                                "the VF's own nor runs with it",
                                stale->device_id, stale->guid[0] ? stale->guid : "(unknown)",
                                stale->host_guid, why);
        }
        return 0;
}
