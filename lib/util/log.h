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
        LOG_TARGET_AUTO,    /* journal when JOURNAL_STREAM matches stderr, else stderr */
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

#define log_debug(...)   log_ctx_msg(LOG_DEBUG, 0, NULL, __VA_ARGS__)
#define log_info(...)    log_ctx_msg(LOG_INFO, 0, NULL, __VA_ARGS__)
#define log_notice(...)  log_ctx_msg(LOG_NOTICE, 0, NULL, __VA_ARGS__)
#define log_warning(...) log_ctx_msg(LOG_WARNING, 0, NULL, __VA_ARGS__)
#define log_error(...)   log_ctx_msg(LOG_ERR, 0, NULL, __VA_ARGS__)
#define log_error_errno(err, ...)   log_ctx_msg(LOG_ERR, (err), NULL, __VA_ARGS__)
#define log_warning_errno(err, ...) log_ctx_msg(LOG_WARNING, (err), NULL, __VA_ARGS__)

/* Context shorthands: log_pf(LOG_INFO, 0, "0000:01:00.0", "created %d VFs", n). */
#define log_pf(level, err, pf_addr, ...)                                                           \
        log_ctx_msg((level), (err), &(const struct log_ctx){ .pf = (pf_addr) }, __VA_ARGS__)
#define log_vf(level, err, pf_addr, vf_addr, ...)                                                  \
        log_ctx_msg((level), (err), &(const struct log_ctx){ .pf = (pf_addr), .vf = (vf_addr) },   \
                    __VA_ARGS__)
#define log_policy(level, err, policy_name, ...)                                                   \
        log_ctx_msg((level), (err), &(const struct log_ctx){ .policy = (policy_name) },            \
                    __VA_ARGS__)
