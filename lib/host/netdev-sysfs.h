/* SPDX-License-Identifier: Apache-2.0 */
/* Network interfaces of one PCI function, read from its `net/` directory.
 *
 * Reads name, MAC (address), MTU, operstate, admin state (IFF_UP in flags), speed and link type
 * (`type`: 1 ether, 32 infiniband) of every netdev under fn_dir_fd/net. Entries whose names are
 * not valid interface names are skipped and reported in *error; unreadable attributes stay
 * unknown and are reported too. A function without `net/` has no netdevs and no error.
 * pf_attributes false (a VF's netdevs) leaves speed_mbps -1 and operstate "": nothing uses them
 * for VFs (a VF's netdev only mirrors its PF's link speed; pools look at the PF's operstate),
 * and skipping them saves six system calls per VF. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "model/inventory.h"

int host_netdev_sysfs_read_function(int fn_dir_fd, bool pf_attributes, struct netdev_info **ret,
                                    size_t *ret_n, char **error);
