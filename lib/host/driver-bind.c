/* SPDX-License-Identifier: Apache-2.0 */
#include "host/driver-bind.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "host/printable.h"
#include "host/sysfs-at.h"
#include "host/sysfs-device.h"
#include "util/log.h"
#include "util/macro.h"
#include "util/names.h"
#include "util/parse.h"

#define VFIO_DRIVER "vfio-pci"
#define IOMMU_HINT  "enable the IOMMU (intel_iommu=on / amd_iommu=on on the kernel command line)"
#define POLL_MS     20

struct bind_ctx {
        const struct host_device *dev; /* the VF */
        const char *vf;
        int timeout_ms;
};

static bool dev_attr_exists(const struct bind_ctx *c, const char *attr)
{
        return host_device_exists(c->dev, attr);
}

static int current_driver(const struct bind_ctx *c, char *buf, size_t size)
{
        buf[0] = '\0';
        if (!dev_attr_exists(c, "driver")) /* unbound, or a dangling link */
                return 0;
        int r = host_device_read_link(c->dev, "driver", buf, size, NULL);
        if (r < 0)
                return r;
        if (!filename_is_valid(buf))
                return -EINVAL;
        return 0;
}

int host_vf_current_driver(const char *sysfs_root, const char *vf_pci, char *buf, size_t size)
{
        _cleanup_host_device_ struct host_device dev = HOST_DEVICE_NULL;
        int r = host_device_open(&dev, sysfs_root, vf_pci);
        if (r == -ENODEV) { /* no such function: no driver either */
                buf[0] = '\0';
                return 0;
        }
        if (r < 0)
                return r;
        return current_driver(&(struct bind_ctx){ .dev = &dev, .vf = vf_pci }, buf, size);
}

/* The whole path, for messages: root-relative (bus/pci/...) or, with dev, the VF's attr. */
static const char *shown_path(const struct bind_ctx *c, bool of_device, const char *rel, char *buf,
                              size_t size)
{
        if (of_device)
                (void)host_device_path(c->dev, rel, buf, size);
        else
                snprintf(buf, size, "%s/%s", c->dev->root, rel ? rel : "");
        return buf;
}

static int write_driver_override(const struct bind_ctx *c, const char *driver)
{
        /* A lone newline clears the override. */
        const char *value = driver && driver[0] ? driver : "\n";
        int r = host_device_write(c->dev, "driver_override", value);
        if (r < 0) {
                char path[PATH_MAX];
                return log_vf(LOG_ERR, r, NULL, c->vf, "cannot write '%s' to %s",
                              value[0] == '\n' ? "\\n" : value,
                              shown_path(c, true, "driver_override", path, sizeof(path)));
        }
        return 0;
}

