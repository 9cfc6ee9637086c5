/* SPDX-License-Identifier: Apache-2.0 */
/* Logging with structured context.
 *
 * Every message can carry the PF, VF, policy, resource and action it concerns. Under systemd
 * (JOURNAL_STREAM names our stderr) messages go to the journal with fields PF=, VF=, POLICY=,
 * RESOURCE=, ACTION=; elsewhere they are one readable line on stderr with the same context.
 * The log target and level are the one piece of process-wide state outside the daemon struct:
 * they are set once at start-up by log_setup() and only read afterwards. */
#pragma once

#include <stdbool.h>
#include <syslog.h>

struct log_ctx {
        const char *pf;       /* PCI address of the PF */
        const char *vf;       /* PCI address or index of the VF */
        const char *policy;   /* policy name */
        const char *resource; /* resource name */
        const char *action;   /* planner action name */
};

enum log_target {
        LOG_TARGET_AUTO, /* journal when JOURNAL_STREAM matches stderr, else stderr */
        LOG_TARGET_STDERR,
        LOG_TARGET_JOURNAL,
};

void log_setup(enum log_target target, int max_level);
int log_get_max_level(void);
/* Parses "err", "warning", "notice", "info", "debug" (or 3..7). Returns the level or -EINVAL. */
int log_level_from_string(const char *s);

/* Logs and returns -abs(error) (or 0 when error is 0), so callers can `return log_...`. */
int log_ctx_msg(int level, int error, const struct log_ctx *ctx, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#ifdef __clang_analyzer__
/* Static analysis only (clang-tidy's clang-analyzer-*): spell out the result of log_ctx_msg()
 * at the call site, which the analyzer cannot see across translation units. Without it, every
 * `return log_error_errno(-EINVAL, ...)` is followed by a made-up path where it returned >= 0
 * and the caller reads outputs that were never written. */
static inline int log_ctx_msg_result(int logged, int error)
{
        const int result = error < 0 ? error : -error;
        (void)logged;
        if (error != 0 && result >= 0) /* it cannot infer -error < 0 from error > 0 either */
                __builtin_unreachable();
        return result;
}
#define log_ctx_msg(level, error, ...)                                                             \
        ({                                                                                         \
                const int log_ctx_error_ = (error);                                                \
                log_ctx_msg_result(log_ctx_msg((level), log_ctx_error_, __VA_ARGS__),              \
                                   log_ctx_error_);                                                \
        })
#endif

#define log_debug(...)              log_ctx_msg(LOG_DEBUG, 0, NULL, __VA_ARGS__)
#define log_info(...)               log_ctx_msg(LOG_INFO, 0, NULL, __VA_ARGS__)
#define log_notice(...)             log_ctx_msg(LOG_NOTICE, 0, NULL, __VA_ARGS__)
#define log_warning(...)            log_ctx_msg(LOG_WARNING, 0, NULL, __VA_ARGS__)
#define log_error(...)              log_ctx_msg(LOG_ERR, 0, NULL, __VA_ARGS__)
#define log_error_errno(err, ...)   log_ctx_msg(LOG_ERR, (err), NULL, __VA_ARGS__)
#define log_warning_errno(err, ...) log_ctx_msg(LOG_WARNING, (err), NULL, __VA_ARGS__)

/* Context shorthands: log_pf(LOG_INFO, 0, "0000:01:00.0", "created %d VFs", n). */
#define log_pf(level, err, pf_addr, ...)                                                           \
        log_ctx_msg((level), (err), &(const struct log_ctx){ .pf = (pf_addr) }, __VA_ARGS__)
#define log_vf(level, err, pf_addr, vf_addr, ...)                                                  \
        log_ctx_msg((level), (err), &(const struct log_ctx){ .pf = (pf_addr), .vf = (vf_addr) },   \
                    __VA_ARGS__)
#define log_policy(level, err, policy_name, ...)                                                   \
        log_ctx_msg((level), (err), &(const struct log_ctx){ .policy = (policy_name) }, __VA_ARGS__)
