/* SPDX-License-Identifier: Apache-2.0 */
/* Reading sysfs attributes relative to an open directory.
 *
 * Discovery opens each PCI function directory once (O_PATH) and reads its attributes with
 * openat(2): no path strings rebuilt per attribute and no symlink walk from the root each time,
 * which is what keeps 1000+ VFs within the discovery time budget. Same contract as
 * util/fileio.h: 0 or a negative errno, first line without its newline, no logging. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/macro.h"

/* O_PATH|O_DIRECTORY handle of dir_fd/path (dir_fd may be AT_FDCWD); fd or negative errno. */
int host_sysfs_open_dir_at(int dir_fd, const char *path);

int host_sysfs_read_line_at(int dir_fd, const char *name, char *buf, size_t size);
int host_sysfs_read_int_at(int dir_fd, const char *name, int *ret);
int host_sysfs_read_hex_u16_at(int dir_fd, const char *name, uint16_t *ret);
int host_sysfs_read_hex_u32_at(int dir_fd, const char *name, uint32_t *ret);

/* Basename of the target of symlink `name` under dir_fd. -ENOENT when there is no link;
 * *ret_dangling is set when the link exists but its target does not. */
int host_sysfs_read_link_at(int dir_fd, const char *name, char *buf, size_t size,
                            bool *ret_dangling);

/* Writes s to dir_fd/name in one write(2) (sysfs store() sees it whole); short write = -EIO. */
int host_sysfs_write_at(int dir_fd, const char *name, const char *s);

/* Whether dir_fd/name exists (following symlinks). */
bool host_sysfs_exists_at(int dir_fd, const char *name);

/* Directory listing straight from getdents64(2): opendir()'s fstat/fcntl per directory were a
 * fifth of discovery's system calls. "." and ".." are skipped. Usage:
 *   struct sysfs_dir d;
 *   if (host_sysfs_dir_open_at(&d, dir_fd, "net") >= 0) {
 *           for (const char *name; (name = host_sysfs_dir_next(&d)); ) ...
 *           host_sysfs_dir_close(&d);
 *   }
 * A read error ends the listing early and is kept in d.error. d.fd is closed as soon as the
 * last entry was read, so it is no base for openat(): use the parent's fd and "dir/name", or
 * host_sysfs_dir_open_kept_at(). */
struct sysfs_dir {
        int fd;
        int error;
        bool keep_fd, ended;
        size_t pos, len;
        char buf[8192] __attribute__((aligned(8)));
};

int host_sysfs_dir_open_at(struct sysfs_dir *d, int dir_fd, const char *path);
/* The same, but d.fd stays open after the last entry, as the base for openat() of the entries
 * (a directory both listed and read from is opened once); host_sysfs_dir_close() closes it. */
int host_sysfs_dir_open_kept_at(struct sysfs_dir *d, int dir_fd, const char *path);
const char *host_sysfs_dir_next(struct sysfs_dir *d);
void host_sysfs_dir_close(struct sysfs_dir *d);
/* Declare right before host_sysfs_dir_open_at(), which sets d.fd even when it fails; an initializer
 * would clear the 8 KB buffer for every directory discovery lists. */
#define _cleanup_sysfs_dir_ _cleanup_(host_sysfs_dir_close)
