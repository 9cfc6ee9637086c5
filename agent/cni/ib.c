/* SPDX-License-Identifier: Apache-2.0 */
#include "ib.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "host/driver-bind.h"
#include "host/netlink-link.h"
#include "host/netlink-netns.h"
#include "util/macro.h"

#define GUID_ALL_ONES UINT64_MAX

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
        char now[CNI_GUID_STR_MAX];
        cni_guid_format(v->port_guid, now);
        if (ib->has_guid) {
                snprintf(rec->host_guid, sizeof(rec->host_guid), "%s", now);
                return 0;
        }
        if (v->port_guid == 0 || v->port_guid == GUID_ALL_ONES)
                return cni_fail(e, CNI_ERR_GENERIC, -EINVAL,
                                "VF %s (VF %d of %s): its GUID %s is not valid and no GUID was "
                                "given (runtimeConfig.infinibandGUID or CNI_ARGS GUID=)",
                                pci, loc->vf_index, loc->pf_ifname, now);
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
