/* SPDX-License-Identifier: Apache-2.0 */
/* Quoting untrusted names (addresses, interface and driver names from the command line or a
 * policy) for log messages: control and non-ASCII bytes become '?', long input is cut. The
 * validation happens elsewhere; this only keeps a rejected name from garbling the log. */
#pragma once

#include <stddef.h>

static inline const char *host_printable_name(const char *s, char *buf, size_t size)
{
        size_t i = 0;
        if (!s)
                return "(null)";
        for (; s[i] && i + 1 < size; i++)
                buf[i] = (unsigned char)s[i] >= 0x20 && (unsigned char)s[i] < 0x7f ? s[i] : '?';
        buf[i] = '\0';
        return buf;
}

#define PRINTABLE(s) host_printable_name((s), (char[64]){ 0 }, 64)
