/* SPDX-License-Identifier: Apache-2.0 */
#include "deviceplugin/devinfo.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "util/fileio.h"
#include "util/macro.h"
#include "util/parse.h"

static void resource_file_prefix(const char *resource, char *buf, size_t size)
{
        snprintf(buf, size, "%s", resource);
        for (char *c = buf; *c; c++)
                if (*c == '/')
                        *c = '-';
}

int dp_devinfo_path(const char *dir, const char *resource, const char *id, char *buf, size_t size)
{
        char res[DP_RESOURCE_MAX + 1];
        resource_file_prefix(resource, res, sizeof(res));
        if (strchr(id, '/') || strstr(id, ".."))
                return -EINVAL;
        return path_printf(buf, size, "%s/%s-%s-device.json", dir, res, id);
}

char *dp_devinfo_json(const struct dp_pool *pool, const struct dp_device *dev)
{
        json_auto_t *root = json_pack("{s:s, s:s, s:{s:s}}", "type", "pci", "version", "1.1.0",
                                      "pci", "pci-address", dev->id);
        if (!root)
                return NULL;
        if (pool->is_rdma && dev->rdma_device[0])
                json_object_set_new(json_object_get(root, "pci"), "rdma-device",
                                    json_string(dev->rdma_device));
        return json_dumps(root, JSON_COMPACT | JSON_SORT_KEYS);
}

int dp_devinfo_write(const char *dir, const struct dp_pool *pool, const struct dp_device *dev)
{
        char path[4096];
        int r = dp_devinfo_path(dir, pool->resource, dev->id, path, sizeof(path));
        if (r < 0)
                return r;
        _cleanup_free_ char *json = dp_devinfo_json(pool, dev);
        if (!json)
                return -ENOMEM;
        r = mkdir_p(dir);
        if (r < 0)
                return r;
        return write_file_atomic(path, json, strlen(json), 0644);
}

int dp_devinfo_remove(const char *dir, const char *resource, const char *id)
{
        char path[4096];
        int r = dp_devinfo_path(dir, resource, id, path, sizeof(path));
        if (r < 0)
                return r;
        if (unlink(path) < 0 && errno != ENOENT)
                return negative_errno();
        return 0;
}

int dp_devinfo_remove_all(const char *dir, const char *resource)
{
        char prefix[DP_RESOURCE_MAX + 2];
        resource_file_prefix(resource, prefix, sizeof(prefix) - 1);
        strcat(prefix, "-");
        DIR *d = opendir(dir);
        if (!d)
                return errno == ENOENT ? 0 : negative_errno();
        size_t plen = strlen(prefix);
        struct dirent *de;
        while ((de = readdir(d))) {
                size_t n = strlen(de->d_name);
                if (strncmp(de->d_name, prefix, plen) != 0 || n < plen + 12 ||
                    strcmp(de->d_name + n - 12, "-device.json") != 0)
                        continue;
                /* The ID part must not contain '-' so that "res-a" does not eat "res-a-b"'s. */
                if (memchr(de->d_name + plen, '-', n - plen - 12))
                        continue;
                (void)unlinkat(dirfd(d), de->d_name, 0);
        }
        closedir(d);
        return 0;
}
