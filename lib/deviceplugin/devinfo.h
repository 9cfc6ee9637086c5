/* SPDX-License-Identifier: Apache-2.0 */
/* The device-info files (device-info-spec 1.1.0) written per allocated device, for the CNI
 * plugins that read <dir>/<resource>-<id>-device.json. All functions return 0 or a negative
 * errno and do not log. */
#pragma once

#include <stddef.h>

#include "deviceplugin/pool.h"

#define DP_DEVINFO_DIR_DEFAULT "/var/run/k8s.cni.cncf.io/devinfo/dp"

/* <dir>/<resource with '/' → '-'>-<id>-device.json */
int dp_devinfo_path(const char *dir, const char *resource, const char *id, char *buf, size_t size);
/* The device-info file content for an SR-IOV device ({"type":"pci","version":"1.1.0",...}). */
char *dp_devinfo_json(const struct dp_pool *pool, const struct dp_device *dev);
int dp_devinfo_write(const char *dir, const struct dp_pool *pool, const struct dp_device *dev);
/* Removes the file of one device; a missing file is fine. */
int dp_devinfo_remove(const char *dir, const char *resource, const char *id);
/* Removes every device-info file of a resource (stale ones from an earlier run). */
int dp_devinfo_remove_all(const char *dir, const char *resource);
