/* SPDX-License-Identifier: Apache-2.0 */
#include "util/log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <systemd/sd-journal.h>
#include <unistd.h>

static struct {
        bool journal;
        int max_level;
} log_config = { .journal = false, .max_level = LOG_INFO };

static bool stderr_is_journal(void)
{
        const char *e = getenv("JOURNAL_STREAM");
        struct stat st;
        unsigned long long dev, ino;
        char *end;

        /* "DEV:INO"; strtoull() rather than sscanf(), which is undefined on overflow */
        if (!e || !*e)
                return false;
        errno = 0;
        dev = strtoull(e, &end, 10);
        if (errno != 0 || end == e || *end != ':')
                return false;
        e = end + 1;
        ino = strtoull(e, &end, 10);
        if (errno != 0 || end == e || *end != '\0')
                return false;
        if (fstat(STDERR_FILENO, &st) < 0)
                return false;
        return st.st_dev == (dev_t)dev && st.st_ino == (ino_t)ino;
}

void log_setup(enum log_target target, int max_level)
{
        log_config.max_level = max_level;
        switch (target) {
        case LOG_TARGET_JOURNAL:
                log_config.journal = true;
                break;
        case LOG_TARGET_STDERR:
                log_config.journal = false;
                break;
        case LOG_TARGET_AUTO:
                log_config.journal = stderr_is_journal();
                break;
        }
}

int log_get_max_level(void)
{
        return log_config.max_level;
}

static const char *const level_names[] = {
        [LOG_ERR] = "err",   [LOG_WARNING] = "warning", [LOG_NOTICE] = "notice",
        [LOG_INFO] = "info", [LOG_DEBUG] = "debug",
};

int log_level_from_string(const char *s)
{
        if (!s)
                return -EINVAL;
        for (int i = LOG_ERR; i <= LOG_DEBUG; i++)
                if (strcasecmp(s, level_names[i]) == 0)
                        return i;
        if (strcasecmp(s, "error") == 0)
                return LOG_ERR;
        if (s[0] >= '3' && s[0] <= '7' && s[1] == '\0')
                return s[0] - '0';
        return -EINVAL;
}

/* Values from policies, files and the API end up in messages and context fields: a "\n" in a
 * pfNames entry must not start a forged log line ("...PF released by admin"), nor may escape
 * sequences reach a terminal. Control characters become \n, \r, \t or \xNN; the rest is
 * kept as is. out has room for 4 bytes per input byte; longer input is cut. */
static const char *escape_controls(const char *in, char *out, size_t size)
{
        static const char hex[] = "0123456789abcdef";
        size_t o = 0;

        if (!in)
                return NULL;
        for (const unsigned char *p = (const unsigned char *)in; *p && o + 5 <= size; p++) {
                if (*p >= 0x20 && *p != 0x7f) {
                        out[o++] = (char)*p;
                        continue;
                }
                out[o++] = '\\';
                switch (*p) {
                case '\n':
                        out[o++] = 'n';
                        break;
                case '\r':
                        out[o++] = 'r';
                        break;
                case '\t':
                        out[o++] = 't';
                        break;
                default:
                        out[o++] = 'x';
                        out[o++] = hex[*p >> 4];
                        out[o++] = hex[*p & 0xf];
                }
        }
        out[o] = '\0';
        return out;
}

#define ESCAPED_MAX 1024 /* per context field */

/* The context with every value escaped, into bufs. */
static struct log_ctx escape_ctx(const struct log_ctx *ctx, char bufs[5][ESCAPED_MAX])
{
        return (struct log_ctx){
                .pf = escape_controls(ctx->pf, bufs[0], ESCAPED_MAX),
                .vf = escape_controls(ctx->vf, bufs[1], ESCAPED_MAX),
                .policy = escape_controls(ctx->policy, bufs[2], ESCAPED_MAX),
                .resource = escape_controls(ctx->resource, bufs[3], ESCAPED_MAX),
                .action = escape_controls(ctx->action, bufs[4], ESCAPED_MAX),
        };
}

