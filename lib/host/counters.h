/* SPDX-License-Identifier: Apache-2.0 */
/* What the metrics endpoint reads from the kernel at scrape time, and only then: RDMA ports
 * and their counters, a netdev's operstate, the process's own figures. VF counters come from
 * host_netlink_get_vf_stats() (netlink-link.h). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct host_rdma_port {
        int port;
        char state[32];      /* "ACTIVE" (the number dropped), "" unknown */
        int state_code;      /* 4 for ACTIVE, -1 unknown */
        char phys_state[32]; /* "LinkUp" */
        double rate_bps;     /* bits per second from "100 Gb/sec (4X EDR)", -1 unknown */
        char width[8];       /* "4X" from the same line, "" unknown */
};

/* Called per port, then per counter of that port: counter NULL for the port itself; hw true
 * for hw_counters/ (driver-specific), false for counters/ (the IB standard ones). */
typedef void (*host_rdma_port_fn)(const struct host_rdma_port *port, const char *counter, bool hw,
                                  uint64_t value, void *userdata);

/* The names under one device's ports/ (each port, its counters/ and hw_counters/), kept by the
 * caller between reads: a read with them opens each file by its path under ports/ and lists no
 * directory, 8 system calls less per port (the names change only when the driver makes the
 * device again). A read lists the directories and fills it when it is empty, names another
 * device, is older than HOST_RDMA_NAMES_MAX_AGE_USEC (a counter a new driver added shows within
 * that) or a read of a kept name found no file (a counter that went, the device made again). */
#define HOST_RDMA_NAMES_MAX_AGE_USEC (300 * 1000 * 1000ULL)
struct host_rdma_names {
        char device[64];
        char *records; /* per name: 'P' (port), 'c' (counters/) or 'h' (hw_counters/), name, NUL */
        size_t len, cap;
        uint64_t listed_usec; /* CLOCK_MONOTONIC; 0: list at the next read */
};
void host_rdma_names_done(struct host_rdma_names *names);

/* Reads <sysfs_root>/class/infiniband/<device>/ports/N for each port, at most max_counters
 * counter files per port (the cost bound); names may be NULL (list every time). -ENOENT when
 * the device is gone. */
int host_rdma_read_ports(const char *sysfs_root, const char *device, size_t max_counters,
                         struct host_rdma_names *names, host_rdma_port_fn fn, void *userdata);

/* "up", "down", ... of <sysfs_root>/class/net/<ifname>/operstate. */
int host_netdev_read_operstate(const char *sysfs_root, const char *ifname, char *buf, size_t size);

struct host_process_stats {
        uint64_t resident_bytes, virtual_bytes;
        double cpu_seconds;        /* user + system */
        double start_time_seconds; /* since the epoch */
        uint64_t open_fds, max_fds;
};
/* This process, from /proc/self (stat, statm, fd/, limits) and /proc/stat's btime. */
int host_process_read(struct host_process_stats *ret);
