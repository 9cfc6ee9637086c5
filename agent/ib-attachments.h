/* SPDX-License-Identifier: Apache-2.0 */
/* The GUIDs the ib-sriov CNI plugin gave pods, read from its records (lib/cni/state.h) for the
 * planner (plan/ib-guids.h: a GUID has one owner).
 *
 * Per VF the newest attachment record counts (as the plugin itself judges which attachment
 * holds a VF), when it names a GUID (runtimeConfig.infinibandGUID) and the VF's allocation
 * record (pci/<pci>) names a holder. The plugin writes both before it sets the GUID and
 * removes both after its DEL put the VF's GUID back, so a pod's GUID is never taken for a
 * stray one in between. Records that cannot be read or parsed are skipped, as the plugin skips
 * them. */
#pragma once

#include "plan/ib-guids.h"

/* Fills ret (emptied first) from the records in dir. A missing dir is none (0); one that
 * exists but cannot be read is -errno (logged with the dir): the pods' GUIDs would otherwise be
 * taken for stray ones and overwritten. -ENOMEM. */
int ib_attachments_read(const char *dir, struct ib_guid_attachments *ret);
