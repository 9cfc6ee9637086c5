/* SPDX-License-Identifier: Apache-2.0 */
#include "util/ipoib.h"

#include <errno.h>

#include "util/parse.h"

int ipoib_hwaddr_guid(const uint8_t *hwaddr, size_t len, uint64_t *ret)
{
        if (len != IPOIB_HWADDR_LEN)
                return -EINVAL;
        uint64_t guid = 0;
        for (size_t i = IPOIB_HWADDR_LEN - 8; i < IPOIB_HWADDR_LEN; i++)
                guid = guid << 8 | hwaddr[i];
        *ret = guid;
        return 0;
}

int ipoib_hwaddr_text_guid(const char *text, uint64_t *ret)
{
        uint8_t hw[IPOIB_HWADDR_LEN];
        const char *p = text;

        for (size_t i = 0; i < IPOIB_HWADDR_LEN; i++) {
                int hi = hex_digit_value(p[0]), lo = hi < 0 ? -1 : hex_digit_value(p[1]);
                if (lo < 0)
                        return -EINVAL;
                hw[i] = (uint8_t)(hi << 4 | lo);
                p += 2;
                if (i + 1 < IPOIB_HWADDR_LEN && *p++ != ':')
                        return -EINVAL;
        }
        /* sysfs ends the file with a newline, which discovery strips */
        if (*p != '\0')
                return -EINVAL;
        return ipoib_hwaddr_guid(hw, sizeof(hw), ret);
}
