/* SPDX-License-Identifier: Apache-2.0 */
#include "util/fileio.h"
#include "util/parse.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util/macro.h"

int read_line_fd(int fd, char *buf, size_t size)
{
        if (size == 0)
                return -ENOBUFS;
        ssize_t n = read(fd, buf, size - 1);
        if (n < 0)
                return negative_errno();
        buf[n] = '\0';
        char *nl = strchr(buf, '\n');
        if (nl)
                *nl = '\0';
        else if ((size_t)n == size - 1) {
                /* Filled the buffer without a newline: there may be more. */
                char extra;
                if (read(fd, &extra, 1) == 1)
                        return -ENOBUFS;
        }
        return 0;
}

int read_line_file(const char *path, char *buf, size_t size)
{
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return negative_errno();
        return read_line_fd(fd, buf, size);
}

int read_full_file(const char *path, size_t max_size, char **ret, size_t *ret_size)
{
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return negative_errno();
        return read_full_fd(fd, max_size, ret, ret_size);
}

int read_full_fd(int fd, size_t max_size, char **ret, size_t *ret_size)
{
        size_t cap = 4096, len = 0;
        _cleanup_free_ char *data = malloc(cap);
        if (!data)
                return -ENOMEM;
        for (;;) {
                if (len + 1 >= cap) {
                        if (cap > max_size)
                                return -EFBIG;
                        cap *= 2;
                        char *p = realloc(data, cap);
                        if (!p)
                                return -ENOMEM;
                        data = p;
                }
                ssize_t n = read(fd, data + len, cap - len - 1);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno();
                }
                if (n == 0)
                        break;
                len += (size_t)n;
                if (len > max_size)
                        return -EFBIG;
        }
        data[len] = '\0';
        if (ret_size)
                *ret_size = len;
        *ret = TAKE_PTR(data);
        return 0;
}

int read_int_file(const char *path, int *ret)
{
        char buf[64];
        int r = read_line_file(path, buf, sizeof(buf));
        if (r < 0)
                return r;
        return parse_int(buf, ret);
}

int read_hex_u32_file(const char *path, uint32_t *ret)
{
        char buf[64];
        int r = read_line_file(path, buf, sizeof(buf));
        if (r < 0)
                return r;
        return parse_hex_u32(buf, ret);
}

int read_hex_u16_file(const char *path, uint16_t *ret)
{
        uint32_t v;
        int r = read_hex_u32_file(path, &v);
        if (r < 0)
                return r;
        if (v > UINT16_MAX)
                return -ERANGE;
        *ret = (uint16_t)v;
        return 0;
}

int read_link_basename_at(int dir_fd, const char *name, char *buf, size_t size)
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
        return 0;
}

int read_link_basename(const char *path, char *buf, size_t size)
{
        return read_link_basename_at(AT_FDCWD, path, buf, size);
}

/* ".<base>.<16 hex>.tmp": a dot-file (no reader of the directory takes it for a record or a
 * device-info file) whose name nobody can guess in advance to plant a symlink there. base is
 * cut to TEMP_BASE_MAX bytes so that the name fits NAME_MAX. */
#define TEMP_BASE_MAX 200
static int temp_name(const char *base, char *buf, size_t size)
{
        uint64_t rnd;

        if (getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK) != (ssize_t)sizeof(rnd)) {
                /* Only before the entropy pool is seeded; O_EXCL still refuses a planted name. */
                struct timespec ts;
                clock_gettime(CLOCK_MONOTONIC, &ts);
                rnd = ((uint64_t)ts.tv_nsec << 20) ^ (uint64_t)ts.tv_sec ^
                      ((uint64_t)getpid() << 40) ^ (uint64_t)(uintptr_t)&ts;
        }
        return path_printf(buf, size, ".%.*s.%016llx.tmp", TEMP_BASE_MAX, base,
                           (unsigned long long)rnd);
}

static int write_all_fd(int fd, const void *data, size_t size)
{
        const char *p = data;

        while (size > 0) {
                ssize_t n = write(fd, p, size);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno();
                }
                p += n;
                size -= (size_t)n;
        }
        return 0;
}

/* The directory of path opened (O_NOFOLLOW; -ELOOP when it is a symlink) and, in *base, the
 * last component of path. */
