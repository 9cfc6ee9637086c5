/* SPDX-License-Identifier: Apache-2.0 */
#include "host/counters.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "host/sysfs-at.h"
#include "util/array.h"
#include "util/clock.h"
#include "util/fileio.h"
#include "util/macro.h"
#include "util/parse.h"

static const char *root_or_sys(const char *sysfs_root)
{
        return sysfs_root && *sysfs_root ? sysfs_root : "/sys";
}

/* "4: ACTIVE" → 4, "ACTIVE" */
static void split_state(const char *line, int *code, char *name, size_t size)
{
        char *end;
        long v = strtol(line, &end, 10);
        *code = end != line ? (int)v : -1;
        const char *p = end != line && *end == ':' ? end + 1 : line;
        while (*p == ' ')
                p++;
        /* a state name is a word ("ACTIVE"); a longer line is cut on purpose */
        size_t n = strnlen(p, size - 1);
        memcpy(name, p, n);
        name[n] = 0;
}

/* "100 Gb/sec (4X EDR)" → 1e11 and "4X" */
static void parse_rate(const char *line, double *bps, char *width, size_t size)
{
        char *end;
        double v = strtod(line, &end);
        *bps = end != line && strncmp(end, " Gb/sec", 7) == 0 ? v * 1e9 : -1;
        const char *open = strchr(line, '(');
        width[0] = 0;
        if (open) {
                size_t n = strcspn(open + 1, " )");
                if (n < size) {
                        memcpy(width, open + 1, n);
                        width[n] = 0;
                }
        }
}

void host_rdma_names_done(struct host_rdma_names *names)
{
        free(names->records);
        *names = (struct host_rdma_names){ 0 };
}

/* Appends one record; on ENOMEM the names are dropped (listed again at the next read). */
static void record_name(struct host_rdma_names *names, char kind, const char *name)
{
        if (!names || names->listed_usec == 0)
                return;
        size_t n = strlen(name) + 2, need = names->len + n;
        /* at least 256 bytes: one allocation holds a port with a few dozen counters */
        if (GROW_ARRAY(names->records, names->cap, need < 256 ? 256 : need) < 0) {
                names->listed_usec = 0;
                return;
        }
        names->records[names->len] = kind;
        memcpy(names->records + names->len + 1, name, n - 1);
        names->len += n;
}

/* One counter file: fn() called with its value; false when it could not be read or parsed.
 * *gone set when the file does not exist. */
static bool read_counter(int dir_fd, const char *rel, const char *name, bool hw,
                         const struct host_rdma_port *port, host_rdma_port_fn fn, void *userdata,
                         bool *gone)
{
        char line[64];
        int r = host_sysfs_read_line_at(dir_fd, rel, line, sizeof(line));
        if (r < 0) {
                *gone |= r == -ENOENT;
                return false; /* some counters refuse reads on some firmware */
        }
        char *end;
        errno = 0;
        uint64_t v = strtoull(line, &end, 0);
        if (errno || end == line)
                return false;
        fn(port, name, hw, v, userdata);
        return true;
}

/* One directory open per listing: the listed directory's fd is the base for its files. A
 * scrape reads a dozen or more files per port for hundreds of ports, so every system call per
 * directory counts. */
static void read_counter_dir(int ports_fd, const char *dir, bool hw, size_t max,
                             const struct host_rdma_port *port, struct host_rdma_names *names,
                             host_rdma_port_fn fn, void *userdata)
{
        _cleanup_sysfs_dir_ struct sysfs_dir d;
        if (host_sysfs_dir_open_kept_at(&d, ports_fd, dir) < 0)
                return; /* hw_counters/ only where the driver has them */
        size_t n = 0;
        bool gone = false;
        for (const char *name; n < max && (name = host_sysfs_dir_next(&d));) {
                record_name(names, hw ? 'h' : 'c', name);
                if (read_counter(d.fd, name, name, hw, port, fn, userdata, &gone))
                        n++;
        }
}

