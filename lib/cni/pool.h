/* SPDX-License-Identifier: Apache-2.0 */
/* Which VFs the `sriov` CNI plugin may hand to a pod: those in a pool the sriov-agent on this
 * node manages. A NetworkAttachmentDefinition is written by whoever may create one in the pod's
 * namespace, and its deviceID is taken as written (Multus fills it from the device plugin only
 * when the NAD names a resource), so without this check any namespace could take any VF no live
 * pod holds: one of another resource, or one the host itself uses.
 *
 * The agent records every PF it manages in <state-dir>/<pf-pci>.json; its interface.vfGroups
 * list the pools (resourceName, vfRange "first-last") the PF's VFs are split into. A node that
 * runs another operator can allow every VF with a node-side file (never a NAD field). */
#pragma once

#include <stddef.h>

#include "cni/conf.h"

#define CNI_AGENT_STATE_DIR_DEFAULT "/var/lib/sriov-agent"
/* When this file exists on the node, any VF is accepted (the pool check is off). */
#define CNI_ANY_VF_FILE_DEFAULT "/etc/sriov-agent/cni-allow-any-vf"

/* The pool (resource name) of VF vf_index of the PF pf_pci, from the agent's record in
 * agent_dir. 0 and the name in resource; else fills e naming the VF and the record, and
 * returns -ENOENT (no record: the agent does not manage the PF), -ESRCH (the VF is in none of
 * the PF's pools) or -EBADMSG (the record cannot be read). */
int cni_pool_lookup(const char *agent_dir, const char *pf_pci, int vf_index, char *resource,
                    size_t size, struct cni_error *e);
/* The same on the record's text; path only names it in messages. */
int cni_pool_lookup_text(const char *path, const char *text, size_t len, const char *pf_pci,
                         int vf_index, char *resource, size_t size, struct cni_error *e);
