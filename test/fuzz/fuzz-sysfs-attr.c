/* SPDX-License-Identifier: Apache-2.0 */
/* Sysfs attribute readers on a garbled attribute: the input is written to a temp file (and used
 * as a symlink target) and read back with every reader discovery uses, so the strict integer
 * parsers see exactly what a hostile or broken driver could put in sysfs. Byte 0 picks the
 * caller's buffer size for the line and link readers (small buffers reach -ENOBUFS). */
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "fuzz-common.h"
#include "host/sysfs-at.h"
#include "util/fileio.h"
#include "util/macro.h"
#include "util/parse.h"

static char dir_path[64];
static int dir_fd = -1;

static void cleanup(void)
{
        (void)unlinkat(dir_fd, "attr", 0);
        (void)unlinkat(dir_fd, "link", 0);
        (void)close(dir_fd);
        (void)rmdir(dir_path);
}

static void write_attr(const uint8_t *data, size_t size)
{
        _cleanup_close_ int fd =
            openat(dir_fd, "attr", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd < 0 || write(fd, data, size) != (ssize_t)size)
                abort();
}

static void read_attr(size_t bufsize)
{
        char buf[65];
        int i;
        uint16_t u16;
        uint32_t u32;
        bool dangling;
        (void)host_sysfs_read_line_at(dir_fd, "attr", buf, bufsize);
        (void)host_sysfs_read_int_at(dir_fd, "attr", &i);
        (void)host_sysfs_read_hex_u16_at(dir_fd, "attr", &u16);
        (void)host_sysfs_read_hex_u32_at(dir_fd, "attr", &u32);
        (void)host_sysfs_read_link_at(dir_fd, "link", buf, bufsize, &dangling);

        char path[sizeof(dir_path) + 8];
        snprintf(path, sizeof(path), "%s/attr", dir_path);
        (void)read_line_file(path, buf, bufsize);
        (void)read_int_file(path, &i);
        (void)read_hex_u16_file(path, &u16);
        (void)read_hex_u32_file(path, &u32);
        _cleanup_free_ char *full = NULL;
        size_t full_size;
        (void)read_full_file(path, 4096, &full, &full_size);
        snprintf(path, sizeof(path), "%s/link", dir_path);
        (void)read_link_basename(path, buf, bufsize);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        if (dir_fd < 0) {
                fuzz_mkdtemp(dir_path, sizeof(dir_path), "fuzz-sysfs-attr");
                dir_fd = open(dir_path, O_PATH | O_DIRECTORY | O_CLOEXEC);
                if (dir_fd < 0)
                        abort();
                atexit(cleanup);
        }
        if (size < 1)
                return 0;
        size_t bufsize = data[0] % 65;
        data++, size--;

        /* the string parsers directly, on the text up to the first NUL */
        _cleanup_free_ char *text = fuzz_strndup(data, size);
        int i;
        uint32_t u32;
        (void)parse_int(text, &i);
        (void)parse_hex_u32(text, &u32);

        write_attr(data, size);
        (void)unlinkat(dir_fd, "link", 0);
        if (text[0] && strlen(text) < 4096)
                (void)symlinkat(text, dir_fd, "link");
        read_attr(bufsize);
        return 0;
}
