/* SPDX-License-Identifier: Apache-2.0 */
/* apply_plan() in a forked child; the report comes back through a memfd (no size limit and
 * no pipe to drain while the child runs). */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "apply.h"
#include "util/log.h"
#include "util/macro.h"

#define REPORT_MAGIC 0x53524156u /* "SRAV" */

struct report_header {
        uint32_t magic;
        uint32_t n_pfs;
        uint64_t n_done, n_skipped;
        uint32_t changed_vf_count;
};

struct apply_child {
        sd_event_source *source;
        pid_t pid;
        int report_fd;
        apply_done_fn done;
        void *userdata;
};

static void apply_child_free(struct apply_child *c)
{
        sd_event_source_disable_unref(c->source);
        if (c->report_fd >= 0)
                close(c->report_fd);
        free(c);
}

static int write_all(int fd, const void *data, size_t size)
{
        const char *p = data;
        while (size > 0) {
                ssize_t n = write(fd, p, size);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        return -EIO;
                p += n;
                size -= (size_t)n;
        }
        return 0;
}

static int read_report(int fd, struct apply_report *ret)
{
        struct report_header h;
        struct apply_report r = { 0 };

        if (pread(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h) || h.magic != REPORT_MAGIC ||
            h.n_pfs > 65536)
                return -EBADMSG;
        if (h.n_pfs > 0) {
                size_t size = h.n_pfs * sizeof(*r.pfs);
                r.pfs = malloc(size);
                if (!r.pfs)
                        return -ENOMEM;
                if (pread(fd, r.pfs, size, sizeof(h)) != (ssize_t)size) {
                        free(r.pfs);
                        return -EBADMSG;
                }
        }
        r.n_pfs = h.n_pfs;
        r.n_done = h.n_done;
        r.n_skipped = h.n_skipped;
        r.changed_vf_count = h.changed_vf_count != 0;
        *ret = r;
        return 0;
}

static _Noreturn void run_child(int fd, const struct apply_options *opts, const struct plan *plan,
                                const struct inventory *observed, pid_t parent)
{
        sigset_t none;
        struct apply_report rep = { 0 };

        /* An agent killed with -9 must not leave this process applying on its own: it gets
         * SIGTERM, which (like the parent's own) waits only for a VF-count change to reach
         * its final count (apply.c). The check catches a parent that died before the prctl. */
        if (prctl(PR_SET_PDEATHSIG, SIGTERM) < 0 || getppid() != parent)
                _exit(4);
        /* The parent blocks its signals for sd-event; the child must die on SIGTERM. */
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        if (apply_plan(opts, plan, observed, &rep) < 0)
                _exit(2);
        /* Every byte goes to the memfd, the padding too: zeroed, not left as stack garbage. */
        struct report_header h;
        memset(&h, 0, sizeof(h));
        h.magic = REPORT_MAGIC;
        h.n_pfs = (uint32_t)rep.n_pfs;
        h.n_done = rep.n_done;
        h.n_skipped = rep.n_skipped;
        h.changed_vf_count = rep.changed_vf_count;
        int status = 0;
        if (write_all(fd, &h, sizeof(h)) < 0 ||
            write_all(fd, rep.pfs, rep.n_pfs * sizeof(*rep.pfs)) < 0)
                status = 3;
        apply_report_done(&rep);
        /* _exit: no atexit handlers, no flushing of the parent's copied stdio buffers. */
        _exit(status);
}

static int on_child_exit(sd_event_source *s, const siginfo_t *si, void *userdata)
{
        struct apply_child *c = userdata;
        struct apply_report rep = { 0 };
        char why[128] = "";
        int r;

        if (si->si_code == CLD_EXITED && si->si_status == 0) {
                r = read_report(c->report_fd, &rep);
                if (r < 0)
                        snprintf(why, sizeof(why), "process %d left an unreadable report: %s",
                                 (int)c->pid, strerror(-r));
        } else {
                /* Killed by signal 9 is what the OOM killer does. */
                if (si->si_code == CLD_EXITED)
                        snprintf(why, sizeof(why), "process %d exited with status %d", (int)c->pid,
                                 si->si_status);
                else
                        snprintf(why, sizeof(why), "process %d was killed by signal %d (%s)",
                                 (int)c->pid, si->si_status, strsignal(si->si_status));
                r = -EIO;
        }
        apply_done_fn done = c->done;
        void *ud = c->userdata;
        apply_child_free(c);
        done(r, r < 0 ? why : NULL, r < 0 ? NULL : &rep, ud);
        apply_report_done(&rep);
        return 0;
}

int apply_plan_async(sd_event *event, const struct apply_options *opts, const struct plan *plan,
                     const struct inventory *observed, apply_done_fn done, void *userdata,
                     struct apply_child **ret)
{
        struct apply_child *c = calloc(1, sizeof(*c));
        int r;

        if (!c)
                return -ENOMEM;
        *c = (struct apply_child){ .report_fd = -1, .done = done, .userdata = userdata };
        c->report_fd = memfd_create("sriov-agent-apply-report", MFD_CLOEXEC);
        if (c->report_fd < 0) {
                r = negative_errno();
                apply_child_free(c);
                return log_error_errno(r, "cannot create the apply report file");
        }
        fflush(stdout);
        fflush(stderr);
        const pid_t parent = getpid();
        c->pid = fork();
        if (c->pid < 0) {
                r = negative_errno();
                apply_child_free(c);
                return log_error_errno(r, "cannot start the apply process");
        }
        if (c->pid == 0) {
                /* The child's copy of c is not needed past its report file descriptor. */
                const int fd = c->report_fd;
                free(c);
                run_child(fd, opts, plan, observed, parent);
        }

        r = sd_event_add_child(event, &c->source, c->pid, WEXITED, on_child_exit, c);
        if (r < 0) {
                kill(c->pid, SIGKILL);
                waitpid(c->pid, NULL, 0);
                apply_child_free(c);
                return log_error_errno(r, "cannot watch the apply process");
        }
        *ret = c;
        return 0;
}

void apply_child_kill(struct apply_child *c)
{
        if (!c)
                return;
        kill(c->pid, SIGTERM);
        /* The child ends at once unless it is between "write 0" and "write N" of a VF-count
         * change (apply.c holds SIGTERM there): then it ends right after writing N, bounded
         * by --vf-timeout for the old VFs to go. */
        pid_t p = waitpid(c->pid, NULL, WNOHANG);
        if (p == 0) {
                usleep(100 * 1000);
                p = waitpid(c->pid, NULL, WNOHANG);
        }
        if (p == 0)
                log_notice("waiting for the apply process %d to finish the VF-count change it "
                           "is in, so that no PF is left at 0 VFs",
                           (int)c->pid);
        while (p == 0 || (p < 0 && errno == EINTR))
                p = waitpid(c->pid, NULL, 0);
        apply_child_free(c);
}