/* "N/state", "N/phys_state" and "N/rate" from the ports directory: no directory of its own
 * opened per port. False when the name is not a port number. */
static bool read_port_attributes(int ports_fd, const char *name, struct host_rdma_port *port)
{
        char rel[64], line[128];
        *port = (struct host_rdma_port){ .state_code = -1, .rate_bps = -1 };
        char *end;
        port->port = (int)strtol(name, &end, 10);
        if (end == name || *end || port->port < 0)
                return false;
        if (path_printf(rel, sizeof(rel), "%s/state", name) >= 0 &&
            host_sysfs_read_line_at(ports_fd, rel, line, sizeof(line)) >= 0)
                split_state(line, &port->state_code, port->state, sizeof(port->state));
        int phys_code;
        if (path_printf(rel, sizeof(rel), "%s/phys_state", name) >= 0 &&
            host_sysfs_read_line_at(ports_fd, rel, line, sizeof(line)) >= 0)
                split_state(line, &phys_code, port->phys_state, sizeof(port->phys_state));
        if (path_printf(rel, sizeof(rel), "%s/rate", name) >= 0 &&
            host_sysfs_read_line_at(ports_fd, rel, line, sizeof(line)) >= 0)
                parse_rate(line, &port->rate_bps, port->width, sizeof(port->width));
        return true;
}

static void read_port(int ports_fd, const char *name, size_t max_counters,
                      struct host_rdma_names *names, host_rdma_port_fn fn, void *userdata)
{
        char rel[64];
        struct host_rdma_port port;
        if (!read_port_attributes(ports_fd, name, &port))
                return;
        record_name(names, 'P', name);
        fn(&port, NULL, false, 0, userdata);
        if (path_printf(rel, sizeof(rel), "%s/counters", name) >= 0)
                read_counter_dir(ports_fd, rel, false, max_counters, &port, names, fn, userdata);
        if (path_printf(rel, sizeof(rel), "%s/hw_counters", name) >= 0)
                read_counter_dir(ports_fd, rel, true, max_counters, &port, names, fn, userdata);
}

/* The ports and counters the names hold, each file opened by its path under ports/. A name
 * whose file has gone makes the next read list again. */
static void read_named_ports(int ports_fd, size_t max_counters, struct host_rdma_names *names,
                             host_rdma_port_fn fn, void *userdata)
{
        struct host_rdma_port port;
        const char *port_name = NULL;
        size_t n[2] = { 0 };
        bool gone = false;
        for (size_t at = 0; at < names->len; at += strlen(names->records + at) + 1) {
                const char kind = names->records[at], *name = names->records + at + 1;
                if (kind == 'P') {
                        port_name = read_port_attributes(ports_fd, name, &port) ? name : NULL;
                        if (port_name)
                                fn(&port, NULL, false, 0, userdata);
                        n[0] = n[1] = 0;
                        continue;
                }
                bool hw = kind == 'h';
                char rel[320];
                if (!port_name || n[hw] >= max_counters ||
                    path_printf(rel, sizeof(rel), "%s/%s/%s", port_name,
                                hw ? "hw_counters" : "counters", name) < 0)
                        continue;
                if (read_counter(ports_fd, rel, name, hw, &port, fn, userdata, &gone))
                        n[hw]++;
        }
        if (gone)
                names->listed_usec = 0;
}

