/* SPDX-License-Identifier: Apache-2.0 */
#include "host/sriov-numvfs.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "host/printable.h"
#include "host/sysfs-at.h"
#include "host/sysfs-device.h"
#include "util/log.h"
#include "util/macro.h"
#include "util/names.h"
#include "util/parse.h"

#define POLL_FIRST_MS 10
#define POLL_MAX_MS   200

struct numvfs_ctx {
        const struct host_device *dev; /* the PF */
        const char *pf;
        int timeout_ms;
        int grace_ms;
};

static const struct {
        int error;
        const char *hint;
} numvfs_hints[] = {
        { ERANGE, "the count is above what the PF supports (sriov_totalvfs)" },
        { EBUSY, "VFs are in use (assigned to VMs or pods?) or the count cannot change while VFs "
                 "exist: release them, set 0, then the new count" },
        { ENOMEM, "not enough PCI BAR space: enable SR-IOV in BIOS or boot with pci=realloc" },
        { ENOSPC, "out of MSI-X vectors" },
        { ENOENT, "the PF has no driver bound, or its driver cannot configure SR-IOV via sysfs" },
        { EOPNOTSUPP, "the device is not SR-IOV capable" },
        { EPERM, "writing sriov_numvfs needs root and a writable /sys" },
        { EACCES, "writing sriov_numvfs needs root and a writable /sys" },
        { EROFS, "/sys is mounted read-only: run the agent privileged with a writable /sys" },
        { EIO, "the PF driver failed to enable SR-IOV: see the kernel log (dmesg)" },
        { ETIMEDOUT, "the kernel did not finish creating or probing the VFs in time: see the "
                     "kernel log (dmesg), or raise the timeout" },
};

const char *host_numvfs_error_hint(int error)
{
        error = error < 0 ? -error : error;
        for (size_t i = 0; i < ELEMENTSOF(numvfs_hints); i++)
                if (numvfs_hints[i].error == error)
                        return numvfs_hints[i].hint;
        return NULL;
}

