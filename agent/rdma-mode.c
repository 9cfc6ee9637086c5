/* SPDX-License-Identifier: Apache-2.0 */
/* The RDMA subsystem's network-namespace mode (--rdma-mode): brought about at start, the
 * kernel's actual mode reported in the NodeState (status.system.rdmaMode, as upstream's). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "host/discover.h"
#include "host/rdma-netlink.h"
#include "util/log.h"

#define DEFAULT_MODPROBE_DIR "/etc/modprobe.d"

void rdma_mode_start(struct agent *a)
{
        const int wanted = a->config.dry_run ? -1 : a->config.rdma_mode;
        const char *dir = a->config.modprobe_dir ? a->config.modprobe_dir : DEFAULT_MODPROBE_DIR;
        struct host_rdma_mode_result res;

        a->rdma_mode_now = -1;
        if (!host_sysfs_root_is_live(a->config.sysfs_root)) {
                /* a generated tree has no kernel of its own: leave this machine's alone */
                if (a->config.rdma_mode >= 0)
                        log_notice("--rdma-mode ignored: --sysfs-root is not the live /sys");
                return;
        }
        int r = host_rdma_bring_about_mode(NULL, wanted, dir, &res);
        if (r < 0) {
                if (a->config.rdma_mode >= 0)
                        log_error_errno(r,
                                        "--rdma-mode %s: cannot read or set the kernel's RDMA "
                                        "network namespace mode",
                                        host_rdma_netns_mode_to_string(a->config.rdma_mode));
                return;
        }
        a->rdma_mode_now = res.current;
        if (a->config.dry_run && a->config.rdma_mode >= 0 && res.current != a->config.rdma_mode)
                log_notice("dry run: RDMA network namespace mode is %s, --rdma-mode %s not set",
                           host_rdma_netns_mode_to_string(res.current),
                           host_rdma_netns_mode_to_string(a->config.rdma_mode));
        if (!res.reboot_needed)
                return;
        char text[768];
        host_rdma_reboot_message(wanted, &res, text, sizeof(text));
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
}
