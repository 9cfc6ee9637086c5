/* Reading and writing small files the way sysfs wants them.
 *
 * Paths are built as root + "/" + relative path, so every caller can run against a generated
 * tree. Reads return the first line without its newline. All functions return 0 or a negative
 * errno; none logs (the caller knows which device and field it was reading). */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* snprintf into buf; -ENAMETOOLONG instead of a silently truncated path. */
int path_printf(char *buf, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

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

/* Writes s in one write(2) without O_CREAT/O_TRUNC (sysfs attributes), returning the errno the
 * kernel gave for the write itself: that is where sysfs reports EBUSY, ERANGE, ENOMEM. */
int write_string_file(const char *path, const char *s);

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

/* Strict integer parsing helpers used by file readers and config parsers alike. */
int parse_int(const char *s, int *ret);
int parse_hex_u32(const char *s, uint32_t *ret);
