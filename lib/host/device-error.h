/* SPDX-License-Identifier: Apache-2.0 */
/* Per-device error text collected during discovery.
 *
 * A PF or VF whose sysfs data is garbled keeps what could be read plus one human-readable
 * string listing every problem ("sriov_numvfs: 'x3' is not a number; driver link dangles"),
 * so the scan goes on and the user sees all of it at once. */
#pragma once

/* Appends a formatted problem to *error ("; "-separated). Returns 0 or -ENOMEM. */
int host_device_error_append(char **error, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
