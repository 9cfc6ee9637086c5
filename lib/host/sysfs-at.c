/* SPDX-License-Identifier: Apache-2.0 */
#include "host/sysfs-at.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>

#include "util/fileio.h"
#include "util/macro.h"
#include "util/parse.h"

int host_sysfs_open_dir_at(int dir_fd, const char *path)
{
        int fd = openat(dir_fd, path, O_PATH | O_DIRECTORY | O_CLOEXEC);
        return fd < 0 ? negative_errno() : fd;
}

int host_sysfs_read_line_at(int dir_fd, const char *name, char *buf, size_t size)
{
        _cleanup_close_ int fd = openat(dir_fd, name, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return negative_errno();
        return read_line_fd(fd, buf, size);
}

int host_sysfs_read_int_at(int dir_fd, const char *name, int *ret)
{
        char buf[64];
        int r = host_sysfs_read_line_at(dir_fd, name, buf, sizeof(buf));
        if (r < 0)
                return r;
        return parse_int(buf, ret);
}

int host_sysfs_read_hex_u32_at(int dir_fd, const char *name, uint32_t *ret)
{
        char buf[64];
        int r = host_sysfs_read_line_at(dir_fd, name, buf, sizeof(buf));
        if (r < 0)
                return r;
        return parse_hex_u32(buf, ret);
}

int host_sysfs_read_hex_u16_at(int dir_fd, const char *name, uint16_t *ret)
{
        uint32_t v;
        int r = host_sysfs_read_hex_u32_at(dir_fd, name, &v);
        if (r < 0)
                return r;
        if (v > UINT16_MAX)
                return -ERANGE;
        *ret = (uint16_t)v;
        return 0;
}

int host_sysfs_read_link_at(int dir_fd, const char *name, char *buf, size_t size,
                            bool *ret_dangling)
{
        int r = read_link_basename_at(dir_fd, name, buf, size);
        if (r < 0)
                return r;
        if (ret_dangling)
                *ret_dangling = faccessat(dir_fd, name, F_OK, 0) < 0;
        return 0;
}

int host_sysfs_write_at(int dir_fd, const char *name, const char *s)
{
        _cleanup_close_ int fd = openat(dir_fd, name, O_WRONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return negative_errno();
        size_t len = strlen(s);
        ssize_t n = write(fd, s, len);
        if (n < 0)
                return negative_errno();
        return (size_t)n == len ? 0 : -EIO;
}

bool host_sysfs_exists_at(int dir_fd, const char *name)
{
        return faccessat(dir_fd, name, F_OK, 0) == 0;
}

/* d_ino + d_off + d_reclen + d_type + 256-byte name, 8-aligned */
#define DIRENT64_MAX_RECLEN (offsetof(struct dirent64, d_name) + 256 + 7)

int host_sysfs_dir_open_at(struct sysfs_dir *d, int dir_fd, const char *path)
{
        d->pos = d->len = 0;
        d->error = 0;
        d->keep_fd = d->ended = false;
        d->fd = openat(dir_fd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        return d->fd < 0 ? negative_errno() : 0;
}

int host_sysfs_dir_open_kept_at(struct sysfs_dir *d, int dir_fd, const char *path)
{
        int r = host_sysfs_dir_open_at(d, dir_fd, path);
        d->keep_fd = true;
        return r;
}

/* The listing is over: its fd goes unless the caller keeps it as a base for openat(). */
static void end_listing(struct sysfs_dir *d)
{
        d->ended = true;
        if (d->keep_fd)
                return;
        close(d->fd);
        d->fd = -1;
}

const char *host_sysfs_dir_next(struct sysfs_dir *d)
{
        for (;;) {
                if (d->pos >= d->len) {
                        if (d->fd < 0 || d->ended)
                                return NULL;
                        ssize_t n = getdents64(d->fd, d->buf, sizeof(d->buf));
                        if (n <= 0) {
                                if (n < 0)
                                        d->error = negative_errno();
                                end_listing(d);
                                return NULL;
                        }
                        d->pos = 0;
                        d->len = (size_t)n;
                        /* kernfs (sysfs), tmpfs and ext4 fill the buffer while entries remain,
                         * so a reply with room left for a longest record was the last one:
                         * skip the getdents64() that would only say "end". */
                        if ((size_t)n + DIRENT64_MAX_RECLEN <= sizeof(d->buf))
                                end_listing(d);
                }
                struct dirent64 *de = (struct dirent64 *)(d->buf + d->pos);
                d->pos += de->d_reclen;
                if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
                        return de->d_name;
        }
}

void host_sysfs_dir_close(struct sysfs_dir *d)
{
        if (d->fd >= 0)
                close(d->fd);
        d->fd = -1;
}
