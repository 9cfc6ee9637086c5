#include "host/sysfs-at.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>

#include "util/fileio.h"
#include "util/macro.h"

int sysfs_open_dir_at(int dir_fd, const char *path)
{
        int fd = openat(dir_fd, path, O_PATH | O_DIRECTORY | O_CLOEXEC);
        return fd < 0 ? negative_errno() : fd;
}

int sysfs_read_line_at(int dir_fd, const char *name, char *buf, size_t size)
{
        if (size == 0)
                return -ENOBUFS;
        _cleanup_close_ int fd = openat(dir_fd, name, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return negative_errno();

        ssize_t n = read(fd, buf, size - 1);
        if (n < 0)
                return negative_errno();
        buf[n] = '\0';
        char *nl = strchr(buf, '\n');
        if (nl)
                *nl = '\0';
        else if ((size_t)n == size - 1) {
                char extra;
                if (read(fd, &extra, 1) == 1)
                        return -ENOBUFS;
        }
        return 0;
}

int sysfs_read_int_at(int dir_fd, const char *name, int *ret)
{
        char buf[64];
        int r = sysfs_read_line_at(dir_fd, name, buf, sizeof(buf));
        if (r < 0)
                return r;
        return parse_int(buf, ret);
}

int sysfs_read_hex_u32_at(int dir_fd, const char *name, uint32_t *ret)
{
        char buf[64];
        int r = sysfs_read_line_at(dir_fd, name, buf, sizeof(buf));
        if (r < 0)
                return r;
        return parse_hex_u32(buf, ret);
}

int sysfs_read_hex_u16_at(int dir_fd, const char *name, uint16_t *ret)
{
        uint32_t v;
        int r = sysfs_read_hex_u32_at(dir_fd, name, &v);
        if (r < 0)
                return r;
        if (v > UINT16_MAX)
                return -ERANGE;
        *ret = (uint16_t)v;
        return 0;
}

int sysfs_read_link_at(int dir_fd, const char *name, char *buf, size_t size, bool *ret_dangling)
{
        char target[PATH_MAX];
        ssize_t n = readlinkat(dir_fd, name, target, sizeof(target) - 1);
        if (n < 0)
                return negative_errno();
        target[n] = '\0';
        while (n > 1 && target[n - 1] == '/')
                target[--n] = '\0';
        const char *base = strrchr(target, '/');
        base = base ? base + 1 : target;
        if (strlen(base) >= size)
                return -ENOBUFS;
        strcpy(buf, base);
        if (ret_dangling)
                *ret_dangling = faccessat(dir_fd, name, F_OK, 0) < 0;
        return 0;
}

bool sysfs_exists_at(int dir_fd, const char *name)
{
        return faccessat(dir_fd, name, F_OK, 0) == 0;
}
