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

/* DEL (and ADD's undo): puts rec->host_guid back (all zeros becomes all ones, as upstream: a
 * zero GUID cannot be set). Nothing when ADD set no GUID. */
int cni_ib_restore_guid(const char *sysfs_root, const struct cni_cache *rec, bool vfio,
                        struct cni_error *e);
