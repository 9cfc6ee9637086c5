/* SPDX-License-Identifier: Apache-2.0 */
/* Vendor and device names from the pci.ids database, through libpci.
 *
 * One pci_names handle per discovery run (libpci loads pci.ids on the first lookup). Lookups
 * never touch the network or the user's cache, never print, and an unknown id or a missing
 * database simply yields NULL names. */
#pragma once

#include <stdint.h>

struct pci_names;

/* NULL when libpci cannot be set up; lookups on NULL return NULL names. */
struct pci_names *host_pci_names_new(void);
void host_pci_names_free(struct pci_names *names);

/* Newly allocated names (free()), or NULL when unknown. Returns 0 or -ENOMEM. */
int host_pci_names_lookup(struct pci_names *names, uint16_t vendor, uint16_t device,
                          char **ret_vendor_name, char **ret_device_name);
