/* SPDX-License-Identifier: Apache-2.0 */
/* CNI type `ib-sriov`: the InfiniBand VF's GUID (upstream ib-sriov-cni's ApplyVFConfig and
 * ResetVFConfig). The GUID is set as the VF's node and port GUID on the PF and the VF's driver
 * re-bound so its RDMA device and IPoIB netdev take it (not on vfio-pci); the re-bound netdev
 * gets its name back. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "cni/conf-ib.h"
#include "cni/state.h"
#include "host/vf-lookup.h"

/* The VF's GUID now, where the kernel keeps it: the last 8 bytes of its IPoIB netdev's
 * 20-byte hardware address (loc->vf_ifname, in the caller's namespace), as upstream
 * ib-sriov-cni reads it; the PF's VF info (vf_info_guid) only says what was set through
 * netlink since the driver loaded (0 otherwise, on mlx5) and needs Linux >= 5.5. That value
 * when the VF has no IPoIB netdev here. */
uint64_t cni_ib_current_guid(const struct vf_location *loc, uint64_t vf_info_guid);

/* Before the first change: with a GUID, records the VF's current one in rec->host_guid (and the
 * given one in rec->guid); without, refuses a VF whose GUID is zero or all-ones. Also
 * ibKubernetesEnabled's checks. */
int cni_ib_plan(const struct cni_ib_conf *ib, const struct vf_location *loc, const char *pci,
                bool vfio, struct cni_cache *rec, struct cni_error *e);

/* GUIDs are unique on the node. With a GUID given, refuses (-EADDRINUSE, before any change)
 * one that another VF of the node carries as its node or port GUID (as every PF of the node
 * reports its VFs' over netlink), naming that VF's PCI address and, from the records, the
 * attachment holding it; or one that another attachment's record holds for its pod while its
 * namespace lives (an ADD for another VF that has not set it yet). A PF whose VFs cannot be
 * read fails the check: unknown is not free. The caller holds cni_guid_lock() from before this
 * until its own record (naming the GUID) is written; self is that record's name. */
int cni_ib_check_guid_unique(const char *sysfs_root, const char *state_dir, const char *self,
                             const struct cni_ib_conf *ib, const struct vf_location *loc,
                             const char *pci, struct cni_error *e);

/* Sets guid as the VF's node and port GUID and re-binds the VF (not with vfio); its netdev
 * (host_ifname, "" for none) is renamed back after the re-bind. loc is read again. */
int cni_ib_set_guid(const char *sysfs_root, const char *pci, struct vf_location *loc,
                    const char *host_ifname, bool vfio, uint64_t guid, struct cni_error *e);

/* After a driver re-bind or an RDMA device move re-created the VF's netdev (possibly under
 * another name): waits for it (up to 5 s) and gives it host_ifname back. loc read again. */
int cni_vf_netdev_name_back(const char *sysfs_root, const char *pci, struct vf_location *loc,
                            const char *host_ifname, struct cni_error *e);

/* ADD taking a VF whose holder's namespace is gone (its DEL never came): puts back the GUID
 * that attachment's record (stale) says the VF had before it, as its DEL would, so that this
 * ADD records the VF's own GUID and no pod runs with the dead pod's. Nothing when that ADD set
 * no GUID. The caller holds cni_move_lock() (a re-bind). CNI_ERR_TRY_LATER when it fails. */
int cni_ib_reclaim_guid(const char *sysfs_root, const struct cni_cache *stale, bool vfio,
                        struct cni_error *e);

/* DEL (and ADD's undo): puts rec->host_guid back (all zeros becomes all ones, as upstream: a
 * zero GUID cannot be set). Nothing when ADD set no GUID. */
int cni_ib_restore_guid(const char *sysfs_root, const struct cni_cache *rec, bool vfio,
                        struct cni_error *e);