int host_rdma_read_ports(const char *sysfs_root, const char *device, size_t max_counters,
                         struct host_rdma_names *names, host_rdma_port_fn fn, void *userdata)
{
        char path[4096];
        snprintf(path, sizeof(path), "%s/class/infiniband/%s/ports", root_or_sys(sysfs_root),
                 device);
        uint64_t now = clock_monotonic_usec();
        if (names && names->listed_usec && strcmp(names->device, device) == 0 &&
            now - names->listed_usec < HOST_RDMA_NAMES_MAX_AGE_USEC) {
                _cleanup_close_ int fd = host_sysfs_open_dir_at(AT_FDCWD, path);
                if (fd < 0) {
                        names->listed_usec = 0;
                        return fd;
                }
                read_named_ports(fd, max_counters, names, fn, userdata);
                return 0;
        }
        if (names) {
                if (strlen(device) >= sizeof(names->device))
                        names = NULL; /* cannot be told apart from another: not kept */
                else {
                        strcpy(names->device, device);
                        names->len = 0;
                        names->listed_usec = now ? now : 1;
                }
        }
        _cleanup_sysfs_dir_ struct sysfs_dir d;
        int r = host_sysfs_dir_open_kept_at(&d, AT_FDCWD, path);
        if (r < 0) {
                if (names)
                        names->listed_usec = 0;
                return r;
        }
        for (const char *name; (name = host_sysfs_dir_next(&d));)
                read_port(d.fd, name, max_counters, names, fn, userdata);
        if (names && d.error < 0)
                names->listed_usec = 0;
        return 0;
}

int host_netdev_read_operstate(const char *sysfs_root, const char *ifname, char *buf, size_t size)
{
        char path[4096];
        snprintf(path, sizeof(path), "%s/class/net/%s", root_or_sys(sysfs_root), ifname);
        _cleanup_close_ int fd = host_sysfs_open_dir_at(AT_FDCWD, path);
        if (fd < 0)
                return fd;
        return host_sysfs_read_line_at(fd, "operstate", buf, size);
}

static int count_fds(uint64_t *ret)
{
        _cleanup_sysfs_dir_ struct sysfs_dir d;
        int r = host_sysfs_dir_open_at(&d, AT_FDCWD, "/proc/self/fd");
        if (r < 0)
                return r;
        uint64_t n = 0;
        while (host_sysfs_dir_next(&d))
                n++;
        *ret = n > 0 ? n - 1 : 0; /* the listing's own fd */
        return d.error;
}

int host_process_read(struct host_process_stats *ret)
{
        struct host_process_stats s = { 0 };
        _cleanup_free_ char *stat = NULL, *statm = NULL, *sys = NULL;
        size_t len;
        long tick = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
        int r = read_full_file("/proc/self/stat", 4096, &stat, &len);
        if (r < 0)
                return r;
        /* fields after the ")" that ends comm, counted from 3 (state): 14 utime, 15 stime,
         * 22 starttime */
        const char *p = strrchr(stat, ')');
        unsigned long long field[23] = { 0 };
        if (!p)
                return -EBADMSG;
        p++;
        for (int i = 3; i <= 22; i++) {
                char *end;
                while (*p == ' ')
                        p++;
                if (i == 3) { /* the state letter */
                        if (!*p)
                                return -EBADMSG;
                        p++;
                        continue;
                }
                errno = 0;
                long long v = strtoll(p, &end, 10); /* some fields are signed */
                if (errno || end == p)
                        return -EBADMSG;
                field[i] = v < 0 ? 0 : (unsigned long long)v;
                p = end;
        }
        s.cpu_seconds = (double)(field[14] + field[15]) / (double)tick;
        r = read_full_file("/proc/self/statm", 4096, &statm, &len);
        if (r < 0)
                return r;
        char *end;
        errno = 0;
        unsigned long long size = strtoull(statm, &end, 10);
        unsigned long long resident = strtoull(end, &end, 10);
        if (errno)
                return -EBADMSG;
        s.virtual_bytes = size * (uint64_t)page;
        s.resident_bytes = resident * (uint64_t)page;
        r = read_full_file("/proc/stat", 1024 * 1024, &sys, &len);
        if (r < 0)
                return r;
        const char *btime = strstr(sys, "\nbtime ");
        if (!btime)
                return -EBADMSG;
        s.start_time_seconds = strtod(btime + 7, NULL) + (double)field[22] / (double)tick;
        r = count_fds(&s.open_fds);
        if (r < 0)
                return r;
        struct rlimit rl;
        if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
                s.max_fds = rl.rlim_cur;
        *ret = s;
        return 0;
}