static long long now_ms(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Polls (sleeping) until the VF is bound (want_bound) or unbound; 0 or -ETIMEDOUT. */
static int wait_for_binding(const struct bind_ctx *c, bool want_bound)
{
        long long deadline = now_ms() + c->timeout_ms;
        for (;;) {
                char drv[256];
                if (current_driver(c, drv, sizeof(drv)) == 0 && (drv[0] != '\0') == want_bound)
                        return 0;
                if (now_ms() >= deadline)
                        return -ETIMEDOUT;
                nanosleep(&(struct timespec){ .tv_nsec = POLL_MS * 1000000L }, NULL);
        }
}

static int unbind(const struct bind_ctx *c, const char *driver)
{
        char rel[NAME_MAX + 32];
        int r = path_printf(rel, sizeof(rel), "bus/pci/drivers/%s/unbind", driver);
        if (r < 0)
                return r;
        r = host_sysfs_write_at(c->dev->root_fd, rel, c->vf);
        if (r < 0) {
                char path[PATH_MAX];
                return log_vf(LOG_ERR, r, NULL, c->vf, "cannot write '%s' to %s", c->vf,
                              shown_path(c, false, rel, path, sizeof(path)));
        }
        if (wait_for_binding(c, false) < 0)
                return log_vf(LOG_ERR, -ETIMEDOUT, NULL, c->vf,
                              "still bound to %s %d ms after unbind", driver, c->timeout_ms);
        return 0;
}

/* Asks the kernel to probe the VF and waits for a driver link. */
static int probe(const struct bind_ctx *c)
{
        int r = host_sysfs_write_at(c->dev->root_fd, "bus/pci/drivers_probe", c->vf);
        if (r < 0)
                return log_vf(LOG_ERR, r, NULL, c->vf, "drivers_probe refused the VF");
        if (wait_for_binding(c, true) < 0)
                return -ENODATA;
        return 0;
}

/* After a failed bind: clear the override and let the default driver take the VF again. */
static void restore_default(const struct bind_ctx *c)
{
        char drv[256];
        (void)write_driver_override(c, NULL);
        if (current_driver(c, drv, sizeof(drv)) == 0 && drv[0])
                return;
        if (probe(c) == 0 && current_driver(c, drv, sizeof(drv)) == 0 && drv[0])
                log_vf(LOG_NOTICE, 0, NULL, c->vf, "left bound to its default driver %s", drv);
        else
                log_vf(LOG_WARNING, 0, NULL, c->vf, "left without a driver");
}

static int check_target(const struct bind_ctx *c, const char *driver)
{
        char rel[NAME_MAX + 32], path[PATH_MAX];

        if (strcmp(driver, VFIO_DRIVER) == 0 && !dev_attr_exists(c, "iommu_group"))
                return log_vf(LOG_ERR, -ENXIO, NULL, c->vf, "VF %s has no IOMMU group: " IOMMU_HINT,
                              c->vf);
        int r = path_printf(rel, sizeof(rel), "bus/pci/drivers/%s", driver);
        if (r < 0)
                return r;
        if (!host_sysfs_exists_at(c->dev->root_fd, rel))
                return log_vf(LOG_ERR, -ENOENT, NULL, c->vf,
                              "driver %s is not loaded (%s does not exist): load its module, "
                              "e.g. list it in /etc/modules-load.d/",
                              driver, shown_path(c, false, rel, path, sizeof(path)));
        return 0;
}

static int bind_failed(const struct bind_ctx *c, const char *driver, int error, const char *got)
{
        bool vfio = driver && strcmp(driver, VFIO_DRIVER) == 0;
        if (vfio && !dev_attr_exists(c, "iommu_group"))
                log_vf(LOG_ERR, 0, NULL, c->vf, "VF %s has no IOMMU group: " IOMMU_HINT, c->vf);
        else if (error == -ENODATA)
                log_vf(LOG_ERR, 0, NULL, c->vf,
                       "VF %s: drivers_probe was accepted but no driver bound to it (wanted %s)",
                       c->vf, driver && driver[0] ? driver : "its default driver");
        else if (error == -EIO)
                log_vf(LOG_ERR, 0, NULL, c->vf, "VF %s bound to %s instead of %s", c->vf, got,
                       driver);
        if (vfio && !dev_attr_exists(c, "iommu_group"))
                error = -ENXIO;
        restore_default(c);
        return error;
}

/* again: unbind and re-probe even when already on the default driver (a new InfiniBand GUID
 * shows in the VF's RDMA device only after its driver probes it again) */
static int bind_vf(const struct bind_options *opts, const char *vf_pci, const char *driver,
                   bool again)
{
        _cleanup_host_device_ struct host_device dev = HOST_DEVICE_NULL;
        const struct bind_ctx c = {
                .dev = &dev,
                .vf = vf_pci,
                .timeout_ms =
                    opts && opts->timeout_ms > 0 ? opts->timeout_ms : HOST_BIND_DEFAULT_TIMEOUT_MS,
        };
        const bool want_default = !driver || !driver[0];
        char cur[256], override[256] = "", path[PATH_MAX];
        int r;

        if (!vf_pci || !pci_address_is_valid(vf_pci))
                return log_error_errno(-EINVAL, "invalid PCI address '%s' for a VF",
                                       PRINTABLE(vf_pci));
        if (!want_default && !filename_is_valid(driver))
                return log_vf(LOG_ERR, -EINVAL, NULL, vf_pci, "invalid driver name '%s'",
                              PRINTABLE(driver));
        r = host_device_open(&dev, opts ? opts->sysfs_root : NULL, vf_pci);
        if (r == -ENAMETOOLONG)
                return log_vf(LOG_ERR, r, NULL, vf_pci, "sysfs path too long");
        if (r == -ENODEV)
                return log_vf(LOG_ERR, -ENODEV, NULL, vf_pci,
                              "no such PCI device: %s does not exist",
                              shown_path(&c, true, NULL, path, sizeof(path)));
        if (r < 0)
                return log_vf(LOG_ERR, r, NULL, vf_pci, "cannot open %s",
                              shown_path(&c, true, NULL, path, sizeof(path)));
        if (dev_attr_exists(&c, "sriov_totalvfs"))
                return log_vf(LOG_ERR, -EPERM, NULL, vf_pci,
                              "%s is an SR-IOV PF: refusing to change the driver of a PF", vf_pci);
        if (!dev_attr_exists(&c, "physfn"))
                return log_vf(LOG_ERR, -EPERM, NULL, vf_pci,
                              "%s is not a VF (no physfn link): refusing to change its driver",
                              vf_pci);
        if (!want_default) {
                r = check_target(&c, driver);
                if (r < 0)
                        return r;
        }

        r = current_driver(&c, cur, sizeof(cur));
        if (r < 0)
                return log_vf(LOG_ERR, r, NULL, vf_pci, "cannot read the driver link");
        if (host_device_read_line(&dev, "driver_override", override, sizeof(override)) < 0 ||
            strcmp(override, "(null)") == 0)
                override[0] = '\0';

        if (!want_default && strcmp(cur, driver) == 0) {
                log_vf(LOG_DEBUG, 0, NULL, vf_pci, "already bound to %s", driver);
                return 0;
        }
        if (again && strcmp(cur, VFIO_DRIVER) == 0) {
                log_vf(LOG_DEBUG, 0, NULL, vf_pci, "on vfio-pci: not re-bound");
                return 0;
        }
        if (!again && want_default && cur[0] && !override[0] && strcmp(cur, VFIO_DRIVER) != 0) {
                log_vf(LOG_DEBUG, 0, NULL, vf_pci, "already bound to its default driver %s", cur);
                return 0;
        }

        log_vf(LOG_INFO, 0, NULL, vf_pci, "binding to %s (currently %s)",
               want_default ? "its default driver" : driver, cur[0] ? cur : "unbound");
        r = write_driver_override(&c, driver);
        if (r < 0)
                return r;
        if (cur[0]) {
                r = unbind(&c, cur);
                if (r < 0) {
                        (void)write_driver_override(&c, NULL);
                        return r;
                }
        }
        r = probe(&c);
        if (r < 0)
                return bind_failed(&c, driver, r, "");
        /* The binding holds without the override; clearing it keeps later probes normal. */
        r = write_driver_override(&c, NULL);
        if (r < 0)
                return r;

        r = current_driver(&c, cur, sizeof(cur));
        if (r < 0 || !cur[0])
                return bind_failed(&c, driver, -ENODATA, "");
        if (!want_default && strcmp(cur, driver) != 0)
                return bind_failed(&c, driver, -EIO, cur);
        log_vf(LOG_INFO, 0, NULL, vf_pci, "bound to %s", cur);
        return 0;
}

int host_bind_vf_driver(const struct bind_options *opts, const char *vf_pci, const char *driver)
{
        return bind_vf(opts, vf_pci, driver, false);
}

int host_rebind_vf_driver(const struct bind_options *opts, const char *vf_pci)
{
        return bind_vf(opts, vf_pci, NULL, true);
}

const char *host_bind_error_hint(int error)
{
        switch (error) {
        case -ENXIO:
                return IOMMU_HINT;
        case -ENOENT:
                return "load the vfio-pci module (e.g. /etc/modules-load.d/vfio-pci.conf)";
        default:
                return NULL;
        }
}
