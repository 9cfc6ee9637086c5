/* SPDX-License-Identifier: Apache-2.0 */
/* The VF's RDMA device and the pod's network namespace (the RDMA subsystem's exclusive mode):
 * found and recorded before ADD's first change (found again and recorded anew after an
 * ib-sriov GUID's re-bind), moved in by ADD, moved back by DEL and by ADD's
 * undo. In shared mode, or without ib_core, nothing moves (unless required: ib-sriov's
 * rdmaIsolation, refused then as upstream refuses it). */
#pragma once

#include <stdbool.h>

#include "cni/conf.h"
#include "cni/state.h"
#include "host/rdma-function.h"

/* Reads the kernel's mode; in exclusive mode finds the VF's RDMA device and fills rec's
 * rdma_* fields (nothing moved yet). required: refuse when the mode is not exclusive or the VF
 * has no RDMA device. A VF whose function has an RDMA auxiliary device (mlx5_core.rdma.N) has
 * one: while it is absent (a driver re-bind under way) it is waited for, up to 5 s, and then
 * refused rather than attached without. 0 or a negative errno with e filled. */
int cni_rdma_plan(const char *sysfs_root, const char *pci, const char *vf_ifname,
                  const char *driver, bool required, struct cni_cache *rec, struct cni_error *e);

/* After the VF's driver was re-bound (ib-sriov's GUID step): finds its RDMA device again from
 * its PCI function, as the re-bind unregistered it and the driver registered a new one, with a
 * new index and usually a new name; waits a moment for the driver to register it. Updates rec's
 * rdma_* fields. 1 when they changed (the caller saves the record: DEL moves back what it
 * names), 0 when not, or a negative errno with e filled. */
int cni_rdma_find_again(const char *sysfs_root, const char *vf_ifname, const char *driver,
                        struct cni_cache *rec, struct cni_error *e);

/* Moves the device rec names into pod_ns (netns: its path, for messages). A driver that cannot
 * move devices gets an error naming the driver and the mode. */
int cni_rdma_move(const struct cni_cache *rec, int pod_ns, const char *netns, struct cni_error *e);

/* Moves it back from pod_ns into host_ns (the caller's); finding it in the host already is
 * success. Back in host_ns on return. A VF netdev the move re-created (IPoIB: its netdev
 * belongs to the RDMA device) gets its host name rec->orig.host_ifname back. */
int cni_rdma_release(const char *sysfs_root, const struct cni_cache *rec, int pod_ns, int host_ns,
                     const char *netns, struct cni_error *e);

/* After the last move or re-bind of ADD (the caller holds cni_move_lock()): the uverbs/umad/
 * issm devices the VF's RDMA device (rec's, or in shared mode the one under its function) owns
 * now must be those the pod was handed (want, from source: see alloc-specs.h). A kind not
 * handed out is not compared. -EXDEV with e naming both when one differs. */
int cni_rdma_check_devices(const char *sysfs_root, const struct cni_cache *rec,
                           const struct host_rdma_char_devices *want, const char *source,
                           struct cni_error *e);