static long long now_ms(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Sleeps for the next poll interval (growing up to POLL_MAX_MS), never past the deadline. */
static void sleep_until_next_poll(int *interval_ms, long long deadline)
{
        long long left = deadline - now_ms();
        long long ms = *interval_ms < left ? *interval_ms : left;
        if (ms > 0)
                nanosleep(
                    &(struct timespec){ .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000 },
                    NULL);
        if (*interval_ms < POLL_MAX_MS)
                *interval_ms = *interval_ms * 2 > POLL_MAX_MS ? POLL_MAX_MS : *interval_ms * 2;
}

static int read_pf_int(const struct numvfs_ctx *c, const char *attr, int *ret)
{
        int r = host_device_read_int(c->dev, attr, ret);
        if (r >= 0)
                return 0;
        char path[PATH_MAX];
        (void)host_device_path(c->dev, attr, path, sizeof(path));
        if (r == -EINVAL || r == -ERANGE)
                return log_pf(LOG_ERR, -EINVAL, c->pf, "%s does not hold a number", path);
        return log_pf(LOG_ERR, r, c->pf, "cannot read %s", path);
}

static bool is_virtfn_name(const char *name)
{
        if (strncmp(name, "virtfn", 6) != 0 || !name[6])
                return false;
        for (const char *p = name + 6; *p; p++)
                if (*p < '0' || *p > '9')
                        return false;
        return true;
}

/* Number of virtfnN entries in the PF directory, or a negative errno. */
static int count_virtfn_links(const struct numvfs_ctx *c)
{
        _cleanup_sysfs_dir_ struct sysfs_dir d;
        int r = host_sysfs_dir_open_at(&d, c->dev->fd, ".");
        if (r < 0)
                return r;
        int n = 0;
        for (const char *name; (name = host_sysfs_dir_next(&d));)
                n += is_virtfn_name(name);
        return d.error < 0 ? d.error : n; /* a partial count could end the wait early */
}

/* A driver_override naming a driver that is not loaded means nothing will bind the VF. */
static bool override_blocks_binding(const struct numvfs_ctx *c, const char *vf_link)
{
        char rel[NAME_MAX + 32], name[256];
        if (path_printf(rel, sizeof(rel), "%s/driver_override", vf_link) < 0 ||
            host_device_read_line(c->dev, rel, name, sizeof(name)) < 0)
                return false;
        if (!name[0] || strcmp(name, "(null)") == 0)
                return false;
        if (!filename_is_valid(name))
                return true;
        if (path_printf(rel, sizeof(rel), "bus/pci/drivers/%s", name) < 0)
                return false;
        return !host_sysfs_exists_at(c->dev->root_fd, rel);
}

enum vf_state {
        VF_MISSING, /* no virtfn link, or no physfn back-link yet */
        VF_UNBOUND, /* present, no driver yet, one may still bind */
        VF_SETTLED, /* present and bound, or known to stay unbound */
};

static enum vf_state vf_state(const struct numvfs_ctx *c, int index, bool autoprobe, char *why,
                              size_t why_size)
{
        char vf_link[32], rel[64];
        struct stat pf_st, st;

        snprintf(vf_link, sizeof(vf_link), "virtfn%d", index);
        if (fstatat(c->dev->fd, vf_link, &st, 0) < 0 || !S_ISDIR(st.st_mode)) {
                snprintf(why, why_size, "virtfn%d does not exist yet", index);
                return VF_MISSING;
        }
        snprintf(rel, sizeof(rel), "%s/physfn", vf_link);
        if (fstatat(c->dev->fd, rel, &st, 0) < 0 || fstat(c->dev->fd, &pf_st) < 0 ||
            st.st_dev != pf_st.st_dev || st.st_ino != pf_st.st_ino) {
                snprintf(why, why_size, "virtfn%d has no physfn link back to the PF yet", index);
                return VF_MISSING;
        }
        snprintf(rel, sizeof(rel), "%s/driver", vf_link);
        if (host_device_exists(c->dev, rel))
                return VF_SETTLED;
        if (!autoprobe || override_blocks_binding(c, vf_link))
                return VF_SETTLED;
        snprintf(why, why_size, "VF virtfn%d is not bound to a driver yet", index);
        return VF_UNBOUND;
}

static int wait_for_no_vfs(const struct numvfs_ctx *c)
{
        long long deadline = now_ms() + c->timeout_ms;
        int interval = POLL_FIRST_MS;
        for (;;) {
                int n = count_virtfn_links(c);
                if (n < 0) {
                        char path[PATH_MAX];
                        (void)host_device_path(c->dev, NULL, path, sizeof(path));
                        return log_pf(LOG_ERR, n, c->pf, "cannot list %s", path);
                }
                if (n == 0)
                        return 0;
                if (now_ms() >= deadline)
                        return log_pf(LOG_ERR, -ETIMEDOUT, c->pf,
                                      "timed out after %d ms waiting for %d old VFs to be removed",
                                      c->timeout_ms, n);
                sleep_until_next_poll(&interval, deadline);
        }
}

static int wait_for_vfs(const struct numvfs_ctx *c, int n)
{
        int autoprobe = 1;
        /* Older kernels lack the attribute; they always probe. */
        if (host_device_read_int(c->dev, "sriov_drivers_autoprobe", &autoprobe) < 0)
                autoprobe = 1;

        long long start = now_ms(), deadline = start + c->timeout_ms, all_present_since = -1;
        int interval = POLL_FIRST_MS;
        for (;;) {
                char why[128] = "";
                int missing = 0, unbound = 0;
                for (int i = 0; i < n && !missing; i++) {
                        enum vf_state s = vf_state(c, i, autoprobe != 0, why, sizeof(why));
                        missing += s == VF_MISSING;
                        unbound += s == VF_UNBOUND;
                }
                long long now = now_ms();
                if (!missing && all_present_since < 0)
                        all_present_since = now;
                if (!missing && !unbound)
                        return 0;
                if (!missing && now - all_present_since >= c->grace_ms) {
                        log_pf(LOG_NOTICE, 0, c->pf,
                               "%d of %d VFs stayed without a driver for %d ms; treating them as "
                               "having none (is the VF driver module loaded?)",
                               unbound, n, c->grace_ms);
                        return 0;
                }
                if (now >= deadline)
                        return log_pf(LOG_ERR, -ETIMEDOUT, c->pf,
                                      "timed out after %d ms waiting for %d VFs: %s", c->timeout_ms,
                                      n, why);
                sleep_until_next_poll(&interval, deadline);
        }
}

static int write_num_vfs(const struct numvfs_ctx *c, int n)
{
        char value[16];
        snprintf(value, sizeof(value), "%d", n);
        log_pf(LOG_INFO, 0, c->pf, "writing %d to sriov_numvfs", n);
        int r = host_device_write(c->dev, "sriov_numvfs", value);
        if (r < 0) {
                const char *hint = host_numvfs_error_hint(r);
                return log_pf(LOG_ERR, r, c->pf, "cannot set sriov_numvfs to %d%s%s", n,
                              hint ? ": " : "", hint ? hint : "");
        }
        return 0;
}

int host_set_num_vfs(const struct numvfs_options *opts, const char *pf_pci, int n)
{
        _cleanup_host_device_ struct host_device dev = HOST_DEVICE_NULL;
        const struct numvfs_ctx c = {
                .dev = &dev,
                .pf = pf_pci,
                .timeout_ms = opts && opts->timeout_ms > 0 ? opts->timeout_ms
                                                           : HOST_NUMVFS_DEFAULT_TIMEOUT_MS,
                .grace_ms = opts && opts->unbound_grace_ms > 0
                                ? opts->unbound_grace_ms
                                : HOST_NUMVFS_DEFAULT_UNBOUND_GRACE_MS,
        };
        int r, total, current;

        if (!pf_pci || !pci_address_is_valid(pf_pci))
                return log_error_errno(-EINVAL, "invalid PCI address '%s' for a PF",
                                       PRINTABLE(pf_pci));
        if (n < 0)
                return log_pf(LOG_ERR, -ERANGE, pf_pci, "VF count %d is negative", n);
        r = host_device_open(&dev, opts ? opts->sysfs_root : NULL, pf_pci);
        if (r < 0) {
                char path[PATH_MAX];
                (void)host_device_path(&dev, NULL, path, sizeof(path));
                if (r == -ENAMETOOLONG)
                        return log_pf(LOG_ERR, r, pf_pci, "sysfs path too long");
                if (r == -ENODEV)
                        return log_pf(LOG_ERR, -ENODEV, pf_pci,
                                      "no such PCI device: %s does not exist", path);
                return log_pf(LOG_ERR, r, pf_pci, "cannot open %s", path);
        }

        if (!host_device_exists(&dev, "sriov_totalvfs"))
                return log_pf(LOG_ERR, -EOPNOTSUPP, pf_pci,
                              "not an SR-IOV PF: it has no sriov_totalvfs");
        r = read_pf_int(&c, "sriov_totalvfs", &total);
        if (r < 0)
                return r;
        r = read_pf_int(&c, "sriov_numvfs", &current);
        if (r < 0)
                return r;
        if (total < 0 || current < 0)
                return log_pf(LOG_ERR, -EINVAL, pf_pci,
                              "garbled SR-IOV state: sriov_totalvfs=%d sriov_numvfs=%d", total,
                              current);

        if (n > total)
                return log_pf(LOG_ERR, -ERANGE, pf_pci,
                              "%d VFs requested but the PF supports at most %d (sriov_totalvfs)", n,
                              total);
        if (n == current) {
                log_pf(LOG_DEBUG, 0, pf_pci, "already has %d VFs", n);
                return 0;
        }

        /* The kernel's share of what a user waits for (bench/run, the VM lab's e2e). */
        long long started = now_ms();
        if (current != 0 && n != 0) {
                /* The kernel refuses to change a non-zero count directly (EBUSY). */
                r = write_num_vfs(&c, 0);
                if (r < 0)
                        return r;
                r = wait_for_no_vfs(&c);
                if (r < 0)
                        return r;
        }

        r = write_num_vfs(&c, n);
        if (opts && opts->final_count_written)
                opts->final_count_written(opts->userdata);
        if (r < 0)
                return r;
        r = n == 0 ? wait_for_no_vfs(&c) : wait_for_vfs(&c, n);
        if (r < 0)
                return r;
        log_pf(LOG_INFO, 0, pf_pci,
               "now has %d VFs (kernel: %lld ms for the sriov_numvfs writes and VF driver probes)",
               n, now_ms() - started);
        return 0;
}