static int open_parent_dir(const char *path, const char **base)
{
        char dir[PATH_MAX];
        int r = path_printf(dir, sizeof(dir), "%s", path);
        if (r < 0)
                return r;
        char *slash = strrchr(dir, '/');
        if (!slash) {
                *base = path;
                snprintf(dir, sizeof(dir), ".");
        } else {
                *base = path + (slash - dir) + 1;
                if (slash == dir)
                        slash[1] = '\0'; /* "/name" */
                else
                        *slash = '\0';
        }
        if (!**base || strcmp(*base, ".") == 0 || strcmp(*base, "..") == 0)
                return -EINVAL;
        /* O_NOFOLLOW: the directory itself must not be a symlink someone planted (ELOOP);
         * everything below is relative to this fd, so it cannot be swapped under us. */
        int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
        if (dfd < 0)
                return errno == ENOTDIR ? -ELOOP : negative_errno();
        return dfd;
}

/* name is ".<base>.<16 hex digits>.tmp", a temp_name() of base */
static bool is_temp_name_of(const char *name, const char *base)
{
        size_t b = strnlen(base, TEMP_BASE_MAX), n = strlen(name);
        if (n != 1 + b + 1 + 16 + 4 || name[0] != '.' || strncmp(name + 1, base, b) != 0 ||
            name[1 + b] != '.' || strcmp(name + n - 4, ".tmp") != 0)
                return false;
        for (size_t i = 2 + b; i < n - 4; i++)
                if (!isxdigit((unsigned char)name[i]))
                        return false;
        return true;
}

int unlink_file_and_temps(const char *path)
{
        const char *base;
        _cleanup_close_ int dfd = open_parent_dir(path, &base);
        if (dfd < 0)
                return dfd == -ENOENT ? 0 : dfd;
        int r = unlinkat(dfd, base, 0) < 0 && errno != ENOENT ? negative_errno() : 0;

        int scan = dup(dfd);
        DIR *d = scan >= 0 ? fdopendir(scan) : NULL; /* d owns scan from here */
        if (!d) {
                int e = negative_errno();
                if (scan >= 0)
                        close(scan);
                return r < 0 ? r : e;
        }
        for (struct dirent *e; (e = readdir(d));)
                if (is_temp_name_of(e->d_name, base) && unlinkat(dfd, e->d_name, 0) < 0 &&
                    errno != ENOENT && r == 0)
                        r = negative_errno();
        closedir(d);
        return r;
}

int write_file_atomic(const char *path, const void *data, size_t size, unsigned mode)
{
        char tmp[NAME_MAX + 1];
        const char *base;
        int r;

        _cleanup_close_ int dfd = open_parent_dir(path, &base);
        if (dfd < 0)
                return dfd;

        _cleanup_close_ int fd = -1;
        for (int attempt = 0; fd < 0; attempt++) {
                r = temp_name(base, tmp, sizeof(tmp));
                if (r < 0)
                        return r;
                /* O_EXCL|O_NOFOLLOW: never through an existing file or symlink. */
                fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
                if (fd < 0 && (errno != EEXIST || attempt >= 16))
                        return negative_errno();
        }
        r = write_all_fd(fd, data, size);
        if (r >= 0 && fsync(fd) < 0)
                r = negative_errno();
        /* rename(2) replaces a symlink at the target name itself, never what it points to. */
        if (r >= 0 && renameat(dfd, tmp, dfd, base) < 0)
                r = negative_errno();
        if (r < 0) {
                unlinkat(dfd, tmp, 0);
                return r;
        }
        /* The new name must survive a crash too, not only the data. */
        if (fsync(dfd) < 0)
                return negative_errno();
        return 0;
}

int mkdir_p(const char *dir)
{
        char buf[4096];
        if (snprintf(buf, sizeof(buf), "%s", dir) >= (int)sizeof(buf))
                return -ENAMETOOLONG;
        for (char *p = buf + 1; *p; p++) {
                if (*p != '/')
                        continue;
                *p = 0;
                if (mkdir(buf, 0755) < 0 && errno != EEXIST)
                        return negative_errno();
                *p = '/';
        }
        if (mkdir(buf, 0755) < 0 && errno != EEXIST)
                return negative_errno();
        return 0;
}
