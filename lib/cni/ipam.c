/* SPDX-License-Identifier: Apache-2.0 */
#include "cni/ipam.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
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

static int write_all(int fd, const char *data, size_t len)
{
        while (len > 0) {
                ssize_t n = write(fd, data, len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return negative_errno();
                data += n;
                len -= (size_t)n;
        }
        return 0;
}

int cni_ipam_exec(const char *type, const char *command, const char *cni_path, const char *data,
                  size_t len, char **out, size_t *out_len, struct cni_error *e)
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
        int wr = write_all(in[1], data, len);
        close(in[1]);
        char *text = NULL;
        size_t text_len = 0;
        /* OUT_MAX - 2: the bound this output always had (at most 1 MiB - 2 bytes) */
        int rr = read_full_fd(outp[0], OUT_MAX - 2, &text, &text_len);
        close(outp[0]);
        sigaction(SIGPIPE, &old, NULL);
        int status = 0;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
                ;
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
        if (wr < 0 || rr < 0)
                return cni_fail(e, CNI_ERR_GENERIC, wr < 0 ? wr : rr,
                                "IPAM plugin %s %s: cannot exchange data: %s", type, command,
                                strerror(-(wr < 0 ? wr : rr)));
        *out = TAKE_PTR(owned);
        *out_len = text_len;
        return 0;
}