static void log_to_stderr(int level, const struct log_ctx *ctx, const char *msg)
{
        char prefix[512] = "";
        size_t n = 0;

        if (ctx) {
                const struct {
                        const char *key, *val;
                } fields[] = {
                        { "PF", ctx->pf },         { "VF", ctx->vf },
                        { "POLICY", ctx->policy }, { "RESOURCE", ctx->resource },
                        { "ACTION", ctx->action },
                };
                for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
                        if (!fields[i].val || n >= sizeof(prefix))
                                continue;
                        n += snprintf(prefix + n, sizeof(prefix) - n, "%s=%s ", fields[i].key,
                                      fields[i].val);
                }
        }
        fprintf(stderr, "sriov-agent[%s]: %s%s\n",
                level >= LOG_ERR && level <= LOG_DEBUG ? level_names[level] : "?", prefix, msg);
}

static void log_to_journal(int level, int error, const struct log_ctx *ctx, const char *msg)
{
        char fields[8][600];
        struct iovec iov[8];
        size_t n = 0;

#define ADD_FIELD(...)                                                                             \
        do {                                                                                       \
                int len = snprintf(fields[n], sizeof(fields[n]), __VA_ARGS__);                     \
                iov[n] = (struct iovec){ .iov_base = fields[n],                                    \
                                         .iov_len = (size_t)len < sizeof(fields[n])                \
                                                        ? (size_t)len                              \
                                                        : sizeof(fields[n]) - 1 };                 \
                n++;                                                                               \
        } while (0)

        ADD_FIELD("PRIORITY=%i", level);
        ADD_FIELD("SYSLOG_IDENTIFIER=sriov-agent");
        if (error)
                ADD_FIELD("ERRNO=%i", error);
        /* Only the context that is present becomes a field, so `journalctl PF=...` filters. */
        if (ctx && ctx->pf)
                ADD_FIELD("PF=%s", ctx->pf);
        if (ctx && ctx->vf)
                ADD_FIELD("VF=%s", ctx->vf);
        if (ctx && ctx->policy)
                ADD_FIELD("POLICY=%s", ctx->policy);
        if (ctx && ctx->resource)
                ADD_FIELD("RESOURCE=%s", ctx->resource);
        if (ctx && ctx->action)
                ADD_FIELD("ACTION=%s", ctx->action);
#undef ADD_FIELD
        char message[8200];
        int len = snprintf(message, sizeof(message), "MESSAGE=%s", msg);
        iov[n++] = (struct iovec){ .iov_base = message,
                                   .iov_len = (size_t)len < sizeof(message) ? (size_t)len
                                                                            : sizeof(message) - 1 };
        sd_journal_sendv(iov, (int)n);
}

int(log_ctx_msg)(int level, int error, const struct log_ctx *ctx, const char *fmt, ...)
{
        int saved_errno = errno;
        int ret = error == 0 ? 0 : -abs(error);

        if (level > log_config.max_level) {
                errno = saved_errno;
                return ret;
        }

        char msg[2048];
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        if (n < 0)
                n = 0;
        if (error != 0 && (size_t)n < sizeof(msg))
                snprintf(msg + n, sizeof(msg) - n, ": %s", strerror(abs(error)));

        char escaped[sizeof(msg) * 4], ctx_bufs[5][ESCAPED_MAX];
        struct log_ctx safe_ctx;
        if (ctx)
                safe_ctx = escape_ctx(ctx, ctx_bufs);
        escape_controls(msg, escaped, sizeof(escaped));
        if (log_config.journal)
                log_to_journal(level, abs(error), ctx ? &safe_ctx : NULL, escaped);
        else
                log_to_stderr(level, ctx ? &safe_ctx : NULL, escaped);
        errno = saved_errno;
        return ret;
}
