/* SPDX-License-Identifier: Apache-2.0 */
/* Network link change notifications (rtnetlink RTNLGRP_LINK) delivered through an sd-event loop.
 *
 * The daemon uses them only to trigger a debounced re-plan (drift repair): a VF netdev that
 * vanishes (sriov_numvfs reset, VF rebound to vfio-pci by hand) or appears, a PF or VF whose
 * MTU or admin state someone changed. Events may therefore be coalesced or arrive late; the
 * callback gets each kernel message as it is read, in order. When the kernel dropped messages
 * because the socket buffer overflowed (ENOBUFS), the callback gets one event with `resync`
 * set and nothing else meaningful: the caller must re-read everything it cares about.
 * VFs bound to vfio-pci have no netdev and produce no link events at all; the periodic check
 * covers them. The kernel's notifications carry IFLA_NUM_VF only when asked for VF details,
 * which multicast notifications never are, so num_vfs is usually -1.
 * Malformed or foreign (not from the kernel) messages are skipped with a debug log.
 * The monitor must be freed before the sd_event it was attached to, and not from its own
 * callback. */
#pragma once

#include <net/if.h>
#include <stdbool.h>
#include <stddef.h>

#include <systemd/sd-event.h>

#include "model/inventory.h"

enum link_event_kind {
        LINK_EVENT_NEW, /* RTM_NEWLINK: a link appeared or changed */
        LINK_EVENT_DEL, /* RTM_DELLINK */
        _LINK_EVENT_KIND_MAX,
};
const char *host_link_event_kind_to_string(enum link_event_kind k); /* "new", "del" */

struct link_event {
        bool resync; /* messages were lost: re-read everything; the fields below are unset */
        enum link_event_kind kind;
        int ifindex;
        char ifname[IFNAMSIZ]; /* "" when the message had no (valid) name */
        bool up;               /* IFF_UP: administratively up */
        bool running;          /* IFF_RUNNING: operationally up */
        int mtu;               /* -1 when absent */
        char operstate[16];    /* "up", "down", "lowerlayerdown", ...; "" when absent */
        int num_vfs;           /* IFLA_NUM_VF, -1 when absent */
};

typedef void (*link_event_fn)(const struct link_event *ev, void *userdata);

struct link_monitor;

/* Subscribes to link notifications of the caller's network namespace and dispatches them from
 * `event`. rcvbuf: socket receive buffer in bytes (0 = LINK_MONITOR_DEFAULT_RCVBUF); a smaller
 * buffer overflows sooner (tests use that to provoke a resync). 0 or a negative errno. */
#define LINK_MONITOR_DEFAULT_RCVBUF (4u * 1024 * 1024)
int host_link_monitor_new(sd_event *event, size_t rcvbuf, link_event_fn callback, void *userdata,
                          struct link_monitor **ret);
/* Detaches from the loop and closes the socket. NULL is fine. Returns NULL. */
struct link_monitor *host_link_monitor_free(struct link_monitor *m);
/* How many resync events were delivered: lost messages (ENOBUFS), dropped oversized
 * messages, or a socket failure (after which the monitor stops listening). */
unsigned host_link_monitor_overruns(const struct link_monitor *m);

/* Parses one RTM_NEWLINK/RTM_DELLINK message of `len` bytes (the netlink header included).
 * 0, or -EINVAL for anything truncated, of another type, or with malformed attributes.
 * Exposed for tests: the monitor calls it for each message it reads. */
struct nlmsghdr;
int host_link_event_parse(const struct nlmsghdr *hdr, size_t len, struct link_event *ret);

/* Whether an event may concern what the agent manages, so that pod veths and bridges churning
 * on a busy node do not trigger re-plans. True for: resync events; any event about a netdev the
 * inventory knows (a PF's or a VF's, by name); a new netdev backed by a device
 * (<sysfs_root>/class/net/<name>/device exists: a VF someone created or rebound by hand, or a
 * renamed one). inventory may be NULL (nothing known yet); sysfs_root is normally "/sys". */
bool host_link_event_concerns_sriov(const struct link_event *ev, const struct inventory *inventory,
                                    const char *sysfs_root);
