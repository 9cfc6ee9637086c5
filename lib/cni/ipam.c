/* SPDX-License-Identifier: Apache-2.0 */
#include "cni/ipam.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "util/fileio.h"
#include "util/macro.h"

#define OUT_MAX (1024 * 1024)

static int find_plugin(const char *type, const char *cni_path, char *buf, size_t size)
{
        const char *p = cni_path ? cni_path : "";
        while (*p) {
                const char *end = strchr(p, ':');
                size_t len = end ? (size_t)(end - p) : strlen(p);
                if (len > 0 && (size_t)snprintf(buf, size, "%.*s/%s", (int)len, p, type) < size &&
                    access(buf, X_OK) == 0)
                        return 0;
                if (!end)
                        break;
                p = end + 1;
        }
        return -ENOENT;
}

static double now_ms(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Feeds data to the child's stdin while reading its stdout, both at once: a child that answers
 * more than a pipe holds before reading all of its stdin would otherwise deadlock with a parent
 * that writes everything first. Ends at stdout's EOF; -ETIMEDOUT past deadline_ms. The child's
 * stdin is closed as soon as it is written (or the child stops reading it). */
static int exchange(int in_fd, int out_fd, const char *data, size_t len, double deadline_ms,
                    char **ret, size_t *ret_len)
{
        size_t cap = 0, n = 0, written = 0;
        char *buf = NULL;
        int r = 0;
        (void)fcntl(in_fd, F_SETFL, O_NONBLOCK);
        (void)fcntl(out_fd, F_SETFL, O_NONBLOCK);
        if (len == 0) {
                close(in_fd);
                in_fd = -1;
        }
        for (;;) {
                struct pollfd fds[2] = { { .fd = out_fd, .events = POLLIN },
                                         { .fd = in_fd, .events = POLLOUT } };
                double left = deadline_ms - now_ms();
                if (left <= 0) {
                        r = -ETIMEDOUT;
                        break;
                }
                int pr = poll(fds, in_fd >= 0 ? 2 : 1, (int)left + 1);
                if (pr < 0 && errno == EINTR)
                        continue;
                if (pr < 0) {
                        r = negative_errno();
                        break;
                }
                if (in_fd >= 0 && fds[1].revents) {
                        ssize_t w = write(in_fd, data + written, len - written);
                        if (w > 0)
                                written += (size_t)w;
                        /* EPIPE: the child does not read its stdin (any more); its answer
                         * still counts */
                        if ((w < 0 && errno != EAGAIN && errno != EINTR) || written == len) {
                                close(in_fd);
                                in_fd = -1;
                        }
                }
                if (fds[0].revents) {
                        if (cap - n < 4096) {
                                if (cap >= OUT_MAX) {
                                        r = -EFBIG;
                                        break;
                                }
                                cap = cap ? cap * 2 : 16384;
                                char *grown = realloc(buf, cap + 1);
                                if (!grown) {
                                        r = -ENOMEM;
                                        break;
                                }
                                buf = grown;
                        }
                        ssize_t got = read(out_fd, buf + n, cap - n);
                        if (got == 0)
                                break;
                        if (got > 0)
                                n += (size_t)got;
                        else if (errno != EAGAIN && errno != EINTR) {
                                r = negative_errno();
                                break;
                        }
                }
        }
        if (in_fd >= 0)
                close(in_fd);
        if (r < 0) {
                free(buf);
                return r;
        }
        if (!buf && !(buf = malloc(1)))
                return -ENOMEM;
        buf[n] = '\0';
        *ret = buf;
        *ret_len = n;
        return 0;
}

int cni_ipam_exec(const char *type, const char *command, const char *cni_path, const char *data,
                  size_t len, int timeout_ms, char **out, size_t *out_len, struct cni_error *e)
{
        char path[PATH_MAX];
        if (find_plugin(type, cni_path, path, sizeof(path)) < 0)
                return cni_fail(e, CNI_ERR_GENERIC, -ENOENT,
                                "IPAM plugin \"%s\" not found in CNI_PATH \"%s\"", type,
                                cni_path ? cni_path : "");
        int in[2], outp[2];
        if (pipe2(in, O_CLOEXEC) < 0)
                return cni_fail(e, CNI_ERR_GENERIC, negative_errno(), "pipe: %m");
        if (pipe2(outp, O_CLOEXEC) < 0) {
                int r = negative_errno();
                close(in[0]);
                close(in[1]);
                return cni_fail(e, CNI_ERR_GENERIC, r, "pipe: %m");
        }
        pid_t pid = fork();
        if (pid < 0) {
                int r = negative_errno();
                close(in[0]), close(in[1]), close(outp[0]), close(outp[1]);
                return cni_fail(e, CNI_ERR_GENERIC, r, "cannot start IPAM plugin %s: %m", path);
        }
        if (pid == 0) {
                if (dup2(in[0], STDIN_FILENO) < 0 || dup2(outp[1], STDOUT_FILENO) < 0)
                        _exit(127);
                setenv("CNI_COMMAND", command, 1);
                execl(path, type, (char *)NULL);
                _exit(127);
        }
        close(in[0]);
        close(outp[1]);
        /* a dead child must give an exit status, not SIGPIPE us */
        struct sigaction ign = { .sa_handler = SIG_IGN }, old;
        sigaction(SIGPIPE, &ign, &old);
        char *text = NULL;
        size_t text_len = 0;
        int xr = exchange(in[1], outp[0], data, len, now_ms() + timeout_ms, &text, &text_len);
        close(outp[0]);
        sigaction(SIGPIPE, &old, NULL);
        if (xr < 0)
                (void)kill(pid, SIGKILL); /* hung, or answering without end */
        int status = 0;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
                ;
        if (xr == -ETIMEDOUT)
                return cni_fail(e, CNI_ERR_GENERIC, xr,
                                "IPAM plugin %s %s did not finish within %d s: killed", type,
                                command, timeout_ms / 1000);
        if (xr < 0)
                return cni_fail(e, CNI_ERR_GENERIC, xr,
                                "IPAM plugin %s %s: cannot read its answer: %s", type, command,
                                xr == -EFBIG ? "larger than 1 MiB" : strerror(-xr));
        _cleanup_free_ char *owned = text;
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                json_error_t jerr;
                json_auto_t *o = text ? json_loadb(text, text_len, 0, &jerr) : NULL;
                json_t *msg = json_object_get(o, "msg"), *det = json_object_get(o, "details");
                const char *m = json_is_string(msg) ? json_string_value(msg) : NULL;
                const char *d = json_is_string(det) ? json_string_value(det) : NULL;
                if (WIFSIGNALED(status))
                        return cni_fail(e, CNI_ERR_GENERIC, -EIO,
                                        "IPAM plugin %s %s killed by signal %d", type, command,
                                        WTERMSIG(status));
                return cni_fail(e, CNI_ERR_GENERIC, -EIO, "IPAM plugin %s %s failed: %s%s%s", type,
                                command, m ? m : "exit status non-zero, no error message",
                                d && *d ? ": " : "", d && *d ? d : "");
        }
        *out = TAKE_PTR(owned);
        *out_len = text_len;
        return 0;
}
