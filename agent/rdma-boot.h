/* SPDX-License-Identifier: Apache-2.0 */
/* The RDMA network namespace mode now and at the next boot (--rdma-mode).
 *
 * The kernel's mode is ib_core's parameter netns_mode: set live over RDMA netlink while no
 * other network namespace exists, and loaded at boot from the modprobe configuration. What the
 * next boot loads is read from one modprobe.d directory (the host's /etc/modprobe.d, as the
 * agent sees it) as kmod reads it: its *.conf files in name order, lines joined at a trailing
 * backslash, whole-line '#' comments, "options ib_core|ib-core ... netns_mode=V" (V as the
 * kernel's bool parameters take it: y/Y/1/on shared, n/N/0/off exclusive; no value: shared),
 * the last one winning; none: the kernel's default, shared. Other modprobe.d directories and
 * the kernel command line are not read.
 * The agent's own file is HOST_RDMA_MODPROBE_FILE: whenever the wanted mode differs from what
 * the next boot would load, it is written (or removed when the next boot loads the wanted mode
 * without it), whether the live switch worked, was refused (EBUSY) or was not needed. */
#pragma once

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

struct nl_sock;

struct rdma_next_boot {
        int mode; /* enum host_rdma_netns_mode ib_core loads with */
        /* the file whose option decides it; "" when none does (the kernel's default) */
        char source[PATH_MAX];
};

/* What the next boot loads, from dir (a missing dir: the default). skip: a file name in dir
 * not to read (NULL: none). 0, or -errno when dir or a file in it cannot be read. */
int rdma_next_boot_read(const char *dir, const char *skip, struct rdma_next_boot *ret);

/* Makes the next boot load wanted: removes dir/HOST_RDMA_MODPROBE_FILE when the next boot
 * loads wanted without it, else writes it (dir created when missing); ret is what the next
 * boot loads afterwards (another file deciding after ours can keep it from being wanted).
 * 0 or -errno (logged with the file). */
int rdma_next_boot_make(const char *dir, int wanted, struct rdma_next_boot *ret);

struct rdma_mode_outcome {
        int live;       /* the kernel's mode afterwards, -1 unknown (no ib_core, no netlink) */
        int live_error; /* why the mode could not be read or set now (0: none; -EBUSY) */
        bool changed;   /* the kernel's mode was changed now */
        bool have_next_boot;
        int next_boot_error; /* why the modprobe directory could not be read or written */
        struct rdma_next_boot next_boot;
};

/* Reads the live mode and, with wanted >= 0 (enum host_rdma_netns_mode), sets it when it
 * differs; with wanted >= 0 and persist, makes the next boot load wanted too
 * (rdma_next_boot_make()); else only reads what the next boot loads. sk: the RDMA netlink
 * socket, NULL for a new one. Never fails: what went wrong is in the outcome. */
void rdma_mode_bring_about(struct nl_sock *sk, int wanted, bool persist, const char *dir,
                           struct rdma_mode_outcome *ret);

/* The notice when wanted is not the live mode after rdma_mode_bring_about() (NodeState
 * message, RebootNeeded Event, log): the mode wanted, the one the kernel keeps and what the
 * next boot loads from where; "" when the live mode is wanted (or unknown, or none wanted). */
void rdma_mode_reboot_message(int wanted, const struct rdma_mode_outcome *o, char *buf,
                              size_t size);

/* The NodeState's rdmaMode (status-extra annotation; upstream's status.system.rdmaMode has
 * only the live one): {"live", "nextBoot", "nextBootFrom", "wanted"}, modes as strings (-1:
 * live and wanted left out), nextBootFrom the deciding file or "the kernel's default". NULL
 * when there is nothing to report (the next boot unknown, or neither a live mode nor one
 * wanted) or out of memory. */
json_t *rdma_mode_status_json(int live, int next_boot, const char *next_boot_source, int wanted);
