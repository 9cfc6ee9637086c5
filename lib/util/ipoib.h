/* SPDX-License-Identifier: Apache-2.0 */
/* The port GUID an IPoIB netdev carries in its hardware address: where the kernel keeps a VF's
 * GUID for real. The PF's VF info (IFLA_VF_IB_PORT_GUID) only reports GUIDs set through
 * netlink since the driver loaded (0 on mlx5 otherwise); upstream ib-sriov-cni reads the
 * address for this reason. One parser for the agent's discovery and the CNI plugin. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#define IPOIB_HWADDR_LEN 20 /* INFINIBAND_ALEN: QPN (4), GID subnet prefix (8), port GUID (8) */

/* The port GUID in the binary address; -EINVAL when it is not len IPOIB_HWADDR_LEN. */
int ipoib_hwaddr_guid(const uint8_t *hwaddr, size_t len, uint64_t *ret);
/* The same from the text form sysfs shows ("80:00:00:48:fe:80:...:0a", 20 octets); -EINVAL
 * for anything else (an Ethernet MAC, a garbled file). */
int ipoib_hwaddr_text_guid(const char *text, uint64_t *ret);
