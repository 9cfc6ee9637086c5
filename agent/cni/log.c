/* SPDX-License-Identifier: Apache-2.0 */
/* util/log.h for the CNI plugin: one line on stderr (the runtime keeps a plugin's stderr),
 * without the agent's journal support, so that the plugin does not link libsystemd. Debug and
 * info lines are left out: a plugin's stdout/stderr is read per call. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "util/log.h"

#undef log_ctx_msg
int log_ctx_msg(int level, int error, const struct log_ctx *ctx, const char *fmt, ...)
{
        if (level <= LOG_NOTICE) {
                va_list ap;
                va_start(ap, fmt);
                fputs("sriov: ", stderr);
                if (ctx && ctx->vf)
                        fprintf(stderr, "VF %s: ", ctx->vf);
                vfprintf(stderr, fmt, ap);
                va_end(ap);
                if (error)
                        fprintf(stderr, ": %s", strerror(error < 0 ? -error : error));
                fputc('\n', stderr);
        }
        return error == 0 ? 0 : error < 0 ? error : -error;
}

int log_get_max_level(void)
{
        return LOG_NOTICE;
}
