#include "host/device-error.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int device_error_append(char **error, const char *fmt, ...)
{
        char *msg = NULL, *joined = NULL;
        va_list ap;

        va_start(ap, fmt);
        int n = vasprintf(&msg, fmt, ap);
        va_end(ap);
        if (n < 0)
                return -ENOMEM;
        if (!*error) {
                *error = msg;
                return 0;
        }
        n = asprintf(&joined, "%s; %s", *error, msg);
        free(msg);
        if (n < 0)
                return -ENOMEM;
        free(*error);
        *error = joined;
        return 0;
}

const char *printable_name(const char *name, char *buf, size_t size)
{
        size_t i = 0;

        if (size == 0)
                return "";
        for (; name[i] && i + 1 < size; i++) {
                unsigned char c = (unsigned char)name[i];
                buf[i] = (c < 0x20 || c >= 0x7f) ? '?' : (char)c;
        }
        buf[i] = '\0';
        return buf;
}
