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
 * never the invalid all-zero or all-ones GUID. Pure. */
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

/* The GUID VF vf_index of pf gets (pool may be NULL). -ENOENT when the pool names the PF but
 * has no GUID for this index (error says so). */
int ib_guid_for_vf(const struct ib_guid_pool *pool, const struct pf_info *pf, int vf_index,
                   uint64_t *ret, char *error, size_t error_size);
