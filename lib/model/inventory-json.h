/* SPDX-License-Identifier: Apache-2.0 */
/* The observed inventory as JSON, in SriovNetworkNodeState status form.
 *
 * {"interfaces":[{name, mac, driver, pciAddress, vendor, deviceID, mtu, numVfs, totalvfs,
 *   linkType, linkSpeed, linkAdminState, linkState, eSwitchMode, numaNode, iommuGroup,
 *   rdmaDevices[],
 *   "Vfs":[{name, mac, driver, pciAddress, vendor, deviceID, mtu, vfID, "Vlan", numaNode,
 *   iommuGroup, rdmaDevices[{name, charDevices[]}], error}], error}]}
 * Ids are 4-digit lower-case hex strings ("15b3"), linkSpeed reads "25000 Mb/s", linkType
 * "ETH"/"IB", linkAdminState "up"/"down", linkState the PF netdev's operstate ("up", "down",
 * "lowerlayerdown", ...). Values discovery could not learn (-1, "") are left
 * out rather than reported as zero; `error` appears only on devices that have one. Used by
 * `sriov-agent discover -o json` and for the NodeState status. */
#pragma once

#include <jansson.h>

#include "model/inventory.h"

/* New reference, or NULL on allocation failure. */
json_t *inventory_to_json(const struct inventory *inv);
json_t *pf_info_to_json(const struct pf_info *pf);
json_t *vf_info_to_json(const struct vf_info *vf);
