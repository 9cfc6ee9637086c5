/* SPDX-License-Identifier: Apache-2.0 */
/* Reading and writing small files the way sysfs wants them.
 *
 * Paths are built as root + "/" + relative path, so every caller can run against a generated
 * tree. Reads return the first line without its newline. All functions return 0 or a negative
 * errno; none logs (the caller knows which device and field it was reading). The pure parsers
 * (numbers, path building) are in util/parse.h, usable by layers that do no I/O. */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* First line of a file, without the trailing newline. -ENOBUFS if it does not fit. */
int read_line_file(const char *path, char *buf, size_t size);
/* The same from an open file descriptor (at its current offset). */
int read_line_fd(int fd, char *buf, size_t size);

/* Whole file into a new NUL-terminated buffer (at most max_size bytes, else -EFBIG). */
int read_full_file(const char *path, size_t max_size, char **ret, size_t *ret_size);
/* The same for an open fd (a pipe, stdin), read to its end. */
int read_full_fd(int fd, size_t max_size, char **ret, size_t *ret_size);

/* Parses the first line as a number. Garbage, empty or out-of-range text is -EINVAL/-ERANGE. */
int read_int_file(const char *path, int *ret);
int read_hex_u16_file(const char *path, uint16_t *ret); /* "0x15b3" or "15b3" */
int read_hex_u32_file(const char *path, uint32_t *ret);

/* Basename of a symlink's target ("../../../bus/pci/drivers/igbvf" -> "igbvf"). */
int read_link_basename(const char *path, char *buf, size_t size);
/* The same for a link relative to a directory fd (AT_FDCWD for the working directory). */
int read_link_basename_at(int dir_fd, const char *name, char *buf, size_t size);

/* Writes data to path atomically: a new temporary file with an unpredictable name in the same
 * directory (O_CREAT|O_EXCL|O_NOFOLLOW, relative to the directory's fd), fsync, rename over
 * path, fsync of the directory. Safe in a directory others can write to (the devinfo dir is
 * shared with CNI plugins): a planted symlink is never followed, neither as the temporary name
 * nor as path (rename replaces the link itself). -ELOOP when the directory (path's last
 * directory component) is a symlink. */
int write_file_atomic(const char *path, const void *data, size_t size, unsigned mode);
/* Unlinks path (a missing one is 0) and the temporary files of write_file_atomic() calls on path
 * that were killed before their rename. The caller must hold whatever serializes the writers of
 * path: a live writer's temporary file would go too. */
int unlink_file_and_temps(const char *path);

/* Creates dir and its missing parents (mode 0755); an existing directory is fine. */
int mkdir_p(const char *dir);
