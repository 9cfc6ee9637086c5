/* SPDX-License-Identifier: Apache-2.0 */
/* The RDMA subsystem's network-namespace mode (--rdma-mode): brought about at start, now and
 * for the next boot (agent/rdma-boot.h); the kernel's actual mode reported in the NodeState
 * (status.system.rdmaMode, as upstream's), the next boot's next to it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "host/discover.h"
#include "host/rdma-netlink.h"
#include "rdma-boot.h"
#include "util/log.h"

#define DEFAULT_MODPROBE_DIR "/etc/modprobe.d"

static const char *modprobe_dir(const struct agent *a)
{
        return a->config.modprobe_dir ? a->config.modprobe_dir : DEFAULT_MODPROBE_DIR;
}

static void keep_next_boot(struct agent *a, const struct rdma_mode_outcome *o)
{
        a->rdma_mode_next_boot = o->have_next_boot ? o->next_boot.mode : -1;
        snprintf(a->rdma_mode_next_boot_source, sizeof(a->rdma_mode_next_boot_source), "%s",
                 o->have_next_boot ? o->next_boot.source : "");
}

void rdma_mode_start(struct agent *a)
{
        const int wanted = a->config.rdma_mode;
        const char *name = host_rdma_netns_mode_to_string(wanted);
        struct rdma_mode_outcome o;

        a->rdma_mode_now = -1;
        a->rdma_mode_next_boot = -1;
        if (!host_sysfs_root_is_live(a->config.sysfs_root)) {
                /* a generated tree has no kernel of its own: leave this machine's alone */
                if (wanted >= 0)
                        log_notice("--rdma-mode ignored: --sysfs-root is not the live /sys");
                return;
        }
        /* a dry run changes nothing, neither now nor for the next boot */
        rdma_mode_bring_about(NULL, a->config.dry_run ? -1 : wanted, true, modprobe_dir(a), &o);
        a->rdma_mode_now = o.live;
        keep_next_boot(a, &o);
        if (o.live < 0) {
                if (wanted >= 0)
                        log_error_errno(o.live_error,
                                        "--rdma-mode %s: cannot read or set the kernel's RDMA "
                                        "network namespace mode",
                                        name);
        }
        if (o.live >= 0 && o.have_next_boot)
                log_info("RDMA network namespace mode: %s now, %s at the next boot (%s)",
                         host_rdma_netns_mode_to_string(o.live),
                         host_rdma_netns_mode_to_string(o.next_boot.mode),
                         o.next_boot.source[0] ? o.next_boot.source : "the kernel's default");
        if (wanted < 0)
                return;
        if (a->config.dry_run) {
                if (o.live >= 0 && o.live != wanted)
                        log_notice("dry run: RDMA network namespace mode is %s, --rdma-mode %s "
                                   "not set",
                                   host_rdma_netns_mode_to_string(o.live), name);
                return;
        }
        char text[768];
        rdma_mode_reboot_message(wanted, &o, text, sizeof(text));
        if (o.live >= 0 && o.live != wanted && o.live_error != -EBUSY)
                log_error_errno(o.live_error, "--rdma-mode %s: the kernel refused it", name);
        if (!text[0])
                return;
        free(a->rdma_reboot_needed);
        a->rdma_reboot_needed = strdup(text);
        log_warning("%s", text);
}

void rdma_mode_refresh(struct agent *a)
{
        enum host_rdma_netns_mode now;
        /* No ib_core (no RDMA hardware): nothing to report, and nothing to log every time. */
        if (a->rdma_mode_now < 0 && !a->rdma_reboot_needed)
                return;
        if (host_rdma_get_netns_mode(NULL, &now) >= 0)
                a->rdma_mode_now = (int)now;
        /* the modprobe configuration may have been edited since: read again, change nothing */
        struct rdma_next_boot next;
        if (rdma_next_boot_read(modprobe_dir(a), NULL, &next) >= 0) {
                a->rdma_mode_next_boot = next.mode;
                snprintf(a->rdma_mode_next_boot_source, sizeof(a->rdma_mode_next_boot_source), "%s",
                         next.source);
        }
}
