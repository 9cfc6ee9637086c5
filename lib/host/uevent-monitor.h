/* SPDX-License-Identifier: Apache-2.0 */
/* PCI device notifications from the kernel's uevents (NETLINK_KOBJECT_UEVENT), delivered
 * through an sd-event loop.
 *
 * rtnetlink says when a netdev goes, but a VF on vfio-pci has none, and a PF whose driver is
 * unbound loses its netdev only once the unbind is done: the kernel's `remove`, `unbind` and
 * `bind` uevents of PCI functions say it first-hand. The daemon uses them, like link events,
 * only to start a reconcile, which re-reads everything. Only messages from the kernel are
 * taken (sender port 0; udev's re-broadcasts on the other group are never subscribed to);
 * malformed ones are skipped with a debug log. When the kernel dropped messages (ENOBUFS), the
 * callback gets one event with `resync` set. The monitor must be freed before the sd_event it
 * was attached to, and not from its own callback. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include <systemd/sd-event.h>

#include "model/inventory.h"

struct host_uevent {
        bool resync;                    /* messages were lost: re-read everything */
        char action[16];                /* "add", "remove", "bind", "unbind", "change", ... */
        char subsystem[32];             /* "pci", "net", ... */
        char pci_address[PCI_ADDR_MAX]; /* PCI_SLOT_NAME of a pci uevent, "" otherwise */
};

typedef void (*host_uevent_fn)(const struct host_uevent *ev, void *userdata);

struct host_uevent_monitor;

/* 0 or a negative errno (a container without the right to open the socket: the caller goes
 * on without it). */
int host_uevent_monitor_new(sd_event *event, host_uevent_fn callback, void *userdata,
                            struct host_uevent_monitor **ret);
/* Detaches from the loop and closes the socket. NULL is fine. Returns NULL. */
struct host_uevent_monitor *host_uevent_monitor_free(struct host_uevent_monitor *m);

/* Parses one kernel uevent datagram: "ACTION@DEVPATH\0KEY=VALUE\0...". 0, or -EINVAL when it
 * is not one (udev's "libudev" messages, no ACTION or SUBSYSTEM, a PCI_SLOT_NAME that is no PCI
 * address). Exposed for tests. */
int host_uevent_parse(const char *buf, size_t len, struct host_uevent *ret);

/* Whether a uevent may concern what the agent manages: resync events, and remove, unbind,
 * bind or add of a PCI function the inventory knows as a PF or a VF of one (or a PF's new
 * VF: any added function whose physfn is a known PF is found by the reconcile it starts, so
 * adds of unknown functions count when the inventory has PFs). inventory may be NULL. */
bool host_uevent_concerns_sriov(const struct host_uevent *ev, const struct inventory *inventory);
