/* SPDX-License-Identifier: Apache-2.0 */
#include "policy/field-errors.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "util/macro.h"

void field_errors_add(struct field_errors *e, const char *field, const char *fmt, ...)
{
        _cleanup_free_ char *msg = NULL;
        char *joined;
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = vasprintf(&msg, fmt, ap);
        va_end(ap);
        if (r < 0) {
                msg = NULL;
                e->oom = true;
                return;
        }
        r = e->text ? asprintf(&joined, "%s; field %s: %s", e->text, field, msg)
                    : asprintf(&joined, "field %s: %s", field, msg);
        if (r < 0) {
                e->oom = true;
                return;
        }
        free(e->text);
        e->text = joined;
}

void field_errors_done(struct field_errors *e)
{
        free(e->text);
        e->text = NULL;
}
