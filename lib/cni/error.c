/* SPDX-License-Identifier: Apache-2.0 */
/* cni_fail(): the CNI error to report, for `return cni_fail(...)`. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

#include "cni/conf.h"

int cni_fail(struct cni_error *e, int code, int err, const char *fmt, ...)
{
        const int r = err < 0 ? err : -EINVAL;
        if (!e)
                return r;
        va_list ap;
        va_start(ap, fmt);
        /* clang-analyzer does not see va_start() initialise ap here (log.c's identical code
         * passes): a false positive */
        vsnprintf(e->msg, sizeof(e->msg), fmt, ap); // NOLINT(clang-analyzer-valist.Uninitialized)
        va_end(ap);
        e->code = code;
        return r;
}
