/* SPDX-License-Identifier: Apache-2.0 */
#include "util/parse.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int path_printf(char *buf, size_t size, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        /* va_start is right above: clang-14's analyzer loses it on some inlined paths. */
        int n = vsnprintf(buf, size, fmt, ap); // NOLINT(clang-analyzer-valist.Uninitialized)
        va_end(ap);
        if (n < 0)
                return -EINVAL;
        if ((size_t)n >= size)
                return -ENAMETOOLONG;
        return 0;
}

int parse_on_off(const char *s, int *ret)
{
        if (strcmp(s, "on") == 0)
                *ret = 1;
        else if (strcmp(s, "off") == 0)
                *ret = 0;
        else
                return -EINVAL;
        return 0;
}

int parse_int(const char *s, int *ret)
{
        char *end;
        long v;

        if (!s || !*s)
                return -EINVAL;
        errno = 0;
        v = strtol(s, &end, 10);
        if (errno == ERANGE || v < INT_MIN || v > INT_MAX)
                return -ERANGE;
        while (*end == ' ' || *end == '\t' || *end == '\n')
                end++;
        if (end == s || *end != '\0')
                return -EINVAL;
        *ret = (int)v;
        return 0;
}

int hex_digit_value(char c)
{
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -1;
}

int parse_hex_u32(const char *s, uint32_t *ret)
{
        char *end;
        unsigned long v;

        if (!s || !*s)
                return -EINVAL;
        if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
                s += 2;
        if (!*s || *s == '-' || *s == '+' || *s == ' ')
                return -EINVAL;
        errno = 0;
        v = strtoul(s, &end, 16);
        if (errno == ERANGE || v > UINT32_MAX)
                return -ERANGE;
        while (*end == '\n')
                end++;
        if (*end != '\0')
                return -EINVAL;
        *ret = (uint32_t)v;
        return 0;
}
