/* SPDX-License-Identifier: Apache-2.0 */
/* Validation of names that end up in sysfs paths, netlink requests or file names.
 * A name from a policy, a config file or the API is never used in a path until it passed one of
 * these checks: no '/', no "..", no whitespace or control characters, bounded length. */
#pragma once

#include <stdbool.h>

/* Linux interface name: 1..15 bytes, not "." or "..", no '/', ':' , whitespace or control. */
bool ifname_is_valid(const char *name);
/* PCI address in domain form "0000:3b:02.1" (lower- or upper-case hex). */
bool pci_address_is_valid(const char *addr);
/* A single path component we create or open: no '/', not "." / "..", printable, <= 255. */
bool filename_is_valid(const char *name);
/* Kubernetes-style resource name: ^[a-zA-Z0-9]([a-zA-Z0-9_-]*[a-zA-Z0-9])?$, <= 63. */
bool resource_name_is_valid(const char *name);
