/* SPDX-License-Identifier: Apache-2.0 */
#include "host/device-error.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int host_device_error_append(char **error, const char *fmt, ...)
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
