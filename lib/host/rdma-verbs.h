/* SPDX-License-Identifier: Apache-2.0 */
/* Port attributes of RDMA devices from libibverbs, for discovery on a live node.
 *
 * Only used when discovery may query the kernel (the real /sys): each RDMA device of the
 * inventory that libibverbs can open gets port 1's state and link layer from ibv_query_port,
 * which is what applications will see. Devices that do not open keep their sysfs values;
 * nothing here fails discovery. */
#pragma once

#include "model/inventory.h"

void host_rdma_verbs_query_ports(struct inventory *inv);
