/* SPDX-License-Identifier: Apache-2.0 */
/* InfiniBand VF GUIDs: which node/port GUID each VF of an InfiniBand PF gets.
 *
 * From a static pool file in upstream's format (sriov-network-operator,
 * /etc/sriov-operator/infiniband/guids): a JSON array of PFs, each named by "pciAddress" or
 * "pfGuid" (not both) with either "guids" (VF N gets the N-th) or "guidsRange" {"start",
 * "end"} (VF N gets start + N, end included), not both; the first entry of a PF counts. A PF
 * in the file with no GUID for a VF index is an error for that VF (as upstream).
 * Otherwise derived: a hash of the PF's identity (its RDMA device's node GUID, else its PCI
 * address and hardware address) and the VF index, with the first octet 02 (a locally
 * administered EUI-64), so the same VF gets the same GUID across restarts and reboots and
 * never the invalid all-zero or all-ones GUID.
 * A GUID has one owner at a time: a GUID that a live CNI attachment gave its pod (the ib-sriov
 * plugin's record, runtimeConfig.infinibandGUID) is the pod's, not the pool's, until the
 * attachment ends (struct ib_guid_attachments; the planner neither overwrites it nor hands it
 * to another VF). Pure. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/inventory.h"

#define IB_GUID_TEXT_MAX 24 /* "02:00:00:00:00:00:00:01" + NUL */

struct ib_guid_pool_entry {
        char pci_address[PCI_ADDR_MAX]; /* "" when named by pf_guid */
        uint64_t pf_guid;               /* when pci_address is "" */
        uint64_t *guids;
        size_t n_guids;
        bool has_range;
        uint64_t range_start, range_end;
};

struct ib_guid_pool {
        struct ib_guid_pool_entry *entries;
        size_t n_entries;
};

void ib_guid_pool_done(struct ib_guid_pool *pool);

/* Parses the pool file's text. -EINVAL with error naming the entry and field. */
int ib_guid_pool_parse(const char *text, size_t size, struct ib_guid_pool *ret, char *error,
                       size_t error_size);

/* "02:00:00:00:00:00:00:01" (also '-' between octets, and sysfs' "0200:0000:0000:0001");
 * -EINVAL otherwise. */
int ib_guid_parse(const char *s, uint64_t *ret);
void ib_guid_format(uint64_t guid, char buf[IB_GUID_TEXT_MAX]);
/* Not 0 and not all-ones: the values a VF must never be handed out with. */
bool ib_guid_is_valid(uint64_t guid);

/* GUIDs live CNI attachments gave their pods' VFs: the newest attachment record of each VF
 * that names a GUID, while the VF's allocation record names a holder (lib/cni/state.h; read by
 * the agent, decided on here). */
#define IB_ATTACHMENT_NAME_MAX 128 /* "<containerid>-<ifname>", cut for messages */

struct ib_guid_attachment {
        char vf_pci[PCI_ADDR_MAX];
        uint64_t guid;                     /* the pod's GUID, as the attachment set it */
        char name[IB_ATTACHMENT_NAME_MAX]; /* the record's name, for messages */
};

struct ib_guid_attachments {
        struct ib_guid_attachment *items;
        size_t n_items, cap_items; /* cap_*: allocated, for util/array.h */
};

void ib_guid_attachments_done(struct ib_guid_attachments *set);
/* Adds VF vf_pci's attachment; a later one for the same VF replaces it (one attachment holds a
 * VF). -EINVAL for an empty PCI address or an invalid GUID (no attachment sets one), or
 * -ENOMEM. */
int ib_guid_attachments_add(struct ib_guid_attachments *set, const char *vf_pci, uint64_t guid,
                            const char *name);
/* The attachment whose pod owns VF vf_pci's GUID, or NULL (set may be NULL). PCI addresses
 * compare case-insensitively. */
const struct ib_guid_attachment *ib_guid_attachment_of_vf(const struct ib_guid_attachments *set,
                                                          const char *vf_pci);
/* The attachment of a VF other than vf_pci whose pod owns guid, or NULL. */
const struct ib_guid_attachment *ib_guid_attachment_holding(const struct ib_guid_attachments *set,
                                                            uint64_t guid, const char *vf_pci);

/* The GUID VF vf_index of pf gets (pool may be NULL). -ENOENT when the pool names the PF but
 * has no GUID for this index (error says so). */
int ib_guid_for_vf(const struct ib_guid_pool *pool, const struct pf_info *pf, int vf_index,
                   uint64_t *ret, char *error, size_t error_size);
