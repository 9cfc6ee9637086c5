/* SPDX-License-Identifier: Apache-2.0 */
#include "util/base64.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/macro.h"

static int base64_value(char c)
{
        if (c >= 'A' && c <= 'Z')
                return c - 'A';
        if (c >= 'a' && c <= 'z')
                return c - 'a' + 26;
        if (c >= '0' && c <= '9')
                return c - '0' + 52;
        if (c == '+')
                return 62;
        if (c == '/')
                return 63;
        return -1;
}

int base64_decode(const char *in, char **ret, size_t *ret_len)
{
        size_t n = strlen(in);
        _cleanup_free_ char *out = malloc(n / 4 * 3 + 4);
        if (!out)
                return -ENOMEM;

        uint32_t acc = 0;
        size_t bits_groups = 0, len = 0, padding = 0;
        for (const char *p = in; *p; p++) {
                if (strchr(" \t\r\n", *p))
                        continue;
                if (*p == '=') {
                        padding++;
                        continue;
                }
                int v = base64_value(*p);
                if (v < 0 || padding > 0) /* data after padding is corrupt too */
                        return -EINVAL;
                acc = (acc << 6) | (uint32_t)v;
                if (++bits_groups == 4) {
                        out[len++] = (char)(acc >> 16);
                        out[len++] = (char)(acc >> 8);
                        out[len++] = (char)acc;
                        acc = 0;
                        bits_groups = 0;
                }
        }
        switch (bits_groups) {
        case 0:
                if (padding != 0)
                        /* NOLINTNEXTLINE(clang-analyzer-unix.Malloc): _cleanup_ frees it */
                        return -EINVAL;
                break;
        case 2:
                if (padding > 2)
                        return -EINVAL;
                out[len++] = (char)(acc >> 4);
                break;
        case 3:
                if (padding > 1)
                        return -EINVAL;
                out[len++] = (char)(acc >> 10);
                out[len++] = (char)(acc >> 2);
                break;
        default:
                return -EINVAL;
        }
        out[len] = '\0';
        *ret = TAKE_PTR(out);
        if (ret_len)
                *ret_len = len;
        return 0;
}
