/* SPDX-License-Identifier: Apache-2.0 */
/* A second network namespace for the RDMA namespace tests and bench: a child process that
 * unshares one and waits, as a pod's sandbox does. netns_child_open() returns its nsfs file
 * (or -1: no CAP_SYS_ADMIN; *child is set either way), netns_child_end() ends the child.
 * Header-only, independent of cmocka. */
#pragma once

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

static inline int netns_child_open(pid_t *child)
{
        int ready[2];
        if (pipe(ready) < 0)
                return -1;
        pid_t pid = fork();
        if (pid == 0) {
                prctl(PR_SET_PDEATHSIG, SIGKILL); /* also when an assertion ends the test */
                char c = unshare(CLONE_NEWNET) == 0 ? 'y' : 'n';
                (void)!write(ready[1], &c, 1);
                pause();
                _exit(0);
        }
        char c = 'n';
        (void)!read(ready[0], &c, 1);
        close(ready[0]);
        close(ready[1]);
        *child = pid;
        char path[64];
        snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)pid);
        return c == 'y' ? open(path, O_RDONLY | O_CLOEXEC) : -1;
}

/* fd: the namespace file from netns_child_open(), closed when >= 0 */
static inline void netns_child_end(pid_t pid, int fd)
{
        if (fd >= 0)
                close(fd);
        if (pid > 0) {
                kill(pid, SIGKILL);
                waitpid(pid, NULL, 0);
        }
}
