/* SPDX-License-Identifier: Apache-2.0 */
#include "util/names.h"

#include <ctype.h>
#include <string.h>

static bool has_bad_char(const char *s)
{
        for (; *s; s++) {
                unsigned char c = (unsigned char)*s;
                if (c <= ' ' || c == 0x7f || c == '/')
                        return true;
        }
        return false;
}

bool ifname_is_valid(const char *name)
{
        size_t len;

        if (!name)
                return false;
        len = strlen(name);
        if (len == 0 || len >= 16)
                return false;
        if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
                return false;
        if (has_bad_char(name) || strchr(name, ':') || strchr(name, '%'))
                return false;
        return true;
}

bool pci_address_is_valid(const char *addr)
{
        /* dddd:bb:ss.f */
        static const char pattern[] = "xxxx:xx:xx.x";

        if (!addr || strlen(addr) != sizeof(pattern) - 1)
                return false;
        for (size_t i = 0; i < sizeof(pattern) - 1; i++) {
                if (pattern[i] == 'x') {
                        if (!isxdigit((unsigned char)addr[i]))
                                return false;
                } else if (addr[i] != pattern[i])
                        return false;
        }
        return addr[11] >= '0' && addr[11] <= '7';
}

bool filename_is_valid(const char *name)
{
        if (!name || !*name || strlen(name) > 255)
                return false;
        if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
                return false;
        return !has_bad_char(name);
}

bool resource_name_is_valid(const char *name)
{
        size_t len;

        if (!name)
                return false;
        len = strlen(name);
        if (len == 0 || len > 63)
                return false;
        for (size_t i = 0; i < len; i++) {
                unsigned char c = (unsigned char)name[i];
                bool edge = i == 0 || i == len - 1;
                if (isalnum(c) && c < 0x80)
                        continue;
                if (!edge && (c == '_' || c == '-'))
                        continue;
                return false;
        }
        return true;
}
